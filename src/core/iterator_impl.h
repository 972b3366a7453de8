// The one iterator of every index (include/pmindex/iterator.h): a cursor over batches of
// pairs copied out of the index's scan (forward) and reverse_scan (backward).
#ifndef PMINDEX_CORE_ITERATOR_IMPL_H_
#define PMINDEX_CORE_ITERATOR_IMPL_H_

#include <atomic>
#include <memory>

#include "pmindex/index.h"
#include "pmindex/iterator.h"

namespace pmindex {

// An iterator over `index` (not owned: it must outlive the iterator). `open`, when not null,
// is the index's handle (CheckedIndex): once it reads false, every move leaves the iterator
// invalid with InvalidArgument and the index is not touched.
std::unique_ptr<Iterator> NewScanIterator(Index* index,
                                          std::shared_ptr<const std::atomic<bool>> open,
                                          const IteratorOptions& options);

}  // namespace pmindex

#endif  // PMINDEX_CORE_ITERATOR_IMPL_H_
