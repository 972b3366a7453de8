// The node organisations' primitives (node.h has the layouts and crash arguments).
#include "primitives/node.h"

#include <emmintrin.h>

#include <cassert>
#include <numeric>

namespace pmindex::primitives {

std::string_view OrgName(Org org) {
  switch (org) {
    case Org::kSorted: return "sorted";
    case Org::kUnsorted: return "unsorted";
    case Org::kUnsortedBitmap: return "unsorted+bitmap";
    case Org::kIndirection: return "indirection";
    case Org::kHashing: return "hashing";
    case Org::kBitmap: return "bitmap";
  }
  return "?";
}

bool ParseOrg(std::string_view name, Org* out) {
  for (Org o : kAllOrgs) {
    if (OrgName(o) == name) {
      *out = o;
      return true;
    }
  }
  return false;
}

Layout MakeLayout(Org org, size_t node_bytes) {
  Layout l;
  l.org = org;
  l.node_bytes = node_bytes;
  l.capacity = Capacity(org, node_bytes);
  const bool bitmap = org != Org::kSorted && org != Org::kUnsorted;
  l.words = bitmap ? (l.capacity + 63) / 64 : 0;
  size_t off = 8 * l.words;
  if (org == Org::kSorted || org == Org::kUnsorted || org == Org::kUnsortedBitmap) {
    l.count_off = off;
    off += 8;
  }
  l.next_off = off;
  l.prev_off = off + 8;
  if (org == Org::kHashing || org == Org::kIndirection) l.aux_off = off + 16;
  l.header_bytes = RoundUp64(HeaderBytes(org, l.capacity));
  l.keys_off = l.header_bytes;
  l.values_off = l.header_bytes + 8 * l.capacity;
  return l;
}

void Node::Format() { std::memset(b_, 0, l_->node_bytes); }

size_t Node::Size() const {
  switch (l_->org) {
    case Org::kSorted:
    case Org::kUnsorted: return *Count();
    case Org::kIndirection: return SlotCount();
    default: break;
  }
  size_t n = 0;
  for (size_t w = 0; w < l_->words; ++w) n += std::popcount(Bitmap()[w]);
  return n;
}

bool Node::Live(size_t i) const {
  if (!HasBitmap()) return i < *Count();
  return (Bitmap()[i / 64] >> (i % 64)) & 1;
}

int Node::FreeBit() const {
  for (size_t w = 0; w < l_->words; ++w) {
    const uint64_t free = ~Bitmap()[w];
    if (free == 0) continue;
    const size_t i = w * 64 + std::countr_zero(free);
    return i < l_->capacity ? static_cast<int>(i) : -1;
  }
  return -1;
}

void Node::SetBit(size_t i, bool on) {
  uint64_t* w = &Bitmap()[i / 64];
  const uint64_t bit = uint64_t{1} << (i % 64);
  PutWord(w, on ? (*w | bit) : (*w & ~bit));
  Flush(w, 8);
}

// ---- search ----------------------------------------------------------------------------

int Node::LinearFind(Key key) const {
  const Key* k = Keys();
  if (!HasBitmap()) {
    const size_t n = *Count();
    for (size_t i = 0; i < n; ++i)
      if (k[i] == key) return static_cast<int>(i);
    return -1;
  }
  const size_t end = l_->org == Org::kUnsortedBitmap ? *Count() : l_->capacity;
  for (size_t i = 0; i < end; ++i)
    if (k[i] == key && Live(i)) return static_cast<int>(i);
  return -1;
}

size_t Node::LowerBound(Key key) const {
  const Key* k = Keys();
  size_t lo = 0, hi = *Count();
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (k[mid] < key) lo = mid + 1; else hi = mid;
  }
  return lo;
}

int Node::BinaryFind(Key key) const {
  const size_t i = LowerBound(key);
  return i < *Count() && Keys()[i] == key ? static_cast<int>(i) : -1;
}

size_t Node::SlotLowerBound(Key key) const {
  const Key* k = Keys();
  const uint8_t* s = Slots();
  size_t lo = 0, hi = SlotCount();
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (k[s[mid]] < key) lo = mid + 1; else hi = mid;
  }
  return lo;
}

int Node::IndirectFind(Key key) const {
  const size_t p = SlotLowerBound(key);
  if (p < SlotCount() && Keys()[Slots()[p]] == key) return Slots()[p];
  return -1;
}

