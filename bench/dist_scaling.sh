#!/usr/bin/env bash
# Data-parallel cost on this machine: the same global batch (12 prompts x 8 samples, 4 mini-batches) on 1, 2 and
# 3 CPU processes (1 thread each) over Gloo on loopback, for the tiny demo model and the 3.9M-parameter bench
# model. Prints per-step medians: step, sampling, update and communication time, communication share and
# megabytes per rank. On 2 cores 3 ranks oversubscribe the machine; the figures show the cost structure, not
# speed-up.
# usage: bash bench/dist_scaling.sh [STEPS]   (build/gspo must exist)
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS="${1:-20}"
source scripts/pyenv.sh; PY="$GSPO_PY"
[ -f models/tiny_demo.pt ] || "$PY" scripts/make_tiny_model.py --out models/tiny_demo.pt --prior-text 0123456789 --prior-logit 3.0
[ -f models/bench_small.pt ] || "$PY" scripts/make_tiny_model.py --out models/bench_small.pt --layers 4 --hidden 256 \
  --heads 8 --kv-heads 2
OUT="$(mktemp -d)"; trap 'rm -rf "$OUT"' EXIT
for model in tiny_demo bench_small; do
  for n in 1 2 3; do
    port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    scripts/launch_local.sh -n $n --port "$port" build/gspo train -c configs/tiny.yaml \
      --set model.path=models/$model.pt --set rollout.prompts_per_step=12 --set train.max_steps=$STEPS \
      --set train.threads=1 --set logging.progress=false --set "train.output_dir=$OUT/${model}_$n" >/dev/null 2>&1
  done
done
"$PY" - "$OUT" "$STEPS" <<'PY'
import json, statistics, sys
out, steps = sys.argv[1], int(sys.argv[2])
print(f"per-step medians over {steps} steps (first 2 dropped); global batch 12 x 8, 4 mini-batches, 1 thread per rank")
print(f"{'model':12} {'ranks':>5} {'step s':>8} {'sample s':>9} {'update s':>9} {'comm s':>8} {'comm share':>10} {'comm MB/rank':>12}")
for model in ("tiny_demo", "bench_small"):
    for n in (1, 2, 3):
        ms = [json.loads(l) for l in open(f"{out}/{model}_{n}/metrics.jsonl")][2:]
        med = lambda k: statistics.median(m.get(k, 0.0) for m in ms)
        print(f"{model:12} {n:>5} {med('time_step_s'):8.3f} {med('time_sample_s'):9.3f} {med('time_update_s'):9.3f} "
              f"{med('time_comm_s'):8.3f} {med('comm_frac'):10.3f} {med('comm_mb'):12.2f}")
PY
