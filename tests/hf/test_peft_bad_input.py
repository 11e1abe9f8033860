#!/usr/bin/env python3
"""scripts/peft_adapter.py import on malformed PEFT directories: Python only (no gspo binary, no transformers).

    scripts/py tests/hf/test_peft_bad_input.py --work build/peft_bad_input [--script scripts/peft_adapter.py]

A tiny TorchScript base (layers.0.self_attn.q_proj [24, 16], v_proj [8, 16]) and a valid rank-4 PEFT directory
written by hand; the valid one imports (exit 0, adapter.pt holding its A and B, adapter.json rank 4). Each bad
directory is the valid one with one defect, and its refusal must be: the stated exit code (5: the file cannot be read
as its format; 4: its content is refused), one line on stderr of the form `peft_adapter: error: <file>: ...`, no
traceback, the file named (and the key, value or tensor where the case says), and nothing written: a fresh --out not
created, or a pre-existing --out given with --overwrite holding its old contents, and no temporary sibling left.
Prints one line per case and ends with `N passed, M failed`; exits 1 when any case fails.
"""
import argparse
import glob
import json
import os
import random
import shutil
import subprocess
import sys

import torch
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "peft_adapter.py")

IN, OUT = {"q_proj": 16, "v_proj": 16}, {"q_proj": 24, "v_proj": 8}
RANK = 4
PREFIX = "base_model.model.model.layers.0.self_attn."


def key(proj, ab):
    return f"{PREFIX}{proj}.lora_{ab}.weight"


class Attn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj = torch.nn.Linear(IN["q_proj"], OUT["q_proj"], bias=False)
        self.v_proj = torch.nn.Linear(IN["v_proj"], OUT["v_proj"], bias=False)

    def forward(self, x):
        return torch.cat([self.q_proj(x), self.v_proj(x)], -1)


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn = Attn()

    def forward(self, x):
        return self.self_attn(x)


class Policy(torch.nn.Module):
    """named_parameters(): layers.0.self_attn.q_proj.weight, layers.0.self_attn.v_proj.weight, as a gspo policy's."""

    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([Layer()])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def valid_tensors():
    g = torch.Generator().manual_seed(0)
    t = {}
    for proj in ("q_proj", "v_proj"):
        t[key(proj, "A")] = torch.randn(RANK, IN[proj], generator=g)
        t[key(proj, "B")] = torch.randn(OUT[proj], RANK, generator=g)
    return t


def valid_config():
    return {"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": RANK, "lora_alpha": 8, "lora_dropout": 0.0,
            "target_modules": ["q_proj", "v_proj"], "bias": "none", "fan_in_fan_out": False, "use_rslora": False,
            "use_dora": False, "modules_to_save": None}


def write_peft(d, config=None, tensors=None, config_text=None, st_bytes=None):
    """A PEFT directory: the valid config and tensors unless given (as values or as raw file contents)."""
    os.makedirs(d)
    with open(os.path.join(d, "adapter_config.json"), "w") as f:
        f.write(config_text if config_text is not None else json.dumps(config or valid_config(), indent=2))
    st = os.path.join(d, "adapter_model.safetensors")
    if st_bytes is not None:
        with open(st, "wb") as f:
            f.write(st_bytes)
    else:
        save_file(tensors or valid_tensors(), st, metadata={"format": "pt"})
    return d


DROP = object()  # with_config(key=DROP): the key absent


def with_config(**changes):
    cfg = valid_config()
    for k, v in changes.items():
        if v is DROP:
            cfg.pop(k)
        else:
            cfg[k] = v
    return cfg


def with_tensor(k, t):
    ts = valid_tensors()
    ts[k] = t
    return ts


def poisoned(k, positions, value):
    t = valid_tensors()[k].clone()
    flat = t.view(-1)
    for p in positions:
        flat[p] = value
    return t


class Case:
    def __init__(self, name, code, names, make, existing_out=False):
        self.name, self.code, self.names, self.make, self.existing_out = name, code, names, make, existing_out


