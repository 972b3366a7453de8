// The persistence seam: the only place in pmindex that issues cache-line flushes and fences.
//
//   pm::flush(p, n)        schedule write-back of the cache lines covering [p, p+n)
//   pm::fence()            order and complete earlier flushes
//   pm::persist(p, n)      flush + fence
//   pm::copy_persist(d,s,n) memcpy + flush + fence
//
// A process-wide persistence mode (PersistMode, options.h) decides which instructions run:
//   adr       clwb per line (clflushopt / clflush where clwb is missing) + sfence
//   eadr      nothing + compiler barrier
//   async     clwb per line, no fence
//   adaptive  clwb per line only when n > 256 bytes, no fence  (PFtree Algorithm 1)
//   volatile  nothing
//
// Counters, per thread and independent of the mode: persist_calls, flushes (cache lines),
// fences. The flushed-line stream also feeds a per-thread XPLine media model (xpline.h).
// `counters()` sums all threads (live and exited); subtract two snapshots to measure a phase.
//
// A PersistHook (the crash tracker, a tracer) may be installed; when none is, the cost is one
// predictable branch per call.
//
// Thread safety: every function may be called from any thread. set_mode/set_hook/
// set_write_latency_ns are meant for quiescent moments (between runs).
#ifndef PMINDEX_PM_PERSIST_H_
#define PMINDEX_PM_PERSIST_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "pm/xpline.h"
#include "pmindex/options.h"
#include "pmindex/stats.h"

namespace pmindex::pm {

inline constexpr size_t kCacheLine = 64;
inline constexpr size_t kAdaptiveThreshold = 256;  // bytes; adaptive flushes only above this

// Receives the flush/fence stream. Lines are given as the address of the first line and a
// count. Called in every mode (the hook sees what the code asked for).
class PersistHook {
 public:
  virtual ~PersistHook() = default;
  virtual void on_flush(uintptr_t first_line, size_t lines) = 0;
  virtual void on_fence() = 0;
};

// Which flush instruction this CPU has.
enum class FlushInstruction : uint8_t { kClwb, kClflushopt, kClflush };

namespace detail {

// One thread's counters. Written only by the owning thread (relaxed atomics so that
// summing threads is race-free), read by counters().
struct alignas(64) ThreadSlot {
  std::atomic<uint64_t> persist_calls{0};
  std::atomic<uint64_t> flushes{0};
  std::atomic<uint64_t> fences{0};
  uint64_t pending_latency_ns = 0;
  XPLineModel media;
};

inline constinit PersistMode g_mode = PersistMode::kAdr;
inline constinit PersistHook* g_hook = nullptr;
inline constinit bool g_model_media = true;
inline constinit uint32_t g_write_latency_ns = 0;
inline constinit FlushInstruction g_flush_insn = FlushInstruction::kClflush;
inline constinit thread_local ThreadSlot* t_slot = nullptr;

ThreadSlot* acquire_slot();  // first use by a thread
// The bare instructions, uncounted: the seam below and persist_bench's baseline use them.
void flush_lines(uintptr_t first, size_t lines);
inline void sfence() { asm volatile("sfence" ::: "memory"); }
void pay_latency(ThreadSlot* slot);

inline ThreadSlot* slot() {
  ThreadSlot* s = t_slot;
  if (s == nullptr) [[unlikely]]
    s = acquire_slot();
  return s;
}
inline void bump(std::atomic<uint64_t>& c, uint64_t n) {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

}  // namespace detail

inline void flush(const void* p, size_t n) {
  if (n == 0) return;
  const uintptr_t first = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{kCacheLine - 1};
  const uintptr_t last = (reinterpret_cast<uintptr_t>(p) + n - 1) & ~uintptr_t{kCacheLine - 1};
  const size_t lines = (last - first) / kCacheLine + 1;
  detail::ThreadSlot* s = detail::slot();
  detail::bump(s->flushes, lines);
  if (detail::g_hook != nullptr) [[unlikely]]
    detail::g_hook->on_flush(first, lines);
  if (detail::g_model_media) s->media.add_lines(first, lines);
  switch (detail::g_mode) {
    case PersistMode::kAdr:
    case PersistMode::kAsync:
      detail::flush_lines(first, lines);
      break;
    case PersistMode::kAdaptive:
      if (n > kAdaptiveThreshold) detail::flush_lines(first, lines);
      break;
    case PersistMode::kEadr:
    case PersistMode::kVolatile:
      return;
  }
  if (detail::g_write_latency_ns != 0) [[unlikely]] {
    s->pending_latency_ns += lines * detail::g_write_latency_ns;
    if (detail::g_mode != PersistMode::kAdr) detail::pay_latency(s);  // no fence will come
  }
}

inline void fence() {
  detail::ThreadSlot* s = detail::slot();
  detail::bump(s->fences, 1);
  if (detail::g_hook != nullptr) [[unlikely]]
    detail::g_hook->on_fence();
  if (detail::g_mode == PersistMode::kAdr) {
    if (s->pending_latency_ns != 0) [[unlikely]]
      detail::pay_latency(s);
    detail::sfence();
  } else {
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
}

inline void persist(const void* p, size_t n) {
  detail::bump(detail::slot()->persist_calls, 1);
  flush(p, n);
  fence();
}

inline void copy_persist(void* dst, const void* src, size_t n) {
  std::memcpy(dst, src, n);
  persist(dst, n);
}

// Process-wide settings.
void set_mode(PersistMode mode);
inline PersistMode mode() { return detail::g_mode; }
void set_write_latency_ns(uint32_t ns);
inline uint32_t write_latency_ns() { return detail::g_write_latency_ns; }
void set_model_media(bool on);
// Installs a hook (nullptr removes it); returns the previous one.
PersistHook* set_hook(PersistHook* hook);
FlushInstruction flush_instruction();
const char* flush_instruction_name();

// Sum of all threads' counters (live and exited), media writes as evicted so far.
PersistCounters counters();
// Evicts every XPLine the calling thread's media model holds, counting their media writes.
// Call at the end of a measured phase, in every thread that wrote.
void drain_media();
// The calling thread's counters only.
PersistCounters thread_counters();

}  // namespace pmindex::pm

#endif  // PMINDEX_PM_PERSIST_H_
