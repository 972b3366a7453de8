#include <mutex>

#include "bench/baselines/baselines.h"

namespace pmindex::bench {

void RegisterBaselines() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (IndexRegistration r : {StdMapRegistration(), LmdbRegistration(), RocksDbRegistration()}) {
      // false only if a program registered its own index under a baseline's name first;
      // that one wins, as for any name.
      (void)RegisterIndex(std::move(r));
    }
  });
}

}  // namespace pmindex::bench
