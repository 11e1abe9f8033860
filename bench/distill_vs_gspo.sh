#!/usr/bin/env bash
# On-policy distillation against GSPO with the exact reward, from the same start (issue #69 item 3;
# docs/distillation.md, "Measured"). A measurement, not a test. Needs build/gspo (bash scripts/build.sh) and the pinned
# Python environment; the models are made here (nothing downloaded).
#
#   bash bench/distill_vs_gspo.sh [DIR]      # DIR defaults to runs/distill-bench; the table also in DIR/table.md
#
# The task is the demo's (configs/tiny.yaml: sums, 16 prompts x 8 samples a step), harder with TASK (extra --set
# arguments of every run). The teacher is the demo's recipe (GSPO, the exact reward) run TEACHER_STEPS steps from the
# demo's starting model (the byte model with the digit prior). Each student starts from that same model and trains
# STEPS steps, SEEDS times (train.seed and rollout.seed 0, 1, ...), with
#   gspo      the demo's recipe: the exact reward, algorithm.loss gspo, optimizer.lr 5e-4, grad_clip 1 (the baseline)
#   distill   distill.teacher = the teacher, distill.objective OBJECTIVE, reward_weight DISTILL_RW (0: the reward only
#             logged), algorithm.loss LOSS, optimizer.lr DISTILL_LR, grad_clip DISTILL_CLIP, distill.clip
#             DISTILL_TERM_CLIP
# Printed: per method the mean over seeds of the sampled accuracy every 5 steps, the first step whose 5-step mean
# reaches 90% of the teacher's final accuracy (its last 10% of steps), per seed, and distill_kl at the start and end.
# Environment (defaults: the figures of docs/distillation.md): STEPS (200), SEEDS (3), TEACHER_STEPS (300), TASK (sums
# up to 18: max_operand 9, 40 problems, 4 new tokens; TASK= gives the demo's own task), OBJECTIVE (reverse_kl), LOSS
# (grpo), DISTILL_LR (1e-3), DISTILL_CLIP (10), DISTILL_TERM_CLIP (0), DISTILL_RW (0). Runs already in DIR are kept.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR="${1:-runs/distill-bench}"
STEPS="${STEPS:-200}" SEEDS="${SEEDS:-3}" TEACHER_STEPS="${TEACHER_STEPS:-300}" LOSS="${LOSS:-grpo}"
DISTILL_CLIP="${DISTILL_CLIP:-10}" DISTILL_LR="${DISTILL_LR:-1e-3}" DISTILL_TERM_CLIP="${DISTILL_TERM_CLIP:-0}"
DISTILL_RW="${DISTILL_RW:-0}" OBJECTIVE="${OBJECTIVE:-reverse_kl}"
source scripts/pyenv.sh
mkdir -p "$DIR"
START="$DIR/start.pt"
[ -f "$START" ] || "$GSPO_PY" scripts/make_tiny_model.py --out "$START" --prior-text 0123456789 --prior-logit 3.0 >/dev/null
# extra --set arguments of every run (the teacher's too): by default sums up to 18 (docs/distillation.md, "Measured")
HARDER="--set data.max_operand=9 --set data.num_prompts=40 --set data.holdout=0 --set rollout.max_new_tokens=4"
read -ra TASK <<<"${TASK-$HARDER}"
COMMON=(--config configs/tiny.yaml --set "model.path=$START" --set checkpoint.every=0 "${TASK[@]}")
if [ ! -f "$DIR/teacher/metrics.jsonl" ]; then
  echo "teacher: the demo, $TEACHER_STEPS steps"
  build/gspo train "${COMMON[@]}" --set "train.output_dir=$DIR/teacher" --set "train.max_steps=$TEACHER_STEPS" \
    > "$DIR/teacher.log" 2>&1
fi
for seed in $(seq 0 $((SEEDS - 1))); do
  for method in gspo distill; do
    out="$DIR/$method-$seed"
    [ -f "$out/metrics.jsonl" ] && [ "$(wc -l < "$out/metrics.jsonl")" -ge "$STEPS" ] && continue
    extra=()
    [ "$method" = distill ] && extra=(--set "distill.teacher=$DIR/teacher" --set "algorithm.loss=$LOSS"
                                     --set "optimizer.grad_clip=$DISTILL_CLIP" --set "optimizer.lr=$DISTILL_LR"
                                     --set "distill.clip=$DISTILL_TERM_CLIP" --set "distill.reward_weight=$DISTILL_RW"
                                     --set "distill.objective=$OBJECTIVE")
    echo "$method seed $seed"
    build/gspo train "${COMMON[@]}" --set "train.output_dir=$out" --set "train.max_steps=$STEPS" \
      --set "train.seed=$seed" --set "rollout.seed=$seed" --set data.holdout=0 "${extra[@]}" > "$out.log" 2>&1 \
      || { echo "failed: $out.log"; tail -5 "$out.log"; exit 1; }
  done
done
"$GSPO_PY" - "$DIR" "$SEEDS" "$STEPS" <<'PY' | tee "$DIR/table.md"
import json, sys
d, seeds, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def lines(run):
    return [json.loads(l) for l in open(f"{d}/{run}/metrics.jsonl") if l.strip()]
teacher = lines("teacher")
tail = teacher[-max(1, len(teacher) // 10):]
t_acc = sum(m["accuracy"] for m in tail) / len(tail)
target = 0.9 * t_acc
print(f"teacher: {len(teacher)} steps of the demo, sampled accuracy over its last 10% of steps {t_acc:.3f}; "
      f"target 90% of it = {target:.3f}\n")
curves, reach, kl = {}, {}, {}
for method in ("gspo", "distill"):
    runs = [lines(f"{method}-{s}") for s in range(seeds)]
    curves[method] = [sum(r[i]["accuracy"] for r in runs) / seeds for i in range(steps)]
    reach[method] = []
    for r in runs:
        acc = [m["accuracy"] for m in r]
        hit = next((i + 1 for i in range(4, len(acc)) if sum(acc[i - 4:i + 1]) / 5 >= target), None)
        reach[method].append(hit)
    if method == "distill":
        kl[method] = (sum(r[0]["distill_kl"] for r in runs) / seeds, sum(r[-1]["distill_kl"] for r in runs) / seeds)
print("| step | " + " | ".join(f"{m} accuracy (mean of {seeds} seeds)" for m in curves) + " |")
print("|---:|" + "---:|" * len(curves))
for i in list(range(0, steps, 5)) + ([steps - 1] if (steps - 1) % 5 else []):
    print(f"| {i + 1} | " + " | ".join(f"{curves[m][i]:.3f}" for m in curves) + " |")
print()
for m in curves:
    hits = reach[m]
    shown = ", ".join(str(h) if h else f">{steps}" for h in hits)
    print(f"{m}: first step whose 5-step mean accuracy >= {target:.3f}, per seed: {shown}")
if "distill" in kl:
    print(f"distill: distill_kl (reverse KL to the teacher, k1) step 1 {kl['distill'][0]:.4f} -> step {steps} "
          f"{kl['distill'][1]:.4f} (mean of {seeds} seeds)")
PY
