#!/usr/bin/env bash
# Multi-process training over Gloo on loopback: 2 and 3 ranks (with and without ZeRO-1, with token-budget
# micro-batches, a tied-embedding model and an MoE model with and without routing replay) reach the weights and
# metrics of 1 process on the same global batch; resuming with another world size continues the same run; so do
# multi-turn tool episodes (the tools demo) on 2 ranks and resumed; a dead or stalled rank, a missing rank, a port in
# use and bad launcher variables end with clear errors and non-zero exits, never a hang.
# usage: test_dist.sh GSPO_BINARY TEST_MODELS_DIR SOURCE_DIR [PYTHON]
set -u
GSPO="$1"; MODELS="$2"; SRC="$3"; PY="${4:-/usr/bin/python3}"
TMP="$(mktemp -d)"; trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
LAUNCH="$SRC/scripts/launch_local.sh"
source "$SRC/tests/dist/lib.sh"

# --- equivalence with one process -------------------------------------------------------------------------
run r1 1 && run r2 2 && run r3 3 && run r2z 2 --set distributed.zero_stage=1 && run r3z 3 --set distributed.zero_stage=1 \
  && run r1z 1 --set distributed.zero_stage=1 && {
  same "2 ranks = 1 process" r1 r2
  same "3 ranks = 1 process" r1 r3
  same "ZeRO-1 at 1 rank = torch AdamW" r1 r1z
  same "2 ranks ZeRO-1 = 1 process" r1 r2z
  same "3 ranks ZeRO-1 = 1 process" r1 r3z
}

# Length-packed micro-batches (algorithm.micro_batch_tokens, with micro_batch_size 5 still a row limit): each rank
# groups its own rows, and the loss weights keep the one-process update.
run r2t 2 --set algorithm.micro_batch_tokens=16 && same "2 ranks, micro_batch_tokens 16 = 1 process" r1 r2t

# A tied-embedding model (embedding = output layer) through gradient sync and ZeRO-1 shards: the tied weight is one
# parameter on every path. Random bytes: the reward is "the first byte is ASCII", about half of them.
TIED=(--set "model.path=$MODELS/tiny_qwen3.pt" --set 'reward.regex=^[\x00-\x7f]')
run t1 1 "${TIED[@]}" && run t2z 2 "${TIED[@]}" --set distributed.zero_stage=1 && {
  INITIAL="$MODELS/tiny_qwen3.pt" same "tied embeddings: 2 ranks ZeRO-1 = 1 process" t1 t2z
}
# The qwen3_moe path (router, top-k experts, a dense layer between MoE ones) through gradient sync, and Routing
# Replay (recorded experts per rank's rows, replayed in the update) through ZeRO-1 on 3 ranks.
MOE=(--set "model.path=$MODELS/qwen3_moe_tiny.pt" --set 'reward.regex=^[\x00-\x7f]')
run m1 1 "${MOE[@]}" && run m2 2 "${MOE[@]}" && run mr1 1 "${MOE[@]}" --set algorithm.routing_replay=old \
  && run mr3z 3 "${MOE[@]}" --set algorithm.routing_replay=old --set distributed.zero_stage=1 && {
  INITIAL="$MODELS/qwen3_moe_tiny.pt" same "qwen3_moe: 2 ranks = 1 process" m1 m2
  INITIAL="$MODELS/qwen3_moe_tiny.pt" same "qwen3_moe with routing replay: 3 ranks ZeRO-1 = 1 process" mr1 mr3z
}
# ZeRO-3 (distributed.zero_stage 3): weights, float32 masters, gradients and moments sharded, each decoder layer
# gathered while it runs and its gradient reduce-scattered after its backward; the rollout gathers a whole copy.
Z3=(--set distributed.zero_stage=3)
run r2z3 2 "${Z3[@]}" && run r3z3 3 "${Z3[@]}" && {
  same "2 ranks ZeRO-3 = 1 process" r1 r2z3
  same "3 ranks ZeRO-3 = 1 process" r1 r3z3
}
run r2z3k 2 "${Z3[@]}" --set distributed.zero3_keep_whole=true && same "2 ranks ZeRO-3 keeping the whole copy = 1 process" r1 r2z3k
run r2z3b 2 "${Z3[@]}" --set distributed.zero3_overlap=false && same "2 ranks ZeRO-3 with blocking collectives = 1 process" r1 r2z3b
# Overlap prefetches most layer gathers, blocking none, out of the same number; keeping the whole copy holds every
# layer between steps (model state at the step's end), the default frees them.
"$PY" - "$TMP" <<'PY' && ok "ZeRO-3: gathers prefetched with overlap, none blocking; zero3_keep_whole holds the layers" || bad "ZeRO-3 overlap / keep_whole metrics" "$TMP/r2z3.log"
import json, sys
t = sys.argv[1]
runs = {r: [json.loads(l) for l in open(f"{t}/{r}/metrics.jsonl")] for r in ("r2z3", "r2z3b", "r2z3k")}
for a, b in zip(runs["r2z3"], runs["r2z3b"]):
    assert a["zero3_gathers"] == b["zero3_gathers"] > 0, (a["zero3_gathers"], b["zero3_gathers"])
    assert a["zero3_prefetch_frac"] > 0.3 and b["zero3_prefetch_frac"] == 0, (a["zero3_prefetch_frac"], b["zero3_prefetch_frac"])
