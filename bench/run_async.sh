#!/usr/bin/env bash
# Asynchronous against synchronous training at equal cores (issue #35 item 6; docs/async.md, "Measured"). A
# benchmark, not a test. Needs build/gspo (bash scripts/build.sh) and the pinned Python environment (the random model
# is made here; nothing downloaded).
#
#   bash bench/run_async.sh [DIR]     # DIR defaults to runs/async; table in DIR/table.md, plots in DIR/*.png
#
# Workload: a random byte model (LAYERS x HIDDEN, default 2 x 256), so response lengths come from its own EOS draws
# (long-tailed, up to MAX_NEW tokens); B x G = 8 x 4 rows a step on the arithmetic prompts; reward 1 when the
# response starts with an ASCII byte (about half at step 0, learnable), GSPO with 2 mini-batches and the sampler's
# log-probs as pi_old (no recompute pass, as asynchronous runs use). The model is small so that, as at scale, sampling
# (one token at a time) costs more than the update (all tokens at once). Cells, each on the
# machine's 2 cores in total:
#   sync-1p    1 process, train.threads 2
#   sync-2r    2 ranks colocated, 1 thread each
#   async-S0/1/2  1 rollout rank + 1 trainer (distributed.rollout_ranks 1), 1 thread each, async.max_staleness 0/1/2
#   partial-S1/2  1 process, train.threads 2, partial rollouts (async.partial_rollout) with max_staleness 1/2 and
#                 (S + 1) x 8 groups in flight: a step stops once 8 groups have ended, the rest carried
#   async-partial-S1/2  1 rollout rank + 1 trainer with partial rollouts, max_staleness 1/2, 16 groups in flight (the
#                 rollout rank runs S - 1 versions ahead and carries rows one batch)
# Each cell runs REPEATS times with rollout.seed 0, 1, ... (the run-to-run spread). Figures come from trainer 0's
# metrics.jsonl: step seconds (time_step_s; start-up and the end-of-run eval excluded), steps per hour, sampled rows
# per second, the idle shares (trainer_idle_frac, rollout_idle_frac; for colocated ranks the share of the step spent
# in collectives, comm_frac, which is waiting for the slower rank), reward per step.
# Environment: STEPS (10), MAX_NEW (512), REPEATS (2), CELLS (all), LAYERS (2), HIDDEN (256). ONE_CELL=name runs
# that cell once (seed 0) and exits with no table: what farm-bench times, paired against another cell, e.g.
#   farm-bench -n 4 --timeout 1500 --vs 'env ONE_CELL=sync-1p bash bench/run_async.sh /tmp/cells' -- \
#     env ONE_CELL=partial-S1 bash bench/run_async.sh /tmp/cells
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/pyenv.sh
D=${1:-runs/async}
STEPS=${STEPS:-10}
MAX_NEW=${MAX_NEW:-512}
REPEATS=${REPEATS:-2}
CELLS=${CELLS:-sync-1p sync-2r async-S0 async-S1 async-S2 partial-S1 partial-S2 async-partial-S1 async-partial-S2}
[ -n "${ONE_CELL:-}" ] && CELLS=$ONE_CELL REPEATS=1
LAYERS=${LAYERS:-2}
HIDDEN=${HIDDEN:-256}
GSPO=build/gspo
[ -x "$GSPO" ] || { echo "no $GSPO: run bash scripts/build.sh" >&2; exit 2; }
mkdir -p "$D"
M="$D/byte${LAYERS}x$HIDDEN.pt"
if [ ! -f "$M" ] || [ scripts/gspo_model.py -nt "$M" ]; then
  "$GSPO_PY" scripts/make_tiny_model.py --out "$M" --layers "$LAYERS" --hidden "$HIDDEN" --heads 8 --kv-heads 4 \
    --max-seq-len $((MAX_NEW + 64)) --seed 1 > /dev/null
fi
COMMON=(train -c configs/tiny.yaml --set "model.path=$M" --set rollout.prompts_per_step=8 --set rollout.group_size=4
        --set "rollout.max_new_tokens=$MAX_NEW" --set algorithm.num_minibatches=2 --set reward.kind=regex
        --set 'reward.regex=^[\x00-\x7f]' --set data.holdout=0 --set checkpoint.every=0 --set "train.max_steps=$STEPS"
        --set logging.progress=false --set optimizer.lr=1e-4 --set algorithm.old_logprobs=sampler)
