#!/usr/bin/env python3
"""Exports a gspo policy back to a Hugging Face directory (the reverse of scripts/export_hf.py).

    scripts/py scripts/export_to_hf.py --checkpoint RUN/checkpoints/step_00000200 --out DIR
        [--dtype original|float32|bfloat16|float16] [--max-shard-size 5GB] [--overwrite] [--peft]

A checkpoint of low-rank adapters (model.lora_rank: adapter.pt + adapter.json, no policy.pt) exports the base it
names (adapter.json's base_path) with W + (alpha / r) B A merged into every adapted weight (in float32, then cast);
with --peft, DIR receives the adapters alone as PEFT writes them (adapter_config.json + adapter_model.safetensors,
scripts/peft_adapter.py), for peft.PeftModel.from_pretrained on the base's Hugging Face model.

--checkpoint takes a checkpoint directory (its policy.pt), a run directory (its newest complete checkpoint) or a
policy .pt itself. DIR receives:
  config.json             the original one carried in the policy's manifest by export_hf.py (hf_source), with only
                          `dtype` and `tie_word_embeddings` updated where they changed; without it (policies made by
                          make_tiny_model.py or an older export_hf.py), one built from the manifest and the module
                          (rope_theta read back from the RoPE tables; RoPE scaling cannot be recovered there)
  model.safetensors       the weights under their Hugging Face names (model.layers.N..., lm_head.weight unless tied,
                          per-expert names for qwen3_moe as transformers' save_pretrained writes them), in the
                          original dtype (the one export_hf.py read, per tensor) or --dtype; above --max-shard-size,
                          model-0000K-of-0000N.safetensors + model.safetensors.index.json
  tokenizer.json          from the policy's embedded Hugging Face tokenizer
  tokenizer_config.json, special_tokens_map.json, chat_template.jinja, generation_config.json, ...
                          the original files, verbatim, when export_hf.py carried them

Streaming: the .pt is a zip archive (data.pkl: the module tree; data/K: one storage per entry, stored
uncompressed). The tree is unpickled with every tensor left as a reference (storage key, dtype, offset, shape), and
each tensor is then read from its entry, cast and written into its safetensors file before the next one is read
(the safetensors header is written first: shapes and dtypes are known). Peak memory is therefore the interpreter
with torch (~0.3 GB) plus the largest single tensor twice (as stored and cast), independent of the number of
tensors: a 30B checkpoint's largest tensor (a 152k x 5120 embedding) is 3.1 GB in float32. Measured
(bench/export_memory.py, docs/hf-roundtrip.md): a 380M-parameter float32 Llama (1.5 GB) exports with a peak RSS of
668 MB, 609 MB of which is Python with torch imported; torch.jit.load + save_file takes 2068 MB.

Exit codes: 0 ok, 2 bad arguments or an output directory already in use, 4 a policy this exporter cannot map
(unknown architecture, damaged manifest), 5 a file that is missing or unreadable. Messages name the file and key.
"""
import argparse
import json
import os
import pickle
import re
import struct
import sys
import zipfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peft_adapter  # noqa: E402  (scripts/peft_adapter.py)
from replaced_dir import replaced_dir  # noqa: E402

FAMILIES = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM",
            "qwen3_moe": "Qwen3MoeForCausalLM"}
CARRIED = ("generation_config.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
           "chat_template.jinja", "chat_template.json")
ST_DTYPE = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16", torch.float64: "F64",
            torch.int64: "I64", torch.int32: "I32"}
STORAGE_DTYPE = {"FloatStorage": torch.float32, "BFloat16Storage": torch.bfloat16, "HalfStorage": torch.float16,
                 "DoubleStorage": torch.float64, "LongStorage": torch.int64, "IntStorage": torch.int32,
                 "BoolStorage": torch.bool, "ByteStorage": torch.uint8, "CharStorage": torch.int8}
NOT_WEIGHTS = re.compile(r"(^|\.)(cos_table|sin_table|last_load)$")  # RoPE tables, routing statistics


