// The kill -9 (process crash / eADR) campaign. See campaign.h.
//
// Expected state, RocksDB-crash-test style: each worker thread owns a slot in a shared
// anonymous mapping. Before operation n starts the thread stores pending = n + 1; after it
// returns it stores acked = n + 1. The parent regenerates the same seeded operations, so
// after the kill it knows exactly which operations were acknowledged and which one (per
// thread) was in flight.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "crashtest/campaign.h"
#include "crashtest/child.h"
#include "crashtest/workload.h"
#include "pm/mutant.h"
#include "pmindex/index.h"

namespace pmindex::crashtest {
namespace {

struct alignas(64) ThreadSlot {
  std::atomic<uint64_t> pending;  // 1 + number of the op started last (0 = none)
  std::atomic<uint64_t> acked;    // number of ops acknowledged
};

Options KillPoolOptions(const CampaignOptions& o) {
  Options opts;
  // A new pool gets the index's campaign parameters (small structures that the campaign's
  // short workloads take through their splits and resizes).
  if (const IndexRegistration* reg = FindIndex(o.index); reg != nullptr)
    opts.index_params = reg->campaign_params;
  if (!o.index_params.empty()) opts.index_params = o.index_params;
  opts.pool_size = o.pool_size;
  opts.mode = PersistMode::kEadr;  // a process crash loses nothing the CPU has stored
  opts.huge_pages = false;
  opts.model_media = false;
  opts.poison_freed = o.poison_freed;
  opts.max_value_size = o.value_size;
  return opts;
}

// The ops of one thread in one cycle: the child draws them until it is killed, the parent
// draws the same ones again to learn what was acknowledged.
OpGenerator ThreadGenerator(const CampaignOptions& o, const IndexTraits& traits, uint32_t cycle,
                            uint32_t thread) {
  OpGenerator gen(traits, Mix64(o.seed ^ (uint64_t{cycle} << 20)),
                  std::max<uint64_t>(16, o.ops / 2), thread, o.threads);
  gen.set_value_size(o.value_size);
  return gen;
}

// A bound on one thread's ops per cycle, in case the kill comes late.
constexpr uint64_t kMaxOpsPerCycle = 1 << 22;

// What every cycle of one campaign shares.
struct KillRun {
  const CampaignOptions& o;
  const IndexRegistration& reg;
  bool int_keys;
  uint32_t threads;
  std::string path;  // the pool, reopened by every cycle
  ThreadSlot* slots;  // one per thread, in memory shared with the child
  bool conditional;   // the pool's traits().conditional_writes (a variant may clear it)
};

// Runs `op` on the index, its result unchecked (the parent checks the pool after the kill).
void ApplyUnchecked(Index& index, const Op& op) {
  switch (op.kind) {
    case OpKind::kInsert:
      (void)index.insert(op.key, op.value);
      break;
    case OpKind::kUpdate:
      (void)index.update(op.key, op.value);
      break;
    case OpKind::kUpsert:
      (void)index.upsert(op.key, op.value);
      break;
    case OpKind::kRemove:
      (void)index.remove(op.key);
      break;
    case OpKind::kLookup: {
      std::string v;
      (void)index.lookup(op.key, &v);  // exercises reads; checked after the kill
      break;
    }
    case OpKind::kScan:
      index.scan(op.key, op.scan_count, [](std::string_view, std::string_view) { return true; });
      break;
    case OpKind::kReadModifyWrite:
      break;  // not a campaign operation
  }
}

// The forked child: opens the pool and runs every thread's operations, logging each in its
// slot, until it is killed.
[[noreturn]] void RunWorkloadChild(const KillRun& run, uint32_t cycle) {
  Result<std::unique_ptr<Index>> opened = OpenIndex(run.path, KillPoolOptions(run.o), run.o.index);
  if (!opened.ok()) _exit(2);
  Index* index = opened.value().get();
  std::vector<std::thread> workers;
  for (uint32_t t = 0; t < run.threads; ++t) {
    workers.emplace_back([&, t] {
      OpGenerator gen = ThreadGenerator(run.o, run.reg.traits, cycle, t);
      for (uint64_t i = 0; i < kMaxOpsPerCycle; ++i) {
        const Op op = gen.next();
        run.slots[t].pending.store(i + 1, std::memory_order_seq_cst);
        ApplyUnchecked(*index, op);
        run.slots[t].acked.store(i + 1, std::memory_order_seq_cst);
      }
    });
  }
  for (auto& w : workers) w.join();
  _exit(0);  // no clean close: the next open recovers either way
}

// Forks the workload child and SIGKILLs it after a random delay. False (with res.error or a
// failure recorded) when the cycle could not run.
bool ForkAndKill(const KillRun& run, uint32_t cycle, std::mt19937_64& rng, CampaignResult& res) {
  const CampaignOptions& o = run.o;
  for (uint32_t t = 0; t < run.threads; ++t) new (&run.slots[t]) ThreadSlot{};
  const pid_t pid = ::fork();
  if (pid < 0) {
    res.error = Status::IOError("fork failed");
    return false;
  }
  if (pid == 0) RunWorkloadChild(run, cycle);
  const uint32_t delay_ms = 1 + static_cast<uint32_t>(rng() % std::max<uint32_t>(1, o.max_delay_ms));
  std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    CampaignFailure f{"kill", cycle, "-", "open before the workload",
                      "the workload child could not open the pool (exit " +
                          std::to_string(WEXITSTATUS(status)) + ")",
                      ReplayCommand(o, "kill", cycle, "-")};
    res.failures.push_back(f);
    return false;
  }
  return true;
}

// What the pool may hold after the kill: the acknowledged operations applied, and each
// thread's pending one applied or not.
struct Expected {
  Model before;
  std::vector<Op> pending_ops;
  std::vector<const Op*> inflight;  // into pending_ops
  std::string interrupted;          // the pending operations, for a failure report
};

// Regenerates the cycle's operations to learn the expected state from the slots; adds the
// acknowledged ones to *acked_ops.
void ExpectAfterKill(const KillRun& run, uint32_t cycle, const Model& model, Expected* e,
                     uint64_t* acked_ops) {
  e->before = model;
  e->pending_ops.reserve(run.threads);
  for (uint32_t t = 0; t < run.threads; ++t) {
    const uint64_t acked = run.slots[t].acked.load();
    const uint64_t pending = run.slots[t].pending.load();
    OpGenerator gen = ThreadGenerator(run.o, run.reg.traits, cycle, t);
    // A failed op (insert of a present key, ...) changed nothing, in the model as in the index.
    for (uint64_t i = 0; i < acked; ++i)
      ApplyToModel(e->before, gen.next(), run.conditional).IgnoreError();
    *acked_ops += acked;
    if (pending > acked) {
      e->pending_ops.push_back(gen.next());
      e->inflight.push_back(&e->pending_ops.back());
      e->interrupted += (e->interrupted.empty() ? "" : "; ") + std::string("thread ") +
                        std::to_string(t) + " op " + std::to_string(pending - 1) + ": " +
                        DescribeOp(e->pending_ops.back(), run.int_keys);
    }
  }
  if (e->interrupted.empty()) e->interrupted = "none (between operations)";
}

// Recovery first in a child on a copy (a crash or hang there must not take us down), then
// for real, continuing on the same pool; on success *model is what the pool now holds.
Status CheckRecovery(const KillRun& run, uint32_t cycle, const Expected& e, Model* model) {
  const CampaignOptions& o = run.o;
  const std::string copy = run.path + ".check";
  Status checked = CopyFile(run.path, copy);
  if (checked.ok()) {
    checked = RunInChild(
        [&]() -> Status {
          Result<std::unique_ptr<Index>> r = OpenIndex(copy, KillPoolOptions(o), o.index);
          if (!r.ok()) return r.status().WithContext("recovery");
          Model matched;
          if (Status s = CheckAgainstModel(*r.value(), e.before, e.inflight, run.int_keys,
                                           &matched);
              !s.ok())
            return s;
          return CheckContinuation(*r.value(), matched, Mix64(o.seed + cycle),
                                   o.continuation_ops);
        },
        o.timeout_seconds);
  }
  ::unlink(copy.c_str());
  if (!checked.ok()) return checked;
  Result<std::unique_ptr<Index>> r = OpenIndex(run.path, KillPoolOptions(o), o.index);
  if (!r.ok()) return r.status().WithContext("recovery");
  return CheckAgainstModel(*r.value(), e.before, e.inflight, run.int_keys, model);
}

}  // namespace

