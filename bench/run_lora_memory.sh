#!/usr/bin/env bash
# LoRA against full fine-tuning under a memory cap (#36 item 7, docs/lora.md): a 68M-parameter random model (8
# layers, hidden 768, MLP 3072) trained 3 steps each way, first uncapped (peak RSS, seconds a step, gspo plan's
# figure beside it), then under `ulimit -d CAP_MB` (RLIMIT_DATA: the process's private writable memory, heap and
# anonymous maps, which hold every tensor): full fine-tuning (16 B a parameter of weights, gradients and AdamW
# moments) fails to allocate, LoRA (a frozen 4 B base, adapted weights copied once, float32 adapters) trains.
# Then, uncapped, LoRA on 2 ranks: ZeRO-1 (the base whole on each) against ZeRO-3 (the base sharded), and ZeRO-3
# trainers beside a rollout rank; last both on 2 ranks under `ulimit -d RANK_CAP_MB` a rank (default 1500).
# usage: bash bench/run_lora_memory.sh [CAP_MB]   (default 1700; ~4 minutes on 2 cores; build/gspo must exist)
set -uo pipefail
cd "$(dirname "$0")/.."
CAP_MB="${1:-1700}"
source scripts/pyenv.sh; PY="$GSPO_PY"
W="$(mktemp -d)"; trap 'rm -rf "$W"' EXIT
"$PY" scripts/make_tiny_model.py --out "$W/m68.pt" --layers 8 --hidden 768 --heads 12 --kv-heads 4 \
  --intermediate 3072 --prior-text 0123456789 >/dev/null
ARGS=(train -c configs/tiny.yaml --set "model.path=$W/m68.pt" --set train.max_steps=3 --set rollout.prompts_per_step=8
      --set algorithm.num_minibatches=2 --set train.threads=2 --set logging.progress=false --set checkpoint.every=0)
one() {  # one NAME CAP_KB [--set ...]: prints peak RSS, median step seconds, exit status
  local name="$1" cap="$2"; shift 2
  ( [ "$cap" != 0 ] && ulimit -d "$cap"; build/gspo "${ARGS[@]}" --set "train.output_dir=$W/$name" "$@" ) >"$W/$name.log" 2>&1
  local rc=$?
  if [ -s "$W/$name/metrics.jsonl" ]; then
    "$PY" -c "
import json, statistics, sys
ms = [json.loads(l) for l in open(sys.argv[1])]
print(f'peak RSS {max(m[\"peak_rss_mb\"] for m in ms):.0f} MB, {statistics.median(m[\"time_step_s\"] for m in ms):.2f} s a step', end='')" "$W/$name/metrics.jsonl"
  else printf "no step finished: %s" "$(grep -m1 -iE 'error|bad_alloc|memory' "$W/$name.log" | cut -c1-100)"; fi
  echo " (exit $rc)"
}
plan() { build/gspo plan -c configs/tiny.yaml --set "model.path=$W/m68.pt" --set rollout.prompts_per_step=8 \
  --set algorithm.num_minibatches=2 --prompt-tokens 8 "$@" 2>/dev/null | grep -m1 "^peak per rank" | cut -c16-40; }
LORA=(--set model.lora_rank=16 --set optimizer.lr=1e-3)
echo "model: $(build/gspo inspect "$W/m68.pt" | grep -m1 parameters)"
echo "full fine-tuning, uncapped:   $(one full 0)   plan: $(plan)"
echo "LoRA r 16, uncapped:          $(one lora 0 "${LORA[@]}")   plan: $(plan "${LORA[@]}")"
echo "cap: ulimit -d $((CAP_MB * 1024)) KB ($CAP_MB MB of private writable memory)"
echo "full fine-tuning, capped:     $(one full_cap $((CAP_MB * 1024)))"
echo "LoRA r 16, capped:            $(one lora_cap $((CAP_MB * 1024)) "${LORA[@]}")"
# ZeRO-3 over the frozen base (model.lora_rank with distributed.zero_stage 3), uncapped, 1 thread a rank: the largest
# rank's peak RSS and its update-phase peak. Beside a rollout rank the trainers never gather the base whole.
many() {  # many NAME NPROC [--set ...]: like one, launched as NPROC local ranks (under `ulimit -d $RANK_CAP_KB` if set)
  local name="$1" n="$2"; shift 2
  [ -n "${RANK_CAP_KB:-}" ] && ulimit -d "$RANK_CAP_KB"
  scripts/launch_local.sh -n "$n" --port $((29700 + RANDOM % 200)) build/gspo "${ARGS[@]}" --set train.threads=1 \
    --set "train.output_dir=$W/$name" "$@" >"$W/$name.log" 2>&1
  local rc=$?
  if [ -s "$W/$name/metrics.jsonl" ]; then
    "$PY" -c "
import json, statistics, sys
ms = [json.loads(l) for l in open(sys.argv[1])]
print(f'peak RSS {max(m[\"peak_rss_mb\"] for m in ms):.0f} MB (largest trainer), update phase {max(m[\"peak_mb_update\"] for m in ms):.0f} MB, '
      f'{statistics.median(m[\"time_step_s\"] for m in ms):.2f} s a step', end='')" "$W/$name/metrics.jsonl"
  else printf "no step finished: %s" "$(grep -m1 -iE 'error|bad_alloc|memory' "$W/$name.log" | cut -c1-100)"; fi
  echo " (exit $rc)"
}
Z3=(--set distributed.zero_stage=3 --set train.activation_checkpointing=true)
echo "LoRA r 16, 2 ranks ZeRO-1:    $(many lora_z1 2 "${LORA[@]}" --set distributed.zero_stage=1)"
echo "LoRA r 16, 2 ranks ZeRO-3:    $(many lora_z3 2 "${LORA[@]}" "${Z3[@]}")   plan: $(plan "${LORA[@]}" "${Z3[@]}" -n 2)"
echo "LoRA r 16, ZeRO-3, 2 trainers + 1 rollout rank: $(many lora_z3r 3 "${LORA[@]}" "${Z3[@]}" \
  --set distributed.rollout_ranks=1)"
RANK_CAP_MB="${RANK_CAP_MB:-1500}"
echo "cap: ulimit -d $((RANK_CAP_MB * 1024)) KB a rank"
echo "LoRA r 16, 2 ranks ZeRO-1, capped: $(RANK_CAP_KB=$((RANK_CAP_MB * 1024)) many lora_z1_cap 2 "${LORA[@]}" --set distributed.zero_stage=1)"
echo "LoRA r 16, 2 ranks ZeRO-3, capped: $(RANK_CAP_KB=$((RANK_CAP_MB * 1024)) many lora_z3_cap 2 "${LORA[@]}" "${Z3[@]}")"
