#!/usr/bin/env python3
"""Chat prompts rendered by transformers' own `apply_chat_template` (the oracle of tests/unit/test_chat_template.cpp)
for the three chat formats gspo renders: Qwen2.5-Instruct, Qwen3 (thinking on and off) and DeepSeek-R1-Distill-Qwen.

    scripts/py tests/golden/chat_template_reference.py SHARED_DIR OUT.json

Each family's tokenizer is loaded with transformers' AutoTokenizer from a temporary directory holding a
tokenizer.json from ../shared and a tokenizer_config.json whose chat_template is that family's template:
  qwen2.5      shared/data/tokenizers/qwen/chat_template_Qwen2.5-7B-Instruct.jinja (Qwen2.5 tokenizer)
  chatml       Qwen3's tokenizer_config.json as it is (Qwen3 tokenizer)
  deepseek_r1  shared/data/tokenizers/qwen/chat_template_DeepSeek-R1-Distill-Qwen-32B.jinja (Qwen2.5 tokenizer,
               with DeepSeek-R1-Distill's bos_token "<｜begin▁of▁sentence｜>", which the template prints)
and renders every conversation of CASES with tokenize=False, add_generation_prompt and enable_thinking as listed
(the latter is passed to every template; only Qwen3's reads it). The JSON names each family by its
data.chat_template option name. Without ../shared's files it writes no cases (the C++ test is then skipped).
"""
import json
import os
import shutil
import sys
import tempfile

S, U, A = "system", "user", "assistant"
CASES = [  # (messages, add_generation_prompt)
    ([(U, "What is 2+2?")], True),
    ([(S, "You are a careful mathematician."), (U, "Solve x^2 = 9.")], True),
    ([(U, "Hi"), (A, "Hello! How can I help?"), (U, "Add 3 and 4.")], True),
    ([(S, "Be brief."), (U, "Name a prime."), (A, "7"), (U, "Another?")], True),
    ([(U, "Line one\nline two with unicode: ü 你好 🙂\n\n  indented\t")], True),
    ([(U, "Q1"), (A, "<think>\nfirst I add\n</think>\n\nA1"), (U, "Q2")], True),  # reasoning in the history
    ([(U, "Q1"), (A, "<think>r</think>A1")], False),  # ends with the assistant's turn
    ([(U, "Q1"), (A, "plain answer")], False),
    ([(S, "sys"), (U, "Q1")], False),
    ([(U, "Q1"), (A, "<think>\nr\n</think>\n\nA1"), (U, "<tool_response>\n42\n</tool_response>")], True),
    ([(U, "")], True),
    ([(S, "<|im_start|> in a system prompt"), (U, "<think> literal </think> tags")], True),
]
FAMILIES = {  # option name -> (tokenizer dir, template file or None = the tokenizer_config's own, bos_token)
    "qwen2.5": ("qwen2.5", "qwen/chat_template_Qwen2.5-7B-Instruct.jinja", None),
    "chatml": ("qwen3", None, None),
    "deepseek_r1": ("qwen2.5", "qwen/chat_template_DeepSeek-R1-Distill-Qwen-32B.jinja", "<｜begin▁of▁sentence｜>"),
}


def load(tok_root, tok_dir, template, bos):
    from transformers import AutoTokenizer

    src = os.path.join(tok_root, tok_dir)
    with tempfile.TemporaryDirectory() as d:
        shutil.copy(os.path.join(src, "tokenizer.json"), d)
        cfg = json.load(open(os.path.join(src, "tokenizer_config.json"), encoding="utf-8"))
        if template:
            cfg["chat_template"] = open(os.path.join(tok_root, template), encoding="utf-8").read()
        if bos:
            cfg["bos_token"] = bos
        json.dump(cfg, open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8"), ensure_ascii=False)
        return AutoTokenizer.from_pretrained(d)


def main():
    shared, out_path = sys.argv[1], sys.argv[2]
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    tok_root = os.path.join(shared, "data", "tokenizers")
    needed = [os.path.join(tok_root, t, f) for t in ("qwen2.5", "qwen3") for f in ("tokenizer.json", "tokenizer_config.json")]
    needed += [os.path.join(tok_root, t) for _, t, _ in FAMILIES.values() if t]
    cases, version = [], None
    if all(os.path.exists(p) for p in needed):
        import transformers

        version = transformers.__version__
        for family, (tok_dir, template, bos) in FAMILIES.items():
            tok = load(tok_root, tok_dir, template, bos)
            for msgs, gen in CASES:
                for thinking in (True, False):
                    messages = [{"role": r, "content": c} for r, c in msgs]
                    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=gen,
                                                   enable_thinking=thinking)
                    cases.append({"family": family, "messages": messages, "add_generation_prompt": gen,
                                  "enable_thinking": thinking, "text": text})
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"transformers_version": version, "cases": cases}, f, ensure_ascii=False)
    print(f"wrote {len(cases)} chat template cases to {out_path}")


if __name__ == "__main__":
    main()
