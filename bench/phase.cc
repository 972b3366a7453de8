#include "bench/phase.h"

#include <time.h>

#include <barrier>
#include <thread>
#include <vector>

#include "bench/generators.h"
#include "pm/persist.h"

namespace pmindex::bench {

namespace {

// CPU time of the calling thread (a system call: called per round, never per operation).
double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

PhaseOutcome RunPhase(Pool* pool, int threads, const PhaseBody& body, uint32_t sample_every,
                      uint64_t seed, StopCheck* stop_check, std::atomic<bool>* stop) {
  // The cycle counter's calibration sleeps 20 ms once per process; the workers' latency
  // samples would otherwise trigger it inside the first measured phase, where it added 20 ms
  // of wall-clock time to the first index's first phase (a 10,000-key load takes ~5 ms).
  (void)NanosPerCycle();
  PhaseOutcome out;
  PersistCounters before;
  Clock::time_point t0, paused;
  Clock::duration elapsed{0};
  bool first_round = true;
  pm::PersistContext* pc = pool != nullptr ? &pool->persist_context() : nullptr;
  auto drain_media = [pc] {
    if (pc != nullptr) pc->drain_media();
  };
  drain_media();  // the main thread's creation/preload writes belong to no phase
  auto resume_clock = [&]() noexcept {
    if (first_round) {
      if (pc != nullptr) before = pc->counters();
      if (stop_check != nullptr) stop_check->start();
      first_round = false;
    } else if (stop_check != nullptr) {
      stop_check->extend(Clock::now() - paused);
    }
    t0 = Clock::now();
  };
  auto pause_clock = [&]() noexcept {
    paused = Clock::now();
    elapsed += paused - t0;
  };
  std::barrier resume(threads, resume_clock);
  std::barrier pause(threads, pause_clock);
  std::vector<ThreadResult> results(threads);
  for (int t = 0; t < threads; t++) {
    const uint64_t sampler_seed = Mix64(seed ^ 0x5a3e'9c1d'0000'0000ull ^ static_cast<uint64_t>(t));
    results[t].sampler = LatencySampler(sample_every, sampler_seed);
  }
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; t++) {
    workers.emplace_back([&, t] {
      drain_media();
      bool done = false;
      for (int c = 0; c < body.chunks; c++) {
        if (!done && body.prepare) body.prepare(t, c);
        resume.arrive_and_wait();
        const double cpu0 = ThreadCpuSeconds();
        if (!done) done = !body.run(t, c, results[t]);
        if (c + 1 < body.chunks) {
          results[t].cpu_seconds += ThreadCpuSeconds() - cpu0;
          pause.arrive_and_wait();
        } else {
          drain_media();
          results[t].cpu_seconds += ThreadCpuSeconds() - cpu0;
        }
      }
    });
  }
  for (std::thread& w : workers) w.join();
  const Clock::time_point t1 = Clock::now();
  elapsed += t1 - t0;
  if (pc != nullptr) out.counters = pc->counters() - before;
  out.seconds = std::chrono::duration<double>(elapsed).count();
  for (ThreadResult& r : results) {
    out.total.histogram.merge(r.histogram);
    out.total.ops += r.ops;
    out.total.failed += r.failed;
    out.total.logical_bytes += r.logical_bytes;
    out.total.inserts += r.inserts;
    out.total.cpu_seconds += r.cpu_seconds;
    if (out.total.first_error.empty()) out.total.first_error = r.first_error;
  }
  out.interrupted = stop != nullptr && stop->load();
  return out;
}

}  // namespace pmindex::bench
