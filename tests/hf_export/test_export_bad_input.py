#!/usr/bin/env python3
"""Issue #65 items 2, 9 and 10, the exporter's side: scripts/export_hf.py on Llama-3-style EOS lists, tokenizer configs,
bad input and reward models without an EOS. CPU only, nothing downloaded (tiny random models made here with
transformers, a byte-level BPE trained here on data/math_sample.jsonl); ctest hf_export_bad_input (~1 min).

    test_export_bad_input.py --scratch DIR [--gspo BUILD/gspo]

eos        a Llama-shaped model whose config.json's eos_token_id is a list ([end_of_text, eom_id, eot_id], as
           Llama-3.x Instruct) and whose generation_config.json adds one more: the manifest's eos_token_ids is the
           union in order of first appearance (config.json's first), eos_token_id its first, pad its first; a
           config.json with one id and a generation_config.json list (Qwen-style) gives both; a config.json without
           one takes generation_config.json's.
tokenizer  the same model's tokenizer_config.json writes bos_token as an AddedToken object and pad_token and
           add_bos_token as null: the embedded config holds bos_token as its content string and no nulls. A number,
           an empty string, a name tokenizer.json lacks, an object without content, and a non-boolean add_bos_token
           are refused naming tokenizer_config.json and the key. With --gspo, `gspo inspect` loads the exports (the
           C++ tokenizer accepts what was embedded).
errors     a missing --hf directory, a missing config.json, one that is not JSON or not an object, one without
           vocab_size, an eos_token_id outside the vocabulary, truncated and garbage safetensors, a truncated
           pytorch_model.bin, --max-seq-len -5, 0 and 1: each exit 2 with one line "export_hf.py: error: ..." naming
           the file (or flag) and no traceback, and nothing written to --out.
reward     a LlamaForSequenceClassification without eos_token_id (and without pad_token_id) exports with --reward:
           eos_token_id -1, no eos_token_ids, pad 0; with a pad_token_id and no EOS the pad is kept; the same
           config as a policy (no --reward) is still refused for want of an EOS.
Exit 0 when every check holds.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
EXPORT = os.path.join(ROOT, "scripts", "export_hf.py")
SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|eom_id|>"]  # ids 0..3, Llama 3's names
BOS, END_OF_TEXT, EOT, EOM = 0, 1, 2, 3
VOCAB = 320
FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILS.append(what)


def export(hf_dir, out, *extra):
    """scripts/export_hf.py in a subprocess: (exit code, stdout, stderr)."""
    p = subprocess.run([sys.executable, EXPORT, "--hf", hf_dir, "--out", out, *extra], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def manifest_of(pt):
    extra = {"gspo_manifest.json": "", "gspo_tokenizer.json": ""}
    torch.jit.load(pt, _extra_files=extra)
    return json.loads(extra["gspo_manifest.json"]), json.loads(extra["gspo_tokenizer.json"])


def export_ok(hf_dir, out, what, *extra):
    rc, so, se = export(hf_dir, out, *extra)
    check(rc == 0 and os.path.exists(out), f"{what}: exported (exit {rc}{': ' + (so + se)[-600:] if rc else ''})")
    return manifest_of(out) if rc == 0 and os.path.exists(out) else ({}, {})


def refused(hf_dir, out, what, names, *extra):
    """export_hf.py must exit 2 with one line 'export_hf.py: error: ...' holding every string of `names`, no
    traceback, and no --out."""
    if os.path.exists(out):
        os.remove(out)
    rc, so, se = export(hf_dir, out, *extra)
    lines = [l for l in se.splitlines() if l.strip()]
    line = lines[-1] if lines else ""
    good = (rc == 2 and len(lines) == 1 and line.startswith("export_hf.py: error: ") and "Traceback" not in se
            and all(n in line for n in names) and not os.path.exists(out))
    check(good, f"{what}: exit 2, one line naming {names}, nothing written (exit {rc}: {(se or so).strip()[-400:]!r})")


def gspo_inspect(a, pt, what):
    if not a.gspo:
        return
    p = subprocess.run([a.gspo, "inspect", pt], capture_output=True, text=True)
    check(p.returncode == 0, f"{what}: gspo inspect loads it (exit {p.returncode}: {(p.stdout + p.stderr)[-400:]!r})")


def make_tokenizer(d):
    """A byte-level BPE (vocab 300) trained on the math sample, Llama 3's special tokens first."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    corpus = [json.loads(line)["problem"] for line in open(os.path.join(ROOT, "data", "math_sample.jsonl"))]
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus, trainer)
    os.makedirs(d, exist_ok=True)
    tok.save(os.path.join(d, "tokenizer.json"))
    ids = [tok.token_to_id(s) for s in SPECIALS]
    assert ids == [BOS, END_OF_TEXT, EOT, EOM], ids


