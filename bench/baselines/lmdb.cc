// Baseline `lmdb`: LMDB (Debian's liblmdb) with MDB_WRITEMAP | MDB_NOSYNC, one transaction
// per write.
//
// Durability: writes go through a shared writable mapping and are never msync'ed, so a
// committed write survives a process crash (the page cache keeps it) but not power loss.
// This is the setting closest to a PM index in eADR mode that LMDB offers.
// Thread safety: LMDB serializes write transactions; readers run in parallel on MVCC
// snapshots (MDB_NOTLS). Writers queue on pmindex's pm::RwLock before LMDB's own writer
// mutex (a process-shared pthread mutex), which they then find free: with writers queued on
// that mutex, 16 threads on 16 cores loaded at a third of one thread's throughput
// (doc/performance.md, "16 cores"); the spin-then-sleep lock hands off in user space. A
// reader renews the reset read transaction its thread keeps (pm::PerThread) instead of
// borrowing one from a list behind a mutex, which all readers shared.
#include <lmdb.h>

#include <cstring>
#include <filesystem>
#include <mutex>
#include <utility>

#include "bench/baselines/baselines.h"
#include "pm/rw_lock.h"
#include "pm/thread_registry.h"
#include "pmindex/index.h"

namespace pmindex::bench {
namespace {

class LmdbIndex final : public Index {
 public:
  static Result<std::unique_ptr<Index>> Make(const IndexTraits& traits, const std::string& path,
                                             const Options& options) {
    std::error_code ec;
    if (std::filesystem::exists(path, ec) && !std::filesystem::is_empty(path, ec)) {
      return Status::InvalidArgument(path + ": exists; lmdb baseline needs a new directory");
    }
    std::filesystem::create_directories(path, ec);
    if (ec) return Status::IOError(path + ": cannot create directory: " + ec.message());
    std::unique_ptr<LmdbIndex> index(new LmdbIndex(traits, path));
    if (Status s = index->Open(options); !s.ok()) return s;
    return std::unique_ptr<Index>(std::move(index));
  }

  // A destructor cannot report an error: users who need to see one call close() first.
  ~LmdbIndex() override { close().IgnoreError(); }
  const IndexTraits& traits() const override { return traits_; }

