#!/usr/bin/env bash
# Configures and builds gspo into build/ (Release, Ninja). Extra arguments go to cmake, e.g. -DWITH_CUDA=ON.
# BUILD_TARGET=gspo builds only the binary (what the demo needs); default: everything (tests, benchmarks).
set -euo pipefail
cd "$(dirname "$0")/.."
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
elif [ "$#" -gt 0 ]; then
  cmake -S . -B build "$@"
fi
cmake --build build -j "$(nproc)" --target "${BUILD_TARGET:-all}"
