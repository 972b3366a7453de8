// The one interface every pmindex index implements, and the registry that creates or opens
// an index by name ("rntree", "wort", ...), so that the workbench, the crash campaign and the
// CLI never name a concrete index.
//
// Keys and values are byte strings. 8-byte unsigned integer keys are encoded big-endian
// (IntKey), so byte order is numeric order and every index accepts them. Indexes that take
// only integer keys (the hybrid B+trees) require keys and values of exactly 8 bytes; larger
// limits are in IndexTraits. A key or value beyond an index's limits gets InvalidArgument,
// never truncation.
//
// Thread safety is stated per index in IndexTraits::concurrency and in its header.
#ifndef PMINDEX_INDEX_H_
#define PMINDEX_INDEX_H_

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "pmindex/block_visitor.h"
#include "pmindex/function_ref.h"
#include "pmindex/iterator.h"
#include "pmindex/options.h"
#include "pmindex/pool.h"
#include "pmindex/stats.h"
#include "pmindex/status.h"
#include "pmindex/write_batch.h"

namespace pmindex {

// An 8-byte unsigned integer key in its order-preserving big-endian byte form.
class IntKey {
 public:
  explicit IntKey(uint64_t v) {
    uint64_t be = __builtin_bswap64(v);
    std::memcpy(bytes_, &be, 8);
  }
  operator std::string_view() const { return {bytes_, 8}; }  // NOLINT: implicit by design
  std::string_view view() const { return {bytes_, 8}; }
  // Decodes an 8-byte big-endian key; `s` must be 8 bytes.
  static uint64_t Decode(std::string_view s) {
    uint64_t be;
    std::memcpy(&be, s.data(), 8);
    return __builtin_bswap64(be);
  }

 private:
  char bytes_[8];
};

// An 8-byte value in native byte order (what the workbench writes).
class IntValue {
 public:
  explicit IntValue(uint64_t v) { std::memcpy(bytes_, &v, 8); }
  operator std::string_view() const { return {bytes_, 8}; }  // NOLINT: implicit by design
  // The first 8 bytes of `s` (fewer: zero-filled). An 8-byte value is one load, not a
  // variable-length copy.
  static uint64_t Decode(std::string_view s) {
    uint64_t v = 0;
    if (s.size() >= 8) [[likely]]
      std::memcpy(&v, s.data(), 8);
    else
      std::memcpy(&v, s.data(), s.size());
    return v;
  }

 private:
  char bytes_[8];
};

// Called once per pair by scan, in key order; return false to stop early.
using ScanCallback = FunctionRef<bool(std::string_view key, std::string_view value)>;

// What an index is and what it accepts.
struct IndexTraits {
  std::string name;             // registry name: "rntree", "wort", "stdmap", ...
  IndexKind kind = IndexKind::kNone;  // pool kind; kNone for pool-less baselines
  bool persistent = true;       // false: volatile (std::map, ART)
  bool ordered = true;          // scan in key order supported
  bool byte_keys = false;       // byte-string keys accepted (else exactly 8 bytes)
  size_t max_key_size = 8;
  size_t max_value_size = 8;    // values of other sizes than 8 allowed only if byte_keys
                                // or any_value_size
  // Values of any size 0..max_value_size accepted also without byte_keys (a pool created
  // with Options::max_value_size: out-of-line values).
  bool any_value_size = false;
  // false: insert and update do not look for the key first (a design's "blind" writes, e.g.
  // NV-Tree's basic variant, `nvtree writes=basic`): both behave as upsert and never return
  // AlreadyExists or NotFound; remove still returns NotFound for an absent key. A pool's
  // variant can set it, so read it from the open index.
  bool conditional_writes = true;
  std::string concurrency;      // e.g. "concurrent (optimistic lock coupling)"
  std::string durability;       // what a crash preserves, for the workbench output
  std::string description;      // one line for `pmindex list`
};

class Index {
 public:
  virtual ~Index() = default;

  virtual const IndexTraits& traits() const = 0;

  // Every operation of an index returned by the registry (CreateIndex, OpenIndex,
  // OpenOrCreateIndex) may also return InvalidArgument when the index is closed ("index is
  // closed"), or when a key or value is outside traits() limits (before the index sees it).

