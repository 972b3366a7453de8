// The workbench runner: runs workloads on indexes by registry name and measures them.
//
// For each thread count and each index (by name, through the registry; the runner never
// names a concrete index) it creates the index (a fresh pool in pool_dir for pool-backed
// indexes), runs the workloads in order on that one index, YCSB style (load once, then run),
// and records one BenchResult per workload. Workloads that need keys and come before `load`
// get an unmeasured preload of `keys` keys.
//
// Key ids: the live keys are always the ids [lo, hi): inserts take ids from hi upwards,
// removes take them from lo upwards, reads/updates/scans draw ids in [lo, hi) from the
// distribution, so no bookkeeping of live keys is needed and every index sees the same
// stream for a given seed and thread count.
//
// Measured phase: operations of mix workloads are drawn and their keys encoded before the
// clock starts (in chunks of at most BenchConfig::prepare_bytes, the clock stopped between
// chunks); inserts and removes claim ids as they run. Latency is sampled: one
// operation in BenchConfig::latency_sample is stamped, the others run back to back.
// Every worker drains the pool's buffered media writes (its PersistContext::drain_media)
// before the start barrier and after its last operation, and per-op counts are deltas of the
// pool's counters (Pool::counters) around the phase, so the preload is never counted and
// buffered XPLines are charged to the phase that wrote them.
//
// Thread safety: RunBench sets nothing process-wide (each pool it creates has its own
// persistence context, from its Options). Calls at the same time need distinct pool_dirs:
// pool names are made of the pid and the index name.
#ifndef PMINDEX_BENCH_RUNNER_H_
#define PMINDEX_BENCH_RUNNER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/environment.h"
#include "bench/generators.h"
#include "bench/keys.h"
#include "bench/workloads.h"
#include "pmindex/index.h"
#include "pmindex/options.h"
#include "pmindex/stats.h"
#include "pmindex/status.h"

