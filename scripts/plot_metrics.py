#!/usr/bin/env python3
"""Turns gspo metrics.jsonl files into PNG charts: reward, accuracy, response length, clip fractions, grad norm,
entropy, for MoE policies routing change (overall and per layer) and expert load, and, when validation.jsonl sits beside metrics.jsonl (eval.every), one chart per validation set with its
avg@K, the largest pass@k and cons@K against steps (step 0 included). Several runs are overlaid (label=path), e.g.
GSPO against GRPO:

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
    ("tool_calls", "tool calls per episode", ["tool_calls_mean"], False),
    ("routing_change", "MoE: share of (token, layer) expert sets changed by the step", ["moe_routing_change_frac"], False),
    ("expert_load", "MoE: expert load imbalance, the most imbalanced layer", ["moe_load_imbalance_max"], False),
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


def plot_validation(runs, out_dir):
    """One chart per validation set: avg@K, the largest pass@k and cons@K of each run against steps, unsmoothed."""
    sets = {}  # set -> [(label, [(step, summary)])]
    for label, path in runs:
        vpath = os.path.join(os.path.dirname(path), "validation.jsonl")
        if not os.path.exists(vpath):
            continue
        per_set = {}
        for line in load(vpath):
            for s in line["datasets"]:
                per_set.setdefault(s["dataset"], []).append((line["step"], s))
        for name, pts in per_set.items():
            sets.setdefault(name, []).append((label, pts))
    for name, series in sets.items():
        fig, ax = plt.subplots(figsize=(6, 3.6))
        for label, pts in series:
            keys = [k for k in pts[0][1] if "@" in k]
            shown = [k for k in keys if k.startswith("avg@") or k.startswith("cons@")]
            passes = [k for k in keys if k.startswith("pass@")]
            if passes:
                shown.append(max(passes, key=lambda k: int(k.split("@")[1])))
            for key in shown:
                xs = [step for step, s in pts if key in s]
                ys = [s[key] for step, s in pts if key in s]
                ax.plot(xs, ys, marker="o", label=f"{label} {key}")
        ax.set_xlabel("step")
        ax.set_title(f"validation: {name}")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        out = os.path.join(out_dir, f"validation_{name}.png")
        fig.savefig(out, dpi=100)
        plt.close(fig)
        print(f"wrote {out}")


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
    runs, paths = [], []
    for spec in args.runs:
        label, _, path = spec.rpartition("=")
        label = label or os.path.basename(os.path.dirname(path)) or path
        runs.append((label, load(path)))
        paths.append((label, path))
    os.makedirs(args.out, exist_ok=True)
    for name, title, keys, log_y in CHARTS:
        if not any(key in r for _, rows in runs for r in rows for key in keys):
            continue  # e.g. the MoE charts of dense runs
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
    plot_layers(runs, args.out, args.smooth)
    plot_validation(paths, args.out)


def plot_layers(runs, out_dir, window):
    """moe_routing_change_frac_layers: one panel per run, one line per MoE layer."""
    key = "moe_routing_change_frac_layers"
    shown = [(label, rows) for label, rows in runs if any(key in r for r in rows)]
    if not shown:
        return
    fig, axes = plt.subplots(1, len(shown), figsize=(4 * len(shown), 3.4), sharey=True, squeeze=False)
    for ax, (label, rows) in zip(axes[0], shown):
        pts = [(r["step"], r[key]) for r in rows if r.get(key)]  # a step without updates has an empty list
        for layer in range(max((len(v) for _, v in pts), default=0)):
            ax.plot([s for s, _ in pts], smooth([v[layer] for _, v in pts], window), label=f"MoE layer {layer}")
        ax.set_title(label)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("expert sets changed")
    axes[0][0].legend()
    fig.suptitle("MoE routing change per layer" + (f" (moving average of {window})" if window > 1 else ""))
    fig.tight_layout()
    out = os.path.join(out_dir, "routing_change_layers.png")
    fig.savefig(out, dpi=100)
    plt.close(fig)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
