// `pmindex lab` driver: the arena, the two persist contexts, the node-level measurement loop,
// Table 4 and the output formats (lab.h).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdarg>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench/environment.h"
#include "bench/lab/lab_internal.h"

namespace pmindex::lab {

using primitives::Layout;
using primitives::Node;
using primitives::Persist;

std::unique_ptr<Arena> Arena::Create(const std::string& dir, size_t bytes) {
  auto a = std::make_unique<Arena>();
  a->path_ = dir + "/pmindex-lab-" + std::to_string(::getpid()) + ".arena";
  const int fd = ::open(a->path_.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    if (fd >= 0) ::close(fd);
    std::fprintf(stderr, "pmindex lab: cannot make %s: %s\n", a->path_.c_str(), std::strerror(errno));
    a->path_.clear();
    return nullptr;
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "pmindex lab: cannot map %s\n", a->path_.c_str());
    return nullptr;
  }
  a->base_ = static_cast<char*>(p);
  a->size_ = bytes;
  return a;
}

Arena::~Arena() {
  if (base_ != nullptr) ::munmap(base_, size_);
  if (!path_.empty()) ::unlink(path_.c_str());
}

double NowNs() {
  return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count());
}

size_t PositionIndex(const char* pos, size_t capacity) {
  if (std::strcmp(pos, "first") == 0) return 0;
  if (std::strcmp(pos, "middle") == 0) return capacity / 2;
  return capacity - 1;
}

void Lab::Progress(const char* fmt, ...) {
  if (!opt.progress) return;
  std::fprintf(stderr, "[lab] ");
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "\n");
}

namespace {

// The counted pass: a few operations through the media-model context, drained after each.
void CountPass(Lab& lab, const Layout& l, const NodeOp& op, const char* tmpl, Row* row) {
  const size_t pair = 2 * l.node_bytes;
  const size_t n = std::min<size_t>(16, lab.arena->size() / pair);
  uint64_t bytes = 0;
  PersistCounters sum;
  for (size_t i = 0; i < n; ++i) {
    char* p = lab.arena->base() + i * pair;
    std::memcpy(p, tmpl, pair);
    Node a(&l, p, &lab.counted, Persist::kIndividual);
    Node b(&l, p + l.node_bytes, &lab.counted, Persist::kIndividual);
    const PersistCounters before = lab.counted.thread_counters();
    op.op(a, b);
    lab.counted.drain_media();
    sum += lab.counted.thread_counters() - before;
    bytes += a.cost().bytes_modified + b.cost().bytes_modified;
  }
  row->bytes = static_cast<double>(bytes) / n;
  row->flushes = static_cast<double>(sum.flushes) / n;
  row->fences = static_cast<double>(sum.fences) / n;
  row->media = static_cast<double>(sum.media_writes) / n;
}

double TimedCached(Lab& lab, const Layout& l, const NodeOp& op, const char* tmpl) {
  const size_t pair = 2 * l.node_bytes;
  char* p = lab.arena->base();
  std::memcpy(p, tmpl, pair);
  Node a(&l, p, &lab.timed, Persist::kIndividual);
  Node b(&l, p + l.node_bytes, &lab.timed, Persist::kIndividual);
  const double overhead = ClockOverhead();
  std::vector<double> samples;
  if (!op.mutates) {  // chunks of 32 operations on the hot node
    for (int w = 0; w < 16; ++w) op.op(a, b);
    for (uint64_t i = 0; i < std::max<uint64_t>(1, lab.iters / 32); ++i) {
      const double t0 = NowNs();
      for (int j = 0; j < 32; ++j) op.op(a, b);
      samples.push_back((NowNs() - t0 - overhead) / 32);
    }
    return Median(samples);
  }
  for (uint64_t i = 0; i < lab.iters; ++i) {
    std::memcpy(p, tmpl, pair);
    const double t0 = NowNs();
    op.op(a, b);
    samples.push_back(NowNs() - t0 - overhead);
  }
  return Median(samples);
}

double TimedUncached(Lab& lab, const Layout& l, const NodeOp& op, const char* tmpl) {
  const size_t pair = 2 * l.node_bytes;
  const size_t slots = lab.arena->size() / pair;
  const size_t n = std::min<size_t>(lab.iters, slots);
  std::vector<size_t> which(slots);
  for (size_t i = 0; i < slots; ++i) which[i] = i;
  std::shuffle(which.begin(), which.end(), lab.rng);
  which.resize(n);
  for (size_t s : which) {
    std::memcpy(lab.arena->base() + s * pair, tmpl, pair);
    pm::EvictLines(lab.arena->base() + s * pair, pair);
  }
  const double overhead = ClockOverhead();
  std::vector<double> samples;
  samples.reserve(n);
  for (size_t s : which) {
    char* p = lab.arena->base() + s * pair;
    Node a(&l, p, &lab.timed, Persist::kIndividual);
    Node b(&l, p + l.node_bytes, &lab.timed, Persist::kIndividual);
    const double t0 = NowNs();
    op.op(a, b);
    samples.push_back(NowNs() - t0 - overhead);
  }
  return Median(samples);
}

}  // namespace

