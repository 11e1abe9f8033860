#!/usr/bin/env python3
"""gspo against TRL's GRPOTrainer (GSPO settings) and transformers `generate`, on the CPU (issue 13 item 4).

Not a test: a benchmark. `bash bench/run_trl_bench.sh` runs every part and prints the table; the subcommands:

    trl_side_by_side.py setup    --dir D   # tokenizer, Qwen3 model (random init), prompts, gspo export + config
    trl_side_by_side.py trl      --dir D   # TRL GRPOTrainer, per rollout step timings -> D/trl_steps.json
    trl_side_by_side.py generate --dir D   # transformers model.generate(do_sample) at batch 1 and 64 -> D/hf_generate.json
    trl_side_by_side.py table    --dir D   # the table from every part's output

On a GPU (issue 38 item 4; scripts/gpu_check.sh's trl stage) every subcommand takes `--preset gpu`: the model is an
existing Hugging Face directory with its own tokenizer (setup --hf-from DIR: the Qwen3-0.6B-shaped random bf16 model
of bench/gpu_bench.py, real vocabulary), 8 prompts x 8 responses of up to 512 tokens, gspo with model.device cuda,
model.dtype bfloat16 (float32 master weights) and CUDA-graph decode, TRL with bf16 mixed precision on the same GPU
(its generation is transformers `generate`, no vLLM: what a TRL user without a vLLM server runs). The sampling-alone
table (generate, bench_sampling) is the CPU preset's; on a GPU gpu_check.sh's sample stage measures it.

Both sides run the same model (one Hugging Face directory; gspo runs its TorchScript export), the same tokenizer
(Qwen3's tokenizer.json retrained to a small vocabulary with transformers' train_new_from_iterator: same
normaliser, pre-tokeniser, byte-level BPE and special tokens, ~14k entries instead of 151k), the same prompts in
the same order, the same reward (1 when the response contains a digit: gspo's reward.kind regex "[0-9]",
std::regex_search; TRL: re.search("[0-9]"); a random-init model never writes the sum, but often enough a digit
for groups with unequal rewards, so the clipped GSPO path carries gradient), group size, lengths, 4 mini-batches per
rollout, GSPO clipping 3e-4 / 4e-4, no KL, AdamW with the same hyper-parameters, float32, 2 threads.
"""
import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.join(ROOT, "..", "shared")

# Shared settings (both sides read them from here).
S = dict(
    hidden=384, layers=6, heads=6, kv_heads=2, head_dim=64, intermediate=1024, max_pos=512,
    prompts_per_step=8, group_size=8, max_new_tokens=64, num_minibatches=4, lr=1e-5, grad_clip=1.0,
    clip_low=3e-4, clip_high=4e-4, temperature=1.0, threads=2, num_prompts=64, seed=0,
    micro_batch_tokens=0,  # gspo only; 0: this random model never emits EOS, every row is max_new_tokens long
)


# The GPU preset (--preset gpu): what changes from S.
GPU = dict(prompts_per_step=8, group_size=8, max_new_tokens=512, device="cuda", num_prompts=64, threads=8)
S.setdefault("device", "cpu")


def gpu_preset():
    return S.get("device", "cpu") != "cpu" or S.get("preset") == "gpu"


def gspo_yaml(d, steps):
    """gspo's config: the same settings; advantages as TRL's (sample std, eps 1e-4)."""
    device = ""
    if gpu_preset():
        device = f"""  device: {S['device']}
  dtype: bfloat16
"""
    graphs = "  cuda_graphs: true\n" if S["device"].startswith("cuda") else ""
    at_end = "  at_end: false\n" if gpu_preset() else ""  # TRL saves nothing either (save_strategy "no")
    return f"""# Written by bench/trl_side_by_side.py setup: the gspo side of the TRL comparison.
model:
  path: {d}/model.pt
{device}data:
  task: jsonl
  path: {d}/prompts.jsonl
  shuffle: false
rollout:
  prompts_per_step: {S['prompts_per_step']}
  group_size: {S['group_size']}
  max_new_tokens: {S['max_new_tokens']}
  temperature: {S['temperature']}
  top_p: 1.0
  seed: 0
{graphs}reward:
  kind: regex
  regex: "[0-9]"
  workers: 1
algorithm:
  loss: gspo
  clip_low: {S['clip_low']}
  clip_high: {S['clip_high']}
  num_minibatches: {S['num_minibatches']}
  micro_batch_size: 0
  micro_batch_tokens: {S['micro_batch_tokens']}
  old_logprobs: recompute
  kl_coef: 0.0
  advantage: group_norm
  std_kind: sample
  adv_eps: 1.0e-4
optimizer:
  lr: {S['lr']}
  weight_decay: 0.0
  grad_clip: {S['grad_clip']}
  warmup_steps: 0
  schedule: constant
train:
  max_steps: {steps}
  threads: {S['threads']}
  output_dir: {d}/gspo_run
checkpoint:
  every: 0
  keep_last: 1
{at_end}"""


