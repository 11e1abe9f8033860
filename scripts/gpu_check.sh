#!/usr/bin/env bash
# Everything a session with a lent GPU machine should check, in one call (docs/gpu.md): build there, run the suite
# with the CUDA tests, train the tiny default on CUDA (eager and CUDA-graph decode), then time a 183M model's
# rollout step on the GPU: eager against CUDA-graph decode, float32 against bf16.
#
#   here:  bash scripts/fetch_gpu_deps.sh          # .deps/ (Debian packages the GPU machine lacks)
#          (optional) wheels for math-verify/trl into .whl/ (docs/gpu.md), so the Python-backed tests run too
#   there: bash scripts/gpu_check.sh               # logs and a summary under $OUT (or runs/gpu_check)
#
# STAGES (default "build suite train speed") picks stages; each prints one summary line per run.
set -uo pipefail
cd "$(dirname "$0")/.."
LOGS="${OUT:-runs/gpu_check}"
mkdir -p "$LOGS"
STAGES="${STAGES:-build suite train speed}"
has() { [[ " $STAGES " == *" $1 "* ]]; }

if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
if has build; then
  GSPO_SKIP_TESTS=1 bash scripts/gpu_machine_build.sh > "$LOGS/build.log" 2>&1 \
    || { tail -40 "$LOGS/build.log"; echo "gpu_check: build failed"; exit 1; }
  echo "gpu_check: built"
fi
source build/env.sh
if has suite; then
  (cd build && timeout "${SUITE_TIMEOUT_S:-300}" ctest -j 12 --output-on-failure > "$LOGS/ctest.log" 2>&1)
  echo "gpu_check: suite rc=$?: $(grep -E 'tests passed' "$LOGS/ctest.log")"
  grep -E '\((Failed|Skipped|Not Run|Timeout)\)' "$LOGS/ctest.log" | head -20
  grep -E 'CUDA:.*(Passed|Failed|Skipped)' "$LOGS/ctest.log"
fi

# Prints the median of the metrics of steps 1.. (step 0 warms up) and the first/last mean reward.
summary() {
  python3 - "$1" "$2" <<'EOF'
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
      f"  step {med('time_step_s'):.3f}s  sample {med('time_sample_s'):.3f}s  old_lp {med('time_old_logprobs_s'):.3f}s"
      f"  update {med('time_update_s'):.3f}s  sample tok/s {med('sample_tokens_per_s'):.0f}"
      f"  train tok/s {med('train_tokens_per_s'):.0f}  peak_gpu_mb {med('peak_gpu_mb'):.0f}")
EOF
}

train() {  # name, then --set overrides
  local name="$1"; shift
  rm -rf "/tmp/gpu_check/$name"
  local args=(); for s in "$@"; do args+=(--set "$s"); done
  timeout "${TRAIN_TIMEOUT_S:-150}" build/gspo train --config configs/tiny.yaml --set model.device=cuda \
    --set train.output_dir="/tmp/gpu_check/$name" "${args[@]}" > "$LOGS/train_$name.log" 2>&1
  local rc=$?
  if [ $rc -ne 0 ]; then echo "$name: gspo train rc=$rc: $(tail -3 "$LOGS/train_$name.log")"; return; fi
  summary "/tmp/gpu_check/$name/metrics.jsonl" "$name"
}

if has train; then
  python3 scripts/make_tiny_model.py --out models/tiny_demo.pt --prior-text 0123456789 > /dev/null
  train tiny_eager train.max_steps=200
  train tiny_graphs train.max_steps=200 rollout.cuda_graphs=true
fi
if has speed; then
  python3 scripts/make_tiny_model.py --out models/gpu_183m.pt --layers 12 --hidden 1024 --heads 16 --kv-heads 4 \
    --max-seq-len 512 > /dev/null
  big=(model.path=models/gpu_183m.pt train.max_steps=6 rollout.prompts_per_step=32 rollout.group_size=8
       rollout.max_new_tokens=128 checkpoint.every=0)
  train f32_eager "${big[@]}"
  train f32_graphs "${big[@]}" rollout.cuda_graphs=true
  train bf16_graphs "${big[@]}" rollout.cuda_graphs=true model.dtype=bfloat16
fi
