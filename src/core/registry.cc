// The index registry: names -> factories, and the open sequence every pool-backed index
// shares (map, bump generation, attach, recover, rebuild the allocator).
#include <sys/stat.h>

#include <cassert>
#include <deque>
#include <mutex>

#include "core/builtin_indexes.h"
#include "pm/alloc.h"
#include "pmindex/index.h"

namespace pmindex {
namespace {

struct Registry {
  std::mutex mu;
  std::deque<IndexRegistration> entries;  // deque: pointers stay valid
};

// Adds `registration` unless its name is taken (the first one wins). Caller holds r.mu.
bool AddLocked(Registry& r, IndexRegistration registration) {
  for (const IndexRegistration& e : r.entries) {
    if (e.traits.name == registration.traits.name) return false;
  }
  r.entries.push_back(std::move(registration));
  return true;
}

// The registry, with the built-in indexes registered on first use (also when the first use
// is a test's RegisterIndex from a static initializer, so built-ins always come first).
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: indexes may outlive static teardown
  static std::once_flag builtins_registered;
  std::call_once(builtins_registered, [] {
    std::lock_guard<std::mutex> lock(r->mu);
    for (IndexRegistration& e : BuiltinIndexes()) {
      [[maybe_unused]] const bool added = AddLocked(*r, std::move(e));
      assert(added && "two built-in indexes share a name");
    }
  });
  return *r;
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && st.st_size > 0;
}

}  // namespace

bool RegisterIndex(IndexRegistration registration) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return AddLocked(r, std::move(registration));
}

std::vector<std::string> RegisteredIndexNames() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (bool persistent : {true, false}) {
    for (const IndexRegistration& e : r.entries) {
      if (e.traits.persistent == persistent && e.attach != nullptr) names.push_back(e.traits.name);
    }
    for (const IndexRegistration& e : r.entries) {
      if (e.traits.persistent == persistent && e.attach == nullptr) names.push_back(e.traits.name);
    }
  }
  return names;
}

const IndexRegistration* FindIndex(std::string_view name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const IndexRegistration& e : r.entries) {
    if (e.traits.name == name) return &e;
  }
  return nullptr;
}

const IndexRegistration* FindIndex(IndexKind kind) {
  if (kind == IndexKind::kNone) return nullptr;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const IndexRegistration& e : r.entries) {
    if (e.traits.kind == kind && e.attach != nullptr) return &e;
  }
  return nullptr;
}

namespace {

// Recovery after attach: the index repairs itself, then the allocator learns which blocks
// are reachable. Both run on every open (a clean close leaves nothing to repair, but the
// allocator's free state lives only in DRAM).
Result<std::unique_ptr<Index>> Recover(std::unique_ptr<Index> index) {
  Pool* pool = index->pool();
  const std::string path = pool ? pool->path() : std::string();
  if (Status s = index->recover(); !s.ok()) return s.WithContext(path + ": recovery");
  if (pool != nullptr) {
    Status s = pool->allocator().rebuild(
        [&](BlockVisitor& visitor) { return index->visit_blocks(visitor); });
    if (!s.ok()) return s.WithContext(path + ": allocator rebuild");
  }
  return index;
}

}  // namespace

Result<std::unique_ptr<Index>> CreateIndex(std::string_view name, const std::string& path,
                                           const Options& options) {
  const IndexRegistration* reg = FindIndex(name);
  if (reg == nullptr) return Status::NotFound("no index named '" + std::string(name) + "'");
  if (reg->attach == nullptr) return reg->make(path, options);
  Result<std::unique_ptr<Pool>> pool = Pool::Create(path, reg->traits.kind, reg->params, options);
  if (!pool.ok()) return pool.status();
  return reg->attach(std::move(pool).value(), /*fresh=*/true);
}

Result<std::unique_ptr<Index>> OpenIndex(const std::string& path, const Options& options,
                                         std::string_view name) {
  IndexKind kind = IndexKind::kNone;
  if (!name.empty()) {
    const IndexRegistration* reg = FindIndex(name);
    if (reg == nullptr) return Status::NotFound("no index named '" + std::string(name) + "'");
    if (reg->attach == nullptr) {
      return Status::NotSupported("index '" + std::string(name) + "' does not live in a pool");
    }
    kind = reg->traits.kind;
  }
  Result<std::unique_ptr<Pool>> pool = Pool::Open(path, kind, options);
  if (!pool.ok()) return pool.status();
  const IndexRegistration* reg = FindIndex(pool.value()->kind());
  if (reg == nullptr) {
    return Status::NotSupported(path + ": pool holds index kind " +
                                std::to_string(static_cast<uint32_t>(pool.value()->kind())) +
                                " ('" + IndexKindName(pool.value()->kind()) +
                                "'), which this build does not include");
  }
  Result<std::unique_ptr<Index>> index = reg->attach(std::move(pool).value(), /*fresh=*/false);
  if (!index.ok()) return index.status();
  return Recover(std::move(index).value());
}

Result<std::unique_ptr<Index>> OpenOrCreateIndex(std::string_view name, const std::string& path,
                                                 const Options& options) {
  const IndexRegistration* reg = FindIndex(name);
  if (reg == nullptr) return Status::NotFound("no index named '" + std::string(name) + "'");
  if (reg->attach == nullptr || !FileExists(path)) return CreateIndex(name, path, options);
  return OpenIndex(path, options, name);
}

}  // namespace pmindex