def make_prompts(n, seed):
    import random
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        a, b = rng.randint(10, 99), rng.randint(10, 99)
        rows.append({"prompt": f"Compute {a}+{b}. Put the final answer in \\boxed{{}}.", "answer": str(a + b)})
    return rows


def setup_from(a, d, hf):
    """The GPU preset's setup: an existing Hugging Face directory (its tokenizer inside), the same prompts."""
    import shutil
    from transformers import AutoConfig, AutoTokenizer
    if os.path.exists(hf):
        shutil.rmtree(hf)
    shutil.copytree(a.hf_from, hf)
    tok = AutoTokenizer.from_pretrained(hf)
    cfg = AutoConfig.from_pretrained(hf)
    from safetensors.torch import load_file
    n_params = sum(v.numel() for v in load_file(os.path.join(hf, "model.safetensors")).values())
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts/export_hf.py"), "--hf", hf, "--out",
                    os.path.join(d, "model.pt"), "--dtype", "bfloat16", "--max-seq-len", str(a.max_seq_len)],
                   check=True, stdout=subprocess.DEVNULL)
    return tok, cfg, n_params


def cmd_setup(a):
    import torch
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM
    d = os.path.abspath(a.dir)
    hf = os.path.join(d, "hf")
    if a.hf_from:
        tok, cfg, n_params = setup_from(a, d, hf)
        return finish_setup(a, d, tok, cfg, n_params)
    os.makedirs(hf, exist_ok=True)
    # Tokenizer: Qwen3's, retrained on MATH-500 + GSM8K text to a small vocabulary (the 151k vocabulary would make
    # the embedding alone 58M parameters at hidden 384).
    base = AutoTokenizer.from_pretrained(os.path.join(SHARED, "data/tokenizers/qwen3"))
    texts = []
    for name in ("gsm8k_test", "math500"):
        for line in open(os.path.join(SHARED, "data/benchmarks", name + ".jsonl")):
            texts += [v for v in json.loads(line).values() if isinstance(v, str)]
    tok = base.train_new_from_iterator(texts, vocab_size=16384)
    tok.save_pretrained(hf)
    eos, pad = tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>")
    cfg = Qwen3Config(vocab_size=len(tok), hidden_size=S["hidden"], intermediate_size=S["intermediate"],
                      num_hidden_layers=S["layers"], num_attention_heads=S["heads"],
                      num_key_value_heads=S["kv_heads"], head_dim=S["head_dim"],
                      max_position_embeddings=S["max_pos"], tie_word_embeddings=True, eos_token_id=eos,
                      pad_token_id=pad, bos_token_id=None)
    torch.manual_seed(S["seed"])
    model = Qwen3ForCausalLM(cfg).float()
    model.save_pretrained(hf)
    n_params = sum(p.numel() for p in model.parameters())
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts/export_hf.py"), "--hf", hf, "--out",
                    os.path.join(d, "model.pt"), "--max-seq-len", str(S["max_pos"])], check=True)
    finish_setup(a, d, tok, cfg, n_params)


