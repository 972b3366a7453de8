// A measured phase of the workbench runner: worker threads, the clock, the stop check, and
// what each worker measured (see runner.h, "Measured phase").
//
// Thread safety: a ThreadResult belongs to one worker; RunPhase merges them after joining.
// StopCheck's operator() may be called from every worker at once.
#ifndef PMINDEX_BENCH_PHASE_H_
#define PMINDEX_BENCH_PHASE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "bench/latency.h"
#include "pmindex/pool.h"
#include "pmindex/stats.h"
#include "pmindex/status.h"

namespace pmindex::bench {

using Clock = std::chrono::steady_clock;

// What one worker thread measured. Its own cache lines: a worker writes its counters and its
// sampler's countdown on every operation, and the runner keeps the workers' results side by
// side in one vector.
struct alignas(64) ThreadResult {
  LatencySampler sampler{0, 1};
  LatencyHistogram histogram;
  uint64_t ops = 0;
  uint64_t failed = 0;
  uint64_t logical_bytes = 0;
  uint64_t inserts = 0;  // successful inserts (the per-insert figures divide by them)
  double cpu_seconds = 0;  // the thread's CPU time in the timed rounds
  std::string first_error;  // first unexpected Status (not AlreadyExists/NotFound)

  void error(const Status& s) {
    if (first_error.empty()) first_error = s.ToString();
  }
};

// Runs one operation, stamping it when the sampler picks it (see latency.h): the operations
// in between run with no fence or timestamp of the workbench's around them.
template <class Op>
inline auto Measured(ThreadResult& r, double ns_per_cycle, Op&& op) {
  r.ops++;
  if (!r.sampler.next()) return op();
  const uint64_t c0 = CycleNow();
  auto result = op();
  r.histogram.add(static_cast<uint64_t>(static_cast<double>(CycleEnd() - c0) * ns_per_cycle));
  return result;
}

struct PhaseOutcome {
  double seconds = 0;
  PersistCounters counters;
  ThreadResult total;
  bool interrupted = false;
};

// Tells workers when to stop early: Ctrl-C or the --seconds cap, counted from start() with
// the time the clock was stopped between rounds added back.
class StopCheck {
 public:
  StopCheck(std::atomic<bool>* stop, double seconds)
      : stop_(stop),
        capped_(seconds > 0),
        cap_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds))) {
    start();
  }
  // Cheap enough to call every few hundred operations.
  bool operator()() const {
    if (stop_ != nullptr && stop_->load(std::memory_order_relaxed)) return true;
    return capped_ && Clock::now() >= deadline_;
  }
  bool interrupted() const { return stop_ != nullptr && stop_->load(); }
  void start() {
    if (capped_) deadline_ = Clock::now() + cap_;
  }
  void extend(Clock::duration d) { deadline_ += d; }

 private:
  std::atomic<bool>* stop_;
  bool capped_;
  Clock::duration cap_;
  Clock::time_point deadline_{};
};

// A measured phase: `chunks` rounds of prepare (clock stopped: draw and encode a thread's
// next operations) and run (clock running). One round for every phase whose operations fit
// the preparation budget (BenchConfig::prepare_bytes); longer runs prepare in chunks, and
// the phase's seconds are the sum of the rounds' run times.
struct PhaseBody {
  int chunks = 1;
  std::function<void(int thread, int chunk)> prepare;  // may be empty
  // False: this thread has finished (stopped, or no keys left) and skips later rounds.
  std::function<bool(int thread, int chunk, ThreadResult&)> run;
};

// Runs `body` on `threads` workers as one measured phase (see runner.h). `pool` (nullptr for
// pool-less baselines) is the pool whose counters the phase reports. Worker t samples
// latency with LatencySampler(sample_every, from seed and t).
PhaseOutcome RunPhase(Pool* pool, int threads, const PhaseBody& body, uint32_t sample_every,
                      uint64_t seed, StopCheck* stop_check, std::atomic<bool>* stop);

}  // namespace pmindex::bench

#endif  // PMINDEX_BENCH_PHASE_H_
