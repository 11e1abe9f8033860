#!/usr/bin/env bash
# Sets everything up on a fresh Debian machine and runs the embedded default: a tiny byte-level model learns
# single-digit addition with GSPO on CPU; mean reward rises from ~0.05. Output: runs/demo (replaced each time) and its
# report, runs/demo/report.html.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD_TARGET=gspo bash scripts/build.sh
source scripts/pyenv.sh; PY="$GSPO_PY"
if [ ! -f models/tiny_demo.pt ]; then
  "$PY" scripts/make_tiny_model.py --out models/tiny_demo.pt --prior-text 0123456789 --prior-logit 3.0
fi
rm -rf runs/demo
build/gspo train --config configs/tiny.yaml --set train.output_dir=runs/demo --set logging.rollouts_every=10 "$@"
build/gspo report runs/demo   # runs/demo/report.html: curves, the rollouts, config and summary (docs/report.md)
