// ROART: ordered scan, verify and recovery (one walk: recovery repairs what verify reports),
// stats, the block visitor, close and registration.
#include <algorithm>
#include <cstring>
#include <utility>

#include "pm/pool_format.h"
#include "pm/prefetch.h"
#include "radix/common/key.h"
#include "radix/common/radix_scan.h"
#include "radix/roart/roart.h"

namespace pmindex::roart {

using radix::PmLeaf;

const IndexTraits& Roart::Traits() {
  static const IndexTraits traits = [] {
    IndexTraits t;
    t.name = "roart";
    t.kind = IndexKind{24};  // never reuse or renumber (doc/format.md)
    t.persistent = true;
    t.ordered = true;
    t.byte_keys = true;
    t.max_key_size = radix::kMaxKeySize;
    t.max_value_size = radix::kMaxValueSize;
    t.concurrency =
        "concurrent (ROWEX: node and leaf-array locks with pool generation, lock-free readers)";
    t.durability = "every acknowledged operation survives a crash in the pool's persistence mode";
    t.description = "ROART: persistent ART with leaf arrays (leaf compaction), compressed entries";
    return t;
  }();
  return traits;
}

// ---- scan ----

// The node-access policy of the one ART scan (radix/common/radix_scan.h). Words are child
// words (entries without their key byte). A leaf array is a node of leaves with no prefix:
// its leaves are sorted on the fly (the array is kept unsorted, as in the paper). Every
// prefix is stored in its node, so AnyLeafKey is never asked. Lock-free: entries are read
// once each (atomically); a node replaced meanwhile is frozen, so a walk over it sees it as it
// was when it was replaced.
class Roart::ScanAccess {
 public:
  using Word = uint64_t;
  struct Node {
    uint32_t plen;
    const uint8_t* prefix;  // the prefix from the depth the node is reached at
  };
  static constexpr size_t kMaxChildren = 256;
  static constexpr size_t kStoredPrefix = radix::kMaxKeySize + 1;
  static constexpr bool kSizeInNode = false;
  static constexpr bool kLeafArrays = true;
  static_assert(kLeafArraySize + 1 <= kMaxChildren);

