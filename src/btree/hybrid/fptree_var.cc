// FPTree with variable-size keys: the write, read, structural and recovery paths. Layouts,
// crash arguments and thread safety: fptree_var.h.
#include "btree/hybrid/fptree_var.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <mutex>
#include <shared_mutex>
#include <unordered_set>

#include "btree/hybrid/fptree_leaf.h"
#include "pm/alloc.h"
#include "pm/mix64.h"
#include "pm/mutant.h"

namespace pmindex::btree {
namespace {

constexpr char kMutantPublishFirst[] = "fptree-var.publish_before_key_persist";
constexpr char kMutantFreeFirst[] = "fptree-var.free_key_before_bitmap_persist";

uint64_t Mask(size_t n) { return n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }

// The first 8 bytes of a key (or of what follows a prefix all keys compared share), zero
// padded, as a big-endian number: ordered as the keys are where they differ (equal ones
// need the whole keys).
uint64_t Prefix(std::string_view key) {
  uint64_t w = 0;
  if (!key.empty()) std::memcpy(&w, key.data(), std::min<size_t>(key.size(), 8));
  return __builtin_bswap64(w);
}

}  // namespace

uint8_t FPTreeVar::Fingerprint(std::string_view key) {
  return static_cast<uint8_t>(pm::Mix64Bytes(key.data(), key.size()) >> 56);
}

IndexTraits FPTreeVar::Traits() {
  IndexTraits t;
  t.name = "fptree-var";
  t.kind = kKind;
  t.persistent = true;
  t.ordered = true;
  t.byte_keys = true;
  t.max_key_size = kMaxKeySize;
  t.max_value_size = 8;
  t.concurrency = "single-writer: one reader-writer lock (readers shared)";
  t.durability = "durably linearizable: every acknowledged operation survives power failure";
  t.description =
      "FPTree leaves with byte-string keys out of line in PM (persistent key pointers, "
      "fingerprints of the key hash) under a DRAM map of leaf bounds";
  return t;
}

const IndexTraits& FPTreeVar::traits() const {
  static const IndexTraits traits = Traits();
  return traits;
}

std::vector<MutantInfo> FPTreeVar::Mutants() {
  return {{kMutantPublishFirst,
           "an insert sets and persists the bitmap bit before the key block is persisted"},
          {kMutantFreeFirst,
           "a remove frees the key block (and returns) before the bitmap clear is persistent: "
           "its fence is left to the next write, which may reuse the block"}};
}

FPTreeVar::FPTreeVar(std::unique_ptr<Pool> pool)
    : pool_(std::move(pool)),
      pc_(&pool_->persist_context()),
      base_(pool_->base()),
      root_(reinterpret_cast<BTreeRoot*>(pool_->root_area())) {}

Result<std::unique_ptr<Index>> FPTreeVar::Attach(std::unique_ptr<Pool> pool, bool fresh) {
  auto* root = reinterpret_cast<BTreeRoot*>(pool->root_area());
  const uint64_t kind = static_cast<uint64_t>(kKind) | uint64_t{kLayoutVersion - 1} << 32;
  // As HybridTree::Attach: an existing pool without the magic is damaged unless no chunk was
  // ever carved (nothing can be lost).
  const bool never_written = root->magic == 0 && pool->allocator().carved_chunks() == 0;
  if (fresh || never_written) {
    root->head = 0;
    root->kind = kind;
    pm::PersistContext& pc = pool->persist_context();
    pc.flush(root, sizeof(*root));
    pc.fence();
    root->magic = kBTreeMagic;  // commit: 8-byte store after the rest is durable
    pc.persist(&root->magic, 8);
  } else if (root->magic != kBTreeMagic || root->kind != kind) {
    return Status::Corruption(pool->path() + ": root area is not a fptree-var tree");
  }
  std::unique_ptr<Index> tree(new FPTreeVar(std::move(pool)));
  if (fresh) {
    if (Status s = static_cast<FPTreeVar*>(tree.get())->recover(); !s.ok()) return s;
  }
  return tree;
}

Status FPTreeVar::close() {
  if (pool_ == nullptr) return Status::OK();
  bounds_.clear();
  Status s = pool_->Close();
  pool_.reset();
  return s;
}

// ---------------------------------------------------------------------------------------
// Reads

int FPTreeVar::find_slot(const Leaf* l, uint64_t bitmap, std::string_view key,
                         uint8_t fp) const {
  for (uint64_t m = FPTreeLayout::Matches(l, fp) & bitmap; m != 0; m &= m - 1) {
    const int i = __builtin_ctzll(m);
    if (key_at(l->kv[i].key_ref) == key) return i;  // the key is read on a match only
  }
  return -1;
}

FPTreeVar::Bounds::iterator FPTreeVar::leaf_for(std::string_view key) {
  auto it = bounds_.upper_bound(key);
  return std::prev(it);  // the head's bound is "", below every key
}

size_t FPTreeVar::collect_sorted(const Leaf* l, std::string_view from, Item* out) const {
  size_t n = 0;
  for (uint64_t m = l->bitmap; m != 0; m &= m - 1) {
    const int i = __builtin_ctzll(m);
    const std::string_view k = key_at(l->kv[i].key_ref);
    if (from.empty() || k >= from) out[n++] = Item{k, l->kv[i].key_ref, l->kv[i].value, l->fp[i]};
  }
  // The keys of a leaf are neighbours and share a long prefix: order by the 8 bytes after it.
  size_t common = n > 0 ? out[0].key.size() : 0;
  for (size_t i = 1; i < n && common > 0; ++i) {
    const std::string_view a = out[0].key.substr(0, common), b = out[i].key;
    size_t j = 0;
    while (j < a.size() && j < b.size() && a[j] == b[j]) ++j;
    common = j;
  }
  for (size_t i = 0; i < n; ++i) out[i].prefix = Prefix(out[i].key.substr(common));
  std::sort(out, out + n, [](const Item& a, const Item& b) {
    return a.prefix != b.prefix ? a.prefix < b.prefix : a.key < b.key;
  });
  return n;
}

Status FPTreeVar::lookup(std::string_view key, std::string* value) {
  if (pool_ == nullptr) return Status::InvalidArgument("index is closed");
  if (key.empty() || key.size() > kMaxKeySize) {
    return Status::InvalidArgument("keys are 1.." + std::to_string(kMaxKeySize) + " bytes");
  }
  std::shared_lock<pm::RwLock> lock(rw_);
  if (bounds_.empty()) return Status::NotFound();
  const Leaf* l = at(leaf_for(key)->second);
  const int i = find_slot(l, l->bitmap, key, Fingerprint(key));
  if (i < 0) return Status::NotFound();
  if (value != nullptr) {
    value->assign(reinterpret_cast<const char*>(&l->kv[i].value), l->kv[i].key_ref >> 56);
  }
  return Status::OK();
}

size_t FPTreeVar::scan(std::string_view start, size_t max_count, ScanCallback fn) {
  if (max_count == 0 || pool_ == nullptr) return 0;
  std::shared_lock<pm::RwLock> lock(rw_);
  if (bounds_.empty()) return 0;
  Item buf[kCap];
  size_t emitted = 0;
  for (auto it = leaf_for(start); it != bounds_.end(); ++it) {
    const size_t n = collect_sorted(at(it->second), start, buf);
    start = std::string_view();  // every key of the leaves after the first lies above it
    for (size_t i = 0; i < n; ++i) {
      const std::string_view value(reinterpret_cast<const char*>(&buf[i].value),
                                   buf[i].key_ref >> 56);
      const bool more = fn(buf[i].key, value);
      if (++emitted == max_count || !more) return emitted;
    }
  }
  return emitted;
}

// ---------------------------------------------------------------------------------------
// Writes

Status FPTreeVar::write(Op op, std::string_view key, std::string_view value) {
  if (key.empty() || key.size() > kMaxKeySize) {
    return Status::InvalidArgument("keys are 1.." + std::to_string(kMaxKeySize) + " bytes");
  }
  if (op != Op::kRemove && value.size() > 8) {
    return Status::InvalidArgument("values are at most 8 bytes");
  }
  if (pool_ == nullptr) return Status::InvalidArgument("index is closed");
  uint64_t v = 0;
  if (!value.empty()) std::memcpy(&v, value.data(), value.size());  // data() may be null
  for (;;) {
    Status s;
    {
      std::unique_lock<pm::RwLock> lock(rw_);
      s = write_locked(op, key, v, static_cast<uint8_t>(value.size()));
    }
    if (!s.IsOutOfSpace() || !pool_->allocator().reclaim_now()) return s;
  }
}

Status FPTreeVar::create_first_leaf() {
  Result<uint64_t> block = pool_->allocator().allocate(sizeof(Leaf));
  if (!block.ok()) return block.status();
  init_leaf(at(*block), nullptr, 0, 0);
  pc_->fence();  // the leaf is durable before the head names it
  root_->head = *block;
  pc_->persist(&root_->head, 8);  // commit: crash before -> empty tree, block freed by rebuild
  bounds_.emplace(std::string(), *block);
  return Status::OK();
}

Status FPTreeVar::new_key_block(std::string_view key, bool flush, uint64_t* ref) {
  Result<uint64_t> got = pool_->allocator().allocate(kKeyBlockHeader + key.size());
  if (!got.ok()) return got.status();
  auto* b = reinterpret_cast<KeyBlock*>(base_ + *got);
  b->length = key.size();
  std::memcpy(b->bytes, key.data(), key.size());
  // Crash argument: flushed here, durable by the caller's fence before any entry
  // references it; unreachable until then.
  if (flush) pc_->flush(b, kKeyBlockHeader + key.size());
  *ref = *got;
  return Status::OK();
}

Status FPTreeVar::write_locked(Op op, std::string_view key, uint64_t value, uint8_t vlen) {
  if (bounds_.empty()) {
    if (op == Op::kUpdate || op == Op::kRemove) return Status::NotFound();
    if (Status s = create_first_leaf(); !s.ok()) return s;
  }
  const auto it = leaf_for(key);
  Leaf* l = at(it->second);
  const uint8_t fp = Fingerprint(key);
  const uint64_t bitmap = l->bitmap;
  const int i = find_slot(l, bitmap, key, fp);
  if (op == Op::kInsert && i >= 0) return Status::AlreadyExists();
  if ((op == Op::kUpdate || op == Op::kRemove) && i < 0) return Status::NotFound();
  if (op == Op::kRemove) return remove_at(it, l, i);
  if (bitmap == ~uint64_t{0}) return replace(it, key, value, vlen, i);

  const bool late_key = pm::mutant(kMutantPublishFirst);
  uint64_t ref;
  if (i >= 0) {
    ref = l->kv[i].key_ref & kOffsetMask;  // an update keeps the key block
  } else if (Status s = new_key_block(key, !late_key, &ref); !s.ok()) {
    return s;
  }
  const int j = __builtin_ctzll(~bitmap);
  l->kv[j].key_ref = ref | uint64_t{vlen} << 56;
  l->kv[j].value = value;
  l->fp[j] = fp;
  pc_->flush(&l->kv[j], sizeof(Leaf::Slot));
  pc_->flush(&l->fp[j], 1);
  pc_->fence();  // slot and fingerprint (and the key block above) durable before the commit
  uint64_t next = bitmap | uint64_t{1} << j;
  if (i >= 0) next &= ~(uint64_t{1} << i);
  l->bitmap = next;  // commit: one 8-byte store sets j (and clears i for an update)
  pc_->persist(&l->bitmap, 8);
  if (late_key) pc_->persist(key_at(ref).data() - kKeyBlockHeader, kKeyBlockHeader + key.size());
  return Status::OK();
}

Status FPTreeVar::remove_at(Bounds::iterator it, Leaf* l, int slot) {
  const uint64_t bitmap = l->bitmap & ~(uint64_t{1} << slot);
  const uint64_t block = l->kv[slot].key_ref & kOffsetMask;
  l->bitmap = bitmap;
  if (pm::mutant(kMutantFreeFirst)) {  // the bug: the block is free while a durable bit names it
    pool_->allocator().free(block);
    pc_->flush(&l->bitmap, 8);
    return Status::OK();
  }
  pc_->persist(&l->bitmap, 8);
  // Crash argument: the clear is durable, so no entry a recovery sees references the block.
  pool_->allocator().free(block);
  if (bitmap == 0 && it != bounds_.begin()) {
    unlink_empty(it);
  } else if (static_cast<size_t>(__builtin_popcountll(bitmap)) <= kCap / 2) {
    try_merge(it);
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------------------
// Structural changes (copy-on-write; crash argument in fptree_var.h)

void FPTreeVar::init_leaf(Leaf* l, const Item* items, size_t n, uint64_t next) {
  l->bitmap = Mask(n);
  l->next = next;
  std::memset(l->pad, 0, sizeof(l->pad));
  std::memset(l->fp, 0, sizeof(l->fp));
  for (size_t i = 0; i < n; ++i) {
    l->fp[i] = items[i].fp;
    l->kv[i] = Leaf::Slot{items[i].key_ref, items[i].value};
  }
  pc_->flush(l, offsetof(Leaf, kv) + n * sizeof(Leaf::Slot));  // the caller fences
}

void FPTreeVar::relink(Bounds::iterator it, uint64_t to) {
  uint64_t* link = it == bounds_.begin() ? &root_->head : &at(std::prev(it)->second)->next;
  *link = to;
  pc_->persist(link, 8);  // the commit point of the structural change
}

Status FPTreeVar::replace(Bounds::iterator it, std::string_view key, uint64_t value,
                          uint8_t vlen, int slot) {
  Leaf* old = at(it->second);
  Item buf[kCap + 1];
  size_t n = collect_sorted(old, std::string_view(), buf);
  uint64_t fresh = 0;  // the pending insert's key block
  if (slot >= 0) {
    Item* e = std::lower_bound(buf, buf + n, key,
                               [](const Item& a, std::string_view k) { return a.key < k; });
    e->key_ref = (e->key_ref & kOffsetMask) | uint64_t{vlen} << 56;
    e->value = value;
  } else {
    if (Status s = new_key_block(key, true, &fresh); !s.ok()) return s;
    Item* pos = std::lower_bound(buf, buf + n, key,
                                 [](const Item& a, std::string_view k) { return a.key < k; });
    std::move_backward(pos, buf + n, buf + n + 1);
    *pos = Item{key_at(fresh), fresh | uint64_t{vlen} << 56, value, Fingerprint(key), 0};
    ++n;
  }
  uint64_t blocks[2];
  if (Status s = pool_->allocator().allocate_bulk(sizeof(Leaf), 2, blocks); !s.ok()) {
    if (fresh != 0) pool_->allocator().free(fresh);  // never published
    return s;
  }
  const size_t left = n / 2;
  init_leaf(at(blocks[1]), buf + left, n - left, old->next);
  init_leaf(at(blocks[0]), buf, left, blocks[1]);
  pc_->fence();  // new leaves durable before they become reachable
  std::string right_bound(buf[left].key);  // copy before the old leaf goes
  relink(it, blocks[0]);
  it->second = blocks[0];
  bounds_.emplace_hint(std::next(it), std::move(right_bound), blocks[1]);
  pool_->allocator().free(off(old));  // exclusive lock: no reader holds it
  return Status::OK();
}

void FPTreeVar::unlink_empty(Bounds::iterator it) {
  Leaf* l = at(it->second);
  relink(it, l->next);  // commit: before, an empty leaf is linked (a valid state)
  bounds_.erase(it);
  pool_->allocator().free(off(l));
}

void FPTreeVar::try_merge(Bounds::iterator it) {
  const auto right_it = std::next(it);
  if (right_it == bounds_.end()) return;
  Leaf* l = at(it->second);
  Leaf* right = at(right_it->second);
  if (static_cast<size_t>(__builtin_popcountll(l->bitmap) + __builtin_popcountll(right->bitmap)) >
      kCap * 3 / 4) {
    return;
  }
  Result<uint64_t> block = pool_->allocator().allocate(sizeof(Leaf));
  if (!block.ok()) return;  // best effort: a full pool keeps both leaves
  Item buf[kCap];
  size_t n = collect_sorted(l, std::string_view(), buf);
  n += collect_sorted(right, std::string_view(), buf + n);
  init_leaf(at(*block), buf, n, right->next);
  pc_->fence();
  relink(it, *block);  // commit: one store swings the chain past both old leaves
  it->second = *block;
  bounds_.erase(right_it);
  pool_->allocator().free(off(l));
  pool_->allocator().free(off(right));
}

// ---------------------------------------------------------------------------------------
// Recovery, blocks, checks

Status FPTreeVar::recover_leaf(const Leaf* l, uint64_t o) const {
  for (uint64_t m = l->bitmap; m != 0; m &= m - 1) {
    const int i = __builtin_ctzll(m);
    const uint64_t ref = l->kv[i].key_ref;
    const uint64_t b = ref & kOffsetMask;
    const bool ok = (ref >> 56) <= 8 && b >= 4096 && b + kKeyBlockHeader <= pool_->size() &&
                    reinterpret_cast<const KeyBlock*>(base_ + b)->length - 1 < kMaxKeySize &&
                    b + kKeyBlockHeader + key_at(ref).size() <= pool_->size();
    if (!ok) {
      return Status::Corruption("leaf at offset " + std::to_string(o) + ": slot " +
                                std::to_string(i) + " has a bad key reference " +
                                std::to_string(ref));
    }
  }
  return Status::OK();
}

Status FPTreeVar::recover() {
  bounds_.clear();
  const uint64_t size = pool_->size();
  const uint64_t max_leaves = size / sizeof(Leaf) + 1;
  uint64_t walked = 0;
  std::string last;  // the previous leaf's bound
  for (uint64_t o = root_->head; o != 0; o = at(o)->next) {
    if (o % 64 != 0 || o < 4096 || o + sizeof(Leaf) > size) {
      return Status::Corruption("leaf offset " + std::to_string(o) + " outside the pool");
    }
    if (++walked > max_leaves) return Status::Corruption("leaf chain has a cycle");
    const Leaf* l = at(o);
    if (Status s = recover_leaf(l, o); !s.ok()) return s;
    if (l->bitmap == 0 && !bounds_.empty()) continue;  // unlinked below
    std::string bound;  // the head's is the empty key, any other leaf's its smallest key
    if (!bounds_.empty()) {
      Item buf[kCap];
      collect_sorted(l, std::string_view(), buf);
      bound = std::string(buf[0].key);
      if (bound <= last) {
        return Status::Corruption("leaf at offset " + std::to_string(o) +
                                  ": smallest key out of order");
      }
    }
    last = bound;
    bounds_.emplace_hint(bounds_.end(), std::move(bound), o);
  }
  // Only once the chain checked out (a refused open writes nothing): unlink the empty leaves
  // other than the head that a crash between a remove and its unlink left, one persisted
  // 8-byte store each (the rebuild then frees them).
  for (auto it = std::next(bounds_.begin(), bounds_.empty() ? 0 : 1); it != bounds_.end(); ++it) {
    uint64_t* link = &at(std::prev(it)->second)->next;
    if (*link != it->second) {
      *link = it->second;
      pc_->persist(link, 8);
    }
  }
  if (!bounds_.empty()) {
    uint64_t* link = &at(std::prev(bounds_.end())->second)->next;
    if (*link != 0) {
      *link = 0;  // only empty leaves followed the last kept one
      pc_->persist(link, 8);
    }
  }
  return Status::OK();
}

Status FPTreeVar::visit_blocks(BlockVisitor& visitor) {
  for (uint64_t o = root_->head; o != 0; o = at(o)->next) {
    if (Status s = visitor.visit(o); !s.ok()) return s;
    const Leaf* l = at(o);
    for (uint64_t m = l->bitmap; m != 0; m &= m - 1) {  // the key blocks of live entries
      if (Status s = visitor.visit(l->kv[__builtin_ctzll(m)].key_ref & kOffsetMask); !s.ok()) {
        return s;
      }
    }
  }
  return Status::OK();
}

Status FPTreeVar::verify_leaf(const Leaf* l, const std::string& where, std::string_view low,
                              std::string_view high, bool last,
                              std::vector<uint64_t>* refs) const {
  Item buf[kCap];
  const size_t n = collect_sorted(l, std::string_view(), buf);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t b = buf[i].key_ref & kOffsetMask;
    if (pool_->allocator().block_size(b) < kKeyBlockHeader + buf[i].key.size()) {
      return Status::Corruption(where + ": key block at " + std::to_string(b) +
                                " is not an allocated block of its length");
    }
    if (buf[i].fp != Fingerprint(buf[i].key)) {
      return Status::Corruption(where + ": a fingerprint does not match its key");
    }
    if ((i > 0 && buf[i].key <= buf[i - 1].key) || buf[i].key < low ||
        (!last && buf[i].key >= high)) {
      return Status::Corruption(where + ": key out of order or outside the leaf's range");
    }
    refs->push_back(b);
  }
  return Status::OK();
}

Status FPTreeVar::verify() {
  if (pool_ == nullptr) return Status::InvalidArgument("index is closed");
  std::unique_lock<pm::RwLock> lock(rw_);
  std::vector<uint64_t> refs;
  auto it = bounds_.begin();
  size_t count = 0;
  for (uint64_t o = root_->head; o != 0; o = at(o)->next, ++it, ++count) {
    const std::string where = "leaf " + std::to_string(count) + " at offset " + std::to_string(o);
    if (o % 64 != 0 || o < 4096 || o + sizeof(Leaf) > pool_->size() || count > bounds_.size()) {
      return Status::Corruption(where + ": outside the pool or a cycle");
    }
    if (it == bounds_.end() || it->second != o) {
      return Status::Corruption(where + ": the DRAM bounds do not list it in chain order");
    }
    const auto next = std::next(it);
    const bool last = next == bounds_.end();
    if (Status s = recover_leaf(at(o), o); !s.ok()) return s;
    if (Status s = verify_leaf(at(o), where, it->first, last ? "" : std::string_view(next->first),
                               last, &refs);
        !s.ok()) {
      return s;
    }
  }
  if (it != bounds_.end()) return Status::Corruption("the DRAM bounds list more leaves");
  if (!bounds_.empty() && !bounds_.begin()->first.empty()) {
    return Status::Corruption("the first leaf's bound is not the empty key");
  }
  std::sort(refs.begin(), refs.end());
  if (std::adjacent_find(refs.begin(), refs.end()) != refs.end()) {
    return Status::Corruption("a key block is referenced by two live entries");
  }
  return Status::OK();
}

IndexStats FPTreeVar::stats() {
  IndexStats st;
  if (pool_ == nullptr) return st;
  std::shared_lock<pm::RwLock> lock(rw_);
  uint64_t key_bytes = 0;
  for (const auto& [bound, o] : bounds_) {
    const Leaf* l = at(o);
    st.pm_bytes += pool_->allocator().block_size(o);
    for (uint64_t m = l->bitmap; m != 0; m &= m - 1) {
      ++st.keys;
      key_bytes += pool_->allocator().block_size(l->kv[__builtin_ctzll(m)].key_ref & kOffsetMask);
    }
  }
  st.pm_bytes += key_bytes;
  st.dram_bytes = bounds_.size() * (sizeof(Bounds::value_type) + 32);
  for (const auto& [bound, o] : bounds_) st.dram_bytes += bound.capacity() > 15 ? bound.size() : 0;
  st.nodes = {{"leaves", bounds_.size()}, {"key_block_bytes", key_bytes}};
  return st;
}

IndexRegistration FPTreeVarRegistration() {
  IndexRegistration r;
  r.traits = FPTreeVar::Traits();
  r.attach = [](std::unique_ptr<Pool> pool, bool fresh) {
    return FPTreeVar::Attach(std::move(pool), fresh);
  };
  r.params = "leaf_bytes=" + std::to_string(sizeof(FPTreeVarLeaf)) +
             ",capacity=" + std::to_string(FPTreeVarLeaf::kCapacity) +
             ",max_key=" + std::to_string(FPTreeVar::kMaxKeySize);
  r.mutants = FPTreeVar::Mutants();
  r.crash_scenarios = {"shift-delete-duplicate", "count-vs-entries", "split-sibling-early"};
  return r;
}

}  // namespace pmindex::btree
