// The workbench runner end to end, in-process, on the baselines and the test-only
// "testlist" pool index (tests/reference), so that it does not depend on the real indexes:
// JSON shape, determinism of per-op counts, trace replay against std::map, key-space
// bookkeeping, interruption and pool clean-up.
#include "bench/runner.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench/dump.h"
#include "bench/generators.h"
#include "bench/report.h"
#include "bench/worker.h"
#include "bench/json_shape.h"
#include "common/test_util.h"
#include "pmindex/index.h"

namespace pmindex::bench {
namespace {

using pmindex::testing::SeedTrace;
using pmindex::testing::TempDir;
using pmindex::testing::TestSeed;

BenchConfig SmallConfig(const TempDir& dir, std::vector<std::string> indexes,
                        const std::string& workloads, uint64_t keys, uint64_t ops) {
  BenchConfig c;
  c.indexes = std::move(indexes);
  std::string err;
  EXPECT_TRUE(ParseWorkloads(workloads, &c.workloads, &err)) << err;
  c.keys = keys;
  c.ops = ops;
  c.pool_dir = dir.path();
  c.pool_bytes = 16ull << 20;
  c.progress = false;
  c.scan_length = 20;
  return c;
}

// Every pair of an index, in key order.
std::map<std::string, std::string> Contents(Index& index) {
  std::map<std::string, std::string> out;
  index.scan("", SIZE_MAX, [&](std::string_view k, std::string_view v) {
    out.emplace(std::string(k), std::string(v));
    return true;
  });
  return out;
}

const BenchResult* Find(const BenchReport& r, const std::string& index, const std::string& w) {
  for (const BenchResult& x : r.results) {
    if (x.index == index && x.workload == w) return &x;
  }
  return nullptr;
}

// Seconds of the load phase of a first run in a fresh process (forked: its cycle counter not
// yet calibrated, as long as this one's is not), or a negative value if the run failed.
double FirstLoadSecondsInFreshProcess(const TempDir& dir) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {  // the child: no gtest, no destructors
    ::close(fds[0]);
    BenchConfig c = SmallConfig(dir, {"stdmap"}, "load", 300, 300);
    c.latency_sample = 1;  // every operation stamped: the first one would calibrate
    BenchReport report;
    double seconds = -1;
    if (RunBench(c, &report).ok()) {
      if (const BenchResult* load = Find(report, "stdmap", "load")) seconds = load->seconds;
    }
    const bool written = ::write(fds[1], &seconds, sizeof(seconds)) == sizeof(seconds);
    ::_exit(written ? 0 : 1);
  }
  ::close(fds[1]);
  double seconds = -1;
  if (pid < 0 || ::read(fds[0], &seconds, sizeof(seconds)) != sizeof(seconds)) seconds = -1;
  ::close(fds[0]);
  int status = 0;
  if (pid > 0) ::waitpid(pid, &status, 0);
  return seconds;
}

// The cycle counter's one-time calibration (a 20 ms sleep) happens before the first phase's
// clock starts, not in the first latency sample of its workers. 300 inserts into a std::map
// take far less than the calibration's 20 ms; a loaded machine may stretch one run past
// 15 ms, but not five in a row, while a timed calibration makes every run slower than 20 ms.
// Each run is the first of a fresh process: first in this file, so that this process has not
// calibrated yet (later tests run with the counter calibrated).
TEST(RunnerTest, FirstPhaseDoesNotTimeTheCycleCalibration) {
  TempDir dir;
  std::string runs;
  bool fast = false;
  for (int attempt = 0; attempt < 5 && !fast; ++attempt) {
    const double seconds = FirstLoadSecondsInFreshProcess(dir);
    ASSERT_GE(seconds, 0.0) << "the run in the forked process failed";
    runs += " " + std::to_string(seconds * 1e3) + " ms";
    fast = seconds < 0.015;
  }
  EXPECT_TRUE(fast) << "300 inserts into a std::map took the calibration's 20 ms every time:"
                    << runs;
}

TEST(RunnerTest, JsonHasTheIssueShape) {
  TempDir dir;
  BenchConfig c = SmallConfig(dir, {"testlist", "stdmap", "lmdb", "rocksdb"},
                              "load,a,c,e,recover", 300, 300);
  BenchReport report;
  ASSERT_TRUE(RunBench(c, &report).ok());
  ASSERT_EQ(report.results.size(), 4u * 5u);
  const nlohmann::json doc = nlohmann::json::parse(ReportJson(report));
  const std::vector<std::string> problems = pmindex::testing::JsonShapeProblems(doc);
  for (const std::string& p : problems) ADD_FAILURE() << p;
  EXPECT_EQ(doc["environment"]["mode"], "adr");
  EXPECT_EQ(doc["environment"]["pool_dir"], dir.path());

  const BenchResult* recover = Find(report, "testlist", "recover");
  ASSERT_NE(recover, nullptr);
  ASSERT_TRUE(recover->recovery_seconds.has_value());
  EXPECT_GT(*recover->recovery_seconds, 0.0);
  EXPECT_GT(recover->keys, 300u);  // e inserted some
  EXPECT_EQ(recover->live_keys, recover->keys);
  EXPECT_TRUE(recover->note.empty()) << recover->note;
  EXPECT_FALSE(Find(report, "stdmap", "recover")->recovery_seconds.has_value());
  // The test's pools live on tmpfs: a process crash is survived, a power loss is not, and
  // the column must say so rather than claim ADR.
  EXPECT_EQ(Find(report, "testlist", "load")->durability,
            "survives process crash; power loss needs PM (file in memory: tmpfs)");
  EXPECT_EQ(Find(report, "lmdb", "a")->durability,
            "survives process crash (LMDB, MDB_WRITEMAP|MDB_NOSYNC)");
  EXPECT_EQ(Find(report, "rocksdb", "a")->durability,
            "survives process crash (RocksDB, WAL on, sync off)");
  for (const BenchResult& r : report.results) {
    if (r.workload == "recover") continue;
    EXPECT_GT(r.ops, 0u) << r.index << " " << r.workload;
    EXPECT_EQ(r.failed, 0u) << r.index << " " << r.workload << " " << r.note;
    EXPECT_GT(r.latency.p99, 0u);
    EXPECT_LE(r.latency.p50, r.latency.p99);
    EXPECT_LE(r.latency.p99, r.latency.max);
  }
  EXPECT_FALSE(report.verify_failed);

  const std::string csv = ReportCsv(report);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 20);
  // Every row has the header's columns (commas inside a quoted field do not separate).
  auto separators = [](const std::string& row) {
    size_t n = 0;
    bool quoted = false;
    for (char c : row) {
      if (c == '"') quoted = !quoted;
      n += (c == ',' && !quoted) ? 1 : 0;
    }
    return n;
  };
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);
  const size_t columns = separators(line);
  EXPECT_NE(line.find(",mops_per_cpu_second,latency_samples,latency_sample_every"),
            std::string::npos);
  while (std::getline(lines, line)) EXPECT_EQ(separators(line), columns) << line;
  // Temporary pools are gone.
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