def finish_setup(a, d, tok, cfg, n_params):
    """Prompts, the check that both sides tokenize them alike, setup.json."""
    rows = make_prompts(S["num_prompts"], S["seed"])
    with open(os.path.join(d, "prompts.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    # The same prompt ids on both sides: gspo's tokenizer (embedded in the export) against transformers'.
    gspo = a.gspo
    inp = "".join(json.dumps({"text": r["prompt"]}) + "\n" for r in rows)
    out = subprocess.run([gspo, "tokenize", "-t", os.path.join(d, "model.pt")], input=inp, text=True,
                         capture_output=True, check=True).stdout.splitlines()
    ours = [json.loads(x)["ids"] for x in out]
    theirs = [tok(r["prompt"])["input_ids"] for r in rows]
    if ours != theirs:
        sys.exit("prompt ids differ between gspo and transformers")
    lens = [len(x) for x in theirs]
    shape = dict(hidden=cfg.hidden_size, layers=cfg.num_hidden_layers, heads=cfg.num_attention_heads,
                 kv_heads=cfg.num_key_value_heads, head_dim=cfg.head_dim, intermediate=cfg.intermediate_size)
    info = dict(settings=S, shape=shape, params=n_params, embedding_params=cfg.vocab_size * cfg.hidden_size,
                vocab=cfg.vocab_size, prompt_tokens_min=min(lens), prompt_tokens_max=max(lens),
                prompt_tokens_mean=sum(lens) / len(lens))
    json.dump(info, open(os.path.join(d, "setup.json"), "w"), indent=1)
    print(f"model: {n_params / 1e6:.2f}M parameters (embedding {cfg.vocab_size}x{S['hidden']}, tied), "
          f"vocab {cfg.vocab_size}; prompts {min(lens)}-{max(lens)} tokens; ids equal on both sides")



def cmd_write_config(a):
    d = os.path.abspath(a.dir)
    with open(os.path.join(d, "gspo.yaml"), "w") as f:
        f.write(gspo_yaml(d, a.warmup + a.steps))


def cmd_trl(a):
    import torch
    torch.set_num_threads(S["threads"])
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer
    d = os.path.abspath(a.dir)
    hf = os.path.join(d, "hf")
    tok = AutoTokenizer.from_pretrained(hf)
    model = AutoModelForCausalLM.from_pretrained(hf, dtype=torch.float32)  # float32 master weights, as gspo's
    cuda = S["device"].startswith("cuda")
    rows = [json.loads(x) for x in open(os.path.join(d, "prompts.jsonl"))]
    ds = Dataset.from_list(rows)

    def contains_digit(completions, **kw):  # gspo: reward.kind regex, reward.regex "[0-9]" (std::regex_search)
        return [1.0 if re.search("[0-9]", c) else 0.0 for c in completions]

    rollouts = a.warmup + a.steps
    k = S["num_minibatches"]
    args = GRPOConfig(
        output_dir=os.path.join(d, "trl_run"), use_cpu=not cuda, bf16=cuda, fp16=False, seed=S["seed"],
        per_device_train_batch_size=S["prompts_per_step"] * S["group_size"] // k, gradient_accumulation_steps=1,
        steps_per_generation=k, num_iterations=1, num_generations=S["group_size"],
        max_completion_length=S["max_new_tokens"], temperature=S["temperature"], top_p=1.0, top_k=0,
        beta=0.0, epsilon=S["clip_low"], epsilon_high=S["clip_high"], importance_sampling_level="sequence",
        loss_type="grpo", scale_rewards="group", learning_rate=S["lr"], lr_scheduler_type="constant",
        warmup_steps=0, weight_decay=0.0, max_grad_norm=S["grad_clip"], max_steps=rollouts * k,
        shuffle_dataset=False, logging_steps=1, report_to="none", save_strategy="no", disable_tqdm=True,
        dataloader_num_workers=0, use_vllm=False)
    trainer = GRPOTrainer(model=model, reward_funcs=contains_digit, args=args, train_dataset=ds,
                          processing_class=tok)
    rec = dict(gen=[], score=[], gen_tokens=[], prompt_tokens=[], step_end={})
    orig_gen, orig_score = trainer._generate_single_turn, trainer._generate_and_score_completions

    def timed_gen(prompt_ids, *args_, **kw):
        t0 = time.perf_counter()
        out = orig_gen(prompt_ids, *args_, **kw)
        rec["gen"].append(time.perf_counter() - t0)
        rec["gen_tokens"].append(sum(len(c) for c in out[0]))
        rec["prompt_tokens"].append(sum(len(p) for p in prompt_ids))
        return out

    def timed_score(*args_, **kw):
        t0 = time.perf_counter()
        out = orig_score(*args_, **kw)
        rec["score"].append(time.perf_counter() - t0)
        return out

    trainer._generate_single_turn, trainer._generate_and_score_completions = timed_gen, timed_score

    class Clock(TrainerCallback):
        def on_train_begin(self, args, state, control, **kw):
            rec["step_end"][0] = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            rec["step_end"][state.global_step] = time.perf_counter()

    trainer.add_callback(Clock())
    prof = None
    if a.profile:
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CPU])
    t_start = time.perf_counter()
    if prof:
        prof.__enter__()
    trainer.train()
    if prof:
        prof.__exit__(None, None, None)
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))
    total = time.perf_counter() - t_start
    steps = []
    for r in range(rollouts):
        step_s = rec["step_end"][(r + 1) * k] - rec["step_end"][r * k]
        steps.append(dict(rollout=r, step_s=step_s, sample_s=rec["gen"][r],
                          score_and_old_logprobs_s=rec["score"][r] - rec["gen"][r],
                          update_s=step_s - rec["score"][r], gen_tokens=rec["gen_tokens"][r],
                          prompt_tokens=rec["prompt_tokens"][r]))
    logs = [h for h in trainer.state.log_history if "reward" in h]
    out = dict(steps=steps, warmup=a.warmup, total_s=total, rewards=[h.get("reward") for h in logs],
               peak_rss_mb_self=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
               peak_gpu_mb=torch.cuda.max_memory_allocated() / 2**20 if cuda else 0.0)
    name = "trl_steps_profiled.json" if a.profile else "trl_steps.json"  # a profiled run is not a measurement
    json.dump(out, open(os.path.join(d, name), "w"), indent=1)
    for s in steps:
        print(json.dumps(s))