held, freed = runs["r2z3k"][-1]["model_state_mb_per_rank"], runs["r2z3"][-1]["model_state_mb_per_rank"]
assert held > 1.1 * freed, (held, freed)  # + 4 bytes x the decoder layers' parameters
PY
# On-policy distillation (distill.teacher, #69): each rank's teacher scores its own rows; the per-token advantages,
# distill_kl and the teacher's counts over 2 ranks (ZeRO-1) and 3 (ZeRO-3, idle micro-batches in lockstep) are the
# one process's. The teacher: another random byte model of the same vocabulary.
DIST=(--set "distill.teacher=$MODELS/tiny.pt" --set algorithm.loss=gspo_token --set distill.reward_weight=0.5)
run d1 1 "${DIST[@]}" && run d2z 2 "${DIST[@]}" --set distributed.zero_stage=1 && run d3z3 3 "${DIST[@]}" "${Z3[@]}" && {
  same "distillation: 2 ranks ZeRO-1 = 1 process" d1 d2z
  same "distillation: 3 ranks ZeRO-3 = 1 process" d1 d3z3
}
JSD=(--set "distill.teacher=$MODELS/tiny.pt" --set distill.objective=jsd --set distill.top_k=16 --set distill.reward_weight=0.5)
run dj1 1 "${JSD[@]}" && run dj2z 2 "${JSD[@]}" --set distributed.zero_stage=1 \
  && same "distillation over the teacher's top-16 (jsd): 2 ranks ZeRO-1 = 1 process" dj1 dj2z
run t3z3 3 "${TIED[@]}" "${Z3[@]}" && INITIAL="$MODELS/tiny_qwen3.pt" same "tied embeddings: 3 ranks ZeRO-3 = 1 process" t1 t3z3
run mr2z3 2 "${MOE[@]}" --set algorithm.routing_replay=old "${Z3[@]}" && \
  INITIAL="$MODELS/qwen3_moe_tiny.pt" same "qwen3_moe with routing replay: 2 ranks ZeRO-3 = 1 process" mr1 mr2z3
# bf16 weights with float32 masters through ZeRO-3 on 3 ranks: runs to the end and writes its checkpoint. Not held to
# one process step for step: bf16 roundings of masters that differ by summation order differ by one bf16 step, the
# sampler then draws other tokens and the runs part legitimately (tests/unit/test_zero3.cpp holds bf16 ZeRO-3 to plain
# data parallelism on the same rows, without sampling).
run b3z3 3 --set model.dtype=bfloat16 "${Z3[@]}" && "$PY" - "$TMP/b3z3" "$STEPS" <<'PY' && ok "bf16 masters: 3 ranks ZeRO-3 run to the end with policy.pt and 3 shard files" || bad "bf16 ZeRO-3 run" "$TMP/b3z3.log"
import json, math, os, sys, zipfile
run, steps = sys.argv[1], int(sys.argv[2])
m = [json.loads(l) for l in open(f"{run}/metrics.jsonl")]
assert len(m) == steps and all(math.isfinite(x["grad_norm"]) and x["grad_norm"] > 0 for x in m), m[-1]
last = sorted(os.listdir(f"{run}/checkpoints"))[-1]
zipfile.ZipFile(f"{run}/checkpoints/{last}/policy.pt").namelist()  # a whole archive
assert sum(n.endswith("optimizer_zero3_rank%d.pt" % r) for n in os.listdir(f"{run}/checkpoints/{last}") for r in range(3)) == 3
PY
if grep -q "3 ranks start from identical weights" "$TMP/r3.log"; then ok "initial weights verified on 3 ranks"
else bad "no initial-weights verification line" "$TMP/r3.log"; fi
if [ ! -e "$TMP/r3/metrics.jsonl" ] || [ "$(wc -l <"$TMP/r3/metrics.jsonl")" -ne $STEPS ]; then
  bad "rank 0 alone must write $STEPS metrics lines"; else ok "one metrics line per step with 3 ranks"; fi
