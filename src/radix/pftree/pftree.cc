// PFtree point operations: lookup, insert/update/upsert/remove, and the structural changes
// they trigger (new leaf array, copy-on-write of a Node4/16/48, prefix split, leaf rebuild).
#include "radix/pftree/pftree.h"

#include <algorithm>
#include <cstring>

#include "pm/mutant.h"
#include "pm/persist.h"
#include "pm/pool_format.h"
#include "radix/pftree/version_lock.h"

namespace pmindex::pftree {

namespace {

// Leaf arrays are rebuilt as one leaf while their live entries stay below these, else split
// (hysteresis: a nearly full rebuilt leaf would be rebuilt again after a few appends).
size_t RebuildMaxEntries() { return Largest().entries * 3 / 4; }
size_t RebuildMaxBytes() { return Largest().data() * 3 / 4; }
// A split makes as many leaf arrays as it takes for each to hold at most half a largest one.
size_t SplitEntries() { return Largest().entries / 2; }
size_t SplitBytes() { return Largest().data() / 2; }

}  // namespace

PFTree::PFTree(std::unique_ptr<Pool> pool)
    : pool_(std::move(pool)),
      base_(pool_->base()),
      alloc_(&pool_->allocator()),
      gen_(static_cast<uint32_t>(pool_->generation())) {}

// A destructor cannot report an error: users who need to see one call close() first.
PFTree::~PFTree() { close().IgnoreError(); }

Result<std::unique_ptr<Index>> PFTree::Attach(std::unique_ptr<Pool> pool, bool fresh) {
  std::unique_ptr<PFTree> tree(new PFTree(std::move(pool)));
  Pool* p = tree->pool_.get();
  if (const uint64_t r = p->root(); r != 0) {
    // The root is a Node256 block: a damaged root word is refused before anything (recovery,
    // teardown) follows it.
    if (r % 64 != 0 || r < pm::kHeaderSize || !p->contains(p->base() + r, sizeof(Node256)) ||
        p->at<InnerHeader>(r)->type != static_cast<uint8_t>(NodeType::kNode256)) {
      return Status::Corruption(p->path() + ": pftree root offset " + std::to_string(r) +
                                " is not a root node");
    }
    tree->root_.store(p->at<InnerHeader>(r));
  } else if (fresh) {
    Result<InnerHeader*> root = tree->EnsureRoot();
    if (!root.ok()) return root.status().WithContext(p->path());
  } else if (p->allocator().carved_chunks() > 1) {
    // The root node is made at creation and never removed; creation carves one chunk for it,
    // so a pool without a root but with more chunks has lost its root.
    return Status::Corruption(p->path() + ": pftree has no root node but " +
                              std::to_string(p->allocator().carved_chunks()) +
                              " chunks carved: its root is lost");
  }
  // Otherwise the first write creates the root: the allocator is not rebuilt yet.
  if (fresh) tree->recovered_ = true;
  return std::unique_ptr<Index>(std::move(tree));
}

Result<InnerHeader*> PFTree::EnsureRoot() {
  std::lock_guard<std::mutex> lock(root_mu_);
  if (InnerHeader* r = root()) return r;
  Result<uint64_t> off = alloc_->allocate(sizeof(Node256));
  if (!off.ok()) return off.status();
  auto* node = pool_->at<Node256>(*off);
  std::memset(node, 0, sizeof(Node256));
  node->h.type = static_cast<uint8_t>(NodeType::kNode256);
  pc().persist(node, sizeof(Node256));  // before set_root publishes it
  pool_->set_root(*off);
  root_.store(&node->h, std::memory_order_release);
  return &node->h;
}

Status PFTree::insert(std::string_view key, std::string_view value) {
  return Write(key, value, Op::kInsert);
}
Status PFTree::update(std::string_view key, std::string_view value) {
  if (UpdateInPlaceFast(key, value)) return Status::OK();
  return Write(key, value, Op::kUpdate);
}
Status PFTree::upsert(std::string_view key, std::string_view value) {
  return Write(key, value, Op::kUpsert);
}
Status PFTree::remove(std::string_view key) { return Write(key, {}, Op::kRemove); }

inline LeafHeader* PFTree::DescendToLeaf(InnerHeader* node, std::string_view key,
                                         InnerHeader** stop) const {
  size_t pos = 0;
  for (;;) {
    const size_t plen = node->prefix_len;
    if (plen != 0) {
      if (key.size() - pos < plen || std::memcmp(PrefixOf(node), key.data() + pos, plen) != 0)
        break;
      pos += plen;
    }
    uint64_t* slot =
        key.size() == pos ? &node->term : ChildSlot(node, static_cast<uint8_t>(key[pos]));
    const uint64_t child = slot != nullptr ? LoadRef(slot) : 0;
    if (child == 0) break;
    if (IsLeafRef(child)) return at<LeafHeader>(child);
    node = at<InnerHeader>(child);
    ++pos;
  }
  *stop = node;
  return nullptr;
}

bool PFTree::UpdateInPlaceFast(std::string_view key, std::string_view value) {
  if (value.size() != 8 || key.empty() || key.size() > kMaxKeySize ||
      !Alignable(key.size(), value.size()))
    return false;
  InnerHeader* const top = root();
  if (top == nullptr) return false;
  const uint16_t fp = Fingerprint(key);
  pm::Epoch::Guard guard(epoch());
  InnerHeader* stop = nullptr;
  LeafHeader* const leaf = DescendToLeaf(top, key, &stop);
  if (leaf == nullptr) return false;
  PrefetchLeaf(leaf);
  // A leaf that is not obsolete once locked is the one that holds the key: a writer that
  // replaces it marks it obsolete under this lock before the swap.
  if (!VersionLock::LockInline(&leaf->lock, gen_)) return false;
  LeafAux* const aux = AuxOf(leaf);
  PrefetchAux(aux);
  const int idx = FindEntry(leaf, aux, aux->count.load(std::memory_order_relaxed), key, fp);
  if (idx >= 0 && UpdateInPlace(pc(), leaf, aux, static_cast<uint32_t>(idx), value)) {
    VersionLock::Unlock(&leaf->lock, gen_);  // the commit was the value's store
    return true;
  }
  VersionLock::Unlock(&leaf->lock, gen_, /*bump=*/false);  // nothing changed
  return false;
}

Status PFTree::lookup(std::string_view key, std::string* value) {
  if (key.empty() || key.size() > kMaxKeySize) {
    return Status::InvalidArgument("key length out of range");
  }
  const uint16_t fp = Fingerprint(key);
  pm::Epoch::Guard guard(epoch());
  InnerHeader* const top = root();
  if (top == nullptr) return Status::NotFound();
  for (;;) {
    InnerHeader* stop = nullptr;
    LeafHeader* const leaf = DescendToLeaf(top, key, &stop);
    if (leaf == nullptr) {
      // No place for the key in `stop`: absent, unless stop was replaced meanwhile.
      if (VersionLock::IsObsolete(&stop->lock, gen_)) continue;
      return Status::NotFound();
    }
    PrefetchLeaf(leaf);
    uint64_t version;
    if (!VersionLock::ReadBegin(&leaf->lock, gen_, &version)) continue;
    LeafAux* const aux = AuxOf(leaf);
    PrefetchAux(aux);
    const uint32_t n = aux->count.load(std::memory_order_acquire);
    const int idx = FindEntry(leaf, aux, n, key, fp);
    if (idx >= 0 && value != nullptr) {
      const uint32_t epos = aux->pos[idx];
      CopyEntryValue(leaf, epos, LoadEntryHeader(leaf, epos), value);
    }
    if (!VersionLock::ReadValidate(&leaf->lock, version)) continue;
    return idx >= 0 ? Status::OK() : Status::NotFound();
  }
}

Status PFTree::Write(std::string_view key, std::string_view value, Op op) {
  if (op != Op::kRemove && reserve_.load(std::memory_order_relaxed) == 0 && root() != nullptr) {
    Result<uint64_t> block = alloc_->allocate(Largest().block);
    uint64_t none = 0;
    if (block.ok() && !reserve_.compare_exchange_strong(none, *block)) alloc_->free(*block);
  }
  for (;;) {
    Status s = WriteOnce(key, value, op);
    if (!s.IsOutOfSpace()) return s;
    // Leaf arrays replaced earlier may wait for their grace period (this thread has left its
    // guard, so its own count too); failing that, the reserve block is given back to the
    // allocator, whose larger-class fallback serves any leaf array from it.
    if (alloc_->reclaim_now()) continue;
    const uint64_t spare = reserve_.exchange(0);
    if (spare == 0) return s;
    alloc_->free(spare);
  }
}

Status PFTree::WriteOnce(std::string_view key, std::string_view value, Op op) {
  if (key.empty() || key.size() > kMaxKeySize)
    return Status::InvalidArgument("pftree: key must be 1..511 bytes");
  if (value.size() > kMaxValueSize)
    return Status::InvalidArgument("pftree: value must be at most 63 bytes");
  const uint16_t fp = Fingerprint(key);
  const bool must_exist = op == Op::kUpdate || op == Op::kRemove;
  InnerHeader* top = root();
  if (top == nullptr) {
    if (must_exist) return Status::NotFound();
    Result<InnerHeader*> r = EnsureRoot();
    if (!r.ok()) return r.status();
    top = *r;
  }
  pm::Epoch::Guard guard(epoch());
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) VersionLock::Backoff(attempt);
    InnerHeader* parent = nullptr;
    uint8_t parent_byte = 0;
    InnerHeader* node = top;
    size_t pos = 0;
    Attempt r{true, Status::OK()};
    for (;;) {
      const size_t plen = node->prefix_len;
      if (plen != 0) {
        const char* prefix = PrefixOf(node);
        size_t limit = std::min(plen, key.size() - pos);
        size_t m = 0;
        while (m < limit && prefix[m] == key[pos + m]) ++m;
        if (m < plen) {
          if (must_exist) {
            if (!VersionLock::IsObsolete(&node->lock, gen_)) return Status::NotFound();
            break;
          }
          r = SplitPrefix(parent, parent_byte, node, pos, m, key, value);
          break;
        }
        pos += plen;
      }
      uint64_t* slot = key.size() == pos ? &node->term
                                         : ChildSlot(node, static_cast<uint8_t>(key[pos]));
      uint64_t child = slot != nullptr ? LoadRef(slot) : 0;
      if (child == 0) {
        if (must_exist) {
          if (!VersionLock::IsObsolete(&node->lock, gen_)) return Status::NotFound();
          break;
        }
        r = AddLeaf(parent, parent_byte, node, pos, key, value);
        break;
      }
      if (IsLeafRef(child)) {
        LeafPath path{parent, parent_byte, node, key.size() == pos,
                      key.size() == pos ? uint8_t{0} : static_cast<uint8_t>(key[pos]), slot};
        r = WriteToLeaf(path, at<LeafHeader>(child), key, value, fp, op);
        break;
      }
      parent = node;
      parent_byte = static_cast<uint8_t>(key[pos]);
      node = at<InnerHeader>(child);
      ++pos;
    }
    if (!r.restart) return std::move(r.status);
  }
}

