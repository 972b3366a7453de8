// RNTree leaf (Liu et al., ICPP 2019): an append-only KV log and a cache-line slot array of
// one-byte log indexes in key order, so lookups binary-search a sorted view while every
// modification costs 2 persistent instructions. Primitives (Götze et al.): indirection over
// an append-only log, with a cache-line commit.
//
// The paper makes the 64-byte slot line reach NVM atomically with Intel TSX. This machine
// (AMD) has none, so the portable equivalent keeps the same 2 persistent instructions: two
// slot lines written alternately, each with a sequence number and a CRC32C of its contents.
// The valid line with the newer sequence is the truth; a line torn by a crash fails its
// checksum and the other line, the previous state, stands.
//
// Layout (1184 bytes, 19 cache lines; allocator class 1280):
//
//   line 0   off  0  next       u64  persistent  pool offset of the right neighbour
//            off  8  low_key    u64  persistent  lower bound of the key range (immutable)
//            off 16  version    u64  volatile    lock / version word (leaf_common.h)
//            off 24  nlogs      u32  volatile    log entries claimed (CAS, outside the lock)
//            off 28  plogs      u32  volatile    claims resolved (split=native only, see below)
//            off 32  prev       u64  volatile    DRAM pointer to the left neighbour (hint)
//            off 40  cur        u32  volatile    which slot line is the truth (0/1)
//            off 44  ds_seq     u32  volatile    seqlock of the transient slot line (DS)
//            off 48  undo       u64  persistent  split=native: pool offset of the undo copy of
//                                                this leaf while it is split in place, else 0
//            off 56  pad        8 B
//   line 1   off 64  line[0]    SlotLine  persistent
//   line 2   off128  line[1]    SlotLine  persistent
//   line 3   off192  transient  SlotLine  volatile: RNTree+DS readers' copy, never flushed
//   line 4.. off256  log[58]    16 B each: key, value
//
//   SlotLine (64 bytes, one cache line):
//            off  0  crc        u32  CRC32C of bytes 4..63
//            off  4  seq        u8   newer line: seq - other.seq == 1 (mod 256)
//            off  5  count      u8   live entries
//            off  6  slot[58]   u8   log indexes of the live entries in key order
//
// Insert/update/upsert (2 persistent instructions): optimistic search (a conditional write
// that must fail writes nothing); claim log entry e with a CAS on nlogs (no lock); write
// log[e]; lock the leaf; persist log[e]; if the slot array changed since the search (the
// stamp of ReadLine moved), search again and re-check the condition; write the new slot array into
// the line that is not the truth, with seq + 1 and its CRC, persist it; flip `cur`; (DS:
// copy into the transient line); unlock. Remove: search, lock, new slot line, persist (1).
//
// Crash argument: log[e] is durable before any slot line names it and a named entry is
// never overwritten (append-only; the leaf is replaced, not rewritten, when its log is
// full). A slot line is written only after the previous one was persisted, so at most one
// line can be torn or stale: a torn line fails its CRC (the other holds the previous state,
// which is what an interrupted operation may leave); a fully written one has the newer seq
// and holds the new state. Recovery picks the truth, resets every volatile field (nlogs =
// 1 + the largest named index: unnamed entries above it are free again).
//
// Thread safety: natively concurrent. Writers claim log entries lock-free; the log entry's
// persist and the slot-line update run under the leaf lock (the paper persists log entries
// outside it, in parallel: here the lock's compare-and-swap would then follow the persist
// and wait for its write-back, see Write; the pool variant log_persist=parallel runs the
// paper's order, and split=native the paper's split in place: VariantWrite, SplitInPlace,
// doc/btree.md "RNTree as its paper built it"). RNTree readers wait while
// a leaf is locked and retry if its version moved (every slot change bumps it). RNTree+DS
// readers use the transient line (a seqlock guards the 64-byte copy, standing in for the
// paper's HTM snapshot), which a writer updates only after the persistent line is durable:
// readers never see unpersisted data and retry only when the leaf was replaced.
#ifndef PMINDEX_BTREE_RNTREE_LEAF_H_
#define PMINDEX_BTREE_RNTREE_LEAF_H_

#include <nmmintrin.h>
#include <smmintrin.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "btree/hybrid/leaf_common.h"
#include "btree/hybrid/variant.h"
#include "pm/crc32c.h"
#include "pm/mutant.h"
#include "pm/persist.h"
#include "pmindex/index.h"
#include "pmindex/pool.h"
#include "pmindex/status.h"

