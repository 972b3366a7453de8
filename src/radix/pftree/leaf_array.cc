#include "radix/pftree/leaf_array.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "pm/alloc.h"
#include "pm/mutant.h"
#include "pm/persist.h"
#include "radix/pftree/inner_node.h"

namespace pmindex::pftree {

namespace detail {

bool EntryKeyBytesEqual(LeafHeader* l, uint32_t pos, std::string_view key) {
  return std::memcmp(LeafData(l) + pos + 2, key.data(), key.size()) == 0;
}

}  // namespace detail

namespace {
LargestLeaf g_largest;
}  // namespace

const LargestLeaf& Largest() { return g_largest; }

void SetLargestLeafForTesting(LargestLeaf limits) {
  limits.entries = std::clamp<uint32_t>(limits.entries, 16, kMaxEntries);
  limits.block = std::clamp<size_t>(limits.block, kMinLeafBlock, kMaxLeafBlock);
  g_largest = limits;
}

LeafAux* NewAux(uint32_t capacity, uint32_t entries) {
  // Room for typical entries (16 bytes and up) and at least twice the entries it starts
  // with, so a rebuilt leaf is not full of slots at once; tiny entries rebuild earlier.
  // (A leaf of an older pool may hold more than this build writes, up to kMaxEntries.)
  const uint32_t bound = entries > Largest().entries ? kMaxEntries : Largest().entries;
  uint32_t max = std::min<uint32_t>(bound, std::max(capacity / 16, 2 * entries + 8));
  size_t head = (sizeof(LeafAux) + 15) & ~size_t{15};
  size_t fp_bytes = (2 * (size_t{max} + 16) + 15) & ~size_t{15};
  size_t bytes = head + fp_bytes + 2 * size_t{max};
  char* mem = static_cast<char*>(::operator new(bytes, std::align_val_t{16}));
  auto* aux = new (mem) LeafAux();
  aux->max_entries = max;
  aux->bytes = static_cast<uint32_t>(bytes);
  aux->fp = reinterpret_cast<uint16_t*>(mem + head);
  std::memset(aux->fp, 0, fp_bytes);
  aux->pos = reinterpret_cast<uint16_t*>(mem + head + fp_bytes);
  return aux;
}

void FreeOrder(LeafOrder* order) {
  if (order != nullptr) ::operator delete(static_cast<void*>(order));
}

void FreeAux(LeafAux* aux) {
  if (aux == nullptr) return;
  FreeOrder(aux->order.load(std::memory_order_relaxed));
  aux->~LeafAux();
  ::operator delete(static_cast<void*>(aux), std::align_val_t{16});
}

bool AppendEntry(pm::PersistContext& pc, LeafHeader* l, LeafAux* aux, std::string_view key, std::string_view value,
                 uint16_t fp) {
  uint32_t n = aux->count.load(std::memory_order_relaxed);
  size_t size = EntrySize(key.size(), value.size());
  uint32_t start = aux->used;
  const uint32_t pad = AlignPad(start, key.size(), value.size());
  if (n >= aux->max_entries || start + pad + size > l->capacity) return false;
  uint32_t pos = start + pad;
  char* entry = LeafData(l) + pos;
  auto* header = reinterpret_cast<uint16_t*>(entry);
  const uint16_t h = MakeEntryHeader(key.size(), value.size());
  // With padding, the entry's header position lies past the data area's end, where the block
  // may hold old bytes (of a reused block, or of an append a crash cut short): it is zeroed
  // and made durable with the body before the padding is stored, so that no crash (nor a
  // kill between the two stores) leaves padding followed by old bytes.
  if (pad != 0 && !pm::mutant("pftree.pad_over_old_header"))
    std::atomic_ref<uint16_t>(*header).store(0, std::memory_order_relaxed);
  const bool early_header = pm::mutant("pftree.header_before_kv");
  if (early_header) {  // mutant: commits before the key and value are durable
    std::atomic_ref<uint16_t>(*header).store(h, std::memory_order_release);
    pc.persist(header, 2);
  }
  std::memcpy(entry + 2, key.data(), key.size());
  std::memcpy(entry + 2 + key.size(), value.data(), value.size());
  size_t body = size - 2;
  if (pos + size + 2 <= l->capacity) {
    // Terminator for the next position: the block may hold old bytes there.
    std::atomic_ref<uint16_t>(*reinterpret_cast<uint16_t*>(entry + size))
        .store(0, std::memory_order_relaxed);
    body += 2;
  }
  if (!pm::mutant("pftree.skip_entry_persist")) {
    if (pad != 0) {
      pc.persist(entry, 2 + body);  // zero header, body, terminator
    } else {
      pc.persist(entry + 2, body);
    }
  }
  if (!early_header) {
    // Padding (key length 0, not valid), then the header: the commit is the fence that makes
    // both durable. A crash that keeps only the padding leaves it before the durable zero
    // header (the end of the data area); one that keeps only the header leaves it after the
    // old end (a zero at `start`), unreachable.
    if (pad != 0)
      std::atomic_ref<uint16_t>(*reinterpret_cast<uint16_t*>(LeafData(l) + start))
          .store(static_cast<uint16_t>(pad), std::memory_order_release);
    std::atomic_ref<uint16_t>(*header).store(h, std::memory_order_release);
    pc.persist(LeafData(l) + start, pad + 2);  // commit
  }
  aux->pos[n] = static_cast<uint16_t>(pos);
  aux->fp[n] = fp;
  aux->used = static_cast<uint32_t>(pos + size);
  aux->live++;
  aux->count.store(n + 1, std::memory_order_release);
  return true;
}

bool UpdateInPlace(pm::PersistContext& pc, LeafHeader* l, LeafAux* aux, uint32_t idx,
                   std::string_view value) {
  if (value.size() != 8) return false;
  const uint32_t pos = aux->pos[idx];
  uint64_t* w = InPlaceValue(l, pos, LoadEntryHeader(l, pos));
  if (w == nullptr) return false;
  uint64_t v;
  std::memcpy(&v, value.data(), 8);
  std::atomic_ref<uint64_t>(*w).store(v, std::memory_order_release);
  if (!pm::mutant("pftree.skip_inplace_update_persist")) pc.persist(w, 8);  // commit
  return true;
}

void InvalidateEntry(pm::PersistContext& pc, LeafHeader* l, LeafAux* aux, uint32_t idx) {
  auto* header = reinterpret_cast<uint16_t*>(LeafData(l) + aux->pos[idx]);
  std::atomic_ref<uint16_t> h(*header);
  h.store(h.load(std::memory_order_relaxed) & ~kEntryValid, std::memory_order_release);
  pc.persist(header, 2);
  aux->live--;
}

size_t LeafBlockSizeFor(size_t bytes) {
  // Room for 3/8 more, rounded up to a size class (they step by a quarter to a third above
  // 2 KiB): a rebuilt or split leaf array is 55-73% full. Uniform keys fill the leaf arrays
  // in step, so PM per key swings between fresh and full ones with the tree's size; half
  // as much again swung 1.53x over 10k-4M keys, 3/8 swings 1.28x for 3% to 15% more lines
  // flushed per insert (doc/pftree.md, "Space over a sweep of sizes").
  size_t want =
      std::min(std::max(bytes + bytes * 3 / 8, kMinLeafBlock - kLeafHeaderSize), Largest().data());
  want = std::max(want, bytes);
  for (uint32_t cls : pm::kSizeClasses) {
    if (cls < kMinLeafBlock) continue;
    if (cls - kLeafHeaderSize >= want) return cls;
  }
  return Largest().block;
}

void WriteLeaf(pm::PersistContext& pc, LeafHeader* leaf, size_t block_size, uint16_t depth, uint32_t gen,
               const std::vector<LeafItem>& items, size_t b, size_t e, BlockPersist how) {
  std::memset(leaf, 0, kLeafHeaderSize);
  leaf->type = static_cast<uint8_t>(NodeType::kLeafArray);
  leaf->depth = depth;
  leaf->capacity = static_cast<uint32_t>(block_size - kLeafHeaderSize);
  auto* aux = NewAux(leaf->capacity, static_cast<uint32_t>(e - b));
  char* data = LeafData(leaf);
  uint32_t pos = 0, n = 0;
  for (size_t i = b; i < e; ++i) {
    const LeafItem& it = items[i];
    if (const uint32_t pad = AlignPad(pos, it.key.size(), it.value.size()); pad != 0) {
      // Padding (key length 0, not valid): part of the block, persisted with it.
      const auto p = static_cast<uint16_t>(pad);
      if (!pm::mutant("pftree.rebuild_pad_unwritten")) std::memcpy(data + pos, &p, 2);
      pos += pad;
    }
    std::memcpy(data + pos + 2, it.key.data(), it.key.size());
    std::memcpy(data + pos + 2 + it.key.size(), it.value.data(), it.value.size());
    uint16_t h = MakeEntryHeader(it.key.size(), it.value.size());
    std::memcpy(data + pos, &h, 2);
    aux->pos[n] = static_cast<uint16_t>(pos);
    aux->fp[n] = it.fp;
    ++n;
    pos += static_cast<uint32_t>(EntrySize(it.key.size(), it.value.size()));
  }
  size_t end = pos;
  if (pos + 2 <= leaf->capacity) {
    std::memset(data + pos, 0, 2);
    end += 2;
  }
  aux->used = pos;
  aux->live = n;
  aux->sorted_n = n;
  aux->count.store(n, std::memory_order_relaxed);
  leaf->aux = reinterpret_cast<uint64_t>(aux);
  leaf->aux_gen = gen;
  if (how == BlockPersist::kPersist) {
    pc.persist(leaf, kLeafHeaderSize + end);
  } else if (how == BlockPersist::kFlushOnly) {
    pc.flush(leaf, kLeafHeaderSize + end);  // the caller fences before publishing
  }
}

LeafAux* ScanLeaf(LeafHeader* l, pm::PersistContext* repair, std::string* error) {
  char* data = LeafData(l);
  uint32_t entries = 0;
  for (uint32_t p = 0; p + 2 <= l->capacity && entries <= kMaxEntries; ++entries) {
    uint16_t h;
    std::memcpy(&h, data + p, 2);
    if (h == 0) break;
    p += static_cast<uint32_t>(RecordSize(h));
  }
  auto* aux = NewAux(l->capacity, std::min(entries, kMaxEntries));
  uint32_t pos = 0, n = 0;
  bool sorted = true;
  std::string_view prev;
  while (pos + 2 <= l->capacity) {
    uint16_t h;
    std::memcpy(&h, data + pos, 2);
    if (h == 0) break;
    if (IsPadding(h)) {
      const size_t pad = EntryValueLen(h);
      if ((pad != 2 && pad != 4 && pad != 6) || pos + pad > l->capacity) {
        *error = "malformed padding at data offset " + std::to_string(pos);
        FreeAux(aux);
        return nullptr;
      }
      pos += static_cast<uint32_t>(pad);
      continue;
    }
    size_t klen = EntryKeyLen(h), vlen = EntryValueLen(h);
    size_t size = EntrySize(klen, vlen);
    if (klen == 0 || pos + size > l->capacity || n >= aux->max_entries) {
      *error = "malformed entry at data offset " + std::to_string(pos);
      FreeAux(aux);
      return nullptr;
    }
    std::string_view key(data + pos + 2, klen);
    if (sorted && n > 0 && !(prev < key)) sorted = false;
    if (sorted) aux->sorted_n = n + 1;
    prev = key;
    const uint16_t fp = Fingerprint(key);
    if (h & kEntryValid) {
      // A key above every earlier one (all of a rebuilt leaf's sorted run) has no earlier
      // version: the probe is needed only past the leaf's first out-of-order key.
      int old = sorted ? -1 : FindEntry(l, aux, n, key, fp);
      if (old >= 0) {
        // Interrupted update: the later version wins.
        if (repair) {
          InvalidateEntry(*repair, l, aux, static_cast<uint32_t>(old));
        } else {
          aux->live--;
        }
      }
      aux->live++;
    }
    aux->pos[n] = static_cast<uint16_t>(pos);
    aux->fp[n] = fp;
    ++n;
    aux->count.store(n, std::memory_order_relaxed);
    pos += static_cast<uint32_t>(size);
  }
  aux->used = pos;
  return aux;
}

void SortedEntries(LeafHeader* l, const LeafAux* aux, uint32_t n, std::vector<uint32_t>* out) {
  out->clear();
  auto key_of = [&](uint32_t i) {
    uint32_t pos = aux->pos[i];
    return EntryKey(l, pos, LoadEntryHeader(l, pos));
  };
  uint32_t sorted = std::min(aux->sorted_n, n);
  for (uint32_t i = 0; i < n; ++i)
    if (LoadEntryHeader(l, aux->pos[i]) & kEntryValid) out->push_back(i);
  auto mid = std::lower_bound(out->begin(), out->end(), sorted);
  auto less = [&](uint32_t a, uint32_t b) { return key_of(a) < key_of(b); };
  std::sort(mid, out->end(), less);
  std::inplace_merge(out->begin(), mid, out->end(), less);
}

namespace {

std::string_view KeyAtPos(LeafHeader* l, uint32_t pos) {
  return EntryKey(l, pos, LoadEntryHeader(l, pos));
}

// The key's first 8 bytes (zero-padded) as a big-endian word.
uint64_t KeyWord(std::string_view key) {
  uint64_t w = 0;
  std::memcpy(&w, key.data(), std::min<size_t>(key.size(), 8));
  return __builtin_bswap64(w);
}

// Frees orders that scans replaced once no reader can hold them (they are DRAM only).
class OrderReclaimer final : public pm::Reclaimer {
 public:
  void Reclaim(uint64_t, void* order) override { FreeOrder(static_cast<LeafOrder*>(order)); }
};
pm::Reclaimer* OrderReclaimerInstance() {
  static pm::Reclaimer* r = new OrderReclaimer();  // stateless; never destroyed
  return r;
}

}  // namespace

const uint16_t* KeyOrder(LeafHeader* l, LeafAux* aux, uint32_t* n, pm::Epoch& epoch) {
  auto less = [&](uint16_t a, uint16_t b) { return KeyLess(KeyAtPos(l, a), KeyAtPos(l, b)); };
  for (;;) {
    LeafOrder* cached = aux->order.load(std::memory_order_acquire);
    // Entries [0, sorted_n) are in key order: their offsets are the order of the sorted run.
    const uint16_t* base = aux->pos;
    uint32_t m = std::min(aux->sorted_n, *n);
    if (cached != nullptr) {
      base = cached->pos();
      m = cached->covers;
      // Published after its builder acquired count >= covers: those entries are visible.
      if (m >= *n) {
        *n = m;
        return base;
      }
    } else if (m == *n) {
      return base;
    }
    // Merge the sorted appended entries [m, n) into the base order. The appended ones are
    // sorted by their first 8 bytes as one big-endian word (zero-padded), loaded once per
    // entry; only equal words compare the whole keys. A word order that differs is the byte
    // order: the first differing byte is real in both keys, or the shorter key ends there
    // and is a prefix of the longer.
    const uint32_t total = *n, k = total - m;
    struct Keyed {
      uint64_t word;
      uint16_t pos;
    };
    Keyed tail[kMaxEntries];
    for (uint32_t i = 0; i < k; ++i) {
      const uint16_t pos = aux->pos[m + i];
      tail[i] = {KeyWord(KeyAtPos(l, pos)), pos};
    }
    std::sort(tail, tail + k, [&](const Keyed& a, const Keyed& b) {
      return a.word != b.word ? a.word < b.word : less(a.pos, b.pos);
    });
    size_t bytes = sizeof(LeafOrder) + 2 * size_t{total};
    auto* built = new (::operator new(bytes)) LeafOrder{total, static_cast<uint32_t>(bytes)};
    uint16_t* out = built->pos();
    const uint16_t* b = base;
    const uint16_t* const bend = base + m;
    if (size_t{k} * 8 < m) {  // a few appends: find each one's place by binary search
      for (uint32_t i = 0; i < k; ++i) {
        const uint16_t* p = std::upper_bound(b, bend, tail[i].pos, less);
        out = std::copy(b, p, out);
        b = p;
        *out++ = tail[i].pos;
      }
    } else {  // many: one linear merge, an appended entry after equal ones of the base
      uint32_t i = 0;
      while (b != bend && i < k) {
        const std::string_view bk = KeyAtPos(l, *b);
        const uint64_t bw = KeyWord(bk);
        // Every appended entry below the base entry goes first.
        while (i < k && (tail[i].word != bw ? tail[i].word < bw
                                            : KeyLess(KeyAtPos(l, tail[i].pos), bk))) {
          *out++ = tail[i++].pos;
        }
        *out++ = *b++;
      }
      for (; i < k; ++i) *out++ = tail[i].pos;
    }
    std::copy(b, bend, out);
    if (aux->order.compare_exchange_strong(cached, built, std::memory_order_acq_rel,
                                           std::memory_order_relaxed)) {
      if (cached != nullptr) epoch.Retire(OrderReclaimerInstance(), 0, cached);
      return built->pos();
    }
    FreeOrder(built);  // another scan published first: use (or extend) its order
  }
}

void DrainOrders(pm::Epoch& epoch) { epoch.Drain(OrderReclaimerInstance()); }

uint32_t LowerBound(LeafHeader* l, const uint16_t* order, uint32_t n, std::string_view key,
                    bool after) {
  const uint16_t* p =
      after ? std::upper_bound(order, order + n, key,
                               [&](std::string_view k, uint16_t pos) { return KeyLess(k, KeyAtPos(l, pos)); })
            : std::lower_bound(order, order + n, key,
                               [&](uint16_t pos, std::string_view k) { return KeyLess(KeyAtPos(l, pos), k); });
  return static_cast<uint32_t>(p - order);
}

std::string CheckOrder(LeafHeader* l, LeafAux* aux) {
  LeafOrder* order = aux->order.load(std::memory_order_acquire);
  if (order == nullptr) return {};
  const uint32_t n = aux->count.load(std::memory_order_acquire);
  if (order->covers > n || order->covers <= std::min(aux->sorted_n, n))
    return "cached key order covers " + std::to_string(order->covers) + " of " +
           std::to_string(n) + " entries";
  const uint16_t* pos = order->pos();
  std::vector<uint16_t> listed(pos, pos + order->covers), entries(aux->pos, aux->pos + order->covers);
  std::sort(listed.begin(), listed.end());
  std::sort(entries.begin(), entries.end());
  if (listed != entries) return "cached key order is no permutation of the entries";
  for (uint32_t i = 1; i < order->covers; ++i) {
    if (KeyAtPos(l, pos[i]) < KeyAtPos(l, pos[i - 1])) return "cached key order is not sorted";
  }
  return {};
}

}  // namespace pmindex::pftree
