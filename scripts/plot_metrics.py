#!/usr/bin/env python3
"""Turns gspo metrics.jsonl files into PNG charts: reward, accuracy, response length, clip fractions, grad norm,
entropy. Several runs are overlaid (label=path), e.g. GSPO against GRPO:

    scripts/py scripts/plot_metrics.py --out docs/img gspo=runs/a/metrics.jsonl grpo=runs/b/metrics.jsonl
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CHARTS = [
    ("reward", "mean reward", ["reward_mean"], False),
    ("accuracy", "accuracy", ["accuracy"], False),
    ("length", "response length (tokens)", ["response_len_mean"], False),
    ("clip_fraction", "clipped fraction of tokens", ["clip_tok_frac"], True),
    ("grad_norm", "gradient norm", ["grad_norm"], False),
    ("entropy", "token entropy (nats)", ["entropy"], False),
]


def load(path):
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{n}: not valid JSON ({e})")
    if not rows:
        sys.exit(f"{path}: no metrics")
    return rows


def smooth(values, window):
    if window <= 1:
        return values
    out, acc = [], 0.0
    for i, v in enumerate(values):
        acc += v
        if i >= window:
            acc -= values[i - window]
        out.append(acc / min(i + 1, window))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="metrics.jsonl, or label=metrics.jsonl")
    p.add_argument("--out", required=True, help="output directory for the PNGs")
    p.add_argument("--smooth", type=int, default=10, help="moving-average window in steps (1 = raw)")
    args = p.parse_args()
    runs = []
    for spec in args.runs:
        label, _, path = spec.rpartition("=")
        runs.append((label or os.path.basename(os.path.dirname(path)) or path, load(path)))
    os.makedirs(args.out, exist_ok=True)
    for name, title, keys, log_y in CHARTS:
        fig, ax = plt.subplots(figsize=(6, 3.6))
        for label, rows in runs:
            for key in keys:
                pts = [(r["step"], r[key]) for r in rows if key in r]
                if not pts:
                    continue
                xs, ys = zip(*pts)
                ax.plot(xs, smooth(list(ys), args.smooth), label=label if len(keys) == 1 else f"{label} {key}")
        ax.set_xlabel("step")
        ax.set_title(title + (f" (moving average of {args.smooth})" if args.smooth > 1 else ""))
        if log_y:
            ax.set_yscale("symlog", linthresh=1e-4)
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        out = os.path.join(args.out, f"{name}.png")
        fig.savefig(out, dpi=100)
        plt.close(fig)
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
