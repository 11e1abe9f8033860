#!/usr/bin/env bash
# GSPO, GRPO and GRPO with Routing Replay on a small Qwen3-MoE policy (docs/gspo-vs-grpo.md, "MoE"): 3 seeds each,
# same model file, task, seeds and budget as scripts/compare_losses.sh (configs/tiny.yaml), only algorithm.loss and
# algorithm.routing_replay differ. Prints the results table (markdown) and writes plots of seed 0 to
# docs/img/gspo_vs_grpo_moe.
# usage: bash scripts/compare_moe.sh [RUNS_DIR] [STEPS]   (about 20 minutes on 2 cores; build/gspo must exist)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-runs/moe}"
STEPS="${2:-200}"
source scripts/pyenv.sh; PY="$GSPO_PY"
MODEL=models/moe_demo.pt  # transformers' random Qwen3-MoE: 4 layers x 16 experts, top-2 (scripts/make_moe_model.py)
[ -f "$MODEL" ] || "$PY" scripts/make_moe_model.py --out "$MODEL"
rm -rf "$RUNS"
jobs_file="$(mktemp)"; trap 'rm -f "$jobs_file"' EXIT
for variant in gspo grpo grpo_replay; do
  loss="${variant%_replay}"; replay=none; [ "$variant" = grpo_replay ] && replay=old
  for seed in 0 1 2; do
    echo "build/gspo train -c configs/tiny.yaml --set model.path=$MODEL --set train.output_dir=$RUNS/${variant}_$seed" \
      "--set train.threads=1 --set train.max_steps=$STEPS --set algorithm.loss=$loss" \
      "--set algorithm.routing_replay=$replay --set rollout.seed=$seed --set train.seed=$seed" \
      "--set data.seed=$((1234 + seed)) --set logging.progress=false >/dev/null" >>"$jobs_file"
  done
done
xargs -P 2 -I{} bash -c {} <"$jobs_file"  # one thread per run, two runs at a time
"$PY" - "$RUNS" <<'PY'
import json, sys
runs = sys.argv[1]
mean = lambda xs: sum(xs) / max(1, len(xs))
print("| run | seed | reward, first 20 steps | reward, last 40 steps | best 20-step reward | clipped token fraction | "
      "routing change per step | expert load imbalance (max layer) | entropy at end |")
print("|---|---|---|---|---|---|---|---|---|")
for variant in ("gspo", "grpo", "grpo_replay"):
    rows = []
    for seed in range(3):
        ms = [json.loads(l) for l in open(f"{runs}/{variant}_{seed}/metrics.jsonl")]
        upd = [m for m in ms if m["optimizer_steps"] and m["update_sequences"] and m["grad_norm"] > 0]
        rewards = [m["reward_mean"] for m in ms]
        best = max(mean(rewards[i:i + 20]) for i in range(max(1, len(rewards) - 19)))
        row = (mean(rewards[:20]), mean(rewards[-40:]), best, mean([m["clip_tok_frac"] for m in upd]),
               mean([m["moe_routing_change_frac"] for m in upd]), mean([m["moe_load_imbalance_max"] for m in ms]),
               ms[-1]["entropy"])
        rows.append(row)
        print(f"| {variant} | {seed} | {row[0]:.3f} | {row[1]:.3f} | {row[2]:.3f} | {row[3]:.4f} | {row[4]:.4f} | "
              f"{row[5]:.2f} | {row[6]:.3f} |")
    a = [mean([r[i] for r in rows]) for i in range(7)]
    print(f"| **{variant} mean** | 0-2 | {a[0]:.3f} | {a[1]:.3f} | {a[2]:.3f} | {a[3]:.4f} | {a[4]:.4f} | {a[5]:.2f} | "
          f"{a[6]:.3f} |")
PY
"$PY" scripts/plot_metrics.py --out docs/img/gspo_vs_grpo_moe gspo="$RUNS/gspo_0/metrics.jsonl" \
  grpo="$RUNS/grpo_0/metrics.jsonl" grpo_replay="$RUNS/grpo_replay_0/metrics.jsonl" >/dev/null