class ExportError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


# ---- reading a TorchScript archive without loading its tensors -------------------------------------------------

class Obj:
    """A scripted module (or any TorchScript object) from data.pkl: its attributes, tensors left as TensorRef."""

    state = {}

    def __setstate__(self, state):
        self.state = state


class TensorRef:
    def __init__(self, storage, offset, size, stride):
        self.key, self.dtype, self.storage_numel = storage
        self.offset, self.shape, self.stride = offset, tuple(size), tuple(stride)

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def contiguous(self):
        expect, stride = 1, []
        for s in reversed(self.shape):
            stride.append(expect)
            expect *= s
        return tuple(reversed(stride)) == self.stride or self.numel() <= 1


def _rebuild_tensor(storage, offset, size, stride, *_):
    return TensorRef(storage, offset, size, stride)


class LazyUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if module.startswith("__torch__"):
            return type(name, (Obj,), {"qualname": f"{module}.{name}"})
        if module == "torch._utils" and name in ("_rebuild_tensor_v2", "_rebuild_tensor"):
            return _rebuild_tensor
        if module == "torch" and name in STORAGE_DTYPE:
            return name
        if module == "collections" and name == "OrderedDict":
            return dict
        if module == "torch.jit._pickle":  # older archives wrap lists: build_intlist(x) -> x
            return lambda x: x
        raise pickle.UnpicklingError(f"unexpected global {module}.{name}")

    def persistent_load(self, pid):
        kind, storage_type, key, _location, numel = pid
        if kind != "storage":
            raise pickle.UnpicklingError(f"unexpected persistent id {pid!r}")
        return key, STORAGE_DTYPE[storage_type], numel


class PolicyArchive:
    """A gspo policy .pt opened for streaming: manifest, tokenizer spec, module tree and per-tensor reads."""

    def __init__(self, path):
        self.path = path
        try:
            self.zip = zipfile.ZipFile(path)
        except (OSError, zipfile.BadZipFile) as e:
            raise ExportError(5, f"{path}: not a readable TorchScript file ({e})")
        pkl = [n for n in self.zip.namelist() if n.count("/") == 1 and n.endswith("/data.pkl")]
        if len(pkl) != 1:
            raise ExportError(4, f"{path}: no data.pkl at the archive's top level (not a TorchScript file)")
        self.prefix = pkl[0][:-len("data.pkl")]
        self.manifest = self._json_extra("gspo_manifest.json", required=True)
        self.tokenizer = self._json_extra("gspo_tokenizer.json", required=False) or {"type": "none"}
        try:
            self.root = LazyUnpickler(self.zip.open(pkl[0])).load()
        except (pickle.UnpicklingError, KeyError, ValueError, TypeError) as e:
            raise ExportError(4, f"{path}: cannot read the module tree in {pkl[0]}: {e}")
        self.file = open(path, "rb")
        self.entry_offset = {}

    def _json_extra(self, name, required):
        entry = self.prefix + "extra/" + name
        if entry not in self.zip.namelist():
            if required:
                raise ExportError(4, f"{self.path}: no {name} inside (not a gspo policy; see docs/model-contract.md)")
            return None
        try:
            return json.loads(self.zip.read(entry))
        except ValueError as e:
            raise ExportError(4, f"{self.path}: {name} is not valid JSON: {e}")

    def tensors(self):
        """(dotted name, TensorRef, owning Obj) for every tensor attribute, in module order."""
        out = []

        def walk(obj, prefix):
            for k, v in obj.state.items():
                if isinstance(v, TensorRef):
                    out.append((prefix + k, v, obj))
                elif isinstance(v, Obj):
                    walk(v, prefix + k + ".")
        walk(self.root, "")
        return out

    def module(self, dotted):
        obj = self.root
        for part in dotted.split(".") if dotted else []:
            obj = obj.state[part]
        return obj

    def _data_offset(self, key):
        """Byte offset of storage `key`'s bytes in the file (local zip header skipped)."""
        if key not in self.entry_offset:
            info = self.zip.getinfo(f"{self.prefix}data/{key}")
            if info.compress_type != zipfile.ZIP_STORED:
                raise ExportError(4, f"{self.path}: storage data/{key} is compressed (TorchScript stores them raw)")
            self.file.seek(info.header_offset)
            head = self.file.read(30)
            name_len, extra_len = struct.unpack("<HH", head[26:30])
            self.entry_offset[key] = info.header_offset + 30 + name_len + extra_len
        return self.entry_offset[key]

    def read(self, ref):
        """The tensor's values (a new CPU tensor holding just this tensor: O(its size) memory)."""
        item = torch.empty(0, dtype=ref.dtype).element_size()
        if ref.contiguous():
            first, count = ref.offset, ref.numel()
        else:  # a view into a larger storage: read the span it covers, then gather
            first = ref.offset
            count = 1 + sum((s - 1) * st for s, st in zip(ref.shape, ref.stride))
        buf = torch.empty(count, dtype=ref.dtype)
        self.file.seek(self._data_offset(ref.key) + first * item)
        got = self.file.readinto(buf.view(torch.uint8).numpy())
        if got != count * item:
            raise ExportError(5, f"{self.path}: storage data/{ref.key} is truncated")
        if ref.contiguous():
            return buf.view(ref.shape)
        return buf.as_strided(ref.shape, ref.stride).contiguous()


