#include "pm/crash/tracker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <unordered_set>

#include "pm/mix64.h"
#include "pm/pool_format.h"

namespace pmindex::pm::crash {
namespace {

constexpr size_t kPage = 4096;
constexpr size_t kWordsPerLine = kCacheLine / 8;

using pm::Mix64;

// A small deterministic generator for image choices: the same (seed, point, image) always
// gives the same subset, which is what makes a printed image name replayable.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(Mix64(seed)) {}
  uint64_t next() { return state_ = Mix64(state_); }

 private:
  uint64_t state_;
};

bool AllZero(const char* p, size_t n) {
  const uint64_t* w = reinterpret_cast<const uint64_t*>(p);
  for (size_t i = 0; i < n / 8; ++i)
    if (w[i] != 0) return false;
  return true;
}

bool WriteAll(int fd, const void* buf, size_t n, off_t offset) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, n, offset);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
    offset += w;
  }
  return true;
}

// Child -> parent messages.
enum MessageKind : uint32_t { kStart = 1, kPass = 2, kFail = 3 };
struct MessageHeader {
  uint32_t image;
  uint32_t kind;
  uint32_t length;  // bytes of message text that follow
};

void SendMessage(int fd, uint32_t image, uint32_t kind, std::string_view text) {
  MessageHeader h{image, kind, static_cast<uint32_t>(text.size())};
  std::string buf(reinterpret_cast<const char*>(&h), sizeof(h));
  buf.append(text);
  const char* p = buf.data();
  size_t n = buf.size();
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      _exit(3);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// Reads exactly n bytes before `deadline`. 1 = done, 0 = end of file, -1 = timed out.
int ReadExact(int fd, void* buf, size_t n, std::chrono::steady_clock::time_point deadline) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return -1;
    pollfd pfd{fd, POLLIN, 0};
    int r = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return -1;
    ssize_t got = ::read(fd, p, n);
    if (got < 0) {
      if (errno == EINTR) continue;
      return 0;
    }
    if (got == 0) return 0;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return 1;
}

std::atomic<uint64_t> g_file_counter{0};

}  // namespace

size_t PoolUsedExtent(const void* pool_base, size_t size) {
  const auto* h = static_cast<const PoolHeader*>(pool_base);
  const auto* table = reinterpret_cast<const uint64_t*>(static_cast<const char*>(pool_base) +
                                                        h->chunk_table_offset);
  uint64_t used = h->data_offset;
  for (uint64_t i = h->chunk_count; i > 0; --i) {
    if (table[i - 1] != 0) {
      used = h->data_offset + i * h->chunk_size;
      break;
    }
  }
  return static_cast<size_t>(std::min<uint64_t>(used, size));
}

std::string DescribeWaitStatus(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return "verifier killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  if (WIFEXITED(status))
    return "verifier exited with status " + std::to_string(WEXITSTATUS(status)) +
           " (sanitizer report or abort?)";
  return "verifier ended with wait status " + std::to_string(status);
}

CrashTracker::CrashTracker(TrackerOptions options, Verifier verifier)
    : options_(std::move(options)), verifier_(std::move(verifier)) {
  std::sort(options_.points.begin(), options_.points.end());
}

CrashTracker::CrashTracker(void* base, size_t size, TrackerOptions options, Verifier verifier)
    : CrashTracker(std::move(options), std::move(verifier)) {
  on_map(base, size);
}

void CrashTracker::on_map(void* base, size_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  base_ = static_cast<char*>(base);
  size_ = size;
  if (pool_extent_) extent_ = [base, size] { return PoolUsedExtent(base, size); };
  void* m = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    durable_ = nullptr;
    return;
  }
  durable_ = static_cast<char*>(m);
  // Untouched pages stay unallocated: the snapshot of a mostly empty pool is cheap.
  for (size_t off = 0; off < size_; off += kPage) {
    const size_t n = std::min(kPage, size_ - off);
    if (!AllZero(base_ + off, n)) std::memcpy(durable_ + off, base_ + off, n);
  }
  image_path_ = options_.image_dir + "/pmindex-crash-" + std::to_string(::getpid()) + "-" +
                std::to_string(g_file_counter.fetch_add(1)) + ".img";
}

CrashTracker::~CrashTracker() {
  uninstall();
  if (image_fd_ >= 0) {
    ::close(image_fd_);
    ::unlink(image_path_.c_str());
  }
  if (durable_ != nullptr) ::munmap(durable_, size_);
}

void CrashTracker::install(PersistContext& context) {
  if (hooked_ != nullptr) return;
  previous_ = context.set_hook(this);
  hooked_ = &context;
}

