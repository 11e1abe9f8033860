#!/usr/bin/env bash
# #55 item 4: a learned reward model drives GSPO, and the true accuracy logged beside its score shows what it did to
# the policy (configs/tiny-rm.yaml; docs/verifiers.md, "Model rewards", "A worked example"). Makes the demo's policy
# and the tiny reward model (scripts/make_tiny_reward_model.py, seed 0: it exits non-zero below 0.95 pairwise
# accuracy) into a scratch folder of the build tree, kept for a look until the next run, trains 200 steps, then checks
# from metrics.jsonl and the summary:
# - it learns: the true accuracy (the `accuracy` column, from leading_integer at weight 0) of the last 10% of steps is
#   at least MARGIN above the first 10%'s (seeds 0-2 measured 0.03 -> 0.83-0.88), and the summary's accuracy line
#   says the same;
# - the learned score tracks the truth: Pearson correlation of reward_mean and accuracy over the steps >= MIN_CORR
#   (measured 0.996-0.998; a policy that games the reward model, its score climbing while accuracy does not, gave 0.27);
# - the components: reward_components_mean[0] (the model) equals reward_mean at every step (leading_integer weighs 0)
#   and reward_components_mean[1] equals accuracy;
# - the summary prints the held-out greedy accuracy line (its value is printed, not bounded: 5 problems).
# Learning, not timing: the bounds are loose (floating point differs across CPUs). One thread: other tests run beside
# it, and on a busy 2-core machine the demo took 340 s with the default threads, 13 s with one.
# usage: test_reward_model_learns.sh GSPO_BINARY TEST_MODELS_DIR SOURCE_DIR PYTHON
set -eu
GSPO="$1"; MODELS="$2"; SRC="$3"; PYTHON="$4"
MARGIN=0.4
MIN_CORR=0.9
D="$(dirname "$MODELS")/reward_model_learns"
rm -rf "$D" && mkdir -p "$D"
cd "$SRC"
export OMP_NUM_THREADS=1
t0=$(date +%s)
"$PYTHON" scripts/make_tiny_model.py --out "$D/tiny_demo.pt" --prior-text 0123456789 --prior-logit 3.0 \
  > "$D/policy.log" 2>&1 || { cat "$D/policy.log"; echo "FAIL: make_tiny_model.py"; exit 1; }
"$PYTHON" scripts/make_tiny_reward_model.py --out "$D/tiny_rm.pt" --seed 0 > "$D/rm.log" 2>&1 \
  || { tail -20 "$D/rm.log"; echo "FAIL: make_tiny_reward_model.py"; exit 1; }
grep "pairwise accuracy" "$D/rm.log"
t1=$(date +%s)
"$GSPO" train --config configs/tiny-rm.yaml --set "model.path=$D/tiny_demo.pt" --set "reward.model_path=$D/tiny_rm.pt" \
  --set "train.output_dir=$D/run" --set checkpoint.every=0 > "$D/train.log" 2>&1 \
  || { tail -20 "$D/train.log"; echo "FAIL: gspo train exited non-zero"; exit 1; }
t2=$(date +%s)
echo "models made in $((t1 - t0)) s, trained in $((t2 - t1)) s; the run: $D/run, its log: $D/train.log"
"$PYTHON" - "$D/run/metrics.jsonl" "$D/train.log" "$MARGIN" "$MIN_CORR" <<'PY'
import json, re, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if '"step"' in line]
rows = [r for r in rows if "accuracy" in r]  # training steps (validation lines have no accuracy column)
log = open(sys.argv[2]).read()
margin, min_corr = float(sys.argv[3]), float(sys.argv[4])
fails = []
def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        fails.append(what)
n = len(rows)
check(n == 200, f"{n} training steps in metrics.jsonl (200)")
k = max(1, n // 10)
mean = lambda xs: sum(xs) / len(xs)
acc = [r["accuracy"] for r in rows]
rew = [r["reward_mean"] for r in rows]
first, last = mean(acc[:k]), mean(acc[-k:])
check(last >= first + margin, f"true accuracy {first:.3f} -> {last:.3f} (first vs last 10% of steps): up by "
      f"{last - first:.3f} >= {margin}")
print(f"     the model's score {mean(rew[:k]):.3f} -> {mean(rew[-k:]):.3f}")
m = re.search(r"accuracy\s+([0-9.]+) -> ([0-9.]+)", log)
check(bool(m) and abs(float(m.group(1)) - first) < 1e-3 and abs(float(m.group(2)) - last) < 1e-3,
      f"the summary's accuracy line agrees ({m.group(0) if m else 'missing'})")
corr = statistics.correlation(acc, rew)
check(corr >= min_corr, f"correlation of the model's score and the true accuracy over the steps {corr:.3f} >= "
      f"{min_corr}")
if all("reward_components_mean" in r for r in rows):
    d0 = max(abs(r["reward_components_mean"][0] - r["reward_mean"]) for r in rows)
    d1 = max(abs(r["reward_components_mean"][1] - r["accuracy"]) for r in rows)
    check(d0 <= 1e-9, f"reward_components_mean[0] (model) = reward_mean at every step (max |diff| {d0:.1e})")
    check(d1 <= 1e-9, f"reward_components_mean[1] (leading_integer) = accuracy at every step (max |diff| {d1:.1e})")
else:
    check(False, "metrics.jsonl has reward_components_mean on every step")
# Every step's rows went through the reward model: 128 rows of "a+b=" and a response, 4 tokens or more each.
tok = [r.get("reward_model_tokens", 0) for r in rows]
check(min(tok) >= 128 * 4, f"reward_model_tokens on every step (min {min(tok)}, max {max(tok)})")
m = re.search(r"held out\s+greedy accuracy ([0-9.]+) on (\d+) problems never trained on \(([0-9.]+) on", log)
check(bool(m), "the summary prints the held-out greedy accuracy line")
if m:
    print(f"     held out: greedy accuracy {m.group(1)} on {m.group(2)} problems never trained on ({m.group(3)} on as "
          f"many training problems)")
sys.exit(1 if fails else 0)
PY
