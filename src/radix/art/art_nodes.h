// The DRAM nodes of the volatile ART (Leis et al., ICDE 2013): Node4, Node16 (sorted keys,
// SIMD search), Node48 (256-byte child index), Node256; leaves hold the whole key and value
// (lazy expansion). A child is a tagged pointer: low bit 1 = leaf. Nothing here is persistent,
// so there is no layout to pin beyond what the code needs.
//
// Optimistic lock coupling (art.h): every node starts with a pm::VersionLock word. A node's
// type, a leaf's key and value length never change once the node or leaf is published (a
// release store of its pointer, read with acquire); every other word a writer changes in a
// published node (prefix, count, keys, children, end, index, a leaf's value bytes) is
// stored and loaded with atomics (pm/racy.h), and what a reader loads is checked by the
// node's version afterwards. The Node4/Node16 key arrays and the Node48 index are read as
// whole 8-byte words, so Node16's SIMD search keeps one 16-byte compare.
#ifndef PMINDEX_RADIX_ART_ART_NODES_H_
#define PMINDEX_RADIX_ART_ART_NODES_H_

#include <emmintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "pm/racy.h"
#include "radix/common/node_search.h"

namespace pmindex::radix::art {

using Ref = uintptr_t;  // 0, a node pointer, or a leaf pointer | 1
inline bool IsLeaf(Ref r) { return r & 1; }

// Key and value lengths are fixed at creation; the value bytes may be rewritten in place (a
// same-length update) under the lock of the node holding the leaf, byte by byte with atomics.
struct Leaf {
  uint16_t key_len;
  uint8_t value_len;
  char data[];  // key, then value

  std::string_view key() const { return {data, key_len}; }
  // Only where no writer runs (verify, or the holder's lock is held).
  std::string_view value() const { return {data + key_len, value_len}; }
  const uint8_t* key_ptr() const { return reinterpret_cast<const uint8_t*>(data); }
  // The value as a reader copies it (validated by the holder's version afterwards).
  void CopyValueTo(std::string* out) const {
    if (out->size() != value_len) out->resize(value_len);
    const char* v = data + key_len;
    for (unsigned i = 0; i < value_len; ++i) (*out)[i] = pm::Load(v[i]);
  }
  void AppendValueTo(std::string* out) const {
    const char* v = data + key_len;
    for (unsigned i = 0; i < value_len; ++i) out->push_back(pm::Load(v[i]));
  }
  // In place, same length; the caller holds the holder's lock.
  void StoreValue(std::string_view v) {
    char* p = data + key_len;
    for (size_t i = 0; i < v.size(); ++i) pm::Store(p[i], v[i]);
  }

