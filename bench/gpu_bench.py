#!/usr/bin/env python3
"""The Python side of scripts/gpu_check.sh's measurements (issue 38, docs/gpu.md): models, baselines, limits, tables.

    python3 bench/gpu_bench.py model --shape 0.6b --tokenizer DIR --out DIR [--device cuda] [--max-seq-len N]
    python3 bench/gpu_bench.py generate --hf DIR --rows 64 256 --new 1024 [--device cuda] >> cells.jsonl
    python3 bench/gpu_bench.py limits [--device cuda] >> limits.jsonl
    python3 bench/gpu_bench.py table --dir DIR

model     a Qwen3-shaped random model (transformers' Qwen3 classes from a config, seeded, bf16; nothing downloaded)
          saved as a Hugging Face directory DIR/hf with the tokenizer, and exported to DIR/model.pt (bf16) by
          scripts/export_hf.py: the path a user's checkpoint takes. Shapes: 0.6b and 1.7b are Qwen3-0.6B and
          Qwen3-1.7B's published configs (28 layers, GQA 16/8, head 128, tied embeddings), tiny a 2-layer one for
          dry runs on a CPU. The real 151,936-entry vocabulary.
generate  transformers `generate` on the same weights: static cache, SDPA attention, temperature 1 sampling, every
          response exactly --new tokens (min_new_tokens = max_new_tokens, as bench_rollout --fixed); one warm-up call,
          then one timed call per row count; one JSON line each (tokens/s, seconds, peak GPU MB).
limits    what the device can do, measured in the same call as the benchmarks: device-to-device copy bandwidth
          (bytes read + written, 1 GiB buffers) and the bf16 matrix-product rate (8192^3; 2048^3 on a CPU).
table     reads DIR/*.jsonl (the cells above, bench_rollout's, the long-response run's) and prints the tables of
          docs/gpu.md with the ratios: gspo / generate, the decode's fraction of the bandwidth bound, the update's MFU.
No Python runs inside gspo: these are the baselines and the arithmetic beside it.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Qwen3's published configs (hidden, intermediate, layers, heads, KV heads); head_dim 128, tied embeddings.
SHAPES = {"0.6b": (1024, 3072, 28, 16, 8, 128), "1.7b": (2048, 6144, 28, 16, 8, 128), "tiny": (128, 384, 2, 4, 2, 32)}
VOCAB = 151936


def sync(device):
    import torch
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def cmd_model(a):
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM
    hidden, inter, layers, heads, kv, hd = SHAPES[a.shape]
    cfg = Qwen3Config(vocab_size=VOCAB, hidden_size=hidden, intermediate_size=inter, num_hidden_layers=layers,
                      num_attention_heads=heads, num_key_value_heads=kv, head_dim=hd, max_position_embeddings=a.max_seq_len,
                      rope_theta=1e6, tie_word_embeddings=True, bos_token_id=151643, eos_token_id=151645)
    hf = os.path.join(a.out, "hf")
    os.makedirs(hf, exist_ok=True)
    t0 = time.time()
    torch.manual_seed(0)
    with torch.device(a.device):  # initialised where it is fast (the GPU), saved from there
        model = Qwen3ForCausalLM(cfg).to(torch.bfloat16)
    model.save_pretrained(hf)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(a.tokenizer, f), hf)
    n = sum(p.numel() for p in model.parameters())
    del model
    out = os.path.join(a.out, "model.pt")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "export_hf.py"), "--hf", hf, "--out", out,
                    "--dtype", "bfloat16", "--max-seq-len", str(a.max_seq_len)], check=True, stdout=subprocess.DEVNULL)
    info = {"shape": a.shape, "params": n, "layers": layers, "hidden": hidden, "heads": heads, "kv_heads": kv,
            "head_dim": hd, "vocab": VOCAB, "seconds": round(time.time() - t0, 1)}
    json.dump(info, open(os.path.join(a.out, "model.json"), "w"))
    print(json.dumps(info))


def cmd_generate(a):
    import torch
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(a.hf, dtype=torch.bfloat16, attn_implementation="sdpa").to(a.device)
    model.eval()
    torch.manual_seed(0)

    def run(rows, new):
        ids = (torch.arange(rows * a.prompt, device=a.device).view(rows, a.prompt) * 7 + 100) % 5000
        mask = torch.ones_like(ids)
        sync(a.device)
        t0 = time.perf_counter()
        out = model.generate(input_ids=ids, attention_mask=mask, do_sample=True, temperature=1.0, top_p=1.0, top_k=0,
                             max_new_tokens=new, min_new_tokens=new, cache_implementation="static",
                             pad_token_id=0)
        sync(a.device)
        return time.perf_counter() - t0, (out.shape[1] - a.prompt) * rows

    with torch.no_grad():
        run(min(a.rows), 8)  # warm-up: kernels, the static cache's first allocation
        for rows in a.rows:
            if a.device.startswith("cuda"):
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
            try:
                s, tokens = run(rows, a.new)
            except torch.OutOfMemoryError as e:  # a cell that does not fit is a result, not a crash of the stage
                print(json.dumps({"bench": "generate", "rows": rows, "new": a.new, "oom": str(e)[:200]}), flush=True)
                continue
            peak = torch.cuda.max_memory_allocated() / 2**20 if a.device.startswith("cuda") else 0
            print(json.dumps({"bench": "generate", "rows": rows, "new": a.new, "tokens": tokens, "seconds": round(s, 3),
                              "tokens_per_s": tokens / s, "peak_gpu_mb": round(peak), "device": a.device,
                              "transformers": __import__("transformers").__version__}), flush=True)


def cmd_limits(a):
    import torch
    cuda = a.device.startswith("cuda")
    n = (1 << 30 if cuda else 1 << 27) // 2  # bf16 elements: 1 GiB on a GPU, 128 MiB on a CPU
    src = torch.ones(n, dtype=torch.bfloat16, device=a.device)
    dst = torch.empty_like(src)

    def timed(f, reps):
        f()
        sync(a.device)
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(reps):
                f()
            sync(a.device)
            best = min(best, (time.perf_counter() - t0) / reps)
        return best

    copy_s = timed(lambda: dst.copy_(src), 20 if cuda else 3)
    m = 8192 if cuda else 512  # (a CPU without bf16 instructions takes minutes over 2048^3 in bf16)
    x = torch.randn(m, m, dtype=torch.bfloat16, device=a.device)
    y = torch.randn(m, m, dtype=torch.bfloat16, device=a.device)
    gemm_s = timed(lambda: torch.mm(x, y), 10 if cuda else 1)
    name = torch.cuda.get_device_name() if cuda else "cpu"
    driver = ""
    if cuda and shutil.which("nvidia-smi"):
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True).stdout.strip()
    print(json.dumps({"bench": "limits", "device": a.device, "name": name, "driver": driver,
                      "copy_gb_s": 2 * n * 2 / copy_s / 1e9, "gemm_tflops": 2 * m ** 3 / gemm_s / 1e12, "gemm_n": m,
                      "torch": torch.__version__, "transformers": __import__("transformers").__version__}))


def cmd_longcfg(a):
    """gspo train's config for one step on responses of exactly --length tokens (2 rows: one prompt, a group of 2)."""
    graphs = "true" if a.device.startswith("cuda") else "false"
    with open(a.out, "w") as f:
        f.write(f"""# Written by bench/gpu_bench.py longcfg: one GSPO step on {a.length}-token responses (issue 38 item 5).
model:
  path: {a.model}
  device: {a.device}
  dtype: bfloat16
data:
  task: jsonl
  path: {os.path.join(ROOT, "data", "math_sample.jsonl")}
  prompt_template: "{{prompt}}"
  chat_template: chatml
  enable_thinking: false
rollout:
  prompts_per_step: 1
  group_size: 2
  max_new_tokens: {a.length}
  min_new_tokens: {a.length}
  temperature: 1.0
  cuda_graphs: {graphs}
reward:
  components: ["math:1.0"]
algorithm:
  loss: gspo
  num_minibatches: 1
  micro_batch_size: 1
optimizer:
  lr: 1.0e-6
  state_bits: {a.state_bits}
train:
  max_steps: 1
  output_dir: {a.run}
checkpoint:
  every: 0
  at_end: false          # no 20 GB save of weights and AdamW state after the measured step
distributed:
  zero_stage: {a.zero_stage}
  optimizer_offload: {"true" if a.offload else "false"}
""")


