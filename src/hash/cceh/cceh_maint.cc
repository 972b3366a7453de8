// CCEH's maintenance: creation and attach, recovery (rolls an interrupted split forward),
// verify, the block visitor, stats, the full iteration, and the registration.
#include <algorithm>
#include <cstring>

#include "hash/cceh/cceh.h"
#include "hash/common/traits.h"
#include "pm/alloc.h"
#include "pm/params.h"
#include "pm/version_lock.h"

namespace pmindex::hash::cceh {

using pm::VersionLock;

namespace {
uint64_t Load(const uint64_t& w) { return __atomic_load_n(&w, __ATOMIC_RELAXED); }
uint64_t LoadAcquire(const uint64_t& w) { return __atomic_load_n(&w, __ATOMIC_ACQUIRE); }
void StoreRelease(uint64_t& w, uint64_t v) { __atomic_store_n(&w, v, __ATOMIC_RELEASE); }

Status CheckGeometry(const Geometry& g) {
  if (g.segment_bytes % 64 != 0 || g.segment_bytes < 256 || g.segment_bytes > 65536)
    return Status::InvalidArgument("cceh: segment_bytes must be a multiple of 64 in [256, 65536]");
  if (g.probe < 1 || g.probe > g.buckets())
    return Status::InvalidArgument("cceh: probe must be in [1, buckets of a segment]");
  return Status::OK();
}
}  // namespace

Result<Geometry> ParseGeometry(std::string_view params) {
  Geometry g;
  Result<uint64_t> bytes = pm::ParamUint("cceh", params, "segment_bytes", g.segment_bytes);
  if (!bytes.ok()) return bytes.status();
  Result<uint64_t> probe = pm::ParamUint("cceh", params, "probe", g.probe);
  if (!probe.ok()) return probe.status();
  if (*bytes > 65536 || *probe > 65536)
    return Status::InvalidArgument("cceh: segment_bytes and probe must be at most 65536");
  g.segment_bytes = static_cast<uint32_t>(*bytes);
  g.probe = static_cast<uint32_t>(*probe);
  if (Status s = CheckGeometry(g); !s.ok()) return s;
  return g;
}

IndexTraits CcehIndex::Traits() {
  return HashTraits(
      "cceh", kCcehKind,
      "concurrent: per-segment writer locks; optimistic readers validate the segment version "
      "and wait out writers",
      "CCEH: extendible hashing, directory of segments of 64-byte buckets");
}

const IndexTraits& CcehIndex::traits() const {
  static const IndexTraits traits = Traits();
  return traits;
}

// Fresh: the root words (kind, geometry, no table) persisted, then the magic (8-byte store,
// persisted): before it the pool reads as never written. The table is made by the first write.
Result<std::unique_ptr<Index>> CcehIndex::Attach(std::unique_ptr<Pool> pool, bool fresh) {
  auto* root = reinterpret_cast<Root*>(pool->root_area());
  const uint64_t kind = static_cast<uint32_t>(kCcehKind);
  const bool never_written = root->magic == 0 && pool->allocator().carved_chunks() == 0;
  Geometry geo;
  if (fresh || never_written) {
    Result<Geometry> parsed = ParseGeometry(pool->index_params());
    if (!parsed.ok()) return parsed.status();
    geo = *parsed;
    root->kind = kind;
    root->dir = 0;
    root->segment_bytes = geo.segment_bytes;
    root->probe = geo.probe;
    pm::PersistContext& pc = pool->persist_context();
    pc.persist(root, sizeof(*root));
    root->magic = kRootMagic;
    pc.persist(&root->magic, 8);
  } else {
    if (root->magic != kRootMagic || root->kind != kind)
      return Status::Corruption(pool->path() + ": root area is not a cceh table");
    geo.segment_bytes = static_cast<uint32_t>(std::min<uint64_t>(root->segment_bytes, 1u << 30));
    geo.probe = static_cast<uint32_t>(std::min<uint64_t>(root->probe, 1u << 30));
    if (root->segment_bytes != geo.segment_bytes || root->probe != geo.probe ||
        !CheckGeometry(geo).ok())
      return Status::Corruption(pool->path() + ": cceh geometry in the root area is damaged");
  }
  return std::unique_ptr<Index>(new CcehIndex(std::move(pool), geo));
}

// ---- recovery and checks -----------------------------------------------------------------

Status CcehIndex::check_segment(uint64_t off) const {
  if (off == 0 || off % 64 != 0 || off > pool_->size() || pool_->size() - off < segment_block_)
    return Status::Corruption("cceh: segment offset " + std::to_string(off) + " out of the pool");
  if (Load(seg(off)->header.magic) != kSegmentMagic)
    return Status::Corruption("cceh: no segment at offset " + std::to_string(off));
  return Status::OK();
}

// A segment of depth d, pattern p fills entries [p << (G-d), (p+1) << (G-d)). An entry of
// that range naming another segment is a split interrupted between its directory stores and
// its shape store: the other must be the new half (d+1, 2p+1), named only in the upper half.
// Repair completes it in the split's own order (entries persisted, then the shape), so a
// crash during recovery leaves the same state to repair again.
Status CcehIndex::walk_directory(uint64_t d_off, bool repair) {
  Directory* d = dir(d_off);
  const uint32_t g = static_cast<uint32_t>(Load(d->depth));
  const uint64_t n = uint64_t{1} << g;
  for (uint64_t i = 0; i < n;) {
    const uint64_t off = Load(d->entry[i]);
    const std::string where = "cceh: directory entry " + std::to_string(i);
    if (Status st = check_segment(off); !st.ok()) return st.WithContext(where);
    Segment* s = seg(off);
    const uint64_t shape = Load(s->header.shape);
    const uint32_t dep = ShapeDepth(shape);
    const uint64_t pat = ShapePattern(shape);
    if (dep > g || (i >> (g - dep)) != pat || (i & ((uint64_t{1} << (g - dep)) - 1)) != 0)
      return Status::Corruption(where + ": segment of depth " + std::to_string(dep) +
                                " and pattern " + std::to_string(pat) + " out of place");
    const uint64_t span = uint64_t{1} << (g - dep);
    uint64_t other = i + 1;
    while (other < i + span && Load(d->entry[other]) == off) ++other;
    if (other == i + span) {
      i += span;
      continue;
    }
    const uint64_t half = i + span / 2;
    const uint64_t y = Load(d->entry[other]);
    if (!repair || other < half || check_segment(y).ok() == false ||
        Load(seg(y)->header.shape) != MakeShape(dep + 1, pat * 2 + 1))
      return Status::Corruption(where + ": entry " + std::to_string(other) +
                                " names another segment inside this segment's range");
    for (uint64_t j = half; j < i + span; ++j) {
      const uint64_t e = Load(d->entry[j]);
      if (e != off && e != y) return Status::Corruption(where + ": a third segment in the range");
      StoreRelease(d->entry[j], y);
    }
    pc_->persist(&d->entry[half], 8 * (span / 2));
    StoreRelease(s->header.shape, MakeShape(dep + 1, pat * 2));
    pc_->persist(&s->header.shape, 8);  // i is examined again: now half the span
  }
  return Status::OK();
}

Status CcehIndex::recover() {
  dir_.store(0, std::memory_order_release);
  const uint64_t off = Load(root_->dir);
  if (off == 0) return Status::OK();  // crashed before the first table: still empty
  if (off % 64 != 0 || off > pool_->size() || pool_->size() - off < DirectoryBytes(0))
    return Status::Corruption("cceh: directory offset " + std::to_string(off) + " out of the pool");
  const Directory* d = dir(off);
  if (d->magic != kDirectoryMagic || d->depth > kMaxDepth ||
      pool_->size() - off < DirectoryBytes(static_cast<uint32_t>(d->depth)))
    return Status::Corruption("cceh: damaged directory at " + std::to_string(off));
  if (Status s = walk_directory(off, true); !s.ok()) return s;
  dir_.store(off, std::memory_order_release);
  return Status::OK();
}

template <typename Fn>
Status CcehIndex::for_each_segment(uint64_t d_off, Fn&& fn) const {
  const Directory* d = dir(d_off);
  const uint32_t g = static_cast<uint32_t>(Load(d->depth));
  for (uint64_t i = 0; i < (uint64_t{1} << g);) {
    const uint64_t off = LoadAcquire(d->entry[i]);
    const uint32_t dep = ShapeDepth(Load(seg(off)->header.shape));
    if (Status s = fn(off, seg(off)); !s.ok()) return s;
    i += dep <= g ? uint64_t{1} << (g - dep) : 1;
  }
  return Status::OK();
}

Status CcehIndex::verify_segment(const Segment* s, std::vector<uint64_t>* keys) const {
  const uint64_t lock = Load(s->header.lock);
  if (VersionLock::Held(lock, lock_gen_) || VersionLock::Obsolete(lock, lock_gen_))
    return Status::Corruption("cceh: a segment lock is held at rest");
  const uint64_t shape = Load(s->header.shape);
  for (uint32_t b = 0; b < nbuckets_; ++b) {
    const Bucket& bucket = s->bucket[b];
    const uint64_t valid = Load(bucket.valid);
    if ((valid & ~kValidMask) != 0)
      return Status::Corruption("cceh: bucket " + std::to_string(b) + " has stray valid bits");
    for (int j = 0; j < Bucket::kSlots; ++j) {
      if (!(valid >> j & 1)) continue;
      const uint64_t k = Load(bucket.slot[j].key);
      const uint64_t h = Hash(k);
      if (!Belongs(h, shape)) continue;  // stale: lazy deletion
      const uint32_t home = HomeBucket(h, nbuckets_);
      if ((b + nbuckets_ - home) % nbuckets_ >= geo_.probe)
        return Status::Corruption("cceh: key " + std::to_string(k) + " outside its probing unit");
      keys->push_back(k);
    }
  }
  return Status::OK();
}

Status CcehIndex::verify() {
  if (pool_ == nullptr) return Status::InvalidArgument("index is closed");
  const uint64_t off = Load(root_->dir);
  if (off != published_directory())
    return Status::Corruption("cceh: the published directory is not the root's");
  if (off == 0) return Status::OK();
  if (Status s = walk_directory(off, false); !s.ok()) return s;
  std::vector<uint64_t> keys;
  Status st = for_each_segment(off, [&](uint64_t, const Segment* s) {
    return verify_segment(s, &keys);
  });
  if (!st.ok()) return st;
  std::sort(keys.begin(), keys.end());
  auto dup = std::adjacent_find(keys.begin(), keys.end());
  if (dup != keys.end()) return Status::Corruption("cceh: key " + std::to_string(*dup) + " twice");
  return Status::OK();
}

Status CcehIndex::visit_blocks(BlockVisitor& visitor) {
  const uint64_t off = published_directory();
  if (off == 0) return Status::OK();
  if (Status s = visitor.visit(off); !s.ok()) return s;
  return for_each_segment(off, [&](uint64_t seg_off, const Segment*) {
    return visitor.visit(seg_off);
  });
}

// ---- reading whole segments --------------------------------------------------------------

void CcehIndex::read_segment(const Segment* s, uint64_t* shape,
                             std::vector<std::pair<uint64_t, uint64_t>>* pairs) const {
  for (;;) {
    uint64_t version = 0;
    VersionLock::ReadBegin(&s->header.lock, lock_gen_, &version);
    *shape = LoadAcquire(s->header.shape);
    pairs->clear();
    for (uint32_t b = 0; b < nbuckets_; ++b) {
      const Bucket& bucket = s->bucket[b];
      const uint64_t valid = Load(bucket.valid);
      for (int j = 0; j < Bucket::kSlots; ++j) {
        if (!(valid >> j & 1)) continue;
        const uint64_t k = Load(bucket.slot[j].key);
        if (Belongs(Hash(k), *shape)) pairs->emplace_back(k, Load(bucket.slot[j].value));
      }
    }
    if (VersionLock::ReadValidate(&s->header.lock, version)) return;
  }
}

// Walks the hash space in order: the segment covering `cursor`, read as one state, reports
// its pairs at or above the cursor; then the cursor moves past its range.
Status CcehIndex::for_each(ScanCallback fn) {
  if (pool_ == nullptr) return Status::InvalidArgument("index is closed");
  std::vector<std::pair<uint64_t, uint64_t>> pairs;
  uint64_t cursor = 0;
  for (int spins = 0;;) {
    uint64_t shape;
    {
      auto guard = pool_->allocator().epoch_guard();
      const uint64_t d = published_directory();
      if (d == 0) return Status::OK();
      read_segment(seg(segment_for(dir(d), cursor)), &shape, &pairs);
    }
    if (!Belongs(cursor, shape)) {  // a split or doubling meanwhile: read the entry again
      VersionLock::Backoff(spins++);
      continue;
    }
    for (const auto& [k, v] : pairs) {
      if (Hash(k) < cursor) continue;
      const IntKey key(k);
      if (!fn(key.view(), std::string_view(reinterpret_cast<const char*>(&v), 8)))
        return Status::OK();
    }
    const uint32_t dep = ShapeDepth(shape);
    const uint64_t next = dep == 0 ? 0 : (ShapePattern(shape) + 1) << (64 - dep);
    if (next == 0) return Status::OK();  // the range reached the top of the hash space
    cursor = next;
  }
}

IndexStats CcehIndex::stats() {
  IndexStats st;
  if (pool_ == nullptr) return st;
  auto guard = pool_->allocator().epoch_guard();
  const uint64_t off = published_directory();
  if (off == 0) return st;
  const uint32_t g = static_cast<uint32_t>(Load(dir(off)->depth));
  uint64_t segments = 0;
  std::vector<std::pair<uint64_t, uint64_t>> pairs;
  for_each_segment(off, [&](uint64_t, const Segment* s) {
    uint64_t shape;
    read_segment(s, &shape, &pairs);
    st.keys += pairs.size();
    ++segments;
    return Status::OK();
  }).IgnoreError();
  const uint64_t slots = segments * nbuckets_ * Bucket::kSlots;
  st.pm_bytes = segments * segment_block_ + pool_->allocator().block_size(off);
  st.nodes = {{"segments", segments},
              {"global_depth", g},
              {"slots", slots},
              {"load_factor_permille", slots ? st.keys * 1000 / slots : 0}};
  return st;
}

IndexRegistration Registration() {
  IndexRegistration r;
  r.traits = CcehIndex::Traits();
  r.attach = [](std::unique_ptr<Pool> pool, bool fresh) {
    return CcehIndex::Attach(std::move(pool), fresh);
  };
  r.params = kDefaultParams;
  r.campaign_params = kCampaignParams;
  r.mutants = {
      {"cceh.shape_before_dir",
       "a split persists the old segment's new local depth and pattern before the directory "
       "entries that name the new segment: the moved keys are lost",
       "cceh-split-doubling"},
      {"cceh.segment_before_persist",
       "a split names the new segment in the directory before the segment is persisted",
       "cceh-split-doubling"},
      {"cceh.switch_before_dir_persist",
       "a doubling switches the root to the new directory before the directory is persisted",
       "cceh-split-doubling"},
      {"cceh.valid_with_pair",
       "an insert persists the valid bit together with the pair, not after it: a torn line "
       "shows a valid slot with an old key or value",
       ""},
      {"cceh.lock_ignores_generation",
       "segment locks do not carry the pool generation: a lock a crash left set in the pool "
       "(every new segment is persisted locked) is still held after reopening",
       "cceh-split-doubling"},
      {"cceh.unlock_before_persist",
       "a writer unlocks its segment before its commit persist: a reader returns a value that "
       "is not durable yet",
       "", "CcehVisibilityTest.ReadersSeeOnlyPersistedValues"},
      {"cceh.publish_dir_before_persist",
       "a doubling publishes the new directory to readers before the root's switch is persisted",
       "", "CcehVisibilityTest.ReadersSeeOnlyPersistedDirectory"},
  };
  r.crash_scenarios = {"cceh-split-doubling"};
  return r;
}

}  // namespace pmindex::hash::cceh
