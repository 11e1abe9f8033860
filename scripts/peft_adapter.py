#!/usr/bin/env python3
"""LoRA adapters between gspo and PEFT (docs/lora.md).

    scripts/py scripts/peft_adapter.py import --peft PEFT_DIR --base POLICY.pt --out ADAPTER_DIR [--overwrite]

writes ADAPTER_DIR/adapter.pt + adapter.json from a PEFT LoRA directory (adapter_config.json +
adapter_model.safetensors) trained on the Hugging Face model that POLICY.pt was exported from (scripts/export_hf.py):
train on from it with `model.adapter: ADAPTER_DIR` (and model.lora_rank / lora_alpha as it says), or run it with
`gspo generate / eval --adapter ADAPTER_DIR`. The export direction is `scripts/export_to_hf.py --peft`, which uses
write_peft() below.

Names: gspo's weight "layers.3.self_attn.q_proj.weight" is the Hugging Face module "model.layers.3.self_attn.q_proj",
whose PEFT tensors are "base_model.model.model.layers.3.self_attn.q_proj.lora_A.weight" ([r, in]) and ".lora_B.weight"
([out, r]); per-expert MoE projections likewise ("model.layers.3.mlp.experts.5.gate_proj"). The update is
(lora_alpha / r) B A, or (lora_alpha / sqrt(r)) B A with use_rslora (imported as alpha' = lora_alpha x sqrt(r)).
Refused with exit 4, naming the key: DoRA, fan_in_fan_out, bias other than "none", modules_to_save, a rank_pattern
or alpha_pattern that applies to an adapted module, a target that is not a decoder-layer projection. lora_dropout is dropped (gspo merges adapters, where
no input dropout applies) with a note. Also exit 4, naming the file and the key or tensor: an adapter_config.json that
is not a JSON object; r missing or not a positive integer (an integral float counts, a bool does not); lora_alpha
missing; lora_alpha or lora_dropout not a finite number; a tensor that is not floating point or holds NaN or Inf
(non-finite values); A / B shapes that disagree with each other, with the base's weight (trained on another base) or
with r (the tensors' own rank is named). Exit 5: a missing or unreadable file, which includes an
adapter_config.json that is not JSON (line and column named) and a truncated or corrupt adapter_model.safetensors;
2: --out in use. Every refusal is one line, `peft_adapter: error: <file>: <what>`, and comes before anything is
written to ADAPTER_DIR.
"""
import argparse
import json
import math
import os
import re
import sys

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from replaced_dir import replaced_dir

PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
PREFIX = "base_model.model."
KEY = re.compile(r"^base_model\.model\.model\.(layers\.\d+\..*\.([A-Za-z0-9_]+))\.lora_([AB])\.weight$")


class AdapterError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def read_gspo(ckpt):
    """adapter.json and the A, B tensors of a gspo checkpoint of adapters: (meta, [(name, A, B)])."""
    meta_path, pt = os.path.join(ckpt, "adapter.json"), os.path.join(ckpt, "adapter.pt")
    if not (os.path.isfile(meta_path) and os.path.isfile(pt)):
        raise AdapterError(5, f"{ckpt}: no adapter.json / adapter.pt (not a checkpoint of LoRA adapters)")
    meta = json.load(open(meta_path))
    saved = torch.jit.load(pt, map_location="cpu")
    tensors = dict(saved.named_parameters())
    out = [(name, tensors[str(2 * k)].detach(), tensors[str(2 * k + 1)].detach()) for k, name in enumerate(meta["names"])]
    return meta, out


