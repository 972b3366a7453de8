// ForEachChildFrom over a Node48 whose index names runs of bytes (shared leaf arrays): every
// child with a byte >= first is visited once, in byte order, with the first byte of its run
// that is >= first, and a slot whose child was cleared is skipped. Checked against a byte-by-
// byte reference on random run layouts (fixed seed, printed on failure).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "common/test_util.h"
#include "radix/pftree/inner_node.h"

namespace pmindex::testing {
namespace {

using pftree::InnerHeader;
using pftree::Node48;
using pftree::NodeType;

// The children a scan from `first` must visit: a byte is the start of a visit if it names a
// slot that differs from the slot of the byte before (or it is `first`) and the child is set.
std::vector<std::pair<int, uint64_t>> Reference(const Node48& n, int first) {
  std::vector<std::pair<int, uint64_t>> out;
  for (int b = first; b < 256; ++b) {
    const uint8_t slot = n.index[b];
    if (slot == 0) continue;
    if (b > first && n.index[b - 1] == slot) continue;
    if (n.children[slot - 1] != 0) out.emplace_back(b, n.children[slot - 1]);
  }
  return out;
}

TEST(PFTreeNodeTest, Node48VisitsEachRunOnceFromAnyByte) {
  const uint64_t seed = TestSeed(48);
  std::mt19937_64 rng(seed);
  // As large as any node type: ForEachChildFrom's switch covers them all.
  alignas(64) static char block[sizeof(pftree::Node256)];
  Node48& node = *reinterpret_cast<Node48*>(block);
  for (int round = 0; round < 2000; ++round) {
    std::memset(&node, 0, sizeof(node));
    node.h.type = static_cast<uint8_t>(NodeType::kNode48);
    // Runs of 1..40 bytes, with gaps of 0..20 unnamed bytes, over as many slots as fit.
    int b = static_cast<int>(rng() % 20), slot = 0;
    while (b < 256 && slot < 48) {
      const int len = 1 + static_cast<int>(rng() % (round % 2 == 0 ? 40 : 3));
      ++slot;
      for (int i = b; i < std::min(256, b + len); ++i) node.index[i] = static_cast<uint8_t>(slot);
      // Some slots' children were cleared (their run keeps naming them).
      node.children[slot - 1] = rng() % 8 == 0 ? 0 : (uint64_t{1000} + slot) * 64 + 1;
      b += len + static_cast<int>(rng() % (round % 3 == 0 ? 1 : 21));
    }
    node.h.count = static_cast<uint8_t>(slot);
    const int first = static_cast<int>(rng() % 256);
    std::vector<std::pair<int, uint64_t>> got;
    const size_t stop_after = rng() % 4 == 0 ? 1 + rng() % 5 : SIZE_MAX;
    const bool all = pftree::ForEachChildFrom(&node.h, first, [&](uint8_t byte, uint64_t ref) {
      got.emplace_back(byte, ref);
      return got.size() < stop_after;
    });
    std::vector<std::pair<int, uint64_t>> want = Reference(node, first);
    if (want.size() > stop_after) want.resize(stop_after);
    ASSERT_EQ(got, want) << "seed " << seed << " round " << round << " first " << first;
    ASSERT_EQ(all, got.size() != stop_after) << "seed " << seed << " round " << round;  // fn stopped it
  }
}

}  // namespace
}  // namespace pmindex::testing
