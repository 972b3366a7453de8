#include "radix/pftree/inner_node.h"

#include <emmintrin.h>

#include <cstring>

#include "pm/mutant.h"
#include "pm/persist.h"

namespace pmindex::pftree {

void StoreRef(pm::PersistContext& pc, uint64_t* slot, uint64_t ref) {
  std::atomic_ref<uint64_t>(*slot).store(ref, std::memory_order_release);
  pc.persist(slot, sizeof(uint64_t));
}

size_t FixedSize(NodeType type) {
  switch (type) {
    case NodeType::kNode4:
      return sizeof(Node4);
    case NodeType::kNode16:
      return sizeof(Node16);
    case NodeType::kNode48:
      return sizeof(Node48);
    case NodeType::kNode256:
      return sizeof(Node256);
    default:
      return 0;
  }
}

uint64_t* FindChildSlot(InnerHeader* n, uint8_t b) {
  switch (static_cast<NodeType>(n->type)) {
    case NodeType::kNode4: {
      auto* n4 = reinterpret_cast<Node4*>(n);
      const int count = KeyCount(n);
      for (int i = 0; i < count; ++i)
        if (n4->keys[i] == b) return &n4->children[i];
      return nullptr;
    }
    case NodeType::kNode16: {
      // Keys below count are immutable once published (count is raised after them); the
      // vector load also reads the positions above it, which a writer may be filling, and
      // masks them out.
      auto* n16 = reinterpret_cast<Node16*>(n);
      const int count = KeyCount(n);
#ifdef PMINDEX_TSAN
      for (int i = 0; i < count; ++i)
        if (n16->keys[i] == b) return &n16->children[i];
      return nullptr;
#else
      __m128i keys = _mm_loadu_si128(reinterpret_cast<const __m128i*>(n16->keys));
      unsigned mask = static_cast<unsigned>(
          _mm_movemask_epi8(_mm_cmpeq_epi8(keys, _mm_set1_epi8(static_cast<char>(b)))));
      mask &= (1u << count) - 1;
      return mask ? &n16->children[__builtin_ctz(mask)] : nullptr;
#endif
    }
    case NodeType::kNode48: {
      auto* n48 = reinterpret_cast<Node48*>(n);
      uint8_t idx = std::atomic_ref<uint8_t>(n48->index[b]).load(std::memory_order_acquire);
      return idx ? &n48->children[idx - 1] : nullptr;
    }
    case NodeType::kNode256:
      return &reinterpret_cast<Node256*>(n)->children[b];
    default:
      return nullptr;
  }
}

bool AddChildInPlace(pm::PersistContext& pc, InnerHeader* n, uint8_t b, uint64_t ref) {
  uint64_t* slot = FindChildSlot(n, b);
  if (slot != nullptr) {
    if (LoadRef(slot) != 0) return false;
    StoreRef(pc, slot, ref);
    return true;
  }
  if (n->type == static_cast<uint8_t>(NodeType::kNode4) ||
      n->type == static_cast<uint8_t>(NodeType::kNode16)) {
    const bool n4 = n->type == static_cast<uint8_t>(NodeType::kNode4);
    const int count = n->count;
    if (count >= (n4 ? 4 : 16)) return false;
    uint8_t* keys = n4 ? reinterpret_cast<Node4*>(n)->keys : reinterpret_cast<Node16*>(n)->keys;
    uint64_t* children =
        n4 ? reinterpret_cast<Node4*>(n)->children : reinterpret_cast<Node16*>(n)->children;
    // Position `count` is beyond what readers and recovery look at: fill it, persist it,
    // then publish it by raising count.
    keys[count] = b;
    std::atomic_ref<uint64_t>(children[count]).store(ref, std::memory_order_relaxed);
    if (!pm::mutant("pftree.skip_node_slot_persist")) {
      pc.flush(&keys[count], 1);
      pc.flush(&children[count], sizeof(uint64_t));
      pc.fence();
    }
    std::atomic_ref<uint8_t>(n->count).store(static_cast<uint8_t>(count + 1),
                                             std::memory_order_release);
    pc.persist(&n->count, 1);  // commit
    return true;
  }
  if (static_cast<NodeType>(n->type) != NodeType::kNode48) return false;
  auto* n48 = reinterpret_cast<Node48*>(n);
  // A free slot is one no index byte references; a crash between persisting a child and its
  // index byte leaves such a slot with a stale value, which is simply overwritten here.
  uint64_t used = 0;
  for (int i = 0; i < 256; ++i)
    if (n48->index[i] != 0) used |= uint64_t{1} << (n48->index[i] - 1);
  for (int s = 0; s < 48; ++s) {
    if (used & (uint64_t{1} << s)) continue;
    StoreRef(pc, &n48->children[s], ref);
    std::atomic_ref<uint8_t>(n48->index[b]).store(static_cast<uint8_t>(s + 1),
                                                  std::memory_order_release);
    pc.persist(&n48->index[b], 1);  // commit
    return true;
  }
  return false;
}

std::vector<std::pair<uint8_t, uint64_t>> LiveChildren(InnerHeader* n) {
  std::vector<std::pair<uint8_t, uint64_t>> out;
  ForEachSlot(n, [&](uint8_t b, uint64_t* slot) {
    uint64_t ref = LoadRef(slot);
    if (ref != 0) out.emplace_back(b, ref);
  });
  return out;
}

std::vector<ChildRun> ChildRuns(InnerHeader* n) {
  std::vector<ChildRun> out;
  ForEachSlot(n, [&](uint8_t b, uint64_t* slot) {
    uint64_t ref = LoadRef(slot);
    if (ref == 0) return;
    if (!out.empty() && out.back().ref == ref && out.back().hi + 1 == b) {
      out.back().hi = b;
    } else {
      out.push_back({b, b, ref});
    }
  });
  return out;
}

void RunOf(InnerHeader* n, uint8_t b, uint8_t* lo, uint8_t* hi) {
  int l = b, h = b;
  switch (static_cast<NodeType>(n->type)) {
    case NodeType::kNode48: {
      auto* n48 = reinterpret_cast<Node48*>(n);
      const uint8_t idx = n48->index[b];
      if (idx == 0) break;
      while (l > 0 && n48->index[l - 1] == idx) --l;
      while (h < 255 && n48->index[h + 1] == idx) ++h;
      break;
    }
    case NodeType::kNode256: {
      auto* n256 = reinterpret_cast<Node256*>(n);
      const uint64_t ref = LoadRef(&n256->children[b]);
      if (ref == 0) break;
      while (l > 0 && LoadRef(&n256->children[l - 1]) == ref) --l;
      while (h < 255 && LoadRef(&n256->children[h + 1]) == ref) ++h;
      break;
    }
    default:
      break;
  }
  *lo = static_cast<uint8_t>(l);
  *hi = static_cast<uint8_t>(h);
}

Result<uint64_t> BuildInnerNode(pm::PersistContext& pc, pm::Allocator& alloc, char* base, uint16_t depth,
                                std::string_view prefix, uint64_t term,
                                const std::vector<std::pair<uint8_t, uint64_t>>& children,
                                bool flush) {
  size_t n = children.size();
  size_t distinct = 0;
  for (size_t i = 0; i < n; ++i)
    if (i == 0 || children[i].second != children[i - 1].second) ++distinct;
  const bool shared = distinct < n;
  NodeType type = n <= 4 && !shared    ? NodeType::kNode4
                  : n <= 16 && !shared ? NodeType::kNode16
                  : distinct <= 48     ? NodeType::kNode48
                                       : NodeType::kNode256;
  size_t fixed = FixedSize(type);
  size_t size = fixed + prefix.size();
  Result<uint64_t> off = alloc.allocate(size);
  if (!off.ok()) return off.status();
  char* p = base + *off;
  std::memset(p, 0, fixed);
  auto* h = reinterpret_cast<InnerHeader*>(p);
  h->type = static_cast<uint8_t>(type);
  h->prefix_len = static_cast<uint16_t>(prefix.size());
  h->depth = depth;
  h->term = term;
  std::memcpy(p + fixed, prefix.data(), prefix.size());
  switch (type) {
    case NodeType::kNode4: {
      auto* n4 = reinterpret_cast<Node4*>(p);
      for (size_t i = 0; i < n; ++i) {
        n4->keys[i] = children[i].first;
        n4->children[i] = children[i].second;
      }
      h->count = static_cast<uint8_t>(n);
      break;
    }
    case NodeType::kNode16: {
      auto* n16 = reinterpret_cast<Node16*>(p);
      for (size_t i = 0; i < n; ++i) {
        n16->keys[i] = children[i].first;
        n16->children[i] = children[i].second;
      }
      h->count = static_cast<uint8_t>(n);
      break;
    }
    case NodeType::kNode48: {
      auto* n48 = reinterpret_cast<Node48*>(p);
      size_t slot = 0;
      for (size_t i = 0; i < n; ++i) {
        if (i > 0 && children[i].second != children[i - 1].second) ++slot;
        n48->index[children[i].first] = static_cast<uint8_t>(slot + 1);
        n48->children[slot] = children[i].second;
      }
      h->count = static_cast<uint8_t>(distinct);
      break;
    }
    case NodeType::kNode256: {
      auto* n256 = reinterpret_cast<Node256*>(p);
      for (auto& [b, ref] : children) n256->children[b] = ref;
      break;
    }
    default:
      break;
  }
  if (flush) pc.flush(p, size);  // the caller fences before any reference to it is stored
  return *off;
}

}  // namespace pmindex::pftree
