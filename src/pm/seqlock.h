// The two orderings of a seqlock (and of optimistic lock coupling, which is a seqlock per
// node), in a form ThreadSanitizer models.
//
// A writer makes its version word odd/locked, stores the data, then releases the word with a
// new value; a reader loads the word (acquire), loads the data (relaxed atomics), and
// re-reads the word to learn whether the data was one consistent state. Two orderings make
// that re-read conclusive:
//   writer: the lock must be visible before any data store  (WriterLocked)
//   reader: the data loads must complete before the re-read (ReadAgain)
// The textbook form puts a release fence after the writer's lock and an acquire fence before
// the reader's re-read. TSan does not model atomic_thread_fence (GCC warns, -Wtsan), so
// under TSan the re-read is an RMW with release semantics instead (Boehm, "Can seqlocks get
// along with programming language memory models?", 2012): if the reader's RMW precedes the
// writer's acquiring lock RMW on the word, it synchronizes with it, so the reader's data
// loads happen before the writer's data stores; if it follows, it reads a changed version.
// That needs no writer fence, provided the writer's lock is an acquire RMW (every lock here
// is a CAS with acquire) -- or, for a plain store, WriterLocked makes it one under TSan.
//
// Release builds keep the fences: on x86 both are compiler barriers only, where the RMW
// would be a locked instruction on every validation.
#ifndef PMINDEX_PM_SEQLOCK_H_
#define PMINDEX_PM_SEQLOCK_H_

#include <atomic>
#include <cstdint>

namespace pmindex::pm {

// The reader's validating re-read of a version word.
template <typename T>
inline T ReadAgain(const T* word) {
#ifdef PMINDEX_TSAN
  return __atomic_fetch_add(const_cast<T*>(word), T{0}, __ATOMIC_ACQ_REL);
#else
  std::atomic_thread_fence(std::memory_order_acquire);
  return __atomic_load_n(word, __ATOMIC_RELAXED);
#endif
}
template <typename T>
inline T ReadAgain(const std::atomic<T>* word) {
#ifdef PMINDEX_TSAN
  return const_cast<std::atomic<T>*>(word)->fetch_add(T{0}, std::memory_order_acq_rel);
#else
  std::atomic_thread_fence(std::memory_order_acquire);
  return word->load(std::memory_order_relaxed);
#endif
}

// After a writer's acquiring lock RMW, before its data stores.
inline void WriterLocked() {
#ifndef PMINDEX_TSAN
  std::atomic_thread_fence(std::memory_order_release);
#endif
}

// A writer that marks its word odd with a plain store (it already excludes other writers):
// the odd value is visible before the data stores that follow.
template <typename T>
inline void WriterBegin(T* word, T odd) {
#ifdef PMINDEX_TSAN
  __atomic_exchange_n(word, odd, __ATOMIC_ACQ_REL);
#else
  __atomic_store_n(word, odd, __ATOMIC_RELAXED);
  std::atomic_thread_fence(std::memory_order_release);
#endif
}

}  // namespace pmindex::pm

#endif  // PMINDEX_PM_SEQLOCK_H_
