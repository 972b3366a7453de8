// baotonglu/dash, Dash-EH (src/ex_finger.h, extendible::Finger_EH<uint64_t>): 8-byte keys,
// the configuration of the paper's main figures. Segments of 64 buckets of 14 pairs and 2
// stash buckets from a PMDK (libpmemobj) pool, starting from two segments (one would be
// global depth 0, whose directory index shifts the hash by 64 bits); every lookup and insert
// runs inside the authors' epoch manager (XiangpengHao/epoch-reclaimer), entered once per
// 1000 operations as their benchmark does (test_pmem.cpp, run.sh's -ed 1000). The value is
// the id (Value_t is a pointer); ids are never 0, their NONE.
//
// The pool is /dev/shm/pmindex-peers-dash.pool (1 GiB), made afresh each run and removed
// after. PMDK is told to treat it as persistent memory (PMEM_IS_PMEM_FORCE=1: otherwise its
// internal persists are msync calls) and, in the eadr build, to skip its own flushes
// (PMEM_NO_FLUSH=1; its fences stay). Both are read when libpmem loads, so the driver
// re-executes itself with them set. Dash's own persists are PeersPersist below
// (sed/dash.sed). Their sources are one translation unit with this driver: their headers
// define globals.
//
// Usage: dash_drv N [load|lookup|absent|insert|scan]
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "tools/peers/driver.h"

// Dash's pmemobj_persist(pool, p, n), rewritten by sed/dash.sed: one PEERS_FLUSH_LINE per
// cache line of [p, p+n) and one PEERS_FENCE, as pmem_persist's flush and drain.
inline void PeersPersist(const void* p, size_t n) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{63};
  const uintptr_t end = reinterpret_cast<uintptr_t>(p) + n;
  for (uintptr_t line = begin; line < end; line += 64)
    PEERS_FLUSH_LINE(reinterpret_cast<void*>(line));
  PEERS_FENCE();
}

#include "src/allocator.h"   // NOLINT: the peer's code, one unit (see above)
#include "src/ex_finger.h"  // NOLINT

namespace {

constexpr const char* kPoolPath = "/dev/shm/pmindex-peers-dash.pool";
constexpr size_t kPoolBytes = size_t{1} << 30;
constexpr size_t kInitialSegments = 2;
constexpr uint64_t kEpochOps = 1000;  // operations per epoch entry, as their -ed 1000

class DashAdapter {
 public:
  using WriteKey = uint64_t;
  using ReadKey = uint64_t;
  using ScanKey = uint64_t;
  static constexpr bool kHasScan = false;

  DashAdapter() {
    unlink(kPoolPath);
    Allocator::Initialize(kPoolPath, kPoolBytes);
    table_ = reinterpret_cast<extendible::Finger_EH<uint64_t>*>(
        Allocator::GetRoot(sizeof(extendible::Finger_EH<uint64_t>)));
    new (table_) extendible::Finger_EH<uint64_t>(kInitialSegments, Allocator::Get()->pm_pool_);
    Allocator::Protect();
  }
  ~DashAdapter() {
    Allocator::Unprotect();
    unlink(kPoolPath);
  }
  uint64_t write_key(uint64_t key) const { return key; }
  uint64_t read_key(uint64_t key) const { return key; }
  uint64_t scan_key(uint64_t key) const { return key; }

  void insert(uint64_t key, uint64_t value) {
    Tick();
    table_->Insert(key, reinterpret_cast<Value_t>(value), true);
  }
  bool lookup(uint64_t key, uint64_t* value) {
    Tick();
    Value_t found = NONE;
    const bool hit = table_->Get(key, &found, true);
    *value = reinterpret_cast<uint64_t>(found);
    return hit;
  }
  size_t scan(uint64_t, size_t) { return 0; }

 private:
  // Leaves and enters the epoch every kEpochOps operations (their benchmark's guard per
  // 1000 operations).
  void Tick() {
    if (++ops_ % kEpochOps == 0) {
      Allocator::Unprotect();
      Allocator::Protect();
    }
  }

  extendible::Finger_EH<uint64_t>* table_;  // in the pool's root object
  uint64_t ops_ = 0;
};

// PMDK reads its environment when libpmem loads: set it and start again.
void EnsurePmdkEnvironment(char** argv) {
  if (std::getenv("PMEM_IS_PMEM_FORCE") != nullptr) return;
  setenv("PMEM_IS_PMEM_FORCE", "1", 1);
#ifdef PEERS_EADR
  setenv("PMEM_NO_FLUSH", "1", 1);
#endif
  execv("/proc/self/exe", argv);
  std::perror("dash_drv: execv /proc/self/exe");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  EnsurePmdkEnvironment(argv);
  const char* usage = "dash_drv N [load|lookup|absent|insert|scan]";
  peers::Config config;
#ifdef PEERS_EADR
  config.label = "peer-dash eadr";
#else
  config.label = "peer-dash adr";
#endif
  peers::ParseRunArgs(argc, argv, 1, usage, &config);
  DashAdapter adapter;
  return peers::Run(adapter, config);
}
