// The persistence seam: the only place in pmindex that issues cache-line flushes, fences and
// msync for index data.
//
// Every pool owns one PersistContext, made from its Options when it opens (as libpmem2 gives
// every mapping its own persist, flush and drain functions). Index code persists through
// its pool's context:
//
//   ctx.flush(p, n)          schedule write-back of the cache lines covering [p, p+n)
//   ctx.fence()              order and complete earlier flushes
//   ctx.persist(p, n)        flush + fence
//   ctx.copy_persist(d,s,n)  memcpy + persist
//
// The context's persistence mode (PersistMode, options.h) and the mapping decide which
// instructions run:
//   adr       clwb per line (clflushopt / clflush where clwb is missing) + sfence; on a
//             page-granularity mapping of a file system (not tmpfs), the fence msyncs
//             (MS_SYNC) the pages its thread flushed instead, since clwb does not reach a disk
//   eadr      nothing + compiler barrier
//   async     clwb per line, no fence
//   adaptive  clwb per line only when n > 256 bytes, no fence  (PFtree Algorithm 1)
//   volatile  nothing
// Only CPU feature detection (which flush instruction exists) is process-wide, so two pools
// in one process never change each other's durability.
//
// Counters, per context and per thread, independent of the mode: persist_calls, flushes
// (cache lines), fences. The flushed-line stream also feeds the XPLine media model (xpline.h)
// when model_media is on: one per thread, or one for the context under a lock
// (MediaModel::kShared). counters() sums the context's threads and the shared model. With
// track_unflushed (unflushed.h) the model receives only the lines the mode writes back, and
// the lines a workload writes without a flush reach it when a model of the CPU cache evicts
// them (at fences, and every one at drain_media).
//
// A PersistHook (the crash tracker, a tracer; options.h) sees only its own context's calls;
// when none is installed the cost is one predictable branch per call.
//
// Thread safety: flush/fence/persist/counters may be called from any thread. set_hook and
// set_model_media are for quiescent moments (no thread inside the context).
#ifndef PMINDEX_PM_PERSIST_H_
#define PMINDEX_PM_PERSIST_H_

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "pm/thread_registry.h"
#include "pm/unflushed.h"
#include "pm/xpline.h"
#include "pmindex/options.h"
#include "pmindex/stats.h"

namespace pmindex::pm {

inline constexpr size_t kCacheLine = 64;
inline constexpr size_t kAdaptiveThreshold = 256;  // bytes; adaptive flushes only above this

using pmindex::PersistHook;

// Which flush instruction this CPU has.
enum class FlushInstruction : uint8_t { kClwb, kClflushopt, kClflush };
FlushInstruction flush_instruction();
const char* flush_instruction_name();

// How a context's mapping is made durable.
struct PersistSettings {
  PersistMode mode = PersistMode::kAdr;
  bool model_media = false;       // feed the XPLine model
  MediaModel media_model = MediaModel::kPerThread;  // one model per thread, or one shared
  // Find lines written without a flush (needs model_media and map(); not with a hook).
  bool track_unflushed = false;
  uint32_t write_latency_ns = 0;  // injected per flushed line, paid at the next fence
  PersistHook* hook = nullptr;
  // adr on a page-granularity mapping of a file system: flush by msync(MS_SYNC).
  bool msync = false;
};

namespace detail {

// One thread's counters in one context. Written only by the owning thread (relaxed atomics
// so that summing threads is race-free), read by counters().
//
// A persist bumps two counters (persist_calls, flushes), a bare fence one (bare_fences):
// fences = persist_calls + bare_fences. What the mode executed is derived from the counters
// and the context's fixed flush kind (PersistContext::executed), except where the slow path
// decides per call (adaptive, msync: lines_written_back). Every store here is one more entry
// in the CPU's store queue behind the last sfence (see PersistContext).
struct alignas(64) ThreadSlot {
  std::atomic<uint64_t> persist_calls{0};
  std::atomic<uint64_t> flushes{0};
  std::atomic<uint64_t> bare_fences{0};  // fence() calls; persist's fences are persist_calls
  // Lines written back by the adaptive and msync flush kinds (the others are derived).
  std::atomic<uint64_t> lines_written_back{0};
  uint64_t pending_latency_ns = 0;
  // msync mode: the byte range flushed since the last fence, written back at the fence.
  uintptr_t msync_lo = UINTPTR_MAX;
  uintptr_t msync_hi = 0;
  XPLineModel media;
};

[[gnu::always_inline]] inline void bump(std::atomic<uint64_t>& c, uint64_t n) {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

// Which flush instruction this CPU has (detected once, at load time).
extern const FlushInstruction g_flush_insn;

// The bare instructions, uncounted: the contexts and persist_bench's baseline use them.
// Inline: a call would add its return address (and spills) to the stores queued behind the
// last sfence.
[[gnu::always_inline]] inline void flush_lines(uintptr_t first, size_t lines) {
  char* p = reinterpret_cast<char*>(first);
  if (g_flush_insn == FlushInstruction::kClwb) [[likely]] {
    for (size_t i = 0; i < lines; ++i, p += kCacheLine)
      asm volatile("clwb %0" : "+m"(*reinterpret_cast<volatile char*>(p)));
  } else if (g_flush_insn == FlushInstruction::kClflushopt) {
    for (size_t i = 0; i < lines; ++i, p += kCacheLine)
      asm volatile("clflushopt %0" : "+m"(*reinterpret_cast<volatile char*>(p)));
  } else {
    for (size_t i = 0; i < lines; ++i, p += kCacheLine)
      asm volatile("clflush %0" : "+m"(*reinterpret_cast<volatile char*>(p)));
  }
}
inline void sfence() { asm volatile("sfence" ::: "memory"); }
void msync_range(ThreadSlot* slot);
void pay_latency(ThreadSlot* slot);

// The media model shared by a context's threads (MediaModel::kShared).
struct SharedMedia {
  std::mutex mu;
  XPLineModel model;
};

}  // namespace detail

class PersistContext {
 public:
  explicit PersistContext(const PersistSettings& settings = {});
  PersistContext(const PersistContext&) = delete;
  PersistContext& operator=(const PersistContext&) = delete;