  static Ref Make(std::string_view k, std::string_view v) {
    auto* l = static_cast<Leaf*>(std::malloc(sizeof(Leaf) + k.size() + v.size()));
    l->key_len = static_cast<uint16_t>(k.size());
    l->value_len = static_cast<uint8_t>(v.size());
    std::memcpy(l->data, k.data(), k.size());
    std::memcpy(l->data + k.size(), v.data(), v.size());
    return reinterpret_cast<Ref>(l) | 1;
  }
  static size_t Bytes(const Leaf* l) { return sizeof(Leaf) + l->key_len + l->value_len; }
};
inline Leaf* AsLeaf(Ref r) { return reinterpret_cast<Leaf*>(r & ~Ref{1}); }

enum class NodeType : uint8_t { k4, k16, k48, k256 };

inline constexpr unsigned kArtPrefix = 10;  // prefix bytes stored in a node

// 32 bytes, as before the version word came: the prefix length is 16 bits (keys are at most
// 1024 bytes), so Node4 stays 72 bytes and Node16 176 (the same malloc size classes).
struct Node {
  uint64_t version;  // pm::VersionLock word (DRAM: kResetGeneration)
  NodeType type;
  uint8_t prefix[kArtPrefix];
  uint16_t count;       // children (the end leaf not included)
  uint16_t prefix_len;  // may exceed kArtPrefix; the rest is in every leaf below
  Ref end;              // leaf of the key that ends at this node
};
static_assert(sizeof(Node) == 32 && offsetof(Node, end) == 24);

struct Node4 : Node {
  union {
    uint8_t keys[4];
    uint32_t key_word;
  };
  Ref child[4];
};
struct Node16 : Node {
  union {
    uint8_t keys[16];
    uint64_t key_words[2];
  };
  Ref child[16];
};
struct Node48 : Node {
  union {
    uint8_t index[256];  // slot + 1, 0 = absent
    uint64_t index_words[32];
  };
  Ref child[48];
};
struct Node256 : Node {
  Ref child[256];
};
static_assert(sizeof(Node4) == 72 && sizeof(Node16) == 176);

inline constexpr unsigned Capacity(NodeType t) {
  return t == NodeType::k4 ? 4 : t == NodeType::k16 ? 16 : t == NodeType::k48 ? 48 : 256;
}

inline size_t NodeBytes(NodeType t) {
  switch (t) {
    case NodeType::k4: return sizeof(Node4);
    case NodeType::k16: return sizeof(Node16);
    case NodeType::k48: return sizeof(Node48);
    case NodeType::k256: return sizeof(Node256);
  }
  return 0;
}

inline Node* NewNode(NodeType t) {
  auto* n = static_cast<Node*>(std::calloc(1, NodeBytes(t)));
  n->type = t;
  return n;
}

// The count as a reader loads it, clamped to the type's capacity.
inline unsigned LoadCount(const Node* n) {
  const unsigned c = pm::Load(n->count);
  const unsigned cap = Capacity(n->type);
  return c < cap ? c : cap;
}

// Node16's 16 key bytes as two atomic word loads.
inline __m128i LoadKeys16(const Node16* m) {
  return _mm_set_epi64x(static_cast<long long>(pm::Load(m->key_words[1])),
                        static_cast<long long>(pm::Load(m->key_words[0])));
}

// The child slot for byte b, or nullptr (racy loads: the caller validates).
inline Ref* FindChild(Node* n, uint8_t b) {
  switch (n->type) {
    case NodeType::k4: {
      auto* m = static_cast<Node4*>(n);
      const uint32_t w = pm::Load(m->key_word);
      for (unsigned i = 0, c = LoadCount(n); i < c; ++i)
        if (static_cast<uint8_t>(w >> (8 * i)) == b) return &m->child[i];
      return nullptr;
    }
    case NodeType::k16: {
      auto* m = static_cast<Node16*>(n);
      const __m128i cmp = _mm_cmpeq_epi8(LoadKeys16(m), _mm_set1_epi8(static_cast<char>(b)));
      const unsigned hit = static_cast<unsigned>(_mm_movemask_epi8(cmp)) &
                           ((1u << LoadCount(n)) - 1);
      return hit ? &m->child[__builtin_ctz(hit)] : nullptr;
    }
    case NodeType::k48: {
      auto* m = static_cast<Node48*>(n);
      const unsigned i = pm::Load(m->index[b]);
      return i != 0 && i <= 48 ? &m->child[i - 1] : nullptr;
    }
    case NodeType::k256: {
      auto* m = static_cast<Node256*>(n);
      return pm::Load(m->child[b]) ? &m->child[b] : nullptr;
    }
  }
  return nullptr;
}

// Calls f(byte, child) in key order for the non-empty children with byte >= from; stops when
// f returns false. Returns false if stopped. Racy loads: the caller validates what it read.
template <typename F>
inline bool ForEachChild(const Node* n, int from, F&& f) {
  switch (n->type) {
    case NodeType::k4:
    case NodeType::k16: {
      uint8_t keys[16];
      const Ref* child;
      if (n->type == NodeType::k4) {
        auto* m = static_cast<const Node4*>(n);
        const uint32_t w = pm::Load(m->key_word);
        std::memcpy(keys, &w, 4);
        child = m->child;
      } else {
        auto* m = static_cast<const Node16*>(n);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(keys), LoadKeys16(m));
        child = m->child;
      }
      for (unsigned i = 0, c = LoadCount(n); i < c; ++i) {
        if (keys[i] < from) continue;
        const Ref r = pm::LoadAcquire(child[i]);
        if (r != 0 && !f(keys[i], r)) return false;
      }
      return true;
    }
    case NodeType::k48: {  // the index 16 bytes at a time (NonZero16)
      auto* m = static_cast<const Node48*>(n);
      const unsigned first = from < 0 ? 0 : static_cast<unsigned>(from);
      for (unsigned base = first & ~15u; base < 256; base += 16) {
        uint64_t words[2] = {pm::Load(m->index_words[base / 8]),
                             pm::Load(m->index_words[base / 8 + 1])};
        const auto* bytes = reinterpret_cast<const uint8_t*>(words);
        unsigned set = NonZero16(bytes);
        if (base < first) set &= ~0u << (first - base);
        for (; set != 0; set &= set - 1) {
          const unsigned j = static_cast<unsigned>(__builtin_ctz(set));
          const unsigned slot = bytes[j];
          if (slot > 48) continue;
          const Ref r = pm::LoadAcquire(m->child[slot - 1]);
          if (r != 0 && !f(static_cast<uint8_t>(base + j), r)) return false;
        }
      }
      return true;
    }
    case NodeType::k256: {
      auto* m = static_cast<const Node256*>(n);
      for (int b = from < 0 ? 0 : from; b < 256; ++b) {
        const Ref r = pm::LoadAcquire(m->child[b]);
        if (r != 0 && !f(static_cast<uint8_t>(b), r)) return false;
      }
      return true;
    }
  }
  return true;
}

}  // namespace pmindex::radix::art

#endif  // PMINDEX_RADIX_ART_ART_NODES_H_
