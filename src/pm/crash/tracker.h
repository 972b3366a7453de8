// The crash tracker: simulated power failure under the ADR model.
//
// A PersistHook on one pool's persist seam (Options::persist_hook, or install() on a bare
// PersistContext), it follows one mapping [base, base+size) — a pool — and keeps the *durable
// image*: what the medium is guaranteed to hold. Only that pool's flushes and fences reach
// it: other pools of the process (the verifier's, say) have seams of their own.
//
//   flush(line)  records the line's content at flush time as pending;
//   fence()      makes the pending lines durable (content as of their flush).
//
// A line whose current content differs from the durable image is *undecided*: it was
// written but not flushed and fenced, so after a power failure it may hold either version
// (or, torn, each of its 8-byte words independently old or new — x86 guarantees only 8-byte
// failure atomicity).
//
// Crash points are the fences (every one, a seeded sample, or an explicit list), taken just
// before the fence takes effect; a point whose undecided lines and durable image equal those
// of the previous checked point is skipped (nothing new written). At a crash point the
// tracker lists the undecided lines and builds candidate post-crash images:
//
//   "old"       every undecided line old (= the state right after the previous fence)
//   "new"       every undecided line new (= everything reached media)
//   "only:i"    only undecided line i new          "drop:i"  only line i old
//   "rand:j"    seeded random subset j of the lines new
//   "torn:j"    seeded, each 8-byte word of each undecided line independently old or new
//
// (duplicates removed). Each image is written to a file and handed to the verifier in a
// forked child with a timeout; all images of one point run in one child, one after another,
// each reported on its own. A verifier that crashes, trips a sanitizer or hangs fails the
// image it was checking; the next child goes on with the rest. Every failure names the seed,
// the crash point (fence number) and the image, which together with the caller's workload
// seed replay it exactly (TrackerOptions::only_point / only_image).
//
// Finding undecided lines costs one memcmp over the used part of the mapping (the extent
// function, e.g. up to the highest carved chunk), refined to lines only inside pages that
// differ.
//
// Thread safety: the hook serializes itself with a mutex, but crash points fork the process,
// so the tracked workload must run on one thread. The tracker treats a fence as completing
// every thread's pending flushes (exact for one thread).
//
// The verifier runs in the child, which is a copy of the process at the crash point: it can
// read the caller's model of what the workload had done. It must not write to the image file
// (open it read-only / copy-on-write, or copy it first); the tracker patches and restores it.
#ifndef PMINDEX_PM_CRASH_TRACKER_H_
#define PMINDEX_PM_CRASH_TRACKER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "pm/persist.h"
#include "pmindex/status.h"

namespace pmindex::pm::crash {

struct TrackerOptions {
  // ---- which crash points ----

  // Seed of point sampling and of the random/torn images.
  uint64_t seed = 1;
  // Probability that a fence is a crash point (1 = every fence), drawn from `seed`.
  double point_probability = 1.0;
  // If not empty: exactly these fence numbers (1-based) are crash points.
  std::vector<uint64_t> points;
  // Replay: check only this fence number (0 = no restriction).
  uint64_t only_point = 0;
  // Stop taking crash points after this many failures (0 = never stop).
  uint64_t max_failures = 1;
  // Stop taking crash points after this many checked ones (0 = no limit).
  uint64_t max_points = 0;

  // ---- which images per point ----

  // "only:i" and "drop:i" for each undecided line (at most max_flip_lines lines, a seeded
  // sample when there are more).
  bool flip_each = true;
  size_t max_flip_lines = 64;
  // Number of seeded random subsets ("rand:j").
  size_t random_images = 4;
  // Number of torn images ("torn:j"); 0 = none (only code that asks for it).
  size_t torn_images = 0;
  // Replay: check only the image with this name at each point ("" = all).
  std::string only_image;

  // ---- how images are checked ----

  // Directory of the image file (tmpfs keeps it fast).
  std::string image_dir = "/dev/shm";
  // Seconds one image's verifier may take before it counts as hung.
  double timeout_seconds = 20;
  // Run verifiers in forked children (false: in-process, for debugging; a crashing verifier
  // then takes the process down).
  bool fork = true;
};

// One image that failed.
struct CrashFailure {
  uint64_t point = 0;     // fence number
  std::string image;      // image name ("old", "only:3", "torn:1", ...)
  std::string context;    // the caller's description of the point (e.g. interrupted op)
  std::string message;    // what the verifier found, or how it died
  size_t undecided = 0;   // undecided lines at the point
};

struct TrackerReport {
  uint64_t fences = 0;          // fences seen (= crash point numbers used)
  uint64_t points_checked = 0;  // crash points whose images were checked
  uint64_t points_skipped = 0;  // selected points with nothing new
  uint64_t images = 0;          // images checked
  uint64_t max_undecided = 0;   // most undecided lines at one point
  double check_seconds = 0;     // wall time spent building and checking images
  double scan_seconds = 0;      // of which finding undecided lines (compare with durable image)
  uint64_t bytes_compared = 0;  // bytes of pool compared to find them
  std::vector<CrashFailure> failures;
};

class CrashTracker : public PersistHook {
 public:
  // Checks one image (a file holding the whole mapping as it would be after the crash) of
  // crash point `point` named `image`; runs in the child. OK = the image recovers correctly.
  using Verifier =
      std::function<Status(const std::string& image_path, uint64_t point, const std::string& image)>;

