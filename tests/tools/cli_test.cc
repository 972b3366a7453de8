// The `pmindex` program as a user runs it: usage errors exit 2, `info` on a fresh pool and
// on every bad input, `bench` JSON/CSV output, trace replay followed by `dump` compared with
// a model, Ctrl-C clean-up, and the plots.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench/generators.h"
#include "bench/json_shape.h"
#include "common/test_kinds.h"
#include "pm/pool_format.h"
#include "common/test_util.h"
#include "pm/crc32c.h"
#include "pmindex/index.h"
#include "pmindex/pool.h"
#include "tools/run_command.h"

namespace pmindex::testing {
namespace {

const std::string kBin = PMINDEX_BIN;
const std::string kTestCli = PMINDEX_TEST_CLI;

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A fresh, cleanly closed pool of the test-only list kind.
void MakePool(const std::string& path) {
  Options o;
  o.pool_size = 4ull << 20;
  Result<std::unique_ptr<Pool>> pool = Pool::Create(path, kTestListKind, "", o);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  ASSERT_TRUE(pool.value()->Close().ok());
}

TEST(CliTest, UsageErrorsExitTwo) {
  TempDir dir;
  const std::vector<std::vector<std::string>> cases = {
      {kBin, "no-such-subcommand"},
      {kBin, "--no-such-flag"},
      {kBin, "info"},
      {kBin, "info", "a", "b"},
      {kBin, "dump"},
      {kBin, "bench", "--keys", "abc"},
      {kBin, "bench", "--keys", "0"},
      {kBin, "bench", "--dist", "normal"},
      {kBin, "bench", "--dist", "zipfian:1.5"},
      {kBin, "bench", "--index", "no-such-index"},
      {kBin, "bench", "--workload", "load,zz"},
      {kBin, "bench", "--key-type", "str:0"},
      {kBin, "bench", "--threads", "0"},
      {kBin, "bench", "--mode", "fast"},
      {kBin, "bench", "--pool-dir", dir.file("missing-dir")},
      {kBin, "bench", "--trace", dir.file("only-one")},
      {kBin, "bench", "--scan-length"},
  };
  for (const auto& argv : cases) {
    std::string line;
    for (const std::string& a : argv) line += a + " ";
    const CommandResult r = RunCommand(argv, dir.path());
    EXPECT_EQ(r.exit_code, 2) << line << "\n" << r.out << r.err;
    EXPECT_FALSE(r.err.empty()) << line;
  }
}

// Runs argv under timeout(1): a hang shows as exit 124 instead of hanging the test.
CommandResult RunBounded(std::vector<std::string> argv, const std::string& scratch) {
  argv.insert(argv.begin(), {"/usr/bin/timeout", "-s", "KILL", "60"});
  return RunCommand(argv, scratch);
}

// Every way a command can fail says so: a non-zero exit and a message, never exit 0.
TEST(CliTest, FailuresExitNonZeroWithAMessage) {
  TempDir dir;
  const std::string pool = dir.file("p.pool");
  MakePool(pool);
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  struct Case {
    std::vector<std::string> argv;
    const char* says;  // part of the message
  };
  const std::vector<Case> cases = {
      // No index could be created: the pool does not fit.
      {{kTestCli, "bench", "--index", "testlist", "--keys", "300", "--workload", "load",
        "--pool-dir", dir.path(), "--pool-mb", "16777216"},
       "does not fit"},
      {{kTestCli, "bench", "--index", "testlist", "--keys", "1099511627776", "--workload",
        "load", "--pool-dir", dir.path()},
       "does not fit"},
      {{kTestCli, "bench", "--index", "testlist", "--keys", "300", "--workload", "load",
        "--pool-dir", "/proc"},
       "/proc"},
      // An in-memory index that cannot fit in memory is refused up front.
      {{kTestCli, "bench", "--index", "stdmap", "--keys", "1099511627776", "--workload",
        "load", "--pool-dir", dir.path()},
       "memory"},
      // The load ran out of pool space: a 2 MiB pool holds 28,672 of testlist's 64-byte
      // nodes, and every insert walks the sorted list, so a few more keys than fit keep the
      // run short (40,000 took 7-35 s, most of it in the failed inserts' walks).
      {{kTestCli, "bench", "--index", "testlist", "--keys", "30000", "--workload", "load",
        "--pool-dir", dir.path(), "--pool-mb", "2", "--no-verify"},
       "inserts failed"},
      {{kTestCli, "dump", pool, "--count", "-1"}, "count"},
      {{kTestCli, "crashtest", "--index", "testlist", "--ops", "0"}, "--ops"},
      {{kTestCli, "crashtest", "--index", "testlist", "--model", "kill", "--cycles", "0"},
       "--cycles"},
      {{kTestCli, "crashtest", "--index", "testlist", "--mutant", "bogus"}, "unknown mutant"},
      {{kTestCli, "crashtest", "--index", "testlist", "--model", "adr", "--ops", "20",
        "--replay-point", "3", "--replay-image", "bogus", "--dir", dir.path()},
       "checked nothing"},
      // A FIFO is not a pool, and opening it must not block.
      {{kBin, "info", fifo}, "not a regular file"},
      {{kBin, "dump", fifo}, "not a regular file"},
      {{kBin, "check", fifo}, "not a regular file"},
  };
  for (const Case& c : cases) {
    std::string line;
    for (const std::string& a : c.argv) line += a + " ";
    const CommandResult r = RunBounded(c.argv, dir.path());
    EXPECT_NE(r.exit_code, 0) << line << "\n" << r.out << r.err;
    EXPECT_NE(r.exit_code, 128 + SIGKILL) << line << ": hung or ran away (killed after 60 s)";
    EXPECT_TRUE(Contains(r.err + r.out, c.says)) << line << "\nstderr: " << r.err;
  }
  // Nothing but the inputs is left behind.
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    const std::string n = e.path().filename();
    EXPECT_TRUE(n == "p.pool" || n == "fifo") << n;
  }
}

TEST(CliTest, HelpListAndVersionExitZero) {
  TempDir dir;
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{kBin, "--help"}, {kBin, "bench", "--help"}, {kBin, "--version"},
        {kBin, "list"}}) {
    const CommandResult r = RunCommand(argv, dir.path());
    EXPECT_EQ(r.exit_code, 0) << argv[1] << r.err;
  }
  const CommandResult list = RunCommand({kBin, "list", "--names"}, dir.path());
  for (const char* baseline : {"stdmap\n", "lmdb\n", "rocksdb\n"}) {
    EXPECT_TRUE(Contains(list.out, baseline)) << baseline;
  }
}