// Latency sampling and chunked preparation change what is timed, never what runs: the
// same operations (ops, failures, persist counts, final contents) with every operation
// stamped and prepared 64 at a time as with 1 in 64 stamped and one chunk.
TEST(RunnerTest, SamplingAndChunkingChangeNoOperation) {
  TempDir dir;
  const uint64_t seed = TestSeed(11);
  SCOPED_TRACE(SeedTrace(seed));
  BenchConfig c = SmallConfig(dir, {"testlist"}, "load,a,d,e,f,insert,update,remove", 400, 700);
  c.seed = seed;
  std::map<std::string, std::string> contents[2];
  BenchReport reports[2];
  for (int run = 0; run < 2; run++) {
    c.latency_sample = run == 0 ? kDefaultLatencySample : 1;
    c.prepare_bytes = run == 0 ? c.prepare_bytes : 1;  // chunks of 64 operations
    c.inspect = [&](Index& index) { contents[run] = Contents(index); };
    ASSERT_TRUE(RunBench(c, &reports[run]).ok());
  }
  EXPECT_EQ(contents[0], contents[1]);
  ASSERT_EQ(reports[0].results.size(), reports[1].results.size());
  EXPECT_EQ(reports[0].latency_sample, kDefaultLatencySample);
  for (size_t i = 0; i < reports[0].results.size(); i++) {
    const BenchResult& a = reports[0].results[i];
    const BenchResult& b = reports[1].results[i];
    SCOPED_TRACE(a.workload);
    EXPECT_EQ(a.ops, b.ops);
    EXPECT_EQ(a.failed, b.failed);
    EXPECT_EQ(a.counters, b.counters);
    EXPECT_EQ(a.logical_bytes, b.logical_bytes);
    EXPECT_EQ(b.latency.samples, b.ops);
    EXPECT_EQ(b.latency.sample_every, 1u);
    // Gaps of 1..127: about ops / 64 samples, never fewer than ops / 127.
    EXPECT_GE(a.latency.samples, a.ops / 127);
    EXPECT_LE(a.latency.samples, a.ops / 16);
    EXPECT_EQ(a.latency.sample_every, kDefaultLatencySample);
  }
  const nlohmann::json doc = nlohmann::json::parse(ReportJson(reports[0]));
  EXPECT_EQ(doc["environment"]["latency_sample_every"], kDefaultLatencySample);
  EXPECT_EQ(doc["results"][0]["latency_ns"]["sample_every"], kDefaultLatencySample);
  EXPECT_TRUE(doc["results"][0]["latency_ns"]["samples"].is_number_unsigned());

  c.latency_sample = 0;  // no latency at all
  c.inspect = nullptr;
  BenchReport none;
  ASSERT_TRUE(RunBench(c, &none).ok());
  for (const BenchResult& r : none.results) {
    EXPECT_EQ(r.latency.samples, 0u);
    EXPECT_EQ(r.latency.p50, 0u);
  }
}

