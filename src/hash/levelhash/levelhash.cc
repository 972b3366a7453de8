// Level hashing: the operations (lock-free lookups, writes under bucket locks). Crash
// arguments and the concurrency scheme: levelhash.h.
#include "hash/levelhash/levelhash.h"

#include <immintrin.h>

#include <algorithm>
#include <mutex>
#include <shared_mutex>

#include "hash/common/traits.h"
#include "pm/alloc.h"
#include "pm/params.h"
#include "pm/seqlock.h"
#include "pm/version_lock.h"

namespace pmindex::hash::levelhash {

using pm::VersionLock;

IndexTraits LevelHash::Traits() {
  return HashTraits(
      "levelhash", kLevelHashKind,
      "concurrent: writers lock their key's buckets (the authors' fine-grained locks, per "
      "bucket); lock-free readers validate bucket versions; resizing excludes writers",
      "level hashing: two levels of 4-slot buckets, log-free writes, in-place resize");
}

const IndexTraits& LevelHash::traits() const {
  static const IndexTraits traits = Traits();
  return traits;
}

LevelHash::LevelHash(std::unique_ptr<Pool> pool)
    : pool_(std::move(pool)),
      pc_(&pool_->persist_context()),
      root_(reinterpret_cast<LevelRoot*>(pool_->root_area())),
      gen_(static_cast<uint32_t>(pool_->generation())) {
  Table t;
  if (LoadTable(&t).ok()) SetView(ViewOf(t));  // recover() checks and finishes it
}

LevelHash::~LevelHash() { close().IgnoreError(); }

Result<std::unique_ptr<Index>> LevelHash::Attach(std::unique_ptr<Pool> pool, bool fresh) {
  if (Result<uint64_t> bits = pm::ParamUint("levelhash", pool->index_params(), "initial_top_bits",
                                            2);
      !bits.ok())
    return bits.status();
  auto* root = reinterpret_cast<LevelRoot*>(pool->root_area());
  const uint64_t kind = static_cast<uint32_t>(kLevelHashKind);
  // A pool without the magic is new only if nothing was ever carved (creation allocates
  // nothing: the first insert makes the levels).
  const bool never_written = root->magic == 0 && pool->allocator().carved_chunks() == 0;
  if (fresh || never_written) {
    std::memset(static_cast<void*>(root), 0, sizeof(LevelRoot));
    root->kind = kind;
    pm::PersistContext& pc = pool->persist_context();
    pc.persist(root, sizeof(LevelRoot));
    root->magic = kLevelHashMagic;  // commit: 8-byte store after the rest is durable
    pc.persist(&root->magic, 8);
  } else if (root->magic != kLevelHashMagic || root->kind != kind) {
    return Status::Corruption(pool->path() + ": root area is not a levelhash table");
  }
  return std::unique_ptr<Index>(new LevelHash(std::move(pool)));
}

Status LevelHash::close() {
  if (pool_ == nullptr) return Status::OK();
  Status s = pool_->Close();
  pool_.reset();
  return s;
}

Status LevelHash::CheckKey(std::string_view key) const {
  if (pool_ == nullptr) return Status::InvalidArgument("index is closed");
  if (key.size() != 8) return Status::InvalidArgument("levelhash: keys are 8 bytes");
  return Status::OK();
}

Status LevelHash::insert(std::string_view key, std::string_view value) {
  if (Status s = CheckKey(key); !s.ok()) return s;
  if (value.size() != 8) return Status::InvalidArgument("levelhash: values are 8 bytes");
  return Write(IntKey::Decode(key), IntValue::Decode(value), Need::kAbsent);
}

Status LevelHash::update(std::string_view key, std::string_view value) {
  if (Status s = CheckKey(key); !s.ok()) return s;
  if (value.size() != 8) return Status::InvalidArgument("levelhash: values are 8 bytes");
  return Write(IntKey::Decode(key), IntValue::Decode(value), Need::kPresent);
}

Status LevelHash::upsert(std::string_view key, std::string_view value) {
  if (Status s = CheckKey(key); !s.ok()) return s;
  if (value.size() != 8) return Status::InvalidArgument("levelhash: values are 8 bytes");
  return Write(IntKey::Decode(key), IntValue::Decode(value), Need::kAny);
}

Status LevelHash::remove(std::string_view key) {
  if (Status s = CheckKey(key); !s.ok()) return s;
  return Remove(IntKey::Decode(key));
}

LevelHash::View LevelHash::CurrentView() const {
  const uint64_t bits = bits_.load(std::memory_order_acquire);
  return views_[bits];
}

void LevelHash::SetView(const View& v) {
  views_[v.bits] = v;
  bits_.store(v.bits, std::memory_order_release);
}

// The key's distinct candidate buckets, locked in address order (writers never deadlock).
void LevelHash::LockCandidates(const View& v, uint64_t key, Held* held) {
  const Pair t = BucketsOf(key, v.bits);
  Bucket* c[4] = {v.top + t.first, v.top + t.second, v.bottom + (t.first >> 1),
                  v.bottom + (t.second >> 1)};
  std::sort(c, c + 4);
  for (int i = 0; i < 4; ++i) {
    if (i > 0 && c[i] == c[i - 1]) continue;
    VersionLock::LockInline(&c[i]->lock, gen_);
    held->Add(c[i]);
  }
}

void LevelHash::Unlock(Held* held) {
  for (int i = 0; i < held->n; ++i)
    VersionLock::Unlock(&held->bucket[i]->lock, gen_, held->changed[i]);
  held->n = 0;
}

// A free slot in the bucket: the new item there, and one token store that sets its bit and
// clears the old one. A full bucket: the 8-byte value in place (failure-atomic).
void LevelHash::Update(Bucket* b, int i, uint64_t value) {
  const uint8_t t = LoadToken(b);
  const int j = FreeSlot(t);
  if (j >= 0) {
    Commit(b, j, LoadWord(&b->slot[i].key), value,
           static_cast<uint8_t>((t | CommitBit(j)) & ~(CommitBit(i) | MovedBit(i))));
  } else {
    StoreWord(&b->slot[i].value, value);
    pc_->persist(&b->slot[i].value, 8);
  }
}

Status LevelHash::WriteLocked(const View& v, uint64_t key, uint64_t value, Need need, Held* held,
                              bool* full, bool* contended) {
  for (int c = 0; c < held->n; ++c) {
    Bucket* b = held->bucket[c];
    const uint8_t t = LoadToken(b);
    for (int i = 0; i < kSlots; ++i) {
      if ((t & CommitBit(i)) == 0 || LoadWord(&b->slot[i].key) != key) continue;
      if (need == Need::kAbsent) return Status::AlreadyExists();
      Update(b, i, value);
      held->Changed(b);
      return Status::OK();
    }
  }
  if (need == Need::kPresent) return Status::NotFound();
  Spot spot;
  if (Place(v, key, value, false, held, contended, &spot)) {
    *contended = false;  // a busy destination passed over on the way does not matter now
  } else {
    *full = !*contended;
  }
  return Status::OK();
}

Status LevelHash::Write(uint64_t key, uint64_t value, Need need) {
  for (int attempt = 0;; ++attempt) {
    bool full = false, contended = false;
    uint64_t bits;
    {
      std::shared_lock lock(table_lock_);
      const View v = CurrentView();
      bits = v.bits;
      if (bits == 0) {
        if (need == Need::kPresent) return Status::NotFound();
        full = true;
      } else {
        Held held;
        LockCandidates(v, key, &held);
        Status s = WriteLocked(v, key, value, need, &held, &full, &contended);
        Unlock(&held);
        if (!full && !contended) return s;
      }
    }
    if (contended) {
      VersionLock::Backoff(attempt);
      continue;
    }
    if (Status s = Grow(bits); !s.ok()) return s;
  }
}

Status LevelHash::Remove(uint64_t key) {
  std::shared_lock lock(table_lock_);
  const View v = CurrentView();
  if (v.bits == 0) return Status::NotFound();
  Held held;
  LockCandidates(v, key, &held);
  Status result = Status::NotFound();
  for (int c = 0; c < held.n && !result.ok(); ++c) {
    Bucket* b = held.bucket[c];
    const uint8_t t = LoadToken(b);
    for (int i = 0; i < kSlots; ++i) {
      if ((t & CommitBit(i)) == 0 || LoadWord(&b->slot[i].key) != key) continue;
      StoreToken(b, static_cast<uint8_t>(t & ~(CommitBit(i) | MovedBit(i))));  // one store
      pc_->persist(&b->token, 1);
      held.changed[c] = true;
      result = Status::OK();
      break;
    }
  }
  Unlock(&held);
  return result;
}

// One optimistic attempt; false if a writer or a resize interfered (retry).
bool LevelHash::LookupOnce(uint64_t key, uint64_t* value, bool* found) {
  const uint64_t seq = __atomic_load_n(&resize_seq_, __ATOMIC_ACQUIRE);
  if (seq & 1) {
    _mm_pause();
    return false;
  }
  const View v = CurrentView();
  *found = false;
  if (v.bits == 0) return pm::ReadAgain(&resize_seq_) == seq;
  const Pair t = BucketsOf(key, v.bits);
  Bucket* c[4] = {v.top + t.first, v.top + t.second, v.bottom + (t.first >> 1),
                  v.bottom + (t.second >> 1)};
  uint64_t version[4];
  for (int i = 0; i < 4; ++i) VersionLock::ReadBegin(&c[i]->lock, gen_, &version[i]);
  for (int i = 0; i < 4; ++i) {
    const uint8_t token = LoadToken(c[i]);
    for (int s = 0; s < kSlots; ++s) {
      if ((token & CommitBit(s)) == 0 || LoadWord(&c[i]->slot[s].key) != key) continue;
      *value = LoadWord(&c[i]->slot[s].value);
      *found = true;
      return VersionLock::ReadValidate(&c[i]->lock, version[i]) &&
             pm::ReadAgain(&resize_seq_) == seq;
    }
  }
  // Absent: no candidate changed meanwhile (a move changes two of them).
  for (int i = 0; i < 4; ++i)
    if (!VersionLock::ReadValidate(&c[i]->lock, version[i])) return false;
  return pm::ReadAgain(&resize_seq_) == seq;
}

Status LevelHash::lookup(std::string_view key, std::string* value) {
  if (Status s = CheckKey(key); !s.ok()) return s;
  const uint64_t k = IntKey::Decode(key);
  auto guard = pool_->allocator().epoch_guard();  // an old bottom level stays until we leave
  uint64_t v = 0;
  bool found = false;
  while (!LookupOnce(k, &v, &found)) {
  }
  if (!found) return Status::NotFound();
  if (value != nullptr) SetIntValue(value, v);
  return Status::OK();
}

}  // namespace pmindex::hash::levelhash
