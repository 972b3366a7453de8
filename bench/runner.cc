#include "bench/runner.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>

#include "bench/baselines/baselines.h"
#include "bench/phase.h"
#include "bench/trace.h"
#include "bench/worker.h"
#include "pm/persist.h"
#include "pmindex/index.h"
#include "pmindex/pool.h"

namespace pmindex::bench {

namespace {

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
  r->per_op_wpq = static_cast<double>(ph.counters.wpq_inserts) / ops;
  const double units = static_cast<double>(ph.counters.media_writes) * 4.0;  // 64-byte units
  if (ph.counters.wpq_inserts > 0)
    r->media_units_per_wpq = units / static_cast<double>(ph.counters.wpq_inserts);
  r->inserts = ph.total.inserts;
  if (ph.total.inserts > 0) {
    r->per_insert_wpq =
        static_cast<double>(ph.counters.wpq_inserts) / static_cast<double>(ph.total.inserts);
    r->per_insert_media_units = units / static_cast<double>(ph.total.inserts);
  }
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

// One index's run in Runner::RunIndex: the state its workloads share.
struct IndexRun {
  IndexRun(const IndexRegistration& registration, int thread_count, std::string pool_path)
      : reg(registration),
        name(registration.traits.name),
        threads(thread_count),
        path(std::move(pool_path)) {}

  const IndexRegistration& reg;
  const std::string& name;
  const int threads;
  const std::string path;
  Options options;  // of the pool's creation; a recover reopens with them
  std::unique_ptr<Index> index;  // null once a recovery failed
  KeySpace space;
  RunContext ctx{};
  uint64_t workload_no = 0;  // 1-based number of the workload running, for its seed
  bool loaded = false;       // the keys are in (load or preload)
};

class Runner {
 public:
  Runner(const BenchConfig& config, BenchReport* report) : cfg_(config), report_(report) {}
  Status Run();

 private:
  void WarnAboutOversubscription();
  Status RunIndex(const IndexRegistration& reg, int threads);
  std::string PoolPathFor(const std::string& name) const;
  bool CreateForRun(IndexRun& run);
  Status RunTraces(IndexRun& run);
  Status RunWorkloads(IndexRun& run);
  Status Load(IndexRun& run, bool measured);
  Status Recover(IndexRun& run);
  Status RunMix(IndexRun& run, const Workload& w);
  void VerifyAndClose(IndexRun& run, size_t first_result);
  bool Interrupted() const { return cfg_.stop != nullptr && cfg_.stop->load(); }
  std::string InsertDistribution() const;
  std::string CheckCompatible(const IndexRegistration& reg) const;
  void Progress(const char* fmt, ...) const __attribute__((format(printf, 2, 3)));
  uint64_t TotalWrites() const;
  // The pool size EstimatePoolBytes gives, plus room for out-of-line values.
  uint64_t PoolBytes() const;
  size_t MaxKeySize() const;
  Status CheckRoom(const IndexRegistration& reg) const;
  void Record(const IndexRegistration& reg, BenchResult r);
  BenchResult NewResult(const IndexRegistration& reg, const std::string& workload, int threads,
                        const std::string& dist) const;

