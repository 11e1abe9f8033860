"""#53 item 1: the slot methods of slot_api 3 (sequence-major cache, varlen attention on CUDA) against two independent
references, on the CPU:

1. tests/data/slot_api2_head_major.pt, an export made by scripts/gspo_model.py before this change (slot_api 2, the
   head-major cache [L, 2, S, Hkv, C, D], masked SDPA): the same weights loaded into today's CausalLM must give the
   same logits from prefill_slots / copy_slots / decode_slots / append_slots at rows of different lengths (tolerance
   1e-5, float32, different kernels' summation order).
2. The flash path's index arithmetic (varlen metadata, key offsets of the sequence-major cache, bottom-right causal
   alignment of appended tokens): the eager model with varlen_anywhere = True, its varlen_attention replaced by a
   reference written from FlashAttention's documented semantics (a plain softmax per sequence over keys
   [cu_k[b], cu_k[b] + used_k[b])), must give the same logits as the masked path (1e-5). The kernel itself is checked
   against this path on a GPU (tests/cuda/test_cuda.cpp, "varlen").

Exit 0 when every check holds; prints each check's largest difference.
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import gspo_model  # noqa: E402

OLD = os.path.join(HERE, "..", "data", "slot_api2_head_major.pt")
TOL = 1e-5
failures = []


def check(name, a, b, tol=TOL):
    d = (a.float() - b.float()).abs().max().item()
    ok = d <= tol
    print(f"{'ok  ' if ok else 'FAIL'} {name}: max |diff| {d:.2e} (tolerance {tol:.0e})")
    if not ok:
        failures.append(name)


def reference_varlen(q, k, v, cu_q, cu_k, used_k, max_q, max_k, causal):
    """FlashAttention-2 varlen forward by definition: sequence b's queries q[cu_q[b]:cu_q[b+1]], its keys
    k[cu_k[b] : cu_k[b] + n_k] with n_k = used_k[b] (or cu_k[b+1] - cu_k[b]); causal: query i of n_q sees keys
    j <= n_k - n_q + i. Grouped-query heads: query head h reads kv head h // (heads / kv_heads)."""
    heads, kv_heads, dim = q.shape[1], k.shape[1], q.shape[2]
    out = torch.zeros_like(q)
    rows = cu_q.numel() - 1
    assert cu_q.dtype == torch.int32 and cu_k.dtype == torch.int32 and cu_q.is_contiguous() and cu_k.is_contiguous()
    assert used_k is None or (used_k.dtype == torch.int32 and used_k.numel() == rows and used_k.is_contiguous())
    assert cu_k.numel() == rows + 1 and k.shape[0] == v.shape[0]
    for b in range(rows):
        q0, q1 = int(cu_q[b]), int(cu_q[b + 1])
        n_q = q1 - q0
        assert n_q <= max_q
        k0 = int(cu_k[b])
        n_k = int(used_k[b]) if used_k is not None else int(cu_k[b + 1]) - k0
        assert n_k <= max_k and k0 + n_k <= k.shape[0], (b, k0, n_k, max_k, k.shape)
        qs = q[q0:q1].float().transpose(0, 1)  # [heads, n_q, D]
        ks = k[k0:k0 + n_k].float().transpose(0, 1).repeat_interleave(heads // kv_heads, 0)
        vs = v[k0:k0 + n_k].float().transpose(0, 1).repeat_interleave(heads // kv_heads, 0)
        s = qs @ ks.transpose(1, 2) / dim ** 0.5
        if causal:
            i = torch.arange(n_q).view(n_q, 1)
            j = torch.arange(n_k).view(1, n_k)
            s = s.masked_fill(j > n_k - n_q + i, float("-inf"))
        out[q0:q1] = (s.softmax(-1) @ vs).transpose(0, 1).to(q.dtype)
    return out


def session(model, rows=4, columns=40):
    """One slot session at rows of different lengths: two prompts prefilled (one into two slots), one copied, decode
    steps with every slot at its own column, then two tokens appended into two slots and more decode steps. Returns
    every logits tensor along the way."""
    torch.manual_seed(7)
    g = torch.Generator().manual_seed(3)
    cache = model.init_cache(rows, columns)
    cache.normal_(generator=g)  # noise: nothing may read a column that was never written
    prompts = torch.randint(3, 200, (2, 9), generator=g)
    lengths = torch.tensor([9, 5])
    outs = [model.prefill_slots(prompts, lengths, cache, torch.tensor([0, 1, 2]), torch.tensor([0, 1, 1]))]
    model.copy_slots(cache, torch.tensor([0]), torch.tensor([3]), 9)
    cols = torch.tensor([9, 5, 5, 9])
    for step in range(6):
        ids = torch.randint(3, 200, (rows, 1), generator=g)
        width = int(cols.max()) + 1
        outs.append(model.decode_slots(ids, cache, cols, width))
        cols = cols + 1
    # the first two slots only (rows kept in front), then appends of 3 tokens (row 2's are 2 real + 1 padding)
    outs.append(model.decode_slots(torch.randint(3, 200, (2, 1), generator=g), cache, cols[:2], int(cols[:2].max()) + 1))
    cols[:2] += 1
    app = torch.randint(3, 200, (2, 3), generator=g)
    which = torch.tensor([1, 2])
    width = int((cols[which] + 3).max())
    outs.append(model.append_slots(app, torch.tensor([3, 2]), cache, which, cols[which], width))
    cols[1] += 3
    cols[2] += 2
    for step in range(3):
        ids = torch.randint(3, 200, (rows, 1), generator=g)
        outs.append(model.decode_slots(ids, cache, cols, int(cols.max()) + 1))
        cols = cols + 1
    return outs


def static_session(model):
    """The required cache methods on the same cache layout: prefill of left-padded rows, decode steps, decode_static at
    a fixed position, reorder_cache."""
    g = torch.Generator().manual_seed(5)
    ids = torch.randint(3, 200, (3, 12), generator=g)
    mask = torch.ones(3, 12, dtype=torch.long)
    mask[1, :4] = 0
    cache = model.init_cache(3, 12)
    outs = [model.prefill(ids[:, :8], mask[:, :8], cache)]
    for t in range(8, 10):
        outs.append(model.decode(ids[:, t:t + 1], mask[:, :t + 1], cache, t))
    cache = model.reorder_cache(cache, torch.tensor([2, 0]))
    full = torch.zeros(2, 12, dtype=torch.long)
    full[:, :11] = mask[[2, 0], :11]
    outs.append(model.decode_static(ids[[2, 0], 10:11], full, cache, torch.tensor([10])))
    return outs


def main():
    old = torch.jit.load(OLD)
    assert old.slot_api() == 2, old.slot_api()
    cfg = {"vocab_size": old.embed_tokens.weight.shape[0], "hidden_size": old.embed_tokens.weight.shape[1],
           "num_layers": 2, "num_heads": 4, "num_kv_heads": 2, "head_dim": 8, "intermediate_size":
               old.state_dict()["layers.0.mlp.gate_proj.weight"].shape[0], "rms_norm_eps": 1e-5,  # scripts/make_tiny_model.py made it (not in the manifest)
           "rope_theta": 10000.0, "max_seq_len": old.cos_table.shape[0]}
    new = gspo_model.CausalLM(cfg).eval()
    missing = new.load_state_dict({k: v for k, v in old.state_dict().items()}, strict=False)
    assert not missing.missing_keys, missing
    assert torch.equal(new.cos_table, old.cos_table), "config mismatch: rope tables differ"
    scripted = torch.jit.script(new)
    assert scripted.slot_api() == 3
    with torch.no_grad():
        ref = session(old)
        # the head-major cache of the old export and the sequence-major one of today's hold the same numbers
        assert list(old.init_cache(3, 7).shape) == [2, 2, 3, 2, 7, 8]
        assert list(scripted.init_cache(3, 7).shape) == [2, 2, 3, 7, 2, 8]
        for name, model in [("scripted", scripted), ("eager", new)]:
            got = session(model)
            for i, (a, b) in enumerate(zip(got, ref)):
                check(f"{name} slot_api 3 vs the slot_api 2 export, call {i}", a, b)
            for i, (a, b) in enumerate(zip(static_session(model), static_session(old))):
                check(f"{name} prefill/decode/decode_static/reorder_cache vs the slot_api 2 export, call {i}", a, b)
        # the varlen path (CUDA's) on the CPU through the reference kernel
        gspo_model.varlen_attention = reference_varlen
        new.varlen_anywhere = True
        got = session(new)
        for i, (a, b) in enumerate(zip(got, ref)):
            check(f"varlen path (reference kernel) vs the slot_api 2 export, call {i}", a, b)
        new.varlen_anywhere = False
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    print("all slot-layout checks passed")


if __name__ == "__main__":
    main()
