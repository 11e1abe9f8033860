#!/usr/bin/env bash
# gspo report in a real browser (#67 items 2 and 4; docs/report.md): the tiny demo trained 30 steps with rollouts every
# 10, its report opened by headless Chromium; the DOM after the page's scripts ran must hold the charts plotly drew
# (their trace counts) and the rollout browser's group with tokens coloured by log-prob; a screenshot is kept in the
# build folder. Then: two runs overlaid, one with a model's hostile text (it must stay text); an empty, a killed, an
# older-gspo and a damaged run each reported with what was skipped named (stderr and page) and the rest drawn; and a
# 1,000-step run with rollouts every 10 steps (the demo's lines and rows repeated) stays a few MB and opens in seconds.
# Without chromium the browser checks print SKIPPED (scripts/setup.sh installs it).
# usage: test_report.sh GSPO_BINARY SOURCE_DIR PYTHON OUT_DIR
set -u
GSPO="$1"; SRC="$2"; PY="$3"; OUT="$4"
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
CHECK=("$PY" "$SRC/tests/report/check_report.py")
failed=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; [ -n "${2:-}" ] && tail -20 "$2"; failed=1; }
CHROME="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
browse() {  # browse HTML DOM_OUT: the DOM after the scripts ran (the time it took on stdout)
  local t0=$(date +%s%N)
  timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --virtual-time-budget=30000 \
    --dump-dom "file://$1" >"$2" 2>"$2.err"
  local rc=$?
  awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'
  return $rc
}

"$PY" "$SRC/scripts/make_tiny_model.py" --out "$TMP/tiny_demo.pt" --prior-text 0123456789 --prior-logit 3.0 \
  >"$TMP/model.log" 2>&1 || { bad "make_tiny_model.py" "$TMP/model.log"; exit 1; }
"$GSPO" train -c "$SRC/configs/tiny.yaml" --set "model.path=$TMP/tiny_demo.pt" --set "train.output_dir=$TMP/demo" \
  --set train.max_steps=30 --set logging.rollouts_every=10 --set logging.rollouts_rows=32 >"$TMP/train.log" 2>&1 \
  || { bad "training the demo" "$TMP/train.log"; exit 1; }

# The demo's report: wrote it, said how to open it.
if "$GSPO" report "$TMP/demo" -o "$TMP/demo.html" >"$TMP/report.out" 2>&1 && grep -q "open it in a browser" "$TMP/report.out"
then ok "report: $(head -1 "$TMP/report.out")"; else bad "report of the demo" "$TMP/report.out"; fi
"$GSPO" report "$TMP/demo" >/dev/null 2>&1 && [ -s "$TMP/demo/report.html" ] && ok "default output RUN/report.html" \
  || bad "default output RUN/report.html"
grep -q '<script src=\|<link ' "$TMP/demo.html" && bad "the page loads something from outside" || ok "no external script or link"

# A run whose rollouts hold a model's hostile text, and bad inputs (item 4), made from the demo run.
"$PY" - "$TMP" <<'PY'
import json, os, shutil, sys
t = sys.argv[1]
demo = os.path.join(t, "demo")
lines = open(os.path.join(demo, "metrics.jsonl")).read().splitlines()
def run(name, metrics_text, rollouts=True):
    d = os.path.join(t, name); os.makedirs(d)
    open(os.path.join(d, "metrics.jsonl"), "w").write(metrics_text)
    shutil.copy(os.path.join(demo, "config.yaml"), d)
    if rollouts: shutil.copytree(os.path.join(demo, "rollouts"), os.path.join(d, "rollouts"))
    return d