// Stable while the parent is locked.
void PFTree::RunOfLeaf(const LeafPath& lp, uint8_t* lo, uint8_t* hi) {
  *lo = *hi = lp.byte;
  if (!lp.term) RunOf(lp.parent, lp.byte, lo, hi);
}

PFTree::Attempt PFTree::WriteToLeaf(const LeafPath& lp, LeafHeader* leaf, std::string_view key,
                                    std::string_view value, uint16_t fp, Op op) {
  PrefetchLeaf(leaf);
  if (!VersionLock::Lock(&leaf->lock, gen_)) return {true, {}};
  LeafAux* aux = AuxOf(leaf);
  PrefetchAux(aux);
  const uint32_t n = aux->count.load(std::memory_order_relaxed);
  const int idx = FindEntry(leaf, aux, n, key, fp);
  switch (op) {
    case Op::kInsert:
      if (idx >= 0) {
        VersionLock::Unlock(&leaf->lock, gen_);
        return {false, Status::AlreadyExists()};
      }
      break;
    case Op::kUpdate:
      if (idx < 0) {
        VersionLock::Unlock(&leaf->lock, gen_);
        return {false, Status::NotFound()};
      }
      break;
    case Op::kRemove:
      if (idx < 0) {
        VersionLock::Unlock(&leaf->lock, gen_);
        return {false, Status::NotFound()};
      }
      return RemoveFromLeaf(lp, leaf, aux, static_cast<uint32_t>(idx));
    case Op::kUpsert:
      break;
  }
  // An 8-byte value on an 8-byte boundary: overwritten in place (commit: that store).
  if (idx >= 0 && UpdateInPlace(pc(), leaf, aux, static_cast<uint32_t>(idx), value)) {
    VersionLock::Unlock(&leaf->lock, gen_);
    return {false, Status::OK()};
  }
  // Append the new version (commit: its header), then retire the old one's valid bit. An
  // 8-byte value goes on an 8-byte boundary, so its next update is in place.
  if (AppendEntry(pc(), leaf, aux, key, value, fp)) {
    if (idx >= 0) InvalidateEntry(pc(), leaf, aux, static_cast<uint32_t>(idx));
    VersionLock::Unlock(&leaf->lock, gen_);
    return {false, Status::OK()};
  }
  // Full: rebuild the live entries (with the change applied) into a new leaf array or a
  // split subtree, persist it, and swap the parent's reference to it.
  if (!VersionLock::TryLock(&lp.parent->lock, gen_)) {
    VersionLock::Unlock(&leaf->lock, gen_);
    return {true, {}};
  }
  std::vector<LeafItem> items = LiveItemsWith(leaf, aux, n, idx, {key, value, fp});
  return RebuildLeaf(lp, leaf, aux, items);
}

