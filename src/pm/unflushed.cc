#include "pm/unflushed.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace pmindex::pm {
namespace {

// Compares one line of the mapping with its shadow and, if they differ, copies it there.
// Another thread may write the line meanwhile (a write after the page's close faults, opens
// the page again and can land during the compare: it is counted now or at the next collect,
// once either way), so these reads race with those writes by design. They are relaxed
// 8-byte atomic loads in a function TSan does not instrument: the diff is the instrument.
[[gnu::no_sanitize_thread]] bool RefreshLine(const char* line, char* shadow, size_t bytes) {
  auto* now = reinterpret_cast<const uint64_t*>(line);
  auto* old = reinterpret_cast<uint64_t*>(shadow);
  bool same = true;
  for (size_t i = 0; i < bytes / 8; ++i) {
    const uint64_t w = __atomic_load_n(&now[i], __ATOMIC_RELAXED);
    if (w != old[i]) same = false;
    old[i] = w;
  }
  return !same;
}

constexpr size_t kPage = 4096;
constexpr size_t kLine = 64;

// The trackers the SIGSEGV handler asks, and the action it replaced (restored for a fault
// no tracker owns, so the fault is reported as it would have been). Process-wide because a
// signal handler is: this is the handler's table of pools, nothing else. Each tracker (one
// per pool's PersistContext) keeps its own state; a pool only registers its mapping here
// while count_unflushed_writes is on, and pools never see each other's entries.
std::atomic<UnflushedWriteTracker*> g_trackers[UnflushedWriteTracker::kMaxTrackers];
std::mutex g_install_mu;
bool g_installed = false;
struct sigaction g_previous;

void OnFault(int sig, siginfo_t* info, void* /*context*/) {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
  for (auto& slot : g_trackers) {
    UnflushedWriteTracker* t = slot.load(std::memory_order_acquire);
    if (t != nullptr && t->handle_fault(addr)) return;  // the write is retried, now allowed
  }
  // Not ours: the previous action takes the fault when the instruction is retried.
  sigaction(sig, &g_previous, nullptr);
}

Status Install() {
  std::lock_guard<std::mutex> lock(g_install_mu);
  if (g_installed) return Status::OK();
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = OnFault;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSEGV, &sa, &g_previous) != 0)
    return Status::IOError("unflushed-write tracking: sigaction failed");
  g_installed = true;
  return Status::OK();
}

}  // namespace

UnflushedWriteTracker::UnflushedWriteTracker(size_t cache_lines)
    : cache_lines_(cache_lines == 0 ? 1 : cache_lines) {}

UnflushedWriteTracker::~UnflushedWriteTracker() { stop(); }

void UnflushedWriteTracker::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  if (base_ == 0) return;
  mprotect(reinterpret_cast<void*>(base_), size_, PROT_READ | PROT_WRITE);
  g_trackers[slot_].store(nullptr, std::memory_order_release);
  munmap(shadow_, size_);
  shadow_ = nullptr;
  base_ = 0;
  lru_.clear();
  dirty_.clear();
}

Status UnflushedWriteTracker::start(void* base, size_t size) {
  const uintptr_t b = reinterpret_cast<uintptr_t>(base);
  if (base_ != 0) return Status::InvalidArgument("unflushed-write tracking already started");
  if (b % kPage != 0 || size % kPage != 0 || size == 0)
    return Status::InvalidArgument("unflushed-write tracking needs a page-aligned range");
  if (Status s = Install(); !s.ok()) return s;
  void* shadow = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (shadow == MAP_FAILED) return Status::IOError("unflushed-write tracking: no shadow");
  const size_t pages = size / kPage;
  state_ = std::make_unique<std::atomic<uint8_t>[]>(pages);
  listed_ = std::make_unique<std::atomic<uint8_t>[]>(pages);
  pending_ = std::make_unique<std::atomic<uint32_t>[]>(pages);
  shadow_ = static_cast<char*>(shadow);
  base_ = b;
  size_ = size;
  for (size_t i = 0; i < kMaxTrackers; ++i) {
    UnflushedWriteTracker* none = nullptr;
    if (g_trackers[i].compare_exchange_strong(none, this, std::memory_order_acq_rel)) {
      slot_ = i;
      break;
    }
  }
  if (slot_ == SIZE_MAX || mprotect(base, size, PROT_READ) != 0) {
    if (slot_ != SIZE_MAX) g_trackers[slot_].store(nullptr, std::memory_order_release);
    munmap(shadow_, size_);
    base_ = 0;
    return Status::IOError(slot_ == SIZE_MAX ? "unflushed-write tracking: too many mappings"
                                             : "unflushed-write tracking: mprotect failed");
  }
  return Status::OK();
}