# ---- the Hugging Face side -----------------------------------------------------------------------------------

def resolve_policy(path):
    """(policy .pt, checkpoint directory of adapters or None): a checkpoint of adapters names its base."""
    if not os.path.exists(path):
        raise ExportError(5, f"{path}: no such checkpoint, run directory or policy file")
    if os.path.isfile(path):
        return path, None
    root = os.path.join(path, "checkpoints")
    steps = sorted(n for n in os.listdir(root) if n.startswith("step_")
                   and os.path.isfile(os.path.join(root, n, "state.json"))) if os.path.isdir(root) else []
    ckpt = os.path.join(root, steps[-1]) if steps and not os.path.isfile(os.path.join(path, "state.json")) else path
    if os.path.isfile(os.path.join(ckpt, "policy.pt")):
        return os.path.join(ckpt, "policy.pt"), None
    if os.path.isfile(os.path.join(ckpt, "adapter.json")):
        base = json.load(open(os.path.join(ckpt, "adapter.json"))).get("base_path", "")
        if not os.path.isfile(base):
            raise ExportError(5, f"{ckpt}/adapter.json: base_path {base!r}, the model the adapters were trained on, "
                                 f"is not there")
        return base, ckpt
    raise ExportError(5, f"{path}: neither a checkpoint (no policy.pt) nor a run directory with a complete "
                         f"checkpoint (no checkpoints/step_*/state.json)")


def weight_plan(arc, tied):
    """[(HF name, gspo name, TensorRef)] for every weight the HF model has, in module order."""
    plan = []
    for name, ref, owner in arc.tensors():
        if NOT_WEIGHTS.search(name):
            continue
        if name.endswith(("q_norm.weight", "k_norm.weight")) and not owner_attr(arc, name, "qk_norm"):
            continue  # the reference architecture always has the norms; only qwen3(_moe) use them
        if name == "lm_head.weight" and tied:
            continue  # HF ties lm_head to embed_tokens and does not write it
        plan.append((name if name.startswith("lm_head.") else "model." + name, name, ref))
    return plan


def owner_attr(arc, name, attr):
    attn = arc.module(name.rsplit(".", 2)[0])  # layers.N.self_attn
    return bool(attn.state.get(attr, True))


def is_tied(arc):
    t = {name: ref for name, ref, _ in arc.tensors() if name in ("embed_tokens.weight", "lm_head.weight")}
    if len(t) != 2:
        raise ExportError(4, f"{arc.path}: no embed_tokens.weight / lm_head.weight (not the reference architecture "
                             f"of scripts/gspo_model.py)")
    a, b = t["embed_tokens.weight"], t["lm_head.weight"]
    return (a.key, a.offset, a.shape) == (b.key, b.offset, b.shape)