  const BenchConfig& cfg_;
  BenchReport* report_;
  std::unique_ptr<KeyCodec> codec_;
  Trace load_trace_, run_trace_;
  bool tracing_ = false;
  size_t job_ = 0, jobs_ = 0;
  const Pool* pool_ = nullptr;  // the pool of the index being run (nullptr: baseline)
  // Registrations whose traits cfg_.index_params changes (TraitsWithParams): the copies run.
  std::deque<IndexRegistration> with_params_;
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

uint64_t Runner::PoolBytes() const {
  // Out-of-line values: a block per write (a freed one is reused once no reader holds it).
  const uint64_t values = cfg_.value_size_max > 0 ? TotalWrites() * (cfg_.value_size_max + 64) : 0;
  return EstimatePoolBytes(TotalWrites(), MaxKeySize()) + values;
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

size_t Runner::MaxKeySize() const {
  return tracing_ ? std::max(load_trace_.max_key_size, run_trace_.max_key_size)
                  : codec_->max_size();
}

std::string Runner::CheckCompatible(const IndexRegistration& reg) const {
  const IndexTraits& tr = reg.traits;
  const size_t key_size = MaxKeySize();
  const bool byte_keys = tracing_ ? (load_trace_.has_byte_keys || run_trace_.has_byte_keys)
                                  : codec_->type().kind != KeyType::Kind::kInt;
  if (byte_keys && !tr.byte_keys) return "takes only 8-byte integer keys";
  if (key_size > tr.max_key_size) {
    return "keys of up to " + std::to_string(key_size) + " bytes exceed its limit of " +
           std::to_string(tr.max_key_size);
  }
  if (cfg_.value_size_max > 0) {
    // A pool-backed index takes any size through the pool's value store (max_value_size).
    if (reg.attach) return "";
    const bool any = tr.byte_keys || tr.any_value_size;
    if (cfg_.value_size_max > tr.max_value_size ||
        (!any && (cfg_.value_size_min != cfg_.value_size_max ||
                  cfg_.value_size_max != tr.max_value_size))) {
      return "values of " + std::to_string(cfg_.value_size_min) + ".." +
             std::to_string(cfg_.value_size_max) + " bytes exceed its limit";
    }
    return "";
  }
  if (tr.max_value_size < 8) return "values of 8 bytes exceed its limit";
  return "";
}

void Runner::Record(const IndexRegistration& reg, BenchResult r) {
  // Pool-less baselines write their own files, unseen by the persist seam: their media
  // writes are not measured, so neither is their write amplification.
  if (!reg.attach) r.write_amplification.reset();
  report_->results.push_back(std::move(r));
}

BenchResult Runner::NewResult(const IndexRegistration& reg, const std::string& workload,
                              int threads, const std::string& dist) const {
  BenchResult r;
  r.index = reg.traits.name;
  r.workload = workload;
  r.threads = threads;
  r.key_type = tracing_ ? "trace" : codec_->type().name();
  r.distribution = dist;
  r.mode = PersistModeName(cfg_.mode);
  r.durability =
      pool_ != nullptr ? pool_->durability() : DurabilityClass(reg, cfg_.mode, cfg_.pool_dir);
  r.latency.sample_every = cfg_.latency_sample;
  return r;
}

// Creates the index, runs its workloads (or the traces), then inspects, verifies and closes
// it. Errors end the whole run; an index that cannot be created is reported and skipped.
Status Runner::RunIndex(const IndexRegistration& reg, int threads) {
  const std::string path = PoolPathFor(reg.traits.name);
  if (cfg_.keep_pools) {
    if (Status s = ClearKeptPool(path); !s.ok()) return s;
  } else {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);  // a stale pool of a crashed run with our pid
  }
  PoolPath pool_path(path, cfg_.keep_pools);
  IndexRun run(reg, threads, path);
  if (!CreateForRun(run)) return Status::OK();
  const size_t first_result = report_->results.size();
  if (Status s = tracing_ ? RunTraces(run) : RunWorkloads(run); !s.ok()) return s;
  VerifyAndClose(run, first_result);
  return Status::OK();
}

std::string Runner::PoolPathFor(const std::string& name) const {
  return cfg_.pool_dir + "/" +
         (cfg_.keep_pools ? name + ".pool"
                          : "pmindex-bench-" + std::to_string(getpid()) + "-" + name + ".pool");
}

// Creates run.index in a fresh pool at run.path; false (reported) if it cannot.
bool Runner::CreateForRun(IndexRun& run) {
  Options& options = run.options;
  options.mode = cfg_.mode;
  options.write_latency_ns = cfg_.write_latency_ns;
  options.model_media = true;  // media writes and write amplification are reported
  options.media_model = cfg_.media_model;
  options.count_unflushed_writes = cfg_.count_unflushed;
  options.index_params = cfg_.index_params;
  options.prefault = cfg_.prefault;
  options.max_value_size = cfg_.value_size_max;
  options.pool_size = cfg_.pool_bytes > 0 ? cfg_.pool_bytes : PoolBytes();
  Result<std::unique_ptr<Index>> made = CreateIndex(run.name, run.path, options);
  if (!made.ok()) {
    report_->run_failed = true;
    report_->skipped.push_back(run.name + ": cannot create: " + made.status().ToString());
    Progress("%s: cannot create: %s", run.name.c_str(), made.status().ToString().c_str());
    return false;
  }
  run.index = std::move(made.value());
  pool_ = run.index->pool();
  if (!run.reg.attach && cfg_.keep_pools) {
    std::FILE* f = std::fopen((run.path + "/" + kBaselineMarker).c_str(), "w");
    if (f != nullptr) std::fclose(f);
  }
  run.ctx = RunContext{&cfg_, codec_.get(), run.index.get(), &run.space, 0, run.threads > 1};
  return true;
}

// Replays the load trace, then the run trace, each as one measured phase.
Status Runner::RunTraces(IndexRun& run) {
  const Trace* traces[2] = {&load_trace_, &run_trace_};
  const char* names[2] = {"trace-load", "trace-run"};
  const int threads = run.threads;
  uint64_t live = 0;
  for (int i = 0; i < 2; i++) {
    if (Interrupted()) return Status::Busy("interrupted");
    const Trace& trace = *traces[i];
    const std::vector<std::vector<uint32_t>> parts = PartitionTrace(trace, threads);
    Progress("%s: %s (%zu operations, %d thread%s)", run.name.c_str(), names[i],
             trace.ops.size(), threads, threads == 1 ? "" : "s");
    StopCheck stop(cfg_.stop, 0);  // a replay is never cut short
    Index* idx = run.index.get();
    PhaseBody body;
    body.run = [&](int t, int, ThreadResult& r) {
      return TraceWorker(idx, trace, parts[t], stop, r);
    };
    PhaseOutcome ph = RunPhase(idx->pool(), threads, body, cfg_.latency_sample,
                               Mix64(cfg_.seed ^ static_cast<uint64_t>(i)), &stop, cfg_.stop);
    BenchResult r = NewResult(run.reg, names[i], threads, "trace");
    r.keys = live;
    FillResult(ph, &r);
    FillMemory(idx, 0, &r);
    live = r.live_keys;
    Progress("%s: %s %.3f Mops/s, %.2f s, %llu failed", run.name.c_str(), names[i], r.mops,
             r.seconds, static_cast<unsigned long long>(r.failed));
    Record(run.reg, std::move(r));
    if (ph.interrupted) return Status::Busy("interrupted");
  }
  return Status::OK();
}

// Runs the configured workloads in order, YCSB style, preloading the keys before the first
// one that needs them when no `load` comes first.
Status Runner::RunWorkloads(IndexRun& run) {
  for (const Workload& w : cfg_.workloads) {
    run.workload_no++;
    if (Interrupted()) return Status::Busy("interrupted");
    if (w.kind == Workload::Kind::kLoad) {
      if (Status s = Load(run, true); !s.ok()) return s;
      run.loaded = true;
      continue;
    }
    if (!run.loaded) {
      if (Status s = Load(run, false); !s.ok()) return s;
      run.loaded = true;
    }
    const Status s = w.kind == Workload::Kind::kRecover ? Recover(run) : RunMix(run, w);
    if (!s.ok()) return s;
    if (run.index == nullptr) return Status::OK();  // recovery failed: nothing to run on
  }
  return Status::OK();
}

std::string Runner::InsertDistribution() const {
  return cfg_.dist.kind == Distribution::Kind::kSequential ? "sequential" : "uniform";
}

// Inserts --keys new keys: the `load` workload (measured) or the preload before the first
// workload that needs keys (unmeasured).
Status Runner::Load(IndexRun& run, bool measured) {
  const std::string& name = run.name;
  const int threads = run.threads;
  KeySpace& space = run.space;
  Progress("%s: %s %llu keys (%d thread%s)", name.c_str(), measured ? "load" : "preload",
           static_cast<unsigned long long>(cfg_.keys), threads, threads == 1 ? "" : "s");
  // Never capped by --seconds: every index must hold the same keys for the run phases.
  StopCheck stop(cfg_.stop, 0);
  const uint64_t end = space.hi.load() + cfg_.keys;
  PhaseBody body;
  body.run = [&](int, int, ThreadResult& r) { return InsertWorker(run.ctx, end, stop, r); };
  PhaseOutcome ph = RunPhase(run.index->pool(), threads, body, cfg_.latency_sample,
                             Mix64(cfg_.seed ^ Mix64(run.workload_no)), &stop, cfg_.stop);
  if (ph.interrupted) return Status::Busy("interrupted");
  if (!measured) {
    if (!ph.total.first_error.empty()) {
      report_->run_failed = true;
      report_->skipped.push_back(name + ": preload failed: " + ph.total.first_error);
    }
    return Status::OK();
  }
  BenchResult r = NewResult(run.reg, "load", threads, InsertDistribution());
  FillResult(ph, &r);
  r.keys = space.hi - space.lo;
  FillMemory(run.index.get(), space.hi - space.lo, &r);
  // A load inserts distinct new keys: any failure is an error (OutOfSpace, ...).
  if (cfg_.keys > 0 && (r.ops == 0 || r.failed > 0 || !ph.total.first_error.empty())) {
    report_->run_failed = true;
    report_->skipped.push_back(
        name + ": load: " + std::to_string(r.failed) + " of " + std::to_string(r.ops) +
        " inserts failed" +
        (ph.total.first_error.empty() ? std::string() : ": " + ph.total.first_error));
  }
  Progress("%s: load %.3f Mops/s, %.2f s", name.c_str(), r.mops, r.seconds);
  Record(run.reg, std::move(r));
  return Status::OK();
}

// The `recover` workload: closes the index and times reopening it. A failed recovery is
// reported and leaves run.index null.
Status Runner::Recover(IndexRun& run) {
  const std::string& name = run.name;
  BenchResult r = NewResult(run.reg, "recover", run.threads, cfg_.dist.name());
  r.keys = run.space.hi - run.space.lo;
  if (!run.reg.attach) {
    r.note = "not applicable: no pool to reopen";
    FillMemory(run.index.get(), r.keys, &r);
    Record(run.reg, std::move(r));
    return Status::OK();
  }
  Progress("%s: recover (close and reopen %s)", name.c_str(), run.path.c_str());
  if (Status s = run.index->close(); !s.ok()) {
    r.note = "close failed: " + s.ToString();
  }
  run.index.reset();
  pool_ = nullptr;
  const Clock::time_point t0 = Clock::now();
  Options reopen = run.options;
  reopen.prefault = false;  // recovery time is the index's, not the page tables'
  reopen.trial_open = false;  // one recovery, as the papers measure it
  Result<std::unique_ptr<Index>> reopened = OpenIndex(run.path, reopen, name);
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!reopened.ok()) {
    report_->skipped.push_back(name + ": recovery failed: " + reopened.status().ToString());
    report_->verify_failed = true;
    return Status::OK();
  }
  // The reopened pool's seam counted exactly the open.
  pm::PersistContext& pc = reopened.value()->pool()->persist_context();
  pc.drain_media();
  r.counters = pc.counters();
  pool_ = reopened.value()->pool();
  run.index = std::move(reopened.value());
  run.ctx.index = run.index.get();
  r.seconds = secs;
  r.recovery_seconds = secs;
  FillMemory(run.index.get(), r.keys, &r);
  if (r.live_keys != r.keys) {
    r.note = "index reports " + std::to_string(r.live_keys) + " keys after recovery, " +
             std::to_string(r.keys) + " expected";
  }
  Progress("%s: recovered in %.3f s", name.c_str(), secs);
  Record(run.reg, std::move(r));
  return Status::OK();
}

// A YCSB mix or micro-workload: one measured phase of --ops operations (or fewer, with
// --seconds), on the live keys [lo, hi) at its start.
Status Runner::RunMix(IndexRun& run, const Workload& w) {
  const std::string& name = run.name;
  const int threads = run.threads;
  if ((w.mix.scan > 0) && !run.reg.traits.ordered) {
    report_->skipped.push_back(name + ": workload " + w.name + ": unordered index, no scans");
    return Status::OK();
  }
  const uint64_t lo = run.space.lo.load(), hi = run.space.hi.load();
  if (hi <= lo && w.mix.insert < 100) {
    report_->skipped.push_back(name + ": workload " + w.name + ": no keys left");
    return Status::OK();
  }
  run.ctx.seed = Mix64(cfg_.seed ^ Mix64(run.workload_no));
  const std::string dist = w.latest                                     ? std::string("latest")
                           : w.mix.insert == 100 || w.mix.remove == 100 ? InsertDistribution()
                                                                        : cfg_.dist.name();
  Progress("%s: workload %s, %llu ops on %llu keys (%d thread%s, %s)", name.c_str(),
           w.name.c_str(), static_cast<unsigned long long>(cfg_.ops),
           static_cast<unsigned long long>(hi - lo), threads, threads == 1 ? "" : "s",
           dist.c_str());
  StopCheck stop(cfg_.stop, cfg_.seconds);
  PhaseBody body;
  std::vector<std::unique_ptr<MixStream>> streams;
  if (w.mix.insert == 100) {
    const uint64_t end = hi + cfg_.ops;
    body.run = [&, end](int, int, ThreadResult& r) { return InsertWorker(run.ctx, end, stop, r); };
  } else {
    uint64_t most = 0;
    for (int t = 0; t < threads; t++) {
      const uint64_t mine = cfg_.ops / threads + (static_cast<uint64_t>(t) < cfg_.ops % threads);
      most = std::max(most, mine);
      streams.push_back(std::make_unique<MixStream>(run.ctx, w, t, threads, mine, lo, hi));
    }
    const uint64_t chunk = MixStream::ChunkOps(cfg_.prepare_bytes, codec_->max_size(), threads);
    body.chunks = static_cast<int>(std::max<uint64_t>(1, (most + chunk - 1) / chunk));
    body.prepare = [&](int t, int c) { streams[t]->prepare(c, body.chunks); };
    body.run = [&](int t, int, ThreadResult& r) { return streams[t]->run(stop, r); };
  }
  const PhaseOutcome ph = RunPhase(run.index->pool(), threads, body, cfg_.latency_sample,
                                   run.ctx.seed, &stop, cfg_.stop);
  BenchResult r = NewResult(run.reg, w.name, threads, dist);
  r.keys = hi - lo;
  FillResult(ph, &r);
  FillMemory(run.index.get(), run.space.hi - run.space.lo, &r);
  Progress("%s: workload %s %.3f Mops/s, %.2f s", name.c_str(), w.name.c_str(), r.mops,
           r.seconds);
  Record(run.reg, std::move(r));
  if (ph.interrupted) return Status::Busy("interrupted");
  return Status::OK();
}

// After an index's last workload: the inspect callback, verify() (its failure noted on the
// index's last result), and close. Nothing to do when a recovery failed.
void Runner::VerifyAndClose(IndexRun& run, size_t first_result) {
  if (run.index == nullptr) return;
  if (cfg_.inspect) cfg_.inspect(*run.index);
  if (cfg_.verify && report_->results.size() > first_result) {
    Progress("%s: verify", run.name.c_str());
    if (Status s = run.index->verify(); !s.ok()) {
      BenchResult& last = report_->results.back();
      last.note += (last.note.empty() ? "" : "; ") + std::string("verify: ") + s.ToString();
      report_->verify_failed = true;
    }
  }
  if (Status s = run.index->close(); !s.ok()) {
    report_->skipped.push_back(run.name + ": close failed: " + s.ToString());
  }
  run.index.reset();
}

// Thread counts above the machine's cores measure time slicing, not scaling: say so once.
void Runner::WarnAboutOversubscription() {
  const int cores = report_->environment.cores;
  int most = 0;
  for (int t : cfg_.threads) most = std::max(most, t);
  if (cores > 0 && most > cores) {
    report_->warnings.push_back(std::to_string(most) + " threads exceed the machine's " +
                                std::to_string(cores) +
                                " cores: the figures above that count measure threads sharing "
                                "cores, not scaling");
  }
}

Status Runner::Run() {
  std::error_code ec;
  if (!std::filesystem::is_directory(cfg_.pool_dir, ec)) {
    return Status::InvalidArgument(cfg_.pool_dir + ": pool directory does not exist");
  }
  report_->environment = DetectEnvironment(cfg_.pool_dir, cfg_.mode, cfg_.seed);
  WarnAboutOversubscription();
  report_->latency_sample = cfg_.latency_sample;
  report_->media_model = MediaModelName(cfg_.media_model);
  report_->count_unflushed = cfg_.count_unflushed;
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
    if (!cfg_.index_params.empty() && reg->attach != nullptr) {
      Result<IndexTraits> traits = TraitsWithParams(name, cfg_.index_params, cfg_.pool_dir);
      if (!traits.ok()) return traits.status().WithContext("index " + name);
      with_params_.push_back(*reg);
      with_params_.back().traits = *traits;
      reg = &with_params_.back();
    }
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

std::string DurabilityClass(const IndexRegistration& reg, PersistMode mode,
                            const std::string& pool_dir) {
  if (!reg.attach) {  // pool-less: the index states what a crash preserves
    if (!reg.traits.durability.empty()) return reg.traits.durability;
    return reg.traits.persistent ? "persistent" : "volatile";
  }
  // No pool open: what a pool in pool_dir would say. Without mapping one the granularity is
  // a guess from the medium (a DAX mapping without eADR reports cache lines).
  const std::string medium = PoolMedium(pool_dir);
  const StoreGranularity granularity = medium.starts_with("DAX") ? StoreGranularity::kCacheLine
                                                                  : StoreGranularity::kPage;
  return DescribeDurability(mode, granularity, medium == "tmpfs" ? medium : std::string());
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
  const size_t key_size = MaxKeySize();
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
  const uint64_t need = cfg_.pool_bytes > 0 ? cfg_.pool_bytes : PoolBytes();
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

