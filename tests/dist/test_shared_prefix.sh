#!/usr/bin/env bash
# Shared prompts (#71, train.shared_prefix with algorithm.minibatch_groups; docs/algorithm.md, "Shared prompts") in
# every engine: runs with sharing train as one process without it does (compare_runs.py's tolerances: metrics and
# final weights): expert parallelism E = 2 on qwen3_moe_tiny (ZeRO-1), ZeRO-3 and ZeRO-1 on 2 ranks, a LoRA policy on
# 2 ranks, one rollout rank beside one trainer (asynchronous) against the same layout unshared, and partial rollouts
# against the same run unshared, and multi-turn tool episodes against the same run unshared. prompt_tokens_saved is
# only in the shared runs (one-sided) and must be positive.
# Shared runs take the split layout (the model's shared_layer; train.shared_prefix_split_tokens=0, as these rows are
# narrow) except where marked packed: ZeRO-1, one ZeRO-3 run, and expert parallelism (whose runner always packs).
# usage: test_shared_prefix.sh GSPO_BINARY TEST_MODELS_DIR SOURCE_DIR [PYTHON]
set -u
GSPO="$1"; MODELS="$2"; SRC="$3"; PY="${4:-/usr/bin/python3}"
TMP="$(mktemp -d)"; trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
LAUNCH="$SRC/scripts/launch_local.sh"
source "$SRC/tests/dist/lib.sh"
export CMP_EXTRA="--one-sided prompt_tokens_saved"
G=(--set algorithm.minibatch_groups=true)
S=(--set train.shared_prefix=true --set train.shared_prefix_split_tokens=0)
PACKED=(--set train.shared_prefix=true)
saved() {  # saved RUN: every step saved prompt tokens
  "$PY" - "$TMP/$1/metrics.jsonl" <<'PY' && ok "$1: prompt_tokens_saved > 0 every step" || bad "$1: prompt_tokens_saved"
import json, sys
v = [json.loads(l).get("prompt_tokens_saved", 0) for l in open(sys.argv[1])]
print(v)
assert v and all(x > 0 for x in v), v
PY
}

# MoE, responses of 2 (its prompts are short: rows pack while that costs no attention), E = 2 on 2 ranks
export INITIAL="$MODELS/qwen3_moe_tiny.pt"
MOE=(--set "model.path=$MODELS/qwen3_moe_tiny.pt" --set 'reward.regex=^[\x00-\x7f]' --set rollout.prompts_per_step=4
     --set distributed.zero_stage=1 --set rollout.max_new_tokens=2)
run m1 1 "${MOE[@]}" "${G[@]}" && run m2 2 "${MOE[@]}" "${G[@]}" "${S[@]}" --set distributed.expert_parallel=2 \
  && same "expert parallelism E = 2 with shared prompts = 1 process unshared" m1 m2 && saved m2

export INITIAL="$MODELS/tiny_prior.pt"
run d1 1 "${G[@]}" && {
  run z3 2 "${G[@]}" "${S[@]}" --set distributed.zero_stage=3 \
    && same "ZeRO-3 on 2 ranks with shared prompts = 1 process unshared" d1 z3 && saved z3
  run z3p 2 "${G[@]}" "${PACKED[@]}" --set distributed.zero_stage=3 \
    && same "ZeRO-3 on 2 ranks with shared prompts packed = 1 process unshared" d1 z3p && saved z3p
  run z1 2 "${G[@]}" "${PACKED[@]}" --set distributed.zero_stage=1 \
    && same "ZeRO-1 on 2 ranks with shared prompts packed = 1 process unshared" d1 z1
}
LORA=(--set model.lora_rank=4 --set model.lora_alpha=32 --set optimizer.lr=5e-3)
run l1 1 "${G[@]}" "${LORA[@]}" && run l2 2 "${G[@]}" "${S[@]}" "${LORA[@]}" \
  && same "LoRA on 2 ranks with shared prompts = 1 process unshared" l1 l2 && saved l2
# Asynchronous: one rollout rank, one trainer; the same layout without sharing
ASYNC=(--set distributed.rollout_ranks=1)
run a0 2 "${G[@]}" "${ASYNC[@]}" && run as 2 "${G[@]}" "${S[@]}" "${ASYNC[@]}" \
  && same "one rollout rank and one trainer with shared prompts = the same layout unshared" a0 as && saved as
# Partial rollouts (stop strings end rows at different lengths, so some are carried)
PART=(--set async.partial_rollout=true --set async.max_staleness=1 --set rollout.max_new_tokens=6
      --set 'rollout.stop=["3", "7"]')
run p0 1 "${G[@]}" "${PART[@]}" && run ps 1 "${G[@]}" "${S[@]}" "${PART[@]}" \
  && same "partial rollouts with shared prompts = the same run unshared" p0 ps && saved ps

# Tools: multi-turn episodes (the tools demo's lookup tool; each observation sits inside its row, loss-masked), so
# what a group shares is its prompt only. The model is warm-started as test_dist.sh's tools case, so calls happen.
printf '#!/bin/sh\nexec sh "%s"\n' "$SRC/scripts/tools/lookup.sh" >"$TMP/lookup.sh" && chmod +x "$TMP/lookup.sh"
if OMP_NUM_THREADS=1 "$PY" "$SRC/scripts/make_tiny_model.py" --out "$TMP/tiny_tools.pt" --warm "$SRC/data/tools_warm.txt" \
     --warm-steps 1000 >"$TMP/tiny_tools.log" 2>&1; then
  TRAIN=(train -c "$SRC/configs/tiny-tools.yaml" --set "model.path=$TMP/tiny_tools.pt"
         --set "data.path=$SRC/data/tools_lookup.jsonl" --set rollout.prompts_per_step=6 --set rollout.group_size=4
         --set algorithm.num_minibatches=2 --set algorithm.micro_batch_size=5 --set train.threads=1
         --set logging.progress=false
         --set "tools.list=[{\"name\":\"lookup\",\"kind\":\"command\",\"command\":\"$TMP/lookup.sh\"}]")
  export INITIAL="$TMP/tiny_tools.pt"
  run t0 1 "${G[@]}" && run ts 1 "${G[@]}" "${S[@]}" \
    && same "tool episodes with shared prompts = the same run unshared" t0 ts && saved ts && {
    "$PY" - "$TMP/ts/metrics.jsonl" <<'PY' && ok "tools: calls made in the shared run" || bad "tools: no tool calls"
import json, sys
m = [json.loads(l) for l in open(sys.argv[1])]
print([(x["tool_calls_mean"], x["observation_frac"]) for x in m])
assert sum(x["tool_calls_mean"] for x in m) > 0 and any(x["observation_frac"] > 0 for x in m)
PY
  }
else
  bad "tools: the warm-started model" "$TMP/tiny_tools.log"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