def rope_theta_from_tables(arc, head_dim):
    """RoPE base recovered from the sin/cos tables: the lowest frequency's angle at the last position that keeps it
    below pi (float32 angles there carry ~1e-7 relative error), then theta = inv_freq ** (-d / (d - 2))."""
    refs = {n: r for n, r, _ in arc.tensors() if n in ("cos_table", "sin_table")}
    cos, sin = arc.read(refs["cos_table"]).double(), arc.read(refs["sin_table"]).double()
    i = head_dim // 2 - 1
    angles = torch.atan2(sin[:, i], cos[:, i])  # p * inv_freq while that stays below pi
    p = max(1, min(len(angles) - 1, int(3.0 / float(angles[1]))))
    inv = float(angles[p]) / p
    theta = inv ** (-head_dim / (head_dim - 2))
    return float(f"{theta:.6g}")


def built_config(arc, man, tied):
    """config.json from the manifest and the module itself (no original carried)."""
    fam = man["architecture"]
    layers = arc.module("layers")
    l0 = layers.state["0"]
    attn = l0.state["self_attn"]
    qkv_bias = attn.state["q_proj"].state.get("bias") is not None
    o_bias = attn.state["o_proj"].state.get("bias") is not None
    if fam == "llama" and qkv_bias and not o_bias:
        fam = "qwen2"  # HF Llama's attention_bias covers o_proj as well; q/k/v bias alone is Qwen2's layout
    dense = [k for k, v in layers.state.items() if isinstance(v, Obj) and "gate_proj" in v.state["mlp"].state]
    moe = [k for k, v in layers.state.items() if isinstance(v, Obj) and "experts" in v.state["mlp"].state]
    shape = lambda dotted: arc.module(dotted).state["weight"].shape  # noqa: E731
    theta = rope_theta_from_tables(arc, man["head_dim"])
    cfg = {
        "architectures": [FAMILIES[fam]], "model_type": fam, "vocab_size": man["vocab_size"],
        "hidden_size": man["hidden_size"], "num_hidden_layers": man["num_layers"],
        "num_attention_heads": man["num_heads"], "num_key_value_heads": man["num_kv_heads"],
        "head_dim": man["head_dim"], "hidden_act": "silu", "max_position_embeddings": man["max_seq_len"],
        "rms_norm_eps": float(l0.state["input_layernorm"].state["eps"]),
        "rope_theta": theta, "rope_parameters": {"rope_type": "default", "rope_theta": theta},
        "tie_word_embeddings": tied,
        "bos_token_id": None if man.get("bos_token_id", -1) < 0 else man["bos_token_id"],
        "eos_token_id": man["eos_token_id"], "pad_token_id": man.get("pad_token_id", man["eos_token_id"]),
        "attention_dropout": 0.0, "use_cache": True,
    }
    if dense:
        cfg["intermediate_size"] = shape(f"layers.{dense[0]}.mlp.gate_proj")[0]
    if fam == "llama":
        cfg["attention_bias"] = qkv_bias
        cfg["mlp_bias"] = False
    if fam in ("qwen2", "qwen3", "qwen3_moe"):
        cfg["use_sliding_window"] = False
    if fam == "qwen3_moe":
        if not moe:
            raise ExportError(4, f"{arc.path}: architecture qwen3_moe but no layer has experts")
        mlp = layers.state[moe[0]].state["mlp"]
        experts = mlp.state["experts"].state
        n = len([k for k in experts if isinstance(experts[k], Obj)])
        cfg.update({"num_experts": n, "num_local_experts": n, "num_experts_per_tok": int(mlp.state["top_k"]),
                    "norm_topk_prob": bool(mlp.state["norm_topk_prob"]),
                    "moe_intermediate_size": shape(f"layers.{moe[0]}.mlp.experts.0.gate_proj")[0],
                    "decoder_sparse_step": 1, "mlp_only_layers": sorted(int(k) for k in dense)})
        cfg.setdefault("intermediate_size", cfg["moe_intermediate_size"])
    return cfg


