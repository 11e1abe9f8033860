#!/usr/bin/env bash
# Asynchronous training over Gloo on loopback (distributed.rollout_ranks, docs/async.md): at async.max_staleness 0 the
# rollout ranks sample what the synchronous run samples, so 1 or 2 rollout ranks beside 1 or 2 trainers reach the
# weights and metrics of the colocated run; at S >= 1 every trained row's version lag is exactly min(step - 1, S)
# (read from the per-row column's statistics), the same on another layout; a resume restarts the rollout ranks from
# the checkpoint's weights; a dead or stalled rank ends every rank with exit 7, the last checkpoint intact; Ctrl-C
# drains the batches sampled ahead; impossible layouts are config errors.
# usage: test_async.sh GSPO_BINARY TEST_MODELS_DIR SOURCE_DIR [PYTHON]
set -u
GSPO="$1"; MODELS="$2"; SRC="$3"; PY="${4:-/usr/bin/python3}"
TMP="$(mktemp -d)"; trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
LAUNCH="$SRC/scripts/launch_local.sh"
source "$SRC/tests/dist/lib.sh"

# lib.sh's job (test_dist.sh's), with a wait limit a stalled peer reaches within the test.
TRAIN+=(--set async.wait_timeout_s=60)
ASYNC_ONLY=version_lag_mean,version_lag_max
K1=(--set distributed.rollout_ranks=1)
K2=(--set distributed.rollout_ranks=2)

# lags RUN S [START]: each step's version_lag_mean and _max are min(step - 1 - START, S) past a resume at START (0)
lags() {
  "$PY" - "$TMP/$1/metrics.jsonl" "$2" "${3:-0}" <<'PY'
import json, sys
path, S, start = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lines = [json.loads(l) for l in open(path)]
for m in lines:
    j = m["step"] - 1                          # the batch this step trained on
    want = min(j - start, S) if j >= start else min(j, S)
    got = (m["version_lag_mean"], m["version_lag_max"])
    assert got == (want, want), f"step {m['step']}: lag mean/max {got}, expected {want}"
    assert 0 <= m["rollout_idle_frac"] <= 1 and 0 <= m["trainer_idle_frac"] <= 1, m
    assert m["time_sample_s"] > 0, f"step {m['step']}: no sampling time from the rollout ranks"
print(f"lags {[m['version_lag_max'] for m in lines]}")
PY
}

# --- max_staleness 0: the synchronous run's samples, drawn on other ranks --------------------------------------
run r1 1 && run a11 2 "${K1[@]}" && run a21 3 "${K2[@]}" && {
  CMP_EXTRA="--one-sided $ASYNC_ONLY" same "1 rollout rank + 1 trainer, max_staleness 0 = 1 process" r1 a11
  CMP_EXTRA="--one-sided $ASYNC_ONLY" same "2 rollout ranks + 1 trainer, max_staleness 0 = 1 process" r1 a21
}
run r2 2 && run a12 3 "${K1[@]}" && CMP_EXTRA="--one-sided $ASYNC_ONLY" same "1 rollout rank + 2 trainers = 2 ranks" r2 a12
run a12z3 3 "${K1[@]}" --set distributed.zero_stage=3 \
  && CMP_EXTRA="--one-sided $ASYNC_ONLY" same "1 rollout rank + 2 ZeRO-3 trainers (weights gathered to send) = 2 ranks" r2 a12z3
# The weights went out once per step (version 0 at start, then after each step but the last), in float32.
"$PY" - "$TMP/a11/metrics.jsonl" <<'PY' && ok "weight sync: after every step but the last, the model's float32 bytes" || bad "weight sync metrics" "$TMP/a11.log"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
mb = [m["weight_sync_mb"] for m in lines]
assert all(x > 0 for x in mb[:-1]) and mb[-1] == 0 and len(set(mb[:-1])) == 1, mb
PY

# On-policy distillation beside a rollout rank (#69): the trainer's teacher scores the rows it receives (the rollout
# rank never loads it: the terms are made where the update runs); max_staleness 0: the one process's run.
DIST=(--set "distill.teacher=$MODELS/tiny.pt" --set algorithm.loss=gspo_token --set distill.reward_weight=0.5)
run d1 1 "${DIST[@]}" && run da11 2 "${K1[@]}" "${DIST[@]}" && \
  CMP_EXTRA="--one-sided $ASYNC_ONLY" same "distillation: 1 rollout rank + 1 trainer, max_staleness 0 = 1 process" d1 da11
