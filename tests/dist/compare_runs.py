#!/usr/bin/env python3
"""Compares two gspo training runs: final policy weights (max |a - b| <= --weight-tol) and, step by step, the
metrics that must agree.

EXACT fields are counts, and sums of per-row integers gathered in global row order and then averaged as one
process does, over the sampled tokens and their rewards: equal bit for bit whenever the same tokens were sampled.
Counter-based noise gives every row the same draws at any world size, but the logits differ by rounding (other
decode batch shapes; after the first update, weights that differ by summation order), so a token whose draw lies
within that rounding of a CDF edge can flip, rarely; the runs then diverge legitimately and test_dist.sh retries
with another seed. CLOSE fields and the weights differ by summation order only: |a - b| <= --tol * max(1, |a|) and
--weight-tol.

usage: compare_runs.py RUN_A RUN_B --step N [--weight-tol 1e-5] [--tol 1e-4] [--initial MODEL.pt]
Exit 0 when they agree; 1 with the first differences listed otherwise."""
import argparse
import json
import sys

import torch

EXACT = ["reward_mean", "reward_max", "accuracy", "response_len_mean", "truncated_frac", "update_sequences",
         "zero_variance_frac", "sample_tokens", "optimizer_steps", "skipped_updates"]
CLOSE = ["advantage_std", "loss", "seq_ratio_mean", "seq_ratio_min", "seq_ratio_max", "clip_tok_frac",
         "clip_seq_low", "clip_seq_high", "entropy", "grad_norm", "grad_norm_max", "lr"]


def metrics(run):
    with open(f"{run}/metrics.jsonl") as f:
        return [json.loads(line) for line in f]


def weights(run, step):
    module = torch.jit.load(f"{run}/checkpoints/step_{step:08d}/policy.pt", map_location="cpu")
    return dict(module.named_parameters())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--step", type=int, required=True)
    ap.add_argument("--weight-tol", type=float, default=1e-5)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--initial", help="the starting model: the runs must have moved well away from it")
    args = ap.parse_args()
    problems = []
    ma, mb = metrics(args.a), metrics(args.b)
    if len(ma) != len(mb):
        problems.append(f"{len(ma)} vs {len(mb)} metrics lines")
    for x, y in zip(ma, mb):
        for k in EXACT:
            if x[k] != y[k]:
                problems.append(f"step {x['step']}: {k} {x[k]} vs {y[k]}")
        for k in CLOSE:
            if abs(x[k] - y[k]) > args.tol * max(1.0, abs(x[k])):
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