void CrashTracker::uninstall() {
  if (hooked_ == nullptr) return;
  hooked_->set_hook(previous_);
  hooked_ = nullptr;
}

bool CrashTracker::done() const {
  if (options_.max_failures != 0 && report_.failures.size() >= options_.max_failures) return true;
  if (options_.max_points != 0 && report_.points_checked >= options_.max_points) return true;
  if (options_.only_point != 0 && report_.fences > options_.only_point) return true;
  return false;
}

void CrashTracker::on_flush(uintptr_t first_line, size_t lines) {
  if (detached_) return;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(base_);
  const uintptr_t hi = lo + size_;
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < lines; ++i) {
    const uintptr_t line = first_line + i * kCacheLine;
    if (line < lo || line >= hi) continue;
    auto& slot = pending_[(line - lo) / kCacheLine];
    std::memcpy(slot.data(), reinterpret_cast<const char*>(line), kCacheLine);
  }
}

void CrashTracker::on_fence() {
  if (detached_) return;
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t point = ++report_.fences;
  // The crash point comes before the fence takes effect: pending lines are still undecided.
  if (durable_ != nullptr && !done() && selected(point)) check_point(point);
  bool changed = false;
  for (auto& [line, content] : pending_) {
    char* d = durable_ + line * kCacheLine;
    if (std::memcmp(d, content.data(), kCacheLine) != 0) {
      std::memcpy(d, content.data(), kCacheLine);
      file_stale_.push_back(line);
      changed = true;
    }
  }
  pending_.clear();
  if (changed) ++durable_version_;
}

void CrashTracker::crash_point() {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t point = ++report_.fences;
  if (durable_ != nullptr && !done() && selected(point)) check_point(point);
}

bool CrashTracker::selected(uint64_t point) {
  if (options_.only_point != 0) return point == options_.only_point;
  if (!options_.points.empty())
    return std::binary_search(options_.points.begin(), options_.points.end(), point);
  if (options_.point_probability >= 1.0) return true;
  const double u = static_cast<double>(Mix64(options_.seed ^ Mix64(point)) >> 11) * 0x1.0p-53;
  return u < options_.point_probability;
}

void CrashTracker::find_undecided(size_t extent) {
  undecided_.clear();
  undecided_new_.clear();
  for (size_t off = 0; off < extent; off += kPage) {
    const size_t n = std::min(kPage, extent - off);
    if (std::memcmp(base_ + off, durable_ + off, n) == 0) continue;
    for (size_t l = off; l < off + n; l += kCacheLine) {
      if (std::memcmp(base_ + l, durable_ + l, kCacheLine) == 0) continue;
      undecided_.push_back(l / kCacheLine);
      auto& c = undecided_new_.emplace_back();
      std::memcpy(c.data(), base_ + l, kCacheLine);
    }
  }
}

std::vector<CrashTracker::Image> CrashTracker::build_images(uint64_t point) const {
  const size_t n = undecided_.size();
  std::vector<Image> images;
  std::unordered_set<std::string> seen;
  auto add = [&](std::string name, std::vector<uint8_t> masks) {
    if (!options_.only_image.empty() && name != options_.only_image) return;
    std::string key(masks.begin(), masks.end());
    if (!seen.insert(std::move(key)).second) return;
    images.push_back(Image{std::move(name), std::move(masks)});
  };
  add("old", std::vector<uint8_t>(n, 0));
  add("new", std::vector<uint8_t>(n, 0xFF));
  if (options_.flip_each && n > 1) {
    std::vector<size_t> lines(n);
    for (size_t i = 0; i < n; ++i) lines[i] = i;
    if (n > options_.max_flip_lines) {  // a seeded sample of the lines to flip
      Rng rng(options_.seed ^ Mix64(point) ^ 0x666c6970);
      for (size_t i = 0; i < options_.max_flip_lines; ++i)
        std::swap(lines[i], lines[i + rng.next() % (n - i)]);
      lines.resize(options_.max_flip_lines);
      std::sort(lines.begin(), lines.end());
    }
    for (size_t i : lines) {
      std::vector<uint8_t> m(n, 0);
      m[i] = 0xFF;
      add("only:" + std::to_string(i), std::move(m));
    }
    for (size_t i : lines) {
      std::vector<uint8_t> m(n, 0xFF);
      m[i] = 0;
      add("drop:" + std::to_string(i), std::move(m));
    }
  }
  if (n > 1) {
    for (size_t j = 0; j < options_.random_images; ++j) {
      Rng rng(options_.seed ^ Mix64(point) ^ Mix64(j) ^ 0x72616e64);
      std::vector<uint8_t> m(n);
      for (size_t i = 0; i < n; ++i) m[i] = (rng.next() & 1) ? 0xFF : 0;
      add("rand:" + std::to_string(j), std::move(m));
    }
  }
  if (n > 0) {
    for (size_t j = 0; j < options_.torn_images; ++j) {
      Rng rng(options_.seed ^ Mix64(point) ^ Mix64(j) ^ 0x746f726e);
      std::vector<uint8_t> m(n);
      for (size_t i = 0; i < n; ++i) m[i] = static_cast<uint8_t>(rng.next());
      add("torn:" + std::to_string(j), std::move(m));
    }
  }
  return images;
}

