#!/usr/bin/env python3
"""Independent reference for gspo's training/inference mismatch correction (docs/algorithm.md, "Mismatch correction").

Importance weights w = pi_train / pi_sampler of the sampled tokens (pi_train: the trainer's step-start log-probs,
the recomputed pi_old), at token level or per sequence (geometric mean exp(mean_t log w_t), or the product
exp(sum_t log w_t)); tis multiplies each term by min(w, cap); mis rejects terms with w outside [floor, cap] (left
out of the loss and of their sequence's token average, clip counts included) and multiplies the others by w.
Written as explicit per-sequence / per-token loops over float64 scalars with autograd, not from the C++ code.
Only tokens whose mask is 1 (the policy's own) have a weight and a term, and a sequence-level weight averages or
sums over them; the "holes_" cases have masks with interior runs of zeros (tool observations) and garbage log-probs
at the masked positions (the sampler records 0 there; garbage shows any use). Each case also carries the mismatch
metrics' sums (mismatch_stats). Writes mismatch_cases.json, read by tests/unit/test_mismatch_golden.cpp
(tolerances stated there).

    python3 tests/golden/mismatch_reference.py OUT.json
"""
import json
import math
import os
import sys

import torch

from golden_masks import HOLE_MASKS, prefix_mask


def weights(old, sampler, mask, level):
    """log w per token ([N][T] lists, None on padding) or per sequence ([N])."""
    n, t = old.shape
    per_tok = [[(old[i][j] - sampler[i][j]).item() if mask[i][j] > 0 else None for j in range(t)] for i in range(n)]
    if level == "token":
        return per_tok
    out = []
    for i in range(n):
        vals = [x for x in per_tok[i] if x is not None]
        out.append(sum(vals) / len(vals) if level == "sequence_geometric" else sum(vals))
    return out


def factor_and_keep(lw, mode, cap, floor):
    if mode == "tis":
        return min(math.exp(lw), cap), True
    keep = math.log(floor) <= lw <= math.log(cap)
    return (math.exp(lw) if keep else 0.0), keep


def sequence_term(kind, lp, old, adv, toks, factors, lo, hi, clamp):
    """The objective term of one sequence over its kept tokens `toks` with per-token factors; clip flags."""
    length = len(toks)
    if length == 0:
        return torch.zeros((), dtype=torch.float64), 0, 0, False, False
    if kind == "gspo":
        log_s = sum(lp[j] - old[j] for j in toks) / length
        if clamp > 0:
            log_s = torch.clamp(log_s, max=clamp)
        s = torch.exp(log_s)
        unclipped, clipped = s * adv, torch.clamp(s, 1 - lo, 1 + hi) * adv
        factor = sum(factors[j] for j in toks) / length
        low = clipped.item() < unclipped.item() and s.item() < 1 - lo
        high = clipped.item() < unclipped.item() and s.item() > 1 + hi
        return factor * torch.minimum(unclipped, clipped), length * low, length * high, low, high
    if kind == "gspo_token":
        log_s = sum(lp[j].detach() - old[j] for j in toks) / length
        if clamp > 0:
            log_s = torch.clamp(log_s, max=clamp)
        s_det = torch.exp(log_s)
    acc, tok_low, tok_high = 0.0, 0, 0
    for j in toks:
        if kind == "gspo_token":
            r = s_det * torch.exp(lp[j] - lp[j].detach())
        else:
            log_r = lp[j] - old[j]
            if clamp > 0:
                log_r = torch.clamp(log_r, max=clamp)
            r = torch.exp(log_r)
        unclipped, clipped = r * adv, torch.clamp(r, 1 - lo, 1 + hi) * adv
        acc = acc + factors[j] * torch.minimum(unclipped, clipped)
        if clipped.item() < unclipped.item():
            tok_low += int(r.item() < 1 - lo)
            tok_high += int(r.item() > 1 + hi)
    return acc / length, tok_low, tok_high, tok_low > 0, tok_high > 0


def metric_sums(old, sampler, mask, level, mode, cap, floor):
    """What the step logs about the mismatch (algo::MismatchStats), over the masked-in tokens."""
    n, t = mask.shape
    diffs = [(old[i][j] - sampler[i][j]).item() for i in range(n) for j in range(t) if mask[i][j] > 0]
    lw = weights(old, sampler, mask, level)
    lws = [x for row in lw for x in row if x is not None] if level == "token" else lw
    ws = [math.exp(x) for x in lws]
    above = sum(1 for x in lws if x > math.log(cap))
    below = sum(1 for x in lws if x < math.log(floor))
    return dict(tokens=len(diffs), diff_sum=sum(diffs), diff_abs_max=max(abs(x) for x in diffs), weight_sum=sum(ws),
                weight_count=len(ws), weight_min=min(ws), weight_max=max(ws), truncated=above,
                rejected=above + below if mode == "mis" else 0)