port=29700
for cell in $CELLS; do
  for ((seed = 0; seed < REPEATS; seed++)); do
    out="$D/$cell-seed$seed"
    rm -rf "$out"
    args=("${COMMON[@]}" --set "train.output_dir=$out" --set "rollout.seed=$seed")
    echo "[$(date +%T)] $cell seed $seed" >&2
    t0=$(date +%s%N)
    case "$cell" in
      sync-1p) "$GSPO" "${args[@]}" --set train.threads=2 > "$out.log" 2>&1 ;;
      sync-2r) scripts/launch_local.sh -n 2 --port $((port++)) "$GSPO" "${args[@]}" --set train.threads=1 > "$out.log" 2>&1 ;;
      async-partial-S*) scripts/launch_local.sh -n 2 --port $((port++)) "$GSPO" "${args[@]}" --set train.threads=1 \
                  --set distributed.rollout_ranks=1 --set async.partial_rollout=true \
                  --set "async.max_staleness=${cell#async-partial-S}" > "$out.log" 2>&1 ;;
      async-S*) scripts/launch_local.sh -n 2 --port $((port++)) "$GSPO" "${args[@]}" --set train.threads=1 \
                  --set distributed.rollout_ranks=1 --set "async.max_staleness=${cell#async-S}" > "$out.log" 2>&1 ;;
      partial-S*) "$GSPO" "${args[@]}" --set train.threads=2 --set async.partial_rollout=true \
                    --set "async.max_staleness=${cell#partial-S}" > "$out.log" 2>&1 ;;
      *) echo "unknown cell $cell" >&2; exit 2 ;;
    esac
    echo "$(( ($(date +%s%N) - t0) / 1000000 ))" > "$out.wall"   # milliseconds
  done
done
[ -n "${ONE_CELL:-}" ] && exit 0
"$GSPO_PY" - "$D" "$CELLS" "$REPEATS" <<'PY' | tee "$D/table.md"
import json, statistics, sys
D, cells, repeats = sys.argv[1], sys.argv[2].split(), int(sys.argv[3])
print("| cell | steps/hour | rows/s | step s (median) | sample s | update s | trainer idle | rollout idle | "
      "comm share | lag | slot util | spanned rows | reward first 3 -> last 3 steps | wall s |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
curves = {}
for cell in cells:
    runs = []
    for seed in range(repeats):
        lines = [json.loads(l) for l in open(f"{D}/{cell}-seed{seed}/metrics.jsonl")]
        runs.append((lines, float(open(f"{D}/{cell}-seed{seed}.wall").read()) / 1000))
    curves[cell] = [[m["reward_mean"] for m in lines] for lines, _ in runs]
    step_s = [sum(m["time_step_s"] for m in lines) for lines, _ in runs]
    steps = len(runs[0][0])
    rows = sum(len(l) for l, _ in runs) / len(runs) * 32
    med = lambda f: statistics.median(f(m) for lines, _ in runs for m in lines)
    rew = [(statistics.mean(r[:3]), statistics.mean(r[-3:])) for r in curves[cell]]
    print(f"| {cell} | {3600 * steps / statistics.median(step_s):.0f} | {rows / statistics.median(step_s):.2f} | "
          f"{med(lambda m: m['time_step_s']):.2f} | {med(lambda m: m['time_sample_s']):.2f} | "
          f"{med(lambda m: m['time_update_s']):.2f} | {med(lambda m: m.get('trainer_idle_frac', 0)):.2f} | "
          f"{med(lambda m: m.get('rollout_idle_frac', 0)):.2f} | {med(lambda m: m.get('comm_frac', 0)):.2f} | "
          f"{med(lambda m: m.get('version_lag_mean', 0)):.1f} | {med(lambda m: m['rollout_slot_util']):.2f} | "
          f"{med(lambda m: m.get('spanned_rows_frac', 0)):.2f} | "
          f"{', '.join(f'{a:.2f} -> {b:.2f}' for a, b in rew)} | "
          f"{statistics.median(w for _, w in runs):.1f} |")
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
for xkey, name in (("step", "reward_per_step"), ("time", "reward_per_second")):
    plt.figure(figsize=(6, 4))
    for cell in cells:
        for seed in range(repeats):
            lines = [json.loads(l) for l in open(f"{D}/{cell}-seed{seed}/metrics.jsonl")]
            x, t = [], 0.0
            for m in lines:
                t += m["time_step_s"]
                x.append(m["step"] if xkey == "step" else t)
            plt.plot(x, [m["reward_mean"] for m in lines], label=cell if seed == 0 else None,
                     color=f"C{cells.index(cell)}", alpha=0.8)
    plt.xlabel("rollout step" if xkey == "step" else "seconds of steps (trainer 0)")
    plt.ylabel("mean reward")
    plt.legend()
    plt.tight_layout()
    plt.savefig(f"{D}/{name}.png", dpi=80)
PY
