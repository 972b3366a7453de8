// Volatile ART: remove, with shrink and collapse under optimistic lock coupling (art.h).
#include <algorithm>

#include "pm/version_lock.h"
#include "radix/art/art.h"
#include "radix/common/key.h"

namespace pmindex::radix {

using art::IsLeaf;
using art::Leaf;
using art::Node;
using art::NodeType;
using art::Ref;
using pm::VersionLock;

namespace {

constexpr uint32_t kGen = VersionLock::kResetGeneration;
constexpr int kEndSlot = 256;  // Rebuilt's `skip` for the end leaf

// The smaller type n shrinks to once it holds `children` children, or n's own type.
NodeType ShrunkType(NodeType t, unsigned children) {
  switch (t) {
    case NodeType::k4: return t;
    case NodeType::k16: return children <= 3 ? NodeType::k4 : t;
    case NodeType::k48: return children <= 12 ? NodeType::k16 : t;
    case NodeType::k256: return children <= 37 ? NodeType::k48 : t;
  }
  return t;
}

}  // namespace

Status Art::remove(std::string_view key) {
  if (!KeyInRange(key)) return Status::NotFound();
  pm::Epoch::Guard guard(epoch_);
  for (;;) {
    if (Outcome o = RemoveOnce(key)) return std::move(*o);
  }
}

// One descent to the key's leaf, remembering the node holding it (n, reached through gslot
// of holder gh at depth ndepth) and the byte of its slot (-1: the end slot).
Art::Outcome Art::RemoveOnce(std::string_view key) {
  const uint8_t* k = Bytes(key);
  const size_t len = key.size();
  Holder h{&root_lock_, 0};
  if (!ReadBegin(&h)) return Restart();
  Ref* slot = &root_;
  Holder gh = h;
  Ref* gslot = nullptr;
  Node* n = nullptr;
  size_t depth = 0, ndepth = 0;
  int byte = -1;
  for (;;) {
    const Ref r = pm::LoadAcquire(*slot);
    if (r == 0) return Validate(h) ? Outcome(Status::NotFound()) : Restart();
    if (IsLeaf(r)) {
      if (art::AsLeaf(r)->key() != key)
        return Validate(h) ? Outcome(Status::NotFound()) : Restart();
      if (n != nullptr) return RemoveFromNode(gh, gslot, h, n, ndepth, byte, r);
      if (!Upgrade(h)) return Restart();  // the root word holds the leaf
      pm::StoreRelease(root_, Ref{0});
      Unlock(h.word);
      Retire(r);
      return Status::OK();
    }
    Node* next = reinterpret_cast<Node*>(r);
    Holder nh{&next->version, 0};
    if (!ReadBegin(&nh) || !Validate(h)) return Restart();
    const uint32_t prefix_len = pm::Load(next->prefix_len);
    if (depth + prefix_len > len) return Validate(nh) ? Outcome(Status::NotFound()) : Restart();
    gh = h;
    gslot = slot;
    n = next;
    ndepth = depth;
    h = nh;
    depth += prefix_len;
    if (depth == len) {
      slot = &n->end;
      byte = -1;
      continue;
    }
    slot = art::FindChild(n, k[depth]);
    if (slot == nullptr) return Validate(nh) ? Outcome(Status::NotFound()) : Restart();
    byte = k[depth];
    ++depth;
  }
}

// Removes `leaf` (in n's slot `byte`) in place under n's lock, or, where n would keep too few
// entries for its type, replaces n in its holder's slot by a smaller copy or by its one
// remaining entry (the holder's lock, then n's; n is marked obsolete and retired).
Art::Outcome Art::RemoveFromNode(const Holder& gh, Ref* gslot, const Holder& nh, Node* n,
                                 size_t ndepth, int byte, Ref leaf) {
  const unsigned children = pm::Load(n->count) - (byte >= 0 ? 1 : 0);
  const bool end_left = byte >= 0 && pm::LoadAcquire(n->end) != 0;
  const bool replace = children + end_left < 2 || ShrunkType(n->type, children) != n->type;
  if (!replace) {
    if (!Upgrade(nh)) return Restart();
    if (byte < 0)
      pm::StoreRelease(n->end, Ref{0});
    else
      RemoveChild(n, static_cast<uint8_t>(byte));
    Unlock(nh.word);
    Retire(leaf);
    return Status::OK();
  }
  if (!Upgrade(gh)) return Restart();
  if (!Upgrade(nh)) {
    Unlock(gh.word, false);
    return Restart();
  }
  Ref replacement = 0;
  Node* locked_child = nullptr;
  if (children + end_left < 2) {
    if (!Collapse(n, byte, ndepth, &replacement, &locked_child)) {
      Unlock(nh.word, false);
      Unlock(gh.word, false);
      return Restart();
    }
  } else {
    replacement = reinterpret_cast<Ref>(
        Rebuilt(n, ShrunkType(n->type, children), byte < 0 ? kEndSlot : byte, -1, 0));
  }
  pm::StoreRelease(*gslot, replacement);
  VersionLock::MarkObsolete(nh.word, kGen);
  if (locked_child != nullptr) Unlock(&locked_child->version);
  Unlock(gh.word);
  Retire(reinterpret_cast<Ref>(n));
  Retire(leaf);
  return Status::OK();
}

// The one entry locked n keeps without the slot `byte` (-1: the end slot) becomes the
// replacement of n. A node child takes n's prefix, its key byte and its own prefix: it is
// locked (below n's lock, so it is not obsolete) and left locked in *locked_child.
bool Art::Collapse(Node* n, int byte, size_t ndepth, Ref* replacement, Node** locked_child) {
  Ref rest = byte >= 0 ? n->end : 0;
  if (rest == 0) {
    art::ForEachChild(n, -1, [&](uint8_t b, Ref c) {
      if (b == byte) return true;
      rest = c;
      return false;
    });
  }
  *replacement = rest;
  if (rest == 0 || IsLeaf(rest)) return true;
  Node* c = reinterpret_cast<Node*>(rest);
  if (!VersionLock::Lock(&c->version, kGen)) return false;
  const Leaf* any = AnyLeaf(rest);
  if (any == nullptr) {
    Unlock(&c->version, false);
    return false;
  }
  SetPrefix(c, n->prefix_len + 1 + c->prefix_len, any->key_ptr(), ndepth);
  *locked_child = c;
  return true;
}

}  // namespace pmindex::radix