namespace pmindex::btree {

struct RNSlotLine {
  static constexpr size_t kSlots = 58;
  uint32_t crc;
  uint8_t seq;
  uint8_t count;
  uint8_t slot[kSlots];
};
static_assert(sizeof(RNSlotLine) == 64 && offsetof(RNSlotLine, seq) == 4);
static_assert(offsetof(RNSlotLine, slot) == 6);

struct RNTreeLeaf {
  static constexpr size_t kCapacity = RNSlotLine::kSlots;
  uint64_t next;
  uint64_t low_key;
  uint64_t version;
  uint32_t nlogs;
  uint32_t plogs;
  uint64_t prev;
  uint32_t cur;
  uint32_t ds_seq;
  uint64_t undo;
  uint64_t pad;
  RNSlotLine line[2];
  RNSlotLine transient;
  Entry log[kCapacity];
};
static_assert(sizeof(RNTreeLeaf) == 1184);
static_assert(offsetof(RNTreeLeaf, version) == 16 && offsetof(RNTreeLeaf, nlogs) == 24);
static_assert(offsetof(RNTreeLeaf, cur) == 40 && offsetof(RNTreeLeaf, line) == 64);
static_assert(offsetof(RNTreeLeaf, plogs) == 28 && offsetof(RNTreeLeaf, undo) == 48);
static_assert(offsetof(RNTreeLeaf, transient) == 192 && offsetof(RNTreeLeaf, log) == 256);

template <bool kDual>
struct RNTreeLayout {
  using Leaf = RNTreeLeaf;
  static constexpr const char* kName = kDual ? "rntree-ds" : "rntree";
  // Never reuse or renumber a kind (doc/format.md).
  static constexpr IndexKind kKind = kDual ? IndexKind{15} : IndexKind{14};
  // Test-only crash bugs (pm/mutant.h) at this layout's mutation points; both variants run
  // them, the registry lists them under "rntree".
  static std::vector<MutantInfo> Mutants() {
    if (kDual) return {};
    return {{"rntree.skip_kv_persist",
             "the log entry is not persisted before the slot line names it"},
            {"rntree.single_slot_line",
             "the slot line is rewritten in place (a torn line loses the state)"},
            {"rntree.skip_slot_persist",
             "the new slot line is not persisted before the write returns"},
            {"rntree.parallel_commit_before_entry_persist",
             "log_persist=parallel: the slot line commits before the log entry is persisted",
             "", "RNTreeVariantCrashTest.ParallelCommitBeforeEntryPersistIsCaught"},
            {"rntree.native_split_skip_undo_persist",
             "split=native: the undo copy of the leaf is not flushed before the leaf names it",
             "", "RNTreeVariantCrashTest.NativeSplitSkipUndoPersistIsCaught"},
            {"rntree.native_split_commit_unfenced",
             "split=native: the undo word is cleared before the rewritten leaves are durable",
             "", "RNTreeVariantCrashTest.NativeSplitCommitUnfencedIsCaught"}};
  }
  static constexpr const char* kDescription =
      kDual ? "RNTree leaves with the dual (transient) slot array for readers"
            : "RNTree leaves (append log + checksummed cache-line slot array, 2 fences/op)";
  static constexpr const char* kConcurrency =
      kDual ? "concurrent: lock-free log claims, persists under the leaf lock, readers "
              "never wait for writers (dual slot array)"
            : "concurrent: lock-free log claims, persists under the leaf lock, readers "
              "retry on slot changes";
  static constexpr size_t kCapacity = Leaf::kCapacity;
  static constexpr uint32_t kLayoutVersion = 1;
  static constexpr bool kReadersWaitForWriters = !kDual;

  static uint32_t Crc(const RNSlotLine& l) {
    return pm::crc32c(reinterpret_cast<const char*>(&l) + 4, 60);
  }
  static bool Valid(const RNSlotLine& l) { return l.crc == Crc(l); }

  // Readers search a slot line in place, inside an optimistic section. RNTree reads the
  // truth: writers only ever write the other line and flip `cur` under the leaf lock, and the
  // caller's leaf-version check tells the reader if that happened. RNTree+DS reads the
  // transient line inside its seqlock (standing in for the paper's HTM snapshot). `stamp`
  // changes whenever the slot array does: the leaf version (RNTree bumps it at every slot
  // change) or the seqlock (RNTree+DS).
  static const RNSlotLine* ReadLine(const Leaf* l, uint64_t leaf_version, uint64_t* stamp) {
    if constexpr (kDual) {
      uint32_t s;
      while ((s = LoadAcquire(l->ds_seq)) & 1) CpuRelax();
      *stamp = s;
      return &l->transient;
    } else {
      *stamp = leaf_version;
      return &l->line[Load(l->cur) & 1];
    }
  }
  // True if what the reader read since ReadLine was one state of the line.
  static bool LineStable(const Leaf* l, uint64_t stamp) {
    if constexpr (kDual) {
      return pm::ReadAgain(&l->ds_seq) == stamp;
    } else {
      return true;  // the caller validates the leaf version
    }
  }
  // The stamp ReadLine would give now; the leaf is locked, so it cannot move.
  static uint64_t LockedStamp(const Leaf* l) {
    if constexpr (kDual) {
      return Load(l->ds_seq);
    } else {
      return Load(l->version) & ~VersionLock::kLocked;  // others may be trying to lock it
    }
  }

