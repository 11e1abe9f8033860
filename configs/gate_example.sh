#!/usr/bin/env bash
# A recipe's regression gate in CI (docs/report.md "gspo gate"): train the recipe's short form and fail the job when a
# metric leaves the band its seeds made. Here the recipe is the tiny demo (configs/tiny.yaml, 60 steps); for your own
# recipe change CONFIG, SHORT and the model.
#
# Once, by hand (or when the recipe changes on purpose), make the bands from three seeds and commit them:
#   bash configs/gate_example.sh --make-bands        # writes configs/gate/tiny-bands.json
# Then in CI, on every change:
#   bash configs/gate_example.sh                     # exit 0 inside the bands; 9 naming the metric and steps outside
# ctest gate_demo runs the same commands (tests/report/test_gate.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG=configs/tiny.yaml
# The recipe's short form: minutes, not hours (the gate compares windows of steps). The clip range 0.01 is where a
# wrong clip range shows on this 3-token task (docs/report.md); tests/report/test_gate.sh runs these settings.
SHORT=(--set train.max_steps=60 --set checkpoint.every=0 --set algorithm.clip_low=0.01 --set algorithm.clip_high=0.01)
BANDS=configs/gate/tiny-bands.json
OUT=runs/gate
MODEL=models/tiny_demo.pt
[ -f "$MODEL" ] || scripts/py scripts/make_tiny_model.py --out "$MODEL" --prior-text 0123456789 --prior-logit 3.0

train() {  # train NAME SEED
  rm -rf "$OUT/$1"
  build/gspo train -c "$CONFIG" "${SHORT[@]}" --set "model.path=$MODEL" --set "train.output_dir=$OUT/$1" \
    --set "train.seed=$2" --set "rollout.seed=$2" --set logging.progress=false > "$OUT/$1.log" 2>&1
}
mkdir -p "$OUT"
if [ "${1:-}" = --make-bands ]; then
  for seed in 0 1 2; do train "seed$seed" "$seed"; done
  mkdir -p "$(dirname "$BANDS")"
  build/gspo gate --make-bands "$OUT/seed0" "$OUT/seed1" "$OUT/seed2" -o "$BANDS"
else
  [ -f "$BANDS" ] || { echo "no $BANDS yet: run bash $0 --make-bands once (and commit the file)"; exit 2; }
  train candidate 3
  build/gspo gate "$OUT/candidate" --baseline "$BANDS"
  build/gspo report "$OUT/candidate" -o "$OUT/candidate.html"   # the page to look at when it fails
fi
