// Dash: the write paths (insert, update, upsert, remove, displacement, stash). Crash
// arguments: dash.h; each persist below names the step it is.
#include <cassert>

#include "hash/dash/dash.h"
#include "pm/prefetch.h"
#include "pm/alloc.h"
#include "pm/mutant.h"
#include "pm/version_lock.h"

namespace pmindex::hash::dash {

using pm::VersionLock;

namespace {
// dash.unlock_before_persist: the commit persist an insert postponed until after unlocking.
thread_local const void* t_deferred_commit = nullptr;

uint32_t ClearSlotBits(uint32_t bm, uint32_t slot) {
  return bm & ~((1u << slot) | (1u << (kMemberShift + slot)));
}
}  // namespace

bool DashTable::lock_pair(const KeyHash& kh, uint64_t* seg, uint32_t* b, Held* held) const {
  *seg = segment_for(kh);
  *b = kh.Home(geo_.normal);
  const uint32_t n = next(*b);
  Bucket* first = bucket(*seg, 0);  // the segment's base and stagger read once
  Bucket* b0 = first + *b;
  Bucket* b1 = first + n;
  held->b0 = b0;
  held->b1 = b1;
  const bool wrap = n < *b;  // lower index first
  pm::PrefetchLine(wrap ? b0 : b1);  // fetched while the first lock is taken
  VersionLock::LockInline(&(wrap ? b1 : b0)->lock, gen_, wrap ? &held->w1 : &held->w0);
  VersionLock::LockInline(&(wrap ? b0 : b1)->lock, gen_, wrap ? &held->w0 : &held->w1);
  // A split of seg repoints the directory while it holds every bucket lock of seg: with b's
  // lock held, a directory that still names seg means seg covers the key (its header's
  // pattern, one more cache line to miss, would say the same).
  if (segment_for(kh) == *seg) [[likely]]
    return true;
  unlock_pair(*held);  // a split moved the key's range: read the directory again
  return false;
}

// The words as locked (no thread but the holder writes a held lock word): a store each, no
// load of a line the commit's persist may just have written back.
void DashTable::unlock_pair(const Held& held) const {
  VersionLock::Release(&held.b0->lock, held.w0);
  VersionLock::Release(&held.b1->lock, held.w1);
}

template <class M>
bool DashTable::locate(uint64_t seg, uint32_t b, const Held& held, const KeyHash& kh,
                       const M& key, Loc* loc) const {
  const uint8_t fp = kh.Fp();
  const Bucket* b0 = held.b0;
  const Bucket* b1 = held.b1;
  int i = probe(b0, key, fp);
  if (i >= 0) {
    *loc = {b, static_cast<uint32_t>(i)};
    return true;
  }
  i = probe(b1, key, fp);
  if (i >= 0) {
    *loc = {next(b), static_cast<uint32_t>(i)};
    return true;
  }
  // The stash keys of home b are inserted and removed only under b's lock (held): stable.
  if (!MayHaveStashKeys(b0, fp)) return false;
  for (uint32_t targets = stash_targets(b0, b1, fp); targets != 0; targets &= targets - 1) {
    const uint32_t s = static_cast<uint32_t>(__builtin_ctz(targets));
    i = probe(bucket(seg, geo_.normal + s), key, fp);
    if (i >= 0) {
      *loc = {geo_.normal + s, static_cast<uint32_t>(i)};
      return true;
    }
  }
  return false;
}

// Key, value and fingerprint persisted (the slot's alloc bit is clear: they mean nothing
// yet), then the alloc and member bits, one word, persisted: the commit.
void DashTable::commit_slot(Bucket* bk, uint32_t slot, uint64_t key, uint64_t value, uint8_t fp,
                            bool member) {
  Store(bk->slot[slot].key, key);
  Store(bk->slot[slot].value, value);
  Store(bk->fp[slot], fp);
  pm::PersistContext::Local pc = pc_->local();
  pc.flush(&bk->slot[slot], sizeof(Slot));
  pc.flush(&bk->fp[slot], 1);
  if (!pm::mutant("dash.meta_before_kv")) pc.fence();
  uint32_t bm = Load(bk->bitmap) | (1u << slot);
  bm = member ? bm | (1u << (kMemberShift + slot)) : bm & ~(1u << (kMemberShift + slot));
  Store(bk->bitmap, bm);
  if (pm::mutant("dash.unlock_before_persist") && t_deferred_commit == nullptr) {
    t_deferred_commit = &bk->bitmap;
    return;
  }
  pc.persist(&bk->bitmap, 4);  // commit
}

bool DashTable::insert_new(uint64_t seg, uint32_t b, const Held& held, const KeyHash& kh,
                           uint64_t key, uint64_t value) {
  Bucket* b0 = held.b0;
  Bucket* b1 = held.b1;
  const uint32_t used0 = Load(b0->bitmap) & slot_mask_;
  const uint32_t used1 = Load(b1->bitmap) & slot_mask_;
  const uint32_t free0 = ~used0 & slot_mask_;
  const uint32_t free1 = ~used1 & slot_mask_;
  if (free0 != 0 || free1 != 0) {  // balanced insert: the less full of b and b+1
    if (free0 != 0 && (free1 == 0 || __builtin_popcount(used0) <= __builtin_popcount(used1))) {
      commit_slot(b0, __builtin_ctz(free0), key, value, kh.Fp(), false);
    } else {
      commit_slot(b1, __builtin_ctz(free1), key, value, kh.Fp(), true);
    }
    return true;
  }
  return displace(seg, b, kh, key, value) || stash_insert(seg, b, kh, key, value);
}

// Both b and b+1 are full: move a key of b+1 homed there to b+2, or a key of b homed at b-1
// back to b-1, and take the slot it left. Targets are only tried (TryLock): no waiting.
bool DashTable::displace(uint64_t seg, uint32_t b, const KeyHash& kh, uint64_t key,
                         uint64_t value) {
  const uint32_t n = next(b);
  Bucket* b1 = bucket(seg, n);
  const uint32_t bm1 = Load(b1->bitmap);
  const uint32_t own1 = bm1 & slot_mask_ & ~(bm1 >> kMemberShift);
  if (own1 != 0 && next(n) != b) {
    const uint32_t slot = static_cast<uint32_t>(__builtin_ctz(own1));
    if (move_pair(seg, n, slot, next(n), true)) {
      commit_slot(b1, slot, key, value, kh.Fp(), true);
      return true;
    }
  }
  Bucket* b0 = bucket(seg, b);
  const uint32_t bm0 = Load(b0->bitmap);
  const uint32_t probing0 = bm0 & slot_mask_ & (bm0 >> kMemberShift);
  if (probing0 != 0 && prev(b) != n) {
    const uint32_t slot = static_cast<uint32_t>(__builtin_ctz(probing0));
    if (move_pair(seg, b, slot, prev(b), false)) {
      commit_slot(b0, slot, key, value, kh.Fp(), false);
      return true;
    }
  }
  return false;
}

// Moves the pair in (from, from_slot), whose bucket the caller holds locked, to a free slot
// of `to`: record persisted, pair committed in `to`, old slot cleared. A crash leaves it in
// one slot or both; finish_move() clears the old one of "both".
bool DashTable::move_pair(uint64_t seg, uint32_t from, uint32_t from_slot, uint32_t to,
                          bool to_member) {
  Bucket* t = bucket(seg, to);
  if (!VersionLock::TryLock(&t->lock, gen_)) return false;
  const uint32_t free_to = ~Load(t->bitmap) & slot_mask_;
  SegmentHeader* h = hdr(seg);
  if (free_to == 0 || !VersionLock::TryLock(&h->move_lock, gen_)) {
    VersionLock::Unlock(&t->lock, gen_, false);
    return false;
  }
  const uint32_t to_slot = static_cast<uint32_t>(__builtin_ctz(free_to));
  Bucket* f = bucket(seg, from);
  const uint64_t key = Load(f->slot[from_slot].key);
  const uint64_t value = Load(f->slot[from_slot].value);
  const uint8_t fp = Load(f->fp[from_slot]);
  if (!pm::mutant("dash.displace_without_record")) {
    Store(h->move_record, kMoveValid | (uint64_t{from} << 24) | (uint64_t{from_slot} << 16) |
                           (uint64_t{to} << 8) | to_slot);
    pc_->persist(&h->move_record, 8);  // the record: recovery can find a half-done move
  }
  const bool clear_first = pm::mutant("dash.displace_clear_first");
  if (clear_first) {
    Store(f->bitmap, ClearSlotBits(Load(f->bitmap), from_slot));
    pc_->persist(&f->bitmap, 4);
  }
  commit_slot(t, to_slot, key, value, fp, to_member);  // the key is in both slots now
  if (!clear_first) {
    Store(f->bitmap, ClearSlotBits(Load(f->bitmap), from_slot));
    pc_->persist(&f->bitmap, 4);  // the move is done
  }
  VersionLock::Unlock(&h->move_lock, gen_);
  VersionLock::Unlock(&t->lock, gen_);
  return true;
}

// Overflow entry of a stash key of home b: a free entry of b, else of b+1 (member), else
// b's counter; and fp's class bit in b (kOvfHomedMask). Written, not persisted; returns the
// address to flush (b's flag, where it lies on another line, is flushed here, fenced by the
// caller with the rest: both before the stash key's commit).
const void* DashTable::add_overflow(uint64_t seg, uint32_t b, uint8_t fp, uint32_t stash) {
  Bucket* home = bucket(seg, b);
  const uint8_t flags = Load(home->ovf_member);
  for (int member = 0; member < 2; ++member) {
    Bucket* bk = member ? bucket(seg, next(b)) : home;
    const uint32_t bm = Load(bk->bitmap);
    const uint32_t free = ~(bm >> kOverflowShift) & 0xF;
    if (free == 0) continue;
    const uint32_t e = static_cast<uint32_t>(__builtin_ctz(free));
    Store(bk->ovf_fp[e], fp);
    Store(bk->ovf_stash, static_cast<uint8_t>((Load(bk->ovf_stash) & ~(3u << (2 * e))) |
                                           (stash << (2 * e))));
    Store(bk->ovf_member, static_cast<uint8_t>((Load(bk->ovf_member) & ~(1u << e)) |
                                            (uint32_t(member) << e)));
    Store(bk->bitmap, bm | (1u << (kOverflowShift + e)));
    if ((flags & HomedBit(fp)) == 0) {
      Store(home->ovf_member, static_cast<uint8_t>(Load(home->ovf_member) | HomedBit(fp)));
      if (member) pc_->flush(&home->ovf_member, 1);  // else on bk's line, flushed by the caller
    }
    return &bk->bitmap;
  }
  uint8_t& count = hdr(seg)->ovf_count[b];
  assert(Load(count) < 255);  // at most stash x slots keys (56) are counted
  Store(count, static_cast<uint8_t>(Load(count) + 1));
  // The flags readers test: flushed here, fenced with the counter by the caller (both before
  // the stash key's commit).
  Store(home->ovf_member, static_cast<uint8_t>(flags | kOvfCounted | HomedBit(fp)));
  pc_->flush(&home->ovf_member, 1);
  return &count;
}

// Removes the overflow entry (or count) of a stash key of home b, and recomputes b's class
// bits from the entries left (kOvfCounted stands for counted keys); written, not persisted
// (the key is already removed: a crash that keeps an entry or a flag costs probes).
const void* DashTable::remove_overflow(uint64_t seg, uint32_t b, uint8_t fp, uint32_t stash) {
  const void* changed = nullptr;
  for (int member = 0; member < 2 && changed == nullptr; ++member) {
    Bucket* bk = bucket(seg, member ? next(b) : b);
    const uint32_t bm = Load(bk->bitmap);
    const uint32_t mem = Load(bk->ovf_member);
    const uint32_t st = Load(bk->ovf_stash);
    for (uint32_t e = 0; e < kOverflowFps; ++e) {
      if (((bm >> (kOverflowShift + e)) & 1) && ((mem >> e) & 1) == uint32_t(member) &&
          Load(bk->ovf_fp[e]) == fp && ((st >> (2 * e)) & 3) == stash) {
        Store(bk->bitmap, bm & ~(1u << (kOverflowShift + e)));
        changed = &bk->bitmap;
        break;
      }
    }
  }
  Bucket* home = bucket(seg, b);
  uint8_t& count = hdr(seg)->ovf_count[b];
  if (changed == nullptr) {
    if (Load(count) != 0) Store(count, static_cast<uint8_t>(Load(count) - 1));
    if (Load(count) == 0) {
      Store(home->ovf_member, static_cast<uint8_t>(Load(home->ovf_member) & ~kOvfCounted));
      pc_->flush(&home->ovf_member, 1);
    }
    changed = &count;
  }
  Store(home->ovf_member, static_cast<uint8_t>((Load(home->ovf_member) & ~kOvfHomedMask) |
                                               homed_bits(seg, b)));
  return changed;
}

// The class bits (HomedBit) of the valid overflow entries of keys homed at b: b's own
// entries and, as members, b+1's.
uint8_t DashTable::homed_bits(uint64_t seg, uint32_t b) const {
  uint8_t bits = 0;
  for (int member = 0; member < 2; ++member) {
    const Bucket* bk = bucket(seg, member ? next(b) : b);
    const uint32_t mem = Load(bk->ovf_member);
    const uint32_t valid = (Load(bk->bitmap) >> kOverflowShift) & (member ? mem : ~mem) & 0xF;
    for (uint32_t e = 0; e < kOverflowFps; ++e)
      if ((valid >> e) & 1) bits |= HomedBit(Load(bk->ovf_fp[e]));
  }
  return bits;
}

// The pair, its fingerprint and its overflow entry persisted (an entry without its key only
// costs a probe), then the stash slot's alloc bit persisted: the commit.
bool DashTable::stash_insert(uint64_t seg, uint32_t b, const KeyHash& kh, uint64_t key,
                             uint64_t value) {
  const bool late_meta = pm::mutant("dash.stash_meta_after_commit");
  for (uint32_t s = 0; s < geo_.stash; ++s) {
    Bucket* sb = bucket(seg, geo_.normal + s);
    VersionLock::Lock(&sb->lock, gen_);
    const uint32_t free = ~Load(sb->bitmap) & slot_mask_;
    if (free == 0) {
      VersionLock::Unlock(&sb->lock, gen_, false);
      continue;
    }
    const uint32_t slot = static_cast<uint32_t>(__builtin_ctz(free));
    Store(sb->slot[slot].key, key);
    Store(sb->slot[slot].value, value);
    Store(sb->fp[slot], kh.Fp());
    pc_->flush(&sb->slot[slot], sizeof(Slot));
    pc_->flush(&sb->fp[slot], 1);
    if (!late_meta) pc_->flush(add_overflow(seg, b, kh.Fp(), s), 1);
    pc_->fence();
    Store(sb->bitmap, Load(sb->bitmap) | (1u << slot));
    pc_->persist(&sb->bitmap, 4);  // commit
    if (late_meta) pc_->persist(add_overflow(seg, b, kh.Fp(), s), 1);
    VersionLock::Unlock(&sb->lock, gen_);
    return true;
  }
  return false;
}

Status DashTable::create_first() {
  std::lock_guard<std::mutex> lock(split_mu_);
  if (Load(root_->directory) != 0) return Status::OK();
  pm::Allocator& a = pool_->allocator();
  Result<uint64_t> seg = a.allocate(geo_.SegmentBytes(), true);
  if (!seg.ok()) return seg.status();
  Result<uint64_t> dir = a.allocate(DirectoryBytes(0), true);
  if (!dir.ok()) {
    a.free(*seg);
    return dir.status();
  }
  pc_->flush(base_ + *seg, geo_.SegmentBytes());  // depth 0, pattern 0, every bucket empty
  dir_at(*dir)->seg[0] = *seg;
  pc_->persist(dir_at(*dir), DirectoryBytes(0));
  StoreRelease(root_->directory, *dir);  // commit: before it, both blocks are unreachable
  pc_->persist(&root_->directory, 8);
  return Status::OK();
}

// One attempt; *retry: read the directory again.
template <class M>
Status DashTable::put_once(Op op, const KeyHash& kh, const M& key, uint64_t value, bool* retry) {
  *retry = true;
  if (LoadAcquire(root_->directory) == 0) {
    if (op == Op::kUpdate) {
      *retry = false;
      return Status::NotFound();
    }
    return create_first();
  }
  uint64_t seg;
  uint32_t b;
  Held held;
  if (!lock_pair(kh, &seg, &b, &held)) return Status::OK();
  *retry = false;
  Loc loc;
  Status s;
  if (locate(seg, b, held, kh, key, &loc)) {
    if (op == Op::kInsert) {
      s = Status::AlreadyExists();
    } else {
      Slot& sl = bucket(seg, loc.bucket)->slot[loc.slot];
      Store(sl.value, value);
      pc_->persist(&sl.value, 8);  // commit: one 8-byte store
    }
  } else if (op == Op::kUpdate) {
    s = Status::NotFound();
  } else if constexpr (std::is_same_v<M, IntMatch>) {
    if (!insert_new(seg, b, held, kh, key.key, value)) {
      const uint64_t dp = Load(hdr(seg)->depth_pattern);
      unlock_pair(held);
      *retry = true;
      return split(seg, dp);
    }
  } else {
    // keys=bytes: the record persisted (new_record), then the slot naming it committed. A
    // crash between them leaves a record no slot names: the allocator rebuild frees it.
    Result<uint64_t> rec = new_record(key.key);
    if (!rec.ok()) {
      unlock_pair(held);
      return rec.status();
    }
    if (!insert_new(seg, b, held, kh, *rec, value)) {
      pool_->allocator().free(*rec);  // never named by a slot
      const uint64_t dp = Load(hdr(seg)->depth_pattern);
      unlock_pair(held);
      *retry = true;
      return split(seg, dp);
    }
    if (pm::mutant("dash.key_record_after_commit"))
      pc_->persist(base_ + *rec, KeyRecordBytes(key.key.size()));
  }
  unlock_pair(held);
  if (pm::kMutantsCompiled && t_deferred_commit != nullptr) {  // dash.unlock_before_persist
    pc_->persist(t_deferred_commit, 4);
    t_deferred_commit = nullptr;
  }
  return s;
}

template <class M>
Status DashTable::put(Op op, M key, uint64_t value) {
  const KeyHash kh = hash_of(key);
  for (;;) {
    bool retry;
    Status s = put_once(op, kh, key, value, &retry);
    if (!retry || !s.ok()) return s;
  }
}
template Status DashTable::put(Op, IntMatch, uint64_t);
template Status DashTable::put(Op, BytesMatch, uint64_t);

// keys=bytes, after the commit that clears the slot: its record retired through the epoch
// (a reader may still compare it; a crash before the retirement leaves a record no slot
// names, which the allocator rebuild frees).
template <class M>
Status DashTable::erase(M key) {
  const KeyHash kh = hash_of(key);
  if (LoadAcquire(root_->directory) == 0) return Status::NotFound();
  uint64_t seg;
  uint32_t b;
  Held held;
  while (!lock_pair(kh, &seg, &b, &held)) {
  }
  Loc loc;
  if (!locate(seg, b, held, kh, key, &loc)) {
    unlock_pair(held);
    return Status::NotFound();
  }
  Bucket* bk = bucket(seg, loc.bucket);
  uint64_t word = 0;  // keys=bytes: the record to retire
  if constexpr (!std::is_same_v<M, IntMatch>) word = Load(bk->slot[loc.slot].key);
  if (loc.bucket < geo_.normal) {
    Store(bk->bitmap, ClearSlotBits(Load(bk->bitmap), loc.slot));
    pc_->persist(&bk->bitmap, 4);  // commit
  } else {
    VersionLock::Lock(&bk->lock, gen_);  // other homes' inserts share the stash bucket
    Store(bk->bitmap, ClearSlotBits(Load(bk->bitmap), loc.slot));
    pc_->persist(&bk->bitmap, 4);  // commit; the overflow entry after it is only a hint
    VersionLock::Unlock(&bk->lock, gen_);
    pc_->persist(remove_overflow(seg, b, kh.Fp(), loc.bucket - geo_.normal), 1);
  }
  unlock_pair(held);
  if constexpr (!std::is_same_v<M, IntMatch>) pool_->allocator().retire(word);
  return Status::OK();
}
template Status DashTable::erase(IntMatch);
template Status DashTable::erase(BytesMatch);

}  // namespace pmindex::hash::dash