  void flush(const void* p, size_t n) {
    if (n == 0) return;
    flush_in(&slots_.local(), p, n);
  }

  void fence() {
    detail::ThreadSlot* s = &slots_.local();
    detail::bump(s->bare_fences, 1);
    fence_in(s);
  }

  // One thread-slot lookup for the flush and the fence together; two counter stores.
  [[gnu::always_inline]] void persist(const void* p, size_t n) {
    detail::ThreadSlot* s = &slots_.local();
    detail::bump(s->persist_calls, 1);  // also its fence: fences = persist_calls + bare_fences
    if (n != 0) flush_in(s, p, n);
    fence_in(s);
  }

  // The calling thread's counters looked up once for several flushes and fences in a row
  // (an insert's two-fence commit): the same counting and instructions as the context's
  // flush, fence and persist, one lookup instead of one per call. Lives within one
  // operation of one thread.
  class Local {
   public:
    void flush(const void* p, size_t n) {
      if (n != 0) pc_->flush_in(s_, p, n);
    }
    void fence() {
      detail::bump(s_->bare_fences, 1);
      pc_->fence_in(s_);
    }
    [[gnu::always_inline]] void persist(const void* p, size_t n) {
      detail::bump(s_->persist_calls, 1);
      if (n != 0) pc_->flush_in(s_, p, n);
      pc_->fence_in(s_);
    }

   private:
    friend class PersistContext;
    Local(PersistContext* pc, detail::ThreadSlot* s) : pc_(pc), s_(s) {}
    PersistContext* pc_;
    detail::ThreadSlot* s_;
  };
  Local local() { return Local(this, &slots_.local()); }

  void copy_persist(void* dst, const void* src, size_t n) {
    std::memcpy(dst, src, n);
    persist(dst, n);
  }

  PersistMode mode() const { return mode_; }
  bool uses_msync() const { return flush_kind_ == FlushKind::kMsync; }
  uint32_t write_latency_ns() const { return write_latency_ns_; }
  bool model_media() const { return model_media_; }
  MediaModel media_model() const {
    return shared_media_ ? MediaModel::kShared : MediaModel::kPerThread;
  }
  void set_model_media(bool on) {
    model_media_ = on;
    choose_path();
  }
  // The mapping this context persists, for track_unflushed (write-protects it); OK and
  // nothing done otherwise. Errors of UnflushedWriteTracker::start.
  Status map(void* base, size_t size);
  // Before the mapping goes away: stops tracking it (the counts so far stay readable).
  void unmap();
  // Lines found written (flushed or not) and of those the unflushed ones; 0 untracked.
  uint64_t lines_written() const { return unflushed_ ? unflushed_->lines_written() : 0; }
  uint64_t lines_unflushed() const { return unflushed_ ? unflushed_->lines_unflushed() : 0; }
  PersistHook* hook() const { return hook_; }
  // Installs a hook (nullptr removes it); returns the previous one. Quiescent moments only.
  PersistHook* set_hook(PersistHook* hook);

