// PFtree: ordered scan, verify, stats, recovery, the block visitor, close and registration.
#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "pm/persist.h"
#include "pm/prefetch.h"
#include "radix/pftree/pftree.h"
#include "radix/pftree/version_lock.h"

namespace pmindex::pftree {

namespace {
constexpr int kNone = 0, kFound = 1, kRestart = -1;

// How verify() names the node at offset `off`, ahead of what is wrong with it.
std::string NodeAt(uint64_t off) { return "pftree node at offset " + std::to_string(off) + ": "; }

// A Node48's index: what is wrong with it, or nullptr.
const char* CheckNode48Index(const Node48* n48) {
  for (int b = 0; b < 256; ++b)
    if (n48->index[b] > 48) return "node48 index out of range";
  // A slot is named by one run of consecutive bytes (a shared leaf) or not at all.
  uint64_t seen = 0;
  for (int b = 0; b < 256; ++b) {
    int idx = n48->index[b];
    if (idx == 0 || (b > 0 && n48->index[b - 1] == idx)) continue;
    if (seen & (uint64_t{1} << (idx - 1))) return "node48 slot referenced by two runs";
    seen |= uint64_t{1} << (idx - 1);
  }
  return nullptr;
}
}  // namespace

const IndexTraits& PFTree::Traits() {
  static const IndexTraits traits = [] {
    IndexTraits t;
    t.name = "pftree";
    t.kind = IndexKind{22};  // never reuse or renumber (doc/format.md)
    t.persistent = true;
    t.ordered = true;
    t.byte_keys = true;
    t.max_key_size = kMaxKeySize;
    t.max_value_size = kMaxValueSize;
    t.concurrency =
        "concurrent (leaf-array locks with pool generation, optimistic readers, "
        "optimistic lock coupling on inner nodes)";
    t.durability = "every acknowledged operation survives a crash in the pool's persistence mode";
    t.description = "PFtree: persistent ART over leaf arrays with inline entries, DRAM metadata";
    return t;
  }();
  return traits;
}

// ---- scan ----

// Entries sit in append order, so key order jumps around the data area: the copies request
// the entry kScanAhead places on while one is copied, so the misses overlap.
constexpr uint32_t kScanAhead = 8;

// Copies the live pairs of order[first, n) (data-area offsets in key order) into the batch
// until `want` were added: every live entry adds one pair, a dead one moves the end on by one.
// Integer pairs go through a loop of their own that stores into the batch directly (the
// general copy, with its string views, kept the loop's values in memory).
void PFTree::CopyPairs(LeafHeader* leaf, const uint16_t* order, uint32_t first, uint32_t want,
                       uint32_t n, ScanBatch* out) {
  constexpr uint16_t kWordPair = MakeEntryHeader(8, 8);  // valid, 8-byte key and value
  uint32_t i = first, end = first + want;
  const char* const data = LeafData(leaf);
  for (uint32_t j = first; j < std::min(end, first + kScanAhead); ++j) pm::PrefetchLine(data + order[j]);
  out->ReservePairs(out->size() + want);
  if (char* const words = out->WordSpace(want)) {
    char* to = words;
    for (; i < end; ++i) {
      if (i + kScanAhead < end) pm::PrefetchLine(data + order[i + kScanAhead]);
      const uint32_t epos = order[i];
      const uint16_t h = LoadEntryHeader(leaf, epos);
      if (h == kWordPair && (epos + 2 + 8) % 8 == 0) {
        // A live integer pair with its value aligned (every one this build writes): the key
        // in one load, the value in one atomic load (it may be updated in place).
        const char* e = data + epos;
        uint64_t kw;
        std::memcpy(&kw, e + 2, 8);
        const uint64_t vw = std::atomic_ref<uint64_t>(
            *reinterpret_cast<uint64_t*>(const_cast<char*>(e) + 10)).load(std::memory_order_relaxed);
        std::memcpy(to, &kw, 8);
        std::memcpy(to + 8, &vw, 8);
        to += 16;
      } else if (!(h & kEntryValid)) {
        if (end < n) ++end;
      } else {
        break;  // a pair of other sizes: the general copy takes over
      }
    }
    out->AddWords(static_cast<size_t>(to - words) / 16);
    if (i == end) return;
  }
  CopyAnyPairs(leaf, order, i, end, n, out);
}

void PFTree::CopyAnyPairs(LeafHeader* leaf, const uint16_t* order, uint32_t i, uint32_t end,
                          uint32_t n, ScanBatch* out) {
  const char* const data = LeafData(leaf);
  ScanBatch::Appender add(out);  // publishes the pairs to out at the end
  for (; i < end; ++i) {
    if (i + kScanAhead < end) pm::PrefetchLine(data + order[i + kScanAhead]);
    const uint32_t epos = order[i];
    const uint16_t h = LoadEntryHeader(leaf, epos);
    if (!(h & kEntryValid)) {
      if (end < n) ++end;
      continue;
    }
    std::string_view k = EntryKey(leaf, epos, h);
    if (const uint64_t* w = InPlaceValue(leaf, epos, h)) {
      // May be overwritten in place meanwhile: one atomic load (validated with the leaf).
      const uint64_t x = std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(w)).load(std::memory_order_relaxed);
      add.add(k, std::string_view(reinterpret_cast<const char*>(&x), 8));
    } else {
      add.add(k, EntryValue(leaf, epos, h));
    }
  }
}

