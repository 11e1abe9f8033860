# Helpers of the multi-process tests (test_dist.sh, test_async.sh), sourced after the caller sets GSPO, MODELS, SRC,
# PY, TMP and LAUNCH; it sets TRAIN (the common `gspo train` arguments, which the caller may extend) and STEPS, and
# writes $TMP/metrics_schema.json.

pass=0; fail=0
ok() { pass=$((pass+1)); echo "ok   $1"; }
bad() { fail=$((fail+1)); echo "FAIL $1"; [ -n "${2:-}" ] && tail -5 "$2"; }
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Dense rewards (a leading digit 0-4 scores 1) so every step has real gradients to compare.
TRAIN=(train -c "$SRC/configs/tiny.yaml" --set "model.path=$MODELS/tiny_prior.pt" --set rollout.prompts_per_step=6
       --set rollout.group_size=4 --set algorithm.num_minibatches=2 --set algorithm.micro_batch_size=5
       --set train.threads=1 --set logging.progress=false --set reward.kind=regex --set 'reward.regex=^[0-4]'
       --set distributed.timeout_s=20 --set distributed.init_timeout_s=20)
STEPS=4
# Which metrics must agree exactly and which closely: the binary's own metrics table (gspo config --metrics --json).
"$GSPO" config --metrics --json >"$TMP/metrics_schema.json" || { echo "FAIL: gspo config --metrics --json"; exit 1; }

launch() {  # launch DIR NPROC STEPS [extra --set ...]: one invocation on run directory $TMP/DIR
  local dir="$1" n="$2" steps="$3"; shift 3
  if [ "$n" -eq 1 ]; then
    "$GSPO" "${TRAIN[@]}" --set train.max_steps=$steps --set "train.output_dir=$TMP/$dir" "$@" >"$TMP/$dir.log" 2>&1
  else
    "$LAUNCH" -n "$n" --port "$(free_port)" "$GSPO" "${TRAIN[@]}" --set train.max_steps=$steps \
      --set "train.output_dir=$TMP/$dir" "$@" >"$TMP/$dir.log" 2>&1
  fi || { bad "$dir: exit $?" "$TMP/$dir.log"; return 1; }
}

declare -A PHASES  # run name -> its invocations, one "NPROC STEPS [extra...]" per line, for rerun
run() {  # run NAME NPROC [extra --set ...]: run NAME to $STEPS (a second call with --resume auto continues it)
  local name="$1" n="$2"; shift 2
  PHASES[$name]+="$n $STEPS $*"$'\n'
  launch "$name" "$n" "$STEPS" "$@"
}

rerun() {  # rerun NAME SEED: NAME's invocations again with rollout.seed=SEED, into NAME_seedSEED (once)
  local name="$1" seed="$2" n steps rest extra
  [ -d "$TMP/${name}_seed$seed" ] && return 0
  while read -r n steps rest; do
    [ -n "$n" ] || continue
    read -ra extra <<<"$rest"
    launch "${name}_seed$seed" "$n" "$steps" "${extra[@]}" --set "rollout.seed=$seed" || return 1
  done <<<"${PHASES[$name]}"
}

compare() {  # compare LOG RUN_A RUN_B  (INITIAL: the starting model, default tiny_prior.pt)
  "$PY" "$SRC/tests/dist/compare_runs.py" "$TMP/$2" "$TMP/$3" --step $STEPS --schema "$TMP/metrics_schema.json" --initial "${INITIAL:-$MODELS/tiny_prior.pt}" \
    ${CMP_EXTRA:-} >"$TMP/cmp_$1.log" 2>&1
}

# same NAME RUN_A RUN_B: the runs agree (compare_runs.py: sample-derived metrics exactly, the rest with tolerance).
# World sizes sample with other batch shapes and, after the first update, from weights that differ by rounding, so
# a token whose draw lies within that rounding of a CDF edge can flip, and the runs then diverge legitimately. Such
# a flip is rare and fixed for a given machine and seed; with another seed it is as unlikely again, while a real
# difference in the distributed computation shows for every seed. So a disagreement is retried once with
# rollout.seed=1, and the check fails only when both seeds disagree.
same() {
  if compare "$1" "$2" "$3"; then ok "$1: $(head -1 "$TMP/cmp_$1.log")"; return; fi
  local why; why="$(grep -m1 '^DIFF' "$TMP/cmp_$1.log")"
  if rerun "$2" 1 && rerun "$3" 1 && compare "$1, seed 1" "${2}_seed1" "${3}_seed1"; then
    ok "$1 with rollout.seed=1: $(head -1 "$TMP/cmp_$1, seed 1.log") (seed 0, a token flip: $why)"
  else
    local log="$TMP/cmp_$1, seed 1.log"; [ -f "$log" ] || log="$TMP/cmp_$1.log"
    bad "$1 (seeds 0 and 1; seed 0: $why)" "$log"
  fi
}

start_rank() {  # start_rank RANK WORLD PORT NAME [extra...]: background rank; pid in $!
  local r="$1" w="$2" p="$3" name="$4"; shift 4
  RANK=$r LOCAL_RANK=$r WORLD_SIZE=$w MASTER_ADDR=127.0.0.1 MASTER_PORT=$p \
    "$GSPO" "${TRAIN[@]}" --set train.max_steps=100000 --set "train.output_dir=$TMP/$name" "$@" \
    >"$TMP/$name.rank$r.log" 2>&1 &
}
wait_for_steps() {  # wait_for_steps METRICS N: up to 60 s
  for _ in $(seq 600); do [ -f "$1" ] && [ "$(wc -l <"$1")" -ge "$2" ] && return 0; sleep 0.1; done; return 1
}
timed_wait() {  # timed_wait PID LIMIT_S: sets rc and secs; kills the process after LIMIT_S
  local t0=$SECONDS
  for _ in $(seq $(($2 * 10))); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$1" 2>/dev/null; then kill -9 "$1"; wait "$1" 2>/dev/null; rc=999; else wait "$1"; rc=$?; fi
  secs=$((SECONDS - t0))
}


# Launcher variables and batch shapes that cannot work are config errors before any rendezvous.
expect_err() {  # expect_err NAME NEEDLE ENV... -- extra args
  local name="$1" needle="$2"; shift 2
  local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  out="$(env "${envs[@]}" "$GSPO" "${TRAIN[@]}" --set train.max_steps=1 --set "train.output_dir=$TMP/e_$name" "$@" 2>&1)"; rc=$?
  if [ $rc -eq 2 ] && grep -qF -- "$needle" <<<"$out"; then ok "$name: $needle"; else bad "$name: exit $rc: $out"; fi
}