  // Indexes and counts read by an optimistic reader may come from a line being rewritten:
  // clamp them into range (one cmov each; `% kCapacity` put a multiply into every dependent
  // probe). The reader's validation then fails.
  static size_t Idx(const RNSlotLine& v, size_t p) {
    const uint8_t i = Load(v.slot[p]);
    return i < kCapacity ? i : kCapacity - 1;
  }
  static size_t Count(const RNSlotLine& v) {
    const uint8_t n = Load(v.count);
    return n <= kCapacity ? n : 0;
  }

  // First position among the first n of line v with key >= key (branch-free binary search:
  // the probes' lines were prefetched, so mispredicted branches would be most of its cost).
  static size_t LowerBound(const Leaf* l, const RNSlotLine& v, size_t n, uint64_t key) {
    if (n == 0) return 0;
    size_t base = 0;
    while (n > 1) {
      const size_t half = n / 2;
      base = Load(l->log[Idx(v, base + half)].key) < key ? base + half : base;
      n -= half;
    }
    return base + (Load(l->log[Idx(v, base)].key) < key);
  }

  static void Init(pm::PersistContext& pc, Leaf* l, uint64_t low_key, uint64_t next, const Entry* e, size_t n) {
    l->next = next;
    l->low_key = low_key;
    l->version = 0;
    l->nlogs = static_cast<uint32_t>(n);
    l->plogs = static_cast<uint32_t>(n);  // Init's entries are resolved claims
    l->prev = 0;
    l->cur = 0;
    l->ds_seq = 0;
    l->undo = 0;
    l->pad = 0;
    RNSlotLine s{};
    s.count = static_cast<uint8_t>(n);
    for (size_t i = 0; i < n; ++i) s.slot[i] = static_cast<uint8_t>(i);
    s.seq = 0;
    s.crc = Crc(s);
    l->line[1] = s;  // both lines valid; line 0 is newer
    s.seq = 1;
    s.crc = Crc(s);
    l->line[0] = s;
    l->transient = s;
    std::copy(e, e + n, l->log);
    pc.flush(l, offsetof(Leaf, transient));                        // header + both lines
    pc.flush(l->log, n * sizeof(Entry));                           // caller fences
  }

  // Slot lines and the log lines the binary search probes, requested together (the
  // transient line only for RNTree+DS, whose writers update it; RNTree never touches it).
  static void Prefetch(const Leaf* l) {
    constexpr size_t kEnd = offsetof(Leaf, log) + kCapacity * sizeof(Entry);
    if constexpr (kDual) {
      PrefetchLines(l, offsetof(Leaf, line), kEnd);
    } else {
      PrefetchLines(l, offsetof(Leaf, line), offsetof(Leaf, transient));
      PrefetchLines(l, offsetof(Leaf, log), kEnd);
    }
  }

  // Position of `key` among the first n of line v and whether it is there.
  static bool Search(const Leaf* l, const RNSlotLine& v, size_t n, uint64_t key, size_t* pos) {
    const size_t p = LowerBound(l, v, n, key);
    *pos = p;
    return p < n && Load(l->log[Idx(v, p)].key) == key;
  }

  static bool Find(const Leaf* l, uint64_t key, uint64_t* value) {
    for (;;) {
      uint64_t stamp;
      const RNSlotLine& v = *ReadLine(l, 0, &stamp);
      size_t p;
      const bool found = Search(l, v, Count(v), key, &p);
      if (found) *value = Load(l->log[Idx(v, p)].value);
      if (LineStable(l, stamp)) return found;
    }
  }

  static size_t CollectSorted(const Leaf* l, uint64_t from, Entry* out) {
    for (;;) {
      uint64_t stamp;
      const RNSlotLine& v = *ReadLine(l, 0, &stamp);
      const size_t count = Count(v);
      size_t n = 0;
      for (size_t p = from == 0 ? 0 : LowerBound(l, v, count, from); p < count; ++p) {
        const Entry& e = l->log[Idx(v, p)];
        out[n++] = Entry{Load(e.key), Load(e.value)};
      }
      if (LineStable(l, stamp)) return n;
    }
  }

  // Under the leaf lock (or quiescent).
  static size_t LiveCount(const Leaf* l) { return l->line[l->cur & 1].count; }

