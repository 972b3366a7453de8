// Latency measurement: a cheap cycle clock and a log-linear histogram.
//
// Every operation is timed with two TSC reads, converted to nanoseconds with a factor
// calibrated once against steady_clock. A bare rdtsc may run before earlier instructions
// finish, so an operation's closing fence stall could land in the next operation's sample:
// the start stamp is fenced (lfence; rdtsc) and the end stamp waits for everything before it
// (rdtscp). Together about 15 ns on this machine, against 50 for two clock_gettime calls. The histogram keeps 64 sub-buckets per power of two (1.6%
// resolution), exact below 128 ns.
//
// Thread safety: a histogram belongs to one thread; merge() them afterwards.
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
