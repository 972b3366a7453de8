// XPLineModel: a model of an Optane-style media controller's write-combining buffer.
//
// Optane DCPMM writes media in 256-byte XPLines. Its controller buffers recently written
// XPLines (Woo et al., IEEE Access 2021, call the effect "write combining"): a flushed cache
// line whose XPLine is in the buffer merges into it; otherwise the least recently used
// XPLine is written to media to make room. One media write is 256 bytes; it is a
// read-modify-write when fewer than all four of its cache lines were dirty (the controller
// must read the rest first).
//
// The model: 64 entries, LRU. A pool has one per thread (so single-threaded counts are
// deterministic and comparable across machines) or one shared by its threads under a lock
// (MediaModel, options.h). drain() writes back every buffered XPLine. Every line fed to
// the model is one WPQ insert (a 64-byte line reaching the memory controller); media writes
// are counted in XPLines (256 bytes = four 64-byte media-write units).
//
// Thread safety: none; the owner serialises (see persist.h).
#ifndef PMINDEX_PM_XPLINE_H_
#define PMINDEX_PM_XPLINE_H_

#include <cstddef>
#include <cstdint>

namespace pmindex::pm {

class XPLineModel {
 public:
  static constexpr size_t kEntries = 64;
  static constexpr size_t kXPLine = 256;

  XPLineModel() { reset(); }

  // Feeds `lines` consecutive cache lines starting at address `first_line` (64-aligned).
  void add_lines(uintptr_t first_line, size_t lines) {
    for (size_t i = 0; i < lines; ++i) add_line(first_line + i * 64);
  }
  void add_line(uintptr_t line) {
    __atomic_store_n(&wpq_inserts_, wpq_inserts_ + 1, __ATOMIC_RELAXED);
    const uint64_t tag = (line >> 8) + 1;  // +1: 0 marks an empty entry
    const uint8_t bit = static_cast<uint8_t>(1u << ((line >> 6) & 3));
    if (tags_[head_] == tag) {  // the common case: consecutive lines of one XPLine
      dirty_[head_] |= bit;
      return;
    }
    insert_slow(tag, bit);
  }
  // Writes back every buffered XPLine, least recently used first.
  void drain();

  // Counted by the owner only; read by other threads through relaxed loads.
  uint64_t media_writes() const { return __atomic_load_n(&media_writes_, __ATOMIC_RELAXED); }
  uint64_t media_rmw() const { return __atomic_load_n(&media_rmw_, __ATOMIC_RELAXED); }
  uint64_t wpq_inserts() const { return __atomic_load_n(&wpq_inserts_, __ATOMIC_RELAXED); }
  void reset();

 private:
  void insert_slow(uint64_t tag, uint8_t bit);
  static constexpr size_t kIndexSlots = 128;  // open addressing, load factor <= 1/2
  static size_t home(uint64_t tag) { return (tag * 0x9E3779B97F4A7C15ull) >> 57; }
  int find(uint64_t tag) const;
  void index_insert(uint64_t tag, uint8_t entry);
  void index_erase(uint64_t tag);
  void move_to_head(uint8_t i);
  void evict(uint8_t i);

  // Entries form a doubly linked ring in recency order: head_ is the most recently used,
  // prev_[head_] the least; empty entries sit at that end so they are taken first. A small
  // linear-probing hash table maps an XPLine tag to its entry, so hits and misses are O(1).
  alignas(64) uint64_t tags_[kEntries];
  uint8_t index_[kIndexSlots];  // entry + 1, 0 = empty slot
  uint8_t dirty_[kEntries];
  uint8_t prev_[kEntries];
  uint8_t next_[kEntries];
  uint8_t head_ = 0;
  uint64_t media_writes_ = 0;
  uint64_t media_rmw_ = 0;
  uint64_t wpq_inserts_ = 0;
};

}  // namespace pmindex::pm

#endif  // PMINDEX_PM_XPLINE_H_