  // How the new slot line differs from the truth (CommitSlots).
  enum class Edit : uint8_t { kSet, kInsert, kRemove };
  // kRamp[j] = 0xff for j < 64: 16 bytes loaded at kRamp + 64 - q + 16k give, for byte i of
  // the line's k-th quarter, 0xff iff 16k + i < q. kOne: 0xff only at j == 64, so iff == q.
  static constexpr auto kRamp = [] {
    std::array<uint8_t, 128> a{};
    for (size_t j = 0; j < 64; ++j) a[j] = 0xff;
    return a;
  }();
  static constexpr auto kOne = [] {
    std::array<uint8_t, 128> a{};
    a[64] = 0xff;
    return a;
  }();
  [[gnu::always_inline]] static __m128i Load16(const void* p) {
    return _mm_loadu_si128(static_cast<const __m128i*>(p));
  }
  // Quarter k (bytes 16k..16k+15) of the new line (see CommitSlots), CRC and header aside.
  [[gnu::always_inline]] static __m128i Quarter(const char* b, Edit edit, size_t q, __m128i ev,
                                                size_t end, int k) {
    const __m128i old = Load16(b + 16 * k);
    __m128i v = old;
    if (edit != Edit::kSet) {  // bytes from q on come from their neighbour
      const __m128i moved = Load16(b + (edit == Edit::kInsert ? -1 : 1) + 16 * k);
      v = _mm_blendv_epi8(moved, old, Load16(kRamp.data() + 64 - q + 16 * k));
    }
    if (edit != Edit::kRemove) v = _mm_blendv_epi8(v, ev, Load16(kOne.data() + 64 - q + 16 * k));
    return _mm_and_si128(v, Load16(kRamp.data() + 64 - end + 16 * k));  // unused slots 0
  }

  // Writes the new truth, built in registers from the truth `base`, and persists it; leaf
  // locked. 1 persistent instruction. The new line: the slot at position p set to log entry
  // e (kSet), a slot inserted there (kInsert) or removed (kRemove); count m; seq one past
  // base's; the slots from position m on zero; its CRC. The same bytes as building it in a
  // stack copy (zero, copy, memmove, CRC of the copy, copy out), without that copy's stores
  // and the memmove call: unaligned loads of base (shifted one byte for an insert or
  // removal: the byte beside the line is read, never used), byte masks from the tables
  // above, the CRC over the words in registers, then 8 stores.
  // kAfterSplit (split=native, RNTree+DS): a native split may still hold the seqlock odd
  // after it released the leaf lock (SplitFinish); wait for it before taking the seqlock.
  template <bool kAfterSplit = false>
  [[gnu::always_inline]] static void CommitSlots(pm::PersistContext& pc, Leaf* l,
                                                 const RNSlotLine* base, Edit edit, size_t p,
                                                 int e, size_t m) {
    const char* b = reinterpret_cast<const char*>(base);
    const size_t q = offsetof(RNSlotLine, slot) + p;  // byte of slot p
    const size_t end = offsetof(RNSlotLine, slot) + m;
    const __m128i ev = _mm_set1_epi8(static_cast<char>(e));
    const __m128i v0 = Quarter(b, edit, q, ev, end, 0);
    const __m128i v1 = Quarter(b, edit, q, ev, end, 1);
    const __m128i v2 = Quarter(b, edit, q, ev, end, 2);
    const __m128i v3 = Quarter(b, edit, q, ev, end, 3);
    const uint64_t w1 = static_cast<uint64_t>(_mm_extract_epi64(v0, 1));
    const uint64_t w2 = static_cast<uint64_t>(_mm_cvtsi128_si64(v1));
    const uint64_t w3 = static_cast<uint64_t>(_mm_extract_epi64(v1, 1));
    const uint64_t w4 = static_cast<uint64_t>(_mm_cvtsi128_si64(v2));
    const uint64_t w5 = static_cast<uint64_t>(_mm_extract_epi64(v2, 1));
    const uint64_t w6 = static_cast<uint64_t>(_mm_cvtsi128_si64(v3));
    const uint64_t w7 = static_cast<uint64_t>(_mm_extract_epi64(v3, 1));
    // Bytes 4..7: seq, count, slots 0 and 1 (these two as built); then the CRC of 4..63.
    const uint64_t seq = static_cast<uint8_t>(base->seq + 1);
    const uint32_t hi = static_cast<uint32_t>(
        (static_cast<uint64_t>(_mm_cvtsi128_si64(v0)) >> 48 << 16) |
        uint64_t{static_cast<uint8_t>(m)} << 8 | seq);
    uint64_t c = _mm_crc32_u32(~0u, hi);
    c = _mm_crc32_u64(c, w1);
    c = _mm_crc32_u64(c, w2);
    c = _mm_crc32_u64(c, w3);
    c = _mm_crc32_u64(c, w4);
    c = _mm_crc32_u64(c, w5);
    c = _mm_crc32_u64(c, w6);
    c = _mm_crc32_u64(c, w7);
    const uint64_t w0 = uint64_t{hi} << 32 | static_cast<uint32_t>(~c);

    const uint32_t cur = l->cur;
    const uint32_t target = pm::mutant("rntree.single_slot_line") ? cur : 1 - cur;
    StoreLine(&l->line[target], w0, w1, w2, w3, w4, w5, w6, w7);
    if (!pm::mutant("rntree.skip_slot_persist")) {
      pc.persist(&l->line[target], sizeof(RNSlotLine));  // commit (see the crash argument)
    }
    Store(l->cur, target);
    if constexpr (kDual) {  // readers see it only now that it is durable
      if constexpr (kAfterSplit) {
        while (LoadAcquire(l->ds_seq) & 1) CpuRelax();
      }
      const uint32_t s = Load(l->ds_seq);  // atomic: validating readers RMW it (TSan)
      pm::WriterBegin(&l->ds_seq, s + 1);
      StoreLine(&l->transient, w0, w1, w2, w3, w4, w5, w6, w7);
      StoreRelease(l->ds_seq, s + 2);
    }
  }
  // Eight relaxed 8-byte stores (optimistic readers may read the line meanwhile).
  [[gnu::always_inline]] static void StoreLine(RNSlotLine* line, uint64_t w0, uint64_t w1,
                                               uint64_t w2, uint64_t w3, uint64_t w4,
                                               uint64_t w5, uint64_t w6, uint64_t w7) {
    uint64_t* d = reinterpret_cast<uint64_t*>(line);
    Store(d[0], w0);
    Store(d[1], w1);
    Store(d[2], w2);
    Store(d[3], w3);
    Store(d[4], w4);
    Store(d[5], w5);
    Store(d[6], w6);
    Store(d[7], w7);
  }

