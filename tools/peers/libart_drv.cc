// armon's libart: the volatile adaptive radix tree, keys as 8 big-endian bytes (the order
// pmindex's art keeps), the value pointer holding the id. No range scan.
//
// Usage: libart_drv N [load|lookup|insert]
#include <array>
#include <cstdint>
#include <cstring>

#include "art.h"
#include "tools/peers/driver.h"

namespace {

using KeyBytes = std::array<unsigned char, 8>;

KeyBytes BigEndian(uint64_t key) {
  KeyBytes bytes;
  const uint64_t be = __builtin_bswap64(key);
  std::memcpy(bytes.data(), &be, sizeof(be));
  return bytes;
}

class LibartAdapter {
 public:
  using WriteKey = KeyBytes;
  using ReadKey = KeyBytes;
  using ScanKey = KeyBytes;
  static constexpr bool kHasScan = false;

  LibartAdapter() { art_tree_init(&tree_); }

  KeyBytes write_key(uint64_t key) const { return BigEndian(key); }
  KeyBytes read_key(uint64_t key) const { return BigEndian(key); }
  KeyBytes scan_key(uint64_t key) const { return BigEndian(key); }

  void insert(const KeyBytes& key, uint64_t value) {
    art_insert(&tree_, key.data(), static_cast<int>(key.size()), reinterpret_cast<void*>(value));
  }
  bool lookup(const KeyBytes& key, uint64_t* value) {
    void* found = art_search(&tree_, key.data(), static_cast<int>(key.size()));
    *value = reinterpret_cast<uint64_t>(found);
    return found != nullptr;
  }
  size_t scan(const KeyBytes&, size_t) { return 0; }

 private:
  art_tree tree_;
};

}  // namespace

int main(int argc, char** argv) {
  const char* usage = "libart_drv N [load|lookup|insert]";
  peers::Config config;
  config.label = "peer-libart volatile";
  peers::ParseRunArgs(argc, argv, 1, usage, &config);
  LibartAdapter adapter;
  return peers::Run(adapter, config);
}
