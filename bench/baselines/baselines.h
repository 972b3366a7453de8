// The workbench's pool-less baselines: std::map, LMDB and RocksDB, each an Index by name
// ("stdmap", "lmdb", "rocksdb") once RegisterBaselines has run.
#ifndef PMINDEX_BENCH_BASELINES_BASELINES_H_
#define PMINDEX_BENCH_BASELINES_BASELINES_H_

#include "pmindex/index.h"

namespace pmindex::bench {

IndexRegistration StdMapRegistration();
IndexRegistration LmdbRegistration();
IndexRegistration RocksDbRegistration();

// Adds the baselines to the index registry. Idempotent and thread-safe; called by RunBench
// and the pmindex program.
void RegisterBaselines();

}  // namespace pmindex::bench

#endif  // PMINDEX_BENCH_BASELINES_BASELINES_H_
