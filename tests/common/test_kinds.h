// Pool index kinds of test-only structures, from the range pool.h reserves for tests
// (>= kFirstTestIndexKind). Like shipped kinds they are never reused or renumbered.
#ifndef PMINDEX_TESTS_COMMON_TEST_KINDS_H_
#define PMINDEX_TESTS_COMMON_TEST_KINDS_H_

#include "pmindex/pool.h"

namespace pmindex {

inline constexpr IndexKind kTestListKind = static_cast<IndexKind>(kFirstTestIndexKind + 1);
inline constexpr IndexKind kTestListBrokenKind = static_cast<IndexKind>(kFirstTestIndexKind + 2);
inline constexpr IndexKind kTestArrayMapKind = static_cast<IndexKind>(kFirstTestIndexKind + 3);
inline constexpr IndexKind kTestRegistryKind = static_cast<IndexKind>(kFirstTestIndexKind + 4);

}  // namespace pmindex

#endif  // PMINDEX_TESTS_COMMON_TEST_KINDS_H_
