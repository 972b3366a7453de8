#include "pmindex/pool.h"

#include <dirent.h>
#include <fcntl.h>
#include <libpmem2.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <vector>

#include "pm/alloc.h"
#include "pm/crc32c.h"
#include "pm/persist.h"
#include "pm/kind_label.h"
#include "pm/pool_format.h"

namespace pmindex {
namespace {

using pm::PoolHeader;

std::string Errno(int e) { return std::strerror(e); }

Status PoolError(Status (*make)(std::string_view), const std::string& path,
                 const std::string& reason) {
  return make(path + ": " + reason);
}

uint32_t HeaderCrc(const PoolHeader& h) { return pm::crc32c(&h, pm::kHeaderCrcCovered); }

// Layout of a pool of `size` bytes: chunk table right after the header, chunks from the first
// chunk-aligned offset after the table.
void ComputeLayout(uint64_t size, uint64_t* table_offset, uint64_t* chunk_count,
                   uint64_t* data_offset) {
  const uint64_t max_chunks = size / pm::kChunkSize;
  *table_offset = pm::kHeaderSize;
  const uint64_t table_end = pm::kHeaderSize + max_chunks * 8;
  *data_offset = (table_end + pm::kChunkSize - 1) / pm::kChunkSize * pm::kChunkSize;
  *chunk_count = (size - *data_offset) / pm::kChunkSize;
}

// Reads and validates the header of an open file; writes nothing. `kind` kNone = any.
Status ReadHeader(int fd, const std::string& path, IndexKind kind, PoolHeader* h,
                  uint64_t* file_size) {
  struct stat st;
  if (fstat(fd, &st) != 0) return PoolError(Status::IOError, path, "fstat: " + Errno(errno));
  if (!S_ISREG(st.st_mode)) return PoolError(Status::InvalidArgument, path, "not a regular file");
  *file_size = static_cast<uint64_t>(st.st_size);
  if (st.st_size == 0) {
    return PoolError(Status::InvalidArgument, path, "empty file, not a pmindex pool");
  }
  std::memset(h, 0, sizeof(*h));
  ssize_t n = pread(fd, h, sizeof(*h), 0);
  if (n < 0) return PoolError(Status::IOError, path, "read: " + Errno(errno));
  if (static_cast<size_t>(n) < sizeof(h->magic) ||
      std::memcmp(h->magic, pm::kPoolMagic, sizeof(h->magic)) != 0) {
    return PoolError(Status::InvalidArgument, path, "not a pmindex pool (bad magic)");
  }
  if (static_cast<size_t>(n) < sizeof(*h)) {
    return PoolError(Status::Corruption, path,
                     "truncated pool: " + std::to_string(n) + " bytes, shorter than its header");
  }
  if (h->format_version > pm::kFormatVersion) {
    return PoolError(Status::NotSupported, path,
                     "pool format version " + std::to_string(h->format_version) +
                         " is newer than this pmindex supports (" +
                         std::to_string(pm::kFormatVersion) + ")");
  }
  if (HeaderCrc(*h) != h->header_crc) {
    return PoolError(Status::Corruption, path, "header checksum mismatch");
  }
  if (h->format_version == 0) {
    return PoolError(Status::Corruption, path, "format version 0");
  }
  uint64_t table_offset, chunk_count, data_offset;
  if (h->pool_size < pm::kPoolAlignment || h->chunk_size != pm::kChunkSize) {
    return PoolError(Status::Corruption, path, "implausible pool size or chunk size in header");
  }
  ComputeLayout(h->pool_size, &table_offset, &chunk_count, &data_offset);
  if (h->chunk_table_offset != table_offset || h->chunk_count != chunk_count ||
      h->data_offset != data_offset) {
    return PoolError(Status::Corruption, path, "header layout fields disagree with pool size");
  }
  if (*file_size < h->pool_size) {
    return PoolError(Status::Corruption, path,
                     "truncated pool: file has " + std::to_string(*file_size) +
                         " bytes, header says " + std::to_string(h->pool_size));
  }
  if (kind != IndexKind::kNone && h->kind != static_cast<uint32_t>(kind)) {
    return PoolError(Status::InvalidArgument, path,
                     "pool holds index kind " + pm::KindLabel(h->kind) + ", not " +
                         pm::KindLabel(static_cast<uint32_t>(kind)));
  }
  return Status::OK();
}

pmem2_granularity ToPmem2(StoreGranularity g) {
  switch (g) {
    case StoreGranularity::kByte: return PMEM2_GRANULARITY_BYTE;
    case StoreGranularity::kCacheLine: return PMEM2_GRANULARITY_CACHE_LINE;
    case StoreGranularity::kPage: return PMEM2_GRANULARITY_PAGE;
  }
  return PMEM2_GRANULARITY_PAGE;
}

StoreGranularity FromPmem2(pmem2_granularity g) {
  switch (g) {
    case PMEM2_GRANULARITY_BYTE: return StoreGranularity::kByte;
    case PMEM2_GRANULARITY_CACHE_LINE: return StoreGranularity::kCacheLine;
    case PMEM2_GRANULARITY_PAGE: return StoreGranularity::kPage;
  }
  return StoreGranularity::kPage;
}

// "tmpfs", "ramfs" or "hugetlbfs" if the open file lives in memory, else "".
std::string MemoryFileSystem(int fd) {
  struct statfs fs;
  if (fstatfs(fd, &fs) != 0) return {};
  switch (static_cast<unsigned long>(fs.f_type)) {
    case 0x01021994ul: return "tmpfs";      // TMPFS_MAGIC
    case 0x858458f6ul: return "ramfs";      // RAMFS_MAGIC
    case 0x958458f6ul: return "hugetlbfs";  // HUGETLBFS_MAGIC
  }
  return {};
}

// What libpmem2 knows of the device under the file: its unsafe shutdown count and the bad
// blocks overlapping the file. Both need a PM device (DAX with ndctl); on other media the
// fields stay unset and health_error says why.
void ReadDeviceHealth(int fd, PoolInfo* info) {
  pmem2_source* src = nullptr;
  if (pmem2_source_from_fd(&src, fd) != 0) {
    info->health_error = std::string("libpmem2: ") + pmem2_errormsg();
    return;
  }
  uint64_t usc = 0;
  if (pmem2_source_device_usc(src, &usc) == 0) {
    info->has_unsafe_shutdown_count = true;
    info->unsafe_shutdown_count = usc;
  } else {
    info->health_error = std::string("unsafe shutdown count: ") + pmem2_errormsg();
  }
  pmem2_badblock_context* bb = nullptr;
  if (pmem2_badblock_context_new(&bb, src) == 0) {
    pmem2_badblock block;
    info->has_bad_blocks = true;
    while (pmem2_badblock_next(bb, &block) == 0) ++info->bad_blocks;
    pmem2_badblock_context_delete(&bb);
  } else if (info->health_error.empty()) {
    info->health_error = std::string("bad blocks: ") + pmem2_errormsg();
  }
  pmem2_source_delete(&src);
}

// Opens an existing pool file without ever blocking: a FIFO or a device at `path` would make
// open(2) wait forever (a FIFO for a writer) or talk to hardware, so anything but a regular
// file is refused before it is opened, and again after (the name may have changed between).
int OpenRegularFile(const std::string& path, bool writable, Status* error) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    *error = errno == ENOENT ? PoolError(Status::NotFound, path, "no such file")
                             : PoolError(Status::IOError, path, "cannot stat: " + Errno(errno));
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = PoolError(Status::InvalidArgument, path, "not a regular file");
    return -1;
  }
  int fd = ::open(path.c_str(),
                  (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    *error = errno == ENOENT ? PoolError(Status::NotFound, path, "no such file")
                             : PoolError(Status::IOError, path, "cannot open: " + Errno(errno));
    return -1;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    *error = PoolError(Status::InvalidArgument, path, "not a regular file");
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// ".<name>.creating." : the prefix of the temporary names a pool named <name> is built under.
std::string TempPrefix(const std::string& path) { return "." + BaseName(path) + ".creating."; }

std::string TempPath(const std::string& path) {
  uint64_t nonce = 0;
  if (getrandom(&nonce, sizeof(nonce), 0) != static_cast<ssize_t>(sizeof(nonce))) {
    nonce = static_cast<uint64_t>(std::time(nullptr)) ^ reinterpret_cast<uintptr_t>(&nonce);
  }
  char tail[48];
  std::snprintf(tail, sizeof(tail), "%d.%016" PRIx64, static_cast<int>(getpid()), nonce);
  const std::string dir = DirName(path);
  return (dir == "/" ? std::string() : dir) + "/" + TempPrefix(path) + tail;
}

// A creator holds the lock on its temporary file from the moment it exists until it is
// published or removed, so an unlocked one belongs to a creator that died (kill -9 during
// creation). The age test covers the instant between a creator's open(O_EXCL) and its flock.
void RemoveStaleTempFiles(const std::string& path) {
  const std::string dir = DirName(path), prefix = TempPrefix(path);
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  const int dfd = dirfd(d);
  const time_t now = std::time(nullptr);
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) != 0) continue;
    int fd = openat(dfd, e->d_name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0) continue;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && now - st.st_mtime > 60 &&
        flock(fd, LOCK_EX | LOCK_NB) == 0) {
      unlinkat(dfd, e->d_name, 0);
    }
    ::close(fd);  // releases the lock
  }
  closedir(d);
}