TEST(RunnerTest, PerOpCountsAreDeterministicAndZeroForVolatileBaselines) {
  TempDir dir;
  const uint64_t seed = TestSeed(7);
  SCOPED_TRACE(SeedTrace(seed));
  BenchConfig c = SmallConfig(dir, {"testlist", "stdmap"}, "load,a,b,d,e,f,insert,update,remove",
                              400, 300);
  c.seed = seed;
  BenchReport first, second;
  ASSERT_TRUE(RunBench(c, &first).ok());
  ASSERT_TRUE(RunBench(c, &second).ok());
  ASSERT_EQ(first.results.size(), second.results.size());
  for (size_t i = 0; i < first.results.size(); i++) {
    const BenchResult& a = first.results[i];
    const BenchResult& b = second.results[i];
    SCOPED_TRACE(a.index + " " + a.workload);
    EXPECT_EQ(a.ops, b.ops);
    EXPECT_EQ(a.counters, b.counters);
    EXPECT_EQ(a.per_op_persist_calls, b.per_op_persist_calls);
    EXPECT_EQ(a.per_op_flushes, b.per_op_flushes);
    EXPECT_EQ(a.per_op_fences, b.per_op_fences);
    EXPECT_EQ(a.per_op_media_writes, b.per_op_media_writes);
    if (a.index == "stdmap") {
      EXPECT_EQ(a.counters, PersistCounters{});
    } else if (a.workload != "e" && a.workload != "b" && a.workload != "d") {
      // Every testlist write persists its node and its link.
      EXPECT_GT(a.per_op_persist_calls, 0.0);
      EXPECT_GT(a.per_op_media_writes, 0.0);
      EXPECT_TRUE(a.write_amplification.has_value());
    }
  }
  // The preload is not counted: load writes 400 keys, `a` only its updates (50% of 300).
  const BenchResult* a = Find(first, "testlist", "a");
  ASSERT_NE(a, nullptr);
  EXPECT_LT(a->counters.persist_calls, 300u);
}

