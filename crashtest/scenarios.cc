#include "crashtest/scenarios.h"

#include <algorithm>

#include "pm/mix64.h"

namespace pmindex::crashtest {
namespace {

Op Make(OpKind kind, std::string key, std::string value = {}) {
  Op op;
  op.kind = kind;
  op.key = std::move(key);
  op.value = std::move(value);
  if (kind == OpKind::kScan) op.scan_count = 1000;
  return op;
}

std::string IK(uint64_t k) { return std::string(IntKey(k).view()); }
std::string IV(uint64_t v) { return std::string(IntValue(v)); }

bool CreateCrash(const IndexTraits&, uint64_t, std::vector<Op>* ops) {
  for (uint64_t k = 1; k <= 3; ++k) ops->push_back(Make(OpKind::kInsert, IK(k * 7), IV(k)));
  ops->push_back(Make(OpKind::kScan, IK(0)));  // a lookup on unordered indexes (ScenarioOps)
  return true;
}

// Fill one node with even keys, then insert odd keys at the front so every insert shifts the
// whole node; delete each right after, and look it up.
bool ShiftDeleteDuplicate(const IndexTraits&, uint64_t, std::vector<Op>* ops) {
  for (uint64_t k = 2; k <= 40; k += 2) ops->push_back(Make(OpKind::kInsert, IK(k), IV(k)));
  for (uint64_t k = 1; k <= 13; k += 4) {
    ops->push_back(Make(OpKind::kInsert, IK(k), IV(1000 + k)));
    ops->push_back(Make(OpKind::kRemove, IK(k)));
    ops->push_back(Make(OpKind::kLookup, IK(k)));
    ops->push_back(Make(OpKind::kScan, IK(0)));
  }
  return true;
}

bool CountVsEntries(const IndexTraits&, uint64_t, std::vector<Op>* ops) {
  for (uint64_t k = 1; k <= 24; ++k) ops->push_back(Make(OpKind::kInsert, IK(k * 3), IV(k)));
  for (uint64_t k = 1; k <= 24; k += 3) {
    ops->push_back(Make(OpKind::kRemove, IK(k * 3)));
    ops->push_back(Make(OpKind::kScan, IK(0)));
    ops->push_back(Make(OpKind::kUpsert, IK(k * 3 + 1), IV(500 + k)));
  }
  return true;
}

// Grow one radix node through every size (4, 16, 48, 256 children), then split a compressed
// path by keys that share a long prefix and diverge at different depths.
bool HeaderChildTwoStores(const IndexTraits& traits, uint64_t, std::vector<Op>* ops) {
  for (uint64_t b = 0; b < 60; ++b) ops->push_back(Make(OpKind::kInsert, IK((b * 4) << 8), IV(b)));
  for (uint64_t d = 0; d < 6; ++d) {
    const uint64_t k = 0x1122334455667788ull ^ (uint64_t{0x10} << (8 * d));
    ops->push_back(Make(OpKind::kInsert, IK(k), IV(100 + d)));
  }
  if (traits.byte_keys) {
    for (const char* k : {"prefix/aaaa/1", "prefix/aaaa/2", "prefix/aab", "prefix/b", "pre"})
      ops->push_back(Make(OpKind::kInsert, std::string(k), IV(7)));
  }
  ops->push_back(Make(OpKind::kScan, IK(0)));
  return true;
}

// Sequential inserts force a split every node's worth; interleaved removes touch both halves
// of each split.
bool SplitSiblingEarly(const IndexTraits&, uint64_t seed, std::vector<Op>* ops) {
  const uint64_t n = 400;
  for (uint64_t k = 1; k <= n; ++k) {
    ops->push_back(Make(OpKind::kInsert, IK(k), IV(k + seed)));
    if (k % 37 == 0) ops->push_back(Make(OpKind::kRemove, IK(k / 2)));
  }
  ops->push_back(Make(OpKind::kScan, IK(0)));
  return true;
}

bool UpdateInPlace(const IndexTraits&, uint64_t seed, std::vector<Op>* ops) {
  for (uint64_t k = 1; k <= 40; ++k) ops->push_back(Make(OpKind::kInsert, IK(k * 5), IV(k)));
  for (uint64_t round = 1; round <= 4; ++round) {
    for (uint64_t k = 1; k <= 40; k += 3) {
      ops->push_back(Make(round % 2 ? OpKind::kUpdate : OpKind::kUpsert, IK(k * 5),
                          IV(round * 1000 + k + seed)));
      ops->push_back(Make(OpKind::kLookup, IK(k * 5)));
    }
  }
  ops->push_back(Make(OpKind::kScan, IK(0)));
  return true;
}

// Enough keys under one long prefix that their leaf array splits (a node with that prefix),
// then keys that leave the prefix at one byte, each with a new byte there: a Node4 from the
// prefix split, grown in place to 4, copied to a Node16, grown in place to 16, copied to a
// Node48.
bool NodeInsertInPlace(const IndexTraits& traits, uint64_t seed, std::vector<Op>* ops) {
  if (!traits.byte_keys) return false;
  const std::string pad(40, 'p');
  for (uint64_t i = 0; i < 200; ++i)
    ops->push_back(Make(OpKind::kInsert, "grow/prefix/" + std::to_string(1000 + i) + pad, IV(i)));
  for (uint64_t c = 0; c < 24; ++c) {
    const std::string k = "grow/" + std::string(1, static_cast<char>('A' + c)) + "x";
    ops->push_back(Make(OpKind::kInsert, k, IV(500 + c + seed)));
    ops->push_back(Make(OpKind::kLookup, k));
  }
  ops->push_back(Make(OpKind::kScan, std::string("grow/")));
  return true;
}

// Keys below one first byte, spread uniformly over the second, with values long enough that
// about 80 fill a leaf array: the leaf array splits into runs of second bytes, its runs split
// again, past 48 of them the node becomes a Node256; then every key of the lowest runs is
// removed, and some come back.
bool SplitRuns(const IndexTraits& traits, uint64_t seed, std::vector<Op>* ops) {
  auto key = [](uint64_t i) {
    uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    return IK((x >> 8) | (uint64_t{0x5A} << 56));
  };
  const size_t pad = traits.max_value_size > 8 ? std::min<size_t>(52, traits.max_value_size - 8) : 0;
  const uint64_t n = 4000;
  for (uint64_t i = 0; i < n; ++i)
    ops->push_back(Make(OpKind::kInsert, key(i), IV(i + seed) + std::string(pad, 'r')));
  auto low_run = [](const std::string& k) { return static_cast<uint8_t>(k[1]) < 0x30; };
  for (uint64_t i = 0; i < n; ++i) {
    if (low_run(key(i))) ops->push_back(Make(OpKind::kRemove, key(i)));
  }
  for (uint64_t i = 0; i < n; i += 7) {
    if (low_run(key(i))) ops->push_back(Make(OpKind::kInsert, key(i), IV(i)));
  }
  ops->push_back(Make(OpKind::kScan, IK(0)));
  return true;
}

// Nodes emptied down to one entry, which then takes the node's place in its parent: a leaf,
// or a node whose header is rewritten for its new depth after the swap. Groups of keys under
// long shared prefixes, each group's node collapsing as all but one key (or one sub-group)
// is removed, then keys that split the collapsed prefixes again.
bool Collapse(const IndexTraits& traits, uint64_t seed, std::vector<Op>* ops) {
  for (uint64_t g = 0; g < 4; ++g) {
    for (uint64_t i = 0; i < 6; ++i) {
      const uint64_t k = (g << 56) | (uint64_t{0xAB} << 40) | (i << 16) | (i == 5 ? 0x77 : 0);
      ops->push_back(Make(OpKind::kInsert, IK(k), IV(k + seed)));
    }
    ops->push_back(Make(OpKind::kInsert, IK((g << 56) | 0x99), IV(g)));
  }
  for (uint64_t g = 0; g < 4; ++g) {
    ops->push_back(Make(OpKind::kRemove, IK((g << 56) | 0x99)));  // a node moves up
    ops->push_back(Make(OpKind::kLookup, IK((g << 56) | (uint64_t{0xAB} << 40))));
    for (uint64_t i = 0; i < 5; ++i)
      ops->push_back(Make(OpKind::kRemove, IK((g << 56) | (uint64_t{0xAB} << 40) | (i << 16))));
    ops->push_back(Make(OpKind::kInsert, IK((g << 56) | (uint64_t{0xAC} << 40)), IV(9)));
  }
  if (traits.byte_keys) {
    for (const char* k : {"c/long/prefix/1", "c/long/prefix/2", "c/long/pre", "c/x", "c"})
      ops->push_back(Make(OpKind::kInsert, std::string(k), IV(3)));
    for (const char* k : {"c/x", "c", "c/long/pre", "c/long/prefix/1"})
      ops->push_back(Make(OpKind::kRemove, std::string(k)));
    ops->push_back(Make(OpKind::kInsert, std::string("c/long/p"), IV(4)));
  }
  ops->push_back(Make(OpKind::kScan, IK(0)));
  return true;
}

// Sequential inserts that split the root twice (one leaf, then two levels, then three), with
// lookups of the keys on either side of each split and a few removes.
bool RootSplit(const IndexTraits&, uint64_t seed, std::vector<Op>* ops) {
  const uint64_t n = 420;
  for (uint64_t k = 1; k <= n; ++k) {
    ops->push_back(Make(OpKind::kInsert, IK(k * 2), IV(k + seed)));
    if (k % 29 == 0) {
      ops->push_back(Make(OpKind::kLookup, IK(k)));
      ops->push_back(Make(OpKind::kRemove, IK(k * 2 - 20)));
    }
  }
  ops->push_back(Make(OpKind::kScan, IK(0)));
  return true;
}

// One node filled to 26 entries, then an insert at every position and its removal: every
// shift right and left starts at every slot and crosses every cache-line boundary of the node;
// then two more inserts split it at a line boundary.
bool LineBoundary(const IndexTraits&, uint64_t seed, std::vector<Op>* ops) {
  for (uint64_t k = 1; k <= 26; ++k) ops->push_back(Make(OpKind::kInsert, IK(k * 100), IV(k)));
  for (uint64_t pos = 0; pos <= 26; ++pos) {
    const uint64_t k = pos * 100 + 50;
    ops->push_back(Make(OpKind::kInsert, IK(k), IV(1000 + pos + seed)));
    ops->push_back(Make(OpKind::kRemove, IK(k)));
    ops->push_back(Make(OpKind::kLookup, IK(k + 50)));
  }
  ops->push_back(Make(OpKind::kInsert, IK(1250), IV(7)));
  ops->push_back(Make(OpKind::kInsert, IK(1350), IV(8)));
  ops->push_back(Make(OpKind::kScan, IK(0)));
  return true;
}

// ROART's structural changes, each driven on purpose (keys big-endian: byte 0 first).
uint64_t Bytes2(uint8_t b0, uint8_t b1, uint64_t low) {
  return uint64_t{b0} << 56 | uint64_t{b1} << 48 | (low & 0xFFFFFFFFFFFFull);
}

// A second key under a byte whose slot holds a leaf: the two become a leaf array; values of
// other lengths replace a leaf; removing one of two leaves the array, both unlinks it.
bool RoartCompaction(const IndexTraits& traits, uint64_t seed, std::vector<Op>* ops) {
  for (uint64_t b = 1; b <= 24; ++b) {
    ops->push_back(Make(OpKind::kInsert, IK(Bytes2(static_cast<uint8_t>(b), 1, b)), IV(b)));
    ops->push_back(Make(OpKind::kInsert, IK(Bytes2(static_cast<uint8_t>(b), 2, b)), IV(b + seed)));
  }
  for (uint64_t b = 1; b <= 24; b += 3) {
    ops->push_back(Make(OpKind::kRemove, IK(Bytes2(static_cast<uint8_t>(b), 1, b))));
    if (b % 2) ops->push_back(Make(OpKind::kRemove, IK(Bytes2(static_cast<uint8_t>(b), 2, b))));
    if (traits.byte_keys)
      ops->push_back(Make(OpKind::kUpsert, IK(Bytes2(static_cast<uint8_t>(b + 1), 2, b + 1)),
                          std::string(20, 'v')));
    ops->push_back(Make(OpKind::kScan, IK(0)));
  }
  return true;
}

// One byte's keys spread over a few second bytes: its leaf array fills (64) and splits into a
// node over leaf arrays, which fill and split again at the next depth.
bool RoartLeafArraySplit(const IndexTraits&, uint64_t seed, std::vector<Op>* ops) {
  for (uint64_t i = 0; i < 330; ++i) {
    const uint64_t x = pm::Mix64(i + 17 * seed);
    ops->push_back(Make(OpKind::kInsert, IK(Bytes2(0x5A, static_cast<uint8_t>(i % 3), x >> 16)), IV(i)));
    if (i % 50 == 49) ops->push_back(Make(OpKind::kScan, IK(Bytes2(0x5A, 0, 0))));
  }
  return true;
}

// A split leaves a Node4 over two leaf arrays; new second bytes, one by one, grow it in place
// and by copy to a Node16, a Node48 and a Node256.
bool RoartNodeGrowth(const IndexTraits&, uint64_t seed, std::vector<Op>* ops) {
  for (uint64_t x = 0; x < 33; ++x) {
    for (uint8_t c = 0; c < 2; ++c)
      ops->push_back(Make(OpKind::kInsert, IK(Bytes2(0x33, c, x * 977)), IV(x + seed)));
  }
  for (uint64_t c = 2; c < 256; c += 2) {
    ops->push_back(Make(OpKind::kInsert, IK(Bytes2(0x33, static_cast<uint8_t>(c), c)), IV(c)));
    if (c % 40 == 0) ops->push_back(Make(OpKind::kScan, IK(Bytes2(0x33, 0, 0))));
  }
  return true;
}

// Keys sharing a long prefix: their leaf array splits into a node with that prefix; keys that
// leave it at each of its positions split the prefix (minimally ordered split).
bool RoartPrefixSplit(const IndexTraits& traits, uint64_t seed, std::vector<Op>* ops) {
  const uint64_t base = 0x4455667788990000ull;
  for (uint64_t x = 0; x < 66; ++x)
    ops->push_back(Make(OpKind::kInsert, IK(base | (x * 3)), IV(x + seed)));
  for (int d = 1; d <= 6; ++d) {
    const uint64_t k = base ^ (uint64_t{0x01} << (8 * (7 - d)));
    ops->push_back(Make(OpKind::kInsert, IK(k), IV(100 + d)));
    ops->push_back(Make(OpKind::kLookup, IK(base | 3)));
  }
  if (traits.byte_keys) {
    const std::string pad(30, 'q');
    for (int i = 0; i < 66; ++i)
      ops->push_back(Make(OpKind::kInsert, "split/" + pad + std::to_string(100 + i), IV(i)));
    for (const char* k : {"split/", "split/qq", "split/qqqqqqqqqqqqqqqqqqqz", "spl"})
      ops->push_back(Make(OpKind::kInsert, std::string(k), IV(7)));
  }
  ops->push_back(Make(OpKind::kScan, IK(0)));
  return true;
}

// Removes that leave a leaf array or nodes without keys: the highest empty subtree is unlinked
// by one store (a leaf array of two gives its place to its other leaf); then keys come back.
bool RoartUnlink(const IndexTraits& traits, uint64_t seed, std::vector<Op>* ops) {
  std::vector<std::string> keys;
  for (uint64_t x = 0; x < 80; ++x) keys.push_back(IK(Bytes2(0x21, static_cast<uint8_t>(x % 2), x << 20)));
  for (uint64_t x = 0; x < 6; ++x) keys.push_back(IK(Bytes2(0x22, 7, x)));
  if (traits.byte_keys) {
    for (const char* k : {"u", "uv", "uvw", "uvwx", "uvwxyz1", "uvwxyz2"}) keys.emplace_back(k);
  }
  for (const std::string& k : keys) ops->push_back(Make(OpKind::kInsert, k, IV(seed)));
  for (const std::string& k : keys) {
    ops->push_back(Make(OpKind::kRemove, k));
    if (k.size() != 8) ops->push_back(Make(OpKind::kScan, std::string("u")));
  }
  // Half come back: leaf arrays grow again into blocks that held others (old bytes).
  for (size_t i = 0; i < keys.size(); i += 2) ops->push_back(Make(OpKind::kInsert, keys[i], IV(i)));
  ops->push_back(Make(OpKind::kScan, IK(0)));
  return true;
}

// Grows a hash table from one small segment: inserts split segments and double the
// directory several times; updates, removes and re-inserts in between touch pairs that
// splits moved (and stale copies left behind), before and after each split.
bool CcehSplitDoubling(const IndexTraits&, uint64_t seed, std::vector<Op>* ops) {
  const uint64_t n = 160;
  for (uint64_t i = 1; i <= n; ++i) {
    const uint64_t k = pm::Mix64(seed * 1000 + i);
    ops->push_back(Make(OpKind::kInsert, IK(k), IV(i)));
    if (i % 9 == 0) ops->push_back(Make(OpKind::kUpdate, IK(pm::Mix64(seed * 1000 + i / 2)), IV(n + i)));
    if (i % 13 == 0) ops->push_back(Make(OpKind::kRemove, IK(pm::Mix64(seed * 1000 + i / 3))));
    if (i % 26 == 0) ops->push_back(Make(OpKind::kUpsert, IK(pm::Mix64(seed * 1000 + i / 3)), IV(2 * n + i)));
  }
  ops->push_back(Make(OpKind::kLookup, IK(pm::Mix64(seed * 1000 + 1))));
  return true;
}

// A hash table that starts small (P-CLHT: 1 bucket) grows by resizes that copy every chain:
// inserts until it has resized several times with overflow chains in the new tables, keys
// removed and upserted between resizes (emptied slots refilled, copies of updated values),
// key 0 and the largest key among them, and lookups after each round.
bool HashResize(const IndexTraits&, uint64_t seed, std::vector<Op>* ops) {
  std::vector<uint64_t> keys = {0, UINT64_MAX};
  for (uint64_t i = 1; i <= 70; ++i) {
    keys.push_back(pm::Mix64(seed * 1000 + i) >> (i % 3 == 0 ? 40 : 0));
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    ops->push_back(Make(OpKind::kInsert, IK(keys[i]), IV(i)));
    if (i % 9 == 4) ops->push_back(Make(OpKind::kRemove, IK(keys[i - 3])));
    if (i % 9 == 7) ops->push_back(Make(OpKind::kUpsert, IK(keys[i - 1]), IV(1000 + i)));
    if (i % 9 == 8) ops->push_back(Make(OpKind::kLookup, IK(keys[i - 7])));
  }
  for (size_t i = 0; i < keys.size(); i += 4) {
    ops->push_back(Make(OpKind::kUpdate, IK(keys[i]), IV(2000 + i)));
  }
  return true;
}

// A small hash table filled well past its first sizes: every insert that finds its buckets
// full moves an item (inside a level or bottom-to-top) or resizes the table in place (level
// hashing); removes, updates and re-inserts between the growth steps.
bool HashMovesAndResizes(const IndexTraits&, uint64_t seed, std::vector<Op>* ops) {
  for (uint64_t i = 0; i < 160; ++i) {
    const uint64_t k = pm::Mix64(i + 1000 * seed) >> 8;
    ops->push_back(Make(OpKind::kInsert, IK(k), IV(i)));
    const uint64_t earlier = pm::Mix64(i - (i % 7 == 6 ? 3 : 5) + 1000 * seed) >> 8;
    if (i % 7 == 6) ops->push_back(Make(OpKind::kRemove, IK(earlier)));
    if (i % 11 == 10) ops->push_back(Make(OpKind::kUpsert, IK(earlier), IV(5000 + i)));
    if (i % 40 == 39) ops->push_back(Make(OpKind::kLookup, IK(k)));
  }
  return true;
}

// A hash table grown from one segment: splits, directory doublings, displacements and stash
// inserts, then a third removed and half of those back (into slots and stash space freed).
bool DashSegmentSplit(const IndexTraits&, uint64_t seed, std::vector<Op>* ops) {
  std::vector<std::string> keys;
  for (uint64_t x = 0; x < 120; ++x) keys.push_back(IK(x % 3 == 0 ? x : pm::Mix64(seed + x)));
  for (const std::string& k : keys) ops->push_back(Make(OpKind::kInsert, k, IV(seed)));
  for (size_t i = 0; i < keys.size(); i += 3) ops->push_back(Make(OpKind::kRemove, keys[i]));
  for (size_t i = 0; i < keys.size(); i += 6) ops->push_back(Make(OpKind::kUpsert, keys[i], IV(i)));
  return true;
}

}  // namespace

const std::vector<Scenario>& Scenarios() {
  static const std::vector<Scenario>* s = new std::vector<Scenario>{
      {"create-crash",
       "constructors that never persisted their root or header (FAST&FAIR, CCEH and level "
       "hashing as released; found by Witcher and PMDebugger): crash at every fence of index "
       "creation and of the first inserts",
       true, &CreateCrash},
      {"shift-delete-duplicate",
       "FAST&FAIR's shifting insert leaves a transient duplicate entry; a crash mid-shift "
       "followed by a delete of that key removed one copy and the key reappeared (Witcher)",
       false, &ShiftDeleteDuplicate},
      {"count-vs-entries",
       "a leaf whose entry count or bitmap persists separately from its entries (NV-Tree's "
       "count, FPTree's bitmap): after a crash a scan disagreed with point lookups",
       false, &CountVsEntries},
      {"header-child-two-stores",
       "WOART committed a node header and a child pointer in two separate stores; a crash in "
       "between left a node whose header and children disagree (found by RECIPE/Witcher)",
       false, &HeaderChildTwoStores},
      {"split-sibling-early",
       "a split that links the new sibling before the parent (or the leaf list) knows it; a "
       "crash in between loses or duplicates the moved keys (FAST&FAIR, FPTree)",
       false, &SplitSiblingEarly},
      {"pftree-split-runs",
       "PFtree leaf arrays that serve a run of key bytes: a full one splits into fuller leaf "
       "arrays by copying its parent (a Node48, then a Node256 past 48 runs) and publishing the "
       "copy in the grandparent; removing all keys of a run unlinks its leaf array",
       false, &SplitRuns},
      {"pftree-update-in-place",
       "PFtree overwrites an 8-byte value on an 8-byte boundary with one store; a new version "
       "of an 8-byte value is appended after padding that aligns it: repeated 8-byte updates "
       "of the same keys, read back between rounds",
       false, &UpdateInPlace},
      {"pftree-node-insert-in-place",
       "PFtree adds a child to a Node4/16 with room in place (key byte and child persisted "
       "beyond the count, then the count raised) and copies only a full one: keys that "
       "diverge one by one inside a long compressed prefix",
       false, &NodeInsertInPlace},
      {"part-collapse",
       "ROWEX removes replace a node left with one entry by that entry; a node moved up must "
       "get a header for its new depth, and the swap and the header are two stores (P-ART)",
       false, &Collapse},
      {"fastfair-root-split",
       "FAST&FAIR's root split stored the new root pointer before the new root was durable "
       "(not failure-atomic; found by Witcher): sequential inserts that split the root twice",
       false, &RootSplit},
      {"fastfair-line-boundary",
       "FAST&FAIR's shifts flush a line as they cross its boundary; its delete tested the wrong "
       "boundary (found by Witcher): an insert and a removal at every slot of a 26-entry node, "
       "then a split",
       false, &LineBoundary},
      {"roart-compaction",
       "ROART's leaf compaction: a second key under a slot holding a leaf makes a leaf array of "
       "the two, published by one store; removes empty and unlink leaf arrays",
       false, &RoartCompaction},
      {"roart-leaf-array-split",
       "ROART's full leaf array (64 leaves) splits into a node over leaf arrays, persisted and "
       "swapped in by one store; the new arrays fill and split again",
       false, &RoartLeafArraySplit},
      {"roart-node-growth",
       "ROART's nodes grow 4 -> 16 -> 48 -> 256 by a persisted copy swapped into the parent; "
       "in place, a Node48's entry commits before its (rebuilt) index byte",
       false, &RoartNodeGrowth},
      {"roart-prefix-split",
       "ROART's minimally ordered split: the new node commits with one store, the old node's "
       "shorter prefix word follows unfenced and recovery repairs it (WORT's lazy repair)",
       false, &RoartPrefixSplit},
      {"pclht-resize",
       "P-CLHT's resize builds a table of twice the buckets and switches it in with one store; "
       "RECIPE's recursive flush of the new table followed the wrong next pointer, so the new "
       "table's overflow chains were not durable at the switch: inserts from a 1-bucket table "
       "through several resizes, with removes, upserts, updates, key 0 and the largest key",
       false, &HashResize},
      {"roart-unlink",
       "ROART removes that leave a leaf array or a chain of nodes without keys unlink the "
       "highest of them with one store (readers and scans never meet an empty one)",
       false, &RoartUnlink},
      {"cceh-split-doubling",
       "CCEH's segment split and directory doubling: the old segment's local depth updated "
       "before the directory entries were durable, and a doubling switched to a directory "
       "that was not yet persisted, lost the moved keys",
       false, &CcehSplitDoubling},
      {"dash-segment-split",
       "Dash-EH's segment split (new segment, directory entries, then the old segment's local "
       "depth) with directory doubling, displacement and stash inserts: a table grown from "
       "one segment, then partly emptied and refilled",
       false, &DashSegmentSplit},
      {"levelhash-moves",
       "level hashing's one-step movements (an item to its other bucket, bottom to top) and "
       "in-place resizes, each a copy committed before its source is cleared: a move or "
       "resize that clears or publishes first loses items; one that never clears duplicates",
       false, &HashMovesAndResizes},
  };
  return *s;
}

const Scenario* FindScenario(const std::string& name) {
  for (const Scenario& s : Scenarios()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

bool ScenarioApplies(const Scenario& scenario, const IndexRegistration& registration) {
  const std::vector<std::string>& named = registration.crash_scenarios;
  return scenario.every_index ||
         std::find(named.begin(), named.end(), scenario.name) != named.end();
}

bool ScenarioOps(const std::string& name, const IndexTraits& traits, uint64_t seed,
                 std::vector<Op>* ops) {
  ops->clear();
  const Scenario* scenario = FindScenario(name);
  if (scenario == nullptr || !scenario->build(traits, seed, ops)) return false;
  if (!traits.ordered) {  // as OpGenerator: an unordered index is read by lookups
    for (Op& op : *ops) {
      if (op.kind == OpKind::kScan) op.kind = OpKind::kLookup;
    }
  }
  return true;
}

}  // namespace pmindex::crashtest
