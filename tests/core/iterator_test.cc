// Iterators and the read conveniences of every index in the registry, against a std::map
// model in lockstep: full walks forward and backward, bounded walks, Seek and SeekForPrev at
// random keys followed by random Next/Prev (direction changes included), small batches so
// that refills happen everywhere. Also: an iterator outliving its index's close, the
// unordered indexes' full walk, exists/count/lookup_into, reverse_scan's answers, and
// writes from inside a scan callback (refused with Busy, never a deadlock) or between the
// moves of an iterator (allowed). The seed is printed on failure (PMINDEX_SEED replays).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench/baselines/baselines.h"
#include "common/test_util.h"
#include "pmindex/index.h"
#include "pmindex/iterator.h"

namespace pmindex::testing {
namespace {

using Model = std::map<std::string, std::string>;

std::vector<std::string> Names() {
  bench::RegisterBaselines();  // the volatile baselines too
  return WorkingIndexNames();
}

std::string IntK(uint64_t k) { return std::string(IntKey(k).view()); }

// Keys of either kind: integers over a key space, or byte strings with shared prefixes and
// high bytes.
class KeyMaker {
 public:
  KeyMaker(bool byte_keys, uint64_t key_space) : byte_keys_(byte_keys), space_(key_space) {}
  std::string operator()(std::mt19937_64& rng) const {
    if (!byte_keys_) return IntK(rng() % space_);
    std::string k = "k/" + std::to_string(rng() % space_);
    k.resize(2 + rng() % 14, static_cast<char>(rng() % 4 == 0 ? '\xff' : 'a' + rng() % 3));
    return k;
  }

 private:
  bool byte_keys_;
  uint64_t space_;
};

class IteratorTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    Options o;
    o.pool_size = 32ull << 20;
    auto made = CreateIndex(GetParam(), dir_.file("pool"), o);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    index_ = std::move(made).value();
    value_size_ = index_->traits().byte_keys ? 8 : index_->traits().max_value_size;
  }

  std::string Val(uint64_t v) const {
    std::string s{std::string_view(IntValue(v))};
    s.resize(value_size_, 'v');
    return s;
  }

  // Random inserts and removes, in lockstep with the model.
  void Mutate(std::mt19937_64& rng, const KeyMaker& keys, uint64_t ops) {
    for (uint64_t i = 0; i < ops; ++i) {
      const std::string k = keys(rng);
      if (rng() % 3 != 0) {
        const std::string v = Val(rng());
        ASSERT_TRUE(index_->upsert(k, v).ok());
        model_[k] = v;
      } else {
        const Status s = index_->remove(k);
        ASSERT_TRUE(s.ok() || s.IsNotFound()) << s.ToString();
        ASSERT_EQ(s.ok(), model_.erase(k) == 1);
      }
    }
  }

  TempDir dir_;
  std::unique_ptr<Index> index_;
  size_t value_size_ = 8;
  Model model_;
};

// The model's view of an iterator with these bounds: the pairs it must visit.
struct Bounded {
  const Model& model;
  const IteratorOptions& options;
  Model::const_iterator first() const {
    return options.lower_bound.empty() ? model.begin() : model.lower_bound(options.lower_bound);
  }
  Model::const_iterator end() const {
    return options.upper_bound.empty() ? model.end() : model.lower_bound(options.upper_bound);
  }
};

// Walks the whole range forward and backward and compares every pair.
void CheckFullWalks(Index& index, const Model& model, const IteratorOptions& options) {
  const Bounded range{model, options};
  std::unique_ptr<Iterator> it = index.NewIterator(options);
  auto m = range.first();
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
    ASSERT_NE(m, range.end()) << "forward: extra key";
    ASSERT_EQ(it->key(), m->first);
    ASSERT_EQ(it->value(), m->second);
  }
  ASSERT_TRUE(it->status().ok()) << it->status().ToString();
  ASSERT_EQ(m, range.end()) << "forward: a key is missing";
  auto r = std::make_reverse_iterator(range.end());
  const auto rend = std::make_reverse_iterator(range.first());
  for (it->SeekToLast(); it->Valid(); it->Prev(), ++r) {
    ASSERT_NE(r, rend) << "backward: extra key";
    ASSERT_EQ(it->key(), r->first);
    ASSERT_EQ(it->value(), r->second);
  }
  ASSERT_TRUE(it->status().ok()) << it->status().ToString();
  ASSERT_EQ(r, rend) << "backward: a key is missing";
}

