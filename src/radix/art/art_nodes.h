// The DRAM nodes of the volatile ART (Leis et al., ICDE 2013): Node4, Node16 (sorted keys,
// SIMD search), Node48 (256-byte child index), Node256; leaves hold the whole key and value
// (lazy expansion). A child is a tagged pointer: low bit 1 = leaf. Nothing here is persistent,
// so there is no layout to pin beyond what the code needs.
#ifndef PMINDEX_RADIX_ART_ART_NODES_H_
#define PMINDEX_RADIX_ART_ART_NODES_H_

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "radix/common/node_search.h"

namespace pmindex::radix::art {

using Ref = uintptr_t;  // 0, a node pointer, or a leaf pointer | 1
inline bool IsLeaf(Ref r) { return r & 1; }

struct Leaf {
  uint16_t key_len;
  uint8_t value_len;
  char data[];  // key, then value

  std::string_view key() const { return {data, key_len}; }
  std::string_view value() const { return {data + key_len, value_len}; }
  const uint8_t* key_ptr() const { return reinterpret_cast<const uint8_t*>(data); }

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

struct Node {
  NodeType type;
  uint8_t prefix[kArtPrefix];
  uint16_t count;       // children (the end leaf not included)
  uint32_t prefix_len;  // may exceed kArtPrefix; the rest is in every leaf below
  Ref end;              // leaf of the key that ends at this node
};

struct Node4 : Node {
  uint8_t keys[4];
  Ref child[4];
};
struct Node16 : Node {
  uint8_t keys[16];
  Ref child[16];
};
struct Node48 : Node {
  uint8_t index[256];  // slot + 1, 0 = absent
  Ref child[48];
};
struct Node256 : Node {
  Ref child[256];
};

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

// The child slot for byte b, or nullptr.
inline Ref* FindChild(Node* n, uint8_t b) {
  switch (n->type) {
    case NodeType::k4: {
      auto* m = static_cast<Node4*>(n);
      for (unsigned i = 0; i < m->count; ++i)
        if (m->keys[i] == b) return &m->child[i];
      return nullptr;
    }
    case NodeType::k16: {
      auto* m = static_cast<Node16*>(n);
      const int i = Find16(m->keys, m->count, b);
      return i < 0 ? nullptr : &m->child[i];
    }
    case NodeType::k48: {
      auto* m = static_cast<Node48*>(n);
      return m->index[b] ? &m->child[m->index[b] - 1] : nullptr;
    }
    case NodeType::k256: {
      auto* m = static_cast<Node256*>(n);
      return m->child[b] ? &m->child[b] : nullptr;
    }
  }
  return nullptr;
}

// Calls f(byte, child) in key order; stops when f returns false. Returns false if stopped.
template <typename F>
inline bool ForEachChild(const Node* n, int from, F&& f) {
  switch (n->type) {
    case NodeType::k4: {
      auto* m = static_cast<const Node4*>(n);
      for (unsigned i = 0; i < m->count; ++i)
        if (m->keys[i] >= from && !f(m->keys[i], m->child[i])) return false;
      return true;
    }
    case NodeType::k16: {
      auto* m = static_cast<const Node16*>(n);
      for (unsigned i = 0; i < m->count; ++i)
        if (m->keys[i] >= from && !f(m->keys[i], m->child[i])) return false;
      return true;
    }
    case NodeType::k48: {  // the index 16 bytes at a time (NonZero16)
      auto* m = static_cast<const Node48*>(n);
      const unsigned first = from < 0 ? 0 : static_cast<unsigned>(from);
      for (unsigned base = first & ~15u; base < 256; base += 16) {
        unsigned set = NonZero16(m->index + base);
        if (base < first) set &= ~0u << (first - base);
        for (; set != 0; set &= set - 1) {
          const unsigned b = base + static_cast<unsigned>(__builtin_ctz(set));
          if (!f(static_cast<uint8_t>(b), m->child[m->index[b] - 1])) return false;
        }
      }
      return true;
    }
    case NodeType::k256: {
      auto* m = static_cast<const Node256*>(n);
      for (int b = from < 0 ? 0 : from; b < 256; ++b)
        if (m->child[b] && !f(static_cast<uint8_t>(b), m->child[b])) return false;
      return true;
    }
  }
  return true;
}

}  // namespace pmindex::radix::art

#endif  // PMINDEX_RADIX_ART_ART_NODES_H_