  explicit ScanAccess(const Roart* t) : base_(t->base_), root_(t->root()) {}
  static size_t Units(size_t bytes) { return bytes; }
  static uint8_t Unit(const uint8_t* key, size_t i) { return key[i]; }
  Word Root() const { return radix::MakeChild(static_cast<uint64_t>(reinterpret_cast<const char*>(root_) - base_), kTagNode256); }
  bool IsLeaf(Word w) const { return TagOf(w) == kTagLeaf; }
  bool IsLeafArray(Word w) const { return TagOf(w) == kTagLeafArray; }
  std::string_view LeafKey(Word w) const { return Leaf(w)->key(); }
  Node Enter(Word w, size_t depth) const {
    if (IsLeafArray(w)) return {0, nullptr};
    const NodeHeader* n = node(w);
    return {PosOf(n) - static_cast<uint32_t>(depth), StoredPrefix(n) + (depth - n->prefix_base)};
  }
  static uint32_t PrefixLen(const Node& n) { return n.plen; }
  static uint8_t StoredPrefixUnit(const Node& n, size_t j) { return n.prefix[j]; }
  const uint8_t* AnyLeafKey(Word) const { return nullptr; }
  Word End(Word w) const { return IsLeafArray(w) ? 0 : EntryChild(Load(&node(w)->end)); }
  size_t Children(Word w, unsigned from, Word* kids, size_t limit) const {
    if (IsLeafArray(w)) return LeafArrayFrom(w, {}, kids, limit);
    const size_t k = EntriesFrom(node(w), from, kids, limit);
    for (size_t i = 0; i < k; ++i) kids[i] = EntryChild(kids[i]);
    return k;
  }
  Word FindChild(Word w, uint8_t unit) const { return roart::FindChild(node(w), unit); }
  // A leaf array whole (its entries are all read); a node's first line.
  void Prefetch(Word w) const {
    if (IsLeafArray(w))
      pm::PrefetchLines(base_ + OffsetOf(w), 0, LeafArrayBytes(kMinLeafArray * 2));
    else
      pm::PrefetchLine(base_ + OffsetOf(w));
  }
  // The array's leaves with key >= start, sorted on the fly.
  size_t LeafArrayFrom(Word w, std::string_view start, Word* kids, size_t limit) const {
    const auto* la = reinterpret_cast<const LeafArray*>(base_ + OffsetOf(w));
    Word leaves[kLeafArraySize];  // uninitialized: a scan reads arrays of a few keys
    size_t n = 0;
    const unsigned capacity = la->capacity;
    if (capacity > 8) pm::PrefetchLines(la, LeafArrayBytes(8), LeafArrayBytes(capacity));
    for (unsigned i = 0; i < capacity; ++i) {  // the leaves' lines requested together
      const uint64_t e = Load(&la->e[i]);
      if (e == 0) continue;
      leaves[n++] = radix::MakeChild(LeafEntryOffset(e), kTagLeaf);
      pm::PrefetchLine(base_ + LeafEntryOffset(e));
    }
    // Sorted by the keys' first 8 bytes as one big-endian integer (zero-padded: a differing
    // padded prefix orders the keys as their bytes do), the whole keys only on a tie: a
    // memcmp per comparison was half of a 100-key scan's instructions.
    struct ByPrefix {
      uint64_t prefix;
      Word w;
    };
    ByPrefix sorted[kLeafArraySize];
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) {
      const std::string_view key = LeafKey(leaves[i]);
      if (key >= start) sorted[k++] = {PaddedPrefix(key), leaves[i]};
    }
    std::sort(sorted, sorted + k, [this](const ByPrefix& a, const ByPrefix& b) {
      return a.prefix != b.prefix ? a.prefix < b.prefix : LeafKey(a.w) < LeafKey(b.w);
    });
    k = std::min(k, limit);
    for (size_t i = 0; i < k; ++i) kids[i] = sorted[i].w;
    return k;
  }

 private:
  // A key's first 8 bytes, zero-padded, as a big-endian integer.
  static uint64_t PaddedPrefix(std::string_view key) {
    uint64_t be = 0;
    if (!key.empty()) std::memcpy(&be, key.data(), std::min<size_t>(key.size(), 8));
    return __builtin_bswap64(be);
  }
  const NodeHeader* node(Word w) const {
    return reinterpret_cast<const NodeHeader*>(base_ + OffsetOf(w));
  }
  const PmLeaf* Leaf(Word w) const { return reinterpret_cast<const PmLeaf*>(base_ + OffsetOf(w)); }
  const char* base_;
  const NodeHeader* root_;
};

size_t Roart::scan(std::string_view start, size_t max_count, ScanCallback fn) {
  if (pool_ == nullptr || root() == nullptr || max_count == 0) return 0;
  pm::Epoch::Guard guard(alloc_->epoch());  // no block the scan reaches is freed under it
  const ScanAccess access(this);
  std::string value;
  return radix::ScanInChunks<radix::ScanStack<uint64_t>>(
      start, max_count, fn,
      [&](std::string_view from, radix::ScanStack<uint64_t>& st) {
        radix::RadixScan<ScanAccess>(access, st).Run(from);
      },
      [&](uint64_t w) {
        const PmLeaf* l = LeafAt(OffsetOf(w));
        l->LoadValue(&value);  // an 8-byte value may be updated in place meanwhile
        return std::pair<std::string_view, std::string_view>(l->key(), value);
      });
}

// ---- verify and recovery ----

namespace {
std::string At(uint64_t off) { return "roart block at offset " + std::to_string(off) + ": "; }
}  // namespace

Status Roart::CheckLeaf(uint64_t off, uint32_t depth, const std::string& path, size_t* keys) {
  if (off < pm::kHeaderSize || off % 64 != 0 || !pool_->contains(base_ + off, sizeof(PmLeaf)))
    return Status::Corruption(At(off) + "leaf outside the pool");
  const PmLeaf* l = LeafAt(off);
  if (l->key_len == 0 || l->key_len > radix::kMaxKeySize ||
      !pool_->contains(l, l->size()))
    return Status::Corruption(At(off) + "bad leaf lengths");
  if (l->key().size() < depth || l->key().substr(0, depth) != std::string_view(path).substr(0, depth))
    return Status::Corruption(At(off) + "leaf key off its path");
  ++*keys;
  return Status::OK();
}

