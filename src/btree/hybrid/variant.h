// The variants of the hybrid B+trees: each paper's own protocol beside the tree's shared one,
// chosen per pool by its index parameters (pm/params.h; `--index-params` of bench and
// crashtest) and recorded in the pool, so a reopen runs the variant that wrote it.
//
//   key           values (default first)   layouts            what the non-default does
//   log_persist   locked | parallel        rntree, rntree-ds  log entries persisted outside
//                                                              the leaf lock, in parallel
//   readers       wait | retraverse        fptree             a reader meeting a locked leaf
//                                                              aborts and re-traverses
//   split         cow | native             rntree*, fptree    the paper's own split protocol
//                                                              (RNTree's logged split, FPTree's
//                                                              micro-log) instead of the
//                                                              shared copy-on-write one
//   writes        conditional | basic      nvtree             NV-Tree's basic variant
//   inner         dram | pm                every layout       inner nodes placed in the pool
//
// A key a layout does not support is refused with InvalidArgument, not ignored.
#ifndef PMINDEX_BTREE_HYBRID_VARIANT_H_
#define PMINDEX_BTREE_HYBRID_VARIANT_H_

#include <string>
#include <string_view>

#include "pm/params.h"
#include "pmindex/status.h"

namespace pmindex::btree {

struct HybridVariant {
  bool parallel_log_persist = false;  // log_persist=parallel
  bool retraverse_readers = false;    // readers=retraverse
  bool native_split = false;          // split=native
  bool basic_writes = false;          // writes=basic
  bool pm_inner = false;              // inner=pm
};

// Which layouts take each non-default value (by the layout's name).
struct HybridVariantSupport {
  bool parallel_log_persist = false;
  bool retraverse_readers = false;
  bool native_split = false;
  bool basic_writes = false;
  bool pm_inner = false;
};

namespace variant_detail {
inline Status Choose(std::string_view name, std::string_view params, std::string_view key,
                     std::string_view fallback, std::string_view other, bool supported,
                     bool* out) {
  Result<std::string_view> v = pm::ParamChoice(name, params, key, {fallback, other}, fallback);
  if (!v.ok()) return v.status();
  *out = *v == other;
  if (*out && !supported) {
    return Status::InvalidArgument(std::string(name) + ": " + std::string(key) + "=" +
                                   std::string(other) + " is not a variant of this index");
  }
  return Status::OK();
}
}  // namespace variant_detail

inline Result<HybridVariant> ParseHybridVariant(std::string_view name, std::string_view params,
                                                const HybridVariantSupport& can) {
  HybridVariant v;
  struct Key {
    std::string_view key, fallback, other;
    bool supported;
    bool* out;
  };
  const Key keys[] = {
      {"log_persist", "locked", "parallel", can.parallel_log_persist, &v.parallel_log_persist},
      {"readers", "wait", "retraverse", can.retraverse_readers, &v.retraverse_readers},
      {"split", "cow", "native", can.native_split, &v.native_split},
      {"writes", "conditional", "basic", can.basic_writes, &v.basic_writes},
      {"inner", "dram", "pm", can.pm_inner, &v.pm_inner},
  };
  for (const Key& k : keys) {
    if (Status s = variant_detail::Choose(name, params, k.key, k.fallback, k.other, k.supported,
                                          k.out);
        !s.ok())
      return s;
  }
  return v;
}

}  // namespace pmindex::btree

#endif  // PMINDEX_BTREE_HYBRID_VARIANT_H_
