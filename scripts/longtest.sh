#!/usr/bin/env bash
# The long tests (label "long": crash campaigns with many cycles, large model runs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# The long campaigns include the mutants they must catch.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPMINDEX_MUTANTS=ON >/dev/null
ninja -C build
cd build && ctest -L long -j"$(nproc)" --output-on-failure --timeout 14400