Status Roart::CheckArray(uint64_t child, uint32_t depth, const std::string& path, bool repair,
                         size_t* keys) {
  const uint64_t off = OffsetOf(child);
  if (off < pm::kHeaderSize || !pool_->contains(base_ + off, LeafArrayBytes(kMinLeafArray)))
    return Status::Corruption(At(off) + "leaf array outside the pool");
  auto* la = at<LeafArray>(child);
  const unsigned cap = la->capacity;
  if (la->type != kTagLeafArray || la->depth != depth || cap < kMinLeafArray ||
      cap > kLeafArraySize || (cap & (cap - 1)) != 0 || !pool_->contains(la, LeafArrayBytes(cap)))
    return Status::Corruption(At(off) + "bad leaf array header");
  std::vector<std::string_view> seen;
  for (unsigned i = 0; i < cap; ++i) {
    const uint64_t e = Load(&la->e[i]);
    if (e == 0) continue;
    Status s = CheckLeaf(LeafEntryOffset(e), depth, path, keys);
    if (!s.ok()) return s;
    const std::string_view key = LeafAt(LeafEntryOffset(e))->key();
    if (LeafEntryFp(e) != radix::Fingerprint16(key))
      return Status::Corruption(At(off) + "fingerprint does not match its key");
    seen.push_back(key);
  }
  std::sort(seen.begin(), seen.end());
  if (seen.empty()) return Status::Corruption(At(off) + "empty leaf array reachable");
  if (std::adjacent_find(seen.begin(), seen.end()) != seen.end())
    return Status::Corruption(At(off) + "key twice in a leaf array");
  if (repair)
    la->count = static_cast<uint8_t>(seen.size());  // never flushed
  else if (la->count != seen.size())
    return Status::Corruption(At(off) + "leaf array count disagrees with its entries");
  return Status::OK();
}

// Type, prefix bounds and the prefix word (a stale one is rewritten when repairing).
Status Roart::CheckNodeShape(NodeHeader* n, uint64_t child, uint32_t depth, bool repair) {
  const uint64_t off = OffsetOf(child);
  if (n->type != TagOf(child))
    return Status::Corruption(At(off) + "node type differs from its entry's tag");
  const uint32_t pos = PosOf(n);
  if (n->prefix_base > depth || pos < depth || pos - n->prefix_base > n->prefix_cap ||
      pos > radix::kMaxKeySize || !pool_->contains(n, FixedSize(n->type) + n->prefix_cap))
    return Status::Corruption(At(off) + "prefix outside the node");
  if (n == root() && pos != 0) return Status::Corruption(At(off) + "root with a prefix");
  const uint64_t word = PrefixWord(depth, PrefixAt(n, depth));
  if (Load(&n->prefix) != word) {
    if (!repair) return Status::Corruption(At(off) + "stale prefix word");
    Store(&n->prefix, word);  // the split's unordered second store, finished
    pc().persist(&n->prefix, 8);
  }
  return Status::OK();
}