def cmd_long(a):
    """One JSON line: the long-response step's measured peak_mb_update against gspo plan's, and its MFU."""
    rows = [json.loads(x) for x in open(os.path.join(a.run, "metrics.jsonl")) if x.strip()]
    m = [r for r in rows if "time_step_s" in r][-1]
    info = json.load(open(a.model_json))
    prompt = int(m["prefill_tokens"])  # one prompt a step: its columns
    plan = json.loads(subprocess.run([a.gspo, "plan", "--config", a.config, "--json", "--prompt-tokens", str(prompt),
                                      "--device-gb", str(a.device_gb)], check=True, capture_output=True,
                                     text=True).stdout)
    tokens = m["train_tokens_per_s"] * m["time_update_s"]
    nrows = 2
    t = tokens / nrows
    # Model FLOPs of the update (forward + backward, recomputation not counted): 6 x params a token, plus causal
    # attention's 6 x layers x (heads x head_dim) x T^2 a row of T tokens (QK^T and AV, forward and backward).
    d_attn = SHAPES[info["shape"]][3] * info["head_dim"]  # query heads x head_dim
    flops = 6 * info["params"] * tokens + nrows * 6 * info["layers"] * d_attn * t * t
    lim = None
    if a.limits and os.path.exists(a.limits):
        lim = next((json.loads(x) for x in open(a.limits) if '"limits"' in x), None)
    out = {"bench": "long", "model": info["shape"], "rows": nrows, "response": a.length, "prompt": prompt,
           "zero_stage": plan["zero_stage"], "state_bits": a.state_bits, "offload": a.offload,
           "optimizer_state_mb": m.get("optimizer_state_mb_per_rank"), "peak_gpu_mb": m.get("peak_gpu_mb"),
           "peak_mb_update": m["peak_mb_update"], "peak_mb_rollout": m["peak_mb_rollout"],
           "peak_mb_logprobs": m["peak_mb_logprobs"], "plan_mb": plan["phases"]["update"]["peak_mb"],
           "plan_peak_mb": plan["peak_mb"], "plan_phases": {k: v["peak_mb"] for k, v in plan["phases"].items()},
           "update_s": m["time_update_s"], "old_logprobs_s": m.get("time_old_logprobs_s"),
           "sample_s": m["time_sample_s"], "tokens": tokens, "flops": flops,
           "mfu": flops / m["time_update_s"] / (lim["gemm_tflops"] * 1e12) if lim else None}
    print(json.dumps(out))


