// The FAST&FAIR node (Hwang et al., FAST 2018): one layout for leaves and inner nodes, all of
// them in the pool. Entries are sorted 16-byte slots (8-byte key, 8-byte value or child
// offset) that writers shift in place with 8-byte stores (FAST), in an order that keeps every
// intermediate state readable; this header holds the layout and the one rule that reads it.
//
// Layout (512 bytes, 8 cache lines; allocator class 512, 256-byte aligned; the index
// parameter node_bytes=256 makes every node of a pool 256 bytes, one XPLine: the header line
// and slot[0..11] in lines 1-3, the struct's later slots absent and never touched):
//
//   line 0  off  0  version   u64  volatile    pm::VersionLock word (pool generation)
//           off  8  seq       u64  volatile    odd while a delete or a split's truncation
//                                              runs (readers retry); reset by recovery
//           off 16  count     u64  persistent  entries in use | kNoOverflow (bit 63)
//           off 24  sibling   u64  persistent  pool offset of the right neighbour (0: none)
//           off 32  leftmost  u64  persistent  inner: child for keys < slot[0].key; leaf: 0
//           off 40  low_key   u64  persistent  lower bound of the node's keys (immutable)
//           off 48  level     u32  persistent  0 = leaf (immutable)
//           off 52  magic     u32  persistent  kNodeMagic (immutable)
//           off 56  pad       u64
//   line 1-7 off 64 slot[28]  16 B each: {key, value}; four slots per line
//
// The reading rule (Accept). FAST&FAIR ends the entries at a NULL pointer and detects the
// transient duplicate of a shift by two equal adjacent pointers; both break for arbitrary
// values (a value 0, two keys with one value). Here values are never inspected; keys are:
//
//   - count c says how many slots are in use; slot c (if c < slots, the node's capacity, and
//     kNoOverflow is clear)
//     is the OVERFLOW slot, read too: a shift in flight moves the last entry there first;
//   - a slot j < c whose key equals the key of slot j+1 (j+1 <= c, the overflow included) is
//     a stale copy: skipped (the right copy wins);
//   - the overflow slot is an entry if its key is >= the key of slot c-1, else a sentinel.
//
// Canonical (idle) node: slots [0,c) strictly increasing; slot c holds the SENTINEL, a key
// below slot c-1's (slot[c-1].key - 1); when that is impossible (c == 1, key 0) the count
// word carries kNoOverflow instead. Writers keep every instant readable under the rule:
//
//   insert at pos (n entries): sentinel at slot n+1 (outside the range); then right to left
//     slot j <- slot j-1 for j = n..pos+1, VALUE first, then key (between the two stores
//     slot j equals slot j+1's key and is skipped; after the key store slot j-1 is the
//     skipped copy); then slot pos value, then key; then count = n+1.
//   delete at pos: left to right slot j <- slot j+1, KEY first (slot j then equals slot j+1
//     and is skipped; the first key store is the removal); then count = n-1 (slot n-1, a copy
//     of slot n-2, becomes the overflow: an equal key, still the same entry); then the
//     sentinel key into slot n-1.
//
// Stores go in address order (decreasing for inserts, increasing for deletes), and the node's
// lines are flushed one at a time as the stores leave them, one fence per line (FAST). On
// x86 stores to one line become visible, and reach the persistence domain, in program order
// (TSO; a line is written back whole), so what a crash leaves is a prefix of the store
// sequence: one of the states above. FAST&FAIR rests on the same assumption; the crash
// campaign's torn-line images (every 8-byte word of a line independently old or new) deny it
// and are outside this design (doc/fastfair.md).
#ifndef PMINDEX_BTREE_FASTFAIR_NODE_H_
#define PMINDEX_BTREE_FASTFAIR_NODE_H_

#include <cstddef>
#include <cstdint>

#include "btree/hybrid/leaf_common.h"

