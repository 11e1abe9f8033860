#!/usr/bin/env python3
"""Independent reference for gspo's advantages and policy losses (../shared/docs/gspo-algorithm.md).

Written as explicit per-sequence / per-token Python loops over torch float64 scalars, not as a transcription
of the C++ vectorised code, and differentiated with autograd. Every sum over t runs over the positions whose mask
is 1 and |y_i| is their count (../shared/docs/gspo-algorithm.md section 7): the "holes_" cases have masks with
interior runs of zeros (a tool's output between the policy's turns) and garbage at every masked position, so
counting one would show. Writes loss_cases.json, read by tests/unit/test_loss_golden.cpp. Tolerances (stated
there): loss and gradients 1e-5 relative + 1e-7 absolute (C++ computes in float32), gradient exactly 0 at masked
positions, clip counts exact.

    python3 tests/golden/loss_reference.py OUT.json
"""
import json
import math
import os
import sys

import torch

from golden_masks import HOLE_MASKS, prefix_mask


def seq_terms(kind, lp, old, mask, adv, lo, hi, clamp):
    """Per-sequence objective terms (to maximise) and clip flags, one sequence at a time."""
    n, t = lp.shape
    terms, tok_low, tok_high, seq_low, seq_high = [], 0, 0, 0, 0
    for i in range(n):
        toks = [j for j in range(t) if mask[i][j] > 0]
        length = len(toks)
        a_i = adv[i] if adv.dim() == 1 else None
        if kind == "gspo":
            log_s = sum(lp[i][j] - old[i][j] for j in toks) / length
            if clamp > 0:
                log_s = torch.clamp(log_s, max=clamp)
            s = torch.exp(log_s)
            unclipped, clipped = s * a_i, torch.clamp(s, 1 - lo, 1 + hi) * a_i
            terms.append(torch.minimum(unclipped, clipped))
            if clipped.item() < unclipped.item():
                if s.item() < 1 - lo:
                    seq_low += 1
                    tok_low += length
                if s.item() > 1 + hi:
                    seq_high += 1
                    tok_high += length
            continue
        if kind == "gspo_token":
            log_s = sum(lp[i][j].detach() - old[i][j] for j in toks) / length
            if clamp > 0:
                log_s = torch.clamp(log_s, max=clamp)
            s_det = torch.exp(log_s)
        acc, any_low, any_high = 0.0, False, False
        for j in toks:
            a = adv[i] if adv.dim() == 1 else adv[i][j]
            if kind == "gspo_token":
                r = s_det * torch.exp(lp[i][j] - lp[i][j].detach())
            else:  # grpo
                log_r = lp[i][j] - old[i][j]
                if clamp > 0:
                    log_r = torch.clamp(log_r, max=clamp)
                r = torch.exp(log_r)
            unclipped, clipped = r * a, torch.clamp(r, 1 - lo, 1 + hi) * a
            acc = acc + torch.minimum(unclipped, clipped)
            if clipped.item() < unclipped.item():
                if r.item() < 1 - lo:
                    tok_low += 1
                    any_low = True
                if r.item() > 1 + hi:
                    tok_high += 1
                    any_high = True
        terms.append(acc / length)
        seq_low += int(any_low)
        seq_high += int(any_high)
    return terms, dict(seq_clipped_low=seq_low, seq_clipped_high=seq_high, tok_clipped_low=tok_low,
                       tok_clipped_high=tok_high)


def kl_terms(lp, ref, mask, estimator):
    """Per sequence: (mean over its masked-in tokens of the per-token KL, their sum)."""
    out = []
    for i in range(lp.shape[0]):
        toks = [j for j in range(lp.shape[1]) if mask[i][j] > 0]
        acc = 0.0
        for j in toks:
            d = ref[i][j] - lp[i][j]
            acc = acc + (-d if estimator == "k1" else torch.exp(d) - d - 1)
        out.append((acc / len(toks), acc))
    return out


def seq_ratio_sum(lp, old, mask):
    """Sum over sequences of exp(mean over masked-in tokens of lp - old), unclamped (the seq_ratio metric)."""
    total = 0.0
    for i in range(lp.shape[0]):
        toks = [j for j in range(lp.shape[1]) if mask[i][j] > 0]
        total += math.exp(sum(lp[i][j].item() - old[i][j].item() for j in toks) / len(toks))
    return total


