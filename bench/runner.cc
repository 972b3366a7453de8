#include "bench/runner.h"

#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <cstdarg>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>

#include "bench/baselines/baselines.h"
#include "bench/latency.h"
#include "bench/trace.h"
#include "pm/persist.h"
#include "pmindex/index.h"

namespace pmindex::bench {

namespace {

using Clock = std::chrono::steady_clock;

// What one worker thread measured.
struct ThreadResult {
  LatencySampler sampler{0, 1};
  LatencyHistogram histogram;
  uint64_t ops = 0;
  uint64_t failed = 0;
  uint64_t logical_bytes = 0;
  double cpu_seconds = 0;  // the thread's CPU time in the timed rounds
  std::string first_error;  // first unexpected Status (not AlreadyExists/NotFound)

  void error(const Status& s) {
    if (first_error.empty()) first_error = s.ToString();
  }
};

// Runs one operation, stamping it when the sampler picks it (see latency.h): the operations
// in between run with no fence or timestamp of the workbench's around them.
template <class Op>
inline auto Measured(ThreadResult& r, double ns_per_cycle, Op&& op) {
  r.ops++;
  if (!r.sampler.next()) return op();
  const uint64_t c0 = CycleNow();
  auto result = op();
  r.histogram.add(static_cast<uint64_t>(static_cast<double>(CycleEnd() - c0) * ns_per_cycle));
  return result;
}

struct PhaseOutcome {
  double seconds = 0;
  PersistCounters counters;
  ThreadResult total;
  bool interrupted = false;
};

// Tells workers when to stop early: Ctrl-C or the --seconds cap, counted from start() with
// the time the clock was stopped between rounds added back.
class StopCheck {
 public:
  StopCheck(std::atomic<bool>* stop, double seconds)
      : stop_(stop),
        capped_(seconds > 0),
        cap_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds))) {
    start();
  }
  // Cheap enough to call every few hundred operations.
  bool operator()() const {
    if (stop_ != nullptr && stop_->load(std::memory_order_relaxed)) return true;
    return capped_ && Clock::now() >= deadline_;
  }
  bool interrupted() const { return stop_ != nullptr && stop_->load(); }
  void start() {
    if (capped_) deadline_ = Clock::now() + cap_;
  }
  void extend(Clock::duration d) { deadline_ += d; }

 private:
  std::atomic<bool>* stop_;
  bool capped_;
  Clock::duration cap_;
  Clock::time_point deadline_{};
};

// CPU time of the calling thread (a system call: called per round, never per operation).
double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// A measured phase: `chunks` rounds of prepare (clock stopped: draw and encode a thread's
// next operations) and run (clock running). One round for every phase whose operations fit
// the preparation budget (BenchConfig::prepare_bytes); longer runs prepare in chunks, and
// the phase's seconds are the sum of the rounds' run times.
struct PhaseBody {
  int chunks = 1;
  std::function<void(int thread, int chunk)> prepare;  // may be empty
  // False: this thread has finished (stopped, or no keys left) and skips later rounds.
  std::function<bool(int thread, int chunk, ThreadResult&)> run;
};

// Runs `body` on `threads` workers as one measured phase (see runner.h). `pool` (nullptr for
// pool-less baselines) is the pool whose counters the phase reports. Worker t samples
// latency with LatencySampler(sample_every, from seed and t).
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
    out.total.cpu_seconds += r.cpu_seconds;
    if (out.total.first_error.empty()) out.total.first_error = r.first_error;
  }
  out.interrupted = stop != nullptr && stop->load();
  return out;
}

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

struct RunContext {
  const BenchConfig* config;
  const KeyCodec* codec;
  Index* index;
  KeySpace* space;
  uint64_t seed;  // per workload
  bool shared = true;  // more than one worker: claim ids with atomic read-modify-writes
};

// Inserts ids claimed from space.hi until `end` (load, preload, the insert micro-workload).
// Ids are claimed as the operations run, not drawn beforehand: with several threads and a
// --seconds cap, ids handed out in advance would leave holes in [lo, hi). Encoding a claimed
// id is a multiply and a byte swap for int keys; single-threaded the claim is a plain load
// and store (Take).
bool InsertWorker(const RunContext& ctx, uint64_t end, const StopCheck& stop, ThreadResult& r) {
  const double nspc = NanosPerCycle();
  char buf[KeyCodec::kBufferSize];
  for (uint64_t i = 0;; i++) {
    if ((i & 255) == 0 && stop()) break;
    const uint64_t id = Take(ctx.space->hi, ctx.shared);
    if (id >= end) {
      Give(ctx.space->hi, ctx.shared);
      break;
    }
    const std::string_view key = ctx.codec->encode(id, buf);
    const Status s = Measured(r, nspc, [&] { return ctx.index->insert(key, IntValue(id)); });
    if (!s.ok()) {
      r.failed++;
      if (!s.IsAlreadyExists()) r.error(s);
    } else {
      r.logical_bytes += key.size() + 8;
    }
  }
  return false;
}

