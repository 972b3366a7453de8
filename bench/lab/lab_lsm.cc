// The LSM-style experiments of the lab: E6 (move a DRAM buffer C0 into a free persistent run
// of level L0) and E7 (merge the four runs of a level into one run of the next), under the
// failure-atomicity strategies of Götze et al.: a PMDK transaction over the data, the data
// persisted by hand with only the run pointer in a PMDK transaction ("individual FA"), the
// data persisted by hand and the run pointer as one persisted 8-byte store ("hand"), and
// nothing persisted ("none"). All runs live in a libpmemobj pool in the pool directory.
//
// Crash argument (hand, pmdk-ptr): a run's pairs are durable before the run pointer that
// makes them valid moves past them; a crash in between leaves the run free (Figure 4).
#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_map>

#include "bench/lab/lab_internal.h"

#ifdef PMINDEX_HAVE_PMEMOBJ
#include <libpmemobj.h>
#include <unistd.h>
#endif

namespace pmindex::lab {

#ifdef PMINDEX_HAVE_PMEMOBJ

namespace {

struct Pair {
  primitives::Key key;
  primitives::Value value;
};
static_assert(sizeof(Pair) == 24);

enum class Fa { kNone, kHand, kPmdkPtr, kPmdkTx };
const char* FaName(Fa f) {
  switch (f) {
    case Fa::kNone: return "none";
    case Fa::kHand: return "hand";
    case Fa::kPmdkPtr: return "pmdk-ptr";
    case Fa::kPmdkTx: return "pmdk-tx";
  }
  return "?";
}

// The pmemobj pool: a root object holding the run pointer and the runs.
struct Pool {
  PMEMobjpool* pop = nullptr;
  char* root = nullptr;
  std::string path;
  bool Open(const std::string& dir) {
    setenv("PMEM_IS_PMEM_FORCE", "1", 0);  // /dev/shm: flush with clwb, not msync
    path = dir + "/pmindex-lab-" + std::to_string(::getpid()) + ".obj";
    pop = pmemobj_create(path.c_str(), "pmindex-lab", 64u << 20, 0600);
    if (pop == nullptr) {
      std::fprintf(stderr, "pmindex lab: pmemobj_create %s: %s\n", path.c_str(), pmemobj_errormsg());
      return false;
    }
    root = static_cast<char*>(pmemobj_direct(pmemobj_root(pop, 32u << 20)));
    return root != nullptr;
  }
  ~Pool() {
    if (pop != nullptr) pmemobj_close(pop);
    if (!path.empty()) ::unlink(path.c_str());
  }
  uint64_t* run_ptr() { return reinterpret_cast<uint64_t*>(root); }
  Pair* area(size_t pair_index) { return reinterpret_cast<Pair*>(root + 64) + pair_index; }
};

struct Costs {
  uint64_t bytes = 0;  // data and pointer stores, plus bytes a PMDK transaction snapshots
};

// Runs `body` in a PMDK transaction after snapshotting `ranges`.
template <class F>
void InTx(Pool& pool, std::initializer_list<std::pair<void*, size_t>> ranges, Costs& c, F body) {
  if (pmemobj_tx_begin(pool.pop, nullptr, TX_PARAM_NONE) != 0) std::abort();
  for (auto [p, n] : ranges) {
    if (pmemobj_tx_add_range_direct(p, n) != 0) std::abort();
    c.bytes += n;
  }
  body();
  pmemobj_tx_commit();
  pmemobj_tx_end();
}

// Writes `n` sorted pairs to `dst` (a free run) and advances the run pointer, under `fa`.
void WriteRun(Pool& pool, pm::PersistContext& ctx, Fa fa, const Pair* src, size_t n, Pair* dst,
              Costs& c) {
  const size_t bytes = n * sizeof(Pair);
  c.bytes += bytes + 8;
  uint64_t* ptr = pool.run_ptr();
  switch (fa) {
    case Fa::kNone:
      std::memcpy(dst, src, bytes);
      *ptr += 1;
      break;
    case Fa::kHand:
      std::memcpy(dst, src, bytes);
      ctx.persist(dst, bytes);
      *ptr += 1;
      ctx.persist(ptr, 8);
      break;
    case Fa::kPmdkPtr:
      std::memcpy(dst, src, bytes);
      ctx.persist(dst, bytes);
      InTx(pool, {{ptr, 8}}, c, [&] { *ptr += 1; });
      break;
    case Fa::kPmdkTx:
      InTx(pool, {{dst, bytes}, {ptr, 8}}, c, [&] {
        std::memcpy(dst, src, bytes);
        *ptr += 1;
      });
      break;
  }
}

// The counted pass's figures; PMDK's own flushes and fences bypass the persist seam, so a
// pmdk-tx row has none (-1) and a pmdk-ptr row only those of its hand-persisted data.
void SetCounts(Row* row, const Costs& c, const PersistCounters& d, Fa fa) {
  row->bytes = static_cast<double>(c.bytes);
  const bool seen = fa != Fa::kPmdkTx;
  row->flushes = seen ? static_cast<double>(d.flushes) : -1;
  row->fences = seen ? static_cast<double>(d.fences) : -1;
  row->media = seen ? static_cast<double>(d.media_writes) : -1;
}

primitives::Value Val(uint64_t k, uint64_t run) { return {k, run}; }

// One E6 move: fill C0 (sorted map, or hash map sorted at the move) with r fresh keys, then
// write it to the next run of L0.
void MoveOnce(Lab& lab, Pool& pool, pm::PersistContext& ctx, Fa fa, bool sorted_c0, size_t r,
              uint64_t* next_key, std::vector<Pair>& buf, Costs& c) {
  buf.clear();
  if (sorted_c0) {
    std::map<uint64_t, primitives::Value> c0;
    for (size_t i = 0; i < r; ++i) {
      const uint64_t k = lab.rng();
      c0.emplace(k, Val(k, *next_key));
    }
    for (auto& [k, v] : c0) buf.push_back({k, v});
  } else {
    std::unordered_map<uint64_t, primitives::Value> c0;
    c0.reserve(r);
    for (size_t i = 0; i < r; ++i) {
      const uint64_t k = lab.rng();
      c0.emplace(k, Val(k, *next_key));
    }
    for (auto& [k, v] : c0) buf.push_back({k, v});
    std::sort(buf.begin(), buf.end(), [](const Pair& a, const Pair& b) { return a.key < b.key; });
  }
  ++*next_key;
  const uint64_t run = *pool.run_ptr() % 4;
  WriteRun(pool, ctx, fa, buf.data(), buf.size(), pool.area(run * r), c);
}

std::vector<size_t> RunSizes(const Lab& lab) {
  if (lab.opt.quick) return {1024, 4096};
  return {1024, 4096, 16384, 65536};
}

}  // namespace

bool RunE6(Lab& lab) {
  Pool pool;
  if (!pool.Open(lab.opt.pool_dir)) return false;
  std::vector<Pair> buf;
  uint64_t next_key = 0;
  for (size_t run_bytes : RunSizes(lab)) {
    const size_t r = run_bytes / sizeof(Pair);
    lab.Progress("E6 move C0 to a persistent run, %zu B runs", run_bytes);
    const size_t moves = std::max<size_t>(4, lab.iters / 16);
    for (bool sorted_c0 : {true, false}) {
      for (Fa fa : {Fa::kNone, Fa::kHand, Fa::kPmdkPtr, Fa::kPmdkTx}) {
        Costs c;
        std::vector<double> samples;
        for (size_t i = 0; i < moves; ++i) {
          const double t0 = NowNs();
          MoveOnce(lab, pool, lab.timed, fa, sorted_c0, r, &next_key, buf, c);
          samples.push_back(NowNs() - t0);
        }
        Row row;
        row.exp = "E6";
        row.org = sorted_c0 ? "c0-sorted" : "c0-hash+sort";
        row.variant = FaName(fa);
        row.node_bytes = run_bytes;
        row.ns = Median(samples);
        row.ops = moves;
        Costs one;
        const PersistCounters before = lab.counted.thread_counters();
        MoveOnce(lab, pool, lab.counted, fa, sorted_c0, r, &next_key, buf, one);
        lab.counted.drain_media();
        const PersistCounters d = lab.counted.thread_counters() - before;
        SetCounts(&row, one, d, fa);
        lab.rows->push_back(row);
      }
    }
  }
  return true;
}

namespace {

// Merges sorted a and b into out; on equal keys b (the newer run) wins. Returns |out|.
size_t Merge2(const Pair* a, size_t na, const Pair* b, size_t nb, Pair* out) {
  size_t i = 0, j = 0, o = 0;
  while (i < na && j < nb) {
    if (a[i].key < b[j].key) {
      out[o++] = a[i++];
    } else {
      if (a[i].key == b[j].key) ++i;
      out[o++] = b[j++];
    }
  }
  while (i < na) out[o++] = a[i++];
  while (j < nb) out[o++] = b[j++];
  return o;
}

// K-way merge of runs[0..k) (r pairs each); on equal keys the newest run (highest) wins.
size_t MergeK(Pair* const* runs, size_t k, size_t r, Pair* out) {
  size_t pos[8] = {0};
  size_t o = 0;
  for (;;) {
    int best = -1;
    for (size_t q = 0; q < k; ++q) {
      if (pos[q] == r) continue;
      if (best < 0 || runs[q][pos[q]].key <= runs[best][pos[best]].key) best = static_cast<int>(q);
    }
    if (best < 0) return o;
    const uint64_t key = runs[best][pos[best]].key;
    out[o++] = runs[best][pos[best]];
    for (size_t q = 0; q < k; ++q)
      if (pos[q] < r && runs[q][pos[q]].key == key) ++pos[q];
  }
}

struct MergeCase {
  bool kway, buffered;
  Fa fa;
};

// One E7 merge of L0's four runs (r pairs each) into the L1 run `out`; intermediates B1/B2
// (2-way, direct) live in the pool, the DRAM buffer otherwise.
void MergeOnce(Pool& pool, pm::PersistContext& ctx, const MergeCase& mc, size_t r,
               std::vector<Pair>& dram, Costs& c) {
  Pair* in[4] = {pool.area(0), pool.area(r), pool.area(2 * r), pool.area(3 * r)};
  Pair* b1 = pool.area(4 * r);
  Pair* b2 = pool.area(6 * r);
  Pair* out = pool.area(8 * r);
  const bool tx = mc.fa == Fa::kPmdkTx || mc.fa == Fa::kPmdkPtr;
  if (mc.buffered) {
    Pair* t = dram.data();
    size_t n;
    if (mc.kway) {
      n = MergeK(in, 4, r, t);
    } else {
      const size_t n1 = Merge2(in[0], r, in[1], r, t + 4 * r);
      const size_t n2 = Merge2(in[2], r, in[3], r, t + 6 * r);
      n = Merge2(t + 4 * r, n1, t + 6 * r, n2, t);
    }
    WriteRun(pool, ctx, mc.fa == Fa::kPmdkPtr ? Fa::kPmdkTx : mc.fa, t, n, out, c);
    return;
  }
  auto body = [&]() -> size_t {
    if (mc.kway) return MergeK(in, 4, r, out);
    const size_t n1 = Merge2(in[0], r, in[1], r, b1);
    const size_t n2 = Merge2(in[2], r, in[3], r, b2);
    c.bytes += (n1 + n2) * sizeof(Pair);
    if (tx) {
      if (pmemobj_tx_add_range_direct(out, (n1 + n2) * sizeof(Pair)) != 0) std::abort();
      c.bytes += (n1 + n2) * sizeof(Pair);
    }
    return Merge2(b1, n1, b2, n2, out);
  };
  size_t n = 0;
  if (tx) {
    // K-way cannot know the result's size: the whole L1 run is snapshot; 2-way adds B1, B2
    // and then exactly the result (the paper's argument).
    if (mc.kway) {
      InTx(pool, {{out, 4 * r * sizeof(Pair)}, {pool.run_ptr(), 8}}, c, [&] { n = body(); *pool.run_ptr() += 1; });
    } else {
      InTx(pool, {{b1, 2 * r * sizeof(Pair)}, {b2, 2 * r * sizeof(Pair)}, {pool.run_ptr(), 8}}, c,
           [&] { n = body(); *pool.run_ptr() += 1; });
    }
    c.bytes += n * sizeof(Pair) + 8;
    return;
  }
  n = body();
  c.bytes += n * sizeof(Pair) + 8;
  if (mc.fa == Fa::kHand) ctx.persist(out, n * sizeof(Pair));
  *pool.run_ptr() += 1;
  if (mc.fa == Fa::kHand) ctx.persist(pool.run_ptr(), 8);
}

void FillLevel(Pool& pool, size_t r, bool dup) {
  for (size_t q = 0; q < 4; ++q) {
    Pair* run = pool.area(q * r);
    for (size_t i = 0; i < r; ++i) {
      const uint64_t k = dup ? 2 * i : 2 * (4 * i + q);
      run[i] = {k, {k, q}};
    }
    pm::EvictLines(run, r * sizeof(Pair));
  }
}

Row MergeRow(Lab& lab, Pool& pool, const MergeCase& mc, size_t run_bytes, bool dup) {
  const size_t r = run_bytes / sizeof(Pair);
  std::vector<Pair> dram(8 * r);
  const size_t merges = std::max<size_t>(4, lab.iters / 64);
  Costs c;
  std::vector<double> samples;
  for (size_t i = 0; i < merges; ++i) {
    FillLevel(pool, r, dup);
    const double t0 = NowNs();
    MergeOnce(pool, lab.timed, mc, r, dram, c);
    samples.push_back(NowNs() - t0);
  }
  Row row;
  row.exp = "E7";
  row.org = std::string(mc.kway ? "k-way" : "2-way") + (mc.buffered ? "+dram" : "+direct");
  row.variant = FaName(mc.fa);
  row.node_bytes = run_bytes;
  row.param = dup ? "dup=100%" : "dup=0%";
  row.ns = Median(samples);
  row.ops = merges;
  FillLevel(pool, r, dup);
  Costs one;
  const PersistCounters before = lab.counted.thread_counters();
  MergeOnce(pool, lab.counted, mc, r, dram, one);
  lab.counted.drain_media();
  const PersistCounters d = lab.counted.thread_counters() - before;
  SetCounts(&row, one, d, mc.fa);
  return row;
}

}  // namespace

bool RunE7(Lab& lab) {
  Pool pool;
  if (!pool.Open(lab.opt.pool_dir)) return false;
  for (size_t run_bytes : RunSizes(lab)) {
    lab.Progress("E7 merge a level (4 runs), %zu B runs", run_bytes);
    for (bool dup : {false, true})
      for (bool kway : {false, true})
        for (bool buffered : {false, true})
          for (Fa fa : {Fa::kNone, Fa::kHand, Fa::kPmdkTx})
            lab.rows->push_back(MergeRow(lab, pool, {kway, buffered, fa}, run_bytes, dup));
  }
  return true;
}

#else  // !PMINDEX_HAVE_PMEMOBJ

bool RunE6(Lab& lab) {
  std::fprintf(stderr, "pmindex lab: E6 needs libpmemobj (scripts/install-deps.sh)\n");
  return false;
}

bool RunE7(Lab& lab) {
  std::fprintf(stderr, "pmindex lab: E7 needs libpmemobj (scripts/install-deps.sh)\n");
  return false;
}

#endif

}  // namespace pmindex::lab