  // Sum of every thread's counters in this context, media writes as evicted so far.
  PersistCounters counters() const;
  // The calling thread's counters in this context.
  PersistCounters thread_counters();
  // What the mode executed, summed over threads: cache lines written back (by flush
  // instruction or msync) and sfences. Unlike counters(), these depend on the mode.
  struct Executed {
    uint64_t lines_written_back = 0;
    uint64_t sfences = 0;
  };
  Executed executed() const;
  // Evicts every XPLine the calling thread's media model holds (the shared model: every
  // XPLine it holds), counting their media writes. Call at the end of a measured phase, in
  // every thread that wrote.
  void drain_media();

 private:
  // Counting and the mode's write-back inline; hooks, the media model, injected latency,
  // msync and adaptive flushing (any of them makes the context kSlow) out of line.
  //
  // Why the fast path is inline and stores little: on a CPU where a store after an sfence
  // waits in the store queue until the flushes before the fence complete, an operation whose
  // persists are followed by fewer stores than the queue holds runs on while its write-backs
  // drain (the next operation's descent overlaps them); one with more stalls until they
  // finished (doc/performance.md, "FPTree in adr"). Calls (return addresses, spilled
  // registers) and counter bumps are such stores.
  [[gnu::always_inline]] void flush_in(detail::ThreadSlot* s, const void* p, size_t n) {
    const uintptr_t first = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{kCacheLine - 1};
    const uintptr_t last =
        (reinterpret_cast<uintptr_t>(p) + n - 1) & ~uintptr_t{kCacheLine - 1};
    const size_t lines = (last - first) / kCacheLine + 1;
    detail::bump(s->flushes, lines);
    if (path_ == FlushPath::kLines) [[likely]] {
      detail::flush_lines(first, lines);
    } else if (path_ == FlushPath::kSlow) {
      flush_slow(s, first, lines, n);
    }
  }
  void flush_slow(detail::ThreadSlot* s, uintptr_t first, size_t lines, size_t n);
  // Feeds lines to the calling thread's media model, or the shared one.
  void add_media_lines(detail::ThreadSlot* s, uintptr_t first, size_t lines);
  // At a fence with track_unflushed: the cache model's evictions into the media model.
  void collect_unflushed();
  class UnflushedHook;
  // Which flush_in path the settings select (recomputed when a hook or the model changes).
  void choose_path();

  // (The caller counted the fence.)
  [[gnu::always_inline]] void fence_in(detail::ThreadSlot* s) {
    if (hook_ != nullptr) [[unlikely]]
      hook_->on_fence();
    if (sfence_) {
      if (s->pending_latency_ns != 0) [[unlikely]]
        detail::pay_latency(s);
      if (s->msync_hi != 0) [[unlikely]]
        detail::msync_range(s);
      detail::sfence();
    } else {
      std::atomic_signal_fence(std::memory_order_seq_cst);
    }
  }

  enum class FlushKind : uint8_t { kLines, kLinesAbove256, kMsync, kNone };
  enum class FlushPath : uint8_t { kLines, kNone, kSlow };

  FlushKind flush_kind_;
  FlushPath path_ = FlushPath::kSlow;
  bool sfence_;
  bool model_media_;
  PersistMode mode_;
  uint32_t write_latency_ns_;
  PersistHook* hook_;
  std::unique_ptr<detail::SharedMedia> shared_media_;  // null: a model per thread
  std::unique_ptr<UnflushedWriteTracker> unflushed_;    // null: flushed lines only
  std::unique_ptr<PersistHook> own_hook_;               // unflushed_'s fence hook
  PerThread<detail::ThreadSlot> slots_;
};

}  // namespace pmindex::pm

#endif  // PMINDEX_PM_PERSIST_H_