enum class OpKind : uint8_t { kRead, kUpdate, kInsert, kScan, kReadModifyWrite, kRemove };

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
  void prepare(int c, int chunks) {
    const uint64_t from = ops_ * static_cast<uint64_t>(c) / static_cast<uint64_t>(chunks);
    const uint64_t to = ops_ * static_cast<uint64_t>(c + 1) / static_cast<uint64_t>(chunks);
    first_ = from;
    count_ = to - from;
    kinds_.resize(count_);
    sizes_.resize(count_);
    keys_.resize(count_ * stride_);
    const OpMix& m = w_.mix;
    const uint32_t c_read = m.read, c_update = c_read + m.update, c_insert = c_update + m.insert,
                   c_scan = c_insert + m.scan, c_rmw = c_scan + m.rmw;
    for (uint64_t j = 0; j < count_; j++) {
      const uint32_t dice = static_cast<uint32_t>(rng_.uniform(100));
      OpKind k;
      if (dice < c_read) {
        k = OpKind::kRead;
      } else if (dice < c_update) {
        k = OpKind::kUpdate;
      } else if (dice < c_insert) {
        k = OpKind::kInsert;
        inserts_++;
      } else if (dice < c_scan) {
        k = OpKind::kScan;
      } else if (dice < c_rmw) {
        k = OpKind::kReadModifyWrite;
      } else {
        k = OpKind::kRemove;
      }
      kinds_[j] = k;
      sizes_[j] = 0;
      if (k != OpKind::kInsert && k != OpKind::kRemove) {
        sizes_[j] = static_cast<uint16_t>(
            ctx_.codec->encode(choose(), buf_).size());
        std::memcpy(&keys_[j * stride_], buf_, sizes_[j]);
      }
    }
  }

  // Runs the prepared operations; false when the thread is done.
  bool run(const StopCheck& stop, ThreadResult& r) {
    const double nspc = NanosPerCycle();
    Index* const index = ctx_.index;
    const uint32_t scan_length = ctx_.config->scan_length;
    for (uint64_t j = 0; j < count_; j++) {
      if ((j & 255) == 0 && stop()) return false;
      const uint64_t i = first_ + j;
      const std::string_view key(&keys_[j * stride_], sizes_[j]);
      switch (kinds_[j]) {
        case OpKind::kRead: {
          const bool found = Measured(r, nspc, [&] { return index->lookup(key, &value_).ok(); });
          if (!found) r.failed++;
          break;
        }
        case OpKind::kUpdate: {
          const Status s =
              Measured(r, nspc, [&] { return index->update(key, IntValue(tag_ | i)); });
          Written(s, key, r, /*insert=*/false);
          break;
        }
        case OpKind::kInsert: {
          const uint64_t id = Take(ctx_.space->hi, ctx_.shared);
          const std::string_view k = ctx_.codec->encode(id, buf_);
          const Status s = Measured(r, nspc, [&] { return index->insert(k, IntValue(id)); });
          Written(s, k, r, /*insert=*/true);
          break;
        }
        case OpKind::kScan: {
          const size_t got = Measured(r, nspc, [&] {
            return index->scan(key, scan_length, [&](std::string_view sk, std::string_view sv) {
              scanned_ += sk.size() + sv.size();
              return true;
            });
          });
          if (got == 0) r.failed++;
          break;
        }
        case OpKind::kReadModifyWrite: {
          const Status s = Measured(r, nspc, [&] {
            if (!index->lookup(key, &value_).ok()) return Status::NotFound();
            return index->update(key, IntValue(IntValue::Decode(value_) + 1));
          });
          Written(s, key, r, /*insert=*/false);
          break;
        }
        case OpKind::kRemove: {
          const uint64_t id = Take(ctx_.space->lo, ctx_.shared);
          if (id >= hi_) {
            Give(ctx_.space->lo, ctx_.shared);
            return false;  // every key is gone
          }
          const std::string_view k = ctx_.codec->encode(id, buf_);
          const Status s = Measured(r, nspc, [&] { return index->remove(k); });
          if (!s.ok()) {
            r.failed++;
            if (!s.IsNotFound()) r.error(s);
          } else {
            r.logical_bytes += k.size();
          }
          break;
        }
      }
    }
    asm volatile("" : : "r"(scanned_));
    return first_ + count_ < ops_;
  }

 private:
  uint64_t choose() {
    switch (kind_) {
      case Distribution::Kind::kUniform:
        return lo_ + rng_.uniform(n_);
      case Distribution::Kind::kZipfian:
        return lo_ + zipf_->next(rng_);
      case Distribution::Kind::kSequential:
        return lo_ + (cursor_++ % n_);
      case Distribution::Kind::kLatest: {
        const uint64_t now_hi = hi_ + inserts_ * static_cast<uint64_t>(threads_);
        return lo_ + latest_.next(rng_, now_hi > lo_ ? now_hi - lo_ : 1);
      }
    }
    return lo_;
  }
  static void Written(const Status& s, std::string_view key, ThreadResult& r, bool insert) {
    if (!s.ok()) {
      r.failed++;
      if (!(insert ? s.IsAlreadyExists() : s.IsNotFound())) r.error(s);
    } else {
      r.logical_bytes += key.size() + 8;
    }
  }

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
  uint64_t scanned_ = 0;
  char buf_[KeyCodec::kBufferSize];
};

