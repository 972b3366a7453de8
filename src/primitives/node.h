// The node organisations of Götze et al. ("disassembling" PM data structures) as components:
// one node layout per organisation, a runtime node size (256 B .. 4 KiB), 8-byte keys and
// 16-byte values in separate cache-aligned arrays, and the access primitives the paper
// measures (search, insert, erase, iterate, split by move or copy, merge, balance).
//
// Every store a primitive makes goes through Node::Put, which counts the bytes it modifies,
// and every write-back through the project's persist seam (pm::PersistContext), so an
// operation yields bytes modified, flushed lines, fences and (with the media model) XPLine
// media writes. Persist::kNone stores without flushing (the "no FA" column and the fills).
//
// Layout (M = capacity, W = ceil(M/64) bitmap words, J = header lines; the header is padded
// to 64*J bytes, keys start at 64*J, values at 64*J + 8*M):
//
//   sorted / unsorted   off 0 count u64 | 8 next u64 | 16 prev u64 | pad to 64
//   unsorted+bitmap     off 0 bitmap u64[W] | count u64 | next u64 | prev u64 | pad
//   bitmap              off 0 bitmap u64[W] | next u64 | prev u64 | pad
//   hashing             off 0 bitmap u64[W] | next u64 | prev u64 | hash u8[M] | pad
//   indirection         off 0 bitmap u64[W] | next u64 | prev u64 | n u8 | slot u8[M] | pad
//   all                 64*J: key u64[M] | 64*J + 8*M: value {u64,u64}[M]
//
// M is the largest capacity whose header and arrays fit the node size (Capacity()); the
// static_asserts below pin the paper's Table 4 figures this gives.
//
// Crash arguments (Persist::kIndividual, one writer per node):
//  - bitmap, hashing, unsorted+bitmap: a pair (and its hash) is durable before its bit is
//    set by one 8-byte store; erase clears one bit. The bitmap is the only commit.
//    unsorted+bitmap's count is a hint in the bitmap's line (recovery: highest bit + 1).
//  - indirection: pair, then bit (the commit), then the slot array, which recovery rebuilds
//    from the bitmap and keys when it disagrees (wB+-Tree's slot-array rule).
//  - unsorted: the pair is durable before count (8-byte store) covers it; erase moves the
//    last pair into the gap before count shrinks: a crash between them leaves a duplicate of
//    the last pair, which recovery drops (count is the commit).
//  - sorted: shifting is not failure-atomic (as in the paper's measurement: the lab measures
//    the write cost of keeping order; a real sorted PM node needs a log or FAST&FAIR's rule).
#ifndef PMINDEX_PRIMITIVES_NODE_H_
#define PMINDEX_PRIMITIVES_NODE_H_

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string_view>
#include <vector>

#include "pm/mix64.h"
#include "pm/persist.h"

