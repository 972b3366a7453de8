#include "reference/test_list.h"

#include <cstring>
#include <mutex>
#include <string>

#include "common/test_kinds.h"
#include "pm/alloc.h"
#include "pm/mutant.h"
#include "pm/persist.h"

namespace pmindex::reference {
namespace {

// An 8-byte failure-atomic store (aligned; the compiler may not split or tear it).
void StoreWord(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
uint64_t LoadWord(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

IndexTraits MakeTraits(bool broken) {
  IndexTraits t;
  t.name = broken ? "testlist-broken" : "testlist";
  t.kind = broken ? kTestListBrokenKind : kTestListKind;
  t.persistent = true;
  t.ordered = true;
  t.byte_keys = false;
  t.concurrency = "reader-writer lock (test structure)";
  t.durability = broken ? "BROKEN on purpose: node not persisted before linking"
                        : "every acknowledged operation survives power failure";
  t.description = broken ? "test-only sorted list with a missing flush (crash checker must fail)"
                         : "test-only persistent sorted list (crash checker reference)";
  return t;
}

const IndexTraits& Traits(bool broken) {
  static const IndexTraits* correct = new IndexTraits(MakeTraits(false));
  static const IndexTraits* bad = new IndexTraits(MakeTraits(true));
  return broken ? *bad : *correct;
}

IndexRegistration MakeRegistration(bool broken) {
  IndexRegistration r;
  r.traits = Traits(broken);
  // A fresh pool's root area is zero: an empty list. Nothing to initialize.
  r.attach = [broken](std::unique_ptr<Pool> pool, bool fresh) -> Result<std::unique_ptr<Index>> {
    return std::unique_ptr<Index>(new TestList(std::move(pool), broken));
  };
  r.test_only = true;
  if (!broken) {
    r.mutants = {{"testlist.skip_node_persist",
                  "the node is not persisted before the link that makes it reachable"},
                 {"testlist.skip_link_persist",
                  "the link store is not persisted (an acknowledged insert can vanish)"}};
    r.crash_scenarios = {"shift-delete-duplicate", "count-vs-entries", "split-sibling-early"};
  }
  return r;
}

}  // namespace

PMINDEX_REGISTER_INDEX(MakeRegistration(false));
PMINDEX_REGISTER_INDEX(MakeRegistration(true));

TestList::TestList(std::unique_ptr<Pool> pool, bool broken)
    : pool_(std::move(pool)), broken_(broken) {}

// A destructor cannot report an error: users who need to see one call close() first.
TestList::~TestList() { close().IgnoreError(); }

const IndexTraits& TestList::traits() const { return Traits(broken_); }

uint64_t* TestList::head() const { return reinterpret_cast<uint64_t*>(pool_->root_area()); }

ListNode* TestList::node_at(uint64_t offset) const {
  if (offset == 0 || offset % 64 != 0 || offset < 4096 || offset + 64 > pool_->size())
    return nullptr;
  return pool_->at<ListNode>(offset);
}

Status TestList::check_args(std::string_view key, std::string_view value) const {
  if (key.size() != 8) return Status::InvalidArgument("testlist: keys are 8 bytes");
  if (value.size() != 8) return Status::InvalidArgument("testlist: values are 8 bytes");
  return Status::OK();
}

uint64_t* TestList::find(uint64_t k, ListNode** node) {
  uint64_t* link = head();
  ListNode* cur = node_at(LoadWord(link));
  while (cur != nullptr && cur->key < k) {
    link = &cur->next;
    cur = node_at(LoadWord(link));
  }
  *node = cur;
  return link;
}

Status TestList::insert_locked(uint64_t k, std::string_view value, uint64_t* link,
                               ListNode* at) {
  Result<uint64_t> off = pool_->allocator().allocate(sizeof(ListNode));
  if (!off.ok()) return off.status();
  auto* n = reinterpret_cast<ListNode*>(pool_->base() + off.value());
  std::memset(n, 0, sizeof(ListNode));
  n->key = k;
  std::memcpy(&n->value, value.data(), 8);
  n->next = pool_->offset_of(at);
  // The node must be durable before the link that makes it reachable.
  if (!broken_ && !pm::mutant("testlist.skip_node_persist")) pool_->persist_context().persist(n, sizeof(ListNode));
  StoreWord(link, off.value());
  if (!pm::mutant("testlist.skip_link_persist")) pool_->persist_context().persist(link, 8);
  return Status::OK();
}

Status TestList::insert(std::string_view key, std::string_view value) {
  if (Status s = check_args(key, value); !s.ok()) return s;
  std::unique_lock lock(mu_);
  const uint64_t k = IntKey::Decode(key);
  ListNode* cur;
  uint64_t* link = find(k, &cur);
  if (cur != nullptr && cur->key == k) return Status::AlreadyExists();
  return insert_locked(k, value, link, cur);
}

Status TestList::update(std::string_view key, std::string_view value) {
  if (Status s = check_args(key, value); !s.ok()) return s;
  std::unique_lock lock(mu_);
  const uint64_t k = IntKey::Decode(key);
  ListNode* cur;
  find(k, &cur);
  if (cur == nullptr || cur->key != k) return Status::NotFound();
  uint64_t v;
  std::memcpy(&v, value.data(), 8);
  StoreWord(&cur->value, v);  // 8-byte failure-atomic: old or new value, never a mix
  pool_->persist_context().persist(&cur->value, 8);
  return Status::OK();
}

Status TestList::upsert(std::string_view key, std::string_view value) {
  if (Status s = check_args(key, value); !s.ok()) return s;
  std::unique_lock lock(mu_);
  const uint64_t k = IntKey::Decode(key);
  ListNode* cur;
  uint64_t* link = find(k, &cur);
  if (cur != nullptr && cur->key == k) {
    uint64_t v;
    std::memcpy(&v, value.data(), 8);
    StoreWord(&cur->value, v);
    pool_->persist_context().persist(&cur->value, 8);
    return Status::OK();
  }
  return insert_locked(k, value, link, cur);
}

Status TestList::remove(std::string_view key) {
  if (key.size() != 8) return Status::InvalidArgument("testlist: keys are 8 bytes");
  std::unique_lock lock(mu_);
  const uint64_t k = IntKey::Decode(key);
  ListNode* cur;
  uint64_t* link = find(k, &cur);
  if (cur == nullptr || cur->key != k) return Status::NotFound();
  StoreWord(link, LoadWord(&cur->next));  // one 8-byte store unlinks the node
  pool_->persist_context().persist(link, 8);
  pool_->allocator().free(pool_->offset_of(cur));  // DRAM only: the node is unreachable now
  return Status::OK();
}

Status TestList::lookup(std::string_view key, std::string* value) {
  if (key.size() != 8) return Status::NotFound();
  std::shared_lock lock(mu_);
  ListNode* cur;
  find(IntKey::Decode(key), &cur);
  if (cur == nullptr || cur->key != IntKey::Decode(key)) return Status::NotFound();
  value->assign(reinterpret_cast<const char*>(&cur->value), 8);
  return Status::OK();
}

size_t TestList::scan(std::string_view start, size_t max_count, ScanCallback fn) {
  std::shared_lock lock(mu_);
  uint64_t k = 0;
  if (start.size() >= 8) {
    k = IntKey::Decode(start.substr(0, 8));
  } else if (!start.empty()) {  // a short prefix: pad with zero bytes
    char buf[8] = {};
    std::memcpy(buf, start.data(), start.size());
    k = IntKey::Decode(std::string_view(buf, 8));
  }
  ListNode* cur;
  find(k, &cur);
  size_t n = 0;
  while (cur != nullptr && n < max_count) {
    IntKey ik(cur->key);
    ++n;
    if (!fn(ik.view(), std::string_view(reinterpret_cast<const char*>(&cur->value), 8))) break;
    cur = node_at(LoadWord(&cur->next));
  }
  return n;
}

Status TestList::verify() {
  std::shared_lock lock(mu_);
  const uint64_t max_nodes = pool_->size() / sizeof(ListNode);
  uint64_t off = LoadWord(head());
  uint64_t count = 0;
  bool have_prev = false;
  uint64_t prev = 0;
  while (off != 0) {
    ListNode* n = node_at(off);
    if (n == nullptr)
      return Status::Corruption("testlist: node " + std::to_string(count) + " at bad offset " +
                                std::to_string(off));
    if (have_prev && n->key <= prev)
      return Status::Corruption("testlist: keys out of order at node " + std::to_string(count) +
                                " (offset " + std::to_string(off) + "): " +
                                std::to_string(prev) + " then " + std::to_string(n->key));
    if (++count > max_nodes) return Status::Corruption("testlist: cycle in the list");
    have_prev = true;
    prev = n->key;
    off = LoadWord(&n->next);
  }
  return Status::OK();
}

IndexStats TestList::stats() {
  std::shared_lock lock(mu_);
  IndexStats st;
  const uint64_t max_nodes = pool_->size() / sizeof(ListNode);
  for (ListNode* n = node_at(LoadWord(head())); n != nullptr && st.keys < max_nodes;
       n = node_at(LoadWord(&n->next)))
    ++st.keys;
  st.pm_bytes = st.keys * sizeof(ListNode);
  st.nodes.emplace_back("nodes", st.keys);
  return st;
}

Status TestList::recover() { return Status::OK(); }  // no volatile state; nothing to finish

Status TestList::visit_blocks(BlockVisitor& visitor) {
  std::shared_lock lock(mu_);
  const uint64_t max_nodes = pool_->size() / sizeof(ListNode);
  uint64_t off = LoadWord(head());
  for (uint64_t count = 0; off != 0; ++count) {
    ListNode* n = node_at(off);
    if (n == nullptr || count > max_nodes)
      return Status::Corruption("testlist: bad node offset " + std::to_string(off));
    if (Status s = visitor.visit(off); !s.ok()) return s;
    off = LoadWord(&n->next);
  }
  return Status::OK();
}

Status TestList::close() {
  if (pool_ == nullptr) return Status::OK();
  Status s = pool_->Close();
  return s;
}

}  // namespace pmindex::reference
