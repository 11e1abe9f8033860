#!/usr/bin/env python3
"""Round trips through scripts/export_hf.py and scripts/export_to_hf.py (issue #13, item 2).

    test_roundtrip.py SUITE --source SRC --gspo BIN --scratch DIR
    SUITE: families | train | fallback | errors

families  tiny random Hugging Face models made from configs here (llama tied and untied, qwen2 with biases, qwen3
          stored in bfloat16, qwen3_moe with a dense layer, sharded output), with a tokenizer trained here: HF dir ->
          export_hf.py -> .pt -> export_to_hf.py -> HF dir. transformers loads the result with no missing or
          unexpected keys; names, dtypes and bytes of every tensor equal the original's; config.json and the
          tokenizer/generation files come back verbatim; logits equal the original model's exactly and the
          TorchScript policy's within 1e-4 (float32).
train     HF -> gspo -> `gspo train` 2 steps (float32 untied qwen2; bf16 training with float32 masters on a tied
          llama) -> run directory -> HF: no missing/unexpected keys, original names and dtypes, logits within 1e-4
          of the checkpoint's TorchScript policy and at least 1e-3 away from the original weights' logits.
fallback  policies without the carried HF files (make_tiny_model.py; a qwen3_moe whose manifest lost hf_source):
          config.json built from the manifest and module loads in transformers with logits within 1e-4.
errors    missing checkpoint (exit 5), unknown architecture (exit 4), non-empty output (exit 2): messages name them.
"""
import argparse
import contextlib
import io
import json
import os
import runpy
import shutil
import subprocess
import sys
import time

import torch

TOL = 1e-4  # float32 logits, gspo's TorchScript vs transformers (different kernels, same weights)
TRAINED_MIN = 1e-3  # trained weights must move the logits at least this much
FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILS.append(what)


