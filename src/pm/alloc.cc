#include "pm/alloc.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <string>

#include "pm/persist.h"

namespace pmindex::pm {
namespace {

size_t batch_for(uint32_t block) { return std::clamp<size_t>(16384 / block, 2, 32); }

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

// Each class on lines of its own: threads refilling or spilling neighbouring classes would
// otherwise write each other's lock line.
struct alignas(64) Allocator::ClassState {
  std::mutex mu;
  std::vector<uint64_t> free;  // offsets
  uint64_t bump_chunk = UINT64_MAX;
  uint32_t bump_next = 0;  // next unused block index in bump_chunk
};

// A thread's cached free blocks. Cached blocks belong to the allocator: when the thread exits,
// its cache passes with its id to the next thread (thread_registry.h). On lines of its own:
// its thread writes net_bytes and a free list's end on every allocate and free.
struct alignas(64) Allocator::ThreadCache {
  std::vector<uint64_t> blocks[kNumSizeClasses];
  // Bytes this thread allocated minus bytes it freed since the last rebuild (may be
  // negative: a block may be freed by another thread than its allocator). Written only by
  // its thread, with a load and a store (no locked instruction); read by allocated_bytes().
  std::atomic<int64_t> net_bytes{0};
  void Count(int64_t bytes) {
    net_bytes.store(net_bytes.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
  }
};

uint64_t Allocator::allocated_bytes() const {
  int64_t sum = static_cast<int64_t>(allocated_bytes_.load(std::memory_order_relaxed));
  caches_.for_each([&](const ThreadCache& c) { sum += c.net_bytes.load(std::memory_order_relaxed); });
  return sum < 0 ? 0 : static_cast<uint64_t>(sum);
}

Allocator::Allocator(char* base, uint64_t* table, uint64_t chunk_count, uint64_t data_offset,
                     PersistContext& persist, bool poison_freed)
    : base_(base),
      persist_(persist),
      table_(table),
      chunk_count_(chunk_count),
      data_offset_(data_offset),
      poison_freed_(poison_freed),
      chunk_used_(chunk_count),
      classes_(new ClassState[kNumSizeClasses]) {
  for (uint64_t i = 0; i < chunk_count_; ++i) {
    chunk_used_[i] = EntryState(table_[i]) != ChunkState::kFree;
  }
}

Allocator::~Allocator() = default;

int Allocator::size_class_above_512(size_t size) {
  const uint32_t* end = kSizeClasses + kNumSizeClasses;
  const uint32_t* it = std::lower_bound(kSizeClasses, end, size);
  return it == end ? -1 : static_cast<int>(it - kSizeClasses);
}

// Carves `span` free contiguous chunks; the table entries are persisted before returning, so
// no block of them can be linked from the index before they are durable.
bool Allocator::carve(ChunkState state, uint8_t cls, uint64_t span, uint64_t* first_chunk) {
  std::lock_guard<std::mutex> lock(chunk_mu_);
  uint64_t run = 0;
  for (uint64_t i = 0; i < chunk_count_; ++i) {
    run = chunk_used_[i] ? 0 : run + 1;
    if (run < span) continue;
    const uint64_t first = i + 1 - span;
    for (uint64_t c = first; c <= i; ++c) chunk_used_[c] = 1;
    // Continuations first, durable before the head is stored: a head is never durable
    // without its continuations (they may sit on other lines). Continuations without a head
    // are orphans, which the rebuild at the next open uncarves.
    if (span > 1) {
      for (uint64_t c = first + 1; c <= i; ++c) {
        __atomic_store_n(&table_[c], MakeChunkEntry(ChunkState::kLargeCont, 0, 0),
                         __ATOMIC_RELEASE);
      }
      persist_.persist(&table_[first + 1], (span - 1) * sizeof(uint64_t));
    }
    __atomic_store_n(&table_[first],
                     MakeChunkEntry(state, cls, state == ChunkState::kLargeHead ? span : 0),
                     __ATOMIC_RELEASE);
    persist_.persist(&table_[first], sizeof(uint64_t));
    *first_chunk = first;
    return true;
  }
  return false;
}

Status Allocator::refill(int cls, ThreadCache& cache) {
  ClassState& cs = classes_[cls];
  const uint32_t block = kSizeClasses[cls];
  const uint32_t per_chunk = static_cast<uint32_t>(kChunkSize / block);
  const size_t want = batch_for(block);
  std::vector<uint64_t>& out = cache.blocks[cls];
  std::lock_guard<std::mutex> lock(cs.mu);
  while (out.size() < want && !cs.free.empty()) {
    out.push_back(cs.free.back());
    cs.free.pop_back();
  }
  while (out.size() < want) {
    if (cs.bump_chunk == UINT64_MAX || cs.bump_next >= per_chunk) {
      uint64_t chunk;
      if (!carve(ChunkState::kSmall, static_cast<uint8_t>(cls), 1, &chunk)) break;
      cs.bump_chunk = chunk;
      cs.bump_next = 0;
    }
    out.push_back(chunk_start(cs.bump_chunk) + uint64_t{cs.bump_next++} * block);
  }
  // No chunk left: a free block of a larger class serves (it stays in its own class).
  for (size_t larger = cls + 1; out.empty() && larger < kNumSizeClasses; ++larger) {
    if (!cache.blocks[larger].empty()) {  // this thread's own, freed lately
      out.push_back(cache.blocks[larger].back());
      cache.blocks[larger].pop_back();
      break;
    }
    ClassState& ls = classes_[larger];
    std::lock_guard<std::mutex> larger_lock(ls.mu);
    if (!ls.free.empty()) {
      out.push_back(ls.free.back());
      ls.free.pop_back();
    }
  }
  if (out.empty()) {
    return Status::OutOfSpace("pool full: no free 256 KiB chunk left for a " +
                              std::to_string(block) + "-byte block (" +
                              std::to_string(carved_chunks()) + " of " +
                              std::to_string(chunk_count_) + " chunks carved)");
  }
  return Status::OK();
}

Result<uint64_t> Allocator::allocate(size_t size, bool zero) {
  if (size == 0) size = 1;
  if (size > kMaxSmallBlock) return allocate_large(size, zero);
  const int cls = size_class_for(size);
  ThreadCache& cache = caches_.local();
  std::vector<uint64_t>& blocks = cache.blocks[cls];
  if (blocks.empty()) {
    if (Status s = refill(cls, cache); !s.ok()) return s;
  }
  const uint64_t off = blocks.back();
  blocks.pop_back();
  if (zero) std::memset(base_ + off, 0, kSizeClasses[cls]);
  // The block's own class (a larger one when refill fell back to it), as free() counts it.
  const uint64_t e = __atomic_load_n(&table_[chunk_of(off)], __ATOMIC_RELAXED);
  cache.Count(kSizeClasses[EntryClass(e)]);
  return off;
}

Result<uint64_t> Allocator::allocate_large(size_t size, bool zero) {
  const uint64_t span = (size + kChunkSize - 1) / kChunkSize;
  uint64_t first;
  if (!carve(ChunkState::kLargeHead, 0, span, &first)) {
    return Status::OutOfSpace("pool full: no run of " + std::to_string(span) +
                              " free 256 KiB chunks for a " + std::to_string(size) +
                              "-byte block");
  }
  caches_.local().Count(static_cast<int64_t>(span * kChunkSize));
  if (zero) std::memset(base_ + chunk_start(first), 0, span * kChunkSize);
  return chunk_start(first);
}

Status Allocator::allocate_bulk(size_t size, size_t n, uint64_t* out, bool zero) {
  for (size_t i = 0; i < n; ++i) {
    Result<uint64_t> r = allocate(size, zero);
    if (!r.ok()) {
      for (size_t j = 0; j < i; ++j) free(out[j]);
      return r.status();
    }
    out[i] = r.value();
  }
  return Status::OK();
}

size_t Allocator::block_size(uint64_t offset) const {
  // Offsets may come from a damaged pool (verify()): outside the chunks there is no block.
  if (offset < data_offset_ || offset - data_offset_ >= chunk_count_ * kChunkSize) return 0;
  const uint64_t e = __atomic_load_n(&table_[chunk_of(offset)], __ATOMIC_ACQUIRE);
  if (EntryState(e) == ChunkState::kSmall) {
    return EntryClass(e) < kNumSizeClasses ? kSizeClasses[EntryClass(e)] : 0;
  }
  return EntryState(e) == ChunkState::kLargeHead ? EntrySpan(e) * kChunkSize : 0;
}

void Allocator::free(uint64_t offset) {
  assert(offset >= data_offset_ && chunk_of(offset) < chunk_count_ &&
         "freed offset lies outside the pool's chunks");
  const uint64_t chunk = chunk_of(offset);
  const uint64_t e = __atomic_load_n(&table_[chunk], __ATOMIC_ACQUIRE);
  assert(EntryState(e) != ChunkState::kFree && EntryState(e) != ChunkState::kLargeCont &&
         "freed offset is not a block handed out by allocate");
  if (poison_freed_) [[unlikely]] {
    std::memset(base_ + offset, kPoisonByte, block_size(offset));
  }
  if (EntryState(e) == ChunkState::kLargeHead) {
    // The head is cleared and durable before its continuations are cleared: a crash may
    // leave continuations without a head (orphans, uncarved by the next rebuild), never a
    // head without its continuations. If the cleared head is lost too, the chunks are carved
    // but unreachable, and the rebuild uncarves them.
    const uint64_t span = EntrySpan(e);
    std::lock_guard<std::mutex> lock(chunk_mu_);
    __atomic_store_n(&table_[chunk], 0, __ATOMIC_RELEASE);
    if (span > 1) persist_.persist(&table_[chunk], sizeof(uint64_t));
    for (uint64_t c = chunk + 1; c < chunk + span; ++c)
      __atomic_store_n(&table_[c], 0, __ATOMIC_RELEASE);
    for (uint64_t c = chunk; c < chunk + span; ++c) chunk_used_[c] = 0;
    caches_.local().Count(-static_cast<int64_t>(span * kChunkSize));
    return;
  }
  const int cls = EntryClass(e);
  ThreadCache& cache = caches_.local();
  cache.Count(-static_cast<int64_t>(kSizeClasses[cls]));
  ClassState& cs = classes_[cls];
  std::vector<uint64_t>& blocks = cache.blocks[cls];
  blocks.push_back(offset);
  const size_t batch = batch_for(kSizeClasses[cls]);
  if (blocks.size() > 2 * batch) {
    std::lock_guard<std::mutex> lock(cs.mu);
    cs.free.insert(cs.free.end(), blocks.end() - batch, blocks.end());
    blocks.resize(blocks.size() - batch);
  }
}

uint64_t Allocator::carved_chunks() const {
  uint64_t n = 0;
  for (uint64_t i = 0; i < chunk_count_; ++i) {
    n += EntryState(__atomic_load_n(&table_[i], __ATOMIC_RELAXED)) != ChunkState::kFree;
  }
  return n;
}

// ---- recovery ----

class Allocator::RebuildVisitor : public BlockVisitor {
 public:
  explicit RebuildVisitor(Allocator* a) : a_(a), marks_(a->chunk_count_) {}