bool TraceWorker(Index* index, const Trace& trace, const std::vector<uint32_t>& mine,
                 const StopCheck& stop, ThreadResult& r) {
  const double nspc = NanosPerCycle();
  std::string value;
  uint64_t scanned = 0;
  for (size_t i = 0; i < mine.size(); i++) {
    if ((i & 255) == 0 && stop()) break;
    const TraceOp& op = trace.ops[mine[i]];
    const std::string_view key = trace.key(op);
    const Status s = Measured(r, nspc, [&] {
      switch (op.type) {
        case OpType::kInsert:
          return index->insert(key, IntValue(op.line));
        case OpType::kUpdate:
          return index->update(key, IntValue(op.line));
        case OpType::kRead:
          return index->lookup(key, &value);
        case OpType::kScan:
          if (index->scan(key, op.scan_count, [&](std::string_view k, std::string_view v) {
                scanned += k.size() + v.size();
                return true;
              }) == 0 &&
              op.scan_count > 0) {
            return Status::NotFound();
          }
          return Status::OK();
        case OpType::kRemove:
          return index->remove(key);
        case OpType::kReadModifyWrite:
          break;
      }
      return Status::OK();
    });
    if (!s.ok()) {
      r.failed++;
      if (!s.IsNotFound() && !s.IsAlreadyExists()) r.error(s);
    } else if (op.type == OpType::kInsert || op.type == OpType::kUpdate) {
      r.logical_bytes += key.size() + 8;
    } else if (op.type == OpType::kRemove) {
      r.logical_bytes += key.size();
    }
  }
  asm volatile("" : : "r"(scanned));
  return false;
}

// Splits a trace among threads by key hash, so every key's operations stay in order in one
// thread and the final contents do not depend on the thread count.
std::vector<std::vector<uint32_t>> PartitionTrace(const Trace& trace, int threads) {
  std::vector<std::vector<uint32_t>> parts(threads);
  for (size_t i = 0; i < trace.ops.size(); i++) {
    const size_t t = threads == 1 ? 0 : std::hash<std::string_view>()(trace.key(trace.ops[i])) %
                                            static_cast<size_t>(threads);
    parts[t].push_back(static_cast<uint32_t>(i));
  }
  return parts;
}

void FillResult(const PhaseOutcome& ph, BenchResult* r) {
  r->ops = ph.total.ops;
  r->failed = ph.total.failed;
  r->seconds = ph.seconds;
  r->mops = ph.seconds > 0 ? static_cast<double>(ph.total.ops) / ph.seconds / 1e6 : 0;
  r->cpu_seconds = ph.total.cpu_seconds;
  r->mops_per_cpu_second =
      ph.total.cpu_seconds > 0 ? static_cast<double>(ph.total.ops) / ph.total.cpu_seconds / 1e6 : 0;
  r->latency.p50 = ph.total.histogram.percentile(0.50);
  r->latency.p99 = ph.total.histogram.percentile(0.99);
  r->latency.p999 = ph.total.histogram.percentile(0.999);
  r->latency.max = ph.total.histogram.max();
  r->latency.mean = ph.total.histogram.mean();
  r->latency.samples = ph.total.histogram.count();
  r->counters = ph.counters;
  const double ops = ph.total.ops > 0 ? static_cast<double>(ph.total.ops) : 1.0;
  r->per_op_persist_calls = static_cast<double>(ph.counters.persist_calls) / ops;
  r->per_op_flushes = static_cast<double>(ph.counters.flushes) / ops;
  r->per_op_fences = static_cast<double>(ph.counters.fences) / ops;
  r->per_op_media_writes = static_cast<double>(ph.counters.media_writes) / ops;
  r->logical_bytes = ph.total.logical_bytes;
  if (ph.total.logical_bytes > 0) {
    r->write_amplification = static_cast<double>(ph.counters.media_writes) * 256.0 /
                             static_cast<double>(ph.total.logical_bytes);
  }
  if (!ph.total.first_error.empty()) r->note = "first error: " + ph.total.first_error;
}

void FillMemory(Index* index, uint64_t live_keys, BenchResult* r) {
  const IndexStats st = index->stats();
  r->pm_bytes = st.pm_bytes;
  r->dram_bytes = st.dram_bytes;
  r->live_keys = st.keys > 0 ? st.keys : live_keys;
  const double k = r->live_keys > 0 ? static_cast<double>(r->live_keys) : 1.0;
  r->pm_bytes_per_key = static_cast<double>(st.pm_bytes) / k;
  r->dram_bytes_per_key = static_cast<double>(st.dram_bytes) / k;
  if (Pool* pool = index->pool()) r->huge_page_bytes = pool->huge_page_bytes();
}

