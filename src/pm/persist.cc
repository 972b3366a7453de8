#include "pm/persist.h"

#include <cpuid.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>

namespace pmindex::pm {
namespace detail {
namespace {

FlushInstruction detect_flush_instruction() {
  unsigned eax, ebx, ecx, edx;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) {
    if (ebx & (1u << 24)) return FlushInstruction::kClwb;
    if (ebx & (1u << 23)) return FlushInstruction::kClflushopt;
  }
  return FlushInstruction::kClflush;
}


PersistCounters read_slot(const ThreadSlot& s) {
  PersistCounters c;
  c.persist_calls = s.persist_calls.load(std::memory_order_relaxed);
  c.flushes = s.flushes.load(std::memory_order_relaxed);
  c.fences = c.persist_calls + s.bare_fences.load(std::memory_order_relaxed);
  c.media_writes = s.media.media_writes();
  c.media_rmw = s.media.media_rmw();
  c.wpq_inserts = s.media.wpq_inserts();
  return c;
}

uintptr_t page_size() {
  static const uintptr_t size = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

}  // namespace

// The one process-wide fact of the seam: what the CPU offers.
const FlushInstruction g_flush_insn = detect_flush_instruction();

// Writes the pages the thread flushed since its last fence back to the file and waits for
// the device: what makes a store durable on a page-granularity mapping (libpmem2's persist
// function does the same). Only dirty pages in the range are written. A failing msync cannot
// be reported through a fence; it aborts rather than let an operation be acknowledged whose
// data did not reach the file.
void msync_range(ThreadSlot* slot) {
  const uintptr_t mask = ~(page_size() - 1);
  const uintptr_t begin = slot->msync_lo & mask;
  const uintptr_t end = (slot->msync_hi + page_size() - 1) & mask;
  slot->msync_lo = UINTPTR_MAX;
  slot->msync_hi = 0;
  if (::msync(reinterpret_cast<void*>(begin), end - begin, MS_SYNC) != 0) __builtin_trap();
}

void pay_latency(ThreadSlot* slot) {
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::nanoseconds(slot->pending_latency_ns);
  slot->pending_latency_ns = 0;
  while (std::chrono::steady_clock::now() < until) __builtin_ia32_pause();
}

}  // namespace detail

// The fence hook of track_unflushed: each fence collects the lines written since the last.
class PersistContext::UnflushedHook : public PersistHook {
 public:
  explicit UnflushedHook(PersistContext* pc) : pc_(pc) {}
  void on_flush(uintptr_t, size_t) override {}  // flush_slow notes written-back lines itself
  void on_fence() override { pc_->collect_unflushed(); }

