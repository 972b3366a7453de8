// Key generators for the PFtree tests (the model checks are common/model_checker.h).
#ifndef PMINDEX_TESTS_PFTREE_PFTREE_TEST_UTIL_H_
#define PMINDEX_TESTS_PFTREE_PFTREE_TEST_UTIL_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/model_checker.h"
#include "common/test_util.h"
#include "pm/mix64.h"
#include "pmindex/index.h"

namespace pmindex::testing {

enum class Shape { kDense, kSparse, kClustered, kRandomBytes, kSharedPrefix, kPrefixChains, kOneSlot };

inline const char* ShapeName(Shape s) {
  switch (s) {
    case Shape::kDense: return "dense";
    case Shape::kSparse: return "sparse";
    case Shape::kClustered: return "clustered";
    case Shape::kRandomBytes: return "random_bytes";
    case Shape::kSharedPrefix: return "shared_prefix";
    case Shape::kPrefixChains: return "prefix_chains";
    case Shape::kOneSlot: return "one_slot";
  }
  return "?";
}

// Keys of one shape drawn from a universe small enough that runs see repeats.
class KeySource {
 public:
  KeySource(Shape shape, uint64_t seed, uint64_t universe)
      : shape_(shape), rng_(seed), universe_(universe) {
    for (int i = 0; i < 16; ++i) cluster_base_.push_back(rng_());
    for (int i = 0; i < 6; ++i) prefixes_.push_back(Bytes(20 + rng_() % 150, true));
    for (int i = 0; i < 32; ++i) chains_.push_back(Bytes(200, false));
  }

  std::string Next() {
    uint64_t i = rng_() % universe_;
    switch (shape_) {
      case Shape::kDense:
        return std::string(IntKey(i).view());
      case Shape::kSparse:
        return std::string(IntKey(Mix(i)).view());
      case Shape::kClustered:
        return std::string(IntKey(cluster_base_[i % 16] + i / 16).view());
      case Shape::kRandomBytes: {
        std::mt19937_64 r(Mix(i));
        std::string s(1 + r() % 200, '\0');
        for (char& c : s) c = static_cast<char>(r());
        return s;
      }
      case Shape::kSharedPrefix: {
        std::mt19937_64 r(Mix(i));
        std::string s = prefixes_[i % prefixes_.size()];
        size_t extra = r() % 24;
        for (size_t k = 0; k < extra; ++k) s.push_back(static_cast<char>('a' + r() % 4));
        return s;
      }
      case Shape::kOneSlot:
        // Uniform below one fixed first byte: one root slot whose leaf arrays split into
        // runs of bytes (shared leaves in a Node48, then a Node256, then deeper).
        return std::string(IntKey((Mix(i) >> 8) | (uint64_t{0x5A} << 56)).view());
      case Shape::kPrefixChains: {
        // Keys that are prefixes of other keys: cut a shared long string at many lengths.
        const std::string& c = chains_[i % chains_.size()];
        return c.substr(0, 1 + (i / chains_.size()) % c.size());
      }
    }
    return {};
  }
  std::mt19937_64& rng() { return rng_; }

  static uint64_t Mix(uint64_t x) { return pm::Mix64(x); }

 private:
  std::string Bytes(size_t n, bool printable) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(printable ? 'a' + rng_() % 3 : rng_());
    return s;
  }

  Shape shape_;
  std::mt19937_64 rng_;
  uint64_t universe_;
  std::vector<uint64_t> cluster_base_;
  std::vector<std::string> prefixes_;
  std::vector<std::string> chains_;
};

// A value derived from key and a version, 0..63 bytes, so readers can tell a real value.
inline std::string ValueFor(const std::string& key, uint64_t version) {
  std::string v = std::to_string(version) + ":";
  size_t len = (version * 7 + key.size()) % 40;
  for (size_t i = 0; i < len && v.size() < 63; ++i) v.push_back(key[i % key.size()]);
  return v;
}

}  // namespace pmindex::testing

#endif  // PMINDEX_TESTS_PFTREE_PFTREE_TEST_UTIL_H_
