// RECIPE's P-ART (P-ART/Tree.cpp, ART with ROWEX), glibc malloc. An insert makes its Key
// leaf inside the timed loop, as the leaf is the stored pair; lookups and scans use Key
// objects made before it. A scan is lookupRange from the start key to the largest key,
// stopping after 100 results.
//
// Usage: part_drv N [load|lookup|insert|scan]
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "Tree.h"
#include "tools/peers/driver.h"

namespace {

void LoadNoKey(TID, Key&) {}  // leaves hold their keys; P-ART never loads one by TID

// A leaf as RECIPE's Key::make_leaf builds one for an integer key: 64-byte aligned, the
// value, the length, then the key's 8 big-endian bytes.
Key* MakeKey(uint64_t key, uint64_t value) {
  void* memory = nullptr;
  if (posix_memalign(&memory, 64, sizeof(Key) + sizeof(uint64_t)) != 0) std::abort();
  Key* k = static_cast<Key*>(memory);
  k->value = value;
  k->key_len = sizeof(uint64_t);
  const uint64_t be = __builtin_bswap64(key);
  std::memcpy(k->fkey, &be, sizeof(be));
  return k;
}

class PartAdapter {
 public:
  using WriteKey = uint64_t;
  using ReadKey = Key*;
  using ScanKey = Key*;
  static constexpr bool kHasScan = true;

  PartAdapter()
      : tree_(LoadNoKey),
        thread_(tree_.getThreadInfo()),
        end_(MakeKey(std::numeric_limits<uint64_t>::max(), 0)) {}

  uint64_t write_key(uint64_t key) const { return key; }
  Key* read_key(uint64_t key) const { return MakeKey(key, 0); }
  Key* scan_key(uint64_t key) const { return MakeKey(key, 0); }

  void insert(uint64_t key, uint64_t value) { tree_.insert(MakeKey(key, value), thread_); }
  bool lookup(const Key* key, uint64_t* value) {
    void* found = tree_.lookup(key, thread_);
    if (found == nullptr) return false;
    *value = *static_cast<uint64_t*>(found);
    return true;
  }
  size_t scan(const Key* start, size_t count) {
    size_t found = 0;
    tree_.lookupRange(start, end_, nullptr, results_, count, found, thread_);
    return found;
  }

 private:
  ART_ROWEX::Tree tree_;
  ThreadInfo thread_;
  Key* end_;
  Key* results_[peers::kScanLength];
};

}  // namespace

int main(int argc, char** argv) {
  const char* usage = "part_drv N [load|lookup|insert|scan]";
  peers::Config config;
#ifdef PEERS_EADR
  config.label = "peer-part eadr";
#else
  config.label = "peer-part adr";
#endif
  peers::ParseRunArgs(argc, argv, 1, usage, &config);
  PartAdapter adapter;
  return peers::Run(adapter, config);
}
