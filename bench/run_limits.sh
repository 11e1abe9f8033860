#!/usr/bin/env bash
# Distance to this machine's limits (issue 13 item 5; docs/perf/limits.md): memory bandwidth, GEMV and GEMM peaks
# with gspo's LibTorch, batch-1 decode of a 183M-parameter model (12 x 1024, GQA 16/4; 732 MB of float32 weights,
# far past the caches) against the bandwidth bound, and the GSPO update's model FLOPs against the GEMM peak.
# Runs 1 (THP_MEM_ALLOC_ENABLE=0: 4 KiB pages) and 2 (gspo's default, as the gspo binary runs: LibTorch's tensors
# >= 2 MiB on transparent huge pages, THP_MEM_ALLOC_ENABLE=1 set by bench_limits itself as by gspo's main) take
# about 3 minutes each; run 3 (the update, 2 threads) about 4. Each run holds /tmp/gspo-bench.lock so that benchmarks
# sharing the machine never measure at once. Not part of the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target bench_limits
source scripts/pyenv.sh; PY="$GSPO_PY"
MODEL=models/limits_180m.pt
mkdir -p models
# Re-exported when scripts/gspo_model.py is newer (its decode path changes what is measured).
[ "$MODEL" -nt scripts/gspo_model.py ] || "$PY" scripts/make_tiny_model.py --out "$MODEL" --layers 12 --hidden 1024 --heads 16 \
  --kv-heads 4 --max-seq-len 512
LOCK=(flock /tmp/gspo-bench.lock)
lscpu | grep -E "Model name|^CPU\(s\)|L1d|L2|L3"
THP_MEM_ALLOC_ENABLE=0 "${LOCK[@]}" build/bench/bench_limits --threads 1,2 --decode "$MODEL"
echo
env -u THP_MEM_ALLOC_ENABLE "${LOCK[@]}" build/bench/bench_limits --threads 1,2 --decode "$MODEL"
echo
"${LOCK[@]}" build/bench/bench_limits --threads 2 --gemm 1024,2048 --update "$MODEL" --update-reps 1