// One traversal collects from consecutive leaf arrays until the batch is full (kFound), so a
// scan descends from the root once per batch, not once per leaf array. A leaf's pairs enter
// the batch only after its version validated; on kRestart the batch keeps what was
// validated (all after the cursor, in key order) and the scan resumes after its last key.
int PFTree::CollectFrom(uint64_t ref, size_t pos, std::string_view cursor, bool inclusive,
                        size_t limit, bool bounded, ScanBatch* out) {
  if (IsLeafRef(ref)) {
    auto* leaf = at<LeafHeader>(ref);
    uint64_t version;
    if (!VersionLock::ReadBegin(&leaf->lock, gen_, &version)) return kRestart;
    LeafAux* aux = AuxOf(leaf);
    uint32_t n = aux->count.load(std::memory_order_acquire);
    // Data-area offsets in key order; cached, sorts only new appends.
    const uint16_t* order = KeyOrder(leaf, aux, &n, epoch());
    const size_t before = out->size();
    // From the first key at (inclusive) or after (exclusive) the cursor.
    const uint32_t first = bounded ? LowerBound(leaf, order, n, cursor, !inclusive) : 0;
    const uint32_t want = static_cast<uint32_t>(std::min<size_t>(n - first, limit - out->size()));
    CopyPairs(leaf, order, first, want, n, out);
    if (!VersionLock::ReadValidate(&leaf->lock, version)) {
      out->truncate(before);
      return kRestart;
    }
    return out->size() >= limit ? kFound : kNone;
  }
  auto* node = at<InnerHeader>(ref);
  const size_t plen = node->prefix_len;
  if (bounded && plen != 0) {
    size_t avail = cursor.size() > pos ? cursor.size() - pos : 0;
    size_t k = std::min(plen, avail);
    int c = k == 0 ? 0 : std::memcmp(PrefixOf(node), cursor.data() + pos, k);
    if (c < 0) return VersionLock::IsObsolete(&node->lock, gen_) ? kRestart : kNone;
    if (c > 0 || avail < plen) bounded = false;
  }
  pos += plen;
  uint64_t term = LoadRef(&node->term);
  if (term != 0) {
    int r = CollectFrom(term, pos, cursor, inclusive, limit, bounded, out);
    if (r != kNone) return r;
  }
  int start = 0;
  bool exact_start = false;
  if (bounded && cursor.size() > pos) {
    start = static_cast<uint8_t>(cursor[pos]);
    exact_start = true;
  }
  // Children are visited kLag behind the iteration: a child's first line (a leaf's lock word
  // and metadata pointer) is prefetched when it is found, a leaf's DRAM metadata and first
  // data lines when it is two visits away, so they load while earlier leaves are collected.
  // (A leaf's metadata pointer and capacity never change while it is reachable; the epoch
  // guard keeps it allocated.)
  constexpr int kLag = 4;
  int r = kNone;
  struct Pending {
    uint64_t ref;
    uint8_t b;
  } queue[kLag];
  int queued = 0;
  auto visit = [&](const Pending& c) {
    r = CollectFrom(c.ref, pos + 1, cursor, inclusive, limit,
                    bounded && exact_start && c.b == start, out);
    return r == kNone;
  };
  auto prefetch_leaf = [&](uint64_t ref) {
    if (!IsLeafRef(ref)) return;
    auto* leaf = at<LeafHeader>(ref);
    const char* aux = reinterpret_cast<const char*>(leaf->aux);
    for (int line = 0; line < 3; ++line) pm::PrefetchLine(aux + 64 * line);
    const size_t data_end = std::min<size_t>(leaf->capacity, 7 * 64);
    for (size_t off = 0; off < data_end; off += 64) pm::PrefetchLine(LeafData(leaf) + off);
  };
  ForEachChildFrom(node, start, [&](uint8_t b, uint64_t child) {
    pm::PrefetchLine(base_ + RefOffset(child));
    if (queued == kLag) {
      if (!visit(queue[0])) return false;
      std::copy(queue + 1, queue + kLag, queue);
      --queued;
    }
    queue[queued++] = {child, b};
    if (queued >= 2) prefetch_leaf(queue[queued >= 3 ? 1 : 0].ref);
    return true;
  });
  for (int i = 0; i < queued && r == kNone; ++i) {
    if (i + 2 < queued) prefetch_leaf(queue[i + 2].ref);
    visit(queue[i]);
  }
  if (r != kNone) return r;
  return VersionLock::IsObsolete(&node->lock, gen_) ? kRestart : kNone;
}