h = run("hostile", "\n".join(lines) + "\n")
p = os.path.join(h, "rollouts", "step_00000030.jsonl")  # the step the browser opens at (the cursor's, the last)
rows = [json.loads(x) for x in open(p)]
rows[0]["response"] = '</script><img id="pwned" src="x" onerror="document.title=1"><!-- & "q"'
# ... and its tokens' texts (pieces) cut from it, so the token view shows the hostile text too
n = len(rows[0]["logprobs"])
cut = [len(rows[0]["response"]) * k // n for k in range(n + 1)]
rows[0]["pieces"] = [rows[0]["response"][cut[k]:cut[k + 1]] for k in range(n)]
rows[0]["prompt"] = "<b id=\"bold\">prompt</b>"
for r in rows:  # the trainer's log-probs and entropies, as main's rollout rows carry them: mismatch and entropy views
    r["trainer_logprobs"] = [x + 0.1 for x in r["logprobs"]]
    r["entropy"] = [1.5 for _ in r["logprobs"]]
    r["teacher_logprobs"] = [x - 0.4 for x in r["logprobs"]]  # a distillation run's: the teacher view
    r["response_ids"] = list(range(len(r["logprobs"])))
open(p, "w").write("".join(json.dumps(r) + "\n" for r in rows))
os.makedirs(os.path.join(t, "empty"))
run("killed", "\n".join(lines[:20]) + "\n" + lines[20][: len(lines[20]) // 2])
old = [json.loads(x) for x in lines]
for o in old:
    for k in ("entropy", "clip_seq_frac", "clip_tok_frac", "pad_frac"): o.pop(k, None)
run("older", "".join(json.dumps(o) + "\n" for o in old), rollouts=False)
run("damaged", "\n".join(lines[:5] + ['{"step": 6, "reward_mean": 0.1, garbage'] + lines[6:]) + "\n")
# 1,000 steps with rollouts every 10: the demo's lines and rollout rows repeated.
big = os.path.join(t, "big"); os.makedirs(os.path.join(big, "rollouts"))
shutil.copy(os.path.join(demo, "config.yaml"), big)
with open(os.path.join(big, "metrics.jsonl"), "w") as f:
    for s in range(1, 1001):
        o = json.loads(lines[(s - 1) % len(lines)]); o["step"] = s; f.write(json.dumps(o) + "\n")
src_rows = open(os.path.join(demo, "rollouts", "step_00000030.jsonl")).read().splitlines()
for s in [1] + list(range(10, 1001, 10)):
    with open(os.path.join(big, "rollouts", "step_%08d.jsonl" % s), "w") as f:
        for r in src_rows:
            o = json.loads(r); o["step"] = s; f.write(json.dumps(o) + "\n")
PY

for bad_run in empty killed older damaged; do
  "$GSPO" report "$TMP/$bad_run" -o "$TMP/$bad_run.html" >"$TMP/$bad_run.out" 2>&1 || bad "report of $bad_run: exit $?" "$TMP/$bad_run.out"
done
expect_note() {  # expect_note RUN TEXT: stderr and the page name it
  if grep -qF "$2" "$TMP/$1.out" && grep -qF "$2" "$TMP/$1.html"; then ok "$1: names '$2'"
  else bad "$1: '$2' not named" "$TMP/$1.out"; fi
}
expect_note empty "no metrics.jsonl"
expect_note empty "no config.yaml"
expect_note killed "line 21: cut off (a run killed while writing it?)"
expect_note older "absent (an older gspo?), their charts left out: clip_seq_frac, clip_tok_frac, entropy, pad_frac"
expect_note damaged "metrics.jsonl line 6: not JSON, skipped"

"$GSPO" report "$TMP/hostile" "$TMP/demo" -o "$TMP/both.html" >"$TMP/both.out" 2>&1 || bad "report of two runs" "$TMP/both.out"
"$GSPO" report "$TMP/big" -o "$TMP/big.html" >"$TMP/big.out" 2>&1 || bad "report of 1,000 steps" "$TMP/big.out"
bytes=$(stat -c %s "$TMP/big.html"); size_mb=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
if [ "$bytes" -lt $((8 * 1048576)) ]; then ok "1,000 steps, 101 rollout steps: $size_mb MB"
else bad "1,000 steps: $size_mb MB (over 8)"; fi

if [ -z "$CHROME" ]; then  # the checks above ran; a failure among them is reported as one, not hidden as a skip
  [ "$failed" = 0 ] && echo "SKIPPED (no chromium): the browser checks (scripts/setup.sh installs the chromium package)"
  exit $failed
fi
expect_dom() {  # expect_dom NAME HTML CHECK_ARGS...: opened in Chromium, its DOM checked
  local name="$1" html="$2"; shift 2
  local secs
  secs=$(browse "$html" "$TMP/$name.dom") || { bad "$name: chromium exit" "$TMP/$name.dom.err"; return; }
  if "${CHECK[@]}" "$TMP/$name.dom" "$@" >"$TMP/$name.check" 2>&1; then
    ok "$name (opened in ${secs}s): $(grep -v '^ok$' "$TMP/$name.check" | tr '\n' ';')"
  else bad "$name: $(grep FAIL "$TMP/$name.check")" "$TMP/$name.check"; fi
}
# One run: reward, accuracy, length, clip, mismatch, entropy, grad norm, step time; raw and smoothed traces (2 a key);
# the group of 8 responses; a step time split in 4 stacked parts.
expect_dom demo "$TMP/demo.html" --charts reward,accuracy,length,clip,mismatch,entropy,grad_norm,time,lr \
  --traces reward=2 accuracy=2 clip=4 time=4 --group-rows 8
# The hostile run first: the rollout browser opens on its last step, whose group 0 holds the hostile row (its
# pieces cut from the hostile text: shown token by token). It must read as text, and no
# element of it may exist.
expect_dom both "$TMP/both.html" --traces reward=4 accuracy=4 --group-rows 8 --no-element-id pwned bold \
  --colour-modes mismatch entropy teacher \
  --text '</script><img id="pwned" src="x" onerror="document.title=1"><!-- & "q"' '<b id="bold">prompt</b>'
grep -q '<img id="pwned"' "$TMP/both.dom" && bad "hostile text became an element" || ok "hostile response stayed text"
expect_dom killed "$TMP/killed.html" --charts reward,entropy --note "cut off" --group-rows 8
expect_dom older "$TMP/older.html" --charts reward --note "an older gspo" --no-rollouts
expect_dom empty "$TMP/empty.html" --no-charts --note "no metrics.jsonl" --no-rollouts
expect_dom big "$TMP/big.html" --charts reward,entropy --traces reward=2 --group-rows 8
# The screenshot a person would see.
timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --virtual-time-budget=30000 \
  --window-size=1400,2600 --screenshot="$OUT/report_screenshot.png" "file://$TMP/demo.html" >/dev/null 2>&1
[ -s "$OUT/report_screenshot.png" ] && ok "screenshot: $OUT/report_screenshot.png" || bad "no screenshot"
cp "$TMP/demo.html" "$OUT/report_demo.html"
exit $failed
