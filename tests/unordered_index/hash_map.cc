// test-hashmap: a volatile, unordered index (std::unordered_map under a mutex), so that the
// paths every unordered index takes - no scan, a full iteration through Index::for_each, the
// workbench skipping scan workloads, `pmindex dump` and the model checks comparing sets - run
// in the test suites before (and beside) the persistent hash indexes.
#include <mutex>
#include <string>
#include <unordered_map>

#include "pmindex/index.h"

namespace pmindex::testing {
namespace {

class HashMapIndex final : public Index {
 public:
  explicit HashMapIndex(IndexTraits traits) : traits_(std::move(traits)) {}
  const IndexTraits& traits() const override { return traits_; }

  Status insert(std::string_view key, std::string_view value) override {
    std::lock_guard<std::mutex> lock(mu_);
    return map_.emplace(std::string(key), std::string(value)).second ? Status::OK()
                                                                      : Status::AlreadyExists();
  }
  Status update(std::string_view key, std::string_view value) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(std::string(key));
    if (it == map_.end()) return Status::NotFound();
    it->second.assign(value);
    return Status::OK();
  }
  Status upsert(std::string_view key, std::string_view value) override {
    std::lock_guard<std::mutex> lock(mu_);
    map_[std::string(key)].assign(value);
    return Status::OK();
  }
  Status remove(std::string_view key) override {
    std::lock_guard<std::mutex> lock(mu_);
    return map_.erase(std::string(key)) != 0 ? Status::OK() : Status::NotFound();
  }
  Status lookup(std::string_view key, std::string* value) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(std::string(key));
    if (it == map_.end()) return Status::NotFound();
    if (value != nullptr) *value = it->second;
    return Status::OK();
  }
  size_t scan(std::string_view, size_t, ScanCallback) override { return 0; }  // unordered
  Status for_each(ScanCallback fn) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [k, v] : map_)
      if (!fn(k, v)) break;
    return Status::OK();
  }
  Status verify() override { return Status::OK(); }
  IndexStats stats() override {
    std::lock_guard<std::mutex> lock(mu_);
    IndexStats s;
    s.keys = map_.size();
    return s;
  }

 private:
  const IndexTraits traits_;
  std::mutex mu_;
  std::unordered_map<std::string, std::string> map_;
};

IndexRegistration MakeRegistration() {
  IndexRegistration r;
  r.traits.name = "test-hashmap";
  r.traits.persistent = false;
  r.traits.ordered = false;
  r.traits.byte_keys = true;
  r.traits.max_key_size = 64;
  r.traits.max_value_size = 64;
  r.traits.concurrency = "one mutex (test structure)";
  r.traits.durability = "volatile (test structure)";
  r.traits.description = "test-only unordered map (the paths of unordered indexes)";
  r.make = [traits = r.traits](const std::string&, const Options&)
      -> Result<std::unique_ptr<Index>> { return std::unique_ptr<Index>(new HashMapIndex(traits)); };
  r.test_only = true;
  return r;
}

PMINDEX_REGISTER_INDEX(MakeRegistration());

}  // namespace
}  // namespace pmindex::testing
