#include "pm/thread_registry.h"

#include <functional>
#include <queue>
#include <vector>

namespace pmindex::pm {
namespace detail {
namespace {

// Free ids in a min-heap, so ids stay dense: a new thread takes the smallest free one.
struct IdPool {
  std::mutex mu;
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<uint32_t>> free;
  uint32_t next = 0;  // ids below `next` have been handed out at least once
};

IdPool& id_pool() {
  static IdPool* pool = new IdPool;  // never destroyed: threads may exit after static teardown
  return *pool;
}

// Gives the id back when its thread exits.
struct IdRelease {
  ~IdRelease() {
    if (t_thread_id == kNoThreadId) return;
    IdPool& pool = id_pool();
    std::lock_guard<std::mutex> lock(pool.mu);
    pool.free.push(t_thread_id);
    t_thread_id = kNoThreadId;
  }
};
thread_local IdRelease t_id_release;

}  // namespace

uint32_t AcquireThreadId() {
  (void)&t_id_release;  // touching it registers its destructor for this thread
  IdPool& pool = id_pool();
  std::lock_guard<std::mutex> lock(pool.mu);
  if (!pool.free.empty()) {
    t_thread_id = pool.free.top();
    pool.free.pop();
  } else {
    t_thread_id = pool.next++;
  }
  return t_thread_id;
}

}  // namespace detail

uint32_t ThreadIdBound() {
  detail::IdPool& pool = detail::id_pool();
  std::lock_guard<std::mutex> lock(pool.mu);
  return pool.next;
}

}  // namespace pmindex::pm