# Garbage at masked positions: large, so that a loss, ratio, KL or weight that counted one would be far off.
GARBAGE = dict(lp=25.0, old=-25.0, ref=40.0, adv=1e3)


def with_garbage(inputs):
    lp, old, mask, adv, ref = inputs
    hole = mask == 0
    lp = lp.masked_fill(hole, GARBAGE["lp"])
    old = old.masked_fill(hole, GARBAGE["old"])
    ref = ref.masked_fill(hole, GARBAGE["ref"])
    if adv.dim() == 2:
        adv = adv.masked_fill(hole, GARBAGE["adv"])
    return lp, old, mask, adv, ref


def make_inputs(gen, mask, seq_shift, tok_noise, adv):
    n, t = mask.shape
    old = -torch.rand(n, t, generator=gen, dtype=torch.float64) * 3 - 0.1
    noise = (torch.rand(n, t, generator=gen, dtype=torch.float64) - 0.5) * 2 * tok_noise
    lp = old + seq_shift.unsqueeze(1) + noise
    lp = torch.where(mask > 0, lp, torch.full_like(lp, -7.0))  # padding values must not matter
    ref = old + (torch.rand(n, t, generator=gen, dtype=torch.float64) - 0.5) * 0.4
    return lp, old, mask, adv, ref


def case(name, kind, lo, hi, clamp, kl_coef, kl_est, inputs):
    lp, old, mask, adv, ref = inputs
    lp = lp.clone().requires_grad_(True)
    terms, stats = seq_terms(kind, lp, old, mask, adv, lo, hi, clamp)
    n = lp.shape[0]
    loss = -sum(terms) / n
    kl = kl_seq = None
    if kl_coef > 0:
        kls = kl_terms(lp, ref, mask, kl_est)
        kl = sum(k.item() for k, _ in kls)
        kl_seq = sum(k.item() for _, k in kls)
        loss = loss + kl_coef * sum(k for k, _ in kls) / n
    loss.backward()
    grad = lp.grad
    assert torch.all(grad[mask == 0] == 0), name  # no gradient reaches a masked position
    return {
        "name": name, "kind": kind, "clip_low": lo, "clip_high": hi, "log_ratio_clamp": clamp, "kl_coef": kl_coef,
        "kl_estimator": kl_est, "logprobs": lp.detach().tolist(), "old_logprobs": old.tolist(),
        "mask": mask.tolist(), "advantages": adv.tolist(), "ref_logprobs": ref.tolist(), "loss": loss.item(),
        "grad": grad.tolist(), "stats": stats, "kl_sum": kl, "kl_seq_sum": kl_seq,
        "seq_ratio_sum": seq_ratio_sum(lp.detach(), old, mask),
    }


