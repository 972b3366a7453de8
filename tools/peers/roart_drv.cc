// madsys-dev/ROART (Ma et al., the authors' code of the ROART paper: ART/ and nvm_mgr/),
// built as their CMake configures it: -DVARIABLE_LENGTH -DKEY_INLINE -DLEAF_ARRAY
// -DFIND_FIRST -DINSTANT_RESTART ... (scripts/peers.sh build_roart). Leaf arrays of 64
// unsorted entries (fingerprint + leaf pointer), leaves with the key and the value inline,
// their NVM manager's block allocator and epochs.
//
// Keys are the 8 key bytes big-endian, key_len 8, so that the tree's byte order is the
// integers' order, as in pmindex (their benchmark passes integers in native, little-endian
// order); the value is the id, which a leaf copies from the
// address Key::value holds (val_len 8). Their Key points its fkey at its own key word, so it
// cannot be copied: every call builds one on the stack (five stores) from the big-endian
// word made before the timed loops. A scan is lookupRange from the start key to the largest
// key (eight 0xff bytes, not among the keys), stopping after 100 leaves; with their
// configuration (SORT_LEAVES off) a leaf array's leaves come out in slot order, as theirs do.
// lookupRange hands back leaf pointers and reads no leaf outside the start's leaf array; with
// PEERS_ROART_SCAN=read in the environment the driver reads each returned leaf's value, as a
// caller that uses the pairs does (pmindex's scan hands key and value to its callback).
//
// The NVM file is /dev/shm/pmindex-peers-roart-part.data (sed/roart.sed): their NVMMgr
// truncates it to 256 GiB, sparse, and maps it at 0x50000000; it is removed before the run
// (a file left there would be recovered, not created) and after. new Tree() opens the
// manager and registers this thread (its allocator and epoch slot); every operation enters
// their epoch itself (EpochGuard).
//
// Built with -DPEERS_COUNT (roart_count, peer_persist.h) it also prints, to stderr, the
// lines flushed and the fences of the whole run.
//
// Usage: roart_drv N [load|lookup|absent|insert|scan]
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "Tree.h"
#include "nvm_mgr.h"
#include "tools/peers/driver.h"

namespace {

constexpr const char* kNvmFile = "/dev/shm/pmindex-peers-roart-part.data";

class RoartAdapter {
 public:
  using WriteKey = uint64_t;  // the key's bytes big-endian, as a word
  using ReadKey = uint64_t;
  using ScanKey = uint64_t;
  static constexpr bool kHasScan = true;

  RoartAdapter() {
    unlink(kNvmFile);
    tree_ = new PART_ns::Tree();
    end_.Init(~uint64_t{0}, sizeof(uint64_t), 0);
    const char* scan = std::getenv("PEERS_ROART_SCAN");
    read_scans_ = scan != nullptr && std::strcmp(scan, "read") == 0;
  }
  ~RoartAdapter() {
    delete tree_;
    unlink(kNvmFile);
  }
  uint64_t write_key(uint64_t key) const { return __builtin_bswap64(key); }
  uint64_t read_key(uint64_t key) const { return __builtin_bswap64(key); }
  uint64_t scan_key(uint64_t key) const { return __builtin_bswap64(key); }

  void insert(uint64_t key, uint64_t value) {
    PART_ns::Key k;
    k.Init(key, sizeof(uint64_t), reinterpret_cast<uint64_t>(&value));
    tree_->insert(&k);
  }
  bool lookup(uint64_t key, uint64_t* value) {
    PART_ns::Key k;
    k.Init(key, sizeof(uint64_t), 0);
    PART_ns::Leaf* leaf = tree_->lookup(&k);
    if (leaf == nullptr) return false;
    std::memcpy(value, leaf->GetValue(), sizeof(uint64_t));
    return true;
  }
  size_t scan(uint64_t start, size_t count) {
    PART_ns::Key k;
    k.Init(start, sizeof(uint64_t), 0);
    size_t found = 0;
    tree_->lookupRange(&k, &end_, nullptr, results_, count, found);
    if (read_scans_) {
      uint64_t sum = 0;
      for (size_t i = 0; i < found; i++) {
        uint64_t value;
        std::memcpy(&value, results_[i]->GetValue(), sizeof(value));
        sum += value;
      }
      scan_sink_ += sum;
    }
    return found;
  }

 private:
  PART_ns::Tree* tree_;
  PART_ns::Key end_;  // not copied: its fkey points at its own key word
  PART_ns::Leaf* results_[peers::kScanLength];
  bool read_scans_ = false;
  volatile uint64_t scan_sink_ = 0;  // the values read, kept
};

}  // namespace

int main(int argc, char** argv) {
  const char* usage = "roart_drv N [load|lookup|absent|insert|scan]";
  peers::Config config;
#if defined(PEERS_COUNT)
  config.label = "peer-roart count";
#elif defined(PEERS_EADR)
  config.label = "peer-roart eadr";
#else
  config.label = "peer-roart adr";
#endif
  peers::ParseRunArgs(argc, argv, 1, usage, &config);
  RoartAdapter adapter;
  const int rc = peers::Run(adapter, config);
#ifdef PEERS_COUNT
  std::fprintf(stderr, "persist_counts flushes=%llu fences=%llu\n", peers_flushes, peers_fences);
#endif
  return rc;
}
