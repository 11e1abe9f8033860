#!/usr/bin/env bash
# Builds the benchmarks, exports the benchmark models (tiny: 2 layers x 64; small: 4 layers x 256) and prints
# sampling and GSPO-update throughput next to the plain PyTorch references. Not part of the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
source scripts/pyenv.sh; PY="$GSPO_PY"
mkdir -p models
[ -f models/bench_tiny.pt ] || "$PY" scripts/make_tiny_model.py --out models/bench_tiny.pt --layers 2 --hidden 64
[ -f models/bench_small.pt ] || "$PY" scripts/make_tiny_model.py --out models/bench_small.pt --layers 4 --hidden 256 \
  --heads 8 --kv-heads 2
build/bench/bench_sampling models/bench_tiny.pt models/bench_small.pt
echo
build/bench/bench_train models/bench_tiny.pt models/bench_small.pt
