#!/usr/bin/env python3
"""Converts a llama2.c checkpoint (legacy v0 .bin) and its tokenizer .bin into a Hugging Face Llama directory
(config.json, pytorch_model.bin) plus gspo_tokenizer.json (a "pieces" tokenizer), ready for export_hf.py.

    scripts/py scripts/convert_llama2c.py --bin stories260K.bin --tokenizer tok512.bin --out DIR

llama2.c rotates adjacent pairs of each head (interleaved RoPE); Hugging Face Llama rotates halves. As in Hugging
Face's own Llama converter, wq and wk rows are permuted so the two conventions give identical attention.
"""
import argparse
import json
import os
import struct

import torch


def permute(w, n_heads):
    out_dim, in_dim = w.shape
    return w.view(n_heads, out_dim // n_heads // 2, 2, in_dim).transpose(1, 2).reshape(out_dim, in_dim)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True)
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    raw = open(a.bin, "rb").read()
    dim, hidden, layers, heads, kv_heads, vocab, seq_len = struct.unpack("<7i", raw[:28])
    tied = vocab > 0
    vocab = abs(vocab)
    floats = torch.frombuffer(bytearray(raw[28:]), dtype=torch.float32)
    head = dim // heads
    kv_dim = dim * kv_heads // heads
    off = 0

    def take(*shape):
        nonlocal off
        n = 1
        for s in shape:
            n *= s
        t = floats[off:off + n].reshape(shape).clone()
        off += n
        return t

    emb = take(vocab, dim)
    rms_att, wq, wk = take(layers, dim), take(layers, dim, dim), take(layers, kv_dim, dim)
    wv, wo, rms_ffn = take(layers, kv_dim, dim), take(layers, dim, dim), take(layers, dim)
    w1, w2, w3 = take(layers, hidden, dim), take(layers, dim, hidden), take(layers, hidden, dim)
    rms_final = take(dim)
    take(seq_len, head // 2)  # freq_cis_real (unused)
    take(seq_len, head // 2)  # freq_cis_imag (unused)
    sd = {"model.embed_tokens.weight": emb, "model.norm.weight": rms_final}
    for i in range(layers):
        pre = f"model.layers.{i}."
        sd[pre + "input_layernorm.weight"] = rms_att[i]
        sd[pre + "self_attn.q_proj.weight"] = permute(wq[i], heads)
        sd[pre + "self_attn.k_proj.weight"] = permute(wk[i], kv_heads)
        sd[pre + "self_attn.v_proj.weight"] = wv[i]
        sd[pre + "self_attn.o_proj.weight"] = wo[i]
        sd[pre + "post_attention_layernorm.weight"] = rms_ffn[i]
        sd[pre + "mlp.gate_proj.weight"] = w1[i]
        sd[pre + "mlp.down_proj.weight"] = w2[i]
        sd[pre + "mlp.up_proj.weight"] = w3[i]
    sd["lm_head.weight"] = emb if tied else take(vocab, dim)
    os.makedirs(a.out, exist_ok=True)
    torch.save(sd, os.path.join(a.out, "pytorch_model.bin"))
    config = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": dim,
              "intermediate_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
              "num_key_value_heads": kv_heads, "vocab_size": vocab, "max_position_embeddings": seq_len,
              "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": tied, "bos_token_id": 1,
              "eos_token_id": 2, "hidden_act": "silu"}
    json.dump(config, open(os.path.join(a.out, "config.json"), "w"), indent=1)
    # Tokenizer: llama2.c format (max_token_length, then per token: float score, int length, bytes).
    t = open(a.tokenizer, "rb").read()
    pos = 4
    pieces, scores = [], []
    for _ in range(vocab):
        score, n = struct.unpack("<fi", t[pos:pos + 8])
        pos += 8
        pieces.append(t[pos:pos + n].decode("utf-8", "replace"))
        pos += n
        scores.append(score)
    spec = {"type": "pieces", "pieces": pieces, "scores": scores, "bos": 1, "eos": 2, "add_bos": True}
    json.dump(spec, open(os.path.join(a.out, "gspo_tokenizer.json"), "w"))
    print(f"wrote {a.out}: llama {layers} layers, dim {dim}, heads {heads}/{kv_heads}, vocab {vocab}, tied {tied}")


if __name__ == "__main__":
    main()
