// Index parameters: the text a pool records at creation (Options::index_params, or the
// registration's defaults), read back on every attach. The form is words separated by spaces
// or commas; a word `key=value` sets key, any other word (an index's name, say) is ignored:
//   "rntree log_persist=parallel split=native"   "leaf_bytes=1024,capacity=63"
// Every index reads its parameters through these functions, so one spelling works for all.
#ifndef PMINDEX_PM_PARAMS_H_
#define PMINDEX_PM_PARAMS_H_

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "pmindex/status.h"

namespace pmindex::pm {

// The value of `key` in params (the text after "key=" up to the next space or comma), or
// nullopt if no word sets key. The last word that sets key wins. A NUL ends params (the
// pool's header field is NUL-padded).
inline std::optional<std::string_view> ParamValue(std::string_view params, std::string_view key) {
  params = params.substr(0, strnlen(params.data(), params.size()));
  std::optional<std::string_view> found;
  size_t i = 0;
  while (i < params.size()) {
    const size_t end = std::min(params.find_first_of(" ,", i), params.size());
    const std::string_view word = params.substr(i, end - i);
    if (word.size() > key.size() && word.substr(0, key.size()) == key &&
        word[key.size()] == '=') {
      found = word.substr(key.size() + 1);
    }
    i = end + 1;
  }
  return found;
}

// The unsigned number `key` is set to, `fallback` if params do not set it; InvalidArgument
// (naming the index, the key and the text) if its value is not a number.
inline Result<uint64_t> ParamUint(std::string_view index, std::string_view params,
                                  std::string_view key, uint64_t fallback) {
  const std::optional<std::string_view> v = ParamValue(params, key);
  if (!v) return fallback;
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc() || end != v->data() + v->size()) {
    return Status::InvalidArgument(std::string(index) + ": " + std::string(key) +
                                   " must be a number (index parameters '" +
                                   std::string(params.substr(0, strnlen(params.data(),
                                                                        params.size()))) +
                                   "')");
  }
  return n;
}

// Which of `choices` `key` is set to, `fallback` if params do not set it; InvalidArgument
// listing the choices if it is set to anything else.
inline Result<std::string_view> ParamChoice(std::string_view index, std::string_view params,
                                            std::string_view key,
                                            std::initializer_list<std::string_view> choices,
                                            std::string_view fallback) {
  const std::optional<std::string_view> v = ParamValue(params, key);
  if (!v) return fallback;
  std::string listed;
  for (std::string_view c : choices) {
    if (*v == c) return c;
    listed += listed.empty() ? "" : ", ";
    listed += c;
  }
  return Status::InvalidArgument(std::string(index) + ": " + std::string(key) + " must be one of " +
                                 listed + " (got '" + std::string(*v) + "')");
}

}  // namespace pmindex::pm

#endif  // PMINDEX_PM_PARAMS_H_
