// Dash: segment splits and directory doubling (extendible hashing). Crash argument: dash.h,
// "Split"; the steps are named A, C, E, D there.
#include <cassert>
#include <cstddef>
#include <cstring>

#include "hash/dash/dash.h"
#include "pm/alloc.h"
#include "pm/mutant.h"
#include "pm/version_lock.h"

namespace pmindex::hash::dash {

using pm::VersionLock;

namespace {
// The deepest local depth: the directory of 2^kMaxDepth entries is 8 GiB.
constexpr uint32_t kMaxDepth = 30;
}  // namespace

void DashTable::lock_all(uint64_t seg) const {
  for (uint32_t i = 0; i < geo_.normal + geo_.stash; ++i)
    VersionLock::Lock(&bucket(seg, i)->lock, gen_);
}

void DashTable::unlock_all(uint64_t seg) const {
  for (uint32_t i = 0; i < geo_.normal + geo_.stash; ++i)
    VersionLock::Unlock(&bucket(seg, i)->lock, gen_);
}

Status DashTable::split(uint64_t seg, uint64_t dp) {
  std::lock_guard<std::mutex> lock(split_mu_);
  SegmentHeader* s = hdr(seg);
  if (Load(s->depth_pattern) != dp) return Status::OK();  // another thread split it
  const uint32_t d = DepthOf(dp);
  const uint64_t p = PatternOf(dp);
  if (d >= kMaxDepth) return Status::OutOfSpace("dash: segment at the deepest local depth");
  lock_all(seg);
  uint64_t dir_off = LoadAcquire(root_->directory);
  if (d == Load(dir_at(dir_off)->depth)) {
    Result<uint64_t> doubled = double_directory(dir_off);
    if (!doubled.ok()) {
      unlock_all(seg);
      return doubled.status();
    }
    dir_off = *doubled;
  }
  // Not zeroed: build_new_segment writes every word that means something.
  Result<uint64_t> fresh = pool_->allocator().allocate(geo_.SegmentBytes());
  if (!fresh.ok()) {
    unlock_all(seg);
    return fresh.status();
  }
  const bool late_segment = pm::mutant("dash.segment_after_directory");
  MovedSlots moved;
  build_new_segment(seg, *fresh, d, p, &moved);
  if (!late_segment) pc_->persist(base_ + *fresh, geo_.SegmentBytes());  // A
  const bool early_depth = pm::mutant("dash.depth_before_directory");
  if (early_depth) {
    Store(s->depth_pattern, DepthPattern(d + 1, 2 * p));
    pc_->persist(&s->depth_pattern, 8);
  }
  point_directory(dir_at(dir_off), d + 1, 2 * p + 1, *fresh);  // C: N is reachable
  if (late_segment) pc_->persist(base_ + *fresh, geo_.SegmentBytes());
  remove_moved(seg, d, &moved);  // E
  if (!early_depth) {
    Store(s->depth_pattern, DepthPattern(d + 1, 2 * p));
    pc_->persist(&s->depth_pattern, 8);  // D: the split is complete
  }
  unlock_all(seg);
  return Status::OK();
}

// A directory of twice the entries, each old entry twice, persisted before the root word
// names it (one 8-byte store, persisted); the old one is kept until close (dash.h: readers
// hold no guard). Unreachable from the commit on, so a crash leaves it to the allocator
// rebuild.
Result<uint64_t> DashTable::double_directory(uint64_t dir_off) {
  const Directory* old = dir_at(dir_off);
  const uint32_t g = static_cast<uint32_t>(Load(old->depth));
  Result<uint64_t> fresh = pool_->allocator().allocate(DirectoryBytes(g + 1), true);
  if (!fresh.ok()) return fresh.status();
  Directory* nd = dir_at(*fresh);
  nd->depth = g + 1;
  for (uint64_t i = 0; i < (uint64_t{1} << g); ++i) {
    const uint64_t seg = Load(old->seg[i]);
    nd->seg[2 * i] = seg;
    nd->seg[2 * i + 1] = seg;
  }
  pc_->persist(nd, DirectoryBytes(g + 1));
  StoreRelease(root_->directory, *fresh);  // commit: before it, the new directory is unreachable
  pc_->persist(&root_->directory, 8);
  old_dirs_.push_back(dir_off);
  return *fresh;
}

// N (unreachable, not zeroed) receives, slot for slot, the pairs of S that move: its header
// and every bucket's metadata line are written whole (the pairs of slots whose alloc bit is
// clear mean nothing); its overflow metadata is rebuilt from its stash. *moved records which
// slots moved, so that remove_moved hashes no key twice. Not persisted here.
void DashTable::build_new_segment(uint64_t seg, uint64_t fresh, uint32_t depth,
                                  uint64_t pattern, MovedSlots* moved) {
  SegmentHeader* h = hdr(fresh);
  std::memset(static_cast<void*>(h), 0, sizeof(*h));
  h->depth_pattern = DepthPattern(depth + 1, 2 * pattern + 1);
  for (uint32_t i = 0; i < geo_.normal + geo_.stash; ++i) {
    const Bucket* from = bucket(seg, i);
    Bucket* to = bucket(fresh, i);
    std::memset(static_cast<void*>(to), 0, offsetof(Bucket, slot));  // the metadata
    const uint32_t bm = Load(from->bitmap);
    uint32_t m = 0;
    for (uint32_t alloc = bm & kAllocMask; alloc != 0; alloc &= alloc - 1) {
      const uint32_t j = static_cast<uint32_t>(__builtin_ctz(alloc));
      const uint64_t key = Load(from->slot[j].key);  // keys=bytes: the record moves by offset
      if (!moves_at_split(key, depth)) continue;
      to->slot[j] = {key, Load(from->slot[j].value)};
      to->fp[j] = Load(from->fp[j]);
      m |= 1u << j;
    }
    to->bitmap = m | (bm & (m << kMemberShift));
    (*moved)[i] = m;
  }
  rebuild_overflow(fresh);
}

void DashTable::point_directory(Directory* dir, uint32_t depth, uint64_t pattern,
                                uint64_t target) {
  const uint32_t g = static_cast<uint32_t>(Load(dir->depth));
  const uint64_t first = pattern << (g - depth);
  const uint64_t count = uint64_t{1} << (g - depth);
  for (uint64_t i = 0; i < count; ++i) StoreRelease(dir->seg[first + i], target);  // publishes N
  pc_->persist(&dir->seg[first], count * 8);
}

// Clears from S the pairs that moved to N, rebuilds S's overflow metadata, persists every
// bucket's metadata. Idempotent: recovery repeats it after a crash anywhere before D.
void DashTable::remove_moved(uint64_t seg, uint32_t depth, const MovedSlots* moved) {
  for (uint32_t i = 0; i < geo_.normal + geo_.stash; ++i) {
    Bucket* b = bucket(seg, i);
    uint32_t bm = Load(b->bitmap);
    uint32_t m = 0;
    if (moved != nullptr) {
      m = (*moved)[i];
    } else {
      for (uint32_t alloc = bm & kAllocMask; alloc != 0; alloc &= alloc - 1) {
        const uint32_t j = static_cast<uint32_t>(__builtin_ctz(alloc));
        if (moves_at_split(Load(b->slot[j].key), depth)) m |= 1u << j;
      }
    }
    Store(b->bitmap, bm & ~(m | (m << kMemberShift)));
  }
  rebuild_overflow(seg);
  for (uint32_t i = 0; i < geo_.normal + geo_.stash; ++i) pc_->flush(&bucket(seg, i)->bitmap, 24);
  pc_->flush(hdr(seg)->ovf_count, geo_.normal);
  pc_->fence();
}

void DashTable::rebuild_overflow(uint64_t seg) {
  SegmentHeader* h = hdr(seg);
  for (uint32_t i = 0; i < geo_.normal; ++i) {
    Bucket* b = bucket(seg, i);
    Store(b->bitmap, Load(b->bitmap) & ((1u << kOverflowShift) - 1));
    Store(b->ovf_member,
          static_cast<uint8_t>(Load(b->ovf_member) & ~(kOvfCounted | kOvfHomedMask)));
    Store(h->ovf_count[i], uint8_t{0});
  }
  for (uint32_t s = 0; s < geo_.stash; ++s) {
    const Bucket* sb = bucket(seg, geo_.normal + s);
    for (uint32_t alloc = Load(sb->bitmap) & kAllocMask; alloc != 0; alloc &= alloc - 1) {
      const uint32_t j = static_cast<uint32_t>(__builtin_ctz(alloc));
      const KeyHash kh = slot_hash(Load(sb->slot[j].key));
      add_overflow(seg, kh.Home(geo_.normal), kh.Fp(), s);
    }
  }
}

}  // namespace pmindex::hash::dash