TEST(CliTest, InfoPrintsAFreshPoolsHeader) {
  TempDir dir;
  const std::string path = dir.file("fresh.pool");
  MakePool(path);
  for (const std::string& bin : {kBin, kTestCli}) {
    const CommandResult r = RunCommand({bin, "info", path}, dir.path());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(Contains(r.out, "pool:            " + path)) << r.out;
    EXPECT_TRUE(Contains(r.out, "format version:  " + std::to_string(pm::kFormatVersionInlineValues))) << r.out;
    EXPECT_TRUE(Contains(r.out, "size:            4194304 bytes")) << r.out;
    EXPECT_TRUE(Contains(r.out, "used:")) << r.out;
    EXPECT_TRUE(Contains(r.out, "generation:")) << r.out;
    EXPECT_TRUE(Contains(r.out, "state:           clean")) << r.out;
    EXPECT_TRUE(Contains(r.out, "in use:          no")) << r.out;
  }
  const CommandResult r = RunCommand({kTestCli, "info", path}, dir.path());
  EXPECT_TRUE(Contains(r.out, "kind:            testlist (4026531841)")) << r.out;

  // A pool held open by this process: info still reads it, and says so.
  Result<std::unique_ptr<Pool>> open = Pool::Open(path, IndexKind::kNone, Options());
  ASSERT_TRUE(open.ok()) << open.status().ToString();
  const CommandResult busy = RunCommand({kBin, "info", path}, dir.path());
  EXPECT_EQ(busy.exit_code, 0) << busy.err;
  EXPECT_TRUE(Contains(busy.out, "in use:          yes")) << busy.out;
  EXPECT_TRUE(Contains(busy.out, "dirty")) << busy.out;
}

