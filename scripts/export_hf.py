#!/usr/bin/env python3
"""Exports a Hugging Face checkpoint directory to a gspo TorchScript policy (docs/model-contract.md).

    scripts/py scripts/export_hf.py --hf DIR --out model.pt [--dtype float32|bfloat16|float16] [--max-seq-len N]
    scripts/py scripts/export_hf.py --hf DIR --out rm.pt --reward [...]

--reward: DIR holds a llama/qwen2/qwen3 *ForSequenceClassification reward model (num_labels 1), written as a reward
model with one method, score (docs/model-contract.md, "Reward models (reward_api 1)"); config.json naming such an
architecture is refused without it.

DIR holds config.json, the weights (*.safetensors, with or without an index, or pytorch_model*.bin) and, when
present, tokenizer.json + tokenizer_config.json (embedded as the policy's tokenizer) or gspo_tokenizer.json.
Families: llama (GQA, RoPE with linear/llama3 scaling, tied or untied embeddings, optional attention bias), qwen2
(q/k/v bias), qwen3 (q/k RMSNorm), qwen3_moe (q/k RMSNorm, sparse MoE feed-forward: router, top-k experts,
norm_topk_prob, decoder_sparse_step, mlp_only_layers).
"""
import argparse
import glob
import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gspo_model  # noqa: E402

SAFETENSORS_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64,
                      "I64": torch.int64, "I32": torch.int32}


def read_safetensors(path):
    """Minimal reader for the safetensors format (8-byte header length, JSON header, raw little-endian data)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        dtype = SAFETENSORS_DTYPES[info["dtype"]]
        buf = bytearray(data[start:end])
        t = torch.frombuffer(buf, dtype=dtype) if end > start else torch.empty(0, dtype=dtype)
        out[name] = t.reshape(info["shape"]).clone()
    return out


def load_weights(d):
    files = sorted(glob.glob(os.path.join(d, "*.safetensors")))
    sd = {}
    if files:
        for f in files:
            sd.update(read_safetensors(f))
        return sd
    files = sorted(glob.glob(os.path.join(d, "pytorch_model*.bin")))
    if not files:
        sys.exit(f"{d}: no *.safetensors or pytorch_model*.bin weights")
    for f in files:
        sd.update(torch.load(f, map_location="cpu"))
    return sd


def rope_settings(hf):
    """(theta, scaling dict or None) from transformers >= 5's `rope_parameters` (theta inside it) or the older
    top-level `rope_theta` + `rope_scaling`."""
    rp = hf.get("rope_parameters")
    if rp is None:
        return hf.get("rope_theta", 10000.0), hf.get("rope_scaling")
    if "rope_type" not in rp and "rope_theta" not in rp:
        sys.exit(f"rope_parameters per layer type ({sorted(rp)}) are not supported: one RoPE for all layers only")
    theta = rp.get("rope_theta", hf.get("rope_theta", 10000.0))
    return theta, (None if rp.get("rope_type", "default") == "default" else rp)


def check_supported(hf, family):
    """Refuses config switches the reference architecture does not implement (they would export silently wrong)."""
    if hf.get("hidden_act", "silu") != "silu":
        sys.exit(f"hidden_act {hf['hidden_act']!r} is not supported (silu only)")
    if hf.get("mlp_bias", False):
        sys.exit("mlp_bias: true is not supported")
    if hf.get("use_sliding_window", False) or any(t != "full_attention" for t in hf.get("layer_types") or []):
        sys.exit("sliding-window attention (use_sliding_window / layer_types) is not supported")


def gspo_config(hf, max_seq_len, eos_fallback=None):
    family = hf.get("model_type", "llama")
    if family not in ("llama", "qwen2", "qwen3", "qwen3_moe"):
        sys.exit(f"model_type {family!r} is not supported (llama, qwen2, qwen3, qwen3_moe)")
    check_supported(hf, family)
    heads = hf["num_attention_heads"]
    eos = hf.get("eos_token_id")
    eos = eos_fallback if eos is None else eos
    eos = eos[0] if isinstance(eos, list) else eos
    if eos is None:
        sys.exit("no eos_token_id in config.json or generation_config.json: the policy needs one")
    theta, scaling = rope_settings(hf)
    bos = hf.get("bos_token_id")
    cfg = {
        "architecture": family, "vocab_size": hf["vocab_size"], "hidden_size": hf["hidden_size"],
        "num_layers": hf["num_hidden_layers"], "num_heads": heads,
        "num_kv_heads": hf.get("num_key_value_heads", heads),
        "head_dim": hf.get("head_dim") or hf["hidden_size"] // heads,
        "intermediate_size": hf["intermediate_size"], "rms_norm_eps": hf.get("rms_norm_eps", 1e-6),
        "rope_theta": theta, "rope_scaling": scaling,
        "max_seq_len": min(hf.get("max_position_embeddings", 4096), max_seq_len),
        "bos_token_id": -1 if bos is None else bos, "eos_token_id": eos,
        "pad_token_id": hf.get("pad_token_id") if hf.get("pad_token_id") is not None else eos,
        "tie_word_embeddings": hf.get("tie_word_embeddings", False),
        "qkv_bias": family == "qwen2" or hf.get("attention_bias", False),
        "o_bias": family != "qwen2" and hf.get("attention_bias", False),  # llama/qwen3: attention_bias covers o_proj
        "qk_norm": family in ("qwen3", "qwen3_moe"),
    }
    if family == "qwen3_moe":
        step, dense = hf.get("decoder_sparse_step", 1), set(hf.get("mlp_only_layers", []))
        experts = hf["num_experts"] if "num_experts" in hf else hf["num_local_experts"]  # transformers >= 5 writes the latter
        cfg.update({"num_experts": experts, "num_experts_per_tok": hf["num_experts_per_tok"],
                    "moe_intermediate_size": hf["moe_intermediate_size"],
                    "norm_topk_prob": hf.get("norm_topk_prob", True),
                    "moe_layers": [i for i in range(cfg["num_layers"])
                                   if i not in dense and experts > 0 and (i + 1) % step == 0]})
    return cfg


def tokenizer_spec(d):
    own = os.path.join(d, "gspo_tokenizer.json")
    if os.path.exists(own):
        return json.load(open(own))
    tj = os.path.join(d, "tokenizer.json")
    if not os.path.exists(tj):
        return None
    spec = {"type": "hf", "tokenizer": json.load(open(tj))}
    tc = os.path.join(d, "tokenizer_config.json")
    if os.path.exists(tc):
        c = json.load(open(tc))
        spec["config"] = {k: c[k] for k in ("bos_token", "eos_token", "pad_token", "add_bos_token") if k in c}
    return spec


HF_CARRIED = ("config.json", "generation_config.json", "tokenizer_config.json", "special_tokens_map.json",
              "added_tokens.json", "chat_template.jinja", "chat_template.json")


def hf_source(d, sd):
    """What scripts/export_to_hf.py needs to write the policy back as this HF model: the small files verbatim and
    the weights' dtype (the most common one, with the tensors that differ), carried in the manifest."""
    files = {n: open(os.path.join(d, n), encoding="utf-8").read() for n in HF_CARRIED if os.path.exists(os.path.join(d, n))}
    counts = {}
    for t in sd.values():
        counts[t.dtype] = counts.get(t.dtype, 0) + 1
    main_dtype = max(counts, key=counts.get)
    other = {k: str(t.dtype)[len("torch."):] for k, t in sd.items() if t.dtype != main_dtype}
    return {"files": files, "dtype": str(main_dtype)[len("torch."):], "dtype_exceptions": other}