def write_gspo(out, meta, adapters):
    """adapter.pt (parameters "0", "1", ...: A then B of each adapter, as gspo's io::save_tensors writes them) and
    adapter.json into directory `out`."""

    class Tensors(torch.nn.Module):
        def __init__(self, ts):
            super().__init__()
            for i, t in enumerate(ts):
                self.register_parameter(str(i), torch.nn.Parameter(t.contiguous(), requires_grad=False))

    flat = [t.float() for _, a, b in adapters for t in (a, b)]
    torch.jit.script(Tensors(flat)).save(os.path.join(out, "adapter.pt"))
    meta = dict(meta, names=[n for n, _, _ in adapters])
    with open(os.path.join(out, "adapter.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")


def write_peft(out, meta, adapters, base_model_name):
    """adapter_config.json + adapter_model.safetensors (float32) into directory `out`. target_modules lists every
    adapted module by its full name, so PEFT adapts exactly gspo's weights (not, say, every expert's gate_proj)."""
    tensors, modules = {}, []
    for name, a, b in adapters:
        module = "model." + name[: -len(".weight")]
        modules.append(module)
        tensors[f"{PREFIX}{module}.lora_A.weight"] = a.float().contiguous()
        tensors[f"{PREFIX}{module}.lora_B.weight"] = b.float().contiguous()
    config = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "base_model_name_or_path": base_model_name,
              "r": meta["rank"], "lora_alpha": meta["alpha"], "lora_dropout": 0.0, "target_modules": modules,
              "bias": "none", "fan_in_fan_out": False, "use_rslora": False, "use_dora": False,
              "modules_to_save": None, "init_lora_weights": True, "inference_mode": True}
    save_file(tensors, os.path.join(out, "adapter_model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(out, "adapter_config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")


def weights_fingerprint(policy_path):
    """gspo's model::weights_fingerprint: the sum and the sum of squares of every parameter, in double."""
    m = torch.jit.load(policy_path, map_location="cpu")
    s = q = 0.0
    for p in m.parameters():
        d = p.detach().double()
        s += d.sum().item()
        q += d.square().sum().item()
    return [s, q], m


def one_line(e):
    """An exception's text as part of a one-line refusal."""
    return " ".join(str(e).split()) or type(e).__name__


def read_config(path):
    """adapter_config.json as a dict. Exit 5 where it is not JSON text, 4 where the JSON is not an object."""
    try:
        with open(path, encoding="utf-8") as f:
            cfg = json.load(f)
    except json.JSONDecodeError as e:
        raise AdapterError(5, f"{path}: not JSON (line {e.lineno} column {e.colno}: {e.msg})")
    except UnicodeDecodeError as e:
        raise AdapterError(5, f"{path}: not UTF-8 text (byte {e.start}: {e.reason})")
    if not isinstance(cfg, dict):
        raise AdapterError(4, f"{path}: a JSON {type(cfg).__name__}, not an object (PEFT writes an object of settings)")
    return cfg


def number(cfg, key, where, default=None):
    """cfg[key] as a finite float (an int or float, not a bool); `default` where absent, refused where it is None."""
    if key not in cfg:
        if default is None:
            raise AdapterError(4, f"{where}: {key} missing")
        return default
    v = cfg[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise AdapterError(4, f"{where}: {key} {v!r}: not a finite number")
    return float(v)


def rank(cfg, where):
    """cfg["r"] as a positive int; an integral float (8.0) counts, a bool or 8.5 does not."""
    if "r" not in cfg:
        raise AdapterError(4, f"{where}: r missing")
    v = cfg["r"]
    integral = isinstance(v, int) or (isinstance(v, float) and math.isfinite(v) and v == int(v))
    if isinstance(v, bool) or not integral or v <= 0:
        raise AdapterError(4, f"{where}: r {v!r}: not a positive integer")
    return int(v)


def read_tensors(st):
    """adapter_model.safetensors as {key: tensor}. Exit 5 where safetensors cannot read it (truncated, not a
    safetensors file)."""
    try:
        return load_file(st)
    except (SafetensorError, ValueError, RuntimeError) as e:
        raise AdapterError(5, f"{st}: not a readable safetensors file ({one_line(e)})")


def read_peft(peft_dir):
    """(rank, alpha as gspo scales it, dropout, {gspo weight name: (A, B)}) of a PEFT LoRA directory. Every tensor is
    floating point and finite; shapes are import_peft's to check against the base."""
    cfg_path = os.path.join(peft_dir, "adapter_config.json")
    st = os.path.join(peft_dir, "adapter_model.safetensors")
    if not os.path.isfile(cfg_path) or not os.path.isfile(st):
        raise AdapterError(5, f"{peft_dir}: no adapter_config.json / adapter_model.safetensors (not a PEFT adapter)")
    cfg = read_config(cfg_path)
    where = f"{cfg_path}"
    if cfg.get("peft_type", "LORA") != "LORA":
        raise AdapterError(4, f"{where}: peft_type {cfg.get('peft_type')!r}: only LORA adapters import")
    for key, ok in (("use_dora", False), ("fan_in_fan_out", False)):
        if bool(cfg.get(key, ok)) != ok:
            raise AdapterError(4, f"{where}: {key} {cfg.get(key)!r} is not supported (gspo merges W + (alpha / r) B A)")
    if cfg.get("bias", "none") != "none":
        raise AdapterError(4, f"{where}: bias {cfg.get('bias')!r}: only 'none' imports (gspo trains no biases)")
    if cfg.get("modules_to_save"):
        raise AdapterError(4, f"{where}: modules_to_save {cfg['modules_to_save']}: gspo trains adapters only")
    r, alpha, dropout = rank(cfg, where), number(cfg, "lora_alpha", where), number(cfg, "lora_dropout", where, 0.0)
    if cfg.get("use_rslora"):
        alpha *= math.sqrt(r)  # (alpha / sqrt(r)) B A == (alpha sqrt(r) / r) B A
    pairs = {}
    for key, t in read_tensors(st).items():
        m = KEY.match(key)
        if not m or m.group(2) not in PROJECTIONS:
            raise AdapterError(4, f"{st}: tensor {key!r} is not the LoRA A or B of a decoder-layer projection "
                                  f"({', '.join(PROJECTIONS)})")
        if not t.is_floating_point():
            raise AdapterError(4, f"{st}: tensor {key!r} is {str(t.dtype).replace('torch.', '')}, not floating point")
        bad = t.numel() - int(torch.isfinite(t).sum())
        if bad:
            raise AdapterError(4, f"{st}: tensor {key!r} has {bad} non-finite values (NaN or Inf)")
        pairs.setdefault(m.group(1) + ".weight", {})[m.group(3)] = t
    # Another rank or alpha for some modules: refused where it applies (PEFT writes patterns for modules a model may
    # not have, e.g. transformers' fused MoE experts, and ignores them).
    for key in ("rank_pattern", "alpha_pattern"):
        for pattern in cfg.get(key) or {}:
            hit = [n for n in pairs if re.search(pattern, "model." + n[: -len(".weight")])]
            if hit:
                raise AdapterError(4, f"{where}: {key} {pattern!r} applies to {hit[0]}: one rank and one alpha for "
                                      f"every adapter only")
    return r, alpha, dropout, pairs


def import_peft(a):
    if not os.path.isfile(a.base):
        raise AdapterError(5, f"{a.base}: no such policy file")
    r, alpha, dropout, pairs = read_peft(a.peft)
    cfg_path = os.path.join(a.peft, "adapter_config.json")
    st = os.path.join(a.peft, "adapter_model.safetensors")
    fingerprint, base = weights_fingerprint(a.base)
    weights = dict(base.named_parameters())
    adapters = []
    for name, _ in base.named_parameters():  # gspo's order: the module's (model/lora.h)
        if name not in pairs:
            continue
        ab = pairs.pop(name)
        if set(ab) != {"A", "B"}:
            raise AdapterError(4, f"{a.peft}: {name} has lora_{'A' if 'A' in ab else 'B'} only")
        out, inp = weights[name].shape
        sa, sb = tuple(ab["A"].shape), tuple(ab["B"].shape)
        # A [r', in] and B [out, r']: an in / out other than the base weight's means another base; an r' that A and
        # B agree on but the config's r does not means the config is wrong.
        if len(sa) != 2 or len(sb) != 2:
            raise AdapterError(4, f"{st}: {name}: A {sa}, B {sb}: not matrices")
        if (sa[1], sb[0]) != (inp, out):
            raise AdapterError(4, f"{st}: {name}: A {sa}, B {sb}; the base's weight is {(out, inp)} at r {r}: "
                                  f"trained on another base?")
        if sa[0] != sb[1]:
            raise AdapterError(4, f"{st}: {name}: A {sa}, B {sb}: A's rank {sa[0]} and B's rank {sb[1]} differ")
        if sa[0] != r:
            raise AdapterError(4, f"{cfg_path}: r {r}: the tensors have rank {sa[0]} but adapter_config.json says "
                                  f"r {r} ({name}: A {sa}, B {sb})")
        adapters.append((name, ab["A"], ab["B"]))
    if pairs:
        raise AdapterError(4, f"{a.peft}: adapters for weights {a.base} does not have: {sorted(pairs)[:3]}")
    if not adapters:
        raise AdapterError(4, f"{a.peft}: no adapters")
    targets = sorted({n.rsplit(".", 2)[-2] for n, _, _ in adapters}, key=PROJECTIONS.index)
    meta = {"rank": r, "alpha": alpha, "targets": targets, "experts": any(".experts." in n for n, _, _ in adapters),
            "base_path": os.path.abspath(a.base), "base_fingerprint": fingerprint}
    with replaced_dir(a.out, a.overwrite, lambda m: AdapterError(2, m)) as tmp:
        write_gspo(tmp, meta, adapters)
    note = f"; lora_dropout {dropout} dropped (merged adapters have no input dropout)" if dropout else ""
    print(f"wrote {a.out}: {len(adapters)} adapters, rank {r}, alpha {alpha:g} (model.lora_rank={r} "
          f"model.lora_alpha={alpha:g}), targets {' '.join(targets)}{note}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    imp = sub.add_parser("import", help="a PEFT LoRA directory into gspo's adapter.pt + adapter.json")
    imp.add_argument("--peft", required=True, help="PEFT adapter directory")
    imp.add_argument("--base", required=True, help="the gspo policy .pt exported from the adapters' base model")
    imp.add_argument("--out", required=True, help="directory to write adapter.pt and adapter.json into")
    imp.add_argument("--overwrite", action="store_true", help="replace a non-empty --out")
    a = p.parse_args()
    try:
        import_peft(a)
    except AdapterError as e:
        print(f"peft_adapter: error: {e}", file=sys.stderr)
        sys.exit(e.code)
    except OSError as e:
        print(f"peft_adapter: error: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        sys.exit(5)


if __name__ == "__main__":
    main()
