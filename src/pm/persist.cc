#include "pm/persist.h"

#include <cpuid.h>

#include <chrono>
#include <mutex>
#include <vector>

namespace pmindex::pm {
namespace detail {
namespace {

// Slots of live threads; exited threads fold their counts into g_retired and give the slot
// back, so a long benchmark that starts many threads never runs out.
struct SlotRegistry {
  std::mutex mu;
  std::vector<ThreadSlot*> live;
  std::vector<ThreadSlot*> spare;
  PersistCounters retired;
};

SlotRegistry& registry() {
  static SlotRegistry* r = new SlotRegistry;  // never destroyed: threads may exit late
  return *r;
}

PersistCounters read_slot(const ThreadSlot& s) {
  PersistCounters c;
  c.persist_calls = s.persist_calls.load(std::memory_order_relaxed);
  c.flushes = s.flushes.load(std::memory_order_relaxed);
  c.fences = s.fences.load(std::memory_order_relaxed);
  c.media_writes = s.media.media_writes();
  c.media_rmw = s.media.media_rmw();
  return c;
}

// Returns the slot at thread exit.
struct SlotReleaser {
  ~SlotReleaser() {
    ThreadSlot* s = t_slot;
    if (s == nullptr) return;
    s->media.drain();
    SlotRegistry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.retired += read_slot(*s);
    s->persist_calls.store(0, std::memory_order_relaxed);
    s->flushes.store(0, std::memory_order_relaxed);
    s->fences.store(0, std::memory_order_relaxed);
    s->pending_latency_ns = 0;
    s->media.reset();
    std::erase(r.live, s);
    r.spare.push_back(s);
    t_slot = nullptr;
  }
};
thread_local SlotReleaser t_releaser;

FlushInstruction detect_flush_instruction() {
  unsigned eax, ebx, ecx, edx;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) {
    if (ebx & (1u << 24)) return FlushInstruction::kClwb;
    if (ebx & (1u << 23)) return FlushInstruction::kClflushopt;
  }
  return FlushInstruction::kClflush;
}

struct Init {
  Init() { g_flush_insn = detect_flush_instruction(); }
} g_init;

}  // namespace

ThreadSlot* acquire_slot() {
  (void)&t_releaser;  // touching it registers its destructor for this thread
  SlotRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  ThreadSlot* s;
  if (!r.spare.empty()) {
    s = r.spare.back();
    r.spare.pop_back();
  } else {
    s = new ThreadSlot;  // owned by the registry for the life of the process
  }
  r.live.push_back(s);
  t_slot = s;
  return s;
}

void flush_lines(uintptr_t first, size_t lines) {
  char* p = reinterpret_cast<char*>(first);
  switch (g_flush_insn) {
    case FlushInstruction::kClwb:
      for (size_t i = 0; i < lines; ++i, p += kCacheLine)
        asm volatile("clwb %0" : "+m"(*reinterpret_cast<volatile char*>(p)));
      break;
    case FlushInstruction::kClflushopt:
      for (size_t i = 0; i < lines; ++i, p += kCacheLine)
        asm volatile("clflushopt %0" : "+m"(*reinterpret_cast<volatile char*>(p)));
      break;
    case FlushInstruction::kClflush:
      for (size_t i = 0; i < lines; ++i, p += kCacheLine)
        asm volatile("clflush %0" : "+m"(*reinterpret_cast<volatile char*>(p)));
      break;
  }
}

void pay_latency(ThreadSlot* slot) {
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::nanoseconds(slot->pending_latency_ns);
  slot->pending_latency_ns = 0;
  while (std::chrono::steady_clock::now() < until) __builtin_ia32_pause();
}

}  // namespace detail

void set_mode(PersistMode mode) { detail::g_mode = mode; }
void set_write_latency_ns(uint32_t ns) { detail::g_write_latency_ns = ns; }
void set_model_media(bool on) { detail::g_model_media = on; }

PersistHook* set_hook(PersistHook* hook) {
  PersistHook* old = detail::g_hook;
  detail::g_hook = hook;
  return old;
}

FlushInstruction flush_instruction() { return detail::g_flush_insn; }

const char* flush_instruction_name() {
  switch (detail::g_flush_insn) {
    case FlushInstruction::kClwb:
      return "clwb";
    case FlushInstruction::kClflushopt:
      return "clflushopt";
    case FlushInstruction::kClflush:
      return "clflush";
  }
  return "?";
}

PersistCounters counters() {
  detail::SlotRegistry& r = detail::registry();
  std::lock_guard<std::mutex> lock(r.mu);
  PersistCounters sum = r.retired;
  for (const detail::ThreadSlot* s : r.live) sum += detail::read_slot(*s);
  return sum;
}

PersistCounters thread_counters() { return detail::read_slot(*detail::slot()); }

void drain_media() { detail::slot()->media.drain(); }

}  // namespace pmindex::pm