// Woo et al.'s accounting: every flushed line is a WPQ insert, media writes count in 64-byte
// units per WPQ insert, and their A/B mixes (reads with inserts) normalise per insert.
TEST(RunnerTest, PaperAccountingCountsWpqInsertsAndNormalisesPerInsert) {
  TempDir dir;
  const uint64_t seed = TestSeed(11);
  SCOPED_TRACE(SeedTrace(seed));
  BenchConfig c = SmallConfig(dir, {"testlist"}, "load,a-insert,b-insert,c", 400, 400);
  c.seed = seed;
  BenchReport report;
  ASSERT_TRUE(RunBench(c, &report).ok());
  for (const BenchResult& r : report.results) {
    SCOPED_TRACE(r.workload);
    EXPECT_EQ(r.counters.wpq_inserts, r.counters.flushes);
    if (r.workload == "c") {
      EXPECT_EQ(r.inserts, 0u);
      EXPECT_FALSE(r.per_insert_wpq.has_value());
      continue;
    }
    ASSERT_GT(r.inserts, 0u);
    ASSERT_TRUE(r.per_insert_wpq.has_value());
    EXPECT_DOUBLE_EQ(*r.per_insert_wpq, static_cast<double>(r.counters.wpq_inserts) /
                                            static_cast<double>(r.inserts));
    ASSERT_TRUE(r.media_units_per_wpq.has_value());
    EXPECT_DOUBLE_EQ(*r.media_units_per_wpq, 4.0 * static_cast<double>(r.counters.media_writes) /
                                                 static_cast<double>(r.counters.wpq_inserts));
  }
  // a-insert draws half its operations as inserts, b-insert one in twenty.
  const BenchResult* a = Find(report, "testlist", "a-insert");
  const BenchResult* b = Find(report, "testlist", "b-insert");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NEAR(static_cast<double>(a->inserts), 200.0, 40.0);
  EXPECT_LT(b->inserts, 50u);
  const BenchResult* load = Find(report, "testlist", "load");
  ASSERT_NE(load, nullptr);
  EXPECT_EQ(load->inserts, load->ops);
  EXPECT_DOUBLE_EQ(*load->per_insert_wpq, load->per_op_wpq);
}

// A random trace over int and string keys, with conditional writes that must fail.
struct GeneratedTrace {
  std::string load_path, run_path;
  std::map<std::string, uint64_t> model;  // final contents
  uint64_t load_failed = 0, run_failed = 0;
};