namespace pmindex::primitives {

using Key = uint64_t;
struct Value {
  uint64_t a;
  uint64_t b;
  bool operator==(const Value&) const = default;
};
static_assert(sizeof(Value) == 16);

enum class Org : uint8_t { kSorted, kUnsorted, kUnsortedBitmap, kIndirection, kHashing, kBitmap };
inline constexpr Org kAllOrgs[] = {Org::kSorted,      Org::kUnsorted, Org::kUnsortedBitmap,
                                   Org::kIndirection, Org::kHashing,  Org::kBitmap};
std::string_view OrgName(Org org);
bool ParseOrg(std::string_view name, Org* out);

enum class Persist : uint8_t { kNone, kIndividual };
enum class Search : uint8_t { kDefault, kBinary, kLinear };
enum class SplitMode : uint8_t { kMove, kCopy };

inline constexpr size_t kMaxNodeBytes = 4096;
inline constexpr size_t kMinNodeBytes = 256;

// Where each field of an organisation's node lies for one node size.
struct Layout {
  Org org = Org::kSorted;
  size_t node_bytes = 0;
  size_t capacity = 0;      // M
  size_t words = 0;         // bitmap words (0: no bitmap)
  size_t count_off = SIZE_MAX;
  size_t next_off = 0;
  size_t prev_off = 0;
  size_t aux_off = SIZE_MAX;  // hash bytes, or slot array (n byte + M slot bytes)
  size_t header_bytes = 0;  // 64*J
  size_t keys_off = 0;
  size_t values_off = 0;
};

constexpr size_t RoundUp64(size_t n) { return (n + 63) / 64 * 64; }

// Header bytes (before padding) of `org` at capacity m.
constexpr size_t HeaderBytes(Org org, size_t m) {
  const size_t words = 8 * ((m + 63) / 64);
  switch (org) {
    case Org::kSorted:
    case Org::kUnsorted: return 24;
    case Org::kUnsortedBitmap: return words + 24;
    case Org::kBitmap: return words + 16;
    case Org::kHashing: return words + 16 + m;
    case Org::kIndirection: return words + 16 + 1 + m;
  }
  return 0;
}

// The largest capacity of `org` in a node of `bytes`.
constexpr size_t Capacity(Org org, size_t bytes) {
  size_t best = 0;
  for (size_t m = 1; m <= bytes / 24; ++m)
    if (RoundUp64(HeaderBytes(org, m)) + 24 * m <= bytes) best = m;
  return best;
}
// Table 4's "base" row: a packed 40-byte header (count, next, prev, no alignment).
constexpr size_t BaseCapacity(size_t bytes) { return (bytes - 40) / 24; }

static_assert(BaseCapacity(256) == 9 && BaseCapacity(4096) == 169);
static_assert(Capacity(Org::kSorted, 256) == 8 && Capacity(Org::kSorted, 512) == 18 &&
              Capacity(Org::kSorted, 1024) == 40 && Capacity(Org::kSorted, 2048) == 82 &&
              Capacity(Org::kSorted, 4096) == 168);
static_assert(Capacity(Org::kBitmap, 4096) == 168 && Capacity(Org::kUnsortedBitmap, 4096) == 168);
// The search-structure layouts. The paper's Table 4 row is 8/18/37/79/160: its layout details
// are not given; ours fit 2 more pairs at 1 KiB and 1 more at 2 KiB (doc/primitives.md).
static_assert(Capacity(Org::kHashing, 256) == 8 && Capacity(Org::kHashing, 512) == 18 &&
              Capacity(Org::kHashing, 1024) == 40 && Capacity(Org::kHashing, 2048) == 80 &&
              Capacity(Org::kHashing, 4096) == 160);
static_assert(Capacity(Org::kIndirection, 256) == 8 && Capacity(Org::kIndirection, 512) == 18 &&
              Capacity(Org::kIndirection, 1024) == 39 &&
              Capacity(Org::kIndirection, 2048) == 80 &&
              Capacity(Org::kIndirection, 4096) == 160);
// The paper's row, for the table's comparison column.
inline constexpr size_t kPaperSearchStructure[] = {8, 18, 37, 79, 160};

Layout MakeLayout(Org org, size_t node_bytes);

// Per-operation cost the primitive reports (the seam's counters come on top).
struct OpCost {
  uint64_t bytes_modified = 0;
};

// One node of `layout` at `base` (64-aligned, node_bytes long), persisted through `ctx`.
class Node {
 public:
  Node(const Layout* layout, char* base, pm::PersistContext* ctx, Persist persist)
      : l_(layout), b_(base), ctx_(ctx), persist_(persist) {}

  const Layout& layout() const { return *l_; }
  char* base() const { return b_; }
  OpCost& cost() { return cost_; }

  // Formats an empty node (not counted).
  void Format();
  size_t Size() const;
  bool Full() const { return Size() == l_->capacity; }