void SyncDirectory(const std::string& path) {
  int dfd = ::open(DirName(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    ::close(dfd);
  }
}

Status AllocateStatus(const std::string& path, uint64_t size, int e) {
  return PoolError(e == ENOSPC ? Status::OutOfSpace : Status::IOError, path,
                   "cannot allocate " + std::to_string(size) + " bytes: " + Errno(e));
}

}  // namespace

std::string DescribeDurability(PersistMode mode, StoreGranularity granularity,
                               std::string_view memory_fs) {
  if (mode == PersistMode::kVolatile) {
    return "survives process crash only (volatile mode: no flush, no fence)";
  }
  if (!memory_fs.empty()) {
    return "survives process crash; power loss needs PM (file in memory: " +
           std::string(memory_fs) + ")";
  }
  switch (granularity) {
    case StoreGranularity::kByte:
      return "survives power loss (eADR medium)";
    case StoreGranularity::kCacheLine:
      return mode == PersistMode::kAdr ? "survives power loss (ADR)"
                                       : "survives process crash; power loss needs eADR";
    case StoreGranularity::kPage:
      break;
  }
  return mode == PersistMode::kAdr
             ? "survives power loss (msync of touched pages per flush)"
             : "survives process crash; power loss needs msync (adr mode)";
}

std::string Pool::durability() const {
  return DescribeDurability(persist_->mode(), granularity_, memory_fs_);
}

