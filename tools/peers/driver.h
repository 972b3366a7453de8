// The comparison driver: the same four timed phases over pmindex and over the authors' code
// of the indexes it implements (doc/performance.md, "The comparison driver").
//
// Keys are the workbench's scrambled integer keys (bench/keys.h, ScrambleId): id i is the key
// i * 0xff51afd7ed558ccd. The phases, each timed by the thread's CPU clock:
//   load    inserts ids 1..N in id order (id 0 would be key 0, a sentinel in some peers);
//   lookup  N lookups of ids drawn uniformly from 1..N (bench/generators.h, Rng, seed 1);
//   absent  N lookups of keys not in the index: ids drawn uniformly from 2N+1..3N (a
//           generator of its own, seed 3, so that the other phases' keys stay as they were);
//   insert  inserts ids N+1..2N;
//   scan    N/10 scans of 100 pairs from ids drawn uniformly from 1..2N.
// With PEERS_ORDER=shuffled in the environment, the load and the insert phase take their ids
// in a shuffled order instead (a Fisher-Yates shuffle of each range, seed kShuffleSeed); the
// keys, the values (the ids) and the other phases are the same. In id order consecutive keys
// differ by a constant (i * C mod 2^64 is a Weyl sequence): the inserts sweep the key space in
// about 376 steps, each sweep a little beside the last, so an index whose blocks are placed in
// the order its splits happen reads them in address order (doc/performance.md, "Seventh
// round: the insert order").
// Every key is converted before the timed loops into the form its index takes (Adapter::
// write_key / read_key / scan_key), so a timed loop is the index's call and nothing else.
//
// An adapter provides
//   using WriteKey, ReadKey, ScanKey;
//   WriteKey write_key(uint64_t key);  ReadKey read_key(uint64_t key);
//   ScanKey scan_key(uint64_t key);    (after prepare_scans(all keys), if it has one)
//   void insert(const WriteKey&, uint64_t value);
//   bool lookup(const ReadKey&, uint64_t* value);
//   size_t scan(const ScanKey&, size_t count);   (when kHasScan)
//   static constexpr bool kHasScan;
//
// Output: one line of CPU nanoseconds per operation for each phase run, the lookups found,
// the pairs per scan, a check that every 1000th inserted key (load and insert phases) is found
// with its value afterwards, and the load average.
//
// Thread safety: single-threaded by design (one thread's CPU time per phase).
#ifndef PMINDEX_TOOLS_PEERS_DRIVER_H_
#define PMINDEX_TOOLS_PEERS_DRIVER_H_

#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "bench/generators.h"
#include "bench/keys.h"

