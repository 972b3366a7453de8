// Random numbers and key-id distributions of the workbench, following YCSB.
//
// A distribution draws key *ids* (0, 1, 2, ...); keys.h turns an id into key bytes. All
// generators are deterministic functions of their Rng, so a single-threaded run with a fixed
// seed replays the same operation stream on every index.
//
// Thread safety: none; every worker thread owns its Rng and generators.
#ifndef PMINDEX_BENCH_GENERATORS_H_
#define PMINDEX_BENCH_GENERATORS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "pm/mix64.h"

namespace pmindex::bench {

// xoshiro256**, seeded through splitmix64.
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 random bits.
  double next_double() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, n), n > 0 (Lemire's multiply-shift; bias below 2^-64 * n).
  uint64_t uniform(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

using pm::Mix64;  // src/pm/mix64.h
// YCSB's Utils.fnvhash64 (FNV-1a over the 8 bytes of v, then absolute value as a Java long).
uint64_t FnvHash64(uint64_t v);

// sum_{i=1..n} i^-theta. Exact for n <= 2^20, Euler-Maclaurin beyond (relative error < 1e-12).
double Zeta(uint64_t n, double theta);
// sum_{i=from+1..to} i^-theta (YCSB's incremental zeta).
double ZetaRange(uint64_t from, uint64_t to, double theta);

// YCSB's ZipfianGenerator (Gray et al., "Quickly generating billion-record synthetic
// databases"): item 0 is the most popular; P(i) = (i+1)^-theta / zeta(n). theta in (0, 1).
class ZipfianGenerator {
 public:
  ZipfianGenerator(uint64_t items, double theta);
  ZipfianGenerator(uint64_t items, double theta, double zetan);
  uint64_t next(Rng& rng) const;
  // Draws over [0, items) where `items` may have grown since the last call (zeta is extended
  // incrementally, as YCSB does for its "latest" generator). Shrinking is not supported.
  uint64_t next(Rng& rng, uint64_t items);
  uint64_t items() const { return items_; }
  double zetan() const { return zetan_; }

 private:
  void set_eta();
  uint64_t items_;
  double theta_, alpha_, zeta2theta_, zetan_, eta_;
};

// YCSB's ScrambledZipfianGenerator: a zipfian draw over 10^10 items, hashed (FNV-64) onto
// [0, n). Popular items land on random keys. Because 10^10 items fold onto n keys, the skew
// seen by n keys is flatter than Zipf(n) (doc/bench.md); this is what YCSB, and so every
// paper measured with YCSB traces, does.
class ScrambledZipfianGenerator {
 public:
  static constexpr uint64_t kItemCount = 10'000'000'000ull;
  static constexpr double kDefaultTheta = 0.99;
  static constexpr double kZetanForDefaultTheta = 26.46902820178302;  // YCSB's constant
  ScrambledZipfianGenerator(uint64_t n, double theta);
  uint64_t next(Rng& rng) const { return FnvHash64(zipf_.next(rng)) % n_; }
  uint64_t n() const { return n_; }

 private:
  uint64_t n_;
  ZipfianGenerator zipf_;
};

// YCSB's SkewedLatestGenerator: the most recently inserted ids are the most popular.
// next(rng, count) = count - 1 - zipf(count), over ids [0, count).
class SkewedLatestGenerator {
 public:
  explicit SkewedLatestGenerator(uint64_t initial_count, double theta = 0.99)
      : zipf_(initial_count < 2 ? 2 : initial_count, theta) {}
  uint64_t next(Rng& rng, uint64_t count) {
    if (count < 2) return 0;
    const uint64_t z = zipf_.next(rng, count);
    return z >= count ? 0 : count - 1 - z;
  }

 private:
  ZipfianGenerator zipf_;
};

// The request distribution a run uses (--dist).
struct Distribution {
  enum class Kind { kUniform, kZipfian, kLatest, kSequential };
  Kind kind = Kind::kZipfian;
  double theta = 0.99;
  // "uniform", "zipfian" (or "zipfian:0.8" for another theta), "latest", "sequential".
  std::string name() const;
};
// Parses --dist; false with *error set on a bad name or a theta outside (0, 1).
bool ParseDistribution(std::string_view text, Distribution* dist, std::string* error);

}  // namespace pmindex::bench

#endif  // PMINDEX_BENCH_GENERATORS_H_
