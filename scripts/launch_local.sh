#!/usr/bin/env bash
# Runs N copies of a command on this machine as one data-parallel job, torchrun style: each gets RANK,
# LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT. One process per GPU (gspo puts rank r on cuda:r when
# model.device is cuda), or N CPU processes for testing over Gloo.
#
#   scripts/launch_local.sh -n 2 build/gspo train --config configs/tiny.yaml
#   scripts/launch_local.sh -n 8 --port 29600 build/gspo train --config configs/qwen3-0.6b-gspo.yaml \
#       --set model.device=cuda
#
# Output of rank r is prefixed "[rank r]". When a rank fails, the others normally fail on their own within
# distributed.timeout_s, with a message naming the collective; any still running --grace seconds (default 30)
# after the first failure are killed. The exit status is the first failing rank's, or 0.
set -uo pipefail
n=1; port="${MASTER_PORT:-29500}"; addr="${MASTER_ADDR:-127.0.0.1}"; grace=30
usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    -n|--nproc) n="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --addr) addr="$2"; shift 2 ;;
    --grace) grace="$2"; shift 2 ;;
    -h|--help) usage ;;
    --) shift; break ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || usage
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "launch_local.sh: -n must be a positive integer (got '$n')" >&2; exit 2; }

pids=()
for ((r = 0; r < n; r++)); do
  # Each rank in its own session: a terminal Ctrl-C reaches only this script, which forwards one SIGTERM to
  # every rank (gspo then finishes the step, rank 0 checkpoints, and all exit 130 together).
  RANK=$r LOCAL_RANK=$r WORLD_SIZE=$n MASTER_ADDR="$addr" MASTER_PORT="$port" \
    setsid "$@" > >(sed -u "s/^/[rank $r] /") 2> >(sed -u "s/^/[rank $r] /" >&2) &
  pids+=($!)
done
trap 'echo "launch_local.sh: stopping all ranks after their current step" >&2; kill -TERM "${pids[@]}" 2>/dev/null' INT TERM

status=0; deadline=""; declare -A finished=()
while [ "${#finished[@]}" -lt "$n" ]; do
  for r in "${!pids[@]}"; do
    [ -n "${finished[$r]:-}" ] && continue
    kill -0 "${pids[$r]}" 2>/dev/null && continue
    wait "${pids[$r]}"; rc=$?
    finished[$r]=$rc
    if [ "$rc" -ne 0 ] && [ "$status" -eq 0 ]; then
      echo "launch_local.sh: rank $r exited with status $rc" >&2
      status=$rc
      deadline=$(( $(date +%s) + grace ))
    fi
  done
  if [ -n "$deadline" ] && [ "$(date +%s)" -ge "$deadline" ] && [ "${#finished[@]}" -lt "$n" ]; then
    echo "launch_local.sh: ranks still running ${grace}s after the first failure; killing them" >&2
    kill -KILL "${pids[@]}" 2>/dev/null
  fi
  sleep 0.2
done
wait 2>/dev/null
exit "$status"
