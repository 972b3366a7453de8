// Baseline `stdmap`: std::map<std::string, std::string> under one reader-writer lock,
// pmindex's pm::RwLock (under std::shared_mutex, 16 threads on 16 cores loaded at a fifth
// of one thread's throughput: doc/performance.md, "16 cores").
//
// The DRAM ceiling every ordered index is compared with: volatile, nothing survives a crash.
// Thread safety: readers share the lock, writers take it exclusively.
#include <map>
#include <mutex>
#include <shared_mutex>

#include "bench/baselines/baselines.h"
#include "pm/rw_lock.h"
#include "pmindex/index.h"

namespace pmindex::bench {
namespace {

class StdMapIndex final : public Index {
 public:
  explicit StdMapIndex(const IndexTraits& traits) : traits_(traits) {}
  const IndexTraits& traits() const override { return traits_; }

  Status insert(std::string_view key, std::string_view value) override {
    std::unique_lock lock(mu_);
    auto [it, inserted] = map_.try_emplace(std::string(key), value);
    return inserted ? Status::OK() : Status::AlreadyExists();
  }
  Status update(std::string_view key, std::string_view value) override {
    std::unique_lock lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return Status::NotFound();
    it->second.assign(value);
    return Status::OK();
  }
  Status upsert(std::string_view key, std::string_view value) override {
    std::unique_lock lock(mu_);
    map_.insert_or_assign(std::string(key), std::string(value));
    return Status::OK();
  }
  Status remove(std::string_view key) override {
    std::unique_lock lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return Status::NotFound();
    map_.erase(it);
    return Status::OK();
  }
  Status lookup(std::string_view key, std::string* value) override {
    std::shared_lock lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return Status::NotFound();
    if (value != nullptr) value->assign(it->second);
    return Status::OK();
  }
  size_t scan(std::string_view start, size_t max_count, ScanCallback fn) override {
    std::shared_lock lock(mu_);
    size_t n = 0;
    for (auto it = map_.lower_bound(start); it != map_.end() && n < max_count; ++it) {
      n++;
      if (!fn(it->first, it->second)) break;
    }
    return n;
  }
  // Native: a backward walk of the map (the default would rebuild it from forward scans).
  Status reverse_scan(std::string_view start, size_t max_count, ScanCallback fn,
                      size_t* count) override {
    std::shared_lock lock(mu_);
    size_t n = 0;
    auto it = start.empty() ? map_.end() : map_.upper_bound(start);
    while (it != map_.begin() && n < max_count) {
      --it;
      n++;
      if (!fn(it->first, it->second)) break;
    }
    if (count != nullptr) *count = n;
    return Status::OK();
  }
  // Native: the map keeps its size, O(1).
  Status count(uint64_t* n) override {
    std::shared_lock lock(mu_);
    if (n != nullptr) *n = map_.size();
    return Status::OK();
  }
  Status verify() override {
    std::shared_lock lock(mu_);
    const std::string* prev = nullptr;
    for (const auto& [k, v] : map_) {
      if (prev != nullptr && !(*prev < k)) return Status::Corruption("stdmap: keys out of order");
      prev = &k;
    }
    return Status::OK();
  }
  IndexStats stats() override {
    std::shared_lock lock(mu_);
    IndexStats st;
    st.keys = map_.size();
    // A red-black node (32 bytes of links and color) holding two std::strings, rounded to
    // malloc's 16-byte granularity, plus heap buffers of strings beyond the 15-byte SSO.
    uint64_t bytes = 0;
    for (const auto& [k, v] : map_) {
      bytes += 112;
      if (k.capacity() > 15) bytes += (k.capacity() + 1 + 15) / 16 * 16;
      if (v.capacity() > 15) bytes += (v.capacity() + 1 + 15) / 16 * 16;
    }
    st.dram_bytes = bytes;
    st.nodes = {{"nodes", map_.size()}};
    return st;
  }

 private:
  IndexTraits traits_;
  pm::RwLock mu_;
  std::map<std::string, std::string, std::less<>> map_;
};

IndexRegistration Registration() {
  IndexRegistration reg;
  reg.traits.name = "stdmap";
  reg.traits.kind = IndexKind::kNone;
  reg.traits.persistent = false;
  reg.traits.ordered = true;
  reg.traits.byte_keys = true;
  reg.traits.max_key_size = 1 << 20;
  reg.traits.max_value_size = 1 << 20;
  reg.traits.concurrency = "reader-writer lock (pm::RwLock)";
  reg.traits.durability = "volatile (std::map in DRAM)";
  reg.traits.description = "baseline: std::map<string, string> under a reader-writer lock";
  reg.make = [traits = reg.traits](const std::string&, const Options&)
      -> Result<std::unique_ptr<Index>> { return std::unique_ptr<Index>(new StdMapIndex(traits)); };
  return reg;
}

}  // namespace

IndexRegistration StdMapRegistration() { return Registration(); }
}  // namespace pmindex::bench
