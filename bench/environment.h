// The environment header of a benchmark run: what machine, kernel, pool medium and build
// produced the figures.
#ifndef PMINDEX_BENCH_ENVIRONMENT_H_
#define PMINDEX_BENCH_ENVIRONMENT_H_

#include <string>

#include "pmindex/options.h"

namespace pmindex::bench {

struct Environment {
  std::string cpu;
  int cores = 0;
  std::string kernel;
  std::string mode;
  std::string pool_dir;
  std::string pool_medium;   // "tmpfs", "DAX (ext4)", "disk (ext4)", ...
  std::string build;         // CMAKE_BUILD_TYPE, plus "+asan"/"+tsan" in sanitizer builds
  std::string version;
  std::string flush_instruction;
  std::string transparent_huge_pages;  // kernel setting for the pool's file system
  std::string huge_pages;              // whether pool mappings used 2 MiB pages (after a run)
  uint64_t seed = 0;
  std::string date;
};

// Fills everything but huge_pages.
Environment DetectEnvironment(const std::string& pool_dir, PersistMode mode, uint64_t seed);
// The file system holding `dir`: "tmpfs", "DAX (<fs>)" or "disk (<fs>)".
std::string PoolMedium(const std::string& dir);
// $PMINDEX_POOL_DIR if it names a directory, else /dev/shm when it is one, else the system
// temporary directory.
std::string DefaultPoolDir();

}  // namespace pmindex::bench

#endif  // PMINDEX_BENCH_ENVIRONMENT_H_
