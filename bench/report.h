// Output of a benchmark run: the environment header and per-workload tables for people,
// JSON and CSV for programs (the JSON shape is fixed, doc/bench.md; fields may be added, none
// renamed), and the plot script call.
#ifndef PMINDEX_BENCH_REPORT_H_
#define PMINDEX_BENCH_REPORT_H_

#include <cstdio>
#include <string>

#include "bench/runner.h"
#include "pmindex/status.h"

namespace pmindex::bench {

// The environment header, then one table per (workload, threads), then skipped indexes.
void PrintReport(const BenchReport& report, std::FILE* out);
void PrintEnvironment(const Environment& env, std::FILE* out);
// How latency was measured, for a BenchConfig::latency_sample of `every` (table and JSON).
std::string LatencyMethod(uint32_t every);

// The JSON document of a report (see doc/bench.md for every field).
std::string ReportJson(const BenchReport& report);
// One CSV row per result, with a header line.
std::string ReportCsv(const BenchReport& report);

// Writes `text` to `path`; IOError naming the file on failure.
Status WriteFile(const std::string& path, const std::string& text);

// Runs scripts/plot.py on a JSON file, writing PNGs into `dir`. The script is looked up next
// to the executable's source tree ($PMINDEX_PLOT_SCRIPT overrides it).
Status RunPlotScript(const std::string& json_path, const std::string& dir);

}  // namespace pmindex::bench

#endif  // PMINDEX_BENCH_REPORT_H_