PFTree::Attempt PFTree::RemoveFromLeaf(const LeafPath& lp, LeafHeader* leaf, LeafAux* aux,
                                       uint32_t idx) {
  InnerHeader* const parent = lp.parent;
  if (aux->live > 1) {
    InvalidateEntry(pc(), leaf, aux, idx);  // commit: the valid bit
    VersionLock::Unlock(&leaf->lock, gen_);
    return {false, Status::OK()};
  }
  // The last key: unlink the whole leaf array (commit: the parent's 8-byte reference, or
  // for a Node256 run the grandparent's reference to a copy without it).
  if (!VersionLock::TryLock(&parent->lock, gen_)) {
    VersionLock::Unlock(&leaf->lock, gen_);
    return {true, {}};
  }
  uint8_t lo, hi;
  RunOfLeaf(lp, &lo, &hi);
  if (lo < hi && parent->type == static_cast<uint8_t>(NodeType::kNode256)) {
    std::vector<uint64_t> none;
    return ReplaceRun(lp, leaf, lo, hi, {}, &none);
  }
  VersionLock::MarkObsolete(&leaf->lock, gen_);
  StoreRef(pc(), lp.slot, 0);
  VersionLock::Unlock(&parent->lock, gen_);
  Retire(pool_->offset_of(leaf) | kLeafTag);
  return {false, Status::OK()};
}