def cases(work):
    valid_bytes = open(os.path.join(work, "valid", "adapter_model.safetensors"), "rb").read()
    cfg_file, st_file = "adapter_config.json", "adapter_model.safetensors"
    qa, vb = key("q_proj", "A"), key("v_proj", "B")
    return [
        Case("config not JSON", 5, [cfg_file, "line 1 column"], dict(config_text='{"r": 8,')),
        Case("config a JSON list", 4, [cfg_file, "list"], dict(config_text="[1, 2]")),
        Case("safetensors truncated to half", 5, [st_file], dict(st_bytes=valid_bytes[: len(valid_bytes) // 2])),
        Case("safetensors random bytes", 5, [st_file],
             dict(st_bytes=random.Random(0).getrandbits(8 * 4096).to_bytes(4096, "little"))),
        Case("r 'sixteen'", 4, [cfg_file, "r 'sixteen'"], dict(config=with_config(r="sixteen"))),
        Case("r 0", 4, [cfg_file, "r 0"], dict(config=with_config(r=0))),
        Case("r 8.5", 4, [cfg_file, "r 8.5"], dict(config=with_config(r=8.5))),
        Case("r true", 4, [cfg_file, "r True"], dict(config=with_config(r=True))),
        Case("r missing", 4, [cfg_file, "r missing"], dict(config=with_config(r=DROP))),
        Case("lora_alpha 'x'", 4, [cfg_file, "lora_alpha 'x'"], dict(config=with_config(lora_alpha="x"))),
        Case("NaN in lora_A", 4, [st_file, qa, "3 non-finite"],
             dict(tensors=with_tensor(qa, poisoned(qa, [0, 5, 9], float("nan")))), existing_out=True),
        Case("Inf in lora_B", 4, [st_file, vb, "1 non-finite"],
             dict(tensors=with_tensor(vb, poisoned(vb, [2], float("-inf")))), existing_out=True),
        Case("int64 lora_A", 4, [st_file, qa, "int64"],
             dict(tensors=with_tensor(qa, torch.ones(RANK, IN["q_proj"], dtype=torch.int64)))),
        # A and B of rank 4, consistent with each other and the base: the config's r is what is wrong.
        Case("config r 8 over rank-4 tensors", 4,
             [cfg_file, "r 8", "the tensors have rank 4 but adapter_config.json says r 8"],
             dict(config=with_config(r=8))),
        Case("A's in of another base", 4, [st_file, "layers.0.self_attn.q_proj.weight", "another base"],
             dict(tensors=with_tensor(qa, torch.randn(RANK, 12)))),
    ]


def run_import(a, peft, out, overwrite=False):
    cmd = [sys.executable, a.script, "import", "--peft", peft, "--base", a.base, "--out", out]
    return subprocess.run(cmd + (["--overwrite"] if overwrite else []), capture_output=True, text=True)


def check_valid(a):
    """[] or what is wrong with importing the valid directory."""
    peft, out = os.path.join(a.work, "valid"), os.path.join(a.work, "out_valid")
    r = run_import(a, peft, out)
    if r.returncode != 0:
        return [f"exit {r.returncode}: {r.stderr.strip()[-300:]}"]
    problems = []
    meta = json.load(open(os.path.join(out, "adapter.json")))
    if meta.get("rank") != RANK or meta.get("alpha") != 8.0:
        problems.append(f"adapter.json rank {meta.get('rank')}, alpha {meta.get('alpha')} (want {RANK}, 8)")
    params = dict(torch.jit.load(os.path.join(out, "adapter.pt")).named_parameters())
    want = valid_tensors()
    for i, (proj, ab) in enumerate((p, x) for p in ("q_proj", "v_proj") for x in "AB"):
        if not torch.equal(params[str(i)].detach(), want[key(proj, ab)]):
            problems.append(f"adapter.pt parameter {i} is not {key(proj, ab)}")
    return problems


def check_bad(a, c):
    """[] or what is wrong with the refusal of case c."""
    slug = "".join(ch if ch.isalnum() else "_" for ch in c.name)
    peft = write_peft(os.path.join(a.work, "bad_" + slug), **c.make)
    out = os.path.join(a.work, "out_" + slug)
    old = os.path.join(out, "old.txt")
    if c.existing_out:
        os.makedirs(out)
        with open(old, "w") as f:
            f.write("old contents\n")
    r = run_import(a, peft, out, overwrite=c.existing_out)
    err = r.stderr.strip()
    problems = []
    if r.returncode != c.code:
        problems.append(f"exit {r.returncode}, want {c.code}")
    if "Traceback" in r.stderr:
        problems.append("a traceback")
    if len(err.splitlines()) != 1:
        problems.append(f"{len(err.splitlines())} lines on stderr, want 1")
    if not err.startswith("peft_adapter: error: "):
        problems.append("stderr does not start with 'peft_adapter: error: '")
    # The file named as a path inside the case's PEFT directory, not just its base name anywhere.
    for n in c.names:
        want = os.path.join(peft, n) if n.endswith((".json", ".safetensors")) else n
        if want not in err:
            problems.append(f"{want!r} not named")
    if c.existing_out:
        if not os.path.isfile(old) or open(old).read() != "old contents\n" or os.listdir(out) != ["old.txt"]:
            problems.append(f"existing --out changed: {sorted(os.listdir(out)) if os.path.isdir(out) else 'gone'}")
    elif os.path.exists(out):
        problems.append("--out created")
    if glob.glob(out + ".tmp-*"):
        problems.append("a temporary --out sibling left")
    return problems, err


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", required=True, help="scratch directory (emptied first)")
    ap.add_argument("--script", default=SCRIPT, help="the peft_adapter.py under test")
    a = ap.parse_args()
    a.script = os.path.abspath(a.script)
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    torch.manual_seed(0)
    a.base = os.path.join(a.work, "base.pt")
    torch.jit.script(Policy()).save(a.base)
    write_peft(os.path.join(a.work, "valid"))

    passed = failed = 0

    def report(name, problems, detail):
        nonlocal passed, failed
        if problems:
            failed += 1
            print(f"FAIL {name}: {'; '.join(problems)} | {detail[-300:]}")
        else:
            passed += 1
            print(f"ok   {name}: {detail}")

    report("valid rank-4 adapter imports", check_valid(a), "exit 0, adapter.pt = A, B of q_proj, v_proj")
    for c in cases(a.work):
        try:
            problems, err = check_bad(a, c)
        except Exception as e:  # a crash in one case's checks fails that case; the others still run
            problems, err = [f"{type(e).__name__}: {e}"], ""
        report(c.name, problems, f"stderr: {err!r}" if problems else err)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
