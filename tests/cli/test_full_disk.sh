#!/usr/bin/env bash
# A full disk while a checkpoint is written: gspo exits 5 with an I/O error naming the file, removes its temporary
# checkpoint directory and leaves the previous checkpoint intact (resuming from it works once space is back).
# Needs a small tmpfs (mount as root); without one it prints "SKIPPED (no tmpfs): ..." and ctest counts it skipped.
# usage: test_full_disk.sh GSPO_BINARY TEST_MODELS_DIR
set -u
GSPO="$1"; MODELS="$2"
TMP="$(mktemp -d)"
DISK="$TMP/disk"
cleanup() { umount "$DISK" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
mkdir -p "$DISK"
if ! mount -t tmpfs -o size=16m tmpfs "$DISK" 2>/dev/null; then
  echo "SKIPPED (no tmpfs): mounting a 16 MB tmpfs needs root"
  exit 0
fi
CONFIG="$TMP/full_disk.yaml"
printf 'data: {task: arithmetic, max_operand: 3, num_prompts: 12}\n' > "$CONFIG"
pass=0; fail=0
ok() { pass=$((pass+1)); }
bad() { echo "FAIL $1"; fail=$((fail+1)); }

run() {
  "$GSPO" train --config "$CONFIG" --set model.path="$MODELS/tiny_prior.pt" --set train.output_dir="$DISK/run" \
    --set rollout.prompts_per_step=4 --set rollout.group_size=4 --set rollout.max_new_tokens=2 \
    --set data.max_operand=3 --set checkpoint.every=1 --set checkpoint.keep_last=5 \
    --set logging.progress=false "$@"
}

run --set train.max_steps=2 >"$TMP/first.log" 2>&1 && ok || { bad "first run failed"; cat "$TMP/first.log"; }
# Fill the disk, then give back 48 KiB: room for a metrics line, not for a checkpoint (the policy alone is ~100 KiB).
dd if=/dev/zero of="$DISK/filler" bs=64k 2>/dev/null
truncate -s -48K "$DISK/filler"
run --set train.max_steps=3 --resume auto >"$TMP/full.log" 2>&1; rc=$?
[ "$rc" -eq 5 ] && ok || { bad "full disk: exit $rc, wanted 5"; tail -5 "$TMP/full.log"; }
grep -q "No space left on device" "$TMP/full.log" && grep -q "step_00000003" "$TMP/full.log" && ok ||
  { bad "full disk: message lacks the reason or the checkpoint path"; tail -3 "$TMP/full.log"; }
grep -qE "terminate called|Exception raised from|frame #|Aborted" "$TMP/full.log" && bad "full disk: abort or stack dump" || ok
ls -a "$DISK/run/checkpoints" | grep -q '^\.tmp-' && bad "full disk: temporary checkpoint directory left" || ok
[ -f "$DISK/run/checkpoints/step_00000002/state.json" ] && ok || bad "full disk: previous checkpoint damaged"
rm -f "$DISK/filler"
run --set train.max_steps=3 --resume auto >"$TMP/after.log" 2>&1 && grep -q "finished after step 3" "$TMP/after.log" && ok ||
  { bad "resume after freeing space"; tail -5 "$TMP/after.log"; }
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