 private:
  PersistContext* pc_;
};

PersistContext::PersistContext(const PersistSettings& settings)
    : model_media_(settings.model_media),
      mode_(settings.mode),
      write_latency_ns_(settings.write_latency_ns),
      hook_(settings.hook) {
  if (settings.media_model == MediaModel::kShared)
    shared_media_ = std::make_unique<detail::SharedMedia>();
  if (settings.track_unflushed && settings.model_media && hook_ == nullptr) {
    unflushed_ = std::make_unique<UnflushedWriteTracker>();
    own_hook_ = std::make_unique<UnflushedHook>(this);
    hook_ = own_hook_.get();
  }
  switch (settings.mode) {
    case PersistMode::kAdr:
      flush_kind_ = settings.msync ? FlushKind::kMsync : FlushKind::kLines;
      break;
    case PersistMode::kAsync:
      flush_kind_ = FlushKind::kLines;
      break;
    case PersistMode::kAdaptive:
      flush_kind_ = FlushKind::kLinesAbove256;
      break;
    case PersistMode::kEadr:
    case PersistMode::kVolatile:
    default:
      flush_kind_ = FlushKind::kNone;
      break;
  }
  sfence_ = settings.mode == PersistMode::kAdr;
  choose_path();
}

void PersistContext::choose_path() {
  if (hook_ != nullptr || model_media_ || write_latency_ns_ != 0) {
    path_ = FlushPath::kSlow;
  } else if (flush_kind_ == FlushKind::kLines) {
    path_ = FlushPath::kLines;
  } else if (flush_kind_ == FlushKind::kNone) {
    path_ = FlushPath::kNone;
  } else {
    path_ = FlushPath::kSlow;
  }
}

void PersistContext::flush_slow(detail::ThreadSlot* s, uintptr_t first, size_t lines, size_t n) {
  if (hook_ != nullptr) hook_->on_flush(first, lines);
  if (model_media_ && !unflushed_) add_media_lines(s, first, lines);
  if (unflushed_) {  // only what the mode writes back reaches the controller
    const bool written_back = flush_kind_ == FlushKind::kLines ||
                              flush_kind_ == FlushKind::kMsync ||
                              (flush_kind_ == FlushKind::kLinesAbove256 && n > kAdaptiveThreshold);
    if (written_back) {
      unflushed_->note_written_back(first, lines);
      add_media_lines(s, first, lines);
    }
  }
  switch (flush_kind_) {
    case FlushKind::kLines:  // written-back lines = flushes for this kind (executed())
      detail::flush_lines(first, lines);
      break;
    case FlushKind::kLinesAbove256:
      if (n > kAdaptiveThreshold) {
        detail::flush_lines(first, lines);
        detail::bump(s->lines_written_back, lines);
      }
      break;
    case FlushKind::kMsync:  // written back at the fence, one msync for all its flushes
      s->msync_lo = std::min(s->msync_lo, first);
      s->msync_hi = std::max(s->msync_hi, first + lines * kCacheLine);
      detail::bump(s->lines_written_back, lines);
      break;
    case FlushKind::kNone:
      return;
  }
  if (write_latency_ns_ != 0) {
    s->pending_latency_ns += lines * write_latency_ns_;
    if (!sfence_) detail::pay_latency(s);  // no fence will come
  }
}

void PersistContext::add_media_lines(detail::ThreadSlot* s, uintptr_t first, size_t lines) {
  if (shared_media_) {
    std::lock_guard<std::mutex> lock(shared_media_->mu);
    shared_media_->model.add_lines(first, lines);
  } else {
    s->media.add_lines(first, lines);
  }
}

void PersistContext::collect_unflushed() {
  detail::ThreadSlot* s = &slots_.local();
  unflushed_->collect([&](uintptr_t line) { add_media_lines(s, line, 1); });
}

Status PersistContext::map(void* base, size_t size) {
  if (!unflushed_) return Status::OK();
  return unflushed_->start(base, size);
}

void PersistContext::unmap() {
  if (unflushed_) unflushed_->stop();
}

PersistHook* PersistContext::set_hook(PersistHook* hook) {
  PersistHook* old = hook_;
  hook_ = hook;
  choose_path();
  return old;
}

PersistCounters PersistContext::counters() const {
  PersistCounters sum;
  slots_.for_each([&](const detail::ThreadSlot& s) { sum += detail::read_slot(s); });
  if (shared_media_) {
    const XPLineModel& m = shared_media_->model;  // relaxed loads, as the threads' models
    sum.media_writes += m.media_writes();
    sum.media_rmw += m.media_rmw();
    sum.wpq_inserts += m.wpq_inserts();
  }
  return sum;
}

// The flush kind and sfence_ are fixed for the context's life: kLines writes back every
// flushed line (fast and slow path alike), kNone none, the others count in flush_slow; every
// fence executes an sfence exactly when sfence_.
PersistContext::Executed PersistContext::executed() const {
  Executed sum;
  slots_.for_each([&](const detail::ThreadSlot& s) {
    const PersistCounters c = detail::read_slot(s);
    switch (flush_kind_) {
      case FlushKind::kLines:
        sum.lines_written_back += c.flushes;
        break;
      case FlushKind::kNone:
        break;
      case FlushKind::kLinesAbove256:
      case FlushKind::kMsync:
        sum.lines_written_back += s.lines_written_back.load(std::memory_order_relaxed);
        break;
    }
    if (sfence_) sum.sfences += c.fences;
  });
  return sum;
}

PersistCounters PersistContext::thread_counters() { return detail::read_slot(slots_.local()); }

void PersistContext::drain_media() {
  if (unflushed_) {  // what the cache still holds dirty is written back eventually
    detail::ThreadSlot* s = &slots_.local();
    unflushed_->drain([&](uintptr_t line) { add_media_lines(s, line, 1); });
  }
  if (shared_media_) {
    std::lock_guard<std::mutex> lock(shared_media_->mu);
    shared_media_->model.drain();
    return;
  }
  slots_.local().media.drain();
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

}  // namespace pmindex::pm