// The leaf's first sorted_n entries are in key order (it was built sorted): only the appended
// ones and the new entry are sorted, then merged in (n + k log k comparisons for k appended
// entries, not n log n).
std::vector<LeafItem> PFTree::LiveItemsWith(LeafHeader* leaf, const LeafAux* aux, uint32_t n,
                                            int idx, const LeafItem& added) {
  std::vector<LeafItem> items;
  items.reserve(aux->live + 1);
  size_t in_order = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (i == aux->sorted_n) in_order = items.size();
    if (static_cast<int>(i) == idx) continue;
    uint32_t epos = aux->pos[i];
    uint16_t h = LoadEntryHeader(leaf, epos);
    if (h & kEntryValid)
      items.push_back({EntryKey(leaf, epos, h), EntryValue(leaf, epos, h), aux->fp[i]});
  }
  if (aux->sorted_n >= n) in_order = items.size();
  items.push_back(added);
  auto key_less = [](const LeafItem& a, const LeafItem& b) { return KeyLess(a.key, b.key); };
  std::sort(items.begin() + static_cast<std::ptrdiff_t>(in_order), items.end(), key_less);
  std::inplace_merge(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(in_order),
                     items.end(), key_less);
  return items;
}

PFTree::Attempt PFTree::RebuildLeaf(const LeafPath& lp, LeafHeader* leaf, const LeafAux* aux,
                                    std::vector<LeafItem>& items) {
  InnerHeader* const parent = lp.parent;
  std::vector<uint64_t> allocated;
  uint8_t lo, hi;
  RunOfLeaf(lp, &lo, &hi);
  const bool shared = lo < hi;
  // Compaction before growth: a leaf array whose dead versions take an eighth of it is
  // rebuilt at the same (largest) size while that leaves an eighth free, rather than split;
  // so updates, which only add dead versions, do not grow the tree.
  const size_t live_bytes = ItemsBytes(items, 0, items.size());
  const bool compact = aux->used >= live_bytes + leaf->capacity / 8 &&
                       live_bytes + leaf->capacity / 8 <= Largest().data() &&
                       items.size() + Largest().entries / 8 <= Largest().entries;
  const bool fits = compact || FitsOneLeaf(items.size(), live_bytes);
  if (shared && !(fits && parent->type == static_cast<uint8_t>(NodeType::kNode48))) {
    // A shared leaf that must split (or whose Node256 run must move to a new leaf): its run
    // is re-partitioned in a copy of the parent, published in the grandparent.
    std::vector<std::pair<uint8_t, uint64_t>> repl;
    Status s = fits ? BuildRunLeaf(items, 0, items.size(), leaf->depth, lo, hi, &allocated, &repl)
                    : BuildRuns(items, 0, items.size(), leaf->depth, lo, hi, &allocated, &repl);
    if (!s.ok()) {
      FreeBlocks(allocated);
      VersionLock::Unlock(&parent->lock, gen_);
      VersionLock::Unlock(&leaf->lock, gen_);
      return {false, s};
    }
    return ReplaceRun(lp, leaf, lo, hi, std::move(repl), &allocated);
  }
  // One reference to replace (a Node48 slot serves its whole run): the new leaf keeps the
  // old depth; an unshared child may become a subtree.
  Result<uint64_t> sub = shared || fits
                             ? BuildLeaf(items, 0, items.size(), leaf->depth, &allocated)
                             : BuildSubtree(items, 0, items.size(), leaf->depth, &allocated);
  if (!sub.ok()) {
    FreeBlocks(allocated);
    VersionLock::Unlock(&parent->lock, gen_);
    VersionLock::Unlock(&leaf->lock, gen_);
    return {false, sub.status()};
  }
  pc().fence();  // every block of the new part was flushed: durable before the swap
  VersionLock::MarkObsolete(&leaf->lock, gen_);
  StoreRef(pc(), lp.slot, *sub);  // commit
  VersionLock::Unlock(&parent->lock, gen_);
  Retire(pool_->offset_of(leaf) | kLeafTag);
  return {false, Status::OK()};
}