# Communication cost and per-rank optimizer memory are reported.
"$PY" - "$TMP" <<'PY' && ok "comm time, share, ZeRO-1 optimizer and model-state memory reported" || bad "metrics fields"
import json, sys
t = sys.argv[1]
last = lambda r: [json.loads(l) for l in open(f"{t}/{r}/metrics.jsonl")][-1]
r1, r2, r3, r2z, r3z = (last(r) for r in ("r1", "r2", "r3", "r2z", "r3z"))
for m in (r2, r3, r2z):
    assert m["time_comm_s"] > 0 and 0 < m["comm_frac"] < 1 and m["comm_mb"] > 0, m
assert "time_comm_s" not in r1 and r1["world_size"] == 1 and r3["world_size"] == 3
# Moments of every trainable parameter (ZeRO-1 on one rank holds them all; torch AdamW creates them lazily, so a
# parameter the loss never reaches, like this model's unused q/k norms, has none there).
full = last("r1z")["optimizer_state_mb_per_rank"]
assert r1["optimizer_state_mb_per_rank"] <= full and abs(r2["optimizer_state_mb_per_rank"] - r1["optimizer_state_mb_per_rank"]) < 1e-12
for m, w in ((r2z, 2), (r3z, 3)):  # 1/world of the moments, plus at most one element of padding
    assert abs(m["optimizer_state_mb_per_rank"] - full / w) < 1e-4, (m["optimizer_state_mb_per_rank"], full, w)
# Model state (weights, gradients, moments, ZeRO-1's gradient shard): ZeRO-1 holds what plain data parallelism
# holds less the moments' (W-1)/W, plus its reduced-gradient shard (4 bytes of every W-th parameter: full / 2W MB).
ms = lambda m: m["model_state_mb_per_rank"]
os_ = lambda m: m["optimizer_state_mb_per_rank"]
assert abs(ms(r2) - ms(r1)) < 1e-9 and abs(ms(r3) - ms(r1)) < 1e-9, (ms(r1), ms(r2), ms(r3))
for plain, zero, w in ((r2, r2z, 2), (r3, r3z, 3)):
    assert ms(zero) < ms(plain), (ms(zero), ms(plain))
    expect = ms(plain) - os_(plain) + os_(zero) + full / (2 * w)
    assert abs(ms(zero) - expect) < 1e-4, (ms(zero), expect, w)
print(f"model state MB/rank: plain {ms(r2):.3f}, ZeRO-1 x2 {ms(r2z):.3f}, x3 {ms(r3z):.3f}")
print(f"comm share of the step: 2 ranks {r2['comm_frac']:.3f}, 3 ranks {r3['comm_frac']:.3f}; "
      f"optimizer MB/rank {full:.3f} -> ZeRO-1 x2 {r2z['optimizer_state_mb_per_rank']:.3f}, "
      f"x3 {r3z['optimizer_state_mb_per_rank']:.3f}")
PY