namespace pmindex::btree::fastfair {

struct Slot {
  uint64_t key;
  uint64_t value;  // leaf: the value; inner: the child's pool offset
};
static_assert(sizeof(Slot) == 16);

inline constexpr uint32_t kNodeMagic = 0x4646524eu;  // "NRFF"

struct Node {
  // The slots of a 512-byte node, the most a node has (arrays of node views are this long).
  // A tree's nodes have `slots` of them (SlotsFor): at most slots - 1 entries, since an
  // insert needs the overflow slot and the sentinel after it.
  static constexpr size_t kSlots = 28;
  uint64_t version;
  uint64_t seq;
  uint64_t count;
  uint64_t sibling;
  uint64_t leftmost;
  uint64_t low_key;
  uint32_t level;
  uint32_t magic;
  uint64_t pad;
  Slot slot[kSlots];
};
static_assert(sizeof(Node) == 512);
static_assert(offsetof(Node, version) == 0 && offsetof(Node, seq) == 8);
static_assert(offsetof(Node, count) == 16 && offsetof(Node, sibling) == 24);
static_assert(offsetof(Node, leftmost) == 32 && offsetof(Node, low_key) == 40);
static_assert(offsetof(Node, level) == 48 && offsetof(Node, magic) == 52);
static_assert(offsetof(Node, slot) == 64);

// The slots of a node of `node_bytes` (512 or 256): all lines after the header line.
inline constexpr size_t SlotsFor(size_t node_bytes) {
  return (node_bytes - offsetof(Node, slot)) / sizeof(Slot);
}
static_assert(SlotsFor(512) == Node::kSlots && SlotsFor(256) == 12);

inline constexpr uint64_t kNoOverflow = uint64_t{1} << 63;
inline constexpr uint64_t kCountMask = 0xFFFF;

// The count word of a node whose entries are `n`, the last with key `last`.
inline uint64_t CountWord(size_t n, uint64_t last) {
  return n | (n == 1 && last == 0 ? kNoOverflow : 0);
}
// The sentinel key after a last key `last` (meaningless when CountWord flags kNoOverflow).
inline uint64_t SentinelKey(uint64_t last) { return last - 1; }

// A node's entries as the rule reads them, in key order, with the slot each came from.
struct View {
  size_t n = 0;
  uint64_t count_word = 0;
  uint64_t sibling = 0;
  uint64_t key[Node::kSlots];
  uint64_t value[Node::kSlots];
  uint8_t from[Node::kSlots];
};

// The slots a reader reads in a node of `slots`: [0, count) plus the overflow slot where
// there is one.
inline size_t ScannedSlots(uint64_t count_word, size_t slots) {
  const size_t c = count_word & kCountMask;
  if (c >= slots) return slots;
  if (c == 0 || (count_word & kNoOverflow)) return c;
  return c + 1;
}

// Reads a node's count and slots with acquire loads in increasing address order (a reader
// that meets a concurrent shift then sees one of the writer's intermediate states: see the
// header) and applies the rule. Under the writer's lock it is the writer's exact view.
// The count is read first and the slots in its frame: a lock-free caller checks afterwards
// that the count did not change (an insert that finished during the read may have been
// followed by one shifting in the next frame) and reads again if it did.
inline void ReadNode(const Node* node, size_t slots, View* v) {
  const uint64_t cw = LoadAcquire(node->count);
  v->count_word = cw;
  const size_t c = cw & kCountMask;
  const size_t m = ScannedSlots(cw, slots);
  uint64_t key[Node::kSlots + 1];
  uint64_t value[Node::kSlots + 1];
  for (size_t j = 0; j < m; ++j) {
    key[j] = LoadAcquire(node->slot[j].key);
    value[j] = LoadAcquire(node->slot[j].value);
  }
  size_t n = 0;
  const size_t in_range = c < m ? c : m;
  for (size_t j = 0; j < in_range; ++j) {
    if (j + 1 < m && key[j] == key[j + 1]) continue;  // a stale copy: the right one wins
    v->key[n] = key[j];
    v->value[n] = value[j];
    v->from[n] = static_cast<uint8_t>(j);
    ++n;
  }
  if (m > c && key[c] >= key[c - 1]) {  // the overflow slot holds an entry
    v->key[n] = key[c];
    v->value[n] = value[c];
    v->from[n] = static_cast<uint8_t>(c);
    ++n;
  }
  v->n = n;
  v->sibling = LoadAcquire(node->sibling);
}

// What a point probe of one node found: the last entry with a key <= the probed key.
struct Probe {
  uint64_t count_word = 0;
  uint64_t sibling = 0;
  bool found = false;  // an entry with key <= the probed key exists
  bool stopped = false;  // a key > the probed key followed it: no need to look right
  uint64_t key = 0;    // its key
  uint64_t value = 0;  // its value (leaf) or child (inner)
};

// The rule of ReadNode for one key, without copying the node: the slots are sorted up to
// stale copies (equal to their right neighbour, which wins) and the overflow slot (an entry
// only if its key is >= slot c-1's), so the last slot in [0, c) with a key <= k, or the
// overflow slot if it is an entry with such a key, is the entry. Key and value of each slot
// are loaded in increasing address order like ReadNode (a pair read in order is one the
// writer's state held), stopping at the first larger key.
inline void ProbeNode(const Node* node, size_t slots, uint64_t k, Probe* p) {
  const uint64_t cw = LoadAcquire(node->count);
  const size_t c = cw & kCountMask;
  const size_t m = ScannedSlots(cw, slots);
  const size_t in_range = c < m ? c : m;
  // The result lives in locals until the end: stores to *p inside the loop would each be
  // kept in order with the acquire loads around them (one store per field per slot).
  bool found = false;
  bool stopped = false;
  uint64_t found_key = 0;
  uint64_t found_value = 0;
  size_t j = 0;
  for (; j < in_range; ++j) {
    const uint64_t key = LoadAcquire(node->slot[j].key);
    if (key > k) {
      stopped = true;
      break;
    }
    found_value = LoadAcquire(node->slot[j].value);
    found_key = key;
    found = true;
  }
  if (j == in_range && m > c) {  // every in-range key <= k: the overflow slot may be one
    const uint64_t key = LoadAcquire(node->slot[c].key);
    if (key >= found_key && key <= k) {
      found_value = LoadAcquire(node->slot[c].value);
      found_key = key;
      found = true;
    }
  }
  p->count_word = cw;
  p->found = found;
  p->stopped = stopped;
  p->key = found_key;
  p->value = found_value;
  p->sibling = LoadAcquire(node->sibling);
}

// The entries of a canonical node (the writer's own, under its lock): slots [0, count) as
// they are, no rule to apply.
inline void ReadLocked(const Node* node, size_t slots, View* v) {
  const uint64_t cw = Load(node->count);
  v->count_word = cw;
  const size_t c = cw & kCountMask;
  v->n = c < slots ? c : slots;
  for (size_t j = 0; j < v->n; ++j) {
    v->key[j] = Load(node->slot[j].key);
    v->value[j] = Load(node->slot[j].value);
    v->from[j] = static_cast<uint8_t>(j);
  }
  v->sibling = Load(node->sibling);
}

// True if the node is canonical (idle): what every writer expects under its lock.
inline bool Canonical(const Node* node, size_t slots, const View& v) {
  const uint64_t cw = Load(node->count);
  const size_t c = cw & kCountMask;
  if (c != v.n || c + 1 > slots) return false;
  for (size_t i = 0; i < v.n; ++i) {
    if (v.from[i] != i) return false;
  }
  if (c == 0) return (cw & kNoOverflow) == 0;
  if (cw != CountWord(c, v.key[c - 1])) return false;
  return (cw & kNoOverflow) || Load(node->slot[c].key) < v.key[c - 1];
}

}  // namespace pmindex::btree::fastfair

#endif  // PMINDEX_BTREE_FASTFAIR_NODE_H_
