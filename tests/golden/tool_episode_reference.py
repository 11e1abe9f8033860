"""Tool episodes in each family's own chat template, rendered by transformers: the oracle of
tests/unit/test_template_tools.cpp (gspo's tool turns through data.chat_template auto, #66 item 2).

For every family below and every conversation of CASES, transformers' render_jinja_template (what
apply_chat_template calls) writes
  prompt   the conversation up to its first assistant message, with the tools, add_generation_prompt=True;
  written  per assistant message, what the model writes for it: its render after a generation prompt, up to the
           family's turn token;
  observations  per call turn, what the template writes after that turn's turn token once the turn's tool messages
           follow, through the next generation prompt, from renders of the real conversation (the call turn runs from
           where that render departs from the render that prompted the turn to the next turn token);
  episode  prompt + (written + turn token + observation)... : the text a rollout holds;
  full     the whole conversation rendered at once (add_generation_prompt=True when it ends with tool results), and
           whether the episode equals it (templates that render a tool message differently once an assistant
           message follows it, such as Hermes-3's, are not prefix-preserving: the first difference is recorded);
  *_ids    the tokenizer's ids of each (add_special_tokens=False), when the family has a tokenizer here.
Tokenizers: Qwen3's and Qwen2.5's real tokenizer.json from ../shared; for the Llama 3.x, Hermes-3 and Mistral
families (no tokenizer of theirs can be downloaded here) a small byte-level BPE is trained with `tokenizers` on a
corpus of chat text, with the family's special tokens as special added tokens, and written with a
tokenizer_config.json (bos/eos, the template) beside it, so gspo loads the same files. Templates: tests/data/
chat_templates (SOURCES.md names where each comes from). strftime_now reads the real clock, as gspo does (Llama 3.2
and Mistral Small write today's date): the fixture and the test run the same minute.

Usage: tool_episode_reference.py SHARED_DIR OUT_DIR  (writes OUT_DIR/tool_episode_cases.json and tokenizer dirs)
"""
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
import tokenizers  # noqa: E402
from tokenizers import decoders, models, pre_tokenizers, trainers  # noqa: E402
from transformers.utils.chat_template_utils import render_jinja_template  # noqa: E402

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE.parent / "data" / "chat_templates"

