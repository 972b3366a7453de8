#!/usr/bin/env bash
# The main job: installs what is missing, builds pmindex (Release) and runs `pmindex bench`
# with its defaults on temporary pools. Extra arguments go to `pmindex`
# (e.g. scripts/run.sh bench --index rntree,pftree --workload insert).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build pmindex >/dev/null
# Pools on 2 MiB pages where the machine allows it (scripts/hugepool-dir.sh); an explicit
# --pool-dir or PMINDEX_POOL_DIR wins.
export PMINDEX_POOL_DIR="${PMINDEX_POOL_DIR:-$(bash scripts/hugepool-dir.sh)}"
exec build/tools/pmindex "$@"
