// A pool: one file that holds one persistent index.
//
// The file starts with a 4 KiB header (doc/format.md), then the allocator's chunk table,
// then 256 KiB chunks of blocks. Pointers inside a pool are 8-byte offsets from the pool's
// start (0 = null), so a pool, or a copy of its bytes, opens at any address.
//
// Opening refuses, without writing a byte, anything that is not a healthy pool of the
// requested kind (missing, empty, not a pool, truncated, newer format, bad header checksum,
// already open in another process, other index kind). An open pool holds an exclusive
// advisory lock (flock) on its file. Each successful writable open increments and persists
// the pool's generation and marks the pool dirty; Close (or the destructor) marks it clean.
//
// Thread safety: the accessors are safe from any thread; root/generation updates are 8-byte
// failure-atomic stores. The allocator is thread-safe.
#ifndef PMINDEX_POOL_H_
#define PMINDEX_POOL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "pmindex/options.h"
#include "pmindex/stats.h"
#include "pmindex/status.h"

struct pmem2_map;

namespace pmindex {

namespace pm {
class Allocator;
class PersistContext;
}

// The index kind stored in a pool header: a number that names the index a pool holds. Each
// index states its own number in its registration (IndexTraits::kind); doc/format.md lists
// every number ever assigned. Numbers are part of the on-media format: never reuse or
// renumber one; retire it instead. kNone (0) means "any kind" when opening. Numbers >=
// kFirstTestIndexKind (0xF0000000) are reserved for tests, never used by shipped indexes;
// pools accept them like any other. The registry refuses two indexes with one number.
// Make one with IndexKind{number}.
enum class IndexKind : uint32_t { kNone = 0 };

// First value of the IndexKind range reserved for tests (see IndexKind).
inline constexpr uint32_t kFirstTestIndexKind = 0xF0000000;

// Size of the pool header's index parameter area and of its root area.
inline constexpr size_t kIndexParamsSize = 128;
inline constexpr size_t kRootAreaSize = 2048;

// What a pool header says (read without mapping, for `pmindex info`).
struct PoolInfo {
  std::string path;
  uint32_t format_version = 0;
  IndexKind kind = IndexKind::kNone;
  uint64_t pool_size = 0;     // bytes, as recorded in the header
  uint64_t file_size = 0;     // bytes, as on disk
  uint64_t used_bytes = 0;    // header + chunk table + carved chunks
  uint64_t chunk_size = 0;
  uint64_t chunks_total = 0;
  uint64_t chunks_carved = 0;
  uint64_t generation = 0;
  uint64_t root = 0;
  bool clean = false;         // closed cleanly after its last open
  bool in_use = false;        // another process holds it open right now
  uint64_t created_unix = 0;
  std::string creator_version;
  // The device's health, where libpmem2 can read it (a PM device: DAX, ndctl): the unsafe
  // shutdown count (it grows when the platform lost power without flushing its ADR domain;
  // an increase since the pool was last used means data may be lost) and the number of bad
  // blocks overlapping the file. `health_error` says why they are unavailable otherwise.
  bool has_unsafe_shutdown_count = false;
  uint64_t unsafe_shutdown_count = 0;
  bool has_bad_blocks = false;
  uint64_t bad_blocks = 0;
  std::string health_error;
};

class Pool {
 public:
  // Creates a new pool file of options.pool_size bytes for index `kind` with the given index
  // parameters (at most kIndexParamsSize bytes). Fails with InvalidArgument if the file
  // exists (and is not empty) or the size is too small, OutOfSpace if the file system cannot
  // hold it, IOError if it cannot be written. The file's permissions are exactly
  // options.file_mode (InvalidArgument for bits beyond 07777). Equivalent to
  // CreateUnpublished + Publish.
  static Result<std::unique_ptr<Pool>> Create(const std::string& path, IndexKind kind,
                                              std::string_view index_params,
                                              const Options& options);
  // Creation in two steps, so that a pool appears at `path` only when complete. The pool is
  // built under a temporary name in the same directory (".<name>.creating.<pid>.<random>",
  // locked for as long as the creator lives) and mapped; path() is already `path`. The
  // caller initialises the index in it, then calls Publish(). A pool destroyed or closed
  // before Publish removes its temporary file; temporary files of creators that died (no
  // lock held) are removed by the next creation of the same name.
  static Result<std::unique_ptr<Pool>> CreateUnpublished(const std::string& path,
                                                         IndexKind kind,
                                                         std::string_view index_params,
                                                         const Options& options);
  // Makes the file durable and links it at path() without ever replacing an existing file
  // (renameat2 RENAME_NOREPLACE, else link + unlink; an empty regular file at path() is
  // replaced only while locked). InvalidArgument if another file took the name meanwhile
  // (the pool stays unpublished: destroy it), IOError otherwise. OK if already published.
  Status Publish();
  bool published() const { return temp_path_.empty(); }
  // Opens an existing pool. `kind` = kNone accepts any kind. Errors: NotFound (no file),
  // InvalidArgument (empty file, not a pool, other kind), Corruption (truncated, bad
  // checksum, damaged chunk table), NotSupported (newer format, granularity), Busy (open in
  // another process), IOError.
  static Result<std::unique_ptr<Pool>> Open(const std::string& path, IndexKind kind,
                                            const Options& options);
  // Open if the file exists, else Create.
  static Result<std::unique_ptr<Pool>> OpenOrCreate(const std::string& path, IndexKind kind,
                                                    std::string_view index_params,
                                                    const Options& options);
  // Reads the header without mapping or writing (works on a pool in use).
  // Errors as Open, except Busy (reported in PoolInfo::in_use instead).
  static Result<PoolInfo> ReadInfo(const std::string& path);

  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool();

