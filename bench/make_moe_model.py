"""A random Qwen3-MoE of a chosen size, exported for gspo (bench/run_ep_memory.sh): a Hugging Face directory with
random weights (every layer MoE, byte tokenizer) through scripts/export_hf.py, as tests/make_test_models.py makes its
tiny one. usage: make_moe_model.py --out FILE.pt [--layers 4 --hidden 256 --experts 64 --moe-intermediate 512 --top-k 4]"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
import make_tiny_model  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--experts", type=int, default=64)
    ap.add_argument("--moe-intermediate", type=int, default=512)
    ap.add_argument("--top-k", type=int, default=4)
    a = ap.parse_args()
    H, I, n, heads = a.hidden, a.moe_intermediate, a.experts, 4
    hd = H // heads
    cfg = {"model_type": "qwen3_moe", "hidden_size": H, "intermediate_size": 4 * H, "moe_intermediate_size": I,
           "num_experts": n, "num_experts_per_tok": a.top_k, "norm_topk_prob": True, "decoder_sparse_step": 1,
           "mlp_only_layers": [], "num_hidden_layers": a.layers, "num_attention_heads": heads,
           "num_key_value_heads": 2, "head_dim": hd, "vocab_size": 300, "max_position_embeddings": 512,
           "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": False, "bos_token_id": 257,
           "eos_token_id": 258}
    g = torch.Generator().manual_seed(5)
    r = lambda *shape: torch.randn(*shape, generator=g) * 0.05  # noqa: E731
    sd = {"model.embed_tokens.weight": r(300, H), "model.norm.weight": torch.ones(H), "lm_head.weight": r(300, H)}
    for i in range(a.layers):
        p = f"model.layers.{i}."
        for name, shape in [("q_proj", (H, H)), ("k_proj", (2 * hd, H)), ("v_proj", (2 * hd, H)), ("o_proj", (H, H))]:
            sd[p + "self_attn." + name + ".weight"] = r(*shape)
        sd[p + "self_attn.q_norm.weight"] = torch.ones(hd)
        sd[p + "self_attn.k_norm.weight"] = torch.ones(hd)
        sd[p + "input_layernorm.weight"] = torch.ones(H)
        sd[p + "post_attention_layernorm.weight"] = torch.ones(H)
        sd[p + "mlp.gate.weight"] = r(n, H) * 20
        for e in range(n):
            for name, shape in [("gate_proj", (I, H)), ("up_proj", (I, H)), ("down_proj", (H, I))]:
                sd[p + f"mlp.experts.{e}.{name}.weight"] = r(*shape)
    with tempfile.TemporaryDirectory() as d:
        json.dump(cfg, open(f"{d}/config.json", "w"))
        torch.save(sd, f"{d}/pytorch_model.bin")
        json.dump(make_tiny_model.byte_tokenizer_spec(), open(f"{d}/gspo_tokenizer.json", "w"))
        subprocess.run([sys.executable, os.path.join(HERE, "..", "scripts", "export_hf.py"), "--hf", d, "--out", a.out,
                        "--max-seq-len", "256"], check=True, stdout=subprocess.DEVNULL)
    experts = a.layers * n * 3 * H * I
    print(f"{a.out}: {sum(t.numel() for t in sd.values()) / 1e6:.1f}M parameters, {experts / 1e6:.1f}M of them experts")


if __name__ == "__main__":
    main()
