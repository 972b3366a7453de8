// The smallest complete pmindex program: create (or open) an "rntree" in a pool file, insert,
// look up and scan, close, reopen and find the data again. Exits non-zero on any failure.
//
// Usage: pmindex_example [index-name]   (default "rntree"; any name `pmindex list` shows)
#include <pmindex/index.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "pmindex_example: %s\n", what.c_str());
  return 1;
}

constexpr uint64_t kKeys = 1000;

}  // namespace

int main(int argc, char** argv) {
  const std::string name = argc > 1 ? argv[1] : "rntree";

  std::string tmpl = (std::filesystem::temp_directory_path() / "pmindex-example-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return Fail("mkdtemp failed");
  const std::filesystem::path dir = tmpl;
  const std::string path = (dir / (name + ".pool")).string();
  struct RemoveDir {
    std::filesystem::path dir;
    ~RemoveDir() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{dir};

  pmindex::Options options;
  options.pool_size = 64ull << 20;  // 64 MiB

  {
    pmindex::Result<std::unique_ptr<pmindex::Index>> index =
        pmindex::OpenOrCreateIndex(name, path, options);
    if (!index.ok()) return Fail("open " + path + ": " + index.status().ToString());
    pmindex::Index& ix = **index;

    for (uint64_t k = 0; k < kKeys; ++k) {
      pmindex::Status s = ix.insert(pmindex::IntKey(k), pmindex::IntValue(k * 10));
      if (!s.ok()) return Fail("insert " + std::to_string(k) + ": " + s.ToString());
    }
    std::string value;
    if (!ix.lookup(pmindex::IntKey(42), &value).ok() || pmindex::IntValue::Decode(value) != 420) {
      return Fail("lookup 42 did not find 420");
    }
    if (ix.traits().ordered) {
      uint64_t expect = 100;
      bool in_order = true;
      const size_t n = ix.scan(pmindex::IntKey(100), 10, [&](std::string_view k, std::string_view) {
        in_order = in_order && pmindex::IntKey::Decode(k) == expect++;
        return true;
      });
      if (n != 10 || !in_order) return Fail("scan from 100 did not return 100..109");
    }
    if (pmindex::Status s = ix.close(); !s.ok()) return Fail("close: " + s.ToString());
  }

  // Reopen: everything acknowledged before close is there, and the structure is sound.
  pmindex::Result<std::unique_ptr<pmindex::Index>> index =
      pmindex::OpenOrCreateIndex(name, path, options);
  if (!index.ok()) return Fail("reopen " + path + ": " + index.status().ToString());
  pmindex::Index& ix = **index;
  for (uint64_t k = 0; k < kKeys; ++k) {
    std::string value;
    if (!ix.lookup(pmindex::IntKey(k), &value).ok() || pmindex::IntValue::Decode(value) != k * 10) {
      return Fail("after reopen, key " + std::to_string(k) + " is missing or wrong");
    }
  }
  if (pmindex::Status s = ix.verify(); !s.ok()) return Fail("verify: " + s.ToString());
  if (pmindex::Status s = ix.close(); !s.ok()) return Fail("close: " + s.ToString());
  std::printf("pmindex_example: %s ok (%llu keys survived close and reopen)\n", name.c_str(),
              static_cast<unsigned long long>(kKeys));
  return 0;
}
