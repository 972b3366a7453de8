// RECIPE's P-CLHT (P-CLHT/src/clht_lb_res.c, CLHT-LB-RES), created with 512 buckets as its
// example.cpp does, ssmem for its buckets, one thread registered with its GC. Keys and
// values are never 0 (CLHT's empty marker): the driver's ids start at 1. No scan.
//
// Usage: pclht_drv N [load|lookup|insert|scan]
#include <immintrin.h>  // clht.h uses _mm_pause without including it

#include <cstdint>

#include "clht.h"
#include "ssmem.h"
#include "tools/peers/driver.h"

namespace {

class PclhtAdapter {
 public:
  using WriteKey = uint64_t;
  using ReadKey = uint64_t;
  using ScanKey = uint64_t;
  static constexpr bool kHasScan = false;

  PclhtAdapter() : table_(clht_create(512)) { clht_gc_thread_init(table_, 0); }

  uint64_t write_key(uint64_t key) const { return key; }
  uint64_t read_key(uint64_t key) const { return key; }
  uint64_t scan_key(uint64_t key) const { return key; }

  void insert(uint64_t key, uint64_t value) { clht_put(table_, key, value); }
  bool lookup(uint64_t key, uint64_t* value) {
    const clht_val_t v = clht_get(table_->ht, key);
    if (v == 0) return false;
    *value = v;
    return true;
  }
  size_t scan(uint64_t, size_t) { return 0; }

 private:
  clht_t* table_;
};

}  // namespace

int main(int argc, char** argv) {
  const char* usage = "pclht_drv N [load|lookup|insert|scan]";
  peers::Config config;
#ifdef PEERS_EADR
  config.label = "peer-pclht eadr";
#else
  config.label = "peer-pclht adr";
#endif
  peers::ParseRunArgs(argc, argv, 1, usage, &config);
  PclhtAdapter adapter;
  return peers::Run(adapter, config);
}