def cmd_generate(a):
    """transformers model.generate(do_sample=True) on the prompts bench_sampling uses (16 ids each,
    ((b*16+t)*7) % 256), 64 new tokens, temperature 1, no top-k/top-p, EOS ends a row; best of 3 (batch 64: of
    2) after a short warm-up. bench_sampling: best of 3 after a warm-up."""
    import torch
    torch.set_num_threads(S["threads"])
    from transformers import AutoModelForCausalLM
    d = os.path.abspath(a.dir)
    model = AutoModelForCausalLM.from_pretrained(os.path.join(d, "hf"), dtype=torch.float32).eval()
    eos = model.config.eos_token_id
    res = {}
    for batch in a.batches:
        ids = torch.tensor([[((b * 16 + t) * 7) % 256 for t in range(16)] for b in range(batch)])
        best, reps = 0.0, 3 if batch <= 8 else 2  # batch 64 takes ~40 s a call here: best of 2
        for rep in range(reps + 1):
            torch.manual_seed(rep)
            t0 = time.perf_counter()
            with torch.no_grad():  # rep 0: a short warm-up
                out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=True,
                                     temperature=1.0, top_k=0, top_p=1.0,
                                     max_new_tokens=S["max_new_tokens"] if rep else 8, min_new_tokens=0,
                                     pad_token_id=model.config.pad_token_id, eos_token_id=eos)
            dt = time.perf_counter() - t0
            gen = out[:, ids.shape[1]:]
            n = 0
            for row in gen.tolist():  # tokens up to and including the first EOS
                n += row.index(eos) + 1 if eos in row else len(row)
            if rep > 0:
                best = max(best, n / dt)
                print(f"transformers generate batch {batch} rep {rep}: {n} tokens in {dt:.2f} s")
        res[str(batch)] = best
        print(f"transformers generate batch {batch}: {best:.0f} tok/s (best of {reps})")
    json.dump(res, open(os.path.join(d, "hf_generate.json"), "w"), indent=1)


def time_v(path, key):
    """A field of a /usr/bin/time -v log: "Maximum resident set size" (KB -> MB), "Percent of CPU this job got"."""
    if not os.path.exists(path):  # no /usr/bin/time where it ran
        return float("nan")
    for line in open(path):
        if key in line:
            v = line.rsplit(":", 1)[1].strip().rstrip("%")
            return int(v) / 1024 if "resident" in key else float(v)
    return float("nan")