// Seek or SeekForPrev at `target`, then random Next/Prev, against the model in lockstep.
void CheckRandomMoves(Index& index, const Model& model, const IteratorOptions& options,
                      const std::string& target, std::mt19937_64& rng) {
  const Bounded range{model, options};
  std::unique_ptr<Iterator> it = index.NewIterator(options);
  Model::const_iterator m;
  const bool for_prev = rng() % 2 == 0;
  if (for_prev) {  // the largest key <= target, >= lower_bound, < upper_bound
    it->SeekForPrev(target);
    m = model.upper_bound(target);
    const auto upper = range.end();  // the first key >= upper_bound (or the end)
    if (upper != model.end() && (m == model.end() || upper->first < m->first)) m = upper;
    if (m == model.begin()) {
      m = range.end();
    } else {
      --m;
      if (m->first < options.lower_bound) m = range.end();
    }
  } else {  // the smallest key >= target, >= lower_bound, < upper_bound
    it->Seek(target);
    m = model.lower_bound(std::max(target, options.lower_bound));
    // Past every key, or at or past the upper bound: the iterator is not valid.
    if (m == model.end() || (!options.upper_bound.empty() && m->first >= options.upper_bound))
      m = range.end();
  }
  for (int step = 0; step < 40; ++step) {
    const bool valid = m != range.end();
    ASSERT_EQ(it->Valid(), valid) << (for_prev ? "SeekForPrev " : "Seek ") << "step " << step
                                  << " target " << ::testing::PrintToString(target) << " bounds ["
                                  << ::testing::PrintToString(options.lower_bound) << ", "
                                  << ::testing::PrintToString(options.upper_bound) << ") expected "
                                  << (valid ? ::testing::PrintToString(m->first) : "none")
                                  << " status " << it->status().ToString();
    if (!valid) break;
    ASSERT_EQ(it->key(), m->first) << "step " << step;
    ASSERT_EQ(it->value(), m->second) << "step " << step;
    if (rng() % 3 != 0) {
      it->Next();
      ++m;
    } else {
      it->Prev();
      m = m == range.first() ? range.end() : std::prev(m);
    }
  }
  ASSERT_TRUE(it->status().ok()) << it->status().ToString();
}

TEST_P(IteratorTest, AgainstModelInLockstep) {
  if (!index_->traits().ordered) GTEST_SKIP() << "unordered: see UnorderedFullWalk";
  const uint64_t seed = TestSeed(4242);
  SCOPED_TRACE(SeedTrace(seed));
  std::mt19937_64 rng(seed);
  const KeyMaker keys(index_->traits().byte_keys, Scale(1000));
  for (int round = 0; round < 3; ++round) {
    ASSERT_NO_FATAL_FAILURE(Mutate(rng, keys, Scale(800)));
    IteratorOptions whole;
    whole.batch_size = 1 + rng() % 16;
    ASSERT_NO_FATAL_FAILURE(CheckFullWalks(*index_, model_, whole));
    for (int b = 0; b < 4; ++b) {
      IteratorOptions bounded;
      bounded.batch_size = 1 + rng() % 20;
      std::string lo = keys(rng), hi = keys(rng);
      if (hi < lo) std::swap(lo, hi);
      if (rng() % 4 != 0) bounded.lower_bound = lo;
      if (rng() % 4 != 0) bounded.upper_bound = hi;
      ASSERT_NO_FATAL_FAILURE(CheckFullWalks(*index_, model_, bounded));
      for (int s = 0; s < 10; ++s) {
        ASSERT_NO_FATAL_FAILURE(CheckRandomMoves(*index_, model_, s % 2 ? bounded : whole,
                                                 keys(rng), rng));
      }
    }
  }
}