  // Adds key -> value. AlreadyExists if the key is present (nothing written; with
  // traits().conditional_writes false, the value is replaced instead), InvalidArgument
  // if key or value exceed the index's limits, OutOfSpace if the pool is full (the index stays
  // usable: removes make room).
  virtual Status insert(std::string_view key, std::string_view value) = 0;
  // Replaces the value of a present key. NotFound if absent (nothing written; with
  // traits().conditional_writes false, the key is added instead), InvalidArgument,
  // OutOfSpace as insert.
  virtual Status update(std::string_view key, std::string_view value) = 0;
  // insert or update; errors as insert.
  virtual Status upsert(std::string_view key, std::string_view value) = 0;
  // Removes a key. NotFound if absent, InvalidArgument for a key beyond the limits.
  virtual Status remove(std::string_view key) = 0;
  // Copies the value of `key` into *value (if value is not nullptr). OK if found, NotFound if
  // absent, InvalidArgument for a key beyond the limits or a closed index, Corruption if the
  // index met a damaged structure on the way.
  virtual Status lookup(std::string_view key, std::string* value) = 0;
  // Calls fn on up to max_count pairs with key >= start, in key order; returns how many.
  // Unordered indexes and closed ones return 0 (traits().ordered is false): scan_checked
  // tells those apart from an empty range.
  virtual size_t scan(std::string_view start, size_t max_count, ScanCallback fn) = 0;
  // scan with a Status, for callers that must tell "no pairs" from "no scan": OK with
  // *count (if not nullptr) the pairs visited; NotSupported for an unordered index (it has no
  // key order; for_each visits every pair), InvalidArgument for a closed index.
  virtual Status scan_checked(std::string_view start, size_t max_count, ScanCallback fn,
                              size_t* count) {
    if (count != nullptr) *count = 0;
    if (!traits().ordered)
      return Status::NotSupported(traits().name +
                                  " is unordered: it has no key-order scan (for_each visits every pair)");
    const size_t n = scan(start, max_count, fn);
    if (count != nullptr) *count = n;
    return Status::OK();
  }
  // Calls fn once on every pair until fn returns false: in key order for ordered indexes (by
  // default a scan from the smallest key), in an order of their own for unordered ones,
  // which must override it. What it sees under concurrent writers is the index's scan's
  // promise (ordered) or stated in the index's header. OK, InvalidArgument for a closed
  // index, NotSupported for an unordered index that does not override it.
  virtual Status for_each(ScanCallback fn) {
    if (!traits().ordered) return Status::NotSupported(traits().name + " has no iteration");
    const IntKey zero(0);  // the smallest key: 8 zero bytes, or the empty string
    scan(traits().byte_keys ? std::string_view() : zero.view(), SIZE_MAX, fn);
    return Status::OK();
  }

  // Calls fn on up to max_count pairs with key <= start, in descending key order; an empty
  // start has no bound (from the largest key). OK with *count (if not nullptr) the pairs
  // visited; NotSupported for an unordered index, InvalidArgument for a closed one. What it
  // sees under concurrent writers is the forward scan's promise, window by window. The
  // default (src/core/reverse_scan.cc) is built on scan: backward windows that double in key
  // space, each one forward scan, so a call costs O(log(key space)) scans plus the pairs of
  // its last window; an index with a native backward walk overrides it (doc/kv.md lists
  // which). Called by the iterators' Prev and SeekForPrev.
  virtual Status reverse_scan(std::string_view start, size_t max_count, ScanCallback fn,
                              size_t* count);
  // An iterator over the index (include/pmindex/iterator.h): forward and backward in key
  // order, within options' bounds, for ordered indexes; a forward walk of every pair in an
  // order of its own for unordered ones. One generic iterator serves every index: it buffers
  // a batch of pairs from scan (reverse_scan backwards) and refills from the last key, so
  // under concurrent writers each batch has the scan's promise, and keys written between
  // batches may be seen or not. The iterator must not outlive the index object; used after
  // the index was closed its status() is InvalidArgument. Never nullptr.
  virtual std::unique_ptr<Iterator> NewIterator(const IteratorOptions& options);
  // OK if `key` is present, NotFound if not; errors as lookup. By default a lookup that
  // copies nothing.
  virtual Status exists(std::string_view key) { return lookup(key, nullptr); }
  // The number of pairs into *n. Every index today counts by a walk over every pair
  // (for_each): O(n), and under concurrent writers as exact as for_each. InvalidArgument for
  // a closed index.
  virtual Status count(uint64_t* n);
  // lookup into the caller's buffer: OK with the value copied to buffer and *size (if not
  // nullptr) its length; NotFound if absent; InvalidArgument if the value does not fit
  // (nothing copied, *size the length needed: grow and retry), and as lookup. By default a
  // lookup into a thread-local string, which allocates only while a thread meets values
  // longer than any it read before; indexes with inline fixed-size values copy directly.
  virtual Status lookup_into(std::string_view key, std::span<char> buffer, size_t* size);
  // Applies every operation of `batch` in order (Put as upsert, Delete as remove; deleting an
  // absent key is no error). On a persistent index opened through the registry the batch is
  // atomic across a crash: after recovery all of its operations are visible or none
  // (doc/kv.md, "Atomic write batches"); concurrent readers may see it half applied.
  // Errors: InvalidArgument naming the position of the first operation beyond the index's
  // limits (nothing written) or for a closed index; OutOfSpace when the pool lacks the room
  // the batch may need (nothing written), or, rarely, while applying (the batch stays
  // committed and completes at the next Write or open); NotSupported for an index not
  // handed out by the registry.
  virtual Status Write(const WriteBatch& batch) {
    (void)batch;
    return Status::NotSupported(traits().name + ": write batches need an index from the registry");
  }

