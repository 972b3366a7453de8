// `pmindex lab`: the micro-experiments E1-E10 of Götze et al. over the node organisations of
// src/primitives/ (doc/primitives.md). Each data point reports latency per operation (the
// median of per-operation samples on nodes evicted from the cache, or on one hot node for
// "cached"; E2, E6 and E7: the mean over their runs) and, from a separate
// counted pass through a context with the XPLine media model, bytes modified, flushed lines,
// fences and media writes per operation.
#ifndef PMINDEX_BENCH_LAB_LAB_H_
#define PMINDEX_BENCH_LAB_LAB_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace pmindex::lab {

struct LabOptions {
  std::vector<std::string> experiments;  // e1..e10; empty: all
  bool quick = false;                    // small sizes (tests)
  uint64_t iters = 0;                    // operations per data point (0: 4096, quick 128)
  uint64_t arena_mib = 0;                // node arena (0: 32 MiB = 4x this LLC, quick 4)
  std::string pool_dir;                  // where the arena and the PMDK pool live
  uint64_t seed = 1;
  bool progress = true;                  // one line per data point group on stderr
};

struct Row {
  std::string exp;       // "E1"
  std::string org;       // node organisation, or the E6/E7 strategy
  std::string variant;   // access primitive / algorithm / FA strategy
  uint64_t node_bytes = 0;
  std::string position;  // first/middle/last, or "" where none
  std::string param;     // cached/uncached, depth=3, dup=0%, ...
  double ns = 0;         // latency per operation
  double bytes = -1;     // bytes modified per operation (-1: not counted)
  double flushes = -1;   // flushed cache lines per operation (persist seam)
  double fences = -1;
  double media = -1;     // XPLine media writes per operation (media model, drained per op)
  uint64_t ops = 0;
};

// Runs the experiments; rows in order. Errors (arena, PMDK pool) go to stderr: false.
bool RunLab(const LabOptions& options, std::vector<Row>* rows);
void PrintTable4(std::FILE* out);
void PrintRows(std::FILE* out, const std::vector<Row>& rows);
bool WriteJson(const std::string& path, const std::vector<Row>& rows);
bool WriteCsv(const std::string& path, const std::vector<Row>& rows);

}  // namespace pmindex::lab

#endif  // PMINDEX_BENCH_LAB_LAB_H_
