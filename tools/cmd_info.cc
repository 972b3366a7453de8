// `pmindex info POOL`: a pool's header, read without mapping or writing the file.
#include <cstdio>
#include <ctime>
#include <filesystem>

#include "bench/environment.h"
#include "pmindex/index.h"
#include "tools/command.h"

namespace pmindex::tools {

namespace {

std::string Bytes(uint64_t n) {
  char buf[64];
  const double d = static_cast<double>(n);
  if (n >= (1ull << 30)) {
    std::snprintf(buf, sizeof(buf), "%llu bytes (%.2f GiB)", static_cast<unsigned long long>(n),
                  d / (1ull << 30));
  } else if (n >= (1ull << 20)) {
    std::snprintf(buf, sizeof(buf), "%llu bytes (%.1f MiB)", static_cast<unsigned long long>(n),
                  d / (1ull << 20));
  } else {
    std::snprintf(buf, sizeof(buf), "%llu bytes", static_cast<unsigned long long>(n));
  }
  return buf;
}

int RunInfo(const std::string& path) {
  Result<PoolInfo> read = Pool::ReadInfo(path);
  if (!read.ok()) {
    std::fprintf(stderr, "pmindex info: %s\n", read.status().ToString().c_str());
    return kExitError;
  }
  const PoolInfo& info = read.value();
  const IndexRegistration* reg = FindIndex(info.kind);
  const unsigned kind = static_cast<unsigned>(info.kind);
  std::printf("pool:            %s\n", info.path.c_str());
  if (reg != nullptr) {
    std::printf("kind:            %s (%u)\n", reg->traits.name.c_str(), kind);
  } else {
    std::printf("kind:            %u (no index of this kind in this build)\n", kind);
  }
  std::printf("format version:  %u\n", info.format_version);
  std::printf("size:            %s", Bytes(info.pool_size).c_str());
  if (info.file_size != info.pool_size) {
    std::printf("; file %s", Bytes(info.file_size).c_str());
  }
  std::printf("\n");
  std::printf("used:            %s (%llu of %llu chunks of %llu KiB carved)\n",
              Bytes(info.used_bytes).c_str(), static_cast<unsigned long long>(info.chunks_carved),
              static_cast<unsigned long long>(info.chunks_total),
              static_cast<unsigned long long>(info.chunk_size / 1024));
  std::printf("generation:      %llu\n", static_cast<unsigned long long>(info.generation));
  std::printf("state:           %s\n",
              info.clean ? "clean (closed cleanly)"
                         : "dirty (not closed cleanly: recovery runs at the next open)");
  std::printf("in use:          %s\n",
              info.in_use ? "yes (another process holds it open; figures may be changing)"
                          : "no");
  std::printf("root offset:     %llu\n", static_cast<unsigned long long>(info.root));
  if (info.created_unix != 0) {
    const std::time_t t = static_cast<std::time_t>(info.created_unix);
    char buf[32];
    std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&t));
    std::printf("created:         %s by %s\n", buf, info.creator_version.c_str());
  }
  // Whether a mapping gets 2 MiB pages depends on the file system and the kernel's setting;
  // `pmindex bench` reports what its mappings actually got.
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const std::string medium = bench::PoolMedium(dir.empty() ? "." : dir);
  std::printf("medium:          %s\n", medium.c_str());
  if (info.has_unsafe_shutdown_count) {
    std::printf("unsafe shutdowns: %llu (device count)\n",
                static_cast<unsigned long long>(info.unsafe_shutdown_count));
  }
  if (info.has_bad_blocks) {
    std::printf("bad blocks:      %llu%s\n", static_cast<unsigned long long>(info.bad_blocks),
                info.bad_blocks != 0 ? " (data in them is lost: restore from a copy)" : "");
  }
  if (!info.has_unsafe_shutdown_count || !info.has_bad_blocks) {
    std::printf("device health:   not available (%s)\n", info.health_error.c_str());
  }
  return kExitOk;
}

}  // namespace

void AddInfoCommand(CLI::App& app, CommandSet& commands) {
  CLI::App* sub = app.add_subcommand("info", "Print a pool's header (works on a pool in use)");
  auto path = std::make_shared<std::string>();
  sub->add_option("POOL", *path, "Pool file")->required();
  sub->callback([&commands, path] { commands.selected = [path] { return RunInfo(*path); }; });
}

}  // namespace pmindex::tools
