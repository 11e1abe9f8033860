#!/usr/bin/env bash
# The rollout engine under a KV-cache budget (issue #23 item 7; docs/performance.md, "Rollout under a KV budget"). A
# benchmark, not a test. Needs build/bench/bench_rollout (bash scripts/build.sh) and the pinned Python environment
# (the random model is made here; nothing downloaded).
#
#   bash bench/run_rollout.sh [DIR]     # DIR defaults to runs/rollout; the table also goes to DIR/table.md
#
# Model: the 4-layer, 512-wide byte model (8 heads, 4 KV heads), random, so response lengths come from its own EOS
# draws: long-tailed, mean ~260 of up to MAX_NEW tokens. For each row count (ROWS, groups of 8, prompt 16 tokens):
# every row at once (no budget: the static cache of rows x (16 + MAX_NEW) columns), then budgets of 1/8 and 1/2 of
# that cache, each with continuous batching and with static batches of as many rows as the budget holds (what a
# user without continuous batching would do). One process per cell (bench/bench_rollout.cpp): its peak RSS, and
# "rollout MB" = the rollout's peak RSS minus the RSS before it (after loading the model and an 8-token warm-up
# rollout, so the interpreter's and BLAS's one-time buffers are not counted). Same prompts and noise in every cell.
# Environment: ROWS (64 256), MAX_NEW (2048), THREADS (all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/pyenv.sh
D=${1:-runs/rollout}
ROWS=${ROWS:-64 256}
MAX_NEW=${MAX_NEW:-2048}
BENCH=build/bench/bench_rollout
[ -x "$BENCH" ] || { echo "no $BENCH: run bash scripts/build.sh" >&2; exit 2; }
[ -n "${THREADS:-}" ] && export OMP_NUM_THREADS=$THREADS
mkdir -p "$D"
M="$D/byte4x512.pt"
if [ ! -f "$M" ] || [ scripts/gspo_model.py -nt "$M" ]; then
  "$GSPO_PY" scripts/make_tiny_model.py --out "$M" --layers 4 --hidden 512 --heads 8 --kv-heads 4 \
    --max-seq-len $((MAX_NEW + 64)) --seed 1 > /dev/null
fi
# KV bytes per token of this model: layers x 2 (K, V) x KV heads x head dim x 4 bytes.
PER_TOKEN=$((4 * 2 * 4 * 64 * 4))
OUT="$D/cells.jsonl"
: > "$OUT"
for rows in $ROWS; do
  static_mb=$(( (rows * (16 + MAX_NEW) * PER_TOKEN + 1048575) / 1048576 ))
  for cell in "0" "$((static_mb / 8))" "$((static_mb / 8)) --static" "$((static_mb / 2))" "$((static_mb / 2)) --static"; do
    echo "[$(date +%T)] rows $rows, budget ${cell} MB" >&2
    # shellcheck disable=SC2086
    "$BENCH" "$M" --rows "$rows" --max-new "$MAX_NEW" --budget-mb $cell | tee -a "$OUT"
  done
done
"$GSPO_PY" - "$OUT" <<'PY' | tee "$D/table.md"
import json, sys
cells = [json.loads(l) for l in open(sys.argv[1])]
print("| rows | KV budget MB | schedule | slots | KV MB | rollout MB | peak RSS MB | tokens/s | "
      "slot util | mean / max length | s |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for c in cells:
    budget = "none" if c["budget_mb"] == 0 else str(c["budget_mb"])
    print(f"| {c['rows']} | {budget} | {c['mode']} | {c['slots']} | {c['kv_mb']:.0f} | {c['rollout_mb']:.0f} | "
          f"{c['peak_rss_mb']:.0f} | {c['tokens_per_s']:.0f} | {c['slot_util']:.2f} | "
          f"{c['mean_len']:.0f} / {c['max_len']} | {c['seconds']:.1f} |")
by = {(c["rows"], c["budget_mb"], c["mode"]): c for c in cells}
print()
for (rows, budget, mode), c in sorted(by.items()):
    s = by.get((rows, budget, "static"))
    if mode == "continuous" and s:
        print(f"- {rows} rows, {budget} MB: continuous / static tokens/s = {c['tokens_per_s'] / s['tokens_per_s']:.2f}x; "
              f"rollout MB / budget = {c['rollout_mb'] / budget:.2f}")
PY