GeneratedTrace MakeTrace(const TempDir& dir, uint64_t seed, bool int_only, bool scans) {
  GeneratedTrace g;
  g.load_path = dir.file("load.txt");
  g.run_path = dir.file("run.txt");
  Rng rng(seed);
  auto key_text = [&](uint64_t id) {
    if (int_only || id % 3 != 0) return std::to_string(id * 7919 % 100003);
    return "user" + std::to_string(id);
  };
  auto key_bytes = [&](const std::string& text) {
    std::string k;
    EXPECT_TRUE(ParseKeyArgument(text, &k));
    return k;
  };
  uint64_t line = 0;
  std::FILE* f = std::fopen(g.load_path.c_str(), "w");
  for (int i = 0; i < 600; i++) {
    const std::string k = key_text(rng.uniform(700));  // some keys repeat: failed inserts
    line++;
    std::fprintf(f, "INSERT %s\n", k.c_str());
    if (!g.model.emplace(key_bytes(k), line).second) g.load_failed++;
  }
  std::fclose(f);
  f = std::fopen(g.run_path.c_str(), "w");
  std::fprintf(f, "# a comment line, counted but skipped\n");
  line++;
  for (int i = 0; i < 1500; i++) {
    const std::string k = key_text(rng.uniform(900));
    const std::string kb = key_bytes(k);
    const uint64_t dice = rng.uniform(scans ? 5 : 4);
    line++;
    auto it = g.model.find(kb);
    switch (dice) {
      case 0:
        std::fprintf(f, "READ %s\n", k.c_str());
        g.run_failed += it == g.model.end();
        break;
      case 1:
        std::fprintf(f, "UPDATE %s\n", k.c_str());
        if (it == g.model.end()) {
          g.run_failed++;
        } else {
          it->second = line;
        }
        break;
      case 2:
        std::fprintf(f, "INSERT %s\n", k.c_str());
        if (!g.model.emplace(kb, line).second) g.run_failed++;
        break;
      case 3:
        std::fprintf(f, "DELETE %s\n", k.c_str());
        if (it == g.model.end()) {
          g.run_failed++;
        } else {
          g.model.erase(it);
        }
        break;
      case 4:
        std::fprintf(f, "SCAN %s 5\n", k.c_str());
        g.run_failed += g.model.lower_bound(kb) == g.model.end();
        break;
    }
  }
  std::fclose(f);
  return g;
}

TEST(RunnerTest, TraceReplayMatchesStdMap) {
  const uint64_t seed = TestSeed(21);
  SCOPED_TRACE(SeedTrace(seed));
  TempDir dir;
  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads=" + std::to_string(threads));
    // Scans only single-threaded: with two threads a scan's result depends on timing.
    const GeneratedTrace g = MakeTrace(dir, seed + threads, false, threads == 1);
    BenchConfig c = SmallConfig(dir, {"stdmap", "rocksdb"}, "load", 0, 0);
    c.workloads.clear();
    c.trace_load = g.load_path;
    c.trace_run = g.run_path;
    c.threads = {threads};
    int inspected = 0;
    c.inspect = [&](Index& index) {
      inspected++;
      const std::map<std::string, std::string> got = Contents(index);
      ASSERT_EQ(got.size(), g.model.size()) << index.traits().name;
      for (const auto& [k, v] : g.model) {
        auto it = got.find(k);
        ASSERT_NE(it, got.end()) << index.traits().name << " lacks " << EscapeBytes(k);
        EXPECT_EQ(IntValue::Decode(it->second), v) << index.traits().name << " " << EscapeBytes(k);
      }
    };
    BenchReport report;
    ASSERT_TRUE(RunBench(c, &report).ok());
    EXPECT_EQ(inspected, 2);
    for (const std::string name : {"stdmap", "rocksdb"}) {
      const BenchResult* load = Find(report, name, "trace-load");
      const BenchResult* run = Find(report, name, "trace-run");
      ASSERT_NE(load, nullptr);
      ASSERT_NE(run, nullptr);
      EXPECT_EQ(load->ops, 600u);
      EXPECT_EQ(run->ops, 1500u);
      EXPECT_EQ(load->failed, g.load_failed);
      EXPECT_EQ(run->failed, g.run_failed);
      EXPECT_EQ(run->key_type, "trace");
    }
  }
}

