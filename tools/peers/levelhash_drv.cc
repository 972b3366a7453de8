// Pfzuo Level-Hashing, persistent_level_hashing (the OSDI 2018 code): level_hashing.c, log.c
// and hash.c compiled as C, changed by tools/peers/sed/levelhash.sed to 8-byte binary keys and
// values (their code takes NUL-terminated string keys). Started from 4 top buckets (level_size
// 2), as pmindex's levelhash starts; an insert that finds no slot calls level_expand and
// retries, as their test.c does. Their insert does not look for the key first (pmindex's
// does: AlreadyExists). No scan (a hash table). The platform functions their code expects from
// Quartz (pmalloc, pfree) and pflush are defined here: pmalloc returns zeroed 64-byte-aligned
// memory (their code never clears a new level's tokens), pflush writes back one line.
//
// Usage: levelhash_drv N [load|lookup|insert|scan]
#include <cstdint>
#include <cstdlib>
#include <cstring>

extern "C" {
#include "level_hashing.h"
}
#include "tools/peers/driver.h"
#include "tools/peers/peer_persist.h"

extern "C" void* pmalloc(size_t size) {
  const size_t rounded = (size + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (p != nullptr) std::memset(p, 0, rounded);
  return p;
}
extern "C" void pfree(void* p, size_t) { std::free(p); }
extern "C" void pflush(uint64_t* addr) { PEERS_FLUSH_LINE(addr); }

namespace {

class LevelHashAdapter {
 public:
  using WriteKey = uint64_t;
  using ReadKey = uint64_t;
  using ScanKey = uint64_t;
  static constexpr bool kHasScan = false;

  LevelHashAdapter() : table_(level_init(2)) {}
  uint64_t write_key(uint64_t key) const { return key; }
  uint64_t read_key(uint64_t key) const { return key; }
  uint64_t scan_key(uint64_t key) const { return key; }

  void insert(uint64_t key, uint64_t value) {
    auto* k = reinterpret_cast<uint8_t*>(&key);
    auto* v = reinterpret_cast<uint8_t*>(&value);
    while (level_insert(table_, k, v) != 0) level_expand(table_);
  }
  bool lookup(uint64_t key, uint64_t* value) {
    const uint8_t* found = level_static_query(table_, reinterpret_cast<uint8_t*>(&key));
    if (found == nullptr) return false;
    std::memcpy(value, found, sizeof(*value));
    return true;
  }
  size_t scan(uint64_t, size_t) { return 0; }

 private:
  level_hash* table_;  // never destroyed: the process ends with the run
};

}  // namespace

int main(int argc, char** argv) {
  const char* usage = "levelhash_drv N [load|lookup|insert|scan]";
  peers::Config config;
#ifdef PEERS_EADR
  config.label = "peer-levelhash eadr";
#else
  config.label = "peer-levelhash adr";
#endif
  peers::ParseRunArgs(argc, argv, 1, usage, &config);
  LevelHashAdapter adapter;
  return peers::Run(adapter, config);
}
