// FAST&FAIR: the operations (reads, FAST inserts and deletes, FAIR splits, root growth).
// The crash argument of each path is in fastfair.h and node.h; the comments here name the
// step a store is.
#include "btree/fastfair/fastfair.h"
#include "btree/fastfair/line_writer.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <string>

#include "pm/alloc.h"
#include "pm/mutant.h"
#include "pm/params.h"
#include "pm/seqlock.h"

namespace pmindex::btree::fastfair {
IndexTraits FastFairTree::Traits() {
  IndexTraits t;
  t.name = "fastfair";
  t.kind = kFastFairKind;
  t.persistent = true;
  t.ordered = true;
  t.byte_keys = false;
  t.max_key_size = 8;
  t.max_value_size = 8;
  t.concurrency =
      "concurrent: per-node writer locks; lock-free readers read through in-flight inserts, "
      "retry across deletes and splits";
  t.durability =
      "every acknowledged operation survives power failure, assuming stores to one cache line "
      "persist in order (FAST's assumption)";
  t.description = "FAST&FAIR: all nodes in PM, in-place shifts, splits through the sibling";
  return t;
}

const IndexTraits& FastFairTree::traits() const {
  static const IndexTraits traits = Traits();
  return traits;
}

FastFairTree::FastFairTree(std::unique_ptr<Pool> pool, size_t node_bytes)
    : pool_(std::move(pool)),
      pc_(&pool_->persist_context()),
      base_(pool_->base()),
      root_(reinterpret_cast<FastFairRoot*>(pool_->root_area())),
      gen_(static_cast<uint32_t>(pool_->generation())),
      node_bytes_(node_bytes),
      slots_(SlotsFor(node_bytes)) {}

Result<size_t> FastFairTree::NodeBytes(std::string_view params) {
  Result<std::string_view> n = pm::ParamChoice("fastfair", params, "node_bytes", {"512", "256"},
                                               "512");
  if (!n.ok()) return n.status();
  return size_t{*n == "256" ? 256u : 512u};
}

Result<std::unique_ptr<Index>> FastFairTree::Attach(std::unique_ptr<Pool> pool, bool fresh) {
  Result<size_t> node_bytes = NodeBytes(pool->index_params());
  if (!node_bytes.ok()) return node_bytes.status();
  auto* root = reinterpret_cast<FastFairRoot*>(pool->root_area());
  const uint64_t kind = static_cast<uint32_t>(kFastFairKind);
  // As the hybrid trees: a pool without the magic is new only if nothing was ever carved.
  const bool never_written = root->magic == 0 && pool->allocator().carved_chunks() == 0;
  if (fresh || never_written) {
    root->root = 0;
    root->kind = kind;
    pm::PersistContext& pc = pool->persist_context();
    pc.flush(root, sizeof(*root));
    pc.fence();
    root->magic = kFastFairMagic;  // commit: 8-byte store after the rest is durable
    pc.persist(&root->magic, 8);
  } else if (root->magic != kFastFairMagic || root->kind != kind) {
    return Status::Corruption(pool->path() + ": root area is not a fastfair tree");
  }
  return std::unique_ptr<Index>(new FastFairTree(std::move(pool), *node_bytes));
}

Status FastFairTree::close() {
  if (pool_ == nullptr) return Status::OK();
  Status s = pool_->Close();
  pool_.reset();
  return s;
}

Status FastFairTree::check_key(std::string_view key) const {
  if (pool_ == nullptr) return Status::InvalidArgument("index is closed");
  if (key.size() != 8) return Status::InvalidArgument("keys are 8 bytes");
  return Status::OK();
}

// ---- reads -------------------------------------------------------------------------------

void FastFairTree::read(const Node* node, View* v) const {
  for (int spins = 0;; ++spins) {
    const uint64_t s = LoadAcquire(node->seq);
    if (s & 1) {  // a delete or truncation is shifting: wait for its end
      VersionLock::Backoff(spins);
      continue;
    }
    ReadNode(node, slots_, v);
    // The rule reads the slots in the frame of the count read first: if an insert finished
    // meanwhile (the count rose) a second one may have shifted the slots in the next frame,
    // where the old overflow slot is an in-range slot whose stale copy lies beyond the range.
    if (LoadAcquire(node->count) != v->count_word) continue;
    if (pm::ReadAgain(&node->seq) == s) return;
  }
}

// read() for one key: the same protocol around ProbeNode.
void FastFairTree::probe(const Node* node, uint64_t k, Probe* p) const {
  for (int spins = 0;; ++spins) {
    const uint64_t s = LoadAcquire(node->seq);
    if (s & 1) {
      VersionLock::Backoff(spins);
      continue;
    }
    ProbeNode(node, slots_, k, p);
    if (LoadAcquire(node->count) != p->count_word) continue;  // as in read()
    if (pm::ReadAgain(&node->seq) == s) return;
  }
}

Node* FastFairTree::descend(uint64_t k, uint32_t level) const {
  const uint64_t r = LoadAcquire(root_->root);
  if (r == 0) return nullptr;
  Node* n = at(r);
  Probe p;
  while (n->level > level) {
    probe(n, k, &p);
    // A larger key here means k is below the sibling's range (entries a split moved stay in
    // N only while the sibling is locked and unchanged): the sibling's line is not read.
    if (!p.stopped && p.sibling != 0 && k >= at(p.sibling)->low_key) {  // move right
      n = at(p.sibling);
      continue;
    }
    n = at(p.found ? p.value : n->leftmost);
  }
  return n;
}

bool FastFairTree::find(uint64_t k, uint64_t* value) const {
  Node* n = descend(k, 0);
  if (n == nullptr) return false;
  Probe p;
  for (;;) {
    probe(n, k, &p);
    if (!p.stopped && p.sibling != 0 && k >= at(p.sibling)->low_key) {
      n = at(p.sibling);
      continue;
    }
    if (!p.found || p.key != k) return false;
    *value = p.value;
    return true;
  }
}

Status FastFairTree::lookup(std::string_view key, std::string* value) {
  if (Status s = check_key(key); !s.ok()) return s;
  uint64_t v = 0;
  if (!find(IntKey::Decode(key), &v)) return Status::NotFound();
  if (value != nullptr) {
    if (value->size() != 8) value->resize(8);
    std::memcpy(value->data(), &v, 8);
  }
  return Status::OK();
}

// Each leaf is read as one state (node.h); the leaves of one scan are read one after the
// other, so a scan under concurrent writers sees every key that was present throughout and
// no key twice, not a snapshot of the whole range.
size_t FastFairTree::scan(std::string_view start, size_t max_count, ScanCallback fn) {
  if (max_count == 0 || pool_ == nullptr) return 0;
  char padded[8] = {};
  std::memcpy(padded, start.data(), std::min<size_t>(start.size(), 8));
  uint64_t cursor = IntKey::Decode(std::string_view(padded, 8));
  if (start.size() > 8) {
    if (cursor == UINT64_MAX) return 0;
    ++cursor;
  }
  Node* n = descend(cursor, 0);
  size_t emitted = 0;
  View v;
  while (n != nullptr) {
    read(n, &v);  // this node's own count and slots, never another's
    const uint64_t hi = v.sibling != 0 ? at(v.sibling)->low_key : 0;
    if (v.sibling != 0 && cursor >= hi) {
      n = at(v.sibling);
      continue;
    }
    for (size_t i = 0; i < v.n; ++i) {
      if (v.key[i] < cursor) continue;
      if (v.sibling != 0 && v.key[i] >= hi) break;  // moved to the sibling by a split
      const IntKey key(v.key[i]);
      const std::string_view value(reinterpret_cast<const char*>(&v.value[i]), 8);
      const bool more = fn(key.view(), value);
      if (++emitted == max_count || !more) return emitted;
    }
    if (v.sibling == 0) break;
    cursor = hi;
    n = at(v.sibling);
  }
  return emitted;
}

// ---- writes ------------------------------------------------------------------------------

Status FastFairTree::insert(std::string_view key, std::string_view value) {
  if (Status s = check_key(key); !s.ok()) return s;
  if (value.size() != 8) return Status::InvalidArgument("values are 8 bytes");
  return put(Op::kInsert, IntKey::Decode(key), IntValue::Decode(value));
}
Status FastFairTree::update(std::string_view key, std::string_view value) {
  if (Status s = check_key(key); !s.ok()) return s;
  if (value.size() != 8) return Status::InvalidArgument("values are 8 bytes");
  return put(Op::kUpdate, IntKey::Decode(key), IntValue::Decode(value));
}
Status FastFairTree::upsert(std::string_view key, std::string_view value) {
  if (Status s = check_key(key); !s.ok()) return s;
  if (value.size() != 8) return Status::InvalidArgument("values are 8 bytes");
  return put(Op::kUpsert, IntKey::Decode(key), IntValue::Decode(value));
}
Status FastFairTree::remove(std::string_view key) {
  if (Status s = check_key(key); !s.ok()) return s;
  return erase(IntKey::Decode(key));
}

Node* FastFairTree::lock_for(uint64_t k, uint32_t level) {
  Node* n = descend(k, level);
  if (n == nullptr) return nullptr;
  VersionLock::Lock(&n->version, gen_);  // never obsolete: nodes are never retired
  for (;;) {
    // Locked, the node is truncated: a last key above k keeps k here (no sibling read).
    const size_t c = Load(n->count) & kCountMask;
    if (c > 0 && c <= slots_ && Load(n->slot[c - 1].key) > k) return n;
    const uint64_t sib = LoadAcquire(n->sibling);
    if (sib == 0 || k < at(sib)->low_key) return n;
    Node* next = at(sib);  // k moved right with a split: follow it
    unlock(n);
    VersionLock::Lock(&next->version, gen_);
    n = next;
  }
}

Status FastFairTree::put(Op op, uint64_t k, uint64_t value) {
  for (;;) {
    Node* leaf = lock_for(k, 0);
    if (leaf == nullptr) {
      if (op == Op::kUpdate) return Status::NotFound();
      if (Status s = create_first_leaf(); !s.ok()) return s;
      continue;
    }
    View v;
    ReadLocked(leaf, slots_, &v);
    assert(Canonical(leaf, slots_, v));
    const size_t pos = static_cast<size_t>(std::lower_bound(v.key, v.key + v.n, k) - v.key);
    if (pos < v.n && v.key[pos] == k) {
      if (op == Op::kInsert) {
        unlock(leaf);
        return Status::AlreadyExists();
      }
      StoreRelease(leaf->slot[pos].value, value);  // one 8-byte failure-atomic store
      pc_->persist(&leaf->slot[pos].value, 8);
      unlock(leaf);
      return Status::OK();
    }
    if (op == Op::kUpdate) {
      unlock(leaf);
      return Status::NotFound();
    }
    if (v.n < max_entries()) {
      fast_insert(leaf, v, pos, k, value);
      unlock(leaf);
      return Status::OK();
    }
    return split_insert(leaf, v, k, value);
  }
}

// FAST insert into locked, canonical `n` with room (node.h has the order and its argument).
void FastFairTree::fast_insert(Node* n, const View& v, size_t pos, uint64_t k, uint64_t value) {
  const size_t cnt = v.n;
  assert(cnt < max_entries() && pos <= cnt);
  const uint64_t last = pos == cnt ? k : v.key[cnt - 1];
  LineWriter w(*pc_, LineWriter::Kind::kShiftRight);
  w.store(&n->slot[cnt + 1].key, SentinelKey(last));  // beyond the range until the count rises
  for (size_t j = cnt; j > pos; --j) {
    w.store(&n->slot[j].value, v.value[j - 1]);  // slot j equals slot j+1: skipped
    w.store(&n->slot[j].key, v.key[j - 1]);      // now slot j-1 is the skipped copy
  }
  w.store(&n->slot[pos].value, value);  // still a copy of slot pos+1: skipped
  w.store(&n->slot[pos].key, k);        // the insert is visible
  // The count joins the last line's fence only if the overflow slot (which holds the last
  // entry until the count covers it) and the sentinel were fenced with an earlier line.
  if (LineOf(&n->slot[cnt]) == w.open_line()) w.close();
  StoreRelease(n->count, CountWord(cnt + 1, last));
  w.close_with(&n->count);
}

Status FastFairTree::erase(uint64_t k) {
  Node* leaf = lock_for(k, 0);
  if (leaf == nullptr) return Status::NotFound();
  View v;
  ReadLocked(leaf, slots_, &v);
  assert(Canonical(leaf, slots_, v));
  const size_t pos = static_cast<size_t>(std::lower_bound(v.key, v.key + v.n, k) - v.key);
  if (pos == v.n || v.key[pos] != k) {
    unlock(leaf);
    return Status::NotFound();
  }
  fast_delete(leaf, v, pos);
  unlock(leaf);
  return Status::OK();
}

// FAST delete from locked, canonical `n`: shift left, count, sentinel (node.h). Readers
// retry while `seq` is odd.
void FastFairTree::fast_delete(Node* n, const View& v, size_t pos) {
  const size_t cnt = v.n;
  const uint64_t s = Load(n->seq);
  pm::WriterBegin(&n->seq, s + 1);
  LineWriter w(*pc_, LineWriter::Kind::kShiftLeft);
  for (size_t j = pos; j + 1 < cnt; ++j) {
    w.store(&n->slot[j].key, v.key[j + 1]);  // the first of these removes the key
    w.store(&n->slot[j].value, v.value[j + 1]);
  }
  const size_t left = cnt - 1;
  const uint64_t last = left == 0 ? 0 : (pos < left ? v.key[cnt - 1] : v.key[cnt - 2]);
  const uint64_t cw = CountWord(left, last);
  // A lower count only hides a copy or exposes the old last entry as the overflow: it may
  // share the last line's fence.
  StoreRelease(n->count, cw);
  w.close_with(&n->count);
  if (left > 0 && !(cw & kNoOverflow)) {
    StoreRelease(n->slot[left].key, SentinelKey(last));  // the old last copy is gone
    pc_->persist(&n->slot[left].key, 8);
  }
  StoreRelease(n->seq, s + 2);
}

// ---- FAIR split --------------------------------------------------------------------------

void FastFairTree::init_node(Node* n, uint32_t level, uint64_t low, uint64_t sibling,
                             uint64_t leftmost, const uint64_t* keys, const uint64_t* values,
                             size_t count, bool persist) {
  // Not reachable yet: plain stores. The pointer that publishes it is a release store.
  n->version = 0;
  n->seq = 0;
  n->count = CountWord(count, count > 0 ? keys[count - 1] : 0);
  n->sibling = sibling;
  n->leftmost = leftmost;
  n->low_key = low;
  n->level = level;
  n->magic = kNodeMagic;
  n->pad = 0;
  for (size_t i = 0; i < count; ++i) n->slot[i] = Slot{keys[i], values[i]};
  if (count > 0) n->slot[count] = Slot{SentinelKey(keys[count - 1]), 0};
  if (persist) pc_->persist(n, offsetof(Node, slot) + (count + 1) * sizeof(Slot));
}

Node* FastFairTree::build_sibling(Node* n, const View& v, uint64_t block, uint64_t k,
                                  uint64_t value, uint64_t* split_key, size_t* keep) {
  const size_t cnt = v.n;
  const size_t m = cnt / 2;
  const bool inner = n->level > 0;
  *split_key = v.key[m];
  *keep = m;
  // A leaf's upper half starts at the split key; an inner node's split key moves up and its
  // child becomes the new node's leftmost.
  bool put_k = inner ? k > *split_key : k >= *split_key;
  uint64_t keys[Node::kSlots];
  uint64_t values[Node::kSlots];
  size_t c = 0;
  for (size_t i = inner ? m + 1 : m; i < cnt; ++i) {
    if (put_k && k < v.key[i]) {
      keys[c] = k;
      values[c++] = value;
      put_k = false;
    }
    keys[c] = v.key[i];
    values[c++] = v.value[i];
  }
  if (put_k) {
    keys[c] = k;
    values[c++] = value;
  }
  Node* s = at(block);
  // Step 1: the new node is durable before anything names it (the mutant publishes first).
  init_node(s, n->level, *split_key, Load(n->sibling), inner ? v.value[m] : 0, keys, values, c,
            !pm::mutant("fastfair.sibling_before_persist"));
  return s;
}

// Step 3: N keeps `keep` entries. Readers retry meanwhile (seq odd): the count and the
// sentinel change what they would read.
void FastFairTree::truncate(Node* n, const View& v, size_t keep) {
  const uint64_t s = Load(n->seq);
  pm::WriterBegin(&n->seq, s + 1);
  const uint64_t last = v.key[keep - 1];
  const uint64_t cw = CountWord(keep, last);
  StoreRelease(n->count, cw);  // the old slot `keep` becomes the overflow: a key >= the
  pc_->persist(&n->count, 8);  // sibling's low key, which every reader ignores in N
  if (!(cw & kNoOverflow)) {
    StoreRelease(n->slot[keep].key, SentinelKey(last));
    pc_->persist(&n->slot[keep].key, 8);
  }
  StoreRelease(n->seq, s + 2);
}

Status FastFairTree::split_insert(Node* n, const View& v, uint64_t k, uint64_t value) {
  Result<uint64_t> block = pool_->allocator().allocate(node_bytes_);
  if (!block.ok()) {
    unlock(n);
    return block.status();
  }
  uint64_t split_key;
  size_t keep;
  Node* s = build_sibling(n, v, *block, k, value, &split_key, &keep);
  VersionLock::Lock(&s->version, gen_);  // not reachable yet: uncontended
  const bool truncate_first = pm::mutant("fastfair.truncate_before_link");
  if (truncate_first) truncate(n, v, keep);
  StoreRelease(n->sibling, *block);  // step 2, the commit point of the split
  pc_->persist(&n->sibling, 8);
  if (pm::mutant("fastfair.sibling_before_persist")) pc_->persist(s, node_bytes_);
  if (!truncate_first) truncate(n, v, keep);
  if (k < split_key) {  // step 4: the pending entry goes to the left half
    View left;
    ReadLocked(n, slots_, &left);
    const uint64_t* at_k = std::lower_bound(left.key, left.key + left.n, k);
    fast_insert(n, left, static_cast<size_t>(at_k - left.key), k, value);
  }
  const uint32_t level = n->level;
  unlock(s);
  unlock(n);
  Status ps = parent_insert(level + 1, split_key, *block);
  // No room for a parent entry: the level's list reaches the new node (see the header).
  return ps.IsOutOfSpace() ? Status::OK() : ps;
}

Status FastFairTree::parent_insert(uint32_t level, uint64_t k, uint64_t child) {
  for (;;) {
    if (at(LoadAcquire(root_->root))->level < level) {
      if (Status s = grow_root(level); !s.ok()) return s;
      continue;
    }
    Node* p = lock_for(k, level);
    View v;
    ReadLocked(p, slots_, &v);
    assert(Canonical(p, slots_, v));
    const size_t pos = static_cast<size_t>(std::lower_bound(v.key, v.key + v.n, k) - v.key);
    if (pos < v.n && v.key[pos] == k) {  // a new root took it in already
      unlock(p);
      return Status::OK();
    }
    if (v.n < max_entries()) {
      fast_insert(p, v, pos, k, child);
      unlock(p);
      return Status::OK();
    }
    return split_insert(p, v, k, child);
  }
}

// A new root one level up: its leftmost is the old root, its entries every other node of the
// old root's list (normally the one just split off; after a crash, any node whose parent
// entry was never written). Persisted before the root word names it.
Status FastFairTree::grow_root(uint32_t level) {
  std::lock_guard<std::mutex> lock(root_mu_);
  const uint64_t r = LoadAcquire(root_->root);
  if (at(r)->level >= level) return Status::OK();
  uint64_t keys[Node::kSlots];
  uint64_t values[Node::kSlots];
  size_t c = 0;
  for (uint64_t o = LoadAcquire(at(r)->sibling); o != 0 && c < max_entries();
       o = LoadAcquire(at(o)->sibling)) {
    keys[c] = at(o)->low_key;
    values[c++] = o;
  }
  Result<uint64_t> block = pool_->allocator().allocate(node_bytes_);
  if (!block.ok()) return block.status();
  const bool early = pm::mutant("fastfair.root_before_node");
  init_node(at(*block), level, 0, 0, r, keys, values, c, !early);
  StoreRelease(root_->root, *block);  // commit: the new root is durable (unless the mutant)
  pc_->persist(&root_->root, 8);
  if (early) pc_->persist(at(*block), node_bytes_);
  return Status::OK();
}

Status FastFairTree::create_first_leaf() {
  std::lock_guard<std::mutex> lock(root_mu_);
  if (LoadAcquire(root_->root) != 0) return Status::OK();
  Result<uint64_t> block = pool_->allocator().allocate(node_bytes_);
  if (!block.ok()) return block.status();
  init_node(at(*block), 0, 0, 0, 0, nullptr, nullptr, 0, true);
  StoreRelease(root_->root, *block);  // commit: before it, an empty tree and a free block
  pc_->persist(&root_->root, 8);
  return Status::OK();
}

IndexRegistration Registration() {
  IndexRegistration r;
  r.traits = FastFairTree::Traits();
  r.attach = [](std::unique_ptr<Pool> pool, bool fresh) {
    return FastFairTree::Attach(std::move(pool), fresh);
  };
  // node_bytes=256: one XPLine per node, 12 slots (the write-amplification study's sizing).
  r.params = "node_bytes=512";
  r.mutants = {
      {"fastfair.skip_shift_flush",
       "an insert's shift fences each line without flushing it: the shifted entries and the "
       "new one are not durable when the insert returns",
       "", "FastFairMutantTest.EachMutantIsCaughtWithoutTornImages"},
      {"fastfair.delete_flush_wrong_line",
       "a delete flushes each line as its shift enters it, before the stores into it, and "
       "never after them (the authors' delete tested the wrong line boundary)",
       "", "FastFairMutantTest.EachMutantIsCaughtWithoutTornImages"},
      {"fastfair.sibling_before_persist",
       "a split links the new sibling, and persists that link, before the sibling is persisted",
       "", "FastFairMutantTest.EachMutantIsCaughtWithoutTornImages"},
      {"fastfair.truncate_before_link",
       "a split truncates the old node before the sibling holding its upper half is linked",
       "", "FastFairMutantTest.EachMutantIsCaughtWithoutTornImages"},
      {"fastfair.root_before_node",
       "a root split switches the root word before the new root node is persisted",
       "", "FastFairMutantTest.EachMutantIsCaughtWithoutTornImages"},
      {"fastfair.recovery_keeps_duplicate",
       "recovery leaves a node a crashed shift left with a duplicate entry as it is; a later "
       "delete then removes one copy and the key comes back",
       "", "FastFairNodeTest.CrashedShiftThenDeleteUnderMutant"},
  };
  r.crash_scenarios = {"shift-delete-duplicate", "count-vs-entries", "split-sibling-early",
                       "fastfair-root-split", "fastfair-line-boundary"};
  return r;
}

}  // namespace pmindex::btree::fastfair
