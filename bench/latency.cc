#include "bench/latency.h"

#include <chrono>
#include <thread>

namespace pmindex::bench {

double NanosPerCycle() {
  static const double factor = [] {
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    const uint64_t c0 = CycleNow();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto t1 = Clock::now();
    const uint64_t c1 = CycleNow();
    const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
    return c1 > c0 ? ns / static_cast<double>(c1 - c0) : 1.0;
  }();
  return factor;
}

LatencyHistogram::LatencyHistogram()
    : counts_(kLinear + static_cast<size_t>(kMaxExp - 7 + 1) * kSub, 0) {}

size_t LatencyHistogram::bucket(uint64_t v) {
  if (v < kLinear) return v;
  int e = 63 - __builtin_clzll(v);  // >= 7
  if (e > kMaxExp) return kLinear + static_cast<size_t>(kMaxExp - 7) * kSub + kSub - 1;
  const uint64_t sub = (v >> (e - 6)) - kSub;  // 0..63
  return kLinear + static_cast<size_t>(e - 7) * kSub + sub;
}

uint64_t LatencyHistogram::upper_bound(size_t b) {
  if (b < kLinear) return b;
  const size_t e = (b - kLinear) / kSub + 7;
  const uint64_t sub = (b - kLinear) % kSub;
  return ((kSub + sub + 1) << (e - 6)) - 1;
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  for (size_t i = 0; i < counts_.size(); i++) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  if (other.max_ > max_) max_ = other.max_;
}

uint64_t LatencyHistogram::percentile(double q) const {
  if (count_ == 0) return 0;
  uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(count_));
  if (rank >= count_) rank = count_ - 1;
  uint64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); i++) {
    seen += counts_[i];
    if (seen > rank) {
      const uint64_t ub = upper_bound(i);
      return ub < max_ ? ub : max_;
    }
  }
  return max_;
}

}  // namespace pmindex::bench
