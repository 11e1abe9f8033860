#!/usr/bin/env python3
"""Routing Replay against transformers: an exported Qwen3-MoE run through gspo's per-layer routing methods with
given experts (routed_layer(i, ..., routes)) must give the logits of transformers' Qwen3MoeForCausalLM whose routers
are made to pick the same experts, with gating weights taken from the router's softmax at those experts and
renormalised (the GSPO paper's Routing Replay; verl's R2). The reference's experts, attention and norms are
transformers' own code; only the expert choice is forced. Also: replaying the model's own choice gives transformers'
plain logits, and other experts change them.

usage: test_routing_replay.py --work DIR    exit 0 when every check holds (tolerance 1e-4 of the largest logit)"""
import argparse
import json
import os
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "..", "..", "scripts")
sys.path.insert(0, SCRIPTS)
import make_tiny_model  # noqa: E402

TOP_K, EXPERTS, LAYERS = 2, 8, 3


def hf_model(d):
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM
    torch.manual_seed(3)
    cfg = Qwen3MoeConfig(vocab_size=259, hidden_size=32, intermediate_size=64, moe_intermediate_size=24,
                         num_hidden_layers=LAYERS, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                         num_experts=EXPERTS, num_experts_per_tok=TOP_K, norm_topk_prob=True, decoder_sparse_step=1,
                         mlp_only_layers=[1], max_position_embeddings=128, tie_word_embeddings=False,
                         bos_token_id=257, eos_token_id=258, pad_token_id=256, initializer_range=0.1)
    model = Qwen3MoeForCausalLM(cfg).eval()
    model.save_pretrained(d, safe_serialization=True)
    json.dump(make_tiny_model.byte_tokenizer_spec(), open(os.path.join(d, "gspo_tokenizer.json"), "w"))
    return model


def forced_router(router, routes):
    """The router's forward, with the experts of each token given: softmax over all experts in float32, the
    probabilities at the given experts, renormalised, in the logits' dtype (what Qwen3MoeTopKRouter does with its own
    top-k)."""
    def forward(hidden_states):
        hidden_states = hidden_states.reshape(-1, router.hidden_dim)
        logits = torch.nn.functional.linear(hidden_states, router.weight)
        probs = torch.softmax(logits, dtype=torch.float, dim=-1)
        idx = routes.reshape(-1, TOP_K)
        weights = probs.gather(-1, idx)
        weights = weights / weights.sum(-1, keepdim=True)
        return logits, weights.to(logits.dtype), idx
    return forward


def gspo_logits(policy, ids, routes):
    """embed -> routed_layer(i, routes[i]) -> final_norm -> head; also the experts each MoE layer reported."""
    mask = torch.ones_like(ids)
    cos, sin, m = policy.layer_context(mask)
    x = policy.embed(ids)
    used = {}
    for i in range(policy.num_decoder_layers()):
        x, chosen = policy.routed_layer(i, x, cos, sin, m, routes.get(i))
        if chosen.numel():
            used[i] = chosen
    bias = policy.head_bias()
    logits = torch.nn.functional.linear(policy.final_norm(x), policy.head_weight(), bias)
    return logits, used


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--work", required=True)
    a = p.parse_args()
    d = os.path.join(a.work, "qwen3_moe_hf")
    os.makedirs(d, exist_ok=True)
    hf = hf_model(d)
    out = os.path.join(a.work, "qwen3_moe.pt")
    subprocess.run([sys.executable, os.path.join(SCRIPTS, "export_hf.py"), "--hf", d, "--out", out,
                    "--max-seq-len", "128"], check=True, stdout=subprocess.DEVNULL)
    policy = torch.jit.load(out)
    moe = list(policy.moe_layers())
    failures = []
    if moe != [0, 2]:
        failures.append(f"moe_layers() is {moe}, the config's MoE layers are [0, 2]")

    ids = torch.randint(0, 256, (2, 12), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        plain_hf = hf(ids).logits
        own, own_routes = gspo_logits(policy, ids, {})
        scale = max(1.0, plain_hf.abs().max().item())
        tol = 1e-4 * scale
        checks = [("no routes given vs transformers", (own - plain_hf).abs().max().item(), "<=")]
        replayed, _ = gspo_logits(policy, ids, own_routes)
        checks.append(("own experts replayed vs no routes (bit for bit)", (replayed - own).abs().max().item(), "=="))
        # Other experts: k distinct experts per token, drawn at random.
        g = torch.Generator().manual_seed(9)
        other = {i: torch.stack([torch.randperm(EXPERTS, generator=g)[:TOP_K] for _ in range(ids.numel())])
                 .view(ids.shape[0], ids.shape[1], TOP_K) for i in moe}
        for i in moe:
            hf.model.layers[i].mlp.gate.forward = forced_router(hf.model.layers[i].mlp.gate, other[i])
        forced_hf = hf(ids).logits
        moved, used = gspo_logits(policy, ids, other)
        checks.append(("other experts replayed vs transformers forced to them", (moved - forced_hf).abs().max().item(),
                       "<="))
        change = (moved - own).abs().max().item()
    for name, diff, how in checks:
        ok = diff == 0 if how == "==" else diff <= tol
        print(f"{'ok  ' if ok else 'FAIL'} {name}: max |diff| {diff:.3e} (tolerance {'0' if how == '==' else f'{tol:.1e}'})")
        if not ok:
            failures.append(name)
    print(f"{'ok  ' if change > 100 * tol else 'FAIL'} other experts change the logits by {change:.3e}")
    if change <= 100 * tol:
        failures.append("other experts do not change the logits")
    if any(not torch.equal(used[i], other[i]) for i in moe):
        failures.append("routed_layer does not report the experts it was given")
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print("routing replay matches transformers with forced routing")
    return 0


if __name__ == "__main__":
    sys.exit(main())
