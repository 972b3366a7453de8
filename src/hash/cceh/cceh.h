// CCEH (Nam, Cha, Choi, Noh, Nam: "Write-Optimal Dynamic Hashing for Persistent Memory",
// FAST 2019): cacheline-conscious extendible hashing. Layouts: layout.h.
//
// A directory of 2^G segment offsets (G the global depth) in the pool; segments of 64-byte
// buckets, each with a local depth d <= G and a pattern p (the d hash MSBs of its keys). The
// hash's G MSBs pick the directory entry, its low 32 bits the home bucket; a key lives in one
// of `probe` buckets from its home (linear probing, wrapping in the segment; the paper's
// probing unit of 4 lines). 8-byte integer keys and values; a per-bucket validity bitmap
// tells a pair from an empty slot, so every 8-byte key (0 and UINT64_MAX too) is storable.
//
// Insert into a free slot (bit clear): key and value, persisted; then the valid bit,
// persisted. Into a stale slot (a key a split left behind, lazy deletion): value, persisted,
// then the key, persisted (the old key keeps the slot stale until the key store commits).
// Update: the value, one 8-byte store, persisted. Remove: the valid bit, persisted.
//
// Segment split, of full segment S (depth d, pattern p), S locked:
//   1. copy S into a new block S' (same positions), keep valid only the pairs whose hash has
//      bit d+1 set, shape (d+1, 2p+1), S' locked; persist S' whole;
//   2. under the directory mutex: if d == G, double the directory (below);
//   3. point the upper half of S's 2^(G-d) entries at S' (8-byte stores), persisted;
//   4. S.shape = (d+1, 2p) (one 8-byte word), persisted; unlock S' and S.
// S keeps the moved pairs: they no longer match its pattern and are ignored (lazy deletion).
// Crash before 3 starts: S' is unreachable (the allocator rebuild frees it). During 3 or
// before 4: recovery finds entries of S's range naming S' (depth d+1, pattern 2p+1) and rolls
// the split forward (3 and 4 again, same order). Step 4 before 3 would lose the moved pairs
// (the mutant cceh.shape_before_dir).
//
// Doubling, under the directory mutex: a new directory of depth G+1 (entry j = old j/2) is
// written and persisted whole, then the root's `dir` switched (8-byte store, persisted), then
// published to readers (`dir_`), then the old one retired through the pool's epoch. A crash
// before the switch leaves the old directory in force and the new block unreachable.
//
// Recovery walks the directory and rolls forward a split interrupted between 3 and 4
// (recover()); anything else out of place is Corruption. Segment locks need nothing: they
// carry the pool generation, so a lock a crash left set is free after reopening.
//
// Concurrency (as the paper): writers lock the key's segment (pm::VersionLock in its header,
// pool generation) and hold it across their persists; a split also takes the directory mutex
// (segment lock first). Readers take no lock: they read the published directory, the
// segment's shape and buckets between VersionLock::ReadBegin (which waits while a writer
// holds the lock) and ReadValidate, and retry if a writer came between or the segment no
// longer covers the key. So a reader sees only what writers finished persisting, and only
// directories that are durable (`dir_` is published after the root's switch is persisted).
// Segments are never freed while the index is open (CCEH never merges them); directories
// are retired through the epoch, and every operation holds an epoch guard.
//
// for_each walks the hash space in order, each segment read as one consistent state: under
// concurrent writers it reports every pair present throughout, each key at most once (a key
// is reported only at its hash's place), not a snapshot.
#ifndef PMINDEX_HASH_CCEH_CCEH_H_
#define PMINDEX_HASH_CCEH_CCEH_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hash/cceh/layout.h"
#include "pm/persist.h"
#include "pm/version_lock.h"
#include "pmindex/index.h"

namespace pmindex::hash::cceh {

// The geometry chosen at creation, from the index parameters "segment_bytes=N probe=P".
struct Geometry {
  uint32_t segment_bytes = 16384;  // a multiple of 64 in [256, 65536]
  uint32_t probe = 4;             // buckets of a probing unit (at most the bucket count)
  uint32_t buckets() const { return segment_bytes / 64 - 1; }
};
// Parses index parameters; InvalidArgument for a value out of range.
Result<Geometry> ParseGeometry(std::string_view params);
// The registration's default parameters: the paper's 16 KiB segments (255 buckets here).
inline constexpr const char* kDefaultParams = "cceh segment_bytes=16384 probe=4";
// The crash campaign's (IndexRegistration::campaign_params): 1 KiB segments (15 buckets), so
// that its workloads of a few hundred keys split segments and double the directory.
inline constexpr const char* kCampaignParams = "cceh segment_bytes=1024 probe=4";

class CcehIndex final : public Index {
 public:
  static IndexTraits Traits();
  static Result<std::unique_ptr<Index>> Attach(std::unique_ptr<Pool> pool, bool fresh);
  ~CcehIndex() override { close().IgnoreError(); }

