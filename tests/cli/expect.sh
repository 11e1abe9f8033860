# Sourced by the command-line test scripts: `expect` runs a command and checks its exit code and output, counting
# into $pass and $fail.
pass=0; fail=0

# expect NAME WANT_RC NEEDLE -- command...: exit code WANT_RC, NEEDLE in stdout+stderr ("" = any), no crash or
# stack dump.
expect() {
  local name="$1" want="$2" needle="$3"; shift 4
  local out rc
  out="$("$@" 2>&1)"; rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL $name: exit $rc, wanted $want"; echo "$out" | tail -8; fail=$((fail+1)); return
  fi
  if [ -n "$needle" ] && ! grep -qF -- "$needle" <<<"$out"; then
    echo "FAIL $name: output lacks '$needle'"; echo "$out" | tail -8; fail=$((fail+1)); return
  fi
  if grep -qE "terminate called|Segmentation|Exception raised from|frame #" <<<"$out"; then
    echo "FAIL $name: crash or stack dump in output"; echo "$out" | tail -8; fail=$((fail+1)); return
  fi
  pass=$((pass+1))
}
