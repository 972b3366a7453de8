#include "common/test_util.h"

#include "pmindex/index.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace pmindex::testing {

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  std::string root = "/tmp";
  if (std::filesystem::is_directory("/dev/shm")) {
    root = "/dev/shm";
  } else if (const char* t = std::getenv("TMPDIR")) {
    root = t;
  }
  path_ = root + "/pmindex-test-" + std::to_string(getpid()) + "-" +
          std::to_string(counter.fetch_add(1));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

uint64_t TestSeed(uint64_t fallback) {
  if (const char* s = std::getenv("PMINDEX_SEED")) return std::strtoull(s, nullptr, 0);
  return fallback;
}

std::string SeedTrace(uint64_t seed) {
  return "seed=" + std::to_string(seed) + " (replay with PMINDEX_SEED=" + std::to_string(seed) +
         ")";
}

bool Sanitized() {
#ifdef PMINDEX_SANITIZED
  return true;
#else
  return false;
#endif
}

double CampaignTimeout() { return Sanitized() ? 120 : 30; }

uint64_t Scale(uint64_t n) {
  uint64_t s = Sanitized() ? n / 4 : n;
  return s == 0 ? 1 : s;
}

std::string IndexParamName(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& c : n) {
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
}

std::vector<std::string> WorkingIndexNames() {
  std::vector<std::string> out;
  for (const std::string& name : RegisteredIndexNames()) {
    const IndexRegistration* reg = FindIndex(name);
    if (reg->attach == nullptr && reg->make == nullptr) continue;
    if (name == "testlist-broken") continue;
    out.push_back(name);
  }
  return out;
}

}  // namespace pmindex::testing
