// Baseline `rocksdb`: RocksDB (Debian's librocksdb) with its write-ahead log on and sync off.
//
// Durability: every write is appended to the WAL before it is acknowledged, but the WAL is
// not fsync'ed, so acknowledged writes survive a process crash (the page cache keeps the
// log) and may be lost at power loss. Otherwise RocksDB's default options.
// Thread safety: RocksDB is thread-safe; insert/update/remove are check-then-write and so
// take one of 1024 striped mutexes by key hash, which makes them atomic with respect to each
// other (plain writes never race a conditional one on the same key).
#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include <array>
#include <filesystem>
#include <mutex>

#include "bench/baselines/baselines.h"
#include "pmindex/index.h"

namespace pmindex::bench {
namespace {

class RocksDbIndex final : public Index {
 public:
  static Result<std::unique_ptr<Index>> Make(const IndexTraits& traits, const std::string& path,
                                             const Options&) {
    std::error_code ec;
    if (std::filesystem::exists(path, ec) && !std::filesystem::is_empty(path, ec)) {
      return Status::InvalidArgument(path + ": exists; rocksdb baseline needs a new directory");
    }
    rocksdb::Options options;
    options.create_if_missing = true;
    options.error_if_exists = true;
    rocksdb::DB* db = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(options, path, &db);
    if (!s.ok()) return Status::IOError(path + ": rocksdb open: " + s.ToString());
    return std::unique_ptr<Index>(new RocksDbIndex(traits, path, db));
  }

  // A destructor cannot report an error: users who need to see one call close() first.
  ~RocksDbIndex() override { close().IgnoreError(); }
  const IndexTraits& traits() const override { return traits_; }

  Status insert(std::string_view key, std::string_view value) override {
    std::lock_guard lock(Stripe(key));
    if (Exists(key)) return Status::AlreadyExists();
    return Put(key, value);
  }
  Status update(std::string_view key, std::string_view value) override {
    std::lock_guard lock(Stripe(key));
    if (!Exists(key)) return Status::NotFound();
    return Put(key, value);
  }
  Status upsert(std::string_view key, std::string_view value) override {
    std::lock_guard lock(Stripe(key));
    return Put(key, value);
  }
  Status remove(std::string_view key) override {
    std::lock_guard lock(Stripe(key));
    if (!Exists(key)) return Status::NotFound();
    rocksdb::Status s = db_->Delete(write_options_, Slice(key));
    return s.ok() ? Status::OK() : Status::IOError(path_ + ": rocksdb delete: " + s.ToString());
  }
  Status lookup(std::string_view key, std::string* value) override {
    std::string ignored;  // Get needs a string; lookup's value may be nullptr
    const rocksdb::Status s =
        db_->Get(rocksdb::ReadOptions(), Slice(key), value != nullptr ? value : &ignored);
    if (s.ok()) return Status::OK();
    if (s.IsNotFound()) return Status::NotFound();
    return Status::IOError("rocksdb: " + s.ToString());
  }
  size_t scan(std::string_view start, size_t max_count, ScanCallback fn) override {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    size_t n = 0;
    for (it->Seek(Slice(start)); it->Valid() && n < max_count; it->Next()) {
      n++;
      if (!fn(View(it->key()), View(it->value()))) break;
    }
    return n;
  }
  Status verify() override {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    std::string prev;
    bool first = true;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      if (!first && !(std::string_view(prev) < View(it->key()))) {
        return Status::Corruption(path_ + ": rocksdb keys out of order");
      }
      prev.assign(View(it->key()));
      first = false;
    }
    if (!it->status().ok()) return Status::Corruption(path_ + ": " + it->status().ToString());
    return Status::OK();
  }
  IndexStats stats() override {
    IndexStats s;
    uint64_t v = 0;
    // Persistent bytes: SST files (the WAL is not counted); DRAM: the memtables.
    if (db_->GetIntProperty("rocksdb.total-sst-files-size", &v)) s.pm_bytes = v;
    if (db_->GetIntProperty("rocksdb.cur-size-all-mem-tables", &v)) s.dram_bytes = v;
    if (db_->GetIntProperty("rocksdb.estimate-num-keys", &v)) {
      s.nodes = {{"estimated_keys", v}};  // an estimate, so not reported as keys
    }
    return s;
  }
  Status close() override {
    if (db_ == nullptr) return Status::OK();
    rocksdb::Status s = db_->Close();
    delete db_;
    db_ = nullptr;
    return s.ok() ? Status::OK() : Status::IOError(path_ + ": rocksdb close: " + s.ToString());
  }

 private:
  RocksDbIndex(const IndexTraits& traits, std::string path, rocksdb::DB* db)
      : traits_(traits), path_(std::move(path)), db_(db) {
    write_options_.sync = false;
    write_options_.disableWAL = false;
  }
  static rocksdb::Slice Slice(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }
  static std::string_view View(const rocksdb::Slice& s) { return {s.data(), s.size()}; }
  std::mutex& Stripe(std::string_view key) {
    return stripes_[std::hash<std::string_view>()(key) % stripes_.size()];
  }
  bool Exists(std::string_view key) {
    rocksdb::PinnableSlice v;
    return db_->Get(rocksdb::ReadOptions(), db_->DefaultColumnFamily(), Slice(key), &v).ok();
  }
  Status Put(std::string_view key, std::string_view value) {
    rocksdb::Status s = db_->Put(write_options_, Slice(key), Slice(value));
    return s.ok() ? Status::OK() : Status::IOError(path_ + ": rocksdb put: " + s.ToString());
  }

  IndexTraits traits_;
  std::string path_;
  rocksdb::DB* db_;
  rocksdb::WriteOptions write_options_;
  std::array<std::mutex, 1024> stripes_;
};

IndexRegistration Registration() {
  IndexRegistration reg;
  reg.traits.name = "rocksdb";
  reg.traits.kind = IndexKind::kNone;
  reg.traits.persistent = true;
  reg.traits.ordered = true;
  reg.traits.byte_keys = true;
  reg.traits.max_key_size = 1 << 20;
  reg.traits.max_value_size = 1 << 20;
  reg.traits.concurrency = "thread-safe (RocksDB), conditional writes under striped mutexes";
  reg.traits.durability = "survives process crash (RocksDB, WAL on, sync off)";
  reg.traits.description = "baseline: RocksDB LSM tree, default options, WAL without sync";
  reg.make = [traits = reg.traits](const std::string& path, const Options& options) {
    return RocksDbIndex::Make(traits, path, options);
  };
  return reg;
}

}  // namespace

IndexRegistration RocksDbRegistration() { return Registration(); }
}  // namespace pmindex::bench
