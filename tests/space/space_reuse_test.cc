// Space is given back while a pool stays open: fill a small pool until OutOfSpace, remove a
// third of the keys, and inserts must succeed again without reopening the pool (DESIGN.md
// section 4: "deletes free space, later inserts succeed"). Every removal must succeed even
// in the full pool. The index is checked against a std::map in lockstep and with verify().
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_util.h"
#include "pmindex/index.h"

namespace pmindex {
namespace {

using testing::SeedTrace;
using testing::TempDir;
using testing::TestSeed;

std::vector<std::string> PersistentIndexes() {
  std::vector<std::string> out;
  for (const std::string& name : RegisteredIndexNames()) {
    const IndexRegistration* reg = FindIndex(name);
    if (reg->attach == nullptr || !reg->traits.persistent) continue;
    out.push_back(name);
  }
  return out;
}

std::string Value(uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); }

// Every key the model holds is in the index with its value, and a full scan yields exactly
// the model in order.
void ExpectMatchesModel(Index& index, const std::map<uint64_t, uint64_t>& model) {
  ASSERT_TRUE(index.verify().ok()) << index.verify().ToString();
  for (const auto& [k, v] : model) {
    std::string got;
    ASSERT_TRUE(index.lookup(IntKey(k), &got).ok()) << "key " << k << " lost";
    ASSERT_EQ(got, Value(v)) << "key " << k;
  }
  if (!index.traits().ordered) return;
  auto it = model.begin();
  size_t n = 0;
  bool in_order = true;
  index.scan(IntKey(0).view(), model.size() + 1, [&](std::string_view k, std::string_view v) {
    if (it == model.end() || k.size() != 8 || IntKey::Decode(k) != it->first ||
        v != Value(it->second)) {
      in_order = false;
      return false;
    }
    ++it;
    ++n;
    return true;
  });
  EXPECT_TRUE(in_order) << "scan differs from the model at position " << n;
  EXPECT_EQ(n, model.size());
}

class SpaceReuseTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SpaceReuseTest, RemovingAThirdOfAFullPoolMakesRoomWithoutReopening) {
  const uint64_t seed = TestSeed(7);
  SCOPED_TRACE(SeedTrace(seed));
  TempDir dir;
  Options options;
  options.pool_size = 4ull << 20;
  options.huge_pages = false;
  Result<std::unique_ptr<Index>> created = CreateIndex(GetParam(), dir.file("p.pool"), options);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Index& index = *created.value();
  std::mt19937_64 rng(seed);
  std::map<uint64_t, uint64_t> model;

  // Fill until the pool is full.
  for (uint64_t i = 0;; ++i) {
    ASSERT_LT(i, 10'000'000u) << "a 4 MiB pool never filled up";
    const uint64_t k = rng(), v = rng();
    Status s = index.insert(IntKey(k), Value(v));
    if (s.IsOutOfSpace()) break;
    ASSERT_TRUE(s.ok() || s.IsAlreadyExists()) << s.ToString();
    if (s.ok()) model.emplace(k, v);
  }
  const size_t full = model.size();
  ASSERT_GT(full, 1000u);
  ASSERT_NO_FATAL_FAILURE(ExpectMatchesModel(index, model));

  // Remove every third key: removals must not need space the full pool lacks.
  std::vector<uint64_t> victims;
  size_t pos = 0;
  for (const auto& kv : model) {
    if (pos++ % 3 == 0) victims.push_back(kv.first);
  }
  std::shuffle(victims.begin(), victims.end(), rng);
  for (uint64_t k : victims) {
    Status s = index.remove(IntKey(k));
    ASSERT_TRUE(s.ok()) << "remove of key " << k << " in the full pool: " << s.ToString();
    model.erase(k);
  }
  ASSERT_NO_FATAL_FAILURE(ExpectMatchesModel(index, model));

  // Insert new keys: count those that succeed before the first OutOfSpace.
  const size_t removed = victims.size();
  size_t inserted = 0;
  std::string stop = "no OutOfSpace";
  for (size_t i = 0; i < removed; ++i) {
    const uint64_t k = rng(), v = rng();
    Status s = index.insert(IntKey(k), Value(v));
    if (s.IsOutOfSpace()) {
      stop = s.ToString();
      break;
    }
    ASSERT_TRUE(s.ok() || s.IsAlreadyExists()) << s.ToString();
    if (s.ok()) {
      model.emplace(k, v);
      ++inserted;
    }
  }
  std::printf("%s: %zu keys filled the pool, %zu removed, %zu inserted again before the "
              "first OutOfSpace (%s)\n",
              GetParam().c_str(), full, removed, inserted, stop.c_str());
  EXPECT_GE(inserted, removed / 5) << "the removed keys' space was not given back";
  ASSERT_NO_FATAL_FAILURE(ExpectMatchesModel(index, model));
}

INSTANTIATE_TEST_SUITE_P(Registry, SpaceReuseTest, ::testing::ValuesIn(PersistentIndexes()),
                         pmindex::testing::IndexParamName);

}  // namespace
}  // namespace pmindex
