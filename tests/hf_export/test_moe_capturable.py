"""#70 item 4: the MoE feed-forward that a CUDA decode step can be captured with (scripts/gspo_model.py,
SparseMoE.dense), on the CPU, against the routed path every CPU pass runs (SparseMoE.sparse) as the reference:

1. The same outputs (float32, 1e-6 of the output's scale: only the matmuls' blocking differs; an unchosen expert adds an
   exact zero), with the router's own top-k and with given routes (Routing Replay), norm_topk_prob on and off, one
   token (most experts unchosen) to 40 (experts shared), and the scripted module (TorchScript) the same as eager.
2. Nothing read back to the host: on the meta device (shapes without data) the dense path runs and yields the
   output's shape, and so does the expert load (scatter_add), while the routed path cannot (its per-expert counts are
   data); this is what lets the pass be captured in a CUDA graph. The capture itself, and graphed MoE samples equal
   to eager ones, run on a GPU (tests/cuda/test_cuda.cpp, "MoE decode").
3. Which path runs: routed on the CPU whatever the size, and with gradients; the export's manifest says the size
   below which CUDA passes are dense (moe_capture_rows) for MoE models only.

Exit 0 when every check holds; prints each check's largest difference.
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
sys.path.insert(0, HERE)
import gspo_model  # noqa: E402

from checks import check, failures  # noqa: E402
from checks import close as close_rel  # noqa: E402


def close(name, a, b, rel=1e-6):
    close_rel(name, a, b, rel)


def moe(experts, top_k, norm):
    torch.manual_seed(7 + experts + top_k + int(norm))
    m = gspo_model.SparseMoE(32, 48, experts, top_k, norm)
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.3)
    return m.eval()


def routing(m, flat, routes=None):
    probs = torch.softmax(m.gate(flat).float(), dim=-1)
    if routes is None:
        weights, chosen = torch.topk(probs, m.top_k, dim=-1)
    else:
        chosen = routes
        weights = probs.gather(-1, chosen)
    if m.norm_topk_prob:
        weights = weights / weights.sum(-1, keepdim=True)
    return chosen, weights.to(flat.dtype)


def main():
    for experts, top_k, norm in ((8, 2, True), (8, 3, False), (4, 1, True)):
        m = moe(experts, top_k, norm)
        scripted = torch.jit.script(m)
        for tokens in (1, 5, 40):
            name = f"E {experts} top-{top_k} norm {norm}, {tokens} tokens"
            x = torch.randn(tokens, 32)
            with torch.no_grad():
                chosen, w = routing(m, x)
                close(f"{name}: dense = routed", m.dense(x, chosen, w), m.sparse(x, chosen, w))
                close(f"{name}: scripted dense = eager routed", scripted.dense(x, chosen, w), m.sparse(x, chosen, w))
                # given routes (Routing Replay): the dense pass follows them too
                routes = torch.randint(0, experts, (tokens, 1)).repeat(1, top_k)
                routes = (routes + torch.arange(top_k)) % experts  # top_k distinct experts a token
                rc, rw = routing(m, x, routes)
                close(f"{name}: dense = routed with given routes", m.dense(x, rc, rw), m.sparse(x, rc, rw))

    # 2. On the meta device: no data, only shapes. The dense path and the expert load need none; the routed path does.
    m = moe(8, 2, True)
    meta = gspo_model.SparseMoE(32, 48, 8, 2, True).to("meta")
    x = torch.empty(16, 32, device="meta")
    chosen = torch.empty(16, 2, dtype=torch.long, device="meta")
    w = torch.empty(16, 2, device="meta")
    try:
        out = meta.dense(x, chosen, w)
        check("meta device: the dense pass needs no data (nothing read back)", out.shape == (16, 32) and out.is_meta,
              f"output {tuple(out.shape)}")
    except Exception as e:  # noqa: BLE001
        check("meta device: the dense pass needs no data (nothing read back)", False, repr(e)[:200])
    try:
        load = torch.zeros(8, device="meta").scatter_add(0, chosen.reshape(-1), torch.ones(32, device="meta"))
        check("meta device: the expert load (scatter_add) needs no data", load.shape == (8,))
    except Exception as e:  # noqa: BLE001
        check("meta device: the expert load (scatter_add) needs no data", False, repr(e)[:200])
    try:
        meta.sparse(x, chosen, w)
        check("meta device: the routed pass reads its counts (the reference is data-dependent)", False, "it ran")
    except Exception as e:  # noqa: BLE001
        check("meta device: the routed pass reads its counts (the reference is data-dependent)", True,
              type(e).__name__)

    # 3. Which path routed() takes on the CPU: the routed one, with gradients or without, whatever the size (the
    # outputs equal sparse() bit for bit), and the expert load it reports.
    x = torch.randn(8, 32)
    with torch.no_grad():
        out, chosen = m.routed(x, None)
        c, w = routing(m, x)
        check("CPU without gradients: routed() runs the routed path (bit for bit)", torch.equal(out, m.sparse(x, c, w)))
        want = torch.bincount(chosen.reshape(-1), minlength=8).float() / chosen.numel()
        check("the expert load equals bincount's", torch.equal(m.last_load, want))
    out, _ = m.routed(x, None)
    check("CPU with gradients: the routed path", torch.allclose(out, m.sparse(x, c, w), atol=0, rtol=0))
    cfg = dict(vocab_size=64, max_seq_len=64, bos_token_id=1, eos_token_id=2, pad_token_id=0, num_layers=2,
               hidden_size=32, num_heads=2, num_kv_heads=1, head_dim=16, intermediate_size=48)
    tok = {"type": "bytes"}
    dense_manifest = gspo_model.manifest_for(cfg, tok, "float32")
    moe_cfg = dict(cfg, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=24, moe_layers=[1])
    moe_manifest = gspo_model.manifest_for(moe_cfg, tok, "float32")
    check("the manifest of an MoE export says moe_capture_rows",
          moe_manifest.get("moe_capture_rows") == gspo_model.MOE_CAPTURE_ROWS, str(moe_manifest.get("moe_capture_rows")))
    check("a dense export's manifest does not", "moe_capture_rows" not in dense_manifest)

    print(f"MoE capturable path: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