def fill(model, sd, cfg, d):
    """Loads `sd` (names already mapped to the model's) into `model` as float32, refusing missing weights, tensors the
    model has no place for and shapes that differ."""
    own = model.state_dict()
    missing = [k for k in own if k not in sd and not k.endswith(("cos_table", "sin_table"))
               and not (k.endswith(("q_norm.weight", "k_norm.weight")) and not cfg["qk_norm"])]
    if missing:
        sys.exit(f"{d}: weights missing for {missing[:5]}{' ...' if len(missing) > 5 else ''}")
    unused = [k for k in sd if k not in own and not k.endswith("rotary_emb.inv_freq")]
    if unused:  # a tensor the architecture has no place for would otherwise be dropped silently
        sys.exit(f"{d}: weights the {cfg['architecture']} export does not use: {unused[:5]}"
                 f"{' ...' if len(unused) > 5 else ''}")
    for k in own:
        if k in sd:
            if sd[k].shape != own[k].shape:
                sys.exit(f"{d}: {k} has shape {tuple(sd[k].shape)}, expected {tuple(own[k].shape)}")
            own[k] = sd[k].to(torch.float32)
    model.load_state_dict(own)


def cast(model, dtype):
    """The model in `dtype`, its RoPE tables kept float32."""
    model = model.to(getattr(torch, dtype))
    model.cos_table.data = model.cos_table.data.float()
    model.sin_table.data = model.sin_table.data.float()
    return model


