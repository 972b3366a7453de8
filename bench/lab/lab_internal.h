// Shared machinery of the lab's experiments (lab.h): the node arena, the timed and counted
// contexts, progress output.
#ifndef PMINDEX_BENCH_LAB_LAB_INTERNAL_H_
#define PMINDEX_BENCH_LAB_LAB_INTERNAL_H_

#include <chrono>
#include <functional>
#include <memory>
#include <random>

#include "bench/lab/lab.h"
#include "pm/persist.h"
#include "pm/prefetch.h"  // EvictLines: the uncached measurements
#include "primitives/node.h"

namespace pmindex::lab {

inline constexpr size_t kNodeSizes[] = {256, 512, 1024, 2048, 4096};
inline constexpr const char* kPositions[] = {"first", "middle", "last"};

// A file-backed mapping in the pool directory (a "PM" region; /dev/shm here).
class Arena {
 public:
  static std::unique_ptr<Arena> Create(const std::string& dir, size_t bytes);
  ~Arena();
  char* base() const { return base_; }
  size_t size() const { return size_; }

 private:
  char* base_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

struct Lab {
  LabOptions opt;
  uint64_t iters = 0;
  std::unique_ptr<Arena> arena;
  pm::PersistContext timed;    // adr: clwb + sfence, no model (latency)
  pm::PersistContext counted;  // adr + XPLine media model (counts)
  std::mt19937_64 rng;
  std::vector<Row>* rows = nullptr;

  Lab(const LabOptions& o, pm::PersistSettings counted_settings)
      : opt(o), counted(counted_settings), rng(o.seed) {}
  void Progress(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
};

double NowNs();
// The median of `samples` (robust to the preemptions of a shared machine); reorders them.
double Median(std::vector<double>& samples);
// What one pair of clock reads costs, subtracted from per-operation samples.
double ClockOverhead();

// Key of sorted position i in a full node of the lab (10, 20, ...).
inline primitives::Key KeyAt(size_t i) { return 10 * (i + 1); }
inline primitives::Value ValueOf(primitives::Key k) { return {k, k ^ 0x5a5a}; }
size_t PositionIndex(const char* pos, size_t capacity);

// One node-level data point: `prep` formats and fills node a (and b, the second node of a
// pair) of `layout`, `op` is the measured operation on them. Timed over `iters` node pairs
// spread over the arena and evicted first (uncached) or one hot pair (cached); counted over
// a few pairs through the media-model context, drained after each operation.
struct NodeOp {
  std::function<void(primitives::Node& a, primitives::Node& b)> prep;
  std::function<void(primitives::Node& a, primitives::Node& b)> op;
  bool cached = false;
  bool mutates = true;  // false: a read-only op (E1, E3), repeated on the same node when cached
};
Row MeasureNodeOp(Lab& lab, const primitives::Layout& layout, const NodeOp& op);

void RunE1(Lab& lab);
void RunE2(Lab& lab);
void RunE3(Lab& lab);
void RunE4(Lab& lab);
void RunE5(Lab& lab);
void RunE8(Lab& lab);
void RunE9(Lab& lab);
void RunE10(Lab& lab);
// PMDK (lab_lsm.cc): false when the pool cannot be made.
bool RunE6(Lab& lab);
bool RunE7(Lab& lab);

}  // namespace pmindex::lab

#endif  // PMINDEX_BENCH_LAB_LAB_INTERNAL_H_
