// The ADR (simulated power failure) crash campaign. See campaign.h.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "crashtest/campaign.h"
#include "crashtest/child.h"
#include "crashtest/scenarios.h"
#include "crashtest/workload.h"
#include "pm/alloc.h"
#include "pm/crash/tracker.h"
#include "pm/mutant.h"
#include "pm/persist.h"
#include "pmindex/index.h"

namespace pmindex::crashtest {
namespace {

// Counts fences, to number crash points before sampling them.
class FenceCounter : public pm::PersistHook {
 public:
  void on_flush(uintptr_t, size_t) override {}
  void on_fence() override { ++fences; }
  uint64_t fences = 0;
};

// What the workload is doing right now; forked verifiers read it.
struct LiveState {
  bool created = false;         // CreateIndex returned: the pool exists under its name
  Model model;                  // acknowledged operations
  const Op* inflight = nullptr;  // the operation in progress, if any
  std::string phase = "create";
};

Options PoolOptions(const CampaignOptions& o, bool read_only, PersistHook* hook = nullptr) {
  Options opts;
  // A new pool gets the index's campaign parameters (small structures that the campaign's
  // short workloads take through their splits and resizes).
  if (const IndexRegistration* reg = FindIndex(o.index); reg != nullptr)
    opts.index_params = reg->campaign_params;
  if (!o.index_params.empty()) opts.index_params = o.index_params;
  opts.persist_hook = hook;
  opts.pool_size = o.pool_size;
  opts.mode = PersistMode::kAdr;
  opts.huge_pages = false;
  opts.model_media = false;
  opts.read_only = read_only;
  opts.poison_freed = o.poison_freed;
  opts.max_value_size = o.value_size;
  return opts;
}

std::vector<const Op*> Inflight(const LiveState& state) {
  if (state.inflight == nullptr) return {};
  return {state.inflight};
}

// Opens an image read-only (copy-on-write), recovers it and checks it against the log.
Status CheckImage(const CampaignOptions& o, const std::string& path, const Model& before,
                  const std::vector<const Op*>& inflight, bool int_keys, Model* matched,
                  std::unique_ptr<Index>* keep) {
  Result<std::unique_ptr<Index>> r = OpenIndex(path, PoolOptions(o, true), o.index);
  if (!r.ok()) return r.status().WithContext("recovery");
  if (Status s = CheckAgainstModel(*r.value(), before, inflight, int_keys, matched); !s.ok())
    return s;
  if (keep != nullptr) *keep = std::move(r).value();
  return Status::OK();
}

// A second power failure at every fence of the recovery of `image`: each of those images
// must still recover to the same allowed states.
Status CheckRecoveryCrash(const CampaignOptions& o, const IndexRegistration& reg,
                          const std::string& image, const Model& before,
                          const std::vector<const Op*>& inflight, bool int_keys,
                          uint64_t seed) {
  const std::string scratch =
      o.dir + "/pmindex-ct-rc-" + std::to_string(::getpid()) + ".pool";
  if (Status s = CopyFile(image, scratch); !s.ok()) return s;
  Status result;
  {
    pm::crash::TrackerOptions t;
    t.seed = seed;
    t.random_images = 2;
    t.image_dir = o.dir;
    t.timeout_seconds = o.timeout_seconds;
    t.max_failures = 1;
    pm::crash::CrashTracker tracker(
        t, [&](const std::string& path, uint64_t, const std::string&) -> Status {
          return CheckImage(o, path, before, inflight, int_keys, nullptr, nullptr);
        });
    tracker.use_pool_extent();
    // The registry's own open sequence, every fence of it (generation bump, recovery,
    // allocator rebuild) a crash point.
    Result<std::unique_ptr<Index>> index =
        OpenIndex(scratch, PoolOptions(o, false, &tracker), reg.traits.name);
    if (index.ok()) tracker.crash_point();
    if (!tracker.report().failures.empty()) {
      const pm::crash::CrashFailure& f = tracker.report().failures.front();
      result = Status::Corruption("second crash during recovery, at recovery fence " +
                                  std::to_string(f.point) + " image " + f.image + ": " +
                                  f.message);
    } else if (!index.ok()) {
      result = index.status().WithContext("recovery (second-crash copy)");
    }
  }
  ::unlink(scratch.c_str());
  return result;
}

// Runs the workload: creation, every op in lockstep with the model. Stops early when
// `stop` says so. Returns a non-OK Status if the live index disagreed with the model.
Status RunWorkload(const CampaignOptions& o, const IndexRegistration& reg,
                   const std::string& path, const std::vector<Op>& ops, LiveState& state,
                   PersistHook* hook, const std::function<bool()>& stop,
                   const std::function<void()>& at_end, uint64_t* executed) {
  const bool int_keys = !reg.traits.byte_keys;
  Result<std::unique_ptr<Index>> created =
      CreateIndex(reg.traits.name, path, PoolOptions(o, false, hook));
  if (!created.ok()) return created.status().WithContext("create");
  state.created = true;
  std::unique_ptr<Index> index = std::move(created).value();
  Status result;
  for (size_t i = 0; i < ops.size() && !stop(); ++i) {
    state.inflight = &ops[i];
    state.phase = "op " + std::to_string(i) + ": " + DescribeOp(ops[i], int_keys);
    Status s = RunOp(*index, state.model, ops[i], int_keys);
    state.inflight = nullptr;
    ++*executed;
    if (!s.ok()) {
      result = s.WithContext("live run, op " + std::to_string(i));
      break;
    }
  }
  state.phase = "after the last operation";
  if (result.ok()) {
    Model unused;
    if (Status s = CheckAgainstModel(*index, state.model, {}, int_keys, &unused); !s.ok())
      result = s.WithContext("live run, after the last operation");
  }
  at_end();  // while the pool is still mapped
  index.reset();
  return result;
}

std::vector<Op> MakeOps(const CampaignOptions& o, const IndexTraits& traits) {
  std::vector<Op> ops;
  if (!o.scenario.empty()) {
    ScenarioOps(o.scenario, traits, o.seed, &ops);
    return ops;
  }
  OpGenerator gen(traits, o.seed, std::max<uint64_t>(16, o.ops / 2));
  gen.set_value_size(o.value_size);
  ops.reserve(o.ops);
  for (uint64_t i = 0; i < o.ops; ++i) ops.push_back(gen.next());
  return ops;
}

pm::crash::TrackerOptions AdrTrackerOptions(const CampaignOptions& o) {
  pm::crash::TrackerOptions t;
  t.seed = o.seed;
  t.random_images = o.images;
  t.torn_images = o.torn ? o.torn_images : 0;
  t.flip_each = o.flip_each;
  t.only_point = o.only_point;
  t.only_image = o.only_image;
  t.image_dir = o.dir;
  t.timeout_seconds = o.timeout_seconds;
  t.max_failures = o.max_failures;
  t.fork = o.fork;
  return t;
}

// Numbers the crash points with a dry run of the workload, then draws a seeded sample of
// o.points of them.
std::vector<uint64_t> SamplePoints(const CampaignOptions& o, const IndexRegistration& reg,
                                   const std::string& path, const std::vector<Op>& ops) {
  FenceCounter counter;
  LiveState dry;
  uint64_t executed = 0;
  Status s = RunWorkload(o, reg, path, ops, dry, &counter, [] { return false; }, [] {},
                         &executed);
  ::unlink(path.c_str());
  const uint64_t total = counter.fences + 1;  // + the point after the last operation
  std::vector<uint64_t> all(total);
  for (uint64_t i = 0; i < total; ++i) all[i] = i + 1;
  std::mt19937_64 rng(o.seed);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(std::min<uint64_t>(o.points, total));
  (void)s;  // a failing live run shows again in the campaign's own run
  return all;
}

// Checks one post-crash image: recovery against the log, then for a seeded share of images
// a continuation and a second crash during recovery.
Status VerifyImage(const CampaignOptions& o, const IndexRegistration& reg,
                   const LiveState& state, const std::string& image, uint64_t point,
                   const std::string& name) {
  // Creation publishes the pool under its name only once it is complete: a crash before
  // that leaves no pool to recover.
  if (!state.created) return Status::OK();
  const bool int_keys = !reg.traits.byte_keys;
  const std::vector<const Op*> inflight = Inflight(state);
  Model matched;
  std::unique_ptr<Index> index;
  if (Status s = CheckImage(o, image, state.model, inflight, int_keys, &matched, &index); !s.ok())
    return s;
  const uint64_t h = Mix64(o.seed ^ Mix64(point) ^ HashString(name));
  if (o.continuation_every != 0 && o.continuation_ops != 0 && h % o.continuation_every == 0) {
    if (Status s = CheckContinuation(*index, matched, h, o.continuation_ops); !s.ok())
      return s.WithContext("continuation after recovery");
  }
  index.reset();
  if (o.recovery_crash_every != 0 && (h >> 32) % o.recovery_crash_every == 0)
    return CheckRecoveryCrash(o, reg, image, state.model, inflight, int_keys, h);
  return Status::OK();
}

// Copies the tracker's counts and failures into the campaign's result.
void TakeReport(const CampaignOptions& o, const pm::crash::TrackerReport& r, CampaignResult& res) {
  res.fences = r.fences;
  res.points = r.points_checked;
  res.points_skipped = r.points_skipped;
  res.images = r.images;
  res.max_undecided = r.max_undecided;
  res.check_seconds = r.check_seconds;
  res.scan_seconds = r.scan_seconds;
  res.bytes_compared = r.bytes_compared;
  for (const pm::crash::CrashFailure& f : r.failures) {
    CampaignFailure cf;
    cf.model = "adr";
    cf.point = f.point;
    cf.image = f.image;
    cf.operation = f.context;
    cf.message = f.message;
    cf.replay = ReplayCommand(o, "adr", f.point, f.image);
    res.failures.push_back(std::move(cf));
  }
}

}  // namespace

std::string ReplayCommand(const CampaignOptions& o, const std::string& model, uint64_t point,
                          const std::string& image) {
  std::string cmd = "pmindex crashtest --index " + o.index + " --model " + model +
                    " --seed " + std::to_string(o.seed);
  if (o.scenario.empty()) {
    cmd += " --ops " + std::to_string(o.ops);
  } else {
    cmd += " --scenario " + o.scenario;
  }
  if (!o.mutant.empty()) cmd += " --mutant " + o.mutant;
  if (o.value_size != 0) cmd += " --value-size " + std::to_string(o.value_size);
  if (!o.index_params.empty()) cmd += " --index-params '" + o.index_params + "'";
  if (model == "adr") {
    cmd += " --images " + std::to_string(o.images);
    if (o.torn) cmd += " --torn";
    if (o.pool_size != CampaignOptions().pool_size)
      cmd += " --pool-size " + std::to_string(o.pool_size);
    cmd += " --replay-point " + std::to_string(point) + " --replay-image " + image;
  } else {
    cmd += " --cycles " + std::to_string(point) + " --threads " + std::to_string(o.threads);
  }
  return cmd;
}

CampaignResult RunAdrCampaign(const CampaignOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  CampaignResult res;
  res.model = "adr";
  const CampaignScope scope(o, res);
  const IndexRegistration* reg = scope.index();
  if (reg == nullptr) return res;
  const std::vector<Op> ops = MakeOps(o, reg->traits);
  const std::string path = o.dir + "/pmindex-ct-" + o.index + "-" + std::to_string(::getpid()) +
                           "-" + std::to_string(o.seed) + ".pool";
  ::unlink(path.c_str());

  pm::crash::TrackerOptions t = AdrTrackerOptions(o);
  if (o.points != 0 && o.only_point == 0) t.points = SamplePoints(o, *reg, path, ops);

  LiveState state;
  auto verifier = [&](const std::string& image, uint64_t point, const std::string& name) {
    return VerifyImage(o, *reg, state, image, point, name);
  };
  auto tracker = std::make_unique<pm::crash::CrashTracker>(t, verifier);
  tracker->use_pool_extent();
  tracker->set_context([&state] { return state.phase; });
  tracker->set_on_failure([&](const pm::crash::CrashFailure& f) {
    if (o.log)
      o.log("  FAIL " + o.index + " adr point " + std::to_string(f.point) + " image " + f.image +
            " during " + f.context + ": " + f.message + "\n    replay: " +
            ReplayCommand(o, "adr", f.point, f.image));
  });
  // The state after the last operation is a crash point too.
  auto at_end = [&] { tracker->crash_point(); };
  Status live = RunWorkload(o, *reg, path, ops, state, tracker.get(),
                            [&] { return tracker->done(); }, at_end, &res.ops);
  TakeReport(o, tracker->report(), res);
  tracker.reset();
  if (!live.ok() && res.failures.empty()) {
    CampaignFailure cf;
    cf.model = "adr";
    cf.image = "live";
    cf.operation = state.phase;
    cf.message = live.ToString();
    cf.replay = ReplayCommand(o, "adr", 0, "none");
    res.failures.push_back(std::move(cf));
  }
  ::unlink(path.c_str());
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return res;
}

std::string FormatResult(const CampaignResult& r) {
  char buf[512];
  if (!r.error.ok()) return r.index + " " + r.model + ": could not run: " + r.error.ToString();
  if (r.model == "adr") {
    std::snprintf(buf, sizeof(buf),
                  "%-16s adr : %6llu ops, %6llu fences, %6llu points checked (%llu skipped), "
                  "%7llu images, max %llu undecided lines, %.1f us/image (%.1f us/point finding "
                  "lines in %.0f KiB), %.1f s, %zu failures",
                  r.index.c_str(), (unsigned long long)r.ops, (unsigned long long)r.fences,
                  (unsigned long long)r.points, (unsigned long long)r.points_skipped,
                  (unsigned long long)r.images, (unsigned long long)r.max_undecided,
                  r.us_per_image(), r.points ? r.scan_seconds * 1e6 / r.points : 0.0,
                  r.points ? r.bytes_compared / 1024.0 / r.points : 0.0, r.seconds,
                  r.failures.size());
  } else {
    std::snprintf(buf, sizeof(buf),
                  "%-16s kill: %6llu ops acknowledged, %4llu cycles, %4llu recoveries checked, "
                  "%.1f s, %zu failures",
                  r.index.c_str(), (unsigned long long)r.ops, (unsigned long long)r.fences,
                  (unsigned long long)r.images, r.seconds, r.failures.size());
  }
  std::string out = buf;
  for (const CampaignFailure& f : r.failures) {
    out += "\n  FAILURE " + f.model + " point " + std::to_string(f.point) + " image " + f.image +
           "\n    interrupted: " + f.operation + "\n    found: " + f.message +
           "\n    replay: " + f.replay;
  }
  return out;
}

}  // namespace pmindex::crashtest
