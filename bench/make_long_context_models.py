#!/usr/bin/env python3
"""The models of bench/run_long_context.sh (issue #22's long-context table), random-initialised, nothing downloaded.

    scripts/py bench/make_long_context_models.py --out DIR [--max-seq-len 16640]

Writes
  DIR/byte4x512.pt         4 layers, 512 wide, 8 heads (4 KV), byte vocabulary: scripts/gspo_model.py as it is now
  DIR/byte4x512_before.pt  the same weights in the architecture this project shipped before the change (matmul +
                           softmax attention, no per-layer methods: scripts/gspo_model.py at commit BEFORE, read
                           with git show), the 'before' column of the table
  DIR/qwen3v.pt            a 2-layer Qwen3-shaped model with the real 151,936-entry vocabulary (hidden 256, 4 heads,
                           2 KV heads of 64, tied embeddings), made with transformers' Qwen3 classes from a config
                           and exported by scripts/export_hf.py with ../shared's Qwen3 tokenizer
  DIR/qwen3v_before.pt     the same weights in the earlier architecture
"""
import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
BEFORE = "63f69b2"  # the last commit with matmul + softmax attention and no per-layer methods


def before_module(work: str):
    """scripts/gspo_model.py as of BEFORE, imported under another name."""
    path = os.path.join(work, "gspo_model_before.py")
    src = subprocess.run(["git", "-C", ROOT, "show", f"{BEFORE}:scripts/gspo_model.py"], check=True,
                         capture_output=True, text=True).stdout
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location("gspo_model_before", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def export_before(now_pt: str, out_pt: str, old) -> None:
    """The weights, manifest and tokenizer of `now_pt` in the earlier architecture."""
    extra = {"gspo_manifest.json": "", "gspo_tokenizer.json": ""}
    scripted = torch.jit.load(now_pt, _extra_files=extra)
    cfg = json.loads(open(now_pt + ".cfg.json").read())
    model = old.CausalLM(cfg)
    sd = {k: v for k, v in scripted.state_dict().items() if "last_load" not in k}
    model.load_state_dict(sd)
    model.eval()
    torch.jit.script(model).save(out_pt, _extra_files=extra)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--max-seq-len", type=int, default=16640)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    import gspo_model
    import make_tiny_model
    old = before_module(a.out)

    # The byte model: make_tiny_model's config and initialisation.
    byte = os.path.join(a.out, "byte4x512.pt")
    ns = argparse.Namespace(hidden=512, heads=8, kv_heads=4, layers=4, intermediate=0, max_seq_len=a.max_seq_len,
                            tie=False, qkv_bias=False, qk_norm=False, prior_text="")
    cfg = make_tiny_model.tiny_config(ns)
    torch.manual_seed(0)
    model = gspo_model.CausalLM(cfg)
    with torch.no_grad():
        for _, prm in model.named_parameters():
            if prm.dim() >= 2:
                prm.normal_(0.0, 0.02)
    gspo_model.save_scripted(model, cfg, make_tiny_model.byte_tokenizer_spec(), "float32", byte)
    json.dump(cfg, open(byte + ".cfg.json", "w"))
    export_before(byte, os.path.join(a.out, "byte4x512_before.pt"), old)

    # The Qwen3-vocabulary model, through transformers and the exporter (the path users' checkpoints take).
    tok = os.path.join(ROOT, "..", "shared", "data", "tokenizers", "qwen3")
    if not os.path.exists(os.path.join(tok, "tokenizer.json")):
        print("no ../shared/data/tokenizers/qwen3: skipping the Qwen3-vocabulary model")
        return
    from transformers import Qwen3Config, Qwen3ForCausalLM
    hf = os.path.join(a.out, "qwen3v_hf")
    torch.manual_seed(0)
    c = Qwen3Config(vocab_size=151936, hidden_size=256, intermediate_size=768, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=2, head_dim=64, max_position_embeddings=a.max_seq_len,
                    tie_word_embeddings=True, bos_token_id=151643, eos_token_id=151645)
    Qwen3ForCausalLM(c).save_pretrained(hf)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tok, f), hf)
    qv = os.path.join(a.out, "qwen3v.pt")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "export_hf.py"), "--hf", hf, "--out", qv,
                    "--max-seq-len", str(a.max_seq_len)], check=True, stdout=subprocess.DEVNULL)
    import export_hf
    hf_cfg = json.load(open(os.path.join(hf, "config.json")))
    json.dump(export_hf.gspo_config(hf_cfg, a.max_seq_len), open(qv + ".cfg.json", "w"))
    export_before(qv, os.path.join(a.out, "qwen3v_before.pt"), old)
    print(f"models written to {a.out}")


if __name__ == "__main__":
    main()
