#!/usr/bin/env bash
# Builds and runs the comparison of pmindex with the authors' code (doc/performance.md, "The
# comparison driver"; tools/peers/README.md).
#
#   scripts/peers.sh build PEERS                pmindex (Release, installed into OUT/prefix)
#                                               and every driver into OUT/bin
#   scripts/peers.sh build-peers PEERS          the peers' drivers only
#   scripts/peers.sh run PEERS [N] [ROUNDS]     interleaved rounds into OUT/results/
#                                               (PEERS_ORDER=shuffled: load and insert in a
#                                               shuffled id order, tools/peers/driver.h)
#   scripts/peers.sh summary PEERS [RESULTS]    medians and per-round ratios of a results dir
#
# PEERS holds the peers' sources, unmodified: ICPP-RNTree, FAST_FAIR, WORT, RECIPE, libart, CCEH,
# Level-Hashing, dash, epoch-reclaimer (Dash's epoch manager) and ROART.
# PEERS_ONLY=NAME,... builds (build-peers) and runs only those peers' builders and pairs, by
# builder name: icpp wort fastfair part pclht libart cceh levelhash dash roart (run also matches the
# pairs' lines, e.g. PEERS_ONLY=dash runs dash_eadr and pmindex_drv dash eadr).
# OUT is $PEERS_OUT, default PEERS/out. The peers are copied into OUT/src and changed there by the sed
# scripts in tools/peers/sed/; PEERS itself is never written.
#
# Every timed run holds the lock file $PEERS_LOCK (default /tmp/pmindex-bench.lock, through
# flock), a peer and its pmindex counterpart under one hold, so that benchmarks of others
# sharing the machine never overlap them.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
TOOLS=$REPO/tools/peers
LOCK=${PEERS_LOCK:-/tmp/pmindex-bench.lock}
CXX=${CXX:-g++}
CC=${CC:-gcc}
OPT="-O2 -g -DNDEBUG"

usage() {
  sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}

die() {
  echo "peers.sh: $*" >&2
  exit 1
}

