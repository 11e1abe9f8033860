#!/usr/bin/env bash
# bf16 sampling against float32 training on the tiny task (docs/gspo-vs-grpo.md, "Mismatch"): GSPO with the
# sampler in float32 (no precision mismatch), in bf16 (rollout.dtype bfloat16) without correction, with tis, with
# mis, and with the sampler's log-probs as pi_old; 3 seeds each; prints the table (markdown).
# usage: bash scripts/compare_mismatch.sh [RUNS_DIR]   (about 3 minutes on 2 cores; build/gspo must exist)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-runs/mismatch}"
source scripts/pyenv.sh; PY="$GSPO_PY"
[ -f models/tiny_demo.pt ] || "$PY" scripts/make_tiny_model.py --out models/tiny_demo.pt --prior-text 0123456789 --prior-logit 3.0
rm -rf "$RUNS"
declare -A VARIANT=(
  [f32]=""
  [bf16]="--set rollout.dtype=bfloat16"
  [bf16_tis]="--set rollout.dtype=bfloat16 --set algorithm.is_correction=tis --set algorithm.is_cap=1.01"
  [bf16_mis]="--set rollout.dtype=bfloat16 --set algorithm.is_correction=mis --set algorithm.is_cap=1.01 --set algorithm.is_floor=0.99"
  [bf16_sampler]="--set rollout.dtype=bfloat16 --set algorithm.old_logprobs=sampler"
)
for name in f32 bf16 bf16_tis bf16_mis bf16_sampler; do
  for seed in 0 1 2; do
    # shellcheck disable=SC2086
    build/gspo train -c configs/tiny.yaml --set "train.output_dir=$RUNS/${name}_$seed" --set train.threads=1 \
      --set rollout.seed=$seed --set train.seed=$seed --set data.seed=$((1234 + seed)) --set logging.progress=false --set logging.level=warn \
      ${VARIANT[$name]} >/dev/null
  done
done
"$PY" - "$RUNS" <<'PY'
import json, sys
runs = sys.argv[1]
print("| run | mean log pi_train - log pi_sampler | max abs difference | importance weights, min / max | "
      "truncated / rejected fraction | first mini-batch max abs(s_i - 1) | reward, last 40 steps |")
print("|---|---|---|---|---|---|---|")
mean = lambda xs: sum(xs) / max(1, len(xs))
for name in ("f32", "bf16", "bf16_tis", "bf16_mis", "bf16_sampler"):
    per_seed = []
    for seed in range(3):
        ms = [json.loads(l) for l in open(f"{runs}/{name}_{seed}/metrics.jsonl")]
        upd = [m for m in ms if m["update_sequences"] and m["grad_norm"] > 0]
        per_seed.append((mean([m["mismatch_logprob_diff_mean"] for m in ms]),
                         max(m["mismatch_logprob_diff_max"] for m in ms),
                         min(m["is_weight_min"] for m in ms), max(m["is_weight_max"] for m in ms),
                         mean([m["is_truncated_frac"] for m in ms]), mean([m["is_rejected_frac"] for m in ms]),
                         mean([m["first_minibatch_ratio_dev"] for m in upd]),
                         mean([m["reward_mean"] for m in ms[-40:]])))
    a = [mean([r[i] for r in per_seed]) for i in range(8)]
    lo, hi = min(r[2] for r in per_seed), max(r[3] for r in per_seed)
    print(f"| {name} | {a[0]:.2e} | {max(r[1] for r in per_seed):.2e} | {lo:.4f} / {hi:.4f} | {a[4]:.3f} / {a[5]:.3f} "
          f"| {a[6]:.2e} | {a[7]:.3f} ({', '.join(f'{r[7]:.3f}' for r in per_seed)}) |")
PY