# --- resume with another world size continues the same global run -----------------------------------------
STEPS_SAVED=$STEPS; STEPS=2
run rs 2 && run rsz 3 --set distributed.zero_stage=1 && STEPS=$STEPS_SAVED && \
  run rs 3 --resume auto && run rsz 2 --set distributed.zero_stage=1 --resume auto && {
  same "2 ranks to step 2, resumed on 3 = 1 process" r1 rs
  same "ZeRO-1: 3 ranks to step 2, resumed on 2 = 1 process" r1 rsz
}
# ZeRO-3 shards re-cut at another world size: 2 ranks to step 2, 3 ranks to step 3, 2 ranks to the end.
STEPS_SAVED=$STEPS; STEPS=2
run rz3 2 "${Z3[@]}" && STEPS=3 && run rz3 3 "${Z3[@]}" --resume auto && STEPS=$STEPS_SAVED && \
  run rz3 2 "${Z3[@]}" --resume auto && {
  shards=$(ls "$TMP/rz3/checkpoints/step_00000003" 2>/dev/null | grep -c '^optimizer_zero3_rank')
  [ "$shards" = 3 ] && ok "ZeRO-3 on 3 ranks wrote 3 shard files and a consolidated policy.pt" \
    || bad "ZeRO-3 step-3 checkpoint has $shards shard files: $(ls "$TMP/rz3/checkpoints/step_00000003" 2>&1)"
  same "ZeRO-3: 2 ranks to step 2, 3 ranks to step 3, 2 ranks to the end = 1 process" r1 rz3
}
STEPS=$STEPS_SAVED
out="$("$GSPO" "${TRAIN[@]}" --set train.max_steps=5 --set distributed.zero_stage=1 --set "train.output_dir=$TMP/rs" --resume auto 2>&1)"; rc=$?
if [ $rc -eq 2 ] && grep -q "written with distributed.zero_stage 0" <<<"$out"; then ok "ZeRO-1 refuses a zero_stage 0 checkpoint"
else bad "zero-stage mismatch: exit $rc: $out"; fi

# --- tools: multi-turn episodes (docs/tools.md) ------------------------------------------------------------
# The tools demo (configs/tiny-tools.yaml): the model's "[]" ends its turn, the deterministic `lookup` command tool
# answers "{D}" into the row (loss mask 0), the model writes on. Each rank starts its own tool process for its own
# rows. The model is warm-started as in the demo: it calls in about 1 episode of 5 and copies the answer, so the
# tool's output reaches tokens, rewards and gradients (a random model rarely completes a call: runs without tool
# turns would prove little). Paths are absolute: the config's are relative to the checkout.
tool() {  # tool RUN: the --set for a lookup tool that logs each call it gets to $TMP/calls.RUN.rank<RANK>
  # (an executable per run: rerun splits arguments on spaces, so the value has none)
  printf '#!/bin/sh\ntee -a "%s.rank${RANK:-0}" | sh "%s"\n' "$TMP/calls.$1" "$SRC/scripts/tools/lookup.sh" \
    >"$TMP/lookup_$1.sh"
  chmod +x "$TMP/lookup_$1.sh"
  echo "tools.list=[{\"name\":\"lookup\",\"kind\":\"command\",\"command\":\"$TMP/lookup_$1.sh\"}]"
}
TRAIN_SAVED=("${TRAIN[@]}")
# One torch thread: two of them spin beside other load on a 2-core machine (20 s became 85 s beside a build).
if OMP_NUM_THREADS=1 "$PY" "$SRC/scripts/make_tiny_model.py" --out "$TMP/tiny_tools.pt" --warm "$SRC/data/tools_warm.txt" \
     --warm-steps 1000 >"$TMP/tiny_tools.log" 2>&1; then
  TRAIN=(train -c "$SRC/configs/tiny-tools.yaml" --set "model.path=$TMP/tiny_tools.pt"
         --set "data.path=$SRC/data/tools_lookup.jsonl" --set rollout.prompts_per_step=6 --set rollout.group_size=4
         --set algorithm.num_minibatches=2 --set algorithm.micro_batch_size=5 --set train.threads=1
         --set logging.progress=false --set distributed.timeout_s=20 --set distributed.init_timeout_s=20)
  INITIAL="$TMP/tiny_tools.pt"
  run o1 1 --set "$(tool o1)" && run o2 2 --set "$(tool o2)" && {
    # Not vacuous: calls were made and answered, and each rank ran its own rows' calls (the calls logged by the two
    # ranks' tool processes add up to the metrics' calls). Before `same`: a rerun with seed 1 would log more calls.
    "$PY" - "$TMP" <<'PY' && ok "tools: $(cat "$TMP/o2_calls.txt")" || bad "tools: calls made and run on both ranks" "$TMP/o2_calls.txt"
import json, sys
t = sys.argv[1]
def tools(run):  # calls (per episode in the metrics; 6 prompts x 4 samples per step), tool errors, steps with observations
    m = [json.loads(l) for l in open(f"{t}/{run}/metrics.jsonl")]
    return (round(sum(x["tool_calls_mean"] for x in m) * 24), sum(x["tool_errors"] for x in m),
            sum(x["observation_frac"] > 0 for x in m))
(calls, errors, observed), (calls2, _, _) = tools("o1"), tools("o2")
logged = [sum(1 for _ in open(f"{t}/calls.o2.rank{r}")) for r in (0, 1)]
with open(f"{t}/o2_calls.txt", "w") as f:
    print(f"{calls} calls, {errors} tool errors, observations in {observed} steps; with 2 ranks {calls2} calls, "
          f"rank 0's tool got {logged[0]}, rank 1's {logged[1]}", file=f)
assert calls > 0 and errors < calls and observed > 0, (calls, errors, observed)
assert min(logged) > 0 and sum(logged) == calls2, (logged, calls2)
PY
    same "tools: 2 ranks = 1 process" o1 o2
  }
  # Resume with tools (issue #40): 1 process to step 2, resumed on 1 process and on 2 ranks; each continues the
  # uninterrupted run (the tool is deterministic; its processes start afresh).
  STEPS_SAVED=$STEPS; STEPS=2
  run or1 1 --set "$(tool or1)" && run or2 1 --set "$(tool or2)" && STEPS=$STEPS_SAVED && \
    run or1 1 --set "$(tool or1)" --resume auto && run or2 2 --set "$(tool or2)" --resume auto && {
    same "tools: 1 process to step 2, resumed = 1 process" o1 or1
    same "tools: 1 process to step 2, resumed on 2 ranks = 1 process" o1 or2
  }
  STEPS=$STEPS_SAVED
  unset INITIAL
