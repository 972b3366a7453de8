#!/usr/bin/env bash
# Builds and runs the test suite: Release, then the package stage (the library consumed by
# examples/ through find_package, add_subdirectory, pkg-config and as a shared library), then
# ASan+UBSan, then TSan for the concurrent tests (label "tsan"). Test builds compile the
# mutants in and treat warnings as errors. Long crash campaigns and benchmarks are not run
# here (label "long": scripts/longtest.sh). Every test sets its own timeout (ctest's --timeout
# would not apply), four times longer in the sanitizer builds (cmake/PmindexTest.cmake).
#
# Usage: scripts/test.sh [stage...]   stages: release package asan tsan (default: all, in order)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=$(nproc)
start=$SECONDS
stages="${*:-release package asan tsan}"

build() {  # build <dir> <extra cmake args...>
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPMINDEX_MUTANTS=ON \
    -DPMINDEX_WERROR=ON -DPMINDEX_LINE_TABLES_ONLY=ON "$@" >/dev/null
}

# The library as a user gets it: Release, no tests, no tools, no mutants.
build_lib() {  # build_lib <dir> <extra cmake args...>
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPMINDEX_BUILD_TESTS=OFF \
    -DPMINDEX_BUILD_TOOLS=OFF -DPMINDEX_WERROR=ON -DPMINDEX_LINE_TABLES_ONLY=ON "$@" >/dev/null
  ninja -C "$dir" -j"$jobs"
}

# Configures, builds and runs examples/ against the pmindex installed in prefix $1.
run_installed_example() {  # run_installed_example <prefix> <build dir>
  cmake -S examples -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$1" \
    >/dev/null
  ninja -C "$2" -j"$jobs" >/dev/null
  "$2/pmindex_example"
  "$2/pmindex_kv_example"
}

package_stage() {
  local tmp
  tmp=$(mktemp -d)
  echo "-- find_package: install the Release build, build examples/ against it"
  cmake --install build --prefix "$tmp/static" >/dev/null
  test -f "$tmp/static/include/pmindex/index.h"
  test -f "$tmp/static/share/doc/pmindex/LICENSE"
  run_installed_example "$tmp/static" "$tmp/ex-static"

  echo "-- pkg-config: compile examples/example.cc with pmindex.pc"
  local pcdir
  pcdir=$(dirname "$(find "$tmp/static" -name pmindex.pc)")
  # shellcheck disable=SC2046  # word splitting of pkg-config output is intended
  c++ -std=c++20 -O1 examples/example.cc -o "$tmp/ex-pc" \
    $(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs --static pmindex)
  "$tmp/ex-pc"

  echo "-- add_subdirectory: a wrapper project with pmindex and examples/ as subdirectories"
  mkdir -p "$tmp/wrapper"
  cat >"$tmp/wrapper/CMakeLists.txt" <<EOF_WRAPPER
cmake_minimum_required(VERSION 3.25)
project(pmindex_wrapper LANGUAGES C CXX)
add_subdirectory("$PWD" pmindex)
add_subdirectory("$PWD/examples" example)
EOF_WRAPPER
  cmake -S "$tmp/wrapper" -B "$tmp/wrapper-build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  # Output captured before grep: with pipefail, `grep -q` closing the pipe at its first match
  # can fail the writer with SIGPIPE, and with it the whole test.
  local targets deps
  targets=$(ninja -C "$tmp/wrapper-build" -t targets all)
  if grep -Eq '^(pmindex_tool|pmindex_bench|pmindex_testutil):' <<<"$targets"; then
    echo "add_subdirectory built tools or tests: they must be off by default there" >&2
    return 1
  fi
  ninja -C "$tmp/wrapper-build" -j"$jobs" pmindex_example pmindex_kv_example
  "$tmp/wrapper-build/example/pmindex_example"
  "$tmp/wrapper-build/example/pmindex_kv_example"

  echo "-- BUILD_SHARED_LIBS=ON: libpmindex.so, installed, examples/ linked against it"
  build_lib build-shared -DBUILD_SHARED_LIBS=ON
  cmake --install build-shared --prefix "$tmp/shared" >/dev/null
  run_installed_example "$tmp/shared" "$tmp/ex-shared"
  deps=$(ldd "$tmp/ex-shared/pmindex_example")
  if ! grep -q 'libpmindex\.so' <<<"$deps"; then
    echo "the shared example does not link libpmindex.so" >&2
    return 1
  fi

  echo "-- PMINDEX_WITH_RADIX=OFF PMINDEX_WITH_HASH=OFF: the B+trees alone, and only they listed"
  build_lib build-btree-only -DPMINDEX_WITH_RADIX=OFF -DPMINDEX_WITH_HASH=OFF
  cmake --install build-btree-only --prefix "$tmp/btree" >/dev/null
  run_installed_example "$tmp/btree" "$tmp/ex-btree"
  printf '%s\n' '#include <cstdio>' '#include "pmindex/index.h"' \
    'int main() { for (const auto& n : pmindex::RegisteredIndexNames()) std::puts(n.c_str()); }' \
    >"$tmp/names.cc"
  pcdir=$(dirname "$(find "$tmp/btree" -name pmindex.pc)")
  # shellcheck disable=SC2046  # word splitting of pkg-config output is intended
  c++ -std=c++20 -O1 "$tmp/names.cc" -o "$tmp/names" \
    $(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs --static pmindex)
  names=$("$tmp/names")
  if ! grep -qx rntree <<<"$names" || grep -qx wort <<<"$names"; then
    echo "a B+tree-only build lists: $names" >&2
    return 1
  fi
  rm -rf "$tmp"
}

want() { [[ " $stages " == *" $1 "* ]]; }

if want release; then
  echo "== Release build"
  build build
  ninja -C build -j"$jobs"
  echo "== Release tests"
  (cd build && ctest -LE long -j"$jobs" --output-on-failure)
fi

if want package; then
  echo "== Package stage"
  if ! want release; then build build && ninja -C build -j"$jobs" pmindex; fi
  package_stage
fi

if want asan; then
  echo "== ASan+UBSan build"
  build build-asan -DPMINDEX_SANITIZE=address
  ninja -C build-asan -j"$jobs"
  echo "== ASan+UBSan tests"
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest -LE long -j"$jobs" --output-on-failure)
fi

if want tsan; then
  echo "== TSan build (concurrent tests)"
  build build-tsan -DPMINDEX_SANITIZE=thread
  tsan_tests=$(cd build-tsan && ctest -N -L tsan | sed -n 's/^ *Test *#[0-9]*: *//p')
  if [ -n "$tsan_tests" ]; then
    # A fence TSan ignores would make the stage prove less than it seems: fail on its warning
    # (CMake also turns GCC's -Wtsan into an error; this catches compilers without the flag).
    ninja -C build-tsan -j"$jobs" $tsan_tests 2>&1 | tee build-tsan/ninja.log
    if grep -E "atomic_thread_fence.*(not supported|sanitize=thread)|-Wtsan" build-tsan/ninja.log; then
      echo "TSan build: atomic_thread_fence is not modelled by TSan (see src/pm/seqlock.h)" >&2
      exit 1
    fi
    echo "== TSan tests"
    (cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
      ctest -L tsan -j"$jobs" --output-on-failure)
  fi
fi
echo "== test stages passed ($stages) in $((SECONDS - start)) s"
