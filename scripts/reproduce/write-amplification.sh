#!/usr/bin/env bash
# Reproduces the write-amplification study (Woo et al., IEEE Access 2021; ../shared/papers,
# doc/write-amplification.md) on every index of the study pmindex has: the paper's workloads
# (Load, A = 50% reads / 50% inserts, B = 95% / 5%, C = reads), uniform 8-byte keys, the
# paper's accounting (WPQ inserts, 64-byte media writes per insert, one write-combining buffer
# shared by all threads: --media-model shared), at 1 and 2 threads by default.
#
#   scripts/reproduce/write-amplification.sh [OUT_DIR] [--keys N] [--ops N] [--threads LIST]
#                                            [--opt-keys N] [--opt-unflushed-keys N]
#
# Defaults: OUT_DIR results/write-amplification, --keys 2000000 --ops 2000000 --threads 1,2
# (about 5 minutes on 2 cores; the paper loads 64M keys and runs 64M operations: give
# --keys 64000000 --ops 64000000 --threads 1,2,4,8,16,28 on a machine that has them).
# PMINDEX names the command that runs the CLI (default build/tools/pmindex, built if
# missing). Writes bench JSON and text per workload group, write-amplification.md (the
# tables beside the paper's Table 2) and wa-*.png. The study's P-Masstree, P-BwTree and P-HOT
# are not in pmindex yet: named empty rows. Then the paper's section IV optimizations that
# pmindex has as P-CLHT and FAST&FAIR variants (doc/write-amplification.md "Optimizations"),
# each base against variant on workload A (a-insert), 1 thread: flush coalescing, 256-byte
# buckets and 256-byte FAST&FAIR nodes at --opt-keys keys and operations (default 1000000);
# early eviction of the lock word (and it with coalescing) with --count-unflushed, which is
# slow, at --opt-unflushed-keys (default 20000) in a sparse table, and early eviction and all
# three at 10x that in a grown table.
# Their table goes into write-amplification.md beside the paper's Fig. 10 figures.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=results/write-amplification
if [[ $# -ge 1 && $1 != --* ]]; then out=$1; shift; fi
keys=2000000 ops=2000000 threads=1,2 opt_keys=1000000 opt_unflushed_keys=20000
while [[ $# -gt 0 ]]; do
  case $1 in
    --keys) keys=$2; shift 2 ;;
    --ops) ops=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --opt-keys) opt_keys=$2; shift 2 ;;
    --opt-unflushed-keys) opt_unflushed_keys=$2; shift 2 ;;
    *) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
mkdir -p "$out"
if [[ -z ${PMINDEX:-} ]]; then
  if [[ ! -x $repo/build/tools/pmindex ]]; then
    bash "$repo/scripts/install-deps.sh"
    cmake -S "$repo" -B "$repo/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    ninja -C "$repo/build" pmindex_tool >/dev/null
  fi
  PMINDEX=$repo/build/tools/pmindex
fi
indexes=pclht,levelhash,cceh,fastfair,part
# shellcheck disable=SC2086  # PMINDEX may be a command with arguments (a loader and its flags)
$PMINDEX bench --index "$indexes" --workload load,a-insert,b-insert,c --dist uniform \
  --keys "$keys" --ops "$ops" --threads "$threads" --mode adr --media-model shared \
  --seconds 0 --json "$out/wa.json" | tee "$out/wa.txt"
# The optimizations: opt-<row>-<base|variant>.json, read by wa_tables.py from OUT_DIR.
opt_run() {  # ROW base|variant INDEX PARAMS KEYS [bench flags...]
  local row=$1 side=$2 index=$3 params=$4 n=$5
  shift 5
  # shellcheck disable=SC2086
  $PMINDEX bench --index "$index" ${params:+--index-params "$params"} --workload a-insert \
    --dist uniform --keys "$n" --ops "$n" --threads 1 --mode adr --media-model shared \
    --seconds 0 --quiet "$@" --json "$out/opt-$row-$side.json" >/dev/null
  echo "optimization $row: $side ${params:-(default)} done"
}
pclht_params="pclht bucket=64 slots=3 initial_buckets=1"
opt_run fc base pclht "" "$opt_keys"
opt_run fc variant pclht "$pclht_params flush=coalesce" "$opt_keys"
# Early eviction needs the paper's premise, lines rarely revisited while cached (its table is
# far larger than any cache): --opt-unflushed-keys keys in a 65,536-bucket table, about one
# insert per bucket line. ve-dense: 10x the keys in a table grown to fit them.
sparse="pclht bucket=64 slots=3 initial_buckets=65536"
opt_run ve base pclht "$sparse flush=coalesce" "$opt_unflushed_keys" --count-unflushed
opt_run ve variant pclht "$sparse flush=coalesce unlock=flush" "$opt_unflushed_keys" \
  --count-unflushed
opt_run fcve base pclht "$sparse" "$opt_unflushed_keys" --count-unflushed
opt_run fcve variant pclht "$sparse flush=coalesce unlock=flush" "$opt_unflushed_keys" \
  --count-unflushed
opt_run xs base pclht "" "$opt_keys"
opt_run xs variant pclht "$pclht_params bucket_bytes=256" "$opt_keys"
opt_run xs-ff base fastfair "" "$opt_keys"
opt_run xs-ff variant fastfair "fastfair node_bytes=256" "$opt_keys"
dense_keys=$((opt_unflushed_keys * 10))
opt_run all base pclht "" "$dense_keys" --count-unflushed
opt_run all variant pclht "$pclht_params flush=coalesce unlock=flush bucket_bytes=256" \
  "$dense_keys" --count-unflushed
opt_run ve-dense base pclht "$pclht_params flush=coalesce" "$dense_keys" --count-unflushed
opt_run ve-dense variant pclht "$pclht_params flush=coalesce unlock=flush" "$dense_keys" \
  --count-unflushed
/usr/bin/python3 "$repo/scripts/reproduce/wa_tables.py" "$out" "$out/wa.json"
