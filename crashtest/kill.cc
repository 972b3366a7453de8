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
  opts.pool_size = o.pool_size;
  opts.mode = PersistMode::kEadr;  // a process crash loses nothing the CPU has stored
  opts.huge_pages = false;
  opts.model_media = false;
  opts.poison_freed = o.poison_freed;
  return opts;
}

// The ops of one thread in one cycle: the child draws them until it is killed, the parent
// draws the same ones again to learn what was acknowledged.
OpGenerator ThreadGenerator(const CampaignOptions& o, const IndexTraits& traits, uint32_t cycle,
                            uint32_t thread) {
  return OpGenerator(traits, Mix64(o.seed ^ (uint64_t{cycle} << 20)),
                     std::max<uint64_t>(16, o.ops / 2), thread, o.threads);
}

// A bound on one thread's ops per cycle, in case the kill comes late.
constexpr uint64_t kMaxOpsPerCycle = 1 << 22;

}  // namespace

CampaignResult RunKillCampaign(const CampaignOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  CampaignResult res;
  res.model = "kill";
  const CampaignScope scope(o, res);
  const IndexRegistration* reg = scope.index();
  if (reg == nullptr) return res;
  const bool int_keys = !reg->traits.byte_keys;
  const uint32_t threads = std::max<uint32_t>(1, o.threads);
  const std::string path = o.dir + "/pmindex-kill-" + o.index + "-" + std::to_string(::getpid()) +
                           "-" + std::to_string(o.seed) + ".pool";
  ::unlink(path.c_str());
  {
    Result<std::unique_ptr<Index>> created = CreateIndex(o.index, path, KillPoolOptions(o));
    if (!created.ok()) {
      res.error = created.status();
      return res;
    }
  }
  void* shm = ::mmap(nullptr, sizeof(ThreadSlot) * threads, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  auto* slots = static_cast<ThreadSlot*>(shm);
  std::mt19937_64 rng(o.seed);
  Model model;  // what the pool holds after the last checked recovery

  for (uint32_t cycle = 1; cycle <= o.cycles; ++cycle) {
    for (uint32_t t = 0; t < threads; ++t) new (&slots[t]) ThreadSlot{};
    const pid_t pid = ::fork();
    if (pid < 0) {
      res.error = Status::IOError("fork failed");
      break;
    }
    if (pid == 0) {
      Result<std::unique_ptr<Index>> opened = OpenIndex(path, KillPoolOptions(o), o.index);
      if (!opened.ok()) _exit(2);
      Index* index = opened.value().get();
      std::vector<std::thread> workers;
      for (uint32_t t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
          OpGenerator gen = ThreadGenerator(o, reg->traits, cycle, t);
          for (uint64_t i = 0; i < kMaxOpsPerCycle; ++i) {
            const Op op = gen.next();
            slots[t].pending.store(i + 1, std::memory_order_seq_cst);
            switch (op.kind) {
              case OpKind::kInsert:
                (void)index->insert(op.key, op.value);
                break;
              case OpKind::kUpdate:
                (void)index->update(op.key, op.value);
                break;
              case OpKind::kUpsert:
                (void)index->upsert(op.key, op.value);
                break;
              case OpKind::kRemove:
                (void)index->remove(op.key);
                break;
              case OpKind::kLookup: {
                std::string v;
                (void)index->lookup(op.key, &v);  // exercises reads; checked after the kill
                break;
              }
              case OpKind::kScan:
                index->scan(op.key, op.scan_count, [](std::string_view, std::string_view) {
                  return true;
                });
                break;
            }
            slots[t].acked.store(i + 1, std::memory_order_seq_cst);
          }
        });
      }
      for (auto& w : workers) w.join();
      _exit(0);  // no clean close: the next open recovers either way
    }
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
      break;
    }
    ++res.fences;

    // Expected state: acknowledged ops applied; each thread's pending op may be applied.
    Model before = model;
    std::vector<Op> pending_ops;
    pending_ops.reserve(threads);
    std::vector<const Op*> inflight;
    std::string interrupted;
    for (uint32_t t = 0; t < threads; ++t) {
      const uint64_t acked = slots[t].acked.load();
      const uint64_t pending = slots[t].pending.load();
      OpGenerator gen = ThreadGenerator(o, reg->traits, cycle, t);
      // A failed op (insert of a present key, ...) changed nothing, in the model as in the index.
      for (uint64_t i = 0; i < acked; ++i) ApplyToModel(before, gen.next()).IgnoreError();
      res.ops += acked;
      if (pending > acked) {
        pending_ops.push_back(gen.next());
        inflight.push_back(&pending_ops.back());
        interrupted += (interrupted.empty() ? "" : "; ") + std::string("thread ") +
                       std::to_string(t) + " op " + std::to_string(pending - 1) + ": " +
                       DescribeOp(pending_ops.back(), int_keys);
      }
    }
    if (interrupted.empty()) interrupted = "none (between operations)";

    // Recovery first in a child on a copy (a crash or hang there must not take us down),
    // then for real, continuing on the same pool.
    const std::string copy = path + ".check";
    Status checked = CopyFile(path, copy);
    if (checked.ok()) {
      checked = RunInChild(
          [&]() -> Status {
            Result<std::unique_ptr<Index>> r = OpenIndex(copy, KillPoolOptions(o), o.index);
            if (!r.ok()) return r.status().WithContext("recovery");
            Model matched;
            if (Status s = CheckAgainstModel(*r.value(), before, inflight, int_keys, &matched);
                !s.ok())
              return s;
            return CheckContinuation(*r.value(), matched, Mix64(o.seed + cycle),
                                     o.continuation_ops);
          },
          o.timeout_seconds);
    }
    ::unlink(copy.c_str());
    if (checked.ok()) {
      Result<std::unique_ptr<Index>> r = OpenIndex(path, KillPoolOptions(o), o.index);
      if (!r.ok()) {
        checked = r.status().WithContext("recovery");
      } else {
        checked = CheckAgainstModel(*r.value(), before, inflight, int_keys, &model);
      }
    }
    ++res.images;
    ++res.points;
    if (!checked.ok()) {
      CampaignFailure f{"kill", cycle, "-", interrupted, checked.ToString(),
                        ReplayCommand(o, "kill", cycle, "-")};
      if (o.log)
        o.log("  FAIL " + o.index + " kill cycle " + std::to_string(cycle) + " during " +
              interrupted + ": " + f.message + "\n    replay: " + f.replay);
      res.failures.push_back(std::move(f));
      if (o.max_failures != 0 && res.failures.size() >= o.max_failures) break;
      break;  // the pool's state is unknown now: later cycles would only echo this failure
    }
  }
  ::munmap(shm, sizeof(ThreadSlot) * threads);
  ::unlink(path.c_str());
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return res;
}

}  // namespace pmindex::crashtest
