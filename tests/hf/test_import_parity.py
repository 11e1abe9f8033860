#!/usr/bin/env python3
"""Import parity with transformers (issue #13, item 1): Hugging Face models made at test time from tiny random
configs, saved with save_pretrained, exported by scripts/export_hf.py, must behave like transformers' own code.

    scripts/py tests/hf/test_import_parity.py --gspo build/gspo --work build/hf_parity [--check logits,greedy,bf16]
                                              [--variants llama,qwen2,...]

Per variant (llama without / with llama3 / with linear RoPE scaling, attention bias, qwen2 q/k/v biases, qwen3
q/k norm, qwen3_moe with and without norm_topk_prob, tied and untied embeddings):
  logits  the float32 TorchScript export's forward on a LEFT-padded batch equals transformers' logits of each row
          run alone (no padding at all) at every real position: max |diff| <= 1e-4.
  greedy  `gspo generate -t 0 --max-new-tokens 64` (our KV-cache sampler, C++; the prompts of different lengths
          go in as one left-padded batch) emits exactly the 64 tokens transformers' generate(do_sample=False)
          emits for each prompt alone. EOS cannot end either side early: transformers generates with no EOS, and
          the exported model's EOS is then set to an id that occurs in none of those 64-token outputs (nor prompt).
          A greedy path through a near tie would let rounding pick either token, so the test also requires
          transformers' top-1 margin along its path to exceed the logits tolerance 1e-4 (the two sides' logits
          agree to ~2e-6, measured): a fixture with a closer tie fails as a fixture, not as a sampler bug.
  bf16    the --dtype bfloat16 export's logits against transformers' float32 logits on the same padded batch:
          max |diff| <= 2 x (transformers' own bf16 model's max |diff| to its float32 logits) + 1e-2. Both round
          weights and activations to bf16 (8 significant bits), so neither is exact; ours may differ from the
          float32 truth at most twice as much as transformers' own bf16 run (plus a small floor for the cases
          where transformers' bf16 error happens to be tiny).
Weights: every parameter is redrawn (N(0, 0.1); norm weights 1 + N(0, 0.1)) so biases and norms are not the
zeros and ones transformers initialises them to, which would hide a dropped bias or norm.
Exits 1 with the failing variant, check and numbers; prints one line per variant and check.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import torch
import transformers
from transformers import GenerationConfig

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import export_hf  # noqa: E402

VOCAB = 512
COMMON = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-6, bos_token_id=None,
              eos_token_id=None, pad_token_id=None)
LLAMA3 = {"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 32}  # wavelengths span all 3 regimes
VARIANTS = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", {}),
    "llama_rope_llama3": ("LlamaConfig", "LlamaForCausalLM", {"rope_parameters": LLAMA3}),
    "llama_rope_linear_tied_bias": ("LlamaConfig", "LlamaForCausalLM", {
        "rope_parameters": {"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0},
        "tie_word_embeddings": True, "attention_bias": True}),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {}),
    "qwen3_tied": ("Qwen3Config", "Qwen3ForCausalLM", {"head_dim": 32, "tie_word_embeddings": True}),
    "qwen3_moe": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM", {
        "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 48, "norm_topk_prob": True,
        "mlp_only_layers": [0]}),
    "qwen3_moe_unnormed": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM", {
        "num_experts": 6, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "norm_topk_prob": False}),
}
PROMPT_LENGTHS = [3, 9, 20, 33]
NEW_TOKENS = 64
LOGIT_TOL = 1e-4
MARGIN_MIN = LOGIT_TOL


def make_hf(name, seed):
    cfg_cls, model_cls, extra = VARIANTS[name]
    cfg = getattr(transformers, cfg_cls)(**COMMON, **extra)
    torch.manual_seed(seed)
    model = getattr(transformers, model_cls)(cfg).float().eval()
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if "norm" in pname:
                p.copy_(1 + 0.1 * torch.randn_like(p))
            else:
                p.normal_(0.0, 0.1)
    return model


def prompts_for(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, VOCAB, (n,), generator=g).tolist() for n in PROMPT_LENGTHS]


def left_padded(prompts, pad=0):
    t = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), t), pad, dtype=torch.long)
    mask = torch.zeros((len(prompts), t), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, t - len(p):] = torch.tensor(p)
        mask[i, t - len(p):] = 1
    return ids, mask


@torch.no_grad()
def hf_row_logits(model, prompts):
    """transformers' logits of each prompt run alone (no padding), float32."""
    return [model(input_ids=torch.tensor([p])).logits[0].float() for p in prompts]


@torch.no_grad()
def padded_max_diff(ours, prompts, rows):
    """max |ours(left-padded batch) - rows| over real positions."""
    ids, mask = left_padded(prompts)
    out = ours(ids, mask).float()
    t = ids.shape[1]
    return max((out[i, t - len(p):] - rows[i]).abs().max().item() for i, p in enumerate(prompts))


@torch.no_grad()
def hf_greedy(model, prompts):
    """64 greedy tokens per prompt alone, with no EOS; and the smallest top-1 margin along the path."""
    gc = GenerationConfig(do_sample=False, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, eos_token_id=None,
                          pad_token_id=0, bos_token_id=None, output_scores=True, return_dict_in_generate=True)
    outs, margin = [], float("inf")
    for p in prompts:
        r = model.generate(torch.tensor([p]), attention_mask=torch.ones(1, len(p), dtype=torch.long),
                           generation_config=gc)
        outs.append(r.sequences[0, len(p):].tolist())
        for s in r.scores:
            top = s[0].float().topk(2).values
            margin = min(margin, (top[0] - top[1]).item())
    return outs, margin