def tokenizer_config(d, **over):
    """Llama-2/3-style tokenizer_config.json: bos_token an AddedToken object, pad_token and add_bos_token null."""
    c = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 128,
         "bos_token": {"__type": "AddedToken", "content": "<|begin_of_text|>", "lstrip": False, "normalized": False,
                       "rstrip": False, "single_word": False, "special": True},
         "eos_token": "<|eot_id|>", "pad_token": None, "add_bos_token": None}
    c.update(over)
    json.dump(c, open(os.path.join(d, "tokenizer_config.json"), "w"), indent=2)


def edit_json(path, **kv):
    """Sets (value not None) or removes (None) keys of a JSON file."""
    c = json.load(open(path))
    for k, v in kv.items():
        if v is None:
            c.pop(k, None)
        else:
            c[k] = v
    json.dump(c, open(path, "w"), indent=2)


def make_llama(d, tok_dir, cls="LlamaForCausalLM", **over):
    """A tiny random Llama-shaped model saved to d with the tokenizer of tok_dir."""
    import transformers
    kw = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, head_dim=8, max_position_embeddings=128, bos_token_id=BOS,
              eos_token_id=[END_OF_TEXT, EOM, EOT], pad_token_id=None, tie_word_embeddings=False,
              rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                               "high_freq_factor": 4.0, "original_max_position_embeddings": 32})
    kw.update(over)
    torch.manual_seed(0)
    model = getattr(transformers, cls)(transformers.LlamaConfig(**kw))
    model.save_pretrained(d)
    if tok_dir:
        for n in os.listdir(tok_dir):
            shutil.copy(os.path.join(tok_dir, n), d)
    return d


def variant(src, dst):
    """A copy of a model directory (to edit its JSON files or weights)."""
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    return dst


def suite_eos(a, llama):
    out = os.path.join(a.scratch, "llama3.pt")
    cfg = json.load(open(os.path.join(llama, "config.json")))
    check(cfg["eos_token_id"] == [END_OF_TEXT, EOM, EOT], f"the Llama-shaped config.json has a list eos_token_id "
                                                          f"({cfg['eos_token_id']})")
    man, _ = export_ok(llama, out, "llama3 eos list")
    want = [END_OF_TEXT, EOM, EOT, 7]
    check(man.get("eos_token_ids") == want and man.get("eos_token_id") == END_OF_TEXT
          and man.get("pad_token_id") == END_OF_TEXT,
          f"llama3: eos_token_ids {man.get('eos_token_ids')} == {want} (config.json's, then generation_config.json's "
          f"new one), eos_token_id {man.get('eos_token_id')} its first, pad {man.get('pad_token_id')} = the first")
    gspo_inspect(a, out, "llama3 eos list")

    qwen_like = variant(llama, os.path.join(a.scratch, "eos_int_gen_list"))
    edit_json(os.path.join(qwen_like, "config.json"), eos_token_id=EOT)
    edit_json(os.path.join(qwen_like, "generation_config.json"), eos_token_id=[EOT, END_OF_TEXT])
    man, _ = export_ok(qwen_like, qwen_like + ".pt", "config.json int + generation_config.json list")
    check(man.get("eos_token_ids") == [EOT, END_OF_TEXT] and man.get("eos_token_id") == EOT,
          f"config.json eos {EOT}, generation_config.json [{EOT}, {END_OF_TEXT}]: eos_token_ids "
          f"{man.get('eos_token_ids')} (generation_config.json's was ignored before)")

    gen_only = variant(llama, os.path.join(a.scratch, "eos_gen_only"))
    edit_json(os.path.join(gen_only, "config.json"), eos_token_id=None)
    edit_json(os.path.join(gen_only, "generation_config.json"), eos_token_id=EOM)
    man, _ = export_ok(gen_only, gen_only + ".pt", "eos in generation_config.json only")
    check(man.get("eos_token_ids") == [EOM] and man.get("eos_token_id") == EOM,
          f"no eos in config.json: generation_config.json's {EOM} ({man.get('eos_token_ids')}, "
          f"{man.get('eos_token_id')})")

    none = variant(llama, os.path.join(a.scratch, "eos_none"))
    edit_json(os.path.join(none, "config.json"), eos_token_id=None)
    edit_json(os.path.join(none, "generation_config.json"), eos_token_id=None)
    refused(none, none + ".pt", "a policy with no eos_token_id anywhere", [os.path.join(none, "config.json"),
                                                                            "eos_token_id"])
    outside = variant(llama, os.path.join(a.scratch, "eos_outside"))
    edit_json(os.path.join(outside, "generation_config.json"), eos_token_id=[EOT, VOCAB + 5])
    refused(outside, outside + ".pt", "a generation_config.json eos outside the vocabulary",
            [os.path.join(outside, "generation_config.json"), "eos_token_id", str(VOCAB + 5)])
    return out