def write_config(man, arc, out_dtype, tied):
    src = (man.get("hf_source") or {}).get("files", {})
    if "config.json" in src:
        text = src["config.json"]
        cfg = json.loads(text)
        changed = False
        for key in ("dtype", "torch_dtype"):
            if key in cfg and cfg[key] != out_dtype:
                cfg[key], changed = out_dtype, True
        if "dtype" not in cfg and "torch_dtype" not in cfg:
            cfg["dtype"], changed = out_dtype, True
        if bool(cfg.get("tie_word_embeddings", False)) != tied:
            cfg["tie_word_embeddings"], changed = tied, True
        return json.dumps(cfg, indent=2, sort_keys=True) + "\n" if changed else text, "carried"
    cfg = built_config(arc, man, tied)
    cfg["dtype"] = out_dtype
    return json.dumps(cfg, indent=2, sort_keys=True) + "\n", "built from the manifest"


def tokenizer_files(man, spec):
    """{file name: text} of the tokenizer and generation files to write."""
    files = {n: t for n, t in (man.get("hf_source") or {}).get("files", {}).items() if n in CARRIED}
    if spec.get("type") == "hf":
        files["tokenizer.json"] = json.dumps(spec["tokenizer"], ensure_ascii=False, indent=2)
        if "tokenizer_config.json" not in files:
            c = dict(spec.get("config", {}))
            c["tokenizer_class"] = "PreTrainedTokenizerFast"
            files["tokenizer_config.json"] = json.dumps(c, indent=2) + "\n"
    return files


def parse_size(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMG]?B)?", text.strip().upper())
    if not m:
        raise ExportError(2, f"--max-shard-size {text!r}: expected a size such as 5GB, 500MB or 1000000")
    scale = {"KB": 10**3, "MB": 10**6, "GB": 10**9, "B": 1, None: 1}[m.group(2)]
    return int(float(m.group(1)) * scale)


def shard(plan, max_bytes):
    shards, cur, size = [], [], 0
    for item in plan:
        n = item[3]
        if cur and size + n > max_bytes:
            shards.append(cur)
            cur, size = [], 0
        cur.append(item)
        size += n
    if cur:
        shards.append(cur)
    return shards


