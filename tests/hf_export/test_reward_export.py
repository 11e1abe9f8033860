#!/usr/bin/env python3
"""#55 item 1: Hugging Face *ForSequenceClassification reward models exported by scripts/export_hf.py --reward score
as transformers does (docs/model-contract.md, "Reward models (reward_api 1)"). CPU only, nothing downloaded.

    test_reward_export.py --scratch DIR [--fixture OUT_DIR]      (the test; and the C++ fixture)
    test_reward_export.py --fixture OUT_DIR                      (the fixture alone, a few seconds)

For qwen3, qwen2 and llama (llama3 RoPE scaling, so the long row crosses the original context), a tiny random model
(hidden 64, 2 layers, 4 heads, 2 KV heads, vocab 300, pad 0; random norms and biases, so a dropped one shows) made
with transformers and saved to DIR/<family> is exported with --reward, loaded with torch.jit.load, and its
score(ids, mask) compared with transformers' model(input_ids, attention_mask).logits[:, 0] in float32, on each row
unpadded and on the same batch (its last token is the rightmost id that is not pad_token_id: the random ids never
contain it), for right-padded, left-padded and mixed (left, right, both sides) batches of rows of different lengths,
long rows (1500 tokens) and multi-turn rows (turns joined by bos/eos), right- and left-padded. Tolerance:
|gspo - hf| <= 1e-4 * max(1, max |hf|). (RoPE scores depend on position differences only, so transformers' column
positions and gspo's cumsum(mask) - 1 agree for padding at the ends of a row.) Also checked: the manifest
(every field; num_parameters = the module's parameters: transformers' count, and for llama/qwen2 the q/k norm
weights the reference architecture holds unused), the tokenizer extra file, that `score` is the only
method, that the scores see the padding (the same rows scored as if their padding were real differ by far more than
the tolerance), and refusals: num_labels 2 (config and weights), a reward checkpoint without --reward, --reward on a
causal LM; a bfloat16 qwen3 export returns float32 scores within 5e-2 * max(1, max |hf|). Exit 0 when every check
holds; prints the largest difference per family.

--fixture OUT_DIR also writes OUT_DIR/reward_byte.pt and reward_nan.pt (byte-level tokenizer; the second's score head
NaN) and OUT_DIR/reward_qwen3.pt (the qwen3 export, RoPE tables capped at 256 columns) and
OUT_DIR/reward_qwen3_cases.json: {"cases": [{"name", "ids": [[...]], "mask": [[...]], "scores": [...]}]} with
transformers' scores (float32) of a right-, a left- and a mixed-padded batch, for the C++ side (< 1 MB together).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "..", "..", "scripts")
EXPORT = os.path.join(SCRIPTS, "export_hf.py")
sys.path.insert(0, SCRIPTS)
import gspo_model  # noqa: E402

REL_TOL = 1e-4  # of max(1, max |hf score|): float32, different kernels, same weights
BF16_TOL = 5e-2  # the same, for a bfloat16 export against float32 transformers
SEES_PADDING = 100  # scoring the padding as real tokens must move the scores this many tolerances at least
PAD, BOS, EOS, VOCAB = 0, 1, 2, 300
MAX_POS = 2048
FIXTURE_MAX_SEQ = 256
FAILS = []

FAMILIES = {  # family: (transformers class, config overrides)
    "qwen3": ("Qwen3ForSequenceClassification", {"head_dim": 16}),
    "qwen2": ("Qwen2ForSequenceClassification", {}),
    "llama": ("LlamaForSequenceClassification",
              {"rope_parameters": {"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
                                   "high_freq_factor": 4.0, "original_max_position_embeddings": 256}}),
}


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILS.append(what)


def export(hf_dir, out, *extra, want_ok=True):
    """Runs scripts/export_hf.py --reward; returns (exit code, what it printed)."""
    p = subprocess.run([sys.executable, EXPORT, "--hf", hf_dir, "--out", out, *extra], capture_output=True, text=True)
    text = p.stdout + p.stderr
    if want_ok and p.returncode != 0:
        print(text[-3000:])
        raise SystemExit(f"FAIL export_hf.py --hf {hf_dir}: exit {p.returncode}")
    return p.returncode, text


def make_hf(d, family, seed=0, **over):
    """A tiny random *ForSequenceClassification model saved to d; returns it (float32, eval)."""
    import transformers
    cls_name, fam_over = FAMILIES[family]
    kw = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=MAX_POS, bos_token_id=BOS, eos_token_id=EOS,
              pad_token_id=PAD, num_labels=1, initializer_range=0.1)
    kw.update(fam_over)
    kw.update(over)
    torch.manual_seed(seed)
    cfg = transformers.AutoConfig.for_model(family, **kw)
    model = getattr(transformers, cls_name)(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.3 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.copy_(0.3 * torch.randn_like(p))
    model.save_pretrained(d)
    return model.eval()


def batch(rows, offsets, width):
    """rows placed at their offsets in [B, width] ids (PAD elsewhere) and their int64 mask."""
    ids = torch.full((len(rows), width), PAD, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (r, o) in enumerate(zip(rows, offsets)):
        ids[i, o:o + len(r)] = r
        mask[i, o:o + len(r)] = 1
    return ids, mask


def right(rows):
    return batch(rows, [0] * len(rows), max(len(r) for r in rows))


def left(rows):
    w = max(len(r) for r in rows)
    return batch(rows, [w - len(r) for r in rows], w)


def cases(seed):
    """(name, rows, ids, mask) of every batch; ids are drawn from [3, VOCAB): never PAD (nor bos/eos, but in turns)."""
    g = torch.Generator().manual_seed(seed)

    def draw(n):
        return torch.randint(3, VOCAB, (n,), generator=g)

    def turns(counts):  # bos turn eos turn eos ...: a "multi-turn" conversation as one id sequence
        parts = [torch.tensor([BOS])]
        for n in counts:
            parts += [draw(n), torch.tensor([EOS])]
        return torch.cat(parts)

    short = [draw(n) for n in (7, 23, 64, 1, 40)]
    mixed = [draw(n) for n in (9, 30, 12, 41)]
    long = [draw(1500), draw(700)]
    chats = [turns([40, 120, 35, 200]), turns([15, 60]), turns([90, 90, 90, 90, 90, 90])]
    out = [("right", short, *right(short)), ("left", short, *left(short)),
           # row 0 left-padded, row 1 right-padded, row 2 both sides, row 3 none
           ("mixed", mixed, *batch(mixed, [41 - 9, 0, 14, 0], 41)),
           ("long_right", long, *right(long)), ("long_left", long, *left(long)),
           ("multi_turn_right", chats, *right(chats)), ("multi_turn_left", chats, *left(chats))]
    return out


def hf_rows(model, rows):
    """transformers' score of each row alone, unpadded."""
    with torch.no_grad():
        return torch.cat([model(input_ids=r.view(1, -1)).logits[:, 0].float() for r in rows])