def suite_tokenizer(a, llama, pt):
    _, spec = manifest_of(pt) if os.path.exists(pt) else ({}, {})
    want = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}
    check(spec.get("type") == "hf" and spec.get("config") == want,
          f"tokenizer_config.json's AddedToken bos and null pad/add_bos_token embedded as {want} "
          f"(got {spec.get('config')})")
    for name, over, key in (("eos_token a number", {"eos_token": 5}, "eos_token"),
                            ("eos_token empty", {"eos_token": ""}, "eos_token"),
                            ("pad_token not in tokenizer.json", {"pad_token": "<|finetune_right_pad_id|>"},
                             "pad_token"),
                            ("bos_token an object without content", {"bos_token": {"__type": "AddedToken"}},
                             "bos_token"),
                            ("add_bos_token a string", {"add_bos_token": "yes"}, "add_bos_token")):
        d = variant(llama, os.path.join(a.scratch, "tok_" + key + "_" + str(len(name))))
        tokenizer_config(d, **over)
        refused(d, d + ".pt", f"tokenizer_config.json {name}", [os.path.join(d, "tokenizer_config.json"), key])
    d = variant(llama, os.path.join(a.scratch, "tok_add_bos"))
    tokenizer_config(d, add_bos_token=True, pad_token="<|end_of_text|>")
    _, spec = export_ok(d, d + ".pt", "add_bos_token true, pad_token a string")
    check(spec.get("config") == dict(want, pad_token="<|end_of_text|>", add_bos_token=True),
          f"add_bos_token true and pad_token kept ({spec.get('config')})")
    gspo_inspect(a, d + ".pt", "add_bos_token true")
    d = variant(llama, os.path.join(a.scratch, "tok_not_json"))
    open(os.path.join(d, "tokenizer_config.json"), "w").write("{\"eos_token\": ")
    refused(d, d + ".pt", "tokenizer_config.json not JSON", [os.path.join(d, "tokenizer_config.json"), "JSON"])


