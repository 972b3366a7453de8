// Dash-EH (Lu, Hao, Wang, Lo, "Dash: Scalable Hashing on Persistent Memory", VLDB
// 2020): extendible hashing over segments of 256-byte buckets with fingerprints, balanced
// insert, displacement and stash buckets, optimistic bucket locks. Layouts: layout.h.
//
// A key (8-byte integer, hashed with pm::Mix64; keys=bytes below) lives in its home bucket
// b or the probing bucket b+1 of the segment the directory names for its hash's top bits,
// or in one of the segment's stash buckets. Insert puts it in the less full of b and b+1;
// when both are full it displaces a key of b+1 homed there to b+2, or a key of b homed at
// b-1 back to b-1; then the stash, recorded by an overflow fingerprint in b (or b+1) or
// counted in b's overflow counter; when the stash is full too, the segment splits (and the
// directory doubles first when the segment's local depth is the global depth).
//
// Commit of an insert (two fences): key, value and fingerprint persisted (the fingerprint
// of a slot whose alloc bit is clear means nothing), then the alloc and member bits, one
// 8-byte word, persisted, under the bucket lock. A stash insert persists its overflow entry
// (or counter) with the pair, before its alloc bit. Update: one 8-byte value store,
// persisted. Remove: the alloc bit cleared, persisted (a stash key's overflow entry after
// it: a stale entry only costs a stash probe).
//
// Displacement of a key from bucket X slot i to bucket Y slot j (one per segment at a time,
// under the header's move lock): the move record (X, i, Y, j) persisted, the key committed
// in Y as an insert, X's alloc bit cleared. A crash leaves the key in X, in Y, or in both;
// recovery finds "both" through the record (both slots valid with one key) and clears X.
//
// Split of segment S (depth d, pattern p; all its buckets locked, splits serialized by one
// mutex): [directory doubled: a new directory of 2^(G+1) entries persisted, the root word
// switched, the old one retired through the epoch]; (A) a new segment N (depth d+1, pattern
// 2p+1) holding, slot for slot, the keys of S whose hash bit 63-d is 1, persisted whole;
// (C) the directory entries of N's half of S's range set to N, persisted: N is reachable;
// (E) those keys cleared from S and S's overflow metadata rebuilt, persisted; (D) S's depth
// and pattern (d+1, 2p), one word, persisted. A crash before C leaves N unreachable (freed
// by the allocator rebuild); between C and D, S's range holds entries naming a segment of
// depth d+1 and pattern 2p+1: recovery redoes C, E and D (each idempotent). D before C
// would leave S at depth d+1 named by entries of the other half, which no recovery can
// tell from damage (the dash.depth_before_directory mutant).
//
// Recovery (recover(), at open): one walk of the directory that finishes an interrupted
// split (at most one: splits are serialized) and, for each segment, an interrupted
// displacement. No bucket is scanned and nothing is allocated; bucket locks need no repair
// (pool generation). Dash's lazy per-segment recovery is not done: this walk is O(segments)
// and the allocator rebuild walks the same segments anyway (doc/dash.md has the times).
//
// Concurrency: writers lock b and b+1 (lower index first), then stash buckets in order;
// displacement targets and the move lock are taken with TryLock (no waiting, no deadlock);
// a split holds the split mutex and then every bucket lock of S. Readers take no lock: they
// read a bucket between VersionLock::ReadBegin (waiting while a writer holds it: a writer
// unlocks only after its commit is durable, so a reader never returns a pair that is not)
// and ReadValidate, and, to answer "absent", check that the directory still names the
// segment (else a split moved the key: retry from the directory). No integer-mode operation
// holds an epoch guard: the only blocks it replaces are directories, and a directory replaced by a
// doubling stays allocated until close (a reader may still be in it; the old ones together
// are smaller than the current one), so there is nothing for a guard to protect. A
// lookup's instruction count decides how many lookups the CPU overlaps (doc/dash.md).
// (keys=bytes is the exception, below: its operations hold the guard.)
// Segments are never freed (no merge, as in Dash).
//
// keys=bytes (index parameter; the root's keys word, so a reopen runs the pool's mode): a
// slot's key word is the pool offset of a KeyRecord (layout.h: length, bytes; one allocator
// block), the hash is pm::Mix64Bytes of the bytes, and a probe compares the fingerprint, then
// follows the offset and compares the bytes (BytesMatch). The paths are the integer mode's,
// instantiated with BytesMatch instead of IntMatch; the mode is chosen once per table
// (key_size_: an integer-mode call pays no test for it). Crash argument per path:
//   insert: the record written and persisted (one fence), then the slot committed as an
//     integer key (two fences): a crash before the slot's alloc bit is durable leaves a record
//     no slot names, which the allocator rebuild frees (visit_blocks reports the record of
//     every allocated slot); after it, the record is durable and reachable.
//   update: the value word only (the record is not touched).
//   remove: the alloc bit cleared and persisted (the commit), then the record retired through
//     the pool's epoch (freed once no guard that could have read it is open); a crash between
//     them leaves a record no slot names: freed by the rebuild.
//   displacement and split: move the key word (the offset), never the record; a split (and
//     its redo in recovery, and the overflow rebuild) rehashes a key by reading its record,
//     which is durable since its slot's commit. A key in two slots (a move cut between its
//     commits) names one record, which the move's recovery leaves in one slot.
// Every bytes-mode operation holds the pool's epoch guard: a reader (or a writer's locate)
// may follow a key word to a record that a concurrent remove retires.
//
// for_each under concurrent writers: every pair that is present throughout the iteration
// is reported exactly once, unless a displacement or a split moves it during the iteration
// (then it may be reported twice or not at all).
#ifndef PMINDEX_HASH_DASH_DASH_H_
#define PMINDEX_HASH_DASH_DASH_H_

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "hash/dash/bucket_probe.h"
#include "hash/dash/layout.h"
#include "pm/persist.h"
#include "pmindex/index.h"

