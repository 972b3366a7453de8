// DICL CCEH, src/CCEH_MSB.cpp built with -DINPLACE (the in-place split the paper describes):
// 16 KiB segments from posix_memalign, starting from two, probing 8 lines of 4 pairs, size_t keys, the value
// pointer holding the id. Its sentinel keys (-1 empty, -2 locked slot) are never generated
// ids' keys. No scan (a hash table). Their source is one translation unit with this driver:
// util/persist.h defines globals, so it may be included once.
//
// Usage: cceh_drv N [load|lookup|insert|scan]
#include <cstdint>

#include "src/CCEH_MSB.cpp"  // NOLINT: the peer's code, one unit (see above)
#include "tools/peers/driver.h"

namespace {

class CcehAdapter {
 public:
  using WriteKey = Key_t;
  using ReadKey = Key_t;
  using ScanKey = Key_t;
  static constexpr bool kHasScan = false;

  // Two segments (global depth 1): the default constructor's depth 0 shifts the hash by 64
  // bits in its directory index, which x86 reads as a shift by 0 (an index out of range).
  CcehAdapter() : table_(new CCEH(2)) {}
  Key_t write_key(uint64_t key) const { return static_cast<Key_t>(key); }
  Key_t read_key(uint64_t key) const { return static_cast<Key_t>(key); }
  Key_t scan_key(uint64_t key) const { return static_cast<Key_t>(key); }

  void insert(Key_t key, uint64_t value) {
    table_->Insert(key, reinterpret_cast<Value_t>(value));
  }
  bool lookup(Key_t key, uint64_t* value) {
    Value_t found = table_->Get(key);
    *value = reinterpret_cast<uint64_t>(found);
    return found != NONE;
  }
  size_t scan(Key_t, size_t) { return 0; }

 private:
  CCEH* table_;  // never deleted: the process ends with the run
};

}  // namespace

int main(int argc, char** argv) {
  const char* usage = "cceh_drv N [load|lookup|insert|scan]";
  peers::Config config;
#ifdef PEERS_EADR
  config.label = "peer-cceh eadr";
#else
  config.label = "peer-cceh adr";
#endif
  peers::ParseRunArgs(argc, argv, 1, usage, &config);
  CcehAdapter adapter;
  return peers::Run(adapter, config);
}
