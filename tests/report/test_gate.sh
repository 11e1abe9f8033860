#!/usr/bin/env bash
# gspo gate on the tiny demo (#67 item 3; docs/report.md "gspo gate"): seeds 0-2 (train.seed and rollout.seed) make
# the bands; seeds 3-5 pass; each injected bug (GSPO_FAULT, src/gspo/train/setup/fault.h) fails naming the metric it
# breaks: lr_x10 entropy, temperature_2 mismatch_logprob_diff_mean, advantage_sign reward_mean, clip_x10 clip_seq_frac.
# Then item 4: a baseline with other metrics, a bands file without a band asked for, a damaged bands file, an empty run.
# The runs: configs/tiny.yaml for 60 steps with the clip range at 0.01 (GSPO's default, 3e-4 and 4e-4, lies far inside
# the 3-token responses' sequence-ratio spread, so 10x wider changes nothing any metric sees: docs/report.md). Ten
# runs of 4-15 s each on a 2-core machine (the load decides), about 1-3 minutes in all.
# usage: test_gate.sh GSPO_BINARY SOURCE_DIR PYTHON
set -u
GSPO="$1"; SRC="$2"; PY="$3"
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
failed=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; [ -n "${2:-}" ] && tail -15 "$2"; failed=1; }
start=$(date +%s)

"$PY" "$SRC/scripts/make_tiny_model.py" --out "$TMP/tiny_demo.pt" --prior-text 0123456789 --prior-logit 3.0 \
  >"$TMP/model.log" 2>&1 || { bad "make_tiny_model.py" "$TMP/model.log"; exit 1; }
train() {  # train NAME SEED [FAULT]
  GSPO_FAULT="${3:-}" "$GSPO" train -c "$SRC/configs/tiny.yaml" --set "model.path=$TMP/tiny_demo.pt" \
    --set "train.output_dir=$TMP/$1" --set train.max_steps=60 --set checkpoint.every=0 --set logging.progress=false \
    --set algorithm.clip_low=0.01 --set algorithm.clip_high=0.01 --set "train.seed=$2" --set "rollout.seed=$2" \
    >"$TMP/$1.log" 2>&1 || bad "training $1" "$TMP/$1.log"
}
for s in 0 1 2 3 4 5; do train "seed$s" "$s"; done
for f in lr_x10 temperature_2 advantage_sign clip_x10; do train "$f" 3 "$f"; done
grep -q "warning GSPO_FAULT=lr_x10: this run has a bug injected on purpose" "$TMP/lr_x10.log" \
  && ok "an injected bug is announced" || bad "no warning naming GSPO_FAULT" "$TMP/lr_x10.log"
diff <(grep -v output_dir "$TMP/seed3/config.yaml") <(grep -v output_dir "$TMP/lr_x10/config.yaml") >/dev/null \
  && ok "config.yaml does not show the injected bug (lr as configured)" || bad "the injected bug changed config.yaml"
echo "training: $(($(date +%s) - start)) s for 10 runs of 60 steps"

gate() {  # gate NAME EXPECTED_EXIT ARGS...: the exit status, the output kept in $TMP/NAME.gate
  local name="$1" want="$2"; shift 2
  "$GSPO" gate "$@" >"$TMP/$name.gate" 2>&1
  local rc=$?
  [ "$rc" = "$want" ] || { bad "$name: exit $rc, expected $want" "$TMP/$name.gate"; return 1; }
}
gate bands 0 --make-bands "$TMP/seed0" "$TMP/seed1" "$TMP/seed2" -o "$TMP/bands.json" \
  && ok "bands: $(grep wrote "$TMP/bands.gate")"
for s in 3 4 5; do
  gate "pass$s" 0 "$TMP/seed$s" --baseline "$TMP/bands.json" && ok "seed $s: $(grep 'gate passed' "$TMP/pass$s.gate")"
done
expect_fail() {  # expect_fail FAULT METRIC
  gate "$1" 9 "$TMP/$1" --baseline "$TMP/bands.json" || return
  if grep -q "^FAIL $2 at steps [0-9]*-[0-9]*: " "$TMP/$1.gate"; then
    ok "$1 fails on $2: $(grep -m1 "^FAIL $2 " "$TMP/$1.gate") [fails on: $(grep '^FAIL' "$TMP/$1.gate" | cut -d' ' -f2 | sort -u | tr '\n' ' ')]"
  else bad "$1: $2 not named" "$TMP/$1.gate"; fi
}
expect_fail lr_x10 entropy
expect_fail temperature_2 mismatch_logprob_diff_mean
expect_fail advantage_sign reward_mean
expect_fail clip_x10 clip_seq_frac
# A baseline run with other metrics: what cannot be compared is named; the rest is compared.
mkdir -p "$TMP/other"
"$PY" - "$TMP/seed0/metrics.jsonl" "$TMP/other/metrics.jsonl" <<'PY'
import json, sys
with open(sys.argv[2], "w") as out:
    for line in open(sys.argv[1]):
        o = json.loads(line); o.pop("entropy"); o["kl"] = 0.01; out.write(json.dumps(o) + "\n")
PY
gate other 0 "$TMP/seed0" --baseline "$TMP/other" \
  && grep -q "not compared: kl: the run wrote no kl (the baseline did): not compared" "$TMP/other.gate" \
  && grep -q "not compared: entropy: no baseline run wrote it" "$TMP/other.gate" \
  && ok "other metrics named: $(grep 'not compared' "$TMP/other.gate" | tr '\n' ';')" || bad "other metrics" "$TMP/other.gate"
gate no-band 0 "$TMP/seed3" --baseline "$TMP/bands.json" --metric reward_mean --metric tool_calls_mean \
  && grep -q "not compared: tool_calls_mean: .*bands.json has no band for it" "$TMP/no-band.gate" \
  && ok "a band not in the file is named" || bad "a band not in the file" "$TMP/no-band.gate"
"$PY" -c "import json,sys; j=json.load(open(sys.argv[1])); del j['metrics']['entropy']['windows'][2]['lo']; json.dump(j, open(sys.argv[2],'w'))" \
  "$TMP/bands.json" "$TMP/broken.json"
gate broken 3 "$TMP/seed3" --baseline "$TMP/broken.json" \
  && grep -q 'broken.json metrics.entropy.windows\[2\]: missing "lo"' "$TMP/broken.gate" \
  && ok "a damaged bands file: $(cat "$TMP/broken.gate")" || bad "damaged bands file" "$TMP/broken.gate"
mkdir -p "$TMP/empty"
gate empty 9 "$TMP/empty" --baseline "$TMP/bands.json" && grep -q "nothing could be compared" "$TMP/empty.gate" \
  && ok "an empty run fails: $(grep FAILED "$TMP/empty.gate")" || bad "empty run" "$TMP/empty.gate"
gate missing 5 "$TMP/seed3" --baseline "$TMP/nope.json" && ok "a missing baseline: $(cat "$TMP/missing.gate")"
gate usage 2 "$TMP/seed3" && ok "no baseline: $(cat "$TMP/usage.gate")"
echo "total: $(($(date +%s) - start)) s"
exit $failed
