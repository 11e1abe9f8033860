#!/usr/bin/env bash
# The multi-turn tools demo end to end (configs/tiny-tools.yaml, docs/tools.md): the warm-started tiny model, the real
# `lookup` command tool, episodes through the decode loop. With the tool the reward climbs as the model learns to
# call it; with `tools.list=[]` the task is a guess (1 in 10). Learning, not timing: the bounds are loose (the runs
# measured 0.99 and 0.10; floating point differs across CPUs).
# usage: test_tools_demo.sh GSPO_BINARY SOURCE_DIR PYTHON
set -eu
GSPO="$1"; SRC="$2"; PYTHON="$3"
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
cd "$SRC"  # the config starts its tool as `sh scripts/tools/lookup.sh`
"$PYTHON" scripts/make_tiny_model.py --out "$TMP/tiny_tools.pt" --warm data/tools_warm.txt --warm-steps 1000 | tail -1
run() {
  "$GSPO" train -c configs/tiny-tools.yaml --set "model.path=$TMP/tiny_tools.pt" --set train.max_steps=100 \
    --set checkpoint.every=0 --set "train.output_dir=$TMP/$1" "${@:2}" > "$TMP/$1.log" 2>&1 \
    || { tail -20 "$TMP/$1.log"; echo "FAIL: $1 exited non-zero"; exit 1; }
}
run tools
run no-tools --set 'tools.list=[]'
"$PYTHON" - "$TMP" <<'PY'
import json, sys
def rows(name):
    return [json.loads(l) for l in open(f"{sys.argv[1]}/{name}/metrics.jsonl")]
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
for b in bad: print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
echo "tools demo: passed"
