// The index registry: names -> factories, and the open sequence every pool-backed index
// shares (map, bump generation, attach, recover, rebuild the allocator).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>

#include "core/checked_index.h"
#include "core/builtin_indexes.h"
#include "core/value_store.h"
#include "core/write_batch_log.h"
#include "pm/alloc.h"
#include "pm/kind_label.h"
#include "pmindex/index.h"

namespace pmindex {
namespace {

struct Registry {
  std::mutex mu;
  std::deque<IndexRegistration> entries;  // deque: pointers stay valid
};

// The mutants of the layers above the indexes: out-of-line values and write batches. Built
// once; never destroyed (FindMutant hands out pointers into it).
const std::vector<MutantInfo>& LayerMutants() {
  static const std::vector<MutantInfo>* layers = [] {
    auto* all = new std::vector<MutantInfo>(ValueStoreMutants());
    all->insert(all->end(), WriteBatchMutants().begin(), WriteBatchMutants().end());
    return all;
  }();
  return *layers;
}

// Why `registration` cannot join the entries, or "" if it can: names and pool kinds are
// unique (the first one wins), a pool-backed index has a kind, mutants carry its name.
std::string Refusal(const std::deque<IndexRegistration>& entries,
                    const IndexRegistration& registration) {
  const IndexTraits& t = registration.traits;
  if (t.name.empty()) return "an index without a name";
  const bool pooled = registration.attach != nullptr;
  if (pooled && t.kind == IndexKind::kNone) return "'" + t.name + "' has no pool kind";
  for (const IndexRegistration& e : entries) {
    if (e.traits.name == t.name) return "the name '" + t.name + "' is taken";
    if (pooled && e.attach != nullptr && e.traits.kind == t.kind) {
      return "'" + t.name + "' has the pool kind of '" + e.traits.name + "'";
    }
  }
  for (const MutantInfo& m : registration.mutants) {
    if (m.name.rfind(t.name + ".", 0) != 0) {
      return "mutant '" + m.name + "' of '" + t.name + "' does not start with its name";
    }
  }
  return {};
}

// Adds `registration` unless Refusal finds a reason. Caller holds r.mu.
bool AddLocked(Registry& r, IndexRegistration registration) {
  if (!Refusal(r.entries, registration).empty()) return false;
  r.entries.push_back(std::move(registration));
  return true;
}

std::string NameOfKind(uint32_t kind) { return IndexKindName(static_cast<IndexKind>(kind)); }

// The registry, with the built-in indexes registered on first use (also when the first use
// is a test's RegisterIndex from a static initializer, so built-ins always come first).
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: indexes may outlive static teardown
  static std::once_flag builtins_registered;
  std::call_once(builtins_registered, [] {
    std::lock_guard<std::mutex> lock(r->mu);
    for (IndexRegistration& e : BuiltinIndexes()) {
      // A built-in that cannot join is a programming error the first test run shows.
      if (const std::string why = Refusal(r->entries, e); !why.empty()) {
        std::fprintf(stderr, "pmindex: built-in index refused: %s\n", why.c_str());
        std::abort();
      }
      AddLocked(*r, std::move(e));
    }
    pm::SetKindNamer(&NameOfKind);
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

Result<IndexTraits> TraitsWithParams(std::string_view name, const std::string& params,
                                     const std::string& dir) {
  const IndexRegistration* reg = FindIndex(name);
  if (reg == nullptr) return Status::InvalidArgument("unknown index '" + std::string(name) + "'");
  if (params.empty() || reg->attach == nullptr) return reg->traits;
  Options opts;
  opts.index_params = params;
  opts.pool_size = 16ull << 20;
  opts.huge_pages = false;
  opts.model_media = false;
  const std::string path = dir + "/pmindex-traits-" + std::string(name) + "-" +
                           std::to_string(::getpid()) + ".pool";
  ::unlink(path.c_str());
  IndexTraits traits;
  {
    Result<std::unique_ptr<Index>> made = CreateIndex(name, path, opts);
    if (!made.ok()) {
      ::unlink(path.c_str());
      return made.status();
    }
    traits = made.value()->traits();
  }  // closed before the file goes
  ::unlink(path.c_str());
  return traits;
}

std::string IndexKindName(IndexKind kind) {
  const IndexRegistration* reg = FindIndex(kind);
  return reg != nullptr ? reg->traits.name : std::string();
}

std::vector<MutantInfo> RegisteredMutants() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<MutantInfo> all;
  for (const IndexRegistration& e : r.entries) {
    all.insert(all.end(), e.mutants.begin(), e.mutants.end());
  }
  // The layers above the indexes (out-of-line values, write batches) have mutants of their own.
  const std::vector<MutantInfo>& layers = LayerMutants();
  all.insert(all.end(), layers.begin(), layers.end());
  return all;
}

const MutantInfo* FindMutant(std::string_view name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const IndexRegistration& e : r.entries) {
    for (const MutantInfo& m : e.mutants) {
      if (m.name == name) return &m;
    }
  }
  for (const MutantInfo& m : LayerMutants()) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

namespace {

// Recovery after attach: the index repairs itself, then the allocator learns which blocks
// are reachable, then a committed write batch is replayed. All run on every open (a clean
// close leaves nothing to repair, but the allocator's free state lives only in DRAM).
// The batch replay comes last because it allocates (recover() must not), and the rebuild
// keeps the committed record's block, which the index does not reach.
Result<std::unique_ptr<Index>> Recover(std::unique_ptr<Index> index) {
  Pool* pool = index->pool();
  const std::string path = pool ? pool->path() : std::string();
  if (Status s = index->recover(); !s.ok()) return s.WithContext(path + ": recovery");
  if (pool != nullptr) {
    Status s = pool->allocator().rebuild([&](BlockVisitor& visitor) {
      if (Status v = index->visit_blocks(visitor); !v.ok()) return v;
      return VisitPendingBatch(*pool, visitor);
    });
    if (!s.ok()) return s.WithContext(path + ": allocator rebuild");
    if (s = ReplayPendingBatch(*index); !s.ok()) return s.WithContext(path + ": batch replay");
  }
  return index;
}

}  // namespace

Result<std::unique_ptr<Index>> CreateIndex(std::string_view name, const std::string& path,
                                           const Options& options) {
  const IndexRegistration* reg = FindIndex(name);
  if (reg == nullptr) return Status::NotFound("no index named '" + std::string(name) + "'");
  Result<std::unique_ptr<Index>> index = Status::NotSupported();
  if (reg->attach == nullptr) {
    index = reg->make(path, options);
  } else {
    // The pool gets its name only once the index is initialised in it: a creator killed at
    // any point leaves no file at `path` (only a temporary one, removed by a later creator),
    // and of racing creators exactly one publishes; the others remove their own files.
    Result<std::unique_ptr<Pool>> pool =
        Pool::CreateUnpublished(path, reg->traits.kind,
                                options.index_params.empty() ? reg->params : options.index_params,
                                options);
    if (!pool.ok()) return pool.status();
    index = reg->attach(std::move(pool).value(), /*fresh=*/true);
    if (index.ok()) {
      index = WrapValueStore(std::move(index).value());  // pools with out-of-line values
      if (Status s = index.value()->pool()->Publish(); !s.ok()) return s;
    }
  }
  if (!index.ok()) return index.status();
  return std::unique_ptr<Index>(new CheckedIndex(std::move(index).value()));
}

namespace {

// Maps the pool, attaches its index, recovers it and rebuilds the allocator.
Result<std::unique_ptr<Index>> OpenAndRecover(const std::string& path, IndexKind kind,
                                              const Options& options) {
  Result<std::unique_ptr<Pool>> pool = Pool::Open(path, kind, options);
  if (!pool.ok()) return pool.status();
  const IndexRegistration* reg = FindIndex(pool.value()->kind());
  if (reg == nullptr) {
    return Status::NotSupported(path + ": pool holds index kind " +
                                std::to_string(static_cast<uint32_t>(pool.value()->kind())) +
                                ", which this build does not include");
  }
  Result<std::unique_ptr<Index>> index = reg->attach(std::move(pool).value(), /*fresh=*/false);
  if (!index.ok()) return index.status();
  // Out-of-line values (their blocks are reported by the layer's visit_blocks).
  Result<std::unique_ptr<Index>> recovered =
      Recover(WrapValueStore(std::move(index).value()));
  if (!recovered.ok()) return recovered.status();
  return std::unique_ptr<Index>(new CheckedIndex(std::move(recovered).value()));
}

}  // namespace

Result<std::unique_ptr<Index>> OpenIndex(const std::string& path, const Options& options,
                                         std::string_view name) {
  const bool exists = FileExists(path);
  if (exists && options.error_if_exists) {
    return Status::AlreadyExists(path + ": pool exists (error_if_exists is set)");
  }
  if (!exists && options.create_if_missing) {
    if (name.empty()) {
      return Status::InvalidArgument(path + ": create_if_missing needs an index name");
    }
    Result<std::unique_ptr<Index>> created = CreateIndex(name, path, options);
    // Another creator published first: open its pool (Busy while that process holds it).
    if (created.ok() || !FileExists(path)) return created;
  }
  IndexKind kind = IndexKind::kNone;
  if (!name.empty()) {
    const IndexRegistration* reg = FindIndex(name);
    if (reg == nullptr) return Status::NotFound("no index named '" + std::string(name) + "'");
    if (reg->attach == nullptr) {
      return Status::NotSupported("index '" + std::string(name) + "' does not live in a pool");
    }
    kind = reg->traits.kind;
  }
  if (!options.read_only && options.trial_open) {
    // A refused open must leave the file as it was, but recovery repairs leaves in place
    // before it can know that a later leaf, or the allocator rebuild, finds Corruption. So the
    // whole open runs first on a copy-on-write mapping (as a read-only open does); only if
    // that succeeds is the pool opened shared and recovered again, now for real.
    Options trial = options;
    trial.read_only = true;
    trial.prefault = false;
    trial.persist_hook = nullptr;  // the hook follows the real mapping only
    Result<std::unique_ptr<Index>> tried = OpenAndRecover(path, kind, trial);
    if (!tried.ok()) return tried.status();
  }
  return OpenAndRecover(path, kind, options);
}

Result<std::unique_ptr<Index>> OpenOrCreateIndex(std::string_view name, const std::string& path,
                                                 const Options& options) {
  const IndexRegistration* reg = FindIndex(name);
  if (reg == nullptr) return Status::NotFound("no index named '" + std::string(name) + "'");
  if (reg->attach == nullptr) {
    if (options.error_if_exists && FileExists(path)) {
      return Status::AlreadyExists(path + ": exists (error_if_exists is set)");
    }
    return CreateIndex(name, path, options);
  }
  Options create = options;
  create.create_if_missing = true;
  return OpenIndex(path, create, name);
}

}  // namespace pmindex
