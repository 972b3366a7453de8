// ns per PersistContext::persist of one random cache line of a 1 GiB pool in /dev/shm, per persistence
// mode, and what the seam's counting costs. Each iteration stores 8 bytes into a random
// line (so the flush has a dirty line to write back) and persists it.
//
//   BM_Persist/<mode>          the seam: counters + XPLine media model + the mode's
//                              instructions
//   BM_PersistNoMedia/<mode>   the seam with the media model off (counters only)
//   BM_Raw/<mode>              the same instructions without counting (pm::detail's bare
//                              flush_lines + sfence): clwb (or the detected flush) + sfence
//                              for adr, a compiler barrier for eadr, nothing for volatile
//
// Counting cost = Persist (or PersistNoMedia) / Raw - 1, per mode.
//
//   persist_bench --benchmark_min_time=1
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "pm/persist.h"
#include "pmindex/options.h"
#include "pmindex/pool.h"

namespace pmindex {
namespace {

constexpr uint64_t kPoolSize = 1ull << 30;
// The pool holds no index: its kind is one from the range reserved for tests.
constexpr IndexKind kScratchKind = static_cast<IndexKind>(kFirstTestIndexKind);
constexpr size_t kOffsets = 1 << 20;

struct Fixture {
  std::unique_ptr<Pool> pool;
  std::vector<uint64_t> offsets;  // random line offsets in the data area
  std::string path;

  Fixture() {
    path = "/dev/shm/pmindex-persist-bench-" + std::to_string(::getpid()) + ".pool";
    Options o;
    o.pool_size = kPoolSize;
    Result<std::unique_ptr<Pool>> p = Pool::Create(path, kScratchKind, "", o);
    if (!p.ok()) {
      std::fprintf(stderr, "%s\n", p.status().ToString().c_str());
      std::exit(1);
    }
    pool = std::move(p).value();
    ::unlink(path.c_str());  // the mapping stays; nothing is left behind however we exit
    std::mt19937_64 rng(42);
    const uint64_t lines = (kPoolSize - (8u << 20)) / pm::kCacheLine;
    offsets.resize(kOffsets);
    for (auto& off : offsets) off = (8u << 20) + (rng() % lines) * pm::kCacheLine;
    // Touch every page once so the first run does not pay the page faults.
    for (uint64_t off = 8u << 20; off < kPoolSize; off += 4096) pool->base()[off] = 1;
  }
};

Fixture& F() {
  static Fixture* f = new Fixture;
  return *f;
}

PersistMode ModeOf(int64_t i) { return static_cast<PersistMode>(i); }

void SetLabel(benchmark::State& state, PersistMode mode) {
  std::string label = PersistModeName(mode);
  label += " flush=";
  label += pm::flush_instruction_name();
  label += F().pool->huge_page_bytes() > 0 ? " huge-pages" : " 4k-pages";
  state.SetLabel(label);
}

void BM_Persist(benchmark::State& state, bool media) {
  Fixture& f = F();
  const PersistMode mode = ModeOf(state.range(0));
  pm::PersistSettings settings;
  settings.mode = mode;
  settings.model_media = media;
  pm::PersistContext pc(settings);  // a seam of its own over the fixture's mapping
  char* base = f.pool->base();
  size_t i = 0;
  for (auto _ : state) {
    char* p = base + f.offsets[i++ & (kOffsets - 1)];
    *reinterpret_cast<volatile uint64_t*>(p) = i;
    pc.persist(p, 8);
  }
  SetLabel(state, mode);
}

void BM_Raw(benchmark::State& state) {
  Fixture& f = F();
  const PersistMode mode = ModeOf(state.range(0));
  char* base = f.pool->base();
  size_t i = 0;
  for (auto _ : state) {
    char* p = base + f.offsets[i++ & (kOffsets - 1)];
    *reinterpret_cast<volatile uint64_t*>(p) = i;
    if (mode == PersistMode::kAdr) {
      pm::detail::flush_lines(reinterpret_cast<uintptr_t>(p) & ~uintptr_t{63}, 1);
      pm::detail::sfence();
    } else if (mode == PersistMode::kEadr) {
      std::atomic_signal_fence(std::memory_order_seq_cst);
    }
  }
  SetLabel(state, mode);
}

void Modes(benchmark::internal::Benchmark* b) {
  b->ArgName("mode");
  for (PersistMode m : {PersistMode::kAdr, PersistMode::kEadr, PersistMode::kVolatile})
    b->Arg(static_cast<int64_t>(m));
}

BENCHMARK_CAPTURE(BM_Persist, seam, true)->Apply(Modes);
BENCHMARK_CAPTURE(BM_Persist, seam_no_media, false)->Apply(Modes);
BENCHMARK(BM_Raw)->Apply(Modes);

}  // namespace
}  // namespace pmindex

BENCHMARK_MAIN();
