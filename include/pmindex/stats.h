// Counters and statistics reported by the persistence seam and by indexes.
#ifndef PMINDEX_STATS_H_
#define PMINDEX_STATS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pmindex {

// What the persistence seam counted, summed over threads. Counts are independent of the
// persistence mode: they are what the code asked for. Take two snapshots and subtract.
struct PersistCounters {
  uint64_t persist_calls = 0;  // pm::persist and pm::copy_persist calls
  uint64_t flushes = 0;        // cache lines passed to flush (adjacent duplicates coalesced)
  uint64_t fences = 0;         // fences, including those inside persist
  uint64_t media_writes = 0;   // 256-byte XPLine writes the media model issued
  uint64_t media_rmw = 0;      // of which read-modify-writes (fewer than 4 dirty lines)
  // 64-byte lines the media model received: the lines that reach the memory controller's
  // write-pending queue (WPQ inserts, as Woo et al. count them).
  uint64_t wpq_inserts = 0;

  PersistCounters operator-(const PersistCounters& o) const {
    return {persist_calls - o.persist_calls, flushes - o.flushes, fences - o.fences,
            media_writes - o.media_writes, media_rmw - o.media_rmw,
            wpq_inserts - o.wpq_inserts};
  }
  PersistCounters& operator+=(const PersistCounters& o) {
    persist_calls += o.persist_calls;
    flushes += o.flushes;
    fences += o.fences;
    media_writes += o.media_writes;
    media_rmw += o.media_rmw;
    wpq_inserts += o.wpq_inserts;
    return *this;
  }
  bool operator==(const PersistCounters&) const = default;
};

// Memory and shape of an index.
struct IndexStats {
  uint64_t pm_bytes = 0;    // bytes of pool blocks the index holds (allocated size)
  uint64_t dram_bytes = 0;  // bytes of volatile structures (inner nodes, metadata)
  uint64_t keys = 0;        // live keys
  // Named node counts, e.g. {"leaves", 1234}, {"node16", 77}.
  std::vector<std::pair<std::string, uint64_t>> nodes;
};

}  // namespace pmindex

#endif  // PMINDEX_STATS_H_
