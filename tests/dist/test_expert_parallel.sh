#!/usr/bin/env bash
# Expert parallelism in training (distributed.expert_parallel, #37; docs/distributed.md, "Expert parallelism") on the
# exported qwen3_moe_tiny (3 layers, MoE layers 0 and 2 with 4 experts, top-2): every layout trains as one process
# does with ZeRO-1 (metrics and final weights, compare_runs.py's tolerances): 2 ranks E = 2, 4 ranks E = 4, 4 ranks
# E = 2 (two replicas of each expert), with Routing Replay and the routing-change metric on 2 ranks E = 2, Rollout
# Routing Replay (the group's rollout routes recorded, with partial rollouts too) on 2 ranks E = 2, and a run
# saved at E = 2 on 2 ranks resumed at E = 4 on 4 (the experts re-cut). The rollout, validation and the held-out
# evaluation exchange each MoE layer's rows with the group (no rank gathers the experts): the sample-derived metrics
# are compared with the rest, validation and partial rollouts at E = 2 against 2 ranks without expert parallelism, and
# every sampling phase must end with its group agreeing. A rank keeps only its experts (model state per rank below one
# process's), the 4 ranks load the model in turns. Layouts that cannot work are config errors naming the key and the
# numbers (an export before ep_api 2 among them).
# usage: test_expert_parallel.sh GSPO_BINARY TEST_MODELS_DIR SOURCE_DIR [PYTHON]
set -u
GSPO="$1"; MODELS="$2"; SRC="$3"; PY="${4:-/usr/bin/python3}"
TMP="$(mktemp -d)"; trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
LAUNCH="$SRC/scripts/launch_local.sh"
source "$SRC/tests/dist/lib.sh"
export INITIAL="$MODELS/qwen3_moe_tiny.pt"

# prompts_per_step 4: whole groups on 1, 2 and 4 ranks
MOE=(--set "model.path=$MODELS/qwen3_moe_tiny.pt" --set 'reward.regex=^[\x00-\x7f]' --set rollout.prompts_per_step=4
     --set distributed.zero_stage=1)
EP() { echo "--set distributed.expert_parallel=$1"; }

run z1 1 "${MOE[@]}" && {
  run e2 2 "${MOE[@]}" $(EP 2) && same "E = 2 on 2 ranks = 1 process" z1 e2
  run e4 4 "${MOE[@]}" $(EP 4) && same "E = 4 on 4 ranks = 1 process" z1 e4
  run e22 4 "${MOE[@]}" $(EP 2) && same "E = 2 on 4 ranks (2 replicas of each expert) = 1 process" z1 e22
}
# One row a micro-batch: the ranks' shares of a mini-batch differ, so the rank with fewer runs idle passes that only
# keep it in step, and those must keep the gradients the other rank's tokens bring its experts
run z1m 1 "${MOE[@]}" --set algorithm.micro_batch_size=1 && run e2m 2 "${MOE[@]}" --set algorithm.micro_batch_size=1 \
  $(EP 2) && same "E = 2, one row a micro-batch (idle lockstep passes) = 1 process" z1m e2m
# bf16 weights with float32 masters: saved at E = 2 on 2 ranks, resumed at E = 4 on 4 (the experts' moments read from
# the files of the ranks that wrote them), the checkpoint's files as documented; one process without expert
# parallelism refuses it by name
STEPS_SAVED=$STEPS; STEPS=2
run b2 2 "${MOE[@]}" --set model.dtype=bfloat16 $(EP 2) && STEPS=3 && run b2 4 "${MOE[@]}" --set model.dtype=bfloat16 \
  $(EP 4) --resume auto && "$PY" - "$TMP/b2" <<'PY' && ok "bf16: E = 2 to step 2, resumed at E = 4 to step 3; checkpoint files per rank" || bad "bf16 E = 2 checkpoint resumed at E = 4" "$TMP/b2.log"
import json, os, sys
run = sys.argv[1]
lines = [json.loads(l) for l in open(f"{run}/metrics.jsonl")]
assert [m["step"] for m in lines] == [1, 2, 3], [m["step"] for m in lines]
assert all(m["grad_norm"] > 0 for m in lines), [m["grad_norm"] for m in lines]
two = sorted(os.listdir(f"{run}/checkpoints/step_00000002"))
three = sorted(os.listdir(f"{run}/checkpoints/step_00000003"))
assert {"policy.pt", "optimizer_zero1.pt", "optimizer_experts_0.pt", "optimizer_experts_1.pt"} <= set(two), two
assert "optimizer_experts_3.pt" in three and "optimizer_experts_4.pt" not in three, three
PY
refuse_resume() {
  "$GSPO" "${TRAIN[@]}" "${MOE[@]}" --set model.dtype=bfloat16 --set train.max_steps=4 --set "train.output_dir=$TMP/b2" \
    --resume auto >"$TMP/b2one.log" 2>&1
  local rc=$?
  if [ "$rc" -eq 2 ] && grep -q "was written with distributed.expert_parallel" "$TMP/b2one.log"; then
    ok "one process without expert parallelism refuses the checkpoint: $(grep -o "resume it with.*" "$TMP/b2one.log" | cut -c1-80)"
  else bad "resume without expert parallelism: exit $rc" "$TMP/b2one.log"; fi
}
[ -d "$TMP/b2/checkpoints" ] && refuse_resume
# A ZeRO-1 checkpoint of one process (every parameter's moments in one file) resumed with E = 2 on 2 ranks
STEPS=2
run zr 1 "${MOE[@]}" && STEPS=$STEPS_SAVED && run zr 2 "${MOE[@]}" $(EP 2) --resume auto && \
  same "1 process ZeRO-1 to step 2, resumed at E = 2 on 2 ranks = 1 process" z1 zr
