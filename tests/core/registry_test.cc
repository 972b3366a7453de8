// The registry's create/open sequence: attach, recover, allocator rebuild, and its errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "common/test_kinds.h"
#include "common/test_util.h"
#include "core/value_store.h"
#include "core/write_batch_log.h"
#include "pm/alloc.h"
#include "pm/persist.h"
#include "pmindex/index.h"

namespace pmindex {
namespace {

// The test index's link word (the first word of the root area), read through the pool: the
// registry hands out its own wrapper, not the concrete class.
uint64_t RootWord(Index& index) {
  return *reinterpret_cast<uint64_t*>(index.pool()->root_area());
}

// A pool-backed index that owns one 4 KiB block (offset kept in the root area) and counts
// the recover() calls; just enough to watch the registry drive it.
class BlockHolder : public Index {
 public:
  static inline int recover_calls = 0;

  explicit BlockHolder(std::unique_ptr<Pool> pool) : pool_(std::move(pool)) {
    traits_.name = "test-blockholder";
    traits_.kind = kTestRegistryKind;
  }
  Status init() {
    auto b = pool_->allocator().allocate(4096, true);
    if (!b.ok()) return b.status();
    pool_->persist_context().persist(pool_->at<char>(*b), 4096);
    block_slot() = *b;  // the link: one 8-byte store, persisted
    pool_->persist_context().persist(&block_slot(), 8);
    return Status::OK();
  }
  uint64_t& block_slot() { return *reinterpret_cast<uint64_t*>(pool_->root_area()); }

  const IndexTraits& traits() const override { return traits_; }
  Status insert(std::string_view, std::string_view) override { return Status::NotSupported(); }
  Status update(std::string_view, std::string_view) override { return Status::NotSupported(); }
  Status upsert(std::string_view, std::string_view) override { return Status::NotSupported(); }
  Status remove(std::string_view) override { return Status::NotSupported(); }
  Status lookup(std::string_view, std::string*) override { return Status::NotFound(); }
  size_t scan(std::string_view, size_t, ScanCallback) override { return 0; }
  Status verify() override { return Status::OK(); }
  IndexStats stats() override { return {}; }
  Status recover() override {
    ++recover_calls;
    return Status::OK();
  }
  Status visit_blocks(BlockVisitor& v) override {
    return block_slot() == 0 ? Status::OK() : v.visit(block_slot());
  }
  Pool* pool() override { return pool_.get(); }

 private:
  IndexTraits traits_;
  std::unique_ptr<Pool> pool_;
};

IndexRegistration Registration() {
  IndexRegistration r;
  r.traits.name = "test-blockholder";
  r.traits.kind = kTestRegistryKind;
  r.test_only = true;
  r.attach = [](std::unique_ptr<Pool> pool, bool fresh) -> Result<std::unique_ptr<Index>> {
    auto index = std::make_unique<BlockHolder>(std::move(pool));
    if (fresh || index->block_slot() == 0) {
      if (Status s = index->init(); !s.ok()) return s;
    }
    return std::unique_ptr<Index>(std::move(index));
  };
  return r;
}
PMINDEX_REGISTER_INDEX(Registration());

// A second kind, so that opening a pool under the wrong name can be tried.
IndexRegistration OtherRegistration() {
  IndexRegistration r = Registration();
  r.traits.name = "test-other";
  r.traits.kind = kTestArrayMapKind;
  return r;
}
PMINDEX_REGISTER_INDEX(OtherRegistration());

TEST(Registry, NamesIncludeRegisteredIndexesAndDuplicatesAreRefused) {
  auto names = RegisteredIndexNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "test-blockholder"), names.end());
  EXPECT_FALSE(RegisterIndex(Registration()));
  EXPECT_NE(FindIndex(kTestRegistryKind), nullptr);
  EXPECT_EQ(FindIndex("no-such-index"), nullptr);
}

// The library's indexes are there without whole-archive linking or static initializers, and
// come before the ones this test registered from its static initializers.
TEST(Registry, BuiltinIndexesAreRegisteredOnFirstUse) {
  for (const char* name : {"nvtree", "wbtree", "fptree", "rntree", "wort", "woart", "pftree", "art"}) {
    EXPECT_NE(FindIndex(name), nullptr) << name;
  }
  const IndexKind rntree_kind = FindIndex("rntree")->traits.kind;
  EXPECT_NE(rntree_kind, IndexKind::kNone);
  EXPECT_EQ(FindIndex(rntree_kind), FindIndex("rntree"));
  EXPECT_EQ(IndexKindName(rntree_kind), "rntree");
  const auto names = RegisteredIndexNames();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), "nvtree");
  IndexRegistration impostor = Registration();
  impostor.traits.name = "rntree";
  EXPECT_FALSE(RegisterIndex(impostor));
  EXPECT_EQ(FindIndex("rntree")->traits.kind, rntree_kind);  // the first one wins
}

