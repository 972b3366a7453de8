#include "core/value_store.h"

#include <cstddef>
#include <cstring>
#include <functional>
#include <mutex>

#include "pm/alloc.h"
#include "pm/mutant.h"
#include "pm/persist.h"
#include "pm/pool_format.h"
#include "pm/rw_lock.h"

namespace pmindex {
namespace {

constexpr char kMutantPublishFirst[] = "values.publish_before_value_persist";

// The out-of-line value, in a pool block of at least 8 + length bytes:
//
//   offset size    field
//      0     8     length (bytes of the value)
//      8   length  the value
struct ValueBlock {
  uint64_t length;
  char data[8];  // `length` bytes in fact
};
static_assert(offsetof(ValueBlock, length) == 0 && offsetof(ValueBlock, data) == 8);
static_assert(sizeof(ValueBlock) == 16 && alignof(ValueBlock) == 8);
constexpr size_t kBlockHeader = offsetof(ValueBlock, data);

constexpr unsigned char kWordInlineTag = 0x80;
constexpr char kStringInline = 0x01;
constexpr char kStringRef = 0x02;
constexpr size_t kStripes = 256;

// What an encoded value says: inline bytes, or a reference (offset != 0).
struct Decoded {
  std::string_view inline_value;
  uint64_t offset = 0;
  bool ok = true;  // false: not an encoding this layer writes
};

class ValueStoreIndex final : public Index {
 public:
  ValueStoreIndex(std::unique_ptr<Index> index, uint64_t limit)
      : index_(std::move(index)),
        pool_(index_->pool()),
        traits_(index_->traits()),
        word_form_(!traits_.byte_keys || traits_.max_value_size < 9),
        inline_room_(word_form_ ? 7 : traits_.max_value_size - 1) {
    traits_.max_value_size = limit;
    traits_.any_value_size = true;
  }

  const IndexTraits& traits() const override { return traits_; }
  Status insert(std::string_view key, std::string_view value) override {
    return Write(key, value, Op::kInsert);
  }
  Status update(std::string_view key, std::string_view value) override {
    return Write(key, value, Op::kUpdate);
  }
  Status upsert(std::string_view key, std::string_view value) override {
    return Write(key, value, Op::kUpsert);
  }
  Status remove(std::string_view key) override;
  Status lookup(std::string_view key, std::string* value) override;
  size_t scan(std::string_view start, size_t max_count, ScanCallback fn) override;
  Status scan_checked(std::string_view start, size_t max_count, ScanCallback fn,
                      size_t* count) override;
  Status for_each(ScanCallback fn) override;
  Status verify() override;
  IndexStats stats() override { return index_->stats(); }
  Status recover() override { return index_->recover(); }
  Status visit_blocks(BlockVisitor& visitor) override;
  Pool* pool() override { return pool_; }
  Status close() override { return index_->close(); }

 private:
  enum class Op { kInsert, kUpdate, kUpsert };

  Decoded Decode(std::string_view enc) const;
  // The user's value of an encoding (a view of the block or of `buf`); inside a guard.
  bool View(std::string_view enc, std::string_view* out) const;
  // Writes `value` into a new block, persisted (unless the mutant defers it); *offset.
  Status Store(std::string_view value, uint64_t* offset);
  std::string EncodeRef(uint64_t offset) const;
  std::string EncodeInline(std::string_view value) const;
  Status Write(std::string_view key, std::string_view value, Op op);
  Status Apply(std::string_view key, std::string_view enc, Op op);
  // The referenced offset of `key`'s present value (0: inline or absent).
  uint64_t OldRef(std::string_view key);
  // Walks every pair's encoding; fn returns a Status, the first non-OK ends the walk.
  Status Walk(const std::function<Status(std::string_view, const Decoded&)>& fn);
  pm::RwLock& stripe(std::string_view key) {
    return stripes_[std::hash<std::string_view>()(key) % kStripes];
  }
  ValueBlock* block(uint64_t offset) const { return pool_->at<ValueBlock>(offset); }

