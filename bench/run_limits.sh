#!/usr/bin/env bash
# Distance to this machine's limits (issue 13 item 5; docs/perf/limits.md): memory bandwidth, GEMV and GEMM peaks
# with gspo's LibTorch, batch-1 decode of a 183M-parameter model (12 x 1024, GQA 16/4; 732 MB of float32 weights,
# far past the caches) against the bandwidth bound, and the GSPO update's model FLOPs against the GEMM peak.
# Runs 1 (4 KiB pages) and 2 (THP_MEM_ALLOC_ENABLE=1: LibTorch's tensors >= 2 MiB on transparent huge pages) take
# about 3 minutes each; run 3 (the update, 2 threads) about 4. Each run holds /tmp/gspo-bench.lock so that benchmarks
# sharing the machine never measure at once. Not part of the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target bench_limits
source scripts/pyenv.sh; PY="$GSPO_PY"
MODEL=models/limits_180m.pt
mkdir -p models
[ -f "$MODEL" ] || "$PY" scripts/make_tiny_model.py --out "$MODEL" --layers 12 --hidden 1024 --heads 16 \
  --kv-heads 4 --max-seq-len 512
LOCK=(flock /tmp/gspo-bench.lock)
lscpu | grep -E "Model name|^CPU\(s\)|L1d|L2|L3"
"${LOCK[@]}" build/bench/bench_limits --threads 1,2 --decode "$MODEL"
echo
THP_MEM_ALLOC_ENABLE=1 "${LOCK[@]}" build/bench/bench_limits --threads 1,2 --decode "$MODEL"
echo
"${LOCK[@]}" build/bench/bench_limits --threads 2 --gemm 1024,2048 --update "$MODEL" --update-reps 1