# Whether builder or pair $1 is selected by PEERS_ONLY (all when it is empty).
selected() {
  [[ -z ${PEERS_ONLY:-} ]] && return 0
  local name
  for name in ${PEERS_ONLY//,/ }; do
    [[ $1 == *"$name"* ]] && return 0
  done
  return 1
}

need_peers() {
  local d
  for d in ICPP-RNTree FAST_FAIR WORT RECIPE libart CCEH Level-Hashing dash epoch-reclaimer ROART; do
    [[ -n ${PEERS_ONLY:-} || -d $PEERS/$d ]] || die "$PEERS/$d is missing (fetch the peers' sources first)"
  done
  # P-ART uses TBB's containers; ICPP-RNTree includes <numa.h>; Dash uses PMDK's libpmemobj.
  [[ -f /usr/include/tbb/concurrent_vector.h ]] || die "TBB headers missing (apt-get install libtbb-dev)"
  [[ -f /usr/include/numa.h ]] || die "numa.h missing (apt-get install libnuma-dev)"
  [[ -f /usr/include/libpmemobj.h ]] || die "libpmemobj.h missing (apt-get install libpmemobj-dev)"
}

# Copies one peer's tree to OUT/src afresh.
fresh_copy() {
  rm -rf "$OUT/src/$1"
  mkdir -p "$OUT/src"
  cp -r "$PEERS/$1" "$OUT/src/$1"
}

# Applies a sed script to files in place and fails if a pattern the change must remove is
# still there (a peer revision the script no longer matches).
apply_sed() {
  local script=$1 forbidden=$2
  shift 2
  local f
  for f in "$@"; do
    sed -i -f "$TOOLS/sed/$script" "$f"
    if grep -nE "$forbidden" "$f"; then
      die "$script left the lines above in $f"
    fi
  done
}

build_pmindex() {
  cmake -S "$REPO" -B "$OUT/pmbuild" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DPMINDEX_BUILD_TESTS=OFF -DPMINDEX_BUILD_TOOLS=OFF -DPMINDEX_MUTANTS=OFF \
    -DPMINDEX_INSTALL=ON -DCMAKE_INSTALL_PREFIX="$OUT/prefix" >/dev/null
  ninja -C "$OUT/pmbuild"
  cmake --install "$OUT/pmbuild" >/dev/null
}

# The objects every driver links: the workbench's generator.
build_common() {
  $CXX -std=c++20 $OPT -I"$REPO" -I"$REPO/src" -c "$REPO/bench/generators.cc" -o "$OUT/obj/generators.o"
}

build_pmindex_driver() {
  local libdir=$OUT/prefix/lib
  [[ -d $libdir ]] || libdir=$OUT/prefix/lib64
  $CXX -std=c++20 $OPT -I"$REPO" -I"$REPO/src" -I"$OUT/prefix/include" "$TOOLS/pmindex_drv.cc" \
    "$OUT/obj/generators.o" -o "$OUT/bin/pmindex_drv" -L"$libdir" -lpmindex -lpmem2 -pthread
}

build_icpp() {
  fresh_copy ICPP-RNTree
  local src=$OUT/src/ICPP-RNTree
  apply_sed icpp-util.sed 'asm_clwb\(ptr\)|PM_FENCE\(\);|"mfence"|"sfence"' "$src/include/util.h"
  apply_sed icpp-nvm.sed '/mnt/dax|8ll \* 1024 \* 1024|MAP_SHARED, fd' \
    "$src/include/nvm_mgr.h" "$src/src/nvm_mgr.cpp"
  local mode flags
  for mode in adr eadr; do
    flags=""
    [[ $mode == eadr ]] && flags="-DPEERS_EADR"
    # The stubs directory comes first: its tbb/spin_rw_mutex.h replaces TBB's.
    $CXX -std=c++20 $OPT $flags -DUSE_NVM_MALLOC -DCLEAR_NVM_POOL -DNO_CONCURRENT -w \
      -include "$TOOLS/peer_persist.h" -I"$TOOLS/stubs" -I"$src/include" -I"$REPO" -I"$REPO/src" \
      "$TOOLS/icpp_drv.cc" "$src/src/util.cpp" "$src/src/threadinfo.cpp" \
      "$src/src/nvm_mgr.cpp" "$OUT/obj/generators.o" -o "$OUT/bin/icpp_$mode" -pthread
  done
}

build_wort() {
  fresh_copy WORT
  local src=$OUT/src/WORT/src
  apply_sed wort.sed 'clflush|"mfence"|read_tsc\(\) <|static_cast' \
    "$src/wort/wort.c" "$src/woart/woart.c"
  local tree mode flags def
  for tree in wort woart; do
    def=""
    [[ $tree == woart ]] && def="-DPEERS_WOART"
    for mode in adr eadr; do
      flags=""
      [[ $mode == eadr ]] && flags="-DPEERS_EADR"
      $CC -std=gnu99 $OPT $flags -w -include "$TOOLS/peer_persist.h" -c "$src/$tree/$tree.c" \
        -o "$OUT/obj/${tree}_$mode.o"
      $CXX -std=c++20 $OPT $flags $def -I"$src/$tree" -I"$REPO" -I"$REPO/src" "$TOOLS/wort_drv.cc" \
        "$OUT/obj/${tree}_$mode.o" "$OUT/obj/generators.o" -o "$OUT/bin/${tree}_$mode"
    done
  done
}

build_fastfair() {
  fresh_copy FAST_FAIR
  local src=$OUT/src/FAST_FAIR/single/src
  apply_sed fastfair.sed 'clflush %0|"mfence"|read_tsc\(\) <' "$src/btree.h"
  local mode flags
  for mode in adr eadr; do
    flags=""
    [[ $mode == eadr ]] && flags="-DPEERS_EADR"
    $CXX -std=c++20 $OPT $flags -w -include "$TOOLS/peer_persist.h" -I"$src" -I"$REPO" -I"$REPO/src" \
      "$TOOLS/fastfair_drv.cc" "$OUT/obj/generators.o" -o "$OUT/bin/fastfair_$mode" -pthread
  done
}

build_part() {
  fresh_copy RECIPE
  local src=$OUT/src/RECIPE/P-ART
  apply_sed part.sed 'xsaveopt|"sfence"|read_tsc\(\) <' "$src/N.cpp"
  local mode flags
  for mode in adr eadr; do
    flags=""
    [[ $mode == eadr ]] && flags="-DPEERS_EADR"
    # -DCLWB selects the clwb branch of N::clflush, which the sed script routes to
    # PEERS_FLUSH_LINE; glibc malloc, not jemalloc.
    $CXX -std=c++20 $OPT $flags -DCLWB -mcx16 -faligned-new=64 -w \
      -include "$TOOLS/peer_persist.h" -I"$src" -I"$REPO" -I"$REPO/src" "$TOOLS/part_drv.cc" \
      "$src/Tree.cpp" "$OUT/obj/generators.o" -o "$OUT/bin/part_$mode" -ltbb -latomic -pthread
  done
}

build_cceh() {
  fresh_copy CCEH
  local src=$OUT/src/CCEH
  apply_sed cceh.sed 'clflush %0|"mfence"|ReadTSC\(\) <' "$src/util/persist.h"
  local mode flags
  for mode in adr eadr; do
    flags=""
    [[ $mode == eadr ]] && flags="-DPEERS_EADR"
    # Their CCEH_MSB.cpp is compiled inside the driver (one unit: util/persist.h defines
    # globals); -DINPLACE selects the in-place split, as their Makefile's CCEH_MSB.o.
    $CXX -std=c++20 $OPT $flags -DINPLACE -w -include "$TOOLS/peer_persist.h" -I"$src" -I"$REPO" \
      -I"$REPO/src" "$TOOLS/cceh_drv.cc" "$OUT/obj/generators.o" -o "$OUT/bin/cceh_$mode" -pthread
  done
}

build_pclht() {
  [[ -d $OUT/src/RECIPE ]] || fresh_copy RECIPE
  local src=$OUT/src/RECIPE/P-CLHT
  apply_sed pclht.sed 'xsaveopt|"sfence"|read_tsc\(\) <' "$src/src/clht_lb_res.c"
  local mode flags
  for mode in adr eadr; do
    flags=""
    [[ $mode == eadr ]] && flags="-DPEERS_EADR"
    # -DCLWB selects the clwb branch of clflush, which the sed script routes to
    # PEERS_FLUSH_LINE.
    $CC -std=gnu11 $OPT $flags -DCLWB -DADD_PADDING -w -include "$TOOLS/peer_persist.h" \
      -I"$src/include" -I"$src/external/include" -c "$src/src/clht_lb_res.c" \
      -o "$OUT/obj/clht_lb_res_$mode.o"
    $CC -std=gnu11 $OPT -DADD_PADDING -w -I"$src/include" -I"$src/external/include" \
      -c "$src/src/clht_gc.c" -o "$OUT/obj/clht_gc_$mode.o"
    $CC -std=gnu11 $OPT -w -I"$src/external/include" -c "$src/external/ssmem/src/ssmem.c" \
      -o "$OUT/obj/ssmem_$mode.o"
    $CXX -std=c++20 $OPT $flags -DADD_PADDING -w -I"$src/include" -I"$src/external/include" \
      -I"$REPO" -I"$REPO/src" "$TOOLS/pclht_drv.cc" "$OUT/obj/clht_lb_res_$mode.o" \
      "$OUT/obj/clht_gc_$mode.o" "$OUT/obj/ssmem_$mode.o" "$OUT/obj/generators.o" \
      -o "$OUT/bin/pclht_$mode" -lm -pthread
  done
}

build_levelhash() {
  fresh_copy Level-Hashing
  local src=$OUT/src/Level-Hashing/persistent_level_hashing
  apply_sed levelhash.sed 'strlen\(key\)|strcmp|clflush %0|"mfence"|quartz' \
    "$src/level_hashing.h" "$src/log.h" "$src/pflush.h" "$src/level_hashing.c"
  local mode flags
  for mode in adr eadr; do
    flags=""
    [[ $mode == eadr ]] && flags="-DPEERS_EADR"
    # pflush.c is not compiled: the driver defines pflush, pmalloc and pfree.
    $CC -std=gnu11 $OPT $flags -w -include "$TOOLS/peer_persist.h" -c "$src/level_hashing.c" \
      -o "$OUT/obj/level_hashing_$mode.o"
    $CC -std=gnu11 $OPT $flags -w -include "$TOOLS/peer_persist.h" -c "$src/log.c" \
      -o "$OUT/obj/level_log_$mode.o"
    $CC -std=gnu11 $OPT -w -c "$src/hash.c" -o "$OUT/obj/level_hash_fn.o"
    $CXX -std=c++20 $OPT $flags -I"$src" -I"$REPO" -I"$REPO/src" "$TOOLS/levelhash_drv.cc" \
      "$OUT/obj/level_hashing_$mode.o" "$OUT/obj/level_log_$mode.o" "$OUT/obj/level_hash_fn.o" \
      "$OUT/obj/generators.o" -o "$OUT/bin/levelhash_$mode" -lm
  done
}

build_dash() {
  fresh_copy dash
  local src=$OUT/src/dash
  apply_sed dash.sed 'pmemobj_persist|_addr\(' "$src/src/allocator.h" "$src/src/ex_finger.h"
  local mode flags
  for mode in adr eadr; do
    flags=""
    [[ $mode == eadr ]] && flags="-DPEERS_EADR"
    # One unit with the driver (their headers define globals); -DPMEM as their CMake's
    # USE_PMEM; -mavx for the epoch manager's garbage list (a 32-byte non-temporal store;
    # their CMake builds with -march=native); the stubs directory gives its glog includes.
    $CXX -std=c++20 $OPT $flags -DPMEM -mavx -w -include "$TOOLS/peer_persist.h" -I"$TOOLS/stubs" \
      -I"$PEERS/epoch-reclaimer" -I"$src" -I"$REPO" -I"$REPO/src" "$TOOLS/dash_drv.cc" \
      "$OUT/obj/generators.o" -o "$OUT/bin/dash_$mode" -lpmemobj -lpmem -pthread
  done
}

build_roart() {
  fresh_copy ROART
  local src=$OUT/src/ROART
  apply_sed roart.sed 'xsaveopt|"mfence"|"sfence"|NVM_LATENCY|/mnt/pmem0|auto k = GetKey\(\);|return a\[i\] < b\[i\];' \
    "$src/nvm_mgr/util.h" "$src/benchmark/config.h" "$src/ART/N.cpp"
  # Their CMake's definitions (CMakeLists.txt), their -std=c++14 for their files; -mavx2 as
  # their -march=native here. This CPU may lack clwb: the adr build then flushes with
  # clflushopt, as pmindex's adr mode does (peer_persist.h). roart_count counts the flushed
  # lines and the fences (peer_persist.h, -DPEERS_COUNT) and maps a file valgrind can take
  # (sed/roart-count.sed), for callgrind; built last, after that change.
  local defs="-DCLWB -DVARIABLE_LENGTH -DUSE_PMDK -DACMA -DFF_GC -DRECLAIM_MEMORY -DKEY_INLINE"
  defs+=" -DINSTANT_RESTART -DLEAF_ARRAY -DFIND_FIRST -DTRANSACTIONAL"
  local inc="-I$src/ART -I$src/nvm_mgr -I$src/benchmark"
  local mode flags f objs
  for mode in adr eadr count; do
    flags=""
    [[ $mode == eadr ]] && flags="-DPEERS_EADR"
    if [[ $mode == count ]]; then
      flags="-DPEERS_COUNT"
      apply_sed roart-count.sed '1024LL \* 1024 \* PGSIZE|0x50000000' "$src/nvm_mgr/nvm_mgr.h"
    fi
    [[ $mode == adr ]] && ! grep -qw clwb /proc/cpuinfo && flags="-DPEERS_CLFLUSHOPT"
    objs=()
    for f in "$src"/ART/*.cpp "$src"/nvm_mgr/*.cpp; do
      objs+=("$OUT/obj/roart_${mode}_$(basename "$f" .cpp).o")
      $CXX -std=c++14 $OPT $flags $defs -mavx -mavx2 -w -include "$TOOLS/peer_persist.h" $inc \
        -c "$f" -o "${objs[-1]}"
    done
    $CXX -std=c++20 $OPT $flags $defs -mavx -mavx2 -w -include "$TOOLS/peer_persist.h" $inc \
      -I"$REPO" -I"$REPO/src" "$TOOLS/roart_drv.cc" "${objs[@]}" "$OUT/obj/generators.o" \
      -o "$OUT/bin/roart_$mode" -ltbb -lpmemobj -latomic -pthread
  done
}

build_libart() {
  fresh_copy libart
  local src=$OUT/src/libart/src
  $CC -std=c99 -D_GNU_SOURCE $OPT -w -c "$src/art.c" -o "$OUT/obj/libart.o"
  $CXX -std=c++20 $OPT -I"$src" -I"$REPO" -I"$REPO/src" "$TOOLS/libart_drv.cc" "$OUT/obj/libart.o" \
    "$OUT/obj/generators.o" -o "$OUT/bin/libart"
}

cmd_build_peers() {
  need_peers
  mkdir -p "$OUT/bin" "$OUT/obj"
  build_common
  local peer
  for peer in icpp wort fastfair part pclht libart cceh levelhash dash roart; do
    if selected "$peer"; then "build_$peer"; fi
  done
}

cmd_build() {
  need_peers
  mkdir -p "$OUT/bin" "$OUT/obj"
  build_pmindex
  cmd_build_peers
  build_pmindex_driver
  ls "$OUT/bin"
}

# Pairs of one round: peer command | pmindex counterpart (binaries in OUT/bin, N appended).
pairs() {
  local m
  for m in adr eadr; do
    echo "icpp_$m rntree|pmindex_drv rntree $m"
    echo "icpp_$m rntree-ds|pmindex_drv rntree-ds $m"
    echo "icpp_$m fptree|pmindex_drv fptree $m"
    echo "icpp_$m nvtree|pmindex_drv nvtree $m"
    echo "icpp_$m wbtree|pmindex_drv wbtree $m"
    echo "icpp_$m wbtree8|pmindex_drv wbtree-so $m"
    echo "fastfair_$m|pmindex_drv fastfair $m"
    echo "wort_$m|pmindex_drv wort $m"
    echo "woart_$m|pmindex_drv woart $m"
    echo "part_$m|pmindex_drv part $m"
    echo "cceh_$m|pmindex_drv cceh $m"
    echo "pclht_$m|pmindex_drv pclht $m"
    echo "levelhash_$m|pmindex_drv levelhash $m"
    echo "dash_$m|pmindex_drv dash $m"
    echo "roart_$m|pmindex_drv roart $m"
  done
  echo "libart|pmindex_drv art volatile"
}

cmd_run() {
  local n=${1:-1000000} rounds=${2:-3}
  [[ -x $OUT/bin/pmindex_drv ]] || die "no drivers in $OUT/bin: run '$0 build $PEERS' first"
  local results=$OUT/results/$(date -u +%Y%m%dT%H%M%SZ)-n$n
  [[ ${PEERS_ORDER:-id} == id ]] || results+=-$PEERS_ORDER
  mkdir -p "$results"
  echo "results: $results"
  local round line peer ours
  for ((round = 1; round <= rounds; round++)); do
    while IFS='|' read -r peer ours; do
      selected "$peer" || continue
      # shellcheck disable=SC2016
      flock "$LOCK" bash -c '
        cd "$1"
        echo "# $(date -u +%H:%M:%S) loadavg $(cut -d" " -f1-3 /proc/loadavg)"
        ./$2 $4 || echo "# failed: $2 $4"
        rm -f /dev/shm/pmindex-peers-icpp.data /dev/shm/pmindex-peers-roart-part.data
        if [[ -n $3 ]]; then ./$3 $4 || echo "# failed: $3 $4"; fi
      ' _ "$OUT/bin" "$peer" "$ours" "$n" 2>>"$results/stderr.txt" |
        grep -E '^(#|[^ ]+ [a-z]+ n=)' | tee -a "$results/round-$round.txt"
    done < <(pairs)
  done
  python3 "$TOOLS/summarize.py" "$results"
}

[[ $# -ge 2 ]] || usage
COMMAND=$1
PEERS=$(cd "$2" && pwd)
shift 2
OUT=${PEERS_OUT:-$PEERS/out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
case $COMMAND in
  build) cmd_build ;;
  build-peers) cmd_build_peers ;;
  run) cmd_run "$@" ;;
  summary)
    python3 "$TOOLS/summarize.py" "${1:-$(ls -d "$OUT"/results/* | tail -1)}"
    ;;
  *) usage ;;
esac
