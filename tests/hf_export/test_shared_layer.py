"""#71: the model method shared_layer (scripts/gspo_model.py), a decoder layer over responses that share prompts with
each prompt run once and the attention split in two (each prompt causal over itself; each response over its prompt's
real keys and causally its own), against the reference every training pass uses today: layer() over each prompt +
response row on its own (the per-layer method, independent of the split). On the CPU, float32, scripted (TorchScript):

1. Every layer in turn: each response's hidden states and each prompt's equal the rows' within 1e-5 of scale, dense
   (Qwen3-shaped: GQA, q/k norm) and MoE, prompts of different lengths (right-padded), responses of different lengths,
   groups of 3 and of 2.
2. Gradients: of a weighted sum of the outputs, with respect to every parameter and to the inputs (a prompt's input
   gradient is the sum of its rows' prompt parts), within 1e-5 relative.
3. MoE: the experts each token was routed to equal the rows' (routed_layer); given routes are replayed.

Exit 0 when every check holds; prints each check's largest difference.
"""
import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
sys.path.insert(0, HERE)
import gspo_model  # noqa: E402
import make_tiny_model  # noqa: E402

from checks import check, failures  # noqa: E402
from checks import close as close_rel  # noqa: E402


def close(name, a, b, rel=1e-5):
    close_rel(name, a, b, rel)


def model(moe):
    cfg = make_tiny_model.tiny_config(argparse.Namespace(
        hidden=64, heads=4, kv_heads=2, layers=2, intermediate=96, max_seq_len=64, tie=False, qkv_bias=False,
        qk_norm=True, prior_text=""))
    if moe:
        cfg = dict(cfg, moe_layers=[1], num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32)
    torch.manual_seed(3 + int(moe))
    m = gspo_model.CausalLM(cfg).eval()
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.15)
    return torch.jit.script(m)


