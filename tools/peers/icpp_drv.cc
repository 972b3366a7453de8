// ICPP-RNTree's trees (RNTree, RNTree-DS, FPTree, NV-Tree, wB+-Tree, wB+-Tree with an 8-slot
// array) through their common Index<K, V, size> interface, single-threaded (built with
// NO_CONCURRENT), leaves of 64 entries, persistent nodes in the NVM file of its NVM manager.
//
// Usage: icpp_drv rntree|rntree-ds|fptree|nvtree|wbtree|wbtree8 N [load|lookup|insert|scan]
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "index_factory.h"
#include "tools/peers/driver.h"

namespace {

using Key = uint64_t;
using Value = uint64_t;
constexpr int kLeafEntries = 64;
// The NVM manager's file, as sed/icpp-nvm.sed sets it; removed after the run (2 GiB of tmpfs).
constexpr const char* kNvmFile = "/dev/shm/pmindex-peers-icpp.data";
using Tree = Index<Key, Value, kLeafEntries>;

// The trees' scan takes a plain function pointer, called per pair until it returns true.
size_t scan_remaining = 0;
bool CountPair(Key, Value) { return --scan_remaining == 0; }

class IcppAdapter {
 public:
  using WriteKey = Key;
  using ReadKey = Key;
  using ScanKey = Key;
  static constexpr bool kHasScan = true;

  explicit IcppAdapter(Tree* tree) : tree_(tree) {}

  Key write_key(uint64_t key) const { return key; }
  Key read_key(uint64_t key) const { return key; }
  Key scan_key(uint64_t key) const { return key; }

  void insert(Key key, Value value) { tree_->insert(key, value); }
  bool lookup(Key key, Value* value) {
    double unused[3];
    *value = tree_->get(key, unused);
    return *value != Value(-1);
  }
  size_t scan(Key start, size_t count) {
    scan_remaining = count;
    tree_->scan(start, CountPair);
    return count - scan_remaining;
  }

 private:
  Tree* tree_;
};

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "icpp_drv rntree|rntree-ds|fptree|nvtree|wbtree|wbtree8 N [load|lookup|insert|scan]";
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s\n", usage);
    return 2;
  }
  struct Named {
    const char* name;
    IndexType type;
  };
  static const Named kTrees[] = {{"rntree", RN_TREE}, {"rntree-ds", RN_TREE_R},
                                 {"fptree", FP_TREE}, {"nvtree", NV_TREE},
                                 {"wbtree", WB_TREE}, {"wbtree8", WB_TREE_2}};
  const Named* chosen = nullptr;
  for (const Named& t : kTrees)
    if (std::strcmp(argv[1], t.name) == 0) chosen = &t;
  if (chosen == nullptr) {
    std::fprintf(stderr, "unknown tree '%s'\nusage: %s\n", argv[1], usage);
    return 2;
  }
  peers::Config config;
#ifdef PEERS_EADR
  config.label = std::string("icpp-") + chosen->name + " eadr";
#else
  config.label = std::string("icpp-") + chosen->name + " adr";
#endif
  peers::ParseRunArgs(argc, argv, 2, usage, &config);

  std::unique_ptr<Tree> tree(nvindex::getIndex<Key, Value, kLeafEntries>(chosen->type));
  IcppAdapter adapter(tree.get());
  const int rc = peers::Run(adapter, config);
  tree.reset();
  nvindex::close_nvm_mgr();
  std::remove(kNvmFile);
  return rc;
}