TEST(RunnerTest, KeptPoolDumpsLikeTheModelAfterReplay) {
  const uint64_t seed = TestSeed(22);
  SCOPED_TRACE(SeedTrace(seed));
  TempDir dir;
  const GeneratedTrace g = MakeTrace(dir, seed, true, true);
  BenchConfig c = SmallConfig(dir, {"testlist"}, "load", 0, 0);
  c.workloads.clear();
  c.trace_load = g.load_path;
  c.trace_run = g.run_path;
  c.keep_pools = true;
  BenchReport report;
  ASSERT_TRUE(RunBench(c, &report).ok());
  const std::string pool = dir.file("testlist.pool");
  Result<PoolInfo> info = Pool::ReadInfo(pool);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_TRUE(info.value().clean);

  Options o;
  o.read_only = true;
  Result<std::unique_ptr<Index>> index = OpenIndex(pool, o);
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  char* text = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&text, &size);
  uint64_t printed = 0;
  ASSERT_TRUE(DumpIndex(*index.value(), "", 0, BytesFormat::kAuto, BytesFormat::kAuto, out,
                        &printed)
                  .ok());
  std::fclose(out);
  std::string expected;
  for (const auto& [k, v] : g.model) {
    expected += std::to_string(IntKey::Decode(k)) + " " + std::to_string(v) + "\n";
  }
  EXPECT_EQ(std::string(text, size), expected);
  EXPECT_EQ(printed, g.model.size());
  std::free(text);

  // --from and --count select a window.
  text = nullptr;
  out = open_memstream(&text, &size);
  auto it = std::next(g.model.begin(), 10);
  ASSERT_TRUE(DumpIndex(*index.value(), it->first, 3, BytesFormat::kAuto, BytesFormat::kAuto,
                        out, &printed)
                  .ok());
  std::fclose(out);
  EXPECT_EQ(printed, 3u);
  EXPECT_EQ(std::string(text, size).substr(0, std::to_string(IntKey::Decode(it->first)).size()),
            std::to_string(IntKey::Decode(it->first)));
  std::free(text);
}

TEST(RunnerTest, KeySpaceFollowsInsertsAndRemoves) {
  TempDir dir;
  BenchConfig c = SmallConfig(dir, {"stdmap", "testlist"}, "load,insert,remove,c", 500, 200);
  std::vector<size_t> sizes;
  c.inspect = [&](Index& index) { sizes.push_back(Contents(index).size()); };
  BenchReport report;
  ASSERT_TRUE(RunBench(c, &report).ok());
  EXPECT_EQ(sizes, (std::vector<size_t>{500, 500}));  // +200 inserted, -200 removed
  for (const BenchResult& r : report.results) {
    EXPECT_EQ(r.failed, 0u) << r.index << " " << r.workload;
  }
  EXPECT_EQ(Find(report, "stdmap", "remove")->keys, 700u);
  EXPECT_EQ(Find(report, "stdmap", "c")->keys, 500u);
}

// Workers claiming blocks of ids at once: every id below the end is claimed exactly once, and
// the counter ends at the end however the blocks straddle it.
TEST(RunnerTest, ClaimedBlocksCoverTheIdsOnceAndEndAtTheEnd) {
  for (uint64_t end : {uint64_t{0}, uint64_t{1}, kClaimBlock, 10 * kClaimBlock + 17}) {
    KeySpace space;
    space.hi.store(5);
    const uint64_t stop = 5 + end;
    std::vector<std::vector<uint64_t>> got(4);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++) {
      threads.emplace_back([&, t] {
        uint64_t next, limit;
        while (ClaimBlock(space, stop, /*shared=*/true, &next, &limit)) {
          EXPECT_LE(limit, stop);
          EXPECT_GE(space.hi.load(), limit);  // give-backs never reach below the end
          for (; next < limit; next++) got[t].push_back(next);
        }
      });
    }
    for (std::thread& th : threads) th.join();
    std::vector<uint64_t> all;
    for (const auto& g : got) all.insert(all.end(), g.begin(), g.end());
    std::sort(all.begin(), all.end());
    std::vector<uint64_t> want(end);
    for (uint64_t i = 0; i < end; i++) want[i] = 5 + i;
    EXPECT_EQ(all, want) << "end " << end;
    EXPECT_EQ(space.hi.load(), stop) << "end " << end;
    uint64_t next, limit;  // one worker: plain loads and stores, the same ids
    KeySpace one;
    uint64_t n = 0;
    while (ClaimBlock(one, end, /*shared=*/false, &next, &limit)) n += limit - next;
    EXPECT_EQ(n, end);
    EXPECT_EQ(one.hi.load(), end);
  }
}