// What one pair of clock reads costs, to subtract from per-operation samples.
double ClockOverhead() {
  std::vector<double> s(256);
  for (double& x : s) {
    const double t0 = NowNs();
    x = NowNs() - t0;
  }
  return Median(s);
}

// The median of `samples` (robust to the preemptions of a shared 2-core machine).
double Median(std::vector<double>& samples) {
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  return samples[samples.size() / 2];
}

Row MeasureNodeOp(Lab& lab, const Layout& l, const NodeOp& op) {
  std::vector<char> buf(2 * l.node_bytes + 64);
  char* tmpl = buf.data() + (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64;
  {
    Node a(&l, tmpl, &lab.timed, Persist::kNone);
    Node b(&l, tmpl + l.node_bytes, &lab.timed, Persist::kNone);
    a.Format();
    b.Format();
    if (op.prep) op.prep(a, b);
  }
  Row row;
  row.org = std::string(primitives::OrgName(l.org));
  row.node_bytes = l.node_bytes;
  row.param = op.cached ? "cached" : "uncached";
  // The median of per-operation samples: the machine is shared, and a preempted operation
  // would move a mean by microseconds.
  row.ns = op.cached ? TimedCached(lab, l, op, tmpl) : TimedUncached(lab, l, op, tmpl);
  row.ops = lab.iters;
  CountPass(lab, l, op, tmpl, &row);
  return row;
}

void PrintTable4(std::FILE* out) {
  using primitives::Capacity;
  using primitives::Org;
  auto gib = [](size_t kv, size_t bytes) {
    return static_cast<double>((50'000'000 + kv - 1) / kv) * bytes / (1ull << 30);
  };
  std::fprintf(out, "Table 4: pairs per node (kv/n) and GiB for a chain holding 50M pairs\n");
  std::fprintf(out, "%-34s", "node size");
  for (size_t s : kNodeSizes) std::fprintf(out, "%13zu B", s);
  std::fprintf(out, "\n");
  auto line = [&](const char* name, auto capacity) {
    std::fprintf(out, "%-34s", name);
    for (size_t i = 0; i < 5; ++i) {
      const size_t c = capacity(i);
      std::fprintf(out, "%6zu %5.2f GiB", c, gib(c, kNodeSizes[i]));
    }
    std::fprintf(out, "\n");
  };
  line("base (paper 9/19/41/83/169)", [](size_t i) { return primitives::BaseCapacity(kNodeSizes[i]); });
  line("aligned = sorted, unsorted, bitmap", [](size_t i) { return Capacity(Org::kSorted, kNodeSizes[i]); });
  line("  (paper 8/18/40/82/168)", [](size_t i) { return Capacity(Org::kSorted, kNodeSizes[i]); });
  line("search structure, paper", [](size_t i) { return primitives::kPaperSearchStructure[i]; });
  line("search structure: hashing", [](size_t i) { return Capacity(Org::kHashing, kNodeSizes[i]); });
  line("search structure: indirection", [](size_t i) { return Capacity(Org::kIndirection, kNodeSizes[i]); });
}

void PrintRows(std::FILE* out, const std::vector<Row>& rows) {
  std::string last;
  for (const Row& r : rows) {
    if (r.exp != last) {
      std::fprintf(out, "\n%-4s %-16s %-12s %6s %-7s %-12s %10s %8s %7s %6s %7s\n", "exp", "org",
                   "variant", "node", "pos", "param", "ns/op", "bytes", "flushes", "fences",
                   "media");
      last = r.exp;
    }
    std::fprintf(out, "%-4s %-16s %-12s %6llu %-7s %-12s %10.1f %8.1f %7.2f %6.2f %7.2f\n",
                 r.exp.c_str(), r.org.c_str(), r.variant.c_str(),
                 static_cast<unsigned long long>(r.node_bytes), r.position.c_str(),
                 r.param.c_str(), r.ns, r.bytes, r.flushes, r.fences, r.media);
  }
}

bool WriteJson(const std::string& path, const std::vector<Row>& rows) {
  nlohmann::json j = nlohmann::json::array();
  for (const Row& r : rows) {
    j.push_back({{"exp", r.exp}, {"org", r.org}, {"variant", r.variant},
                 {"node_bytes", r.node_bytes}, {"position", r.position}, {"param", r.param},
                 {"ns_per_op", r.ns}, {"bytes_modified", r.bytes}, {"flushes", r.flushes},
                 {"fences", r.fences}, {"media_writes", r.media}, {"ops", r.ops}});
  }
  std::ofstream f(path);
  f << nlohmann::json{{"lab", j}}.dump(1) << "\n";
  return static_cast<bool>(f);
}

bool WriteCsv(const std::string& path, const std::vector<Row>& rows) {
  std::ofstream f(path);
  f << "exp,org,variant,node_bytes,position,param,ns_per_op,bytes_modified,flushes,fences,"
       "media_writes,ops\n";
  for (const Row& r : rows) {
    f << r.exp << ',' << r.org << ',' << r.variant << ',' << r.node_bytes << ',' << r.position
      << ',' << r.param << ',' << r.ns << ',' << r.bytes << ',' << r.flushes << ',' << r.fences
      << ',' << r.media << ',' << r.ops << '\n';
  }
  return static_cast<bool>(f);
}

bool RunLab(const LabOptions& options, std::vector<Row>* rows) {
  pm::PersistSettings counted;
  counted.model_media = true;
  Lab lab(options, counted);
  lab.rows = rows;
  lab.iters = options.iters != 0 ? options.iters : (options.quick ? 128 : 4096);
  const uint64_t mib = options.arena_mib != 0 ? options.arena_mib : (options.quick ? 4 : 32);
  const std::string dir = options.pool_dir.empty() ? bench::DefaultPoolDir() : options.pool_dir;
  lab.arena = Arena::Create(dir, mib << 20);
  if (!lab.arena) return false;
  lab.opt.pool_dir = dir;
  auto want = [&](const char* e) {
    if (options.experiments.empty()) return true;
    for (const auto& x : options.experiments)
      if (x == e) return true;
    return false;
  };
  bool ok = true;
  if (want("e1")) RunE1(lab);
  if (want("e4")) RunE4(lab);
  if (want("e8")) RunE8(lab);
  if (want("e6")) ok = RunE6(lab) && ok;
  if (want("e7")) ok = RunE7(lab) && ok;
  if (want("e2")) RunE2(lab);
  if (want("e3")) RunE3(lab);
  if (want("e5")) RunE5(lab);
  if (want("e9")) RunE9(lab);
  if (want("e10")) RunE10(lab);
  return ok;
}

}  // namespace pmindex::lab