  // Checks every structural invariant; Corruption naming the first breach.
  virtual Status verify() = 0;
  // Sizes and node counts; empty for a closed index.
  virtual IndexStats stats() = 0;

  // Persistent indexes only (volatile ones return OK / nothing):
  // Finishes or undoes interrupted structural changes and rebuilds volatile structures.
  // Called by OpenIndex after the pool is mapped, before the allocator is rebuilt; it must
  // not allocate.
  virtual Status recover() { return Status::OK(); }
  // Reports every reachable persistent block (see BlockVisitor).
  virtual Status visit_blocks(BlockVisitor& visitor) { return Status::OK(); }
  // The pool the index lives in; nullptr for pool-less indexes.
  virtual Pool* pool() { return nullptr; }
  // Releases the index's resources and closes its pool cleanly. Called by the destructor too.
  virtual Status close() { return Status::OK(); }
};

// A test-only crash bug compiled into an index (src/pm/mutant.h, PMINDEX_MUTANTS builds only):
// the index's code skips or reorders one persist when the mutant is selected, and the crash
// campaign must catch it (tests/crash/campaign_test.cc runs every registered mutant).
struct MutantInfo {
  MutantInfo(std::string name_, std::string breaks_, std::string scenario_ = {},
             std::string caught_by_test_ = {})
      : name(std::move(name_)),
        breaks(std::move(breaks_)),
        scenario(std::move(scenario_)),
        caught_by_test(std::move(caught_by_test_)) {}