  const IndexTraits& traits() const override;
  Status insert(std::string_view key, std::string_view value) override;
  Status update(std::string_view key, std::string_view value) override;
  Status upsert(std::string_view key, std::string_view value) override;
  Status remove(std::string_view key) override;
  Status lookup(std::string_view key, std::string* value) override;
  size_t scan(std::string_view, size_t, ScanCallback) override { return 0; }
  Status for_each(ScanCallback fn) override;
  Status verify() override;
  IndexStats stats() override;
  Status recover() override;
  Status visit_blocks(BlockVisitor& visitor) override;
  Pool* pool() override { return pool_.get(); }
  Status close() override;

  // Tests: the directory offset readers use now (0: none), and the global depth.
  uint64_t published_directory() const { return dir_.load(std::memory_order_acquire); }
  uint32_t global_depth() const;
  const Geometry& geometry() const { return geo_; }

 private:
  enum class Op : uint8_t { kInsert, kUpdate, kUpsert };
  // Where a key is, or may go, in a locked segment.
  struct Place {
    Bucket* bucket = nullptr;
    int slot = -1;
  };
  CcehIndex(std::unique_ptr<Pool> pool, Geometry geo);

  Segment* seg(uint64_t off) const { return reinterpret_cast<Segment*>(base_ + off); }
  Directory* dir(uint64_t off) const { return reinterpret_cast<Directory*>(base_ + off); }
  uint64_t segment_for(const Directory* d, uint64_t h) const;
  Status check_key(std::string_view key) const;

  // Reads (cceh.cc).
  bool find(uint64_t k, uint64_t h, uint64_t* value) const;
  bool probe(const Segment* s, uint64_t k, uint64_t h, uint64_t* value) const;

  // Writes (cceh.cc).
  Status put(Op op, uint64_t k, uint64_t v);
  Status put_once(Op op, uint64_t k, uint64_t h, uint64_t v);
  Status erase(uint64_t k);
  // The segment k belongs to, locked (its locked word in *held); nullptr: no table yet.
  Segment* lock_segment(uint64_t h, uint64_t* held);
  void unlock(Segment* s, uint64_t held) { pm::VersionLock::Release(&s->header.lock, held); }
  // Persists [p, p+n), the commit of a write, and unlocks (the mutant unlocks first).
  void commit_and_unlock(Segment* s, uint64_t held, const void* p, size_t n);
  // Finds k (found) and the first free slot of its probing unit in locked segment s.
  void locate(Segment* s, uint64_t k, uint64_t h, Place* found, Place* free) const;
  void write_pair(Segment* s, uint64_t held, const Place& at, uint64_t k, uint64_t v);
  Status create_table();

  // Structure changes (cceh_split.cc).
  Status split(Segment* s);
  uint64_t build_split(const Segment* s, uint64_t block, uint32_t depth, uint64_t pattern);
  Result<uint64_t> double_directory(uint64_t old_dir);

  // Maintenance (cceh_maint.cc).
  // Checks the directory at `d` against its segments; with repair, rolls forward an
  // interrupted split, else reports it as Corruption.
  Status walk_directory(uint64_t d, bool repair);
  Status check_segment(uint64_t off) const;
  Status verify_segment(const Segment* s, std::vector<uint64_t>* keys) const;
  // Reads one consistent state of segment s: its shape and its pairs (belonging ones).
  void read_segment(const Segment* s, uint64_t* shape,
                    std::vector<std::pair<uint64_t, uint64_t>>* pairs) const;
  // Calls fn(offset, segment) once per distinct segment of directory d, in entry order.
  template <typename Fn>
  Status for_each_segment(uint64_t d, Fn&& fn) const;

  std::unique_ptr<Pool> pool_;
  pm::PersistContext* pc_;
  char* base_;
  Root* root_;
  Geometry geo_;
  uint32_t nbuckets_;
  uint64_t segment_block_;  // bytes allocated per segment
  uint32_t lock_gen_;       // the generation segment locks carry (the pool's)
  std::atomic<uint64_t> dir_{0};  // the directory readers use: published after it is durable
  std::mutex dir_mu_;  // directory entries, doubling, creation of the table
};

IndexRegistration Registration();

}  // namespace pmindex::hash::cceh

#endif  // PMINDEX_HASH_CCEH_CCEH_H_
