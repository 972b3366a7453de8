// UnflushedWriteTracker: finds the lines of a mapping that a workload writes, flushed or not,
// so that the media model can count the lines a CPU cache writes back on its own (a dirty
// line evicted without a flush still reaches the memory controller's write-pending queue):
// the writes of an eADR run, and the volatile words (locks, versions) that live on
// persistent lines and are never flushed.
//
// How writes are found: the mapping is write-protected; the first write to a page after a
// collect faults, the SIGSEGV handler keeps the page's old content in a shadow (once) and
// its number in a list, and opens the page. collect() (the context calls it at every fence)
// closes the listed pages again and compares their lines with the shadow: a line that
// differs was written since the last collect.
//
// What is done with them (a model of the CPU cache's dirty lines, LRU, `cache_lines` lines):
// a written line the mode wrote back since the last collect (a flush that executed) is
// clean; any other written line is dirty in the cache model, made most recently used. A
// dirty line pushed out of the model by newer dirty lines is written back then: it is
// handed to `emit` (the context counts it as a WPQ insert and feeds it to the media model).
// drain() writes back every dirty line (the eventual eviction of what the cache holds at the
// end of a measured phase). The model sees only written lines: lines a workload only reads
// do not compete for its capacity, so it evicts later than a real cache (doc/metrics.md).
//
// Cost: a page fault and two mprotect calls per page written between fences, a 4 KiB compare
// per such page per fence. A measuring instrument for the workbench, never on by default.
//
// Thread safety: writers on any thread (the handler is lock-free for them, apart from a
// short spin on a page being copied into the shadow); collect, note_written_back and drain
// serialise on one mutex. At most kMaxTrackers trackers in a process at once.
#ifndef PMINDEX_PM_UNFLUSHED_H_
#define PMINDEX_PM_UNFLUSHED_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "pmindex/function_ref.h"
#include "pmindex/status.h"

namespace pmindex::pm {

class UnflushedWriteTracker {
 public:
  static constexpr size_t kMaxTrackers = 8;
  static constexpr size_t kDefaultCacheLines = (32u << 20) / 64;  // 32 MiB of dirty lines
  using Emit = FunctionRef<void(uintptr_t line)>;

  explicit UnflushedWriteTracker(size_t cache_lines = kDefaultCacheLines);
  ~UnflushedWriteTracker();  // stop()
  // Stops tracking: the mapping is writable again, nothing more is collected (the counts
  // stay readable). Call before the mapping goes away.
  void stop();
  UnflushedWriteTracker(const UnflushedWriteTracker&) = delete;
  UnflushedWriteTracker& operator=(const UnflushedWriteTracker&) = delete;

  // Starts tracking [base, base + size) (page-aligned): write-protects it. InvalidArgument
  // for an unaligned range or a second start; IOError when the process already tracks
  // kMaxTrackers mappings or the kernel refuses the shadow or the protection.
  Status start(void* base, size_t size);
  bool active() const { return base_ != 0; }

  // `lines` lines from first_line were written back by the mode (a flush that executed).
  void note_written_back(uintptr_t first_line, size_t lines);
  // Finds the lines written since the last collect; dirty lines the cache model evicts go to
  // `emit`.
  void collect(Emit emit);
  // collect, then every dirty line to `emit`.
  void drain(Emit emit);

  // Lines found written so far (each time a line differed at a collect), and of those the
  // ones not written back by the mode (dirty in the cache model).
  uint64_t lines_written() const { return lines_written_.load(std::memory_order_relaxed); }
  uint64_t lines_unflushed() const { return lines_unflushed_.load(std::memory_order_relaxed); }

  // For the signal handler: true if `addr` is in this tracker's mapping (and handles it).
  bool handle_fault(uintptr_t addr);

 private:
  enum PageState : uint8_t { kUntouched = 0, kCopying = 1, kShadowed = 2 };
  void collect_locked(Emit emit);
  void compare_page(size_t page, Emit emit);
  void touch_dirty(uintptr_t line, Emit emit);

  const size_t cache_lines_;
  uintptr_t base_ = 0;
  size_t size_ = 0;
  size_t slot_ = SIZE_MAX;  // in the process-wide table the handler reads
  char* shadow_ = nullptr;  // anonymous, MAP_NORESERVE: only touched pages cost memory
  std::unique_ptr<std::atomic<uint8_t>[]> state_;     // PageState per page
  std::unique_ptr<std::atomic<uint8_t>[]> listed_;    // 1: the page is in pending_
  std::unique_ptr<std::atomic<uint32_t>[]> pending_;  // pages opened since the last collect
  std::atomic<size_t> pending_count_{0};
  std::atomic_flag append_lock_ = ATOMIC_FLAG_INIT;

  std::mutex mu_;  // the cache model and the written-back set
  std::unordered_set<uintptr_t> written_back_;  // since the last collect
  std::list<uintptr_t> lru_;                    // dirty lines, most recent first
  std::unordered_map<uintptr_t, std::list<uintptr_t>::iterator> dirty_;
  std::atomic<uint64_t> lines_written_{0};
  std::atomic<uint64_t> lines_unflushed_{0};
};

}  // namespace pmindex::pm

#endif  // PMINDEX_PM_UNFLUSHED_H_