PersistCounters Pool::counters() const { return persist_->counters(); }

Result<std::unique_ptr<Pool>> Pool::Create(const std::string& path, IndexKind kind,
                                           std::string_view index_params,
                                           const Options& options) {
  Result<std::unique_ptr<Pool>> pool = CreateUnpublished(path, kind, index_params, options);
  if (!pool.ok()) return pool;
  if (Status s = pool.value()->Publish(); !s.ok()) return s;
  return pool;
}

Result<std::unique_ptr<Pool>> Pool::CreateUnpublished(const std::string& path, IndexKind kind,
                                                      std::string_view index_params,
                                                      const Options& options) {
  if (index_params.size() > kIndexParamsSize) {
    return PoolError(Status::InvalidArgument, path, "index parameters exceed 128 bytes");
  }
  if (options.max_value_size > pm::kMaxValueSizeLimit) {
    return PoolError(Status::InvalidArgument, path,
                     "max_value_size " + std::to_string(options.max_value_size) +
                         " exceeds 1 GiB");
  }
  const uint64_t size =
      (options.pool_size + pm::kPoolAlignment - 1) / pm::kPoolAlignment * pm::kPoolAlignment;
  if (size < options.pool_size) {
    return PoolError(Status::InvalidArgument, path,
                     "pool size " + std::to_string(options.pool_size) + " is too large");
  }
  if (size < pm::kPoolAlignment) {
    return PoolError(Status::InvalidArgument, path, "pool size must be at least 2 MiB");
  }
  if ((options.file_mode & ~07777u) != 0) {
    return PoolError(Status::InvalidArgument, path,
                     "file mode " + std::to_string(options.file_mode) + " has bits beyond 07777");
  }
  // Publish checks again; this only spares building a pool that cannot be linked.
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && !(S_ISREG(st.st_mode) && st.st_size == 0)) {
    return PoolError(Status::InvalidArgument, path, "file exists; will not overwrite it");
  }
  RemoveStaleTempFiles(path);
  // The pool is built under a name of its own: nobody else opens, locks or removes it, and a
  // crash at any point leaves `path` as it was (absent) plus a temporary file.
  const std::string temp = TempPath(path);
  // Created owner-only, then given exactly options.file_mode (fchmod: the umask narrows
  // open's mode, not fchmod's); the rename keeps it for `path`.
  int fd = ::open(temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return PoolError(Status::IOError, path, "cannot create " + temp + ": " + Errno(errno));
  auto fail = [&](Status s) {
    ::unlink(temp.c_str());
    ::close(fd);
    return s;
  };
  if (::fchmod(fd, static_cast<mode_t>(options.file_mode)) != 0) {
    return fail(PoolError(Status::IOError, path, "cannot set the mode of " + temp + ": " +
                                                     Errno(errno)));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    return fail(PoolError(Status::IOError, path, "cannot lock " + temp + ": " + Errno(errno)));
  }
  if (int e = posix_fallocate(fd, 0, static_cast<off_t>(size)); e != 0) {
    return fail(AllocateStatus(path, size, e));
  }
  auto h = std::make_unique<PoolHeader>();
  std::memset(h.get(), 0, sizeof(PoolHeader));
  std::memcpy(h->magic, pm::kPoolMagic, sizeof(h->magic));
  h->format_version =
      options.max_value_size != 0 ? pm::kFormatVersion : pm::kFormatVersionInlineValues;
  h->max_value_size = options.max_value_size;
  h->kind = static_cast<uint32_t>(kind);
  h->pool_size = size;
  h->chunk_size = pm::kChunkSize;
  ComputeLayout(size, &h->chunk_table_offset, &h->chunk_count, &h->data_offset);
  h->created_unix = static_cast<uint64_t>(std::time(nullptr));
  std::snprintf(h->creator_version, sizeof(h->creator_version), "pmindex %s", PMINDEX_VERSION);
  std::memcpy(h->index_params, index_params.data(), index_params.size());
  h->header_crc = HeaderCrc(*h);
  h->generation = 0;  // Map() bumps it to 1
  h->clean = 1;
  if (pwrite(fd, h.get(), sizeof(PoolHeader), 0) != static_cast<ssize_t>(sizeof(PoolHeader))) {
    return fail(PoolError(Status::IOError, path, "cannot write header: " + Errno(errno)));
  }
  return Map(path, kind, options, /*fresh=*/true, fd, temp);  // removes `temp` on failure
}

