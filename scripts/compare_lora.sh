#!/usr/bin/env bash
# LoRA against full fine-tuning on the tiny task (docs/lora.md): the same base (models/tiny_warm.pt), data and budget,
# 3 seeds each; full fine-tuning at tiny.yaml's lr 5e-4, LoRA as configs/tiny-lora.yaml (rank 16, alpha 32, lr 1e-3)
# and at LORA_LRS' other rates. Prints a markdown table: reward over the first 20 and last 40 steps, held-out greedy
# accuracy, seconds a step, trained parameters and checkpoint size.
# usage: bash scripts/compare_lora.sh [RUNS_DIR]   (about 3 minutes on 2 cores; build/gspo must exist)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-runs/compare_lora}"
LORA_LRS="${LORA_LRS:-1e-3 5e-3}"
source scripts/pyenv.sh; PY="$GSPO_PY"
[ -f models/tiny_warm.pt ] || bash scripts/make_warm_base.sh models/tiny_warm.pt
rm -rf "$RUNS"
one() {  # one NAME SEED [--set ...]
  local name="$1" seed="$2"; shift 2
  build/gspo train -c configs/tiny-lora.yaml --set "train.output_dir=$RUNS/${name}_$seed" --set train.threads=1 \
    --set rollout.seed=$seed --set train.seed=$seed --set data.seed=$((1234 + seed)) --set logging.progress=false \
    "$@" >"$RUNS/${name}_$seed.log" 2>&1
}
mkdir -p "$RUNS"
for seed in 0 1 2; do
  one full "$seed" --set model.lora_rank=0 --set optimizer.lr=5e-4
  for lr in $LORA_LRS; do one "lora-lr$lr" "$seed" --set optimizer.lr=$lr; done
done
"$PY" - "$RUNS" $LORA_LRS <<'PY'
import json, os, re, sys
runs, lrs = sys.argv[1], sys.argv[2:]
print("| run | lr | seed | reward, first 20 steps | reward, last 40 steps | held-out greedy accuracy | s / step | trained parameters | checkpoint |")
print("|---|---|---|---|---|---|---|---|---|")
for name, lr in [("full", "5e-4")] + [(f"lora-lr{x}", x) for x in lrs]:
    rows = []
    for seed in range(3):
        ms = [json.loads(l) for l in open(f"{runs}/{name}_{seed}/metrics.jsonl")]
        log = open(f"{runs}/{name}_{seed}.log").read()
        held = float(re.search(r"greedy accuracy ([0-9.]+) on", log).group(1))
        m = re.search(r"\(([0-9]+) trained parameters", log)
        trained = int(m.group(1)) if m else None
        ck = f"{runs}/{name}_{seed}/checkpoints/step_00000200"
        size = sum(os.path.getsize(f"{ck}/{f}") for f in os.listdir(ck))
        mean = lambda xs: sum(xs) / max(1, len(xs))
        row = (mean([m["reward_mean"] for m in ms[:20]]), mean([m["reward_mean"] for m in ms[-40:]]), held,
               mean([m["time_step_s"] for m in ms[1:]]))
        rows.append(row)
        print(f"| {name.split('-')[0]} | {lr} | {seed} | {row[0]:.3f} | {row[1]:.3f} | {row[2]:.3f} | {row[3]:.3f} | "
              f"{trained if trained else 'all'} | {size / 1024:.0f} KiB |")
    avg = [sum(r[i] for r in rows) / 3 for i in range(4)]
    print(f"| **{name.split('-')[0]} mean** | {lr} | 0-2 | {avg[0]:.3f} | {avg[1]:.3f} | {avg[2]:.3f} | {avg[3]:.3f} | | |")
PY