// Entry bytes, duplicates, and the metadata recovery rebuilds (count, Node48 index).
Status Roart::CheckNodeEntries(NodeHeader* n, uint64_t child, bool repair) {
  const uint64_t off = OffsetOf(child);
  unsigned size = 256;
  uint64_t* es = reinterpret_cast<Node256*>(n)->e;
  if (n->type == kTagNode4) size = 4, es = reinterpret_cast<Node4*>(n)->e;
  if (n->type == kTagNode16) size = 16, es = reinterpret_cast<Node16*>(n)->e;
  if (n->type == kTagNode48) size = 48, es = reinterpret_cast<Node48*>(n)->e;
  uint8_t slot_of[256] = {};  // slot + 1 per byte
  unsigned live = 0;
  for (unsigned i = 0; i < size; ++i) {
    const uint64_t e = Load(&es[i]);
    if (e == 0) continue;
    const uint8_t b = EntryByte(e);
    if ((n->type == kTagNode256 && b != i) || slot_of[b] != 0)
      return Status::Corruption(At(off) + "entry key bytes repeat or disagree");
    const uint64_t tag = TagOf(EntryChild(e));
    if (tag != kTagLeaf && tag != kTagLeafArray && !IsNodeTag(tag))
      return Status::Corruption(At(off) + "entry with a bad tag");
    slot_of[b] = static_cast<uint8_t>(std::min(i + 1, 255u));
    ++live;
  }
  if (n->type == kTagNode48) {
    auto* n48 = reinterpret_cast<Node48*>(n);
    for (int b = 0; b < 256; ++b) {
      if (repair) n48->index[b] = slot_of[b];  // rebuilt from the entries, never flushed
      else if (slot_of[b] != 0 && n48->index[b] != slot_of[b])
        return Status::Corruption(At(off) + "node48 index disagrees with its entries");
    }
  }
  if (n->type != kTagNode256) {
    if (repair) n->count = static_cast<uint8_t>(live);  // never flushed
    else if (n->count != live) return Status::Corruption(At(off) + "count disagrees with entries");
  }
  if (live == 0 && Load(&n->end) == 0 && n != root())
    return Status::Corruption(At(off) + "empty node reachable");
  return Status::OK();
}

Status Roart::CheckNode(uint64_t child, uint32_t depth, std::string* path, bool repair,
                        size_t* keys) {
  const uint64_t off = OffsetOf(child);
  if (off < pm::kHeaderSize || off % 64 != 0 || !pool_->contains(base_ + off, sizeof(Node4)) ||
      !pool_->contains(base_ + off, FixedSize(TagOf(child))) || depth > radix::kMaxKeySize)
    return Status::Corruption(At(off) + "node outside the pool (or a cycle)");
  auto* n = at<NodeHeader>(child);
  Status s = CheckNodeShape(n, child, depth, repair);
  if (s.ok()) s = CheckNodeEntries(n, child, repair);
  if (!s.ok()) return s;
  const size_t mark = path->size();
  path->append(PrefixAt(n, depth));
  const uint32_t pos = PosOf(n);
  if (const uint64_t end = EntryChild(Load(&n->end)); end != 0) {
    if (TagOf(end) != kTagLeaf) return Status::Corruption(At(off) + "end word is not a leaf");
    s = CheckLeaf(OffsetOf(end), pos, *path, keys);
    if (s.ok() && LeafAt(OffsetOf(end))->key_len != pos)
      s = Status::Corruption(At(off) + "end leaf longer than its position");
  }
  ForEachChild(n, [&](uint8_t b, uint64_t c) {
    if (!s.ok()) return;
    path->push_back(static_cast<char>(b));
    const uint64_t tag = TagOf(c);
    if (tag == kTagLeaf) s = CheckLeaf(OffsetOf(c), pos + 1, *path, keys);
    else if (tag == kTagLeafArray) s = CheckArray(c, pos + 1, *path, repair, keys);
    else s = CheckNode(c, pos + 1, path, repair, keys);
    path->pop_back();
  });
  path->resize(mark);
  return s;
}

Status Roart::Check(bool repair) {
  if (pool_ == nullptr) return Status::InvalidArgument("roart: closed");
  if (root() == nullptr) return Status::OK();
  std::string path;
  size_t keys = 0;
  return CheckNode(radix::MakeChild(pool_->offset_of(root()), kTagNode256), 0, &path, repair,
                   &keys);
}

Status Roart::verify() {
  pm::Epoch::Guard guard(alloc_->epoch());
  return Check(/*repair=*/false);
}

// Rebuilds what is never flushed (counts, Node48 indexes) and rewrites stale prefix words;
// lock words need nothing (the pool generation is new). Writes no new block.
Status Roart::recover() {
  if (pool_ == nullptr) return Status::InvalidArgument("roart: closed");
  gen_ = static_cast<uint32_t>(pool_->generation());
  return Check(/*repair=*/true);
}

