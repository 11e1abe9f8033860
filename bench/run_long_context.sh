#!/usr/bin/env bash
# Peak memory and seconds of one GSPO training step on long responses (issue #22 item 7; docs/performance.md, "Long
# responses"). A benchmark, not a test. Needs build/bench/bench_long_context (bash scripts/build.sh) and the pinned
# Python environment (random models made here with transformers; nothing downloaded).
#
#   bash bench/run_long_context.sh [DIR]     # DIR defaults to runs/long_context; the table also goes to DIR/table.md
#
# Each cell is one fresh process (bench/bench_long_context.cpp): 2 rows, prompt 16, responses of exactly L tokens,
# the old-log-prob pass, then forward + backward + AdamW. Columns add the issue's items one at a time:
#   before   the architecture as shipped before (matmul + softmax attention), logits_from, whole mini-batch
#   +sdpa    item 1: scaled_dot_product_attention, still logits_from and no checkpointing
#   +ckpt    item 2: gspo drives the layers, activation checkpointing, [N, V] logits of the response tokens
#   +head    item 3: the chunked head (1024 tokens a chunk): the defaults of gspo train
#   +micro   item 4: micro-batches by token budget (algorithm.micro_batch_tokens = one row): one row per forward
# A cell whose process passes LIMIT_MB of resident memory is stopped and shown as "> LIMIT"; once a column has
# been stopped, its longer lengths are not tried. Environment: LIMIT_MB (default 20000: the machine has 24 GB),
# BYTE_LENGTHS (1024 2048 4096 8192 16384), QWEN_LENGTHS (1024 2048 4096 8192), THREADS (all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/pyenv.sh
D=${1:-runs/long_context}
LIMIT_MB=${LIMIT_MB:-20000}
BYTE_LENGTHS=${BYTE_LENGTHS:-1024 2048 4096 8192 16384}
QWEN_LENGTHS=${QWEN_LENGTHS:-1024 2048 4096 8192}
BENCH=build/bench/bench_long_context
[ -x "$BENCH" ] || { echo "no $BENCH: run bash scripts/build.sh" >&2; exit 2; }
mkdir -p "$D"
if [ ! -f "$D/models/qwen3v_before.pt" ] || [ scripts/gspo_model.py -nt "$D/models/byte4x512.pt" ]; then
  echo "[$(date +%T)] making the models in $D/models"
  "$GSPO_PY" bench/make_long_context_models.py --out "$D/models"
fi

# run_cell OUT_JSON ARGS...: the bench under a resident-memory watchdog; prints the JSON line or "> LIMIT".
run_cell() {
  local out=$1; shift
  "$BENCH" "$@" > "$out" 2> "$out.err" &
  local pid=$! peak=0 rss
  while kill -0 "$pid" 2>/dev/null; do
    rss=$(awk '/^VmRSS:/{print int($2/1024)}' "/proc/$pid/status" 2>/dev/null || echo 0)
    [ "${rss:-0}" -gt "$peak" ] && peak=$rss
    if [ "${rss:-0}" -gt "$LIMIT_MB" ]; then kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
      echo "{\"stopped_at_mb\": $rss}" > "$out"; return; fi
    sleep 0.2
  done
  wait "$pid" || { echo "{\"failed\": true}" > "$out"; cat "$out.err" >&2; }
}

# cell JSON -> "peak MB / update s" (the step's peak: the larger of the two phases)
fmt() {
  "$GSPO_PY" -c 'import json,sys; j=json.load(open(sys.argv[1]))
if "stopped_at_mb" in j: print("> %d MB (stopped)" % int(sys.argv[2]))
elif "failed" in j: print("failed")
else: print("%d MB, %.1f s" % (max(j["peak_mb_logprobs"], j["peak_mb_update"]), j["logprob_s"] + j["update_s"]))' "$1" "$LIMIT_MB"
}

columns=(before sdpa ckpt head micro)
table() {  # table NAME MODEL_BASE LENGTHS
  local name=$1 base=$2 lengths=$3 col L
  declare -A stopped=()
  {
    echo "### $name: 2 rows, prompt 16, one GSPO step (old log-probs + forward/backward + AdamW); peak RSS, seconds"
    echo
    echo "| response | before | +sdpa (1) | +checkpointing (2) | +chunked head (3) | +micro-batch tokens (4) |"
    echo "|---|---|---|---|---|---|"
  } >> "$D/table.md"
  for L in $lengths; do
    local row="| $L |"
    for col in "${columns[@]}"; do
      local out="$D/${name}_${col}_${L}.json" args=()
      case $col in
        before) args=("$D/models/${base}_before.pt" --checkpointing 0 --chunked-head 0) ;;
        sdpa)   args=("$D/models/${base}.pt" --checkpointing 0 --chunked-head 0) ;;
        ckpt)   args=("$D/models/${base}.pt" --checkpointing 1 --chunked-head 0) ;;
        head)   args=("$D/models/${base}.pt" --checkpointing 1 --chunked-head 1) ;;
        micro)  args=("$D/models/${base}.pt" --checkpointing 1 --chunked-head 1 --micro-tokens $((16 + L))) ;;
      esac
      if [ -n "${stopped[$col]:-}" ]; then row="$row not run |"; continue; fi
      echo "[$(date +%T)] $name $col L=$L"
      run_cell "$out" "${args[@]}" --response "$L" --rows 2 --prompt 16
      grep -q stopped_at_mb "$out" && stopped[$col]=1
      row="$row $(fmt "$out") |"
    done
    echo "$row" | tee -a "$D/table.md"
  done
  echo >> "$D/table.md"
}

: > "$D/table.md"
echo "machine: $(nproc) cores, $(awk '/MemTotal/{print int($2/1048576)}' /proc/meminfo) GB, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); limit $LIMIT_MB MB" | tee -a "$D/table.md"
echo >> "$D/table.md"
table byte4x512 byte4x512 "$BYTE_LENGTHS"
[ -f "$D/models/qwen3v.pt" ] && table qwen3_vocab qwen3v "$QWEN_LENGTHS"
echo "table: $D/table.md"
cat "$D/table.md"
