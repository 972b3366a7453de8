// Relaxed and acquire/release atomic loads and stores of plain fields that optimistic readers
// read while a writer may change them (plain moves on x86; they keep ThreadSanitizer and the
// compiler honest). The one copy for every index; the orderings that matter are the locks'
// (pm/version_lock.h, pm/seqlock.h).
#ifndef PMINDEX_PM_RACY_H_
#define PMINDEX_PM_RACY_H_

namespace pmindex::pm {

template <typename T>
inline T Load(const T& x) {
  return __atomic_load_n(&x, __ATOMIC_RELAXED);
}
template <typename T>
inline void Store(T& x, T v) {
  __atomic_store_n(&x, v, __ATOMIC_RELAXED);
}
template <typename T>
inline T LoadAcquire(const T& x) {
  return __atomic_load_n(&x, __ATOMIC_ACQUIRE);
}
template <typename T>
inline void StoreRelease(T& x, T v) {
  __atomic_store_n(&x, v, __ATOMIC_RELEASE);
}

}  // namespace pmindex::pm

#endif  // PMINDEX_PM_RACY_H_