STEPS=$STEPS_SAVED
# Validation during training and partial rollouts beside expert parallelism: the sampler exchanges each MoE layer's
# rows with the group (no rank gathers the experts), the ranks' validation shards unequal (3 problems on 2 ranks), every
# rank in step; the training metrics (the partial rollouts' samples among them) and the validation lines (avg@K, pass@k,
# rewards, response tokens) equal 2 ranks' without expert parallelism (partial rollouts stop by each rank's share of
# groups, so the world size decides which rows are carried: 1 process is another run)
printf '{"prompt": "1+1=", "answer": "2"}\n{"prompt": "2+3=", "answer": "5"}\n{"prompt": "7-4=", "answer": "3"}\n' \
  >"$TMP/val.jsonl"
VP=(--set eval.every=2 --set eval.samples=2 --set "eval.datasets=[$TMP/val.jsonl]" --set async.partial_rollout=true
    --set async.max_staleness=1)
run vp 2 "${MOE[@]}" $(EP 2) "${VP[@]}" && \
  if [ "$(wc -l <"$TMP/vp/validation.jsonl")" -eq 3 ] && grep -q "rows spanning versions" "$TMP/vp.log"; then
    ok "validation (before training, after steps 2 and 4) and partial rollouts at E = 2"
  else bad "validation / partial rollouts at E = 2" "$TMP/vp.log"; fi
run vp2 2 "${MOE[@]}" "${VP[@]}" && {
  same "E = 2 with validation and partial rollouts = 2 ranks without expert parallelism" vp2 vp
  "$PY" - "$TMP" <<'PY' && ok "validation at E = 2 = without expert parallelism (3 lines: samples, rewards, tokens)" || bad "validation at E = 2 differs"
import json, sys
t = sys.argv[1]
lines = lambda r: [json.loads(l)["datasets"] for l in open(f"{t}/{r}/validation.jsonl")]
want, ep = lines("vp2"), lines("vp")
assert len(want) == 3 and want == ep, (want, ep)
PY
}
# Routing Replay (the recorded experts dispatched) and the routing-change metric, activation checkpointing on
RR=(--set algorithm.routing_replay=old --set algorithm.routing_metrics=true)
run r1 1 "${MOE[@]}" "${RR[@]}" && run r2 2 "${MOE[@]}" "${RR[@]}" $(EP 2) && \
  same "E = 2 with Routing Replay and the routing-change metric = 1 process" r1 r2
# Rollout Routing Replay (R3): the experts the group's exchange chose in the rollout, recorded on each rank for its own
# rows and dispatched in every training pass; with partial rollouts too (a continued row keeps its first part's)
R3=(--set algorithm.routing_replay=rollout)
run q1 1 "${MOE[@]}" "${R3[@]}" && run q2 2 "${MOE[@]}" "${R3[@]}" $(EP 2) && \
  same "E = 2 with Rollout Routing Replay (R3) = 1 process" q1 q2 && \
  "$PY" - "$TMP/q2/metrics.jsonl" <<'PY' && ok "R3 at E = 2: the trainers route the first step's tokens as the rollout's group did (float32: no route differs)" || bad "R3 at E = 2: moe_rollout_route_diff_frac not 0 at the first step" "$TMP/q2/metrics.jsonl"
import json, sys
first = json.loads(open(sys.argv[1]).readline())
assert first["moe_rollout_route_diff_frac"] == 0, first.get("moe_rollout_route_diff_frac")
PY
run qp2 2 "${MOE[@]}" "${VP[@]}" "${R3[@]}" && run qp 2 "${MOE[@]}" "${VP[@]}" "${R3[@]}" $(EP 2) && \
  same "E = 2 with R3 and partial rollouts = 2 ranks without expert parallelism" qp2 qp

# A rank holds only its experts: model state per rank below one process's (the experts are 2/3 of this model); the
# expert load is measured under expert parallelism too
if [ -f "$TMP/e4/metrics.jsonl" ] && [ -f "$TMP/e22/metrics.jsonl" ] && [ -f "$TMP/z1/metrics.jsonl" ]; then
  if out="$("$PY" - "$TMP" <<'PY'
