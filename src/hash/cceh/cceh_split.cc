// CCEH's structure changes: the segment split and the directory doubling, in the order and
// with the crash argument of cceh.h.
#include <cassert>
#include <cstring>

#include "hash/cceh/cceh.h"
#include "pm/alloc.h"
#include "pm/mutant.h"
#include "pm/version_lock.h"

namespace pmindex::hash::cceh {

using pm::VersionLock;

namespace {
uint64_t Load(const uint64_t& w) { return __atomic_load_n(&w, __ATOMIC_RELAXED); }
void StoreRelease(uint64_t& w, uint64_t v) { __atomic_store_n(&w, v, __ATOMIC_RELEASE); }
}  // namespace

// Step 1: S' holds S's pairs of pattern 2p+1 at the positions they have in S (so each stays
// within its probing unit), locked in this generation, persisted whole before anything names
// it. Returns its offset.
uint64_t CcehIndex::build_split(const Segment* s, uint64_t block, uint32_t depth,
                                uint64_t pattern) {
  Segment* n = seg(block);
  const uint64_t shape = MakeShape(depth + 1, pattern * 2 + 1);
  n->header.lock = (uint64_t{lock_gen_} << 32) | VersionLock::kLocked;
  n->header.shape = shape;
  n->header.magic = kSegmentMagic;
  std::memset(n->header.reserved, 0, sizeof(n->header.reserved));
  for (uint32_t b = 0; b < nbuckets_; ++b) {
    const Bucket& from = s->bucket[b];
    Bucket& to = n->bucket[b];
    uint64_t valid = 0;
    const uint64_t was = Load(from.valid);
    for (int j = 0; j < Bucket::kSlots; ++j) {
      to.slot[j] = from.slot[j];
      if ((was >> j & 1) && Belongs(Hash(from.slot[j].key), shape)) valid |= uint64_t{1} << j;
    }
    to.valid = valid;
    to.reserved = 0;
  }
  if (!pm::mutant("cceh.segment_before_persist")) pc_->persist(n, segment_block_);
  return block;
}

// Splits locked, full segment s. OutOfSpace leaves everything as it was.
Status CcehIndex::split(Segment* s) {
  assert(VersionLock::Held(Load(s->header.lock), lock_gen_));  // the caller holds s
  const uint64_t shape = Load(s->header.shape);
  const uint32_t d = ShapeDepth(shape);
  const uint64_t p = ShapePattern(shape);
  if (d >= kMaxDepth) return Status::OutOfSpace("cceh: segment depth limit reached");
  Result<uint64_t> block = pool_->allocator().allocate(segment_block_);
  if (!block.ok()) return block.status();
  const uint64_t n = build_split(s, *block, d, p);
  std::lock_guard<std::mutex> lock(dir_mu_);
  uint64_t dir_off = dir_.load(std::memory_order_relaxed);
  if (d == Load(dir(dir_off)->depth)) {  // step 2
    Result<uint64_t> doubled = double_directory(dir_off);
    if (!doubled.ok()) {
      pool_->allocator().free(n);  // never named: nobody can reach it
      return doubled.status();
    }
    dir_off = *doubled;
  }
  Directory* directory = dir(dir_off);
  const uint32_t g = static_cast<uint32_t>(Load(directory->depth));
  const uint64_t span = uint64_t{1} << (g - d);
  const uint64_t first = (p << (g - d)) + span / 2;
  const bool shape_early = pm::mutant("cceh.shape_before_dir");
  if (shape_early) {
    StoreRelease(s->header.shape, MakeShape(d + 1, p * 2));
    pc_->persist(&s->header.shape, 8);
  }
  for (uint64_t j = first; j < first + span / 2; ++j) StoreRelease(directory->entry[j], n);
  pc_->persist(&directory->entry[first], 8 * (span / 2));  // step 3
  if (pm::mutant("cceh.segment_before_persist")) pc_->persist(seg(n), segment_block_);
  if (!shape_early) {
    StoreRelease(s->header.shape, MakeShape(d + 1, p * 2));  // step 4
    pc_->persist(&s->header.shape, 8);
  }
  VersionLock::Unlock(&seg(n)->header.lock, lock_gen_);
  return Status::OK();
}

// Under dir_mu_: the directory of depth G+1, persisted whole, then the root switched to it
// (the commit point), then published to readers; the old one retired. Returns its offset.
Result<uint64_t> CcehIndex::double_directory(uint64_t old_off) {
  const Directory* old = dir(old_off);
  const uint32_t g = static_cast<uint32_t>(Load(old->depth));
  if (g >= kMaxDepth) return Status::OutOfSpace("cceh: directory depth limit reached");
  Result<uint64_t> block = pool_->allocator().allocate(DirectoryBytes(g + 1));
  if (!block.ok()) return block.status();
  Directory* d = dir(*block);
  d->magic = kDirectoryMagic;
  d->depth = g + 1;
  std::memset(d->reserved, 0, sizeof(d->reserved));
  for (uint64_t j = 0; j < (uint64_t{1} << (g + 1)); ++j) d->entry[j] = Load(old->entry[j / 2]);
  const bool switch_early = pm::mutant("cceh.switch_before_dir_persist");
  if (!switch_early) pc_->persist(d, DirectoryBytes(g + 1));
  const bool publish_early = pm::mutant("cceh.publish_dir_before_persist");
  StoreRelease(root_->dir, *block);
  if (publish_early) dir_.store(*block, std::memory_order_release);
  pc_->persist(&root_->dir, 8);
  if (switch_early) pc_->persist(d, DirectoryBytes(g + 1));
  dir_.store(*block, std::memory_order_release);  // readers see only a durable directory
  pool_->allocator().retire(old_off);
  return *block;
}

}  // namespace pmindex::hash::cceh