  // Marks the pool clean, unmaps it and releases the lock. Idempotent.
  Status Close();

  const std::string& path() const { return path_; }
  IndexKind kind() const { return kind_; }
  bool read_only() const { return read_only_; }
  uint64_t size() const { return size_; }
  uint64_t generation() const;
  std::string_view index_params() const;
  // True if the previous open did not end with Close (the pool needs recovery).
  bool was_dirty() const { return was_dirty_; }
  // Bytes of the mapping backed by 2 MiB pages (from /proc/self/smaps), and whether asked.
  uint64_t huge_page_bytes() const;
  bool huge_pages_requested() const { return huge_pages_requested_; }
  // The store granularity libpmem2 reported for the mapping.
  StoreGranularity granularity() const { return granularity_; }
  // True if the file lives in memory (tmpfs, ramfs, hugetlbfs): it survives a process crash
  // but not a power loss, whatever the mode.
  bool memory_backed() const { return memory_backed_; }
  // What a crash preserves for this pool, from its mode and its mapping together, e.g.
  // "survives power loss (ADR)" or "survives process crash; power loss needs PM (file in
  // memory: tmpfs)".
  std::string durability() const;
  // This pool's persistence counters (flushes, fences, media writes), summed over threads.
  PersistCounters counters() const;

  // Address of an offset and offset of an address. Offset 0 is null.
  char* base() const { return base_; }
  template <typename T>
  T* at(uint64_t offset) const {
    return offset == 0 ? nullptr : reinterpret_cast<T*>(base_ + offset);
  }
  uint64_t offset_of(const void* p) const {
    return p == nullptr ? 0 : static_cast<uint64_t>(static_cast<const char*>(p) - base_);
  }
  bool contains(const void* p, size_t n = 1) const {
    auto* c = static_cast<const char*>(p);
    return c >= base_ && c + n <= base_ + size_;
  }

  // The root offset in the header (0 until set). set_root persists it with one 8-byte
  // failure-atomic store: the commit point for a new index root.
  uint64_t root() const;
  void set_root(uint64_t offset);
  // kRootAreaSize bytes in the header page that belong to the index (zeroed at creation and
  // persisted). Writes to it go through the persist seam like any pool write.
  char* root_area() const;

  pm::Allocator& allocator() { return *allocator_; }
  // The persistence seam of this pool (src/pm/persist.h): every write to the pool is made
  // durable through it.
  pm::PersistContext& persist_context() const { return *persist_; }

 private:
  Pool() = default;
  // Maps the pool at `path`. `fd`, if not -1, is the already open and locked file of a fresh
  // pool under its temporary name `temp_path`; otherwise `path` is opened and locked.
  static Result<std::unique_ptr<Pool>> Map(const std::string& path, IndexKind kind,
                                           const Options& options, bool fresh, int fd = -1,
                                           const std::string& temp_path = {});

  std::string path_;
  std::string temp_path_;  // the file's name until Publish; empty once published
  IndexKind kind_ = IndexKind::kNone;
  bool read_only_ = false;
  bool was_dirty_ = false;
  bool huge_pages_requested_ = false;
  StoreGranularity granularity_ = StoreGranularity::kPage;
  bool memory_backed_ = false;
  std::string memory_fs_;  // "tmpfs", "ramfs", "hugetlbfs" when memory_backed_
  int fd_ = -1;
  char* base_ = nullptr;
  uint64_t size_ = 0;
  ::pmem2_map* map_ = nullptr;
  std::unique_ptr<pm::PersistContext> persist_;
  std::unique_ptr<pm::Allocator> allocator_;
};

// What a crash preserves for a pool in `mode` on a mapping of `granularity`; `memory_fs`
// names the file system when the file lives in memory (tmpfs), else empty.
std::string DescribeDurability(PersistMode mode, StoreGranularity granularity,
                               std::string_view memory_fs);

}  // namespace pmindex

#endif  // PMINDEX_POOL_H_