namespace peers {

// Phases in the order they run; a run may stop after any of them (for instruction counts).
enum Phase { kLoad = 0, kLookup = 1, kAbsent = 2, kInsert = 3, kScan = 4 };
inline constexpr int kPhases = 5;
inline const char* const kPhaseNames[kPhases] = {"load", "lookup", "absent", "insert", "scan"};

inline constexpr uint64_t kLookupSeed = 1;
inline constexpr uint64_t kShuffleSeed = 2;
inline constexpr uint64_t kAbsentSeed = 3;
inline constexpr size_t kScanLength = 100;

inline uint64_t KeyOfId(uint64_t id) { return pmindex::bench::ScrambleId(id); }

inline double ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

struct Config {
  std::string label;  // what is measured, e.g. "rntree adr" or "RNTree (ICPP) adr"
  uint64_t n = 1'000'000;
  Phase last = kScan;
  bool shuffled = false;  // PEERS_ORDER=shuffled: load and insert ids in a shuffled order
};

// Parses "N [load|lookup|absent|insert|scan]" from argv[first..]; exits with a usage message
// on error.
inline void ParseRunArgs(int argc, char** argv, int first, const char* usage, Config* config) {
  if (argc <= first || argc > first + 2) {
    std::fprintf(stderr, "usage: %s\n", usage);
    std::exit(2);
  }
  char* end = nullptr;
  config->n = std::strtoull(argv[first], &end, 10);
  if (*end != '\0' || config->n == 0) {
    std::fprintf(stderr, "bad key count '%s'\nusage: %s\n", argv[first], usage);
    std::exit(2);
  }
  if (argc == first + 2) {
    bool known = false;
    for (int p = kLoad; p <= kScan; p++) {
      if (std::strcmp(argv[first + 1], kPhaseNames[p]) == 0) {
        config->last = static_cast<Phase>(p);
        known = true;
      }
    }
    if (!known) {
      std::fprintf(stderr, "unknown phase '%s'\nusage: %s\n", argv[first + 1], usage);
      std::exit(2);
    }
  }
  const char* order = std::getenv("PEERS_ORDER");
  if (order != nullptr && *order != '\0') {
    if (std::strcmp(order, "shuffled") == 0) {
      config->shuffled = true;
    } else if (std::strcmp(order, "id") != 0) {
      std::fprintf(stderr, "PEERS_ORDER must be 'id' or 'shuffled', not '%s'\n", order);
      std::exit(2);
    }
  }
}

// The ids first..first+count-1, in id order or shuffled (Fisher-Yates, one generator per call).
inline std::vector<uint64_t> IdOrder(uint64_t first, uint64_t count, bool shuffled) {
  std::vector<uint64_t> ids(count);
  for (uint64_t i = 0; i < count; i++) ids[i] = first + i;
  if (shuffled) {
    pmindex::bench::Rng rng(kShuffleSeed + first);
    for (uint64_t i = count; i > 1; i--) std::swap(ids[i - 1], ids[rng.uniform(i)]);
  }
  return ids;
}

// The phases are separate, never-inlined functions so that an instruction count can be
// restricted to one of them (valgrind --toggle-collect='*phase_lookup*'); noipa keeps GCC's
// identical-code folding from making phase_lookup and phase_absent one function.
template <typename Adapter>
[[gnu::noinline, gnu::noipa]] void phase_load(Adapter& index,
                                  const std::vector<typename Adapter::WriteKey>& keys,
                                  const std::vector<uint64_t>& ids) {
  for (size_t i = 0; i < keys.size(); i++) index.insert(keys[i], ids[i]);
}

template <typename Adapter>
[[gnu::noinline, gnu::noipa]] void phase_insert(Adapter& index,
                                    const std::vector<typename Adapter::WriteKey>& keys,
                                    const std::vector<uint64_t>& ids) {
  for (size_t i = 0; i < keys.size(); i++) index.insert(keys[i], ids[i]);
}

template <typename Adapter>
[[gnu::noinline, gnu::noipa]] uint64_t phase_lookup(Adapter& index,
                                        const std::vector<typename Adapter::ReadKey>& keys) {
  uint64_t found = 0;
  for (const auto& key : keys) {
    uint64_t value;
    found += index.lookup(key, &value) ? 1 : 0;
  }
  return found;
}

// The absent-key lookups: phase_lookup's loop, a function of its own for the counts.
template <typename Adapter>
[[gnu::noinline, gnu::noipa]] uint64_t phase_absent(Adapter& index,
                                        const std::vector<typename Adapter::ReadKey>& keys) {
  uint64_t found = 0;
  for (const auto& key : keys) {
    uint64_t value;
    found += index.lookup(key, &value) ? 1 : 0;
  }
  return found;
}

template <typename Adapter>
[[gnu::noinline, gnu::noipa]] uint64_t phase_scan(Adapter& index,
                                      const std::vector<typename Adapter::ScanKey>& starts) {
  uint64_t pairs = 0;
  for (const auto& start : starts) pairs += index.scan(start, kScanLength);
  return pairs;
}

template <typename Adapter>
int Run(Adapter& index, const Config& config) {
  const uint64_t n = config.n;
  // Every key the index will hold: ids 1..2N.
  std::vector<uint64_t> all_keys(2 * n);
  for (uint64_t id = 1; id <= 2 * n; id++) all_keys[id - 1] = KeyOfId(id);

  const std::vector<uint64_t> load_ids = IdOrder(1, n, config.shuffled);
  const std::vector<uint64_t> insert_ids = IdOrder(n + 1, n, config.shuffled);
  std::vector<typename Adapter::WriteKey> load_keys, insert_keys;
  load_keys.reserve(n);
  insert_keys.reserve(n);
  for (uint64_t id : load_ids) load_keys.push_back(index.write_key(KeyOfId(id)));
  for (uint64_t id : insert_ids) insert_keys.push_back(index.write_key(KeyOfId(id)));

  pmindex::bench::Rng rng(kLookupSeed);
  std::vector<typename Adapter::ReadKey> lookup_keys;
  lookup_keys.reserve(n);
  for (uint64_t i = 0; i < n; i++)
    lookup_keys.push_back(index.read_key(KeyOfId(1 + rng.uniform(n))));
  pmindex::bench::Rng absent_rng(kAbsentSeed);
  std::vector<typename Adapter::ReadKey> absent_keys;
  absent_keys.reserve(n);
  for (uint64_t i = 0; i < n; i++)
    absent_keys.push_back(index.read_key(KeyOfId(2 * n + 1 + absent_rng.uniform(n))));
  std::vector<typename Adapter::ScanKey> scan_starts;
  if constexpr (Adapter::kHasScan) {
    if constexpr (requires { index.prepare_scans(all_keys); }) index.prepare_scans(all_keys);
    scan_starts.reserve(n / 10);
    for (uint64_t i = 0; i < n / 10; i++)
      scan_starts.push_back(index.scan_key(KeyOfId(1 + rng.uniform(2 * n))));
  }

  double ns[kPhases] = {-1, -1, -1, -1, -1};
  uint64_t found = 0, absent_found = 0, pairs = 0;
  double t = ThreadCpuNs();
  phase_load(index, load_keys, load_ids);
  ns[kLoad] = (ThreadCpuNs() - t) / static_cast<double>(n);
  if (config.last >= kLookup) {
    t = ThreadCpuNs();
    found = phase_lookup(index, lookup_keys);
    ns[kLookup] = (ThreadCpuNs() - t) / static_cast<double>(n);
  }
  if (config.last >= kAbsent) {
    t = ThreadCpuNs();
    absent_found = phase_absent(index, absent_keys);
    ns[kAbsent] = (ThreadCpuNs() - t) / static_cast<double>(n);
  }
  if (config.last >= kInsert) {
    t = ThreadCpuNs();
    phase_insert(index, insert_keys, insert_ids);
    ns[kInsert] = (ThreadCpuNs() - t) / static_cast<double>(n);
  }
  if (config.last >= kScan && Adapter::kHasScan && !scan_starts.empty()) {
    t = ThreadCpuNs();
    pairs = phase_scan(index, scan_starts);
    ns[kScan] = (ThreadCpuNs() - t) / static_cast<double>(scan_starts.size());
  }
  // A scan that returns nothing is not implemented (ICPP-RNTree's 8-slot wB+-Tree): no time.
  const bool scanned = ns[kScan] >= 0 && pairs > 0;

  // Every 1000th key inserted by the phases that ran must be found with its value.
  const uint64_t inserted = config.last >= kInsert ? 2 * n : n;
  uint64_t checked = 0, correct = 0;
  for (uint64_t id = 1000; id <= inserted; id += 1000) {
    uint64_t value = 0;
    checked++;
    if (index.lookup(index.read_key(KeyOfId(id)), &value) && value == id) correct++;
  }

  double load[3] = {-1, -1, -1};
  getloadavg(load, 3);
  std::printf("%s n=%llu cpu_ns_per_op", config.label.c_str(), static_cast<unsigned long long>(n));
  for (int p = kLoad; p <= kScan; p++) {
    if (ns[p] >= 0 && (p != kScan || scanned))
      std::printf(" %s=%.0f", kPhaseNames[p], ns[p]);
    else
      std::printf(" %s=-", kPhaseNames[p]);
  }
  std::printf(" | found=%llu/%llu", static_cast<unsigned long long>(found),
              static_cast<unsigned long long>(config.last >= kLookup ? n : 0));
  std::printf(" absent_found=%llu", static_cast<unsigned long long>(absent_found));
  if (ns[kScan] >= 0)
    std::printf(" pairs_per_scan=%.1f",
                static_cast<double>(pairs) / static_cast<double>(scan_starts.size()));
  std::printf(" check=%llu/%llu loadavg=%.2f,%.2f,%.2f order=%s\n",
              static_cast<unsigned long long>(correct), static_cast<unsigned long long>(checked),
              load[0], load[1], load[2], config.shuffled ? "shuffled" : "id");
  std::fflush(stdout);
  return correct == checked && (config.last < kLookup || found == n) && absent_found == 0 ? 0
                                                                                       : 1;
}

}  // namespace peers

#endif  // PMINDEX_TOOLS_PEERS_DRIVER_H_
