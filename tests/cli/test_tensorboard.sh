#!/usr/bin/env bash
# logging.tensorboard: the event files gspo writes, read back by the pinned tensorboard package's own reader
# (check_tensorboard.py), equal metrics.jsonl value for value; after a crash past the last checkpoint and a resume,
# every step is there once; a directory of the user's choosing works too.
# usage: test_tensorboard.sh GSPO_BINARY TEST_MODELS_DIR SOURCE_DIR PYTHON
set -u
GSPO="$1"; MODELS="$2"; SRC="$3"; PY="$4"
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
pass=0; fail=0
ok() { pass=$((pass+1)); echo "ok   $1"; }
bad() { fail=$((fail+1)); echo "FAIL $1"; [ -n "${2:-}" ] && tail -5 "$2"; }
TRAIN=(train -c "$SRC/configs/tiny.yaml" --set "model.path=$MODELS/tiny_prior.pt" --set rollout.prompts_per_step=4
       --set rollout.group_size=4 --set train.threads=1 --set logging.progress=false --set reward.kind=regex
       --set 'reward.regex=^[0-4]' --set checkpoint.every=2 --set checkpoint.keep_last=5)

# A fresh run of 3 steps, then a crash after step 3's metrics line but before its checkpoint (its checkpoint removed),
# resumed to step 5: metrics.jsonl is cut back to step 2, the events rewritten from it, steps 3-5 appended.
run=$TMP/run
if "$GSPO" "${TRAIN[@]}" --set train.max_steps=3 --set train.output_dir=$run --set logging.tensorboard=true \
     >"$TMP/a.log" 2>&1 && "$PY" "$SRC/tests/cli/check_tensorboard.py" "$run" >"$TMP/c1.log" 2>&1; then
  ok "3 steps: $(tail -1 "$TMP/c1.log")"
else bad "tensorboard, fresh run" "$TMP/c1.log"; cat "$TMP/a.log" | tail -3; fi
rm -rf "$run/checkpoints/step_00000003"
if "$GSPO" "${TRAIN[@]}" --set train.max_steps=5 --set train.output_dir=$run --set logging.tensorboard=true \
     --resume auto >"$TMP/b.log" 2>&1 && "$PY" "$SRC/tests/cli/check_tensorboard.py" "$run" >"$TMP/c2.log" 2>&1 \
   && [ "$(wc -l <"$run/metrics.jsonl")" -eq 5 ] && [ "$(ls "$run/tensorboard" | wc -l)" -eq 1 ]; then
  ok "resumed at step 2 after a crash at 3, to 5: each step once, one event file: $(tail -1 "$TMP/c2.log")"
else bad "tensorboard after a resume" "$TMP/c2.log"; tail -3 "$TMP/b.log"; fi

# A directory of the user's choosing.
if "$GSPO" "${TRAIN[@]}" --set train.max_steps=2 --set train.output_dir=$TMP/run2 \
     --set "logging.tensorboard=$TMP/tb_elsewhere" >"$TMP/d.log" 2>&1 \
   && "$PY" "$SRC/tests/cli/check_tensorboard.py" "$TMP/run2" "$TMP/tb_elsewhere" >"$TMP/c3.log" 2>&1 \
   && [ ! -d "$TMP/run2/tensorboard" ]; then
  ok "logging.tensorboard=DIR: $(tail -1 "$TMP/c3.log")"
else bad "tensorboard in a directory of its own" "$TMP/c3.log"; fi

# The check is not vacuous: a value changed in metrics.jsonl is a difference.
sed -i '2s/"loss":[^,]*/"loss":12345.0/' "$run/metrics.jsonl"
if ! "$PY" "$SRC/tests/cli/check_tensorboard.py" "$run" >"$TMP/c4.log" 2>&1 && grep -q "DIFF loss step 2" "$TMP/c4.log"; then
  ok "a metrics.jsonl value changed after the fact is found: $(grep -m1 DIFF "$TMP/c4.log")"
else bad "the check missed a changed value" "$TMP/c4.log"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
