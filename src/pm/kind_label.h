// How src/pm names an index kind in its messages. The substrate knows kinds only as numbers
// (pmindex/pool.h, IndexKind); the registry (src/core), which knows the names, installs a
// namer at its first use, so a message can say "pool holds index kind 14 ('<its name>')"
// with no index list here.
#ifndef PMINDEX_PM_KIND_LABEL_H_
#define PMINDEX_PM_KIND_LABEL_H_

#include <cstdint>
#include <string>

namespace pmindex::pm {

// Returns the name of a kind, or "" if it knows none.
using KindNamer = std::string (*)(uint32_t kind);
// Installs the namer (thread-safe; the last one wins).
void SetKindNamer(KindNamer namer);
// "14 ('<name>')", or "14" when no namer is installed or it knows no name.
std::string KindLabel(uint32_t kind);

}  // namespace pmindex::pm

#endif  // PMINDEX_PM_KIND_LABEL_H_