// Hash probe: 16 hash bytes at a time (SSE2), masked by the bitmap; keys compared only on
// a hash match. Reads past the M hash bytes stay inside the node and are masked off.
int Node::HashFind(Key key) const {
  const __m128i h = _mm_set1_epi8(static_cast<char>(Hash(key)));
  const uint8_t* aux = Aux();
  for (size_t i = 0; i < l_->capacity; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(aux + i));
    uint32_t m = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, h)));
    const uint64_t word = Bitmap()[i / 64] >> (i % 64);
    m &= static_cast<uint32_t>(word & 0xffff);
    while (m != 0) {
      const size_t j = i + std::countr_zero(m);
      if (j < l_->capacity && Keys()[j] == key) return static_cast<int>(j);
      m &= m - 1;
    }
  }
  return -1;
}

int Node::Find(Key key, Search how) const {
  if (how == Search::kLinear) return LinearFind(key);
  switch (l_->org) {
    case Org::kSorted: return BinaryFind(key);
    case Org::kIndirection: return IndirectFind(key);
    case Org::kHashing: return how == Search::kBinary ? -1 : HashFind(key);
    default: return LinearFind(key);
  }
}

bool Node::Get(Key key, Value* v) const {
  const int i = Find(key);
  if (i < 0) return false;
  *v = Values()[i];
  return true;
}

// ---- insert ----------------------------------------------------------------------------

void Node::WritePair(size_t i, Key key, const Value& v) {
  PutWord(&Keys()[i], key);
  Put(&Values()[i], &v, sizeof(Value));
  if (l_->org == Org::kHashing) PutWord(&Aux()[i], Hash(key));
}

// Sorted: shift the tail one place right, write the pair, then the count.
// Crash: not failure-atomic (node.h); the count is written last.
bool Node::InsertSorted(Key key, const Value& v) {
  const size_t n = *Count();
  const size_t pos = LowerBound(key);
  Put(&Keys()[pos + 1], &Keys()[pos], (n - pos) * sizeof(Key));
  Put(&Values()[pos + 1], &Values()[pos], (n - pos) * sizeof(Value));
  WritePair(pos, key, v);
  Flush(&Keys()[pos], (n - pos + 1) * sizeof(Key));
  Flush(&Values()[pos], (n - pos + 1) * sizeof(Value));
  Fence();
  PutWord<uint64_t>(Count(), n + 1);
  Flush(Count(), 8);
  Fence();
  return true;
}

// Unsorted: append; crash: the pair is durable before the count covers it.
bool Node::InsertUnsorted(Key key, const Value& v) {
  const size_t n = *Count();
  WritePair(n, key, v);
  Flush(&Keys()[n], sizeof(Key));
  Flush(&Values()[n], sizeof(Value));
  Fence();
  PutWord<uint64_t>(Count(), n + 1);
  Flush(Count(), 8);
  Fence();
  return true;
}

// After WritePair(i) is durable: the bit (the commit), the count hint, the slot array.
// Crash: the bit is one 8-byte store; count and slots are rebuilt from the bitmap.
void Node::Publish(size_t i) {
  SetBit(i, true);
  if (l_->org == Org::kUnsortedBitmap && i >= *Count()) {
    PutWord<uint64_t>(Count(), i + 1);
    Flush(Count(), 8);
  }
  Fence();
  if (l_->org != Org::kIndirection) return;
  const size_t n = SlotCount();
  const size_t p = SlotLowerBound(Keys()[i]);
  Put(&Slots()[p + 1], &Slots()[p], n - p);
  PutWord<uint8_t>(&Slots()[p], static_cast<uint8_t>(i));
  PutWord<uint8_t>(&Aux()[0], static_cast<uint8_t>(n + 1));
  Flush(Aux(), n + 2);
  Fence();
}

bool Node::InsertBitmapped(Key key, const Value& v) {
  int i = -1;
  if (l_->org == Org::kUnsortedBitmap && *Count() < l_->capacity) {
    i = static_cast<int>(*Count());  // append at the high-water mark
  } else {
    i = FreeBit();
  }
  if (i < 0) return false;
  WritePair(i, key, v);
  Flush(&Keys()[i], sizeof(Key));
  Flush(&Values()[i], sizeof(Value));
  if (l_->org == Org::kHashing) Flush(&Aux()[i], 1);
  Fence();
  Publish(i);
  return true;
}