PFTree::Attempt PFTree::ReplaceRun(const LeafPath& lp, LeafHeader* leaf, uint8_t lo, uint8_t hi,
                                   std::vector<std::pair<uint8_t, uint64_t>> repl,
                                   std::vector<uint64_t>* allocated) {
  InnerHeader* const parent = lp.parent;
  auto fail = [&](bool restart, const Status& s) -> Attempt {
    FreeBlocks(*allocated);
    VersionLock::Unlock(&parent->lock, gen_);
    VersionLock::Unlock(&leaf->lock, gen_);
    return {restart, s};
  };
  // The parent is never the root (the root's children are single bytes), so it has one.
  if (lp.grandparent == nullptr || !VersionLock::TryLock(&lp.grandparent->lock, gen_))
    return fail(true, Status::OK());
  std::vector<std::pair<uint8_t, uint64_t>> children;
  for (auto& c : LiveChildren(parent)) {
    if (c.first == lo) children.insert(children.end(), repl.begin(), repl.end());
    if (c.first < lo || c.first > hi) children.push_back(c);
  }
  Result<uint64_t> copy =
      BuildInnerNode(pc(), *alloc_, base_, parent->depth, {PrefixOf(parent), parent->prefix_len},
                     LoadRef(&parent->term), children,
                     /*flush=*/!pm::mutant("pftree.skip_split_node_persist"));
  if (!copy.ok()) {
    VersionLock::Unlock(&lp.grandparent->lock, gen_);
    return fail(false, copy.status());
  }
  pc().fence();  // the copy and the run's new leaves are durable before the swap
  VersionLock::MarkObsolete(&parent->lock, gen_);
  VersionLock::MarkObsolete(&leaf->lock, gen_);
  StoreRef(pc(), FindChildSlot(lp.grandparent, lp.parent_byte), *copy);  // commit
  VersionLock::Unlock(&lp.grandparent->lock, gen_);
  Retire(pool_->offset_of(parent));
  Retire(pool_->offset_of(leaf) | kLeafTag);
  return {false, Status::OK()};
}

Result<uint64_t> PFTree::NewLeaf(std::string_view key, std::string_view value, uint16_t depth) {
  std::vector<LeafItem> items{{key, value, Fingerprint(key)}};
  size_t block = LeafBlockSizeFor(ItemsBytes(items, 0, 1));
  Result<uint64_t> off = alloc_->allocate(block);
  if (!off.ok()) return off.status();
  WriteLeaf(pc(), pool_->at<LeafHeader>(*off), block, depth, gen_, items, 0, 1,
            BlockPersist::kFlushOnly);  // callers fence before publishing it
  return *off | kLeafTag;
}

