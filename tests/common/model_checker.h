// ModelChecker: drives an Index and a std::map model in lockstep (Abseil btree_test's
// base_checker). Every operation is applied to both and the index's answer compared with the
// model's; check_all() compares every key, a full scan, bounded scans and stats().keys, and
// runs verify(). The seed given at construction is attached to every failure (SeedTrace), so
// a failing run can be replayed with PMINDEX_SEED=<seed>.
//
// Failures are gtest fatal failures inside the methods: call them through
// ASSERT_NO_FATAL_FAILURE, or check HasFatalFailure() after a batch.
// PMINDEX_VERIFY_EACH=1 in the environment runs verify() after every write (to pinpoint a
// failure).
//
// Thread safety: none; one checker per test thread.
#ifndef PMINDEX_TESTS_COMMON_MODEL_CHECKER_H_
#define PMINDEX_TESTS_COMMON_MODEL_CHECKER_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/test_util.h"
#include "pmindex/index.h"

namespace pmindex::testing {

// Relative weights of the operations ModelChecker::random_op draws.
struct OpMix {
  unsigned insert = 0;
  unsigned update = 0;
  unsigned upsert = 0;
  unsigned remove = 0;
  unsigned lookup = 0;
  unsigned scan = 0;
  size_t scan_limit = 5;  // entries a drawn scan asks for
};

// A scan of up to `limit` entries from `start` returns the model's entries from there.
inline void ExpectScanMatchesModel(Index& index, const std::map<std::string, std::string>& model,
                                   const std::string& start, size_t limit) {
  auto it = model.lower_bound(start);
  const size_t there = static_cast<size_t>(std::distance(it, model.end()));
  bool ok = true;
  size_t i = 0;
  const size_t n = index.scan(start, limit, [&](std::string_view k, std::string_view v) {
    if (it == model.end()) {
      ADD_FAILURE() << "scan from a key of size " << start.size() << ": entry " << i
                    << " is past the model";
      return ok = false;
    }
    if (k != it->first || v != it->second) {
      ADD_FAILURE() << "scan from a key of size " << start.size() << ": entry " << i
                    << " (key of size " << k.size() << ") differs from the model's (key of size "
                    << it->first.size() << ")";
      return ok = false;
    }
    ++it;
    ++i;
    return true;
  });
  ASSERT_TRUE(ok);
  ASSERT_EQ(n, std::min(limit, there)) << "scan from a key of size " << start.size();
}

// Index::for_each returns every pair of the model once, and nothing else (in any order).
inline void ExpectIterationMatchesModel(Index& index,
                                        const std::map<std::string, std::string>& model) {
  std::map<std::string, std::string> seen;
  bool ok = true;
  const Status s = index.for_each([&](std::string_view k, std::string_view v) {
    if (!seen.emplace(std::string(k), std::string(v)).second) {
      ADD_FAILURE() << "for_each returns a key of size " << k.size() << " twice";
      return ok = false;
    }
    return true;
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(ok);
  ASSERT_EQ(seen.size(), model.size());
  ASSERT_TRUE(seen == model) << "for_each's pairs differ from the model's";
}

// Every model key is found with its value, and a full scan (an unordered index: a full
// iteration) equals the model.
inline void ExpectSameAsModel(Index& index, const std::map<std::string, std::string>& model) {
  std::string got;
  for (const auto& [k, v] : model) {
    ASSERT_TRUE(index.lookup(k, &got).ok()) << "lost a key of size " << k.size();
    ASSERT_EQ(got, v) << "value of a key of size " << k.size();
  }
  ASSERT_NO_FATAL_FAILURE(ExpectIterationMatchesModel(index, model));
  if (index.traits().ordered) {
    ASSERT_NO_FATAL_FAILURE(ExpectScanMatchesModel(index, model, "", SIZE_MAX));
  }
}

class ModelChecker {
 public:
  using Model = std::map<std::string, std::string>;

  explicit ModelChecker(uint64_t seed)
      : seed_(seed), trace_(__FILE__, __LINE__, SeedTrace(seed)) {}
  ModelChecker(const ModelChecker&) = delete;
  ModelChecker& operator=(const ModelChecker&) = delete;

  // Creates index `name` on a fresh pool at `path`, with an empty model.
  void create(const std::string& name, const std::string& path, const Options& options) {
    name_ = name;
    path_ = path;
    options_ = options;
    model_.clear();
    auto idx = CreateIndex(name, path, options);
    ASSERT_TRUE(idx.ok()) << name << ": " << idx.status().ToString();
    index_ = std::move(idx.value());
  }
  // Opens the existing pool at `path`, whose contents must be `model`.
  void open(const std::string& name, const std::string& path, const Options& options,
            Model model) {
    name_ = name;
    path_ = path;
    options_ = options;
    model_ = std::move(model);
    ASSERT_NO_FATAL_FAILURE(open_index());
  }
  // Closes and reopens the pool (recovery and allocator rebuild). A volatile index has
  // nothing to reopen and is left as it is.
  void reopen() {
    ASSERT_TRUE(index_);
    if (!index_->traits().persistent) return;
    ASSERT_TRUE(index_->close().ok());
    index_.reset();
    ASSERT_NO_FATAL_FAILURE(open_index());
  }
  // Closes the index (the model is kept).
  void close() {
    if (index_) {
      ASSERT_TRUE(index_->close().ok());
    }
    index_.reset();
  }

  // Replaces the index by wrap(index) (a wrapper that forwards to it: tests of the checker
  // itself). The model stays; reopen() opens the plain index again.
  template <typename Wrap>
  void wrap(Wrap&& wrap) {
    index_ = wrap(std::move(index_));
  }

  Index& index() { return *index_; }
  const Model& model() const { return model_; }
  uint64_t seed() const { return seed_; }
  bool contains(const std::string& key) const { return model_.count(key) != 0; }

  void insert(const std::string& key, const std::string& value) {
    const bool present = contains(key);
    Status s = index_->insert(key, value);
    if (present) {
      ASSERT_TRUE(s.IsAlreadyExists())
          << "insert of a present key" << About(key) << ": " << s.ToString();
    } else {
      ASSERT_TRUE(s.ok()) << "insert" << About(key) << ": " << s.ToString();
      model_[key] = value;
    }
    ASSERT_NO_FATAL_FAILURE(verify_each("insert", key));
  }
  void update(const std::string& key, const std::string& value) {
    const bool present = contains(key);
    Status s = index_->update(key, value);
    if (present) {
      ASSERT_TRUE(s.ok()) << "update" << About(key) << ": " << s.ToString();
      model_[key] = value;
    } else {
      ASSERT_TRUE(s.IsNotFound()) << "update of an absent key" << About(key)
                                  << ": " << s.ToString();
    }
    ASSERT_NO_FATAL_FAILURE(verify_each("update", key));
  }
  void upsert(const std::string& key, const std::string& value) {
    Status s = index_->upsert(key, value);
    ASSERT_TRUE(s.ok()) << "upsert" << About(key) << ": " << s.ToString();
    model_[key] = value;
    ASSERT_NO_FATAL_FAILURE(verify_each("upsert", key));
  }
  void remove(const std::string& key) {
    const bool present = contains(key);
    Status s = index_->remove(key);
    if (present) {
      ASSERT_TRUE(s.ok()) << "remove" << About(key) << ": " << s.ToString();
      model_.erase(key);
    } else {
      ASSERT_TRUE(s.IsNotFound()) << "remove of an absent key" << About(key)
                                  << ": " << s.ToString();
    }
    ASSERT_NO_FATAL_FAILURE(verify_each("remove", key));
  }
  void lookup(const std::string& key) {
    std::string got;
    const auto it = model_.find(key);
    const Status looked = index_->lookup(key, &got);
    ASSERT_TRUE(looked.ok() || looked.IsNotFound()) << looked.ToString() << About(key);
    const bool found = looked.ok();
    ASSERT_EQ(found, it != model_.end()) << "lookup" << About(key);
    if (found) {
      ASSERT_EQ(got, it->second) << "lookup value" << About(key);
    }
  }
  // A scan of up to `limit` entries from `start` returns the model's entries from there.
  void scan(const std::string& start, size_t limit) {
    ASSERT_NO_FATAL_FAILURE(ExpectScanMatchesModel(*index_, model_, start, limit));
  }

  // Applies one operation drawn from `mix` to `key` (and `value` for writes).
  void random_op(std::mt19937_64& rng, const std::string& key, const std::string& value,
                 const OpMix& mix) {
    unsigned pick = static_cast<unsigned>(
        rng() % (mix.insert + mix.update + mix.upsert + mix.remove + mix.lookup + mix.scan));
    if (pick < mix.insert) return insert(key, value);
    pick -= mix.insert;
    if (pick < mix.update) return update(key, value);
    pick -= mix.update;
    if (pick < mix.upsert) return upsert(key, value);
    pick -= mix.upsert;
    if (pick < mix.remove) return remove(key);
    pick -= mix.remove;
    if (pick < mix.lookup) return lookup(key);
    return scan(key, mix.scan_limit);
  }

  // Removes every key, in an order drawn from rng.
  void remove_all(std::mt19937_64& rng) {
    std::vector<std::string> keys;
    for (const auto& kv : model_) keys.push_back(kv.first);
    std::shuffle(keys.begin(), keys.end(), rng);
    for (const std::string& k : keys) ASSERT_NO_FATAL_FAILURE(remove(k));
  }

  void verify() {
    Status v = index_->verify();
    ASSERT_TRUE(v.ok()) << name_ << ": " << v.ToString();
  }

  // verify(); stats().keys; a full scan equals the model; every model key is found with its
  // value; and, if `starts` is given, bounded scans of 1..max_limit entries from each start.
  void check_all(const std::vector<std::string>& starts = {}, std::mt19937_64* rng = nullptr,
                 size_t max_limit = 40) {
    ASSERT_NO_FATAL_FAILURE(verify());
    ASSERT_EQ(index_->stats().keys, model_.size()) << "stats().keys";
    ASSERT_NO_FATAL_FAILURE(ExpectSameAsModel(*index_, model_));
    for (const std::string& start : starts) {
      const size_t limit = rng ? 1 + (*rng)() % max_limit : max_limit;
      ASSERT_NO_FATAL_FAILURE(scan(start, limit));
    }
  }

 private:
  void open_index() {
    auto idx = OpenIndex(path_, options_, name_);
    ASSERT_TRUE(idx.ok()) << name_ << ": " << idx.status().ToString();
    index_ = std::move(idx.value());
  }
  void verify_each(const char* op, const std::string& key) {
    if (!verify_each_) return;
    Status v = index_->verify();
    ASSERT_TRUE(v.ok()) << "after " << op << About(key) << ": " << v.ToString();
  }
  std::string About(const std::string& key) const {
    return " (" + name_ + ", key of size " + std::to_string(key.size()) + ")";
  }

  const uint64_t seed_;
  ::testing::ScopedTrace trace_;
  std::string name_;
  std::string path_;
  Options options_;
  std::unique_ptr<Index> index_;
  Model model_;
  const bool verify_each_ = std::getenv("PMINDEX_VERIFY_EACH") != nullptr;
};

}  // namespace pmindex::testing

#endif  // PMINDEX_TESTS_COMMON_MODEL_CHECKER_H_
