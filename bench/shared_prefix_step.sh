#!/usr/bin/env bash
# Shared prompts in the step (#71, train.shared_prefix): `gspo train` with sharing off and on, side by side, runs
# alternating, on the issue's long-prompt workload by default (prompts of about PROMPT=1024 tokens, responses of exactly
# RESPONSE=128, G=16, one prompt a step, one mini-batch of whole groups) with the Qwen3-shaped CPU model of
# bench/run_shared_prefix.sh (4 layers, hidden 256, byte vocabulary; random weights, made here). Per run: the old-log-prob
# pass and the update (median seconds over its STEPS=2 steps), the phases' peak memory, prompt_tokens_saved and the
# loss, then the ratios. A benchmark, not a test. Set DEMO=1 for the demo's shape instead (the demo's
# configs/tiny.yaml: tiny model, arithmetic prompts, G 8, responses of 3; STEPS=20).
#
#   bash bench/shared_prefix_step.sh [DIR]     # DIR defaults to runs/shared_prefix_step
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/pyenv.sh
D=${1:-runs/shared_prefix_step}
REPS=${REPS:-2}
PROMPT=${PROMPT:-1024}
RESPONSE=${RESPONSE:-128}
G=${G:-16}
GSPO=build/gspo
[ -x "$GSPO" ] || { echo "no $GSPO: run bash scripts/build.sh" >&2; exit 2; }
mkdir -p "$D"
if [ "${DEMO:-0}" = 1 ]; then
  STEPS=${STEPS:-20}
  [ -f models/tiny_demo.pt ] || "$GSPO_PY" scripts/make_tiny_model.py --out models/tiny_demo.pt --prior-text 0123456789
  ARGS=(--config configs/tiny.yaml --set "train.max_steps=$STEPS" --set algorithm.minibatch_groups=true
        --set checkpoint.at_end=false --set checkpoint.every=0 --set logging.progress=false)
  WHAT="configs/tiny.yaml (the demo), $STEPS steps, algorithm.minibatch_groups true"
else
  STEPS=${STEPS:-2}
  M="$D/qwen3_shaped.pt"
  if [ ! -f "$M" ] || [ scripts/gspo_model.py -nt "$M" ]; then
    "$GSPO_PY" scripts/make_tiny_model.py --out "$M" --layers 4 --hidden 256 --heads 8 --kv-heads 4 \
      --intermediate 768 --max-seq-len 2048 --qk-norm --tie >/dev/null
  fi
  "$GSPO_PY" - "$D" "$PROMPT" <<'EOF'
import json, random, sys
d, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(0)
words = "the of and a to in is was that for on are with as by at be this from it or an which".split()
with open(f"{d}/prompts.jsonl", "w") as f:
    for i in range(8):
        text = ""
        while len(text) < n - 24:
            text += rng.choice(words) + " "
        f.write(json.dumps({"prompt": text[: n - 24] + f" What is {i} + {i}?", "answer": str(2 * i)}) + "\n")
EOF
  cat > "$D/step.yaml" <<EOF
model: {path: $M}
data: {task: jsonl, path: $D/prompts.jsonl, shuffle: false}
rollout: {prompts_per_step: 1, group_size: $G, max_new_tokens: $RESPONSE, min_new_tokens: $RESPONSE, temperature: 1.0}
reward: {kind: regex, regex: "[0-9]"}
algorithm: {loss: gspo, num_minibatches: 1, minibatch_groups: true}
optimizer: {lr: 1.0e-5}
train: {max_steps: $STEPS, threads: 2}
checkpoint: {every: 0, at_end: false}
logging: {progress: false}
EOF
  ARGS=(--config "$D/step.yaml")
  WHAT="prompts of ~$PROMPT tokens, responses of $RESPONSE, G = $G, Qwen3-shaped 4 x 256 model, $STEPS steps"
fi
for rep in $(seq 1 "$REPS"); do
  for share in false true; do
    out="$D/run_${share}_$rep"
    rm -rf "$out"
    "$GSPO" train "${ARGS[@]}" --set "train.output_dir=$out" --set "train.shared_prefix=$share" > "$out.log" 2>&1 \
      || { tail -5 "$out.log"; exit 1; }
  done
done
"$GSPO_PY" - "$D" "$REPS" "$WHAT" <<'EOF'
import json, statistics, sys
d, reps, what = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def run(share, rep):
    lines = [json.loads(x) for x in open(f"{d}/run_{share}_{rep}/metrics.jsonl")]
    med = lambda k: statistics.median(m[k] for m in lines)
    return dict(old=med("time_old_logprobs_s"), upd=med("time_update_s"), pl=max(m["peak_mb_logprobs"] for m in lines),
                pu=max(m["peak_mb_update"] for m in lines), saved=lines[-1].get("prompt_tokens_saved", 0),
                loss=[m["loss"] for m in lines])
print(f"# shared prompts in the step: {what}; median over {reps} alternating runs of each")
print("| train.shared_prefix | old log-probs s | update s | peak MB log-probs | peak MB update | prompt_tokens_saved |")
print("|---|---|---|---|---|---|")
res = {}
for share in ("false", "true"):
    rs = [run(share, r) for r in range(1, reps + 1)]
    res[share] = {k: statistics.median(r[k] for r in rs) for k in ("old", "upd", "pl", "pu", "saved")}
    res[share]["loss"] = rs[0]["loss"]
    x = res[share]
    print(f"| {share} | {x['old']:.3f} | {x['upd']:.3f} | {x['pl']:.0f} | {x['pu']:.0f} | {x['saved']:.0f} |")
a, b = res["false"], res["true"]
print(f"\nold-log-prob pass {a['old'] / b['old']:.2f}x, update {a['upd'] / b['upd']:.2f}x faster with sharing; "
      f"peak MB {a['pl']:.0f} -> {b['pl']:.0f} (log-probs), {a['pu']:.0f} -> {b['pu']:.0f} (update)")
diff = max(abs(x - y) / max(abs(x), 1e-12) for x, y in zip(a["loss"], b["loss"]))
print(f"loss per step, relative difference between the two: {diff:.2e} (the same samples, the same update)")
EOF
