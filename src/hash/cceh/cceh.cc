// CCEH: reads and the writes within one segment. The crash argument of each path is in
// cceh.h; the comments here name the step a store is.
#include "hash/cceh/cceh.h"

#include <cassert>
#include <cstring>

#include "pm/alloc.h"
#include "pm/mutant.h"
#include "pm/version_lock.h"

namespace pmindex::hash::cceh {

using pm::VersionLock;

namespace {
uint64_t Load(const uint64_t& w) { return __atomic_load_n(&w, __ATOMIC_RELAXED); }
uint64_t LoadAcquire(const uint64_t& w) { return __atomic_load_n(&w, __ATOMIC_ACQUIRE); }
void Store(uint64_t& w, uint64_t v) { __atomic_store_n(&w, v, __ATOMIC_RELAXED); }
void StoreRelease(uint64_t& w, uint64_t v) { __atomic_store_n(&w, v, __ATOMIC_RELEASE); }
}  // namespace

CcehIndex::CcehIndex(std::unique_ptr<Pool> pool, Geometry geo)
    : pool_(std::move(pool)),
      pc_(&pool_->persist_context()),
      base_(pool_->base()),
      root_(reinterpret_cast<Root*>(pool_->root_area())),
      geo_(geo),
      nbuckets_(geo.buckets()),
      segment_block_(geo.segment_bytes),
      // The mutant takes locks in the generation of reset words: a lock a crash left set in
      // the pool is then still held after reopening.
      lock_gen_(pm::mutant("cceh.lock_ignores_generation")
                    ? VersionLock::kResetGeneration
                    : static_cast<uint32_t>(pool_->generation())) {
  dir_.store(root_->dir, std::memory_order_release);
}

Status CcehIndex::close() {
  if (pool_ == nullptr) return Status::OK();
  Status s = pool_->Close();
  pool_.reset();
  return s;
}

Status CcehIndex::check_key(std::string_view key) const {
  if (pool_ == nullptr) return Status::InvalidArgument("index is closed");
  if (key.size() != 8) return Status::InvalidArgument("keys are 8 bytes");
  return Status::OK();
}

uint32_t CcehIndex::global_depth() const {
  const uint64_t d = published_directory();
  return d == 0 ? 0 : static_cast<uint32_t>(Load(dir(d)->depth));
}

uint64_t CcehIndex::segment_for(const Directory* d, uint64_t h) const {
  return LoadAcquire(d->entry[Prefix(h, static_cast<uint32_t>(Load(d->depth)))]);
}

// ---- reads -------------------------------------------------------------------------------

bool CcehIndex::probe(const Segment* s, uint64_t k, uint64_t h, uint64_t* value) const {
  uint32_t b = HomeBucket(h, nbuckets_);
  for (uint32_t i = 0; i < geo_.probe; ++i, b = b + 1 == nbuckets_ ? 0 : b + 1) {
    const Bucket& bucket = s->bucket[b];
    const uint64_t valid = Load(bucket.valid);
    for (int j = 0; j < Bucket::kSlots; ++j) {
      if ((valid >> j & 1) && Load(bucket.slot[j].key) == k) {
        *value = Load(bucket.slot[j].value);
        return true;  // k belongs here (checked by the caller), so this copy is live
      }
    }
  }
  return false;
}

bool CcehIndex::find(uint64_t k, uint64_t h, uint64_t* value) const {
  for (int spins = 0;; ++spins) {
    const uint64_t d = dir_.load(std::memory_order_acquire);
    if (d == 0) return false;
    const Segment* s = seg(segment_for(dir(d), h));
    uint64_t version = 0;
    // Waits while a writer holds the lock: a reader never sees a write before its persist.
    VersionLock::ReadBegin(&s->header.lock, lock_gen_, &version);
    if (!Belongs(h, LoadAcquire(s->header.shape))) {  // split meanwhile: read the entry again
      VersionLock::Backoff(spins);
      continue;
    }
    const bool hit = probe(s, k, h, value);
    if (VersionLock::ReadValidate(&s->header.lock, version)) return hit;
  }
}

Status CcehIndex::lookup(std::string_view key, std::string* value) {
  if (Status s = check_key(key); !s.ok()) return s;
  const uint64_t k = IntKey::Decode(key);
  uint64_t v = 0;
  bool hit;
  {
    auto guard = pool_->allocator().epoch_guard();  // the directory may be retired meanwhile
    hit = find(k, Hash(k), &v);
  }
  if (!hit) return Status::NotFound();
  if (value != nullptr) {
    if (value->size() != 8) value->resize(8);
    std::memcpy(value->data(), &v, 8);
  }
  return Status::OK();
}

// ---- writes ------------------------------------------------------------------------------

Status CcehIndex::insert(std::string_view key, std::string_view value) {
  if (Status s = check_key(key); !s.ok()) return s;
  if (value.size() != 8) return Status::InvalidArgument("values are 8 bytes");
  return put(Op::kInsert, IntKey::Decode(key), IntValue::Decode(value));
}
Status CcehIndex::update(std::string_view key, std::string_view value) {
  if (Status s = check_key(key); !s.ok()) return s;
  if (value.size() != 8) return Status::InvalidArgument("values are 8 bytes");
  return put(Op::kUpdate, IntKey::Decode(key), IntValue::Decode(value));
}
Status CcehIndex::upsert(std::string_view key, std::string_view value) {
  if (Status s = check_key(key); !s.ok()) return s;
  if (value.size() != 8) return Status::InvalidArgument("values are 8 bytes");
  return put(Op::kUpsert, IntKey::Decode(key), IntValue::Decode(value));
}
Status CcehIndex::remove(std::string_view key) {
  if (Status s = check_key(key); !s.ok()) return s;
  return erase(IntKey::Decode(key));
}

Segment* CcehIndex::lock_segment(uint64_t h, uint64_t* held) {
  for (;;) {
    const uint64_t d = dir_.load(std::memory_order_acquire);
    if (d == 0) return nullptr;
    Segment* s = seg(segment_for(dir(d), h));
    VersionLock::Lock(&s->header.lock, lock_gen_, held);  // never obsolete: never retired
    // Locked, the shape is stable: a segment matching h is the one k belongs to.
    if (Belongs(h, Load(s->header.shape))) return s;
    VersionLock::Release(&s->header.lock, *held, false);  // split meanwhile: look again
  }
}

void CcehIndex::commit_and_unlock(Segment* s, uint64_t held, const void* p, size_t n) {
  assert(Load(s->header.lock) == held);  // the caller holds s, as it locked it
  if (pm::mutant("cceh.unlock_before_persist")) {
    unlock(s, held);  // readers may now return a write that is not durable yet
    pc_->persist(p, n);
    return;
  }
  pc_->persist(p, n);
  unlock(s, held);
}

void CcehIndex::locate(Segment* s, uint64_t k, uint64_t h, Place* found, Place* free) const {
  const uint64_t shape = Load(s->header.shape);
  uint32_t b = HomeBucket(h, nbuckets_);
  for (uint32_t i = 0; i < geo_.probe; ++i, b = b + 1 == nbuckets_ ? 0 : b + 1) {
    Bucket* bucket = &s->bucket[b];
    const uint64_t valid = Load(bucket->valid);
    for (int j = 0; j < Bucket::kSlots; ++j) {
      if (!(valid >> j & 1)) {
        if (free->bucket == nullptr) *free = Place{bucket, j};
        continue;
      }
      const uint64_t key = Load(bucket->slot[j].key);
      if (key == k) {
        *found = Place{bucket, j};
        return;
      }
      // Lazy deletion: a pair a split moved away is free space here.
      if (free->bucket == nullptr && !Belongs(Hash(key), shape)) *free = Place{bucket, j};
    }
  }
}

void CcehIndex::write_pair(Segment* s, uint64_t held, const Place& at, uint64_t k, uint64_t v) {
  Bucket* b = at.bucket;
  Slot* slot = &b->slot[at.slot];
  const uint64_t valid = Load(b->valid);
  if (valid >> at.slot & 1) {
    // A stale slot: its old key keeps it ignored until the key store commits the pair.
    Store(slot->value, v);
    pc_->persist(&slot->value, 8);
    Store(slot->key, k);
    commit_and_unlock(s, held, &slot->key, 8);
    return;
  }
  // A free slot: the pair is durable before its valid bit commits it.
  Store(slot->key, k);
  Store(slot->value, v);
  if (!pm::mutant("cceh.valid_with_pair")) pc_->persist(slot, sizeof(Slot));
  Store(b->valid, valid | uint64_t{1} << at.slot);
  commit_and_unlock(s, held, &b->valid, pm::mutant("cceh.valid_with_pair") ? 64 : 8);
}

Status CcehIndex::put_once(Op op, uint64_t k, uint64_t h, uint64_t v) {
  for (;;) {
    uint64_t held;
    Segment* s = lock_segment(h, &held);
    if (s == nullptr) {
      if (op == Op::kUpdate) return Status::NotFound();
      if (Status st = create_table(); !st.ok()) return st;
      continue;
    }
    Place found, free;
    locate(s, k, h, &found, &free);
    if (found.bucket != nullptr) {
      if (op == Op::kInsert) {
        unlock(s, held);
        return Status::AlreadyExists();
      }
      Slot* slot = &found.bucket->slot[found.slot];
      Store(slot->value, v);  // one 8-byte failure-atomic store
      commit_and_unlock(s, held, &slot->value, 8);
      return Status::OK();
    }
    if (op == Op::kUpdate) {
      unlock(s, held);
      return Status::NotFound();
    }
    if (free.bucket != nullptr) {
      write_pair(s, held, free, k, v);
      return Status::OK();
    }
    Status st = split(s);  // the probing unit is full
    unlock(s, held);
    if (!st.ok()) return st;
  }
}

Status CcehIndex::put(Op op, uint64_t k, uint64_t v) {
  const uint64_t h = Hash(k);
  Status st;
  {
    auto guard = pool_->allocator().epoch_guard();
    st = put_once(op, k, h, v);
  }
  // Out of space: free what retired directories allow (outside the guard), then once more.
  if (st.IsOutOfSpace() && pool_->allocator().reclaim_now()) {
    auto guard = pool_->allocator().epoch_guard();
    st = put_once(op, k, h, v);
  }
  return st;
}

Status CcehIndex::erase(uint64_t k) {
  const uint64_t h = Hash(k);
  auto guard = pool_->allocator().epoch_guard();
  uint64_t held;
  Segment* s = lock_segment(h, &held);
  if (s == nullptr) return Status::NotFound();
  Place found, free;
  locate(s, k, h, &found, &free);
  if (found.bucket == nullptr) {
    unlock(s, held);
    return Status::NotFound();
  }
  Bucket* b = found.bucket;
  Store(b->valid, Load(b->valid) & ~(uint64_t{1} << found.slot));  // one 8-byte store
  commit_and_unlock(s, held, &b->valid, 8);
  return Status::OK();
}

// The first segment and a directory of depth 0, both persisted before the root names the
// directory (8-byte store, persisted): before it, an empty index and two unreachable blocks.
Status CcehIndex::create_table() {
  std::lock_guard<std::mutex> lock(dir_mu_);
  if (Load(root_->dir) != 0) return Status::OK();
  Result<uint64_t> s = pool_->allocator().allocate(segment_block_, true);
  if (!s.ok()) return s.status();
  Result<uint64_t> d = pool_->allocator().allocate(DirectoryBytes(0), true);
  if (!d.ok()) {
    pool_->allocator().free(*s);
    return d.status();
  }
  Segment* first = seg(*s);
  first->header.shape = MakeShape(0, 0);
  first->header.magic = kSegmentMagic;
  pc_->persist(first, segment_block_);
  Directory* directory = dir(*d);
  directory->magic = kDirectoryMagic;
  directory->depth = 0;
  directory->entry[0] = *s;
  pc_->persist(directory, DirectoryBytes(0));
  StoreRelease(root_->dir, *d);
  pc_->persist(&root_->dir, 8);
  dir_.store(*d, std::memory_order_release);  // published once durable
  return Status::OK();
}

}  // namespace pmindex::hash::cceh
