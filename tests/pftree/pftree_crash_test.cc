// PFtree under the crash campaign (crashtest/campaign.h): ADR crash images at sampled fences
// recover to the acknowledged state, and each test-only mutant is caught. The full campaigns
// (every fence of 2,000 operations, 50 SIGKILL cycles with 4 threads) are labelled long.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "crashtest/campaign.h"
#include "pm/crash/tracker.h"
#include "pm/mutant.h"
#include "radix/pftree/leaf_array.h"

namespace pmindex::testing {
namespace {

crashtest::CampaignOptions Base(uint64_t ops, uint64_t points) {
  crashtest::CampaignOptions o;
  o.timeout_seconds = CampaignTimeout();
  o.index = "pftree";
  o.ops = ops;
  o.points = points;
  o.seed = TestSeed(5);
  o.images = 2;
  o.continuation_every = 8;
  if (std::getenv("PFTREE_CRASH_VERBOSE"))
    o.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  return o;
}

bool Long() { return std::getenv("PFTREE_CRASH_FULL") != nullptr; }

// Runs an ADR campaign that must pass (every image recovers to the acknowledged state).
crashtest::CampaignResult ExpectRecovers(const crashtest::CampaignOptions& o) {
  auto r = crashtest::RunAdrCampaign(o);
  SCOPED_TRACE(crashtest::FormatResult(r));
  EXPECT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_TRUE(r.passed()) << (r.failures.empty() ? "" : r.failures[0].message + "\n  replay: " +
                                                             r.failures[0].replay);
  return r;
}

// Runs an ADR campaign with o.mutant that must fail: the campaign catches the mutant.
void ExpectCaught(const crashtest::CampaignOptions& o, const char* what) {
  auto r = crashtest::RunAdrCampaign(o);
  SCOPED_TRACE(crashtest::FormatResult(r));
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_FALSE(r.passed()) << what << " survived the campaign";
}

TEST(PFTreeCrashTest, AdrImagesRecover) {
  auto o = Base(Long() ? 2000 : Scale(600), Long() ? 0 : Scale(300));
  EXPECT_GT(ExpectRecovers(o).images, 0u);
}

class PFTreeMutantTest : public ::testing::TestWithParam<const char*> {};

TEST_P(PFTreeMutantTest, IsCaught) {
  PMINDEX_REQUIRE_MUTANTS();
  auto o = Base(Scale(600), 0);
  o.mutant = GetParam();
  o.continuation_every = 64;
  auto r = crashtest::RunAdrCampaign(o);
  SCOPED_TRACE(crashtest::FormatResult(r));
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_FALSE(r.passed()) << "mutant " << GetParam() << " survived the campaign";
  if (!r.failures.empty()) std::printf("%s caught: %s\n", GetParam(), r.failures[0].message.c_str());
}

INSTANTIATE_TEST_SUITE_P(Mutants, PFTreeMutantTest,
                         ::testing::Values("pftree.header_before_kv", "pftree.skip_entry_persist",
                                           "pftree.skip_split_persist", "pftree.rebuild_pad_unwritten"),
                         [](const auto& info) {
                           std::string n = info.param;
                           return n.substr(n.find('.') + 1);
                         });

// Splits of leaf arrays that serve runs of key bytes (copies of a Node48 / Node256 published
// in the grandparent), removal of whole runs, and leaves added back into emptied runs.
TEST(PFTreeCrashTest, SplitRunsRecover) {
  // ~9,000 fences with many undecided lines each: a sample, each line not flipped alone
  // (every fence with PFTREE_CRASH_FULL=1).
  auto o = Base(0, Long() ? 0 : Scale(120));
  o.scenario = "pftree-split-runs";
  o.pool_size = 32ull << 20;
  o.flip_each = Long();
  ExpectRecovers(o);
}

// The copy of a shared leaf's parent must be durable before the grandparent names it.
TEST(PFTreeCrashTest, SplitRunsCatchUnpersistedCopy) {
  PMINDEX_REQUIRE_MUTANTS();
  auto o = Base(0, Scale(60));
  o.scenario = "pftree-split-runs";
  o.pool_size = 32ull << 20;
  o.flip_each = false;
  o.mutant = "pftree.skip_split_node_persist";
  ExpectCaught(o, "the unpersisted copy");
}

// Scenarios run at every fence, each with the mutant of its one new persist:
// - updates of 8-byte values in place (and the aligned appends that make them possible): the
//   in-place store must be persisted before the update returns;
// - children added in place to Node4/16 (and the copies when they are full): the slot must be
//   durable before the count covers it.
struct InPlaceScenario {
  const char* scenario;
  const char* mutant;
  const char* what;  // the bug the mutant plants, for the failure message
};

class PFTreeInPlaceTest : public ::testing::TestWithParam<InPlaceScenario> {};

TEST_P(PFTreeInPlaceTest, Recovers) {
  auto o = Base(0, 0);
  o.scenario = GetParam().scenario;
  o.torn = true;
  ExpectRecovers(o);
}

TEST_P(PFTreeInPlaceTest, CatchesItsMutant) {
  PMINDEX_REQUIRE_MUTANTS();
  auto o = Base(0, 0);
  o.scenario = GetParam().scenario;
  o.mutant = GetParam().mutant;
  ExpectCaught(o, GetParam().what);
}

INSTANTIATE_TEST_SUITE_P(
    Scenarios, PFTreeInPlaceTest,
    ::testing::Values(InPlaceScenario{"pftree-update-in-place", "pftree.skip_inplace_update_persist",
                                      "the unpersisted in-place update"},
                      InPlaceScenario{"pftree-node-insert-in-place", "pftree.skip_node_slot_persist",
                                      "the unpersisted Node4/16 slot"}),
    [](const auto& info) {
      std::string n = info.param.scenario;
      n = n.substr(n.find('-') + 1);
      for (char& c : n) c = c == '-' ? '_' : c;
      return n;
    });

// Appends into a leaf block whose bytes past the data area's end are old (a reused block, or
// the body of an append a crash cut short): at every fence, every image (each line, and each
// 8-byte word, old or new) must scan as exactly the committed entries, or those and the one
// being appended. The keys' lengths vary so that the padding before an 8-byte value and the
// entry's header fall in different words and lines.
// Returns the tracker's failures, after checking the run covered the appends it meant to.
std::vector<pm::crash::CrashFailure> AppendOverOldBytes(uint64_t seed) {
  constexpr size_t kBlock = 2048;
  char* base = static_cast<char*>(
      ::mmap(nullptr, kBlock, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  EXPECT_NE(base, MAP_FAILED);
  if (base == MAP_FAILED) return {};
  auto* leaf = reinterpret_cast<pftree::LeafHeader*>(base);
  std::memset(base, 0xA5, kBlock);  // old bytes: a header of them reads as a valid entry
  pm::PersistContext pc;            // the block's own seam, adr

  std::vector<std::string> keys, values;
  for (int i = 0; i < 60; ++i) {
    // Even key lengths 2..16 (8-byte values are padded to an 8-byte boundary), and every
    // fifth value of another length (no padding).
    std::string k = "k" + std::to_string(100 + i);
    k.resize(2 + 2 * static_cast<size_t>(i % 8), static_cast<char>('a' + i % 26));
    keys.push_back(k);
    values.push_back(i % 5 == 4 ? "value" + std::to_string(i) : std::string(8, static_cast<char>('0' + i % 10)));
  }
  std::vector<pftree::LeafItem> first;
  for (int i = 0; i < 2; ++i) first.push_back({keys[i], values[i], pftree::Fingerprint(keys[i])});
  std::sort(first.begin(), first.end(),
            [](const pftree::LeafItem& a, const pftree::LeafItem& b) { return a.key < b.key; });
  pftree::WriteLeaf(pc, leaf, kBlock, 0, 1, first, 0, first.size(), pftree::BlockPersist::kPersist);

  size_t appending = 2;  // entries [0, appending) are committed; the verifier's fork reads it
  pm::crash::TrackerOptions to;
  to.max_failures = 1;
  to.torn_images = 8;
  to.seed = seed;
  to.timeout_seconds = CampaignTimeout();
  pm::crash::CrashTracker tracker(base, kBlock, to, [&](const std::string& img, uint64_t,
                                                        const std::string&) -> Status {
    void* copy = std::aligned_alloc(64, kBlock);
    const int fd = ::open(img.c_str(), O_RDONLY);
    const bool read = fd >= 0 && ::pread(fd, copy, kBlock, 0) == static_cast<ssize_t>(kBlock);
    if (fd >= 0) ::close(fd);
    if (!read) return Status::IOError("cannot read " + img);
    auto* l = static_cast<pftree::LeafHeader*>(copy);
    std::string err;
    pftree::LeafAux* aux = pftree::ScanLeaf(l, nullptr, &err);
    if (aux == nullptr) return Status::Corruption("scan: " + err);
    std::vector<std::string> found;
    const uint32_t n = aux->count.load();
    for (uint32_t i = 0; i < n; ++i) {
      const uint16_t h = pftree::LoadEntryHeader(l, aux->pos[i]);
      if ((h & pftree::kEntryValid) == 0) continue;
      found.emplace_back(pftree::EntryKey(l, aux->pos[i], h));
      const size_t k = found.size() - 1;
      if (k >= keys.size() || found[k] != keys[k] ||
          pftree::EntryValue(l, aux->pos[i], h) != values[k])
        return Status::Corruption("entry " + std::to_string(k) + " is not the one appended");
    }
    if (found.size() != appending && found.size() != appending + 1)
      return Status::Corruption(std::to_string(found.size()) + " entries, " +
                                std::to_string(appending) + " committed");
    return Status::OK();
  });
  tracker.install(pc);
  pftree::LeafAux* aux = pftree::AuxOf(leaf);
  for (; appending < keys.size(); ++appending) {
    if (!pftree::AppendEntry(pc, leaf, aux, keys[appending], values[appending],
                             pftree::Fingerprint(keys[appending])))
      break;  // the block is full
  }
  tracker.uninstall();
  EXPECT_GT(appending, 40u);
  EXPECT_GT(tracker.report().points_checked, tracker.report().failures.empty() ? 80u : 0u);
  pftree::FreeAux(aux);
  ::munmap(base, kBlock);
  return tracker.report().failures;
}

TEST(PFTreeCrashTest, AppendsOverOldBytesRecover) {
  const uint64_t seed = TestSeed(5);
  for (const auto& f : AppendOverOldBytes(seed))
    ADD_FAILURE() << "fence " << f.point << " image " << f.image << ": " << f.message
                  << " (seed " << seed << ")";
}

// The header position of an entry after padding must be zeroed, and durable with the body,
// before the padding is stored.
TEST(PFTreeCrashTest, AppendsOverOldBytesCatchPadOverOldHeader) {
  PMINDEX_REQUIRE_MUTANTS();
  ASSERT_TRUE(pm::set_mutant("pftree.pad_over_old_header"));
  const auto failures = AppendOverOldBytes(TestSeed(5));
  pm::set_mutant("");
  ASSERT_FALSE(failures.empty()) << "padding stored before a zeroed header position survived";
  std::printf("pftree.pad_over_old_header caught: fence %llu image %s: %s\n",
              static_cast<unsigned long long>(failures[0].point), failures[0].image.c_str(),
              failures[0].message.c_str());
}

TEST(PFTreeCrashTest, KillCyclesFourThreads) {
  auto o = Base(100000, 0);
  o.cycles = Long() ? 50 : 6;
  o.threads = 4;
  o.pool_size = 64ull << 20;
  auto r = crashtest::RunKillCampaign(o);
  SCOPED_TRACE(crashtest::FormatResult(r));
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_TRUE(r.passed()) << (r.failures.empty() ? "" : r.failures[0].message);
}

}  // namespace
}  // namespace pmindex::testing
