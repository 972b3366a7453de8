// `pmindex bench`: the workbench (doc/bench.md). Also what `pmindex` alone runs.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "bench/environment.h"
#include "bench/report.h"
#include "bench/runner.h"
#include "pmindex/index.h"
#include "tools/command.h"

namespace pmindex::tools {

namespace {

// Defaults: bare `pmindex` runs every registered index on load, a, c and e and must finish
// in under two minutes on a 2-core machine with about ten indexes registered (doc/bench.md
// has the measurement behind these numbers).
constexpr uint64_t kDefaultKeys = 100000;
constexpr uint64_t kDefaultOps = 100000;
constexpr double kDefaultSeconds = 1.0;

struct BenchArgs {
  std::string indexes = "all";
  std::string workloads = "load,a,c,e";
  uint64_t keys = kDefaultKeys;
  uint64_t ops = kDefaultOps;
  std::string threads = "1";
  std::string key_type = "int";
  std::string dist = "zipfian";
  uint32_t scan_length = 100;
  std::string mode = "adr";
  uint32_t write_latency_ns = 0;
  std::string media_model = "per-thread";
  bool count_unflushed = false;
  std::string index_params;
  std::string pool_dir;
  uint64_t pool_mb = 0;
  std::string value_size;  // N or MIN-MAX; empty: 8-byte values
  double seconds = kDefaultSeconds;
  uint64_t seed = 1;
  uint32_t rounds = 1;
  std::string json, csv, plot;
  std::vector<std::string> trace;
  bool keep_pools = false;
  bool no_prefault = false;
  uint32_t latency_sample = bench::kDefaultLatencySample;
  bool no_verify = false;
  bool quiet = false;
};

std::atomic<bool> g_stop{false};

void OnSignal(int) {
  g_stop.store(true);
  static const char kMsg[] = "\npmindex: stopping (removing temporary pools)...\n";
  [[maybe_unused]] ssize_t n = write(STDERR_FILENO, kMsg, sizeof(kMsg) - 1);
}

// "N" or "MIN-MAX" (bytes, at most 1 GiB, MIN <= MAX, MAX > 0); "" leaves both 0.
bool ParseValueSize(const std::string& s, uint64_t* lo, uint64_t* hi, std::string* error) {
  *lo = *hi = 0;
  if (s.empty()) return true;
  const size_t dash = s.find('-');
  try {
    size_t used = 0;
    *lo = std::stoull(s.substr(0, dash), &used);
    bool whole = used == s.substr(0, dash).size();
    *hi = *lo;
    if (dash != std::string::npos) {
      *hi = std::stoull(s.substr(dash + 1), &used);
      whole = whole && used == s.size() - dash - 1;
    }
    if (whole && *lo <= *hi && *hi > 0 && *hi <= (uint64_t{1} << 30)) return true;
  } catch (const std::exception&) {
  }
  *error = s + ": want N or MIN-MAX bytes (1..1073741824, MIN <= MAX)";
  return false;
}

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    out.push_back(s.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

std::string CheckIndexList(const std::string& list) {
  if (list == "all") return "";
  for (const std::string& name : SplitList(list)) {
    if (FindIndex(name) == nullptr) {
      std::string known;
      for (const std::string& n : RegisteredIndexNames()) known += (known.empty() ? "" : ", ") + n;
      return "unknown index '" + name + "' (registered: " + known + ", or all)";
    }
  }
  return "";
}

std::string CheckThreads(const std::string& list) {
  for (const std::string& t : SplitList(list)) {
    char* end = nullptr;
    const long v = std::strtol(t.c_str(), &end, 10);
    if (t.empty() || *end != '\0' || v < 1 || v > 1024) {
      return "thread counts must be integers in 1..1024, got '" + t + "'";
    }
  }
  return "";
}

// The runner's configuration from the command line. Options were validated by CLI11; these
// conversions cannot fail.
bench::BenchConfig MakeConfig(const BenchArgs& args) {
  bench::BenchConfig cfg;
  std::string error;
  if (args.indexes == "all") {
    cfg.indexes = RegisteredIndexNames();
  } else {
    cfg.indexes = SplitList(args.indexes);
  }
  bench::ParseWorkloads(args.workloads, &cfg.workloads, &error);
  cfg.keys = args.keys;
  cfg.ops = args.ops;
  cfg.threads.clear();
  for (const std::string& t : SplitList(args.threads)) cfg.threads.push_back(std::stoi(t));
  bench::ParseKeyType(args.key_type, &cfg.key_type, &error);
  bench::ParseDistribution(args.dist, &cfg.dist, &error);
  cfg.scan_length = args.scan_length;
  ParsePersistMode(args.mode, &cfg.mode);
  cfg.write_latency_ns = args.write_latency_ns;
  ParseMediaModel(args.media_model, &cfg.media_model);
  cfg.count_unflushed = args.count_unflushed;
  cfg.index_params = args.index_params;
  cfg.pool_dir = args.pool_dir.empty() ? bench::DefaultPoolDir() : args.pool_dir;
  cfg.pool_bytes = args.pool_mb << 20;
  ParseValueSize(args.value_size, &cfg.value_size_min, &cfg.value_size_max, &error);
  cfg.seconds = args.seconds;
  cfg.seed = args.seed;
  cfg.rounds = args.rounds;
  cfg.keep_pools = args.keep_pools;
  cfg.prefault = !args.no_prefault;
  cfg.latency_sample = args.latency_sample;
  if (args.trace.size() == 2) {
    cfg.trace_load = args.trace[0];
    cfg.trace_run = args.trace[1];
  }
  cfg.verify = !args.no_verify;
  cfg.progress = !args.quiet;
  cfg.stop = &g_stop;
  return cfg;
}

// Ctrl-C and SIGTERM set g_stop, so the runner removes its temporary pools before it returns.
void InstallStopHandler() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnSignal;
  sa.sa_flags = SA_RESETHAND;  // a second Ctrl-C kills at once
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// An interrupted run: prints what finished, exits 130.
int ReportInterrupted(const bench::BenchConfig& cfg, const bench::BenchReport& report) {
  std::fprintf(stderr, "pmindex bench: interrupted; temporary pools removed\n");
  if (cfg.rounds > 1)
    std::fprintf(stderr,
                 "pmindex bench: %u of %u rounds finished; the unfinished round is left out\n",
                 report.rounds_done, cfg.rounds);
  if (!report.results.empty()) bench::PrintReport(report, stdout);
  return 130;
}

// Writes --json, --csv and --plot; kExitError if one of them failed.
int WriteOutputs(const BenchArgs& args, const bench::BenchReport& report) {
  int rc = kExitOk;
  std::string json_path = args.json;
  if (json_path.empty() && !args.plot.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(args.plot, ec);
    json_path = args.plot + "/results.json";
  }
  if (!json_path.empty()) {
    if (Status s = bench::WriteFile(json_path, bench::ReportJson(report)); !s.ok()) {
      std::fprintf(stderr, "pmindex bench: %s\n", s.ToString().c_str());
      rc = kExitError;
    }
  }
  if (!args.csv.empty()) {
    if (Status s = bench::WriteFile(args.csv, bench::ReportCsv(report)); !s.ok()) {
      std::fprintf(stderr, "pmindex bench: %s\n", s.ToString().c_str());
      rc = kExitError;
    }
  }
  if (!args.plot.empty() && rc == kExitOk) {
    std::error_code ec;
    std::filesystem::create_directories(args.plot, ec);
    if (Status s = bench::RunPlotScript(json_path, args.plot); !s.ok()) {
      std::fprintf(stderr, "pmindex bench: plot: %s\n", s.ToString().c_str());
      rc = kExitError;
    } else if (!args.quiet) {
      std::fprintf(stderr, "plots written to %s\n", args.plot.c_str());
    }
  }
  return rc;
}

int RunBenchCommand(const BenchArgs& args) {
  const bench::BenchConfig cfg = MakeConfig(args);
  if (cfg.indexes.empty()) {
    std::fprintf(stderr, "pmindex bench: no index is registered in this build\n");
    return kExitError;
  }
  InstallStopHandler();
  bench::BenchReport report;
  const Status status = bench::RunBench(cfg, &report);
  if (status.IsBusy() && g_stop.load()) return ReportInterrupted(cfg, report);
  if (!status.ok()) {
    std::fprintf(stderr, "pmindex bench: %s\n", status.ToString().c_str());
    return kExitError;
  }
  bench::PrintReport(report, stdout);
  std::fflush(stdout);
  int rc = WriteOutputs(args, report);
  if (report.run_failed) {
    std::fprintf(stderr,
                 "pmindex bench: an index could not be created or loaded (see 'skipped')\n");
    rc = kExitError;
  }
  if (report.verify_failed) {
    std::fprintf(stderr, "pmindex bench: an index failed verification or recovery (see notes)\n");
    rc = kExitError;
  }
  return rc;
}

CLI::Validator MakeCheck(std::function<std::string(const std::string&)> check,
                         const std::string& name) {
  return CLI::Validator([check](std::string& s) { return check(s); }, name);
}

}  // namespace

// The options of how each pool persists and how its writes are counted.
void AddPersistenceOptions(CLI::App* sub, BenchArgs& args) {
  BenchArgs* a = &args;
  sub->add_option("--mode", a->mode, "Persistence mode")
      ->check(CLI::IsMember({"adr", "eadr", "async", "adaptive", "volatile"}))
      ->capture_default_str();
  sub->add_option("--write-latency", a->write_latency_ns,
                  "Extra ns per flushed cache line, paid at the next fence")
      ->check(CLI::Range(0u, 1000000u))
      ->capture_default_str();
  sub->add_option("--media-model", a->media_model,
                  "XPLine media model: one write-combining buffer per thread, or one shared "
                  "by the pool's threads as on the DIMM (serialises flushes; for accounting)")
      ->check(CLI::IsMember({"per-thread", "shared"}))
      ->capture_default_str();
  sub->add_option("--index-params", a->index_params,
                  "Index parameters of every pool the run creates (a variant, e.g. 'pclht "
                  "flush=coalesce'; doc/<index>.md); default: each index's own");
  sub->add_flag("--count-unflushed", a->count_unflushed,
               "Also count the lines written without a flush, written back when a model of "
               "the CPU cache evicts them (slow: pages are write-protected and compared at "
               "every fence)");
}

void AddValueSizeOption(CLI::App* sub, BenchArgs* a) {
  sub->add_option("--value-size", a->value_size,
                  "Value bytes, N or MIN-MAX (drawn per write; pools get Options::max_value_size "
                  "= MAX, so every persistent index takes them). Default: 8-byte values")
      ->check(MakeCheck(
          [](const std::string& s) {
            uint64_t lo = 0, hi = 0;
            std::string err;
            return ParseValueSize(s, &lo, &hi, &err) ? std::string() : err;
          },
          "N|MIN-MAX"));
}

void AddBenchCommand(CLI::App& app, CommandSet& commands) {
  CLI::App* sub = app.add_subcommand(
      "bench", "Run workloads on indexes and baselines and report throughput, latency, "
               "persistence instructions, media writes, memory and recovery time");
  auto a = std::make_shared<BenchArgs>();
  sub->add_option("--index", a->indexes, "Comma-separated index names, or all")
      ->check(MakeCheck(CheckIndexList, "LIST|all"))
      ->capture_default_str();
  std::string workload_help = "Comma-separated workloads:";
  for (const std::string& w : bench::WorkloadNames()) workload_help += " " + w;
  CLI::Option* workload_opt =
      sub->add_option("--workload", a->workloads, workload_help)
          ->check(MakeCheck(
              [](const std::string& s) {
                std::vector<bench::Workload> w;
                std::string err;
                return bench::ParseWorkloads(s, &w, &err) ? std::string() : err;
              },
              "LIST"))
          ->capture_default_str();
  AddValueSizeOption(sub, a.get());
  sub->add_option("--keys", a->keys, "Keys loaded before the run")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40))
      ->capture_default_str();
  sub->add_option("--ops", a->ops, "Operations per run workload (all threads together)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40))
      ->capture_default_str();
  sub->add_option("--threads", a->threads, "Thread counts, comma-separated (e.g. 1,2)")
      ->check(MakeCheck(CheckThreads, "LIST"))
      ->capture_default_str();
  sub->add_option("--key-type", a->key_type, "int, string (YCSB user<digits>) or str:LEN")
      ->check(MakeCheck(
          [](const std::string& s) {
            bench::KeyType t;
            std::string err;
            return bench::ParseKeyType(s, &t, &err) ? std::string() : err;
          },
          "TYPE"))
      ->capture_default_str();
  sub->add_option("--dist", a->dist, "uniform, zipfian[:THETA] (YCSB scrambled), latest, "
                                     "sequential")
      ->check(MakeCheck(
          [](const std::string& s) {
            bench::Distribution d;
            std::string err;
            return bench::ParseDistribution(s, &d, &err) ? std::string() : err;
          },
          "DIST"))
      ->capture_default_str();
  sub->add_option("--scan-length", a->scan_length, "Pairs per scan")
      ->check(CLI::Range(1u, 1000000u))
      ->capture_default_str();
  AddPersistenceOptions(sub, *a);
  sub->add_option("--pool-dir", a->pool_dir, "Where pools are created (default $PMINDEX_POOL_DIR, else /dev/shm)")
      ->check(CLI::ExistingDirectory);
  sub->add_option("--pool-mb", a->pool_mb, "Pool size in MiB (default: estimated from keys)")
      ->check(CLI::Range(uint64_t{2}, uint64_t{1} << 24));
  sub->add_option("--seconds", a->seconds,
                  "Cap per measured run phase in seconds (not load or trace replay; 0 = none)")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str();
  sub->add_option("--latency-sample", a->latency_sample,
                  "Stamp one operation in N for latency (1: every operation, whose fences "
                  "then serialise the CPU and lower throughput; 0: none)")
      ->check(CLI::Range(0u, 1u << 30))
      ->capture_default_str();
  sub->add_option("--rounds", a->rounds,
                  "Run every index's workloads N times, alternating the indexes round by round; "
                  "report each one's median round and its ratio to the first index per round")
      ->check(CLI::Range(1u, 1000u))
      ->capture_default_str();
  sub->add_option("--seed", a->seed, "Random seed")->capture_default_str();
  sub->add_option("--json", a->json, "Write results as JSON to FILE");
  sub->add_option("--csv", a->csv, "Write results as CSV to FILE");
  sub->add_option("--plot", a->plot, "Draw PNG plots into DIR (runs scripts/plot.py)");
  sub->add_option("--trace", a->trace,
                  "Replay YCSB traces (INSERT/READ/UPDATE/SCAN/DELETE lines) instead of "
                  "workloads")
      ->expected(2)
      ->type_name("LOAD_FILE RUN_FILE")
      ->check(CLI::ExistingFile)
      ->excludes(workload_opt);
  sub->add_flag("--keep-pools", a->keep_pools,
                "Keep each index's pool as <index>.pool in --pool-dir");
  sub->add_flag("--no-prefault", a->no_prefault,
                "Do not fault in each pool when it is created (then the kernel's page zeroing "
                "lands inside measured operations)");
  sub->add_flag("--no-verify", a->no_verify, "Skip Index::verify() after each index");
  sub->add_flag("-q,--quiet", a->quiet, "No progress lines on stderr");
  sub->callback([&commands, a] { commands.selected = [a] { return RunBenchCommand(*a); }; });
  commands.fallback = [a] { return RunBenchCommand(*a); };
}

}  // namespace pmindex::tools
