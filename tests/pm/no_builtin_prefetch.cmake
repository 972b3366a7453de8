# Fails if a source file outside pm/prefetch.h calls __builtin_prefetch: GCC may delete a
# pass that only prefetches, or drop prefetches on inlined paths, so the library prefetches
# through pm::PrefetchLine (a volatile asm) only.
file(GLOB_RECURSE sources "${SRC}/*.h" "${SRC}/*.cc")
set(offenders "")
foreach(f IN LISTS sources)
  if(f MATCHES "/pm/prefetch\\.h$")
    continue()
  endif()
  file(STRINGS "${f}" hits REGEX "__builtin_prefetch")
  if(hits)
    list(APPEND offenders "${f}")
  endif()
endforeach()
if(offenders)
  message(FATAL_ERROR "__builtin_prefetch outside pm/prefetch.h (use pm::PrefetchLine): ${offenders}")
endif()
