// Volatile ART: ordered scan, verify and stats.
#include <mutex>
#include <string>

#include "pm/prefetch.h"
#include "radix/art/art.h"
#include "radix/common/key.h"

namespace pmindex::radix {

using art::IsLeaf;
using art::Leaf;
using art::Node;
using art::Ref;

// A scan is one descent and an in-order walk that does not wait for its cache misses one
// by one: entering a node it prefetches the children it will visit, and leaves past `start`
// are queued unread (up to kScanBatch) and emitted together, once their lines have arrived
// (as PersistentRadixTree's scan).
constexpr size_t kScanBatch = 64;
constexpr unsigned kScanPrefetchChildren = 16;

struct Art::ScanState {
  std::string_view start;
  size_t max_count = 0;
  size_t emitted = 0;
  ScanCallback* fn = nullptr;
  size_t queued = 0;
  const Leaf* queue[kScanBatch];  // leaves reached, not yet emitted
};

namespace {

// Emits the queued leaves; false once the callback stopped or max_count is reached.
template <typename State>
bool ScanFlush(State& st) {
  const size_t n = st.queued;
  st.queued = 0;
  for (size_t i = 0; i < n; ++i) {
    ++st.emitted;
    if (!(*st.fn)(st.queue[i]->key(), st.queue[i]->value())) return false;
  }
  return st.emitted < st.max_count;
}

void ScanPrefetch(Ref r) {
  const char* p = reinterpret_cast<const char*>(r & ~Ref{1});
  pm::PrefetchLine(p);
  if (!IsLeaf(r)) {  // header, end and the first keys and children
    pm::PrefetchLine(p + 64);
    pm::PrefetchLine(p + 128);
  }
}

}  // namespace

struct Art::Totals {
  uint64_t nodes[4] = {};
  uint64_t leaves = 0;
  uint64_t bytes = 0;
};

bool Art::ScanRef(Ref r, size_t depth, bool bounded, ScanState& st) const {
  if (r == 0) return true;
  if (IsLeaf(r)) {
    const Leaf* l = art::AsLeaf(r);
    if (bounded && l->key() < st.start) return true;
    st.queue[st.queued++] = l;
    if (st.queued == kScanBatch || st.emitted + st.queued >= st.max_count) return ScanFlush(st);
    return true;
  }
  auto* n = reinterpret_cast<const Node*>(r);
  const size_t pos = depth + n->prefix_len;
  const uint8_t* s = Bytes(st.start);
  const size_t su = st.start.size();
  if (bounded && n->prefix_len != 0) {
    const uint8_t* ref = AnyLeaf(r)->key_ptr();
    for (size_t i = depth; i < pos; ++i) {
      if (i == su) {
        bounded = false;
        break;
      }
      if (ref[i] != s[i]) {
        if (ref[i] < s[i]) return true;
        bounded = false;
        break;
      }
    }
  }
  const int first = bounded && su > pos ? s[pos] : -1;
  if (n->end != 0) ScanPrefetch(n->end);
  unsigned ahead = 0;
  art::ForEachChild(n, first, [&ahead](uint8_t, Ref c) {
    ScanPrefetch(c);
    return ++ahead < kScanPrefetchChildren;
  });
  if (!ScanRef(n->end, pos, bounded && su > pos, st)) return false;
  return art::ForEachChild(n, first, [&](uint8_t b, Ref c) {
    return ScanRef(c, pos + 1, static_cast<int>(b) == first, st);
  });
}

size_t Art::scan(std::string_view start, size_t max_count, ScanCallback fn) {
  if (max_count == 0) return 0;
  std::shared_lock lock(mu_);
  ScanState st;  // the queue is left uninitialized
  st.start = start;
  st.max_count = max_count;
  st.fn = &fn;
  if (ScanRef(root_, 0, true, st) && st.queued != 0) ScanFlush(st);
  return st.emitted;
}

Status Art::VerifyRef(Ref r, size_t depth, std::vector<uint8_t>& path, Totals& t) const {
  if (IsLeaf(r)) {
    const Leaf* l = art::AsLeaf(r);
    if (l->key_len < path.size() ||
        (path.size() && std::memcmp(l->key_ptr(), path.data(), path.size()) != 0))
      return Status::Corruption("art: leaf key off its path");
    ++t.leaves;
    t.bytes += Leaf::Bytes(l);
    return Status::OK();
  }
  auto* n = reinterpret_cast<const Node*>(r);
  ++t.nodes[static_cast<int>(n->type)];
  t.bytes += art::NodeBytes(n->type);
  const Leaf* any = AnyLeaf(r);
  if (any == nullptr) return Status::Corruption("art: empty node");
  const size_t pos = depth + n->prefix_len;
  if (any->key_len < pos) return Status::Corruption("art: leaf shorter than prefix");
  const size_t saved = path.size();
  for (size_t i = 0; i < n->prefix_len; ++i) {
    if (i < art::kArtPrefix && n->prefix[i] != any->key_ptr()[depth + i])
      return Status::Corruption("art: stored prefix disagrees with keys");
    path.push_back(any->key_ptr()[depth + i]);
  }
  unsigned children = 0;
  int prev = -1;
  Status result;
  if (n->end != 0) {
    if (!IsLeaf(n->end) || art::AsLeaf(n->end)->key_len != pos)
      return Status::Corruption("art: bad end slot");
    if (Status s = VerifyRef(n->end, pos, path, t); !s.ok()) return s;
  }
  art::ForEachChild(n, -1, [&](uint8_t b, Ref c) {
    ++children;
    if (static_cast<int>(b) <= prev) {
      result = Status::Corruption("art: keys out of order");
      return false;
    }
    prev = b;
    if (IsLeaf(c) && art::AsLeaf(c)->key_len <= pos) {
      result = Status::Corruption("art: child leaf too short");
      return false;
    }
    path.push_back(b);
    result = VerifyRef(c, pos + 1, path, t);
    path.pop_back();
    return result.ok();
  });
  if (!result.ok()) return result;
  if (children != n->count) return Status::Corruption("art: count disagrees with children");
  if (children + (n->end != 0) < 2) return Status::Corruption("art: node with a single entry");
  path.resize(saved);
  return Status::OK();
}

Status Art::verify() {
  std::shared_lock lock(mu_);
  if (root_ == 0) return Status::OK();
  std::vector<uint8_t> path;
  Totals t;
  return VerifyRef(root_, 0, path, t);
}

IndexStats Art::stats() {
  std::shared_lock lock(mu_);
  IndexStats st;
  Totals t;
  std::vector<uint8_t> path;
  // Stats count what the walk reaches; a breach it meets is verify()'s to report.
  if (root_ != 0) VerifyRef(root_, 0, path, t).IgnoreError();
  st.dram_bytes = t.bytes;
  st.keys = t.leaves;
  st.nodes = {{"node4", t.nodes[0]},  {"node16", t.nodes[1]}, {"node48", t.nodes[2]},
              {"node256", t.nodes[3]}, {"leaves", t.leaves}};
  return st;
}

}  // namespace pmindex::radix