// Marks a directory made by a pool-less baseline so --keep-pools may replace it later.
constexpr const char* kBaselineMarker = "PMINDEX_BASELINE";

// Removes a previous run's kept pool at `path` if it is one of ours; refuses anything else.
Status ClearKeptPool(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::OK();
  const bool ours = std::filesystem::is_directory(path, ec)
                        ? std::filesystem::exists(path + "/" + kBaselineMarker, ec)
                        : Pool::ReadInfo(path).ok();
  if (!ours) {
    return Status::InvalidArgument(path +
                                   ": exists and is not a pmindex pool; remove it or use "
                                   "another --pool-dir");
  }
  std::filesystem::remove_all(path, ec);
  if (ec) return Status::IOError(path + ": cannot remove: " + ec.message());
  return Status::OK();
}

// Removes a temporary pool (file or baseline directory) when it goes out of scope.
class PoolPath {
 public:
  PoolPath(std::string path, bool keep) : path_(std::move(path)), keep_(keep) {}
  ~PoolPath() {
    if (!keep_) {
      std::error_code ec;
      std::filesystem::remove_all(path_, ec);
    }
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool keep_;
};

class Runner {
 public:
  Runner(const BenchConfig& config, BenchReport* report) : cfg_(config), report_(report) {}
  Status Run();

 private:
  Status RunIndex(const IndexRegistration& reg, int threads);
  std::string CheckCompatible(const IndexRegistration& reg) const;
  void Progress(const char* fmt, ...) const __attribute__((format(printf, 2, 3)));
  uint64_t TotalWrites() const;
  Status CheckRoom(const IndexRegistration& reg) const;
  void Finish(const IndexRegistration& reg, BenchResult* r) const;
  BenchResult NewResult(const std::string& index, const std::string& workload, int threads,
                        const std::string& dist) const;

  const BenchConfig& cfg_;
  BenchReport* report_;
  std::unique_ptr<KeyCodec> codec_;
  Trace load_trace_, run_trace_;
  bool tracing_ = false;
  size_t job_ = 0, jobs_ = 0;
  const Pool* pool_ = nullptr;  // the pool of the index being run (nullptr: baseline)
};

void Runner::Progress(const char* fmt, ...) const {
  if (!cfg_.progress) return;
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "[bench %zu/%zu] ", job_, jobs_);
  std::vfprintf(stderr, fmt, ap);
  std::fputc('\n', stderr);
  va_end(ap);
}

uint64_t Runner::TotalWrites() const {
  if (tracing_) return load_trace_.ops.size() + run_trace_.ops.size();
  uint64_t total = cfg_.keys;
  for (const Workload& w : cfg_.workloads) {
    if (w.kind == Workload::Kind::kMix) {
      total += cfg_.ops * (w.mix.insert + w.mix.update + w.mix.rmw) / 100;
    }
  }
  return total;
}

std::string Runner::CheckCompatible(const IndexRegistration& reg) const {
  const IndexTraits& tr = reg.traits;
  const size_t key_size = tracing_ ? std::max(load_trace_.max_key_size, run_trace_.max_key_size)
                                   : codec_->max_size();
  const bool byte_keys = tracing_ ? (load_trace_.has_byte_keys || run_trace_.has_byte_keys)
                                  : codec_->type().kind != KeyType::Kind::kInt;
  if (byte_keys && !tr.byte_keys) return "takes only 8-byte integer keys";
  if (key_size > tr.max_key_size) {
    return "keys of up to " + std::to_string(key_size) + " bytes exceed its limit of " +
           std::to_string(tr.max_key_size);
  }
  if (tr.max_value_size < 8) return "values of 8 bytes exceed its limit";
  return "";
}

void Runner::Finish(const IndexRegistration& reg, BenchResult* r) const {
  // Pool-less baselines write their own files, unseen by the persist seam: their media
  // writes are not measured, so neither is their write amplification.
  if (!reg.attach) r->write_amplification.reset();
}

BenchResult Runner::NewResult(const std::string& index, const std::string& workload, int threads,
                              const std::string& dist) const {
  BenchResult r;
  r.index = index;
  r.workload = workload;
  r.threads = threads;
  r.key_type = tracing_ ? "trace" : codec_->type().name();
  r.distribution = dist;
  r.mode = PersistModeName(cfg_.mode);
  r.durability = pool_ != nullptr ? pool_->durability() : DurabilityClass(index, cfg_.mode);
  r.latency.sample_every = cfg_.latency_sample;
  return r;
}

