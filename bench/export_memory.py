#!/usr/bin/env python3
"""Peak memory of scripts/export_to_hf.py against the model's size (docs/hf-roundtrip.md).

    scripts/py bench/export_memory.py --work /tmp/export_mem [--hidden 1024 --layers 20 --vocab 32000]

Makes a random float32 Llama from a config (380M parameters, 1.5 GB with the defaults; disk: ~3x that under
--work), exports it to gspo with scripts/export_hf.py, then measures each child process's peak RSS (ru_maxrss):
  - python + torch imported, nothing else (the floor every run pays);
  - export_to_hf.py to the original float32, and with --dtype bfloat16 (a cast copy of each tensor);
  - for contrast, the non-streaming way: torch.jit.load + state_dict + safetensors save_file.
It checks the streamed export bit for bit against the original safetensors file and prints one table.
"""
import argparse
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

NAIVE = """
import sys, torch
from safetensors.torch import save_file
m = torch.jit.load(sys.argv[1])
sd = {("" if k.startswith("lm_head") else "model.") + k: v.contiguous() for k, v in m.state_dict().items()
      if not k.endswith(("cos_table", "sin_table", "q_norm.weight", "k_norm.weight", "last_load"))}
save_file(sd, sys.argv[2], metadata={"format": "pt"})
"""


def peak_rss_mb(cmd):
    """Runs cmd in a fresh child and returns (seconds, its peak RSS in MB): wait4's rusage is that child's alone."""
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd[:3])} failed:\n{out[-2000:]}")
    return time.time() - t0, usage.ru_maxrss / 1024.0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", required=True)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--layers", type=int, default=20)
    p.add_argument("--vocab", type=int, default=32000)
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    hf, pt = os.path.join(a.work, "hf"), os.path.join(a.work, "model.pt")
    py = sys.executable
    if not os.path.exists(os.path.join(hf, "model.safetensors")):
        make = (f"import torch; from transformers import LlamaConfig, AutoModelForCausalLM\n"
                f"torch.manual_seed(0)\n"
                f"c = LlamaConfig(vocab_size={a.vocab}, hidden_size={a.hidden}, intermediate_size={4 * a.hidden},"
                f" num_hidden_layers={a.layers}, num_attention_heads=16, num_key_value_heads=8,"
                f" max_position_embeddings=512, eos_token_id=2, tie_word_embeddings=False)\n"
                f"AutoModelForCausalLM.from_config(c).save_pretrained({hf!r}, max_shard_size='50GB')\n")
        subprocess.run([py, "-c", make], check=True)
    if not os.path.exists(pt):
        subprocess.run([py, f"{ROOT}/scripts/export_hf.py", "--hf", hf, "--out", pt], check=True)
    size_mb = os.path.getsize(os.path.join(hf, "model.safetensors")) / 1e6
    from safetensors import safe_open
    with safe_open(os.path.join(hf, "model.safetensors"), "pt") as f:
        shapes = {k: f.get_slice(k).get_shape() for k in f.keys()}
    numel = {k: 1 for k in shapes}
    for k, s in shapes.items():
        for d in s:
            numel[k] *= d
    params, largest = sum(numel.values()), max(numel.values())
    rows = [("python + import torch", peak_rss_mb([py, "-c", "import torch, safetensors"]))]
    out32, out16 = os.path.join(a.work, "back32"), os.path.join(a.work, "back16")
    exe = [py, f"{ROOT}/scripts/export_to_hf.py", "--checkpoint", pt, "--overwrite"]
    rows.append(("export_to_hf.py (float32)", peak_rss_mb(exe + ["--out", out32])))
    rows.append(("export_to_hf.py --dtype bfloat16", peak_rss_mb(exe + ["--out", out16, "--dtype", "bfloat16"])))
    rows.append(("naive: jit.load + save_file", peak_rss_mb([py, "-c", NAIVE, pt, os.path.join(a.work, "naive.safetensors")])))
    same = subprocess.run(["cmp", os.path.join(hf, "model.safetensors"), os.path.join(out32, "model.safetensors")],
                          capture_output=True).returncode == 0
    if not same:  # tensor order or header spacing may differ from save_pretrained's: compare tensor by tensor
        with safe_open(os.path.join(hf, "model.safetensors"), "pt") as x, \
                safe_open(os.path.join(out32, "model.safetensors"), "pt") as y:
            import torch
            same = sorted(x.keys()) == sorted(y.keys()) and all(torch.equal(x.get_tensor(k), y.get_tensor(k))
                                                                for k in x.keys())
    print(f"model: llama, {params / 1e6:.0f}M parameters, float32 safetensors {size_mb:.0f} MB; "
          f"largest tensor {largest / 1e6:.1f}M elements ({largest * 4 / 1e6:.0f} MB float32)")
    print(f"streamed float32 export equals the original tensor for tensor: {same}")
    print(f"| run | seconds | peak RSS MB |\n|---|---|---|")
    for name, (sec, mb) in rows:
        print(f"| {name} | {sec:.1f} | {mb:.0f} |")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
