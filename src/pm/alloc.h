// Allocator: blocks inside a pool, off the critical path of durability.
//
// The pool's space after the header and chunk table is cut into 256 KiB chunks. A chunk is
// carved for one size class (64 B .. 64 KiB) or, several contiguous chunks, for one large
// block. Carving persists the chunk's 8-byte table entry (one flush + fence); a large run
// persists its continuation entries first, then its head (two), and freeing one persists its
// cleared head before its continuations are cleared (one), so a crash never leaves a head
// without its continuations (an orphan continuation is uncarved by the next rebuild).
// Nothing else in allocate/free flushes or fences. Free blocks are tracked only in DRAM: per-size-class
// free lists behind a mutex, in front of them per-thread caches refilled in batches, and a
// bump pointer inside the newest chunk of each class.
//
// Crash argument: a block becomes durable only when the index links it from its root with
// an 8-byte failure-atomic store, after its content was persisted. A crash between allocate
// and that store leaks nothing, because every open rebuilds the free state from the index's
// visitor of reachable blocks (rebuild()); unreachable blocks are free, chunks without a
// reachable block are uncarved. The chunk entry was persisted before the block could be
// linked (carve fences), so a linked block always lies in a carved chunk; a reachable offset
// that does not, or one reached twice, is Corruption.
//
// Blocks retired while concurrent readers may still hold them are freed through the pool's
// Epoch (pm/epoch.h), which the allocator owns: a reader holds a guard while it may touch
// blocks; retire() frees a block once every guard that was open when it was retired has
// closed. Retired blocks are freed in batches (at once while no other thread ever
// opened a guard and the caller holds none: pm/epoch.h); an index that meets OutOfSpace calls
// reclaim_now() outside its guard and retries, so nothing freed stays parked while the pool
// is full. Indexes that retire DRAM metadata with a block use epoch() with their own
// Reclaimer.
//
// Space reuse: a freed block returns to its size class. When a class has no free block and
// no chunk can be carved, a free block of a larger class is handed out instead (it keeps its
// class: freeing it returns it there), so space freed in one class serves smaller requests.
// Each thread caches at most 2 x batch blocks per class that other threads do not see.
//
// Thread safety: all public functions are thread-safe, except rebuild(), which must run
// alone (during open).
#ifndef PMINDEX_PM_ALLOC_H_
#define PMINDEX_PM_ALLOC_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "pm/epoch.h"
#include "pm/thread_registry.h"
#include "pmindex/block_visitor.h"
#include "pmindex/function_ref.h"
#include "pmindex/status.h"

namespace pmindex::pm {

class PersistContext;

inline constexpr uint64_t kChunkSize = 256 * 1024;
inline constexpr size_t kMaxSmallBlock = 64 * 1024;

// The chunk table entry, one per chunk, 8 bytes, written with one failure-atomic store.
//
//   bits 63..56  state: 0 free, 1 small (a size class), 2 large head, 3 large continuation
//   bits 55..48  size class index (small), 0 otherwise
//   bits 47..0   large head: number of chunks of the block; otherwise 0
//
// Values of `state` are on-media format: never reuse or renumber one.
enum class ChunkState : uint8_t { kFree = 0, kSmall = 1, kLargeHead = 2, kLargeCont = 3 };
inline constexpr uint64_t MakeChunkEntry(ChunkState state, uint8_t size_class, uint64_t span) {
  return (uint64_t{static_cast<uint8_t>(state)} << 56) | (uint64_t{size_class} << 48) |
         (span & ((uint64_t{1} << 48) - 1));
}
inline constexpr ChunkState EntryState(uint64_t e) { return static_cast<ChunkState>(e >> 56); }
inline constexpr uint8_t EntryClass(uint64_t e) { return static_cast<uint8_t>(e >> 48); }
inline constexpr uint64_t EntrySpan(uint64_t e) { return e & ((uint64_t{1} << 48) - 1); }

// Block sizes of the small size classes, in bytes (all multiples of 64; those that are
// multiples of 256 give 256-byte-aligned blocks).
inline constexpr uint32_t kSizeClasses[] = {
    64,   128,  192,  256,  320,   384,   448,   512,   640,   768,   1024,  1280,  1536,
    2048, 2560, 3072, 4096, 5120,  6144,  8192,  10240, 12288, 16384, 20480, 24576, 32768,
    40960, 49152, 65536};
inline constexpr size_t kNumSizeClasses = sizeof(kSizeClasses) / sizeof(kSizeClasses[0]);
static_assert(kSizeClasses[kNumSizeClasses - 1] == kMaxSmallBlock);

// What free() fills a freed block with when the allocator poisons (Options::poison_freed).
inline constexpr unsigned char kPoisonByte = 0xA5;

class Allocator final : private Reclaimer {
 public:
  // `table` points at chunk_count entries in the mapped pool; chunk i starts at
  // data_offset + i * kChunkSize. The free state is empty until rebuild() runs.
  // Chunk table entries are persisted through `persist` (the pool's context). With
  // poison_freed, free() fills each freed block with kPoisonByte (Options::poison_freed).
  Allocator(char* base, uint64_t* table, uint64_t chunk_count, uint64_t data_offset,
            PersistContext& persist, bool poison_freed = false);
  ~Allocator();
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  // A block of at least `size` bytes (64-byte aligned; 256-byte aligned when its class is a
  // multiple of 256), as a pool offset. Content unspecified unless zero = true (zeroed, not
  // persisted). OutOfSpace when no chunk can be carved; the pool stays usable.
  Result<uint64_t> allocate(size_t size, bool zero = false);
  // n blocks of `size` into out[0..n), all or nothing (OutOfSpace frees what it took).
  Status allocate_bulk(size_t size, size_t n, uint64_t* out, bool zero = false);
  // Returns a block to the free state at once. Only when no other thread can reach it.
  void free(uint64_t offset);
  // The usable size of the block at `offset` (its class size, or its span for large blocks);
  // 0 if `offset` lies in no carved chunk.
  size_t block_size(uint64_t offset) const;