Status Runner::RunIndex(const IndexRegistration& reg, int threads) {
  const std::string& name = reg.traits.name;
  const bool pool_backed = static_cast<bool>(reg.attach);

  const std::string path = cfg_.pool_dir + "/" +
                           (cfg_.keep_pools ? name + ".pool"
                                            : "pmindex-bench-" + std::to_string(getpid()) + "-" +
                                                  name + ".pool");
  if (cfg_.keep_pools) {
    if (Status s = ClearKeptPool(path); !s.ok()) return s;
  } else {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);  // a stale pool of a crashed run with our pid
  }
  PoolPath pool_path(path, cfg_.keep_pools);

  Options options;
  options.mode = cfg_.mode;
  options.write_latency_ns = cfg_.write_latency_ns;
  options.model_media = true;  // media writes and write amplification are reported
  options.prefault = cfg_.prefault;
  const size_t key_size = tracing_ ? std::max(load_trace_.max_key_size, run_trace_.max_key_size)
                                   : codec_->max_size();
  options.pool_size = cfg_.pool_bytes > 0 ? cfg_.pool_bytes : EstimatePoolBytes(TotalWrites(),
                                                                                key_size);
  Result<std::unique_ptr<Index>> made = CreateIndex(name, path, options);
  if (!made.ok()) {
    report_->run_failed = true;
    report_->skipped.push_back(name + ": cannot create: " + made.status().ToString());
    Progress("%s: cannot create: %s", name.c_str(), made.status().ToString().c_str());
    return Status::OK();
  }
  std::unique_ptr<Index> index = std::move(made.value());
  pool_ = index->pool();
  if (!pool_backed && cfg_.keep_pools) {
    std::FILE* f = std::fopen((path + "/" + kBaselineMarker).c_str(), "w");
    if (f != nullptr) std::fclose(f);
  }

  KeySpace space;
  StopCheck never(cfg_.stop, 0);
  size_t first_result = report_->results.size();
  const std::string dist_name = cfg_.dist.name();
  const std::string insert_dist =
      cfg_.dist.kind == Distribution::Kind::kSequential ? "sequential" : "uniform";
  uint64_t workload_no = 0;

  auto interrupted = [&]() { return cfg_.stop != nullptr && cfg_.stop->load(); };

  if (tracing_) {
    const Trace* traces[2] = {&load_trace_, &run_trace_};
    const char* names[2] = {"trace-load", "trace-run"};
    uint64_t live = 0;
    for (int i = 0; i < 2; i++) {
      if (interrupted()) return Status::Busy("interrupted");
      const Trace& trace = *traces[i];
      const std::vector<std::vector<uint32_t>> parts = PartitionTrace(trace, threads);
      Progress("%s: %s (%zu operations, %d thread%s)", name.c_str(), names[i], trace.ops.size(),
               threads, threads == 1 ? "" : "s");
      StopCheck stop(cfg_.stop, 0);  // a replay is never cut short
      Index* idx = index.get();
      PhaseBody body;
      body.run = [&](int t, int, ThreadResult& r) {
        return TraceWorker(idx, trace, parts[t], stop, r);
      };
      PhaseOutcome ph = RunPhase(index->pool(), threads, body, cfg_.latency_sample,
                                 Mix64(cfg_.seed ^ static_cast<uint64_t>(i)), &stop, cfg_.stop);
      BenchResult r = NewResult(name, names[i], threads, "trace");
      r.keys = live;
      FillResult(ph, &r);
      FillMemory(idx, 0, &r);
      live = r.live_keys;
      Progress("%s: %s %.3f Mops/s, %.2f s, %llu failed", name.c_str(), names[i], r.mops,
               r.seconds, static_cast<unsigned long long>(r.failed));
      Finish(reg, &r);
        report_->results.push_back(std::move(r));
      if (ph.interrupted) return Status::Busy("interrupted");
    }
  } else {
    RunContext ctx{&cfg_, codec_.get(), index.get(), &space, 0, threads > 1};
    auto load = [&](bool measured) -> Status {
      Progress("%s: %s %llu keys (%d thread%s)", name.c_str(), measured ? "load" : "preload",
               static_cast<unsigned long long>(cfg_.keys), threads, threads == 1 ? "" : "s");
      // Never capped by --seconds: every index must hold the same keys for the run phases.
      StopCheck stop(cfg_.stop, 0);
      const uint64_t end = space.hi.load() + cfg_.keys;
      PhaseBody body;
      body.run = [&](int, int, ThreadResult& r) { return InsertWorker(ctx, end, stop, r); };
      PhaseOutcome ph = RunPhase(index->pool(), threads, body, cfg_.latency_sample,
                                 Mix64(cfg_.seed ^ Mix64(workload_no)), &stop, cfg_.stop);
      if (ph.interrupted) return Status::Busy("interrupted");
      if (measured) {
        BenchResult r = NewResult(name, "load", threads, insert_dist);
        FillResult(ph, &r);
        r.keys = space.hi - space.lo;
        FillMemory(index.get(), space.hi - space.lo, &r);
        // A load inserts distinct new keys: any failure is an error (OutOfSpace, ...).
        if (cfg_.keys > 0 && (r.ops == 0 || r.failed > 0 || !ph.total.first_error.empty())) {
          report_->run_failed = true;
          report_->skipped.push_back(
              name + ": load: " + std::to_string(r.failed) + " of " + std::to_string(r.ops) +
              " inserts failed" +
              (ph.total.first_error.empty() ? std::string() : ": " + ph.total.first_error));
        }
        Progress("%s: load %.3f Mops/s, %.2f s", name.c_str(), r.mops, r.seconds);
        Finish(reg, &r);
        report_->results.push_back(std::move(r));
      } else if (!ph.total.first_error.empty()) {
        report_->run_failed = true;
        report_->skipped.push_back(name + ": preload failed: " + ph.total.first_error);
      }
      return Status::OK();
    };
    bool loaded = false;
    for (const Workload& w : cfg_.workloads) {
      workload_no++;
      if (interrupted()) return Status::Busy("interrupted");
      if (w.kind == Workload::Kind::kLoad) {
        if (Status s = load(true); !s.ok()) return s;
        loaded = true;
        continue;
      }
      if (!loaded) {
        if (Status s = load(false); !s.ok()) return s;
        loaded = true;
      }
      if (w.kind == Workload::Kind::kRecover) {
        BenchResult r = NewResult(name, "recover", threads, dist_name);
        r.keys = space.hi - space.lo;
        if (!pool_backed) {
          r.note = "not applicable: no pool to reopen";
          FillMemory(index.get(), r.keys, &r);
          Finish(reg, &r);
        report_->results.push_back(std::move(r));
          continue;
        }
        Progress("%s: recover (close and reopen %s)", name.c_str(), path.c_str());
        if (Status s = index->close(); !s.ok()) {
          r.note = "close failed: " + s.ToString();
        }
        index.reset();
        pool_ = nullptr;
        const Clock::time_point t0 = Clock::now();
        Options reopen = options;
        reopen.prefault = false;  // recovery time is the index's, not the page tables'
        reopen.trial_open = false;  // one recovery, as the papers measure it
        Result<std::unique_ptr<Index>> reopened = OpenIndex(path, reopen, name);
        const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
        if (reopened.ok()) {  // the reopened pool's seam counted exactly the open
          pm::PersistContext& pc = reopened.value()->pool()->persist_context();
          pc.drain_media();
          r.counters = pc.counters();
          pool_ = reopened.value()->pool();
        }
        if (!reopened.ok()) {
          report_->skipped.push_back(name + ": recovery failed: " + reopened.status().ToString());
          report_->verify_failed = true;
          return Status::OK();
        }
        index = std::move(reopened.value());
        ctx.index = index.get();
        r.seconds = secs;
        r.recovery_seconds = secs;
        FillMemory(index.get(), r.keys, &r);
        if (r.live_keys != r.keys) {
          r.note = "index reports " + std::to_string(r.live_keys) + " keys after recovery, " +
                   std::to_string(r.keys) + " expected";
        }
        Progress("%s: recovered in %.3f s", name.c_str(), secs);
        Finish(reg, &r);
        report_->results.push_back(std::move(r));
        continue;
      }
      if ((w.mix.scan > 0) && !reg.traits.ordered) {
        report_->skipped.push_back(name + ": workload " + w.name + ": unordered index, no scans");
        continue;
      }
      const uint64_t lo = space.lo.load(), hi = space.hi.load();
      if (hi <= lo && w.mix.insert < 100) {
        report_->skipped.push_back(name + ": workload " + w.name + ": no keys left");
        continue;
      }
      ctx.seed = Mix64(cfg_.seed ^ Mix64(workload_no));
      const std::string dist = w.latest                 ? std::string("latest")
                               : w.mix.insert == 100    ? insert_dist
                               : w.mix.remove == 100    ? insert_dist
                                                        : dist_name;
      Progress("%s: workload %s, %llu ops on %llu keys (%d thread%s, %s)", name.c_str(),
               w.name.c_str(), static_cast<unsigned long long>(cfg_.ops),
               static_cast<unsigned long long>(hi - lo), threads, threads == 1 ? "" : "s",
               dist.c_str());
      StopCheck stop(cfg_.stop, cfg_.seconds);
      PhaseOutcome ph;
      PhaseBody body;
      std::vector<std::unique_ptr<MixStream>> streams;
      if (w.mix.insert == 100) {
        const uint64_t end = hi + cfg_.ops;
        body.run = [&, end](int, int, ThreadResult& r) {
          return InsertWorker(ctx, end, stop, r);
        };
      } else {
        uint64_t most = 0;
        for (int t = 0; t < threads; t++) {
          const uint64_t mine =
              cfg_.ops / threads + (static_cast<uint64_t>(t) < cfg_.ops % threads);
          most = std::max(most, mine);
          streams.push_back(std::make_unique<MixStream>(ctx, w, t, threads, mine, lo, hi));
        }
        const uint64_t chunk = MixStream::ChunkOps(cfg_.prepare_bytes, codec_->max_size(), threads);
        body.chunks = static_cast<int>(std::max<uint64_t>(1, (most + chunk - 1) / chunk));
        body.prepare = [&](int t, int c) { streams[t]->prepare(c, body.chunks); };
        body.run = [&](int t, int, ThreadResult& r) { return streams[t]->run(stop, r); };
      }
      ph = RunPhase(index->pool(), threads, body, cfg_.latency_sample, ctx.seed, &stop,
                    cfg_.stop);
      BenchResult r = NewResult(name, w.name, threads, dist);
      r.keys = hi - lo;
      FillResult(ph, &r);
      FillMemory(index.get(), space.hi - space.lo, &r);
      Progress("%s: workload %s %.3f Mops/s, %.2f s", name.c_str(), w.name.c_str(), r.mops,
               r.seconds);
      Finish(reg, &r);
        report_->results.push_back(std::move(r));
      if (ph.interrupted) return Status::Busy("interrupted");
    }
  }

  if (cfg_.inspect && index != nullptr) cfg_.inspect(*index);
  if (cfg_.verify && index != nullptr && report_->results.size() > first_result) {
    Progress("%s: verify", name.c_str());
    if (Status s = index->verify(); !s.ok()) {
      BenchResult& last = report_->results.back();
      last.note += (last.note.empty() ? "" : "; ") + std::string("verify: ") + s.ToString();
      report_->verify_failed = true;
    }
  }
  if (Status s = index->close(); !s.ok()) {
    report_->skipped.push_back(name + ": close failed: " + s.ToString());
  }
  index.reset();
  return Status::OK();
}