def manifest_of(pt):
    extra = {"gspo_manifest.json": "", "gspo_tokenizer.json": ""}
    m = torch.jit.load(pt, _extra_files=extra)
    return m, json.loads(extra["gspo_manifest.json"]), json.loads(extra["gspo_tokenizer.json"])


def check_manifest(family, pt, model, tokenizer):
    m, man, tok = manifest_of(pt)
    hidden = model.config.hidden_size
    head_dim = getattr(model.config, "head_dim", None) or hidden // model.config.num_attention_heads
    want = {"format": "gspo-reward-model", "reward_api": 1, "architecture": family, "vocab_size": VOCAB,
            "max_seq_len": MAX_POS, "bos_token_id": BOS, "eos_token_id": EOS, "pad_token_id": PAD, "num_layers": 2,
            "hidden_size": hidden, "num_heads": 4, "num_kv_heads": 2, "head_dim": head_dim, "dtype": "float32",
            "tokenizer_type": tokenizer["type"],
            # the module's own count: transformers', and (2 layers x q/k) the norm weights held unused without qk_norm
            "num_parameters": sum(p.numel() for p in model.parameters()) + (0 if family == "qwen3" else 4 * head_dim)}
    wrong = {k: (man.get(k), v) for k, v in want.items() if man.get(k) != v}
    check(not wrong, f"{family}: manifest fields (wrong: {wrong})")
    held = sum(p.numel() for p in m.parameters())
    check(man.get("num_parameters") == held, f"{family}: num_parameters is the module's ({held})")
    shape = man.get("shape") or {}
    check(shape.get("intermediate_size") == 128 and shape.get("qkv_bias") == (family == "qwen2")
          and shape.get("qk_norm") == (family == "qwen3"),
          f"{family}: manifest shape {man.get('shape')}")
    check("contract_version" not in man, f"{family}: no contract_version (a reward model is not a policy)")
    check(tok == tokenizer, f"{family}: gspo_tokenizer.json is the checkpoint's tokenizer spec ({tok.get('type')})")
    methods = [n for n in ("forward", "prefill", "decode", "init_cache", "logits_from", "layer_api", "slot_api")
               if hasattr(m, n)]
    check(hasattr(m, "score") and not methods, f"{family}: score is the one method (also found: {methods})")
    return m


