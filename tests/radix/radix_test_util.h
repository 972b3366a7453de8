// Helpers for the radix-tree tests: key generators (integer distributions of the WORT paper
// and byte-string shapes) and opening an index by name on a temporary pool.
#ifndef PMINDEX_TESTS_RADIX_RADIX_TEST_UTIL_H_
#define PMINDEX_TESTS_RADIX_RADIX_TEST_UTIL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "pm/mix64.h"
#include "pmindex/index.h"

namespace pmindex::testing {

enum class KeyShape { kDense, kSparse, kClustered, kRandomBytes, kSharedPrefix, kPrefixChains };

inline const char* KeyShapeName(KeyShape s) {
  switch (s) {
    case KeyShape::kDense: return "dense";
    case KeyShape::kSparse: return "sparse";
    case KeyShape::kClustered: return "clustered";
    case KeyShape::kRandomBytes: return "random_bytes";
    case KeyShape::kSharedPrefix: return "shared_prefix";
    case KeyShape::kPrefixChains: return "prefix_chains";
  }
  return "?";
}

// Draws keys of one shape; the universe is sized so that a run sees repeats (updates,
// failed inserts, removes of present keys).
class KeyGen {
 public:
  KeyGen(KeyShape shape, uint64_t seed, uint64_t universe)
      : shape_(shape), rng_(seed), universe_(universe) {
    for (int i = 0; i < 64; ++i) cluster_base_.push_back(rng_());
    for (int i = 0; i < 8; ++i) {
      std::string p(1 + rng_() % 60, '\0');
      for (char& c : p) c = static_cast<char>(rng_() % 3 ? 'a' + rng_() % 3 : rng_() % 256);
      prefixes_.push_back(p);
    }
    for (int i = 0; i < 64; ++i) chains_.push_back(RandomBytes(1 + rng_() % 200));
  }

  std::string Next() {
    switch (shape_) {
      case KeyShape::kDense:
        return std::string(IntKey(rng_() % universe_).view());
      case KeyShape::kSparse: {
        // A fixed pseudo-random set of `universe_` 64-bit keys.
        uint64_t i = rng_() % universe_;
        return std::string(IntKey(Mix(i)).view());
      }
      case KeyShape::kClustered: {
        uint64_t i = rng_() % universe_;
        return std::string(IntKey(cluster_base_[i % 64] + i / 64).view());
      }
      case KeyShape::kRandomBytes: {
        std::mt19937_64 g(Mix(rng_() % universe_));
        std::string k(1 + g() % 200, '\0');
        for (char& c : k) c = static_cast<char>(g());
        return k;
      }
      case KeyShape::kSharedPrefix: {
        std::mt19937_64 g(Mix(rng_() % universe_));
        std::string k = prefixes_[g() % prefixes_.size()];
        size_t extra = g() % 12;
        for (size_t j = 0; j < extra; ++j) k.push_back(static_cast<char>(g() % 4 ? 'a' + g() % 4 : g()));
        return k.empty() ? std::string("a") : k;
      }
      case KeyShape::kPrefixChains: {
        // Prefixes of a few long keys: many keys are prefixes of other keys.
        std::mt19937_64 g(Mix(rng_() % universe_));
        const std::string& c = chains_[g() % chains_.size()];
        std::string k = c.substr(0, 1 + g() % c.size());
        if (g() % 4 == 0) k.push_back(static_cast<char>(g()));
        return k;
      }
    }
    return "x";
  }

  static uint64_t Mix(uint64_t x) { return pm::Mix64(x); }

 private:
  std::string RandomBytes(size_t n) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(rng_() % 4 ? 'a' + rng_() % 2 : rng_());
    return s;
  }

  KeyShape shape_;
  std::mt19937_64 rng_;
  uint64_t universe_;
  std::vector<uint64_t> cluster_base_;
  std::vector<std::string> prefixes_;
  std::vector<std::string> chains_;
};

inline Options SmallPoolOptions() {
  Options o;
  o.pool_size = 256ull << 20;
  return o;
}

}  // namespace pmindex::testing

#endif  // PMINDEX_TESTS_RADIX_RADIX_TEST_UTIL_H_
