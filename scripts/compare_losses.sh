#!/usr/bin/env bash
# GSPO against GRPO on the tiny task (docs/gspo-vs-grpo.md): 3 seeds x 2 losses, same model, data and budget;
# prints the results table (markdown) and writes plots of seed 0 to docs/img/gspo_vs_grpo.
# usage: bash scripts/compare_losses.sh [RUNS_DIR]   (about 2 minutes on 2 cores; build/gspo must exist)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-runs/compare}"
source scripts/pyenv.sh; PY="$GSPO_PY"
[ -f models/tiny_demo.pt ] || "$PY" scripts/make_tiny_model.py --out models/tiny_demo.pt --prior-text 0123456789 --prior-logit 3.0
rm -rf "$RUNS"
for loss in gspo grpo; do
  for seed in 0 1 2; do
    build/gspo train -c configs/tiny.yaml --set "train.output_dir=$RUNS/${loss}_$seed" --set train.threads=1 \
      --set algorithm.loss=$loss --set rollout.seed=$seed --set train.seed=$seed --set data.seed=$((1234 + seed)) \
      --set logging.progress=false >/dev/null
  done
done
"$PY" - "$RUNS" <<'PY'
import json, sys
runs = sys.argv[1]
print("| run | seed | reward, first 20 steps | reward, last 40 steps | clipped token fraction (steps with updates) | clipped sequence fraction | entropy at end |")
print("|---|---|---|---|---|---|---|")
for loss in ("gspo", "grpo"):
    rows = []
    for seed in range(3):
        ms = [json.loads(l) for l in open(f"{runs}/{loss}_{seed}/metrics.jsonl")]
        upd = [m for m in ms if m["optimizer_steps"] and m["update_sequences"] and m["grad_norm"] > 0]
        mean = lambda xs: sum(xs) / max(1, len(xs))
        row = (mean([m["reward_mean"] for m in ms[:20]]), mean([m["reward_mean"] for m in ms[-40:]]),
               mean([m["clip_tok_frac"] for m in upd]),
               mean([m["clip_seq_low"] + m["clip_seq_high"] for m in upd]), ms[-1]["entropy"])
        rows.append(row)
        print(f"| {loss} | {seed} | {row[0]:.3f} | {row[1]:.3f} | {row[2]:.4f} | {row[3]:.4f} | {row[4]:.3f} |")
    avg = [sum(r[i] for r in rows) / 3 for i in range(5)]
    print(f"| **{loss} mean** | 0-2 | {avg[0]:.3f} | {avg[1]:.3f} | {avg[2]:.4f} | {avg[3]:.4f} | {avg[4]:.3f} |")
PY
"$PY" scripts/plot_metrics.py --out docs/img/gspo_vs_grpo gspo="$RUNS/gspo_0/metrics.jsonl" grpo="$RUNS/grpo_0/metrics.jsonl" >/dev/null
