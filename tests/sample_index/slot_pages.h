// SlotPages: a test-only persistent index that lives entirely in this folder, to show that an
// index is added without touching anything central: its registration (slot_pages.cc) carries
// its name, pool kind, traits, one mutant and the crash scenario it takes part in, and this
// folder's CMakeLists.txt links it into every test program. The API suites, the lockstep
// model test, the space-reuse test and the crash campaign find it in the registry.
//
// Design: persistent pages of 64-byte slots, each slot one key-value pair committed by its
// state word, and a DRAM std::map (key -> slot) rebuilt from the pages on every open. A removed
// key's slot is free for the next insert. Keys and values are exactly 8 bytes (IntKey order).
//
// Layout. The first 8 bytes of the pool's root area hold the offset of the first page (0 =
// none). A page is 4 KiB:
//
//   offset size field                        line
//      0     8  next  (next page, 0 = none)     0
//      8    56  unused                          0
//     64    64  slot[0]                         1
//    ...
//   4032    64  slot[62]                        63
//
// A slot (one cache line): key (8, numeric), value (8), state (8: 0 free, 1 live), 40 unused.
//
// Crash argument. insert: key and value are written into a free slot and persisted, then the
// state word is set to 1 (8-byte failure-atomic) and persisted: a slot is live whole or free.
// update: one 8-byte failure-atomic store of the value, persisted. remove: one store of state
// 0, persisted. A new page is zeroed and persisted before the 8-byte store of `next` (or the
// root word) links it; an unlinked page is freed by the allocator rebuild.
//
// Thread safety: one reader-writer lock around every operation.
#ifndef PMINDEX_TESTS_SAMPLE_INDEX_SLOT_PAGES_H_
#define PMINDEX_TESTS_SAMPLE_INDEX_SLOT_PAGES_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <vector>

#include "pmindex/index.h"

namespace pmindex::sample {

struct Slot {
  uint64_t key;
  uint64_t value;
  uint64_t state;  // kFree or kLive: the commit word
  uint8_t unused[40];
};
static_assert(sizeof(Slot) == 64);
static_assert(offsetof(Slot, state) == 16);

struct SlotPage {
  static constexpr size_t kSlots = 63;
  uint64_t next;
  uint8_t unused[56];
  Slot slots[kSlots];
};
static_assert(sizeof(SlotPage) == 4096);
static_assert(offsetof(SlotPage, slots) == 64);

class SlotPages final : public Index {
 public:
  static constexpr uint64_t kFree = 0;
  static constexpr uint64_t kLive = 1;

  explicit SlotPages(std::unique_ptr<Pool> pool);
  ~SlotPages() override;

  const IndexTraits& traits() const override;
  Status insert(std::string_view key, std::string_view value) override;
  Status update(std::string_view key, std::string_view value) override;
  Status upsert(std::string_view key, std::string_view value) override;
  Status remove(std::string_view key) override;
  Status lookup(std::string_view key, std::string* value) override;
  size_t scan(std::string_view start, size_t max_count, ScanCallback fn) override;
  Status verify() override;
  IndexStats stats() override;
  Status recover() override;
  Status visit_blocks(BlockVisitor& visitor) override;
  Pool* pool() override { return pool_.get(); }
  Status close() override;

 private:
  enum class Need { kAbsent, kPresent, kAny };
  Status Write(std::string_view key, std::string_view value, Need need);
  Status Fill(uint64_t key, uint64_t value);  // caller holds mu_ exclusively
  Result<Slot*> FreeSlot();
  Status Rebuild(std::map<uint64_t, Slot*>* map, std::vector<Slot*>* free, SlotPage** last,
                 uint64_t* pages) const;
  SlotPage* page_at(uint64_t offset) const;
  uint64_t* root_word() const;

  std::shared_mutex mu_;
  std::unique_ptr<Pool> pool_;
  std::map<uint64_t, Slot*> map_;  // DRAM: the live slots by key
  std::vector<Slot*> free_;        // DRAM: free slots
  SlotPage* last_ = nullptr;
  uint64_t pages_ = 0;
};

}  // namespace pmindex::sample

#endif  // PMINDEX_TESTS_SAMPLE_INDEX_SLOT_PAGES_H_
