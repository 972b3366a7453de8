#!/usr/bin/env bash
# Installs the Debian packages pmindex needs, only those missing (idempotent; run as root,
# or with sudo available).
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config git
  libpmem2-dev            # pool mapping, store granularity
  libpmemobj-dev          # PMDK transactions of `pmindex lab` (E6, E7)
  libgtest-dev            # unit, property and crash tests
  libbenchmark-dev        # micro-benchmarks (Google Benchmark)
  liblmdb-dev             # baseline
  librocksdb-dev          # baseline
  libcli11-dev            # the pmindex command line
  nlohmann-json3-dev      # JSON results
  libfmt-dev              # formatting
  python3 python3-matplotlib  # plots
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
