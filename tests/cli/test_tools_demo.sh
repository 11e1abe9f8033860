#!/usr/bin/env bash
# The multi-turn tools demo end to end (configs/tiny-tools.yaml, docs/tools.md): the warm-started tiny model, the real
# `lookup` command tool, episodes through the decode loop. With the tool the reward climbs as the model learns to
# call it; with `tools.list=[]` the task is a guess (1 in 10). Validation during training and `gspo eval` of the
# trained model run episodes too, on keys neither training nor the warm start answered. Learning, not timing: the
# bounds are loose (the runs measured 0.99 and 0.10; floating point differs across CPUs).
# usage: test_tools_demo.sh GSPO_BINARY SOURCE_DIR PYTHON
set -eu
GSPO="$1"; SRC="$2"; PYTHON="$3"
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
cd "$SRC"  # the config starts its tool as `sh scripts/tools/lookup.sh`
OMP_NUM_THREADS=1 "$PYTHON" scripts/make_tiny_model.py --out "$TMP/tiny_tools.pt" --warm data/tools_warm.txt --warm-steps 1000 | tail -1
# 32 held-out keys: warm-start lines that guessed (their secret never written), not in the task.
"$PYTHON" - "$TMP/val.jsonl" <<'PY'
import json, sys
keys = [int(l.split("?")[0]) for l in open("data/tools_warm.txt") if "[" not in l][:32]
with open(sys.argv[1], "w") as f:
    for k in keys:
        f.write(json.dumps({"problem": f"{k}?", "answer": str(((k * 7919 + 17) % 104729) % 10)}) + "\n")
PY
run() {
  "$GSPO" train -c configs/tiny-tools.yaml --set "model.path=$TMP/tiny_tools.pt" --set train.max_steps=100 \
    --set checkpoint.every=0 --set "train.output_dir=$TMP/$1" "${@:2}" > "$TMP/$1.log" 2>&1 \
    || { tail -20 "$TMP/$1.log"; echo "FAIL: $1 exited non-zero"; exit 1; }
}
run tools --set eval.every=50 --set eval.samples=2 --set "eval.datasets=[$TMP/val.jsonl]"
run no-tools --set 'tools.list=[]'
# A tool that always fails (#59 item 8): training goes on and says so, in the step line (the error rate), a warning
# and the summary; what the tool writes to stderr is logged under its name, not as gspo's own line.
printf 'echo "boom from the tool" >&2\nexit 3\n' > "$TMP/broken.sh"
sed "s|command: sh scripts/tools/lookup.sh|command: sh $TMP/broken.sh|" configs/tiny-tools.yaml > "$TMP/broken.yaml"
"$GSPO" train -c "$TMP/broken.yaml" --set "model.path=$TMP/tiny_tools.pt" --set train.max_steps=2 \
  --set checkpoint.every=0 --set "train.output_dir=$TMP/broken" > "$TMP/broken.log" 2>&1 \
  || { tail -20 "$TMP/broken.log"; echo "FAIL: the run with a failing tool exited non-zero"; exit 1; }
for needle in "calls/row err 100%" "tool calls were tool errors" "tool errors (100.0%)" \
    "tool 'lookup' (command 'sh $TMP/broken.sh') (stderr): boom from the tool"; do
  grep -qF -- "$needle" "$TMP/broken.log" || { cat "$TMP/broken.log"; echo "FAIL: a failing tool's run lacks '$needle'"; exit 1; }
done
evaluate() {  # evaluate NAME [extra --set ...]: gspo eval of the trained model on the held-out keys
  "$GSPO" eval -c configs/tiny-tools.yaml -m "$TMP/tools/checkpoints/step_00000100/policy.pt" -d "$TMP/val.jsonl" \
    -k 4 -o "$TMP/$1" --no-progress "${@:2}" > "$TMP/$1.log" 2>&1 \
    || { tail -20 "$TMP/$1.log"; echo "FAIL: eval $1 exited non-zero"; exit 1; }
}
evaluate eval-tools
evaluate eval-no-tools --set 'tools.list=[]'
# An unfinished eval (no summary yet) continues only with the same tools: other limits are refused, the same resume.
cp "$TMP/eval-tools/summary.json" "$TMP/eval-tools.summary" && rm "$TMP/eval-tools/summary.json"
if "$GSPO" eval -c configs/tiny-tools.yaml -m "$TMP/tools/checkpoints/step_00000100/policy.pt" -d "$TMP/val.jsonl" \
    -k 4 -o "$TMP/eval-tools" --no-progress --set tools.max_turns=3 > "$TMP/eval-other.log" 2>&1; then
  echo "FAIL: an unfinished eval resumed with other tools settings"; exit 1
