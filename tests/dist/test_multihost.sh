#!/usr/bin/env bash
# Two "hosts": rank 0 and rank 1 in separate network namespaces joined by a veth pair, MASTER_ADDR across it as on a
# cluster (the run directory is shared, as a cluster's shared filesystem is). (a) An uninterrupted run reaches the
# weights of a 2-rank run on loopback. (b) The same run with the link cut mid-step (both ends down: packets vanish,
# no connection reset, as when a cable or switch dies): both ranks exit 7 within distributed.timeout_s with a
# message naming the rank and the collective, and the last checkpoint is intact. (c) With the link back, both
# relaunched with --resume auto finish with the uninterrupted run's weights.
# Needs root with CAP_SYS_ADMIN and CAP_NET_ADMIN (ip netns add, veth); without them it prints "SKIPPED (...)" and
# ctest counts it skipped.
# usage: test_multihost.sh GSPO_BINARY TEST_MODELS_DIR SOURCE_DIR [PYTHON]
set -u
GSPO="$1"; MODELS="$2"; SRC="$3"; PY="${4:-/usr/bin/python3}"
NS=("gspo-mh-$$-0" "gspo-mh-$$-1")        # one namespace per rank ("host")
DEV=("gspo$$h0" "gspo$$h1")               # the veth ends (interface names: at most 15 characters)
ADDR=(10.231.0.1 10.231.0.2)              # /24 on the veth; private to the two namespaces
PORT=29500                                # each namespace has its own ports
TIMEOUT_S=10                              # distributed.timeout_s: how long a collective waits for the cut-off peer
MARGIN_S=10                               # allowed beyond it for the failure to surface and the process to exit
STEPS=32; EVERY=8; CUT_AFTER=16           # checkpoints every 8 steps; the link is cut in the step after 16
TMP="$(mktemp -d)"
drop_ns() {  # drop_ns NAME: ends what runs in it (only this test's ranks), then deletes it and its veth end
  ip netns pids "$1" 2>/dev/null | xargs -r kill -9 2>/dev/null
  ip netns del "$1" 2>/dev/null
}
cleanup() {
  kill -9 $(jobs -p) 2>/dev/null; wait 2>/dev/null
  for n in "${NS[@]}"; do drop_ns "$n"; done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
skip() { echo "SKIPPED ($1): $2"; exit 0; }
# Namespaces of an earlier run of this test that was killed before its cleanup (ctest's timeout kills with SIGKILL).
for n in $(ip netns list 2>/dev/null | grep -o '^gspo-mh-[0-9]*-[01]'); do
  p="${n#gspo-mh-}"; kill -0 "${p%-*}" 2>/dev/null || drop_ns "$n"
done

# --- two hosts --------------------------------------------------------------------------------------------
command -v ip >/dev/null || skip "no iproute2" "the ip command is missing (apt-get install iproute2)"
for r in 0 1; do
  err="$(ip netns add "${NS[$r]}" 2>&1)" ||
    skip "no network namespaces" "ip netns add failed: ${err:-?} (needs root with CAP_SYS_ADMIN and CAP_NET_ADMIN)"
done
err="$(ip link add "${DEV[0]}" netns "${NS[0]}" type veth peer name "${DEV[1]}" netns "${NS[1]}" 2>&1)" ||
  skip "no veth" "ip link add ... type veth failed: ${err:-?}"
for r in 0 1; do
  ip -n "${NS[$r]}" link set lo up &&  # a host reaches its own address through lo
    ip -n "${NS[$r]}" addr add "${ADDR[$r]}/24" dev "${DEV[$r]}" && ip -n "${NS[$r]}" link set "${DEV[$r]}" up ||
    { echo "FAIL: cannot configure ${DEV[$r]} in ${NS[$r]}"; exit 1; }
done
link() { for r in 0 1; do ip -n "${NS[$r]}" link set "${DEV[$r]}" "$1" || return 1; done; }  # link up|down
sent_bytes() { ip netns exec "${NS[$1]}" cat /proc/net/dev | awk -v d="${DEV[$1]}:" '$1 == d { print $10 }'; }  # by rank's host

pass=0; fail=0
ok() { pass=$((pass+1)); echo "ok   $1"; }
bad() { fail=$((fail+1)); echo "FAIL $1"; [ -n "${2:-}" ] && tail -5 "$2"; }
now() { echo "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# test_dist.sh's dense-reward tiny run; one thread a rank.
TRAIN=(train -c "$SRC/configs/tiny.yaml" --set "model.path=$MODELS/tiny_prior.pt" --set rollout.prompts_per_step=6
       --set rollout.group_size=4 --set algorithm.num_minibatches=2 --set algorithm.micro_batch_size=5
       --set train.threads=1 --set logging.progress=false --set reward.kind=regex --set 'reward.regex=^[0-4]'
       --set distributed.timeout_s=$TIMEOUT_S --set distributed.init_timeout_s=30 --set train.max_steps=$STEPS
       --set checkpoint.every=$EVERY --set checkpoint.keep_last=3)
"$GSPO" config --metrics --json >"$TMP/metrics_schema.json" || { echo "FAIL: gspo config --metrics --json"; exit 1; }

start_hosts() {  # start_hosts NAME [extra...]: rank r in namespace r on run directory $TMP/NAME; pids in P
  local name="$1"; shift
  P=()
  for r in 0 1; do
    ip netns exec "${NS[$r]}" env RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR="${ADDR[0]}" MASTER_PORT=$PORT \
      GLOO_SOCKET_IFNAME="${DEV[$r]}" "$GSPO" "${TRAIN[@]}" --set "train.output_dir=$TMP/$name" "$@" \
      >"$TMP/$name.rank$r.log" 2>&1 &
    P+=($!)
  done
}
wait_host() {  # wait_host PID LIMIT_S: sets rc (999: still running after LIMIT_S, killed)
  local deadline=$((SECONDS + $2))
  while kill -0 "$1" 2>/dev/null && [ $SECONDS -lt "$deadline" ]; do sleep 0.05; done
  if kill -0 "$1" 2>/dev/null; then kill -9 "$1"; wait "$1" 2>/dev/null; rc=999; else wait "$1"; rc=$?; fi
}
run_hosts() {  # run_hosts NAME [extra...]: both ranks to the end; ok when both exit 0
  local name="$1" t0 rc0 rc1; shift
  t0=$(now); start_hosts "$name" "$@"
  wait_host "${P[0]}" 180; rc0=$rc; wait_host "${P[1]}" 30; rc1=$rc
  secs=$(since "$t0")
  [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] || { bad "$name: rank 0 exit $rc0, rank 1 exit $rc1" "$TMP/$name.rank0.log"; tail -3 "$TMP/$name.rank1.log"; return 1; }
}
compare() {  # compare RUN_A RUN_B: final weights and every step's metrics (compare_runs.py's tolerances)
  "$PY" "$SRC/tests/dist/compare_runs.py" "$TMP/$1" "$TMP/$2" --step $STEPS --schema "$TMP/metrics_schema.json" \
    --initial "$MODELS/tiny_prior.pt" >"$TMP/cmp_$1_$2.log" 2>&1
}
newest_ckpt() { ls "$1/checkpoints" 2>/dev/null | grep '^step_' | tail -1; }

t_all=$(now)
# --- (a) uninterrupted, across the link ---------------------------------------------------------------------
if run_hosts full; then
  bytes=$(sent_bytes 1)
  if grep -q "rendezvous at ${ADDR[0]}:$PORT over gloo" "$TMP/full.rank0.log" &&
     grep -q "2 ranks start from identical weights" "$TMP/full.rank0.log" && [ "${bytes:-0}" -gt 100000 ]; then
    ok "2 hosts over ${ADDR[0]} <-> ${ADDR[1]}: $STEPS steps in ${secs} s, rank 1 sent $((bytes / 1024)) KiB over ${DEV[1]}"
  else bad "2 hosts: no rendezvous at ${ADDR[0]}:$PORT or no traffic on the veth (${bytes:-?} bytes)" "$TMP/full.rank0.log"; fi
  port=$(free_port)
  if "$SRC/scripts/launch_local.sh" -n 2 --port "$port" "$GSPO" "${TRAIN[@]}" --set "train.output_dir=$TMP/loop" \
       >"$TMP/loop.log" 2>&1; then
    if compare full loop; then ok "2 hosts = 2 ranks on loopback: $(head -1 "$TMP/cmp_full_loop.log")"
    else bad "2 hosts != 2 ranks on loopback" "$TMP/cmp_full_loop.log"; fi
  else bad "2 ranks on loopback: exit $?" "$TMP/loop.log"; fi
fi

# --- (b) the link cut mid-step ------------------------------------------------------------------------------
cut_ok=0
start_hosts cut
want="$TMP/cut/checkpoints/$(printf 'step_%08d' $CUT_AFTER)"
for _ in $(seq 1200); do  # up to 60 s
  [ -d "$want" ] && break
  kill -0 "${P[0]}" 2>/dev/null && kill -0 "${P[1]}" 2>/dev/null || break
  sleep 0.05
done
if [ -d "$want" ] && link down; then
  t_cut=$(now)
  at_cut=$(newest_ckpt "$TMP/cut"); lines=$(wc -l <"$TMP/cut/metrics.jsonl")
  cut_ok=1
  for r in 0 1; do
    wait_host "${P[$r]}" $((TIMEOUT_S + MARGIN_S + 30)); exit_s[$r]=$(since "$t_cut"); rcs[$r]=$rc
  done
  for r in 0 1; do
    log="$TMP/cut.rank$r.log"
    msg="$(grep -m1 "distributed error" "$log")"
    op="$(grep -o "rank $r of 2: [a-z_]* failed after" "$log" | head -1 | awk '{print $5}')"
    if [ "${rcs[$r]}" -eq 7 ] && [ -n "$op" ] &&
       awk -v s="${exit_s[$r]}" -v t=$TIMEOUT_S -v m=$MARGIN_S 'BEGIN { exit !(s >= t - 1 && s <= t + m) }'; then
      ok "link cut in step $((lines + 1)): rank $r exits 7 after ${exit_s[$r]} s (timeout_s $TIMEOUT_S): $op failed"
    else cut_ok=0; bad "link cut: rank $r exit ${rcs[$r]} after ${exit_s[$r]} s (want 7 within $TIMEOUT_S-$((TIMEOUT_S + MARGIN_S)) s, naming the collective)" "$log"; fi
    # The failing collective's message names this rank, the world and the operation, not the rank or address it
    # lost (Gloo's timeout text has neither): printed so a fix shows here.
    other=$((1 - r))
    if grep -q -e "rank $other[^0-9]" -e "${ADDR[$other]}" <<<"${msg#*rank $r of 2}"; then echo "     names the peer: $msg"
    else echo "     note: does not name the peer (rank $other, ${ADDR[$other]}): $msg"; fi
  done
  grep -qE "terminate called|Exception raised from|frame #|Aborted" "$TMP"/cut.rank?.log && { cut_ok=0; bad "link cut: abort or stack dump"; }
  after=$(newest_ckpt "$TMP/cut")
  files=$(cd "$TMP/cut/checkpoints/$after" 2>/dev/null && ls | tr '\n' ' ')
  if [ "$after" = "$at_cut" ] && [ "$files" = "config.yaml optimizer.pt policy.pt rng.pt state.json " ] &&
     ! ls -a "$TMP/cut/checkpoints" | grep -q '^\.tmp'; then
    ok "last checkpoint $after in place with its files, no temporary directory left"
  else cut_ok=0; bad "checkpoint after the cut: '$after' (at the cut '$at_cut'), files: $files $(ls -a "$TMP/cut/checkpoints")"; fi
else
  for r in 0 1; do wait_host "${P[$r]}" 5; rcs[$r]=$rc; done  # 999: still running 5 s later
  bad "the run never reached checkpoint $CUT_AFTER, or the link could not be cut (rank 0 exit ${rcs[0]}, rank 1 exit ${rcs[1]})" \
    "$TMP/cut.rank0.log"
  tail -5 "$TMP/cut.rank1.log"
fi

# --- (c) link back, resume on both hosts --------------------------------------------------------------------
if [ $cut_ok -eq 1 ]; then
  if link up && run_hosts cut --resume auto; then
    if grep -q "resumed from $TMP/cut/checkpoints/$at_cut " "$TMP/cut.rank0.log" && ! grep -q "damaged" "$TMP"/cut.rank?.log &&
       grep -q "finished after step $STEPS" "$TMP/cut.rank0.log"; then
      ok "link back: both hosts resume from $at_cut (read back whole: intact) and finish step $STEPS in ${secs} s"
    else bad "resume did not start from $at_cut or did not finish" "$TMP/cut.rank0.log"; fi
    if compare cut full; then ok "cut and resumed = uninterrupted: $(head -1 "$TMP/cmp_cut_full.log")"
    else bad "cut and resumed != uninterrupted" "$TMP/cmp_cut_full.log"; fi
  fi
fi

echo "$pass passed, $fail failed ($(since "$t_all") s)"
[ "$fail" -eq 0 ]
