#!/usr/bin/env bash
# Makes models/tiny_warm.pt, the base of configs/tiny-lora.yaml: the tiny byte-level model warmed up by next-token
# training on "a+b=<random digit>" lines (the answer format, never the sums) and "d:d" copy lines (a head that can be
# confident about a digit, as a pretrained model's head is; a random head frozen under LoRA cannot: docs/lora.md).
# Deterministic (seed 0). usage: bash scripts/make_warm_base.sh [OUT.pt]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-models/tiny_warm.pt}"
source scripts/pyenv.sh; PY="$GSPO_PY"
mkdir -p "$(dirname "$OUT")"
"$PY" - "$OUT.txt" <<'PY'
import random, sys
r = random.Random(0)
with open(sys.argv[1], "w") as f:
    for _ in range(2000):
        if r.random() < 0.5:
            f.write(f"{r.randint(0, 4)}+{r.randint(0, 4)}={r.randint(0, 8)}\n")
        else:
            d = r.randint(0, 9)
            f.write(f"{d}:{d}\n")
PY
"$PY" scripts/make_tiny_model.py --out "$OUT" --warm "$OUT.txt" >/dev/null
rm -f "$OUT.txt"
echo "wrote $OUT"