// Chunked preparation with several threads: every thread takes part in every round, and
// every operation runs.
TEST(RunnerTest, MultiThreadedChunkedRunsAllOperations) {
  TempDir dir;
  BenchConfig c = SmallConfig(dir, {"stdmap", "testlist"}, "load,a,c,e", 500, 1001);
  c.threads = {3};
  c.prepare_bytes = 1;  // chunks of 64 operations per thread
  c.dist.kind = Distribution::Kind::kUniform;
  BenchReport report;
  ASSERT_TRUE(RunBench(c, &report).ok());
  ASSERT_EQ(report.results.size(), 2u * 4u);
  for (const BenchResult& r : report.results) {
    EXPECT_EQ(r.ops, r.workload == "load" ? 500u : 1001u) << r.index << " " << r.workload;
    EXPECT_GT(r.seconds, 0.0);
    if (r.workload != "e") {
      EXPECT_EQ(r.failed, 0u) << r.index << " " << r.workload;
    }
  }
  EXPECT_FALSE(report.verify_failed);
}

TEST(RunnerTest, MultiThreadedRunsAllOperations) {
  TempDir dir;
  BenchConfig c = SmallConfig(dir, {"stdmap", "lmdb"}, "load,a,c,f", 2000, 2000);
  c.threads = {1, 2};
  c.dist.kind = Distribution::Kind::kUniform;
  BenchReport report;
  ASSERT_TRUE(RunBench(c, &report).ok());
  ASSERT_EQ(report.results.size(), 2u * 2u * 4u);
  for (const BenchResult& r : report.results) {
    EXPECT_EQ(r.ops, 2000u) << r.index << " " << r.workload;
    EXPECT_EQ(r.failed, 0u) << r.index << " " << r.workload;
  }
}

// --rounds: one row per (index, workload), the median round's, with every round's figure in
// per_round; the same operations in every round (deterministic counts); ratios per round.
TEST(RunnerTest, RoundsReportTheMedianRoundAndRatios) {
  TempDir dir;
  BenchConfig c = SmallConfig(dir, {"testlist", "stdmap"}, "load,lookup", 500, 400);
  c.rounds = 3;
  BenchReport report;
  ASSERT_TRUE(RunBench(c, &report).ok());
  ASSERT_EQ(report.results.size(), 4u);  // 2 indexes x 2 workloads, rounds collapsed
  EXPECT_EQ(report.results[0].index, "testlist");
  EXPECT_EQ(report.results[0].workload, "load");
  EXPECT_EQ(report.results[2].index, "stdmap");
  for (const BenchResult& r : report.results) {
    SCOPED_TRACE(r.index + " / " + r.workload);
    ASSERT_EQ(r.per_round.size(), 3u);
    ASSERT_GE(r.round, 1u);
    ASSERT_LE(r.round, 3u);
    EXPECT_EQ(r.per_round[r.round - 1], r.mops_per_cpu_second);  // the row is its round
    std::vector<double> sorted = r.per_round;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted[1], r.mops_per_cpu_second);  // the median
  }
  const BenchResult* list_load = Find(report, "testlist", "load");
  ASSERT_NE(list_load, nullptr);
  EXPECT_GT(list_load->per_op_flushes, 0);
  RoundRatio q;
  ASSERT_TRUE(RatioOverRounds(*Find(report, "stdmap", "lookup"), *Find(report, "testlist", "lookup"), &q));
  EXPECT_LE(q.min, q.median);
  EXPECT_LE(q.median, q.max);
  EXPECT_GT(q.min, 0);
  // Hand-made rounds: the ratio is taken round by round, then its median.
  BenchResult a, b;
  a.per_round = {1, 2, 4};
  b.per_round = {2, 2, 2};
  ASSERT_TRUE(RatioOverRounds(b, a, &q));
  EXPECT_DOUBLE_EQ(q.median, 1.0);
  EXPECT_DOUBLE_EQ(q.min, 0.5);
  EXPECT_DOUBLE_EQ(q.max, 2.0);
  b.per_round = {1, 2};
  EXPECT_FALSE(RatioOverRounds(b, a, &q));  // rounds do not match
  std::ostringstream json;
  json << ReportJson(report);
  const auto doc = nlohmann::json::parse(json.str());
  EXPECT_EQ(doc["results"][0]["per_round"].size(), 3u);
}