namespace pmindex::hash::dash {

class DashTable final : public Index {
 public:
  static IndexTraits Traits();
  static IndexTraits BytesTraits();  // keys=bytes: byte_keys, 1..kMaxKeyBytes
  static Result<std::unique_ptr<Index>> Attach(std::unique_ptr<Pool> pool, bool fresh);
  ~DashTable() override { close().IgnoreError(); }

  const IndexTraits& traits() const override;
  Status insert(std::string_view key, std::string_view value) override;
  Status update(std::string_view key, std::string_view value) override;
  Status upsert(std::string_view key, std::string_view value) override;
  Status remove(std::string_view key) override;
  Status lookup(std::string_view key, std::string* value) override;
  size_t scan(std::string_view, size_t, ScanCallback) override { return 0; }  // unordered
  Status for_each(ScanCallback fn) override;
  Status verify() override;
  IndexStats stats() override;
  Status recover() override;
  Status visit_blocks(BlockVisitor& visitor) override;
  Pool* pool() override { return pool_.get(); }
  Status close() override;

  const DashGeometry& geometry() const { return geo_; }
  uint32_t global_depth() const;

 private:
  enum class Op : uint8_t { kInsert, kUpdate, kUpsert };
  struct Loc {  // where a key sits: bucket index in its segment (stash: >= normal), slot
    uint32_t bucket;
    uint32_t slot;
  };
  explicit DashTable(std::unique_ptr<Pool> pool);

  SegmentHeader* hdr(uint64_t seg) const { return reinterpret_cast<SegmentHeader*>(base_ + seg); }
  // The pad before seg's buckets (layout.h): 64 x ((seg >> log2(block)) mod 4), 0 in layout 1.
  uint64_t pad(uint64_t seg) const { return ((seg >> stagger_shift_) & stagger_mask_) * 64; }
  Bucket* bucket(uint64_t seg, uint32_t i) const {
    return reinterpret_cast<Bucket*>(base_ + seg + kBucketBytes + pad(seg) + kBucketBytes * i);
  }
  Directory* dir_at(uint64_t off) const { return reinterpret_cast<Directory*>(base_ + off); }
  uint32_t next(uint32_t b) const { return b + 1 == geo_.normal ? 0 : b + 1; }
  uint32_t prev(uint32_t b) const { return b == 0 ? geo_.normal - 1 : b - 1; }
  // True for an integer-mode operation on an open table with an 8-byte key (and value). In
  // keys=bytes key_size_ is SIZE_MAX, so this one test also sends every bytes-mode operation
  // to the slow path: the integer path gains no instruction (the mode is decided once per
  // table, at attach).
  [[gnu::always_inline]] bool int_op(std::string_view key, std::string_view value,
                                     bool has_value) const {
    return pool_ != nullptr && key.size() == key_size_ && (!has_value || value.size() == 8);
  }
  // InvalidArgument for a closed table or a key or value this table's mode does not take.
  Status invalid(std::string_view key, std::string_view value, bool has_value) const;

