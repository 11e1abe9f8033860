#!/usr/bin/env python3
"""Writes a tokenizer benchmark corpus as JSON lines {"text": ...}: MATH-500 problems and solutions (LaTeX), GSM8K
questions and answers, HumanEval prompts and solutions (code), and llama.cpp's tokenizer edge cases (whitespace
runs, CJK, emoji), from ../shared. Usage: make_tokenizer_corpus.py SHARED_DIR OUT.jsonl"""
import json
import os
import sys

shared, out = sys.argv[1], sys.argv[2]
bench = os.path.join(shared, "data", "benchmarks")
docs = []
for name, fields in [("math500.jsonl", ["problem", "solution"]), ("gsm8k_test.jsonl", ["question", "answer"]),
                     ("humaneval.jsonl", ["prompt", "canonical_solution", "test"])]:
    for line in open(os.path.join(bench, name), encoding="utf-8"):
        row = json.loads(line)
        docs.append("\n".join(str(row[f]) for f in fields))
inp = open(os.path.join(shared, "data", "tokenizers", "qwen", "llamacpp_vocab_test_qwen2.inp"), encoding="utf-8").read()
docs += [s for s in inp.split("\n__ggml_vocab_test__\n") if s]
with open(out, "w", encoding="utf-8") as f:
    for d in docs:
        f.write(json.dumps({"text": d}, ensure_ascii=False) + "\n")
print(f"wrote {len(docs)} documents, {sum(len(d.encode()) for d in docs) / 1e6:.2f} MB to {out}")