  Status insert(std::string_view key, std::string_view value) override {
    return Write(key, value, MDB_NOOVERWRITE, false);
  }
  Status update(std::string_view key, std::string_view value) override {
    return Write(key, value, 0, true);
  }
  Status upsert(std::string_view key, std::string_view value) override {
    return Write(key, value, 0, false);
  }
  Status remove(std::string_view key) override {
    if (key.empty()) return Status::NotFound();
    std::lock_guard<pm::RwLock> writer(writer_);
    MDB_txn* txn = nullptr;
    if (int rc = mdb_txn_begin(env_, nullptr, 0, &txn); rc != 0) return Error("begin", rc);
    MDB_val k = Val(key);
    int rc = mdb_del(txn, dbi_, &k, nullptr);
    if (rc != 0) {
      mdb_txn_abort(txn);
      return rc == MDB_NOTFOUND ? Status::NotFound() : Error("del", rc);
    }
    rc = mdb_txn_commit(txn);
    return rc == 0 ? Status::OK() : Error("commit", rc);
  }
  Status lookup(std::string_view key, std::string* value) override {
    if (key.empty()) return Status::NotFound();
    MDB_txn* txn = BeginRead();
    if (txn == nullptr) return Status::NotFound();
    MDB_val k = Val(key), v;
    const bool found = mdb_get(txn, dbi_, &k, &v) == 0;
    if (found && value != nullptr) value->assign(static_cast<const char*>(v.mv_data), v.mv_size);
    EndRead(txn);
    return found ? Status::OK() : Status::NotFound();
  }
  size_t scan(std::string_view start, size_t max_count, ScanCallback fn) override {
    MDB_txn* txn = BeginRead();
    if (txn == nullptr) return 0;
    MDB_cursor* cursor = nullptr;
    size_t n = 0;
    if (mdb_cursor_open(txn, dbi_, &cursor) == 0) {
      MDB_val k = Val(start), v;
      int rc = start.empty() ? mdb_cursor_get(cursor, &k, &v, MDB_FIRST)
                             : mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE);
      while (rc == 0 && n < max_count) {
        n++;
        if (!fn(std::string_view(static_cast<const char*>(k.mv_data), k.mv_size),
                std::string_view(static_cast<const char*>(v.mv_data), v.mv_size))) {
          break;
        }
        rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT);
      }
      mdb_cursor_close(cursor);
    }
    EndRead(txn);
    return n;
  }
  Status verify() override {
    MDB_txn* txn = BeginRead();
    if (txn == nullptr) return Status::IOError(path_ + ": cannot begin read transaction");
    MDB_stat st;
    mdb_stat(txn, dbi_, &st);
    MDB_cursor* cursor = nullptr;
    Status result;
    if (mdb_cursor_open(txn, dbi_, &cursor) == 0) {
      MDB_val k, v;
      std::string prev;
      size_t n = 0;
      for (int rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST); rc == 0;
           rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
        std::string_view key(static_cast<const char*>(k.mv_data), k.mv_size);
        if (n > 0 && !(std::string_view(prev) < key)) {
          result = Status::Corruption(path_ + ": lmdb keys out of order");
          break;
        }
        prev.assign(key);
        n++;
      }
      if (result.ok() && n != st.ms_entries) {
        result = Status::Corruption(path_ + ": lmdb cursor saw " + std::to_string(n) +
                                    " keys, stat says " + std::to_string(st.ms_entries));
      }
      mdb_cursor_close(cursor);
    }
    EndRead(txn);
    return result;
  }
  IndexStats stats() override {
    IndexStats s;
    MDB_txn* txn = BeginRead();
    if (txn == nullptr) return s;
    MDB_stat st;
    if (mdb_stat(txn, dbi_, &st) == 0) {
      s.keys = st.ms_entries;
      // Persistent bytes: the pages of the B+tree in the memory-mapped file.
      s.pm_bytes = static_cast<uint64_t>(st.ms_psize) *
                   (st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages);
      s.nodes = {{"branch_pages", st.ms_branch_pages},
                 {"leaf_pages", st.ms_leaf_pages},
                 {"overflow_pages", st.ms_overflow_pages}};
    }
    EndRead(txn);
    return s;
  }
  Status close() override {
    if (env_ == nullptr) return Status::OK();
    readers_.for_each([](MDB_txn*& txn) {  // quiescent: no reader runs
      if (txn != nullptr) mdb_txn_abort(std::exchange(txn, nullptr));
    });
    mdb_env_close(env_);
    env_ = nullptr;
    return Status::OK();
  }

 private:
  LmdbIndex(const IndexTraits& traits, std::string path)
      : traits_(traits), path_(std::move(path)) {}

  static MDB_val Val(std::string_view s) {
    return MDB_val{s.size(), const_cast<char*>(s.data())};
  }
  Status Error(const char* what, int rc) const {
    const std::string msg = path_ + ": lmdb " + what + ": " + mdb_strerror(rc);
    if (rc == MDB_MAP_FULL) return Status::OutOfSpace(msg);
    if (rc == MDB_BAD_VALSIZE) return Status::InvalidArgument(msg);
    return Status::IOError(msg);
  }

  Status Open(const Options& options) {
    if (int rc = mdb_env_create(&env_); rc != 0) return Error("env_create", rc);
    // The map is virtual address space; with MDB_WRITEMAP the file is sized to it but stays
    // sparse. B+tree pages hold keys at ~50-70% fill and copy-on-write needs spare pages.
    const uint64_t map = std::max<uint64_t>(options.pool_size * 4, 1ull << 30);
    mdb_env_set_mapsize(env_, map);
    mdb_env_set_maxreaders(env_, 256);
    int rc = mdb_env_open(env_, path_.c_str(), MDB_WRITEMAP | MDB_NOSYNC | MDB_NOTLS, 0644);
    if (rc != 0) {
      mdb_env_close(env_);
      env_ = nullptr;
      return Error("env_open", rc);
    }
    MDB_txn* txn = nullptr;
    if (rc = mdb_txn_begin(env_, nullptr, 0, &txn); rc != 0) return Error("begin", rc);
    if (rc = mdb_dbi_open(txn, nullptr, 0, &dbi_); rc != 0) {
      mdb_txn_abort(txn);
      return Error("dbi_open", rc);
    }
    if (rc = mdb_txn_commit(txn); rc != 0) return Error("commit", rc);
    return Status::OK();
  }

  Status Write(std::string_view key, std::string_view value, unsigned flags, bool must_exist) {
    if (key.empty() || key.size() > traits_.max_key_size) {
      return Status::InvalidArgument(path_ + ": lmdb keys must be 1.." +
                                     std::to_string(traits_.max_key_size) + " bytes");
    }
    std::lock_guard<pm::RwLock> writer(writer_);
    MDB_txn* txn = nullptr;
    if (int rc = mdb_txn_begin(env_, nullptr, 0, &txn); rc != 0) return Error("begin", rc);
    MDB_val k = Val(key), v = Val(value);
    if (must_exist) {
      MDB_val old;
      if (mdb_get(txn, dbi_, &k, &old) != 0) {
        mdb_txn_abort(txn);
        return Status::NotFound();
      }
    }
    int rc = mdb_put(txn, dbi_, &k, &v, flags);
    if (rc != 0) {
      mdb_txn_abort(txn);
      return rc == MDB_KEYEXIST ? Status::AlreadyExists() : Error("put", rc);
    }
    rc = mdb_txn_commit(txn);
    return rc == 0 ? Status::OK() : Error("commit", rc);
  }

  MDB_txn* BeginRead() {
    MDB_txn* txn = std::exchange(readers_.local(), nullptr);
    if (txn != nullptr) {
      if (mdb_txn_renew(txn) == 0) return txn;
      mdb_txn_abort(txn);
      txn = nullptr;
    }
    if (mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn) != 0) return nullptr;
    return txn;
  }
  // Kept for the thread's next read; a thread that holds two at once (a scan beside a
  // lookup) aborts the second.
  void EndRead(MDB_txn* txn) {
    mdb_txn_reset(txn);
    MDB_txn*& kept = readers_.local();
    if (kept == nullptr) {
      kept = txn;
    } else {
      mdb_txn_abort(txn);
    }
  }

  IndexTraits traits_;
  std::string path_;
  MDB_env* env_ = nullptr;
  MDB_dbi dbi_ = 0;
  pm::RwLock writer_;  // held exclusively around every write transaction
  pm::PerThread<MDB_txn*> readers_;  // each thread's reset read transaction, for renew
};

IndexRegistration Registration() {
  IndexRegistration reg;
  reg.traits.name = "lmdb";
  reg.traits.kind = IndexKind::kNone;
  reg.traits.persistent = true;
  reg.traits.ordered = true;
  reg.traits.byte_keys = true;
  reg.traits.max_key_size = 511;  // mdb_env_get_maxkeysize() of the default build
  reg.traits.max_value_size = 1 << 20;
  reg.traits.concurrency =
      "single writer (pm::RwLock, then LMDB's write lock), MVCC readers in parallel";
  reg.traits.durability = "survives process crash (LMDB, MDB_WRITEMAP|MDB_NOSYNC)";
  reg.traits.description = "baseline: LMDB B+tree, one transaction per write";
  reg.make = [traits = reg.traits](const std::string& path, const Options& options) {
    return LmdbIndex::Make(traits, path, options);
  };
  return reg;
}

}  // namespace

IndexRegistration LmdbRegistration() { return Registration(); }
}  // namespace pmindex::bench