import json, sys
t = sys.argv[1]
last = lambda r: [json.loads(l) for l in open(f"{t}/{r}/metrics.jsonl")][-1]
one, e2, e4 = (last(r)["model_state_mb_per_rank"] for r in ("z1", "e2", "e4"))
assert e4 < e2 < one, (one, e2, e4)
# the expert load, measured from the exchange: per MoE layer, between balanced (1) and one expert taking all (4)
loads = [last(r)["moe_load_imbalance"] for r in ("z1", "e2", "e4", "e22")]
assert all(len(l) == 2 and all(1 <= v <= 4 for v in l) for l in loads), loads
# the rollout's passes through the group's exchange, and the share a rank only served, under expert parallelism only
assert "ep_rollout_passes" not in last("z1"), "ep_rollout_passes written without expert parallelism"
passes = [(last(r)["ep_rollout_passes"], last(r)["ep_rollout_idle_frac"]) for r in ("e2", "e4", "e22")]
assert all(p > 0 and 0 <= f < 1 for p, f in passes), passes
print(f"model state MB a rank: 1 process {one:.3f}, E = 2 {e2:.3f}, E = 4 {e4:.3f}; expert load imbalance "
      f"{loads[0]} (1 process), {loads[1]} (E = 2); rollout passes, idle share (E = 2, 4, 2x2): {passes}")
PY
)"; then ok "$out"; else bad "model state per rank: $out"; fi
fi

# Loading in turns (item 7): the 4 ranks of this "node" load one after another, each keeping its experts before the
# next reads the file; rank 0 reports the node's host memory against all at once
if grep -q "loaded in turns by 4 ranks of a node" "$TMP/e4.log" && "$PY" - "$TMP/e4.log" <<'PY'
import re, sys
m = re.search(r"at most (\d+) MB .* all at once it would be (\d+) MB", open(sys.argv[1]).read())
assert m and 0 < int(m[1]) <= int(m[2]), m and m.groups()
PY
then ok "$(grep -o "loaded in turns by 4 ranks.*" "$TMP/e4.log" | cut -c1-150)"
else bad "no report of loading in turns on 4 ranks" "$TMP/e4.log"; fi

# Saved at E = 2 on 2 ranks, resumed at E = 4 on 4: the checkpoint's experts and moments re-cut
STEPS_SAVED=$STEPS; STEPS=2
run rs 2 "${MOE[@]}" $(EP 2) && STEPS=$STEPS_SAVED && run rs 4 "${MOE[@]}" $(EP 4) --resume auto && \
  same "E = 2 on 2 ranks to step 2, resumed at E = 4 on 4 = 1 process" z1 rs
STEPS=$STEPS_SAVED

# --- layouts that cannot work: config errors naming the key and the numbers --------------------------------------
refuse() {  # refuse NAME NPROC PATTERN [extra --set ...]: exit 2 (a config error) with PATTERN in the log
  local name="$1" n="$2" pat="$3" rc=0; shift 3
  "$LAUNCH" -n "$n" --port "$(free_port)" "$GSPO" "${TRAIN[@]}" --set train.max_steps=1 \
    --set "train.output_dir=$TMP/$name" "$@" >"$TMP/$name.log" 2>&1 || rc=$?
  if [ "$rc" -ne 2 ]; then bad "$name: exit $rc, not 2 (a config error)" "$TMP/$name.log"
  elif grep -q -- "$pat" "$TMP/$name.log"; then ok "$name refused: $(grep -m1 -o -- "$pat.*" "$TMP/$name.log" | cut -c1-120)"
  else bad "$name: no error matching '$pat'" "$TMP/$name.log"; fi
}
refuse world3 2 "distributed.expert_parallel (3) must divide the world size 2" "${MOE[@]}" $(EP 3)
refuse experts3 3 "layer 0 has 4 experts, which 3 ranks cannot share evenly" "${MOE[@]}" $(EP 3) \
  --set rollout.prompts_per_step=3
refuse dense 2 "is dense (no MoE layer)" --set "model.path=$MODELS/tiny_qwen3.pt" --set distributed.zero_stage=1 $(EP 2)
refuse stage0 2 "distributed.expert_parallel 2 needs distributed.zero_stage 1 (got 0)" "${MOE[@]}" \
  --set distributed.zero_stage=0 $(EP 2)
refuse epapi1 2 "cannot sample with its experts shared" --set "model.path=$MODELS/ep_api1.pt" \
  --set distributed.zero_stage=1 $(EP 2)
refuse bf16copy 2 "rollout.dtype bfloat16 with distributed.expert_parallel 2: the bf16 sampling copy would hold every" \
  "${MOE[@]}" --set rollout.dtype=bfloat16 $(EP 2)

# Every sampling phase of every run ended with its group agreeing (parallel/expert_rollout.h logs when one did not)
if grep -l "are out of step" "$TMP"/*.log >/dev/null 2>&1; then
  bad "a sampling phase ended without the group's agreement: $(grep -l "are out of step" "$TMP"/*.log | head -3)"
else ok "every sampling phase ended with its expert group's agreement ($(ls "$TMP"/*.log | wc -l) logs)"; fi

echo "expert parallel: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