TEST(RunnerTest, SkipsIndexesThatCannotTakeTheKeys) {
  TempDir dir;
  BenchConfig c = SmallConfig(dir, {"testlist", "stdmap"}, "load,c", 100, 100);
  std::string err;
  ASSERT_TRUE(ParseKeyType("string", &c.key_type, &err));
  BenchReport report;
  ASSERT_TRUE(RunBench(c, &report).ok());
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_NE(report.skipped[0].find("testlist"), std::string::npos);
  EXPECT_EQ(report.results.size(), 2u);
  EXPECT_TRUE(RunBench(SmallConfig(dir, {"no-such-index"}, "load", 1, 1), &report)
                  .IsInvalidArgument());
}

TEST(RunnerTest, WarnsWhenThreadsExceedTheCores) {
  TempDir dir;
  BenchConfig c = SmallConfig(dir, {"stdmap"}, "load", 100, 100);
  BenchReport report;
  ASSERT_TRUE(RunBench(c, &report).ok());
  EXPECT_TRUE(report.warnings.empty());
  const int cores = report.environment.cores;
  ASSERT_GT(cores, 0);
  c.threads = {1, cores + 1};
  BenchReport over;
  ASSERT_TRUE(RunBench(c, &over).ok());
  ASSERT_EQ(over.warnings.size(), 1u);
  EXPECT_NE(over.warnings[0].find(std::to_string(cores + 1) + " threads exceed"),
            std::string::npos)
      << over.warnings[0];
  const auto doc = nlohmann::json::parse(ReportJson(over));
  EXPECT_EQ(doc["warnings"].size(), 1u);
}

// Runs `c` with its stop flag set from another thread after `ms` milliseconds (as Ctrl-C
// would set it).
Status RunStoppedAfter(BenchConfig c, int ms, BenchReport* report) {
  std::atomic<bool> stop{false};
  c.stop = &stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    stop = true;
  });
  const Status s = RunBench(c, report);
  stopper.join();
  return s;
}

TEST(RunnerTest, StopFlagEndsTheRunAndRemovesPools) {
  TempDir dir;
  BenchConfig c = SmallConfig(dir, {"lmdb", "stdmap"}, "load,c", 200, 50000000);
  c.pool_bytes = 64ull << 20;
  BenchReport report;
  const Status s = RunStoppedAfter(c, 300, &report);
  EXPECT_TRUE(s.IsBusy()) << s.ToString();
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(RunnerTest, InterruptedRoundsKeepTheFinishedRoundsCollapsed) {
  TempDir dir;
  BenchConfig c = SmallConfig(dir, {"testlist", "stdmap"}, "load,lookup", 500, 400);
  c.rounds = 100000;  // far more than run before the stop
  BenchReport report;
  const Status s = RunStoppedAfter(c, 500, &report);
  ASSERT_TRUE(s.IsBusy()) << s.ToString();
  ASSERT_LT(report.rounds_done, c.rounds);
  // One row per index and workload, each from the finished rounds only (none if the stop
  // came within the first round).
  ASSERT_EQ(report.results.size(), report.rounds_done > 0 ? 4u : 0u);
  for (const BenchResult& r : report.results) {
    SCOPED_TRACE(r.index + " / " + r.workload);
    EXPECT_EQ(r.per_round.size(), report.rounds_done);
    EXPECT_GE(r.round, 1u);
    EXPECT_LE(r.round, report.rounds_done);
  }
}

}  // namespace
}  // namespace pmindex::bench