  Status visit(uint64_t offset) override {
    if (offset < a_->data_offset_ || offset >= a_->data_offset_ + a_->chunk_count_ * kChunkSize) {
      return Status::Corruption("block " + hex(offset) + " lies outside the pool's chunks");
    }
    const uint64_t chunk = a_->chunk_of(offset);
    const uint64_t e = a_->table_[chunk];
    const uint64_t within = offset - a_->chunk_start(chunk);
    switch (EntryState(e)) {
      case ChunkState::kSmall: {
        const uint32_t block = kSizeClasses[EntryClass(e)];
        if (within % block != 0) {
          return Status::Corruption("block " + hex(offset) + " is not at a block boundary of its " +
                                    std::to_string(block) + "-byte chunk");
        }
        std::vector<bool>& m = marks_[chunk];
        if (m.empty()) m.resize(kChunkSize / block);
        if (m[within / block]) {
          return Status::Corruption("block " + hex(offset) + " is reachable twice");
        }
        m[within / block] = true;
        return Status::OK();
      }
      case ChunkState::kLargeHead: {
        if (within != 0) {
          return Status::Corruption("block " + hex(offset) + " points inside a large block");
        }
        std::vector<bool>& m = marks_[chunk];
        if (!m.empty()) return Status::Corruption("block " + hex(offset) + " is reachable twice");
        m.push_back(true);
        return Status::OK();
      }
      case ChunkState::kFree:
      case ChunkState::kLargeCont:
        break;
    }
    return Status::Corruption("block " + hex(offset) + " lies in a chunk that is not allocated");
  }