Status Pool::Publish() {
  if (temp_path_.empty()) return Status::OK();
  // Everything the index wrote is on media before the name makes the pool visible.
  if (fsync(fd_) != 0) return PoolError(Status::IOError, path_, "fsync: " + Errno(errno));
  int e = 0;
  if (renameat2(AT_FDCWD, temp_path_.c_str(), AT_FDCWD, path_.c_str(), RENAME_NOREPLACE) != 0) {
    e = errno;
    if (e == EINVAL || e == ENOSYS || e == ENOTSUP) {  // file system without RENAME_NOREPLACE
      e = ::link(temp_path_.c_str(), path_.c_str()) == 0 ? 0 : errno;
      if (e == 0) ::unlink(temp_path_.c_str());
    }
  }
  if (e == EEXIST) {
    // An empty regular file at `path` (made by mkstemp, say) may be replaced, but only while
    // we hold its lock and it is still the file named `path`: two creators racing for one
    // empty file cannot both replace it.
    int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    struct stat held, named;
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &held) == 0 &&
        S_ISREG(held.st_mode) && held.st_size == 0 && ::lstat(path_.c_str(), &named) == 0 &&
        named.st_dev == held.st_dev && named.st_ino == held.st_ino) {
      e = ::rename(temp_path_.c_str(), path_.c_str()) == 0 ? 0 : errno;
    }
    if (fd >= 0) ::close(fd);
  }
  if (e == EEXIST) {
    return PoolError(Status::InvalidArgument, path_, "file exists; will not overwrite it");
  }
  if (e != 0) {
    return PoolError(Status::IOError, path_, "cannot link " + temp_path_ + ": " + Errno(e));
  }
  temp_path_.clear();
  SyncDirectory(path_);
  return Status::OK();
}