TEST(CliTest, InfoRejectsBadInputsNamingFileAndReason) {
  TempDir dir;
  struct Case {
    std::string name;
    std::string reason;  // part of the message
  };
  const std::string good = dir.file("good.pool");
  MakePool(good);
  const std::string image = ReadAll(good);

  WriteText(dir.file("empty.pool"), "");
  WriteText(dir.file("text.pool"), "hello, I am not a pool\n");
  WriteText(dir.file("truncated.pool"), image.substr(0, image.size() / 2));
  std::string newer = image;
  const uint32_t version = 99;
  std::memcpy(&newer[8], &version, 4);  // format_version (doc/format.md)
  const uint32_t crc = pm::crc32c(newer.data(), 252);
  std::memcpy(&newer[252], &crc, 4);
  WriteText(dir.file("newer.pool"), newer);
  std::string bad_crc = image;
  bad_crc[64] ^= 0x5a;  // creator_version, covered by the header checksum
  WriteText(dir.file("badcrc.pool"), bad_crc);

  const std::vector<Case> cases = {{"missing.pool", "no such file"},
                                   {"empty.pool", "empty"},
                                   {"text.pool", "not a pmindex pool"},
                                   {"truncated.pool", "truncated"},
                                   {"newer.pool", "newer"},
                                   {"badcrc.pool", "checksum"}};
  for (const Case& c : cases) {
    const std::string path = dir.file(c.name);
    const std::string before = ReadAll(path);
    const CommandResult r = RunCommand({kBin, "info", path}, dir.path());
    EXPECT_EQ(r.exit_code, 1) << c.name << "\n" << r.out << r.err;
    EXPECT_TRUE(Contains(r.err, path)) << c.name << ": " << r.err;
    EXPECT_TRUE(Contains(r.err, c.reason)) << c.name << ": " << r.err;
    EXPECT_EQ(ReadAll(path), before) << c.name << " was modified";
  }
}

TEST(CliTest, BenchWritesJsonCsvAndTables) {
  TempDir dir;
  const std::string json = dir.file("r.json"), csv = dir.file("r.csv");
  const CommandResult r =
      RunCommand({kTestCli, "bench", "--index", "stdmap,testlist", "--keys", "300", "--ops",
                  "300", "--workload", "load,a,e,recover", "--pool-dir", dir.path(), "--json",
                  json, "--csv", csv, "--seed", "5"},
                 dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(ReadAll(json));
  for (const std::string& p : JsonShapeProblems(doc)) ADD_FAILURE() << p;
  EXPECT_EQ(doc["results"].size(), 8u);
  EXPECT_EQ(doc["environment"]["seed"], 5);
  const std::string table = r.out;
  for (const char* s : {"cpu:", "kernel:", "mode:       adr", "pool dir:", "workload load:",
                        "workload a:", "workload e:", "workload recover:", "Mops/s", "p99.9 ns",
                        "flush/op", "media/op", "WA", "PM B/key", "durability",
                        "latency:    sampled, 1 operation in 64"}) {
    EXPECT_TRUE(Contains(table, s)) << s << "\n" << table;
  }
  EXPECT_EQ(doc["environment"]["latency_sample_every"], 64);
  EXPECT_TRUE(Contains(r.err, "[bench ")) << "progress lines expected on stderr";
  const std::string csv_text = ReadAll(csv);
  EXPECT_EQ(std::count(csv_text.begin(), csv_text.end(), '\n'), 9);
  EXPECT_TRUE(csv_text.starts_with("index,workload,threads,"));
  // Only the captured output files remain: temporary pools are gone.
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_FALSE(e.path().extension() == ".pool") << e.path();
  }
}

// --latency-sample states the method in the table and the JSON, and 1 stamps every operation.
TEST(CliTest, BenchLatencySampleIsStated) {
  TempDir dir;
  const std::string json = dir.file("r.json");
  const CommandResult r =
      RunCommand({kTestCli, "bench", "--index", "testlist", "--keys", "200", "--ops", "200",
                  "--workload", "load,c", "--pool-dir", dir.path(), "--json", json,
                  "--latency-sample", "1", "-q"},
                 dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "latency:    every operation stamped")) << r.out;
  const nlohmann::json doc = nlohmann::json::parse(ReadAll(json));
  for (const std::string& p : JsonShapeProblems(doc)) ADD_FAILURE() << p;
  EXPECT_EQ(doc["environment"]["latency_sample_every"], 1);
  for (const auto& res : doc["results"]) {
    EXPECT_EQ(res["latency_ns"]["samples"], res["ops"]);
    EXPECT_GT(res["cpu_seconds"].get<double>(), 0.0);
  }
  const CommandResult bad =
      RunCommand({kTestCli, "bench", "--latency-sample", "x", "--pool-dir", dir.path()},
                 dir.path());
  EXPECT_EQ(bad.exit_code, 2);
}

