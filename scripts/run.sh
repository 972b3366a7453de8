#!/usr/bin/env bash
# The main job: installs what is missing, builds pmindex (Release) and runs `pmindex bench`
# with its defaults on temporary pools. Extra arguments go to `pmindex`
# (e.g. scripts/run.sh bench --index rntree,pftree --workload insert).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# The shipped configuration: no test-only mutants compiled in (scripts/test.sh turns them on).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPMINDEX_MUTANTS=OFF >/dev/null
ninja -C build pmindex_tool >/dev/null
# Pools on 2 MiB pages where the machine allows it (scripts/hugepool-dir.sh); an explicit
# --pool-dir or PMINDEX_POOL_DIR wins.
export PMINDEX_POOL_DIR="${PMINDEX_POOL_DIR:-$(bash scripts/hugepool-dir.sh)}"
exec build/tools/pmindex "$@"
