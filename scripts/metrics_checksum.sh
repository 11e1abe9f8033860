#!/usr/bin/env bash
# Fixed-seed training runs whose metrics must not change under a refactor: prints one md5 per run of its
# metrics.jsonl without the fields that vary between identical runs (time_*, *_per_s, peak_*, comm*). Run it with the
# old and the new binary on the same machine and compare (floating point differs between CPUs and thread counts,
# so compare only on one machine; every run uses one thread). About 30 s on 2 cores.
# usage: bash scripts/metrics_checksum.sh GSPO_BINARY OUT_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
G="$(realpath "$1")"; OUT="$2"
source scripts/pyenv.sh; PY="$GSPO_PY"
rm -rf "$OUT"; mkdir -p "$OUT"
M="$OUT/tiny_demo.pt"
"$PY" scripts/make_tiny_model.py --out "$M" --prior-text 0123456789 --prior-logit 3.0 >/dev/null
base=(train -c configs/tiny.yaml --set "model.path=$M" --set train.threads=1 --set logging.progress=false
      --set logging.level=warn --set checkpoint.every=0)
run() { local name=$1; shift; "$G" "${base[@]}" --set "train.output_dir=$OUT/$name" "$@" >"$OUT/$name.log" 2>&1; }
run tiny --set train.max_steps=40
run bf16 --set train.max_steps=10 --set model.dtype=bfloat16
run kl --set train.max_steps=10 --set algorithm.kl_coef=0.05 --set algorithm.loss=grpo --set algorithm.kl_estimator=k1
run misc --set train.max_steps=10 --set algorithm.old_logprobs=sampler --set optimizer.schedule=cosine \
  --set algorithm.micro_batch_size=3 --set algorithm.filter_truncated=true --set algorithm.loss=gspo_token \
  --set algorithm.advantage=leave_one_out
run zero1 --set train.max_steps=10 --set distributed.zero_stage=1 --set model.dtype=bfloat16
run lora --set train.max_steps=8 --set model.lora_rank=4 --set model.lora_alpha=8 --set algorithm.kl_coef=0.05
run resume --set train.max_steps=6
run resume --set train.max_steps=12 --resume auto
PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
scripts/launch_local.sh -n 2 --port "$PORT" "$G" "${base[@]}" --set "train.output_dir=$OUT/dist2" \
  --set train.max_steps=6 --set distributed.zero_stage=1 --set rollout.prompts_per_step=8 >"$OUT/dist2.log" 2>&1
for d in tiny bf16 kl misc zero1 lora resume dist2; do
  "$PY" - "$OUT/$d/metrics.jsonl" "$@" <<'PY' | md5sum | sed "s/-\$/$d/"
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    print(json.dumps({k: v for k, v in m.items()
                      if not (k.startswith("time_") or k.endswith("_per_s") or k.startswith("peak_") or k.startswith("comm"))}))
PY
done