TEST(CliTest, TraceReplayThenDumpMatchesModel) {
  const uint64_t seed = TestSeed(31);
  SCOPED_TRACE(SeedTrace(seed));
  TempDir dir;
  bench::Rng rng(seed);
  std::map<uint64_t, uint64_t> model;
  std::string load, run;
  uint64_t line = 0;
  for (int i = 0; i < 400; i++) {
    const uint64_t k = rng.uniform(500);
    load += "INSERT " + std::to_string(k) + "\n";
    model.emplace(k, ++line);
  }
  for (int i = 0; i < 800; i++) {
    const uint64_t k = rng.uniform(600);
    line++;
    switch (rng.uniform(4)) {
      case 0:
        run += "UPDATE " + std::to_string(k) + "\n";
        if (model.count(k)) model[k] = line;
        break;
      case 1:
        run += "INSERT " + std::to_string(k) + "\n";
        model.emplace(k, line);
        break;
      case 2:
        run += "DELETE " + std::to_string(k) + "\n";
        model.erase(k);
        break;
      default:
        run += "READ " + std::to_string(k) + "\n";
    }
  }
  WriteText(dir.file("load.txt"), load);
  WriteText(dir.file("run.txt"), run);
  const CommandResult bench =
      RunCommand({kTestCli, "bench", "--index", "testlist", "--trace", dir.file("load.txt"),
                  dir.file("run.txt"), "--keep-pools", "--pool-dir", dir.path(), "-q"},
                 dir.path());
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  EXPECT_TRUE(Contains(bench.out, "workload trace-run:")) << bench.out;
  const std::string pool = dir.file("testlist.pool");
  const CommandResult dump = RunCommand({kTestCli, "dump", pool}, dir.path());
  ASSERT_EQ(dump.exit_code, 0) << dump.err;
  std::string expected;
  for (const auto& [k, v] : model) expected += std::to_string(k) + " " + std::to_string(v) + "\n";
  EXPECT_EQ(dump.out, expected);

  auto it = std::next(model.begin(), model.size() / 2);
  const CommandResult window = RunCommand(
      {kTestCli, "dump", pool, "--from", std::to_string(it->first), "--count", "2"}, dir.path());
  ASSERT_EQ(window.exit_code, 0) << window.err;
  const auto next = std::next(it);
  EXPECT_EQ(window.out, std::to_string(it->first) + " " + std::to_string(it->second) + "\n" +
                            std::to_string(next->first) + " " + std::to_string(next->second) +
                            "\n");
  // --reverse --to: descending from the largest key below --to, down to --from.
  const auto low = std::next(model.begin(), model.size() / 4);
  const CommandResult reversed =
      RunCommand({kTestCli, "dump", pool, "--from", std::to_string(low->first), "--to",
                  std::to_string(it->first), "--reverse"},
                 dir.path());
  ASSERT_EQ(reversed.exit_code, 0) << reversed.err;
  std::string descending;
  for (auto r = std::make_reverse_iterator(it); r != std::make_reverse_iterator(low); ++r)
    descending += std::to_string(r->first) + " " + std::to_string(r->second) + "\n";
  EXPECT_EQ(reversed.out, descending);
  const CommandResult last_two =
      RunCommand({kTestCli, "dump", pool, "--reverse", "--count", "2"}, dir.path());
  ASSERT_EQ(last_two.exit_code, 0) << last_two.err;
  const auto last = std::prev(model.end());
  EXPECT_EQ(last_two.out, std::to_string(last->first) + " " + std::to_string(last->second) +
                              "\n" + std::to_string(std::prev(last)->first) + " " +
                              std::to_string(std::prev(last)->second) + "\n");
  // The dump wrote nothing: the pool is still clean and its generation unchanged.
  const std::string info_before = RunCommand({kTestCli, "info", pool}, dir.path()).out;
  RunCommand({kTestCli, "dump", pool}, dir.path());
  EXPECT_EQ(RunCommand({kTestCli, "info", pool}, dir.path()).out, info_before);

  const CommandResult missing = RunCommand({kTestCli, "dump", dir.file("nope.pool")}, dir.path());
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(Contains(missing.err, dir.file("nope.pool"))) << missing.err;
}