  std::string name;      // "<index>.<what is broken>", as the index's code asks pm::mutant
  std::string breaks;    // one line: which persist is skipped or reordered
  // The crash scenario (crashtest/scenarios.h) that reaches the bug, where the campaign's
  // random workload does not; empty: the random workload.
  std::string scenario;
  // Where neither reaches it: the unit test ("Suite.Name") that enables this mutant and
  // asserts that its crash check fails; the mutant sweep then checks that the test exists.
  std::string caught_by_test;
};

// How the registry makes an index of one name, and everything else the program needs to
// know of it: an index describes itself here, and nothing central lists it.
struct IndexRegistration {
  IndexTraits traits;
  // Pool-backed indexes: build the index on a pool. fresh = the pool was just created (its
  // root area is zeroed): initialize a new, empty index, durably. Otherwise attach to an
  // existing one (heavy work belongs in recover()). Must also accept a pool whose index
  // initialization was interrupted by a crash. Called with the pool already open.
  std::function<Result<std::unique_ptr<Index>>(std::unique_ptr<Pool> pool, bool fresh)> attach;
  // Pool-less indexes (volatile or external baselines): build a new, empty one. `path` is a
  // place the index may use for its files (LMDB, RocksDB) or ignore.
  std::function<Result<std::unique_ptr<Index>>(const std::string& path, const Options& options)>
      make;
  // Index parameters recorded in a new pool's header (at most kIndexParamsSize bytes): the
  // defaults, which Options::index_params replaces.
  std::string params;
  // The parameters the crash campaign creates this index's pools with, where the defaults
  // are sized for real use and the campaign's short workloads would not reach the changes
  // it must crash (a hash index's splits, doublings and resizes). Empty: `params`.
  std::string campaign_params;
  // The index's mutation points (names start with traits.name and a dot).
  std::vector<MutantInfo> mutants;
  // The crash campaign's named scenarios (crashtest/scenarios.h) this index takes part in,
  // beside those every persistent index takes. The workbench's workloads follow from the
  // traits (scans need `ordered`, string keys `byte_keys`, values `max_value_size`).
  std::vector<std::string> crash_scenarios;
  // Test-only structures (tests/): in the registry of the programs that link them (every
  // test program), left out of `pmindex crashtest --index all`.
  bool test_only = false;
};

// Adds an index to the registry, for indexes defined outside the library (tests, baselines);
// the library's own indexes are registered by the registry itself on first use. Returns
// false, and changes nothing, if the name is taken, a pool-backed index has kind kNone or the
// kind of another registered index, or a mutant's name does not start with "<name>.". May be
// called from a static initializer (PMINDEX_REGISTER_INDEX).
bool RegisterIndex(IndexRegistration registration);

// Every registered name, persistent indexes first, in registration order within each group.
std::vector<std::string> RegisteredIndexNames();
// The registration for a name; nullptr if none.
const IndexRegistration* FindIndex(std::string_view name);
// The registration for a pool kind; nullptr if none.
const IndexRegistration* FindIndex(IndexKind kind);
// The traits of index `name` made with index parameters `params` (Options::index_params),
// where they differ from the registration's (Dash's keys=bytes takes byte keys): a
// pool-backed index is made once in a small scratch pool in `dir`, which is then removed.
// Empty params, or an index without a pool: the registration's traits.
Result<IndexTraits> TraitsWithParams(std::string_view name, const std::string& params,
                                     const std::string& dir);

// The name of the index registered for a pool kind; "" if none is (a kind of an index this
// build lacks, or of a test-only structure this program does not link).
std::string IndexKindName(IndexKind kind);
// Every registered index's mutants, in registration order.
std::vector<MutantInfo> RegisteredMutants();
// The mutant of that name; nullptr if no registered index has it.
const MutantInfo* FindMutant(std::string_view name);

// Creates a new index `name`. Pool-backed: a new pool file at `path` (InvalidArgument if it
// exists; errors of Pool::Create). Pool-less: `path` is handed to the index. NotFound for an
// unknown name.
Result<std::unique_ptr<Index>> CreateIndex(std::string_view name, const std::string& path,
                                           const Options& options);
// Opens the pool at `path` (any registered kind; `name` empty accepts any, otherwise the kind
// must match), recovers the index and rebuilds the allocator. With options.read_only the
// pool is mapped copy-on-write: recovery runs but nothing reaches the file. With
// options.create_if_missing a missing pool is created (`name` required, else
// InvalidArgument); with options.error_if_exists an existing one is AlreadyExists.
// Errors: those of Pool::Open, NotFound (no such index name, or no pool and no
// create_if_missing), NotSupported (a kind this build lacks), Corruption (recovery or the
// allocator rebuild found damage; nothing is opened).
Result<std::unique_ptr<Index>> OpenIndex(const std::string& path, const Options& options,
                                         std::string_view name = {});
// OpenIndex with create_if_missing: OpenIndex if the file exists, CreateIndex otherwise.
// options.error_if_exists is honoured (AlreadyExists).
Result<std::unique_ptr<Index>> OpenOrCreateIndex(std::string_view name, const std::string& path,
                                                 const Options& options);

}  // namespace pmindex

#define PMINDEX_CONCAT_INNER(a, b) a##b
#define PMINDEX_CONCAT(a, b) PMINDEX_CONCAT_INNER(a, b)
// Registers an index from a static initializer: PMINDEX_REGISTER_INDEX(MakeRegistration());
// In a static library the object file holding it must be linked for it to run.
#define PMINDEX_REGISTER_INDEX(expr) \
  [[maybe_unused]] static const bool PMINDEX_CONCAT(pmindex_registered_, __LINE__) = \
      ::pmindex::RegisterIndex(expr)

#endif  // PMINDEX_INDEX_H_
