#!/usr/bin/env bash
# Expert parallelism under a memory cap (#37 item 6, docs/distributed.md "Expert parallelism"): a random Qwen3-MoE of
# 101.6M parameters (4 layers, hidden 256, 32 experts of MLP 1024, top-4; 100.7M in the experts: scripts/make_moe_model.py)
# trained 3 steps with ZeRO-1, first uncapped on one process and on 4 ranks with distributed.expert_parallel 4 (peak
# RSS per rank, seconds a step, seconds in collectives, gspo plan's figure beside it, the node's host memory while the
# 4 ranks load in turns), then both under `ulimit -d CAP_MB` a process (RLIMIT_DATA: private writable memory, which
# holds every tensor): one process fails to allocate, each expert-parallel rank trains.
# usage: bash bench/run_ep_memory.sh [CAP_MB]   (default 3000; ~8 minutes on 2 cores; build/gspo must exist)
set -uo pipefail
cd "$(dirname "$0")/.."
CAP_MB="${1:-3000}"
source scripts/pyenv.sh; PY="$GSPO_PY"
W="$(mktemp -d)"; trap 'rm -rf "$W"' EXIT
"$PY" scripts/make_moe_model.py --out "$W/moe.pt" --layers 4 --hidden 256 --experts 32 --moe-intermediate 1024 \
  --top-k 4 >"$W/make.log" 2>&1 || { echo "scripts/make_moe_model.py failed:"; tail -5 "$W/make.log"; exit 1; }
ARGS=(train -c configs/tiny.yaml --set "model.path=$W/moe.pt" --set train.max_steps=3 --set rollout.prompts_per_step=4
      --set rollout.group_size=4 --set rollout.max_new_tokens=16 --set algorithm.num_minibatches=2
      --set distributed.zero_stage=1 --set reward.kind=regex --set 'reward.regex=^[\x00-\x7f]'
      --set logging.progress=false --set checkpoint.every=0 --set data.holdout=0)
summary() {  # summary NAME RC: peak RSS (largest rank), median step seconds, seconds in collectives, exit status
  if [ -s "$W/$1/metrics.jsonl" ]; then
    "$PY" -c "
import json, statistics, sys
ms = [json.loads(l) for l in open(sys.argv[1])]
print(f'peak RSS {max(m[\"peak_rss_mb\"] for m in ms):.0f} MB (rollout {max(m[\"peak_mb_rollout\"] for m in ms):.0f}), '
      f'model state {ms[-1][\"model_state_mb_per_rank\"]:.0f} MB, '
      f'{statistics.median(m[\"time_step_s\"] for m in ms):.2f} s a step '
      f'({statistics.median(m[\"time_sample_s\"] for m in ms):.2f} sampling), '
      f'{statistics.median(m.get(\"time_comm_s\", 0) for m in ms):.2f} s of it in collectives', end='')" "$W/$1/metrics.jsonl"
  else printf "no step finished: %s" "$(grep -m1 -iE 'error|bad_alloc|memory' "$W/$1.log" | cut -c1-110)"; fi
  echo " (exit $2)"
}
one() {  # one NAME CAP_KB: one process, 2 threads
  ( [ "$2" != 0 ] && ulimit -d "$2"; build/gspo "${ARGS[@]}" --set train.threads=2 --set "train.output_dir=$W/$1" ) \
    >"$W/$1.log" 2>&1
  summary "$1" $?
}
ep() {  # ep NAME CAP_KB: 4 ranks, 1 thread each, experts shared by all 4
  ( [ "$2" != 0 ] && ulimit -d "$2"; scripts/launch_local.sh -n 4 --port $((29700 + RANDOM % 200)) build/gspo "${ARGS[@]}" \
    --set train.threads=1 --set distributed.expert_parallel=4 --set "train.output_dir=$W/$1" ) >"$W/$1.log" 2>&1
  summary "$1" $?
}
plan() { build/gspo plan "${ARGS[@]:1}" --prompt-tokens 8 "$@" 2>/dev/null | grep -m1 "^peak per rank" | cut -c16-50; }
echo "model: $(build/gspo inspect "$W/moe.pt" | grep -m1 parameters)"
echo "1 process, uncapped:        $(one one 0)   plan: $(plan)"
echo "4 ranks, E = 4, uncapped:   $(ep ep 0)   plan: $(plan -n 4 --set distributed.expert_parallel=4)"
grep -o "loaded in turns by.*" "$W/ep.log" | sed 's/^/  /'
echo "cap: ulimit -d $((CAP_MB * 1024)) KB ($CAP_MB MB of private writable memory a process)"
echo "1 process, capped:          $(one one_cap $((CAP_MB * 1024)))"
echo "4 ranks, E = 4, capped:     $(ep ep_cap $((CAP_MB * 1024)))"
