// Index::reverse_scan's default: pairs in descending key order from forward scans alone.
//
// Keys are read as binary fractions 0.b0b1b2... (byte order is numeric order of these, up to
// trailing zero bytes, which the shortest form of a bound absorbs: every key whose fraction
// is >= lo is >= lo with its trailing zeros cut, and every other key is smaller). Below the
// upper bound `hi` the walk takes windows [lo, previous lo) that grow in key space: the
// first is 2^-(8 * |hi|) wide, an empty one grows 256 times, one with c pairs of the r still
// wanted grows about 2r/c times (at least 2, at most 256). Each window is one forward scan
// from lo, stopped at its upper end, and its pairs are passed on from the top. So a call
// costs about one scan per byte of the key plus a few, and the pairs of its last window,
// which a sparse region above a dense one can make many more than wanted (the buffer keeps
// only the last `wanted`). Integer-key indexes get 8-byte bounds (zeros appended), byte-key
// indexes the shortest form.
#include <algorithm>
#include <bit>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "pmindex/index.h"

namespace pmindex {
namespace {

// The largest 8-byte key <= start, for an integer-key index; false if there is none.
bool IntUpperBound(std::string_view start, std::string* hi) {
  if (start.size() >= 8) {
    *hi = std::string(start.substr(0, 8));  // the 8-byte prefix is <= any longer start
    return true;
  }
  char padded[8] = {};
  std::memcpy(padded, start.data(), start.size());
  uint64_t v = IntKey::Decode(std::string_view(padded, 8));
  // padded > start (it is longer with the same prefix): the key below it is the bound.
  if (v == 0) return false;
  *hi = std::string(IntKey(v - 1).view());
  return true;
}

// floor(hi) - 2^-bits, hi read as a fraction and cut to `bits` bits (which only lowers the
// result), in ceil(bits/8) bytes; "" (zero) where it would be negative.
std::string WindowLow(std::string_view hi, size_t bits) {
  if (bits == 0) return std::string();
  const size_t bytes = (bits + 7) / 8;
  std::string lo(hi.substr(0, std::min(hi.size(), bytes)));
  lo.resize(bytes, '\0');
  const unsigned unit = 1u << (8 * bytes - bits);
  lo[bytes - 1] = static_cast<char>(static_cast<unsigned char>(lo[bytes - 1]) & ~(unit - 1));
  unsigned borrow = unit;
  for (size_t i = bytes; i-- > 0;) {
    const unsigned byte = static_cast<unsigned char>(lo[i]);
    if (byte >= borrow) {
      lo[i] = static_cast<char>(byte - borrow);
      return lo;
    }
    lo[i] = static_cast<char>(byte + 256 - borrow);
    borrow = 1;
  }
  return std::string();
}

bool IsZero(std::string_view s) { return s.find_first_not_of('\0') == std::string_view::npos; }

// The walk of one reverse_scan call.
class ReverseWalk {
 public:
  ReverseWalk(Index* index, size_t wanted, ScanCallback fn)
      : index_(index), int_keys_(!index->traits().byte_keys), wanted_(wanted), fn_(fn) {}

  // Walks down from `hi` (inclusive); `open`: the first window has no upper end (an
  // unbounded call, hi 8 bytes of 0xff). Returns the pairs passed on.
  size_t run(const std::string& hi, bool open) {
    size_t bits = 8 * std::max<size_t>(hi.size(), 1);
    std::string upper = hi;  // the current window's upper end
    bool inclusive = true;   // the first window includes hi; later ones end before upper
    for (;;) {
      std::string lo = bound(WindowLow(hi, bits));
      const bool last = IsZero(lo);  // the window reaches the smallest key
      const size_t found = window(lo, upper, inclusive, open);
      if (done_ || last) break;
      bits = next_bits(bits, found);
      upper = std::move(lo);
      inclusive = false;
      open = false;
    }
    return passed_;
  }

 private:
  // A window bound as the index takes it: 8 bytes for integer keys, else the shortest form.
  std::string bound(std::string lo) const {
    if (int_keys_) {
      lo.resize(8, '\0');
    } else {
      while (!lo.empty() && lo.back() == '\0') lo.pop_back();
    }
    return lo;
  }

  // The next window's width: 256 times an empty one's, about 2 * wanted / found times one
  // that held `found` pairs (2 to 256 times).
  size_t next_bits(size_t bits, size_t found) const {
    size_t shift = 8;
    if (found > 0) {
      const size_t ratio = (wanted_ - passed_) / found;  // pairs still wanted per pair found
      shift = std::clamp<size_t>(std::bit_width(ratio) + 1, 1, 8);
    }
    return bits > shift ? bits - shift : 0;
  }

  // Scans [lo, upper) (or [lo, upper] if inclusive; [lo, ...) if open) and passes its pairs
  // on from the top; returns how many the window held.
  size_t window(const std::string& lo, const std::string& upper, bool inclusive, bool open) {
    const size_t want = wanted_ - passed_;
    pairs_.clear();
    size_t held = 0;
    index_->scan(lo, SIZE_MAX, [&](std::string_view key, std::string_view value) {
      if (!open) {
        const int c = key.compare(upper);
        if (c > 0 || (c == 0 && !inclusive)) return false;
      }
      ++held;
      pairs_.emplace_back(key, value);
      if (pairs_.size() >= keep_limit(want)) {  // keep only the last `want`
        pairs_.erase(pairs_.begin(), pairs_.end() - static_cast<ptrdiff_t>(want));
      }
      return true;
    });
    for (size_t i = pairs_.size(); i-- > 0 && !done_;) {
      ++passed_;
      if (!fn_(pairs_[i].first, pairs_[i].second) || passed_ == wanted_) done_ = true;
    }
    return held;
  }

  static size_t keep_limit(size_t want) {
    return want < SIZE_MAX / 4 ? 2 * want + 64 : SIZE_MAX;
  }

  Index* const index_;
  const bool int_keys_;
  const size_t wanted_;
  const ScanCallback fn_;
  size_t passed_ = 0;
  bool done_ = false;
  std::vector<std::pair<std::string, std::string>> pairs_;
};

}  // namespace

Status Index::reverse_scan(std::string_view start, size_t max_count, ScanCallback fn,
                           size_t* count) {
  if (count != nullptr) *count = 0;
  if (!traits().ordered) {
    return Status::NotSupported(traits().name + " is unordered: it has no key-order scan");
  }
  if (max_count == 0) return Status::OK();
  std::string hi(8, '\xff');  // an unbounded walk starts with an open window above this
  const bool unbounded = start.empty();
  if (!unbounded) {
    if (traits().byte_keys) {
      hi = std::string(start);
    } else if (!IntUpperBound(start, &hi)) {
      return Status::OK();  // no 8-byte key is <= start
    }
  }
  ReverseWalk walk(this, max_count, fn);
  const size_t n = walk.run(hi, unbounded);
  if (count != nullptr) *count = n;
  return Status::OK();
}

}  // namespace pmindex
