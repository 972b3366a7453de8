#!/usr/bin/env bash
# The long tests (label "long": crash campaigns with many cycles, large model runs): among
# them btree_crash_long_test (PMINDEX_BTREE_LONG), radix_crash_long_test
# (PMINDEX_RADIX_FULL_CAMPAIGN), pftree_crash_long_test (PFTREE_CRASH_FULL), crash_campaign_long
# (PMINDEX_CRASH_LONG). Each sets its own timeout (ctest's --timeout would not apply).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# The long campaigns include the mutants they must catch.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPMINDEX_MUTANTS=ON >/dev/null
ninja -C build
cd build && ctest -L long -j"$(nproc)" --output-on-failure
