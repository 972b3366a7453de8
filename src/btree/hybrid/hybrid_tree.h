// The hybrid B+tree: volatile inner nodes in DRAM (inner_tree.h) over persistent leaves in a
// singly linked list in the pool, with the leaf layout as a template parameter. NV-Tree,
// wB+-Tree, wB+-Tree-SO, FPTree, RNTree and RNTree+DS are this tree with one layout each,
// as the RNTree paper compared them.
//
// Persistent state: the root area of the pool holds {magic, layout kind, head}; head is the
// leftmost leaf (0: empty tree). Every leaf carries `next` (pool offset of its right neighbour)
// and `low_key`, the lower bound of its key range, written once when the leaf is built and
// never changed (the leftmost leaf's is 0). Everything else in a leaf belongs to its layout.
//
// Structural changes are copy-on-write, one protocol for every layout: a leaf that has no
// room (or whose log is full of obsolete entries) is REPLACED by one or two new leaves built
// from its live entries plus the pending operation:
//   1. build the new leaves (their next is the old leaf's next), flush them, fence;
//   2. swing the predecessor's next (or the head) to the first new leaf: one 8-byte store,
//      persisted (the commit point);
//   3. edit the DRAM parent, mark the old leaf obsolete, retire it through epochs.
// Crash argument: before step 2's store reaches media the chain is the old one and the new
// leaves are unreachable (the allocator's rebuild frees them: the interrupted split rolls
// back); after it, the chain holds the new leaves, durable since step 1. Removing an empty
// leaf is the same with zero new leaves (the predecessor's next skips it), merging two
// underfull neighbours the same with one new leaf for two old ones. So a split costs 2
// fences including the insert that caused it, and recovery has no split to finish. (RNTree's
// pool variant split=native splits in place with an undo copy instead: native_split_undo and the
// layout's SplitInPlace / RollBackSplit.)
// (FPTree's split=native variant splits in place under its micro-log instead:
// native_split_micro_log, recover_split and fptree_leaf.h; its readers=retraverse readers
// restart from the root on a locked leaf: read_begin.)
//
// Space reuse: a remove that leaves a leaf at most half full merges it with its right
// neighbour when both fit three quarters of a leaf, which frees a leaf block; a full log is
// compacted into one leaf instead of split when no second block is free; and the tree keeps
// one spare leaf block (reserve_) for a compaction or merge in a full pool, so a remove never
// fails for want of space (NV-Tree's remove appends to a full log by compacting it into the
// reserve: the same copy-on-write replacement, crash-safe for the same reason).
//
// Recovery walks the chain from the head, lets the layout repair and reset each leaf (volatile
// fields, interrupted slot-array writes), checks that low keys increase, and bulk-loads the
// inner nodes from the (low_key, leaf) pairs.
//
// Concurrency: every layout runs concurrent writers, FPTree's selective concurrency. Readers are
// optimistic (leaf version word, leaf_common.h); a writer locks one leaf through its persists (the
// layout's Write), and a replacement (split, compaction, merge, unlink) also locks the predecessor
// whose `next` it swings (lock_pred) and the inner node it edits (inner_.lock_parent); the leaf it
// replaces is marked obsolete, so a writer or reader that reaches it starts again from the root.
// Every operation holds an allocator epoch guard; a replaced leaf is retired inside it and freed
// once no guard that could hold it remains: at the guard's close when no other thread ever opened
// a guard (pm/epoch.h, so a single-threaded run gets the block back at its next allocation).
// NV-Tree and wB+-Tree were single-threaded designs; their layouts lock the leaf around every write
// like FPTree's, with the same persists per operation and the same persistent format
// (doc/btree.md). Inner nodes are never freed.
#ifndef PMINDEX_BTREE_HYBRID_TREE_H_
#define PMINDEX_BTREE_HYBRID_TREE_H_

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "btree/hybrid/inner_tree.h"
#include "btree/hybrid/leaf_common.h"
#include "btree/hybrid/variant.h"
#include "pm/alloc.h"
#include "pm/persist.h"
#include "pmindex/index.h"

namespace pmindex::btree {

// The tree's words in the pool's root area.
//
//   offset 0  magic   kBTreeMagic once initialized
//   offset 8  kind    IndexKind of the layout (a pool of one layout never opens as another)
//                     | (Layout::kLayoutVersion - 1) << 32 (a leaf format a build cannot read
//                     is refused, not misread; version 1 stores the bare kind)
//   offset 16 head    pool offset of the leftmost leaf, 0 = empty tree
struct BTreeRoot {
  uint64_t magic;
  uint64_t kind;
  uint64_t head;
};
static_assert(sizeof(BTreeRoot) == 24 && offsetof(BTreeRoot, head) == 16);
static_assert(sizeof(BTreeRoot) <= kRootAreaSize);
inline constexpr uint64_t kBTreeMagic = 0x3165657274627068ull;  // "hpbtree1"

template <typename Layout>
class HybridTree final : public Index {
 public:
  using Leaf = typename Layout::Leaf;
  static constexpr size_t kCap = Layout::kCapacity;
  static constexpr bool kReadersWait = Layout::kReadersWaitForWriters;

  static IndexTraits Traits() {
    IndexTraits t;
    t.name = Layout::kName;
    t.kind = Layout::kKind;
    t.persistent = true;
    t.ordered = true;
    t.byte_keys = false;
    t.max_key_size = 8;
    t.max_value_size = 8;
    t.concurrency = Layout::kConcurrency;
    t.durability = "durably linearizable: every acknowledged operation survives power failure";
    t.description = Layout::kDescription;
    return t;
  }