CampaignResult RunKillCampaign(const CampaignOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  CampaignResult res;
  res.model = "kill";
  const CampaignScope scope(o, res);
  const IndexRegistration* reg = scope.index();
  if (reg == nullptr) return res;
  const uint32_t threads = std::max<uint32_t>(1, o.threads);
  const std::string path = o.dir + "/pmindex-kill-" + o.index + "-" + std::to_string(::getpid()) +
                           "-" + std::to_string(o.seed) + ".pool";
  ::unlink(path.c_str());
  bool conditional = true;
  {
    Result<std::unique_ptr<Index>> created = CreateIndex(o.index, path, KillPoolOptions(o));
    if (!created.ok()) {
      res.error = created.status();
      return res;
    }
    conditional = created.value()->traits().conditional_writes;
  }
  void* shm = ::mmap(nullptr, sizeof(ThreadSlot) * threads, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  const KillRun run{o, *reg, !reg->traits.byte_keys, threads, path,
                    static_cast<ThreadSlot*>(shm), conditional};
  std::mt19937_64 rng(o.seed);
  Model model;  // what the pool holds after the last checked recovery

  for (uint32_t cycle = 1; cycle <= o.cycles; ++cycle) {
    if (!ForkAndKill(run, cycle, rng, res)) break;
    ++res.fences;
    Expected expected;
    ExpectAfterKill(run, cycle, model, &expected, &res.ops);
    const Status checked = CheckRecovery(run, cycle, expected, &model);
    ++res.images;
    ++res.points;
    if (!checked.ok()) {
      CampaignFailure f{"kill", cycle, "-", expected.interrupted, checked.ToString(),
                        ReplayCommand(o, "kill", cycle, "-")};
      if (o.log)
        o.log("  FAIL " + o.index + " kill cycle " + std::to_string(cycle) + " during " +
              expected.interrupted + ": " + f.message + "\n    replay: " + f.replay);
      res.failures.push_back(std::move(f));
      break;  // the pool's state is unknown now: later cycles would only echo this failure
    }
  }
  ::munmap(shm, sizeof(ThreadSlot) * threads);
  ::unlink(path.c_str());
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return res;
}

}  // namespace pmindex::crashtest