def is_reward_checkpoint(hf):
    return any(str(a).endswith("ForSequenceClassification") for a in hf.get("architectures") or [])


def check_kind(hf, d, reward):
    """--reward exactly when config.json's architectures name a *ForSequenceClassification model (a checkpoint that
    names no architectures is taken as the flag says; its weights decide)."""
    named = hf.get("architectures") or []
    config = os.path.join(d, "config.json")
    if is_reward_checkpoint(hf) and not reward:
        sys.exit(f"{config}: architectures {named} is a sequence-classification (reward) model: export it with "
                 f"--reward (docs/model-contract.md, \"Reward models\")")
    if reward and named and not is_reward_checkpoint(hf):
        sys.exit(f"{config}: --reward needs a *ForSequenceClassification checkpoint (architectures {named})")


def check_num_labels(hf, d):
    """A gspo reward model has one score: num_labels 1 (transformers writes id2label; with neither it means 2)."""
    n = hf["num_labels"] if "num_labels" in hf else len(hf["id2label"]) if hf.get("id2label") else 2
    if n != 1:
        sys.exit(f"{os.path.join(d, 'config.json')}: num_labels is {n}: a gspo reward model has one score per sequence "
                 f"(num_labels must be 1)")


def export_reward(a, cfg, sd):
    """A *ForSequenceClassification checkpoint as gspo_model.RewardModel: model.* to the decoder, score.weight to
    score_head."""
    if cfg["architecture"] not in ("llama", "qwen2", "qwen3"):
        sys.exit(f"{a.hf}: reward models of model_type {cfg['architecture']!r} are not supported (llama, qwen2, qwen3)")
    sd = {k[len("model."):] if k.startswith("model.") else k: v for k, v in sd.items()}
    if "score.weight" in sd:
        if sd["score.weight"].shape[0] != 1:
            sys.exit(f"{a.hf}: score.weight has shape {tuple(sd['score.weight'].shape)}: num_labels "
                     f"{sd['score.weight'].shape[0]}, a gspo reward model needs num_labels 1")
        sd["score_head.weight"] = sd.pop("score.weight")
    model = gspo_model.RewardModel(cfg)
    fill(model, sd, cfg, a.hf)
    model = cast(model, a.dtype)
    spec = tokenizer_spec(a.hf) or {"type": "none"}
    n = sum(t.numel() for t in model.parameters())
    gspo_model.save_scripted(model, cfg, spec, a.dtype, a.out, gspo_model.reward_manifest_for(cfg, spec, a.dtype, n))
    print(f"wrote {a.out}: {cfg['architecture']} reward model, {n} parameters, {cfg['num_layers']} layers, "
          f"pad {cfg['pad_token_id']}, {a.dtype}, tokenizer {spec.get('type')}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hf", required=True, help="Hugging Face checkpoint directory")
    p.add_argument("--out", required=True)
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--max-seq-len", type=int, default=8192, help="cap on the RoPE tables (prompt + response)")
    p.add_argument("--reward", action="store_true",
                   help="export a *ForSequenceClassification reward model (num_labels 1) with one method, score")
    a = p.parse_args()
    hf = json.load(open(os.path.join(a.hf, "config.json")))
    check_kind(hf, a.hf, a.reward)
    if a.reward:
        check_num_labels(hf, a.hf)
    gen_path = os.path.join(a.hf, "generation_config.json")
    gen_eos = json.load(open(gen_path)).get("eos_token_id") if os.path.exists(gen_path) else None
    cfg = gspo_config(hf, a.max_seq_len, gen_eos)
    sd = load_weights(a.hf)
    if a.reward:
        export_reward(a, cfg, sd)
        return
    cfg["hf_source"] = hf_source(a.hf, sd)
    sd = {k[len("model."):] if k.startswith("model.") else k: v for k, v in sd.items()}
    if cfg["tie_word_embeddings"] or "lm_head.weight" not in sd:
        sd["lm_head.weight"] = sd["embed_tokens.weight"]
        cfg["tie_word_embeddings"] = True
    model = gspo_model.CausalLM(cfg)
    fill(model, sd, cfg, a.hf)
    model = cast(model, a.dtype)
    spec = tokenizer_spec(a.hf) or {"type": "none"}
    gspo_model.save_scripted(model, cfg, spec, a.dtype, a.out)
    n = sum(t.numel() for t in model.parameters())
    print(f"wrote {a.out}: {cfg['architecture']}, {n} parameters, {cfg['num_layers']} layers, vocab {cfg['vocab_size']}, "
          f"{a.dtype}, tokenizer {spec.get('type')}")


if __name__ == "__main__":
    main()
