// The volatile ART's optimistic lock coupling with every operation at once on the same keys:
// threads insert, remove, update, look up and scan one small key space, so nodes grow,
// shrink, collapse and split their prefixes under readers and writers of the same slots.
// Two key families: three bytes (a Node256 under each first byte, shrinking to Node48 and
// Node16 as keys go) and a 14-byte shared prefix followed by a decimal number (prefixes
// longer than a node stores, keys that are prefixes of others: end slots).
// The model: insert and remove are conditional, so for every key the successful inserts
// minus the successful removes over all threads is 1 if the key is there at the end and 0
// if not. Every value seen carries its key; every scan rises. Run under TSan too.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/test_util.h"
#include "radix/art/art.h"

namespace pmindex::testing {
namespace {

constexpr uint64_t kFamily = 3000;  // keys per family

std::string Key(uint64_t id) {
  if (id < kFamily) {
    return std::string{'\x01', static_cast<char>(id >> 8), static_cast<char>(id & 0xFF)};
  }
  return "shared-prefix-" + std::to_string(id - kFamily);
}
// A value names its key id and the writer's sequence number.
std::string Value(uint64_t id, uint64_t seq) {
  return std::to_string(id) + ":" + std::to_string(seq);
}
bool ValueOf(std::string_view value, uint64_t id) {
  const std::string want = std::to_string(id) + ":";
  return value.substr(0, want.size()) == want;
}

struct Counts {
  std::vector<int64_t> net;  // successful inserts - successful removes, per key id
  uint64_t failures = 0;
  std::string first_failure;
};

void Fail(Counts& c, const std::string& what) {
  if (c.failures++ == 0) c.first_failure = what;
}

void Scan(radix::Art& tree, std::mt19937_64& rng, Counts& c) {
  const uint64_t from = rng() % (2 * kFamily);
  std::string prev;
  bool first = true;
  tree.scan(Key(from), 1 + rng() % 40, [&](std::string_view k, std::string_view v) {
    if (!first && k <= prev) Fail(c, "scan keys do not rise at " + std::string(k));
    if (k < Key(from)) Fail(c, "scan key below its start");
    first = false;
    prev.assign(k);
    // The value's id must name this key.
    const size_t colon = v.find(':');
    if (colon == std::string_view::npos ||
        Key(std::stoull(std::string(v.substr(0, colon)))) != k)
      Fail(c, "scan value of another key at " + std::string(k));
    return true;
  });
}

void Worker(radix::Art& tree, uint64_t seed, uint64_t ops, Counts& c) {
  std::mt19937_64 rng(seed);
  std::string value;
  for (uint64_t i = 0; i < ops; ++i) {
    // Half the time a key near others' recent keys: same nodes, same slots.
    const uint64_t id =
        rng() % 2 == 0 ? rng() % (2 * kFamily) : (i * 7 + rng() % 64) % (2 * kFamily);
    const std::string key = Key(id);
    const unsigned op = rng() % 100;
    if (op < 35) {
      const Status s = tree.insert(key, Value(id, i));
      if (s.ok()) ++c.net[id];
      else if (!s.IsAlreadyExists()) Fail(c, "insert: " + s.ToString());
    } else if (op < 65) {
      const Status s = tree.remove(key);
      if (s.ok()) --c.net[id];
      else if (!s.IsNotFound()) Fail(c, "remove: " + s.ToString());
    } else if (op < 75) {
      const Status s = tree.update(key, Value(id, i) + std::string(rng() % 3, 'x'));
      if (!s.ok() && !s.IsNotFound()) Fail(c, "update: " + s.ToString());
    } else if (op < 92) {
      const Status s = tree.lookup(key, &value);
      if (s.ok() && !ValueOf(value, id)) Fail(c, "lookup of " + key + " read " + value);
      if (!s.ok() && !s.IsNotFound()) Fail(c, "lookup: " + s.ToString());
    } else {
      Scan(tree, rng, c);
    }
  }
}

TEST(ArtConcurrentTest, EveryOperationOnSharedKeys) {
  radix::Art tree;
  const unsigned threads = Sanitized() ? 3 : 4;
  const uint64_t ops = Scale(200000);
  const uint64_t seed = std::random_device{}();
  std::vector<Counts> counts(threads);
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    counts[t].net.assign(2 * kFamily, 0);
    workers.emplace_back(Worker, std::ref(tree), seed + t, ops, std::ref(counts[t]));
  }
  for (auto& w : workers) w.join();
  for (unsigned t = 0; t < threads; ++t)
    EXPECT_EQ(counts[t].failures, 0u) << "seed " << seed << " thread " << t << ": "
                                      << counts[t].first_failure;
  ASSERT_TRUE(tree.verify().ok()) << "seed " << seed << ": " << tree.verify().ToString();
  std::string value;
  uint64_t present = 0;
  for (uint64_t id = 0; id < 2 * kFamily; ++id) {
    int64_t net = 0;
    for (const Counts& c : counts) net += c.net[id];
    const Status s = tree.lookup(Key(id), &value);
    ASSERT_EQ(net, s.ok() ? 1 : 0) << "seed " << seed << " key id " << id;
    if (s.ok()) {
      ++present;
      EXPECT_TRUE(ValueOf(value, id)) << "seed " << seed << " key id " << id;
    }
  }
  EXPECT_EQ(tree.scan("", SIZE_MAX, [](std::string_view, std::string_view) { return true; }),
            present);
  std::printf("seed %llu: %llu keys left, %llu restarts\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(present),
              static_cast<unsigned long long>(tree.restarts()));
}

}  // namespace
}  // namespace pmindex::testing