  // Physical index of `key`, or -1. kDefault: the organisation's own primitive (binary for
  // sorted, slot-array binary for indirection, hash probe for hashing, linear otherwise).
  int Find(Key key, Search how = Search::kDefault) const;
  bool Get(Key key, Value* v) const;
  // False when full or present.
  bool Insert(Key key, const Value& v);
  // Erases the pair at physical index i (from Find).
  void EraseAt(int i);
  bool Erase(Key key);
  // Calls fn(key, value) for every pair: in physical order, or via the slot array.
  void Iterate(const std::function<void(Key, const Value&)>& fn, bool via_slots = false) const;
  // Key sum over the pairs (the iterate experiment's loop, no std::function).
  uint64_t SumKeys(bool via_slots = false) const;
  // Moves the upper half (keys above the median) to the empty node `dst`.
  void Split(Node& dst, SplitMode mode);
  // Appends every pair of `src` (all keys larger) to this node; src is left as is.
  void MergeFrom(const Node& src);
  // Moves `n` pairs from this node to `dst`: the largest when `largest`, else the smallest.
  void MoveTo(Node& dst, size_t n, bool largest);
  // Pairs in key order (tests, verify).
  std::vector<std::pair<Key, Value>> Sorted() const;
  // True when the node's invariants hold (order, slot array, count, hashes).
  bool Verify() const;

  Key KeyAt(size_t i) const { return Keys()[i]; }
  Value ValueAt(size_t i) const { return Values()[i]; }
  bool Live(size_t i) const;

  static uint8_t Hash(Key k) { return static_cast<uint8_t>(pm::Mix64(k) | 1); }

 private:
  Key* Keys() const { return reinterpret_cast<Key*>(b_ + l_->keys_off); }
  Value* Values() const { return reinterpret_cast<Value*>(b_ + l_->values_off); }
  uint64_t* Bitmap() const { return reinterpret_cast<uint64_t*>(b_); }
  uint64_t* Count() const { return reinterpret_cast<uint64_t*>(b_ + l_->count_off); }
  uint8_t* Aux() const { return reinterpret_cast<uint8_t*>(b_ + l_->aux_off); }
  uint8_t* Slots() const { return Aux() + 1; }
  uint8_t SlotCount() const { return Aux()[0]; }
  bool HasBitmap() const { return l_->words != 0; }

  // The counted store, write-back and fence every primitive uses.
  void Put(void* dst, const void* src, size_t n) {
    std::memmove(dst, src, n);
    cost_.bytes_modified += n;
  }
  template <class T>
  void PutWord(T* dst, T v) {
    Put(dst, &v, sizeof(T));
  }
  void Flush(const void* p, size_t n) {
    if (persist_ == Persist::kIndividual && n != 0) ctx_->flush(p, n);
  }
  void Fence() {
    if (persist_ == Persist::kIndividual) ctx_->fence();
  }

  int FreeBit() const;
  void SetBit(size_t i, bool on);
  int LinearFind(Key key) const;
  int BinaryFind(Key key) const;
  int IndirectFind(Key key) const;
  int HashFind(Key key) const;
  size_t LowerBound(Key key) const;  // sorted: first index with key >= `key`
  size_t SlotLowerBound(Key key) const;
  void WritePair(size_t i, Key key, const Value& v);
  bool InsertSorted(Key key, const Value& v);
  bool InsertUnsorted(Key key, const Value& v);
  bool InsertBitmapped(Key key, const Value& v);
  void EraseSorted(size_t i);
  void EraseUnsorted(size_t i);
  void EraseBitmapped(size_t i);
  void SplitCopy(Node& dst, Key median);
  void SplitMove(Node& dst, Key median);
  void CompactAfterSplit(Key median);
  void SetSlots(const uint8_t* slots, size_t n);
  void Publish(size_t i);  // after WritePair(i): commit it (bit, count, slot array)

  const Layout* l_;
  char* b_;
  pm::PersistContext* ctx_;
  Persist persist_;
  OpCost cost_;
};

}  // namespace pmindex::primitives

#endif  // PMINDEX_PRIMITIVES_NODE_H_
