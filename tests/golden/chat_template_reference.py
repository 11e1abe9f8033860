#!/usr/bin/env python3
"""Renders Qwen3's own chat template (tokenizer_config.json, a Jinja template) with jinja2 the way Hugging Face
does (trim_blocks, lstrip_blocks), for plain system/user/assistant conversations. Writes chat_cases.json, read by
tests/unit/test_chat_template.cpp. Without the tokenizer_config.json it writes no cases.

    python3 tests/golden/chat_template_reference.py TOKENIZER_CONFIG.json OUT.json
"""
import json
import os
import sys

CASES = [
    ([("user", "What is 2+2?")], True, True),
    ([("system", "You are a careful mathematician."), ("user", "Solve x^2 = 9.")], True, True),
    ([("system", "Be brief."), ("user", "Name a prime.")], True, False),
    ([("user", "Hi"), ("assistant", "Hello! How can I help?"), ("user", "Add 3 and 4.")], True, True),
    ([("user", "Line one\nline two with unicode: ü 你好 🙂")], False, True),
]


def main():
    cfg_path, out_path = sys.argv[1], sys.argv[2]
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    cases = []
    if os.path.exists(cfg_path):
        import jinja2

        template = json.load(open(cfg_path))["chat_template"]
        env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
        env.filters["tojson"] = lambda x, **kw: json.dumps(x, ensure_ascii=False)
        tmpl = env.from_string(template)
        for msgs, gen, thinking in CASES:
            messages = [{"role": r, "content": c} for r, c in msgs]
            text = tmpl.render(messages=messages, add_generation_prompt=gen, enable_thinking=thinking, tools=None)
            cases.append({"messages": messages, "add_generation_prompt": gen, "enable_thinking": thinking, "text": text})
    with open(out_path, "w") as f:
        json.dump({"cases": cases}, f, ensure_ascii=False)
    print(f"wrote {len(cases)} chat template cases to {out_path}")


if __name__ == "__main__":
    main()
