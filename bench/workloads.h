// The named workloads of `pmindex bench` and the operations they mix (bench/operation.h).
//
//   load                insert --keys keys (ids 0..keys-1)
//   a b c d e f         YCSB core workloads: a 50% read / 50% update, b 95/5, c 100% read,
//                       d 95% read latest / 5% insert, e 95% scan / 5% insert,
//                       f 50% read / 50% read-modify-write
//   insert lookup update remove scan
//                       micro-workloads of --ops operations each
//   recover             close the loaded index and time reopening it (OpenIndex)
//
// Thread safety: plain values.
#ifndef PMINDEX_BENCH_WORKLOADS_H_
#define PMINDEX_BENCH_WORKLOADS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pmindex::bench {

// Percentages of each operation; they sum to 100.
struct OpMix {
  uint32_t read = 0, update = 0, insert = 0, scan = 0, rmw = 0, remove = 0;
  bool writes() const { return update + insert + rmw + remove > 0; }
};

struct Workload {
  enum class Kind { kLoad, kMix, kRecover, kTraceLoad, kTraceRun };
  std::string name;
  Kind kind = Kind::kMix;
  OpMix mix;
  // Reads draw from the most recently inserted keys (YCSB d), whatever --dist says.
  bool latest = false;
};

// The workload of a name; false if unknown.
bool FindWorkload(std::string_view name, Workload* workload);
// Every workload name, in the order `pmindex bench --help` lists them.
const std::vector<std::string>& WorkloadNames();
// Parses a comma-separated list; false with *error naming the first unknown entry.
bool ParseWorkloads(std::string_view list, std::vector<Workload>* workloads, std::string* error);

}  // namespace pmindex::bench

#endif  // PMINDEX_BENCH_WORKLOADS_H_
