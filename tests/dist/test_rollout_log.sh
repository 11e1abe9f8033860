#!/usr/bin/env bash
# Rollouts written during training (logging.rollouts_every; train/report/rollout_log.h, #67 item 1): the due steps' files,
# every row's fields, the files' mean reward and advantage against metrics.jsonl; 2 ranks write the rows 1 process
# writes (each once, in global order); a row cap keeps whole groups; a resume rewrites the steps after its checkpoint as
# the uninterrupted run wrote them; the size cap keeps the first and newest files.
# usage: test_rollout_log.sh GSPO_BINARY TEST_MODELS_DIR SOURCE_DIR [PYTHON]
set -u
GSPO="$1"; MODELS="$2"; SRC="$3"; PY="${4:-/usr/bin/python3}"
TMP="$(mktemp -d)"; trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
LAUNCH="$SRC/scripts/launch_local.sh"
source "$SRC/tests/dist/lib.sh"
CHECK=("$PY" "$SRC/tests/dist/check_rollouts.py")
LOG=(--set logging.rollouts_every=2 --set logging.rollouts_rows=1000)

expect() {  # expect NAME COMMAND...: the command prints ok and exits 0
  local name="$1"; shift
  if "$@" >"$TMP/$name.check" 2>&1; then ok "$name: $(tail -1 "$TMP/$name.check")"
  else bad "$name: $(tail -1 "$TMP/$name.check")"; fi
}

# 5 steps, every 2nd: the first (1), 2, 4 and the last (5); 6 prompts x 4 samples = 24 rows each.
launch r1 1 5 "${LOG[@]}" && {
  expect one_process "${CHECK[@]}" "$TMP/r1" --steps 1,2,4,5 --rows 24 --group 4 --all-rows
  # The trainer's log-probs and entropies of step 1 against torch running the starting model.
  expect trainer_logprobs "${CHECK[@]}" "$TMP/r1" --reference "$MODELS/tiny_prior.pt"
}
launch r2 2 5 "${LOG[@]}" && {
  expect two_ranks "${CHECK[@]}" "$TMP/r2" --steps 1,2,4,5 --rows 24 --group 4 --all-rows
  # Another world size samples with other batch shapes: a token whose draw lies within rounding of a CDF edge can flip
  # (lib.sh's `same`), so a disagreement is retried once with rollout.seed=1, and fails only when both seeds disagree.
  if "${CHECK[@]}" "$TMP/r2" --same "$TMP/r1" >"$TMP/same.check" 2>&1; then ok "two_ranks_same_rows: $(tail -1 "$TMP/same.check")"
  else
    launch r1s 1 5 "${LOG[@]}" --set rollout.seed=1 && launch r2s 2 5 "${LOG[@]}" --set rollout.seed=1 \
      && { echo "seed 0: $(tail -1 "$TMP/same.check")"; expect two_ranks_same_rows_seed1 "${CHECK[@]}" "$TMP/r2s" --same "$TMP/r1s"; }
  fi
}
# A cap of 10 rows keeps two whole groups (8 rows), taken across both ranks' blocks on 2 ranks the same way.
launch c2 2 2 --set logging.rollouts_every=1 --set logging.rollouts_rows=10 \
  && expect row_cap "${CHECK[@]}" "$TMP/c2" --steps 1,2 --rows 8 --group 4
# Interrupted at step 3 (a checkpoint there), resumed to 5: steps 4 and 5 as the uninterrupted run wrote them.
launch res 1 3 "${LOG[@]}" --set checkpoint.every=3 && launch res 1 5 "${LOG[@]}" --set checkpoint.every=3 --resume auto \
  && expect resume "${CHECK[@]}" "$TMP/res" --same "$TMP/r1"
# A resume from step 3 of a run that had gone further drops the later files, then writes them again.
mkdir -p "$TMP/res2" && cp -r "$TMP/r1/rollouts" "$TMP/res2/" && launch res2 1 3 "${LOG[@]}" --set checkpoint.every=3 \
  && { [ -f "$TMP/res2/rollouts/step_00000004.jsonl" ] && bad "resume_drops_later: step 4 survived a run that ended at 3" \
       || ok "resume_drops_later"; }
# A size cap below one file: the first and the newest stay.
launch cap 1 5 "${LOG[@]}" --set logging.rollouts_max_mb=0.0001 && {
  got=$(ls "$TMP/cap/rollouts" | xargs)
  [ "$got" = "step_00000001.jsonl step_00000005.jsonl" ] && ok "size_cap: $got" || bad "size_cap: $got"
}
# Validation's samples beside the rollouts: every sample of every problem once per validation (before training and
# after steps 1 and 2), on 1 rank and on 2.
printf '{"prompt": "1+2=", "answer": "3"}\n{"prompt": "2+2=", "answer": "4"}\n{"prompt": "0+3=", "answer": "3"}\n' \
  > "$TMP/val.jsonl"
VAL=(--set eval.every=1 --set "eval.datasets=[$TMP/val.jsonl]" --set eval.samples=2 "${LOG[@]}")
for n in 1 2; do
  launch val$n $n 2 "${VAL[@]}" && {
    got=$(ls "$TMP/val$n/validation_samples" | xargs)
    lines=$(cat "$TMP/val$n/validation_samples/step_00000002.jsonl" | "$PY" -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin]
print(len(rows), sorted({(r["dataset"], r["index"], r["sample"]) for r in rows}) == sorted(
    ("val", i, s) for i in range(3) for s in range(2)), all("response" in r for r in rows))')
    [ "$got" = "step_00000000.jsonl step_00000001.jsonl step_00000002.jsonl" ] && [ "$lines" = "6 True True" ] \
      && ok "validation_samples_$n: $got, $lines" || bad "validation_samples_$n: files '$got', lines '$lines'"
  }
done
echo "rollout log: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