Status Runner::Run() {
  std::error_code ec;
  if (!std::filesystem::is_directory(cfg_.pool_dir, ec)) {
    return Status::InvalidArgument(cfg_.pool_dir + ": pool directory does not exist");
  }
  report_->environment = DetectEnvironment(cfg_.pool_dir, cfg_.mode, cfg_.seed);
  report_->latency_sample = cfg_.latency_sample;
  tracing_ = !cfg_.trace_load.empty() || !cfg_.trace_run.empty();
  if (tracing_) {
    if (Status s = ParseTrace(cfg_.trace_load, 0, &load_trace_); !s.ok()) return s;
    if (Status s = ParseTrace(cfg_.trace_run, load_trace_.lines, &run_trace_); !s.ok()) return s;
  } else {
    codec_ = std::make_unique<KeyCodec>(cfg_.key_type,
                                        cfg_.dist.kind != Distribution::Kind::kSequential);
    uint64_t needed = cfg_.keys;
    for (const Workload& w : cfg_.workloads) {
      if (w.kind == Workload::Kind::kMix) needed += cfg_.ops * w.mix.insert / 100;
    }
    if (needed > codec_->capacity()) {
      return Status::InvalidArgument("key type " + cfg_.key_type.name() + " holds only " +
                                     std::to_string(codec_->capacity()) + " distinct keys, " +
                                     std::to_string(needed) + " needed");
    }
  }
  std::vector<const IndexRegistration*> regs;
  for (const std::string& name : cfg_.indexes) {
    const IndexRegistration* reg = FindIndex(name);
    if (reg == nullptr) return Status::InvalidArgument("unknown index '" + name + "'");
    if (std::string why = CheckCompatible(*reg); !why.empty()) {
      report_->skipped.push_back(name + ": " + why);
      continue;
    }
    if (Status s = CheckRoom(*reg); !s.ok()) return s;
    regs.push_back(reg);
  }
  const uint32_t rounds = std::max<uint32_t>(1, cfg_.rounds);
  jobs_ = regs.size() * cfg_.threads.size() * rounds;
  bool huge = false;
  for (uint32_t round = 1; round <= rounds; ++round) {
    const size_t first = report_->results.size();
    for (int threads : cfg_.threads) {
      for (const IndexRegistration* reg : regs) {
        job_++;
        if (Status s = RunIndex(*reg, threads); !s.ok()) {
          if (rounds > 1 && s.IsBusy()) {  // interrupted: keep the finished rounds only
            report_->results.resize(first);
            CollapseRounds(&report_->results);
          }
          return s;
        }
      }
    }
    for (size_t i = first; i < report_->results.size(); ++i) report_->results[i].round = round;
    report_->rounds_done = round;
  }
  if (rounds > 1) CollapseRounds(&report_->results);
  for (const BenchResult& r : report_->results) huge |= r.huge_page_bytes > 0;
  report_->environment.huge_pages =
      huge ? "yes (some pool mappings used 2 MiB pages)" : "no (4 KiB pages)";
  return Status::OK();
}

}  // namespace