def write_safetensors(path, arc, items, merge):
    """One safetensors file, streamed: header first, then each tensor read, cast and written in turn."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for hf_name, _, ref, nbytes, dtype in items:
        header[hf_name] = {"dtype": ST_DTYPE[dtype], "shape": list(ref.shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)  # the data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for hf_name, gspo_name, ref, nbytes, dtype in items:
            t = arc.read(ref)
            if gspo_name in merge:  # an adapted weight: W + (alpha / r) B A, in float32
                a, b, scale = merge[gspo_name]
                t = (t.float() + scale * (b.float() @ a.float())).to(t.dtype)
            if t.dtype != dtype:
                t = t.to(dtype)
            f.write(t.contiguous().view(torch.uint8).numpy().data if nbytes else b"")
            del t


def export_peft(a, base, ckpt):
    meta, adapters = peft_adapter.read_gspo(ckpt)
    name = os.path.abspath(base)  # (PEFT reads it only when no model is given to from_pretrained)
    with replaced_dir(a.out, a.overwrite, lambda m: ExportError(2, m)) as tmp:
        peft_adapter.write_peft(tmp, meta, adapters, name)
    print(f"wrote {a.out}: PEFT LoRA adapter, {len(adapters)} modules, r {meta['rank']}, lora_alpha {meta['alpha']:g}; "
          f"base {name}")


def export(a):
    src, ckpt = resolve_policy(a.checkpoint)
    if a.peft:
        if not ckpt:
            raise ExportError(2, f"{a.checkpoint}: --peft exports low-rank adapters; this checkpoint holds a whole "
                                 f"policy (export it without --peft)")
        return export_peft(a, src, ckpt)
    merge = {}
    if ckpt:
        meta, adapters = peft_adapter.read_gspo(ckpt)
        merge = {n: (A, B, meta["alpha"] / meta["rank"]) for n, A, B in adapters}
    arc = PolicyArchive(src)
    man = arc.manifest
    fam = man.get("architecture")
    if fam not in FAMILIES:
        raise ExportError(4, f"{src}: manifest architecture {fam!r} has no Hugging Face mapping "
                             f"(supported: {', '.join(FAMILIES)})")
    hs = man.get("hf_source") or {}
    tied = is_tied(arc)
    if a.dtype == "original":
        out_dtype = hs.get("dtype") or man.get("dtype", "float32")
        exceptions = hs.get("dtype_exceptions", {})
    else:
        out_dtype, exceptions = a.dtype, {}
    if getattr(torch, out_dtype, None) not in ST_DTYPE:
        raise ExportError(4, f"{src}: manifest hf_source.dtype {out_dtype!r} is not a floating dtype safetensors takes")
    plan = []
    for hf_name, gspo_name, ref in weight_plan(arc, tied):
        dtype = getattr(torch, exceptions.get(hf_name, out_dtype))
        plan.append((hf_name, gspo_name, ref, ref.numel() * torch.empty(0, dtype=dtype).element_size(), dtype))
    config_text, config_origin = write_config(man, arc, out_dtype, tied)
    extra = tokenizer_files(man, arc.tokenizer)

    with replaced_dir(a.out, a.overwrite, lambda m: ExportError(2, m)) as tmp:
        shards = shard(plan, parse_size(a.max_shard_size))
        if len(shards) == 1:
            write_safetensors(os.path.join(tmp, "model.safetensors"), arc, shards[0], merge)
        else:
            weight_map = {}
            for k, items in enumerate(shards):
                name = f"model-{k + 1:05d}-of-{len(shards):05d}.safetensors"
                write_safetensors(os.path.join(tmp, name), arc, items, merge)
                weight_map.update({it[0]: name for it in items})
            index = {"metadata": {"total_size": sum(it[3] for it in plan)}, "weight_map": weight_map}
            with open(os.path.join(tmp, "model.safetensors.index.json"), "w") as f:
                json.dump(index, f, indent=2)
        with open(os.path.join(tmp, "config.json"), "w", encoding="utf-8") as f:
            f.write(config_text)
        for name, text in extra.items():
            with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                f.write(text)
    params = sum(it[2].numel() for it in plan)
    print(f"wrote {a.out}: {fam}, {params} parameters in {len(shards)} safetensors file(s), {out_dtype}"
          f"{' (tied embeddings)' if tied else ''}; config.json {config_origin}; "
          f"{', '.join(sorted(extra)) or 'no tokenizer files (the policy has no Hugging Face tokenizer)'}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", required=True, help="checkpoint directory, run directory or policy .pt")
    p.add_argument("--out", required=True, help="Hugging Face directory to write")
    p.add_argument("--dtype", default="original", choices=["original", "float32", "bfloat16", "float16"],
                   help="weights' dtype: original = what export_hf.py read (per tensor)")
    p.add_argument("--max-shard-size", default="5GB", help="largest safetensors file before sharding (5GB)")
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty --out")
    p.add_argument("--peft", action="store_true", help="a checkpoint of LoRA adapters: write them as a PEFT adapter "
                   "directory instead of the merged model")
    a = p.parse_args()
    try:
        export(a)
    except (ExportError, peft_adapter.AdapterError) as e:
        print(f"export_to_hf: error: {e}", file=sys.stderr)
        sys.exit(e.code)
    except OSError as e:
        print(f"export_to_hf: error: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        sys.exit(5)


if __name__ == "__main__":
    main()