else bad "the tools model: make_tiny_model.py --warm failed" "$TMP/tiny_tools.log"; fi
TRAIN=("${TRAIN_SAVED[@]}")

# --- failures --------------------------------------------------------------------------------------------
# A rank killed mid-run: the survivor fails with a distributed error naming the collective, long before the
# 20 s collective timeout (the dead peer's connection closes).
port=$(free_port)
start_rank 0 2 "$port" dead; p0=$!
start_rank 1 2 "$port" dead; p1=$!
if wait_for_steps "$TMP/dead/metrics.jsonl" 2; then
  kill -9 $p1; timed_wait $p0 40
  if [ $rc -eq 7 ] && grep -q "rank 0 of 2: .* failed after" "$TMP/dead.rank0.log"; then
    ok "rank 1 killed: rank 0 exits 7 in ${secs}s: $(grep -o 'rank 0 of 2: [a-z_ ()0-9]* failed' "$TMP/dead.rank0.log" | head -1)"
  else bad "dead rank: rank 0 exit $rc after ${secs}s" "$TMP/dead.rank0.log"; fi
else bad "dead-rank run never reached step 2" "$TMP/dead.rank0.log"; kill -9 $p0 $p1 2>/dev/null; fi

# A stalled rank (SIGSTOP: alive, connection open, never answering): the collective times out.
port=$(free_port)
start_rank 0 2 "$port" hung --set distributed.timeout_s=4; p0=$!
start_rank 1 2 "$port" hung --set distributed.timeout_s=4; p1=$!
if wait_for_steps "$TMP/hung/metrics.jsonl" 1; then
  kill -STOP $p1; timed_wait $p0 40; kill -9 $p1 2>/dev/null
  if [ $rc -eq 7 ] && [ $secs -le 20 ] && grep -q "distributed error" "$TMP/hung.rank0.log"; then
    ok "stalled rank 1: rank 0 exits 7 after ${secs}s (timeout_s 4)"
  else bad "stalled rank: rank 0 exit $rc after ${secs}s" "$TMP/hung.rank0.log"; fi
else bad "stalled-rank run never reached step 1" "$TMP/hung.rank0.log"; kill -9 $p0 $p1 2>/dev/null; fi

# Ctrl-C (here SIGTERM: a background job ignores SIGINT) to the launcher: every rank stops after the same step, rank 0 checkpoints, all exit 130; resume works.
port=$(free_port)
"$LAUNCH" -n 2 --port "$port" "$GSPO" "${TRAIN[@]}" --set train.max_steps=100000 --set "train.output_dir=$TMP/int" \
  >"$TMP/int.log" 2>&1 & pl=$!
