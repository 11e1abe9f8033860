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

EOS: the manifest's `eos_token_ids` lists every EOS id of config.json's `eos_token_id` and then
generation_config.json's (each an id or a list; Llama-3.x Instruct ends a turn with <|eot_id|>, the second of three),
in order of first appearance; `eos_token_id` is its first (docs/model-contract.md). A policy needs one at least; a
reward model (--reward) never generates and needs none (-1).

tokenizer_config.json's bos_token / eos_token / pad_token are embedded as the token strings gspo's tokenizer reads (an
AddedToken object becomes its "content", null is left out) and add_bos_token as a boolean; a value of another type, an
empty name or a name tokenizer.json lacks is refused naming the file and key.

Bad input (a missing or malformed config.json, truncated weights, --max-seq-len below 2, ...) is one line
"export_hf.py: error: ..." naming the file and key, and exit 2; nothing is written to --out.
"""
import argparse
import glob
import json
import math
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gspo_model  # noqa: E402

SAFETENSORS_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64,
                      "I64": torch.int64, "I32": torch.int32}
PROG = "export_hf.py"


def die(msg):
    """Bad input: one line naming the file and key, exit 2 (argparse's code for a usage error), no traceback."""
    print(f"{PROG}: error: {msg}", file=sys.stderr, flush=True)
    sys.exit(2)


def read_json(path, what="", want=dict):
    """A JSON file's content, refused (die) when it is missing, unreadable, not JSON or not a `want`."""
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except FileNotFoundError:
        die(f"{path}: no such file{what}")
    except IsADirectoryError:
        die(f"{path}: is a directory, not a JSON file")
    except (OSError, UnicodeDecodeError) as e:
        die(f"{path}: cannot be read ({e})")
    except json.JSONDecodeError as e:
        die(f"{path}: not valid JSON ({e})")
    if want is not None and not isinstance(value, want):
        die(f"{path}: holds a JSON {type(value).__name__}, not an object")
    return value


def read_safetensors(path):
    """Minimal reader for the safetensors format (8-byte header length, JSON header, raw little-endian data); a file
    that is truncated or not safetensors is refused naming it and the tensor."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        die(f"{path}: cannot be read ({e.strerror})")
    if len(data) < 8:
        die(f"{path}: truncated or not a safetensors file ({len(data)} bytes, no header)")
    n = struct.unpack("<Q", data[:8])[0]
    if n > len(data) - 8:
        die(f"{path}: truncated or not a safetensors file (header of {n} bytes, file of {len(data)})")
    try:
        header = json.loads(data[8:8 + n])
    except (ValueError, UnicodeDecodeError) as e:
        die(f"{path}: truncated or not a safetensors file (header is not JSON: {str(e)[:100]})")
    if not isinstance(header, dict):
        die(f"{path}: not a safetensors file (header is not a JSON object)")
    data = memoryview(data)[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            start, end = (int(x) for x in info["data_offsets"])
            shape = [int(x) for x in info["shape"]]
            code = info["dtype"]
        except (KeyError, TypeError, ValueError):
            die(f"{path}: tensor {name!r} has a malformed header entry ({json.dumps(info)[:120]})")
        if code not in SAFETENSORS_DTYPES:
            die(f"{path}: tensor {name!r} has dtype {code}, which export_hf.py does not read "
                f"({', '.join(SAFETENSORS_DTYPES)})")
        dtype = SAFETENSORS_DTYPES[code]
        want = math.prod(shape) * torch.empty(0, dtype=dtype).element_size()
        if not 0 <= start <= end or end - start != want or any(x < 0 for x in shape):
            die(f"{path}: tensor {name!r}: data_offsets {[start, end]} do not hold shape {shape} of {code}")
        if end > len(data):
            die(f"{path}: truncated: tensor {name!r} ends at byte {end} of the data, which has {len(data)}")
        buf = bytearray(data[start:end])
        t = torch.frombuffer(buf, dtype=dtype) if end > start else torch.empty(0, dtype=dtype)
        out[name] = t.reshape(shape).clone()
    return out


def read_bin(path):
    """A pytorch_model*.bin state dict; a truncated or foreign file is refused naming it."""
    try:
        sd = torch.load(path, map_location="cpu")
    except Exception as e:  # torch raises RuntimeError, pickle.UnpicklingError, EOFError, zipfile errors ...
        first = (str(e).splitlines() or [""])[0].split(". ")[0][:160]
        die(f"{path}: truncated or not a PyTorch checkpoint ({type(e).__name__}: {first})")
    if not isinstance(sd, dict) or not all(isinstance(v, torch.Tensor) for v in sd.values()):
        die(f"{path}: not a state dict of tensors (a {type(sd).__name__})")
    return sd


def load_weights(d):
    files = sorted(glob.glob(os.path.join(d, "*.safetensors")))
    sd = {}
    if files:
        for f in files:
            sd.update(read_safetensors(f))
        return sd
    files = sorted(glob.glob(os.path.join(d, "pytorch_model*.bin")))
    if not files:
        die(f"{d}: no *.safetensors or pytorch_model*.bin weights")
    for f in files:
        sd.update(read_bin(f))
    return sd


def rope_settings(hf, path="config.json"):
    """(theta, scaling dict or None) from transformers >= 5's `rope_parameters` (theta inside it) or the older
    top-level `rope_theta` + `rope_scaling`."""
    rp = hf.get("rope_parameters")
    if rp is None:
        return hf.get("rope_theta", 10000.0), hf.get("rope_scaling")
    if "rope_type" not in rp and "rope_theta" not in rp:
        die(f"{path}: rope_parameters per layer type ({sorted(rp)}) are not supported: one RoPE for all layers only")
    theta = rp.get("rope_theta", hf.get("rope_theta", 10000.0))
    return theta, (None if rp.get("rope_type", "default") == "default" else rp)


def check_supported(hf, family, path="config.json"):
    """Refuses config switches the reference architecture does not implement (they would export silently wrong)."""
    if hf.get("hidden_act", "silu") != "silu":
        die(f"{path}: hidden_act {hf['hidden_act']!r} is not supported (silu only)")
    if hf.get("mlp_bias", False):
        die(f"{path}: mlp_bias: true is not supported")
    if hf.get("use_sliding_window", False) or any(t != "full_attention" for t in hf.get("layer_types") or []):
        die(f"{path}: sliding-window attention (use_sliding_window / layer_types) is not supported")


def is_id(v):
    return isinstance(v, int) and not isinstance(v, bool)


def eos_ids(sources, vocab_size):
    """Every EOS id of `sources` [(file, its eos_token_id: an id, a list of ids or None)], in order of first
    appearance (config.json's first, then generation_config.json's); an id outside the vocabulary is refused."""
    ids = []
    for path, v in sources:
        for x in (v if isinstance(v, list) else [] if v is None else [v]):
            if not is_id(x) or not 0 <= x < vocab_size:
                held = f" holds {json.dumps(x)[:40]}, which" if isinstance(v, list) else ""
                die(f"{path}: eos_token_id {json.dumps(v)[:80]}{held} is not a token id in the vocabulary "
                    f"[0, {vocab_size})")
            if x not in ids:
                ids.append(x)
    return ids


POSITIVE_INTS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")


def check_sizes(hf, path):
    """The sizes the export builds the model from: positive integers (a missing or wrong one is named)."""
    for k in POSITIVE_INTS:
        if k not in hf:
            die(f"{path}: lacks {k}")
    for k in POSITIVE_INTS + ("num_key_value_heads", "head_dim", "max_position_embeddings"):
        if hf.get(k) is not None and (not is_id(hf[k]) or hf[k] <= 0):
            die(f"{path}: {k} is {json.dumps(hf[k])[:40]}, not a positive integer")


def gspo_config(hf, max_seq_len, eos_sources=(), need_eos=True, path="config.json"):
    """gspo's config from config.json's `hf`; eos_sources: [(file, eos_token_id)] as eos_ids takes them (default:
    config.json's own)."""
    family = hf.get("model_type", "llama")
    if family not in ("llama", "qwen2", "qwen3", "qwen3_moe"):
        die(f"{path}: model_type {family!r} is not supported (llama, qwen2, qwen3, qwen3_moe)")
    check_supported(hf, family, path)
    check_sizes(hf, path)
    heads = hf["num_attention_heads"]
    eos_list = eos_ids(list(eos_sources) or [(path, hf.get("eos_token_id"))], hf["vocab_size"])
    if not eos_list and need_eos:
        die(f"{path}: no eos_token_id in config.json or generation_config.json: the policy needs one to end a "
            f"response")
    eos = eos_list[0] if eos_list else -1
    seq = min(hf.get("max_position_embeddings") or 4096, max_seq_len)
    if seq < 2:
        die(f"{path}: max_position_embeddings {hf.get('max_position_embeddings')}: the model holds fewer than 2 "
            f"positions (a prompt and a response)")
    theta, scaling = rope_settings(hf, path)
    bos = hf.get("bos_token_id")
    bos = bos[0] if isinstance(bos, list) and bos else bos
    pad = hf.get("pad_token_id")
    for key, v in (("bos_token_id", bos), ("pad_token_id", pad)):
        if v is not None and (not is_id(v) or not -1 <= v < hf["vocab_size"]):
            die(f"{path}: {key} {json.dumps(v)[:40]} is not a token id in the vocabulary [0, {hf['vocab_size']})")
    # a reward model pads with pad, else EOS, else id 0: its mask, not the padding's id, decides what is scored
    pad = pad if pad is not None and pad >= 0 else eos if eos >= 0 else 0
    cfg = {
        "architecture": family, "vocab_size": hf["vocab_size"], "hidden_size": hf["hidden_size"],
        "num_layers": hf["num_hidden_layers"], "num_heads": heads,
        "num_kv_heads": hf.get("num_key_value_heads") or heads,
        "head_dim": hf.get("head_dim") or hf["hidden_size"] // heads,
        "intermediate_size": hf["intermediate_size"], "rms_norm_eps": hf.get("rms_norm_eps", 1e-6),
        "rope_theta": theta, "rope_scaling": scaling,
        "max_seq_len": seq,
        "bos_token_id": -1 if bos is None else bos, "eos_token_id": eos, "eos_token_ids": eos_list,
        "pad_token_id": pad,
        "tie_word_embeddings": hf.get("tie_word_embeddings", False),
        "qkv_bias": family == "qwen2" or hf.get("attention_bias", False),
        "o_bias": family != "qwen2" and hf.get("attention_bias", False),  # llama/qwen3: attention_bias covers o_proj
        "qk_norm": family in ("qwen3", "qwen3_moe"),
    }
    if family == "qwen3_moe":
        for k in ("num_experts_per_tok", "moe_intermediate_size"):
            if k not in hf:
                die(f"{path}: lacks {k} (a qwen3_moe config)")
        if "num_experts" not in hf and "num_local_experts" not in hf:
            die(f"{path}: lacks num_experts (or num_local_experts; a qwen3_moe config)")
        step, dense = hf.get("decoder_sparse_step", 1), set(hf.get("mlp_only_layers", []))
        experts = hf["num_experts"] if "num_experts" in hf else hf["num_local_experts"]  # transformers >= 5 writes the latter
        cfg.update({"num_experts": experts, "num_experts_per_tok": hf["num_experts_per_tok"],
                    "moe_intermediate_size": hf["moe_intermediate_size"],
                    "norm_topk_prob": hf.get("norm_topk_prob", True),
                    "moe_layers": [i for i in range(cfg["num_layers"])
                                   if i not in dense and experts > 0 and (i + 1) % step == 0]})
    return cfg


def vocabulary(tok):
    """A tokenizer.json's token strings: model.vocab's and added_tokens' (where the C++ loader looks names up)."""
    model = tok.get("model") if isinstance(tok.get("model"), dict) else {}
    vocab = model.get("vocab")
    names = set(vocab) if isinstance(vocab, dict) else {v[0] for v in vocab if isinstance(v, list) and v} \
        if isinstance(vocab, list) else set()
    names.update(a["content"] for a in tok.get("added_tokens") or [] if isinstance(a, dict) and "content" in a)
    return names


def tokenizer_roles(c, tc, tok):
    """tokenizer_config.json's roles as gspo's tokenizer reads them (src/gspo/tokenizer/hf_bpe.cpp): bos/eos/pad
    token strings (an AddedToken object {"content": ...} becomes its content, null is left out, as if absent) that
    tokenizer.json holds, and add_bos_token a boolean (null left out). Anything else is refused naming `tc` and the
    key: the policy would fail to load, or its roles would be guessed."""
    out, names = {}, None
    for k in ("bos_token", "eos_token", "pad_token"):
        v = c.get(k)
        if v is None:
            continue
        name = v.get("content") if isinstance(v, dict) else v
        if not isinstance(name, str) or not name:
            die(f"{tc}: {k} is {json.dumps(v)[:80]}, not a token name (a non-empty string, or an object with a "
                f"\"content\" string)")
        names = vocabulary(tok) if names is None else names
        if name not in names:
            die(f"{tc}: {k} {name[:60]!r} is not a token of tokenizer.json (model.vocab or added_tokens)")
        out[k] = name
    if c.get("add_bos_token") is not None:
        if not isinstance(c["add_bos_token"], bool):
            die(f"{tc}: add_bos_token is {json.dumps(c['add_bos_token'])[:40]}, not true or false")
        out["add_bos_token"] = c["add_bos_token"]
    return out


def tokenizer_spec(d):
    own = os.path.join(d, "gspo_tokenizer.json")
    if os.path.exists(own):
        return read_json(own)
    tj = os.path.join(d, "tokenizer.json")
    if not os.path.exists(tj):
        return None
    spec = {"type": "hf", "tokenizer": read_json(tj)}
    tc = os.path.join(d, "tokenizer_config.json")
    if os.path.exists(tc):
        spec["config"] = tokenizer_roles(read_json(tc), tc, spec["tokenizer"])
    return spec


HF_CARRIED = ("config.json", "generation_config.json", "tokenizer_config.json", "special_tokens_map.json",
              "added_tokens.json", "chat_template.jinja", "chat_template.json")


def hf_source(d, sd):
    """What scripts/export_to_hf.py needs to write the policy back as this HF model: the small files verbatim and
    the weights' dtype (the most common one, with the tensors that differ), carried in the manifest."""
    files = {}
    for n in HF_CARRIED:
        path = os.path.join(d, n)
        if os.path.exists(path):
            try:
                with open(path, encoding="utf-8") as f:
                    files[n] = f.read()
            except (OSError, UnicodeDecodeError) as e:
                die(f"{path}: cannot be read as UTF-8 text ({e})")
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
        die(f"{d}: weights missing for {missing[:5]}{' ...' if len(missing) > 5 else ''}")
    unused = [k for k in sd if k not in own and not k.endswith("rotary_emb.inv_freq")]
    if unused:  # a tensor the architecture has no place for would otherwise be dropped silently
        die(f"{d}: weights the {cfg['architecture']} export does not use: {unused[:5]}"
            f"{' ...' if len(unused) > 5 else ''}")
    for k in own:
        if k in sd:
            if sd[k].shape != own[k].shape:
                die(f"{d}: {k} has shape {tuple(sd[k].shape)}, expected {tuple(own[k].shape)}")
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
        die(f"{config}: architectures {named} is a sequence-classification (reward) model: export it with "
            f"--reward (docs/model-contract.md, \"Reward models\")")
    if reward and named and not is_reward_checkpoint(hf):
        die(f"{config}: --reward needs a *ForSequenceClassification checkpoint (architectures {named})")


def check_num_labels(hf, d):
    """A gspo reward model has one score: num_labels 1 (transformers writes id2label; with neither it means 2)."""
    n = hf["num_labels"] if "num_labels" in hf else len(hf["id2label"]) if hf.get("id2label") else 2
    if n != 1:
        die(f"{os.path.join(d, 'config.json')}: num_labels is {n}: a gspo reward model has one score per sequence "
            f"(num_labels must be 1)")


def export_reward(a, cfg, sd):
    """A *ForSequenceClassification checkpoint as gspo_model.RewardModel: model.* to the decoder, score.weight to
    score_head."""
    if cfg["architecture"] not in ("llama", "qwen2", "qwen3"):
        die(f"{a.hf}: reward models of model_type {cfg['architecture']!r} are not supported (llama, qwen2, qwen3)")
    sd = {k[len("model."):] if k.startswith("model.") else k: v for k, v in sd.items()}
    if "score.weight" in sd:
        if sd["score.weight"].shape[0] != 1:
            die(f"{a.hf}: score.weight has shape {tuple(sd['score.weight'].shape)}: num_labels "
                f"{sd['score.weight'].shape[0]}, a gspo reward model needs num_labels 1")
        sd["score_head.weight"] = sd.pop("score.weight")
    model = gspo_model.RewardModel(cfg)
    fill(model, sd, cfg, a.hf)
    model = cast(model, a.dtype)
    spec = tokenizer_spec(a.hf) or {"type": "none"}
    n = sum(t.numel() for t in model.parameters())
    gspo_model.save_scripted(model, cfg, spec, a.dtype, a.out, gspo_model.reward_manifest_for(cfg, spec, a.dtype, n))
    print(f"wrote {a.out}: {cfg['architecture']} reward model, {n} parameters, {cfg['num_layers']} layers, "
          f"pad {cfg['pad_token_id']}, eos {cfg['eos_token_ids'] or 'none'}, {a.dtype}, tokenizer {spec.get('type')}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hf", required=True, help="Hugging Face checkpoint directory")
    p.add_argument("--out", required=True)
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--max-seq-len", type=int, default=8192, help="cap on the RoPE tables (prompt + response)")
    p.add_argument("--reward", action="store_true",
                   help="export a *ForSequenceClassification reward model (num_labels 1) with one method, score")
    a = p.parse_args()
    if a.max_seq_len < 2:  # 0 wrote a model nothing loads (the manifest needs max_seq_len > 1), < 0 a traceback
        die(f"--max-seq-len {a.max_seq_len}: must be at least 2 (the columns of a prompt and its response)")
    if not os.path.isdir(a.hf):
        die(f"{a.hf}: no such directory (--hf takes a Hugging Face checkpoint directory)")
    out_dir = os.path.dirname(os.path.abspath(a.out))
    if not os.path.isdir(out_dir):
        die(f"{a.out}: its directory {out_dir} does not exist")
    config = os.path.join(a.hf, "config.json")
    hf = read_json(config, " (a Hugging Face checkpoint directory holds config.json)")
    check_kind(hf, a.hf, a.reward)
    if a.reward:
        check_num_labels(hf, a.hf)
    sources = [(config, hf.get("eos_token_id"))]
    gen_path = os.path.join(a.hf, "generation_config.json")
    if os.path.exists(gen_path):
        sources.append((gen_path, read_json(gen_path).get("eos_token_id")))
    cfg = gspo_config(hf, a.max_seq_len, sources, need_eos=not a.reward, path=config)
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
          f"eos {cfg['eos_token_ids']}, {a.dtype}, tokenizer {spec.get('type')}")


if __name__ == "__main__":
    main()
