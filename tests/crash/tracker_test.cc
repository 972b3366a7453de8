// The crash tracker on raw memory: which images it builds, how it reports verifiers that
// fail, crash or hang, and that a printed (point, image) replays.
#include "pm/crash/tracker.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <set>

#include <gtest/gtest.h>

#include "common/test_util.h"
#include "pm/persist.h"

namespace pmindex::pm::crash {
namespace {

constexpr size_t kRegion = 1 << 20;

// A page-aligned region standing in for a pool.
struct Region {
  Region() {
    base = static_cast<char*>(
        ::mmap(nullptr, kRegion, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  }
  ~Region() { ::munmap(base, kRegion); }
  char* base;
  pm::PersistContext pc;  // the region's own seam, adr
};

uint64_t ReadWord(const std::string& path, size_t offset) {
  int fd = ::open(path.c_str(), O_RDONLY);
  uint64_t v = 0;
  EXPECT_EQ(::pread(fd, &v, 8, static_cast<off_t>(offset)), 8);
  ::close(fd);
  return v;
}

void Store(char* p, uint64_t v) { std::memcpy(p, &v, 8); }

TrackerOptions Quiet() {
  TrackerOptions o;
  o.max_failures = 0;  // collect all
  return o;
}

TEST(CrashTrackerTest, UnflushedLineIsOldOrNew) {
  Region r;
  // Line 0 persisted, line 1 written without flush: at the next fence line 1 is undecided.
  CrashTracker t(r.base, kRegion, Quiet(), [](const std::string& img, uint64_t point,
                                              const std::string&) {
    // At point 1 (the fence of the persist has not taken effect yet) line 0 may be lost.
    const uint64_t v0 = ReadWord(img, 0);
    if (v0 != 11 && !(point == 1 && v0 == 0)) return Status::Corruption("line 0 lost");
    const uint64_t v = ReadWord(img, 64);
    if (v != 0 && v != 22) return Status::Corruption("line 1 is neither old nor new");
    return Status::OK();
  });
  t.install(r.pc);
  Store(r.base, 11);
  r.pc.persist(r.base, 8);  // point 1: line 0 undecided (pending), images old and new
  Store(r.base + 64, 22);
  r.pc.fence();  // point 2: line 1 undecided
  t.uninstall();
  EXPECT_EQ(t.report().fences, 2u);
  EXPECT_EQ(t.report().points_checked, 2u);
  EXPECT_EQ(t.report().images, 4u);
  for (const CrashFailure& f : t.report().failures)
    ADD_FAILURE() << "point " << f.point << " image " << f.image << ": " << f.message;
}

TEST(CrashTrackerTest, ReportsTheImageThatLosesData) {
  Region r;
  // The verifier insists line 1 reached media although it was never flushed.
  CrashTracker t(r.base, kRegion, Quiet(), [](const std::string& img, uint64_t, const std::string&) {
    return ReadWord(img, 64) == 22 ? Status::OK() : Status::Corruption("line 1 lost");
  });
  t.install(r.pc);
  Store(r.base + 64, 22);
  r.pc.fence();
  t.uninstall();
  ASSERT_EQ(t.report().failures.size(), 1u);
  EXPECT_EQ(t.report().failures[0].point, 1u);
  EXPECT_EQ(t.report().failures[0].image, "old");
  EXPECT_NE(t.report().failures[0].message.find("line 1 lost"), std::string::npos);
}

TEST(CrashTrackerTest, FlipsEachLineAndDeduplicates) {
  Region r;
  TrackerOptions o = Quiet();
  o.random_images = 16;
  CrashTracker t(r.base, kRegion, o,
                 [](const std::string&, uint64_t, const std::string&) { return Status::OK(); });
  t.install(r.pc);
  for (int i = 0; i < 3; ++i) Store(r.base + 4096 + i * 64, 1 + i);
  r.pc.fence();
  t.uninstall();
  // 3 undecided lines: 2^3 = 8 distinct images at most, all checked once.
  EXPECT_EQ(t.report().max_undecided, 3u);
  EXPECT_EQ(t.report().images, 8u);
}

TEST(CrashTrackerTest, SkipsPointsWithNothingNew) {
  Region r;
  CrashTracker t(r.base, kRegion, Quiet(),
                 [](const std::string&, uint64_t, const std::string&) { return Status::OK(); });
  t.install(r.pc);
  Store(r.base, 5);
  r.pc.persist(r.base, 8);
  r.pc.fence();  // nothing written since the previous point
  r.pc.fence();
  t.uninstall();
  EXPECT_EQ(t.report().fences, 3u);
  EXPECT_EQ(t.report().points_checked, 2u);  // point 1 (pending line) and 2 (durable state)
  EXPECT_EQ(t.report().points_skipped, 1u);
}

TEST(CrashTrackerTest, TornImagesMixWords) {
  Region r;
  TrackerOptions o = Quiet();
  o.torn_images = 8;
  o.random_images = 0;
  // A line whose two words must change together: a torn image breaks it.
  CrashTracker t(r.base, kRegion, o, [](const std::string& img, uint64_t, const std::string&) {
    return ReadWord(img, 0) == ReadWord(img, 8) ? Status::OK() : Status::Corruption("torn");
  });
  t.install(r.pc);
  Store(r.base, 7);
  Store(r.base + 8, 7);
  r.pc.fence();
  t.uninstall();
  ASSERT_FALSE(t.report().failures.empty());
  EXPECT_EQ(t.report().failures[0].image.rfind("torn:", 0), 0u);
}

// A verifier that dies and one that hangs are failures, each told apart from the other. The
// two run in separate campaigns so that no check depends on a tight time bound: a dying
// verifier has a long timeout (under ASan the child first symbolizes its stack, seconds on a
// loaded machine), and a hanging one, which never finishes, a short one (0.5 s: it can only
// be reported as a hang, however loaded the machine).
TEST(CrashTrackerTest, VerifierCrashIsAFailure) {
  Region r;
  TrackerOptions o = Quiet();
  o.timeout_seconds = 120;
  CrashTracker t(r.base, kRegion, o, [](const std::string&, uint64_t, const std::string&) {
    std::raise(SIGSEGV);
    return Status::OK();
  });
  t.install(r.pc);
  Store(r.base, 1);
  r.pc.fence();
  t.uninstall();
  ASSERT_EQ(t.report().failures.size(), 2u);  // images "old" and "new"
  for (const CrashFailure& f : t.report().failures) {
    // A plain build dies of the signal; under ASan the sanitizer reports it and exits.
    EXPECT_TRUE(f.message.find("signal") != std::string::npos ||
                f.message.find("exited with status") != std::string::npos)
        << f.image << ": " << f.message;
  }
}

TEST(CrashTrackerTest, VerifierHangIsAFailure) {
  Region r;
  TrackerOptions o = Quiet();
  o.timeout_seconds = 0.5;
  CrashTracker t(r.base, kRegion, o, [](const std::string&, uint64_t, const std::string&) {
    for (;;) ::pause();
    return Status::OK();
  });
  t.install(r.pc);
  Store(r.base, 1);
  r.pc.fence();
  t.uninstall();
  ASSERT_EQ(t.report().failures.size(), 2u);
  for (const CrashFailure& f : t.report().failures) {
    EXPECT_NE(f.message.find("timed out"), std::string::npos) << f.image << ": " << f.message;
  }
}

TEST(CrashTrackerTest, ReplaysOnePointAndImage) {
  Region r;
  TrackerOptions o = Quiet();
  o.only_point = 2;
  o.only_image = "new";
  CrashTracker t(r.base, kRegion, o,
                 [](const std::string&, uint64_t point, const std::string& image) {
                   return Status::Corruption("checked " + std::to_string(point) + " " + image);
                 });
  t.install(r.pc);
  for (int i = 0; i < 4; ++i) {
    Store(r.base + i * 64, 9);
    r.pc.fence();
  }
  t.uninstall();
  ASSERT_EQ(t.report().failures.size(), 1u);
  EXPECT_EQ(t.report().images, 1u);
  EXPECT_EQ(t.report().failures[0].point, 2u);
  EXPECT_EQ(t.report().failures[0].image, "new");
}

}  // namespace
}  // namespace pmindex::pm::crash
