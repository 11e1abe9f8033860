#!/usr/bin/env bash
# `gspo plan` for Qwen3-8B and Qwen3-30B-A3B (configs/hf/) with the two shipped GPU configs, at 8k and 16k-token
# responses on 1, 8 and 16 ranks, under ZeRO-0, ZeRO-1 and ZeRO-3, with and without a 20,000 MiB KV-cache budget.
# Prints the Markdown table docs/distributed.md quotes: peak GiB per rank and the phase that sets it. Seconds; no
# model is loaded (the shapes come from the config.json files).
# usage: bench/plan_qwen3.sh [BUILD_DIR]
set -euo pipefail
SRC="$(cd "$(dirname "$0")/.." && pwd)"
GSPO="${1:-$SRC/build}/gspo"
source "$SRC/scripts/pyenv.sh" >/dev/null 2>&1 || true
PY="${GSPO_PY:-python3}"

cell() {  # cell HF CONFIG RESPONSE RANKS STAGE [KV_MB]
  local sets=(--set "distributed.zero_stage=$5" --set "rollout.max_new_tokens=$3" --set distributed.expert_parallel=1)
  [ -n "${6:-}" ] && sets+=(--set "rollout.kv_cache_mb=$6")
  "$GSPO" plan -c "$SRC/configs/$2" --hf-config "$SRC/configs/hf/$1.json" -n "$4" --prompt-tokens 1024 --json \
    "${sets[@]}" | "$PY" -c 'import json,sys; p=json.load(sys.stdin); print("%.0f (%s)" % (p["peak_mb"] / 1024, p["peak_phase"]))'
}

echo "| model | settings | response | ranks | ZeRO-0 | ZeRO-1 | ZeRO-1 + kv_cache_mb 20000 | ZeRO-3 | ZeRO-3 + kv_cache_mb 20000 |"
echo "|---|---|---|---|---|---|---|---|---|"
for hf in qwen3-8b qwen3-30b-a3b; do
  name=$([ "$hf" = qwen3-8b ] && echo Qwen3-8B || echo Qwen3-30B-A3B)
  for conf in qwen3-0.6b-gspo.yaml qwen3-30b-a3b-gspo.yaml; do
    for resp in 8192 16384; do
      for n in 1 8 16; do
        echo "| $name | $conf | $((resp / 1024))k | $n | $(cell $hf $conf $resp $n 0) | $(cell $hf $conf $resp $n 1) |" \
             "$(cell $hf $conf $resp $n 1 20000) | $(cell $hf $conf $resp $n 3) | $(cell $hf $conf $resp $n 3 20000) |"
      done
    done
  done
done