def run(cmd, want=0, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != want:
        print(p.stdout[-3000:], p.stderr[-3000:], sep="\n")
        raise SystemExit(f"FAIL {' '.join(map(str, cmd[:3]))} ...: exit {p.returncode}, wanted {want}")
    return p.stdout + p.stderr


def script(a, name, *args):
    """Runs scripts/NAME.py in this process (as __main__, with its own argv; saves a torch import per call) and
    returns what it printed; the command-line behaviour itself is tested through subprocesses in suite_errors."""
    argv, out = sys.argv, io.StringIO()
    sys.argv = [f"{a.source}/scripts/{name}.py"] + [str(x) for x in args]
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            raise SystemExit(f"FAIL {name}.py {' '.join(sys.argv[1:])}: {e.code}")
    finally:
        sys.argv = argv
    return out.getvalue()


def make_tokenizer(d, source):
    """A byte-level BPE (vocab 384) trained on the math sample: what Qwen-style tokenizer.json files look like."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    corpus = [json.loads(line)["problem"] for line in open(os.path.join(source, "data", "math_sample.jsonl"))]
    trainer = trainers.BpeTrainer(vocab_size=384, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus, trainer)
    os.makedirs(d, exist_ok=True)
    tok.save(os.path.join(d, "tokenizer.json"))
    json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": None, "eos_token": "<|endoftext|>",
               "pad_token": "<|endoftext|>", "add_bos_token": False, "model_max_length": 128},
              open(os.path.join(d, "tokenizer_config.json"), "w"), indent=2)
    open(os.path.join(d, "chat_template.jinja"), "w").write(
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}")


CASES = {  # name: (model_type, config overrides, stored dtype)
    "llama_tied": ("llama", {"tie_word_embeddings": True}, torch.float32),
    "llama_untied": ("llama", {"tie_word_embeddings": False}, torch.float32),
    "qwen2": ("qwen2", {"tie_word_embeddings": False}, torch.float32),
    "qwen3_bf16": ("qwen3", {"tie_word_embeddings": True}, torch.bfloat16),
    "qwen3_moe": ("qwen3_moe", {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16,
                                "mlp_only_layers": [1], "norm_topk_prob": True}, torch.float32),
}


def make_hf(d, case, tok_dir, seed=0):
    from transformers import AutoConfig, AutoModelForCausalLM
    family, over, dtype = CASES[case]
    kw = dict(vocab_size=384, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, head_dim=8, max_position_embeddings=128, bos_token_id=None, eos_token_id=0,
              pad_token_id=0)
    kw.update(over)
    torch.manual_seed(seed)
    cfg = AutoConfig.for_model(family, **kw)
    model = AutoModelForCausalLM.from_config(cfg)
    with torch.no_grad():  # random norms and biases too, so a dropped or swapped one shows in the logits
        for name, p in model.named_parameters():
            if name.endswith("norm.weight") or name.endswith(".bias"):
                p.copy_(1.0 + 0.3 * torch.randn_like(p) if name.endswith("norm.weight") else 0.3 * torch.randn_like(p))
    model.to(dtype).save_pretrained(d)
    for n in os.listdir(tok_dir):
        shutil.copy(os.path.join(tok_dir, n), d)
    return d


def st_tensors(d):
    from safetensors import safe_open
    idx = os.path.join(d, "model.safetensors.index.json")
    files = sorted(set(json.load(open(idx))["weight_map"].values())) if os.path.exists(idx) else ["model.safetensors"]
    out = {}
    for f in files:
        with safe_open(os.path.join(d, f), "pt") as h:
            out.update({k: h.get_tensor(k) for k in h.keys()})
    return out


def load_hf(d):
    from transformers import AutoModelForCausalLM
    model, info = AutoModelForCausalLM.from_pretrained(d, output_loading_info=True, dtype=torch.float32)
    return model.eval(), info


def hf_logits(model, ids):
    with torch.no_grad():
        return model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits.float()


def ts_logits(pt, ids):
    m = torch.jit.load(pt)
    with torch.no_grad():
        return m.forward(ids, torch.ones_like(ids)).float()


def sample_ids(seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 384, (2, 24), generator=g)


def check_loads_clean(info, case):
    check(not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"],
          f"{case}: from_pretrained: no missing/unexpected/mismatched keys {({k: sorted(v)[:4] for k, v in info.items() if k != 'error_msgs'})}")


def suite_families(a):
    tok = os.path.join(a.scratch, "tok")
    make_tokenizer(tok, a.source)
    ids = sample_ids()
    for case in CASES:
        t0 = time.time()
        src = make_hf(os.path.join(a.scratch, case, "hf"), case, tok)
        pt = os.path.join(a.scratch, case, "model.pt")
        back = os.path.join(a.scratch, case, "back")
        script(a, "export_hf", "--hf", src, "--out", pt)
        extra = ["--max-shard-size", "20KB"] if case == "qwen3_moe" else []
        script(a, "export_to_hf", "--checkpoint", pt, "--out", back, *extra)
        orig, new = st_tensors(src), st_tensors(back)
        check(sorted(orig) == sorted(new), f"{case}: tensor names equal the original's ({len(orig)}; "
              f"missing {sorted(set(orig) - set(new))[:3]}, extra {sorted(set(new) - set(orig))[:3]})")
        same = [k for k in orig if k in new and orig[k].dtype == new[k].dtype and orig[k].shape == new[k].shape
                and torch.equal(orig[k].view(-1).view(torch.uint8), new[k].view(-1).view(torch.uint8))]
        check(len(same) == len(orig), f"{case}: every tensor has the original dtype ({CASES[case][2]}) and bytes "
              f"({len(same)}/{len(orig)})")
        if case == "qwen3_moe":
            check(os.path.exists(os.path.join(back, "model.safetensors.index.json"))
                  and len([f for f in os.listdir(back) if f.endswith(".safetensors")]) > 1,
                  f"{case}: sharded above --max-shard-size 20KB, with an index")
        for n in ("config.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json"):
            check(os.path.exists(os.path.join(src, n)) and open(os.path.join(src, n)).read() == open(os.path.join(back, n)).read(),
                  f"{case}: {n} carried verbatim")
        check(json.load(open(os.path.join(src, "tokenizer.json"))) == json.load(open(os.path.join(back, "tokenizer.json"))),
              f"{case}: tokenizer.json has the original content")
        from transformers import AutoTokenizer
        text = "Ana has 22 apples and buys 11 more. \\boxed{33} <|im_end|>"
        check(AutoTokenizer.from_pretrained(src)(text)["input_ids"] == AutoTokenizer.from_pretrained(back)(text)["input_ids"],
              f"{case}: AutoTokenizer from the export encodes as the original")
        m_orig, _ = load_hf(src)
        m_back, info = load_hf(back)
        check_loads_clean(info, case)
        lo, lb = hf_logits(m_orig, ids), hf_logits(m_back, ids)
        check(torch.equal(lo, lb), f"{case}: transformers logits of the export equal the original's exactly")
        if CASES[case][2] == torch.float32:
            d = (ts_logits(pt, ids) - lb).abs().max().item()
            check(d < TOL, f"{case}: TorchScript policy vs exported HF logits max |diff| {d:.2e} < {TOL}")
        print(f"     {case}: {time.time() - t0:.1f} s", flush=True)
    # --dtype float32 from a bf16 original: float32 tensors holding exactly the bf16 values; config says float32
    case = "qwen3_bf16"
    back32 = os.path.join(a.scratch, case, "back32")
    script(a, "export_to_hf", "--checkpoint", os.path.join(a.scratch, case, "model.pt"),
         "--out", back32, "--dtype", "float32")
    orig, new = st_tensors(os.path.join(a.scratch, case, "hf")), st_tensors(back32)
    check(all(new[k].dtype == torch.float32 and torch.equal(new[k], orig[k].float()) for k in orig),
          f"{case} --dtype float32: float32 tensors equal to the bf16 originals upcast")
    check(json.load(open(os.path.join(back32, "config.json")))["dtype"] == "float32", f"{case} --dtype float32: config dtype")


def train_config(path, model, run_dir, source, extra):
    text = f"""model:
  path: {model}
{extra}data:
  task: jsonl
  path: {source}/data/math_sample.jsonl
rollout:
  prompts_per_step: 4
  group_size: 4
  max_new_tokens: 12
  temperature: 1.0
reward:
  kind: regex
  regex: "[0-9]"      # a random model writes a digit about half the time: groups with a learning signal
algorithm:
  num_minibatches: 2
optimizer:
  lr: 3.0e-3
train:
  max_steps: 2
  output_dir: {run_dir}
  threads: 1
logging:
  progress: false
"""
    open(path, "w").write(text)


def suite_train(a):
    tok = os.path.join(a.scratch, "tok")
    make_tokenizer(tok, a.source)
    ids = sample_ids()
    for case, extra in (("qwen2", ""), ("llama_tied", "  dtype: bfloat16\n")):
        t0 = time.time()
        base = os.path.join(a.scratch, "train_" + case)
        src = make_hf(os.path.join(base, "hf"), case, tok)
        pt, run_dir, back = os.path.join(base, "model.pt"), os.path.join(base, "run"), os.path.join(base, "back")
        script(a, "export_hf", "--hf", src, "--out", pt)
        cfg = os.path.join(base, "train.yaml")
        train_config(cfg, pt, run_dir, a.source, extra)
        run([a.gspo, "train", "--config", cfg])
        ckpt = os.path.join(run_dir, "checkpoints", sorted(os.listdir(os.path.join(run_dir, "checkpoints")))[-1])
        script(a, "export_to_hf", "--checkpoint", run_dir, "--out", back)
        orig, new = st_tensors(src), st_tensors(back)
        check(sorted(orig) == sorted(new) and all(orig[k].dtype == new[k].dtype for k in orig),
              f"train {case}: tensor names and dtypes equal the original's")
        moved = [k for k in orig if not torch.equal(orig[k], new[k])]
        check(len(moved) > len(orig) // 2, f"train {case}: trained tensors differ from the original ({len(moved)}/{len(orig)})")
        m_back, info = load_hf(back)
        check_loads_clean(info, "train " + case)
        lb = hf_logits(m_back, ids)
        d = (ts_logits(os.path.join(ckpt, "policy.pt"), ids) - lb).abs().max().item()
        check(d < TOL, f"train {case}: exported HF logits vs the checkpoint's policy.pt max |diff| {d:.2e} < {TOL}")
        away = (hf_logits(load_hf(src)[0], ids) - lb).abs().max().item()
        check(away > TRAINED_MIN, f"train {case}: logits moved from the original's by {away:.2e} > {TRAINED_MIN}")
        print(f"     train {case}: {time.time() - t0:.1f} s", flush=True)


def strip_hf_source(pt, out):
    extra = {"gspo_manifest.json": "", "gspo_tokenizer.json": ""}
    m = torch.jit.load(pt, _extra_files=extra)
    man = json.loads(extra["gspo_manifest.json"])
    man.pop("hf_source", None)
    extra["gspo_manifest.json"] = json.dumps(man)
    m.save(out, _extra_files=extra)


def suite_fallback(a):
    ids = sample_ids() % 259
    tiny = os.path.join(a.scratch, "tiny.pt")
    script(a, "make_tiny_model", "--out", tiny, "--hidden", "32", "--qkv-bias")
    tok = os.path.join(a.scratch, "tok")
    make_tokenizer(tok, a.source)
    src = make_hf(os.path.join(a.scratch, "moe", "hf"), "qwen3_moe", tok)
    cfg = json.load(open(os.path.join(src, "config.json")))
    cfg["rope_parameters"] = {"rope_type": "default", "rope_theta": 1000000.0}
    json.dump(cfg, open(os.path.join(src, "config.json"), "w"), indent=2)
    moe = os.path.join(a.scratch, "moe", "model.pt")
    script(a, "export_hf", "--hf", src, "--out", moe + ".full")
    strip_hf_source(moe + ".full", moe)
    # make_tiny_model's "llama" with q/k/v bias but none on o_proj is Qwen2's layout (HF Llama biases o_proj too)
    for name, pt, want_theta, want_type in (("make_tiny_model --qkv-bias", tiny, 10000.0, "qwen2"),
                                            ("qwen3_moe without hf_source", moe, 1e6, "qwen3_moe")):
        back = pt + ".hf"
        out = script(a, "export_to_hf", "--checkpoint", pt, "--out", back)
        cfg = json.load(open(os.path.join(back, "config.json")))
        check("built from the manifest" in out and cfg["model_type"] == want_type,
              f"{name}: config.json built from the manifest, model_type {cfg['model_type']}")
        check(cfg["rope_parameters"]["rope_theta"] == want_theta,
              f"{name}: rope_theta read back from the RoPE tables ({cfg['rope_parameters']['rope_theta']})")
        m_back, info = load_hf(back)
        check_loads_clean(info, name)
        d = (ts_logits(pt, ids) - hf_logits(m_back, ids)).abs().max().item()
        check(d < TOL, f"{name}: TorchScript vs HF logits from the built config max |diff| {d:.2e} < {TOL}")


def suite_errors(a):
    exe = [a.python, f"{a.source}/scripts/export_to_hf.py"]
    missing = os.path.join(a.scratch, "no_such_run")
    out = run(exe + ["--checkpoint", missing, "--out", os.path.join(a.scratch, "x")], want=5)
    check(missing in out and "no such checkpoint" in out, "missing checkpoint: exit 5 naming the path")
    empty_run = os.path.join(a.scratch, "empty_run")
    os.makedirs(os.path.join(empty_run, "checkpoints", "step_00000002"), exist_ok=True)  # no state.json: incomplete
    out = run(exe + ["--checkpoint", empty_run, "--out", os.path.join(a.scratch, "x")], want=5)
    check("state.json" in out, "run directory without a complete checkpoint: exit 5 naming state.json")
    tiny = os.path.join(a.scratch, "tiny.pt")
    script(a, "make_tiny_model", "--out", tiny, "--hidden", "32")
    extra = {"gspo_manifest.json": "", "gspo_tokenizer.json": ""}
    m = torch.jit.load(tiny, _extra_files=extra)
    man = json.loads(extra["gspo_manifest.json"])
    man["architecture"] = "mistral"
    extra["gspo_manifest.json"] = json.dumps(man)
    bad = os.path.join(a.scratch, "mistral.pt")
    m.save(bad, _extra_files=extra)
    out = run(exe + ["--checkpoint", bad, "--out", os.path.join(a.scratch, "x")], want=4)
    check(bad in out and "architecture 'mistral'" in out, "unknown architecture: exit 4 naming the file and key")
    notpt = os.path.join(a.scratch, "not_a_model.pt")
    open(notpt, "w").write("hello")
    out = run(exe + ["--checkpoint", notpt, "--out", os.path.join(a.scratch, "x")], want=5)
    check(notpt in out, "a file that is not a TorchScript archive: exit 5 naming it")
    busy = os.path.join(a.scratch, "busy")
    os.makedirs(busy, exist_ok=True)
    open(os.path.join(busy, "keep.txt"), "w").write("x")
    out = run(exe + ["--checkpoint", tiny, "--out", busy], want=2)
    check("--overwrite" in out and os.path.exists(os.path.join(busy, "keep.txt")), "non-empty output: exit 2, untouched")
    run(exe + ["--checkpoint", tiny, "--out", busy, "--overwrite"])
    check(sorted(os.listdir(busy)) == ["config.json", "model.safetensors"],
          f"--overwrite replaces it; a byte-tokenizer policy writes no tokenizer files ({sorted(os.listdir(busy))})")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("suite", choices=["families", "train", "fallback", "errors"])
    p.add_argument("--source", required=True)
    p.add_argument("--gspo", required=True)
    p.add_argument("--scratch", required=True)
    a = p.parse_args()
    a.python = sys.executable
    shutil.rmtree(a.scratch, ignore_errors=True)
    os.makedirs(a.scratch)
    torch.set_num_threads(1)
    t0 = time.time()
    {"families": suite_families, "train": suite_train, "fallback": suite_fallback, "errors": suite_errors}[a.suite](a)
    print(f"{a.suite}: {len(FAILS)} failed, {time.time() - t0:.1f} s")
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