bool Node::Insert(Key key, const Value& v) {
  if (Full()) return false;
  assert(Find(key) < 0);
  switch (l_->org) {
    case Org::kSorted: return InsertSorted(key, v);
    case Org::kUnsorted: return InsertUnsorted(key, v);
    default: return InsertBitmapped(key, v);
  }
}

// ---- erase -----------------------------------------------------------------------------

// Sorted: shift the tail left over the gap, then the count (not failure-atomic, node.h).
void Node::EraseSorted(size_t i) {
  const size_t n = *Count();
  Put(&Keys()[i], &Keys()[i + 1], (n - i - 1) * sizeof(Key));
  Put(&Values()[i], &Values()[i + 1], (n - i - 1) * sizeof(Value));
  Flush(&Keys()[i], (n - i - 1) * sizeof(Key));
  Flush(&Values()[i], (n - i - 1) * sizeof(Value));
  Fence();
  PutWord<uint64_t>(Count(), n - 1);
  Flush(Count(), 8);
  Fence();
}

// Unsorted: the last pair into the gap, then the count. Crash: a duplicate of the last pair
// until the count shrinks; recovery keeps the first.
void Node::EraseUnsorted(size_t i) {
  const size_t n = *Count();
  if (i != n - 1) {
    WritePair(i, Keys()[n - 1], Values()[n - 1]);
    Flush(&Keys()[i], sizeof(Key));
    Flush(&Values()[i], sizeof(Value));
    Fence();
  }
  PutWord<uint64_t>(Count(), n - 1);
  Flush(Count(), 8);
  Fence();
}

// Bitmapped: clear the bit (the commit); indirection then closes the slot array's gap.
void Node::EraseBitmapped(size_t i) {
  size_t p = 0;
  if (l_->org == Org::kIndirection) p = SlotLowerBound(Keys()[i]);
  SetBit(i, false);
  Fence();
  if (l_->org != Org::kIndirection) return;
  const size_t n = SlotCount();
  Put(&Slots()[p], &Slots()[p + 1], n - p - 1);
  PutWord<uint8_t>(&Aux()[0], static_cast<uint8_t>(n - 1));
  Flush(Aux(), n + 1);
  Fence();
}

void Node::EraseAt(int i) {
  switch (l_->org) {
    case Org::kSorted: EraseSorted(i); break;
    case Org::kUnsorted: EraseUnsorted(i); break;
    default: EraseBitmapped(i); break;
  }
}

bool Node::Erase(Key key) {
  const int i = Find(key);
  if (i < 0) return false;
  EraseAt(i);
  return true;
}

// ---- iterate ---------------------------------------------------------------------------

void Node::Iterate(const std::function<void(Key, const Value&)>& fn, bool via_slots) const {
  if (via_slots && l_->org == Org::kIndirection) {
    for (size_t p = 0; p < SlotCount(); ++p) fn(Keys()[Slots()[p]], Values()[Slots()[p]]);
    return;
  }
  const size_t end = (!HasBitmap() || l_->org == Org::kUnsortedBitmap) ? *Count() : l_->capacity;
  for (size_t i = 0; i < end; ++i)
    if (!HasBitmap() || Live(i)) fn(Keys()[i], Values()[i]);
}

uint64_t Node::SumKeys(bool via_slots) const {
  uint64_t sum = 0;
  const Key* k = Keys();
  if (via_slots && l_->org == Org::kIndirection) {
    const uint8_t* s = Slots();
    for (size_t p = 0, n = SlotCount(); p < n; ++p) sum += k[s[p]];
  } else if (!HasBitmap()) {
    for (size_t i = 0, n = *Count(); i < n; ++i) sum += k[i];
  } else {
    const size_t end = l_->org == Org::kUnsortedBitmap ? *Count() : l_->capacity;
    for (size_t i = 0; i < end; ++i)
      if (Live(i)) sum += k[i];
  }
  return sum;
}

std::vector<std::pair<Key, Value>> Node::Sorted() const {
  std::vector<std::pair<Key, Value>> out;
  Iterate([&](Key k, const Value& v) { out.emplace_back(k, v); });
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.first < b.first; });
  return out;
}

}  // namespace pmindex::primitives