def cmd_table(a):
    d = os.path.abspath(a.dir)
    info = json.load(open(os.path.join(d, "setup.json")))
    trl = json.load(open(os.path.join(d, "trl_steps.json")))
    gm = [json.loads(x) for x in open(os.path.join(d, "gspo_run/metrics.jsonl"))]
    w = trl["warmup"]
    g_steps, t_steps = gm[w:], trl["steps"][w:]

    def med(xs):
        xs = sorted(xs)
        n = len(xs)
        return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])

    seqs = S["prompts_per_step"] * S["group_size"]
    g = dict(step=med([m["time_step_s"] for m in g_steps]), sample=med([m["time_sample_s"] for m in g_steps]),
             gen_tokens=med([m["response_len_mean"] * seqs for m in g_steps]))
    g["rest"] = g["step"] - g["sample"]
    g["update"] = med([m["time_update_s"] for m in g_steps])
    g["old"] = med([m["time_old_logprobs_s"] for m in g_steps])
    g["reward"] = med([m["time_reward_s"] for m in g_steps])
    g["sample_tps"] = med([m["response_len_mean"] * seqs / m["time_sample_s"] for m in g_steps])
    t = dict(step=med([s["step_s"] for s in t_steps]), sample=med([s["sample_s"] for s in t_steps]),
             gen_tokens=med([s["gen_tokens"] for s in t_steps]))
    t["rest"] = t["step"] - t["sample"]
    t["update"] = med([s["update_s"] for s in t_steps])
    t["old"] = med([s["score_and_old_logprobs_s"] for s in t_steps])
    t["sample_tps"] = med([s["gen_tokens"] / s["sample_s"] for s in t_steps])
    ptoks = info["prompt_tokens_mean"] * seqs
    g["step_tps"] = (ptoks + g["gen_tokens"]) / g["step"]
    t["step_tps"] = (ptoks + t["gen_tokens"]) / t["step"]
    rss, cpu = "Maximum resident set size", "Percent of CPU this job got"
    g["rss"], t["rss"] = time_v(os.path.join(d, "gspo_time.txt"), rss), time_v(os.path.join(d, "trl_time.txt"), rss)
    g["cpu"], t["cpu"] = time_v(os.path.join(d, "gspo_time.txt"), cpu), time_v(os.path.join(d, "trl_time.txt"), cpu)
    g["gpu"], t["gpu"] = med([m.get("peak_gpu_mb", 0.0) for m in g_steps]), trl.get("peak_gpu_mb", 0.0)
    hf_path, samp_path = os.path.join(d, "hf_generate.json"), os.path.join(d, "bench_sampling.txt")
    hfg = json.load(open(hf_path)) if os.path.exists(hf_path) else {}
    samp = {}
    for line in open(samp_path) if os.path.exists(samp_path) else []:
        parts = line.split()
        if len(parts) == 5 and parts[0] == "model.pt":
            samp[parts[1]] = (float(parts[2]), float(parts[3]))
    p, sh = info["params"], info.get("shape", S)
    if S["device"].startswith("cuda"):
        where = f"{S['device']}, gspo bf16 with float32 master weights and CUDA-graph decode, TRL bf16 mixed precision"
    elif gpu_preset():
        where = f"the GPU preset's dry run on a CPU (gspo bf16, TRL float32), {S['threads']} threads"
    else:
        where = f"float32, {S['threads']} threads"
    print(f"model: Qwen3-shaped, {p / 1e6:.2f}M parameters ({sh['layers']} layers, hidden {sh['hidden']}, "
          f"heads {sh['heads']}/{sh['kv_heads']} kv, head_dim {sh['head_dim']}, MLP {sh['intermediate']}, "
          f"vocab {info['vocab']}, tied embedding); {where}")
    print(f"rollout: {S['prompts_per_step']} prompts x {S['group_size']} responses, prompts "
          f"{info['prompt_tokens_min']}-{info['prompt_tokens_max']} tokens, max_new_tokens {S['max_new_tokens']}, "
          f"{S['num_minibatches']} mini-batches; medians of {len(g_steps)} gspo / {len(t_steps)} TRL steps after "
          f"{w} warm-up")
    print()
    print("| per rollout step | gspo | TRL | TRL / gspo |")
    print("|---|---|---|---|")
    rows = [("step s", g["step"], t["step"], "{:.2f}"),
            ("sampling s", g["sample"], t["sample"], "{:.2f}"),
            ("rest of step s (old log-probs, reward, 4 updates)", g["rest"], t["rest"], "{:.2f}"),
            ("  of which old log-probs (+ reward, advantages for TRL) s",
             g["old"] + (g["reward"]), t["old"], "{:.2f}"),
            ("  of which mini-batch updates s", g["update"], t["update"], "{:.2f}"),
            ("generated tokens", g["gen_tokens"], t["gen_tokens"], "{:.0f}"),
            ("sampling tok/s (generated)", g["sample_tps"], t["sample_tps"], "{:.0f}"),
            ("step tok/s (prompt + response)", g["step_tps"], t["step_tps"], "{:.0f}"),
            ("peak RSS MB (whole process)", g["rss"], t["rss"], "{:.0f}"),
            ("CPU use of the whole run, % (200 = both cores)", g["cpu"], t["cpu"], "{:.0f}")]
    if S["device"].startswith("cuda"):
        rows.append(("peak GPU MB (caching allocator)", g["gpu"], t["gpu"], "{:.0f}"))
    for name, gv, tv, fmt in rows:
        ratio = gv / tv if "tok/s" in name else tv / gv
        print(f"| {name} | {fmt.format(gv)} | {fmt.format(tv)} | {ratio:.2f} |")
    if not hfg:
        json.dump(dict(gspo=g, trl=t), open(os.path.join(d, "table.json"), "w"), indent=1)
        return
    print()
    print("| sampling alone, 16-token prompts, 64 new tokens, temperature 1 | gspo tok/s | transformers generate "
          "tok/s | gspo / transformers | TorchScript PyTorch loop tok/s |")
    print("|---|---|---|---|---|")
    for b in sorted(hfg, key=int):
        gs, ref = samp.get(b, (float("nan"), float("nan")))
        print(f"| batch {b} | {gs:.0f} | {hfg[b]:.0f} | {gs / hfg[b]:.2f} | {ref:.0f} |")
    json.dump(dict(gspo=g, trl=t, hf_generate=hfg, bench_sampling=samp), open(os.path.join(d, "table.json"), "w"),
              indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("setup", "config", "trl", "generate", "table"):
        s = sub.add_parser(name)
        s.add_argument("--dir", default="runs/trl_bench")
        s.add_argument("--steps", type=int, default=3, help="measured rollout steps")
        s.add_argument("--warmup", type=int, default=1, help="rollout steps run first and not measured")
        s.add_argument("--profile", action="store_true", help="trl: print torch.profiler's top operators")
        s.add_argument("--batches", type=int, nargs="+", default=[1, 64])
        s.add_argument("--preset", choices=["cpu", "gpu"], default="cpu")
        s.add_argument("--device", default="", help="the GPU preset's device (default cuda; cpu for a dry run)")
        s.add_argument("--hf-from", default="", help="setup: an existing Hugging Face directory (GPU preset)")
        s.add_argument("--max-seq-len", type=int, default=4096, help="setup --hf-from: the export's max_seq_len")
        s.add_argument("--gspo", default=os.path.join(ROOT, "build/gspo"), help="the gspo binary (setup)")
        s.add_argument("--max-new-tokens", type=int, default=0, help="the GPU preset's response cap (default 512)")
    a = p.parse_args()
    if a.preset == "gpu":
        S.update(GPU)
        S["preset"] = "gpu"
        if a.device:
            S["device"] = a.device
        if S["device"] == "cpu":  # the preset's dry run: the CPU preset's threads, and 8 rows a step, not 64 (a 2-core
            S["threads"] = 2      # CI machine took 200 s for gspo's 3 steps of 64 rows through the 151,936-id head)
            S["prompts_per_step"], S["group_size"] = 2, 4
        if a.max_new_tokens:
            S["max_new_tokens"] = a.max_new_tokens
    {"setup": cmd_setup, "config": cmd_write_config, "trl": cmd_trl, "generate": cmd_generate,
     "table": cmd_table}[a.cmd](a)


if __name__ == "__main__":
    main()
