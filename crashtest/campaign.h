// The crash campaign: proves any registered persistent index crash-consistent, driving it
// only through the Index interface (no per-index test code).
//
// ADR model (RunAdrCampaign): a seeded workload of `ops` operations runs on a fresh pool
// under the crash tracker (src/pm/crash/tracker.h), starting with the index's creation.
// At every fence (or a seeded sample of `points` fences) the tracker builds post-crash
// images; each is recovered (OpenIndex, read-only copy-on-write) in a forked child and
// checked: recovery succeeds (allocator rebuild finds no block reachable twice), verify() is
// clean, the index holds exactly the acknowledged operations plus, or minus, the interrupted
// one, a full scan agrees with point lookups; for a sample of images a continuation of 200
// operations agrees with the model, and a second crash at every fence of the recovery
// itself still recovers correctly.
//
// Kill model (RunKillCampaign): a forked child runs a seeded multi-threaded workload on
// disjoint key ranges, logging each operation in shared memory as pending before it starts
// and acknowledged after it returns; the parent SIGKILLs it after a random delay, reopens
// the pool, checks it against the log, and repeats on the same pool for `cycles` cycles.
//
// Every failure carries a command that replays exactly that case.
#ifndef PMINDEX_CRASHTEST_CAMPAIGN_H_
#define PMINDEX_CRASHTEST_CAMPAIGN_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "pmindex/status.h"

namespace pmindex::crashtest {

struct CampaignOptions {
  // ---- what to run ----
  std::string index;          // registry name
  uint64_t ops = 500;         // operations of the workload (ADR) or per cycle bound (kill)
  uint64_t seed = 1;
  std::string mutant;         // test-only mutant to switch on (pm/mutant.h), "" = none
  std::string scenario;       // named regression scenario (scenarios.h), "" = random workload
  // Index parameters of the pools (a variant, doc/<index>.md); "" = the registration's
  // campaign_params.
  std::string index_params;
  // Freed blocks are filled with pm::kPoisonByte (Options::poison_freed), so reused
  // blocks hold old bytes as they do in a long-lived pool.
  bool poison_freed = true;
  // Non-zero: pools are created with Options::max_value_size = value_size, and the random
  // workload writes values of value_size bytes (half of them) beside short ones, so that
  // out-of-line values are written, overwritten and removed (src/core/value_store.h).
  uint64_t value_size = 0;

  // ---- ADR model ----
  uint64_t points = 0;        // 0 = every fence; N = a seeded sample of N fences
  size_t images = 4;          // random subsets per point
  bool torn = false;          // also torn-line images
  size_t torn_images = 4;
  bool flip_each = true;      // each undecided line flipped alone
  uint64_t continuation_ops = 200;
  uint32_t continuation_every = 16;     // continuation for 1 in N images (1 = all)
  uint32_t recovery_crash_every = 128;  // second crash during recovery for 1 in N images
  uint64_t only_point = 0;    // replay
  std::string only_image;     // replay
  uint64_t max_failures = 1;  // stop after this many

  // ---- kill model ----
  uint32_t cycles = 10;
  uint32_t threads = 2;
  uint32_t max_delay_ms = 60;  // SIGKILL after a random delay in [1, max] ms

  // ---- environment ----
  std::string dir = "/dev/shm";       // pools and images
  uint64_t pool_size = 16ull << 20;
  double timeout_seconds = 30;        // per image / per recovery
  bool fork = true;                   // false: verify in-process (debugging a replay)
  std::function<void(const std::string&)> log;  // progress and failure lines, or null
};

struct CampaignFailure {
  std::string model;      // "adr" or "kill"
  uint64_t point = 0;     // ADR: fence number; kill: cycle
  std::string image;      // ADR image name
  std::string operation;  // the interrupted operation
  std::string message;    // what the check found
  std::string replay;     // one command that replays exactly this case
};

struct CampaignResult {
  std::string index;
  std::string model;
  uint64_t ops = 0;            // operations executed
  uint64_t fences = 0;         // ADR: fences seen; kill: cycles run
  uint64_t points = 0;         // crash points checked (kill: cycles checked)
  uint64_t points_skipped = 0;
  uint64_t images = 0;         // images checked (kill: recoveries)
  uint64_t max_undecided = 0;
  double seconds = 0;          // wall time of the whole campaign
  double check_seconds = 0;    // of which building and checking images
  double scan_seconds = 0;     // of which finding undecided lines
  uint64_t bytes_compared = 0; // pool bytes compared with the durable image
  std::vector<CampaignFailure> failures;
  Status error;                // the campaign itself could not run (setup failed)

  bool passed() const { return error.ok() && failures.empty(); }
  double us_per_image() const { return images ? check_seconds * 1e6 / images : 0; }
};

CampaignResult RunAdrCampaign(const CampaignOptions& options);
CampaignResult RunKillCampaign(const CampaignOptions& options);

// "pmindex crashtest --index ... --seed ... --replay-point P --replay-image I".
std::string ReplayCommand(const CampaignOptions& options, const std::string& model,
                          uint64_t point, const std::string& image);

// A one-paragraph human report of a result.
std::string FormatResult(const CampaignResult& result);

}  // namespace pmindex::crashtest

#endif  // PMINDEX_CRASHTEST_CAMPAIGN_H_