def case(name, kind, mode, level, cap, floor, lo, hi, inputs, clamp=10.0):
    lp, old, sampler, mask, adv = inputs
    lp = lp.clone().requires_grad_(True)
    n, t = mask.shape
    lw = weights(old, sampler, mask, level)
    terms, stats = [], dict(seq_clipped_low=0, seq_clipped_high=0, tok_clipped_low=0, tok_clipped_high=0)
    kept_tokens = 0
    for i in range(n):
        valid = [j for j in range(t) if mask[i][j] > 0]
        factors, toks = {}, []
        for j in valid:
            f, keep = factor_and_keep(lw[i][j] if level == "token" else lw[i], mode, cap, floor)
            if keep:
                toks.append(j)
                factors[j] = f
        term, tl, th, sl, sh = sequence_term(kind, lp[i], old[i], adv[i], toks, factors, lo, hi, clamp)
        terms.append(term)
        kept_tokens += len(toks)
        stats["tok_clipped_low"] += tl
        stats["tok_clipped_high"] += th
        stats["seq_clipped_low"] += int(sl)
        stats["seq_clipped_high"] += int(sh)
    loss = -sum(terms) / n
    loss.backward()
    grad = lp.grad
    assert torch.all(grad[mask == 0] == 0), name  # no gradient reaches a masked position
    return {
        "name": name, "kind": kind, "is_mode": mode, "is_level": level, "is_cap": cap, "is_floor": floor,
        "clip_low": lo, "clip_high": hi, "log_ratio_clamp": clamp, "logprobs": lp.detach().tolist(),
        "old_logprobs": old.tolist(), "sampler_logprobs": sampler.tolist(), "mask": mask.tolist(),
        "advantages": adv.tolist(), "loss": loss.item(), "grad": grad.tolist(), "stats": stats,
        "kept_tokens": kept_tokens, "log_weights": lw,
        "mismatch_stats": metric_sums(old, sampler, mask, level, mode, cap, floor),
    }


def with_garbage(inputs):
    """Large values at every masked position: a weight, ratio or metric that counted one would be far off."""
    lp, old, sampler, mask, adv = inputs
    hole = mask == 0
    return lp.masked_fill(hole, 25.0), old.masked_fill(hole, -25.0), sampler.masked_fill(hole, -35.0), mask, adv


def make_inputs(gen, mask, shift, tok_noise, mismatch):
    n, t = mask.shape
    old = -torch.rand(n, t, generator=gen, dtype=torch.float64) * 3 - 0.1
    lp = old + shift.unsqueeze(1) + (torch.rand(n, t, generator=gen, dtype=torch.float64) - 0.5) * 2 * tok_noise
    lp = torch.where(mask > 0, lp, torch.full_like(lp, -7.0))
    sampler = old + (torch.rand(n, t, generator=gen, dtype=torch.float64) - 0.5) * 2 * mismatch
    sampler = torch.where(mask > 0, sampler, torch.full_like(sampler, -9.0))  # padding values must not matter
    adv = torch.tensor([1.2, -0.7, 0.9, -1.1, 0.5, -0.4, 0.4, -0.3], dtype=torch.float64)
    return lp, old, sampler, mask, adv


def hole_cases(gen):
    """Every mode, level and loss kind on masks with holes (HOLE_MASKS), garbage at the masked positions."""
    mask = torch.tensor(HOLE_MASKS, dtype=torch.float64)
    gspo_shift = torch.tensor([1e-3, -1e-3, 2e-4, 5e-4, -6e-4, 1e-3, -1e-3, 1e-4], dtype=torch.float64)
    gspo_in = with_garbage(make_inputs(gen, mask, gspo_shift, 5e-5, 0.9))
    grpo_shift = torch.tensor([0.3, -0.3, 0.05, 0.25, -0.35, 0.3, -0.25, 0.1], dtype=torch.float64)
    grpo_in = with_garbage(make_inputs(gen, mask, grpo_shift, 0.15, 0.9))
    cases = []
    for mode in ["tis", "mis"]:
        for level in ["token", "sequence_geometric", "sequence_product"]:
            cases.append(case(f"holes_gspo_{mode}_{level}", "gspo", mode, level, 2.0, 0.5, 3e-4, 4e-4, gspo_in))
            cases.append(case(f"holes_gspo_token_{mode}_{level}", "gspo_token", mode, level, 2.0, 0.5, 3e-4, 4e-4,
                              gspo_in))
            cases.append(case(f"holes_grpo_{mode}_{level}", "grpo", mode, level, 2.0, 0.5, 0.2, 0.28, grpo_in))
    return cases


def main():
    gen = torch.Generator().manual_seed(20261122)
    n, t = 8, 7
    mask = prefix_mask(n, t, [7, 3, 1, 5, 7, 2, 1, 6])
    gspo_shift = torch.tensor([1e-3, -1e-3, 2e-4, 5e-4, -6e-4, 1e-3, -1e-3, 1e-4], dtype=torch.float64)
    gspo_in = make_inputs(gen, mask, gspo_shift, 1e-4, 0.9)
    grpo_shift = torch.tensor([0.3, -0.3, 0.05, 0.25, -0.35, 0.3, -0.25, 0.1], dtype=torch.float64)
    grpo_in = make_inputs(gen, mask, grpo_shift, 0.15, 0.9)
    cases = []
    for mode in ["tis", "mis"]:
        for level in ["token", "sequence_geometric", "sequence_product"]:
            cases.append(case(f"gspo_{mode}_{level}", "gspo", mode, level, 2.0, 0.5, 3e-4, 4e-4, gspo_in))
            cases.append(case(f"grpo_{mode}_{level}", "grpo", mode, level, 2.0, 0.5, 0.2, 0.28, grpo_in))
    cases.append(case("gspo_token_mis_token", "gspo_token", "mis", "token", 1.5, 0.7, 3e-4, 4e-4, gspo_in))
    cases.append(case("gspo_tis_token_tight_cap", "gspo", "tis", "token", 1.1, 0.5, 3e-4, 4e-4, gspo_in))
    cases += hole_cases(gen)
    os.makedirs(os.path.dirname(os.path.abspath(sys.argv[1])), exist_ok=True)
    with open(sys.argv[1], "w") as f:
        json.dump({"cases": cases}, f)
    print(f"wrote {len(cases)} mismatch-correction cases to {sys.argv[1]}")


if __name__ == "__main__":
    main()