  std::vector<std::vector<bool>>& marks() { return marks_; }

 private:
  Allocator* a_;
  std::vector<std::vector<bool>> marks_;  // per chunk: reachable blocks (empty = none)
};

Status Allocator::rebuild(FunctionRef<Status(BlockVisitor&)> visit_all) {
  // Validate the chunk table first: an unknown state or a broken large run is Corruption.
  for (uint64_t i = 0; i < chunk_count_; ++i) {
    const uint64_t e = table_[i];
    const ChunkState st = EntryState(e);
    const bool ok = (st == ChunkState::kFree && e == 0) ||
                    (st == ChunkState::kSmall && EntryClass(e) < kNumSizeClasses) ||
                    st == ChunkState::kLargeHead || st == ChunkState::kLargeCont;
    if (!ok) return Status::Corruption("chunk table entry " + std::to_string(i) + " is invalid");
    if (st == ChunkState::kLargeHead) {
      const uint64_t span = EntrySpan(e);
      if (span == 0 || i + span > chunk_count_) {
        return Status::Corruption("chunk table entry " + std::to_string(i) +
                                  ": large block runs past the pool");
      }
      for (uint64_t c = i + 1; c < i + span; ++c) {
        if (EntryState(table_[c]) != ChunkState::kLargeCont) {
          return Status::Corruption("chunk table entry " + std::to_string(c) +
                                    ": large block continuation missing");
        }
      }
    }
  }

  RebuildVisitor visitor(this);
  if (Status s = visit_all(visitor); !s.ok()) return s;

  for (size_t c = 0; c < kNumSizeClasses; ++c) {
    classes_[c].free.clear();
    classes_[c].bump_chunk = UINT64_MAX;
    classes_[c].bump_next = 0;
  }
  caches_.for_each([](ThreadCache& c) {
    for (auto& v : c.blocks) v.clear();
    c.net_bytes.store(0, std::memory_order_relaxed);
  });
  epoch_.Discard(this);  // rebuilt free state: blocks retired before are free already
  uint64_t allocated = 0;
  bool uncarved = false;
  std::vector<std::pair<uint64_t, uint64_t>> orphans;  // continuations of uncarved heads
  auto& marks = visitor.marks();
  std::fill(chunk_used_.begin(), chunk_used_.end(), 0);
  for (uint64_t i = 0; i < chunk_count_; ++i) {
    const uint64_t e = table_[i];
    const ChunkState st = EntryState(e);
    if (st == ChunkState::kFree) continue;
    // A continuation not skipped over by its head below is an orphan (its head's carve did
    // not become durable): free it.
    const uint64_t span = st == ChunkState::kLargeHead ? EntrySpan(e) : 1;
    if (st == ChunkState::kLargeCont || marks[i].empty()) {
      // Nothing reachable: uncarve. A crash before these stores are durable leaves carved,
      // unreachable chunks that the next rebuild uncarves again. A large run's head is
      // cleared here and its continuations after the fence below (see free()).
      __atomic_store_n(&table_[i], 0, __ATOMIC_RELEASE);
      persist_.flush(&table_[i], sizeof(uint64_t));
      for (uint64_t c = i; c < i + span; ++c) chunk_used_[c] = 0;
      if (span > 1) orphans.emplace_back(i + 1, span - 1);
      uncarved = true;
      i += span - 1;
      continue;
    }
    chunk_used_[i] = 1;
    if (st == ChunkState::kLargeHead) {
      for (uint64_t c = i + 1; c < i + span; ++c) chunk_used_[c] = 1;
      allocated += span * kChunkSize;
      i += span - 1;
      continue;
    }
    const uint32_t block = kSizeClasses[EntryClass(e)];
    ClassState& cs = classes_[EntryClass(e)];
    for (size_t b = 0; b < marks[i].size(); ++b) {
      if (marks[i][b]) {
        allocated += block;
      } else {
        cs.free.push_back(chunk_start(i) + b * block);
      }
    }
  }
  if (uncarved) persist_.fence();
  for (const auto& [first, n] : orphans) {  // their heads are cleared and durable
    for (uint64_t c = first; c < first + n; ++c) __atomic_store_n(&table_[c], 0, __ATOMIC_RELEASE);
    persist_.flush(&table_[first], n * sizeof(uint64_t));
  }
  if (!orphans.empty()) persist_.fence();
  // Hand out low offsets first (free lists pop from the back).
  for (size_t c = 0; c < kNumSizeClasses; ++c) {
    std::sort(classes_[c].free.begin(), classes_[c].free.end(), std::greater<>());
  }
  allocated_bytes_.store(allocated, std::memory_order_relaxed);
  return Status::OK();
}

}  // namespace pmindex::pm
