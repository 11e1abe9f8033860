"""One decoder layer of a Qwen3-shaped model (hidden 256, 8 query and 4 KV heads of 32, q/k norms, SwiGLU 768), three
ways over the same rows, prompt 1,024 and G = 16 responses of 128 (#71; docs/performance.md, "Shared prompts"): layer()
over the 16 unshared rows, layer() over the packed row under the tree mask (what train/shared_prefix.h runs today), and
shared_layer (the attention split). Each timed without and with gradients, the mean of 3 after a warm-up.

    scripts/py bench/shared_layer_timing.py      # from the repository root
"""
import argparse, sys, time, torch
sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__file__), "..", "scripts"))
import gspo_model, make_tiny_model
cfg = make_tiny_model.tiny_config(argparse.Namespace(hidden=256, heads=8, kv_heads=4, layers=1, intermediate=768,
      max_seq_len=2048, tie=True, qkv_bias=False, qk_norm=True, prior_text=""))
torch.manual_seed(0)
lm = torch.jit.script(gspo_model.CausalLM(cfg).eval())
P, R, G, H = 1024, 128, 16, 256
xp = torch.randn(1, P, H); xr = torch.randn(G, R, H)
rows = torch.cat([xp.expand(G, P, H), xr], 1)
mask = torch.ones(G, P + R, dtype=torch.long)
cos, sin, m = lm.layer_context(mask)
cos_p, sin_p, _ = lm.layer_context(torch.ones(1, P, dtype=torch.long))
cos_r, sin_r = cos[:, :, P:], sin[:, :, P:]
group = torch.zeros(G, dtype=torch.long); plen = torch.tensor([P])
L = P + G * R
seg = torch.zeros(L, dtype=torch.long); seg[P:] = torch.arange(G).repeat_interleave(R) + 1
qi = torch.arange(L).view(L, 1); ki = torch.arange(L).view(1, L)
tree = (((ki <= qi) & ((seg.view(1, L) == 0) | (seg.view(1, L) == seg.view(L, 1)))) | (ki == qi)).view(1, 1, L, L)
packed = torch.cat([xp[0], xr.reshape(-1, H)]).unsqueeze(0)
pos = torch.cat([torch.arange(P), (P + torch.arange(R)).repeat(G)])
cos_k = cos[0, 0][torch.clamp(pos, max=P + R - 1)].view(1, 1, L, -1); sin_k = sin[0, 0][torch.clamp(pos, max=P + R - 1)].view(1, 1, L, -1)
def t(f, grad, n=3):
    def once():
        with torch.set_grad_enabled(grad):
            out = f()
            if grad: sum(o.sum() for o in out).backward()
    once(); s = time.time()
    for _ in range(n): once()
    return (time.time() - s) / n
for grad in (False, True):
    rg = lambda x: x.clone().requires_grad_(grad)
    a = t(lambda: (lm.layer(0, rg(rows), cos, sin, m),), grad)
    b = t(lambda: (lm.layer(0, rg(packed), cos_k, sin_k, tree),), grad)
    c = t(lambda: lm.shared_layer(0, rg(xp), cos_p, sin_p, rg(xr), cos_r, sin_r, group, plen, None, None)[:2], grad)
    print(f"{'fwd+bwd' if grad else 'no grad'}: unshared rows {a:.3f} s, packed + tree mask {b:.3f} s ({a/b:.2f}x), "
          f"split (shared_layer) {c:.3f} s ({a/c:.2f}x)")