def compare_family(family, a):
    d = os.path.join(a.scratch, family)
    model = make_hf(d, family)
    tokenizer = {"type": "none"}
    if family == "llama":  # a checkpoint's own gspo_tokenizer.json travels verbatim
        tokenizer = {"type": "byte", "add_bos": True,
                     "special_tokens": {"<|pad|>": PAD, "<|bos|>": BOS, "<|eos|>": EOS}}
        json.dump(tokenizer, open(os.path.join(d, "gspo_tokenizer.json"), "w"))
    pt = os.path.join(a.scratch, f"{family}.pt")
    print(export(d, pt, "--reward")[1].strip())
    m = check_manifest(family, pt, model, tokenizer)
    worst = [0.0, 0.0]  # max |diff|, max |diff| / max(1, max |hf|)
    with torch.no_grad():
        for name, rows, ids, mask in cases(1):
            got = m.score(ids, mask)
            check(got.dtype == torch.float32 and list(got.shape) == [len(rows)],
                  f"{family} {name}: float32 [{len(rows)}] ({got.dtype}, {list(got.shape)})")
            refs = {"each row unpadded": hf_rows(model, rows),
                    "the same batch": model(input_ids=ids, attention_mask=mask).logits[:, 0].float()}
            for what, ref in refs.items():
                diff = (got - ref).abs().max().item()
                tol = REL_TOL * max(1.0, ref.abs().max().item())
                worst = [max(worst[0], diff), max(worst[1], diff / max(1.0, ref.abs().max().item()))]
                check(diff <= tol, f"{family} {name} {list(ids.shape)} vs transformers on {what}: max |diff| "
                                   f"{diff:.2e} (tolerance {tol:.1e}, scores up to {ref.abs().max().item():.3f})")
            if name in ("left", "mixed"):
                blind = m.score(ids, torch.ones_like(mask))
                moved = (blind - refs["each row unpadded"]).abs().max().item()
                check(moved > SEES_PADDING * REL_TOL, f"{family} {name}: the padding scored as real moves the scores "
                                                      f"{moved:.2e} (the comparison can see padding errors)")
    print(f"{family}: max |gspo - transformers| = {worst[0]:.2e} ({worst[1]:.2e} of max(1, max |hf|))")
    if family == "qwen3":
        check_bf16(d, a, model)
    return worst


