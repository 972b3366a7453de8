// The structural primitives of the node organisations: split (move or copy), merge of two
// nodes, moving pairs between nodes (balance), and the invariant check.
#include <cassert>

#include "primitives/node.h"

namespace pmindex::primitives {

namespace {

// The median key: the keys >= it (the upper half, size - size/2 pairs) move.
Key MedianKey(const Node& n) {
  std::vector<Key> keys;
  n.Iterate([&](Key k, const Value&) { keys.push_back(k); });
  const size_t mid = keys.size() / 2;
  std::nth_element(keys.begin(), keys.begin() + mid, keys.end());
  return keys[mid];
}

}  // namespace

// Writes slot array `slots` (n entries) and its count, and flushes them.
void Node::SetSlots(const uint8_t* slots, size_t n) {
  Put(Slots(), slots, n);
  PutWord<uint8_t>(&Aux()[0], static_cast<uint8_t>(n));
  Flush(Aux(), n + 1);
}

// Unsorted split, src side: fills the holes the upper half left below size/2 with the lower
// pairs from the end, then shrinks the count. Crash: the moved pairs are durable before the
// count drops; until then the node holds duplicates of pairs in dst (the parent decides).
void Node::CompactAfterSplit(Key median) {
  const size_t n = *Count();
  size_t keep = 0;
  for (size_t i = 0; i < n; ++i) keep += Keys()[i] < median;
  size_t from = n;
  for (size_t i = 0; i < keep; ++i) {
    if (Keys()[i] < median) continue;
    do --from; while (Keys()[from] >= median);
    WritePair(i, Keys()[from], Values()[from]);
    Flush(&Keys()[i], sizeof(Key));
    Flush(&Values()[i], sizeof(Value));
  }
  Fence();
  PutWord<uint64_t>(Count(), keep);
  Flush(Count(), 8);
  Fence();
}

// Split by move: the upper half is written into dst (durable, then dst's commit), then the
// source gives it up (count, or its bits and slot array). Crash: dst is unreachable until the
// caller links it; the source's commit comes last.
void Node::SplitMove(Node& dst, Key median) {
  std::vector<uint8_t> lo_slots, hi_slots;
  size_t j = 0;
  const bool sorted_src = l_->org == Org::kSorted;
  for (size_t p = 0, n = sorted_src ? *Count() : l_->capacity; p < n; ++p) {
    const size_t i = p;
    if (!Live(i) || Keys()[i] < median) continue;
    dst.WritePair(j++, Keys()[i], Values()[i]);
  }
  dst.Flush(dst.Keys(), j * sizeof(Key));
  dst.Flush(dst.Values(), j * sizeof(Value));
  if (dst.l_->org == Org::kHashing) dst.Flush(dst.Aux(), j);
  dst.Fence();
  if (!HasBitmap()) {
    dst.PutWord<uint64_t>(dst.Count(), j);
    dst.Flush(dst.Count(), 8);
    dst.Fence();
    if (sorted_src) {
      PutWord<uint64_t>(Count(), *Count() - j);
      Flush(Count(), 8);
      Fence();
    } else {
      CompactAfterSplit(median);
    }
    return;
  }
  std::vector<uint64_t> words(l_->words, 0), keep(l_->words, 0);
  for (size_t i = 0; i < j; ++i) words[i / 64] |= uint64_t{1} << (i % 64);
  for (size_t i = 0; i < l_->capacity; ++i)
    if (Live(i) && Keys()[i] < median) keep[i / 64] |= uint64_t{1} << (i % 64);
  dst.Put(dst.Bitmap(), words.data(), 8 * l_->words);
  if (l_->org == Org::kUnsortedBitmap) dst.PutWord<uint64_t>(dst.Count(), j);
  if (l_->org == Org::kIndirection) {
    for (size_t i = 0; i < j; ++i) hi_slots.push_back(static_cast<uint8_t>(i));
    std::sort(hi_slots.begin(), hi_slots.end(),
              [&](uint8_t a, uint8_t b) { return dst.Keys()[a] < dst.Keys()[b]; });
    dst.SetSlots(hi_slots.data(), j);
  }
  dst.Flush(dst.b_, l_->header_bytes);
  dst.Fence();
  Put(Bitmap(), keep.data(), 8 * l_->words);
  Flush(Bitmap(), 8 * l_->words);
  if (l_->org == Org::kIndirection) {
    for (size_t p = 0; p < SlotCount(); ++p)
      if (Keys()[Slots()[p]] < median) lo_slots.push_back(Slots()[p]);
    SetSlots(lo_slots.data(), lo_slots.size());
  }
  Fence();
}

// Split by copy (bitmapped organisations): the whole node is copied into dst, dst keeps the
// upper half's bits and the source the lower half's. Crash: as SplitMove.
void Node::SplitCopy(Node& dst, Key median) {
  Put(dst.b_, b_, l_->node_bytes);
  std::vector<uint64_t> hi(l_->words, 0), lo(l_->words, 0);
  for (size_t i = 0; i < l_->capacity; ++i) {
    if (!Live(i)) continue;
    (Keys()[i] >= median ? hi : lo)[i / 64] |= uint64_t{1} << (i % 64);
  }
  cost_.bytes_modified -= l_->node_bytes;  // counted against dst below
  dst.cost_.bytes_modified += l_->node_bytes;
  dst.Put(dst.Bitmap(), hi.data(), 8 * l_->words);
  std::vector<uint8_t> hs, ls;
  if (l_->org == Org::kIndirection) {
    for (size_t p = 0; p < SlotCount(); ++p)
      (Keys()[Slots()[p]] >= median ? hs : ls).push_back(Slots()[p]);
    dst.SetSlots(hs.data(), hs.size());
  }
  dst.Flush(dst.b_, l_->node_bytes);
  dst.Fence();
  Put(Bitmap(), lo.data(), 8 * l_->words);
  Flush(Bitmap(), 8 * l_->words);
  if (l_->org == Org::kIndirection) SetSlots(ls.data(), ls.size());
  Fence();
}

void Node::Split(Node& dst, SplitMode mode) {
  const Key median = l_->org == Org::kSorted ? Keys()[*Count() / 2] : MedianKey(*this);
  if (mode == SplitMode::kCopy && HasBitmap()) {
    SplitCopy(dst, median);
  } else {
    SplitMove(dst, median);
  }
}

// Merge: src's pairs (all larger) are appended: at count, or each into a free bit of this
// node; data durable first, then this node's commit (count, or bitmap words, then slots).
void Node::MergeFrom(const Node& src) {
  if (!HasBitmap()) {
    const size_t n = *Count(), m = *src.Count();
    Put(&Keys()[n], src.Keys(), m * sizeof(Key));
    Put(&Values()[n], src.Values(), m * sizeof(Value));
    Flush(&Keys()[n], m * sizeof(Key));
    Flush(&Values()[n], m * sizeof(Value));
    Fence();
    PutWord<uint64_t>(Count(), n + m);
    Flush(Count(), 8);
    Fence();
    return;
  }
  std::vector<uint64_t> words(Bitmap(), Bitmap() + l_->words);
  std::vector<uint8_t> slots;
  if (l_->org == Org::kIndirection) slots.assign(Slots(), Slots() + SlotCount());
  size_t j = 0, lo = SIZE_MAX, hi = 0;  // the next free bit; the range written
  auto take = [&](size_t i) {
    while ((words[j / 64] >> (j % 64)) & 1) ++j;
    WritePair(j, src.Keys()[i], src.Values()[i]);
    words[j / 64] |= uint64_t{1} << (j % 64);
    slots.push_back(static_cast<uint8_t>(j));
    lo = std::min(lo, j);
    hi = j + 1;
  };
  if (src.l_->org == Org::kIndirection) {
    for (size_t p = 0; p < src.SlotCount(); ++p) take(src.Slots()[p]);
  } else {
    for (size_t i = 0; i < src.l_->capacity; ++i)
      if (src.Live(i)) take(i);
  }
  if (hi > lo) {  // one write-back of the range the pairs went to
    Flush(&Keys()[lo], (hi - lo) * sizeof(Key));
    Flush(&Values()[lo], (hi - lo) * sizeof(Value));
    if (l_->org == Org::kHashing) Flush(&Aux()[lo], hi - lo);
  }
  Fence();
  Put(Bitmap(), words.data(), 8 * l_->words);
  Flush(Bitmap(), 8 * l_->words);
  if (l_->org == Org::kUnsortedBitmap) {
    size_t hw = 0;
    for (size_t i = 0; i < l_->capacity; ++i) if (Live(i)) hw = i + 1;
    if (hw > *Count()) PutWord<uint64_t>(Count(), hw);
    Flush(Count(), 8);
  }
  Fence();
  if (l_->org == Org::kIndirection) {
    SetSlots(slots.data(), slots.size());
    Fence();
  }
}

// Balance: n times, the largest (or smallest) pair of this node is found, inserted into dst
// and erased here (each step is an insert and an erase with their own crash arguments).
void Node::MoveTo(Node& dst, size_t n, bool largest) {
  for (size_t step = 0; step < n; ++step) {
    int best = -1;
    if (l_->org == Org::kSorted) {
      best = largest ? static_cast<int>(*Count()) - 1 : 0;
    } else if (l_->org == Org::kIndirection) {
      best = Slots()[largest ? SlotCount() - 1 : 0];
    } else {
      const size_t end = HasBitmap() && l_->org != Org::kUnsortedBitmap ? l_->capacity : *Count();
      for (size_t i = 0; i < end; ++i) {
        if (!Live(i)) continue;
        if (best < 0 || (largest ? Keys()[i] > Keys()[best] : Keys()[i] < Keys()[best]))
          best = static_cast<int>(i);
      }
    }
    assert(best >= 0);
    dst.Insert(Keys()[best], Values()[best]);
    EraseAt(best);
  }
}

bool Node::Verify() const {
  const size_t n = Size();
  if (n > l_->capacity) return false;
  if (l_->org == Org::kSorted) {
    for (size_t i = 1; i < n; ++i)
      if (Keys()[i - 1] >= Keys()[i]) return false;
  }
  for (size_t i = 0; i < l_->capacity; ++i) {
    if (!HasBitmap() || !Live(i)) continue;
    if (l_->org == Org::kHashing && Aux()[i] != Hash(Keys()[i])) return false;
    if (l_->org == Org::kUnsortedBitmap && i >= *Count()) return false;
  }
  if (l_->org == Org::kIndirection) {
    std::vector<bool> seen(l_->capacity, false);
    for (size_t p = 0; p < n; ++p) {
      const uint8_t s = Slots()[p];
      if (s >= l_->capacity || seen[s] || !Live(s)) return false;
      seen[s] = true;
      if (p > 0 && Keys()[Slots()[p - 1]] >= Keys()[s]) return false;
    }
    size_t bits = 0;
    for (size_t w = 0; w < l_->words; ++w) bits += std::popcount(Bitmap()[w]);
    if (bits != n) return false;
  }
  auto pairs = Sorted();
  for (size_t i = 1; i < pairs.size(); ++i)
    if (pairs[i - 1].first == pairs[i].first) return false;
  return true;
}

}  // namespace pmindex::primitives
