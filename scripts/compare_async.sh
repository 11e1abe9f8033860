#!/usr/bin/env bash
# GSPO, GRPO and GRPO with TIS on stale samples (issue #35 item 7; docs/gspo-vs-grpo.md, "Stale samples"): the tiny
# task of scripts/compare_losses.sh (configs/tiny.yaml, same model file, seeds and budget) trained by 1 rollout rank
# + 1 trainer (distributed.rollout_ranks 1) at async.max_staleness 0, 2 and 4, 3 seeds each. Only the loss and pi_old
# differ:
#   gspo      algorithm.loss gspo, pi_old = the sampler's log-probs (version v(j), the GSPO paper's argument)
#   grpo      algorithm.loss grpo, pi_old = the sampler's log-probs
#   grpo_tis  algorithm.loss grpo, pi_old recomputed at the step-start weights, is_correction tis (w = pi_j / pi_v(j)
#             truncated at algorithm.is_cap)
# All log the sampler/trainer gap (algorithm.mismatch_metrics). With PARTIAL=1 the rollout rank runs partial
# rollouts (async.partial_rollout, 2 x prompts_per_step groups in flight: rows carried one batch, so responses span
# versions) at staleness 2 and 4 (partial rollouts need S >= 1) into RUNS_DIR (default runs/async_staleness_partial).
# Prints the results table (markdown) and writes plots of seed 0 to docs/img/async_staleness[_partial].
# usage: [PARTIAL=1] bash scripts/compare_async.sh [RUNS_DIR] [STEPS]   (~7 minutes on 2 cores; build/gspo must exist)
set -euo pipefail
cd "$(dirname "$0")/.."
PARTIAL="${PARTIAL:-0}"
if [ "$PARTIAL" = 1 ]; then SS="2 4"; EXTRA=(--set async.partial_rollout=true); SUFFIX=_partial
else SS="0 2 4"; EXTRA=(); SUFFIX=; fi
RUNS="${1:-runs/async_staleness$SUFFIX}"
STEPS="${2:-200}"
source scripts/pyenv.sh; PY="$GSPO_PY"
MODEL=models/tiny_demo.pt
[ -f "$MODEL" ] || "$PY" scripts/make_tiny_model.py --out "$MODEL" --prior-text "0123456789" >/dev/null
rm -rf "$RUNS"
port=29800
for S in $SS; do
  for variant in gspo grpo grpo_tis; do
    case "$variant" in
      gspo) algo=(--set algorithm.loss=gspo --set algorithm.old_logprobs=sampler --set algorithm.mismatch_metrics=true) ;;
      grpo) algo=(--set algorithm.loss=grpo --set algorithm.old_logprobs=sampler --set algorithm.mismatch_metrics=true) ;;
      grpo_tis) algo=(--set algorithm.loss=grpo --set algorithm.old_logprobs=recompute --set algorithm.is_correction=tis) ;;
    esac
    for seed in 0 1 2; do
      echo "[$(date +%T)] S=$S $variant seed $seed" >&2
      scripts/launch_local.sh -n 2 --port $((port++)) build/gspo train -c configs/tiny.yaml --set "model.path=$MODEL" \
        --set "train.output_dir=$RUNS/S${S}_${variant}_$seed" --set train.threads=1 --set "train.max_steps=$STEPS" \
        --set distributed.rollout_ranks=1 --set "async.max_staleness=$S" "${EXTRA[@]}" "${algo[@]}" --set "rollout.seed=$seed" \
        --set "train.seed=$seed" --set "data.seed=$((1234 + seed))" --set logging.progress=false \
        --set checkpoint.every=0 >"$RUNS.S${S}_${variant}_$seed.log" 2>&1 \
        || { echo "run S=$S $variant seed $seed failed: $RUNS.S${S}_${variant}_$seed.log" >&2; exit 1; }
    done
  done
done
"$PY" - "$RUNS" "$SS" <<'PY'
import json, sys
runs, stale = sys.argv[1], [int(x) for x in sys.argv[2].split()]
mean = lambda xs: sum(xs) / max(1, len(xs))
print("| staleness | run | reward, first 20 steps | reward, last 40 steps (per seed) | best 20-step reward | "
      "clipped fraction (seq / tok) | |sampler - trainer| log-prob gap | lag (mean) | rows spanning versions |")
print("|---|---|---|---|---|---|---|---|---|")
for S in stale:
    for variant in ("gspo", "grpo", "grpo_tis"):
        rows = []
        for seed in range(3):
            ms = [json.loads(l) for l in open(f"{runs}/S{S}_{variant}_{seed}/metrics.jsonl")]
            r = [m["reward_mean"] for m in ms]
            best = max(mean(r[i:i + 20]) for i in range(max(1, len(r) - 19)))
            rows.append((mean(r[:20]), mean(r[-40:]), best, mean([m["clip_seq_frac"] for m in ms]),
                         mean([m["clip_tok_frac"] for m in ms]),
                         mean([abs(m.get("mismatch_logprob_diff_mean", 0.0)) for m in ms]),
                         mean([m["version_lag_mean"] for m in ms]),
                         mean([m.get("spanned_rows_frac", 0.0) for m in ms])))
        a = [mean([x[i] for x in rows]) for i in range(8)]
        last = " / ".join(f"{x[1]:.3f}" for x in rows)
        print(f"| {S} | {variant} | {a[0]:.3f} | {a[1]:.3f} ({last}) | {a[2]:.3f} | {a[3]:.3f} / {a[4]:.4f} | "
              f"{a[5]:.2e} | {a[6]:.2f} | {a[7]:.2f} |")
PY
IMG="docs/img/async_staleness$SUFFIX"
mkdir -p "$IMG"
for S in $SS; do
  "$PY" scripts/plot_metrics.py --out "$IMG/S$S" gspo="$RUNS/S${S}_gspo_0/metrics.jsonl" \
    grpo="$RUNS/S${S}_grpo_0/metrics.jsonl" grpo_tis="$RUNS/S${S}_grpo_tis_0/metrics.jsonl" >/dev/null
  find "$IMG/S$S" -name '*.png' ! -name reward.png ! -name clip_fraction.png -delete  # kept: 2 a run
done