void CollapseRounds(std::vector<BenchResult>* results) {
  auto value = [](const BenchResult& r) {
    return r.workload == "recover" ? r.recovery_seconds.value_or(0) : r.mops_per_cpu_second;
  };
  std::vector<BenchResult> out;
  std::vector<bool> taken(results->size(), false);
  for (size_t i = 0; i < results->size(); ++i) {
    if (taken[i]) continue;
    const BenchResult& head = (*results)[i];
    std::vector<size_t> group;  // in round order: results are appended round by round
    for (size_t j = i; j < results->size(); ++j) {
      const BenchResult& r = (*results)[j];
      if (!taken[j] && r.index == head.index && r.workload == head.workload &&
          r.threads == head.threads) {
        group.push_back(j);
        taken[j] = true;
      }
    }
    std::vector<size_t> by_value = group;
    std::sort(by_value.begin(), by_value.end(), [&](size_t a, size_t b) {
      return value((*results)[a]) < value((*results)[b]);
    });
    BenchResult median = (*results)[by_value[(by_value.size() - 1) / 2]];
    median.per_round.clear();
    for (size_t j : group) {
      const BenchResult& r = (*results)[j];
      median.per_round.push_back(value(r));
      if (r.round != median.round && !r.note.empty())
        median.note += (median.note.empty() ? "" : "; ") + ("round " + std::to_string(r.round) +
                                                             ": " + r.note);
    }
    out.push_back(std::move(median));
  }
  *results = std::move(out);
}

