// pmindex through its public interface, as any user calls it: CreateIndex on a pool in
// /dev/shm (2 GiB, prefaulted, no media model) and the virtual Index calls. Keys are 8
// big-endian bytes (IntKey), values the id's 8 bytes (IntValue); a lookup copies its value
// into one reused std::string.
//
// Usage: pmindex_drv INDEX adr|eadr|volatile N [load|lookup|insert|scan]
// The pool's directory is $PMINDEX_DRV_POOL_DIR, default /dev/shm (a huge-page tmpfs there
// measures what the TLB walks of 4 KiB pages cost). With PEERS_COUNTS=1 in the environment it
// also prints, to stderr, the pool's flushed lines and fences of the whole run (its counters).
// $PMINDEX_DRV_PARAMS, if set, replaces the index's default parameters (Options::index_params,
// e.g. "dash layout=2").
#include <pmindex/index.h>
#include <pmindex/options.h>
#include <pmindex/pool.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "tools/peers/driver.h"

namespace {

class PmindexAdapter {
 public:
  using WriteKey = pmindex::IntKey;
  using ReadKey = pmindex::IntKey;
  using ScanKey = pmindex::IntKey;
  static constexpr bool kHasScan = true;

  explicit PmindexAdapter(pmindex::Index* index) : index_(index) {}

  WriteKey write_key(uint64_t key) const { return pmindex::IntKey(key); }
  ReadKey read_key(uint64_t key) const { return pmindex::IntKey(key); }
  ScanKey scan_key(uint64_t key) const { return pmindex::IntKey(key); }

  void insert(const WriteKey& key, uint64_t value) {
    if (!index_->insert(key, pmindex::IntValue(value)).ok()) failed_inserts_++;
  }
  bool lookup(const ReadKey& key, uint64_t* value) {
    if (!index_->lookup(key, &value_).ok()) return false;
    *value = pmindex::IntValue::Decode(value_);
    return true;
  }
  size_t scan(const ScanKey& start, size_t count) {
    return index_->scan(start, count, [](std::string_view, std::string_view) { return true; });
  }
  uint64_t failed_inserts() const { return failed_inserts_; }

 private:
  pmindex::Index* index_;
  std::string value_;
  uint64_t failed_inserts_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const char* usage = "pmindex_drv INDEX adr|eadr|volatile N [load|lookup|insert|scan]";
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s\n", usage);
    return 2;
  }
  const std::string name = argv[1];
  pmindex::Options options;
  if (!pmindex::ParsePersistMode(argv[2], &options.mode)) {
    std::fprintf(stderr, "unknown persistence mode '%s'\nusage: %s\n", argv[2], usage);
    return 2;
  }
  peers::Config config;
  config.label = name + " " + argv[2];
  peers::ParseRunArgs(argc, argv, 3, usage, &config);

  options.pool_size = 2ull << 30;
  options.prefault = true;
  options.model_media = false;
  if (const char* params = std::getenv("PMINDEX_DRV_PARAMS"); params != nullptr)
    options.index_params = params;
  const char* dir = std::getenv("PMINDEX_DRV_POOL_DIR");
  const std::string path = std::string(dir != nullptr && *dir != '\0' ? dir : "/dev/shm") +
                           "/pmindex-peers-" + name + "-" + std::to_string(::getpid()) + ".pool";
  auto index = pmindex::CreateIndex(name, path, options);
  if (!index.ok()) {
    std::fprintf(stderr, "pmindex_drv: create %s: %s\n", path.c_str(),
                 index.status().ToString().c_str());
    return 1;
  }
  PmindexAdapter adapter(index->get());
  int rc = peers::Run(adapter, config);
  const char* counts = std::getenv("PEERS_COUNTS");
  if (counts != nullptr && *counts == '1' && (*index)->pool() != nullptr) {
    const pmindex::PersistCounters c = (*index)->pool()->counters();
    std::fprintf(stderr, "persist_counts flushes=%llu fences=%llu\n",
                 static_cast<unsigned long long>(c.flushes),
                 static_cast<unsigned long long>(c.fences));
  }
  if (adapter.failed_inserts() != 0) {
    std::fprintf(stderr, "pmindex_drv: %llu inserts failed\n",
                 static_cast<unsigned long long>(adapter.failed_inserts()));
    rc = 1;
  }
  const pmindex::Status closed = (*index)->close();
  ::unlink(path.c_str());
  if (!closed.ok()) {
    std::fprintf(stderr, "pmindex_drv: close: %s\n", closed.ToString().c_str());
    rc = 1;
  }
  return rc;
}