Result<std::unique_ptr<Pool>> Pool::Open(const std::string& path, IndexKind kind,
                                         const Options& options) {
  return Map(path, kind, options, /*fresh=*/false);
}

Result<std::unique_ptr<Pool>> Pool::OpenOrCreate(const std::string& path, IndexKind kind,
                                                 std::string_view index_params,
                                                 const Options& options) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && st.st_size > 0) return Open(path, kind, options);
  Result<std::unique_ptr<Pool>> created = Create(path, kind, index_params, options);
  // Another creator published first: open its pool (Busy while it holds it).
  if (!created.ok() && ::stat(path.c_str(), &st) == 0 && st.st_size > 0) {
    return Open(path, kind, options);
  }
  return created;
}

namespace {

// How a pool's mapping persists and is counted.
pm::PersistSettings SettingsFor(const Options& options, bool read_only,
                                StoreGranularity granularity, bool memory_backed) {
  pm::PersistSettings settings;
  settings.mode = options.mode;
  settings.model_media = options.model_media;
  settings.media_model = options.media_model;
  settings.track_unflushed = options.count_unflushed_writes && !read_only;
  settings.write_latency_ns = options.write_latency_ns;
  settings.hook = options.persist_hook;
  // Cache flushes do not reach a disk: a file system's page-granularity mapping is made
  // durable by msync. A file in memory has nothing to write back to.
  settings.msync = options.mode == PersistMode::kAdr && !read_only &&
                   granularity == StoreGranularity::kPage && !memory_backed;
  return settings;
}

}  // namespace