def read_cells(d):
    cells = []
    for f in sorted(glob.glob(os.path.join(d, "*.jsonl"))):
        for line in open(f):
            line = line.strip()
            if line.startswith("{"):
                c = json.loads(line)
                c.setdefault("file", os.path.basename(f))
                cells.append(c)
    return cells


def cmd_table(a):
    cells = read_cells(a.dir)
    limits = next((c for c in cells if c.get("bench") == "limits"), None)
    model = json.load(open(os.path.join(a.dir, "model.json"))) if os.path.exists(os.path.join(a.dir, "model.json")) else None
    if limits:
        print(f"device {limits['name']}" + (f" (driver {limits['driver']})" if limits.get("driver") else "") +
              f": copy {limits['copy_gb_s']:.0f} GB/s (read + written), bf16 GEMM {limits['gemm_tflops']:.3g} TFLOP/s "
              f"({limits['gemm_n']}^3); torch {limits['torch']}, transformers {limits.get('transformers', '?')}\n")
    if model:
        print(f"model: Qwen3-{model['shape']}-shaped, random, bf16: {model['params'] / 1e6:.0f}M parameters, "
              f"{model['layers']} layers, hidden {model['hidden']}, {model['kv_heads']} KV heads of {model['head_dim']}, "
              f"vocabulary {model['vocab']}; prompts of 16 tokens, temperature 1, every response exactly its length\n")
    hf = {(c["rows"], c["new"]): c for c in cells if c.get("bench") == "generate" and "tokens_per_s" in c}
    gspo = [c for c in cells if "mode" in c and "tokens_per_s" in c and c.get("file", "").startswith("sample")]
    # A decode step reads every weight once and each row's live keys and values (the prompt's 16 and, on average, half
    # the response): the bandwidth bound over live keys, at the copy rate measured in the same call.
    def live_bound(rows, new):
        if not (model and limits):
            return None
        kv_tok = model["layers"] * 2 * model["kv_heads"] * model["head_dim"] * 2
        per_step = model["params"] * 2 + rows * kv_tok * (16 + new / 2)
        return rows * limits["copy_gb_s"] * 1e9 / per_step
    if gspo:
        print("| rows | new tokens | gspo decode | KV budget | gspo tok/s | generate tok/s | gspo / generate | "
              "graph captures (s) | peak GPU MB (gspo / generate) | ms a step (whole call) | bound over live keys tok/s | share |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for c in gspo:
            new = c["max_len"]
            h = hf.get((c["rows"], new))
            budget = (f"{c['kv_fraction']:g} of free" if c.get("kv_fraction") else
                      "none" if c["budget_mb"] == 0 else f"{c['budget_mb']} MB")
            decode = "CUDA graphs" if c.get("cuda_graphs") else "eager"
            theirs = f"{h['tokens_per_s']:.0f}" if h else "-"
            ratio = f"{c['tokens_per_s'] / h['tokens_per_s']:.2f}x" if h else "-"
            bound = live_bound(c["rows"], new)
            bound_cells = f"{bound:.0f} | {c['tokens_per_s'] / bound:.0%}" if bound else "- | -"
            print(f"| {c['rows']} | {new} | {decode} | {budget} | {c['tokens_per_s']:.0f} | {theirs} | {ratio} | "
                  f"{c.get('graph_captures', 0)}{' (%.1f)' % c['capture_s'] if c.get('capture_s') else ''} | {c.get('peak_gpu_mb', 0):.0f} / {h['peak_gpu_mb'] if h else '-'} | "
                  f"{1000 * c['rows'] / c['tokens_per_s']:.1f} | {bound_cells} |")
        for c in cells:
            if c.get("bench") == "generate" and "oom" in c:
                print(f"\n(generate at {c['rows']} rows x {c['new']} tokens ran out of memory)")
        print()
    one = [c for c in cells if "mode" in c and c.get("file", "").startswith("decode1")]
    if one and limits and model:
        # Batch-1 decode reads every weight once a token (tied embedding counted once: the head reads it) plus the
        # live KV cache: layers x 2 x KV heads x head_dim x 2 B per cached token, on average prompt + new / 2 tokens.
        weights = model["params"] * 2
        kv_tok = model["layers"] * 2 * model["kv_heads"] * model["head_dim"] * 2
        bw = limits["copy_gb_s"] * 1e9  # the memory's rate, bytes read + written (a decode step mostly reads)
        print("| batch-1 decode | tok/s | bytes a token (weights + mean KV) | achieved GB/s | fraction of the bound |")
        print("|---|---|---|---|---|")
        for c in one:
            per = weights + kv_tok * (16 + c["max_len"] / 2)
            print(f"| {'CUDA graphs' if c.get('cuda_graphs') else 'eager'} | {c['tokens_per_s']:.1f} | {per / 1e6:.0f} MB | "
                  f"{per * c['tokens_per_s'] / 1e9:.0f} | {per * c['tokens_per_s'] / bw:.0%} |")
        print(f"\n(bound: {bw / 1e9:.0f} GB/s, the copy's bytes read + written a second, measured in the same call)\n")
    prof = [c for c in cells if c.get("file", "").startswith("profile") and "profile_ops_per_step" in c]
    if prof:
        print("| profiled decode step | rows | operators a step | device kernels a step | device ms a step | "
              "wall ms a step | bytes a step (weights + live KV) | achieved GB/s on the device | attention kernels |")
        print("|---|---|---|---|---|---|---|---|---|")
        for c in prof:
            per = None
            if model:
                kv_tok = model["layers"] * 2 * model["kv_heads"] * model["head_dim"] * 2
                per = model["params"] * 2 + c["rows"] * kv_tok * (16 + 1.5 * c["profile_steps"])
            ms = c["profile_device_ms_per_step"]
            size = f"{per / 1e6:.0f} MB" if per else "-"
            rate = f"{per / ms / 1e6:.0f}" if per and ms > 0 else "-"
            decode = "CUDA graphs" if c.get("cuda_graphs") else "eager"
            print(f"| {decode} | {c['rows']} | {c['profile_ops_per_step']:.1f} | {c['profile_kernels_per_step']:.1f} | "
                  f"{ms:.3f} | {c.get('profile_wall_ms_per_step', float('nan')):.3f} | {size} | {rate} | {c.get('profile_attention') or '-'} |")
        print()
    for c in cells:
        if c.get("bench") == "long":
            where = ", ZeRO-3 on one rank" if c.get("zero_stage") == 3 else ""
            if c.get("state_bits", 32) != 32 or c.get("offload"):  # issue 56: 8-bit moments, offloaded state
                where += f", {c.get('state_bits', 32)}-bit moments" + (", offloaded" if c.get("offload") else "")
            mfu = (f", MFU {c['mfu']:.0%} (6 x params x tokens + causal attention, over "
                   f"{limits['gemm_tflops']:.3g} TFLOP/s)") if limits and c.get("mfu") else ""
            gpu = f", peak_gpu_mb {c['peak_gpu_mb']:.0f}" if c.get("peak_gpu_mb") else ""
            moments = (f"; AdamW moments {c['optimizer_state_mb']:.0f} MB"
                       if c.get("optimizer_state_mb") is not None else "")
            print(f"long response: {c['rows']} rows x {c['response']} tokens, {c['model']}{where}: peak_mb_update "
                  f"{c['peak_mb_update']:.0f} against the plan's {c['plan_mb']:.0f} "
                  f"({c['peak_mb_update'] / c['plan_mb'] - 1:+.0%}){gpu}; update {c['update_s']:.2f} s{mfu}{moments}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("model")
    m.add_argument("--shape", choices=sorted(SHAPES), required=True)
    m.add_argument("--tokenizer", required=True, help="folder with the Qwen3 tokenizer.json + tokenizer_config.json")
    m.add_argument("--out", required=True)
    m.add_argument("--device", default="cpu")
    m.add_argument("--max-seq-len", type=int, default=4096)
    g = sub.add_parser("generate")
    g.add_argument("--hf", required=True)
    g.add_argument("--rows", type=int, nargs="+", required=True)
    g.add_argument("--new", type=int, required=True)
    g.add_argument("--prompt", type=int, default=16)
    g.add_argument("--device", default="cpu")
    lim = sub.add_parser("limits")
    lim.add_argument("--device", default="cpu")
    lc = sub.add_parser("longcfg")
    lc.add_argument("--model", required=True)
    lc.add_argument("--length", type=int, required=True)
    lc.add_argument("--device", default="cpu")
    lc.add_argument("--run", required=True, help="train.output_dir")
    lc.add_argument("--out", required=True)
    lc.add_argument("--zero-stage", type=int, default=0)
    lc.add_argument("--state-bits", type=int, default=32, help="optimizer.state_bits")
    lc.add_argument("--offload", action="store_true", help="distributed.optimizer_offload")
    lg = sub.add_parser("long")
    lg.add_argument("--run", required=True)
    lg.add_argument("--config", required=True)
    lg.add_argument("--model-json", required=True)
    lg.add_argument("--length", type=int, required=True)
    lg.add_argument("--gspo", default=os.path.join(ROOT, "build", "gspo"))
    lg.add_argument("--limits", default="")
    lg.add_argument("--device-gb", type=float, default=80)
    lg.add_argument("--state-bits", type=int, default=32, help="the run's optimizer.state_bits (for its label)")
    lg.add_argument("--offload", action="store_true", help="the run had distributed.optimizer_offload")
    t = sub.add_parser("table")
    t.add_argument("--dir", required=True)
    a = p.parse_args()
    {"model": cmd_model, "generate": cmd_generate, "limits": cmd_limits, "longcfg": cmd_longcfg, "long": cmd_long,
     "table": cmd_table}[a.cmd](a)


if __name__ == "__main__":
    main()
