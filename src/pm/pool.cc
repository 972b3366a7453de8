#include "pmindex/pool.h"

#include <fcntl.h>
#include <libpmem2.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "pm/alloc.h"
#include "pm/crc32c.h"
#include "pm/persist.h"
#include "pm/pool_format.h"

namespace pmindex {
namespace {

using pm::PoolHeader;

std::string Errno(int e) { return std::strerror(e); }

Status PoolError(Status (*make)(std::string_view), const std::string& path,
                 const std::string& reason) {
  return make(path + ": " + reason);
}

const char* KindName(uint32_t kind) {
  if (kind >= kFirstTestIndexKind) return "test";
  switch (static_cast<IndexKind>(kind)) {
    case IndexKind::kNone: return "none";
    case IndexKind::kNVTree: return "nvtree";
    case IndexKind::kWBTree: return "wbtree";
    case IndexKind::kWBTreeSO: return "wbtree-so";
    case IndexKind::kFPTree: return "fptree";
    case IndexKind::kRNTree: return "rntree";
    case IndexKind::kRNTreeDS: return "rntree-ds";
    case IndexKind::kWORT: return "wort";
    case IndexKind::kWOART: return "woart";
    case IndexKind::kPFTree: return "pftree";
    case IndexKind::kCCEH: return "cceh";
    case IndexKind::kLevelHash: return "levelhash";
    case IndexKind::kPCLHT: return "pclht";
    case IndexKind::kFastFair: return "fastfair";
  }
  return "unknown";
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
                     std::string("pool holds index kind '") + KindName(h->kind) + "', not '" +
                         KindName(static_cast<uint32_t>(kind)) + "'");
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

}  // namespace

Result<std::unique_ptr<Pool>> Pool::Create(const std::string& path, IndexKind kind,
                                           std::string_view index_params,
                                           const Options& options) {
  if (index_params.size() > kIndexParamsSize) {
    return PoolError(Status::InvalidArgument, path, "index parameters exceed 128 bytes");
  }
  const uint64_t size =
      (options.pool_size + pm::kPoolAlignment - 1) / pm::kPoolAlignment * pm::kPoolAlignment;
  if (size < pm::kPoolAlignment) {
    return PoolError(Status::InvalidArgument, path, "pool size must be at least 2 MiB");
  }
  bool created = true;
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST) {  // an existing empty file (e.g. from mkstemp) is fine
    created = false;
    fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  }
  if (fd < 0) return PoolError(Status::IOError, path, "cannot create: " + Errno(errno));
  auto fail = [&](Status s) {
    if (created) ::unlink(path.c_str());
    ::close(fd);
    return s;
  };
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    return fail(PoolError(Status::Busy, path, "already open in another process"));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) return fail(PoolError(Status::IOError, path, Errno(errno)));
  if (st.st_size != 0) {
    created = false;  // never remove a file we did not make
    return fail(PoolError(Status::InvalidArgument, path, "file exists; will not overwrite it"));
  }
  if (int e = posix_fallocate(fd, 0, static_cast<off_t>(size)); e != 0) {
    return fail(PoolError(Status::IOError, path,
                          "cannot allocate " + std::to_string(size) + " bytes: " + Errno(e)));
  }
  // Write the header with plain file I/O: the mapping below sees it, and a crash before
  // the write completes leaves a file that fails the magic or checksum check.
  auto h = std::make_unique<PoolHeader>();
  std::memset(h.get(), 0, sizeof(PoolHeader));
  std::memcpy(h->magic, pm::kPoolMagic, sizeof(h->magic));
  h->format_version = pm::kFormatVersion;
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
  if (pwrite(fd, h.get(), sizeof(PoolHeader), 0) != static_cast<ssize_t>(sizeof(PoolHeader)) ||
      fsync(fd) != 0) {
    if (!created) (void)!ftruncate(fd, 0);
    return fail(PoolError(Status::IOError, path, "cannot write header: " + Errno(errno)));
  }
  ::close(fd);  // Map() reopens and relocks
  return Map(path, kind, options, /*fresh=*/true);
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
  return Create(path, kind, index_params, options);
}

Result<std::unique_ptr<Pool>> Pool::Map(const std::string& path, IndexKind kind,
                                        const Options& options, bool fresh) {
  const bool read_only = options.read_only && !fresh;
  int fd = ::open(path.c_str(), (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return PoolError(Status::NotFound, path, "no such file");
    return PoolError(Status::IOError, path, "cannot open: " + Errno(errno));
  }
  auto pool = std::unique_ptr<Pool>(new Pool);
  pool->fd_ = fd;  // closed by ~Pool on any failure below
  pool->path_ = path;
  pool->read_only_ = read_only;
  PoolHeader h;
  uint64_t file_size = 0;
  if (Status s = ReadHeader(fd, path, kind, &h, &file_size); !s.ok()) return s;
  if (flock(fd, (read_only ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
    return PoolError(Status::Busy, path, "already open in another process");
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

  pm::set_mode(options.mode);
  pm::set_write_latency_ns(options.write_latency_ns);
  pm::set_model_media(options.model_media);

  auto* hdr = reinterpret_cast<PoolHeader*>(pool->base_);
  pool->was_dirty_ = hdr->clean == 0;
  // Each open gets a new generation (locks taken by earlier generations are free), then the
  // pool is marked dirty until Close. Each is one 8-byte failure-atomic store.
  __atomic_store_n(&hdr->generation, hdr->generation + 1, __ATOMIC_RELEASE);
  pm::persist(&hdr->generation, sizeof(hdr->generation));
  __atomic_store_n(&hdr->clean, 0, __ATOMIC_RELEASE);
  pm::persist(&hdr->clean, sizeof(hdr->clean));

  pool->allocator_ = std::make_unique<pm::Allocator>(
      pool->base_, reinterpret_cast<uint64_t*>(pool->base_ + hdr->chunk_table_offset),
      hdr->chunk_count, hdr->data_offset);
  return pool;
}

// A destructor cannot report an error: users who need to see one call Close() first.
Pool::~Pool() { Close().IgnoreError(); }

Status Pool::Close() {
  if (map_ != nullptr) {
    auto* hdr = reinterpret_cast<PoolHeader*>(base_);
    if (!read_only_) {
      __atomic_store_n(&hdr->clean, 1, __ATOMIC_RELEASE);
      pm::persist(&hdr->clean, sizeof(hdr->clean));
    }
    allocator_.reset();
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
  pm::persist(&hdr->root, sizeof(hdr->root));
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
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return PoolError(Status::NotFound, path, "no such file");
    return PoolError(Status::IOError, path, "cannot open: " + Errno(errno));
  }
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

const char* IndexKindName(IndexKind kind) { return KindName(static_cast<uint32_t>(kind)); }

}  // namespace pmindex