  // A tracker for a pool not mapped yet: hand it to the pool through Options::persist_hook;
  // on_map() takes the snapshot when the pool maps.
  CrashTracker(TrackerOptions options, Verifier verifier);
  // Snapshots [base, base+size) as the durable image (everything there now counts as
  // durable). Does not install itself.
  CrashTracker(void* base, size_t size, TrackerOptions options, Verifier verifier);
  ~CrashTracker() override;
  CrashTracker(const CrashTracker&) = delete;
  CrashTracker& operator=(const CrashTracker&) = delete;

  // Bytes from base that may have been written (default: the whole size). Called at each
  // crash point; compare-cost is proportional to it. Must not shrink below any written line.
  void set_extent(std::function<size_t()> extent) { extent_ = std::move(extent); }
  // The extent is the mapped pool's used part (PoolUsedExtent), once on_map() gives its base.
  void use_pool_extent() { pool_extent_ = true; }
  // Describes the current point for failure reports (e.g. "op 17: insert 42"); called in the
  // parent at crash points that are checked.
  void set_context(std::function<std::string()> context) { context_ = std::move(context); }
  // Called for each failure as it is found (e.g. to print it).
  void set_on_failure(std::function<void(const CrashFailure&)> fn) { on_failure_ = std::move(fn); }

  // Hooks itself into a bare context (tests on raw buffers) / restores its previous hook.
  // Pools take the tracker through Options::persist_hook instead.
  void install(PersistContext& context);
  void uninstall();

  // An explicit crash point outside the fence stream (e.g. after the workload's last
  // operation). Numbered like a fence (it takes the next number).
  void crash_point();
  // True once max_failures (or max_points) is reached: further points are not checked.
  bool done() const;

  const TrackerReport& report() const { return report_; }
  const TrackerOptions& options() const { return options_; }

  // PersistHook.
  void on_map(void* base, size_t size) override;
  void on_flush(uintptr_t first_line, size_t lines) override;
  void on_fence() override;

 private:
  struct Image {
    std::string name;
    std::vector<uint8_t> word_masks;  // per undecided line: bit w set = word w new
  };

  bool selected(uint64_t point);
  void check_point(uint64_t point);
  void find_undecided(size_t extent);
  std::vector<Image> build_images(uint64_t point) const;
  Status sync_file(size_t extent);
  void run_images(uint64_t point, const std::vector<Image>& images, const std::string& context);
  void run_images_in_process(uint64_t point, const std::vector<Image>& images,
                             const std::string& context);
  bool run_images_in_child(uint64_t point, const std::vector<Image>& images,
                           const std::string& context, size_t* next);
  [[noreturn]] void verify_in_child(int read_fd, int write_fd, uint64_t point,
                                    const std::vector<Image>& images, size_t first);
  bool read_verdicts(int fd, uint64_t point, const std::vector<Image>& images,
                     const std::string& context, size_t* next, int64_t* in_progress);
  void patch_image(const Image& image, bool restore);
  void restore_undecided_in_file();
  void record_failure(uint64_t point, const std::string& image, const std::string& context,
                      std::string message);

  char* base_ = nullptr;
  size_t size_ = 0;
  TrackerOptions options_;
  Verifier verifier_;
  std::function<size_t()> extent_;
  std::function<std::string()> context_;
  std::function<void(const CrashFailure&)> on_failure_;
  bool pool_extent_ = false;
  PersistContext* hooked_ = nullptr;  // where install() hooked it
  PersistHook* previous_ = nullptr;
  bool detached_ = false;  // in a verifier child: the copy of the workload feeds nothing

  std::mutex mu_;
  char* durable_ = nullptr;  // anonymous mapping, `size_` bytes
  // Pending flushed lines: line index -> content at flush time.
  std::unordered_map<uint64_t, std::array<char, kCacheLine>> pending_;
  uint64_t durable_version_ = 0;  // bumps when a fence changes durable content

  // Undecided lines of the current point and their new content.
  std::vector<uint64_t> undecided_;
  std::vector<std::array<char, kCacheLine>> undecided_new_;
  uint64_t last_digest_ = 0;
  bool have_digest_ = false;

  // The image file mirrors durable_ (lines in file_stale_ still to be written).
  std::string image_path_;
  int image_fd_ = -1;
  std::vector<uint64_t> file_stale_;
  bool file_complete_ = false;

  TrackerReport report_;
};

// Bytes from the start of a mapped pool that its allocator may have handed out: header,
// chunk table and every chunk up to the highest carved one (read from the chunk table).
// A good CrashTracker extent for a pool; `size` caps it.
size_t PoolUsedExtent(const void* pool_base, size_t size);

// A human-readable name for a wait status ("killed by signal 11 (Segmentation fault)").
std::string DescribeWaitStatus(int status);

}  // namespace pmindex::pm::crash

#endif  // PMINDEX_PM_CRASH_TRACKER_H_
