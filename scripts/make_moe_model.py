#!/usr/bin/env python3
"""A small random Qwen3-MoE policy for the MoE experiment (docs/gspo-vs-grpo.md, "MoE: GSPO, GRPO and Routing Replay").

transformers builds and initialises Qwen3MoeForCausalLM (its own init) and saves it as a Hugging Face directory; the
directory goes through export_hf.py's conversion (config and weights, as `export_hf.py --hf DIR` reads them), the
converted model is checked against transformers' logits, and then gets the demo's output prior (an lm_head bias on
the digits and EOS, as make_tiny_model.py --prior-text) so the arithmetic task gives reward from the first steps. A
Qwen3-MoE has no lm_head bias: this is the one change to the architecture, and it sits outside the MoE layers.

    scripts/py scripts/make_moe_model.py --out models/moe_demo.pt [--layers 4 --experts 16 --top-k 2 --seed 0]
"""
import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import export_hf  # noqa: E402
import gspo_model  # noqa: E402
import make_tiny_model  # noqa: E402


def hf_model(a):
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM
    torch.manual_seed(a.seed)
    specials = make_tiny_model.byte_tokenizer_spec()["special_tokens"]
    cfg = Qwen3MoeConfig(
        vocab_size=256 + len(specials), hidden_size=a.hidden, intermediate_size=4 * a.hidden,
        moe_intermediate_size=a.moe_intermediate, num_hidden_layers=a.layers, num_attention_heads=a.heads,
        num_key_value_heads=a.kv_heads, head_dim=a.hidden // a.heads, num_experts=a.experts,
        num_experts_per_tok=a.top_k, norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
        max_position_embeddings=a.max_seq_len, rms_norm_eps=1e-6, rope_theta=10000.0, tie_word_embeddings=False,
        pad_token_id=specials["<|pad|>"], bos_token_id=specials["<|bos|>"], eos_token_id=specials["<|eos|>"],
        initializer_range=a.init_std)
    return Qwen3MoeForCausalLM(cfg).eval()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--hf-dir", default="", help="where the Hugging Face directory goes (default: OUT without .pt + _hf)")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--experts", type=int, default=16)
    p.add_argument("--top-k", type=int, default=2)
    p.add_argument("--moe-intermediate", type=int, default=64)
    p.add_argument("--init-std", type=float, default=0.02, help="transformers' initializer_range")
    p.add_argument("--max-seq-len", type=int, default=256)
    p.add_argument("--prior-text", default="0123456789")
    p.add_argument("--prior-logit", type=float, default=3.0)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    hf_dir = a.hf_dir or (a.out[:-3] if a.out.endswith(".pt") else a.out) + "_hf"

    model = hf_model(a)
    model.save_pretrained(hf_dir, safe_serialization=True)
    spec = make_tiny_model.byte_tokenizer_spec()
    json.dump(spec, open(os.path.join(hf_dir, "gspo_tokenizer.json"), "w"))

    hf_cfg = json.load(open(os.path.join(hf_dir, "config.json")))
    cfg = export_hf.gspo_config(hf_cfg, a.max_seq_len)
    sd = {k[len("model."):] if k.startswith("model.") else k: v for k, v in export_hf.load_weights(hf_dir).items()}
    ours = gspo_model.CausalLM(cfg)
    missing, unused = ours.load_state_dict(sd, strict=False)
    missing = [k for k in missing if not k.endswith(("cos_table", "sin_table"))]
    if missing or unused:
        sys.exit(f"{hf_dir}: weights missing {missing[:5]}, unused {unused[:5]}")
    ids = torch.randint(0, 256, (2, 24), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = model(ids).logits
        got = ours.eval()(ids, torch.ones_like(ids))
    diff = (want - got).abs().max().item()
    if diff > 1e-4 * max(1.0, want.abs().max().item()):
        sys.exit(f"the exported model disagrees with transformers' Qwen3MoeForCausalLM by {diff}")

    cfg["lm_head_bias"] = True
    policy = gspo_model.CausalLM(cfg)
    state = ours.state_dict()
    state["lm_head.bias"] = torch.zeros(cfg["vocab_size"])
    for ch in a.prior_text.encode("utf-8"):
        state["lm_head.bias"][ch] = a.prior_logit
    state["lm_head.bias"][cfg["eos_token_id"]] = a.prior_logit
    policy.load_state_dict(state)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    gspo_model.save_scripted(policy.eval(), cfg, spec, "float32", a.out)
    n = sum(t.numel() for t in policy.parameters())
    print(f"wrote {a.out}: qwen3_moe, {n} parameters, {a.layers} layers x {a.experts} experts (top-{a.top_k}); "
          f"matches transformers within {diff:.2e}; prior logit {a.prior_logit} on {a.prior_text!r} and EOS")


if __name__ == "__main__":
    main()