TEST(CliTest, PutGetDeleteOneKey) {
  TempDir dir;
  const std::string pool = dir.file("kv.pool");
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), kBin);
    return RunCommand(args, dir.path());
  };
  const CommandResult no_pool = run({"put", pool, "42", "7"});
  EXPECT_EQ(no_pool.exit_code, 1) << "put without --create on a missing pool";
  ASSERT_EQ(run({"put", pool, "42", "7", "--create", "rntree", "--pool-mb", "16"}).exit_code, 0);
  const CommandResult got = run({"get", pool, "42"});
  ASSERT_EQ(got.exit_code, 0) << got.err;
  EXPECT_EQ(got.out, "7\n");
  const CommandResult again = run({"put", pool, "42", "8", "--insert"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_TRUE(Contains(again.err, "AlreadyExists")) << again.err;
  EXPECT_EQ(run({"put", pool, "43", "9", "--update"}).exit_code, 1);
  EXPECT_EQ(run({"put", pool, "42", "8", "--update"}).exit_code, 0);
  EXPECT_EQ(run({"get", pool, "42"}).out, "8\n");
  const CommandResult string_key = run({"put", pool, "abc", "1"});
  EXPECT_EQ(string_key.exit_code, 1);
  EXPECT_TRUE(Contains(string_key.err, "8-byte integer keys")) << string_key.err;
  EXPECT_EQ(run({"delete", pool, "42"}).exit_code, 0);
  const CommandResult gone = run({"get", pool, "42"});
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_TRUE(Contains(gone.err, "NotFound")) << gone.err;
  EXPECT_EQ(run({"delete", pool, "42"}).exit_code, 1);
}

// dump's text written back with load gives the same pairs, byte strings that look like
// integers, escapes and integers mixed; a malformed line is refused naming its number.
TEST(CliTest, LoadWritesBackWhatDumpPrinted) {
  TempDir dir;
  const std::string a = dir.file("a.pool"), b = dir.file("b.pool");
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), kBin);
    return RunCommand(args, dir.path());
  };
  const std::vector<std::vector<std::string>> puts = {
      {"put", a, "007", "123", "--key-format", "string", "--value-format", "string"},
      {"put", a, "a\\x20b", "v\\\\w"},
      {"put", a, "99", "5"},
      {"put", a, "x\\\\y", "\\x"}};  // a backslash in the key, an empty value
  for (std::vector<std::string> args : puts) {
    args.insert(args.end(), {"--create", "wort", "--pool-mb", "16"});
    const CommandResult r = run(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const CommandResult dumped = run({"dump", a});
  ASSERT_EQ(dumped.exit_code, 0) << dumped.err;
  EXPECT_TRUE(Contains(dumped.out, "\\x3007 \\x3123\n")) << dumped.out;
  WriteText(dir.file("pairs.txt"), "# a comment\n\n" + dumped.out);
  const CommandResult loaded =
      run({"load", b, dir.file("pairs.txt"), "--create", "wort", "--pool-mb", "16"});
  ASSERT_EQ(loaded.exit_code, 0) << loaded.err;
  EXPECT_TRUE(Contains(loaded.err, "4 pairs written")) << loaded.err;
  EXPECT_EQ(run({"dump", b}).out, dumped.out);
  EXPECT_EQ(run({"get", b, "007", "--key-format", "string"}).out, "\\x3123\n");

  WriteText(dir.file("bad.txt"), "1 2\nonly-one-field\n");
  const CommandResult bad = run({"load", b, dir.file("bad.txt")});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_TRUE(Contains(bad.err, "line 2")) << bad.err;
}

TEST(CliTest, CtrlCStopsAndRemovesTemporaryPools) {
  TempDir dir, pools;
  const pid_t pid = StartCommand(
      {kTestCli, "bench", "--index", "lmdb,testlist,stdmap", "--keys", "100", "--ops",
       "1000000000", "--seconds", "0", "--workload", "load,c", "--pool-dir", pools.path()},
      dir.file("out"), dir.file("err"));
  // Wait until the run has started (a progress line), then interrupt it.
  for (int i = 0; i < 200 && !Contains(ReadAll(dir.file("err")), "workload c"); i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid, SIGINT);
  EXPECT_EQ(WaitCommand(pid), 130) << ReadAll(dir.file("err"));
  EXPECT_TRUE(Contains(ReadAll(dir.file("err")), "interrupted"));
  EXPECT_TRUE(std::filesystem::is_empty(pools.path()));
}

bool HaveMatplotlib() {
  return std::system("/usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1") == 0;
}

TEST(CliTest, PlotProducesPngs) {
  if (!HaveMatplotlib()) GTEST_SKIP() << "/usr/bin/python3 has no matplotlib";
  TempDir dir;
  const std::string plots = dir.file("plots");
  const CommandResult r = RunCommand(
      {kTestCli, "bench", "--index", "stdmap,testlist", "--keys", "200", "--ops", "200",
       "--workload", "load,a,e", "--threads", "1,2", "--pool-dir", dir.path(), "--plot", plots,
       "-q"},
      dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* png : {"throughput.png", "persistence.png", "latency.png", "threads.png"}) {
    EXPECT_TRUE(std::filesystem::file_size(plots + "/" + png) > 1000) << png;
  }
  // The script alone, on the JSON the run left.
  const std::string again = dir.file("again");
  const CommandResult s = RunCommand({"/usr/bin/python3", PMINDEX_SOURCE_DIR "/scripts/plot.py",
                                      plots + "/results.json", again},
                                     dir.path());
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_TRUE(std::filesystem::exists(again + "/throughput.png"));
}

// `pmindex lab --quick`: Table 4, every experiment's rows in the table, JSON and CSV, progress
// on stderr, nothing left in the pool directory; and scripts/lab_plot.py on its JSON (two of
// its figures: matplotlib is slow).
TEST(CliTest, LabQuickRunsEveryExperiment) {
  TempDir dir;
  const std::string json = dir.file("lab.json"), csv = dir.file("lab.csv");
  const std::string pools = dir.file("pools");
  std::filesystem::create_directory(pools);
  const CommandResult r = RunCommand({kBin, "lab", "--quick", "--table4", "--exp",
                                      "e1,e2,e3,e4,e5,e6,e7,e8,e9,e10", "--iters", "32",
                                      "--pool-dir", pools, "--json", json, "--csv", csv},
                                     dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "Table 4")) << r.out;
  EXPECT_TRUE(Contains(r.err, "[lab] E1")) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(ReadAll(json));
  std::map<std::string, int> per_exp;
  for (const auto& row : doc["lab"]) per_exp[row["exp"].get<std::string>()]++;
  // E1: 7 searches x 5 sizes x 3 positions x cached/uncached; E4/E8: 6 x 5 x 3.
  EXPECT_EQ(per_exp["E1"], 210);
  EXPECT_EQ(per_exp["E4"], 90);
  EXPECT_EQ(per_exp["E8"], 90);
  for (const char* e : {"E2", "E3", "E5", "E6", "E7", "E9", "E10"}) EXPECT_GT(per_exp[e], 0) << e;
  for (const auto& row : doc["lab"]) {
    if (row["exp"] == "E4" && row["org"] == "sorted" && row["position"] == "first" &&
        row["node_bytes"] == 256) {
      EXPECT_EQ(row["bytes_modified"], 200.0);  // 7 pairs shifted + pair + count
    }
  }
  const std::string csv_text = ReadAll(csv);
  EXPECT_TRUE(csv_text.starts_with("exp,org,variant,node_bytes,"));
  EXPECT_TRUE(std::filesystem::is_empty(pools)) << "arena and PMDK pool removed";
  if (!HaveMatplotlib()) return;
  const std::string plots = dir.file("plots");
  const CommandResult s = RunCommand(
      {"/usr/bin/python3", PMINDEX_SOURCE_DIR "/scripts/lab_plot.py", json, plots, "E4,profile"},
      dir.path());
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_TRUE(std::filesystem::file_size(plots + "/e4_insert.png") > 1000);
  EXPECT_TRUE(std::filesystem::file_size(plots + "/profile.png") > 1000);
}

}  // namespace
}  // namespace pmindex::testing