PFTree::Attempt PFTree::AddLeaf(InnerHeader* grandparent, uint8_t gp_byte, InnerHeader* node,
                                size_t pos, std::string_view key, std::string_view value) {
  if (!VersionLock::Lock(&node->lock, gen_)) return {true, {}};
  const bool term = key.size() == pos;
  const uint8_t b = term ? 0 : static_cast<uint8_t>(key[pos]);
  uint64_t* slot = term ? &node->term : FindChildSlot(node, b);
  if (slot != nullptr && LoadRef(slot) != 0) {  // someone else added it meanwhile
    VersionLock::Unlock(&node->lock, gen_);
    return {true, {}};
  }
  // A leaf for a shared Node48 slot (whose child was removed) serves the slot's whole run.
  uint8_t lo = b, hi = b;
  if (!term) RunOf(node, b, &lo, &hi);
  Result<uint64_t> leaf = NewLeaf(key, value, static_cast<uint16_t>(term || lo < hi ? pos : pos + 1));
  if (!leaf.ok()) {
    VersionLock::Unlock(&node->lock, gen_);
    return {false, leaf.status()};
  }
  // Stored in place (term, a free slot, a Node48 slot: a full Node48 then copies after all),
  // the flushed leaf must be durable first; for a copy, one fence before the swap covers both.
  const bool in_place =
      term || slot != nullptr || node->type == static_cast<uint8_t>(NodeType::kNode48);
  if (in_place) pc().fence();
  if (term) {
    StoreRef(pc(), &node->term, *leaf);  // commit
    VersionLock::Unlock(&node->lock, gen_);
    return {false, Status::OK()};
  }
  if (AddChildInPlace(pc(), node, b, *leaf)) {  // commit inside
    VersionLock::Unlock(&node->lock, gen_);
    return {false, Status::OK()};
  }
  // Copy-on-write: a node with the new child (grown if needed) replaces this one.
  if (grandparent == nullptr || !VersionLock::TryLock(&grandparent->lock, gen_)) {
    FreeBlocks({RefOffset(*leaf)});
    VersionLock::Unlock(&node->lock, gen_);
    return {true, {}};
  }
  auto children = LiveChildren(node);
  children.insert(std::lower_bound(children.begin(), children.end(), std::make_pair(b, uint64_t{0})),
                  {b, *leaf});
  Result<uint64_t> copy =
      BuildInnerNode(pc(), *alloc_, base_, node->depth, {PrefixOf(node), node->prefix_len},
                     LoadRef(&node->term), children);
  if (!copy.ok()) {
    FreeBlocks({RefOffset(*leaf)});
    VersionLock::Unlock(&grandparent->lock, gen_);
    VersionLock::Unlock(&node->lock, gen_);
    return {false, copy.status()};
  }
  pc().fence();  // the flushed copy (and leaf) are durable before the swap publishes them
  VersionLock::MarkObsolete(&node->lock, gen_);
  StoreRef(pc(), FindChildSlot(grandparent, gp_byte), *copy);  // commit
  VersionLock::Unlock(&grandparent->lock, gen_);
  Retire(pool_->offset_of(node));
  return {false, Status::OK()};
}

PFTree::Attempt PFTree::SplitPrefix(InnerHeader* parent, uint8_t parent_byte, InnerHeader* node,
                                    size_t pos, size_t match, std::string_view key,
                                    std::string_view value) {
  if (!VersionLock::Lock(&node->lock, gen_)) return {true, {}};
  if (parent == nullptr || !VersionLock::TryLock(&parent->lock, gen_)) {
    VersionLock::Unlock(&node->lock, gen_);
    return {true, {}};
  }
  // New parent M (the common part of the prefix) over a copy of node with the rest of the
  // prefix and the new key's leaf; published by one store into the old parent.
  std::string_view prefix(PrefixOf(node), node->prefix_len);
  std::vector<uint64_t> allocated;
  auto fail = [&](const Status& s) -> Attempt {
    FreeBlocks(allocated);
    VersionLock::Unlock(&parent->lock, gen_);
    VersionLock::Unlock(&node->lock, gen_);
    return {false, s};
  };
  Result<uint64_t> copy =
      BuildInnerNode(pc(), *alloc_, base_, static_cast<uint16_t>(pos + match + 1),
                     prefix.substr(match + 1), LoadRef(&node->term), LiveChildren(node));
  if (!copy.ok()) return fail(copy.status());
  allocated.push_back(*copy);
  const bool term = key.size() == pos + match;
  Result<uint64_t> leaf =
      NewLeaf(key, value, static_cast<uint16_t>(term ? pos + match : pos + match + 1));
  if (!leaf.ok()) return fail(leaf.status());
  allocated.push_back(RefOffset(*leaf));
  std::vector<std::pair<uint8_t, uint64_t>> children{{static_cast<uint8_t>(prefix[match]), *copy}};
  if (!term) {
    auto kb = static_cast<uint8_t>(key[pos + match]);
    if (kb < children[0].first) {
      children.insert(children.begin(), {kb, *leaf});
    } else {
      children.push_back({kb, *leaf});
    }
  }
  Result<uint64_t> top = BuildInnerNode(pc(), *alloc_, base_, static_cast<uint16_t>(pos),
                                        prefix.substr(0, match), term ? *leaf : 0, children);
  if (!top.ok()) return fail(top.status());
  pc().fence();  // the three flushed blocks are durable before the swap publishes them
  VersionLock::MarkObsolete(&node->lock, gen_);
  StoreRef(pc(), FindChildSlot(parent, parent_byte), *top);  // commit
  VersionLock::Unlock(&parent->lock, gen_);
  Retire(pool_->offset_of(node));
  return {false, Status::OK()};
}