  // Lock-free claim of a log entry; -1 if the log is full.
  static int Claim(Leaf* l) {
    uint32_t e = Load(l->nlogs);
    while (e < kCapacity) {
      if (__atomic_compare_exchange_n(&l->nlogs, &e, e + 1, false, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED)) {
        return static_cast<int>(e);
      }
    }
    return -1;
  }

  [[gnu::always_inline]] static WriteResult Write(pm::PersistContext& pc, Leaf* l, Op op,
                                                 uint64_t key, uint64_t value) {
    // Optimistic search first: a conditional write bound to fail consumes no log entry, and
    // if no slot change happened by the time we hold the lock, its result still stands.
    uint64_t stamp;
    size_t p;
    bool present;
    for (;;) {
      uint64_t v;
      if (!VersionLock::ReadBegin(&l->version, kGen, &v, kReadersWaitForWriters)) {
        return {Outcome::kRetry};
      }
      const RNSlotLine& line = *ReadLine(l, v, &stamp);
      present = Search(l, line, Count(line), key, &p);
      if (LineStable(l, stamp) && VersionLock::ReadValidate(&l->version, v, kReadersWaitForWriters)) {
        break;
      }
    }
    if (op == Op::kInsert && present) return {Outcome::kExists};
    if ((op == Op::kUpdate || op == Op::kRemove) && !present) return {Outcome::kNotFound};
    int e = -1;
    if (op != Op::kRemove) {
      e = Claim(l);
      if (e < 0) {
        if (!VersionLock::Lock(&l->version, kGen)) return {Outcome::kRetry};
        return {Outcome::kFull};
      }
      Store(l->log[e].key, key);
      Store(l->log[e].value, value);
    }
    // The lock is taken before log[e] is persisted, not after: a locked instruction right
    // after a persist waits until its write-back completed (the CAS then cost ~160 ns per
    // insert in adr; doc/performance.md, "rntree insert: the leaf lock before the log
    // persist"). The leaf may have been replaced since the search: then log[e] is in a dead
    // leaf and the operation restarts from the root.
    uint64_t held;  // the word as locked: Release stores without reading it
    if (!VersionLock::LockInline(&l->version, kGen, &held)) return {Outcome::kRetry};
    if (op != Op::kRemove && !pm::mutant("rntree.skip_kv_persist")) {
      pc.persist(&l->log[e], sizeof(Entry));  // durable before a slot line names it
    }
    const RNSlotLine* base = &l->line[l->cur];  // the truth; the stamp says if we searched it
    if (LockedStamp(l) != stamp) {  // slots changed since the search: search again
      present = Search(l, *base, base->count, key, &p);
      if ((op == Op::kInsert && present) ||
          ((op == Op::kUpdate || op == Op::kRemove) && !present)) {
        VersionLock::Release(&l->version, held, false);  // lost a race; log[e] stays unnamed
        return {present ? Outcome::kExists : Outcome::kNotFound};
      }
    }
    const size_t n = base->count;
    const Edit edit = op == Op::kRemove ? Edit::kRemove : present ? Edit::kSet : Edit::kInsert;
    const size_t m = op == Op::kRemove ? n - 1 : present ? n : n + 1;
    CommitSlots(pc, l, base, edit, p, e, m);
    VersionLock::Release(&l->version, held, !kDual);
    return {Outcome::kDone, m == 0, static_cast<uint32_t>(m)};
  }