  static Result<std::unique_ptr<Index>> Attach(std::unique_ptr<Pool> pool, bool fresh) {
    auto* root = reinterpret_cast<BTreeRoot*>(pool->root_area());
    const uint64_t kind = static_cast<uint64_t>(Layout::kKind) |
                          uint64_t{Layout::kLayoutVersion - 1} << 32;
    // Only a new pool is initialised. An existing one without the magic is damaged, unless no
    // chunk was ever carved: then nothing can be lost (an initialisation cut short by a crash
    // - which atomic pool creation keeps from being seen - or a tree never written to).
    const bool never_written = root->magic == 0 && pool->allocator().carved_chunks() == 0;
    if (fresh || never_written) {
      // A new tree is empty (head 0). The first leaf is created by the first write.
      // (A read-only pool is mapped copy-on-write: these writes never reach its file.)
      root->head = 0;
      root->kind = kind;
      pm::PersistContext& pc = pool->persist_context();
      pc.flush(root, sizeof(*root));
      pc.fence();
      root->magic = kBTreeMagic;  // commit: 8-byte store after the rest is durable
      pc.persist(&root->magic, 8);
    } else if (root->magic == kBTreeMagic && root->kind != kind &&
               static_cast<uint32_t>(root->kind) == static_cast<uint32_t>(kind)) {
      return Status::NotSupported(pool->path() + ": " + std::string(Layout::kName) +
                                  " leaf layout " + std::to_string((root->kind >> 32) + 1) +
                                  ", this build reads layout " +
                                  std::to_string(Layout::kLayoutVersion));
    } else if (root->magic != kBTreeMagic || root->kind != kind) {
      return Status::Corruption(pool->path() + ": root area is not a " +
                                std::string(Layout::kName) + " tree");
    }
    // Every layout's variants (variant.h), by what each layout supports; a layout declares
    // its own with `static constexpr HybridVariantSupport kVariants`.
    Result<HybridVariant> variant =
        ParseHybridVariant(Layout::kName, pool->index_params(), LayoutVariants());
    if (!variant.ok()) return variant.status();
    std::unique_ptr<Index> tree(new HybridTree(std::move(pool), *variant));
    if (fresh) {
      if (Status s = static_cast<HybridTree*>(tree.get())->recover(); !s.ok()) return s;
    }
    return tree;
  }

  // A destructor cannot report an error: users who need to see one call close() first.
  ~HybridTree() override { close().IgnoreError(); }

  // The pool's: a variant may change them (writes=basic: conditional_writes false).
  const IndexTraits& traits() const override { return traits_; }

  Status insert(std::string_view key, std::string_view value) override {
    return write<Op::kInsert>(key, value);
  }
  Status update(std::string_view key, std::string_view value) override {
    return write<Op::kUpdate>(key, value);
  }
  Status upsert(std::string_view key, std::string_view value) override {
    return write<Op::kUpsert>(key, value);
  }
  Status remove(std::string_view key) override { return write<Op::kRemove>(key, {}); }

  Status lookup(std::string_view key, std::string* value) override {
    if (pool_ == nullptr) return Status::InvalidArgument("index is closed");
    if (key.size() != 8) return Status::InvalidArgument("keys are 8 bytes");
    const uint64_t k = IntKey::Decode(key);
    uint64_t v = 0;  // set when found (initialised: GCC cannot see it through find)
    bool found;
    {
      // Every layout reads optimistically; the guard keeps a leaf that a writer replaces
      // meanwhile from being freed under this reader.
      auto guard = pool_->allocator().epoch_guard();
      found = find(k, &v);
    }
    if (found && value != nullptr) {
      // A string that already holds 8 bytes (a caller's reused buffer) gets a plain 8-byte
      // copy; assign() costs ~100 instructions per lookup (_M_replace and a memcpy call).
      if (value->size() != 8) value->resize(8);
      std::memcpy(value->data(), &v, 8);
    }
    return found ? Status::OK() : Status::NotFound();
  }

  // A start of another length than 8 bytes is ordered bytewise against the 8-byte keys:
  // shorter ones are padded with zeros, longer ones start after their 8-byte prefix.
  size_t scan(std::string_view start, size_t max_count, ScanCallback fn) override {
    if (max_count == 0 || pool_ == nullptr) return 0;
    char padded[8] = {};
    std::memcpy(padded, start.data(), std::min<size_t>(start.size(), 8));
    uint64_t from = IntKey::Decode(std::string_view(padded, 8));
    if (start.size() > 8) {
      if (from == UINT64_MAX) return 0;
      ++from;
    }
    auto guard = pool_->allocator().epoch_guard();  // optimistic, as lookup
    return scan_from(from, max_count, fn);
  }

  Status verify() override;
  IndexStats stats() override;
  Status recover() override;
  Status visit_blocks(BlockVisitor& visitor) override;
  Pool* pool() override { return pool_.get(); }
  Status close() override {
    if (pool_ == nullptr) return Status::OK();
    inner_.clear();
    Status s = pool_->Close();
    pool_.reset();
    return s;
  }

 private:
  HybridTree(std::unique_ptr<Pool> pool, const HybridVariant& variant)
      : variant_(variant),
        traits_(TraitsFor(variant)),
        pool_(std::move(pool)),
        pc_(&pool_->persist_context()),
        base_(pool_->base()),
        root_(reinterpret_cast<BTreeRoot*>(pool_->root_area())) {
    // inner=pm (variant.h, inner_tree.h): nodes are blocks of the pool, rebuilt by recover().
    if (variant_.pm_inner) {
      inner_.place_in_pool(&pool_->allocator(), pc_, base_, pool_->size());
    }
  }

