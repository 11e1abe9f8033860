#!/usr/bin/env bash
# Everything a session with a lent GPU machine should check and measure (issue 38; docs/gpu.md), in as few calls as
# the device time allows (15 minutes a session, the machine's start included; one call runs at most 10 minutes).
#
#   here:  bash scripts/gpu_pack.sh                 # builds, packs binaries, libraries, models, tokenizer into .gpu/
#   there: STAGES="bin sample profile eager cuda" bash scripts/gpu_check.sh  # call 1, carry [".gpu", ".deps"] (~8 min)
#          BUDGET_S=<left - 60> STAGES="bin train long trl zero3 optim" bash scripts/gpu_check.sh  # call 2 at once
# (estimates from the 2026-11-27 H200 run: docs/gpu.md; a stage that does not fit what is left is skipped, saying so)
#
# Stages (each prints summary lines; logs and JSON cells go to /tmp/gpu_check/logs, and after every stage to $OUT as
# logs.tgz beside tables.md and trl_table.md: the device tool returns at most 8 files):
#   bin     use the binaries of .gpu/ (built here from the commit in .gpu/commit); falls back to `build`
#   build   build there from source (scripts/gpu_machine_build.sh, needs .deps/ carried; ~2.5 min of device time)
#   cuda    the CUDA test cases (tests/cuda/test_cuda.cpp) against the carried test models
#   train   gspo train on the GPU: the tiny default (eager and CUDA-graph decode), the tool episodes, LoRA
#   sample  a Qwen3-0.6B-shaped random bf16 model (real vocabulary): gspo's CUDA-graph decode at 64, 256 and 1024 rows
#           (kv_cache_fraction 0.3 with continuous batching at 256+), fixed-length responses, against the live-key
#           bandwidth bound; batch-1 decode; the copy bandwidth and bf16 GEMM rate measured in the same call
#   profile one steady decode step under the LibTorch profiler at 64 and 256 rows, graphed and eager (bench_rollout
#           --profile): operators a step, device kernels by time, which attention kernel ran (#53 item 3)
#   eager   eager decode and transformers `generate` (static cache, SDPA) at 256 tokens, graphed cells beside them
#           so both pair with generate; eager batch-1 decode
#   long    item 5: one GSPO step of a Qwen3-1.7B-shaped bf16 model on two 16k-token responses; peak_mb_update
#           against `gspo plan` for the same config, and the update's MFU against the measured GEMM rate
#   zero3   item 6: the same model exported in float32, one step at 4k tokens under ZeRO-3 on one rank, against its plan
#   optim   issue 56: that ZeRO-3 step with 8-bit AdamW moments, and with them offloaded to host memory (~2 min)
#   trl     item 4: bench/trl_side_by_side.py with TRL's wheels (.gpu/whl, WHEELS=1 bash scripts/gpu_pack.sh)
#   suite   the whole ctest suite (build mode only; CI runs it on CPUs anyway)
# BUDGET_S: this call's seconds (540; see fits below). GPU_CHECK_DEVICE=cpu runs the same stages on a CPU at toy
# sizes (the script's own dry run; tests/gpu/test_gpu_check_dry_run.sh). GPU_DIR: the pack (.gpu); GPU_CHECK_WORK:
# models, runs, logs (/tmp/gpu_check).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RESULT="${OUT:-runs/gpu_check}"
WORK="${GPU_CHECK_WORK:-/tmp/gpu_check}"
LOGS="$WORK/logs"
G="${GPU_DIR:-.gpu}"; [[ "$G" == /* ]] || G="$ROOT/$G"  # the pack of scripts/gpu_pack.sh
mkdir -p "$RESULT" "$LOGS"
STAGES="${STAGES:-bin sample profile eager cuda}"
DEV="${GPU_CHECK_DEVICE:-cuda}"
PY="${GSPO_PY:-python3}"
has() { [[ " $STAGES " == *" $1 "* ]]; }
# A call has BUDGET_S seconds (default 540: a device call runs 600 at most; give the second call what `status` says is
# left, less a minute). A stage whose estimate (on an H100) does not fit what is left is skipped and says so.
T0=$(date +%s)
BUDGET_S="${BUDGET_S:-$([ "${GPU_CHECK_DEVICE:-cuda}" = cuda ] && echo 540 || echo 3600)}"
fits() {  # stage estimate_s
  local left=$((BUDGET_S - ($(date +%s) - T0)))
  [ "$left" -ge "$2" ] && return 0
  echo "[$(date +%T)] $1: SKIPPED (estimated $2 s, $left s left of BUDGET_S=$BUDGET_S)"; return 1
}
say() { echo "[$(date +%T)] $*"; }
# The tables and every log into $RESULT (after each stage, so a call cut short still returns what it measured).
bundle() {
  "$PY" bench/gpu_bench.py table --dir "$LOGS" > "$LOGS/tables.md" 2> "$LOGS/tables.err"
  [ -s "$LOGS/profile.md" ] && { echo "### profile: one steady decode step"; echo; cat "$LOGS/profile.md"; } >> "$LOGS/tables.md"
  cp "$LOGS/tables.md" "$RESULT/"; [ -f "$LOGS/trl_table.md" ] && cp "$LOGS/trl_table.md" "$RESULT/"
  tar czf "$RESULT/logs.tgz" -C "$WORK" logs
}

if [ -d "$G/whl" ] && compgen -G "$G/whl/*.whl" >/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$G"/whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
if [ "$DEV" = cuda ]; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
fi
"$PY" -c 'import torch, transformers; print("python:", torch.__version__, "CUDA", torch.version.cuda, "transformers", transformers.__version__)'

MODE=""  # pack: the carried binaries; build: compiled here
if has bin && [ -x "$G/bin/gspo" ]; then
  TORCH_LIB=$("$PY" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
  # libcudart.so.13 and the other CUDA runtime libraries: the nvidia-* wheels beside torch, else the toolkit.
  NV_LIBS=$("$PY" - <<'EOF'
import glob, os, torch
site = os.path.dirname(os.path.dirname(torch.__file__))
print(":".join(sorted({os.path.dirname(p) for p in glob.glob(os.path.join(site, "nvidia", "**", "lib*.so*"), recursive=True)})))
EOF
)
  export LD_LIBRARY_PATH="$G/lib:$TORCH_LIB:$NV_LIBS:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
  if "$G/bin/gspo" --version > "$LOGS/bin.log" 2>&1; then
    MODE=pack GSPO="$G/bin/gspo" TESTS="$G/bin/gspo_tests" ROLLOUT="$G/bin/bench_rollout"
    # The test binary reads its paths beside itself (tests/configured_paths.h).
    printf 'GSPO_TEST_MODELS=%s\nGSPO_TEST_DATA=%s\nGSPO_SOURCE_DIR=%s\nGSPO_BINARY=%s\nGSPO_PYTHON=%s\n' \
      "$G/test_models" "$ROOT/tests/data" "$ROOT" "$GSPO" "$(command -v "$PY")" > "$G/bin/configured_paths.txt"
    built=$(head -1 "$G/commit") head=$(git rev-parse HEAD 2>/dev/null || true)  # no .git where only the tree travels
    dirty=$(sed -n 2p "$G/commit")
    say "bin: $(cat "$LOGS/bin.log"), packed from ${built:0:12}${dirty:+ ($dirty)}$([ -z "$head" ] || [ "$built" = "$head" ] || echo ", HEAD is ${head:0:12}")"
  else
    say "bin: the packed gspo does not run here: $(tail -2 "$LOGS/bin.log"); building from source"
    STAGES="$STAGES build"
  fi
fi
if has build; then
  if GSPO_SKIP_TESTS=1 bash scripts/gpu_machine_build.sh > "$LOGS/build.log" 2>&1; then
    source build/env.sh
    MODE=build GSPO="$ROOT/build/gspo" TESTS=build/tests/gspo_tests ROLLOUT=build/bench/bench_rollout
    say "built from source"
  else
    tail -40 "$LOGS/build.log"; say "gpu_check: build failed"; exit 1
  fi
fi
[ -n "$MODE" ] || { say "gpu_check: no binaries (no pack at $G: bash scripts/gpu_pack.sh here, carry it; or STAGES with build)"; exit 1; }

if has cuda && fits cuda 40; then
  [ "$MODE" = build ] && (cd build && ctest -R '^make_test_models$' > /dev/null)
  timeout 300 "$TESTS" "[cuda]" > "$LOGS/cuda_tests.log" 2>&1
  say "cuda tests rc=$?: $(grep -E '^(All tests passed|test cases:)' "$LOGS/cuda_tests.log" | tail -1)," \
    "of which $(grep -c '^SKIPPED' "$LOGS/cuda_tests.log") only printed SKIPPED"
  grep -E 'FAILED|REQUIRE|CHECK' "$LOGS/cuda_tests.log" | head -20
  bundle
fi
if has suite && [ "$MODE" = build ] && fits suite 300; then
  (cd build && timeout "${SUITE_TIMEOUT_S:-400}" ctest -j 12 --output-on-failure > "$LOGS/ctest.log" 2>&1)
  say "suite rc=$?: $(grep -E 'tests passed' "$LOGS/ctest.log")"
  grep -E '\((Failed|Skipped|Not Run|Timeout)\)' "$LOGS/ctest.log" | head -20
fi

# Prints the median of the metrics of steps 1.. (step 0 warms up) and the first/last mean reward.
summary() {
  "$PY" - "$1" "$2" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if "time_step_s" in r]
if not rows:
    print(f"{sys.argv[2]}: no metrics"); sys.exit(0)
timed = rows[1:] or rows
med = lambda k: statistics.median(r.get(k, float("nan")) for r in timed)
rw = [r.get("reward_mean", float("nan")) for r in rows]
k = max(1, len(rw) // 10)
print(f"{sys.argv[2]}: steps {len(rows)}  reward first10% {statistics.mean(rw[:k]):.3f} last10% {statistics.mean(rw[-k:]):.3f}"
      f"  step {med('time_step_s'):.3f}s  sample {med('time_sample_s'):.3f}s  update {med('time_update_s'):.3f}s"
      f"  peak_gpu_mb {med('peak_gpu_mb'):.0f}  graph captures {med('sample_graph_captures'):.0f}")
EOF
}

train() {  # name, config, then --set overrides
  local name="$1" cfg="$2"; shift 2
  rm -rf "$WORK/$name"
  local args=(); for s in "$@"; do args+=(--set "$s"); done
  timeout "${TRAIN_TIMEOUT_S:-120}" "$GSPO" train --config "$cfg" --set model.device="$DEV" \
    --set train.output_dir="$WORK/$name" "${args[@]}" > "$LOGS/train_$name.log" 2>&1
  local rc=$?
  if [ $rc -ne 0 ]; then say "$name: gspo train rc=$rc: $(tail -3 "$LOGS/train_$name.log")"; return; fi
  summary "$WORK/$name/metrics.jsonl" "$name"
}

if has train && fits train 120; then
  steps=${TRAIN_STEPS:-100}
  train tiny_eager configs/tiny.yaml model.path="$G/models/tiny_demo.pt" train.max_steps=$steps \
    rollout.cuda_graphs=false
  [ "$DEV" = cuda ] && train tiny_graphs configs/tiny.yaml model.path="$G/models/tiny_demo.pt" \
    train.max_steps=$steps rollout.cuda_graphs=true
  train tools configs/tiny-tools.yaml model.path="$G/models/tiny_tools.pt" train.max_steps=$steps
  train lora configs/tiny-lora.yaml model.path="$G/models/tiny_warm.pt" train.max_steps=$steps
  bundle
fi

# A Qwen3-shaped random model (bench/gpu_bench.py model), made once per machine.
make_model() {  # shape, max_seq_len -> $WORK/model_SHAPE
  local d="$WORK/model_$1"
  [ -f "$d/model.pt" ] && return 0
  say "making the Qwen3-$1-shaped model"
  timeout 300 "$PY" bench/gpu_bench.py model --shape "$1" --tokenizer "$G/tokenizer" --out "$d" --device "$DEV" \
    --max-seq-len "$2" > "$LOGS/model_$1.log" 2>&1 || { say "model $1 failed: $(tail -3 "$LOGS/model_$1.log")"; return 1; }
  say "model $1: $(tail -1 "$LOGS/model_$1.log")"
}

cell() {  # file, then bench_rollout arguments: one process, one JSON line appended to $LOGS/FILE.jsonl
  local f="$1"; shift
  timeout "${CELL_TIMEOUT_S:-120}" "$ROLLOUT" "$@" >> "$LOGS/$f.jsonl" 2>> "$LOGS/$f.err" \
    || say "bench_rollout $* failed: $(tail -2 "$LOGS/$f.err")"
}

# The shapes each stage measures: on a GPU the Qwen3-0.6B shape at the rows users sample; on a CPU (the dry run) toys.
if [ "$DEV" = cuda ]; then
  SHAPE=0.6b; GRID=${GRID:-"64:1024 256:1024 1024:512"}; EAGER_GRID=${EAGER_GRID:-"64:256 256:256"}; ONE_NEW=512
  PROFILE_ROWS=${PROFILE_ROWS:-"64 256"}; PROFILE_STEPS=${PROFILE_STEPS:-20}
else
  SHAPE=tiny; GRID=${GRID:-"8:32 16:32"}; EAGER_GRID=${EAGER_GRID:-$GRID}; ONE_NEW=32
  PROFILE_ROWS=${PROFILE_ROWS:-"8"}; PROFILE_STEPS=${PROFILE_STEPS:-4}
fi
M="$WORK/model_$SHAPE/model.pt"
sample_model() {  # the limits (once a call) and the sampling model
  [ -s "$LOGS/limits.jsonl" ] || { timeout 120 "$PY" bench/gpu_bench.py limits --device "$DEV" > "$LOGS/limits.jsonl" \
    2> "$LOGS/limits.err"; say "limits: $(cat "$LOGS/limits.jsonl")"; }
  make_model $SHAPE 4096 && cp "$WORK/model_$SHAPE/model.json" "$LOGS/model.json"
}
generate_cells() {  # GRID: transformers generate, one process per response length (its static cache is sized per call)
  for new in $(for g in $1; do echo "${g##*:}"; done | sort -u); do
    rs=$(for g in $1; do [ "${g##*:}" = "$new" ] && echo -n "${g%%:*} "; done)
    say "transformers generate: rows $rs x $new tokens"
    timeout 400 "$PY" bench/gpu_bench.py generate --hf "$WORK/model_$SHAPE/hf" --rows $rs --new "$new" \
      --device "$DEV" >> "$LOGS/generate.jsonl" 2>> "$LOGS/generate.err" || say "generate failed: $(tail -2 "$LOGS/generate.err")"
  done
}

# What matters first (#53): CUDA-graph decode at 64, 256 and 1024 rows against the live-key bandwidth bound, batch-1
# decode, then the profile; the slow eager cells and transformers `generate` last and at fewer tokens.
if has sample && fits sample 180; then
  : > "$LOGS/sample.jsonl"; : > "$LOGS/decode1.jsonl"
  if sample_model; then
    for g in $GRID; do
      rows=${g%%:*} new=${g##*:}
      say "gspo sampler: $rows rows x $new tokens"
      if [ "$DEV" = cuda ]; then
        cell sample "$M" --device cuda --rows "$rows" --max-new "$new" --fixed --cuda-graphs
        [ "$rows" -ge 256 ] && cell sample "$M" --device cuda --rows "$rows" --max-new "$new" --fixed --cuda-graphs \
          --kv-fraction 0.3
      else
        cell sample "$M" --device cpu --rows "$rows" --max-new "$new" --fixed
        cell sample "$M" --device cpu --rows "$rows" --max-new "$new" --fixed --budget-mb 1
      fi
    done
    say "batch-1 decode"
    if [ "$DEV" = cuda ]; then cell decode1 "$M" --device cuda --rows 1 --group 1 --max-new "$ONE_NEW" --fixed --cuda-graphs
    else cell decode1 "$M" --device cpu --rows 1 --group 1 --max-new "$ONE_NEW" --fixed; fi
  fi
  bundle
fi

# One steady decode step under the LibTorch profiler (bench_rollout --profile: calls of N and 2N tokens, their
# difference): operators dispatched, device kernels by time, which attention kernel ran; graphed and eager.
if has profile && fits profile 90; then
  : > "$LOGS/profile.jsonl"; : > "$LOGS/profile.md"
  if sample_model; then
    for rows in $PROFILE_ROWS; do
      say "profile: $rows rows, $PROFILE_STEPS decode steps"
      if [ "$DEV" = cuda ]; then
        cell profile "$M" --device cuda --rows "$rows" --max-new 16 --fixed --cuda-graphs --profile "$PROFILE_STEPS" \
          --profile-out "$LOGS/profile.md"
      fi
      cell profile "$M" --device "$DEV" --rows "$rows" --max-new 16 --fixed --profile "$PROFILE_STEPS" \
        --profile-out "$LOGS/profile.md"
    done
  fi
  bundle
fi

# Eager decode (on a GPU at fewer tokens: 83-93 s a cell at 1024) and transformers `generate` at the same lengths,
# with graphed cells there too so both pair with `generate`; eager batch-1 decode.
if has eager && fits eager "$([ "$DEV" = cuda ] && echo 200 || echo 60)"; then
  : > "$LOGS/generate.jsonl"
  if sample_model; then
    if [ "$DEV" = cuda ]; then
      for g in $EAGER_GRID; do
        rows=${g%%:*} new=${g##*:}
        say "gspo sampler, eager and graphed: $rows rows x $new tokens"
        cell sample "$M" --device cuda --rows "$rows" --max-new "$new" --fixed
        cell sample "$M" --device cuda --rows "$rows" --max-new "$new" --fixed --cuda-graphs
      done
      cell decode1 "$M" --device cuda --rows 1 --group 1 --max-new $((ONE_NEW / 4)) --fixed
    fi
    generate_cells "$EAGER_GRID"
  fi
  bundle
fi

LONG_SHAPE=$([ "$DEV" = cuda ] && echo 1.7b || echo tiny)
LEN=${LONG_LEN:-$([ "$DEV" = cuda ] && echo 16384 || echo 256)}
LONG_SEQ=$((LEN + 1024))  # the long models' max_seq_len: the response, its prompt and room
long_step() {  # name, model file, response length, ZeRO stage[, optimizer flags of gpu_bench.py]: one GSPO step,
  local cfg="$WORK/$1.yaml"  # then its cell against gspo plan
  "$PY" bench/gpu_bench.py longcfg --model "$2" --length "$3" --device "$DEV" --zero-stage "$4" --run "$WORK/$1" \
    --out "$cfg" "${@:5}"
  rm -rf "${WORK:?}/$1"
  say "$1: one step, 2 x $3 tokens, Qwen3-$LONG_SHAPE-shaped, zero_stage $4 ${*:5}"
  timeout "${LONG_TIMEOUT_S:-400}" "$GSPO" train --config "$cfg" > "$LOGS/train_$1.log" 2>&1
  say "$1: gspo train rc=$?: $(grep -E 'step 1/1|error' "$LOGS/train_$1.log" | tail -1 | cut -c1-220)"
  "$PY" bench/gpu_bench.py long --run "$WORK/$1" --config "$cfg" --model-json "$WORK/model_$LONG_SHAPE/model.json" \
    --length "$3" --gspo "$GSPO" --limits "$LOGS/limits.jsonl" "${@:5}" >> "$LOGS/long.jsonl" 2> "$LOGS/$1.err" \
    || say "$1: no result: $(tail -1 "$LOGS/$1.err")"
}
if has long || has zero3 || has optim; then
  [ -f "$LOGS/limits.jsonl" ] || timeout 120 "$PY" bench/gpu_bench.py limits --device "$DEV" > "$LOGS/limits.jsonl" 2>/dev/null
  : > "$LOGS/long.jsonl"
fi
if has long && fits long 180; then
  make_model "$LONG_SHAPE" "$LONG_SEQ" && long_step long_run "$WORK/model_$LONG_SHAPE/model.pt" "$LEN" 0
  bundle
fi

timed() {  # name, command...: /usr/bin/time -v into the TRL directory where the machine has it (peak RSS, CPU share)
  if [ -x /usr/bin/time ]; then /usr/bin/time -v -o "$WORK/trl/$1_time.txt" "${@:2}"; else "${@:2}"; fi
}
if has trl && fits trl 150; then
  if ! "$PY" -c 'import trl' 2>/dev/null; then
    say "trl: SKIPPED (no trl here: WHEELS=1 bash scripts/gpu_pack.sh carries its wheels)"
  else
    SHAPE=$([ "$DEV" = cuda ] && echo 0.6b || echo tiny)
    if make_model $SHAPE 4096; then
      T=(bench/trl_side_by_side.py --dir "$WORK/trl" --preset gpu --device "$DEV")
      [ "$DEV" = cuda ] || T+=(--max-new-tokens 16)  # the dry run on a CPU
      run_trl() {
        timeout 120 "$PY" "${T[0]}" setup "${T[@]:1}" --hf-from "$WORK/model_$SHAPE/hf" --gspo "$GSPO" \
          > "$LOGS/trl_setup.log" 2>&1 || { say "trl setup failed: $(tail -3 "$LOGS/trl_setup.log")"; return; }
        "$PY" "${T[0]}" config "${T[@]:1}" --warmup 1 --steps 2
        say "trl: gspo train, 1 + 2 steps"
        rm -rf "$WORK/trl/gspo_run"
        timed gspo timeout "${TRL_TIMEOUT_S:-200}" "$GSPO" train --config "$WORK/trl/gspo.yaml" > "$LOGS/trl_gspo.log" 2>&1 \
          || { say "trl: gspo failed: $(tail -3 "$LOGS/trl_gspo.log")"; return; }
        say "trl: TRL GRPOTrainer, 1 + 2 steps"
        timed trl timeout "$(( ${TRL_TIMEOUT_S:-200} * 3 / 2 ))" "$PY" "${T[0]}" trl "${T[@]:1}" --warmup 1 --steps 2 > "$LOGS/trl_trl.log" 2>&1 \
          || { say "trl: TRL failed: $(tail -3 "$LOGS/trl_trl.log")"; return; }
        "$PY" "${T[0]}" table "${T[@]:1}" > "$LOGS/trl_table.md" 2>&1
        cat "$LOGS/trl_table.md"
      }
      run_trl
    fi
  fi
  bundle
fi

# Item 6: ZeRO-3's per-layer gathers on one device, against its plan. ZeRO-3 shards a float32 policy: the same
# weights exported in float32 (model.dtype bfloat16 casts them for the forward, as in the other runs).
Z3_LEN=${LONG_Z3_LEN:-$([ "$DEV" = cuda ] && echo 4096 || echo 128)}
F32="$WORK/model_$LONG_SHAPE/model_f32.pt"
f32_model() {  # stage: the float32 export of the long model, made once; false (said) when it cannot be made
  make_model "$LONG_SHAPE" "$LONG_SEQ" || return 1
  [ -f "$F32" ] || timeout 300 "$PY" scripts/export_hf.py --hf "$WORK/model_$LONG_SHAPE/hf" --out "$F32" \
    --dtype float32 --max-seq-len "$LONG_SEQ" > "$LOGS/export_f32.log" 2>&1 || say "$1: export failed: $(tail -2 "$LOGS/export_f32.log")"
  [ -f "$F32" ]
}
if has zero3 && fits zero3 90; then
  f32_model zero3 && long_step long_zero3 "$F32" "$Z3_LEN" 3
  bundle
fi

# Issue 56: the same ZeRO-3 step with 8-bit AdamW moments, then with them and the float32 masters offloaded to host
# memory: peak memory and update time beside the float32 step above, each against its plan.
if has optim && fits optim 150; then
  if f32_model optim; then
    long_step long_zero3_8bit "$F32" "$Z3_LEN" 3 --state-bits 8
    long_step long_zero3_8bit_offload "$F32" "$Z3_LEN" 3 --state-bits 8 --offload
  fi
  bundle
fi

bundle
cat "$LOGS/tables.md"
say "gpu_check: done in $(($(date +%s) - T0)) s; $RESULT holds $(ls "$RESULT" | xargs)"
