#!/usr/bin/env bash
# Learning curves with float32 against 8-bit AdamW moments (optimizer.state_bits, docs/optimizer.md): the tiny task of
# configs/tiny.yaml, 3 seeds each, on two policies: the demo's (models/tiny_demo.pt) and a Qwen3-shaped one (q/k
# RMSNorm, grouped-query attention, tied embeddings; 4 layers, hidden 128), both with the digit prior of the demo.
# Everything else is tiny.yaml's. Prints a markdown table per model: reward over the first 20 and the last 40 steps,
# held-out greedy accuracy, the moments' MB, and the 8-bit runs' difference to float32 with the float32 seeds' spread.
# ZERO_STAGE=1 runs every run through ZeRO-1's sharded optimizer (one process: one shard holding the whole flat
# vector), whose 8-bit store quantises small tensors too, in blocks of the flat order (docs/optimizer.md).
# usage: [ZERO_STAGE=1] bash scripts/compare_8bit.sh [RUNS_DIR]   (about 10 minutes on 2 cores; build/gspo must exist)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-runs/compare_8bit}"
ZERO_STAGE="${ZERO_STAGE:-0}"
source scripts/pyenv.sh; PY="$GSPO_PY"
[ -f models/tiny_demo.pt ] || "$PY" scripts/make_tiny_model.py --out models/tiny_demo.pt --prior-text 0123456789 \
  --prior-logit 3.0
[ -f models/tiny_qwen3_shaped.pt ] || "$PY" scripts/make_tiny_model.py --out models/tiny_qwen3_shaped.pt --layers 4 \
  --hidden 128 --heads 4 --kv-heads 2 --qk-norm --tie --prior-text 0123456789 --prior-logit 3.0
rm -rf "$RUNS"
mkdir -p "$RUNS"
one() {  # one MODEL BITS SEED
  local model="$1" bits="$2" seed="$3"
  build/gspo train -c configs/tiny.yaml --set "model.path=models/$model.pt" --set optimizer.state_bits=$bits \
    --set "train.output_dir=$RUNS/${model}_${bits}_$seed" --set train.threads=1 --set rollout.seed=$seed \
    --set train.seed=$seed --set data.seed=$((1234 + seed)) --set logging.progress=false \
    --set distributed.zero_stage=$ZERO_STAGE \
    >"$RUNS/${model}_${bits}_$seed.log" 2>&1
}
for model in tiny_demo tiny_qwen3_shaped; do
  for seed in 0 1 2; do
    for bits in 32 8; do one "$model" "$bits" "$seed" & done
    wait
  done
done
"$PY" - "$RUNS" <<'PY'
import json, re, statistics, sys
runs = sys.argv[1]
mean = lambda xs: sum(xs) / max(1, len(xs))
for model in ["tiny_demo", "tiny_qwen3_shaped"]:
    print(f"\n{model}\n")
    print("| state_bits | seed | reward, first 20 steps | reward, last 40 steps | held-out greedy accuracy | moments MB |")
    print("|---|---|---|---|---|---|")
    last = {}
    for bits in (32, 8):
        rows = []
        for seed in range(3):
            ms = [json.loads(l) for l in open(f"{runs}/{model}_{bits}_{seed}/metrics.jsonl")]
            log = open(f"{runs}/{model}_{bits}_{seed}.log").read()
            held = float(re.search(r"greedy accuracy ([0-9.]+) on", log).group(1))
            row = (mean([m["reward_mean"] for m in ms[:20]]), mean([m["reward_mean"] for m in ms[-40:]]), held,
                   ms[-1]["optimizer_state_mb_per_rank"])
            rows.append(row)
            print(f"| {bits} | {seed} | {row[0]:.3f} | {row[1]:.3f} | {row[2]:.3f} | {row[3]:.3f} |")
        avg = [mean([r[i] for r in rows]) for i in range(4)]
        last[bits] = [r[1] for r in rows]
        print(f"| **{bits} mean** | 0-2 | {avg[0]:.3f} | {avg[1]:.3f} | {avg[2]:.3f} | {avg[3]:.3f} |")
    diff = mean(last[8]) - mean(last[32])
    spread = statistics.stdev(last[32])
    print(f"\nlast-40-step reward, 8-bit minus float32: {diff:+.3f}; float32 seeds' standard deviation {spread:.3f}")
PY