fi
grep -q "other settings (tools.max_turns (was 2, now 3))" "$TMP/eval-other.log" \
  || { cat "$TMP/eval-other.log"; echo "FAIL: the refusal does not name tools.max_turns"; exit 1; }
evaluate eval-tools
figures() { "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1]))["datasets"][0]; print(d["avg@4"], d["tools"])' "$1"; }
cmp <(figures "$TMP/eval-tools.summary") <(figures "$TMP/eval-tools/summary.json") \
  || { echo "FAIL: the resumed eval's avg@4 or tool figures differ"; exit 1; }
grep -q "tools: 1.00 calls per sample, 100% of samples called" "$TMP/eval-tools.log" \
  || { cat "$TMP/eval-tools.log"; echo "FAIL: the eval's table has no tools line"; exit 1; }
"$PYTHON" - "$TMP" <<'PY'
import json, sys
def rows(name, file="metrics.jsonl"):
    return [json.loads(l) for l in open(f"{sys.argv[1]}/{name}/{file}")]
def avg(name):
    return json.load(open(f"{sys.argv[1]}/{name}/summary.json"))["datasets"][0]["avg@4"]
def mean(rs, key):
    return sum(r[key] for r in rs) / len(rs)
t, n = rows("tools"), rows("no-tools")
first, last = mean(t[:10], "reward_mean"), mean(t[-10:], "reward_mean")
calls0, calls1 = mean(t[:10], "tool_calls_mean"), mean(t[-10:], "tool_calls_mean")
guess = mean(n[-10:], "reward_mean")
print(f"with the tool: reward {first:.3f} -> {last:.3f}, calls per episode {calls0:.2f} -> {calls1:.2f}; "
      f"without: reward {mean(n[:10], 'reward_mean'):.3f} -> {guess:.3f}")
bad = []
if not first < 0.6: bad.append(f"the first steps already earn {first:.3f}: nothing left to learn")
if not last > 0.8: bad.append(f"the reward with the tool ends at {last:.3f} (> 0.8 expected)")
if not calls1 > 0.9: bad.append(f"calls per episode end at {calls1:.2f} (> 0.9 expected)")
if not guess < 0.3: bad.append(f"without the tool the reward ends at {guess:.3f} (< 0.3 expected: a guess)")
if "tool_calls_mean" in n[-1]: bad.append("the run without tools logs tool metrics")
val = [v["datasets"][0]["avg@2"] for v in rows("tools", "validation.jsonl")]
ev, ev_none = avg("eval-tools"), avg("eval-no-tools")
samples = rows("eval-tools", "samples.jsonl")
called = sum(s["tool_calls"] >= 1 for s in samples) / len(samples)
print(f"validation avg@2 by step: {val}; gspo eval avg@4 {ev:.3f} with the tool ({called:.2f} of episodes called), "
      f"{ev_none:.3f} without")
if not (len(val) == 3 and val[0] < 0.6 and val[-1] > 0.8): bad.append(f"validation avg@2 {val} (steps 0, 50, 100)")
if not ev > 0.8: bad.append(f"gspo eval with the tool: avg@4 {ev:.3f} (> 0.8 expected)")
if not called > 0.9: bad.append(f"gspo eval: {called:.2f} of episodes called the tool")
if not all("final_turn" in s and s["response"].endswith(s["final_turn"]) for s in samples):
    bad.append("samples.jsonl: a sample's final_turn is missing or not the end of its response")
if "tools" in json.load(open(f"{sys.argv[1]}/eval-no-tools/summary.json"))["datasets"][0]:
    bad.append("the eval without tools reports tool figures")
if not ev_none < 0.3: bad.append(f"gspo eval without the tool: avg@4 {ev_none:.3f} (< 0.3 expected)")
for b in bad: print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
echo "tools demo: passed"