bool RatioOverRounds(const BenchResult& r, const BenchResult& base, RoundRatio* out) {
  if (r.per_round.empty() || r.per_round.size() != base.per_round.size()) return false;
  std::vector<double> ratios;
  for (size_t i = 0; i < r.per_round.size(); ++i) {
    if (base.per_round[i] <= 0) return false;
    ratios.push_back(r.per_round[i] / base.per_round[i]);
  }
  std::sort(ratios.begin(), ratios.end());
  out->median = ratios.size() % 2 == 1
                    ? ratios[ratios.size() / 2]
                    : (ratios[ratios.size() / 2 - 1] + ratios[ratios.size() / 2]) / 2;
  out->min = ratios.front();
  out->max = ratios.back();
  return true;
}

std::string DurabilityClass(std::string_view index, PersistMode mode) {
  const IndexRegistration* reg = FindIndex(index);
  if (reg == nullptr) return "unknown";
  if (!reg->attach) {  // pool-less baseline: it states its own settings
    if (!reg->traits.durability.empty()) return reg->traits.durability;
    return reg->traits.persistent ? "persistent" : "volatile";
  }
  if (!reg->traits.persistent) return "volatile";
  switch (mode) {
    case PersistMode::kAdr:
      return "survives power loss (ADR)";
    case PersistMode::kEadr:
      return "survives process crash; power loss on eADR";
    case PersistMode::kAsync:
      return "survives process crash; power loss on eADR (async flush)";
    case PersistMode::kAdaptive:
      return "survives process crash; power loss on eADR (adaptive flush)";
    case PersistMode::kVolatile:
      return "none (volatile mode: no flush, no ordering)";
  }
  return "unknown";
}

namespace {

// MemAvailable from /proc/meminfo, in bytes; 0 if unknown.
uint64_t AvailableMemory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

std::string GiB(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
  return buf;
}

}  // namespace

// Refuses up front a run that cannot fit, instead of failing (or swapping, or being killed)
// hours later: an in-memory index must fit in available memory, a pool in its directory.
Status Runner::CheckRoom(const IndexRegistration& reg) const {
  const std::string& name = reg.traits.name;
  const size_t key_size = tracing_ ? std::max(load_trace_.max_key_size, run_trace_.max_key_size)
                                   : codec_->max_size();
  const uint64_t writes = TotalWrites();
  if (!reg.attach && !reg.traits.persistent) {
    constexpr uint64_t kNodeOverhead = 64;  // allocator and node bytes per pair, at least
    const uint64_t need = writes * (kNodeOverhead + key_size + 8);
    const uint64_t avail = AvailableMemory();
    if (avail != 0 && need > avail) {
      return Status::InvalidArgument(name + ": " + std::to_string(writes) +
                                     " keys need about " + GiB(need) + " of memory, " +
                                     GiB(avail) + " available (lower --keys/--ops)");
    }
    return Status::OK();
  }
  const uint64_t need = cfg_.pool_bytes > 0 ? cfg_.pool_bytes : EstimatePoolBytes(writes, key_size);
  struct statvfs fs;
  if (statvfs(cfg_.pool_dir.c_str(), &fs) == 0) {
    const uint64_t avail = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
    if (need > avail) {
      return Status::InvalidArgument(
          name + ": a pool of " + GiB(need) + (cfg_.pool_bytes > 0 ? "" : " for " +
          std::to_string(writes) + " keys") + " does not fit in " + cfg_.pool_dir + " (" +
          GiB(avail) + " free; lower --keys/--pool-mb or choose another --pool-dir)");
    }
  }
  return Status::OK();
}

uint64_t EstimatePoolBytes(uint64_t keys, size_t key_size) {
  constexpr uint64_t kMin = 64ull << 20;
  const uint64_t per_key = 384 + 4 * (key_size + 8);
  const uint64_t bytes = kMin + keys * per_key;
  constexpr uint64_t k2M = 2ull << 20;
  return (bytes + k2M - 1) / k2M * k2M;
}

Status RunBench(const BenchConfig& config, BenchReport* report) {
  RegisterBaselines();
  Runner runner(config, report);
  return runner.Run();
}

}  // namespace pmindex::bench
