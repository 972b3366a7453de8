// ns per lookup and per insert of every registered index, called in a plain loop: the
// library's own cost per operation, without the workbench (no latency stamps, no histogram,
// no key drawing, no shared id counter).
//
//   BM_Lookup/<index>  --ops lookups of loaded keys, one after another
//   BM_Insert/<index>  --ops inserts of new keys into the loaded index
//
// Each index gets a fresh pool in --pool-dir (default as `pmindex bench`: $PMINDEX_POOL_DIR,
// else /dev/shm), prefaulted, in adr mode with the media model off, and --keys keys loaded
// (untimed) in the order `pmindex bench --workload load` inserts them. Keys are 8-byte
// integers encoded by the workbench's KeyCodec and drawn before timing into an array:
// the lookup stream is exactly the one of `pmindex bench --workload load,lookup --dist
// uniform --seed 1 --keys K --ops N` (same generator, same seed derivation), so the two
// throughputs compare the same operations; inserts take ids from K upwards in id order,
// as the workbench's insert workload does single-threaded. Both run a fixed --ops
// iterations; repetitions of BM_Insert take fresh ids (the pool has room for four).
//
//   index_bench [--keys=N] [--ops=N] [--index=a,b] [--pool-dir=DIR] [benchmark flags]
//
// Benchmarks run in registration order, lookup before insert per index, and an index's pool
// is removed when the next index starts. Exit status 1 if any benchmark saw a wrong result (a
// pool not created, a load or insert that failed, a lookup that missed a loaded key), so the
// smoke test (bench_micro_smoke) fails on it; Google Benchmark alone only reports the error.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench/environment.h"
#include "bench/generators.h"
#include "bench/keys.h"
#include "bench/runner.h"
#include "pmindex/index.h"

namespace pmindex {
namespace {

struct Flags {
  uint64_t keys = 1000000;
  uint64_t ops = 1000000;
  uint64_t seed = 1;
  std::string indexes;  // empty: every registered index
  std::string pool_dir;
};
Flags g_flags;

constexpr uint64_t kInsertRounds = 4;  // BM_Insert runs the pool has room for

// Keys of ids, encoded once into a flat array (8 bytes each).
struct KeyArray {
  std::vector<char> bytes;
  void add(const bench::KeyCodec& codec, uint64_t id) {
    char buf[bench::KeyCodec::kBufferSize];
    const std::string_view k = codec.encode(id, buf);
    bytes.insert(bytes.end(), k.begin(), k.end());
  }
  std::string_view operator[](size_t i) const { return {&bytes[i * 8], 8}; }
  size_t size() const { return bytes.size() / 8; }
};

// One index with --keys keys loaded, the lookup stream, and the next insert id.
struct Fixture {
  std::string name;
  std::unique_ptr<Index> index;
  KeyArray lookups;
  uint64_t next_id = 0;
  std::string error;