bool PFTree::NextBatch(std::string_view cursor, bool inclusive, size_t limit, ScanBatch* out) {
  pm::Epoch::Guard guard(epoch());
  InnerHeader* top = root();
  if (top == nullptr) return false;
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) VersionLock::Backoff(attempt);
    out->clear();
    int r = CollectFrom(pool_->offset_of(top), 0, cursor, inclusive, limit, true, out);
    if (r != kRestart || !out->empty()) return !out->empty();
  }
}

size_t PFTree::scan(std::string_view start, size_t max_count, ScanCallback fn) {
  std::string cursor(start);
  bool inclusive = true;
  size_t count = 0;
  ScanBatch batch;
  while (count < max_count && NextBatch(cursor, inclusive, max_count - count, &batch)) {
    // The batch holds at most max_count - count pairs (NextBatch's limit).
    const size_t stop = batch.ForEach(0, fn);
    if (stop < batch.size()) return count + stop + 1;  // fn stopped at pair `stop`
    count += stop;
    cursor.assign(batch.key(batch.size() - 1));
    inclusive = false;
  }
  return count;
}

// ---- verify ----

Status PFTree::VerifyNode(uint64_t ref, std::string& path, uint64_t* keys, int lo, int hi) {
  const uint64_t off = RefOffset(ref);
  if (off == 0 || !pool_->contains(base_ + off, kLeafHeaderSize) || off % 64 != 0)
    return Status::Corruption(NodeAt(off) + "reference outside the pool");
  if (IsLeafRef(ref)) return VerifyLeaf(ref, path, keys, lo, hi);
  return VerifyInner(ref, path, keys);
}

Status PFTree::VerifyLeaf(uint64_t ref, const std::string& path, uint64_t* keys, int lo,
                          int hi) {
  const uint64_t off = RefOffset(ref);
  auto where = [&] { return NodeAt(off); };
  auto* leaf = at<LeafHeader>(ref);
  if (leaf->type != static_cast<uint8_t>(NodeType::kLeafArray))
    return Status::Corruption(where() + "leaf reference to a non-leaf");
  if (leaf->depth != path.size())
    return Status::Corruption(where() + "leaf depth " + std::to_string(leaf->depth) +
                              " reached at " + std::to_string(path.size()));
  if (leaf->capacity + kLeafHeaderSize > alloc_->block_size(off))
    return Status::Corruption(where() + "capacity exceeds its block");
  if (leaf->aux_gen != gen_) return Status::Corruption(where() + "no DRAM metadata");
  LeafAux* aux = AuxOf(leaf);
  std::string err;
  LeafAux* scanned = ScanLeaf(leaf, /*repair=*/nullptr, &err);
  if (scanned == nullptr) return Status::Corruption(where() + err);
  uint32_t n = aux->count.load();
  bool same = scanned->count.load() == n && scanned->used == aux->used &&
              scanned->live == aux->live &&
              std::equal(aux->pos, aux->pos + n, scanned->pos) &&
              std::equal(aux->fp, aux->fp + n, scanned->fp);
  FreeAux(scanned);
  if (!same) return Status::Corruption(where() + "DRAM metadata disagrees with the data area");
  if (aux->live == 0) return Status::Corruption(where() + "empty leaf array is reachable");
  if (std::string e = CheckOrder(leaf, aux); !e.empty())
    return Status::Corruption(where() + e);
  std::vector<uint32_t> order;
  SortedEntries(leaf, aux, n, &order);
  if (order.size() != aux->live) return Status::Corruption(where() + "live count wrong");
  std::string_view prev;
  for (size_t i = 0; i < order.size(); ++i) {
    uint32_t epos = aux->pos[order[i]];
    std::string_view k = EntryKey(leaf, epos, LoadEntryHeader(leaf, epos));
    if (k.size() < path.size() || k.substr(0, path.size()) != path)
      return Status::Corruption(where() + "key does not match its path");
    if (lo >= 0 && (k.size() == path.size() || static_cast<uint8_t>(k[path.size()]) < lo ||
                    static_cast<uint8_t>(k[path.size()]) > hi))
      return Status::Corruption(where() + "key outside the byte run of its shared leaf");
    if (i > 0 && !(prev < k)) return Status::Corruption(where() + "duplicate key");
    prev = k;
  }
  *keys += order.size();
  return Status::OK();
}

