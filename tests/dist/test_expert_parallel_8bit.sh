#!/usr/bin/env bash
# Expert parallelism with 8-bit moments (optimizer.state_bits 8; docs/optimizer.md "Sharded 8-bit moments") on the
# exported qwen3_moe_tiny: the dense shard and the kept experts' shard are quantised each as one flat vector in whole
# 256-element blocks, so E = 2 on 4 ranks (two replicas of each expert: the experts' moments sharded over 2 ranks)
# takes the steps of E = 2 on 2 ranks; a run saved at E = 2 on 2 ranks and resumed at E = 2 on 4 ranks (the flat
# codes and absmax re-cut over the replicas) equals the uninterrupted run; a resume at another expert_parallel or
# with float32 moments is refused by name.
# Tolerances: compare_runs.py with --weight-tol 1e-4 --tol 1e-3 (float32: 1e-5, 1e-4): the ranks sum the gradients in
# another order, and a last-bit difference that moves a moment across a code's midpoint moves the next step by up to one
# code step of that moment (a few per cent), as tests/unit/test_zero3.cpp's 8-bit case measures (measured here
# 2026-11-28: 1.3e-5 between 2 and 4 ranks, 1.5e-8 for the resume).
# usage: test_expert_parallel_8bit.sh GSPO_BINARY TEST_MODELS_DIR SOURCE_DIR [PYTHON]
set -u
GSPO="$1"; MODELS="$2"; SRC="$3"; PY="${4:-/usr/bin/python3}"
TMP="$(mktemp -d)"; trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
LAUNCH="$SRC/scripts/launch_local.sh"
source "$SRC/tests/dist/lib.sh"
export INITIAL="$MODELS/qwen3_moe_tiny.pt"
CMP_EXTRA="--weight-tol 1e-4 --tol 1e-3"

MOE=(--set "model.path=$MODELS/qwen3_moe_tiny.pt" --set 'reward.regex=^[\x00-\x7f]' --set rollout.prompts_per_step=4
     --set distributed.zero_stage=1 --set optimizer.state_bits=8)
EP() { echo "--set distributed.expert_parallel=$1"; }

STEPS=3
run q2 2 "${MOE[@]}" $(EP 2) && run q22 4 "${MOE[@]}" $(EP 2) && \
  same "8-bit: E = 2 on 4 ranks (2 replicas of each expert) = E = 2 on 2 ranks" q2 q22
# saved at step 2 on 2 ranks, resumed on 4 (the experts' flat state re-cut over 2 replicas)
STEPS=2
run qr 2 "${MOE[@]}" $(EP 2) && STEPS=3 && run qr 4 "${MOE[@]}" $(EP 2) --resume auto && {
  files="$(ls "$TMP/qr/checkpoints/step_00000002")"
  if echo "$files" | grep -q optimizer_experts_1.pt && echo "$files" | grep -q optimizer_zero1.pt; then
    ok "8-bit checkpoint at E = 2: optimizer_zero1.pt and one experts' file per rank of the group"
  else bad "8-bit checkpoint files: $files" "$TMP/qr.log"; fi
  same "8-bit: E = 2 on 2 ranks to step 2, resumed on 4 ranks = uninterrupted on 2 ranks" q2 qr
}
refuse() {  # refuse NAME PATTERN NPROC [extra --set ...]: exit 2 (a config or checkpoint error) with PATTERN in the log
  local name="$1" pattern="$2" n="$3"; shift 3
  "$LAUNCH" -n "$n" --port "$(free_port)" "$GSPO" "${TRAIN[@]}" --set train.max_steps=4 --set "train.output_dir=$TMP/qr" \
    --resume auto "$@" >"$TMP/$name.log" 2>&1
  local rc=$?
  if [ "$rc" -ne 0 ] && grep -q "$pattern" "$TMP/$name.log"; then ok "$name: exit $rc, $(grep -o "$pattern.*" "$TMP/$name.log" | head -1 | cut -c1-90)"
  else bad "$name: exit $rc without '$pattern'" "$TMP/$name.log"; fi
}
[ -d "$TMP/qr/checkpoints" ] && {
  refuse "8-bit resume at E = 4" "resume it with the same expert_parallel" 4 "${MOE[@]}" $(EP 4)
  refuse "8-bit resume with float32 moments" "state_bits 8" 2 "${MOE[@]}" --set optimizer.state_bits=32 $(EP 2)
}
echo "expert parallel 8-bit: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
