// FAST's write discipline, shared by the node writers and recovery.
#ifndef PMINDEX_BTREE_FASTFAIR_LINE_WRITER_H_
#define PMINDEX_BTREE_FASTFAIR_LINE_WRITER_H_

#include <cstdint>

#include "btree/hybrid/leaf_common.h"
#include "pm/mutant.h"
#include "pm/persist.h"

namespace pmindex::btree::fastfair {

inline constexpr uintptr_t kLine = pm::kCacheLine;
inline uintptr_t LineOf(const void* p) { return reinterpret_cast<uintptr_t>(p) & ~(kLine - 1); }

// FAST's write discipline: 8-byte stores in address order; the cache line the stores are in
// is flushed when they leave it, and fenced: one fence per line. What reaches media is then a
// prefix of the store sequence (node.h).
class LineWriter {
 public:
  enum class Kind : uint8_t { kShiftRight, kShiftLeft, kPlain };
  LineWriter(pm::PersistContext& pc, Kind kind) : pc_(pc), kind_(kind) {}

  void store(uint64_t* word, uint64_t v) {
    const uintptr_t line = LineOf(word);
    if (line != open_) {
      close();
      open_ = line;
      // Mutant: the authors' delete flushed a line as its shift entered it (testing the
      // slot offset against the line start), before the stores that follow in that line.
      if (kind_ == Kind::kShiftLeft && pm::mutant("fastfair.delete_flush_wrong_line")) {
        pc_.flush(word, 8);
      }
    }
    StoreRelease(*word, v);
  }
  // Flushes and fences the line the stores are in (nothing if none is open).
  void close() {
    if (open_ == 0) return;
    if (!skip_flush()) pc_.flush(reinterpret_cast<void*>(open_), kLine);
    pc_.fence();
    open_ = 0;
  }
  // Flushes the open line and the word `extra` (another line), then one fence for both.
  void close_with(const uint64_t* extra) {
    pc_.flush(extra, 8);
    if (open_ != 0 && !skip_flush()) pc_.flush(reinterpret_cast<void*>(open_), kLine);
    pc_.fence();
    open_ = 0;
  }
  uintptr_t open_line() const { return open_; }

 private:
  bool skip_flush() const {
    if (kind_ == Kind::kShiftRight) return pm::mutant("fastfair.skip_shift_flush");
    if (kind_ == Kind::kShiftLeft) return pm::mutant("fastfair.delete_flush_wrong_line");
    return false;
  }

  pm::PersistContext& pc_;
  Kind kind_;
  uintptr_t open_ = 0;
};

}  // namespace pmindex::btree::fastfair

#endif  // PMINDEX_BTREE_FASTFAIR_LINE_WRITER_H_
