#!/usr/bin/env bash
# scripts/gpu_check.sh end to end on a CPU at toy sizes (GPU_CHECK_DEVICE=cpu): GPU machines are lent rarely and for
# 15 minutes, so the script that spends them must not have rotted in between. Packs this build the way
# scripts/gpu_pack.sh packs it for a GPU machine (into a temporary directory), runs every stage but `build`/`suite`
# against the pack, and checks that each stage printed its result and its table, that the results come back as at most
# 8 files (the device tool's limit), that the long-response step wrote no final checkpoint, and that no stage failed.
# The figures are a CPU's and are not checked. ~2.5 minutes on 2 cores.
# usage: test_gpu_check_dry_run.sh SOURCE_DIR BUILD_DIR PYTHON
set -eu
SRC="$1"; BUILD="$2"; PY="$3"
if [ ! -f "$SRC/../shared/data/tokenizers/qwen3/tokenizer.json" ]; then
  echo "SKIPPED (no ../shared/data/tokenizers/qwen3 beside the checkout: the pack carries that tokenizer)"; exit 0
fi
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
cd "$SRC"
fail() {  # the whole log, and the end of every run's own log, so a failure in CI can be read from its output
  echo "FAIL: $*"; cat "$TMP/log" 2>/dev/null
  for f in "$TMP"/work/logs/train_*.log "$TMP"/work/logs/*.err; do [ -s "$f" ] && { echo "--- $f"; tail -8 "$f"; }; done
  exit 1
}
# The pack's models come from the checkout's models/ when it has them, else are made quickly (GPU_PACK_QUICK): a fresh
# clone has none.
GPU_PACK_DIR="$TMP/pack" GPU_PACK_BUILD="$BUILD" GPU_PACK_QUICK=1 OMP_NUM_THREADS=1 bash scripts/gpu_pack.sh > "$TMP/pack.log" 2>&1 \
  || { cat "$TMP/pack.log"; fail "gpu_pack.sh"; }
for f in bin/gspo bin/gspo_tests bin/bench_rollout lib/libyaml-cpp.so.0.7 test_models/tiny_qwen3.pt models/tiny_tools.pt \
         tokenizer/tokenizer.json commit; do
  [ -s "$TMP/pack/$f" ] || fail "the pack has no $f"
done
[ "$(du -sm "$TMP/pack" | cut -f1)" -lt 56 ] || fail "the pack is $(du -sm "$TMP/pack" | cut -f1) MiB: with the tree it passes the 64 MiB a device call carries"

run() {  # run OUT_NAME VAR=VALUE...: gpu_check.sh on the CPU against the pack
  # Timeouts well past a loaded CI machine's: the stages' own (120-400 s) are sized for a GPU.
  env GSPO_PY="$PY" GPU_CHECK_DEVICE=cpu GPU_DIR="$TMP/pack" GPU_CHECK_WORK="$TMP/work" OUT="$TMP/$1" TRAIN_STEPS=5 \
    TRAIN_TIMEOUT_S=600 CELL_TIMEOUT_S=600 LONG_TIMEOUT_S=900 TRL_TIMEOUT_S=600 \
    "${@:2}" bash scripts/gpu_check.sh
}
if run out_none GPU_DIR="$TMP/no_pack" STAGES="bin" > "$TMP/none.log" 2>&1; then fail "ran with no pack"; fi
grep -q "no binaries (no pack at" "$TMP/none.log" || { cat "$TMP/none.log"; fail "no pack: no clear message"; }
# A stage that does not fit the call's budget is skipped, says so, and the call still ends well.
run out_short BUDGET_S=30 STAGES="bin sample" > "$TMP/short.log" 2>&1 || { cat "$TMP/short.log"; fail "a short budget: non-zero exit"; }
grep -Eq "sample: SKIPPED \(estimated 180 s, [0-9]+ s left of BUDGET_S=30\)" "$TMP/short.log" \
  || { cat "$TMP/short.log"; fail "a short budget: the sample stage did not say it was skipped"; }

run out STAGES="bin cuda train sample profile eager long trl zero3 optim" > "$TMP/log" 2>&1 || fail "gpu_check.sh exited non-zero"
L="$TMP/log"; T="$TMP/out/tables.md"
expect() { grep -Eq "$1" "$2" || fail "$3 (no line matching '$1' in $(basename "$2"))"; }
expect "bin: gspo [0-9.]+ \(LibTorch [0-9.]+\), packed from [0-9a-f]{12}" "$L" "the bin stage"
expect "cuda tests rc=0: test cases: 18 \| 18 passed, of which 18 only printed SKIPPED" "$L" "the CUDA cases (skipped on a CPU)"
for run_name in tiny_eager tools lora; do
  expect "^$run_name: steps 5 +reward first10% [0-9.]+ last10% [0-9.]+ +step [0-9.]+s" "$L" "the train stage's $run_name run"
done
expect '"gemm_tflops": [0-9.]+' "$L" "the limits"
expect "^\| 8 \| 32 \| eager \| none \| [0-9]+ \| [0-9]+ \| [0-9.]+x \|" "$T" "gspo against generate, every row at once"
expect "^\| 16 \| 32 \| eager \| 1 MB \| [0-9]+ \| [0-9]+ \| [0-9.]+x \|" "$T" "gspo under a KV budget against generate"
expect "^\| eager \| [0-9.]+ \| [0-9]+ MB \| [0-9]+ \| [0-9]+% \|" "$T" "batch-1 decode against the bandwidth bound"
expect "^\| 8 \| 32 \| eager \| none \| .* \| [0-9.]+ \| [0-9]+ \| [0-9]+% \|$" "$T" "a cell against the live-key bandwidth bound"
# (The wall ms is the difference of two profiled calls' wall times, N and 2N steps: on a loaded CPU the second can
# finish sooner, so the dry run accepts any sign there; a GPU run reads it.)
expect "^\| eager \| 8 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| -?[0-9.]+ \| [0-9]+ MB \|" "$T" "the profiled decode step (wall ms a step beside the device ms)"
expect "^per decode step: [0-9.]+ operators dispatched" "$T" "the profile's totals"
expect "^\| aten::[a-z_]+ \| [0-9.]+ \|$" "$T" "the profile's operator table"
expect "^long response: 2 rows x 256 tokens, tiny: peak_mb_update [0-9]+ against the plan's [0-9]+ \([-+][0-9]+%\); update [0-9.]+ s, MFU [0-9]+%" \
  "$T" "the long-response step against gspo plan"
expect "^long response: 2 rows x 128 tokens, tiny, ZeRO-3 on one rank: peak_mb_update [0-9]+ against the plan's [0-9]+" \
  "$T" "the ZeRO-3 step against gspo plan"
expect "^long response: 2 rows x 128 tokens, tiny, ZeRO-3 on one rank, 8-bit moments: peak_mb_update [0-9]+ against the plan's [0-9]+" \
  "$T" "the 8-bit ZeRO-3 step against gspo plan"
expect "^long response: 2 rows x 128 tokens, tiny, ZeRO-3 on one rank, 8-bit moments, offloaded: peak_mb_update [0-9]+ against the plan's [0-9]+" \
  "$T" "the offloaded 8-bit ZeRO-3 step against gspo plan"
expect "^\| step s \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|" "$TMP/out/trl_table.md" "gspo against TRL"
expect "gpu_check: done" "$L" "the end"
if grep -Ei "failed|no result|rc=[1-9]|no metrics|SKIPPED \((no trl|estimated)" "$L"; then fail "a stage failed"; fi
[ "$(ls "$TMP/out" | wc -l)" -le 8 ] || fail "more than 8 files in OUT: the device tool returns 8"
tar tzf "$TMP/out/logs.tgz" | grep -q "logs/long.jsonl" || fail "logs.tgz lacks the long-response cell"
[ -f "$TMP/work/long_run/metrics.jsonl" ] && [ ! -d "$TMP/work/long_run/checkpoints" ] \
  || fail "the long-response step saved a checkpoint (checkpoint.at_end: false)"
"$PY" - "$TMP/work/logs/long.jsonl" <<'PY' || fail "the long-response cells"
import json, sys
cells = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
assert [(c["response"], c["zero_stage"], c["state_bits"], c["offload"]) for c in cells] == [
    (256, 0, 32, False), (128, 3, 32, False), (128, 3, 8, False), (128, 3, 8, True)], cells
for c in cells:
    ratio = c["peak_mb_update"] / c["plan_mb"]
    assert c["rows"] == 2 and c["tokens"] > 2 * c["response"], c
    assert 0.5 < ratio < 2.0, f"measured / planned update peak {ratio:.2f}: the plan or the cell is broken"
    print(f"long cell, zero_stage {c['zero_stage']}: peak_mb_update {c['peak_mb_update']:.0f}, "
          f"plan {c['plan_mb']:.0f} ({ratio:.2f}x)")
PY
echo "gpu_check dry run: every stage ran and printed its table"
