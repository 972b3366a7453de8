#!/usr/bin/env bash
# Thread sweep: runs `pmindex bench` at several thread counts and writes one table and one
# plot per workload (scripts/scaling.py): throughput against threads, one line per index, the
# ideal line dotted.
#
#   scripts/scaling.sh OUT_DIR [pmindex bench options...]
#
# Defaults (each overridden by giving the option): --index rntree,rntree-ds,fptree,pftree,wort,woart
# --workload load,a,c,e --keys 2000000 --ops 4000000 --seconds 1 --mode adr
# --threads 1,2,4,8,16. PMINDEX is the command that runs the CLI (default build/tools/pmindex,
# built if missing; on a machine the binary was carried to, for example
# PMINDEX="lib/ld-linux-x86-64.so.2 --library-path lib ./pmindex"). Writes OUT_DIR/scaling.json
# (the bench's JSON), OUT_DIR/scaling.txt (its text report), scaling.md and scaling-*.png.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -ge 1 ]] || { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
out=$1
shift
mkdir -p "$out"
if [[ -z ${PMINDEX:-} ]]; then
  if [[ ! -x $repo/build/tools/pmindex ]]; then
    cmake -S "$repo" -B "$repo/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    ninja -C "$repo/build" pmindex_tool >/dev/null
  fi
  PMINDEX=$repo/build/tools/pmindex
fi
args=("$@")
has() { local a; for a in "${args[@]}"; do [[ $a == "$1" || $a == "$1="* ]] && return 0; done; return 1; }
has --index || args+=(--index rntree,rntree-ds,fptree,pftree,wort,woart)
has --workload || args+=(--workload load,a,c,e)
has --keys || args+=(--keys 2000000)
has --ops || args+=(--ops 4000000)
has --seconds || args+=(--seconds 1)
has --mode || args+=(--mode adr)
has --threads || args+=(--threads 1,2,4,8,16)
# shellcheck disable=SC2086  # PMINDEX may be a command with arguments (a loader and its flags)
$PMINDEX bench "${args[@]}" --json "$out/scaling.json" | tee "$out/scaling.txt"
/usr/bin/python3 "$repo/scripts/scaling.py" "$out/scaling.json" "$out"