Result<std::unique_ptr<Pool>> Pool::Map(const std::string& path, IndexKind kind,
                                        const Options& options, bool fresh, int fd,
                                        const std::string& temp_path) {
  const bool read_only = options.read_only && !fresh;
  if (fd < 0) {
    Status error;
    fd = OpenRegularFile(path, !read_only, &error);
    if (fd < 0) return error;
  }
  auto pool = std::unique_ptr<Pool>(new Pool);
  pool->fd_ = fd;  // closed by ~Pool on any failure below
  pool->path_ = path;
  pool->temp_path_ = temp_path;  // removed by ~Pool on any failure below
  pool->read_only_ = read_only;
  PoolHeader h;
  uint64_t file_size = 0;
  if (Status s = ReadHeader(fd, path, kind, &h, &file_size); !s.ok()) return s;
  if (flock(fd, (read_only ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
    return PoolError(Status::Busy, path, "already open in another process");
  }
  // A sparse pool (copied with cp --sparse=always, say) would take a SIGBUS at the first
  // store into a hole once its file system is full. Backing every byte now turns that into
  // an error here. A file with as many blocks as bytes has no hole and is left alone (an
  // fallocate over an allocated 1 GiB tmpfs file still costs ~65 ms); a fresh pool was
  // allocated at creation.
  if (struct stat st; !read_only && !fresh && fstat(fd, &st) == 0 &&
                      static_cast<uint64_t>(st.st_blocks) * 512 < h.pool_size) {
    if (int e = posix_fallocate(fd, 0, static_cast<off_t>(h.pool_size)); e != 0) {
      return AllocateStatus(path, h.pool_size, e);
    }
  }

  pmem2_config* cfg = nullptr;
  pmem2_source* src = nullptr;
  if (pmem2_config_new(&cfg) != 0 || pmem2_source_from_fd(&src, fd) != 0) {
    if (cfg) pmem2_config_delete(&cfg);
    return PoolError(Status::IOError, path, std::string("libpmem2: ") + pmem2_errormsg());
  }
  pmem2_config_set_required_store_granularity(cfg, ToPmem2(options.required_granularity));
  pmem2_config_set_length(cfg, h.pool_size);
  if (read_only) {
    // Copy-on-write: recovery may run, nothing reaches the file.
    pmem2_config_set_sharing(cfg, PMEM2_PRIVATE);
  }
  int rc = pmem2_map_new(&pool->map_, cfg, src);
  pmem2_source_delete(&src);
  pmem2_config_delete(&cfg);
  if (rc != 0) {
    pool->map_ = nullptr;
    if (rc == PMEM2_E_GRANULARITY_NOT_SUPPORTED) {
      return PoolError(Status::NotSupported, path,
                       std::string("the medium cannot give the required store granularity: ") +
                           pmem2_errormsg());
    }
    return PoolError(Status::IOError, path, std::string("libpmem2 map: ") + pmem2_errormsg());
  }
  pool->base_ = static_cast<char*>(pmem2_map_get_address(pool->map_));
  pool->size_ = h.pool_size;
  pool->kind_ = static_cast<IndexKind>(h.kind);
  pool->granularity_ = FromPmem2(pmem2_map_get_store_granularity(pool->map_));
  if (options.huge_pages) {
    pool->huge_pages_requested_ = true;
    madvise(pool->base_, pool->size_, MADV_HUGEPAGE);  // advisory: tmpfs may say no
  }
  if (options.prefault && !read_only) {
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels say EINVAL and we go on unfaulted
#endif
    madvise(pool->base_, pool->size_, MADV_POPULATE_WRITE);  // writes no byte of the file
  }

  pool->memory_fs_ = MemoryFileSystem(fd);
  pool->memory_backed_ = !pool->memory_fs_.empty();
  pool->persist_ = std::make_unique<pm::PersistContext>(
      SettingsFor(options, read_only, pool->granularity_, pool->memory_backed_));
  if (Status s = pool->persist_->map(pool->base_, pool->size_); !s.ok()) return s;
  if (options.persist_hook != nullptr) options.persist_hook->on_map(pool->base_, pool->size_);
  pm::PersistContext& pc = *pool->persist_;

  auto* hdr = reinterpret_cast<PoolHeader*>(pool->base_);
  pool->was_dirty_ = hdr->clean == 0;
  // Each open gets a new generation (locks taken by earlier generations are free), then the
  // pool is marked dirty until Close. Each is one 8-byte failure-atomic store.
  __atomic_store_n(&hdr->generation, hdr->generation + 1, __ATOMIC_RELEASE);
  pc.persist(&hdr->generation, sizeof(hdr->generation));
  __atomic_store_n(&hdr->clean, 0, __ATOMIC_RELEASE);
  pc.persist(&hdr->clean, sizeof(hdr->clean));

  pool->allocator_ = std::make_unique<pm::Allocator>(
      pool->base_, reinterpret_cast<uint64_t*>(pool->base_ + hdr->chunk_table_offset),
      hdr->chunk_count, hdr->data_offset, pc, options.poison_freed);
  return pool;
}

// A destructor cannot report an error: users who need to see one call Close() first.
Pool::~Pool() { Close().IgnoreError(); }

Status Pool::Close() {
  if (!temp_path_.empty()) {  // never published: the pool was never anyone else's
    ::unlink(temp_path_.c_str());
    temp_path_.clear();
  }
  if (map_ != nullptr) {
    auto* hdr = reinterpret_cast<PoolHeader*>(base_);
    if (!read_only_) {
      __atomic_store_n(&hdr->clean, 1, __ATOMIC_RELEASE);
      persist_->persist(&hdr->clean, sizeof(hdr->clean));
    }
    allocator_.reset();
    persist_->unmap();
    pmem2_map_delete(&map_);
    map_ = nullptr;
    base_ = nullptr;
  }
  if (fd_ >= 0) {
    ::close(fd_);  // releases the flock
    fd_ = -1;
  }
  return Status::OK();
}

uint64_t Pool::generation() const {
  return __atomic_load_n(&reinterpret_cast<PoolHeader*>(base_)->generation, __ATOMIC_ACQUIRE);
}

std::string_view Pool::index_params() const {
  return {reinterpret_cast<PoolHeader*>(base_)->index_params, kIndexParamsSize};
}

uint64_t Pool::root() const {
  return __atomic_load_n(&reinterpret_cast<PoolHeader*>(base_)->root, __ATOMIC_ACQUIRE);
}

void Pool::set_root(uint64_t offset) {
  auto* hdr = reinterpret_cast<PoolHeader*>(base_);
  __atomic_store_n(&hdr->root, offset, __ATOMIC_RELEASE);
  persist_->persist(&hdr->root, sizeof(hdr->root));
}

char* Pool::root_area() const { return reinterpret_cast<PoolHeader*>(base_)->root_area; }

uint64_t Pool::huge_page_bytes() const {
  if (base_ == nullptr) return 0;
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  const auto start = reinterpret_cast<uintptr_t>(base_);
  const uintptr_t end = start + size_;
  bool inside = false;
  uint64_t kib = 0;
  while (std::getline(smaps, line)) {
    uintptr_t lo, hi;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2 &&
        line.find(':') > line.find(' ')) {
      inside = lo < end && hi > start;
      continue;
    }
    if (!inside) continue;
    uint64_t v;
    for (const char* key : {"AnonHugePages:", "ShmemPmdMapped:", "FilePmdMapped:"}) {
      if (line.rfind(key, 0) == 0 && std::sscanf(line.c_str() + std::strlen(key), "%" SCNu64, &v) == 1) {
        kib += v;
      }
    }
  }
  return kib * 1024;
}

Result<PoolInfo> Pool::ReadInfo(const std::string& path) {
  Status error;
  int fd = OpenRegularFile(path, /*writable=*/false, &error);
  if (fd < 0) return error;
  PoolHeader h;
  PoolInfo info;
  Status s = ReadHeader(fd, path, IndexKind::kNone, &h, &info.file_size);
  if (!s.ok()) {
    ::close(fd);
    return s;
  }
  info.path = path;
  info.format_version = h.format_version;
  info.kind = static_cast<IndexKind>(h.kind);
  info.pool_size = h.pool_size;
  info.chunk_size = h.chunk_size;
  info.chunks_total = h.chunk_count;
  info.generation = h.generation;
  info.root = h.root;
  info.clean = h.clean != 0;
  info.created_unix = h.created_unix;
  info.creator_version.assign(h.creator_version,
                              strnlen(h.creator_version, sizeof(h.creator_version)));
  std::vector<uint64_t> table(h.chunk_count);
  const ssize_t want = static_cast<ssize_t>(table.size() * 8);
  if (pread(fd, table.data(), table.size() * 8, static_cast<off_t>(h.chunk_table_offset)) !=
      want) {
    ::close(fd);
    return PoolError(Status::IOError, path, "cannot read chunk table");
  }
  for (uint64_t e : table) info.chunks_carved += pm::EntryState(e) != pm::ChunkState::kFree;
  ReadDeviceHealth(fd, &info);
  info.used_bytes = h.data_offset + info.chunks_carved * h.chunk_size;
  // A shared lock fails while another opener holds the exclusive one.
  if (flock(fd, LOCK_SH | LOCK_NB) != 0) {
    info.in_use = true;
  } else {
    flock(fd, LOCK_UN);
  }
  ::close(fd);
  return info;
}

namespace pm {
namespace {
std::atomic<KindNamer> g_kind_namer{nullptr};
}  // namespace

void SetKindNamer(KindNamer namer) { g_kind_namer.store(namer, std::memory_order_release); }

std::string KindLabel(uint32_t kind) {
  std::string label = std::to_string(kind);
  const KindNamer namer = g_kind_namer.load(std::memory_order_acquire);
  const std::string name = namer != nullptr ? namer(kind) : std::string();
  if (!name.empty()) label += " ('" + name + "')";
  return label;
}
}  // namespace pm

}  // namespace pmindex