Status CrashTracker::sync_file(size_t extent) {
  if (image_fd_ < 0) {
    image_fd_ = ::open(image_path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (image_fd_ < 0)
      return Status::IOError(image_path_ + ": cannot create crash image: " + strerror(errno));
  }
  if (!file_complete_ || file_stale_.size() * kCacheLine > size_ / 4) {
    if (::ftruncate(image_fd_, 0) != 0 || ::ftruncate(image_fd_, static_cast<off_t>(size_)) != 0)
      return Status::IOError(image_path_ + ": cannot size crash image: " + strerror(errno));
    for (size_t off = 0; off < size_; off += kPage) {
      const size_t n = std::min(kPage, size_ - off);
      if (AllZero(durable_ + off, n)) continue;  // leave a hole
      if (!WriteAll(image_fd_, durable_ + off, n, static_cast<off_t>(off)))
        return Status::IOError(image_path_ + ": write failed: " + strerror(errno));
    }
    file_complete_ = true;
  } else {
    std::sort(file_stale_.begin(), file_stale_.end());
    file_stale_.erase(std::unique(file_stale_.begin(), file_stale_.end()), file_stale_.end());
    for (uint64_t line : file_stale_) {
      if (!WriteAll(image_fd_, durable_ + line * kCacheLine, kCacheLine,
                    static_cast<off_t>(line * kCacheLine)))
        return Status::IOError(image_path_ + ": write failed: " + strerror(errno));
    }
  }
  file_stale_.clear();
  return Status::OK();
}

void CrashTracker::restore_undecided_in_file() {
  for (uint64_t line : undecided_)
    WriteAll(image_fd_, durable_ + line * kCacheLine, kCacheLine,
             static_cast<off_t>(line * kCacheLine));
}

void CrashTracker::record_failure(uint64_t point, const std::string& image,
                                  const std::string& context, std::string message) {
  CrashFailure f;
  f.point = point;
  f.image = image;
  f.context = context;
  f.message = std::move(message);
  f.undecided = undecided_.size();
  report_.failures.push_back(f);
  if (on_failure_) on_failure_(report_.failures.back());
}

void CrashTracker::check_point(uint64_t point) {
  const auto start = std::chrono::steady_clock::now();
  size_t extent = extent_ ? std::min(extent_(), size_) : size_;
  extent = std::min(size_, (extent + kPage - 1) / kPage * kPage);
  find_undecided(extent);
  report_.bytes_compared += extent;
  report_.scan_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // Skip the point if nothing was written since the previous checked one.
  uint64_t digest = Mix64(durable_version_ ^ 0x6469676573740000ull);
  for (size_t i = 0; i < undecided_.size(); ++i) {
    digest = Mix64(digest ^ undecided_[i]);
    const uint64_t* w = reinterpret_cast<const uint64_t*>(undecided_new_[i].data());
    for (size_t k = 0; k < kWordsPerLine; ++k) digest = Mix64(digest ^ w[k]);
  }
  if (have_digest_ && digest == last_digest_ && options_.only_point == 0) {
    ++report_.points_skipped;
    return;
  }
  have_digest_ = true;
  last_digest_ = digest;
  report_.max_undecided = std::max<uint64_t>(report_.max_undecided, undecided_.size());

  std::vector<Image> images = build_images(point);
  if (!images.empty()) {
    const std::string context = context_ ? context_() : std::string();
    Status s = sync_file(extent);
    if (!s.ok()) {
      record_failure(point, "-", context, s.ToString());
    } else {
      run_images(point, images, context);
    }
    ++report_.points_checked;
  }
  report_.check_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Applies `image` to the image file (restore: puts the durable lines back).
void CrashTracker::patch_image(const Image& image, bool restore) {
  char buf[kCacheLine];
  for (size_t i = 0; i < undecided_.size(); ++i) {
    const uint8_t m = image.word_masks[i];
    if (m == 0) continue;
    const uint64_t line = undecided_[i];
    const char* old_line = durable_ + line * kCacheLine;
    if (restore) {
      std::memcpy(buf, old_line, kCacheLine);
    } else {
      for (size_t w = 0; w < kWordsPerLine; ++w)
        std::memcpy(buf + w * 8, ((m >> w) & 1) ? undecided_new_[i].data() + w * 8 : old_line + w * 8,
                    8);
    }
    WriteAll(image_fd_, buf, kCacheLine, static_cast<off_t>(line * kCacheLine));
  }
}

void CrashTracker::run_images(uint64_t point, const std::vector<Image>& images,
                              const std::string& context) {
  if (!options_.fork) {
    run_images_in_process(point, images, context);
    return;
  }
  size_t next = 0;
  while (next < images.size()) {
    if (!run_images_in_child(point, images, context, &next)) return;
    if (done()) return;
  }
}

void CrashTracker::run_images_in_process(uint64_t point, const std::vector<Image>& images,
                                         const std::string& context) {
  for (const Image& image : images) {
    patch_image(image, false);
    Status s = verifier_(image_path_, point, image.name);  // its pools have their own seams
    patch_image(image, true);
    ++report_.images;
    if (!s.ok()) {
      record_failure(point, image.name, context, s.ToString());
      if (done()) return;
    }
  }
}

// Verifies images[*next...] in one forked child, a copy of the process at the crash point. A
// child that dies or hangs is charged to the image it was on, and *next is the image after
// it. False: stop this point.
bool CrashTracker::run_images_in_child(uint64_t point, const std::vector<Image>& images,
                                       const std::string& context, size_t* next) {
  const size_t first = *next;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    record_failure(point, images[first].name, context,
                   std::string("pipe failed: ") + strerror(errno));
    return false;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    record_failure(point, images[first].name, context,
                   std::string("fork failed: ") + strerror(errno));
    return false;
  }
  if (pid == 0) verify_in_child(fds[0], fds[1], point, images, first);
  ::close(fds[1]);
  int64_t in_progress = -1;
  const bool timed_out = read_verdicts(fds[0], point, images, context, next, &in_progress);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ::close(fds[0]);
  if (in_progress >= 0) {
    // The verifier died or hung on this image; the file may still hold its patch.
    restore_undecided_in_file();
    ++report_.images;
    record_failure(point, images[in_progress].name, context,
                   timed_out ? "verifier timed out after " +
                                   std::to_string(options_.timeout_seconds) + " s (hang)"
                             : DescribeWaitStatus(status));
    *next = static_cast<size_t>(in_progress) + 1;
  } else if (*next == first || !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    // Died between images (e.g. a leak report at exit) or before the first: charge it to
    // the image checked last (or next) and stop this point.
    restore_undecided_in_file();
    record_failure(point, images[*next == first ? first : *next - 1].name, context,
                   timed_out ? "verifier timed out" : DescribeWaitStatus(status));
    return false;
  }
  return true;
}

// The child: it must not feed this tracker. Sends a start and a verdict per image.
void CrashTracker::verify_in_child(int read_fd, int write_fd, uint64_t point,
                                   const std::vector<Image>& images, size_t first) {
  ::close(read_fd);
  detached_ = true;
  for (size_t k = first; k < images.size(); ++k) {
    SendMessage(write_fd, static_cast<uint32_t>(k), kStart, {});
    patch_image(images[k], false);
    Status s = verifier_(image_path_, point, images[k].name);
    patch_image(images[k], true);
    SendMessage(write_fd, static_cast<uint32_t>(k), s.ok() ? kPass : kFail,
                s.ok() ? std::string() : s.ToString());
  }
  _exit(0);
}

// Reads the child's messages until it closes the pipe, or until it is silent for the
// timeout (then true). Each verdict is counted and *next moved past its image;
// *in_progress is the image started and not finished (-1: none).
bool CrashTracker::read_verdicts(int fd, uint64_t point, const std::vector<Image>& images,
                                 const std::string& context, size_t* next,
                                 int64_t* in_progress) {
  for (;;) {
    const auto deadline =
        std::chrono::steady_clock::now() +
        std::chrono::milliseconds(static_cast<int64_t>(options_.timeout_seconds * 1000));
    MessageHeader h;
    int r = ReadExact(fd, &h, sizeof(h), deadline);
    if (r < 0) return true;
    if (r == 0) return false;
    std::string text(h.length, '\0');
    if (h.length > 0 && ReadExact(fd, text.data(), h.length, deadline) != 1) return false;
    if (h.kind == kStart) {
      *in_progress = h.image;
      continue;
    }
    ++report_.images;
    *in_progress = -1;
    *next = h.image + 1;
    if (h.kind == kFail) record_failure(point, images[h.image].name, context, std::move(text));
  }
}

}  // namespace pmindex::pm::crash
