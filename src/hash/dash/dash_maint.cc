// Dash: recovery, verify, the block visitor, stats and the full iteration.
#include <algorithm>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "hash/dash/dash.h"
#include "pm/alloc.h"
#include "pm/version_lock.h"

namespace pmindex::hash::dash {

using pm::VersionLock;

namespace {
Status Damaged(const std::string& what) { return Status::Corruption("dash: " + what); }
}  // namespace

bool DashTable::valid_segment(uint64_t off) const {
  return off != 0 && off % kBucketBytes == 0 && off + geo_.SegmentBytes() <= pool_->size();
}

Status DashTable::load_directory(Directory** dir, uint32_t* depth) const {
  const uint64_t off = Load(root_->directory);
  *dir = nullptr;
  if (off == 0) return Status::OK();
  if (off % 64 != 0 || off + 64 > pool_->size()) return Damaged("directory offset out of pool");
  Directory* d = dir_at(off);
  const uint64_t g = Load(d->depth);
  if (g > 30 || off + DirectoryBytes(static_cast<uint32_t>(g)) > pool_->size())
    return Damaged("directory depth " + std::to_string(g));
  *dir = d;
  *depth = static_cast<uint32_t>(g);
  return Status::OK();
}

// A segment's range must start at entry i and be filled by it. Between a split's C and D
// (crash argument in dash.h) the upper half of the range may name the new segment instead:
// redo C, E and D. Anything else is damage.
Status DashTable::finish_split(Directory* dir, uint32_t g, uint64_t i) {
  const uint64_t seg = Load(dir->seg[i]);
  if (!valid_segment(seg)) return Damaged("entry " + std::to_string(i) + " names no segment");
  SegmentHeader* s = hdr(seg);
  const uint64_t dp = Load(s->depth_pattern);
  const uint32_t d = DepthOf(dp);
  const uint64_t p = PatternOf(dp);
  if (d > g || (i >> (g - d)) != p || (i & ((uint64_t{1} << (g - d)) - 1)) != 0)
    return Damaged("entry " + std::to_string(i) + " names a segment of another range");
  const uint64_t span = uint64_t{1} << (g - d);
  for (uint64_t j = i + 1; j < i + span; ++j) {
    const uint64_t other = Load(dir->seg[j]);
    if (other == seg) continue;
    if (j < i + span / 2 || !valid_segment(other) ||
        Load(hdr(other)->depth_pattern) != DepthPattern(d + 1, 2 * p + 1)) {
      return Damaged("entry " + std::to_string(j) + " names a segment of another range");
    }
    point_directory(dir, d + 1, 2 * p + 1, other);  // C
    remove_moved(seg, d);                            // E
    Store(s->depth_pattern, DepthPattern(d + 1, 2 * p));
    pc_->persist(&s->depth_pattern, 8);              // D
    return Status::OK();
  }
  return Status::OK();
}

// The move record names two slots that both hold its key: the crash came between the
// move's two commits. The old slot is cleared (the new one is committed and durable).
void DashTable::finish_move(uint64_t seg) {
  const uint64_t rec = Load(hdr(seg)->move_record);
  if ((rec & kMoveValid) == 0) return;
  const uint32_t from = (rec >> 24) & 0xFF, from_slot = (rec >> 16) & 0xFF;
  const uint32_t to = (rec >> 8) & 0xFF, to_slot = rec & 0xFF;
  if (from >= geo_.normal || to >= geo_.normal || from_slot >= geo_.slots ||
      to_slot >= geo_.slots) {
    return;
  }
  Bucket* f = bucket(seg, from);
  const Bucket* t = bucket(seg, to);
  if (((Load(f->bitmap) >> from_slot) & 1) && ((Load(t->bitmap) >> to_slot) & 1) &&
      Load(f->slot[from_slot].key) == Load(t->slot[to_slot].key)) {
    Store(f->bitmap, Load(f->bitmap) & ~((1u << from_slot) | (1u << (kMemberShift + from_slot))));
    pc_->persist(&f->bitmap, 4);
  }
}

// A counter without its flag would hide stash keys from lookups: set and persist the flag.
void DashTable::flag_counters(uint64_t seg) {
  for (uint32_t b = 0; b < geo_.normal; ++b) {
    Bucket* bk = bucket(seg, b);
    if (Load(hdr(seg)->ovf_count[b]) == 0 || (Load(bk->ovf_member) & kOvfCounted) != 0) continue;
    Store(bk->ovf_member, static_cast<uint8_t>(Load(bk->ovf_member) | kOvfCounted));
    pc_->persist(&bk->ovf_member, 1);
  }
}

// Sets the class bits (kOvfHomedMask) of every overflow entry's home (pools written before
// the bits existed, whose lookups would not probe the stash for those keys; counted keys have
// kOvfCounted); idempotent.
void DashTable::flag_homed(uint64_t seg) {
  for (uint32_t b = 0; b < geo_.normal; ++b) {
    Bucket* bk = bucket(seg, b);
    const uint8_t flags = Load(bk->ovf_member);
    const uint8_t bits = homed_bits(seg, b);
    if ((flags & bits) == bits) continue;
    Store(bk->ovf_member, static_cast<uint8_t>(flags | bits));
    pc_->flush(&bk->ovf_member, 1);
  }
}

Status DashTable::recover() {
  Directory* dir;
  uint32_t g;
  if (Status s = load_directory(&dir, &g); !s.ok() || dir == nullptr) return s;
  const bool homed = (Load(root_->flags) & kHomedFlags) != 0;
  for (uint64_t i = 0; i < (uint64_t{1} << g);) {
    if (Status s = finish_split(dir, g, i); !s.ok()) return s;
    const uint64_t seg = Load(dir->seg[i]);
    finish_move(seg);
    flag_counters(seg);
    if (!homed) flag_homed(seg);
    i += uint64_t{1} << (g - DepthOf(Load(hdr(seg)->depth_pattern)));
  }
  if (!homed) {
    pc_->fence();  // every flag durable before the root says they are maintained
    Store(root_->flags, Load(root_->flags) | kHomedFlags);
    pc_->persist(&root_->flags, 8);
  }
  return Status::OK();
}

Status DashTable::walk(FunctionRef<Status(uint64_t, uint64_t)> fn) const {
  Directory* dir;
  uint32_t g;
  if (Status s = load_directory(&dir, &g); !s.ok() || dir == nullptr) return s;
  for (uint64_t i = 0; i < (uint64_t{1} << g);) {
    const uint64_t seg = Load(dir->seg[i]);
    if (!valid_segment(seg)) return Damaged("entry " + std::to_string(i) + " names no segment");
    const uint64_t dp = Load(hdr(seg)->depth_pattern);
    const uint32_t d = DepthOf(dp);
    if (d > g || (i >> (g - d)) != PatternOf(dp))
      return Damaged("entry " + std::to_string(i) + " names a segment of another range");
    const uint64_t span = uint64_t{1} << (g - d);
    for (uint64_t j = i + 1; j < i + span; ++j) {
      if (Load(dir->seg[j]) != seg)
        return Damaged("entry " + std::to_string(j) + " names a segment of another range");
    }
    if (Status s = fn(seg, i); !s.ok()) return s;
    i += span;
  }
  return Status::OK();
}

Status DashTable::visit_blocks(BlockVisitor& visitor) {
  if (pool_ == nullptr) return Status::OK();
  const uint64_t dir = Load(root_->directory);
  if (dir == 0) return Status::OK();
  if (Status s = visitor.visit(dir); !s.ok()) return s;
  return walk([&](uint64_t seg, uint64_t) {
    if (Status s = visitor.visit(seg); !s.ok() || !bytes_) return s;
    // keys=bytes: the record of every allocated slot (a record no slot names is an insert
    // cut before its commit or a remove cut before its retirement: the rebuild frees it).
    for (uint32_t i = 0; i < geo_.normal + geo_.stash; ++i) {
      const Bucket* bk = bucket(seg, i);
      for (uint32_t m = Load(bk->bitmap) & kAllocMask; m != 0; m &= m - 1) {
        if (Status s = visitor.visit(Load(bk->slot[__builtin_ctz(m)].key)); !s.ok()) return s;
      }
    }
    return Status::OK();
  });
}

IndexStats DashTable::stats() {
  IndexStats st;
  if (pool_ == nullptr) return st;
  const uint64_t dir = LoadAcquire(root_->directory);
  if (dir == 0) return st;
  const pm::Allocator& a = pool_->allocator();
  st.pm_bytes = a.block_size(dir);
  uint64_t segments = 0, stash_keys = 0;
  walk([&](uint64_t seg, uint64_t) {
    ++segments;
    st.pm_bytes += a.block_size(seg);
    for (uint32_t i = 0; i < geo_.normal + geo_.stash; ++i) {
      const uint32_t n = __builtin_popcount(Load(bucket(seg, i)->bitmap) & kAllocMask);
      st.keys += n;
      if (i >= geo_.normal) stash_keys += n;
      if (!bytes_) continue;
      const Bucket* bk = bucket(seg, i);
      for (uint32_t m = Load(bk->bitmap) & kAllocMask; m != 0; m &= m - 1)
        st.pm_bytes += a.block_size(Load(bk->slot[__builtin_ctz(m)].key));  // key records
    }
    return Status::OK();
  }).IgnoreError();
  st.nodes = {{"segments", segments},
              {"directory_entries", uint64_t{1} << global_depth()},
              {"stash_keys", stash_keys},
              {"slots", segments * (geo_.normal + geo_.stash) * geo_.slots}};
  return st;
}

// Under concurrent writers: each bucket is read consistently (its version); see dash.h.
Status DashTable::for_each(ScanCallback fn) {
  if (pool_ == nullptr) return Status::InvalidArgument("index is closed");
  const uint64_t dir_off = LoadAcquire(root_->directory);
  if (dir_off == 0) return Status::OK();
  const Directory* dir = dir_at(dir_off);
  const uint32_t g = static_cast<uint32_t>(Load(dir->depth));
  std::vector<Slot> pairs;
  std::optional<pm::Epoch::Guard> guard;  // keys=bytes: the records read after validation
  if (bytes_) guard.emplace(pool_->allocator().epoch());
  for (uint64_t i = 0; i < (uint64_t{1} << g);) {
    const uint64_t seg = LoadAcquire(dir->seg[i]);
    const uint64_t dp = Load(hdr(seg)->depth_pattern);
    const uint32_t d = std::min(DepthOf(dp), g);
    pairs.clear();
    for (uint32_t b = 0; b < geo_.normal + geo_.stash; ++b) {
      const Bucket* bk = bucket(seg, b);
      const size_t mark = pairs.size();
      for (;;) {
        uint64_t v = 0;
        VersionLock::ReadBegin(&bk->lock, gen_, &v);
        for (uint32_t m = Load(bk->bitmap) & kAllocMask; m != 0; m &= m - 1) {
          const int j = __builtin_ctz(m);
          pairs.push_back({Load(bk->slot[j].key), Load(bk->slot[j].value)});
        }
        if (VersionLock::ReadValidate(&bk->lock, v)) break;
        pairs.resize(mark);
      }
    }
    for (const Slot& sl : pairs) {
      if (slot_hash(sl.key).Pattern(DepthOf(dp)) != PatternOf(dp)) continue;
      if (!bytes_) {
        if (!fn(IntKey(sl.key), IntValue(sl.value))) return Status::OK();
      } else if (!fn(slot_key(sl.key), IntValue(sl.value))) {
        return Status::OK();
      }
    }
    i = ((i >> (g - d)) + 1) << (g - d);
  }
  return Status::OK();
}

}  // namespace pmindex::hash::dash