Status PFTree::VerifyInner(uint64_t ref, std::string& path, uint64_t* keys) {
  const uint64_t off = RefOffset(ref);
  auto where = [&] { return NodeAt(off); };
  auto* node = at<InnerHeader>(ref);
  auto type = static_cast<NodeType>(node->type);
  if (type < NodeType::kNode4 || type > NodeType::kNode256)
    return Status::Corruption(where() + "bad inner node type " + std::to_string(node->type));
  if (node->depth != path.size())
    return Status::Corruption(where() + "depth " + std::to_string(node->depth) + " reached at " +
                              std::to_string(path.size()));
  if (FixedSize(type) + node->prefix_len > alloc_->block_size(off))
    return Status::Corruption(where() + "node exceeds its block");
  if ((type == NodeType::kNode4 && node->count > 4) ||
      (type == NodeType::kNode16 && node->count > 16))
    return Status::Corruption(where() + "count out of range");
  const size_t saved = path.size();
  path.append(PrefixOf(node), node->prefix_len);
  uint64_t term = LoadRef(&node->term);
  if (term != 0) {
    if (!IsLeafRef(term)) return Status::Corruption(where() + "term child is not a leaf array");
    uint64_t before = *keys;
    Status s = VerifyNode(term, path, keys);
    if (!s.ok()) return s;
    if (*keys - before != 1) return Status::Corruption(where() + "term leaf holds other keys");
  }
  if (type == NodeType::kNode48) {
    if (const char* e = CheckNode48Index(reinterpret_cast<const Node48*>(node)))
      return Status::Corruption(where() + e);
  }
  int prev = -1;
  bool ordered = true;
  ForEachSlot(node, [&](uint8_t b, uint64_t*) {
    if (static_cast<int>(b) <= prev) ordered = false;
    prev = b;
  });
  if (!ordered) return Status::Corruption(where() + "keys not in ascending order");
  std::unordered_set<uint64_t> children;
  for (const ChildRun& c : ChildRuns(node)) {
    if (!children.insert(c.ref).second)
      return Status::Corruption(where() + "a child reached by two runs of bytes");
    Status status;
    if (c.lo < c.hi) {
      // A shared child: a leaf whose keys have key[p] in the run (p = the path so far).
      if (!IsLeafRef(c.ref)) return Status::Corruption(where() + "shared child is not a leaf array");
      if (type != NodeType::kNode48 && type != NodeType::kNode256)
        return Status::Corruption(where() + "shared child in a node type that cannot share");
      status = VerifyNode(c.ref, path, keys, c.lo, c.hi);
    } else {
      path.push_back(static_cast<char>(c.lo));
      status = VerifyNode(c.ref, path, keys);
      path.pop_back();
    }
    if (!status.ok()) return status;
  }
  path.resize(saved);
  return Status::OK();
}

Status PFTree::verify() {
  if (pool_ == nullptr) return Status::InvalidArgument("pftree: closed");
  if (!recovered_) return Status::Corruption("pftree: DRAM metadata not rebuilt (recover)");
  pm::Epoch::Guard guard(epoch());
  std::string path;
  uint64_t keys = 0;
  InnerHeader* top = root();
  if (top == nullptr) return Status::OK();
  if (top->type != static_cast<uint8_t>(NodeType::kNode256) || top->prefix_len != 0)
    return Status::Corruption("pftree: root is not a prefix-less Node256");
  return VerifyNode(pool_->offset_of(top), path, &keys);
}

// ---- stats, visitor, recovery, close ----