  Leaf* at(uint64_t off) const { return reinterpret_cast<Leaf*>(base_ + off); }
  uint64_t off(const Leaf* l) const { return static_cast<uint64_t>(reinterpret_cast<const char*>(l) - base_); }
  // The prev hint publishes a leaf built by another thread: release/acquire.
  static Leaf* prev_of(const Leaf* l) { return reinterpret_cast<Leaf*>(LoadAcquire(l->prev)); }
  static void set_prev(Leaf* l, const Leaf* p) {
    StoreRelease(l->prev, reinterpret_cast<uint64_t>(p));
  }

  // The write path is one frame below the public calls (write inlines write_guarded, locate,
  // the descent and the layout's Write): every call's return address and saved registers
  // are stores, which after a persist wait in the store queue behind its sfence
  // (pm/persist.h, flush_in).
  template <Op op>
  Status write(std::string_view key, std::string_view value);
  [[gnu::always_inline]] Status write_guarded(Op op, uint64_t k, uint64_t v);
  bool find(uint64_t k, uint64_t* v);
  size_t scan_from(uint64_t cursor, size_t max_count, ScanCallback& fn);
  // The leaf covering k, not obsolete when returned (writers lock it next).
  [[gnu::always_inline]] Leaf* locate(uint64_t k);
  // The leaf covering k with a reader's version snapshot; nullptr for an empty tree.
  // `aborts` counts readers=retraverse restarts of this read (read_begin).
  Leaf* locate_for_read(uint64_t k, uint64_t* v, uint32_t* aborts);
  // ReadBegin on a leaf; under readers=retraverse false on a locked one (an abort).
  bool read_begin(Leaf* leaf, uint64_t* v, uint32_t* aborts);
  static constexpr uint32_t kMaxAborts = 16;  // then a retraversing reader waits
  // The layout's write for the pool's variant (variant.h).
  [[gnu::always_inline]] WriteResult layout_write(Leaf* leaf, Op op, uint64_t k, uint64_t v) {
    if constexpr (kMicroLogSplit) {  // FPTree split=native: writers check the leaf's range
      if (variant_.native_split) return Layout::template Write<true>(*pc_, leaf, op, k, v, base_);
    } else if constexpr (kHasVariantWrite) {  // RNTree's log_persist / split variants
      if (variant_.parallel_log_persist || variant_.native_split)
        return Layout::VariantWrite(*pc_, base_, leaf, op, k, v, variant_);
    } else if constexpr (requires { Layout::WriteBlind; }) {  // NV-Tree writes=basic
      if (blind(op)) return Layout::WriteBlind(*pc_, leaf, k, v);
    }
    return Layout::Write(*pc_, leaf, op, k, v);
  }
  // split=native (FPTree's micro-log split, fptree_leaf.h): like replace(), called with
  // `leaf` locked and full; false once the leaf is split (the caller retries).
  bool native_split_micro_log(Leaf* leaf, Op op, uint64_t k, uint64_t v, Status* out);
  Status recover_split();
  auto* split_log() {
    static_assert(Layout::kSplitLogOffset >= sizeof(BTreeRoot) &&
                  Layout::kSplitLogOffset + sizeof(typename Layout::SplitLog) <= kRootAreaSize);
    return reinterpret_cast<typename Layout::SplitLog*>(pool_->root_area() +
                                                        Layout::kSplitLogOffset);
  }
  Status create_first_leaf();
  // Called with `leaf` locked and full. False: retry (leaf unlocked). True: *out is final.
  bool replace(Leaf* leaf, Op op, uint64_t k, uint64_t v, Status* out);
  // split=native (RNTree): the layout's split in place of locked `leaf`, whose log is full
  // and every claim resolved. False: split, retry the operation. True: *out is final (no
  // room for the split: replace() served).
  bool native_split_undo(Leaf* leaf, Op op, uint64_t k, uint64_t v, Status* out);
  static constexpr bool kHasVariantWrite = requires { &Layout::VariantWrite; };
  void try_unlink_empty(Leaf* leaf);
  // Replaces `leaf` and its right neighbour by one leaf when together they fill at most
  // kMergeUpTo entries (best effort: gives up on any contended lock).
  void try_merge(Leaf* leaf);
  // Merging after removals keeps leaves at least ~half full, so deleted keys give their leaf
  // blocks back; the gap to the split point keeps a merged leaf from splitting right away.
  static constexpr size_t kMergeBelow = kCap / 2;      // a remove left at most this many
  static constexpr size_t kMergeUpTo = kCap * 3 / 4;  // both leaves' entries together
  // Sets a leaf block aside if none is (best effort): a full pool can still compact a leaf.
  void ensure_reserve();
  // Locks the predecessor of locked `leaf` (nullptr for the head). False if it cannot now.
  bool lock_pred(Leaf* leaf, Leaf** pred);
  // A replaced leaf is freed once no reader (of any layout: all read optimistically) can
  // still hold it.
  // Freed at the write's guard close when no other thread ever opened a guard (pm/alloc.h).
  void retire(Leaf* leaf) { pool_->allocator().retire_after_guard(off(leaf)); }

  // writes=basic (variant.h): insert, update and upsert append without looking for the key
  // (Layout::WriteBlind), so each is an upsert; remove still finds the key (NotFound).
  bool blind(Op op) const { return variant_.basic_writes && op != Op::kRemove; }

  static constexpr HybridVariantSupport LayoutVariants() {
    HybridVariantSupport can{};
    if constexpr (requires { Layout::kVariants; }) can = Layout::kVariants;
    can.pm_inner = true;  // inner=pm is the tree's, not a layout's: every layout takes it
    return can;
  }
  // FPTree's hooks: its reader variant and its micro-log split (fptree_leaf.h).
  static constexpr bool kRetraverse = LayoutVariants().retraverse_readers;
  static constexpr bool kMicroLogSplit = requires { Layout::kMicroLogSplit; };

