// Iterator: a cursor over an index's pairs, as LevelDB's and RocksDB's. Made by
// Index::NewIterator (include/pmindex/index.h).
//
//   std::unique_ptr<Iterator> it = index->NewIterator(IteratorOptions());
//   for (it->SeekToFirst(); it->Valid(); it->Next()) use(it->key(), it->value());
//   if (!it->status().ok()) ...   // the index was closed, or the walk met damage
//
// Ordered indexes: keys in ascending byte order (8-byte integer keys in IntKey form, so
// numeric order), forward and backward, within the options' bounds. Unordered (hash)
// indexes: SeekToFirst and Next walk every pair once in an order of their own; Seek,
// SeekForPrev, SeekToLast and Prev leave the iterator invalid with NotSupported.
//
// What an iterator sees under concurrent writers: it copies a batch of pairs at a time
// (IteratorOptions::batch_size) with one scan of the index, so each batch has the index's
// scan promise (doc/kv.md, per index), and a key written or removed between two batches may
// be seen or not; keys are always strictly ordered and within the bounds. An unordered
// index's walk is one for_each copied whole at the first SeekToFirst.
//
// Thread safety: one iterator is used by one thread at a time; several iterators of one
// index may run in several threads, beside writers, where the index allows concurrent
// scans and writes. key() and value() stay valid until the iterator next moves.
#ifndef PMINDEX_ITERATOR_H_
#define PMINDEX_ITERATOR_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "pmindex/status.h"

namespace pmindex {

struct IteratorOptions {
  // ---- behaviour ----

  // Smallest key the iterator visits (inclusive). Default: empty, no bound.
  std::string lower_bound;
  // Every key the iterator visits is smaller than this (exclusive). Default: empty, no bound.
  std::string upper_bound;

  // ---- performance ----

  // Pairs copied per scan of the index. Larger batches cost fewer descents and a larger
  // copy; a writer-locked index is held for one batch at a time. Default 64.
  size_t batch_size = 64;
};

class Iterator {
 public:
  virtual ~Iterator() = default;

  // True while the iterator is at a pair; false past either end or after an error.
  virtual bool Valid() const = 0;
  // Positions at the first pair (the smallest key >= lower_bound).
  virtual void SeekToFirst() = 0;
  // Positions at the last pair (the largest key < upper_bound).
  virtual void SeekToLast() = 0;
  // Positions at the smallest key >= target (and >= lower_bound).
  virtual void Seek(std::string_view target) = 0;
  // Positions at the largest key <= target (and < upper_bound).
  virtual void SeekForPrev(std::string_view target) = 0;
  // Moves to the next larger key. Requires Valid().
  virtual void Next() = 0;
  // Moves to the next smaller key. Requires Valid().
  virtual void Prev() = 0;
  // The current pair. Requires Valid(); valid until the iterator moves.
  virtual std::string_view key() const = 0;
  virtual std::string_view value() const = 0;
  // OK, or why the iterator stopped: InvalidArgument once the index is closed,
  // NotSupported for an order-needing call on an unordered index, Corruption from the walk.
  virtual Status status() const = 0;
};

}  // namespace pmindex

#endif  // PMINDEX_ITERATOR_H_