void PFTree::StatsNode(uint64_t ref, IndexStats* stats, uint64_t counts[6]) {
  stats->pm_bytes += alloc_->block_size(RefOffset(ref));
  if (IsLeafRef(ref)) {
    auto* leaf = at<LeafHeader>(ref);
    counts[5]++;
    if (leaf->aux_gen == gen_) {
      stats->dram_bytes += AuxOf(leaf)->bytes;
      if (LeafOrder* o = AuxOf(leaf)->order.load(std::memory_order_acquire))
        stats->dram_bytes += o->bytes;
      stats->keys += AuxOf(leaf)->live;
    }
    return;
  }
  auto* node = at<InnerHeader>(ref);
  counts[std::min<int>(node->type, 5)]++;
  uint64_t term = LoadRef(&node->term);
  if (term != 0) StatsNode(term, stats, counts);
  for (const ChildRun& c : ChildRuns(node)) StatsNode(c.ref, stats, counts);
}

IndexStats PFTree::stats() {
  IndexStats s;
  if (pool_ == nullptr) return s;
  pm::Epoch::Guard guard(epoch());
  uint64_t counts[6] = {};
  if (root() != nullptr) StatsNode(pool_->offset_of(root()), &s, counts);
  s.nodes = {{"node4", counts[1]},   {"node16", counts[2]},     {"node48", counts[3]},
             {"node256", counts[4]}, {"leaf_arrays", counts[5]}};
  return s;
}

Status PFTree::VisitNode(uint64_t ref, BlockVisitor& visitor) {
  Status s = visitor.visit(RefOffset(ref));
  if (!s.ok() || IsLeafRef(ref)) return s;
  auto* node = at<InnerHeader>(ref);
  uint64_t term = LoadRef(&node->term);
  if (term != 0) {
    s = VisitNode(term, visitor);
    if (!s.ok()) return s;
  }
  for (const ChildRun& c : ChildRuns(node)) {
    s = VisitNode(c.ref, visitor);
    if (!s.ok()) return s;
  }
  return Status::OK();
}

Status PFTree::visit_blocks(BlockVisitor& visitor) {
  if (pool_ == nullptr) return Status::InvalidArgument("pftree: closed");
  if (root() == nullptr) return Status::OK();
  return VisitNode(pool_->offset_of(root()), visitor);
}

Status PFTree::RecoverNode(uint64_t ref, size_t depth) {
  const uint64_t off = RefOffset(ref);
  if (off < 4096 || off % 64 != 0 || off >= pool_->size() ||
      !pool_->contains(base_ + off, kLeafHeaderSize))
    return Status::Corruption("pftree: reference " + std::to_string(ref) + " outside the pool");
  // Every inner node on a path consumes at least one key byte; deeper means a cycle.
  if (depth > kMaxKeySize + 1)
    return Status::Corruption("pftree: path deeper than the longest key (a cycle?) at offset " +
                              std::to_string(off));
  if (IsLeafRef(ref)) {
    auto* leaf = at<LeafHeader>(ref);
    if (leaf->type != static_cast<uint8_t>(NodeType::kLeafArray) ||
        !pool_->contains(leaf, kLeafHeaderSize + size_t{leaf->capacity}))
      return Status::Corruption("pftree: bad leaf array at offset " + std::to_string(off));
    std::string err;
    // DRAM metadata from the 2-byte entry headers; an interrupted update is finished here.
    LeafAux* aux = ScanLeaf(leaf, /*repair=*/&pc(), &err);
    if (aux == nullptr)
      return Status::Corruption("pftree: leaf array at offset " + std::to_string(off) + ": " +
                                err);
    recovery_aux_.push_back(aux);
    leaf->aux = reinterpret_cast<uint64_t>(aux);  // a DRAM cache: never flushed
    leaf->aux_gen = gen_;
    return Status::OK();
  }
  auto* node = at<InnerHeader>(ref);
  if (node->type < static_cast<uint8_t>(NodeType::kNode4) ||
      node->type > static_cast<uint8_t>(NodeType::kNode256) ||
      !pool_->contains(node, FixedSize(static_cast<NodeType>(node->type)) + node->prefix_len))
    return Status::Corruption("pftree: bad inner node at offset " + std::to_string(off));
  uint64_t term = LoadRef(&node->term);
  if (term != 0) {
    if (!IsLeafRef(term))
      return Status::Corruption("pftree: term child of the node at offset " +
                                std::to_string(off) + " is not a leaf array");
    Status s = RecoverNode(term, depth);
    if (!s.ok()) return s;
  }
  for (const ChildRun& c : ChildRuns(node)) {
    Status s = RecoverNode(c.ref, depth + 1);
    if (!s.ok()) return s;
  }
  return Status::OK();
}

