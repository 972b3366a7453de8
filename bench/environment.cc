#include <cstdlib>
#include "bench/environment.h"

#include <sys/statfs.h>
#include <sys/utsname.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "pm/persist.h"

#ifndef PMINDEX_BUILD_TYPE
#define PMINDEX_BUILD_TYPE "unknown"
#endif
#ifndef PMINDEX_VERSION
#define PMINDEX_VERSION "unknown"
#endif

namespace pmindex::bench {

namespace {

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("model name")) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}

// The /proc/mounts entry with the longest mount point that is a prefix of `dir`.
void MountOf(const std::string& dir, std::string* fstype, std::string* options) {
  std::error_code ec;
  std::string path = std::filesystem::weakly_canonical(dir, ec).string();
  if (ec) path = dir;
  std::ifstream in("/proc/mounts");
  std::string line;
  size_t best = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string dev, mnt, type, opts;
    fields >> dev >> mnt >> type >> opts;
    const bool prefix = path == mnt || (path.starts_with(mnt) &&
                                        (mnt == "/" || path[mnt.size()] == '/'));
    if (prefix && mnt.size() >= best) {
      best = mnt.size();
      *fstype = type;
      *options = opts;
    }
  }
}

}  // namespace

std::string PoolMedium(const std::string& dir) {
  std::string fstype = "unknown", options;
  MountOf(dir, &fstype, &options);
  struct statfs sfs;
  if (statfs(dir.c_str(), &sfs) == 0 && sfs.f_type == 0x01021994 /* TMPFS_MAGIC */) {
    return "tmpfs";
  }
  if (options.find("dax") != std::string::npos) return "DAX (" + fstype + ")";
  return "disk (" + fstype + ")";
}

std::string DefaultPoolDir() {
  std::error_code ec;
  // scripts/run.sh points this at a tmpfs mounted with huge=always where it can.
  if (const char* env = std::getenv("PMINDEX_POOL_DIR"); env != nullptr && *env != '\0' &&
      std::filesystem::is_directory(env, ec)) {
    return env;
  }
  if (std::filesystem::is_directory("/dev/shm", ec)) return "/dev/shm";
  return std::filesystem::temp_directory_path(ec).string();
}

Environment DetectEnvironment(const std::string& pool_dir, PersistMode mode, uint64_t seed) {
  Environment env;
  env.cpu = CpuModel();
  env.cores = static_cast<int>(std::thread::hardware_concurrency());
  struct utsname u;
  if (uname(&u) == 0) env.kernel = std::string(u.sysname) + " " + u.release;
  env.mode = PersistModeName(mode);
  env.pool_dir = pool_dir;
  env.pool_medium = PoolMedium(pool_dir);
  env.build = PMINDEX_BUILD_TYPE;
#if defined(PMINDEX_TSAN)
  env.build += "+tsan";
#elif defined(PMINDEX_SANITIZED)
  env.build += "+asan";
#endif
  env.version = PMINDEX_VERSION;
  env.flush_instruction = pm::flush_instruction_name();
  const std::string thp_file = env.pool_medium == "tmpfs"
                                   ? "/sys/kernel/mm/transparent_hugepage/shmem_enabled"
                                   : "/sys/kernel/mm/transparent_hugepage/enabled";
  // The file shows every choice with the active one in brackets: "always [madvise] never".
  const std::string thp = ReadFirstLine(thp_file);
  const size_t open = thp.find('['), close = thp.find(']');
  env.transparent_huge_pages =
      open != std::string::npos && close > open ? thp.substr(open + 1, close - open - 1) : thp;
  if (env.transparent_huge_pages.empty()) env.transparent_huge_pages = "unknown";
  env.seed = seed;
  const std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  env.date = buf;
  return env;
}

}  // namespace pmindex::bench
