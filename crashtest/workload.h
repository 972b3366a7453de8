// The crash campaign's workload: seeded operations on any registered index, a model
// (std::map) to check them against, and the post-crash checks every index must pass.
//
// Thread safety: none; one workload, one thread (the kill model gives each thread its own
// Workload over a disjoint key range).
#ifndef PMINDEX_CRASHTEST_WORKLOAD_H_
#define PMINDEX_CRASHTEST_WORKLOAD_H_

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench/operation.h"
#include "pmindex/index.h"

namespace pmindex::crashtest {

// The workbench's operations (bench/operation.h); the campaign draws all but
// kReadModifyWrite.
using bench::OpKind;
using bench::OpKindName;

struct Op {
  OpKind kind = OpKind::kInsert;
  std::string key;
  std::string value;    // insert/update/upsert
  uint32_t scan_count = 0;
};

// A printable form of a key ("42" for 8-byte integer keys, quoted bytes otherwise).
std::string PrintKey(std::string_view key, bool int_keys);
// "insert 42 -> v17", for failure reports.
std::string DescribeOp(const Op& op, bool int_keys);

using Model = std::map<std::string, std::string>;

// Applies `op` to a model; returns the Status the index must return. `conditional` is the
// index's traits().conditional_writes: false makes insert and update upserts.
Status ApplyToModel(Model& model, const Op& op, bool conditional = true);

// Generates seeded operations suited to an index's traits: integer keys for every index,
// and byte-string keys of varied length with shared prefixes where the index takes them.
// Keys of thread `shard` of `shards` are disjoint from every other shard's.
class OpGenerator {
 public:
  OpGenerator(const IndexTraits& traits, uint64_t seed, uint64_t key_space, uint32_t shard = 0,
              uint32_t shards = 1);
  Op next();
  // The value op number `serial` writes: unique, so a value that was never written shows.
  std::string make_value(uint64_t serial);
  // Non-zero: values of this many bytes for half the writes, short ones (5 and 8 bytes) for
  // the rest (a pool with out-of-line values, CampaignOptions::value_size).
  void set_value_size(uint64_t n) { value_size_ = n; }

 private:
  std::string make_key();

  const IndexTraits& traits_;
  std::mt19937_64 rng_;
  uint64_t key_space_;
  uint32_t shard_;
  uint32_t shards_;
  uint64_t serial_ = 0;
  uint64_t seed_;
  uint64_t value_size_ = 0;
};

// Runs `op` on the index and checks the result against the model (updating it).
// Non-OK = the live index disagreed with the model.
Status RunOp(Index& index, Model& model, const Op& op, bool int_keys);

// Post-crash check of a recovered index against the operation log: every key holds its value
// in `before`, except that each operation in `inflight` (on distinct keys: at most one per
// thread, threads on disjoint keys) may be applied or not. Checks verify(), that a full scan
// agrees with point lookups, and reports the first difference. On success *matched (if
// given) is the model the index equals.
Status CheckAgainstModel(Index& index, const Model& before, const std::vector<const Op*>& inflight,
                         bool int_keys, Model* matched = nullptr);

// Continuation: `count` more seeded operations on the recovered index in lockstep with
// `model`, then verify().
Status CheckContinuation(Index& index, Model model, uint64_t seed, uint64_t count);

}  // namespace pmindex::crashtest

#endif  // PMINDEX_CRASHTEST_WORKLOAD_H_
