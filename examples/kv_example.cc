// pmindex as a key-value store: a 1 MiB value, an iterator and an atomic write batch on an
// rntree and a pftree pool; closes, reopens and finds everything again. Exits non-zero on any
// failure. An index this build does not include (a B+tree-only build has no pftree) is
// skipped with a message.
//
// Usage: pmindex_kv_example [index-name ...]   (default: rntree pftree)
#include <pmindex/index.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "pmindex_kv_example: %s\n", what.c_str());
  return 1;
}

constexpr uint64_t kKeys = 100;
constexpr size_t kLargeValue = 1 << 20;  // 1 MiB

// The large value's bytes: a pattern a reader can check byte by byte.
std::string LargeValue() {
  std::string v(kLargeValue, '\0');
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<char>('a' + i % 26);
  return v;
}

// Writes: 100 small pairs, one 1 MiB value under key 1000, then a batch that deletes keys
// 0..9 and puts 2000..2009 as one crash-atomic unit. "" on success, else what failed.
std::string Fill(pmindex::Index& ix) {
  for (uint64_t k = 0; k < kKeys; ++k) {
    pmindex::Status s = ix.upsert(pmindex::IntKey(k), pmindex::IntValue(k * 10));
    if (!s.ok()) return "upsert " + std::to_string(k) + ": " + s.ToString();
  }
  if (pmindex::Status s = ix.upsert(pmindex::IntKey(1000), LargeValue()); !s.ok()) {
    return "upsert of the 1 MiB value: " + s.ToString();
  }
  pmindex::WriteBatch batch;
  for (uint64_t k = 0; k < 10; ++k) batch.Delete(pmindex::IntKey(k));
  for (uint64_t k = 2000; k < 2010; ++k) batch.Put(pmindex::IntKey(k), pmindex::IntValue(k));
  if (pmindex::Status s = ix.Write(batch); !s.ok()) return "batch: " + s.ToString();
  return "";
}

// What Fill left: keys 10..99, 1000 (1 MiB) and 2000..2009, checked with an iterator forward
// and backward and with a lookup of the large value. "" on success, else what differs.
std::string Check(pmindex::Index& ix) {
  std::vector<uint64_t> expect;
  for (uint64_t k = 10; k < kKeys; ++k) expect.push_back(k);
  expect.push_back(1000);
  for (uint64_t k = 2000; k < 2010; ++k) expect.push_back(k);

  std::unique_ptr<pmindex::Iterator> it = ix.NewIterator(pmindex::IteratorOptions());
  size_t i = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++i) {
    const uint64_t k = pmindex::IntKey::Decode(it->key());
    if (i >= expect.size() || k != expect[i]) return "forward walk: key " + std::to_string(k);
  }
  if (!it->status().ok()) return "forward walk: " + it->status().ToString();
  if (i != expect.size()) return "forward walk saw " + std::to_string(i) + " pairs";
  for (it->SeekToLast(); it->Valid(); it->Prev()) {
    if (i == 0 || pmindex::IntKey::Decode(it->key()) != expect[--i]) return "backward walk";
  }
  if (!it->status().ok() || i != 0) return "backward walk ended early";

  std::string value;
  pmindex::Status s = ix.lookup(pmindex::IntKey(1000), &value);
  if (!s.ok()) return "lookup of the 1 MiB value: " + s.ToString();
  if (value != LargeValue()) return "the 1 MiB value came back different";
  return "";
}

int Run(const std::string& name, const std::filesystem::path& dir) {
  const std::string path = (dir / (name + ".pool")).string();
  pmindex::Options options;
  options.pool_size = 64ull << 20;          // 64 MiB
  options.max_value_size = 4ull << 20;      // values up to 4 MiB (out of line when large)
  {
    auto index = pmindex::OpenOrCreateIndex(name, path, options);
    if (!index.ok()) return Fail("create " + path + ": " + index.status().ToString());
    if (std::string e = Fill(**index); !e.empty()) return Fail(name + ": " + e);
    if (std::string e = Check(**index); !e.empty()) return Fail(name + ": " + e);
    if (pmindex::Status s = (*index)->close(); !s.ok()) return Fail("close: " + s.ToString());
  }
  auto reopened = pmindex::OpenIndex(path, pmindex::Options());
  if (!reopened.ok()) return Fail("reopen " + path + ": " + reopened.status().ToString());
  if (std::string e = Check(**reopened); !e.empty()) return Fail(name + " after reopen: " + e);
  if (pmindex::Status s = (*reopened)->verify(); !s.ok()) return Fail("verify: " + s.ToString());
  std::printf("%s: 1 MiB value, iterator and batch found again after reopening\n",
              name.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> names;
  for (int i = 1; i < argc; ++i) names.emplace_back(argv[i]);
  if (names.empty()) names = {"rntree", "pftree"};

  std::string tmpl =
      (std::filesystem::temp_directory_path() / "pmindex-kv-example-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return Fail("mkdtemp failed");
  struct RemoveDir {
    std::filesystem::path dir;
    ~RemoveDir() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{tmpl};

  const std::vector<std::string> built = pmindex::RegisteredIndexNames();
  for (const std::string& name : names) {
    bool found = false;
    for (const std::string& b : built) found = found || b == name;
    if (!found) {
      std::printf("%s: not in this build, skipped\n", name.c_str());
      continue;
    }
    if (int rc = Run(name, cleanup.dir); rc != 0) return rc;
  }
  return 0;
}
