#include "bench/report.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#ifndef PMINDEX_SOURCE_DIR
#define PMINDEX_SOURCE_DIR "."
#endif

namespace pmindex::bench {

namespace {

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

std::string Ns(uint64_t ns) {
  if (ns < 100000) return std::to_string(ns);
  if (ns < 100000000) return Fmt("%.0fus", static_cast<double>(ns) / 1e3);
  return Fmt("%.0fms", static_cast<double>(ns) / 1e6);
}

struct Column {
  std::string title;
  bool left = false;
};

void PrintTable(std::FILE* out, const std::vector<Column>& cols,
                const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(cols.size());
  for (size_t c = 0; c < cols.size(); c++) width[c] = cols[c].title.size();
  for (const auto& row : rows) {
    for (size_t c = 0; c < cols.size(); c++) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (size_t c = 0; c < cols.size(); c++) {
      const size_t pad = width[c] - cells[c].size();
      if (c > 0) s += "  ";
      if (cols[c].left) {
        s += cells[c];
        if (c + 1 < cols.size()) s += std::string(pad, ' ');
      } else {
        s += std::string(pad, ' ') + cells[c];
      }
    }
    std::fprintf(out, "  %s\n", s.c_str());
  };
  std::vector<std::string> titles;
  for (const Column& c : cols) titles.push_back(c.title);
  line(titles);
  for (const auto& row : rows) line(row);
}

}  // namespace

std::string LatencyMethod(uint32_t every) {
  if (every == 0) return "not measured (no operation stamped)";
  const std::string stamp = "lfence; rdtsc before, rdtscp; lfence after";
  if (every == 1) return "every operation stamped (" + stamp + "; throughput includes the stamps)";
  return "sampled, 1 operation in " + std::to_string(every) + " stamped at random gaps (" +
         stamp + "); the others run unstamped";
}

void PrintEnvironment(const Environment& env, std::FILE* out) {
  std::fprintf(out, "pmindex %s bench (%s build), %s\n", env.version.c_str(), env.build.c_str(),
               env.date.c_str());
  std::fprintf(out, "  cpu:        %s, %d cores, flush instruction %s\n", env.cpu.c_str(),
               env.cores, env.flush_instruction.c_str());
  std::fprintf(out, "  kernel:     %s\n", env.kernel.c_str());
  std::fprintf(out, "  mode:       %s\n", env.mode.c_str());
  std::fprintf(out, "  pool dir:   %s (%s; transparent huge pages: %s)\n", env.pool_dir.c_str(),
               env.pool_medium.c_str(), env.transparent_huge_pages.c_str());
  if (!env.huge_pages.empty()) {
    std::fprintf(out, "  huge pages: %s\n", env.huge_pages.c_str());
  }
  std::fprintf(out, "  seed:       %llu\n", static_cast<unsigned long long>(env.seed));
}

// With several rounds: each index's ops per CPU second (recover: recovery seconds) as a
// ratio to the first index's in the same round, the median over rounds and the range.
void PrintRoundRatios(const BenchReport& report, const std::string& workload, int threads,
                      std::FILE* out) {
  std::vector<const BenchResult*> rs;
  for (const BenchResult& r : report.results)
    if (r.workload == workload && r.threads == threads) rs.push_back(&r);
  if (rs.empty() || rs[0]->per_round.size() < 2) return;
  const BenchResult& base = *rs[0];
  std::fprintf(out, "  %zu interleaved rounds, each index's median round shown; %s per round\n",
               base.per_round.size(),
               workload == "recover" ? "recovery seconds" : "Mops per CPU second");
  std::vector<std::vector<std::string>> rows;
  for (const BenchResult* r : rs) {
    std::string rounds;
    for (double v : r->per_round) rounds += (rounds.empty() ? "" : " ") + Fmt("%.3f", v);
    RoundRatio q;
    const bool ok = r != &base && RatioOverRounds(*r, base, &q);
    rows.push_back({r->index, rounds, ok ? Fmt("%.2fx", q.median) : "-",
                    ok ? Fmt("%.2f", q.min) + ".." + Fmt("%.2f", q.max) : "-"});
  }
  PrintTable(out,
             {{"index", true}, {"per round", true}, {"/ " + base.index + " (median)"}, {"range"}},
             rows);
}

void PrintReport(const BenchReport& report, std::FILE* out) {
  PrintEnvironment(report.environment, out);
  std::fprintf(out, "  latency:    %s\n", LatencyMethod(report.latency_sample).c_str());
  if (report.media_model != "per-thread" || report.count_unflushed) {
    std::fprintf(out, "  media:      %s write-combining buffer%s\n",
                 report.media_model == "shared" ? "one shared" : "a per-thread",
                 report.count_unflushed ? "; unflushed writes counted at cache eviction" : "");
  }
  // Tables in order of first appearance of (workload, threads).
  std::vector<std::pair<std::string, int>> order;
  for (const BenchResult& r : report.results) {
    const std::pair<std::string, int> k{r.workload, r.threads};
    if (std::find(order.begin(), order.end(), k) == order.end()) order.push_back(k);
  }
  std::vector<std::string> notes;
  for (const auto& [workload, threads] : order) {
    std::vector<std::vector<std::string>> rows;
    const BenchResult* first = nullptr;
    for (const BenchResult& r : report.results) {
      if (r.workload != workload || r.threads != threads) continue;
      if (first == nullptr) first = &r;
      if (!r.note.empty()) notes.push_back(r.index + " / " + r.workload + ": " + r.note);
      if (workload == "recover") {
        rows.push_back({r.index,
                        r.recovery_seconds ? Fmt("%.4f", *r.recovery_seconds) : "-",
                        std::to_string(r.keys), std::to_string(r.counters.persist_calls),
                        std::to_string(r.counters.flushes), std::to_string(r.counters.fences),
                        Fmt("%.1f", r.pm_bytes_per_key), Fmt("%.1f", r.dram_bytes_per_key),
                        r.durability});
        continue;
      }
      rows.push_back({r.index, Fmt("%.3f", r.mops), Ns(r.latency.p50), Ns(r.latency.p99),
                      Ns(r.latency.p999), Fmt("%.2f", r.per_op_persist_calls),
                      Fmt("%.2f", r.per_op_flushes), Fmt("%.2f", r.per_op_fences),
                      Fmt("%.2f", r.per_op_media_writes),
                      r.write_amplification ? Fmt("%.1f", *r.write_amplification) : "-",
                      Fmt("%.1f", r.pm_bytes_per_key), Fmt("%.1f", r.dram_bytes_per_key),
                      std::to_string(r.failed), r.durability});
    }
    std::fprintf(out, "\nworkload %s: %d thread%s, %s keys, %s, %llu keys at start\n",
                 workload.c_str(), threads, threads == 1 ? "" : "s", first->key_type.c_str(),
                 first->distribution.c_str(), static_cast<unsigned long long>(first->keys));
    if (workload == "recover") {
      PrintTable(out,
                 {{"index", true}, {"recovery s"}, {"keys"}, {"persists"}, {"flushes"},
                  {"fences"}, {"PM B/key"}, {"DRAM B/key"}, {"durability", true}},
                 rows);
    } else {
      PrintTable(out,
                 {{"index", true}, {"Mops/s"}, {"p50 ns"}, {"p99 ns"}, {"p99.9 ns"},
                  {"persist/op"}, {"flush/op"}, {"fence/op"}, {"media/op"}, {"WA"},
                  {"PM B/key"}, {"DRAM B/key"}, {"failed"}, {"durability", true}},
                 rows);
    }
    PrintRoundRatios(report, workload, threads, out);
  }
  if (!notes.empty() || !report.skipped.empty() || !report.warnings.empty())
    std::fprintf(out, "\n");
  for (const std::string& w : report.warnings) std::fprintf(out, "warning: %s\n", w.c_str());
  for (const std::string& n : notes) std::fprintf(out, "note: %s\n", n.c_str());
  for (const std::string& s : report.skipped) std::fprintf(out, "skipped: %s\n", s.c_str());
}

std::string ReportJson(const BenchReport& report) {
  using nlohmann::ordered_json;
  const Environment& e = report.environment;
  ordered_json env = {{"cpu", e.cpu},
                      {"cores", e.cores},
                      {"mode", e.mode},
                      {"media_model", report.media_model},
                      {"count_unflushed", report.count_unflushed},
                      {"pool_dir", e.pool_dir},
                      {"build", e.build},
                      {"version", e.version},
                      {"kernel", e.kernel},
                      {"pool_medium", e.pool_medium},
                      {"flush_instruction", e.flush_instruction},
                      {"transparent_huge_pages", e.transparent_huge_pages},
                      {"huge_pages", e.huge_pages},
                      {"seed", e.seed},
                      {"date", e.date},
                      {"latency_sample_every", report.latency_sample},
                      {"latency_method", LatencyMethod(report.latency_sample)}};
  ordered_json results = ordered_json::array();
  for (const BenchResult& r : report.results) {
    ordered_json j;
    j["index"] = r.index;
    j["workload"] = r.workload;
    j["threads"] = r.threads;
    j["key_type"] = r.key_type;
    j["distribution"] = r.distribution;
    j["keys"] = r.keys;
    j["ops"] = r.ops;
    j["seconds"] = r.seconds;
    j["mops"] = r.mops;
    j["cpu_seconds"] = r.cpu_seconds;
    j["mops_per_cpu_second"] = r.mops_per_cpu_second;
    j["latency_ns"] = {{"p50", r.latency.p50},
                       {"p99", r.latency.p99},
                       {"p999", r.latency.p999},
                       {"max", r.latency.max},
                       {"mean", r.latency.mean},
                       {"samples", r.latency.samples},
                       {"sample_every", r.latency.sample_every}};
    j["per_op"] = {{"persist_calls", r.per_op_persist_calls},
                   {"flushes", r.per_op_flushes},
                   {"fences", r.per_op_fences},
                   {"media_writes", r.per_op_media_writes},
                   {"wpq", r.per_op_wpq}};
    j["media_units_per_wpq"] =
        r.media_units_per_wpq ? ordered_json(*r.media_units_per_wpq) : ordered_json(nullptr);
    j["per_insert"] = {
        {"inserts", r.inserts},
        {"wpq", r.per_insert_wpq ? ordered_json(*r.per_insert_wpq) : ordered_json(nullptr)},
        {"media_units",
         r.per_insert_media_units ? ordered_json(*r.per_insert_media_units)
                                  : ordered_json(nullptr)}};
    j["write_amplification"] =
        r.write_amplification ? ordered_json(*r.write_amplification) : ordered_json(nullptr);
    j["memory"] = {{"pm_bytes", r.pm_bytes},
                   {"dram_bytes", r.dram_bytes},
                   {"pm_bytes_per_key", r.pm_bytes_per_key},
                   {"dram_bytes_per_key", r.dram_bytes_per_key}};
    j["recovery_seconds"] =
        r.recovery_seconds ? ordered_json(*r.recovery_seconds) : ordered_json(nullptr);
    j["durability"] = r.durability;
    j["failed"] = r.failed;
    j["mode"] = r.mode;
    j["totals"] = {{"persist_calls", r.counters.persist_calls},
                   {"flushes", r.counters.flushes},
                   {"fences", r.counters.fences},
                   {"media_writes", r.counters.media_writes},
                   {"media_rmw", r.counters.media_rmw},
                   {"wpq_inserts", r.counters.wpq_inserts},
                   {"logical_bytes", r.logical_bytes}};
    j["live_keys"] = r.live_keys;
    j["huge_page_bytes"] = r.huge_page_bytes;
    j["note"] = r.note;
    if (!r.per_round.empty()) {
      j["round"] = r.round;
      j["per_round"] = r.per_round;  // ops per CPU second (recover: seconds), round order
    }
    results.push_back(std::move(j));
  }
  ordered_json doc = {{"environment", env}, {"results", results},
                      {"skipped", report.skipped}, {"warnings", report.warnings}};
  return doc.dump(1) + "\n";
}

std::string ReportCsv(const BenchReport& report) {
  std::ostringstream out;
  out << "index,workload,threads,key_type,distribution,keys,ops,failed,seconds,mops,"
         "p50_ns,p99_ns,p999_ns,max_ns,persist_calls_per_op,flushes_per_op,fences_per_op,"
         "media_writes_per_op,write_amplification,pm_bytes,dram_bytes,pm_bytes_per_key,"
         "dram_bytes_per_key,recovery_seconds,mode,durability,cpu_seconds,mops_per_cpu_second,"
         "latency_samples,latency_sample_every,wpq_per_op,media_units_per_wpq,inserts\n";
  auto quote = [](const std::string& s) {
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  for (const BenchResult& r : report.results) {
    out << r.index << ',' << r.workload << ',' << r.threads << ',' << r.key_type << ','
        << r.distribution << ',' << r.keys << ',' << r.ops << ',' << r.failed << ','
        << Fmt("%.6f", r.seconds) << ',' << Fmt("%.6f", r.mops) << ',' << r.latency.p50 << ','
        << r.latency.p99 << ',' << r.latency.p999 << ',' << r.latency.max << ','
        << Fmt("%.4f", r.per_op_persist_calls) << ',' << Fmt("%.4f", r.per_op_flushes) << ','
        << Fmt("%.4f", r.per_op_fences) << ',' << Fmt("%.4f", r.per_op_media_writes) << ','
        << (r.write_amplification ? Fmt("%.4f", *r.write_amplification) : "") << ','
        << r.pm_bytes << ',' << r.dram_bytes << ',' << Fmt("%.2f", r.pm_bytes_per_key) << ','
        << Fmt("%.2f", r.dram_bytes_per_key) << ','
        << (r.recovery_seconds ? Fmt("%.6f", *r.recovery_seconds) : "") << ',' << r.mode << ','
        << quote(r.durability) << ',' << Fmt("%.6f", r.cpu_seconds) << ','
        << Fmt("%.6f", r.mops_per_cpu_second) << ',' << r.latency.samples << ','
        << r.latency.sample_every << ',' << Fmt("%.4f", r.per_op_wpq) << ','
        << (r.media_units_per_wpq ? Fmt("%.4f", *r.media_units_per_wpq) : "") << ','
        << r.inserts << '\n';
  }
  return out.str();
}

Status WriteFile(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return Status::IOError(path + ": cannot write: " + std::strerror(errno));
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) return Status::IOError(path + ": write failed");
  return Status::OK();
}

Status RunPlotScript(const std::string& json_path, const std::string& dir) {
  const char* script_env = std::getenv("PMINDEX_PLOT_SCRIPT");
  const std::string script =
      script_env != nullptr ? script_env : std::string(PMINDEX_SOURCE_DIR) + "/scripts/plot.py";
  // Debian's python3-matplotlib belongs to the system interpreter, not to a pyenv one.
  const char* python_env = std::getenv("PMINDEX_PYTHON");
  const std::string python = python_env != nullptr ? python_env : "/usr/bin/python3";
  if (access(script.c_str(), R_OK) != 0) {
    return Status::NotFound(script + ": plot script not found (set PMINDEX_PLOT_SCRIPT)");
  }
  const pid_t pid = fork();
  if (pid < 0) return Status::IOError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    execl(python.c_str(), python.c_str(), script.c_str(), json_path.c_str(), dir.c_str(),
          static_cast<char*>(nullptr));
    std::fprintf(stderr, "%s: cannot run: %s\n", python.c_str(), std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Status::IOError(python + " " + script + " failed (exit status " +
                           std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
  }
  return Status::OK();
}

}  // namespace pmindex::bench