if wait_for_steps "$TMP/int/metrics.jsonl" 2; then
  kill -TERM $pl; timed_wait $pl 60
  saved=$(ls "$TMP/int/checkpoints" 2>/dev/null | tail -1)
  if [ $rc -eq 130 ] && [ -n "$saved" ] && [ "$(grep -c 'exited with status' "$TMP/int.log")" -le 1 ]; then
    step=$((10#${saved#step_}))
    if "$LAUNCH" -n 2 --port "$(free_port)" "$GSPO" "${TRAIN[@]}" --set train.max_steps=$((step + 1)) \
         --set "train.output_dir=$TMP/int" --resume auto >"$TMP/int2.log" 2>&1 && grep -q "finished after step $((step + 1))" "$TMP/int2.log"; then
      ok "Ctrl-C: both ranks exit 130 after step $step with a checkpoint; resuming on 2 ranks finishes step $((step + 1))"
    else bad "resume after Ctrl-C" "$TMP/int2.log"; fi
  else bad "Ctrl-C: launcher exit $rc, checkpoint '$saved'" "$TMP/int.log"; fi
else bad "Ctrl-C run never reached step 2" "$TMP/int.log"; kill -9 $pl 2>/dev/null; fi

# A rank that never starts: rank 0 gives up after init_timeout_s.
port=$(free_port)
start_rank 0 2 "$port" alone --set distributed.init_timeout_s=3; p0=$!
timed_wait $p0 30
if [ $rc -eq 7 ] && [ $secs -le 15 ] && grep -q "rendezvous at 127.0.0.1:$port failed within distributed.init_timeout_s = 3.* 1 of 2 ranks joined" "$TMP/alone.rank0.log"; then
  ok "missing rank: rank 0 exits 7 after ${secs}s"
else bad "missing rank: exit $rc after ${secs}s" "$TMP/alone.rank0.log"; fi

# The port is already taken by another program.
port=$(free_port)
"$PY" -c "import socket,time; s=socket.socket(); s.bind(('0.0.0.0',$port)); s.listen(); time.sleep(60)" & blocker=$!
sleep 0.5
start_rank 0 2 "$port" busy --set distributed.init_timeout_s=5; p0=$!
timed_wait $p0 30; kill $blocker 2>/dev/null
if [ $rc -eq 7 ] && grep -q "cannot listen on MASTER_ADDR:MASTER_PORT = 127.0.0.1:$port: the port is in use" "$TMP/busy.rank0.log"; then
  ok "port in use: exit 7 naming 127.0.0.1:$port"
else bad "port in use: exit $rc" "$TMP/busy.rank0.log"; fi

# Launcher variables and batch shapes that cannot work are config errors before any rendezvous.
expect_err bad-rank "RANK='one' is not an integer" RANK=one WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 --
expect_err rank-range "RANK=2 is outside [0, WORLD_SIZE=2)" RANK=2 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 --
expect_err no-addr "MASTER_ADDR is not set" RANK=0 WORLD_SIZE=2 MASTER_PORT=1 --
expect_err indivisible "must be a multiple of the world size 4" RANK=0 WORLD_SIZE=4 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 --
expect_err no-nccl "NCCL" RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 "MASTER_PORT=$(free_port)" -- --set distributed.backend=nccl

# The launcher itself: variables per rank, prefixed output, the failing rank's status, bad -n.
out="$("$LAUNCH" -n 2 --port 29999 bash -c 'echo "$RANK/$WORLD_SIZE/$LOCAL_RANK/$MASTER_ADDR:$MASTER_PORT"' 2>&1)"; rc=$?
if [ $rc -eq 0 ] && grep -qx "\[rank 0\] 0/2/0/127.0.0.1:29999" <<<"$out" && grep -qx "\[rank 1\] 1/2/1/127.0.0.1:29999" <<<"$out"; then
  ok "launch_local.sh sets RANK/WORLD_SIZE/LOCAL_RANK/MASTER_* per rank"; else bad "launcher env: $rc: $out"; fi
"$LAUNCH" -n 3 bash -c 'exit $((RANK == 1 ? 5 : 0))' >/dev/null 2>&1; rc=$?
if [ $rc -eq 5 ]; then ok "launch_local.sh exits with the failing rank's status (5)"; else bad "launcher status: $rc"; fi
out="$("$LAUNCH" -n 0 true 2>&1)"; rc=$?
if [ $rc -eq 2 ] && grep -q "must be a positive integer" <<<"$out"; then ok "launch_local.sh -n 0 is refused"; else bad "launcher -n 0: $rc $out"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