  // ---- Variants (variant.h; doc/btree.md, "RNTree as its paper built it") ----------------
  static constexpr HybridVariantSupport kVariants{.parallel_log_persist = true,
                                                  .native_split = true};

  // The write of a pool with log_persist=parallel and/or split=native (a default pool runs
  // Write above). `base`: the pool's base (split=native reads the right neighbour's low key).
  static WriteResult VariantWrite(pm::PersistContext& pc, const char* base, Leaf* l, Op op,
                                  uint64_t key, uint64_t value, const HybridVariant& v) {
    if (v.parallel_log_persist) {
      return v.native_split ? WriteT<true, true>(pc, base, l, op, key, value)
                            : WriteT<true, false>(pc, base, l, op, key, value);
    }
    return WriteT<false, true>(pc, base, l, op, key, value);
  }

  // Write's optimistic search (a conditional write bound to fail claims nothing). False: the
  // leaf was replaced, or (kNative) a native split moved key to the right neighbour since
  // the caller found the leaf: its answer would be the wrong leaf's.
  template <bool kNative>
  [[gnu::always_inline]] static bool SearchFirst(const char* base, Leaf* l, uint64_t key,
                                                 uint64_t* stamp, size_t* p, bool* present) {
    for (;;) {
      uint64_t v;
      if (!VersionLock::ReadBegin(&l->version, kGen, &v, kReadersWaitForWriters)) return false;
      const RNSlotLine& line = *ReadLine(l, v, stamp);
      *present = Search(l, line, Count(line), key, p);
      const bool covers = !kNative || Covers(base, l, key);
      if (!covers) return false;  // checked under the lock again: no validation needed
      if (LineStable(l, *stamp) &&
          VersionLock::ReadValidate(&l->version, v, kReadersWaitForWriters)) {
        return true;
      }
    }
  }

  // kParallel (log_persist=parallel, the paper's Algorithm 1): log[e] is written and
  // persisted before the leaf lock, so writers of one leaf flush their entries at once; the
  // lock covers only the slot-line commit. Crash argument: log[e] is durable before any slot
  // line names it, as in Write. kNative (split=native): every claim is resolved under the
  // lock (plogs + 1: committed or abandoned), so a split in place waits for no writer; a
  // writer whose key a native split moved to the new right neighbour retries from the root.
  template <bool kParallel, bool kNative>
  static WriteResult WriteT(pm::PersistContext& pc, const char* base, Leaf* l, Op op,
                            uint64_t key, uint64_t value) {
    uint64_t stamp = 0;  // set by SearchFirst (initialised: GCC cannot see it through it)
    size_t p = 0;
    bool present = false;
    if (!SearchFirst<kNative>(base, l, key, &stamp, &p, &present)) return {Outcome::kRetry};
    if (op == Op::kInsert && present) return {Outcome::kExists};
    if ((op == Op::kUpdate || op == Op::kRemove) && !present) return {Outcome::kNotFound};
    constexpr const char* kLate = "rntree.parallel_commit_before_entry_persist";
    int e = -1;
    if (op != Op::kRemove) {
      e = Claim(l);
      if (e < 0) return LogFull<kNative>(base, l, key);
      Store(l->log[e].key, key);
      Store(l->log[e].value, value);
      if (kParallel && !pm::mutant(kLate)) pc.persist(&l->log[e], sizeof(Entry));
    }
    uint64_t held;  // a replaced leaf: log[e] is in a dead leaf, the operation restarts
    if (!VersionLock::LockInline(&l->version, kGen, &held)) return {Outcome::kRetry};
    if (!kParallel && op != Op::kRemove) pc.persist(&l->log[e], sizeof(Entry));
    if (kNative && !Covers(base, l, key)) return Abandon<kNative>(l, held, e, Outcome::kRetry);
    const RNSlotLine* line = &l->line[l->cur];
    if (LockedStamp(l) != stamp) {  // slots changed since the search: search again
      present = Search(l, *line, line->count, key, &p);
      if ((op == Op::kInsert && present) ||
          ((op == Op::kUpdate || op == Op::kRemove) && !present)) {
        return Abandon<kNative>(l, held, e, present ? Outcome::kExists : Outcome::kNotFound);
      }
    }
    const size_t n = line->count;
    const Edit edit = op == Op::kRemove ? Edit::kRemove : present ? Edit::kSet : Edit::kInsert;
    const size_t m = op == Op::kRemove ? n - 1 : present ? n : n + 1;
    CommitSlots<kNative && kDual>(pc, l, line, edit, p, e, m);
    if (kParallel && e >= 0 && pm::mutant(kLate)) pc.persist(&l->log[e], sizeof(Entry));
    if (kNative && e >= 0) Store(l->plogs, Load(l->plogs) + 1);
    VersionLock::Release(&l->version, held, !kDual);
    return {Outcome::kDone, m == 0, static_cast<uint32_t>(m)};
  }
  // split=native, leaf locked: true if `key` is still this leaf's. A native split keeps the
  // leaf (it is not marked obsolete) and moves the upper half of its range to a new right
  // neighbour, so a writer routed here before the split must check (the B-link test).
  static bool Covers(const char* base, const Leaf* l, uint64_t key) {
    const uint64_t next = LoadAcquire(l->next);  // a leaf published by a release of next
    return next == 0 || key < Load(reinterpret_cast<const Leaf*>(base + next)->low_key);
  }
  // Gives up claim e (if any) under the lock: it stays unnamed, garbage.
  template <bool kNative>
  static WriteResult Abandon(Leaf* l, uint64_t held, int e, Outcome o) {
    if (kNative && e >= 0) Store(l->plogs, Load(l->plogs) + 1);
    VersionLock::Release(&l->version, held, false);
    return {o};
  }
  // The log is full. split=cow: lock the leaf and hand it to the tree (kFull) to replace.
  // split=native: the split rewrites this leaf in place, which no writer may still write
  // into, so only a full log with every claim resolved is handed over; otherwise the writer
  // retries from the root (Algorithm 1, line 5), as do those that find the split done.
  // (The tree applies the pending operation to the leaf when it compacts it: the key must
  // still be the leaf's.)
  template <bool kNative>
  static WriteResult LogFull(const char* base, Leaf* l, uint64_t key) {
    if (!VersionLock::Lock(&l->version, kGen)) return {Outcome::kRetry};
    if (!kNative || (Covers(base, l, key) && Load(l->nlogs) == kCapacity &&
                     Load(l->plogs) == kCapacity)) {
      return {Outcome::kFull};
    }
    VersionLock::Unlock(&l->version, kGen, false);
    std::this_thread::yield();  // a writer holding a claim may be descheduled
    return {Outcome::kRetry};
  }

