#include "sample_index/app_log.h"

#include <cstring>
#include <mutex>
#include <string>

#include "pm/alloc.h"
#include "pm/mutant.h"
#include "pm/persist.h"

namespace pmindex::sample {
namespace {

// The pool kind, from the range pmindex/pool.h reserves for tests; never reuse it.
constexpr IndexKind kAppLogKind{kFirstTestIndexKind + 0x100};

void StoreWord(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
uint64_t LoadWord(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

const IndexTraits& Traits() {
  static const IndexTraits* traits = [] {
    auto* t = new IndexTraits;
    t->name = "test-applog";
    t->kind = kAppLogKind;
    t->concurrency = "reader-writer lock (test structure)";
    t->durability = "every acknowledged operation survives power failure";
    t->description = "test-only append log with a DRAM map (an index defined outside src/)";
    return t;
  }();
  return *traits;
}

IndexRegistration MakeRegistration() {
  IndexRegistration r;
  r.traits = Traits();
  r.attach = [](std::unique_ptr<Pool> pool, bool) -> Result<std::unique_ptr<Index>> {
    return std::unique_ptr<Index>(new AppLog(std::move(pool)));
  };
  r.test_only = true;
  r.mutants = {{"test-applog.count_before_record",
                "the count that commits a record is persisted before the record", ""}};
  r.crash_scenarios = {"split-sibling-early"};
  return r;
}

PMINDEX_REGISTER_INDEX(MakeRegistration());

uint64_t Decode8(std::string_view s) {
  uint64_t v;
  std::memcpy(&v, s.data(), 8);
  return v;
}

}  // namespace

AppLog::AppLog(std::unique_ptr<Pool> pool) : pool_(std::move(pool)) {}

AppLog::~AppLog() { close().IgnoreError(); }

const IndexTraits& AppLog::traits() const { return Traits(); }

uint64_t* AppLog::head() const { return reinterpret_cast<uint64_t*>(pool_->root_area()); }

LogBlock* AppLog::block_at(uint64_t offset) const {
  if (offset < 4096 || offset % 64 != 0 || offset + sizeof(LogBlock) > pool_->size()) return nullptr;
  return pool_->at<LogBlock>(offset);
}

// Replays the log into the DRAM map; Corruption for a block or record that cannot be.
Status AppLog::recover() {
  std::unique_lock lock(mu_);
  map_.clear();
  tail_ = nullptr;
  blocks_ = 0;
  for (uint64_t off = LoadWord(head()); off != 0;) {
    LogBlock* b = block_at(off);
    if (b == nullptr || ++blocks_ > pool_->size() / sizeof(LogBlock) ||
        b->count > LogBlock::kRecords) {
      return Status::Corruption("test-applog: bad log block at " + std::to_string(off));
    }
    for (uint64_t i = 0; i < b->count; ++i) {
      const LogRecord& r = b->records[i];
      if (r.op == kPut) map_[r.key] = r.value;
      else if (r.op == kDelete) map_.erase(r.key);
      else return Status::Corruption("test-applog: record with op " + std::to_string(r.op));
    }
    tail_ = b;
    off = LoadWord(&b->next);
  }
  return Status::OK();
}

// The last block if it has room, else a new one: initialised and persisted, then linked.
Result<LogBlock*> AppLog::TailWithRoom() {
  if (tail_ != nullptr && tail_->count < LogBlock::kRecords) return tail_;
  Result<uint64_t> off = pool_->allocator().allocate(sizeof(LogBlock));
  if (!off.ok()) return off.status();
  LogBlock* b = pool_->at<LogBlock>(off.value());
  std::memset(b, 0, sizeof(LogBlock));
  pool_->persist_context().persist(b, 64);
  uint64_t* link = tail_ != nullptr ? &tail_->next : head();
  StoreWord(link, off.value());
  pool_->persist_context().persist(link, 8);
  tail_ = b;
  ++blocks_;
  return b;
}

Status AppLog::Append(uint64_t key, uint64_t value, uint64_t op) {
  Result<LogBlock*> tail = TailWithRoom();
  if (!tail.ok()) return tail.status();
  LogBlock* b = tail.value();
  LogRecord& r = b->records[b->count];
  std::memset(&r, 0, sizeof(r));
  r.key = key;
  r.value = value;
  r.op = op;
  pm::PersistContext& pc = pool_->persist_context();
  const bool count_first = pm::mutant("test-applog.count_before_record");
  if (!count_first) pc.persist(&r, sizeof(r));
  StoreWord(&b->count, b->count + 1);  // the commit
  pc.persist(&b->count, 8);
  if (count_first) pc.persist(&r, sizeof(r));
  return Status::OK();
}

Status AppLog::Write(std::string_view key, std::string_view value, uint64_t op, Need need) {
  if (key.size() != 8) return Status::InvalidArgument("test-applog: keys are 8 bytes");
  if (op == kPut && value.size() != 8) {
    return Status::InvalidArgument("test-applog: values are 8 bytes");
  }
  std::unique_lock lock(mu_);
  const uint64_t k = IntKey::Decode(key);
  const bool present = map_.count(k) != 0;
  if (need == Need::kAbsent && present) return Status::AlreadyExists();
  if (need == Need::kPresent && !present) return Status::NotFound();
  const uint64_t v = op == kPut ? Decode8(value) : 0;
  if (Status s = Append(k, v, op); !s.ok()) return s;
  if (op == kPut) map_[k] = v;
  else map_.erase(k);
  return Status::OK();
}

Status AppLog::insert(std::string_view key, std::string_view value) {
  return Write(key, value, kPut, Need::kAbsent);
}
Status AppLog::update(std::string_view key, std::string_view value) {
  return Write(key, value, kPut, Need::kPresent);
}
Status AppLog::upsert(std::string_view key, std::string_view value) {
  return Write(key, value, kPut, Need::kAny);
}
Status AppLog::remove(std::string_view key) { return Write(key, {}, kDelete, Need::kPresent); }

Status AppLog::lookup(std::string_view key, std::string* value) {
  if (key.size() != 8) return Status::InvalidArgument("test-applog: keys are 8 bytes");
  std::shared_lock lock(mu_);
  const auto it = map_.find(IntKey::Decode(key));
  if (it == map_.end()) return Status::NotFound();
  if (value != nullptr) value->assign(reinterpret_cast<const char*>(&it->second), 8);
  return Status::OK();
}

size_t AppLog::scan(std::string_view start, size_t max_count, ScanCallback fn) {
  char padded[8] = {};  // a shorter start key is its zero-padded prefix
  std::memcpy(padded, start.data(), std::min<size_t>(start.size(), 8));
  std::shared_lock lock(mu_);
  size_t n = 0;
  for (auto it = map_.lower_bound(IntKey::Decode({padded, 8})); it != map_.end() && n < max_count;
       ++it) {
    ++n;
    const IntKey k(it->first);
    if (!fn(k.view(), {reinterpret_cast<const char*>(&it->second), 8})) break;
  }
  return n;
}

// The log replays to the DRAM map.
Status AppLog::verify() {
  std::map<uint64_t, uint64_t> live;
  {
    std::shared_lock lock(mu_);
    live = map_;
  }
  if (Status s = recover(); !s.ok()) return s;
  std::shared_lock lock(mu_);
  if (map_ != live) return Status::Corruption("test-applog: the log replays to another map");
  return Status::OK();
}

IndexStats AppLog::stats() {
  std::shared_lock lock(mu_);
  IndexStats st;
  st.keys = map_.size();
  st.pm_bytes = blocks_ * sizeof(LogBlock);
  st.nodes.emplace_back("log blocks", blocks_);
  return st;
}

Status AppLog::visit_blocks(BlockVisitor& visitor) {
  std::shared_lock lock(mu_);
  uint64_t seen = 0;
  for (uint64_t off = LoadWord(head()); off != 0; off = LoadWord(&block_at(off)->next)) {
    if (block_at(off) == nullptr || ++seen > pool_->size() / sizeof(LogBlock)) {
      return Status::Corruption("test-applog: bad log block at " + std::to_string(off));
    }
    if (Status s = visitor.visit(off); !s.ok()) return s;
  }
  return Status::OK();
}

Status AppLog::close() {
  if (pool_ == nullptr) return Status::OK();
  return pool_->Close();
}

}  // namespace pmindex::sample