def hole_cases(gen):
    """Every loss kind on masks with holes (HOLE_MASKS), without KL and with each KL estimator, per-sequence and
    per-token advantages, both clip sides and the log-ratio clamp; garbage at every masked position."""
    mask = torch.tensor(HOLE_MASKS, dtype=torch.float64)
    n, t = mask.shape
    adv = torch.tensor([1.2, -0.7, 0.9, -1.1, 0.8, -0.5, 0.6, 0.0], dtype=torch.float64)
    # GSPO: sequence shifts past the high bound with A > 0 (rows 0, 4), past the low bound with A < 0 (1, 5), past a
    # bound on the side where min() keeps the unclipped term (3, 6), and inside (2, 7).
    shift = torch.tensor([1e-3, -1e-3, 2e-4, 5e-4, 1e-3, -1e-3, -6e-4, 1e-4], dtype=torch.float64)
    gspo_in = with_garbage(make_inputs(gen, mask, shift, 5e-5, adv))
    grpo_shift = torch.tensor([0.3, -0.3, 0.05, 0.25, 0.3, -0.35, -0.25, 0.1], dtype=torch.float64)
    grpo_in = with_garbage(make_inputs(gen, mask, grpo_shift, 0.15, adv))
    big_in = with_garbage(make_inputs(gen, mask, torch.full((n,), 2.0, dtype=torch.float64), 0.5, adv))
    tok_adv = (torch.rand(n, t, generator=gen, dtype=torch.float64) - 0.5) * 2
    grpo_tok_in = with_garbage((grpo_in[0], grpo_in[1], grpo_in[2], tok_adv, grpo_in[4]))
    cases = []
    for kind, lo, hi, inputs in [("gspo", 3e-4, 4e-4, gspo_in), ("gspo_token", 3e-4, 4e-4, gspo_in),
                                 ("grpo", 0.2, 0.28, grpo_in)]:
        cases.append(case(f"holes_{kind}", kind, lo, hi, 10.0, 0.0, "k3", inputs))
        for est, coef in [("k1", 0.1), ("k3", 0.05)]:
            cases.append(case(f"holes_{kind}_kl_{est}", kind, lo, hi, 10.0, coef, est, inputs))
    cases += [
        case("holes_grpo_per_token_adv_kl_k3", "grpo", 0.2, 0.28, 10.0, 0.05, "k3", grpo_tok_in),
        case("holes_gspo_token_per_token_adv_kl_k1", "gspo_token", 0.2, 0.28, 10.0, 0.1, "k1", grpo_tok_in),
        case("holes_gspo_log_ratio_clamp", "gspo", 0.2, 0.28, 0.5, 0.05, "k3", big_in),
        case("holes_gspo_token_log_ratio_clamp", "gspo_token", 0.2, 0.28, 0.5, 0.0, "k3", big_in),
        case("holes_grpo_log_ratio_clamp", "grpo", 0.2, 0.28, 0.5, 0.1, "k1", big_in),
    ]
    return cases


def advantage_cases():
    rewards = [[1, 0, 0, 1], [0.5, 0.5, 0.5, 0.5], [3, 1, 2, 7], [0, 0, 0, 1]]
    out = []
    for kind in ["group_norm", "no_std", "leave_one_out"]:
        for sample in [False, True]:
            eps = 1e-6
            adv = []
            for g in rewards:
                m = sum(g) / len(g)
                var = sum((x - m) ** 2 for x in g) / (len(g) - 1 if sample else len(g))
                for i, x in enumerate(g):
                    if kind == "group_norm":
                        adv.append((x - m) / (math.sqrt(var) + eps))
                    elif kind == "no_std":
                        adv.append(x - m)
                    else:
                        others = (sum(g) - x) / (len(g) - 1)
                        adv.append(x - others)
            out.append({"kind": kind, "sample_std": sample, "eps": eps, "group_size": 4,
                        "rewards": [x for g in rewards for x in g], "advantages": adv, "zero_variance": 1})
    return out


def scaled_advantage_cases():
    """group_norm with scale_rewards batch (std of every reward) and none (no division), as TRL's scale_rewards."""
    rewards = [[1, 0, 0, 1], [0.5, 0.5, 0.5, 0.5], [3, 1, 2, 7], [0, 0, 0, 1]]
    flat = [x for g in rewards for x in g]
    out = []
    for scale in ["batch", "none"]:
        for sample in [False, True]:
            m_all = sum(flat) / len(flat)
            batch_std = math.sqrt(sum((x - m_all) ** 2 for x in flat) / (len(flat) - 1 if sample else len(flat)))
            adv = []
            for g in rewards:
                m = sum(g) / len(g)
                zero = max(g) == min(g)
                for x in g:
                    a = 0.0 if zero else (x - m) / (batch_std + 1e-6) if scale == "batch" else x - m
                    adv.append(a)
            out.append({"scale": scale, "sample_std": sample, "eps": 1e-6, "group_size": 4, "rewards": flat,
                        "batch_std": batch_std, "advantages": adv})
    return out


