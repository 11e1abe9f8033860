#!/usr/bin/env python3
"""Exports a tiny random causal LM with a byte-level tokenizer that meets gspo's model contract.

    scripts/py scripts/make_tiny_model.py --out models/tiny.pt [--layers 2 --hidden 64 ...]

Byte tokenizer: ids 0..255 are bytes, then <|pad|>, <|bos|>, <|eos|>. Same --seed, same weights.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gspo_model  # noqa: E402

SPECIALS = ["<|pad|>", "<|bos|>", "<|eos|>"]


def byte_tokenizer_spec() -> dict:
    return {"type": "byte", "add_bos": True,
            "special_tokens": {name: 256 + i for i, name in enumerate(SPECIALS)}}


def tiny_config(args) -> dict:
    head_dim = args.hidden // args.heads
    return {
        "architecture": "llama", "vocab_size": 256 + len(SPECIALS), "hidden_size": args.hidden,
        "num_layers": args.layers, "num_heads": args.heads, "num_kv_heads": args.kv_heads, "head_dim": head_dim,
        "intermediate_size": args.intermediate or 4 * args.hidden, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "max_seq_len": args.max_seq_len, "pad_token_id": 256, "bos_token_id": 257, "eos_token_id": 258,
        "tie_word_embeddings": args.tie, "qkv_bias": args.qkv_bias, "qk_norm": args.qk_norm,
        "lm_head_bias": bool(args.prior_text),
    }


def warm_start(model, cfg: dict, args) -> None:
    """Next-token training on the lines of args.warm (batches of 64 lines drawn with the seed), Adam."""
    with open(args.warm, "rb") as f:
        lines = [ln.rstrip(b"\n") for ln in f if ln.strip()]
    if not lines:
        sys.exit(f"--warm {args.warm}: no lines")
    rows = [[cfg["bos_token_id"], *ln, cfg["eos_token_id"]] for ln in lines]
    if max(len(r) for r in rows) > cfg["max_seq_len"]:
        sys.exit(f"--warm {args.warm}: a line is longer than --max-seq-len {cfg['max_seq_len']}")
    gen = torch.Generator().manual_seed(args.seed)
    opt = torch.optim.Adam(model.parameters(), lr=args.warm_lr)
    model.train()
    for step in range(args.warm_steps):
        pick = torch.randint(len(rows), (64,), generator=gen).tolist()
        T = max(len(rows[i]) for i in pick)
        ids = torch.full((64, T), cfg["pad_token_id"], dtype=torch.long)
        mask = torch.zeros((64, T), dtype=torch.long)
        for b, i in enumerate(pick):
            ids[b, :len(rows[i])] = torch.tensor(rows[i])
            mask[b, :len(rows[i])] = 1
        logits = model(ids, mask).float()
        target = ids[:, 1:].masked_fill(mask[:, 1:] == 0, -100)
        loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), target.reshape(-1),
                                                 ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == 0 or (step + 1) % 100 == 0:
            print(f"warm step {step + 1}/{args.warm_steps}: loss {loss.item():.3f}")
    model.eval()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="output .pt path")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2, help="key/value heads (GQA when < heads)")
    p.add_argument("--intermediate", type=int, default=0, help="MLP width; 0 = 4 * hidden")
    p.add_argument("--max-seq-len", type=int, default=256)
    p.add_argument("--tie", action="store_true", help="tie lm_head to the embedding")
    p.add_argument("--qkv-bias", action="store_true", help="Qwen2-style q/k/v bias")
    p.add_argument("--qk-norm", action="store_true", help="Qwen3-style q/k RMSNorm")
    p.add_argument("--init-std", type=float, default=0.02)
    p.add_argument("--prior-text", default="",
                   help="characters whose output logits get --prior-logit added (EOS too), through an lm_head "
                        "bias: a stand-in for a pretrained model that already knows an answer format")
    p.add_argument("--prior-logit", type=float, default=3.0)
    p.add_argument("--warm", default="",
                   help="a text file: before export, next-token training on its lines (each as BOS line EOS), a "
                        "stand-in for pretraining: e.g. a model that has seen tool calls and answers")
    p.add_argument("--warm-steps", type=int, default=300)
    p.add_argument("--warm-lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    if args.hidden % args.heads or args.heads % args.kv_heads:
        p.error("--hidden must be divisible by --heads, and --heads by --kv-heads")

    torch.manual_seed(args.seed)
    cfg = tiny_config(args)
    model = gspo_model.CausalLM(cfg)
    with torch.no_grad():
        for name, prm in model.named_parameters():
            if prm.dim() >= 2:
                prm.normal_(0.0, args.init_std)
            elif "bias" in name:
                prm.normal_(0.0, args.init_std)
        if args.prior_text:
            model.lm_head.bias.zero_()
            for ch in args.prior_text.encode("utf-8"):
                model.lm_head.bias[ch] = args.prior_logit
            model.lm_head.bias[cfg["eos_token_id"]] = args.prior_logit
    if args.warm:
        warm_start(model, cfg, args)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    gspo_model.save_scripted(model, cfg, byte_tokenizer_spec(), "float32", args.out)
    n = sum(p.numel() for p in model.parameters())
    print(f"wrote {args.out}: {n} parameters, {args.layers} layers, vocab {cfg['vocab_size']}")


if __name__ == "__main__":
    main()