bool PFTree::FitsOneLeaf(const std::vector<LeafItem>& items, size_t b, size_t e) {
  return FitsOneLeaf(e - b, ItemsBytes(items, b, e));
}
bool PFTree::FitsOneLeaf(size_t entries, size_t bytes) {
  return entries == 1 || (entries <= RebuildMaxEntries() && bytes <= RebuildMaxBytes());
}

Result<uint64_t> PFTree::BuildLeaf(const std::vector<LeafItem>& items, size_t b, size_t e,
                                   uint16_t depth, std::vector<uint64_t>* allocated) {
  // Only flushed here; the caller fences once before publishing it.
  const BlockPersist how =
      pm::mutant("pftree.skip_split_persist") ? BlockPersist::kSkip : BlockPersist::kFlushOnly;
  const size_t bytes = ItemsBytes(items, b, e);
  size_t block = LeafBlockSizeFor(bytes);
  Result<uint64_t> off = alloc_->allocate(block);
  if (off.status().IsOutOfSpace() && bytes + kLeafHeaderSize < block) {
    // A full pool: the tightest block that holds the items (a rebuild after removals then
    // fits in the space they freed), without the room for appends.
    off = alloc_->allocate(std::max(bytes + kLeafHeaderSize, kMinLeafBlock));
    if (off.ok()) block = std::min(alloc_->block_size(*off), Largest().block);
  }
  if (!off.ok()) return off.status();
  allocated->push_back(*off);
  WriteLeaf(pc(), pool_->at<LeafHeader>(*off), block, depth, gen_, items, b, e, how);
  return *off | kLeafTag;
}

Status PFTree::BuildRunLeaf(const std::vector<LeafItem>& items, size_t b, size_t e, uint16_t q,
                            uint8_t lo, uint8_t hi, std::vector<uint64_t>* allocated,
                            std::vector<std::pair<uint8_t, uint64_t>>* children) {
  // A leaf of one byte consumes it (depth q + 1); a shared one does not (depth q).
  Result<uint64_t> leaf = BuildLeaf(items, b, e, static_cast<uint16_t>(lo < hi ? q : q + 1),
                                    allocated);
  if (!leaf.ok()) return leaf.status();
  for (int x = lo; x <= hi; ++x) children->emplace_back(static_cast<uint8_t>(x), *leaf);
  return Status::OK();
}