  // Epoch-based reclamation for blocks concurrent readers may hold (pm/epoch.h).
  Epoch& epoch() { return epoch_; }
  [[gnu::always_inline]] Epoch::Guard epoch_guard() { return Epoch::Guard(epoch_); }
  // Frees `offset` once no guard open now remains open.
  void retire(uint64_t offset) { epoch_.Retire(this, offset, nullptr, block_size(offset)); }
  // retire() for a block the caller may reuse soon (a B+tree's replaced leaf): made inside
  // the caller's own guard while no other thread ever opened one, it is freed when that guard
  // closes (Epoch::RetireAfterGuard), so the caller's next allocation gets it back.
  void retire_after_guard(uint64_t offset) {
    epoch_.Retire(this, offset, nullptr, block_size(offset), /*after_guard=*/true);
  }
  // Frees every retired item whose grace period has passed (Retire does it every batch).
  void reclaim() { epoch_.Collect(); }
  // After an OutOfSpace: frees what the open guards allow. Call it with no guard open in the
  // calling thread (else what was retired since it entered stays retired). True if anything
  // was reclaimed (a retry may succeed).
  bool reclaim_now() { return epoch_.Collect() > 0; }

  // Recovery: rebuilds the free state. `visit_all` must report every reachable block to the
  // visitor it is given. Blocks not reported become free; chunks with none are uncarved
  // (their table entries cleared and persisted). Corruption if a block is reached twice, lies
  // outside a carved chunk or not at a block boundary.
  Status rebuild(FunctionRef<Status(BlockVisitor&)> visit_all);

  uint64_t chunk_count() const { return chunk_count_; }
  uint64_t carved_chunks() const;
  // Bytes in blocks handed out and not freed (approximate while threads allocate).
  uint64_t allocated_bytes() const;

 private:
  struct ClassState;
  struct ThreadCache;
  class RebuildVisitor;

  void Reclaim(uint64_t offset, void*) override { free(offset); }
  // The first classes are every multiple of 64 up to 512: a division (the leaves and nodes
  // of the indexes) instead of a binary search of the table.
  static int size_class_for(size_t size) {
    static_assert(kSizeClasses[0] == 64 && kSizeClasses[7] == 512 && kSizeClasses[8] > 512);
    if (size <= 512) [[likely]]
      return static_cast<int>((size + 63) / 64) - 1;
    return size_class_above_512(size);
  }
  static int size_class_above_512(size_t size);
  Status refill(int cls, ThreadCache& cache);
  Result<uint64_t> allocate_large(size_t size, bool zero);
  bool carve(ChunkState state, uint8_t cls, uint64_t span, uint64_t* first_chunk);
  ThreadCache& cache();
  uint64_t chunk_of(uint64_t offset) const { return (offset - data_offset_) / kChunkSize; }
  uint64_t chunk_start(uint64_t chunk) const { return data_offset_ + chunk * kChunkSize; }

  char* base_;
  PersistContext& persist_;
  uint64_t* table_;
  uint64_t chunk_count_;
  uint64_t data_offset_;
  bool poison_freed_;
  std::mutex chunk_mu_;                  // carving and uncarving
  std::vector<uint8_t> chunk_used_;      // DRAM copy: chunk carved?
  std::unique_ptr<ClassState[]> classes_;
  PerThread<ThreadCache> caches_;  // per thread (thread_registry.h): no lock, no thread limit
  // Bytes allocated at the last rebuild; each thread cache counts its own change since
  // (allocated_bytes() sums them), so allocate and free run no locked instruction: one
  // would wait for the write-backs of the caller's previous persists (doc/performance.md,
  // "FPTree in adr").
  std::atomic<uint64_t> allocated_bytes_{0};

  Epoch epoch_;  // after every member free() uses: destroyed first
};

}  // namespace pmindex::pm

#endif  // PMINDEX_PM_ALLOC_H_
