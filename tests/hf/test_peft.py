#!/usr/bin/env python3
"""LoRA adapters between gspo and PEFT (issue #36, item 4), with the pinned peft as the oracle.

    scripts/py tests/hf/test_peft.py --gspo build/gspo --work build/hf_peft

Per model (a random Qwen3 with every projection adapted; a random Qwen3-MoE, first layer dense, with attention
adapters: PEFT on transformers 5 maps gate/up/down_proj targets onto the fused experts' tensors, which gspo's
per-expert adapters do not mirror), made at test time and exported by scripts/export_hf.py:
  import   PEFT's own random adapters (init_lora_weights=False: B is not 0), saved by save_pretrained, imported by
           scripts/peft_adapter.py; `gspo generate --adapter` (C++ merge, KV-cache sampler, greedy, 16 tokens from
           two prompts) against the PeftModel's forward over the same tokens: every generated token's log-prob
           within 1e-4 (the import-parity tolerance), and each greedy token PEFT's argmax wherever PEFT's top-1
           margin exceeds 1e-4. The adapters change the logits (by more than 100x the tolerance), so this checks them.
  export   the imported adapters exported again (scripts/export_to_hf.py --peft) and loaded by
           PeftModel.from_pretrained onto a fresh copy of the base: logits equal the original PeftModel's within 1e-6
           (only float32 copies in between); adapter_config.json names exactly the adapted modules.
  merged   scripts/export_to_hf.py without --peft writes the base with the adapters merged: transformers' logits of
           that model equal PeftModel.merge_and_unload()'s within 1e-5.
  errors   a DoRA adapter and one with modules_to_save are refused (exit 4) naming the key.
Exits 1 with the failing check; prints one line per model and check.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import peft
import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(SRC, "scripts"))
import export_hf  # noqa: E402

sys.path.insert(0, HERE)
from test_import_parity import Failures  # noqa: E402  (one line per check, the failures kept)

COMMON = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-6, bos_token_id=None,
              eos_token_id=511, pad_token_id=None, head_dim=16)  # EOS: an id the prompts do not hold
MODELS = {
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", {},
              ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]),
    "qwen3_moe": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM",
                  {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 48, "mlp_only_layers": [0]},
                  ["q_proj", "k_proj", "v_proj", "o_proj"]),
}
PROMPTS = [[5, 17, 300, 42, 8], [99, 3, 250]]
NEW_TOKENS = 16
TOL = 1e-4


def make_hf(name, seed):
    cfg_cls, model_cls, extra, _ = MODELS[name]
    cfg = getattr(transformers, cfg_cls)(**COMMON, **extra)
    torch.manual_seed(seed)
    model = getattr(transformers, model_cls)(cfg).float().eval()
    with torch.no_grad():
        for pname, p in model.named_parameters():
            p.copy_(1 + 0.1 * torch.randn_like(p)) if "norm" in pname else p.normal_(0.0, 0.1)
    return model


def run(cmd, expect=0):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != expect:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode} (expected {expect}): {r.stderr.strip()[-400:]}")
    return r


def logits_of(model, ids):
    with torch.no_grad():
        return model(input_ids=torch.tensor([ids])).logits[0].float()


def run_model(name, seed, a, fails):
    d = os.path.join(a.work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    base = make_hf(name, seed)
    base.save_pretrained(os.path.join(d, "hf"))
    # a byte-level gspo tokenizer naming every id >= 256 (gspo generate decodes what it samples)
    specials = {f"<|t{i}|>": i for i in range(256, COMMON["vocab_size"]) if i != COMMON["eos_token_id"]}
    specials["<|eos|>"] = COMMON["eos_token_id"]
    with open(os.path.join(d, "hf", "gspo_tokenizer.json"), "w") as f:
        json.dump({"type": "byte", "add_bos": False, "special_tokens": specials}, f)
    pt = os.path.join(d, "policy.pt")
    argv, sys.argv = sys.argv, ["export_hf.py", "--hf", os.path.join(d, "hf"), "--out", pt, "--dtype", "float32"]
    try:
        export_hf.main()
    finally:
        sys.argv = argv
    targets = MODELS[name][3]
    lcfg = peft.LoraConfig(r=4, lora_alpha=8, target_modules=targets, init_lora_weights=False, lora_dropout=0.0)
    torch.manual_seed(seed + 1)
    pm = peft.get_peft_model(make_hf(name, seed), lcfg).eval()
    with torch.no_grad():  # PEFT's random B is small: scaled up so the adapters move the logits well past TOL
        for n, p in pm.named_parameters():
            if "lora_B" in n:
                p.mul_(20.0)
    pm.save_pretrained(os.path.join(d, "peft"))
    adapted = sum(1 for n, _ in pm.named_parameters() if "lora_A" in n)

    # import: PEFT's adapters in gspo, against PEFT's forward
    ours = os.path.join(d, "gspo_adapter")
    out = run([sys.executable, os.path.join(SRC, "scripts", "peft_adapter.py"), "import", "--peft",
               os.path.join(d, "peft"), "--base", pt, "--out", ours]).stdout.strip()
    meta = json.load(open(os.path.join(ours, "adapter.json")))
    fails.check(len(meta["names"]) == adapted and meta["rank"] == 4 and meta["alpha"] == 8,
                f"{name} import: {len(meta['names'])} of PEFT's {adapted} adapted modules, r {meta['rank']}, alpha "
                f"{meta['alpha']} ({out[:90]})")
    cmd = [a.gspo, "generate", "-m", pt, "--adapter", ours, "-t", "0", "--max-new-tokens", str(NEW_TOKENS), "--json"]
    for p in PROMPTS:
        cmd += ["--prompt-ids", ",".join(map(str, p))]
    rows = sorted((json.loads(line) for line in run(cmd).stdout.splitlines() if line.strip()), key=lambda r: r["prompt"])
    worst, flips, moved = 0.0, 0, 0.0
    for prompt, row in zip(PROMPTS, rows):
        ids = prompt + row["ids"]
        lp = torch.log_softmax(logits_of(pm, ids), -1)
        base_lp = torch.log_softmax(logits_of(base, ids), -1)
        for j, tok in enumerate(row["ids"]):
            pos = len(prompt) - 1 + j
            worst = max(worst, abs(lp[pos, tok].item() - row["logprobs"][j]))
            moved = max(moved, (lp[pos] - base_lp[pos]).abs().max().item())
            top2 = torch.topk(lp[pos], 2).values
            if top2[0] - top2[1] > TOL and lp[pos].argmax().item() != tok:
                flips += 1
    fails.check(worst <= TOL and flips == 0 and moved > 100 * TOL,
                f"{name} import: gspo generate --adapter vs PeftModel: max |log-prob diff| {worst:.2g} (tolerance "
                f"{TOL:g}) over {len(PROMPTS)} x {NEW_TOKENS} greedy tokens, {flips} greedy tokens off PEFT's argmax; "
                f"the adapters move PEFT's log-probs by up to {moved:.3g}")

    # export: back to PEFT, loaded onto a fresh base
    exp = os.path.join(d, "peft_again")
    run([sys.executable, os.path.join(SRC, "scripts", "export_to_hf.py"), "--checkpoint", ours, "--out", exp, "--peft"])
    again = peft.PeftModel.from_pretrained(make_hf(name, seed), exp).eval()
    ids = PROMPTS[0] + rows[0]["ids"]
    diff = (logits_of(again, ids) - logits_of(pm, ids)).abs().max().item()
    cfg = json.load(open(os.path.join(exp, "adapter_config.json")))
    fails.check(diff <= 1e-6 and len(cfg["target_modules"]) == adapted,
                f"{name} export --peft: PeftModel.from_pretrained logits vs the original PeftModel: max |diff| "
                f"{diff:.2g} (tolerance 1e-6); target_modules names the {len(cfg['target_modules'])} adapted modules")

    # merged: a Hugging Face model with the adapters in its weights
    merged_dir = os.path.join(d, "merged")
    run([sys.executable, os.path.join(SRC, "scripts", "export_to_hf.py"), "--checkpoint", ours, "--out", merged_dir,
         "--dtype", "float32"])
    merged = getattr(transformers, MODELS[name][1]).from_pretrained(merged_dir).float().eval()
    want = pm.merge_and_unload()
    diff = (logits_of(merged, ids) - logits_of(want, ids)).abs().max().item()
    fails.check(diff <= 1e-5, f"{name} export (merged): transformers' logits vs PeftModel.merge_and_unload(): max "
                              f"|diff| {diff:.2g} (tolerance 1e-5)")
    return d, pt


def run_errors(d, pt, fails):
    for key, value in (("use_dora", True), ("modules_to_save", ["lm_head"])):
        bad = os.path.join(d, f"peft_{key}")
        shutil.copytree(os.path.join(d, "peft"), bad)
        cfg_path = os.path.join(bad, "adapter_config.json")
        cfg = json.load(open(cfg_path))
        cfg[key] = value
        json.dump(cfg, open(cfg_path, "w"))
        r = run([sys.executable, os.path.join(SRC, "scripts", "peft_adapter.py"), "import", "--peft", bad, "--base", pt,
                 "--out", os.path.join(d, f"out_{key}")], expect=4)
        fails.check(key in r.stderr, f"import refuses {key}: {r.stderr.strip()[:120]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gspo", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    fails = Failures()
    last = None
    for seed, name in enumerate(MODELS):
        try:
            last = run_model(name, seed, a, fails)
        except Exception as e:  # a crash in one model's checks is a failure of that model, the others still run
            fails.check(False, f"{name}: {type(e).__name__}: {e}")
    if last:
        run_errors(*last, fails)
    print(f"{len(fails.items)} failed" if fails.items else "all passed")
    return 1 if fails.items else 0


if __name__ == "__main__":
    sys.exit(main())
