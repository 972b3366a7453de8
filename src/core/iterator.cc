// ScanIterator: the iterator of every index (core/iterator_impl.h).
//
// It holds one batch of pairs, copied out of the index by one scan (forward) or
// reverse_scan (backward) into an arena, in the order it walks them. Moving past the end
// of the batch refills it from the last key: a forward refill scans from that key and drops
// it, a backward one reverse-scans from it and drops it, so a refill never repeats a key and
// keys stay strictly ordered even when writers change the index between batches. A batch
// that came back short, or stopped at a bound, is the last one in its direction.
//
// Invariants: pos_ <= entries_.size(); Valid() iff status_ is OK and pos_ < entries_.size();
// entries_ is ascending when forward_ and descending otherwise, and within the bounds.
#include <cassert>
#include <string>
#include <utility>
#include <vector>

#include "core/iterator_impl.h"

namespace pmindex {
namespace {

class ScanIterator final : public Iterator {
 public:
  ScanIterator(Index* index, std::shared_ptr<const std::atomic<bool>> open,
               const IteratorOptions& options)
      : index_(index),
        open_(std::move(open)),
        options_(options),
        ordered_(index->traits().ordered),
        byte_keys_(index->traits().byte_keys) {
    if (options_.batch_size == 0) options_.batch_size = 1;
  }

  bool Valid() const override { return status_.ok() && pos_ < entries_.size(); }
  std::string_view key() const override {
    assert(Valid() && "Iterator::key() requires Valid()");
    return view(entries_[pos_].key);
  }
  std::string_view value() const override {
    assert(Valid() && "Iterator::value() requires Valid()");
    return view(entries_[pos_].value);
  }
  Status status() const override { return status_; }

  void SeekToFirst() override {
    if (!start_move()) return;
    if (!ordered_) return fill_unordered();
    std::string start = options_.lower_bound;
    if (start.empty() && !byte_keys_) start = std::string(IntKey(0).view());
    fill_forward(start, false);
  }

  void SeekToLast() override {
    if (!start_move() || !supported("SeekToLast")) return;
    // reverse_scan from the exclusive upper bound drops the bound itself; no bound: "".
    fill_backward(options_.upper_bound, !options_.upper_bound.empty());
  }

  void Seek(std::string_view target) override {
    if (!start_move() || !supported("Seek")) return;
    const std::string_view lower = options_.lower_bound;
    fill_forward(std::string(target < lower ? lower : target), false);
  }

  void SeekForPrev(std::string_view target) override {
    if (!start_move() || !supported("SeekForPrev")) return;
    if (!options_.upper_bound.empty() && target >= std::string_view(options_.upper_bound)) {
      return fill_backward(options_.upper_bound, true);
    }
    if (target.empty()) return clear();  // no key is <= "" (keys are not empty)
    fill_backward(std::string(target), false);
  }

  void Next() override {
    if (!Valid() || !still_open()) return;
    if (forward_ && (pos_ + 1 < entries_.size() || exhausted_)) {
      ++pos_;  // within the batch, or past its end when it is the last
      return;
    }
    // The end of a forward batch, or a turn: scan on from the current key, without it.
    const std::string from(key());
    fill_forward(from, true);
  }

  void Prev() override {
    if (!Valid() || !still_open() || !supported("Prev")) return;
    if (!forward_ && (pos_ + 1 < entries_.size() || exhausted_)) {
      ++pos_;
      return;
    }
    const std::string from(key());
    fill_backward(from, true);
  }

 private:
  struct Span {
    size_t offset;
    size_t size;
  };
  struct Entry {
    Span key;
    Span value;
  };

  std::string_view view(Span s) const { return std::string_view(arena_).substr(s.offset, s.size); }

  void clear() {
    entries_.clear();
    arena_.clear();
    pos_ = 0;
    exhausted_ = true;
  }

  void append(std::string_view key, std::string_view value) {
    const size_t k = arena_.size();
    arena_.append(key);
    arena_.append(value);
    entries_.push_back({{k, key.size()}, {k + key.size(), value.size()}});
  }

  // Every Seek starts from OK, unless the index is closed.
  bool start_move() {
    status_ = Status::OK();
    return still_open();
  }

  bool still_open() {
    if (open_ == nullptr || open_->load(std::memory_order_relaxed)) return true;
    clear();
    status_ = Status::InvalidArgument("index is closed: its iterators are invalid");
    return false;
  }

  bool supported(const char* what) {
    if (ordered_) return true;
    clear();
    status_ = Status::NotSupported(index_->traits().name + " is unordered: " + what +
                                   " needs a key order (SeekToFirst and Next visit every pair)");
    return false;
  }

  bool below_upper(std::string_view key) const {
    return options_.upper_bound.empty() || key < std::string_view(options_.upper_bound);
  }
  bool above_lower(std::string_view key) const {
    return key >= std::string_view(options_.lower_bound);
  }

  // One forward batch from `start`, without `start` itself if skip_start.
  void fill_forward(const std::string& start, bool skip_start) {
    clear();
    forward_ = true;
    bool bound_hit = false;
    const size_t want = options_.batch_size;
    Status s = index_->scan_checked(
        start, want + 1, [&](std::string_view k, std::string_view v) {
          if (skip_start && k == start) return true;
          if (!below_upper(k)) {
            bound_hit = true;
            return false;
          }
          append(k, v);
          return entries_.size() < want;
        },
        nullptr);
    finish_fill(std::move(s), bound_hit, want);
  }

  // One backward batch from `start` ("" : from the largest key), without `start` if
  // skip_start.
  void fill_backward(const std::string& start, bool skip_start) {
    clear();
    forward_ = false;
    bool bound_hit = false;
    const size_t want = options_.batch_size;
    Status s = index_->reverse_scan(
        start, want + 1, [&](std::string_view k, std::string_view v) {
          if (skip_start && k == start) return true;
          if (!above_lower(k)) {
            bound_hit = true;
            return false;
          }
          if (!below_upper(k)) return true;  // at or above the upper bound: walk on down
          append(k, v);
          return entries_.size() < want;
        },
        nullptr);
    finish_fill(std::move(s), bound_hit, want);
  }

  // A batch that came back short or stopped at a bound is the last in its direction.
  void finish_fill(Status s, bool bound_hit, size_t want) {
    pos_ = 0;
    exhausted_ = bound_hit || entries_.size() < want;
    if (!s.ok()) {
      entries_.clear();
      status_ = std::move(s);
    }
  }

  // An unordered index: its whole for_each, copied once.
  void fill_unordered() {
    clear();
    forward_ = true;
    Status s = index_->for_each([&](std::string_view k, std::string_view v) {
      append(k, v);
      return true;
    });
    finish_fill(std::move(s), true, 0);
  }

  Index* const index_;
  const std::shared_ptr<const std::atomic<bool>> open_;
  IteratorOptions options_;
  const bool ordered_;
  const bool byte_keys_;
  Status status_;
  std::vector<Entry> entries_;
  std::string arena_;  // the batch's keys and values, back to back
  size_t pos_ = 0;
  bool forward_ = true;
  bool exhausted_ = true;  // no pairs beyond this batch in its direction
};

}  // namespace

std::unique_ptr<Iterator> NewScanIterator(Index* index,
                                          std::shared_ptr<const std::atomic<bool>> open,
                                          const IteratorOptions& options) {
  return std::make_unique<ScanIterator>(index, std::move(open), options);
}

}  // namespace pmindex
