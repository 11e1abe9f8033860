#!/usr/bin/env bash
# gspo side by side with TRL's GRPOTrainer (GSPO settings) and transformers `generate` on the CPU (issue 13 item 4;
# docs/perf/trl.md). Not part of the test suite. Needs build/gspo and build/bench/bench_sampling (bash
# scripts/build.sh) and the pinned Python environment (scripts/py: torch, transformers, trl).
#
#   bash bench/run_trl_bench.sh [DIR]      # DIR defaults to runs/trl_bench; prints the table, also DIR/table.md
#
# Environment: WARMUP (rollout steps run first and not measured, both sides; 1), GSPO_STEPS (measured gspo steps; 3),
# TRL_STEPS (measured TRL steps; 2), BENCH_LOCK (prefix of every timed command, so that concurrent benchmarks on one
# machine take turns; default "flock /tmp/gspo-bench.lock", empty to run without). About 8 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/pyenv.sh
PY="$GSPO_PY"
D=${1:-runs/trl_bench}
WARMUP=${WARMUP:-1}
GSPO_STEPS=${GSPO_STEPS:-3}
TRL_STEPS=${TRL_STEPS:-2}
LOCK=${BENCH_LOCK-flock /tmp/gspo-bench.lock}
B="$PY bench/trl_side_by_side.py"
mkdir -p "$D"
t0=$(date +%s)
load() { echo "[$(date +%T)] $1 (load average $(cut -d' ' -f1-3 /proc/loadavg))"; }
busy() {  # percent of all CPUs busy over 2 s
  local a b; a=($(head -1 /proc/stat)); sleep 2; b=($(head -1 /proc/stat))
  local tot=0 i; for i in 1 2 3 4 5 6 7 8; do tot=$((tot + b[i] - a[i])); done
  echo $(( 100 * (tot - (b[4] - a[4]) - (b[5] - a[5])) / (tot > 0 ? tot : 1) ))
}
quiet() {  # a shared machine: wait (up to QUIET_WAIT_S, 300 s) until others use under 15% of the CPUs
  local waited=0 u
  while u=$(busy); [ "$u" -ge 15 ] && [ "$waited" -lt "${QUIET_WAIT_S:-300}" ]; do sleep 8; waited=$((waited + 10)); done
  echo "  (machine ${u}% busy before the run, waited ${waited} s)"
}

export -f busy quiet
timed() {  # timed NAME CMD...: under the lock, after the machine is quiet, with /usr/bin/time -v into DIR/NAME_time.txt
  local name=$1; shift
  $LOCK bash -c 'quiet; exec /usr/bin/time -v -o "$0" "$@"' "$D/${name}_time.txt" "$@"
}

for src in scripts/gspo_model.py scripts/export_hf.py; do  # a stale export would measure the old model
  if [ "$src" -nt "$D/model.pt" ]; then rm -f "$D/setup.json"; fi
done
if [ ! -f "$D/setup.json" ]; then
  load "setup: tokenizer, Qwen3 model, prompts, gspo export"
  $B setup --dir "$D" 2>&1 | grep -v -e "^\s*$" -e "Writing model shards" | tail -3
fi
$B config --dir "$D" --warmup "$WARMUP" --steps "$GSPO_STEPS"

load "gspo train: $WARMUP + $GSPO_STEPS rollout steps"
rm -rf "$D/gspo_run"
timed gspo build/gspo train --config "$D/gspo.yaml" > "$D/gspo_train.log" 2>&1
grep -h "machine" "$D/gspo_train.log" || true

load "TRL GRPOTrainer: $WARMUP + $TRL_STEPS rollout steps"
timed trl $B trl --dir "$D" --warmup "$WARMUP" --steps "$TRL_STEPS" > "$D/trl.log" 2>&1
grep -h "machine" "$D/trl.log" || true

load "transformers generate, batch 1 and 64"
timed hf_generate $B generate --dir "$D" --batches 1 64 > "$D/hf_generate.log" 2>&1
grep -h "machine" "$D/hf_generate.log" || true

load "gspo sampler (bench_sampling), batch 1..64"
timed bench_sampling build/bench/bench_sampling "$D/model.pt" > "$D/bench_sampling.txt" 2>&1
grep -h "machine" "$D/bench_sampling.txt" || true

load "done in $(( $(date +%s) - t0 )) s"
echo
$B table --dir "$D" | tee "$D/table.md"