def check_bf16(d, a, model):
    """A bfloat16 export still returns float32 scores, within the policy contract's 16-bit tolerance."""
    pt = os.path.join(a.scratch, "qwen3_bf16.pt")
    export(d, pt, "--reward", "--dtype", "bfloat16")
    m, man, _ = manifest_of(pt)
    check(man["dtype"] == "bfloat16", f"bf16: manifest dtype {man['dtype']}")
    with torch.no_grad():
        for name, rows, ids, mask in cases(1)[:3]:
            got, ref = m.score(ids, mask), hf_rows(model, rows)
            diff, tol = (got - ref).abs().max().item(), BF16_TOL * max(1.0, ref.abs().max().item())
            check(got.dtype == torch.float32 and diff <= tol,
                  f"qwen3 bf16 {name}: {got.dtype}, max |diff| {diff:.2e} (tolerance {tol:.1e})")


def check_refusals(a):
    two = os.path.join(a.scratch, "qwen3_two_labels")
    make_hf(two, "qwen3", num_hidden_layers=1, num_labels=2)
    rc, out = export(two, os.path.join(a.scratch, "two.pt"), "--reward", want_ok=False)
    check(rc != 0 and "num_labels" in out and os.path.join(two, "config.json") in out,
          f"num_labels 2 refused naming config.json (exit {rc}: {out.strip().splitlines()[-1:]})")
    # config.json says 1, the weights hold two rows: refused by the weights' check
    lying = os.path.join(a.scratch, "qwen3_two_rows")
    os.makedirs(lying, exist_ok=True)
    shutil.copy(os.path.join(two, "model.safetensors"), lying)
    shutil.copy(os.path.join(a.scratch, "qwen3", "config.json"), lying)
    cfg = json.load(open(os.path.join(lying, "config.json")))
    cfg["num_hidden_layers"] = 1
    cfg.pop("layer_types", None)
    json.dump(cfg, open(os.path.join(lying, "config.json"), "w"))
    rc, out = export(lying, os.path.join(a.scratch, "rows.pt"), "--reward", want_ok=False)
    check(rc != 0 and "num_labels" in out and "score.weight" in out,
          f"a two-row score.weight refused (exit {rc}: {out.strip().splitlines()[-1:]})")
    rc, out = export(os.path.join(a.scratch, "qwen3"), os.path.join(a.scratch, "policy.pt"), want_ok=False)
    check(rc != 0 and "--reward" in out and not os.path.exists(os.path.join(a.scratch, "policy.pt")),
          f"a reward checkpoint without --reward refused (exit {rc}: {out.strip().splitlines()[-1:]})")
    import transformers
    lm = os.path.join(a.scratch, "qwen3_causal_lm")
    transformers.Qwen3ForCausalLM(transformers.Qwen3Config(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, eos_token_id=EOS)).save_pretrained(lm)
    rc, out = export(lm, os.path.join(a.scratch, "lm.pt"), "--reward", want_ok=False)
    check(rc != 0 and "ForSequenceClassification" in out,
          f"--reward on a causal LM refused (exit {rc}: {out.strip().splitlines()[-1:]})")
    # no pad_token_id in config.json: the manifest's pad is eos (as the policy export's)
    nopad = os.path.join(a.scratch, "qwen3_no_pad")
    os.makedirs(nopad, exist_ok=True)
    shutil.copy(os.path.join(a.scratch, "qwen3", "model.safetensors"), nopad)
    cfg = json.load(open(os.path.join(a.scratch, "qwen3", "config.json")))
    cfg.pop("pad_token_id")
    json.dump(cfg, open(os.path.join(nopad, "config.json"), "w"))
    export(nopad, os.path.join(a.scratch, "nopad.pt"), "--reward")
    pad = manifest_of(os.path.join(a.scratch, "nopad.pt"))[1]["pad_token_id"]
    check(pad == EOS, f"no pad_token_id: the manifest's pad is eos ({pad})")


def check_rope_tables():
    """RewardModel builds its RoPE tables with gspo_model.rope_tables, CausalLM in its constructor: the same numbers."""
    base = {"vocab_size": 10, "hidden_size": 16, "num_layers": 1, "num_heads": 2, "num_kv_heads": 1, "head_dim": 8,
            "intermediate_size": 16, "rms_norm_eps": 1e-6, "rope_theta": 500000.0, "max_seq_len": 300}
    for scaling in (None, {"rope_type": "linear", "factor": 2.0},
                    {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 64}):
        cfg = dict(base, rope_scaling=scaling)
        policy, reward = gspo_model.CausalLM(cfg), gspo_model.RewardModel(cfg)
        check(torch.equal(policy.cos_table, reward.cos_table) and torch.equal(policy.sin_table, reward.sin_table),
              f"RewardModel's RoPE tables are CausalLM's (scaling {scaling and scaling['rope_type']})")


