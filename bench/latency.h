// Latency measurement: a cheap cycle clock, a sampler choosing which operations to time, and
// a log-linear histogram.
//
// A timed operation gets two TSC reads, converted to nanoseconds with a factor calibrated
// once against steady_clock. A bare rdtsc may run before earlier instructions finish, so an
// operation's closing fence stall could land in the next operation's sample: the start stamp
// is fenced (lfence; rdtsc) and the end stamp waits for everything before it (rdtscp; lfence).
// Those fences serialise the CPU: independent operations around a stamp can no longer overlap
// their cache misses, so stamping every operation lowers throughput (by 14-18% for the
// lookups of rntree, wort and pftree at 1M keys; doc/bench.md). The workbench therefore
// stamps one operation in N (LatencySampler, N = BenchConfig::latency_sample, 64 by
// default), as PiBench samples a fraction of its operations: throughput carries the cost of
// 1/N stamps, and the percentiles are those of the sample. The histogram keeps 64 sub-buckets per power of two (1.6%
// resolution), exact below 128 ns.
//
// Thread safety: a sampler and a histogram belong to one thread; merge() histograms
// afterwards.
#ifndef PMINDEX_BENCH_LATENCY_H_
#define PMINDEX_BENCH_LATENCY_H_

#include <x86intrin.h>

#include <cstdint>
#include <vector>

namespace pmindex::bench {

inline uint64_t CycleNow() {  // start of a timed section
  _mm_lfence();
  return __rdtsc();
}
inline uint64_t CycleEnd() {  // end of a timed section
  unsigned aux;
  const uint64_t t = __rdtscp(&aux);
  _mm_lfence();
  return t;
}
// Nanoseconds per TSC tick (calibrated on first use, ~20 ms).
double NanosPerCycle();

// Chooses the operations to time: one in `every` on average (0: none, 1: all). The gaps
// between sampled operations are drawn uniformly from 1..2*every-1 with a generator of the
// sampler's own, so the sample does not lock onto a period of the workload (a split every k
// inserts) and the operation stream, drawn from other generators, does not depend on it.
class LatencySampler {
 public:
  LatencySampler(uint32_t every, uint64_t seed)
      : every_(every), state_(seed | 1), countdown_(every == 0 ? 0 : Gap()) {}
  // Whether the next operation is timed.
  bool next() {
    if (countdown_ == 0 || --countdown_ != 0) return false;
    countdown_ = Gap();
    return true;
  }

 private:
  uint64_t Gap() {
    if (every_ <= 1) return 1;
    state_ ^= state_ << 13;  // xorshift64: the sampler needs no statistical quality
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    const uint64_t span = 2 * static_cast<uint64_t>(every_) - 1;
    return 1 + static_cast<uint64_t>((static_cast<unsigned __int128>(state_) * span) >> 64);
  }
  uint32_t every_;
  uint64_t state_;
  uint64_t countdown_;  // 0: never sample
};

class LatencyHistogram {
 public:
  LatencyHistogram();
  void add(uint64_t ns) {
    counts_[bucket(ns)]++;
    if (ns > max_) max_ = ns;
    count_++;
    sum_ += ns;
  }
  void merge(const LatencyHistogram& other);
  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ == 0 ? 0 : static_cast<double>(sum_) / count_; }
  // The value at quantile q in [0, 1] (upper bound of its bucket, capped at max()).
  uint64_t percentile(double q) const;

 private:
  static constexpr int kSub = 64;
  static constexpr int kLinear = 2 * kSub;  // exact below 128
  static constexpr int kMaxExp = 47;
  static size_t bucket(uint64_t v);
  static uint64_t upper_bound(size_t bucket);
  std::vector<uint64_t> counts_;
  uint64_t count_ = 0, max_ = 0, sum_ = 0;
};

}  // namespace pmindex::bench

#endif  // PMINDEX_BENCH_LATENCY_H_
