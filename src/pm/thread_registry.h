// The one thread registry of the library: every thread that touches a pool gets a small dense
// id, and per-thread state of any pool-level object (persistence counters, allocator caches,
// epoch announcements) lives in a PerThread<T> table indexed by that id.
//
//   ThisThreadId()   the calling thread's id: the smallest id no live thread holds, taken on
//                    first use and given back when the thread exits.
//   PerThread<T>     one T per id, made on first use by the thread holding the id, kept (and
//                    handed to the next thread that gets the id) until the table dies.
//
// There is no thread limit: tables grow in segments (64, 128, 256, ... entries) that never
// move, so a lookup is lock-free and an entry's address is stable.
//
// Invariants: (1) no two live threads hold the same id; (2) ids stay dense (a process with n
// live threads uses ids below n plus the ids freed and not yet retaken); (3) a PerThread<T>
// entry is touched only by the thread holding its id, so T needs no lock for its owner's use
// (readers of other threads' entries, e.g. counter sums, must use atomics inside T).
//
// Thread safety: everything here may be called from any thread.
#ifndef PMINDEX_PM_THREAD_REGISTRY_H_
#define PMINDEX_PM_THREAD_REGISTRY_H_

#include <atomic>
#include <cassert>
#include <cstdint>
#include <mutex>

namespace pmindex::pm {

namespace detail {
inline constexpr uint32_t kNoThreadId = UINT32_MAX;
// initial-exec: one %fs-relative load even in position-independent code (a libpmindex.so or
// a plugin), instead of a __tls_get_addr call on every access. It costs 4 bytes of the static
// TLS block, which glibc reserves room for, also for libraries loaded by dlopen.
inline constinit thread_local uint32_t t_thread_id
    __attribute__((tls_model("initial-exec"))) = kNoThreadId;
uint32_t AcquireThreadId();  // first use by a thread; registers the release at exit
}  // namespace detail

inline uint32_t ThisThreadId() {
  const uint32_t id = detail::t_thread_id;
  if (id != detail::kNoThreadId) [[likely]]
    return id;
  return detail::AcquireThreadId();
}

// Ids currently held by live threads plus one: an upper bound on ids in use.
uint32_t ThreadIdBound();

template <typename T>
class PerThread {
 public:
  PerThread() = default;
  PerThread(const PerThread&) = delete;
  PerThread& operator=(const PerThread&) = delete;
  ~PerThread() {
    for (uint32_t s = 0; s < kSegments; ++s) {
      std::atomic<T*>* seg = segments_[s].load(std::memory_order_acquire);
      if (seg == nullptr) continue;
      for (uint32_t i = 0; i < SegmentSize(s); ++i) delete seg[i].load(std::memory_order_relaxed);
      if (s != 0) delete[] seg;
    }
  }

  // The calling thread's entry, made (value-initialized) on first use.
  [[gnu::always_inline]] T& local() {
    const uint32_t id = ThisThreadId();
    if (id < kFirstSegment) [[likely]] {
      if (T* p = first_[id].load(std::memory_order_acquire)) [[likely]]
        return *p;
    }
    return make(id);
  }
  // The entry of the calling thread if it has one, else nullptr.
  T* find_local() const {
    std::atomic<T*>* cell = cell_of(ThisThreadId(), /*grow=*/false);
    return cell == nullptr ? nullptr : cell->load(std::memory_order_acquire);
  }
  // Calls fn(T&) for every entry made so far (live or handed back). Entries are never freed
  // before the table, so fn may read them while their owners run.
  template <typename Fn>
  void for_each(Fn&& fn) const {
    for (uint32_t s = 0; s < kSegments; ++s) {
      std::atomic<T*>* seg = segments_[s].load(std::memory_order_acquire);
      if (seg == nullptr) continue;
      for (uint32_t i = 0; i < SegmentSize(s); ++i) {
        if (T* p = seg[i].load(std::memory_order_acquire)) fn(*p);
      }
    }
  }

 private:
  static constexpr uint32_t kFirstSegment = 64;
  static constexpr uint32_t kSegments = 26;  // 64 * (2^26 - 1) ids: more than any process
  static constexpr uint32_t SegmentSize(uint32_t s) { return kFirstSegment << s; }
  // Segment s holds ids [64 * (2^s - 1), 64 * (2^(s+1) - 1)).
  static uint32_t SegmentOf(uint32_t id) {
    return 31 - static_cast<uint32_t>(__builtin_clz(id / kFirstSegment + 1));
  }

  std::atomic<T*>* cell_of(uint32_t id, bool grow) const {
    const uint32_t s = SegmentOf(id);
    assert(s < kSegments);
    const uint32_t index = id - kFirstSegment * ((1u << s) - 1);
    std::atomic<T*>* seg = segments_[s].load(std::memory_order_acquire);
    if (seg == nullptr) {
      if (!grow) return nullptr;
      std::lock_guard<std::mutex> lock(grow_mu_);
      seg = segments_[s].load(std::memory_order_acquire);
      if (seg == nullptr) {
        seg = new std::atomic<T*>[SegmentSize(s)]();
        segments_[s].store(seg, std::memory_order_release);
      }
    }
    return &seg[index];
  }

  // Out of line and cold: inlined, it made every local() caller save registers.
  [[gnu::noinline, gnu::cold]] T& make(uint32_t id) {
    std::atomic<T*>* cell = cell_of(id, /*grow=*/true);
    T* p = cell->load(std::memory_order_acquire);
    if (p == nullptr) {
      p = new T();  // only the thread holding `id` makes its entry: no race on the cell
      cell->store(p, std::memory_order_release);
    }
    return *p;
  }

  std::atomic<T*> first_[kFirstSegment] = {};
  mutable std::atomic<std::atomic<T*>*> segments_[kSegments] = {first_};
  mutable std::mutex grow_mu_;
};

}  // namespace pmindex::pm

#endif  // PMINDEX_PM_THREAD_REGISTRY_H_
