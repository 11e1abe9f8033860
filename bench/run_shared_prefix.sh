#!/usr/bin/env bash
# Shared-prefix training (#71) side by side with the unshared pass (bench/bench_shared_prefix.cpp), on a Qwen3-shaped
# model that fits a CPU (4 layers, hidden 256, 8 query and 4 KV heads of 32, q/k norms, SwiGLU 768, byte vocabulary;
# random weights, made here): the issue's long-prompt workload (prompts of 1,024 tokens, responses of 128, G = 16) and
# the demo's short prompts (16 tokens, responses of 24, G = 8, 4 groups). A benchmark, not a test; each workload one
# process, the median of REPS (default 3) alternating runs. Prints the tables docs/performance.md keeps.
#
#   bash bench/run_shared_prefix.sh [DIR]     # DIR defaults to runs/shared_prefix
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/pyenv.sh
D=${1:-runs/shared_prefix}
REPS=${REPS:-3}
BENCH=build/bench/bench_shared_prefix
[ -x "$BENCH" ] || { echo "no $BENCH: run bash scripts/build.sh" >&2; exit 2; }
mkdir -p "$D"
M="$D/qwen3_shaped.pt"
if [ ! -f "$M" ] || [ scripts/gspo_model.py -nt "$M" ]; then
  "$GSPO_PY" scripts/make_tiny_model.py --out "$M" --layers 4 --hidden 256 --heads 8 --kv-heads 4 --intermediate 768 \
    --max-seq-len 2048 --qk-norm --tie >/dev/null
fi
echo "## long prompts (the issue's workload)"
"$BENCH" "$M" --prompt 1024 --response 128 --group 16 --reps "$REPS" | tee "$D/long.txt"
echo "## the demo's shape (short prompts)"
"$BENCH" "$M" --prompt 16 --response 24 --group 8 --groups 4 --reps "$REPS" | tee "$D/short.txt"
