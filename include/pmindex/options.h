// Options for pools and indexes, and the persistence mode.
//
// One struct, in-class defaults, "behaviour" fields first, then "performance" fields.
#ifndef PMINDEX_OPTIONS_H_
#define PMINDEX_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pmindex {

// Which instructions the persistence seam executes (doc/metrics.md, DESIGN.md section 2).
// Each pool has its own mode, fixed when it opens; pools in one process never affect each
// other. The flush/fence *counters* do not depend on the mode; they count what the index
// asked for.
enum class PersistMode : uint8_t {
  kAdr = 0,       // clwb (or clflushopt/clflush) per line + sfence: safe on ADR platforms
  kEadr = 1,      // no flush, compiler barrier only: safe on eADR and against process crash
  kAsync = 2,     // clwb per line, no fence: eADR only (PFtree's asynchronous flushing)
  kAdaptive = 3,  // clwb only for writes > 256 B, no fence: eADR only (PFtree Algorithm 1)
  kVolatile = 4,  // nothing: the DRAM baseline of the same code
};

// Where the XPLine media model (Options::model_media) buffers the flushed lines of a pool's
// threads. Optane's write-combining buffer sits in the DIMM and is shared by every thread;
// a model per thread keeps single- and multi-threaded counts free of the others' flushes
// and costs no lock.
enum class MediaModel : uint8_t {
  kPerThread = 0,  // one 64-entry buffer per thread (default: no lock on the flush path)
  kShared = 1,     // one buffer for the pool, under a lock (as the hardware is)
};

// "per-thread", "shared".
const char* MediaModelName(MediaModel model);
// Parses a media model name; false if `name` is neither.
bool ParseMediaModel(std::string_view name, MediaModel* model);

// "adr", "eadr", "async", "adaptive", "volatile".
const char* PersistModeName(PersistMode mode);
// Parses a mode name; false if `name` is not one of the five.
bool ParsePersistMode(std::string_view name, PersistMode* mode);

// Store granularity the caller requires of the pool's medium (as libpmem2 asks for it).
enum class StoreGranularity : uint8_t {
  kPage = 0,       // msync-style: any file (default; fine for tmpfs and disks)
  kCacheLine = 1,  // flush-to-media needed, fences enough: real PM on ADR
  kByte = 2,       // eADR: stores reach persistence domain when visible
};

// Receives one pool's stream of flushes and fences (the crash tracker, a tracer). Handed to
// a pool through Options::persist_hook; it then sees every flush and fence of that pool and
// of no other, from the pool's first write (the generation bump at open) to its close.
// Called in every mode (the hook sees what the code asked for), from the writing thread.
class PersistHook {
 public:
  virtual ~PersistHook() = default;
  // The pool's mapping, once, before any flush of it.
  virtual void on_map(void* base, size_t size) {}
  // `lines` cache lines starting at address first_line (64-byte aligned) are flushed.
  virtual void on_flush(uintptr_t first_line, size_t lines) = 0;
  // A fence: earlier flushes of this pool complete.
  virtual void on_fence() = 0;
};

struct Options {
  // ---- behaviour ----

