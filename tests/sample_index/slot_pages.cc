#include "sample_index/slot_pages.h"

#include <cstring>
#include <mutex>
#include <string>

#include "pm/alloc.h"
#include "pm/mutant.h"
#include "pm/persist.h"

namespace pmindex::sample {
namespace {

// The pool kind, from the range pmindex/pool.h reserves for tests; never reuse it.
constexpr IndexKind kSlotPagesKind{kFirstTestIndexKind + 0x100};

void StoreWord(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
uint64_t LoadWord(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

const IndexTraits& Traits() {
  static const IndexTraits* traits = [] {
    auto* t = new IndexTraits;
    t->name = "test-slotpages";
    t->kind = kSlotPagesKind;
    t->concurrency = "reader-writer lock (test structure)";
    t->durability = "every acknowledged operation survives power failure";
    t->description = "test-only pages of committed slots (an index defined outside src/)";
    return t;
  }();
  return *traits;
}

IndexRegistration MakeRegistration() {
  IndexRegistration r;
  r.traits = Traits();
  r.attach = [](std::unique_ptr<Pool> pool, bool) -> Result<std::unique_ptr<Index>> {
    return std::unique_ptr<Index>(new SlotPages(std::move(pool)));
  };
  r.test_only = true;
  r.mutants = {{"test-slotpages.state_before_pair",
                "a slot's state word commits it before its key and value are written"}};
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

SlotPages::SlotPages(std::unique_ptr<Pool> pool) : pool_(std::move(pool)) {}

SlotPages::~SlotPages() { close().IgnoreError(); }

const IndexTraits& SlotPages::traits() const { return Traits(); }

uint64_t* SlotPages::root_word() const { return reinterpret_cast<uint64_t*>(pool_->root_area()); }

SlotPage* SlotPages::page_at(uint64_t offset) const {
  if (offset < 4096 || offset % 64 != 0 || offset + sizeof(SlotPage) > pool_->size()) {
    return nullptr;
  }
  return pool_->at<SlotPage>(offset);
}

// Reads every page: live slots by key, free slots, the last page; Corruption for a page or
// slot that cannot be (bad offset, a cycle, a state word other than 0 or 1, a key twice).
Status SlotPages::Rebuild(std::map<uint64_t, Slot*>* map, std::vector<Slot*>* free,
                          SlotPage** last, uint64_t* pages) const {
  *last = nullptr;
  *pages = 0;
  for (uint64_t off = LoadWord(root_word()); off != 0;) {
    SlotPage* p = page_at(off);
    if (p == nullptr || ++*pages > pool_->size() / sizeof(SlotPage)) {
      return Status::Corruption("test-slotpages: bad page at " + std::to_string(off));
    }
    for (Slot& s : p->slots) {
      if (s.state == kFree) {
        free->push_back(&s);
      } else if (s.state != kLive || !map->emplace(s.key, &s).second) {
        return Status::Corruption("test-slotpages: bad slot in the page at " + std::to_string(off));
      }
    }
    *last = p;
    off = LoadWord(&p->next);
  }
  return Status::OK();
}

Status SlotPages::recover() {
  std::unique_lock lock(mu_);
  map_.clear();
  free_.clear();
  return Rebuild(&map_, &free_, &last_, &pages_);
}

// A free slot; a new page (zeroed and persisted, then linked) when none is left.
Result<Slot*> SlotPages::FreeSlot() {
  if (free_.empty()) {
    Result<uint64_t> off = pool_->allocator().allocate(sizeof(SlotPage));
    if (!off.ok()) return off.status();
    SlotPage* p = pool_->at<SlotPage>(off.value());
    std::memset(p, 0, sizeof(SlotPage));
    pool_->persist_context().persist(p, sizeof(SlotPage));
    uint64_t* link = last_ != nullptr ? &last_->next : root_word();
    StoreWord(link, off.value());
    pool_->persist_context().persist(link, 8);
    last_ = p;
    ++pages_;
    for (size_t i = SlotPage::kSlots; i-- > 0;) free_.push_back(&p->slots[i]);
  }
  Slot* s = free_.back();
  free_.pop_back();
  return s;
}

Status SlotPages::Fill(uint64_t key, uint64_t value) {
  Result<Slot*> slot = FreeSlot();
  if (!slot.ok()) return slot.status();
  Slot* s = slot.value();
  pm::PersistContext& pc = pool_->persist_context();
  // The mutant commits the slot before its pair is written: a crash in between leaves a
  // live slot holding a removed key's pair, or zeros.
  const bool state_first = pm::mutant("test-slotpages.state_before_pair");
  if (state_first) {
    StoreWord(&s->state, kLive);
    pc.persist(&s->state, 8);
  }
  s->key = key;
  s->value = value;
  pc.persist(s, 16);
  StoreWord(&s->state, kLive);  // the commit
  pc.persist(&s->state, 8);
  map_[key] = s;
  return Status::OK();
}

Status SlotPages::Write(std::string_view key, std::string_view value, Need need) {
  if (key.size() != 8) return Status::InvalidArgument("test-slotpages: keys are 8 bytes");
  if (value.size() != 8) return Status::InvalidArgument("test-slotpages: values are 8 bytes");
  std::unique_lock lock(mu_);
  const uint64_t k = IntKey::Decode(key);
  const auto it = map_.find(k);
  if (need == Need::kAbsent && it != map_.end()) return Status::AlreadyExists();
  if (need == Need::kPresent && it == map_.end()) return Status::NotFound();
  if (it == map_.end()) return Fill(k, Decode8(value));
  StoreWord(&it->second->value, Decode8(value));  // 8-byte failure-atomic: old or new
  pool_->persist_context().persist(&it->second->value, 8);
  return Status::OK();
}

Status SlotPages::insert(std::string_view key, std::string_view value) {
  return Write(key, value, Need::kAbsent);
}
Status SlotPages::update(std::string_view key, std::string_view value) {
  return Write(key, value, Need::kPresent);
}
Status SlotPages::upsert(std::string_view key, std::string_view value) {
  return Write(key, value, Need::kAny);
}

Status SlotPages::remove(std::string_view key) {
  if (key.size() != 8) return Status::InvalidArgument("test-slotpages: keys are 8 bytes");
  std::unique_lock lock(mu_);
  const auto it = map_.find(IntKey::Decode(key));
  if (it == map_.end()) return Status::NotFound();
  StoreWord(&it->second->state, kFree);  // one store frees the slot
  pool_->persist_context().persist(&it->second->state, 8);
  free_.push_back(it->second);
  map_.erase(it);
  return Status::OK();
}

Status SlotPages::lookup(std::string_view key, std::string* value) {
  if (key.size() != 8) return Status::InvalidArgument("test-slotpages: keys are 8 bytes");
  std::shared_lock lock(mu_);
  const auto it = map_.find(IntKey::Decode(key));
  if (it == map_.end()) return Status::NotFound();
  if (value != nullptr) value->assign(reinterpret_cast<const char*>(&it->second->value), 8);
  return Status::OK();
}

size_t SlotPages::scan(std::string_view start, size_t max_count, ScanCallback fn) {
  char padded[8] = {};  // a shorter start key is its zero-padded prefix
  std::memcpy(padded, start.data(), std::min<size_t>(start.size(), 8));
  std::shared_lock lock(mu_);
  size_t n = 0;
  for (auto it = map_.lower_bound(IntKey::Decode({padded, 8})); it != map_.end() && n < max_count;
       ++it) {
    ++n;
    const IntKey k(it->first);
    if (!fn(k.view(), {reinterpret_cast<const char*>(&it->second->value), 8})) break;
  }
  return n;
}

// The pages hold exactly the DRAM map's slots, and the free list exactly the other slots.
Status SlotPages::verify() {
  std::shared_lock lock(mu_);
  std::map<uint64_t, Slot*> map;
  std::vector<Slot*> free;
  SlotPage* last;
  uint64_t pages;
  if (Status s = Rebuild(&map, &free, &last, &pages); !s.ok()) return s;
  if (map != map_ || free.size() != free_.size() || last != last_ || pages != pages_) {
    return Status::Corruption("test-slotpages: the pages disagree with the DRAM map");
  }
  return Status::OK();
}

IndexStats SlotPages::stats() {
  std::shared_lock lock(mu_);
  IndexStats st;
  st.keys = map_.size();
  st.pm_bytes = pages_ * sizeof(SlotPage);
  st.nodes.emplace_back("pages", pages_);
  return st;
}

Status SlotPages::visit_blocks(BlockVisitor& visitor) {
  std::shared_lock lock(mu_);
  uint64_t seen = 0;
  for (uint64_t off = LoadWord(root_word()); off != 0;) {
    SlotPage* p = page_at(off);
    if (p == nullptr || ++seen > pool_->size() / sizeof(SlotPage)) {
      return Status::Corruption("test-slotpages: bad page at " + std::to_string(off));
    }
    if (Status s = visitor.visit(off); !s.ok()) return s;
    off = LoadWord(&p->next);
  }
  return Status::OK();
}

Status SlotPages::close() {
  if (pool_ == nullptr) return Status::OK();
  return pool_->Close();
}

}  // namespace pmindex::sample