  // The variable-length-key mode (keys=bytes; dash_bytes.cc). Every operation holds the
  // pool's epoch guard: a reader may follow a slot's key word to a record that a remove
  // retires meanwhile.
  struct BytesMatch {  // the slot's key word names a KeyRecord holding `key`
    const DashTable* t;
    std::string_view key;
    bool operator()(uint64_t word) const { return t->record_equals(word, key); }
  };
  Status bytes_lookup(std::string_view key, std::string* value);
  Status bytes_put(Op op, std::string_view key, std::string_view value);
  Status bytes_remove(std::string_view key);
  // A new record holding key, persisted (step 1 of a bytes-mode insert).
  Result<uint64_t> new_record(std::string_view key);
  // The record's bytes; empty for a word that names no record inside the pool (a racy read
  // of a slot being written, or damage).
  std::string_view record_view(uint64_t word) const;
  bool record_equals(uint64_t word, std::string_view key) const;
  // The hash of the key a slot's key word stands for (the record's, in keys=bytes): splits,
  // overflow rebuilds, verify and for_each, never a lookup or an insert.
  KeyHash slot_hash(uint64_t word) const {
    if (!bytes_) return KeyHash(word);
    const std::string_view k = record_view(word);
    return KeyHash::OfBytes(k.data(), k.size());
  }
  // The key a slot's key word stands for, as the API spells it.
  std::string slot_key(uint64_t word) const;
  // The segment the directory names for h (0: empty table).
  uint64_t segment_for(const KeyHash& kh) const {
    const uint64_t d = LoadAcquire(root_->directory);
    if (d == 0) [[unlikely]]
      return 0;
    const Directory* dir = dir_at(d);
    return LoadAcquire(dir->seg[kh.DirIndex(static_cast<uint32_t>(Load(dir->depth)))]);
  }

  // Reads (dash.cc).
  // Searches one bucket for the key `match` accepts; its slot or -1. Relaxed atomic loads
  // only (and, in keys=bytes, the records' bytes).
  template <class M>
  [[gnu::always_inline]] int probe(const Bucket* b, const M& match, uint8_t fp) const {
    return ProbeBucket(b, match, fp);
  }
  // The stash buckets that may hold a key of home b0 (b1: the bucket after it) with
  // fingerprint fp (a bit each).
  uint32_t stash_targets(const Bucket* b0, const Bucket* b1, uint8_t fp) const {
    // kOvfCounted stands for the header's counter (a set flag over a zero count: extra
    // probes).
    if (Load(b0->ovf_member) & kOvfCounted) return (1u << geo_.stash) - 1;
    return (OverflowTargets(b0, fp, false) | OverflowTargets(b1, fp, true)) &
           ((1u << geo_.stash) - 1);
  }
  // Searches the stash buckets `targets` of seg for key (under the home buckets' read
  // versions): 1 found, 0 not, -1 retry.
  template <class M>
  int probe_stash(uint64_t seg, uint32_t targets, const KeyHash& kh, const M& match,
                  uint64_t* value) const;
  // 1 found, 0 absent, -1 retry (a writer or a split changed what was read). Inlined into
  // lookup, its only caller.
  template <class M>
  [[gnu::always_inline]] inline int try_lookup(const KeyHash& kh, const M& match,
                                               uint64_t* value) const;
  template <class M>
  [[gnu::always_inline]] inline Status lookup_with(const KeyHash& kh, const M& match,
                                                   std::string* value) const;

  // Writes (dash.cc, dash_insert.cc).
  // `key`: the integer key (IntMatch), or the bytes (BytesMatch: a new key gets a record).
  // By value: IntMatch stays in a register (an integer insert's instructions as before).
  template <class M>
  Status put(Op op, M match, uint64_t value);
  static KeyHash hash_of(const IntMatch& m) { return KeyHash(m.key); }
  static KeyHash hash_of(const BytesMatch& m) {
    return KeyHash::OfBytes(m.key.data(), m.key.size());
  }
  // One attempt; *retry: read the directory again. Inlined into put, its only caller.
  template <class M>
  [[gnu::always_inline]] inline Status put_once(Op op, const KeyHash& kh, const M& match,
                                                uint64_t value, bool* retry);
  template <class M>
  Status erase(M match);
  // Locks b and b+1 of the segment covering kh and checks that the directory still names it;
  // false: retry.
  // (*held: b's and b+1's buckets and their lock words as locked, for unlock_pair.)
  struct Held {
    Bucket* b0;
    Bucket* b1;
    uint64_t w0;
    uint64_t w1;
  };
  // lock_pair, unlock_pair and locate are inlined into their callers (dash_insert.cc): an
  // insert's calls are a tenth of its instructions otherwise.
  [[gnu::always_inline]] inline bool lock_pair(const KeyHash& kh, uint64_t* seg, uint32_t* b,
                                               Held* held) const;
  [[gnu::always_inline]] inline void unlock_pair(const Held& held) const;
  // Under b's and b+1's locks: where key is, if present.
  template <class M>
  [[gnu::always_inline]] inline bool locate(uint64_t seg, uint32_t b, const Held& held,
                                            const KeyHash& kh, const M& match, Loc* loc) const;
  // Under the locks: inserts a new key; false if the segment is full.
  bool insert_new(uint64_t seg, uint32_t b, const Held& held, const KeyHash& kh, uint64_t key,
                  uint64_t value);
  // The commit of a pair into a free slot of a locked bucket (two fences).
  void commit_slot(Bucket* bk, uint32_t slot, uint64_t key, uint64_t value, uint8_t fp,
                   bool member);
  bool displace(uint64_t seg, uint32_t b, const KeyHash& kh, uint64_t key, uint64_t value);
  bool move_pair(uint64_t seg, uint32_t from, uint32_t from_slot, uint32_t to, bool to_member);
  bool stash_insert(uint64_t seg, uint32_t b, const KeyHash& kh, uint64_t key, uint64_t value);
  // Sets (removes) an overflow entry or counter for a stash key of home b; not persisted
  // here: returns the address the caller flushes.
  const void* add_overflow(uint64_t seg, uint32_t b, uint8_t fp, uint32_t stash);
  const void* remove_overflow(uint64_t seg, uint32_t b, uint8_t fp, uint32_t stash);
  uint8_t homed_bits(uint64_t seg, uint32_t b) const;
  Status create_first();