TEST_P(IteratorTest, ReverseScanMatchesModel) {
  if (!index_->traits().ordered) GTEST_SKIP() << "unordered";
  const uint64_t seed = TestSeed(77);
  SCOPED_TRACE(SeedTrace(seed));
  std::mt19937_64 rng(seed);
  const KeyMaker keys(index_->traits().byte_keys, Scale(4000));
  ASSERT_NO_FATAL_FAILURE(Mutate(rng, keys, Scale(3000)));
  for (int i = 0; i < 50; ++i) {
    const std::string start = i == 0 ? std::string() : keys(rng);
    const size_t max = 1 + rng() % 100;
    std::vector<std::string> got;
    size_t n = 0;
    ASSERT_TRUE(index_
                    ->reverse_scan(start, max,
                                   [&](std::string_view k, std::string_view) {
                                     got.emplace_back(k);
                                     return true;
                                   },
                                   &n)
                    .ok());
    std::vector<std::string> want;
    auto m = start.empty() ? model_.end() : model_.upper_bound(start);
    while (m != model_.begin() && want.size() < max) want.push_back((--m)->first);
    ASSERT_EQ(got, want) << "reverse_scan from " << start.size() << "-byte start, max " << max;
    ASSERT_EQ(n, want.size());
  }
}

// Keys over the whole 64-bit range and at its ends (and, for byte-key indexes, long runs of
// 0xff and 0x00): the default reverse_scan's windows grow from one unit to the whole space.
TEST_P(IteratorTest, BackwardOverSparseKeysAndEnds) {
  if (!index_->traits().ordered) GTEST_SKIP() << "unordered";
  const uint64_t seed = TestSeed(31);
  SCOPED_TRACE(SeedTrace(seed));
  std::mt19937_64 rng(seed);
  std::vector<std::string> keys = {IntK(0), IntK(1), IntK(2), IntK(UINT64_MAX),
                                   IntK(UINT64_MAX - 1), IntK(1ull << 63)};
  for (int i = 0; i < 300; ++i) keys.push_back(IntK(rng() >> (rng() % 64)));
  if (index_->traits().byte_keys) {
    keys.insert(keys.end(), {std::string(1, '\xff'), std::string(12, '\xff'),
                             std::string(1, '\x01'), std::string("a\0\0", 3), "a",
                             std::string(9, '\xff') + "x"});
  }
  for (const std::string& k : keys) {
    const std::string v = Val(rng());
    ASSERT_TRUE(index_->upsert(k, v).ok());
    model_[k] = v;
  }
  for (size_t batch : {1, 3, 64}) {
    IteratorOptions o;
    o.batch_size = batch;
    ASSERT_NO_FATAL_FAILURE(CheckFullWalks(*index_, model_, o));
  }
  for (int i = 0; i < 40; ++i) {
    ASSERT_NO_FATAL_FAILURE(
        CheckRandomMoves(*index_, model_, IteratorOptions(), keys[rng() % keys.size()], rng));
  }
}

TEST_P(IteratorTest, ClosedIndexInvalidatesIterators) {
  ASSERT_TRUE(index_->insert(IntK(1), Val(1)).ok());
  ASSERT_TRUE(index_->insert(IntK(2), Val(2)).ok());
  IteratorOptions o;
  o.batch_size = 1;
  std::unique_ptr<Iterator> it = index_->NewIterator(o);
  it->SeekToFirst();
  ASSERT_TRUE(it->Valid());
  ASSERT_TRUE(index_->close().ok());
  it->Next();
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().IsInvalidArgument()) << it->status().ToString();
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().IsInvalidArgument());
  index_.reset();  // the index object gone too: the handle still answers
  it->Seek(IntK(1));
  EXPECT_TRUE(it->status().IsInvalidArgument());
}

TEST_P(IteratorTest, UnorderedFullWalk) {
  if (index_->traits().ordered) GTEST_SKIP() << "ordered: see AgainstModelInLockstep";
  std::mt19937_64 rng(TestSeed(5));
  ASSERT_NO_FATAL_FAILURE(Mutate(rng, KeyMaker(index_->traits().byte_keys, 3000), 2000));
  std::unique_ptr<Iterator> it = index_->NewIterator(IteratorOptions());
  Model seen;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    ASSERT_TRUE(seen.emplace(it->key(), it->value()).second) << "a key twice";
  }
  ASSERT_TRUE(it->status().ok());
  EXPECT_EQ(seen, model_);
  it->Seek(IntK(1));
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().IsNotSupported());
  it->SeekToLast();
  EXPECT_TRUE(it->status().IsNotSupported());
  it->SeekToFirst();
  if (it->Valid()) {
    it->Prev();
    EXPECT_TRUE(it->status().IsNotSupported());
  }
}