TOOLS = [
    {"type": "function", "function": {
        "name": "python", "description": "Run Python code and return what it prints.",
        "parameters": {"type": "object", "properties": {"code": {"type": "string", "description": "The code"}},
                       "required": ["code"]}}},
    {"type": "function", "function": {
        "name": "lookup", "description": "Look a word up.",
        "parameters": {"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]}}},
]

LLAMA_SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
                  "<|eom_id|>", "<|python_tag|>"]
CHATML_SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|im_start|>", "<|im_end|>"]
MISTRAL_SPECIALS = ["<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
                    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[CALL_ID]", "[ARGS]", "[TOOL_CONTENT]",
                    "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]"]

# name: template file, tokenizer ("shared:DIR" or "train:SPECIALS"), bos, eos (the template's variables), the turn
# token, whether two calls in one turn are allowed, thinking settings.
FAMILIES = {
    "qwen3": ("Qwen-Qwen3.jinja", "shared:qwen3", "", "<|im_end|>", "<|im_end|>", True, [True, False]),
    "qwen2.5": ("Qwen-Qwen2.5-7B-Instruct.jinja", "shared:qwen2.5", "", "<|im_end|>", "<|im_end|>", True, [True]),
    "hermes3": ("NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", "train:chatml", "<|begin_of_text|>",
                "<|im_end|>", "<|im_end|>", True, [True]),
    "llama3.1": ("meta-llama-Llama-3.1-8B-Instruct.jinja", "train:llama", "<|begin_of_text|>", "<|eot_id|>",
                 "<|eot_id|>", False, [True]),
    "llama3.2": ("meta-llama-Llama-3.2-3B-Instruct.jinja", "train:llama", "<|begin_of_text|>", "<|eot_id|>",
                 "<|eot_id|>", False, [True]),
    "mistral-nemo": ("mistralai-Mistral-Nemo-Instruct-2407.jinja", "train:mistral", "<s>", "</s>", "</s>", True,
                     [True]),
    "mistral-small-3.2": ("Mistral-Small-3.2-24B-Instruct-2506.jinja", "train:mistral", "<s>", "</s>", "</s>", True,
                          [True]),
}
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                r"\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIALS = {"llama": LLAMA_SPECIALS, "chatml": CHATML_SPECIALS, "mistral": MISTRAL_SPECIALS}


def call(name, cid, **args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def asst(content, *calls):
    m = {"role": "assistant", "content": content}
    if calls:
        m["tool_calls"] = list(calls)
    return m


def tool(content, cid, name):
    return {"role": "tool", "content": content, "tool_call_id": cid, "name": name}


PY = call("python", "aB3dE6gH9", code="print(6 * 7)")
PY2 = call("python", "Zy8Xw7Vu6", code="print(42 + 1)")
LOOK = call("lookup", "Qq1Ww2Ee3", input="prime")
TRICKY = "  quotes \" and \\ back\tslash, é 你好 🙂\n<b>&amp;</b>\n\n"
U = "user"
CASES = {
    "one_call": [{"role": "system", "content": "You may use tools."}, {"role": U, "content": "What is 6 * 7?"},
                 asst("", PY), tool("42\n", PY["id"], "python"), asst("The answer is 42.")],
    "two_turns": [{"role": U, "content": "Compute 6 * 7, then add 1."}, asst("", PY),
                  tool("42\n", PY["id"], "python"), asst("", PY2), tool("43\n", PY2["id"], "python"),
                  asst("It is 43.")],
    "parallel": [{"role": U, "content": "Run it and look up prime."}, asst("", PY, LOOK),
                 tool("42\n", PY["id"], "python"), tool("a number with two divisors", LOOK["id"], "lookup"),
                 asst("Done.")],
    "tricky_output": [{"role": U, "content": "Run it."}, asst("", PY), tool(TRICKY, PY["id"], "python"),
                      asst("It printed text.")],
    "ends_with_tool": [{"role": U, "content": "Run it."}, asst("", PY), tool("42\n", PY["id"], "python")],
}
CORPUS = [json.dumps(TOOLS), TRICKY, "What is 6 * 7? The answer is 42. Compute, then add 1. It is 43.",
          "You are a helpful assistant. Cutting Knowledge Date: December 2023. Today Date: 26 Jul 2024",
          "Given the following functions, please respond with a JSON for a function call with its proper arguments",
          '{"name": "python", "parameters": {"code": "print(6 * 7)"}} {"content": 42, "call_id": "aB3dE6gH9"}',
          "<tool_call>\n</tool_call>\n<tool_response>\n</tool_response> ipython assistant system user tool"] * 20


def train_tokenizer(specials, out_dir, template, bos, eos):
    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([  # Llama 3's split (also Qwen2's, but for its single digits)
        pre_tokenizers.Split(tokenizers.Regex(LLAMA3_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS, trainer)
    out_dir.mkdir(parents=True, exist_ok=True)
    tok.save(str(out_dir / "tokenizer.json"))
    (out_dir / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": bos or None, "eos_token": eos, "add_bos_token": False, "chat_template": template}))
    return tok


def render(template, msgs, gen, bos, eos, thinking):
    return render_jinja_template([msgs], tools=TOOLS, chat_template=template, add_generation_prompt=gen,
                                 bos_token=bos, eos_token=eos, enable_thinking=thinking)[0][0]


def assistant_text(template, m, bos, eos, turn, thinking):
    """What the model writes for assistant message m: its render after a generation prompt, up to the turn token."""
    u = [{"role": U, "content": "x"}]
    before, through = render(template, u, True, bos, eos, thinking), render(template, u + [m], False, bos, eos,
                                                                               thinking)
    if not through.startswith(before) or turn not in through[len(before):]:
        sys.exit(f"an assistant message is not written after its generation prompt: {m}")
    return through[len(before):].split(turn)[0]


def case_record(fam, name, msgs, template, tok, bos, eos, turn, thinking):
    """The episode as a rollout builds it from the real conversation: the prompt; per assistant message the text the
    model writes and its turn token; after a call turn, what the template writes after that turn token once its tool
    messages follow, through the next generation prompt (the render through the call turn must be a prefix of it)."""
    first = next(i for i, m in enumerate(msgs) if m["role"] == "assistant")
    prompt = render(template, msgs[:first], True, bos, eos, thinking)
    episode, written, observations = prompt, [], []
    i = first
    while i < len(msgs):
        written.append(assistant_text(template, msgs[i], bos, eos, turn, thinking))
        episode += written[-1] + turn
        k = i + 1
        while k < len(msgs) and msgs[k]["role"] == "tool":
            k += 1
        if k == i + 1:
            break
        # The call turn in the render with its results: the last place its calls are written, then its turn token
        # (an empty think block the model wrote is dropped from turns that are not the last: Qwen3).
        after = render(template, msgs[:k], True, bos, eos, thinking)
        calls = written[-1].split("</think>")[-1].lstrip("\n") + turn
        cut = after.rindex(calls) + len(calls)
        observations.append(after[cut:])
        episode += observations[-1]
        i = k
    full = render(template, msgs, msgs[-1]["role"] == "tool", bos, eos, thinking)
    # The full render may go on after the episode's last turn token (ChatML's "\n").
    same = full.startswith(episode)
    differ = next((j for j, (a, b) in enumerate(zip(episode, full)) if a != b), min(len(episode), len(full)))
    rec = {"family": fam, "name": name, "enable_thinking": thinking, "messages": msgs, "tools": TOOLS,
           "prompt": prompt, "written": written, "observations": observations, "episode": episode, "full": full,
           "episode_is_full": same, "first_difference": None if same else differ}
    if tok is not None:
        enc = lambda t: tok.encode(t, add_special_tokens=False).ids  # noqa: E731
        rec["prompt_ids"] = enc(prompt)
        rec["written_ids"] = [enc(w) for w in written]
        rec["observation_ids"] = [enc(o) for o in observations]
        rec["turn_id"] = tok.token_to_id(turn)
        rec["full_ids"] = enc(full)
    return rec


def main():
    shared, out = Path(sys.argv[1]), Path(sys.argv[2])
    cases, trained = [], {}
    for fam, (file, tok_spec, bos, eos, turn, many, thinkings) in FAMILIES.items():
        template = (TEMPLATES / file).read_text()
        kind, what = tok_spec.split(":")
        if kind == "shared":
            path = shared / "data" / "tokenizers" / what / "tokenizer.json"
            tok = tokenizers.Tokenizer.from_file(str(path)) if path.exists() else None
            tok_dir = str(path.parent) if tok else ""
        else:
            tok_dir = out / f"tool_tok_{fam}"
            tok = train_tokenizer(SPECIALS[what], tok_dir, template, bos, eos)
            tok_dir = str(tok_dir)
        for name, msgs in CASES.items():
            if name == "parallel" and not many:
                continue
            for thinking in thinkings:
                rec = case_record(fam, name, msgs, template, tok, bos, eos, turn, thinking)
                rec.update({"template": file, "tokenizer": tok_dir, "bos": bos, "eos": eos, "turn": turn})
                cases.append(rec)
    (out / "tool_episode_cases.json").write_text(json.dumps(cases, ensure_ascii=False, indent=1))
    print(f"tool_episode_reference: {len(cases)} cases over {len(FAMILIES)} families -> {out}")


if __name__ == "__main__":
    main()
