// RNTree's slot line, built in registers by CommitSlots, against the reference construction
// (a zeroed copy, the live slots copied, a memmove opening or closing the gap, seq + 1, the
// CRC of the copy): byte-identical for random lines, positions and edits, into both slot
// lines, for RNTree and RNTree+DS (whose transient line must equal it too).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <numeric>
#include <random>

#include "btree/hybrid/rntree_leaf.h"
#include "common/test_util.h"
#include "pm/persist.h"

namespace pmindex::testing {
namespace {

using btree::RNSlotLine;
using btree::RNTreeLeaf;

// The construction CommitSlots replaced.
RNSlotLine Reference(const RNSlotLine& base, int edit, size_t p, int e) {
  const size_t n = base.count;
  RNSlotLine s{};
  std::memcpy(s.slot, base.slot, n);
  size_t m = n;
  if (edit == 2) {  // remove
    std::memmove(s.slot + p, s.slot + p + 1, n - p - 1);
    --m;
    s.slot[m] = 0;
  } else if (edit == 0) {  // set
    s.slot[p] = static_cast<uint8_t>(e);
  } else {  // insert
    std::memmove(s.slot + p + 1, s.slot + p, n - p);
    s.slot[p] = static_cast<uint8_t>(e);
    ++m;
  }
  s.count = static_cast<uint8_t>(m);
  s.seq = static_cast<uint8_t>(base.seq + 1);
  s.crc = btree::RNTreeLayout<false>::Crc(s);
  return s;
}

template <bool kDual>
void CheckLines(uint64_t seed) {
  using Layout = btree::RNTreeLayout<kDual>;
  SCOPED_TRACE(SeedTrace(seed));
  std::mt19937_64 rng(seed);
  pm::PersistSettings settings;
  settings.mode = PersistMode::kEadr;
  pm::PersistContext pc(settings);
  auto leaf = std::make_unique<RNTreeLeaf>();
  RNTreeLeaf* l = leaf.get();
  for (int iter = 0; iter < 20000; ++iter) {
    // Random bytes everywhere (the bytes beside the lines must not matter), then a valid
    // truth line: n distinct log indexes, zeros after them, a random seq.
    auto* raw = reinterpret_cast<unsigned char*>(l);
    for (size_t i = 0; i < sizeof(RNTreeLeaf); ++i) raw[i] = static_cast<unsigned char>(rng());
    const uint32_t cur = rng() & 1;
    l->cur = cur;
    l->ds_seq = 0;
    RNSlotLine& base = l->line[cur];
    const int edit = static_cast<int>(rng() % 3);  // 0 set, 1 insert, 2 remove
    const size_t n = edit == 1 ? rng() % RNSlotLine::kSlots : 1 + rng() % RNSlotLine::kSlots;
    uint8_t perm[RNSlotLine::kSlots];
    std::iota(perm, perm + RNSlotLine::kSlots, 0);
    std::shuffle(perm, perm + RNSlotLine::kSlots, rng);
    std::memset(base.slot, 0, sizeof(base.slot));
    std::memcpy(base.slot, perm, n);
    base.count = static_cast<uint8_t>(n);
    base.seq = static_cast<uint8_t>(rng());
    base.crc = Layout::Crc(base);
    const size_t p = edit == 1 ? rng() % (n + 1) : rng() % n;
    const int e = edit == 2 ? -1 : static_cast<int>(rng() % RNSlotLine::kSlots);
    const RNSlotLine want = Reference(base, edit, p, e);
    const size_t m = edit == 2 ? n - 1 : edit == 0 ? n : n + 1;
    const auto how = edit == 0   ? Layout::Edit::kSet
                     : edit == 1 ? Layout::Edit::kInsert
                                 : Layout::Edit::kRemove;
    Layout::CommitSlots(pc, l, &base, how, p, e, m);
    ASSERT_EQ(l->cur, 1 - cur);
    ASSERT_EQ(std::memcmp(&l->line[1 - cur], &want, sizeof(want)), 0)
        << "iteration " << iter << " edit " << edit << " n " << n << " p " << p;
    ASSERT_TRUE(Layout::Valid(l->line[1 - cur]));
    if constexpr (kDual) {
      ASSERT_EQ(std::memcmp(&l->transient, &want, sizeof(want)), 0) << "iteration " << iter;
    }
  }
}

TEST(RNTreeSlotLineTest, MatchesReferenceConstruction) { CheckLines<false>(TestSeed(77)); }
TEST(RNTreeSlotLineTest, MatchesReferenceConstructionDual) { CheckLines<true>(TestSeed(78)); }

}  // namespace
}  // namespace pmindex::testing