  // split=native: the paper's logged split (Algorithm 3), called with the leaf locked, its
  // log full and every claim resolved; e[0..n) its live entries, [0, left) stay. 4 fences:
  //   1. the leaf's image copied into the undo block u (pool offset uo), persisted;
  //   2. the leaf's undo word names u, persisted: from here a crash rolls back (RollBackSplit);
  //   3. the right leaf r (pool offset ro) built from e[left..n), its next the leaf's next;
  //      the leaf rewritten in place: e[0..left) at log[0..left), both slot lines the
  //      identity, next = ro; both persisted;
  //   4. the undo word cleared, persisted: the commit point.
  // Crash argument: before 4 is durable the undo word names a durable copy of the old leaf
  // and recovery restores it (next: the old one, so r is unreachable and the rebuild frees
  // r and u); after it the leaf and r are durable (3) and u is unreachable. RNTree+DS: the
  // seqlock stays odd from 3 until SplitFinish, after the version bump.
  static void SplitInPlace(pm::PersistContext& pc, Leaf* l, uint64_t uo, Leaf* u, uint64_t ro,
                           Leaf* r, const Entry* e, size_t n, size_t left) {
    const uint64_t* from = reinterpret_cast<const uint64_t*>(l);
    uint64_t* to = reinterpret_cast<uint64_t*>(u);
    for (size_t i = 0; i < sizeof(Leaf) / 8; ++i) to[i] = Load(from[i]);  // racy: atomics
    u->undo = 0;
    if (!pm::mutant("rntree.native_split_skip_undo_persist")) pc.flush(u, sizeof(Leaf));
    pc.fence();  // the copy is durable before the leaf names it
    Store(l->undo, uo);
    pc.persist(&l->undo, 8);  // from here on a crash restores the copy
    Init(pc, r, e[left].key, Load(l->next), e + left, n - left);  // unreachable until 3
    if constexpr (kDual) pm::WriterBegin(&l->ds_seq, Load(l->ds_seq) + 1);
    for (size_t i = 0; i < left; ++i) {
      Store(l->log[i].key, e[i].key);
      Store(l->log[i].value, e[i].value);
    }
    RNSlotLine s{};
    s.count = static_cast<uint8_t>(left);
    for (size_t i = 0; i < left; ++i) s.slot[i] = static_cast<uint8_t>(i);
    StoreWhole(&l->line[1], s, 0);  // both lines valid; line 0 is newer
    StoreWhole(&l->line[0], s, 1);
    if constexpr (kDual) StoreWhole(&l->transient, s, 1);
    Store(l->cur, 0u);
    StoreRelease(l->next, ro);  // r was built above (Covers reads it)
    pc.flush(l, offsetof(Leaf, transient));
    pc.flush(l->log, left * sizeof(Entry));
    if (!pm::mutant("rntree.native_split_commit_unfenced")) pc.fence();  // r and l durable
    Store(l->undo, uint64_t{0});
    pc.persist(&l->undo, 8);  // commit point of the native split
  }
  // Slot line s with sequence seq and its CRC, stored word by word (readers may read it).
  static void StoreWhole(RNSlotLine* line, RNSlotLine s, uint8_t seq) {
    s.seq = seq;
    s.crc = Crc(s);
    uint64_t w[8];
    std::memcpy(w, &s, sizeof(s));
    StoreLine(line, w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]);
  }
  // After SplitInPlace and the parent's update: claims open again, the leaf unlocks with a
  // version bump (readers that began before the split fail), then RNTree+DS readers may read.
  static void SplitFinish(Leaf* l, size_t left) {
    Store(l->plogs, static_cast<uint32_t>(left));
    Store(l->nlogs, static_cast<uint32_t>(left));
    VersionLock::Unlock(&l->version, kGen, true);
    if constexpr (kDual) StoreRelease(l->ds_seq, Load(l->ds_seq) + 1);
  }
  // Recovery of a native split the crash interrupted (undo word set): the copy goes back
  // into the leaf, persisted, before the undo word is cleared (a crash meanwhile restores
  // it again). Never allocates; the rebuild frees the copy and the unreachable right leaf.
  static Status RollBackSplit(pm::PersistContext& pc, char* base, uint64_t size, Leaf* l) {
    const uint64_t o = l->undo;
    if (o == 0) return Status::OK();
    if (o % 64 != 0 || o < 4096 || o + sizeof(Leaf) > size) {
      return Status::Corruption("undo copy offset " + std::to_string(o) + " outside the pool");
    }
    const char* u = base + o;
    char* d = reinterpret_cast<char*>(l);
    std::memcpy(d, u, offsetof(Leaf, undo));  // all but the undo word
    std::memcpy(d + offsetof(Leaf, pad), u + offsetof(Leaf, pad),
                sizeof(Leaf) - offsetof(Leaf, pad));
    pc.flush(l, sizeof(Leaf));
    pc.fence();  // the old leaf is durable before the undo word goes
    l->undo = 0;
    pc.persist(&l->undo, 8);
    return Status::OK();
  }