# The teacher reading chatml (distill.chat_template): the shipped rows carry their examples' indices, which the
# trainer renders from its own copy of the data.
run dc1 1 "${DIST[@]}" --set distill.chat_template=chatml && \
  run dca11 2 "${K1[@]}" "${DIST[@]}" --set distill.chat_template=chatml && \
  CMP_EXTRA="--one-sided $ASYNC_ONLY" same "distillation in chatml: 1 rollout rank + 1 trainer = 1 process" dc1 dca11
# Rollout Routing Replay beside a rollout rank (#70): the rollout rank records the experts its sampler ran and ships
# them with the rows; the trainer replays them: the one process's run.
R3=(--set "model.path=$MODELS/qwen3_moe_tiny.pt" --set algorithm.routing_replay=rollout)
run m1 1 "${R3[@]}" && run ma11 2 "${K1[@]}" "${R3[@]}" && INITIAL="$MODELS/qwen3_moe_tiny.pt" \
  CMP_EXTRA="--one-sided $ASYNC_ONLY" same "routing replay rollout: 1 rollout rank + 1 trainer = 1 process" m1 ma11

# --- max_staleness 1 and 2: bounded, exact lags; the schedule does not depend on the layout --------------------------
run s1 2 "${K1[@]}" --set async.max_staleness=1 && run s1b 3 "${K2[@]}" --set async.max_staleness=1 && {
  if out=$(lags s1 1); then ok "max_staleness 1: lag per step $out"; else bad "max_staleness 1 lags: $out" "$TMP/s1.log"; fi
  same "max_staleness 1: 2 rollout ranks = 1 rollout rank" s1 s1b
}
STEPS=5
run s2 2 "${K1[@]}" --set async.max_staleness=2 && {
  if out=$(lags s2 2); then ok "max_staleness 2: lag per step $out"; else bad "max_staleness 2 lags: $out" "$TMP/s2.log"; fi
}
run s2n 2 "${K1[@]}" --set async.max_staleness=2 --set async.sync_every=3 && {
  out=$("$PY" -c "import json,sys; print([json.loads(l)['version_lag_max'] for l in open('$TMP/s2n/metrics.jsonl')])")
  # batch j by version ceil(max(0, j - 2) / 3) * 3: batches 0..4 by 0, 0, 0, 3, 3
  if [ "$out" = "[0.0, 1.0, 2.0, 0.0, 1.0]" ]; then ok "sync_every 3, max_staleness 2: lags $out"
  else bad "sync_every 3 lags: $out" "$TMP/s2n.log"; fi
}
STEPS=4

# --- resume: at S = 0 the uninterrupted run; at S = 1 the rollout ranks restart from the checkpoint's weights -------
STEPS=2 && run a11r 2 "${K1[@]}" && STEPS=4 && run a11r 2 "${K1[@]}" --resume auto \
  && CMP_EXTRA="--one-sided $ASYNC_ONLY" same "max_staleness 0 resumed at step 2 = 1 process" r1 a11r
STEPS=2 && run s1r 2 "${K1[@]}" --set async.max_staleness=1 && STEPS=4 \
  && run s1r 2 "${K1[@]}" --set async.max_staleness=1 --resume auto && {
  if out=$(lags s1r 1 2); then ok "max_staleness 1 resumed at step 2: batches 2, 3 by version 2 (the one sampled ahead lost): $out"
  else bad "resumed lags: $out" "$TMP/s1r.log"; fi
}

# --- faults ---------------------------------------------------------------------------------------------------------
port=$(free_port)
start_rank 0 2 "$port" deadr "${K1[@]}" --set checkpoint.every=1; p0=$!
start_rank 1 2 "$port" deadr "${K1[@]}" --set checkpoint.every=1; p1=$!
if wait_for_steps "$TMP/deadr/metrics.jsonl" 2; then
  kill -9 $p1; timed_wait $p0 40
  last=$(ls "$TMP/deadr/checkpoints" | tail -1)
  if [ $rc -eq 7 ] && [ $secs -le 15 ] && grep -q "rollout rank\|failed after" "$TMP/deadr.rank0.log" \
     && "$PY" -c "import torch; torch.jit.load('$TMP/deadr/checkpoints/$last/policy.pt')"; then
    ok "rollout rank killed: the trainer exits 7 in ${secs}s, checkpoint $last intact"
  else bad "rollout rank killed: trainer exit $rc after ${secs}s" "$TMP/deadr.rank0.log"; fi
else bad "dead-rollout run never reached step 2" "$TMP/deadr.rank0.log"; kill -9 $p0 $p1 2>/dev/null; fi

port=$(free_port)
start_rank 0 2 "$port" deadt "${K1[@]}" --set async.max_staleness=1; p0=$!
start_rank 1 2 "$port" deadt "${K1[@]}" --set async.max_staleness=1; p1=$!
if wait_for_steps "$TMP/deadt/metrics.jsonl" 2; then
  kill -9 $p0; timed_wait $p1 40
  if [ $rc -eq 7 ] && [ $secs -le 15 ]; then ok "trainer killed: the rollout rank exits 7 in ${secs}s"
  else bad "trainer killed: rollout rank exit $rc after ${secs}s" "$TMP/deadt.rank1.log"; fi
