#!/usr/bin/env bash
# What ZeRO-3's overlap (distributed.zero3_overlap) buys on this machine: the same 2-rank Gloo run with overlap on
# and off (every collective blocking), alternated PAIRS times so drift of the machine hits both alike. A float32
# random model of 31.7M parameters (8 layers, hidden 512, MLP 2048, byte vocabulary) whose layer gathers (8 MB each)
# and gradient reduce-scatters are large against its compute; configs/tiny.yaml's task, 8 prompts x 4 samples of 48
# tokens, 2 mini-batches, 1 compute thread a rank. Prints per-step medians (first step dropped) of the old-log-prob
# pass, the update, the whole step, the seconds a rank waited in collectives (time_comm_s) and the share of layer
# gathers that were prefetched.
# usage: bench/run_zero3_overlap.sh [BUILD_DIR] [PAIRS] [STEPS]   (about 5 minutes on 2 cores with the defaults)
set -euo pipefail
SRC="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$SRC/build}"; PAIRS="${2:-3}"; STEPS="${3:-6}"
source "$SRC/scripts/pyenv.sh" >/dev/null 2>&1 || true
PY="${GSPO_PY:-python3}"
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
"$PY" "$SRC/scripts/make_tiny_model.py" --out "$WORK/m32.pt" --layers 8 --hidden 512 --heads 8 --kv-heads 4 \
  --intermediate 2048 --max-seq-len 128 --seed 1 >/dev/null
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
for p in $(seq "$PAIRS"); do
  for overlap in true false; do
    "$SRC/scripts/launch_local.sh" -n 2 --port "$(free_port)" "$BUILD/gspo" train -c "$SRC/configs/tiny.yaml" \
      --set "model.path=$WORK/m32.pt" --set rollout.prompts_per_step=8 --set rollout.group_size=4 \
      --set rollout.max_new_tokens=48 --set rollout.min_new_tokens=48 --set algorithm.num_minibatches=2 \
      --set "train.max_steps=$STEPS" --set data.holdout=0 --set logging.progress=false --set checkpoint.every=0 \
      --set train.threads=1 --set distributed.zero_stage=3 --set "distributed.zero3_overlap=$overlap" \
      --set "train.output_dir=$WORK/run_${overlap}_$p" >"$WORK/run_${overlap}_$p.log" 2>&1 \
      || { echo "run failed: overlap=$overlap pair $p"; tail -20 "$WORK/run_${overlap}_$p.log"; exit 1; }
  done
done
"$PY" - "$WORK" "$PAIRS" <<'PY'
import glob, json, statistics, sys
work, pairs = sys.argv[1], int(sys.argv[2])
keys = ["time_old_logprobs_s", "time_update_s", "time_step_s", "time_comm_s", "zero3_prefetch_frac"]
print(f"2 Gloo ranks, ZeRO-3, 31.7M float32 parameters; medians over {pairs} runs x (steps - 1) of each setting")
print("| zero3_overlap | old log-probs (s) | update (s) | step (s) | waiting in collectives (s) | gathers prefetched |")
print("|---|---|---|---|---|---|")
med = {}
for overlap in ("true", "false"):
    rows = []
    for f in sorted(glob.glob(f"{work}/run_{overlap}_*/metrics.jsonl")):
        rows += [json.loads(l) for l in open(f)][1:]
    med[overlap] = {k: statistics.median(r[k] for r in rows) for k in keys}
    m = med[overlap]
    print(f"| {overlap} | {m['time_old_logprobs_s']:.2f} | {m['time_update_s']:.2f} | {m['time_step_s']:.2f} | "
          f"{m['time_comm_s']:.2f} | {m['zero3_prefetch_frac']:.2f} |")
on, off = med["true"], med["false"]
print(f"overlap on / off: update {on['time_update_s'] / off['time_update_s']:.2f}x, step "
      f"{on['time_step_s'] / off['time_step_s']:.2f}x, waiting {on['time_comm_s'] / off['time_comm_s']:.2f}x")
PY