// Runs in the SIGSEGV handler: only atomics, memcpy and mprotect.
bool UnflushedWriteTracker::handle_fault(uintptr_t addr) {
  if (addr < base_ || addr >= base_ + size_) return false;
  const size_t page = (addr - base_) / kPage;
  const uintptr_t at = base_ + page * kPage;
  uint8_t expect = kUntouched;
  if (state_[page].compare_exchange_strong(expect, kCopying, std::memory_order_acq_rel)) {
    // The page is still write-protected: its content is the one before this write.
    std::memcpy(shadow_ + page * kPage, reinterpret_cast<const void*>(at), kPage);
    state_[page].store(kShadowed, std::memory_order_release);
  } else {
    while (state_[page].load(std::memory_order_acquire) != kShadowed) __builtin_ia32_pause();
  }
  // One handler opens the page and lists it, in that order: a collect that takes the page
  // from the list closes it after it was opened. A handler that finds the page listed
  // returns; its write faults again until the opener's mprotect is done.
  if (listed_[page].exchange(1, std::memory_order_acq_rel) == 0) {
    mprotect(reinterpret_cast<void*>(at), kPage, PROT_READ | PROT_WRITE);
    while (append_lock_.test_and_set(std::memory_order_acquire)) __builtin_ia32_pause();
    const size_t n = pending_count_.load(std::memory_order_relaxed);
    pending_[n].store(static_cast<uint32_t>(page), std::memory_order_relaxed);
    pending_count_.store(n + 1, std::memory_order_relaxed);
    append_lock_.clear(std::memory_order_release);
  }
  return true;
}

void UnflushedWriteTracker::note_written_back(uintptr_t first_line, size_t lines) {
  if (base_ == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < lines; ++i) written_back_.insert(first_line + i * kLine);
}

void UnflushedWriteTracker::collect(Emit emit) {
  if (base_ == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  collect_locked(emit);
}

void UnflushedWriteTracker::drain(Emit emit) {
  if (base_ == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  collect_locked(emit);
  for (auto it = lru_.rbegin(); it != lru_.rend(); ++it) emit(*it);  // oldest first
  lru_.clear();
  dirty_.clear();
}

// Crash argument: none needed; the tracker changes nothing the pool holds (it only reads
// the mapping and toggles its protection).
void UnflushedWriteTracker::collect_locked(Emit emit) {
  std::vector<uint32_t> pages;
  while (append_lock_.test_and_set(std::memory_order_acquire)) __builtin_ia32_pause();
  const size_t n = pending_count_.load(std::memory_order_relaxed);
  pages.reserve(n);
  for (size_t i = 0; i < n; ++i) pages.push_back(pending_[i].load(std::memory_order_relaxed));
  pending_count_.store(0, std::memory_order_relaxed);
  append_lock_.clear(std::memory_order_release);
  for (uint32_t page : pages) {
    // Unlist, then close, then compare: a write before the close is in this compare, one
    // after it faults and lists the page again.
    listed_[page].store(0, std::memory_order_release);
    mprotect(reinterpret_cast<void*>(base_ + page * kPage), kPage, PROT_READ);
    compare_page(page, emit);
  }
  // Lines the mode wrote back are clean now, whether written since the last collect or
  // before it.
  for (uintptr_t line : written_back_) {
    auto it = dirty_.find(line);
    if (it == dirty_.end()) continue;
    lru_.erase(it->second);
    dirty_.erase(it);
  }
  written_back_.clear();
}

void UnflushedWriteTracker::compare_page(size_t page, Emit emit) {
  const uintptr_t at = base_ + page * kPage;
  char* shadow = shadow_ + page * kPage;
  for (size_t off = 0; off < kPage; off += kLine) {
    if (!RefreshLine(reinterpret_cast<const char*>(at + off), shadow + off, kLine)) continue;
    lines_written_.fetch_add(1, std::memory_order_relaxed);
    const uintptr_t line = at + off;
    if (written_back_.count(line) != 0) continue;  // flushed: clean (dropped from dirty_ below)
    lines_unflushed_.fetch_add(1, std::memory_order_relaxed);
    touch_dirty(line, emit);
  }
}

void UnflushedWriteTracker::touch_dirty(uintptr_t line, Emit emit) {
  auto it = dirty_.find(line);
  if (it != dirty_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.push_front(line);
  dirty_.emplace(line, lru_.begin());
  if (dirty_.size() <= cache_lines_) return;
  const uintptr_t victim = lru_.back();  // written back by the cache, not by a flush
  lru_.pop_back();
  dirty_.erase(victim);
  emit(victim);
}

}  // namespace pmindex::pm