// Kind numbers are on-media: the registry refuses a second index with a kind already taken,
// a pool-backed index without one, and a mutant that does not carry its index's name.
TEST(Registry, KindsAreUniqueAndMutantsCarryTheirIndexName) {
  IndexRegistration same_kind = Registration();
  same_kind.traits.name = "test-same-kind";
  EXPECT_FALSE(RegisterIndex(same_kind));
  IndexRegistration no_kind = Registration();
  no_kind.traits.name = "test-no-kind";
  no_kind.traits.kind = IndexKind::kNone;
  EXPECT_FALSE(RegisterIndex(no_kind));
  IndexRegistration bad_mutant = Registration();
  bad_mutant.traits.name = "test-bad-mutant";
  bad_mutant.traits.kind = IndexKind{kFirstTestIndexKind + 0xFFF0};
  bad_mutant.mutants = {{"rntree.not_mine", "named after another index"}};
  EXPECT_FALSE(RegisterIndex(bad_mutant));
  EXPECT_EQ(FindIndex("test-same-kind"), nullptr);
  EXPECT_EQ(FindIndex("test-no-kind"), nullptr);
  EXPECT_EQ(FindIndex("test-bad-mutant"), nullptr);

  std::map<uint32_t, std::string> kinds;
  for (const std::string& name : RegisteredIndexNames()) {
    const IndexRegistration* reg = FindIndex(name);
    if (reg->attach == nullptr) continue;
    const uint32_t kind = static_cast<uint32_t>(reg->traits.kind);
    EXPECT_TRUE(kinds.emplace(kind, name).second) << name << " shares kind " << kind;
    EXPECT_EQ(reg->test_only, kind >= kFirstTestIndexKind) << name;
    EXPECT_EQ(IndexKindName(reg->traits.kind), name);
  }
  EXPECT_EQ(IndexKindName(IndexKind{kFirstTestIndexKind + 0xFFF1}), "");
}

// Each index lists its own mutants; the registry finds them by name.
TEST(Registry, MutantsComeFromTheRegistrations) {
  const std::vector<MutantInfo> mutants = RegisteredMutants();
  EXPECT_GE(mutants.size(), 20u);
  for (const MutantInfo& m : mutants) {
    EXPECT_EQ(FindMutant(m.name), FindMutant(m.name));
    ASSERT_NE(FindMutant(m.name), nullptr) << m.name;
    EXPECT_FALSE(m.breaks.empty()) << m.name;
    // The layers above every index have their own: the value store (core/value_store.h)
    // and the write batches (core/write_batch_log.h).
    bool layer = false;
    for (const MutantInfo& v : ValueStoreMutants()) layer = layer || v.name == m.name;
    for (const MutantInfo& v : WriteBatchMutants()) layer = layer || v.name == m.name;
    if (layer) continue;
    const IndexRegistration* owner = FindIndex(m.name.substr(0, m.name.find('.')));
    ASSERT_NE(owner, nullptr) << m.name;
  }
  EXPECT_NE(FindMutant("rntree.skip_kv_persist"), nullptr);
  EXPECT_EQ(FindMutant("rntree.no_such_mutant"), nullptr);
}

TEST(Registry, UnknownNameIsNotFound) {
  testing::TempDir dir;
  auto r = CreateIndex("no-such-index", dir.file("x.pool"), Options());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsNotFound());
}

// Parameters that change an index's traits are seen through a scratch pool, which goes.
TEST(Registry, TraitsWithParamsSeeWhatTheParametersChange) {
  testing::TempDir dir;
  Result<IndexTraits> plain = TraitsWithParams("dash", "", dir.path());
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_FALSE(plain->byte_keys);
  Result<IndexTraits> bytes = TraitsWithParams("dash", "dash keys=bytes", dir.path());
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_TRUE(bytes->byte_keys);
  EXPECT_GT(bytes->max_key_size, 8u);
  EXPECT_FALSE(TraitsWithParams("dash", "dash keys=nonsense", dir.path()).ok());
  EXPECT_FALSE(TraitsWithParams("no-such-index", "", dir.path()).ok());
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "the scratch pool was left behind";
}

TEST(Registry, OpenRecoversAndRebuildsTheAllocator) {
  testing::TempDir dir;
  std::string path = dir.file("x.pool");
  Options o;
  o.pool_size = 4 << 20;
  uint64_t block;
  {
    auto idx = CreateIndex("test-blockholder", path, o);
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    block = RootWord(*idx->get());
    ASSERT_NE(block, 0u);
  }
  BlockHolder::recover_calls = 0;
  auto idx = OpenIndex(path, o);
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  EXPECT_EQ(BlockHolder::recover_calls, 2);  // the trial open (copy-on-write), then for real
  idx->reset();
  BlockHolder::recover_calls = 0;
  o.trial_open = false;
  idx = OpenIndex(path, o);
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  EXPECT_EQ(BlockHolder::recover_calls, 1);
  // The reachable block is not handed out again; the rest of its chunk is.
  Pool* pool = (*idx)->pool();
  for (int i = 0; i < 63; ++i) {
    auto b = pool->allocator().allocate(4096);
    ASSERT_TRUE(b.ok());
    EXPECT_NE(*b, block);
  }
}

TEST(Registry, OpenWithTheWrongNameIsRefused) {
  testing::TempDir dir;
  std::string path = dir.file("x.pool");
  Options o;
  o.pool_size = 4 << 20;
  ASSERT_TRUE(CreateIndex("test-blockholder", path, o).ok());
  auto r = OpenIndex(path, o, "test-other");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
  // src/pm knows kinds as numbers; the registry lends it the names.
  const std::string holds = "pool holds index kind " +
                            std::to_string(static_cast<uint32_t>(kTestRegistryKind)) +
                            " ('test-blockholder'), not " +
                            std::to_string(static_cast<uint32_t>(kTestArrayMapKind)) +
                            " ('test-other')";
  EXPECT_NE(r.status().message().find(holds), std::string::npos) << r.status().ToString();
  EXPECT_TRUE(OpenIndex(path, o, "test-blockholder").ok());
}

TEST(Registry, OpenOrCreateCreatesThenOpens) {
  testing::TempDir dir;
  std::string path = dir.file("x.pool");
  Options o;
  o.pool_size = 4 << 20;
  uint64_t first;
  {
    auto a = OpenOrCreateIndex("test-blockholder", path, o);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    first = RootWord(*a->get());
  }
  auto b = OpenOrCreateIndex("test-blockholder", path, o);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(RootWord(*b->get()), first);
  EXPECT_GE((*b)->pool()->generation(), 2u);
}

}  // namespace
}  // namespace pmindex
