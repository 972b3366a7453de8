// WORT (wort/wort.c) or, built with -DPEERS_WOART, WOART (woart/woart.c): the authors' C
// radix trees, nodes from posix_memalign, 8-byte integer keys passed as unsigned long, the
// value pointer holding the id. Neither has a range scan.
//
// Usage: wort_drv N [load|lookup|insert]   (woart_drv likewise)
#include <cstdint>
#include <string>

#ifdef PEERS_WOART
#include "woart.h"
#define PEERS_TREE_NAME "woart"
#else
#include "wort.h"
#define PEERS_TREE_NAME "wort"
#endif

#include "tools/peers/driver.h"

namespace {

constexpr int kKeyBytes = 8;

class WortAdapter {
 public:
  using WriteKey = unsigned long;
  using ReadKey = unsigned long;
  using ScanKey = unsigned long;
  static constexpr bool kHasScan = false;

  WortAdapter() { art_tree_init(&tree_); }

  unsigned long write_key(uint64_t key) const { return key; }
  unsigned long read_key(uint64_t key) const { return key; }
  unsigned long scan_key(uint64_t key) const { return key; }

  void insert(unsigned long key, uint64_t value) {
    art_insert(&tree_, key, kKeyBytes, reinterpret_cast<void*>(value));
  }
  bool lookup(unsigned long key, uint64_t* value) {
    void* found = art_search(&tree_, key, kKeyBytes);
    *value = reinterpret_cast<uint64_t>(found);
    return found != nullptr;
  }
  size_t scan(unsigned long, size_t) { return 0; }

 private:
  art_tree tree_;
};

}  // namespace

int main(int argc, char** argv) {
  const char* usage = PEERS_TREE_NAME "_drv N [load|lookup|insert]";
  peers::Config config;
#ifdef PEERS_EADR
  config.label = "peer-" PEERS_TREE_NAME " eadr";
#else
  config.label = "peer-" PEERS_TREE_NAME " adr";
#endif
  peers::ParseRunArgs(argc, argv, 1, usage, &config);
  WortAdapter adapter;
  return peers::Run(adapter, config);
}