def run(name, moe):
    lm = model(moe)
    H = 64
    plen = torch.tensor([5, 3])          # K = 2 prompts, P = 5
    group = torch.tensor([0, 0, 0, 1, 1])  # M = 5 responses
    rlen = [4, 2, 3, 4, 1]               # R = 4
    K, P, M, R = 2, 5, 5, 4
    torch.manual_seed(11)
    xp0 = torch.randn(K, P, H)
    xr0 = torch.randn(M, R, H)
    # The rows: response m after its prompt's real tokens, right-padded to P + R.
    W = P + R
    rows = torch.zeros(M, W, H)
    mask = torch.zeros(M, W, dtype=torch.long)
    for m in range(M):
        g, p = group[m].item(), plen[group[m]].item()
        rows[m, :p] = xp0[g, :p]
        rows[m, p:p + rlen[m]] = xr0[m, :rlen[m]]
        mask[m, :p + rlen[m]] = 1
    cos, sin, row_mask = lm.layer_context(mask)
    pmask = (torch.arange(P).view(1, P) < plen.view(K, 1)).long()
    cos_p, sin_p, _ = lm.layer_context(pmask)
    cos_r = torch.stack([cos[m, :, plen[group[m]]:plen[group[m]] + R] for m in range(M)])
    sin_r = torch.stack([sin[m, :, plen[group[m]]:plen[group[m]] + R] for m in range(M)])

    params = [p for p in lm.parameters()]
    weights_r = torch.randn(M, R, H)
    weights_p = torch.randn(K, P, H)

    def loss_of(outs_p, outs_r):
        """A weighted sum over real positions (the same for both paths: prompts' and responses' positions)."""
        total = 0
        for m in range(M):
            total = total + (outs_r[m][:rlen[m]] * weights_r[m, :rlen[m]]).sum()
        for k in range(K):
            total = total + (outs_p[k][:plen[k]] * weights_p[k, :plen[k]]).sum()
        return total

    # Reference: layer() over the rows, layer by layer; the prompt part of each prompt's first row.
    x = rows.clone().requires_grad_(True)
    h = x
    chosen_rows = []
    for i in range(2):
        h, ch = lm.routed_layer(i, h, cos, sin, row_mask, None)
        chosen_rows.append(ch)
    first = [int((group == k).nonzero()[0]) for k in range(K)]
    ref_r = [h[m, plen[group[m]]:plen[group[m]] + R] for m in range(M)]
    ref_p = [h[first[k], :P] for k in range(K)]
    loss_of(ref_p, ref_r).backward()
    ref_grads = [p.grad.clone() if p.grad is not None else None for p in params]  # (embedding, head: none)
    ref_dx = x.grad.clone()
    for p in params:
        p.grad = None

    xp = xp0.clone().requires_grad_(True)
    xr = xr0.clone().requires_grad_(True)
    a, b = xp, xr
    chosen_shared = []
    for i in range(2):
        a, b, cp, cr = lm.shared_layer(i, a, cos_p, sin_p, b, cos_r, sin_r, group, plen, None, None)
        chosen_shared.append((cp, cr))
    for m in range(M):
        close(f"{name}: response {m}'s hidden states", b[m, :rlen[m]].detach(), ref_r[m][:rlen[m]].detach())
    for k in range(K):
        close(f"{name}: prompt {k}'s hidden states", a[k, :plen[k]].detach(), ref_p[k][:plen[k]].detach())
    loss_of([a[k] for k in range(K)], [b[m] for m in range(M)]).backward()
    pairs = [(p.grad, g) for p, g in zip(params, ref_grads) if g is not None]
    check(f"{name}: the same parameters get gradients", len(pairs) > 10 and all(
        (p.grad is None) == (g is None) for p, g in zip(params, ref_grads)), f"{len(pairs)} of {len(params)}")
    worst = max(((a_ - g).norm() / g.norm().clamp_min(1e-30)).item() for a_, g in pairs)
    check(f"{name}: every parameter's gradient", worst <= 1e-5, f"largest relative error {worst:.2e}")
    # Input gradients: a response's from its row; a prompt's summed over its rows' prompt parts.
    close(f"{name}: the responses' input gradients",
          torch.cat([xr.grad[m, :rlen[m]] for m in range(M)]),
          torch.cat([ref_dx[m, plen[group[m]]:plen[group[m]] + rlen[m]] for m in range(M)]))
    want_dp = torch.zeros(K, P, H)
    for m in range(M):
        g = group[m].item()
        want_dp[g, :plen[g]] += ref_dx[m, :plen[g]]
    close(f"{name}: the prompts' input gradients (summed over their rows)",
          torch.cat([xp.grad[k, :plen[k]] for k in range(K)]), torch.cat([want_dp[k, :plen[k]] for k in range(K)]))
    if moe:
        cp, cr = chosen_shared[1]
        rows_chosen = chosen_rows[1]
        same = all(torch.equal(cr[m, :rlen[m]].sort(-1)[0],
                               rows_chosen[m, plen[group[m]]:plen[group[m]] + rlen[m]].sort(-1)[0]) for m in range(M))
        same = same and all(torch.equal(cp[k, :plen[k]].sort(-1)[0], rows_chosen[first[k], :plen[k]].sort(-1)[0])
                            for k in range(K))
        check(f"{name}: each token's experts are the rows'", same)
        # Replay: other experts given are used (the output moves), the recorded ones give the output back.
        with torch.no_grad():
            a1, b1, _, _ = lm.shared_layer(1, xp0, cos_p, sin_p, xr0, cos_r, sin_r, group, plen, None, None)
            a2, b2, _, _ = lm.shared_layer(1, xp0, cos_p, sin_p, xr0, cos_r, sin_r, group, plen,
                                           lm.shared_layer(1, xp0, cos_p, sin_p, xr0, cos_r, sin_r, group, plen,
                                                           None, None)[2],
                                           lm.shared_layer(1, xp0, cos_p, sin_p, xr0, cos_r, sin_r, group, plen,
                                                           None, None)[3])
            close(f"{name}: its own experts replayed give the same output", b2, b1)
            moved = (lm.shared_layer(1, xp0, cos_p, sin_p, xr0, cos_r, sin_r, group, plen, None, None)[3] + 1) % 4
            _, b3, _, _ = lm.shared_layer(1, xp0, cos_p, sin_p, xr0, cos_r, sin_r, group, plen, None, moved)
            d = (b3 - b1).abs().max().item()
            check(f"{name}: other experts replayed move the output", d > 1e-3, f"max |diff| {d:.2e}")


def main():
    run("dense", False)
    run("MoE", True)
    print(f"shared_layer: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
