// The workers of the runner's measured phases: the live key space of one index, inserts that
// claim their ids as they run, the operation stream of a YCSB mix or micro-workload, and trace
// replay (see runner.h).
//
// Thread safety: a KeySpace is shared by the workers of a phase (RunContext::shared says how
// they claim ids); a MixStream belongs to one worker.
#ifndef PMINDEX_BENCH_WORKER_H_
#define PMINDEX_BENCH_WORKER_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench/generators.h"
#include "bench/keys.h"
#include "bench/operation.h"
#include "bench/phase.h"
#include "bench/runner.h"
#include "bench/trace.h"
#include "bench/workloads.h"
#include "pmindex/index.h"

namespace pmindex::bench {

// The live key ids [lo, hi) of one index (see runner.h).
struct KeySpace {
  std::atomic<uint64_t> lo{0};
  std::atomic<uint64_t> hi{0};
};

// Takes the next id from a KeySpace counter. With one worker nothing else writes the counter
// during a phase, so a plain load and store do: no locked instruction (a full barrier on
// x86) between two operations. `Give` returns the id taken last.
inline uint64_t Take(std::atomic<uint64_t>& counter, bool shared) {
  if (shared) return counter.fetch_add(1, std::memory_order_relaxed);
  const uint64_t id = counter.load(std::memory_order_relaxed);
  counter.store(id + 1, std::memory_order_relaxed);
  return id;
}
inline void Give(std::atomic<uint64_t>& counter, bool shared) {
  if (shared) {
    counter.fetch_sub(1, std::memory_order_relaxed);
  } else {
    counter.store(counter.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  }
}

// The values the workers write: IntValue(id) by default; with BenchConfig::value_size_max a
// value of value_size_min..value_size_max bytes (a seeded length per id) that starts with
// IntValue(id)'s bytes. One per worker thread.
class ValueSource {
 public:
  explicit ValueSource(const BenchConfig& config)
      : min_(config.value_size_min),
        max_(config.value_size_max),
        buf_(std::max<uint64_t>(8, config.value_size_max), 'v') {}
  [[gnu::always_inline]] std::string_view make(uint64_t id) {
    std::memcpy(buf_.data(), &id, 8);
    if (max_ == 0) [[likely]]
      return {buf_.data(), 8};
    return {buf_.data(), min_ + (max_ > min_ ? Mix64(id) % (max_ - min_ + 1) : 0)};
  }

 private:
  const uint64_t min_, max_;
  std::string buf_;
};

struct RunContext {
  const BenchConfig* config;
  const KeyCodec* codec;
  Index* index;
  KeySpace* space;
  uint64_t seed;  // per workload
  bool shared = true;  // more than one worker: claim ids with atomic read-modify-writes
};

// Ids an inserting worker claims from space.hi at once: with several workers one shared
// read-modify-write per block instead of per insert, whose cache line otherwise moved between
// the cores on every insert (doc/performance.md, "Concurrent inserts: what threads share").
inline constexpr uint64_t kClaimBlock = 64;

// Claims this worker's next block of ids below `end` into [*next, *limit); false when none is
// left. Several workers may claim past `end`; each gives back its ids at or above `end`, so
// space.hi never drops below `end` while they run and ends exactly at the ids claimed.
bool ClaimBlock(KeySpace& space, uint64_t end, bool shared, uint64_t* next, uint64_t* limit);

// Inserts ids claimed from space.hi until `end` (load, preload, the insert micro-workload).
// Ids are claimed as the operations run, in blocks of kClaimBlock, not drawn beforehand, and
// a worker inserts every id of a block it claimed before it looks at the stop check again:
// with several threads and a --seconds cap, ids claimed and not inserted would leave holes in
// [lo, hi). Encoding a claimed id is a multiply and a byte swap for int keys.
bool InsertWorker(const RunContext& ctx, uint64_t end, const StopCheck& stop, ThreadResult& r);

// One worker's operation stream of a YCSB mix or micro-workload. prepare() draws the next
// operations and encodes their keys with the clock stopped, consuming the generator exactly
// as drawing each operation just before running it would (so a seed gives the same stream
// as ever); run() executes them. Inserts and removes claim their ids from the shared
// counters as they run (see InsertWorker). The `latest` distribution counts back from the
// newest id: single-threaded that is hi + the inserts drawn so far, as when drawn inline;
// with T threads the stream assumes the others inserted as many (hi + T * own inserts).
class MixStream {
 public:
  MixStream(const RunContext& ctx, const Workload& w, int t, int threads, uint64_t ops,
            uint64_t lo, uint64_t hi)
      : ctx_(ctx),
        w_(w),
        threads_(threads),
        ops_(ops),
        lo_(lo),
        hi_(hi),
        n_(hi > lo ? hi - lo : 1),
        kind_(w.latest ? Distribution::Kind::kLatest : ctx.config->dist.kind),
        rng_(Mix64(ctx.seed ^ (static_cast<uint64_t>(t) << 32))),
        latest_(n_, w.latest ? 0.99 : ctx.config->dist.theta),
        cursor_(n_ * static_cast<uint64_t>(t) / static_cast<uint64_t>(threads)),
        stride_(ctx.codec->max_size()),
        tag_((ctx.seed & 0xffff) << 48 | static_cast<uint64_t>(t) << 40) {
    if (kind_ == Distribution::Kind::kZipfian) {
      zipf_ = std::make_unique<ScrambledZipfianGenerator>(n_, ctx.config->dist.theta);
    }
  }

  // Operations one chunk of a thread may hold (see BenchConfig::prepare_bytes).
  static uint64_t ChunkOps(uint64_t budget, size_t stride, int threads) {
    const uint64_t per_op = stride + sizeof(uint16_t) + sizeof(OpKind);
    return std::max<uint64_t>(64, budget / static_cast<uint64_t>(threads) / per_op);
  }

  // Draws this thread's operations [ops * c / chunks, ops * (c + 1) / chunks).
  void prepare(int c, int chunks);
  // Runs the prepared operations; false when the thread is done.
  bool run(const StopCheck& stop, ThreadResult& r);

 private:
  uint64_t choose();
  static void Written(const Status& s, std::string_view key, size_t value_size, ThreadResult& r,
                      bool insert);

  const RunContext& ctx_;
  const Workload& w_;
  const int threads_;
  const uint64_t ops_, lo_, hi_, n_;
  const Distribution::Kind kind_;
  Rng rng_;
  std::unique_ptr<ScrambledZipfianGenerator> zipf_;
  SkewedLatestGenerator latest_;
  uint64_t cursor_;
  const size_t stride_;
  const uint64_t tag_;
  uint64_t inserts_ = 0;  // inserts drawn so far
  uint64_t first_ = 0, count_ = 0;
  std::vector<OpKind> kinds_;
  std::vector<uint16_t> sizes_;
  std::vector<char> keys_;
  std::string value_;
  ValueSource values_{*ctx_.config};
  uint64_t scanned_ = 0;
  char buf_[KeyCodec::kBufferSize];
};

// Replays this thread's share of a trace (`mine`: indexes into trace.ops).
bool TraceWorker(Index* index, const Trace& trace, const std::vector<uint32_t>& mine,
                 const StopCheck& stop, ThreadResult& r);

// Splits a trace among threads by key hash, so every key's operations stay in order in one
// thread and the final contents do not depend on the thread count.
std::vector<std::vector<uint32_t>> PartitionTrace(const Trace& trace, int threads);

}  // namespace pmindex::bench

#endif  // PMINDEX_BENCH_WORKER_H_
