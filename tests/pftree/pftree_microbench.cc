// PFtree micro-benchmark (not a test): single-thread insert and lookup throughput of any
// registered index on N uniformly random 8-byte integer keys (or fixed-length string keys),
// in a given persistence mode, plus reopen (recovery) time. For quick comparisons while the
// workbench (`pmindex bench`) is the reference.
//
//   pftree_microbench <index> <mode> [keys=1000000] [key_bytes=8] [dir=/dev/shm]
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "pm/persist.h"
#include "pmindex/index.h"

using namespace pmindex;

namespace {

double Seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// CPU time of this thread: robust against other processes on a shared machine.
double CpuNow() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <index> <mode> [keys] [key_bytes] [dir]\n", argv[0]);
    return 2;
  }
  std::string name = argv[1];
  PersistMode mode;
  if (!ParsePersistMode(argv[2], &mode)) {
    std::fprintf(stderr, "bad mode %s\n", argv[2]);
    return 2;
  }
  size_t n = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1000000;
  size_t key_bytes = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 8;
  std::string dir = argc > 5 ? argv[5] : "/dev/shm";
  std::string path = dir + "/pftree-microbench-" + std::to_string(getpid()) + ".pool";
  std::filesystem::remove(path);

  std::mt19937_64 rng(42);
  std::vector<std::string> keys(n);
  for (auto& k : keys) {
    if (key_bytes == 8) {
      k = std::string(IntKey(rng()).view());
    } else {
      k.resize(key_bytes);
      for (size_t i = 0; i < key_bytes; i += 8) {
        uint64_t r = rng();
        std::memcpy(&k[i], &r, std::min<size_t>(8, key_bytes - i));
      }
    }
  }
  Options options;
  options.mode = mode;
  options.pool_size = 4ull << 30;
  auto created = CreateIndex(name, path, options);
  if (!created.ok()) {
    std::fprintf(stderr, "%s\n", created.status().ToString().c_str());
    return 1;
  }
  std::unique_ptr<Index> index = std::move(created).value();
  std::string value(8, 'v');

  PersistCounters c0 = index->pool()->counters();
  double cpu0 = CpuNow();
  auto t0 = std::chrono::steady_clock::now();
  size_t failed = 0;
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(value.data(), &i, 8);
    if (!index->insert(keys[i], value).ok()) ++failed;
  }
  auto t1 = std::chrono::steady_clock::now();
  double cpu1 = CpuNow();
  PersistCounters c1 = index->pool()->counters();

  std::vector<uint32_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<uint32_t>(i);
  std::shuffle(order.begin(), order.end(), rng);
  std::string got;
  size_t found = 0;
  double cpu2 = CpuNow();
  auto t2 = std::chrono::steady_clock::now();
  for (uint32_t i : order) found += index->lookup(keys[i], &got).ok();
  auto t3 = std::chrono::steady_clock::now();
  double cpu3 = CpuNow();

  double ins = n / Seconds(t0, t1) / 1e6, look = n / Seconds(t2, t3) / 1e6;
  double ins_cpu = n / (cpu1 - cpu0) / 1e6, look_cpu = n / (cpu3 - cpu2) / 1e6;
  IndexStats st = index->stats();
  std::printf(
      "%s mode=%s keys=%zu key_bytes=%zu insert=%.3f Mops/s lookup=%.3f Mops/s "
      "(per CPU-second: insert=%.3f lookup=%.3f) flush/insert=%.2f fence/insert=%.2f found=%zu failed=%zu pm=%.1fMB dram=%.1fMB\n",
      name.c_str(), argv[2], n, key_bytes, ins, look, ins_cpu, look_cpu, double(c1.flushes - c0.flushes) / n,
      double(c1.fences - c0.fences) / n, found, failed, st.pm_bytes / 1e6, st.dram_bytes / 1e6);
  if (index->pool() != nullptr) {
    if (Status s = index->close(); !s.ok()) {
      std::fprintf(stderr, "close: %s\n", s.ToString().c_str());
      return 1;
    }
    index.reset();
    auto t4 = std::chrono::steady_clock::now();
    auto reopened = OpenIndex(path, options, name);
    auto t5 = std::chrono::steady_clock::now();
    if (reopened.ok()) std::printf("%s reopen(recover)=%.3f s\n", name.c_str(), Seconds(t4, t5));
  }
  std::filesystem::remove(path);
  return 0;
}