TEST_P(IteratorTest, ExistsCountLookupInto) {
  std::mt19937_64 rng(TestSeed(9));
  const KeyMaker keys(index_->traits().byte_keys, 1000);
  ASSERT_NO_FATAL_FAILURE(Mutate(rng, keys, 800));
  uint64_t n = 0;
  ASSERT_TRUE(index_->count(&n).ok());
  EXPECT_EQ(n, model_.size());
  char buf[64];
  for (int i = 0; i < 200; ++i) {
    const std::string k = keys(rng);
    const auto m = model_.find(k);
    EXPECT_EQ(index_->exists(k).ok(), m != model_.end());
    size_t size = 0;
    const Status s = index_->lookup_into(k, std::span<char>(buf, sizeof buf), &size);
    ASSERT_EQ(s.ok(), m != model_.end()) << s.ToString();
    if (m == model_.end()) {
      EXPECT_TRUE(s.IsNotFound());
      continue;
    }
    EXPECT_EQ(std::string_view(buf, size), m->second);
    const Status small = index_->lookup_into(k, std::span<char>(buf, size - 1), &size);
    EXPECT_TRUE(small.IsInvalidArgument()) << small.ToString();
    EXPECT_EQ(size, m->second.size());
  }
  ASSERT_TRUE(index_->close().ok());
  EXPECT_TRUE(index_->count(&n).IsInvalidArgument());
  EXPECT_TRUE(index_->exists(IntK(1)).IsInvalidArgument());
}

// A write from inside a scan callback of the same index is refused (Busy) and the scan
// goes on; before the guard, the indexes holding their reader lock through the callback
// deadlocked here. Reads of the same index and writes of another index go through.
TEST_P(IteratorTest, WriteFromScanCallbackIsRefusedNotDeadlocked) {
  for (uint64_t k = 1; k <= 20; ++k) ASSERT_TRUE(index_->insert(IntK(k), Val(k)).ok());
  Options o;
  o.pool_size = 8ull << 20;
  auto other = CreateIndex(GetParam(), dir_.file("other"), o);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  size_t visits = 0;
  auto writer = [&](std::string_view k, std::string_view) {
    ++visits;
    EXPECT_TRUE(index_->insert(IntK(1000 + visits), Val(1)).IsBusy());
    EXPECT_TRUE(index_->update(k, Val(2)).IsBusy());
    EXPECT_TRUE(index_->upsert(k, Val(3)).IsBusy());
    EXPECT_TRUE(index_->remove(k).IsBusy());
    EXPECT_TRUE(other.value()->upsert(k, Val(4)).ok());
    return true;
  };
  if (index_->traits().ordered) {
    size_t n = 0;
    ASSERT_TRUE(index_->scan_checked(IntK(0), SIZE_MAX, writer, &n).ok());
    EXPECT_EQ(n, 20u);
    ASSERT_TRUE(index_->reverse_scan({}, 5, writer, &n).ok());
    EXPECT_EQ(n, 5u);
  }
  visits = 0;
  ASSERT_TRUE(index_->for_each(writer).ok());
  EXPECT_EQ(visits, 20u);
  // The guard ends with the scan: writes go through again, and between an iterator's moves.
  ASSERT_TRUE(index_->insert(IntK(999), Val(1)).ok());
  IteratorOptions io;
  io.batch_size = 3;
  std::unique_ptr<Iterator> it = index_->NewIterator(io);
  size_t removed = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    ASSERT_TRUE(index_->remove(it->key()).ok());
    ++removed;
  }
  EXPECT_TRUE(it->status().ok());
  EXPECT_EQ(removed, 21u);
  uint64_t left = 1;
  ASSERT_TRUE(index_->count(&left).ok());
  EXPECT_EQ(left, 0u);
}

INSTANTIATE_TEST_SUITE_P(Registry, IteratorTest, ::testing::ValuesIn(Names()),
                         pmindex::testing::IndexParamName);

}  // namespace
}  // namespace pmindex::testing