Status PFTree::BuildRuns(std::vector<LeafItem>& items, size_t b, size_t e, uint16_t q,
                         uint8_t lo, uint8_t hi, std::vector<uint64_t>* allocated,
                         std::vector<std::pair<uint8_t, uint64_t>>* children) {
  // Groups of one key byte key[q], cut into runs of consecutive groups of about equal size:
  // as many as it takes for each to fill at most half a largest leaf array (so a split leaves
  // full leaf arrays, not one per byte). A group too large for one leaf array is a run of its
  // own, a subtree one byte deeper. Runs cover the bytes between them (a new key joins its
  // neighbours' leaf instead of making a leaf of its own).
  struct Run {
    size_t b, e;
    bool big;
  };
  const size_t total = ItemsBytes(items, b, e);
  const size_t by_bytes = (total + SplitBytes() - 1) / SplitBytes();
  const size_t by_entries = (e - b + SplitEntries() - 1) / SplitEntries();
  const size_t parts = std::max<size_t>({1, by_bytes, by_entries});
  const size_t target = std::max<size_t>(1, total / parts);
  std::vector<Run> runs;
  size_t cur_b = b, cur_bytes = 0, done = 0, next_cut = target;
  auto close = [&](size_t at) {
    if (at > cur_b) runs.push_back({cur_b, at, false});
    cur_b = at;
    cur_bytes = 0;
  };
  for (size_t i = b; i < e;) {
    size_t j = i + 1;
    while (j < e && items[j].key[q] == items[i].key[q]) ++j;
    const size_t gbytes = ItemsBytes(items, i, j);
    if (!FitsOneLeaf(j - i, gbytes)) {
      close(i);
      runs.push_back({i, j, true});
      cur_b = j;
    } else {
      // cur_bytes is the bytes of items [cur_b, i).
      if (cur_bytes > 0 &&
          (done + gbytes / 2 > next_cut || !FitsOneLeaf(j - cur_b, cur_bytes + gbytes)))
        close(i);
      cur_bytes += gbytes;
    }
    done += gbytes;
    while (next_cut <= done) next_cut += target;
    i = j;
  }
  close(e);
  auto byte_of = [&](size_t i) { return static_cast<uint8_t>(items[i].key[q]); };
  for (size_t r = 0; r < runs.size(); ++r) {
    const Run& run = runs[r];
    if (run.big) {
      Result<uint64_t> sub = BuildSubtree(items, run.b, run.e, static_cast<uint16_t>(q + 1), allocated);
      if (!sub.ok()) return sub.status();
      children->emplace_back(byte_of(run.b), *sub);
      continue;
    }
    // From the end of the previous run (or lo) to the start of the next (or hi).
    int from = r == 0 ? lo : runs[r - 1].big ? byte_of(runs[r - 1].b) + 1 : byte_of(run.b);
    int to = r + 1 == runs.size() ? hi : byte_of(runs[r + 1].b) - 1;
    Status s = BuildRunLeaf(items, run.b, run.e, q, static_cast<uint8_t>(from),
                            static_cast<uint8_t>(to), allocated, children);
    if (!s.ok()) return s;
  }
  return Status::OK();
}

Result<uint64_t> PFTree::BuildSubtree(std::vector<LeafItem>& items, size_t b, size_t e,
                                      uint16_t depth, std::vector<uint64_t>* allocated) {
  if (FitsOneLeaf(items, b, e)) return BuildLeaf(items, b, e, depth, allocated);
  // A new inner node at the first key byte after `depth` where the keys differ. Items are
  // sorted, so the first and last key bound the common prefix; a key ending there sorts
  // first (term).
  std::string_view first = items[b].key, last = items[e - 1].key;
  size_t q = depth;
  while (q < first.size() && q < last.size() && first[q] == last[q]) ++q;
  uint64_t term = 0;
  size_t i = b;
  if (first.size() == q) {
    Result<uint64_t> t = BuildLeaf(items, b, b + 1, static_cast<uint16_t>(q), allocated);
    if (!t.ok()) return t;
    term = *t;
    ++i;
  }
  std::vector<std::pair<uint8_t, uint64_t>> children;
  Status s = BuildRuns(items, i, e, static_cast<uint16_t>(q), 0, 255, allocated, &children);
  if (!s.ok()) return s;
  Result<uint64_t> node = BuildInnerNode(pc(), *alloc_, base_, depth, first.substr(depth, q - depth),
                                         term, children,
                                         /*flush=*/!pm::mutant("pftree.skip_split_node_persist"));
  if (!node.ok()) return node;
  allocated->push_back(*node);
  return *node;
}

void PFTree::FreeBlocks(const std::vector<uint64_t>& blocks) {
  // Never published: no reader can hold them. Leaves carry fresh DRAM metadata.
  for (uint64_t off : blocks) {
    auto* h = pool_->at<LeafHeader>(off);
    if (h->type == static_cast<uint8_t>(NodeType::kLeafArray) && h->aux_gen == gen_) {
      FreeAux(AuxOf(h));
    }
    alloc_->free(off);
  }
}

void PFTree::Retire(uint64_t ref) {
  void* aux = IsLeafRef(ref) ? reinterpret_cast<void*>(at<LeafHeader>(ref)->aux) : nullptr;
  epoch().Retire(this, RefOffset(ref), aux, alloc_->block_size(RefOffset(ref)));
}

void PFTree::Reclaim(uint64_t offset, void* aux) {
  FreeAux(static_cast<LeafAux*>(aux));
  alloc_->free(offset);
}

}  // namespace pmindex::pftree
