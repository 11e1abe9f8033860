#!/usr/bin/env bash
# Configures and builds gspo into build/ (Release, Ninja) against the LibTorch of the pinned torch wheel
# (scripts/setup.sh installs it). CUDA is on when a CUDA toolkit is installed (/usr/local/cuda); extra arguments go
# to cmake, e.g. -DWITH_CUDA=OFF. BUILD_TARGET=gspo builds only the binary (what the demo needs); default: all.
# Compiles through ccache with a per-machine cache ($GSPO_CACHE/ccache), so a fresh clone rebuilds from the cache.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/pyenv.sh
if [ ! -x "$GSPO_PY" ]; then
  echo "build: no Python environment at $GSPO_VENV; run: bash scripts/setup.sh" >&2
  exit 2
fi
export CCACHE_DIR="${CCACHE_DIR:-$GSPO_CACHE/ccache}"
export CCACHE_BASEDIR="$PWD"          # paths inside the checkout hash relative: clones elsewhere share entries
export CCACHE_NOHASHDIR=1
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-8G}"
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DGSPO_PYTHON="$GSPO_PY" "$@"
elif [ "$#" -gt 0 ]; then
  cmake -S . -B build "$@"
fi
start=$(date +%s)
cmake --build build -j "$(nproc)" --target "${BUILD_TARGET:-all}"
if command -v ccache >/dev/null 2>&1; then
  echo "build: $(( $(date +%s) - start )) s; ccache: $(ccache -s 2>/dev/null | grep -E '^ *Hits:' | head -1 | tr -s ' ')"
fi
