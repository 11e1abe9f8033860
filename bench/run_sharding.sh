#!/usr/bin/env bash
# Memory per rank and seconds per step of ZeRO-0 (plain data parallelism), ZeRO-1 and ZeRO-3 on 1, 2 and 4 Gloo
# ranks of this machine, for a model large for it: a random ~0.3B-parameter decoder (scripts/make_tiny_model.py:
# 6 layers, hidden 2048, 16 heads, MLP 5632; byte vocabulary), bf16 weights with float32 masters, one training step
# of 4 prompts x 2 samples x 16 tokens. Each configuration runs in a memory cgroup capped at CAP_GB (default 14) when
# the cgroup v1 memory controller is writable (root), so "out of memory" kills only that run; elsewhere the cap is
# the machine's own memory. Prints a Markdown table (docs/distributed.md quotes it): `gspo plan`'s predicted peak per
# rank, the measured peak RSS per rank (the largest over ranks: metrics' peak_rss_mb), model_state_mb_per_rank,
# time_step_s, seconds in collectives (time_comm_s: with distributed.zero3_overlap, only what was not hidden behind
# compute) and ZeRO-3's share of prefetched layer gathers, or how the run ended. Rows "RANKS:STAGE" or
# "RANKS:3:blocking" (ZeRO-3 with distributed.zero3_overlap false: the same step with every collective blocking).
# usage: [ROWS="4:1 4:3"] [CAP_GB=14] bench/run_sharding.sh [BUILD_DIR] [WORK_DIR]   (about 20 minutes on 2 cores)
set -u
SRC="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$SRC/build}"; WORK="${2:-/tmp/gspo_sharding}"
GSPO="$BUILD/gspo"; CAP_GB="${CAP_GB:-14}"
source "$SRC/scripts/pyenv.sh" >/dev/null 2>&1 || true
PY="${GSPO_PY:-python3}"
mkdir -p "$WORK"
MODEL="$WORK/m300.pt"
if [ ! -f "$MODEL" ]; then
  echo "making the ~0.3B-parameter model (once) ..."
  "$PY" "$SRC/scripts/make_tiny_model.py" --out "$MODEL" --layers 6 --hidden 2048 --heads 16 --kv-heads 16 \
    --intermediate 5632 --max-seq-len 64 --seed 1 >/dev/null || { echo "make_tiny_model.py failed"; exit 1; }
fi

CG=/sys/fs/cgroup/memory/gspo_sharding
capped() {  # runs "$@" in the memory cgroup when it can be made
  if mkdir -p "$CG" 2>/dev/null && echo $((CAP_GB * 1024 * 1024 * 1024)) >"$CG/memory.limit_in_bytes" 2>/dev/null; then
    echo 0 >"$CG/memory.swappiness" 2>/dev/null
    bash -c 'echo $$ > '"$CG"'/tasks && exec "$@"' capped "$@"
  else
    "$@"
  fi
}
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

TRAIN=(train -c "$SRC/configs/tiny.yaml" --set "model.path=$MODEL" --set model.dtype=bfloat16
       --set rollout.prompts_per_step=4 --set rollout.group_size=2 --set rollout.max_new_tokens=16
       --set rollout.min_new_tokens=16 --set algorithm.num_minibatches=1 --set train.max_steps=1
       --set data.holdout=0 --set logging.progress=false --set checkpoint.every=0 --set train.threads=1
       --set distributed.timeout_s=900 --set distributed.init_timeout_s=300)

row() {  # row STAGE RANKS [blocking]
  local stage="$1" n="$2" mode="${3:-}" out="$WORK/z${1}_w${2}${3:+_$3}"
  local sets=(--set "train.output_dir=$out" --set "distributed.zero_stage=$stage")
  [ "$mode" = blocking ] && sets+=(--set distributed.zero3_overlap=false)
  rm -rf "$out"
  local plan_gb
  plan_gb=$("$GSPO" plan "${TRAIN[@]:1}" "${sets[@]:2}" -n "$n" --prompt-tokens 8 --json 2>/dev/null |
            "$PY" -c 'import json,sys; print("%.2f" % (json.load(sys.stdin)["peak_mb"] / 1024))' 2>/dev/null || echo "?")
  local t0=$SECONDS rc
  if [ "$n" -eq 1 ]; then
    capped "$GSPO" "${TRAIN[@]}" "${sets[@]}" >"$out.log" 2>&1
  else
    capped "$SRC/scripts/launch_local.sh" -n "$n" --port "$(free_port)" "$GSPO" "${TRAIN[@]}" "${sets[@]}" \
      >"$out.log" 2>&1
  fi
  rc=$?
  local oom=""
  [ -f "$CG/memory.failcnt" ] && [ "$(cat "$CG/memory.failcnt")" -gt 0 ] && oom=" (cgroup limit hit)"
  [ -f "$CG/memory.failcnt" ] && echo 0 >"$CG/memory.failcnt" 2>/dev/null
  "$PY" - "$stage" "$n" "$rc" "$out" $((SECONDS - t0)) "$oom" "$mode" "$plan_gb" <<'PY'
import json, os, sys
stage, n, rc, out, wall, oom, mode, plan = sys.argv[1:]
name = f"ZeRO-{stage}" + (" (blocking)" if mode else "")
path = os.path.join(out, "metrics.jsonl")
if rc != "0" or not os.path.exists(path):
    print(f"| {name} | {n} | {plan} | - | - | - | - | - | exit {rc} after {wall} s{oom}: out of memory or failed "
          f"(see {out}.log) |")
    sys.exit(0)
m = [json.loads(l) for l in open(path)][-1]
comm = f"{m['time_comm_s']:.1f}" if "time_comm_s" in m else "-"
pre = f"{m['zero3_prefetch_frac']:.2f} of {m['zero3_gathers']}" if "zero3_gathers" in m else "-"
print(f"| {name} | {n} | {plan} | {m['peak_rss_mb'] / 1024:.2f} | {m['model_state_mb_per_rank'] / 1024:.2f} | "
      f"{m['time_step_s']:.1f} | {comm} | {pre} | ran ({wall} s with start-up) |")
PY
}

echo "model: $("$GSPO" inspect "$MODEL" 2>/dev/null | grep -m1 -i param || echo "$MODEL"); cap ${CAP_GB} GB per run"
echo
echo "| stage | ranks | plan: peak per rank (GiB) | peak RSS per rank (GiB, max over ranks) | model state per rank (GiB) | step (s) | collectives not overlapped (s) | layer gathers prefetched | outcome |"
echo "|---|---|---|---|---|---|---|---|---|"
# ROWS: "RANKS:STAGE[:blocking] ..." to run a subset.
for r in ${ROWS:-1:0 1:1 1:3 2:0 2:1 2:3 2:3:blocking 4:0 4:1 4:3 4:3:blocking}; do
  IFS=: read -r ranks stage mode <<<"$r"
  row "$stage" "$ranks" "$mode"
done
rmdir "$CG" 2>/dev/null || true
