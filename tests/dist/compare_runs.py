#!/usr/bin/env python3
"""Compares two gspo training runs: final policy weights (max |a - b| <= --weight-tol) and, step by step, the
metrics that must agree.

Which metrics must agree and how comes from the binary's metrics table (`gspo config --metrics --json`, passed as
--schema): "exact" fields are counts, and statistics of the sampled tokens and their rewards gathered in global row
order and then computed as one process does: equal bit for bit whenever the same tokens were sampled. Counter-based
noise gives every row the same draws at any world size, but the logits differ by rounding (other decode batch shapes;
after the first update, weights that differ by summation order), so a token whose draw lies within that rounding of a
CDF edge can flip, rarely; the runs then diverge legitimately and test_dist.sh retries with another seed. "close"
fields and the weights differ by summation order only: |a - b| <= --tol * max(1, |a|) and --weight-tol. A field
written only sometimes (kl) is compared where both lines have it.

--one-sided NAMES (comma-separated) lets those fields be written by one run only (an asynchronous run's version lag
beside a synchronous run), still comparing them where both have them.

usage: compare_runs.py RUN_A RUN_B --step N --schema SCHEMA.json [--weight-tol 1e-5] [--tol 1e-4] [--initial MODEL.pt]
                       [--one-sided NAMES]
Exit 0 when they agree; 1 with the first differences listed otherwise."""
import argparse
import json
import os
import sys

import torch

def schema(path):
    """(exact field names, close field names) from `gspo config --metrics --json`."""
    with open(path) as f:
        rows = json.load(f)
    exact = [r["name"] for r in rows if r["match"] == "exact"]
    close = [r["name"] for r in rows if r["match"] == "close"]
    if not exact or not close:
        raise SystemExit(f"{path}: no exact or no close metrics; is it the output of gspo config --metrics --json?")
    return exact, close


def metrics(run):
    with open(f"{run}/metrics.jsonl") as f:
        return [json.loads(line) for line in f]


def weights(run, step):
    ckpt = f"{run}/checkpoints/step_{step:08d}"
    if os.path.exists(f"{ckpt}/adapter.pt"):
        return merged_adapters(ckpt)
    module = torch.jit.load(f"{ckpt}/policy.pt", map_location="cpu")
    return dict(module.named_parameters())


def merged_adapters(ckpt):
    """A LoRA checkpoint's weights: its base (adapter.json's base_path) with W + (alpha / r) B A in float64."""
    meta = json.load(open(f"{ckpt}/adapter.json"))
    saved = torch.jit.load(f"{ckpt}/adapter.pt", map_location="cpu")
    tensors = [getattr(saved, str(i)) for i in range(2 * len(meta["names"]))]
    w = {n: p.detach().double() for n, p in torch.jit.load(meta["base_path"], map_location="cpu").named_parameters()}
    scale = meta["alpha"] / meta["rank"]
    for k, name in enumerate(meta["names"]):
        a, b = tensors[2 * k].double(), tensors[2 * k + 1].double()
        w[name] = w[name] + scale * b @ a
    return w


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--step", type=int, required=True)
    ap.add_argument("--schema", required=True, help="gspo config --metrics --json output")
    ap.add_argument("--weight-tol", type=float, default=1e-5)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--initial", help="the starting model: the runs must have moved well away from it")
    ap.add_argument("--one-sided", default="", help="fields one run may write and the other not")
    args = ap.parse_args()
    exact, close = schema(args.schema)
    one_sided = set(filter(None, args.one_sided.split(",")))
    problems = []
    ma, mb = metrics(args.a), metrics(args.b)
    if len(ma) != len(mb):
        problems.append(f"{len(ma)} vs {len(mb)} metrics lines")
    for x, y in zip(ma, mb):
        for k in exact + close:
            if (k in x) != (k in y) and k not in one_sided:
                problems.append(f"step {x['step']}: {k} written in one run only")
        for k in exact:
            if k in x and k in y and x[k] != y[k]:
                problems.append(f"step {x['step']}: {k} {x[k]} vs {y[k]}")
        for k in close:
            if k in x and k in y and abs(x[k] - y[k]) > args.tol * max(1.0, abs(x[k])):
                problems.append(f"step {x['step']}: {k} {x[k]!r} vs {y[k]!r}")
    wa, wb = weights(args.a, args.step), weights(args.b, args.step)
    worst = max((wa[n] - wb[n]).abs().max().item() for n in wa)
    print(f"max |weight difference| {worst:.3g} (tolerance {args.weight_tol:g}); "
          f"{sum(1 for m in ma if m['grad_norm'] > 0)}/{len(ma)} steps had gradients")
    if args.initial:
        w0 = dict(torch.jit.load(args.initial, map_location="cpu").named_parameters())
        moved = max((wa[n] - w0[n]).abs().max().item() for n in wa)
        print(f"max |weight change| from the initial model {moved:.3g}")
        if moved < 100 * args.weight_tol:
            problems.append(f"training moved the weights by only {moved:.3g}: the comparison would prove little")
    if worst > args.weight_tol:
        problems.append(f"weights differ by {worst:.3g} > {args.weight_tol:g}")
    if not any(m["grad_norm"] > 0 for m in ma):
        problems.append("no step had a gradient: the comparison would prove nothing")
    for p in problems[:10]:
        print("DIFF", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