  static Status Recover(pm::PersistContext& pc, Leaf* l) {
    const bool v0 = Valid(l->line[0]), v1 = Valid(l->line[1]);
    if (!v0 && !v1) return Status::Corruption("both slot lines fail their checksum");
    uint32_t c = v0 ? 0 : 1;
    if (v0 && v1 && static_cast<uint8_t>(l->line[1].seq - l->line[0].seq) == 1) c = 1;
    l->cur = c;
    l->prev = 0;
    l->ds_seq = 0;
    l->transient = l->line[c];
    uint32_t nlogs = 0;
    for (size_t p = 0; p < l->line[c].count && p < kCapacity; ++p) {
      nlogs = std::max<uint32_t>(nlogs, l->line[c].slot[p] + 1u);
    }
    l->nlogs = nlogs;  // entries past the slot array's are garbage: claimable again
    l->plogs = nlogs;
    return Verify(l);
  }

  static Status Verify(const Leaf* l) {
    const uint32_t c = l->cur;
    if (c > 1) return Status::Corruption("cur is not 0 or 1");
    const RNSlotLine& s = l->line[c];
    if (!Valid(s)) return Status::Corruption("current slot line fails its checksum");
    if (s.count > kCapacity) return Status::Corruption("slot count " + std::to_string(s.count));
    if (l->undo != 0) return Status::Corruption("a native split's undo copy is still named");
    uint64_t seen = 0;
    for (size_t p = 0; p < s.count; ++p) {
      const uint8_t i = s.slot[p];
      if (i >= kCapacity || i >= l->nlogs || (seen >> i & 1)) {
        return Status::Corruption("bad slot index " + std::to_string(i));
      }
      seen |= uint64_t{1} << i;
      if (p > 0 && l->log[s.slot[p - 1]].key >= l->log[i].key) {
        return Status::Corruption("slot line out of key order");
      }
    }
    if (kDual && std::memcmp(&l->transient, &s, sizeof(s)) != 0) {
      return Status::Corruption("transient slot line differs from the persistent one");
    }
    return Status::OK();
  }
};

}  // namespace pmindex::btree

#endif  // PMINDEX_BTREE_RNTREE_LEAF_H_
