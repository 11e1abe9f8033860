#!/usr/bin/env bash
# Sets everything up on a fresh Debian machine and runs the whole test suite (what .ci/run calls).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
cd build
ctest --output-on-failure -j "$(nproc)"