  explicit Fixture(const std::string& index_name) : name(index_name) {
    const bench::KeyCodec codec(bench::KeyType{}, /*scramble=*/true);
    const std::string path = g_flags.pool_dir + "/pmindex-index-bench-" +
                             std::to_string(::getpid()) + "-" + name + ".pool";
    Options o;
    o.mode = PersistMode::kAdr;
    o.model_media = false;
    o.prefault = true;
    o.pool_size = bench::EstimatePoolBytes(g_flags.keys + kInsertRounds * g_flags.ops, 8);
    Result<std::unique_ptr<Index>> made = CreateIndex(name, path, o);
    if (!made.ok()) {
      error = made.status().ToString();
      return;
    }
    index = std::move(made).value();
    ::unlink(path.c_str());  // the mapping stays; nothing is left behind however we exit
    char buf[bench::KeyCodec::kBufferSize];
    for (uint64_t id = 0; id < g_flags.keys; id++) {
      const Status s = index->insert(codec.encode(id, buf), IntValue(id));
      if (!s.ok()) {
        error = "load: " + s.ToString();
        return;
      }
    }
    next_id = g_flags.keys;
    // The runner's stream for workload 2 (after load) of a mix of 100% reads, thread 0:
    // a dice draw, then a uniform id (bench/worker.cc, MixStream).
    const uint64_t workload_seed = bench::Mix64(g_flags.seed ^ bench::Mix64(2));
    bench::Rng rng(bench::Mix64(workload_seed));
    const uint64_t n = g_flags.keys > 0 ? g_flags.keys : 1;
    for (uint64_t i = 0; i < g_flags.ops; i++) {
      (void)rng.uniform(100);
      lookups.add(codec, rng.uniform(n));
    }
  }
};

std::unique_ptr<Fixture> g_fixture;
int g_wrong_results = 0;  // benchmarks that saw one (the exit status)

// Reports a wrong result: the benchmark is marked as errored and the run will exit 1.
void Fail(benchmark::State& state, const std::string& why) {
  ++g_wrong_results;
  state.SkipWithError(why.c_str());
}

Fixture* Get(const std::string& name) {
  if (g_fixture == nullptr || g_fixture->name != name) {
    g_fixture.reset();  // closes the previous index (its pool file is already unlinked)
    g_fixture = std::make_unique<Fixture>(name);
  }
  return g_fixture.get();
}

void SetLabel(benchmark::State& state, Fixture& f) {
  Pool* pool = f.index->pool();
  state.SetLabel(std::to_string(g_flags.keys) + " keys, adr, media model off" +
                 (pool == nullptr ? ", no pool"
                                  : pool->huge_page_bytes() > 0 ? ", huge pages" : ", 4k pages"));
}

void BM_Lookup(benchmark::State& state, const std::string& name) {
  Fixture* f = Get(name);
  if (!f->error.empty()) {
    Fail(state, f->error);
    return;
  }
  Index* index = f->index.get();
  const KeyArray& keys = f->lookups;
  std::string value;
  size_t i = 0, missed = 0;
  for (auto _ : state) {
    missed += !index->lookup(keys[i], &value).ok();
    if (++i == keys.size()) i = 0;
  }
  if (missed > 0) Fail(state, std::to_string(missed) + " lookups missed loaded keys");
  state.SetItemsProcessed(state.iterations());
  SetLabel(state, *f);
}

void BM_Insert(benchmark::State& state, const std::string& name) {
  Fixture* f = Get(name);
  if (!f->error.empty()) {
    Fail(state, f->error);
    return;
  }
  if (f->next_id + g_flags.ops > g_flags.keys + kInsertRounds * g_flags.ops) {
    state.SkipWithError("no room for another round of inserts (fewer repetitions)");
    return;
  }
  const bench::KeyCodec codec(bench::KeyType{}, /*scramble=*/true);
  KeyArray keys;
  keys.bytes.reserve(g_flags.ops * 8);
  const uint64_t first = f->next_id;
  for (uint64_t i = 0; i < g_flags.ops; i++) keys.add(codec, first + i);
  f->next_id += g_flags.ops;
  Index* index = f->index.get();
  size_t i = 0, failed = 0;
  for (auto _ : state) {  // exactly --ops iterations (Iterations below)
    failed += !index->insert(keys[i], IntValue(first + i)).ok();
    i++;
  }
  if (failed > 0) Fail(state, std::to_string(failed) + " inserts failed");
  state.SetItemsProcessed(state.iterations());
  SetLabel(state, *f);
}

std::string TakeFlag(int* argc, char** argv, const char* name) {
  const size_t len = std::strlen(name);
  std::string value;
  int out = 1;
  for (int i = 1; i < *argc; i++) {
    if (std::strncmp(argv[i], name, len) == 0 && argv[i][len] == '=') {
      value = argv[i] + len + 1;
    } else {
      argv[out++] = argv[i];
    }
  }
  *argc = out;
  return value;
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    if (comma > pos) out.push_back(s.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

}  // namespace
}  // namespace pmindex

int main(int argc, char** argv) {
  using namespace pmindex;
  if (std::string v = TakeFlag(&argc, argv, "--keys"); !v.empty()) {
    g_flags.keys = std::strtoull(v.c_str(), nullptr, 10);
  }
  if (std::string v = TakeFlag(&argc, argv, "--ops"); !v.empty()) {
    g_flags.ops = std::strtoull(v.c_str(), nullptr, 10);
  }
  if (std::string v = TakeFlag(&argc, argv, "--seed"); !v.empty()) {
    g_flags.seed = std::strtoull(v.c_str(), nullptr, 10);
  }
  g_flags.indexes = TakeFlag(&argc, argv, "--index");
  g_flags.pool_dir = TakeFlag(&argc, argv, "--pool-dir");
  if (g_flags.pool_dir.empty()) g_flags.pool_dir = bench::DefaultPoolDir();
  if (g_flags.keys == 0 || g_flags.ops == 0) {
    std::fprintf(stderr, "index_bench: --keys and --ops must be positive\n");
    return 2;
  }
  std::vector<std::string> names =
      g_flags.indexes.empty() ? RegisteredIndexNames() : Split(g_flags.indexes);
  for (const std::string& name : names) {
    if (FindIndex(name) == nullptr) {
      std::fprintf(stderr, "index_bench: unknown index '%s'\n", name.c_str());
      return 2;
    }
    const auto iterations = static_cast<benchmark::IterationCount>(g_flags.ops);
    benchmark::RegisterBenchmark(("BM_Lookup/" + name).c_str(), BM_Lookup, name)
        ->Iterations(iterations)
        ->UseRealTime()
        ->Unit(benchmark::kNanosecond);
    benchmark::RegisterBenchmark(("BM_Insert/" + name).c_str(), BM_Insert, name)
        ->Iterations(iterations)
        ->UseRealTime()
        ->Unit(benchmark::kNanosecond);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  pmindex::g_fixture.reset();
  if (pmindex::g_wrong_results > 0) {
    std::fprintf(stderr, "index_bench: %d benchmarks saw wrong results\n",
                 pmindex::g_wrong_results);
    return 1;
  }
  return 0;
}
