// The operations an index is driven with, shared by the workbench (workload mixes, trace
// replay) and the crash campaign (crashtest/workload.h), so both name an operation alike.
// Header-only: crashtest includes it without linking the workbench.
//
// Thread safety: plain values.
#ifndef PMINDEX_BENCH_OPERATION_H_
#define PMINDEX_BENCH_OPERATION_H_

#include <cstdint>

namespace pmindex::bench {

// The crash campaign draws its operations by these values: keep their order.
enum class OpKind : uint8_t {
  kInsert,
  kUpdate,
  kUpsert,
  kRemove,
  kLookup,
  kScan,
  kReadModifyWrite,  // lookup, then update with the value read (YCSB f)
};

// "insert", "update", ..., for reports.
constexpr const char* OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kInsert:
      return "insert";
    case OpKind::kUpdate:
      return "update";
    case OpKind::kUpsert:
      return "upsert";
    case OpKind::kRemove:
      return "remove";
    case OpKind::kLookup:
      return "lookup";
    case OpKind::kScan:
      return "scan";
    case OpKind::kReadModifyWrite:
      return "read-modify-write";
  }
  return "?";
}

}  // namespace pmindex::bench

#endif  // PMINDEX_BENCH_OPERATION_H_