def save_hf(model, d, eos):
    """save_pretrained plus a byte-level gspo tokenizer spec naming every id >= 256 (gspo generate decodes ids)."""
    model.config.eos_token_id = eos
    model.generation_config.eos_token_id = eos
    model.save_pretrained(d)
    specials = {f"<|t{i}|>": i for i in range(256, VOCAB) if i != eos}
    specials["<|eos|>"] = eos
    with open(os.path.join(d, "gspo_tokenizer.json"), "w") as f:
        json.dump({"type": "byte", "add_bos": False, "special_tokens": specials}, f)


def export(hf_dir, out, dtype):
    argv = sys.argv
    sys.argv = ["export_hf.py", "--hf", hf_dir, "--out", out, "--dtype", dtype]
    try:
        export_hf.main()
    finally:
        sys.argv = argv
    return torch.jit.load(out)


def ours_greedy(gspo, model_pt, prompts):
    cmd = [gspo, "generate", "-m", model_pt, "-t", "0", "--max-new-tokens", str(NEW_TOKENS), "--json"]
    for p in prompts:
        cmd += ["--prompt-ids", ",".join(map(str, p))]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()}")
    rows = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    return [row["ids"] for row in sorted(rows, key=lambda row: row["prompt"])], [row["finish"] for row in rows]


class Failures:
    def __init__(self):
        self.items = []

    def check(self, ok, what):
        print(("ok    " if ok else "FAIL  ") + what, flush=True)
        if not ok:
            self.items.append(what)


def run_variant(name, seed, a, fails, report):
    d = os.path.join(a.work, name)
    model = make_hf(name, seed)
    prompts = prompts_for(seed)
    rows = hf_row_logits(model, prompts)
    hf_out, margin = hf_greedy(model, prompts) if "greedy" in a.check else ([], float("inf"))
    used = {t for o in hf_out for t in o} | {t for p in prompts for t in p}
    eos = next(i for i in range(VOCAB - 1, 255, -1) if i not in used)
    save_hf(model, d, eos)
    if "logits" in a.check or "greedy" in a.check:
        pt = os.path.join(d, "model_f32.pt")
        ours = export(d, pt, "float32")
        if "logits" in a.check:
            diff = padded_max_diff(ours, prompts, rows)
            report[name]["float32_max_abs_diff"] = diff
            fails.check(diff <= LOGIT_TOL, f"{name} logits float32, left-padded batch: max |diff| {diff:.2e} "
                                           f"(tolerance {LOGIT_TOL:.0e})")
        if "greedy" in a.check:
            fails.check(margin > MARGIN_MIN, f"{name} greedy fixture: transformers' smallest top-1 margin "
                                             f"{margin:.2e} (must exceed {MARGIN_MIN:.0e} to be decisive)")
            got, finish = ours_greedy(a.gspo, pt, prompts)
            same = [g == h for g, h in zip(got, hf_out)]
            first = [next((k for k, (x, y) in enumerate(zip(g, h)) if x != y), min(len(g), len(h)))
                     for g, h in zip(got, hf_out)]
            distinct = len({t for o in hf_out for t in o})
            report[name]["greedy_identical"] = all(same)
            fails.check(all(same) and len(got) == len(prompts),
                        f"{name} greedy {NEW_TOKENS} tokens x {len(prompts)} prompts (lengths {PROMPT_LENGTHS}, "
                        f"one left-padded batch; {distinct} distinct tokens): identical={same}, first difference "
                        f"at {first}, finish={finish}")
    if "bf16" in a.check:
        ours16 = export(d, os.path.join(d, "model_bf16.pt"), "bfloat16")
        ours_diff = padded_max_diff(ours16, prompts, rows)
        hf16 = hf_row_logits(model.to(torch.bfloat16), prompts)
        hf_diff = max((x - y).abs().max().item() for x, y in zip(hf16, rows))
        peak = max(r.abs().max().item() for r in rows)
        tol = 2 * hf_diff + 1e-2
        report[name].update({"bf16_max_abs_diff": ours_diff, "hf_bf16_max_abs_diff": hf_diff, "max_abs_logit": peak})
        fails.check(ours_diff <= tol, f"{name} logits bfloat16 export vs transformers float32: max |diff| "
                                      f"{ours_diff:.2e} (transformers bf16: {hf_diff:.2e}; tolerance {tol:.2e}; "
                                      f"largest |logit| {peak:.2f})")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gspo", required=True, help="the gspo binary")
    p.add_argument("--work", required=True, help="scratch directory (HF checkpoints and exports)")
    p.add_argument("--check", default="logits,greedy,bf16", help="comma list of logits, greedy, bf16")
    p.add_argument("--variants", default=",".join(VARIANTS), help="comma list of " + ", ".join(VARIANTS))
    p.add_argument("--report", default="", help="also write the measured numbers as JSON here")
    a = p.parse_args()
    a.check = set(a.check.split(","))
    torch.set_num_threads(1)
    os.makedirs(a.work, exist_ok=True)
    fails, report, t0 = Failures(), {}, time.time()
    print(f"transformers {transformers.__version__}, torch {torch.__version__}", flush=True)
    for name in a.variants.split(","):
        if name not in VARIANTS:
            sys.exit(f"unknown variant {name!r} (known: {', '.join(VARIANTS)})")
        report[name] = {}
        run_variant(name, 100 + list(VARIANTS).index(name), a, fails, report)
    if a.report:
        with open(a.report, "w") as f:
            json.dump(report, f, indent=1)
    print(f"{len(fails.items)} failed, {time.time() - t0:.1f} s")
    sys.exit(1 if fails.items else 0)


if __name__ == "__main__":
    main()