  std::unique_ptr<Index> index_;
  Pool* pool_;
  IndexTraits traits_;
  const bool word_form_;
  const size_t inline_room_;  // the longest value kept inline
  pm::RwLock stripes_[kStripes];
};

Decoded ValueStoreIndex::Decode(std::string_view enc) const {
  Decoded d;
  if (word_form_) {
    if (enc.size() != 8) return {{}, 0, false};
    const auto tag = static_cast<unsigned char>(enc[7]);
    if (tag & kWordInlineTag) {
      const size_t n = tag & 0x7f;
      d.ok = n <= 7;
      d.inline_value = enc.substr(0, n <= 7 ? n : 0);
      return d;
    }
    std::memcpy(&d.offset, enc.data(), 8);
    d.ok = d.offset != 0;
    return d;
  }
  if (enc.empty()) return {{}, 0, false};
  if (enc.back() == kStringInline) {
    d.inline_value = enc.substr(0, enc.size() - 1);
  } else if (enc.back() == kStringRef && enc.size() == 9) {
    std::memcpy(&d.offset, enc.data(), 8);
    d.ok = d.offset != 0;
  } else {
    d.ok = false;
  }
  return d;
}

std::string ValueStoreIndex::EncodeInline(std::string_view value) const {
  if (!word_form_) {
    std::string enc(value);
    enc += kStringInline;
    return enc;
  }
  std::string enc(8, '\0');
  std::memcpy(enc.data(), value.data(), value.size());
  enc[7] = static_cast<char>(kWordInlineTag | value.size());
  return enc;
}

std::string ValueStoreIndex::EncodeRef(uint64_t offset) const {
  std::string enc(8, '\0');
  std::memcpy(enc.data(), &offset, 8);
  if (!word_form_) enc += kStringRef;
  return enc;
}

bool ValueStoreIndex::View(std::string_view enc, std::string_view* out) const {
  const Decoded d = Decode(enc);
  if (!d.ok) return false;
  if (d.offset == 0) {
    *out = d.inline_value;
    return true;
  }
  const ValueBlock* b = block(d.offset);
  const uint64_t n = __atomic_load_n(&b->length, __ATOMIC_RELAXED);
  if (n > traits_.max_value_size || !pool_->contains(b, kBlockHeader + n)) return false;
  *out = std::string_view(b->data, n);
  return true;
}

Status ValueStoreIndex::Store(std::string_view value, uint64_t* offset) {
  pm::Allocator& alloc = pool_->allocator();
  Result<uint64_t> got = alloc.allocate(kBlockHeader + value.size());
  if (!got.ok() && alloc.reclaim_now()) got = alloc.allocate(kBlockHeader + value.size());
  if (!got.ok()) return got.status();
  *offset = got.value();
  ValueBlock* b = block(*offset);
  b->length = value.size();
  std::memcpy(b->data, value.data(), value.size());
  // Crash argument: persisted before the reference is published (Apply); a crash before
  // that leaves an unreachable block the allocator rebuild frees.
  if (!pm::mutant(kMutantPublishFirst))
    pool_->persist_context().persist(b, kBlockHeader + value.size());
  return Status::OK();
}

uint64_t ValueStoreIndex::OldRef(std::string_view key) {
  std::string enc;
  if (!index_->lookup(key, &enc).ok()) return 0;
  return Decode(enc).offset;
}

Status ValueStoreIndex::Apply(std::string_view key, std::string_view enc, Op op) {
  switch (op) {
    case Op::kInsert:
      return index_->insert(key, enc);
    case Op::kUpdate:
      return index_->update(key, enc);
    case Op::kUpsert:
      return index_->upsert(key, enc);
  }
  return Status::InvalidArgument("unknown write");
}

Status ValueStoreIndex::Write(std::string_view key, std::string_view value, Op op) {
  uint64_t fresh = 0;
  std::string enc;
  if (value.size() <= inline_room_) {
    enc = EncodeInline(value);
  } else {
    if (Status s = Store(value, &fresh); !s.ok()) return s;
    enc = EncodeRef(fresh);
  }
  std::lock_guard<pm::RwLock> lock(stripe(key));
  const uint64_t old = op == Op::kInsert ? 0 : OldRef(key);
  // Crash argument: the index's own commit store publishes the reference to a block
  // persisted above; the old block is retired only once it is unreachable.
  Status s = Apply(key, enc, op);
  if (!s.ok()) {
    if (fresh != 0) pool_->allocator().free(fresh);  // never published
    return s;
  }
  if (fresh != 0 && pm::mutant(kMutantPublishFirst)) {
    pool_->persist_context().persist(block(fresh), kBlockHeader + value.size());
  }
  if (old != 0) pool_->allocator().retire(old);
  return s;
}

Status ValueStoreIndex::remove(std::string_view key) {
  std::lock_guard<pm::RwLock> lock(stripe(key));
  const uint64_t old = OldRef(key);
  Status s = index_->remove(key);
  // Crash argument: the block is unreachable once the remove is durable; until then it stays.
  if (s.ok() && old != 0) pool_->allocator().retire(old);
  return s;
}

Status ValueStoreIndex::lookup(std::string_view key, std::string* value) {
  auto guard = pool_->allocator().epoch_guard();
  std::string enc;
  Status s = index_->lookup(key, &enc);
  if (!s.ok()) return s;
  std::string_view v;
  if (!View(enc, &v)) return Status::Corruption(traits_.name + ": damaged value reference");
  if (value != nullptr) value->assign(v.data(), v.size());
  return s;
}

size_t ValueStoreIndex::scan(std::string_view start, size_t max_count, ScanCallback fn) {
  auto guard = pool_->allocator().epoch_guard();
  return index_->scan(start, max_count, [&](std::string_view k, std::string_view enc) {
    std::string_view v;
    return View(enc, &v) && fn(k, v);  // a damaged reference ends the scan (verify names it)
  });
}

Status ValueStoreIndex::scan_checked(std::string_view start, size_t max_count, ScanCallback fn,
                                     size_t* count) {
  auto guard = pool_->allocator().epoch_guard();
  return index_->scan_checked(
      start, max_count,
      [&](std::string_view k, std::string_view enc) {
        std::string_view v;
        return View(enc, &v) && fn(k, v);
      },
      count);
}

Status ValueStoreIndex::for_each(ScanCallback fn) {
  auto guard = pool_->allocator().epoch_guard();
  return index_->for_each([&](std::string_view k, std::string_view enc) {
    std::string_view v;
    return View(enc, &v) && fn(k, v);
  });
}

Status ValueStoreIndex::Walk(const std::function<Status(std::string_view, const Decoded&)>& fn) {
  Status result;
  Status s = index_->for_each([&](std::string_view k, std::string_view enc) {
    const Decoded d = Decode(enc);
    result = d.ok ? fn(k, d)
                  : Status::Corruption(traits_.name + ": a value is no value-store encoding");
    return result.ok();
  });
  return s.ok() ? result : s;
}

Status ValueStoreIndex::visit_blocks(BlockVisitor& visitor) {
  if (Status s = index_->visit_blocks(visitor); !s.ok()) return s;
  return Walk([&](std::string_view, const Decoded& d) {
    return d.offset == 0 ? Status::OK() : visitor.visit(d.offset);
  });
}

Status ValueStoreIndex::verify() {
  if (Status s = index_->verify(); !s.ok()) return s;
  auto guard = pool_->allocator().epoch_guard();
  return Walk([&](std::string_view, const Decoded& d) {
    if (d.offset == 0) {
      return d.inline_value.size() <= inline_room_
                 ? Status::OK()
                 : Status::Corruption(traits_.name + ": inline value longer than its room");
    }
    const ValueBlock* b = block(d.offset);
    const size_t room = pool_->allocator().block_size(d.offset);
    const uint64_t n = b->length;
    if (n <= inline_room_ || n > traits_.max_value_size || room < kBlockHeader + n) {
      return Status::Corruption(traits_.name + ": value block at " + std::to_string(d.offset) +
                                " holds length " + std::to_string(n) + " (block of " +
                                std::to_string(room) + " bytes)");
    }
    return Status::OK();
  });
}

}  // namespace

std::vector<MutantInfo> ValueStoreMutants() {
  return {MutantInfo(kMutantPublishFirst,
                     "an out-of-line value's block is persisted after the index publishes the "
                     "reference to it, not before",
                     {}, "ValueStoreCrashTest.PublishBeforePersistMutantIsCaught")};
}

uint64_t PoolMaxValueSize(const Pool& pool) {
  return reinterpret_cast<const pm::PoolHeader*>(pool.base())->max_value_size;
}

std::unique_ptr<Index> WrapValueStore(std::unique_ptr<Index> index) {
  Pool* pool = index->pool();
  if (pool == nullptr) return index;
  const uint64_t limit = PoolMaxValueSize(*pool);
  if (limit == 0 || index->traits().max_value_size < 8) return index;
  return std::make_unique<ValueStoreIndex>(std::move(index), limit);
}

}  // namespace pmindex
