// Distribution tests: the zipfian, scrambled zipfian, latest and uniform generators draw the
// shares their definitions predict, and are deterministic for a seed.
#include "bench/generators.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/test_util.h"

namespace pmindex::bench {
namespace {

using pmindex::testing::Scale;
using pmindex::testing::SeedTrace;
using pmindex::testing::TestSeed;

// P(X < k) for YCSB's zipfian draw (Gray et al.): X = 0 when u*zetan < 1, X = 1 when it is
// below 1 + 0.5^theta, else X = floor(n * (eta*u - eta + 1)^(1/(1-theta))). The method
// approximates Zipf's law in closed form; it is what YCSB draws, so it is what we test.
double GrayCdf(uint64_t n, double theta, double zetan, uint64_t k) {
  if (k == 0) return 0;
  if (k == 1) return 1 / zetan;
  const double two = (1 + std::pow(0.5, theta)) / zetan;
  const double eta = (1 - std::pow(2.0 / static_cast<double>(n), 1 - theta)) /
                     (1 - (1 + std::pow(0.5, theta)) / zetan);
  const double uk =
      (std::pow(static_cast<double>(k) / static_cast<double>(n), 1 - theta) - 1 + eta) / eta;
  return std::min(1.0, std::max(uk, two));
}

// Share of all draws that fell on the `top` most drawn values.
double TopShare(std::vector<uint64_t> counts, size_t top, uint64_t total) {
  std::sort(counts.begin(), counts.end(), std::greater<>());
  uint64_t sum = 0;
  for (size_t i = 0; i < top && i < counts.size(); i++) sum += counts[i];
  return static_cast<double>(sum) / static_cast<double>(total);
}

TEST(ZetaTest, ExactAndEulerMaclaurinAgree) {
  const uint64_t n = (uint64_t{1} << 20) + 12345;  // just past the exact limit
  double exact = 0;
  for (uint64_t i = 1; i <= n; i++) exact += std::pow(static_cast<double>(i), -0.99);
  EXPECT_NEAR(Zeta(n, 0.99), exact, exact * 1e-10);
  EXPECT_NEAR(ZetaRange(1000, 5000, 0.8), Zeta(5000, 0.8) - Zeta(1000, 0.8), 1e-9);
}

TEST(ZetaTest, MatchesYcsbConstant) {
  // YCSB hard-codes zeta(10^10, 0.99) = 26.46902820178302 for its scrambled zipfian.
  EXPECT_NEAR(Zeta(ScrambledZipfianGenerator::kItemCount, 0.99), 26.46902820178302, 1e-6);
}

TEST(ZipfianTest, TopOnePercentDrawsZipfShare) {
  const uint64_t seed = TestSeed(11);
  SCOPED_TRACE(SeedTrace(seed));
  const uint64_t n = 10000, draws = Scale(2000000);
  for (double theta : {0.99, 0.8, 0.5}) {
    SCOPED_TRACE("theta=" + std::to_string(theta));
    ZipfianGenerator zipf(n, theta);
    Rng rng(seed);
    std::vector<uint64_t> counts(n, 0);
    uint64_t top = 0, first = 0;
    for (uint64_t i = 0; i < draws; i++) {
      const uint64_t v = zipf.next(rng);
      ASSERT_LT(v, n);
      counts[v]++;
      top += v < n / 100;
      first += v == 0;
    }
    // The first 1% of items are the 1% most drawn and take YCSB's share of the draws,
    // within 2.5% of Zipf's law (zeta(n/100)/zeta(n)) that the method approximates.
    const double expected = GrayCdf(n, theta, Zeta(n, theta), n / 100);
    EXPECT_NEAR(static_cast<double>(top) / draws, expected, 0.004);
    EXPECT_NEAR(TopShare(counts, n / 100, draws), expected, 0.004);
    EXPECT_NEAR(expected, Zeta(n / 100, theta) / Zeta(n, theta), 0.025);
    EXPECT_NEAR(static_cast<double>(first) / draws, 1.0 / Zeta(n, theta), 0.003);
  }
}

TEST(ScrambledZipfianTest, TopOnePercentOfKeysDrawsYcsbShare) {
  const uint64_t seed = TestSeed(12);
  SCOPED_TRACE(SeedTrace(seed));
  const uint64_t n = 10000, draws = Scale(4000000);
  ScrambledZipfianGenerator gen(n, 0.99);
  Rng rng(seed);
  std::vector<uint64_t> counts(n, 0);
  for (uint64_t i = 0; i < draws; i++) {
    const uint64_t v = gen.next(rng);
    ASSERT_LT(v, n);
    counts[v]++;
  }
  // Expected per-key probabilities, computed independently of the generator: YCSB draws
  // item i of 10^10 (+1) with the probability of its zipfian method and maps it to
  // fnv64(i) % n. The first million items are placed exactly; the remaining mass (about 46%)
  // is spread over ~10^6 items per key, so evenly.
  const double zetan = 26.46902820178302;
  const uint64_t items = ScrambledZipfianGenerator::kItemCount + 1;
  std::vector<double> expected(n, 0);
  const uint64_t exact_items = 1000000;
  double placed = 0;
  for (uint64_t i = 0; i < exact_items; i++) {
    const double p = GrayCdf(items, 0.99, zetan, i + 1) - GrayCdf(items, 0.99, zetan, i);
    expected[FnvHash64(i) % n] += p;
    placed += p;
  }
  for (double& p : expected) p += (1 - placed) / n;
  std::sort(expected.begin(), expected.end(), std::greater<>());
  double expected_top = 0;
  for (uint64_t i = 0; i < n / 100; i++) expected_top += expected[i];
  const double observed_top = TopShare(counts, n / 100, draws);
  EXPECT_NEAR(observed_top, expected_top, 0.005);
  // Still clearly skewed: far above the 1% a uniform draw gives.
  EXPECT_GT(observed_top, 0.15);
}

TEST(LatestTest, RecentKeysAreHot) {
  const uint64_t seed = TestSeed(13);
  SCOPED_TRACE(SeedTrace(seed));
  const uint64_t n = 10000, draws = Scale(2000000);
  SkewedLatestGenerator gen(n);
  Rng rng(seed);
  uint64_t recent = 0, newest = 0;
  for (uint64_t i = 0; i < draws; i++) {
    const uint64_t v = gen.next(rng, n);
    ASSERT_LT(v, n);
    recent += v >= n - n / 100;
    newest += v == n - 1;
  }
  // The newest 1% of ids draw the zipfian share of the first 1% of ranks.
  EXPECT_NEAR(static_cast<double>(recent) / draws, GrayCdf(n, 0.99, Zeta(n, 0.99), n / 100),
              0.004);
  EXPECT_NEAR(static_cast<double>(newest) / draws, 1.0 / Zeta(n, 0.99), 0.003);
}

TEST(LatestTest, FollowsAGrowingKeyCount) {
  const uint64_t seed = TestSeed(14);
  SCOPED_TRACE(SeedTrace(seed));
  SkewedLatestGenerator gen(100);
  Rng rng(seed);
  uint64_t newest_hits = 0;
  for (uint64_t count = 100; count < 20000; count++) {
    const uint64_t v = gen.next(rng, count);
    ASSERT_LT(v, count);
    newest_hits += v == count - 1;
  }
  // The newest id stays the most popular as the range grows (about 1/zeta ~ 10% of draws).
  EXPECT_GT(newest_hits, 19900 / 20);
}

TEST(UniformTest, EvenlySpread) {
  const uint64_t seed = TestSeed(15);
  SCOPED_TRACE(SeedTrace(seed));
  Rng rng(seed);
  const uint64_t buckets = 100, draws = Scale(1000000);
  std::vector<uint64_t> counts(buckets, 0);
  for (uint64_t i = 0; i < draws; i++) counts[rng.uniform(buckets)]++;
  for (uint64_t c : counts) {
    EXPECT_NEAR(static_cast<double>(c), static_cast<double>(draws) / buckets,
                0.08 * static_cast<double>(draws) / buckets);
  }
  for (int i = 0; i < 10000; i++) {
    const double d = rng.next_double();
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
  }
}

TEST(GeneratorsTest, DeterministicForASeed) {
  Rng a(42), b(42), c(43);
  ScrambledZipfianGenerator za(1000, 0.99), zb(1000, 0.99);
  bool differs = false;
  for (int i = 0; i < 1000; i++) {
    ASSERT_EQ(za.next(a), zb.next(b));
    differs |= a.next() != c.next();
    b.next();
  }
  EXPECT_TRUE(differs);
}

TEST(GeneratorsTest, FnvHashMatchesYcsb) {
  // Utils.fnvhash64 with Java long arithmetic; fnvhash64(0) is the key of YCSB's famous
  // first record, "user6284781860667377211".
  EXPECT_EQ(FnvHash64(0), 6284781860667377211ull);
  EXPECT_NE(FnvHash64(1), FnvHash64(2));
}

TEST(DistributionTest, ParsesNamesAndRejectsBadOnes) {
  Distribution d;
  std::string err;
  ASSERT_TRUE(ParseDistribution("zipfian:0.5", &d, &err));
  EXPECT_EQ(d.kind, Distribution::Kind::kZipfian);
  EXPECT_DOUBLE_EQ(d.theta, 0.5);
  EXPECT_EQ(d.name(), "zipfian:0.5");
  ASSERT_TRUE(ParseDistribution("latest", &d, &err));
  EXPECT_EQ(d.name(), "latest");
  EXPECT_FALSE(ParseDistribution("zipfian:1.0", &d, &err));
  EXPECT_FALSE(ParseDistribution("zipfian:x", &d, &err));
  EXPECT_FALSE(ParseDistribution("normal", &d, &err));
  EXPECT_NE(err.find("normal"), std::string::npos);
}

}  // namespace
}  // namespace pmindex::bench
