// Options for pools and indexes, and the persistence mode.
//
// One struct, in-class defaults, "behaviour" fields first, then "performance" fields.
#ifndef PMINDEX_OPTIONS_H_
#define PMINDEX_OPTIONS_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace pmindex {

// Which instructions the persistence seam executes (doc/metrics.md, DESIGN.md section 2).
// The mode is process-wide: opening a pool sets it. The flush/fence *counters* do not depend
// on the mode; they count what the index asked for.
enum class PersistMode : uint8_t {
  kAdr = 0,       // clwb (or clflushopt/clflush) per line + sfence: safe on ADR platforms
  kEadr = 1,      // no flush, compiler barrier only: safe on eADR and against process crash
  kAsync = 2,     // clwb per line, no fence: eADR only (PFtree's asynchronous flushing)
  kAdaptive = 3,  // clwb only for writes > 256 B, no fence: eADR only (PFtree Algorithm 1)
  kVolatile = 4,  // nothing: the DRAM baseline of the same code
};

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

struct Options {
  // ---- behaviour ----

  // Create the pool if the file does not exist (Open only).
  bool create_if_missing = false;
  // Fail if the pool already exists (Create always does).
  bool error_if_exists = false;
  // Size of a new pool in bytes (rounded up to 2 MiB). Default 1 GiB.
  uint64_t pool_size = 1ull << 30;
  // Persistence mode set process-wide when the pool opens. Default: adr.
  PersistMode mode = PersistMode::kAdr;
  // Granularity required of the medium; opening fails with NotSupported if the medium
  // offers a coarser one. Default: page (any file).
  StoreGranularity required_granularity = StoreGranularity::kPage;
  // Open without writing a byte of the file: the pool is mapped copy-on-write, so recovery
  // and even index writes work on a private copy and vanish at close (pmindex check/dump,
  // the crash campaign's checks of recovered images).
  bool read_only = false;
  // A writable OpenIndex first runs the whole open (kind check, recovery, allocator rebuild)
  // on a copy-on-write mapping, so that an open refused for Corruption writes nothing to the
  // file; the price is a second recovery (doc/format.md). Turn it off only where recovery
  // itself is measured. Default: on.
  bool trial_open = true;

  // ---- performance ----

  // Ask the kernel for 2 MiB pages for the mapping (madvise). Default: yes.
  bool huge_pages = true;
  // Extra latency in ns per flushed cache line, paid by spinning at the next fence, to
  // emulate media slower than this machine's DRAM (as WORT, ROART and CCEH did). Default 0.
  uint32_t write_latency_ns = 0;
  // Feed flushed lines to the XPLine media model (media writes, write amplification).
  bool model_media = true;
  // Fault in the whole mapping when the pool opens (madvise MADV_POPULATE_WRITE), so the
  // kernel's page allocation and zeroing are not paid inside later operations. Takes the
  // pool's size in memory at once. Ignored for read_only pools. Default: no (`pmindex bench`
  // turns it on, see --no-prefault).
  bool prefault = false;
};

}  // namespace pmindex

#endif  // PMINDEX_OPTIONS_H_