  static IndexTraits TraitsFor(const HybridVariant& v) {
    IndexTraits t = Traits();
    if (v.basic_writes) {
      t.conditional_writes = false;
      t.description += " (writes=basic: blind appends, insert and update are upserts)";
    }
    return t;
  }

  const HybridVariant variant_;  // the pool's variant (variant.h)
  const IndexTraits traits_;     // Traits() as the variant changes them
  std::unique_ptr<Pool> pool_;
  pm::PersistContext* pc_;  // the pool's persistence seam
  char* base_;
  BTreeRoot* root_;
  InnerTree inner_;
  std::mutex first_leaf_mu_;  // creation of the first leaf
  std::mutex split_mu_;       // split=native: the one micro-log, one split at a time
  // A free leaf block that only a compaction in a full pool may use (0: none). Never linked
  // while it is here, so a crash leaves it unreachable: the allocator rebuild frees it.
  std::atomic<uint64_t> reserve_{0};
};

// ---------------------------------------------------------------------------------------

template <typename Layout>
template <Op op>
Status HybridTree<Layout>::write(std::string_view key, std::string_view value) {
  if (key.size() != 8) return Status::InvalidArgument("key must be 8 bytes");
  if (op != Op::kRemove && value.size() != 8) {
    return Status::InvalidArgument("value must be 8 bytes");
  }
  if (pool_ == nullptr) return Status::InvalidArgument("index is closed");
  // A read-only pool is mapped copy-on-write: writes change this process's view only (the
  // crash campaign continues a recovered image that way).
  const uint64_t k = IntKey::Decode(key);
  uint64_t v = 0;
  if (op != Op::kRemove) std::memcpy(&v, value.data(), 8);
  for (;;) {
    Status s;
    {
      auto guard = pool_->allocator().epoch_guard();
      s = write_guarded(op, k, v);
    }
    // Leaves replaced earlier may still wait for their grace period: free them (outside
    // the guard, so this thread's own retirements count too) and try again.
    if (!s.IsOutOfSpace() || !pool_->allocator().reclaim_now()) return s;
  }
}

template <typename Layout>
inline Status HybridTree<Layout>::write_guarded(Op op, uint64_t k, uint64_t v) {
  for (uint32_t attempt = 0;; ++attempt) {
    if (attempt > 8) {
      for (uint32_t i = 0; i < std::min<uint32_t>(attempt, 64); ++i) CpuRelax();
    }
    Leaf* leaf = locate(k);
    if (leaf == nullptr) {
      if ((op == Op::kUpdate && !blind(op)) || op == Op::kRemove) return Status::NotFound();
      if (Status s = create_first_leaf(); !s.ok()) return s;
      continue;
    }
    const WriteResult r = layout_write(leaf, op, k, v);
    switch (r.outcome) {
      case Outcome::kDone:
        if (r.now_empty) {
          try_unlink_empty(leaf);
        } else if (op == Op::kRemove && r.live <= kMergeBelow) {
          try_merge(leaf);
        }
        return Status::OK();
      case Outcome::kExists:
        return Status::AlreadyExists();
      case Outcome::kNotFound:
        return Status::NotFound();
      case Outcome::kRetry:
        continue;
      case Outcome::kFull: {
        Status s;
        if constexpr (kHasVariantWrite) {  // split=native: more than half live splits in place
          if (variant_.native_split && Layout::LiveCount(leaf) > kCap / 2) {
            if (native_split_undo(leaf, op, k, v, &s)) return s;
            continue;
          }
        }
        if constexpr (kMicroLogSplit) {
          if (variant_.native_split) {
            if (native_split_micro_log(leaf, op, k, v, &s)) return s;
            continue;  // split: the operation starts again from the root
          }
        }
        if (replace(leaf, op, k, v, &s)) return s;
        continue;
      }
    }
  }
}

template <typename Layout>
inline typename Layout::Leaf* HybridTree<Layout>::locate(uint64_t k) {
  for (;;) {
    InnerTree::Node* parent;
    uint64_t pv;
    auto* leaf = static_cast<Leaf*>(inner_.find_leaf(k, &parent, &pv));
    if (leaf == nullptr) return nullptr;
    PrefetchLine(leaf);  // line 0 (version) first: the demand load below waits for it
    Layout::Prefetch(leaf);
    const uint64_t lv = LoadAcquire(leaf->version);
    if (lv & VersionLock::kObsolete) continue;
    if (!InnerTree::validate(parent, pv)) continue;
    return leaf;
  }
}

template <typename Layout>
typename Layout::Leaf* HybridTree<Layout>::locate_for_read(uint64_t k, uint64_t* v,
                                                           uint32_t* aborts) {
  for (;;) {
    InnerTree::Node* parent;
    uint64_t pv;
    auto* leaf = static_cast<Leaf*>(inner_.find_leaf(k, &parent, &pv));
    if (leaf == nullptr) return nullptr;
    PrefetchLine(leaf);  // line 0 (version) first: the demand load below waits for it
    Layout::Prefetch(leaf);
    if (!read_begin(leaf, v, aborts)) continue;
    if (!InnerTree::validate(parent, pv)) continue;
    return leaf;
  }
}

template <typename Layout>
inline bool HybridTree<Layout>::read_begin(Leaf* leaf, uint64_t* v, uint32_t* aborts) {
  if constexpr (kRetraverse) {
    // readers=retraverse: FPTree's reader runs in a hardware transaction that aborts on a
    // locked leaf and starts again from the root. After kMaxAborts such restarts it waits
    // for the leaf like the default reader, so it cannot livelock behind writers.
    if (variant_.retraverse_readers && *aborts < kMaxAborts &&
        VersionLock::Held(LoadAcquire(leaf->version), kGen)) {
      ++*aborts;
      return false;
    }
  }
  return VersionLock::ReadBegin(&leaf->version, kGen, v, kReadersWait);
}

template <typename Layout>
bool HybridTree<Layout>::find(uint64_t k, uint64_t* value) {
  uint32_t aborts = 0;
  for (;;) {
    uint64_t v;
    Leaf* leaf = locate_for_read(k, &v, &aborts);
    if (leaf == nullptr) return false;
    const bool found = Layout::Find(leaf, k, value);
    if constexpr (kMicroLogSplit) {
      // split=native keeps the old leaf: one that a split shrank after this reader found it
      // no longer covers k (its next's low key says so); read again from the root.
      if (!found && variant_.native_split && !Layout::InRange(leaf, k, base_)) {
        if (kRetraverse && variant_.retraverse_readers) ++aborts;
        continue;
      }
    }
    if (VersionLock::ReadValidate(&leaf->version, v, kReadersWait)) return found;
    if constexpr (kRetraverse) {
      if (variant_.retraverse_readers) ++aborts;  // the transaction's conflict abort
    }
  }
}

template <typename Layout>
size_t HybridTree<Layout>::scan_from(uint64_t cursor, size_t max_count, ScanCallback& fn) {
  Entry buf[kCap];
  size_t emitted = 0;
  uint64_t v;
  uint32_t aborts = 0;
  Leaf* leaf = locate_for_read(cursor, &v, &aborts);
  while (leaf != nullptr) {
    // The right neighbour's lines are requested now, so they arrive while this leaf's entries
    // are collected and emitted (the version check below covers this read of `next`).
    const uint64_t next = LoadAcquire(leaf->next);
    if (next != 0 && next + sizeof(Leaf) <= pool_->size()) {
      PrefetchLines(at(next), 0, sizeof(Leaf));  // the whole leaf, for every layout alike
    }
    const size_t n = Layout::CollectSorted(leaf, cursor, buf);
    if (!VersionLock::ReadValidate(&leaf->version, v, kReadersWait)) {
      leaf = locate_for_read(cursor, &v, &aborts);  // replaced or changed: read it again
      continue;
    }
    for (size_t i = 0; i < n; ++i) {
      const IntKey key(buf[i].key);
      const bool more = fn(key.view(), std::string_view(reinterpret_cast<const char*>(&buf[i].value), 8));
      if (++emitted == max_count || !more) return emitted;
    }
    if (n > 0) {
      if (buf[n - 1].key == UINT64_MAX) return emitted;
      cursor = buf[n - 1].key + 1;  // skip what we emitted if a range grows under us
    }
    if (next == 0) return emitted;
    leaf = at(next);
    if (!read_begin(leaf, &v, &aborts)) {
      cursor = std::max(cursor, Load(leaf->low_key));
      leaf = locate_for_read(cursor, &v, &aborts);
    }
  }
  return emitted;
}

template <typename Layout>
Status HybridTree<Layout>::create_first_leaf() {
  std::lock_guard<std::mutex> lock(first_leaf_mu_);
  if (!inner_.empty()) return Status::OK();
  Result<uint64_t> block = pool_->allocator().allocate(sizeof(Leaf));
  if (!block.ok()) return block.status();
  Leaf* leaf = at(*block);
  Layout::Init(*pc_, leaf, /*low_key=*/0, /*next=*/0, nullptr, 0);
  pc_->fence();  // the leaf is durable before the head names it
  StoreRelease(root_->head, *block);
  pc_->persist(&root_->head, 8);  // commit: crash before -> empty tree, block freed by rebuild
  set_prev(leaf, nullptr);
  inner_.init_single(leaf);
  return Status::OK();
}

template <typename Layout>
bool HybridTree<Layout>::lock_pred(Leaf* leaf, Leaf** pred) {
  *pred = nullptr;
  if (Load(leaf->low_key) == 0) return true;  // the head: its "next" is root_->head
  Leaf* p = prev_of(leaf);
  if (p == nullptr || !VersionLock::TryLock(&p->version, kGen)) return false;
  if (Load(p->next) != off(leaf)) {  // stale hint: the predecessor changed meanwhile
    VersionLock::Unlock(&p->version, kGen, false);
    return false;
  }
  *pred = p;
  return true;
}

template <typename Layout>
bool HybridTree<Layout>::replace(Leaf* leaf, Op op, uint64_t k, uint64_t v, Status* out) {
  Entry buf[kCap + 1];
  size_t n = Layout::CollectSorted(leaf, 0, buf);
  if (blind(op)) op = Op::kUpsert;  // writes=basic: insert and update are upserts
  // Apply the pending operation to the sorted live entries.
  Entry* pos = std::lower_bound(buf, buf + n, k,
                                [](const Entry& e, uint64_t key) { return e.key < key; });
  const bool present = pos != buf + n && pos->key == k;
  if ((op == Op::kInsert && present) || ((op == Op::kUpdate || op == Op::kRemove) && !present)) {
    VersionLock::Unlock(&leaf->version, kGen, false);
    *out = present ? Status::AlreadyExists() : Status::NotFound();
    return true;
  }
  if (op == Op::kRemove) {
    std::move(pos + 1, buf + n, pos);
    --n;
  } else if (present) {
    pos->value = v;
  } else {
    std::move_backward(pos, buf + n, buf + n + 1);
    *pos = Entry{k, v};
    ++n;
  }

  Leaf* pred;
  if (!lock_pred(leaf, &pred)) {
    VersionLock::Unlock(&leaf->version, kGen, false);
    return false;
  }
  // Two leaves when more than half full, else one (compaction of an append-only log). A
  // removal never splits, and in a full pool entries that fit one leaf are compacted into
  // one, the reserve block standing in when no block is free: so deletes give room back.
  size_t parts = n > kCap / 2 && op != Op::kRemove ? 2 : 1;
  uint64_t blocks[2];
  if (op != Op::kRemove) ensure_reserve();
  Status s = pool_->allocator().allocate_bulk(sizeof(Leaf), parts, blocks);
  if (s.IsOutOfSpace() && parts == 2 && n < kCap) {
    parts = 1;
    s = pool_->allocator().allocate_bulk(sizeof(Leaf), 1, blocks);
  }
  if (s.IsOutOfSpace() && parts == 1) {
    blocks[0] = reserve_.exchange(0, std::memory_order_acq_rel);
    if (blocks[0] != 0) s = Status::OK();
  }
  if (!s.ok()) {
    if (pred != nullptr) VersionLock::Unlock(&pred->version, kGen, false);
    VersionLock::Unlock(&leaf->version, kGen, false);
    *out = s;
    return true;
  }
  const uint64_t low = Load(leaf->low_key);
  const uint64_t succ = Load(leaf->next);
  Leaf* a = at(blocks[0]);
  Leaf* b = parts == 2 ? at(blocks[1]) : nullptr;
  const size_t left = parts == 2 ? n / 2 : n;
  if (b != nullptr) Layout::Init(*pc_, b, buf[left].key, succ, buf + left, n - left);
  Layout::Init(*pc_, a, low, b != nullptr ? blocks[1] : succ, buf, left);
  pc_->fence();  // new leaves durable before they become reachable

  uint32_t idx;
  InnerTree::Node* parent = inner_.lock_parent(low, leaf, b != nullptr, &idx);
  uint64_t* link = pred != nullptr ? &pred->next : &root_->head;
  StoreRelease(*link, blocks[0]);
  pc_->persist(link, 8);  // commit point of the split (see the header's crash argument)
  set_prev(a, pred);
  if (b != nullptr) set_prev(b, a);
  if (succ != 0) set_prev(at(succ), b != nullptr ? b : a);
  inner_.replace_child(parent, idx, a);
  if (b != nullptr) inner_.insert_child_after(parent, idx, Load(b->low_key), b);
  InnerTree::unlock(parent);
  VersionLock::MarkObsolete(&leaf->version, kGen);
  if (pred != nullptr) VersionLock::Unlock(&pred->version, kGen, false);
  retire(leaf);
  *out = Status::OK();
  return true;
}

template <typename Layout>
bool HybridTree<Layout>::native_split_undo(Leaf* leaf, Op op, uint64_t k, uint64_t v, Status* out) {
  if constexpr (kHasVariantWrite) {
    uint64_t blocks[2];  // the undo copy, the right leaf
    if (!pool_->allocator().allocate_bulk(sizeof(Leaf), 2, blocks).ok()) {
      return replace(leaf, op, k, v, out);  // no room: compact as the default does
    }
    Entry buf[kCap];
    const size_t n = Layout::CollectSorted(leaf, 0, buf);
    const size_t left = n / 2;
    const uint64_t succ = Load(leaf->next);
    Leaf* right = at(blocks[1]);
    // The persistent steps and their crash argument: the layout's SplitInPlace.
    Layout::SplitInPlace(*pc_, leaf, blocks[0], at(blocks[0]), blocks[1], right, buf, n, left);
    uint32_t idx;
    InnerTree::Node* parent = inner_.lock_parent(Load(leaf->low_key), leaf, true, &idx);
    set_prev(right, leaf);
    if (succ != 0) set_prev(at(succ), right);
    inner_.insert_child_after(parent, idx, buf[left].key, right);
    InnerTree::unlock(parent);  // routes to `right` before the leaf's version moves
    Layout::SplitFinish(leaf, left);
    pool_->allocator().free(blocks[0]);  // the undo copy: unreachable, read by no one
  }
  (void)op, (void)k, (void)v, (void)out;
  return false;
}

template <typename Layout>
bool HybridTree<Layout>::native_split_micro_log(Leaf* leaf, Op op, uint64_t k, uint64_t v,
                                                Status* out) {
  if constexpr (kMicroLogSplit) {
    Result<uint64_t> block = pool_->allocator().allocate(sizeof(Leaf));
    if (!block.ok()) return replace(leaf, op, k, v, out);  // a full pool: the shared path
    Leaf* fresh = at(*block);
    uint64_t split_key;
    {
      // One micro-log, so native splits take turns (doc/fptree.md: why not the paper's
      // array of logs). Only the persistent steps hold it; `leaf` stays locked throughout.
      std::lock_guard<std::mutex> serial(split_mu_);
      split_key = Layout::SplitInPlace(*pc_, split_log(), leaf, off(leaf), fresh, *block);
    }
    // Readers and writers that reach `leaf` for a moved key wait for its lock and then see
    // (InRange) that it no longer covers the key; by then the parent routes it to `fresh`.
    uint32_t idx;
    InnerTree::Node* parent = inner_.lock_parent(Load(leaf->low_key), leaf, true, &idx);
    inner_.insert_child_after(parent, idx, split_key, fresh);
    InnerTree::unlock(parent);
    const uint64_t succ = Load(fresh->next);
    set_prev(fresh, leaf);
    if (succ != 0) set_prev(at(succ), fresh);
    VersionLock::Unlock(&leaf->version, kGen, true);
  }
  (void)op, (void)k, (void)v, (void)out;
  return false;
}

template <typename Layout>
Status HybridTree<Layout>::recover_split() {
  if constexpr (kMicroLogSplit) {
    if (variant_.native_split) {
      return Layout::RecoverSplit(*pc_, split_log(), base_, pool_->size());
    }
  }
  return Status::OK();
}

template <typename Layout>
void HybridTree<Layout>::ensure_reserve() {
  if (reserve_.load(std::memory_order_relaxed) != 0) return;
  Result<uint64_t> block = pool_->allocator().allocate(sizeof(Leaf));
  if (!block.ok()) return;
  uint64_t none = 0;
  if (!reserve_.compare_exchange_strong(none, *block, std::memory_order_acq_rel)) {
    pool_->allocator().free(*block);  // another thread filled it first
  }
}

template <typename Layout>
void HybridTree<Layout>::try_unlink_empty(Leaf* leaf) {
  if (Load(leaf->low_key) == 0) return;  // the head stays (the tree keeps one leaf)
  if (!VersionLock::Lock(&leaf->version, kGen)) return;
  Leaf* pred;
  if (Layout::LiveCount(leaf) != 0 || !lock_pred(leaf, &pred)) {
    VersionLock::Unlock(&leaf->version, kGen, false);
    return;
  }
  uint32_t idx;
  InnerTree::Node* parent = inner_.lock_parent(Load(leaf->low_key), leaf, false, &idx);
  if (idx == 0) {  // its lower bound lives in an ancestor: keep the (empty) leaf
    InnerTree::unlock(parent);
    VersionLock::Unlock(&pred->version, kGen, false);
    VersionLock::Unlock(&leaf->version, kGen, false);
    return;
  }
  const uint64_t succ = Load(leaf->next);
  StoreRelease(pred->next, succ);
  pc_->persist(&pred->next, 8);  // commit: before, an empty leaf is linked (a valid state)
  if (succ != 0) set_prev(at(succ), pred);
  inner_.remove_child(parent, idx);
  InnerTree::unlock(parent);
  VersionLock::MarkObsolete(&leaf->version, kGen);
  VersionLock::Unlock(&pred->version, kGen, false);
  retire(leaf);
}

template <typename Layout>
void HybridTree<Layout>::try_merge(Leaf* leaf) {
  if (!VersionLock::Lock(&leaf->version, kGen)) return;
  const uint64_t succ = Load(leaf->next);
  Leaf* right = succ != 0 ? at(succ) : nullptr;
  if (right == nullptr || !VersionLock::TryLock(&right->version, kGen)) {
    VersionLock::Unlock(&leaf->version, kGen, false);
    return;
  }
  Entry buf[2 * kCap];
  const size_t nl = Layout::CollectSorted(leaf, 0, buf);
  const size_t n = nl > kMergeBelow ? SIZE_MAX : nl + Layout::CollectSorted(right, 0, buf + nl);
  Leaf* pred = nullptr;
  if (n > kMergeUpTo || !lock_pred(leaf, &pred)) {
    VersionLock::Unlock(&right->version, kGen, false);
    VersionLock::Unlock(&leaf->version, kGen, false);
    return;
  }
  uint32_t idx;
  InnerTree::Node* parent = inner_.lock_parent(Load(leaf->low_key), leaf, false, &idx);
  Result<uint64_t> block = Status::OutOfSpace("");
  // Both must hang off one inner node (right's entry is removed from it).
  if (idx + 1 <= parent->count.load(std::memory_order_relaxed) &&
      parent->children[idx + 1].load(std::memory_order_relaxed) == right) {
    block = pool_->allocator().allocate(sizeof(Leaf));
    if (!block.ok()) {  // a full pool: the reserve serves, the merge frees two leaves
      const uint64_t spare = reserve_.exchange(0, std::memory_order_acq_rel);
      if (spare != 0) block = spare;
    }
  }
  if (!block.ok()) {
    InnerTree::unlock(parent);
    if (pred != nullptr) VersionLock::Unlock(&pred->version, kGen, false);
    VersionLock::Unlock(&right->version, kGen, false);
    VersionLock::Unlock(&leaf->version, kGen, false);
    return;
  }
  // Copy-on-write like replace(): the merged leaf is durable before one 8-byte store swings
  // the chain past both old leaves (a crash before it leaves them linked, after it the
  // merged one; the same keys either way).
  const uint64_t after = Load(right->next);
  Leaf* merged = at(*block);
  Layout::Init(*pc_, merged, Load(leaf->low_key), after, buf, n);
  pc_->fence();
  uint64_t* link = pred != nullptr ? &pred->next : &root_->head;
  StoreRelease(*link, *block);
  pc_->persist(link, 8);  // commit point of the merge
  set_prev(merged, pred);
  if (after != 0) set_prev(at(after), merged);
  inner_.replace_child(parent, idx, merged);
  inner_.remove_child(parent, idx + 1);
  InnerTree::unlock(parent);
  VersionLock::MarkObsolete(&right->version, kGen);
  VersionLock::MarkObsolete(&leaf->version, kGen);
  if (pred != nullptr) VersionLock::Unlock(&pred->version, kGen, false);
  retire(leaf);
  retire(right);
}

template <typename Layout>
Status HybridTree<Layout>::recover() {
  if (Status s = recover_split(); !s.ok()) return s.WithContext("split log");
  std::vector<std::pair<uint64_t, void*>> leaves;
  const uint64_t size = pool_->size();
  const uint64_t max_leaves = size / sizeof(Leaf) + 1;
  Leaf* prev = nullptr;
  for (uint64_t o = root_->head; o != 0;) {
    if (o % 64 != 0 || o < 4096 || o + sizeof(Leaf) > size) {
      return Status::Corruption("leaf offset " + std::to_string(o) + " outside the pool");
    }
    if (leaves.size() >= max_leaves) return Status::Corruption("leaf chain has a cycle");
    Leaf* leaf = at(o);
    if constexpr (kHasVariantWrite) {  // a native split the crash interrupted rolls back
      if (variant_.native_split) {
        if (Status s = Layout::RollBackSplit(*pc_, base_, size, leaf); !s.ok()) {
          return s.WithContext("leaf at offset " + std::to_string(o));
        }
      }
    }
    if (Status s = Layout::Recover(*pc_, leaf); !s.ok()) {
      return s.WithContext("leaf at offset " + std::to_string(o));
    }
    const uint64_t low = leaf->low_key;
    if ((leaves.empty() && low != 0) || (!leaves.empty() && low <= leaves.back().first)) {
      return Status::Corruption("leaf at offset " + std::to_string(o) + ": low key " +
                                std::to_string(low) + " out of order");
    }
    leaf->version = 0;
    set_prev(leaf, prev);
    prev = leaf;
    leaves.emplace_back(low, leaf);
    o = leaf->next;
  }
  // inner=pm: build allocates its nodes before the allocator rebuild. With the free state
  // still empty, allocate() only carves chunks the table marks free, so no reachable block
  // is handed out; visit_blocks reports the new nodes, so the rebuild keeps them and frees
  // the previous run's (never named by a persistent word: unreachable). A pool with no free
  // chunk gets DRAM nodes.
  inner_.build(leaves);
  return Status::OK();
}

template <typename Layout>
Status HybridTree<Layout>::visit_blocks(BlockVisitor& visitor) {
  for (uint64_t o = root_->head; o != 0; o = at(o)->next) {
    if (Status s = visitor.visit(o); !s.ok()) return s;
  }
  return inner_.visit_pool_nodes(visitor);  // inner=pm: this run's nodes (inner_tree.h)
}

template <typename Layout>
Status HybridTree<Layout>::verify() {
  if (pool_ == nullptr) return Status::InvalidArgument("index is closed");
  if constexpr (kMicroLogSplit) {
    if (variant_.native_split && (split_log()->current != 0 || split_log()->new_leaf != 0)) {
      return Status::Corruption("split log names a split, but none is in flight");
    }
  }
  std::vector<std::pair<uint64_t, void*>> leaves;
  const uint64_t max_leaves = pool_->size() / sizeof(Leaf) + 1;
  Entry buf[kCap];
  Leaf* prev = nullptr;
  for (uint64_t o = root_->head; o != 0;) {
    if (o % 64 != 0 || o < 4096 || o + sizeof(Leaf) > pool_->size()) {
      return Status::Corruption("leaf offset " + std::to_string(o) + " outside the pool");
    }
    if (leaves.size() >= max_leaves) return Status::Corruption("leaf chain has a cycle");
    Leaf* leaf = at(o);
    const std::string where = "leaf " + std::to_string(leaves.size()) + " at offset " +
                              std::to_string(o);
    if (Status s = Layout::Verify(leaf); !s.ok()) return s.WithContext(where);
    if (Load(leaf->version) & (VersionLock::kLocked | VersionLock::kObsolete)) {
      return Status::Corruption(where + ": locked or obsolete leaf in the chain");
    }
    if (prev_of(leaf) != prev) return Status::Corruption(where + ": wrong prev pointer");
    const uint64_t low = leaf->low_key;
    if ((leaves.empty() && low != 0) || (!leaves.empty() && low <= leaves.back().first)) {
      return Status::Corruption(where + ": low key out of order");
    }
    const size_t n = Layout::CollectSorted(leaf, 0, buf);
    const uint64_t next = leaf->next;
    for (size_t i = 0; i < n; ++i) {
      if ((i > 0 && buf[i].key <= buf[i - 1].key) || buf[i].key < low ||
          (next != 0 && buf[i].key >= at(next)->low_key)) {
        return Status::Corruption(where + ": key " + std::to_string(buf[i].key) +
                                  " out of order or outside the leaf's range");
      }
    }
    leaves.emplace_back(low, leaf);
    prev = leaf;
    o = next;
  }
  return inner_.verify(leaves);
}

template <typename Layout>
IndexStats HybridTree<Layout>::stats() {
  IndexStats st;
  if (pool_ == nullptr) return st;
  uint64_t leaves = 0;
  const uint64_t head = root_->head;
  const uint64_t leaf_bytes = head != 0 ? pool_->allocator().block_size(head) : 0;
  Entry buf[kCap];
  for (uint64_t o = root_->head; o != 0; o = at(o)->next) {
    ++leaves;
    st.keys += Layout::CollectSorted(at(o), 0, buf);
  }
  const uint64_t pm_inner = inner_.pool_node_count();
  st.pm_bytes = leaves * leaf_bytes + pm_inner * sizeof(InnerTree::Node);
  st.dram_bytes = inner_.dram_bytes();
  st.nodes = {{"leaves", leaves}, {"inner", inner_.node_count()}, {"height", inner_.height()}};
  if (variant_.pm_inner) st.nodes.emplace_back("inner_in_pm", pm_inner);
  return st;
}

// Registers HybridTree<Layout> under Layout::kName.
template <typename Layout>
IndexRegistration MakeRegistration() {
  IndexRegistration r;
  r.traits = HybridTree<Layout>::Traits();
  r.attach = [](std::unique_ptr<Pool> pool, bool fresh) {
    return HybridTree<Layout>::Attach(std::move(pool), fresh);
  };
  r.params = std::string("leaf_bytes=") + std::to_string(sizeof(typename Layout::Leaf)) +
             ",capacity=" + std::to_string(Layout::kCapacity);
  r.mutants = Layout::Mutants();
  // The leaf bugs every B+tree design was found with: shifts, counts or bitmaps beside their
  // entries, splits that publish a sibling early.
  r.crash_scenarios = {"shift-delete-duplicate", "count-vs-entries", "split-sibling-early"};
  return r;
}

}  // namespace pmindex::btree

#endif  // PMINDEX_BTREE_HYBRID_TREE_H_