// ---- the block visitor, stats ----

template <typename Fn>
void Roart::Walk(uint64_t child, Fn&& fn) const {
  fn(child);
  const uint64_t tag = TagOf(child);
  if (tag == kTagLeaf) return;
  if (tag == kTagLeafArray) {
    const auto* la = at<LeafArray>(child);
    for (unsigned i = 0; i < la->capacity; ++i)
      if (const uint64_t e = Load(&la->e[i]); e != 0) fn(radix::MakeChild(LeafEntryOffset(e), kTagLeaf));
    return;
  }
  const auto* n = at<NodeHeader>(child);
  if (const uint64_t end = EntryChild(Load(&n->end)); end != 0) fn(end);
  ForEachChild(n, [&](uint8_t, uint64_t c) { Walk(c, fn); });
}

Status Roart::visit_blocks(BlockVisitor& visitor) {
  if (pool_ == nullptr) return Status::InvalidArgument("roart: closed");
  if (root() == nullptr) return Status::OK();
  Status s;
  Walk(radix::MakeChild(pool_->offset_of(root()), kTagNode256), [&](uint64_t c) {
    if (s.ok()) s = visitor.visit(OffsetOf(c));
  });
  return s;
}

IndexStats Roart::stats() {
  IndexStats s;
  if (pool_ == nullptr || root() == nullptr) return s;
  pm::Epoch::Guard guard(alloc_->epoch());
  uint64_t counts[7] = {};
  Walk(radix::MakeChild(pool_->offset_of(root()), kTagNode256), [&](uint64_t c) {
    s.pm_bytes += alloc_->block_size(OffsetOf(c));
    counts[TagOf(c)]++;
  });
  s.keys = counts[kTagLeaf];
  s.nodes = {{"node4", counts[kTagNode4]},     {"node16", counts[kTagNode16]},
             {"node48", counts[kTagNode48]},   {"node256", counts[kTagNode256]},
             {"leaf_arrays", counts[kTagLeafArray]}};
  return s;
}

Status Roart::close() {
  if (pool_ == nullptr) return Status::OK();
  Status s = pool_->Close();
  pool_.reset();
  return s;
}

// ---- registration ----

// Test-only crash bugs (pm/mutant.h) at ROART's order-sensitive steps; the scenarios name
// the structural change each needs.
std::vector<MutantInfo> Roart::Mutants() {
  return {
      {"roart.skip_leaf_persist",
       "a new leaf is not persisted before the entry that names it is stored"},
      {"roart.skip_entry_persist",
       "a leaf-array entry store is not persisted before the insert returns"},
      {"roart.skip_compact_persist",
       "the leaf array made of a leaf and a new key is not fenced before it replaces the leaf",
       "roart-compaction"},
      {"roart.skip_split_persist",
       "the node and leaf arrays a full leaf array splits into are not fenced before the swap",
       "roart-leaf-array-split"},
      {"roart.array_tail_unflushed",
       "a new leaf array's free slots are not flushed (a reused block's old bytes read as "
       "entries after a crash)",
       "roart-unlink"},
      {"roart.skip_array_grow_persist",
       "a leaf array's copy of twice the capacity is not fenced before the swap",
       "roart-leaf-array-split"},
      {"roart.skip_grow_persist",
       "a grown node (4->16->48->256) is not fenced before the parent's entry names it",
       "roart-node-growth"},
      {"roart.skip_prefix_split_persist",
       "a prefix split's new node is not fenced before the parent's entry names it",
       "roart-prefix-split"},
  };
}

IndexRegistration Roart::Registration() {
  IndexRegistration r;
  r.traits = Roart::Traits();
  r.attach = &Roart::Attach;
  r.params = "roart leaf_array=64";
  r.mutants = Mutants();
  r.crash_scenarios = {"count-vs-entries",       "header-child-two-stores",
                       "split-sibling-early",    "roart-compaction",
                       "roart-leaf-array-split", "roart-node-growth",
                       "roart-prefix-split",     "roart-unlink"};
  return r;
}

}  // namespace pmindex::roart
