#!/usr/bin/env bash
# Partial rollouts on the synchronous schedule (async.partial_rollout, docs/async.md), on tiny_prior (long-tailed
# lengths from its own EOS): with as many groups in flight as a step trains, the run is the synchronous run (every
# group must end in its call); with more, the steps stop before their longest rows end, rows are carried and continue
# under the next step's weights (rows spanning versions, tokens prefilled again), no trained row is older than
# async.max_staleness (per-row lags read from the metrics), on 1 and 2 ranks and beside rollout ranks (where the same
# plan with as many groups in flight as a step trains is the plain asynchronous run); a checkpoint keeps the carried groups'
# prompts (carried.json) and a resume samples them again; bad settings are config errors naming the keys.
# usage: test_partial.sh GSPO_BINARY TEST_MODELS_DIR SOURCE_DIR [PYTHON]
set -u
GSPO="$1"; MODELS="$2"; SRC="$3"; PY="${4:-/usr/bin/python3}"
TMP="$(mktemp -d)"; trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
LAUNCH="$SRC/scripts/launch_local.sh"
source "$SRC/tests/dist/lib.sh"

# Responses up to 12 tokens (tiny.yaml's 3 leave no tail to cut).
TRAIN+=(--set rollout.max_new_tokens=12)
PARTIAL_ONLY=version_lag_mean,version_lag_max,spanned_rows_frac,carried_rows,continued_tokens
P=(--set async.partial_rollout=true)

# bounded RUN S: every step trains 24 rows none older than S versions; some rows were carried, continued and spanned
# versions (at least one step each); prints the per-step maxima.
bounded() {
  "$PY" - "$TMP/$1/metrics.jsonl" "$2" <<'PY'
import json, sys
path, S = sys.argv[1], int(sys.argv[2])
lines = [json.loads(l) for l in open(path)]
for m in lines:
    assert 0 <= m["version_lag_max"] <= S, f"step {m['step']}: lag {m['version_lag_max']} over {S}"
    assert 0 <= m["spanned_rows_frac"] <= 1, m
    assert m["response_len_mean"] > 0, m
assert any(m["carried_rows"] > 0 for m in lines), "no step carried a row"
assert any(m["continued_tokens"] > 0 for m in lines), "no row was continued"
assert any(m["spanned_rows_frac"] > 0 for m in lines), "no trained row spanned two versions"
assert any(m["version_lag_max"] > 0 for m in lines), "no stale row was trained"
print("lag max", [m["version_lag_max"] for m in lines], "carried", [m["carried_rows"] for m in lines],
      "spanned", [round(m["spanned_rows_frac"], 2) for m in lines])
PY
}

# --- as many groups in flight as a step trains: every group ends in its call, the synchronous run --------------------
run sync1 1 && run eq1 1 "${P[@]}" --set async.max_staleness=1 --set async.prompts_in_flight=6 \
  && CMP_EXTRA="--one-sided $PARTIAL_ONLY" same "prompts_in_flight = prompts_per_step: the synchronous run" sync1 eq1

# --- more groups in flight: rows carried, bounded lags -----------------------------------------------------------
STEPS=5
run p1 1 "${P[@]}" --set async.max_staleness=1 && {
  if out=$(bounded p1 1); then ok "1 process, max_staleness 1, 12 groups in flight: $out"
  else bad "1 process, max_staleness 1: $out" "$TMP/p1.log"; fi
}
run p2 2 "${P[@]}" --set async.max_staleness=2 --set async.prompts_in_flight=18 && {
  if out=$(bounded p2 2); then ok "2 ranks, max_staleness 2, 18 groups in flight: $out"
  else bad "2 ranks, max_staleness 2: $out" "$TMP/p2.log"; fi
}

# --- beside a rollout rank: the carry happens on the rollout rank, batches sampled one version fresher ---------------
K1=(--set distributed.rollout_ranks=1 --set async.wait_timeout_s=60)
STEPS=4
run a1 2 "${K1[@]}" --set async.max_staleness=1 \
  && run ap1 2 "${K1[@]}" "${P[@]}" --set async.max_staleness=1 --set async.prompts_in_flight=6 \
  && CMP_EXTRA="--one-sided spanned_rows_frac,carried_rows,continued_tokens" \
     same "1 rollout rank, prompts_in_flight = prompts_per_step: the asynchronous run" a1 ap1
STEPS=5
run ap2 3 --set distributed.rollout_ranks=2 --set async.wait_timeout_s=60 "${P[@]}" --set async.max_staleness=2 && {
  if out=$(bounded ap2 2); then ok "2 rollout ranks + 1 trainer, max_staleness 2, 12 groups in flight: $out"
  else bad "2 rollout ranks, max_staleness 2: $out" "$TMP/ap2.log"; fi
}

# --- a checkpoint keeps the carried prompts; a resume samples them again ----------------------------------------
STEPS=2 && run pr 1 "${P[@]}" --set async.max_staleness=1 --set checkpoint.every=1 && {
  carried="$(ls -d "$TMP"/pr/checkpoints/step_* | tail -1)/carried.json"
  if "$PY" -c "import json,sys; e=json.load(open('$carried'))['examples']; assert len(e)==6 and len(set(e))==6, e" 2>/dev/null
  then ok "checkpoint: carried.json holds the 6 carried groups' examples"
  else bad "carried.json: $(cat "$carried" 2>&1)" "$TMP/pr.log"; fi
  STEPS=4 && run pr 1 "${P[@]}" --set async.max_staleness=1 --resume auto && {
    if grep -q "resumed from" "$TMP/pr.log" && [ "$(wc -l <"$TMP/pr/metrics.jsonl")" -eq 4 ] \
       && "$PY" -c "
import json; m=[json.loads(l) for l in open('$TMP/pr/metrics.jsonl')]
assert m[2]['version_lag_max'] == 0, m[2]  # the groups carried past the checkpoint begin again at the resumed version
assert all(x['version_lag_max'] <= 1 for x in m)"; then
      ok "resume at step 2: the carried groups sampled again by version 2, steps 3-4 within the bound"
    else bad "resume with carried groups" "$TMP/pr.log"; fi
  }
}
STEPS=4

expect_err zero-staleness "async.partial_rollout needs async.max_staleness >= 1" RANK=0 WORLD_SIZE=1 -- "${P[@]}"
expect_err in-flight "async.prompts_in_flight (13) must lie between rollout.prompts_per_step (6) and" RANK=0 \
  WORLD_SIZE=1 -- "${P[@]}" --set async.max_staleness=1 --set async.prompts_in_flight=13
expect_err rollout-split "async.prompts_in_flight (9) must be a multiple of the rollout ranks (2)" RANK=0 \
  WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 -- "${P[@]}" --set async.max_staleness=1 \
  --set distributed.rollout_ranks=2 --set async.prompts_in_flight=9
expect_err carry-sync "async.sync_every (3) must be at most async.max_staleness + 1 = 3 less the 1 step(s)" RANK=0 \
  WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 -- "${P[@]}" --set async.max_staleness=2 \
  --set distributed.rollout_ranks=1 --set async.sync_every=3
expect_err in-flight-split "async.prompts_in_flight (9) must be a multiple of the world size 2" RANK=0 WORLD_SIZE=2 \
  MASTER_ADDR=127.0.0.1 MASTER_PORT=1 -- "${P[@]}" --set async.max_staleness=1 --set async.prompts_in_flight=9

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
