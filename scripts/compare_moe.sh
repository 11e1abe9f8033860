#!/usr/bin/env bash
# GSPO, GRPO and GRPO with Routing Replay on a small Qwen3-MoE policy (docs/gspo-vs-grpo.md, "MoE"): 3 seeds each,
# same model file, task, seeds and budget as scripts/compare_losses.sh (configs/tiny.yaml), only algorithm.loss and
# algorithm.routing_replay differ. Prints the results table (markdown) and writes plots of seed 0 to
# docs/img/gspo_vs_grpo_moe. The *_bf16* variants sample in bfloat16 and train in float32 (rollout.dtype), with
# replay none, old (R2) and rollout (R3), and log the sampler-vs-trainer mismatch: a second table.
# usage: bash scripts/compare_moe.sh [RUNS_DIR] [STEPS]   (about 20 minutes on 2 cores a 9 runs; build/gspo must exist)
#        VARIANTS="grpo_bf16 grpo_bf16_r2 grpo_bf16_r3" bash scripts/compare_moe.sh runs/moe_bf16   (some variants)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-runs/moe}"
STEPS="${2:-200}"
source scripts/pyenv.sh; PY="$GSPO_PY"
MODEL=models/moe_demo.pt  # transformers' random Qwen3-MoE: 4 layers x 16 experts, top-2 (scripts/make_moe_model.py)
[ -f "$MODEL" ] || "$PY" scripts/make_moe_model.py --out "$MODEL"
VARIANTS="${VARIANTS:-gspo grpo grpo_replay grpo_bf16 grpo_bf16_r2 grpo_bf16_r3}"
rm -rf "$RUNS"
jobs_file="$(mktemp)"; trap 'rm -f "$jobs_file"' EXIT
for variant in $VARIANTS; do
  loss="${variant%%_*}"; replay=none; extra=""
  case "$variant" in
    grpo_replay) replay=old ;;
    *_bf16*) extra="--set rollout.dtype=bfloat16 --set algorithm.mismatch_metrics=true"
                case "$variant" in *_r2) replay=old ;; *_r3) replay=rollout ;; esac ;;
  esac
  for seed in 0 1 2; do
    echo "build/gspo train -c configs/tiny.yaml --set model.path=$MODEL --set train.output_dir=$RUNS/${variant}_$seed" \
      "--set train.threads=1 --set train.max_steps=$STEPS --set algorithm.loss=$loss" \
      "--set algorithm.routing_replay=$replay --set rollout.seed=$seed --set train.seed=$seed $extra" \
      "--set data.seed=$((1234 + seed)) --set logging.progress=false >/dev/null" >>"$jobs_file"
  done
done
xargs -P 2 -I{} bash -c {} <"$jobs_file"  # one thread per run, two runs at a time
"$PY" - "$RUNS" $VARIANTS <<'PY'
import json, sys
runs, variants = sys.argv[1], sys.argv[2:]
mean = lambda xs: sum(xs) / max(1, len(xs))
print("| run | seed | reward, first 20 steps | reward, last 40 steps | best 20-step reward | clipped token fraction | "
      "routing change per step | expert load imbalance (max layer) | entropy at end |")
print("|---|---|---|---|---|---|---|---|---|")
for variant in variants:
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
bf16 = [v for v in variants if "bf16" in v]
if bf16:  # the sampler (bfloat16) against the trainer's step-start log-probs (float32), over the steps with updates
    print()
    print("| run | seeds | sampler-vs-trainer KL (k1: -mean of log pi_train - log pi_sampler) | largest per-step "
          "\\|diff\\| | trainer routing != rollout's (R3 metric) | reward, last 40 steps |")
    print("|---|---|---|---|---|---|")
    for variant in bf16:
        per = []
        for seed in range(3):
            ms = [json.loads(l) for l in open(f"{runs}/{variant}_{seed}/metrics.jsonl")]
            upd = [m for m in ms if m["update_sequences"]]
            diff = [m.get("moe_rollout_route_diff_frac") for m in upd]
            per.append((-mean([m["mismatch_logprob_diff_mean"] for m in upd]),
                        mean([m["mismatch_logprob_diff_max"] for m in upd]),
                        mean(diff) if None not in diff else float("nan"),
                        mean([m["reward_mean"] for m in ms][-40:])))
        a = [mean([p[i] for p in per]) for i in range(4)]
        print(f"| {variant} | 0-2 | {a[0]:.2e} | {a[1]:.4f} | {a[2]:.4f} | {a[3]:.3f} |")
PY
[ -d "$RUNS/gspo_0" ] && [ -d "$RUNS/grpo_replay_0" ] || exit 0
"$PY" scripts/plot_metrics.py --out docs/img/gspo_vs_grpo_moe gspo="$RUNS/gspo_0/metrics.jsonl" \
  grpo="$RUNS/grpo_0/metrics.jsonl" grpo_replay="$RUNS/grpo_replay_0/metrics.jsonl" >/dev/null