namespace pmindex::bench {

inline constexpr uint32_t kDefaultLatencySample = 64;

struct BenchConfig {
  std::vector<std::string> indexes;  // registry names
  std::vector<Workload> workloads;
  uint64_t keys = 200000;
  uint64_t ops = 200000;
  std::vector<int> threads = {1};
  KeyType key_type;
  Distribution dist;
  uint32_t scan_length = 100;
  PersistMode mode = PersistMode::kAdr;
  uint32_t write_latency_ns = 0;
  MediaModel media_model = MediaModel::kPerThread;  // Options::media_model of every pool
  bool count_unflushed = false;  // Options::count_unflushed_writes of every pool
  std::string index_params;      // Options::index_params of every pool ("" = each index's)
  std::string pool_dir;
  uint64_t pool_bytes = 0;  // 0: estimated from keys and ops
  // --value-size: values of value_size_min..value_size_max bytes (drawn per write), whose
  // first 8 bytes are the workload's IntValue; pools are created with
  // Options::max_value_size = value_size_max. 0: 8-byte IntValues, default pools.
  uint64_t value_size_min = 0, value_size_max = 0;
  double seconds = 0;       // cap per measured phase; 0 = none
  // Rounds: every index runs its workloads this many times, the indexes alternating round by
  // round (each round on a fresh pool), so that a machine whose speed drifts over minutes
  // drifts under all indexes alike. Each (index, workload, threads) then reports its median
  // round (see BenchResult::per_round).
  uint32_t rounds = 1;
  uint64_t seed = 1;
  bool keep_pools = false;
  bool prefault = true;  // Options::prefault for every pool the bench creates
  // Latency: stamp one operation in this many (1: every one, 0: none; see latency.h).
  // Throughput is measured on the same run, so it carries the cost of 1/N stamps.
  uint32_t latency_sample = kDefaultLatencySample;
  // Prepared (drawn and encoded) operations a phase may hold, over all threads, before it
  // prepares them in chunks with the clock stopped in between.
  uint64_t prepare_bytes = 256ull << 20;
  std::string trace_load, trace_run;  // both set: replay traces instead of workloads
  bool verify = true;                 // Index::verify() after each index's last workload
  bool progress = true;               // progress lines on stderr
  // Set (e.g. by a SIGINT handler) to stop: the runner finishes the current operation,
  // removes temporary pools and returns Status::Busy("interrupted").
  std::atomic<bool>* stop = nullptr;
  // Called with each index after its last workload, before it is verified and closed (tests
  // use it to compare contents with a model).
  std::function<void(Index& index)> inspect;
};

struct LatencySummary {
  uint64_t p50 = 0, p99 = 0, p999 = 0, max = 0;
  double mean = 0;
  uint64_t samples = 0;  // operations timed (about ops / sample_every)
  uint32_t sample_every = 0;  // BenchConfig::latency_sample of the run
};

struct BenchResult {
  std::string index;
  std::string workload;
  int threads = 1;
  std::string key_type;
  std::string distribution;
  uint64_t keys = 0;     // live keys when the workload started (load: keys inserted)
  uint64_t ops = 0;      // operations done
  uint64_t failed = 0;   // lookups that missed, conditional writes refused
  double seconds = 0;
  double mops = 0;
  // CPU time of the worker threads in the measured phase (summed), and ops per CPU second:
  // unlike `mops`, not lowered by time the threads spent descheduled on a shared machine.
  double cpu_seconds = 0;
  double mops_per_cpu_second = 0;
  LatencySummary latency;
  PersistCounters counters;  // measured phase only
  double per_op_persist_calls = 0, per_op_flushes = 0, per_op_fences = 0,
         per_op_media_writes = 0, per_op_wpq = 0;
  // Woo et al.'s accounting: media writes in 64-byte units (4 per XPLine) per WPQ insert
  // (their Table 2); none without WPQ inserts.
  std::optional<double> media_units_per_wpq;
  // Successful inserts of the phase, and the counts divided by them (the paper normalises
  // mixed workloads per insert); none without inserts.
  uint64_t inserts = 0;
  std::optional<double> per_insert_wpq, per_insert_media_units;
  std::optional<double> write_amplification;  // media bytes / logical bytes; none if no writes
  uint64_t logical_bytes = 0;
  uint64_t pm_bytes = 0, dram_bytes = 0, live_keys = 0;
  double pm_bytes_per_key = 0, dram_bytes_per_key = 0;
  std::optional<double> recovery_seconds;
  std::string durability;
  std::string mode;
  uint64_t huge_page_bytes = 0;  // of the pool's mapping; 0 for pool-less indexes
  std::string note;              // e.g. "verify: Corruption: ..."
  // With BenchConfig::rounds > 1: this is the round whose ops per CPU second is the median
  // (the lower middle one of an even count), `round` its number (1-based), and per_round
  // every round's ops per CPU second in round order (recover: its recovery seconds).
  uint32_t round = 1;
  std::vector<double> per_round;
};

struct BenchReport {
  Environment environment;
  uint32_t latency_sample = 0;  // BenchConfig::latency_sample of the run
  std::string media_model = "per-thread";  // BenchConfig::media_model, by name
  bool count_unflushed = false;            // BenchConfig::count_unflushed
  std::vector<BenchResult> results;
  std::vector<std::string> skipped;  // "<index>: <reason>"
  // What makes figures of the run mean less than they seem (more threads than cores).
  std::vector<std::string> warnings;
  bool verify_failed = false;
  // An index could not be created, or its load failed: the run did not measure what was asked.
  bool run_failed = false;
  // Rounds run to their end (BenchConfig::rounds asked for). A run with several rounds that is
  // interrupted leaves its unfinished round out and reports the finished ones collapsed, as a
  // complete run would (so every ratio still compares indexes within the same rounds).
  uint32_t rounds_done = 0;
};

// Runs the configured benchmark; results accumulate in *report as they are produced.
// Errors: InvalidArgument (unknown index, bad trace, no usable index), IOError (pool dir),
// Busy("interrupted") when *config.stop was set, and any index error that ends a run.
Status RunBench(const BenchConfig& config, BenchReport* report);

// Replaces the results of several rounds by one per (index, workload, threads), in order of
// first appearance: the median round's, with per_round filled and the other rounds' notes
// kept. Results must carry their round numbers.
void CollapseRounds(std::vector<BenchResult>* results);

// Ratio of `r` to `base` (same workload and threads, both with per_round from the same
// rounds): the median over rounds of r's value / base's value in that round, and the least
// and greatest of those ratios. False if the rounds do not match or a base value is 0.
struct RoundRatio {
  double median = 0, min = 0, max = 0;
};
bool RatioOverRounds(const BenchResult& r, const BenchResult& base, RoundRatio* out);

// What a crash preserves, for an index with no pool open: a pool-less index's own
// IndexTraits::durability, else DescribeDurability (pmindex/pool.h) for a pool in `pool_dir`
// in `mode`. An index with an open pool reports Pool::durability().
std::string DurabilityClass(const IndexRegistration& reg, PersistMode mode,
                            const std::string& pool_dir);

// Pool bytes the runner gives an index for `keys` live keys of up to `key_size` bytes.
uint64_t EstimatePoolBytes(uint64_t keys, size_t key_size);

}  // namespace pmindex::bench

#endif  // PMINDEX_BENCH_RUNNER_H_
