// FunctionRef: a non-owning reference to a callable, for callbacks on hot paths (scans, the
// allocator's rebuild) where std::function's allocation and indirection would show.
//
// The referenced callable must outlive the FunctionRef (pass it as a parameter, never store it).
#ifndef PMINDEX_FUNCTION_REF_H_
#define PMINDEX_FUNCTION_REF_H_

#include <type_traits>
#include <utility>

namespace pmindex {

template <typename Fn>
class FunctionRef;
template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(F&& f)  // NOLINT: implicit by design
      : obj_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* o, Args... a) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<Args>(a)...);
        }) {}
  R operator()(Args... a) const { return call_(obj_, std::forward<Args>(a)...); }

 private:
  void* obj_;
  R (*call_)(void*, Args...);
};

}  // namespace pmindex

#endif  // PMINDEX_FUNCTION_REF_H_