else bad "dead-trainer run never reached step 2" "$TMP/deadt.rank0.log"; kill -9 $p0 $p1 2>/dev/null; fi

port=$(free_port)
start_rank 0 2 "$port" hungr "${K1[@]}" --set async.wait_timeout_s=4; p0=$!
start_rank 1 2 "$port" hungr "${K1[@]}" --set async.wait_timeout_s=4; p1=$!
if wait_for_steps "$TMP/hungr/metrics.jsonl" 1; then
  kill -STOP $p1; timed_wait $p0 40; kill -9 $p1 2>/dev/null
  # SIGSTOP can land between a batch's header and its bytes: either wait names the rollout rank.
  if [ $rc -eq 7 ] && [ $secs -le 20 ] && grep -Eq "(waiting for|receiving) a batch from a rollout rank" "$TMP/hungr.rank0.log" \
     && grep -q "hung past async.wait_timeout_s (4 s)" "$TMP/hungr.rank0.log"; then
    ok "stalled rollout rank: the trainer exits 7 after ${secs}s (wait_timeout_s 4)"
  else bad "stalled rollout rank: trainer exit $rc after ${secs}s" "$TMP/hungr.rank0.log"; fi
else bad "stalled-rollout run never reached step 1" "$TMP/hungr.rank0.log"; kill -9 $p0 $p1 2>/dev/null; fi

# Ctrl-C with batches sampled ahead: every rank exits 130, the trainers take and drop what was in flight, resume works.
port=$(free_port)
"$LAUNCH" -n 2 --port "$port" "$GSPO" "${TRAIN[@]}" "${K1[@]}" --set async.max_staleness=2 --set train.max_steps=100000 \
  --set "train.output_dir=$TMP/int" >"$TMP/int.log" 2>&1 & pl=$!
if wait_for_steps "$TMP/int/metrics.jsonl" 2; then
  kill -TERM $pl; timed_wait $pl 60
  saved=$(ls "$TMP/int/checkpoints" 2>/dev/null | tail -1)
  if [ $rc -eq 130 ] && [ -n "$saved" ] && grep -q "dropped .* batch(es) the rollout ranks had sampled ahead" "$TMP/int.log"; then
    step=$((10#${saved#step_}))
    if "$LAUNCH" -n 2 --port "$(free_port)" "$GSPO" "${TRAIN[@]}" "${K1[@]}" --set async.max_staleness=2 \
         --set train.max_steps=$((step + 2)) --set "train.output_dir=$TMP/int" --resume auto >"$TMP/int2.log" 2>&1 \
       && grep -q "finished after step $((step + 2))" "$TMP/int2.log"; then
      ok "Ctrl-C at max_staleness 2: every rank exits 130 after step $step, in-flight batches dropped; resume finishes step $((step + 2))"
    else bad "resume after Ctrl-C" "$TMP/int2.log"; fi
  else bad "Ctrl-C: launcher exit $rc, checkpoint '$saved'" "$TMP/int.log"; fi
else bad "Ctrl-C run never reached step 2" "$TMP/int.log"; kill -9 $pl 2>/dev/null; fi

# --- layouts and options that cannot work -------------------------------------------------------------------------
W2=(RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=1)
expect_err no-trainer "distributed.rollout_ranks (2) must leave at least one training rank in a world of 2" "${W2[@]}" -- "${K2[@]}"
expect_err rollout-split "must be a multiple of the rollout ranks (4 of a world of 5" RANK=0 WORLD_SIZE=5 \
  MASTER_ADDR=127.0.0.1 MASTER_PORT=1 -- --set distributed.rollout_ranks=4
expect_err trainer-split "must be a multiple of the training ranks (4 of a world of 5" RANK=0 WORLD_SIZE=5 \
  MASTER_ADDR=127.0.0.1 MASTER_PORT=1 -- --set distributed.rollout_ranks=1
expect_err no-rollout-ranks "async.max_staleness applies to asynchronous training" RANK=0 WORLD_SIZE=1 -- \
  --set async.max_staleness=1
expect_err sync-every "async.sync_every (3) must be at most async.max_staleness + 1 = 2" "${W2[@]}" -- "${K1[@]}" \
  --set async.max_staleness=1 --set async.sync_every=3
expect_err dynamic "rollout.dynamic_sampling is not built with distributed.rollout_ranks > 0" "${W2[@]}" -- "${K1[@]}" \
  --set rollout.dynamic_sampling=true

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