  // OpenIndex: create the index's pool if the file does not exist. Default: no.
  bool create_if_missing = false;
  // OpenIndex / OpenOrCreateIndex: fail with AlreadyExists if the pool exists (CreateIndex
  // always does, with InvalidArgument). Default: no.
  bool error_if_exists = false;
  // Size of a new pool in bytes (rounded up to 2 MiB). Default 1 GiB.
  uint64_t pool_size = 1ull << 30;
  // Permission bits of a new pool file, as open(2) and pmemobj_create take them; applied
  // exactly (fchmod, so the umask does not narrow them) to the file and to the temporary
  // file it is built in. Default 0600: only the owner reads or writes the pool.
  uint32_t file_mode = 0600;
  // Parameters of the index in a new pool, in the index's own syntax (its registration's
  // `params`, which `pmindex list` shows, are the default and the syntax: a CCEH segment
  // size, a hash table's first size). Recorded in the pool's header; opening reads them from
  // there and ignores this. Default: empty, the index's defaults.
  std::string index_params;
  // Persistence mode of this pool. Default: adr. On a page-granularity mapping of a file
  // system (an ordinary file on ext4/xfs, not DAX, not tmpfs), adr persists by msync of the
  // touched pages, since cache flushes do not reach a disk (Pool::durability() says what a
  // crash preserves).
  PersistMode mode = PersistMode::kAdr;
  // Granularity required of the medium; opening fails with NotSupported if the medium
  // offers a coarser one. Default: page (any file).
  StoreGranularity required_granularity = StoreGranularity::kPage;
  // Open without writing a byte of the file: the pool is mapped copy-on-write, so recovery
  // and even index writes work on a private copy and vanish at close (pmindex check/dump,
  // the crash campaign's checks of recovered images).
  bool read_only = false;
  // Optional observer of this pool's flushes and fences (not owned; must outlive the pool).
  // Default: none.
  PersistHook* persist_hook = nullptr;
  // A writable OpenIndex first runs the whole open (kind check, recovery, allocator rebuild)
  // on a copy-on-write mapping, so that an open refused for Corruption writes nothing to the
  // file; the price is a second recovery (doc/format.md). Turn it off only where recovery
  // itself is measured. Default: on.
  bool trial_open = true;
  // Test aid: fill every block this pool's allocator frees with 0xA5 before it can be
  // handed out again, so a workload on a fresh pool (all zeros) meets the old bytes a reused
  // block holds in a long-lived pool, and a block freed while a durable reference still
  // names it reads as garbage after a crash (the crash campaigns turn it on). Costs a memset
  // per free. Default: off.
  bool poison_freed = false;
  // Largest value a new pool accepts, in bytes (at most 1 GiB). 0 (the default): values are
  // inline only, limited by the index (IndexTraits::max_value_size: 8 bytes for B+trees and
  // hash tables). Non-zero: values of 0..max_value_size bytes of any length on every index;
  // those beyond the index's inline room live in pool blocks of their own, referenced from
  // the index (src/core/value_store.h). Recorded in the pool's header; opening reads it from
  // there and ignores this.
  uint64_t max_value_size = 0;

  // ---- performance ----

  // Ask the kernel for 2 MiB pages for the mapping (madvise). Default: yes.
  bool huge_pages = true;
  // Extra latency in ns per flushed cache line, paid by spinning at the next fence, to
  // emulate media slower than this machine's DRAM (as WORT, ROART and CCEH did). Default 0.
  uint32_t write_latency_ns = 0;
  // Feed flushed lines to the XPLine media model (media writes and write amplification in
  // the pool's counters). A research instrument that costs time per flush. Default: off
  // (`pmindex bench` turns it on).
  bool model_media = false;
  // Which buffer the media model merges flushed lines in (MediaModel). The shared model
  // serialises every flush of the pool on one lock: for accounting runs, not for throughput.
  // Default: per thread.
  MediaModel media_model = MediaModel::kPerThread;
  // With model_media: also count the lines written without a flush, which a CPU cache writes
  // back when it evicts them (an eADR run's writes, lock words on persistent lines). The
  // pool's mapping is write-protected and every fence compares the pages written since the
  // last with a shadow (src/pm/unflushed.h); flushes then count only where the mode executes
  // them. Slow: a measuring instrument. Not with persist_hook. Default: off.
  bool count_unflushed_writes = false;
  // Fault in the whole mapping when the pool opens (madvise MADV_POPULATE_WRITE), so the
  // kernel's page allocation and zeroing are not paid inside later operations. Takes the
  // pool's size in memory at once. Ignored for read_only pools. Default: no (`pmindex bench`
  // turns it on, see --no-prefault).
  bool prefault = false;
};

}  // namespace pmindex

#endif  // PMINDEX_OPTIONS_H_
