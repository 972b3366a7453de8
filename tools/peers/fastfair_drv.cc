// FAST_FAIR, the single-threaded version (single/src/btree.h): 512-byte pages from
// posix_memalign, int64_t keys, the value pointer holding the id. Its range search returns
// the values of keys strictly between (min, max) in signed order, so a scan from key k passes
// (k - 1, the key 100 places after k), computed before the timed loop: 100 pairs.
//
// Usage: fastfair_drv N [load|lookup|insert|scan]
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "btree.h"
#include "tools/peers/driver.h"

namespace {

struct ScanRange {
  entry_key_t min;  // exclusive
  entry_key_t max;  // exclusive
  size_t pairs;     // how many keys lie between them
};

class FastFairAdapter {
 public:
  using WriteKey = entry_key_t;
  using ReadKey = entry_key_t;
  using ScanKey = ScanRange;
  static constexpr bool kHasScan = true;

  entry_key_t write_key(uint64_t key) const { return static_cast<entry_key_t>(key); }
  entry_key_t read_key(uint64_t key) const { return static_cast<entry_key_t>(key); }

  void prepare_scans(const std::vector<uint64_t>& all_keys) {
    sorted_.assign(all_keys.begin(), all_keys.end());
    std::sort(sorted_.begin(), sorted_.end());
  }
  ScanRange scan_key(uint64_t key) const {
    const entry_key_t start = static_cast<entry_key_t>(key);
    const size_t at = std::lower_bound(sorted_.begin(), sorted_.end(), start) - sorted_.begin();
    const entry_key_t end = at + peers::kScanLength < sorted_.size()
                                ? sorted_[at + peers::kScanLength]
                                : std::numeric_limits<entry_key_t>::max();
    return {start - 1, end, std::min(peers::kScanLength, sorted_.size() - at)};
  }

  void insert(entry_key_t key, uint64_t value) {
    tree_.btree_insert(key, reinterpret_cast<char*>(value));
  }
  bool lookup(entry_key_t key, uint64_t* value) {
    char* found = tree_.btree_search(key);
    *value = reinterpret_cast<uint64_t>(found);
    return found != nullptr;
  }
  // The search writes one value per pair found and does not say how many: the slot of the
  // last pair expected is cleared first and tells whether all of them came (0 if not).
  size_t scan(const ScanRange& range, size_t) {
    if (range.pairs == 0) return 0;
    buffer_[range.pairs - 1] = 0;
    tree_.btree_search_range(range.min, range.max, buffer_);
    return buffer_[range.pairs - 1] != 0 ? range.pairs : 0;
  }

 private:
  btree tree_;
  std::vector<entry_key_t> sorted_;
  unsigned long buffer_[peers::kScanLength * 2] = {};
};

}  // namespace

int main(int argc, char** argv) {
  const char* usage = "fastfair_drv N [load|lookup|insert|scan]";
  peers::Config config;
#ifdef PEERS_EADR
  config.label = "peer-fastfair eadr";
#else
  config.label = "peer-fastfair adr";
#endif
  peers::ParseRunArgs(argc, argv, 1, usage, &config);
  FastFairAdapter adapter;
  return peers::Run(adapter, config);
}
