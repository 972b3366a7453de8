// Dash: attach, the read path and the registration. The crash argument of every path is in
// dash.h; writes are in dash_insert.cc, splits in dash_split.cc, recovery and checks in
// dash_maint.cc.
#include "hash/dash/dash.h"
#include "pm/prefetch.h"

#include <bit>
#include <cassert>

#include "hash/common/traits.h"
#include "pm/alloc.h"
#include "pm/mutant.h"
#include "pm/params.h"
#include "pm/version_lock.h"

namespace pmindex::hash::dash {

using pm::VersionLock;

IndexTraits DashTable::Traits() {
  return HashTraits(
      "dash", kDashKind,
      "concurrent: writers lock a key's two buckets (optimistic version locks), readers take "
      "no lock and validate; splits serialized",
      "Dash-EH: extendible hashing, fingerprinted 256 B buckets, stash, displacement");
}

IndexTraits DashTable::BytesTraits() {
  IndexTraits t = Traits();
  t.byte_keys = true;
  t.max_key_size = kMaxKeyBytes;
  t.description += "; keys=bytes: byte-string keys in records of their own, the slot holds "
                   "the record's offset";
  return t;
}

const IndexTraits& DashTable::traits() const { return traits_; }

DashTable::DashTable(std::unique_ptr<Pool> pool)
    : pool_(std::move(pool)),
      pc_(&pool_->persist_context()),
      base_(pool_->base()),
      root_(reinterpret_cast<DashRoot*>(pool_->root_area())),
      gen_(static_cast<uint32_t>(pool_->generation())),
      geo_(DashGeometry::Decode(root_->geometry)),
      slot_mask_((1u << geo_.slots) - 1),
      stagger_shift_(static_cast<uint32_t>(std::bit_width(geo_.SegmentBytes() - 1))),
      stagger_mask_(geo_.stagger == 0 ? 0 : geo_.stagger - 1),
      bytes_(root_->keys == kByteKeys),
      key_size_(bytes_ ? SIZE_MAX : 8),
      traits_(bytes_ ? BytesTraits() : Traits()) {}

Result<std::unique_ptr<Index>> DashTable::Attach(std::unique_ptr<Pool> pool, bool fresh) {
  auto* root = reinterpret_cast<DashRoot*>(pool->root_area());
  const uint64_t kind = static_cast<uint32_t>(kDashKind);
  // The magic is persisted before the first block is allocated (the directory is made at
  // the first insert): a pool without it is new only if nothing was ever carved.
  const bool never_written = root->magic == 0 && pool->allocator().carved_chunks() == 0;
  if (fresh || never_written) {
    const bool small = pool->index_params().find("geometry=small") != std::string_view::npos;
    // layout=2: segments staggered across cache sets (layout.h).
    Result<std::string_view> layout =
        pm::ParamChoice("dash", pool->index_params(), "layout", {"1", "2"}, "1");
    if (!layout.ok()) return layout.status();
    const bool v2 = *layout == "2";
    // keys=bytes: the variable-length-key mode (layout.h, KeyRecord).
    Result<std::string_view> keys =
        pm::ParamChoice("dash", pool->index_params(), "keys", {"int", "bytes"}, "int");
    if (!keys.ok()) return keys.status();
    const DashGeometry g =
        small ? (v2 ? kSmallGeometryV2 : kSmallGeometry) : (v2 ? kLargeGeometryV2 : kLargeGeometry);
    root->kind = kind;
    root->directory = 0;
    root->geometry = g.Encode();
    root->keys = *keys == "bytes" ? kByteKeys : kIntKeys;
    root->flags = kHomedFlags;
    pm::PersistContext& pc = pool->persist_context();
    pc.persist(root, sizeof(*root));
    root->magic = kDashMagic;  // commit: 8-byte store after the rest is durable
    pc.persist(&root->magic, 8);
  } else if (root->magic != kDashMagic || root->kind != kind ||
             !DashGeometry::Decode(root->geometry).Valid() || root->keys > kByteKeys) {
    return Status::Corruption(pool->path() + ": root area is not a dash table");
  }
  return std::unique_ptr<Index>(new DashTable(std::move(pool)));
}

Status DashTable::close() {
  if (pool_ == nullptr) return Status::OK();
  for (const uint64_t dir : old_dirs_) pool_->allocator().free(dir);  // no reader is left
  old_dirs_.clear();
  Status s = pool_->Close();
  pool_.reset();
  return s;
}

Status DashTable::invalid(std::string_view key, std::string_view value, bool has_value) const {
  if (pool_ == nullptr) return Status::InvalidArgument("index is closed");
  if (bytes_ && (key.empty() || key.size() > kMaxKeyBytes))
    return Status::InvalidArgument("dash keys=bytes keys are 1.." + std::to_string(kMaxKeyBytes) +
                                   " bytes");
  if (!bytes_ && key.size() != 8) return Status::InvalidArgument("dash keys are 8 bytes");
  if (has_value && value.size() != 8) return Status::InvalidArgument("dash values are 8 bytes");
  return Status::OK();
}

uint32_t DashTable::global_depth() const {
  const uint64_t d = LoadAcquire(root_->directory);
  return d == 0 ? 0 : static_cast<uint32_t>(Load(dir_at(d)->depth));
}

// ---- reads -------------------------------------------------------------------------------

template <class M>
int DashTable::probe_stash(uint64_t seg, uint32_t targets, const KeyHash& kh, const M& key,
                           uint64_t* value) const {
  const uint8_t fp = kh.Fp();
  const bool wait = !pm::mutant("dash.reader_ignores_lock");
  while (targets != 0) {
    const uint32_t s = static_cast<uint32_t>(__builtin_ctz(targets));
    targets &= targets - 1;
    const Bucket* sb = bucket(seg, geo_.normal + s);
    uint64_t v = 0;
    VersionLock::ReadBegin(&sb->lock, gen_, &v, wait);
    const int i = probe(sb, key, fp);
    const uint64_t got = i >= 0 ? Load(sb->slot[i].value) : 0;
    if (!VersionLock::ReadValidate(&sb->lock, v, wait)) return -1;
    if (i >= 0) {
      *value = got;
      return 1;
    }
  }
  return 0;
}

// A key found in a bucket whose version validates is the answer: a split clears the keys it
// moves from S before it unlocks S's buckets. "Absent" must be told from "moved by a split
// that ended before b's version was read": a split points the directory at the new segment
// before it unlocks S, so the directory read again after b's ReadBegin names another segment
// (as Dash's own reads check). The directory's lines are hot; S's header, whose pattern
// would tell the same, is one more cache line to miss.
template <class M>
int DashTable::try_lookup(const KeyHash& kh, const M& key, uint64_t* value) const {
  const uint64_t seg = segment_for(kh);
  if (seg == 0) return 0;
  const bool wait = !pm::mutant("dash.reader_ignores_lock");
  const uint32_t b = kh.Home(geo_.normal);
  const uint8_t fp = kh.Fp();
  const Bucket* b0 = bucket(seg, b);
  const Bucket* b1 = bucket(seg, next(b));
  uint64_t v0 = 0;
  uint64_t v1 = 0;
  VersionLock::ReadBegin(&b0->lock, gen_, &v0, wait);
  VersionLock::ReadBegin(&b1->lock, gen_, &v1, wait);
  int i = probe(b0, key, fp);
  if (i >= 0) {
    *value = Load(b0->slot[i].value);
    return VersionLock::ReadValidate(&b0->lock, v0, wait) ? 1 : -1;
  }
  i = probe(b1, key, fp);
  int found;
  if (i >= 0) {
    *value = Load(b1->slot[i].value);
    found = 1;
  } else {
    const uint32_t targets = MayHaveStashKeys(b0, fp) ? stash_targets(b0, b1, fp) : 0;
    found = targets == 0 ? 0 : probe_stash(seg, targets, kh, key, value);
  }
  // After b's ReadBegin (an acquire): a split that ended before it has repointed the entry.
  const bool moved = found == 0 && segment_for(kh) != seg;
  if (!VersionLock::ReadValidate(&b1->lock, v1, wait) ||
      !VersionLock::ReadValidate(&b0->lock, v0, wait) || moved) {
    return -1;
  }
  return found;
}

template <class M>
Status DashTable::lookup_with(const KeyHash& kh, const M& key, std::string* value) const {
  uint64_t v = 0;
  int r;
  while ((r = try_lookup(kh, key, &v)) == -1) {
  }
  if (r == 0) return Status::NotFound();
  if (value != nullptr) SetIntValue(value, v);
  return Status::OK();
}

// keys=bytes: under the epoch guard (a record a remove retires stays readable).
Status DashTable::bytes_lookup(std::string_view key, std::string* value) {
  if (Status s = invalid(key, {}, false); !s.ok()) return s;
  auto guard = pool_->allocator().epoch_guard();
  return lookup_with(KeyHash::OfBytes(key.data(), key.size()), BytesMatch{this, key}, value);
}

Status DashTable::lookup(std::string_view key, std::string* value) {
  if (!int_op(key, {}, false)) [[unlikely]]
    return bytes_lookup(key, value);
  const uint64_t k = IntKey::Decode(key);
  return lookup_with(KeyHash(k), IntMatch{k}, value);
}

Status DashTable::insert(std::string_view key, std::string_view value) {
  if (!int_op(key, value, true)) [[unlikely]]
    return bytes_put(Op::kInsert, key, value);
  const uint64_t k = IntKey::Decode(key);
  return put(Op::kInsert, IntMatch{k}, IntValue::Decode(value));
}

Status DashTable::update(std::string_view key, std::string_view value) {
  if (!int_op(key, value, true)) [[unlikely]]
    return bytes_put(Op::kUpdate, key, value);
  const uint64_t k = IntKey::Decode(key);
  return put(Op::kUpdate, IntMatch{k}, IntValue::Decode(value));
}

Status DashTable::upsert(std::string_view key, std::string_view value) {
  if (!int_op(key, value, true)) [[unlikely]]
    return bytes_put(Op::kUpsert, key, value);
  const uint64_t k = IntKey::Decode(key);
  return put(Op::kUpsert, IntMatch{k}, IntValue::Decode(value));
}

Status DashTable::remove(std::string_view key) {
  if (!int_op(key, {}, false)) [[unlikely]]
    return bytes_remove(key);
  return erase(IntMatch{IntKey::Decode(key)});
}

IndexRegistration Registration() {
  IndexRegistration r;
  r.traits = DashTable::Traits();
  r.attach = [](std::unique_ptr<Pool> pool, bool fresh) {
    return DashTable::Attach(std::move(pool), fresh);
  };
  r.params = kLargeParams;
  r.campaign_params = kSmallParams;
  r.mutants = {
      {"dash.meta_before_kv",
       "an insert sets the alloc bit in the same fence interval as the pair: the bit can be "
       "durable before the key and value"},
      {"dash.unlock_before_persist",
       "an insert releases its bucket locks before its alloc bit is persisted: a reader can "
       "return a pair that a crash then loses",
       "", "DashReaderTest.NoReaderSeesAnInsertBeforeItsCommitIsDurable"},
      {"dash.reader_ignores_lock",
       "readers do not wait for a bucket's writer: they can return a pair whose commit is not "
       "yet durable",
       "", "DashReaderTest.NoReaderSeesAnInsertBeforeItsCommitIsDurable"},
      {"dash.depth_before_directory",
       "a split persists the old segment's new local depth before the directory entries that "
       "name the new segment"},
      {"dash.segment_after_directory",
       "a split names the new segment in the directory before the segment is persisted"},
      {"dash.displace_without_record",
       "a displacement writes no move record: a crash between its two commits leaves the key "
       "twice"},
      {"dash.displace_clear_first",
       "a displacement clears the key's old slot before the new slot is committed"},
      {"dash.stash_meta_after_commit",
       "a stash insert persists its overflow entry after the stash slot's alloc bit"},
      {"dash.key_record_after_commit",
       "keys=bytes: an insert persists the key's record after the slot's commit",
       "", "DashBytesCrashTest.CampaignInBytesMode"},
  };
  r.crash_scenarios = {"dash-segment-split"};
  return r;
}

}  // namespace pmindex::hash::dash