def suite_errors(a, llama):
    out = os.path.join(a.scratch, "bad.pt")
    missing = os.path.join(a.scratch, "no_such_dir")
    refused(missing, out, "a missing --hf directory", [missing])
    d = variant(llama, os.path.join(a.scratch, "no_config"))
    os.remove(os.path.join(d, "config.json"))
    refused(d, out, "no config.json", [os.path.join(d, "config.json")])
    d = variant(llama, os.path.join(a.scratch, "config_not_json"))
    open(os.path.join(d, "config.json"), "w").write('{"model_type": "llama", "hidden_size": ')
    refused(d, out, "config.json not JSON", [os.path.join(d, "config.json"), "not valid JSON"])
    d = variant(llama, os.path.join(a.scratch, "config_list"))
    open(os.path.join(d, "config.json"), "w").write("[1, 2]")
    refused(d, out, "config.json a list", [os.path.join(d, "config.json"), "not an object"])
    d = variant(llama, os.path.join(a.scratch, "config_no_vocab"))
    edit_json(os.path.join(d, "config.json"), vocab_size=None)
    refused(d, out, "config.json without vocab_size", [os.path.join(d, "config.json"), "vocab_size"])
    d = variant(llama, os.path.join(a.scratch, "config_eos_outside"))
    edit_json(os.path.join(d, "config.json"), eos_token_id=[END_OF_TEXT, 100000])
    refused(d, out, "config.json eos_token_id outside the vocabulary", [os.path.join(d, "config.json"), "100000"])

    d = variant(llama, os.path.join(a.scratch, "st_truncated"))
    st = os.path.join(d, "model.safetensors")
    data = open(st, "rb").read()
    open(st, "wb").write(data[:len(data) // 2])
    refused(d, out, "safetensors cut in half", [st, "truncated"])
    d = variant(llama, os.path.join(a.scratch, "st_header_cut"))
    st = os.path.join(d, "model.safetensors")
    open(st, "wb").write(data[:100])
    refused(d, out, "safetensors cut inside its header", [st])
    d = variant(llama, os.path.join(a.scratch, "st_garbage"))
    st = os.path.join(d, "model.safetensors")
    open(st, "wb").write(b"this is not a safetensors file at all\n")
    refused(d, out, "garbage in model.safetensors", [st])
    d = variant(llama, os.path.join(a.scratch, "st_empty"))
    st = os.path.join(d, "model.safetensors")
    open(st, "wb").close()
    refused(d, out, "an empty model.safetensors", [st])

    d = variant(llama, os.path.join(a.scratch, "bin_truncated"))
    from safetensors.torch import load_file
    sd = load_file(os.path.join(d, "model.safetensors"))
    os.remove(os.path.join(d, "model.safetensors"))
    b = os.path.join(d, "pytorch_model.bin")
    torch.save(sd, b)
    whole = open(b, "rb").read()
    open(b, "wb").write(whole[:len(whole) // 2])
    refused(d, out, "pytorch_model.bin cut in half", [b])
    open(b, "wb").write(b"not a pickle")
    refused(d, out, "garbage in pytorch_model.bin", [b])

    for n in ("-5", "0", "1"):
        refused(llama, out, f"--max-seq-len {n}", ["--max-seq-len " + n], "--max-seq-len", n)
    man, _ = export_ok(llama, out, "--max-seq-len 2", "--max-seq-len", "2")
    check(man.get("max_seq_len") == 2, f"--max-seq-len 2 exports max_seq_len 2 ({man.get('max_seq_len')})")
    refused(llama, os.path.join(a.scratch, "no_such_dir", "m.pt"), "--out in a missing directory",
            [os.path.join(a.scratch, "no_such_dir")])


def suite_reward(a, tok):
    d = make_llama(os.path.join(a.scratch, "rm_no_eos"), tok, cls="LlamaForSequenceClassification", num_labels=1,
                   eos_token_id=None, pad_token_id=None, bos_token_id=None)
    for n in ("generation_config.json",):
        if os.path.exists(os.path.join(d, n)):
            os.remove(os.path.join(d, n))
    edit_json(os.path.join(d, "config.json"), eos_token_id=None, pad_token_id=None)
    out = os.path.join(a.scratch, "rm_no_eos.pt")
    man, _ = export_ok(d, out, "a reward model without eos_token_id or pad_token_id", "--reward")
    check(man.get("format") == "gspo-reward-model" and man.get("eos_token_id") == -1
          and "eos_token_ids" not in man and man.get("pad_token_id") == 0,
          f"reward without EOS: eos_token_id -1 ({man.get('eos_token_id')}), no eos_token_ids "
          f"({man.get('eos_token_ids')}), pad 0 ({man.get('pad_token_id')})")
    gspo_inspect(a, out, "a reward model without eos")
    p = variant(d, os.path.join(a.scratch, "rm_pad_no_eos"))
    edit_json(os.path.join(p, "config.json"), pad_token_id=EOT)
    man, _ = export_ok(p, p + ".pt", "a reward model with pad_token_id and no EOS", "--reward")
    check(man.get("pad_token_id") == EOT and man.get("eos_token_id") == -1,
          f"reward with pad {EOT} and no EOS: pad kept ({man.get('pad_token_id')}), eos -1 ({man.get('eos_token_id')})")
    # the same checkpoint as a causal LM (architectures changed): a policy still needs an EOS
    c = variant(d, os.path.join(a.scratch, "policy_no_eos"))
    edit_json(os.path.join(c, "config.json"), architectures=["LlamaForCausalLM"])
    refused(c, c + ".pt", "a policy without eos_token_id", [os.path.join(c, "config.json"), "eos_token_id"])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scratch", required=True, help="working directory (emptied first)")
    p.add_argument("--gspo", help="the gspo binary: `gspo inspect` must load the exports")
    a = p.parse_args()
    shutil.rmtree(a.scratch, ignore_errors=True)
    os.makedirs(a.scratch)
    torch.set_num_threads(1)
    t0 = time.time()
    tok = os.path.join(a.scratch, "tok")
    make_tokenizer(tok)
    tokenizer_config(tok)
    llama = make_llama(os.path.join(a.scratch, "llama3"), tok)
    edit_json(os.path.join(llama, "generation_config.json"), eos_token_id=[EOT, 7, END_OF_TEXT])
    pt = suite_eos(a, llama)
    suite_tokenizer(a, llama, pt)
    suite_errors(a, llama)
    suite_reward(a, tok)
    print(f"export bad input: {len(FAILS)} failed, {time.time() - t0:.1f} s")
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