  // Splits (dash_split.cc).
  Status split(uint64_t seg, uint64_t dp);
  Result<uint64_t> double_directory(uint64_t dir_off);
  // The slots of each bucket of S that a split moves (bit j of entry i: bucket i's slot j).
  using MovedSlots = std::array<uint32_t, kMaxNormal + kMaxStash>;
  bool moves_at_split(uint64_t word, uint32_t depth) const {
    return (slot_hash(word).h >> (63 - depth)) & 1;
  }
  void build_new_segment(uint64_t seg, uint64_t fresh, uint32_t depth, uint64_t pattern,
                         MovedSlots* moved);
  void point_directory(Directory* dir, uint32_t depth, uint64_t pattern, uint64_t target);
  // `moved`: what build_new_segment recorded; null (recovery): each key's hash decides.
  void remove_moved(uint64_t seg, uint32_t depth, const MovedSlots* moved = nullptr);
  // Clears and rebuilds every overflow entry and counter of seg from its stash buckets.
  void rebuild_overflow(uint64_t seg);
  void lock_all(uint64_t seg) const;
  void unlock_all(uint64_t seg) const;

  // Maintenance (dash_maint.cc).
  // Calls fn(segment, first entry) once per segment, in directory order; Corruption for a
  // directory whose entries do not form one range per segment.
  Status walk(FunctionRef<Status(uint64_t, uint64_t)> fn) const;
  bool valid_segment(uint64_t off) const;
  // keys=bytes: what a slot's key record may be damaged by (verify); empty if sound.
  std::string record_breach(uint64_t word, const KeyHash& kh, uint8_t fp) const;
  // The directory and its depth after checking they lie in the pool; *dir null: empty table.
  Status load_directory(Directory** dir, uint32_t* depth) const;
  Status finish_split(Directory* dir, uint32_t g, uint64_t i);
  void finish_move(uint64_t seg);
  // Sets kOvfCounted where a counter is non-zero and its flag is not (pools written before
  // the flag existed); idempotent.
  void flag_counters(uint64_t seg);
  void flag_homed(uint64_t seg);
  // Verify (dash_verify.cc).
  bool overflow_covers(uint64_t seg, uint32_t b, uint8_t fp, uint32_t stash) const;
  Status verify_segment(uint64_t seg, uint64_t* keys) const;

  std::unique_ptr<Pool> pool_;
  pm::PersistContext* pc_;
  char* base_;
  DashRoot* root_;
  uint32_t gen_;
  DashGeometry geo_;
  uint32_t slot_mask_;  // alloc bits of the slots in use
  uint32_t stagger_shift_;  // log2 of the segment's block size (a power of two)
  uint64_t stagger_mask_;   // 3 in layout 2, 0 in layout 1
  std::mutex split_mu_;  // splits, directory doubling, the first segment
  std::vector<uint64_t> old_dirs_;  // directories replaced by doublings (split_mu_); freed at close
  bool bytes_;                      // keys=bytes (the root's keys word)
  size_t key_size_;                 // 8; SIZE_MAX in keys=bytes (int_op)
  IndexTraits traits_;              // Traits(), or BytesTraits() in keys=bytes
};

IndexRegistration Registration();

}  // namespace pmindex::hash::dash

#endif  // PMINDEX_HASH_DASH_DASH_H_