def write_fixture(a, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    d = os.path.join(a.scratch, "fixture_qwen3")
    model = make_hf(d, "qwen3")
    pt = os.path.join(out_dir, "reward_qwen3.pt")
    export(d, pt, "--reward", "--max-seq-len", str(FIXTURE_MAX_SEQ))
    m = torch.jit.load(pt)
    keep = ("right", "left", "mixed")
    out = []
    with torch.no_grad():
        for name, rows, ids, mask in cases(2):
            if name in keep:
                ref = hf_rows(model, rows)
                diff = (m.score(ids, mask) - ref).abs().max().item()
                check(diff <= REL_TOL * max(1.0, ref.abs().max().item()), f"fixture {name}: max |diff| {diff:.2e}")
                out.append({"name": name, "ids": ids.tolist(), "mask": mask.tolist(), "scores": ref.tolist()})
    cases_path = os.path.join(out_dir, "reward_qwen3_cases.json")
    json.dump({"model": "reward_qwen3.pt", "tolerance": f"{REL_TOL} * max(1, max |score|)",
               "made_by": "tests/hf_export/test_reward_export.py --fixture", "cases": out}, open(cases_path, "w"))
    size = os.path.getsize(pt) + os.path.getsize(cases_path)
    check(size < 1 << 20, f"fixture {out_dir}: {size} bytes (< 1 MB)")
    # For the model reward's C++ tests (tests/unit/test_model_reward.cpp): a byte-level tokenizer (ids 0..255 bytes,
    # 256.. its specials), and the same model whose score head is NaN (a reward model gone bad).
    byte_spec = {"type": "byte", "add_bos": False, "special_tokens": {"<|pad|>": 256, "<|bos|>": 257, "<|eos|>": 258}}
    for name, poison in (("reward_byte.pt", False), ("reward_nan.pt", True)):
        d = os.path.join(a.scratch, "fixture_" + name[:-3])
        model = make_hf(d, "qwen3", seed=1, pad_token_id=256, bos_token_id=257, eos_token_id=258)
        if poison:
            with torch.no_grad():
                model.score.weight.fill_(float("nan"))
            model.save_pretrained(d)
        json.dump(byte_spec, open(os.path.join(d, "gspo_tokenizer.json"), "w"))
        export(d, os.path.join(out_dir, name), "--reward", "--max-seq-len", str(FIXTURE_MAX_SEQ))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scratch", help="working directory (emptied first); without it, --fixture alone is written")
    p.add_argument("--fixture", help="write reward_qwen3.pt and reward_qwen3_cases.json here")
    a = p.parse_args()
    if not a.scratch and not a.fixture:
        p.error("give --scratch DIR (the test), --fixture OUT_DIR (the C++ fixture), or both")
    torch.set_num_threads(1)
    t0 = time.time()
    if not a.scratch:  # the fixture alone, its checkpoint in a directory of its own
        with tempfile.TemporaryDirectory() as tmp:
            a.scratch = tmp
            write_fixture(a, a.fixture)
        sys.exit(1 if FAILS else 0)
    shutil.rmtree(a.scratch, ignore_errors=True)
    os.makedirs(a.scratch)
    check_rope_tables()
    worst = {family: compare_family(family, a) for family in FAMILIES}
    check_refusals(a)
    if a.fixture:
        write_fixture(a, a.fixture)
    print("max |gspo - transformers| (float32): " + ", ".join(f"{k} {v[0]:.2e}" for k, v in worst.items()))
    print(f"reward export: {len(FAILS)} failed, {time.time() - t0:.1f} s")
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