def component_advantage_cases():
    """component_norm before_sum: sum_k w_k * group_norm advantage of component k; a group whose summed rewards are
    all equal gets 0."""
    comps = [[1, 0, 0, 1, 1, 1, 1, 1, 0, 1, 0, 0], [0.1, 0.3, 0.2, 0.0, 0.2, 0.2, 0.2, 0.2, 0.5, 0.0, 0.1, 0.4]]
    weights = [1.0, 0.5]
    g_size = 4
    summed = [sum(w * c[i] for w, c in zip(weights, comps)) for i in range(len(comps[0]))]
    adv = []
    for start in range(0, len(summed), g_size):
        group = summed[start:start + g_size]
        zero = max(group) == min(group)
        for i in range(start, start + g_size):
            total = 0.0
            for w, c in zip(weights, comps):
                cg = c[start:start + g_size]
                m = sum(cg) / g_size
                std = math.sqrt(sum((x - m) ** 2 for x in cg) / g_size)
                a = 0.0 if max(cg) == min(cg) else (c[i] - m) / (std + 1e-6)
                total += w * a
            adv.append(0.0 if zero else total)
    return [{"components": comps, "weights": weights, "rewards": summed, "group_size": g_size, "eps": 1e-6,
             "advantages": adv}]


def main():
    gen = torch.Generator().manual_seed(20251120)
    n, t = 8, 7
    mask = prefix_mask(n, t, [7, 3, 1, 5, 7, 2, 1, 6])   # varied lengths, two length-1 responses
    adv = torch.tensor([1.2, -0.7, 0.9, -1.1, 0.0, 0.0, 0.4, -0.3], dtype=torch.float64)  # zero-advantage pair
    # Sequence-level shifts across both clip bounds of GSPO (3e-4 / 4e-4) and inside them.
    shift = torch.tensor([1e-3, -1e-3, 2e-4, 5e-4, -6e-4, 1e-3, -1e-3, 1e-4], dtype=torch.float64)
    gspo_in = make_inputs(gen, mask, shift, 1e-4, adv)
    grpo_shift = torch.tensor([0.3, -0.3, 0.05, 0.25, -0.35, 0.3, -0.25, 0.1], dtype=torch.float64)
    grpo_in = make_inputs(gen, mask, grpo_shift, 0.15, adv)
    big_in = make_inputs(gen, mask, torch.full((n,), 2.0, dtype=torch.float64), 0.5, adv)
    tok_adv = (torch.rand(n, t, generator=gen, dtype=torch.float64) - 0.5) * 2
    grpo_tok_in = (grpo_in[0], grpo_in[1], grpo_in[2], tok_adv, grpo_in[4])
    cases = [
        case("gspo_clipped_both_sides", "gspo", 3e-4, 4e-4, 10.0, 0.0, "k3", gspo_in),
        case("gspo_token_same_inputs", "gspo_token", 3e-4, 4e-4, 10.0, 0.0, "k3", gspo_in),
        case("gspo_wide_clip_unclipped", "gspo", 0.2, 0.2, 10.0, 0.0, "k3", gspo_in),
        case("grpo_clip_higher", "grpo", 0.2, 0.28, 10.0, 0.0, "k3", grpo_in),
        case("grpo_per_token_adv", "grpo", 0.2, 0.28, 10.0, 0.0, "k3", grpo_tok_in),
        case("gspo_token_per_token_adv", "gspo_token", 0.2, 0.28, 10.0, 0.0, "k3", grpo_tok_in),
        case("gspo_kl_k3", "gspo", 3e-4, 4e-4, 10.0, 0.05, "k3", gspo_in),
        case("grpo_kl_k1", "grpo", 0.2, 0.28, 10.0, 0.1, "k1", grpo_in),
        case("gspo_log_ratio_clamp", "gspo", 0.2, 0.28, 0.5, 0.0, "k3", big_in),
        case("grpo_log_ratio_clamp", "grpo", 0.2, 0.28, 0.5, 0.0, "k3", big_in),
    ]
    cases += hole_cases(gen)
    os.makedirs(os.path.dirname(os.path.abspath(sys.argv[1])), exist_ok=True)
    with open(sys.argv[1], "w") as f:
        json.dump({"losses": cases, "advantages": advantage_cases(), "scaled_advantages": scaled_advantage_cases(),
                   "component_advantages": component_advantage_cases()}, f)
    print(f"wrote {len(cases)} loss cases to {sys.argv[1]}")


if __name__ == "__main__":
    main()