Status PFTree::recover() {
  if (pool_ == nullptr) return Status::InvalidArgument("pftree: closed");
  gen_ = static_cast<uint32_t>(pool_->generation());
  if (recovered_ && root() != nullptr) FreeAuxNode(pool_->offset_of(root()));
  FreeRecoveryAux();
  recovered_ = false;
  Status s = root() == nullptr ? Status::OK() : RecoverNode(pool_->offset_of(root()), 0);
  if (!s.ok()) return s;
  recovery_aux_.clear();  // reachable from the (now validated) tree
  recovered_ = true;
  return Status::OK();
}

void PFTree::FreeRecoveryAux() {
  for (LeafAux* aux : recovery_aux_) FreeAux(aux);
  recovery_aux_.clear();
}

void PFTree::FreeAuxNode(uint64_t ref, size_t depth) {
  // After a failed recovery this walks a damaged tree: what recovery refused is not followed.
  const uint64_t off = RefOffset(ref);
  if (off == 0 || off % 64 != 0 || !pool_->contains(base_ + off, kLeafHeaderSize) ||
      depth > kMaxKeySize + 1)
    return;
  if (IsLeafRef(ref)) {
    auto* leaf = at<LeafHeader>(ref);
    if (leaf->aux_gen == gen_ && leaf->aux != 0) FreeAux(AuxOf(leaf));
    leaf->aux = 0;
    leaf->aux_gen = 0;
    return;
  }
  auto* node = at<InnerHeader>(ref);
  if (node->type < static_cast<uint8_t>(NodeType::kNode4) ||
      node->type > static_cast<uint8_t>(NodeType::kNode256))
    return;
  if (!pool_->contains(node, FixedSize(static_cast<NodeType>(node->type)))) return;
  uint64_t term = LoadRef(&node->term);
  if (term != 0) FreeAuxNode(term, depth + 1);
  for (const ChildRun& c : ChildRuns(node)) FreeAuxNode(c.ref, depth + 1);
}

Status PFTree::close() {
  if (pool_ == nullptr) return Status::OK();
  epoch().Drain(this);
  DrainOrders(epoch());
  // Walk the tree only if recovery proved it sound (or it is new); else free what was built.
  if (recovered_ && root() != nullptr) FreeAuxNode(pool_->offset_of(root()));
  FreeRecoveryAux();
  Status s = pool_->Close();
  pool_.reset();
  return s;
}

// Test-only crash bugs (pm/mutant.h) at PFtree's mutation points; those the random workload
// does not reach name the scenario that does.
std::vector<MutantInfo> PFTree::Mutants() {
  return {
      {"pftree.header_before_kv",
       "the entry header is stored and persisted before the key and value"},
      {"pftree.skip_entry_persist",
       "the key/value bytes of an append are not flushed before the header"},
      {"pftree.skip_split_persist",
       "leaf arrays a rebuild/split builds are not persisted before the 8-byte swap"},
      {"pftree.skip_inplace_update_persist",
       "the in-place 8-byte value store is not persisted before the update returns",
       "pftree-update-in-place"},
      {"pftree.skip_node_slot_persist",
       "a Node4/16's new key byte and child are not flushed before its count covers",
       "pftree-node-insert-in-place"},
      // A fresh pool holds zeros where this one matters; the leaf-array test writes old bytes.
      {"pftree.pad_over_old_header",
       "an append after padding does not zero the entry's header position first",
       /*scenario=*/"", "PFTreeCrashTest.AppendsOverOldBytesCatchPadOverOldHeader"},
      {"pftree.rebuild_pad_unwritten",
       "a leaf array a rebuild/split builds leaves its padding headers unwritten"},
      {"pftree.skip_split_node_persist",
       "a split's new inner node is not flushed before the store that publishes it",
       // The random workload's splits reach it only at 2,000 operations (over 100 s).
       /*scenario=*/"pftree-split-runs"},
  };
}

IndexRegistration PFTree::Registration() {
  IndexRegistration r;
  r.traits = PFTree::Traits();
  r.attach = &PFTree::Attach;
  r.mutants = Mutants();
  r.crash_scenarios = {"count-vs-entries",       "header-child-two-stores",
                       "split-sibling-early",    "pftree-split-runs",
                       "pftree-update-in-place", "pftree-node-insert-in-place"};
  return r;
}

}  // namespace pmindex::pftree
