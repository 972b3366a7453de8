// WORT operations: lookup, insert/update/upsert, remove (see wort.h for the crash argument).
#include "radix/wort/wort.h"

#include <algorithm>
#include <mutex>

#include "pm/alloc.h"
#include "pm/mutant.h"
#include "pm/persist.h"
#include "radix/common/key.h"
#include "radix/common/node_search.h"
#include "radix/common/pm_tree_util.h"

namespace pmindex::radix {

namespace {
using Span = KeySpan<4>;
constexpr char kSkipLeafPersist[] = "wort.skip_leaf_persist";
constexpr char kSplitSkipParentPersist[] = "wort.split_skip_parent_persist";
}  // namespace

Wort::Wort(std::unique_ptr<Pool> pool) : pool_(std::move(pool)) {
  traits_ = Registration().traits;
}

// A destructor cannot report an error: users who need to see one call close() first.
Wort::~Wort() { close().IgnoreError(); }

Status Wort::close() {
  std::unique_lock lock(mu_);
  if (!pool_) return Status::OK();
  Status s = pool_->Close();
  pool_.reset();
  return s;
}

IndexRegistration Wort::Registration() {
  IndexRegistration r;
  r.traits.name = "wort";
  r.traits.kind = IndexKind::kWORT;
  r.traits.persistent = true;
  r.traits.ordered = true;
  r.traits.byte_keys = true;
  r.traits.max_key_size = kMaxKeySize;
  r.traits.max_value_size = kMaxValueSize;
  r.traits.concurrency =
      "writer-preferring reader-writer lock (many readers or one writer; single-threaded design)";
  r.traits.durability = "every acknowledged operation (8-byte failure-atomic commits)";
  r.traits.description = "WORT: write-optimal radix tree, 4-bit span, lazy header repair";
  r.attach = [](std::unique_ptr<Pool> pool, bool) -> Result<std::unique_ptr<Index>> {
    return std::unique_ptr<Index>(new Wort(std::move(pool)));
  };
  r.params = "wort span=4 prefix=5";
  return r;
}

const PmLeaf* Wort::AnyLeaf(const WortNode* n) const {
  for (;;) {
    uint64_t w = n->end;
    for (unsigned c = 0; w == 0 && c < WortNode::kFanout; ++c) w = n->child[c];
    if (w == 0 || !ValidChildWord(*pool_, w, kTagNode4, sizeof(WortNode))) return nullptr;
    if (IsLeafChild(w)) return leaf(w);
    n = node(w);
  }
}

PrefixHeader Wort::RepairHeader(WortNode* n, uint32_t depth, uint64_t word) {
  const PrefixHeader h = PrefixHeader::Decode(word);
  const PmLeaf* l = AnyLeaf(n);
  if (l == nullptr || h.pos() < depth) return h;  // corrupt; verify() names it
  PrefixHeader fixed = h.Repaired<4>(depth, l->key_ptr());
  // Lazy repair: the same value whoever writes it, so a lost race is harmless.
  std::atomic_ref<uint64_t>(n->header).compare_exchange_strong(word, fixed.Encode());
  pm::persist(&n->header, 8);
  repairs_.fetch_add(1, std::memory_order_relaxed);
  return fixed;
}

bool Wort::lookup(std::string_view key, std::string* value) {
  if (!KeyInRange(key)) return false;
  std::shared_lock lock(mu_);
  const uint8_t* k = Bytes(key);
  const size_t units = Span::units(key.size());
  uint64_t w = *RootSlot(*pool_);
  uint32_t depth = 0;
  while (w != 0) {
    if (IsLeafChild(w)) {
      const PmLeaf* l = leaf(w);
      if (!l->KeyEquals(key)) return false;
      if (value) value->assign(l->value());
      return true;
    }
    WortNode* n = node(w);
    const PrefixHeader h = Header(n, depth);
    if (h.pos() > units) return false;
    for (unsigned i = 0; i < h.stored(); ++i)
      if (h.prefix[i] != Span::unit(k, depth + i)) return false;
    depth = h.pos();
    if (depth == units) {
      w = n->end;
    } else {
      w = n->child[Span::unit(k, depth)];
      ++depth;
    }
  }
  return false;
}

Status Wort::insert(std::string_view key, std::string_view value) {
  return Put(key, value, PutMode::kInsert);
}
Status Wort::update(std::string_view key, std::string_view value) {
  return Put(key, value, PutMode::kUpdate);
}
Status Wort::upsert(std::string_view key, std::string_view value) {
  return Put(key, value, PutMode::kUpsert);
}

Status Wort::Put(std::string_view key, std::string_view value, PutMode mode) {
  if (Status s = CheckKeyValue(key, value); !s.ok()) return s;
  std::unique_lock lock(mu_);
  const uint8_t* k = Bytes(key);
  const size_t units = Span::units(key.size());
  uint64_t* slot = RootSlot(*pool_);
  uint32_t depth = 0;
  for (;;) {
    const uint64_t w = *slot;
    if (w == 0) {
      if (mode == PutMode::kUpdate) return Status::NotFound();
      return LinkNewLeaf(slot, key, value);
    }
    if (IsLeafChild(w)) {
      PmLeaf* l = leaf(w);
      if (l->KeyEquals(key)) {
        if (mode == PutMode::kInsert) return Status::AlreadyExists();
        return ReplaceLeafValue(*pool_, slot, l, value, kSkipLeafPersist);
      }
      if (mode == PutMode::kUpdate) return Status::NotFound();
      return ExpandLeaf(slot, depth, key, value);
    }
    WortNode* n = node(w);
    const PrefixHeader h = Header(n, depth);
    if (h.prefix_len != 0) {
      // Units of the prefix the key matches (stops where the key ends).
      const uint32_t limit = std::min<uint32_t>(h.prefix_len, units - depth);
      uint32_t m = 0;
      const uint32_t stored = std::min<uint32_t>(h.stored(), limit);
      while (m < stored && h.prefix[m] == Span::unit(k, depth + m)) ++m;
      if (m == stored && m < limit) {
        m = static_cast<uint32_t>(
            CommonUnits<4>(k, AnyLeaf(n)->key_ptr(), depth + m, depth + limit) - depth);
      }
      if (m < h.prefix_len) {
        if (mode == PutMode::kUpdate) return Status::NotFound();
        return SplitPrefix(slot, n, h, m, key, value);
      }
    }
    depth = h.pos();
    if (depth == units) {
      slot = &n->end;
    } else {
      slot = &n->child[Span::unit(k, depth)];
      ++depth;
    }
  }
}

// Empty slot: persist the leaf, then commit the child word. 2 fences.
Status Wort::LinkNewLeaf(uint64_t* slot, std::string_view key, std::string_view value) {
  uint64_t word;
  Result<PmLeaf*> l = NewLeaf(*pool_, key, value, &word);
  if (!l.ok()) return l.status();
  if (!pm::mutant(kSkipLeafPersist)) pm::flush(*l, (*l)->size());
  pm::fence();
  CommitWord(slot, word);
  return Status::OK();
}

// A leaf slot must hold two keys: a new node at `depth` whose prefix is their common run
// takes both leaves; it is persisted with the new leaf and then swapped in. 2 fences.
Status Wort::ExpandLeaf(uint64_t* slot, uint32_t depth, std::string_view key,
                        std::string_view value) {
  const uint64_t old_word = *slot;
  const PmLeaf* old = leaf(old_word);
  const uint8_t* k = Bytes(key);
  const size_t units = Span::units(key.size());
  const size_t old_units = Span::units(old->key_len);
  const uint32_t pos = static_cast<uint32_t>(
      CommonUnits<4>(k, old->key_ptr(), depth, std::min(units, old_units)));

  Result<uint64_t> off = pool_->allocator().allocate(sizeof(WortNode), /*zero=*/true);
  if (!off.ok()) return off.status();
  uint64_t leaf_word;
  Result<PmLeaf*> l = NewLeaf(*pool_, key, value, &leaf_word);
  if (!l.ok()) {
    pool_->allocator().free(*off);
    return l.status();
  }
  auto* n = pool_->at<WortNode>(*off);
  n->header = PrefixHeader::Make<4>(depth, pos - depth, k).Encode();
  (pos == units ? n->end : n->child[Span::unit(k, pos)]) = leaf_word;
  (pos == old_units ? n->end : n->child[Span::unit(old->key_ptr(), pos)]) = old_word;
  if (!pm::mutant(kSkipLeafPersist)) pm::flush(*l, (*l)->size());
  pm::flush(n, sizeof(WortNode));
  pm::fence();
  CommitWord(slot, MakeChild(*off, kTagNode4));
  return Status::OK();
}

// The key diverges `match` units into node n's prefix: a new parent at n's depth holding n
// and the new leaf is persisted and swapped in (commit), then n's header is rewritten with
// one 8-byte store. A crash before that rewrite is repaired lazily by Header(). 3 fences.
Status Wort::SplitPrefix(uint64_t* slot, WortNode* n, const PrefixHeader& h, uint32_t match,
                         std::string_view key, std::string_view value) {
  const uint8_t* k = Bytes(key);
  const size_t units = Span::units(key.size());
  const uint8_t* below = AnyLeaf(n)->key_ptr();  // n's full prefix
  const uint32_t pos = h.depth + match;

  Result<uint64_t> off = pool_->allocator().allocate(sizeof(WortNode), /*zero=*/true);
  if (!off.ok()) return off.status();
  uint64_t leaf_word;
  Result<PmLeaf*> l = NewLeaf(*pool_, key, value, &leaf_word);
  if (!l.ok()) {
    pool_->allocator().free(*off);
    return l.status();
  }
  auto* parent = pool_->at<WortNode>(*off);
  parent->header = PrefixHeader::Make<4>(h.depth, match, k).Encode();
  parent->child[Span::unit(below, pos)] = *slot;
  (pos == units ? parent->end : parent->child[Span::unit(k, pos)]) = leaf_word;
  if (!pm::mutant(kSkipLeafPersist)) pm::flush(*l, (*l)->size());
  if (!pm::mutant(kSplitSkipParentPersist)) pm::flush(parent, sizeof(WortNode));
  pm::fence();
  CommitWord(slot, MakeChild(*off, kTagNode4));
  // n now hangs one level lower; its discriminating position is unchanged.
  CommitWord(&n->header, PrefixHeader::Make<4>(pos + 1, h.prefix_len - match - 1, below).Encode());
  return Status::OK();
}

Status Wort::remove(std::string_view key) {
  if (!KeyInRange(key)) return Status::NotFound();
  std::unique_lock lock(mu_);
  const uint8_t* k = Bytes(key);
  const size_t units = Span::units(key.size());
  // The slots that lead to each node on the path, root first (one node per unit at most).
  uint64_t* path[Span::units(kMaxKeySize) + 2];
  size_t nodes = 0;
  uint64_t* slot = RootSlot(*pool_);
  uint32_t depth = 0;
  for (;;) {
    const uint64_t w = *slot;
    if (w == 0) return Status::NotFound();
    if (IsLeafChild(w)) {
      if (!leaf(w)->KeyEquals(key)) return Status::NotFound();
      break;
    }
    WortNode* n = node(w);
    const PrefixHeader h = Header(n, depth);
    if (h.pos() > units) return Status::NotFound();
    path[nodes++] = slot;
    depth = h.pos();
    if (depth == units) {
      slot = &n->end;
    } else {
      slot = &n->child[Span::unit(k, depth)];
      ++depth;
    }
  }
  // Clear the highest slot whose subtree holds nothing but this leaf, so that no empty node
  // is ever durable; everything below it is freed once the clear is persisted.
  uint64_t* unlink = slot;
  size_t first_freed = nodes;
  while (first_freed > 0) {
    const WortNode* n = node(*path[first_freed - 1]);
    unsigned used = n->end != 0;
    for (unsigned c = 0; c < WortNode::kFanout; ++c) used += n->child[c] != 0;
    if (used != 1) break;
    --first_freed;
    unlink = path[first_freed];
  }
  const uint64_t leaf_word = *slot;
  std::vector<uint64_t> freed;
  for (size_t i = first_freed; i < nodes; ++i) freed.push_back(*path[i]);
  CommitWord(unlink, 0);
  pool_->allocator().free(ChildOffset(leaf_word));
  for (uint64_t w : freed) pool_->allocator().free(ChildOffset(w));
  return Status::OK();
}

Status Wort::recover() {
  // Nothing to finish eagerly: interrupted splits are repaired lazily by traversal, and
  // blocks of interrupted inserts are unreachable (the allocator rebuild frees them).
  return Status::OK();
}

}  // namespace pmindex::radix
