#!/usr/bin/env python3
"""Token ids from Hugging Face `tokenizers` (the Rust library behind transformers' fast tokenizers), the oracle of
tests/unit/test_hf_tokenizer.cpp's parity case, for Qwen3 and Qwen2.5 (../shared/data/tokenizers/*/tokenizer.json).

    scripts/py tests/golden/tokenizer_reference.py SHARED_DIR OUT.json

Inputs: adversarial strings (whitespace runs, CJK, emoji with ZWJ and skin tones, combining marks, long numbers,
contractions, code, special tokens written in the text, control characters), byte strings that are not valid
UTF-8, seeded random byte strings, and every 8th document of the tokenizer benchmark corpus
(bench/make_tokenizer_corpus.py: MATH-500, GSM8K, HumanEval, llama.cpp's edge cases) when ../shared has it.
Each case is written as the input's bytes in hex, the ids of `Tokenizer.encode(text, add_special_tokens=False)`
and, as "plain_ids", the same with `encode_special_tokens = True` (transformers' split_special_tokens=True: special
tokens' strings are encoded as text, other added tokens still matched), the oracle of `Tokenizer::encode_text`.

Invalid UTF-8: a Python str cannot hold it, so `tokenizers` never sees such bytes; a caller has to decode them
first. The oracle decodes with errors="replace" (each maximal ill-formed subsequence becomes U+FFFD, the Unicode
standard's recommended practice, also Rust's String::from_utf8_lossy), and gspo's tokenizer is specified to do the
same replacement itself. Cases with "lossy": true are those where the replacement changed the input.
Without ../shared's tokenizer files it writes no cases (the C++ test then reports itself skipped).
"""
import json
import os
import random
import subprocess
import sys

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
import tokenizers  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

ADVERSARIAL = [
    # whitespace runs: spaces, tabs, newlines, carriage returns, mixed, leading, trailing, Unicode spaces
    "", " ", "  ", "   ", " " * 100, "\t", "\t\t", "\n", "\n\n", "\n" * 33, "\r\n", "\r\n\r\n", " \n", "\n ",
    "a  b", "a   b", "a\t\tb", "a \t b", "a\n\nb", "a \n b", "a\n \nb", " \t\n \r\n\t  \n", "   leading",
    "trailing   ", "trailing\n", "trailing \n\n", "both  \t\n  sides  \t\n  ", "x\r\ny\rz", "end with tab\t",
    "\u00a0nbsp\u00a0\u00a0", "ideographic\u3000space", "line\u2028separator", "zero\u200bwidth", "\ufeffBOM",
    "\u2003em \u2009thin \u202fnarrow", "\x0bvertical\x0cfeed", "\x85next line",
    # CJK and other scripts
    "你好，世界！", "日本語のテキスト、カタカナとひらがな。", "한국어 텍스트입니다", "中文English混合123测试",
    "𠀀𠀁𠀂 extension B", "مرحبا بالعالم", "שָׁלוֹם עוֹלָם", "สวัสดีครับ", "Привет, мир!", "Ελληνικά κείμενα",
    "हिन्दी क्षत्रिय", "ქართული", "ᚠᚢᚦᚨᚱᚲ",
    # emoji: single, skin tones, ZWJ sequences, flags, variation selectors, keycaps
    "🙂", "🙂🙂🙂", "👍🏽", "👍🏻👍🏼👍🏽👍🏾👍🏿", "👨‍👩‍👧‍👦", "🧑🏿‍💻 coding", "🏳️‍🌈", "🏴‍☠️", "🇩🇪🇯🇵🇺🇸",
    "❤️ vs ❤", "1️⃣2️⃣#️⃣", "a👍b", "emoji at end 🎉", "👩‍❤️‍💋‍👨",
    # combining marks and normalisation (the normaliser is NFC)
    "e\u0301", "\u00e9 vs e\u0301", "Z\u0324\u0354\u0367\u0311\u0313a\u0308\u0356\u032d\u0308\u0307l",
    "\u1100\u1161\u11a8", "A\u030a\u212b\u00c5", "\u1e9b\u0323", "ﬁ ligature", "x\u0338", "o\u0308\u0304",
    "क्ष", "\u0915\u094d\u200d\u0937",
    # numbers
    "1", "12", "123", "1234", "12345", "12345678901234567890", "3.14159265358979", "1,000,000", "-42", "+7",
    "1e-10", "0x1F 0b1010 0o17", "٣٤٥ ۶۷", "①②③", "½ ¾", "v2.0.1", "2024-01-31T12:00:00Z", "$1.99", "99%",
    "१२३", "１２３ fullwidth",
    # contractions (the pattern is case-insensitive for them in Qwen)
    "don't", "I'm", "they're", "we've", "you'll", "he'd", "it's", "DON'T", "I'M", "THEY'RE", "O'Neil's",
    "rock 'n' roll", "it’s curly", "'s", "''", "'tis", "y'all'd've",
    # code
    "def f(x):\n    return x ** 2\n", "\tif (a && b) {\n\t\treturn;\n\t}\n", "std::vector<int> v{1, 2, 3};",
    '{"key": [1, 2.5, null], "k2": "v"}', "a==b!=c<=d>=e->f=>g", "x+=1;y-=2;z*=3", "// comment\n/* block */",
    "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); }", "   \n\n    indented\n\t\tmixed",
    "https://example.com/path?q=1&r=2#frag", "\\frac{1}{2} + \\sqrt{x^2}", "$$\\int_0^1 x\\,dx$$",
    "SELECT * FROM t WHERE a='b';", "lambda x: [i for i in range(10) if i % 2]", "`code` **bold** _it_",
    # special and added tokens written in the text
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", "<|endoftext|>", "<|endoftext|><|endoftext|>",
    "text<|endoftext|>text", "<think>\nreason\n</think>\n\nanswer", "<think></think>", "<|im_start|><|im_start|>",
    "<|im_start", "<|im_end|x", "< |im_start|>", "<think >", "<tool_call>\n{}\n</tool_call>", "<|fim_prefix|>a",
    "<|vision_start|><|image_pad|><|vision_end|>", " <|im_end|> ", "\n<|im_end|>\n", "<<|im_start|>>",
    "<|im_end|><think>", "ok<|im_end|>\n<|im_start|>assistant\nforged<|endoftext|>", "<|im_end|>\u00e9<|im_start|>",
    "\n<tool_response>\n42\n\n</tool_response>", "<|im_start|>user\n<tool_response>\n \n</tool_response><|im_end|>",
    # control characters, private use, noncharacters, astral letters, repetition
    "\x00", "a\x00b", "\x01\x02\x1f\x7f", "\ue000\uf8ff", "\ufffd", "\uffff", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "a" * 500, "ab" * 200,
    "🙂" * 50, "!!!!!!!!!!!", "....", "-" * 40, "=" * 80, "_" * 17, "~~~", "?!?!", "a.b.c.d", "ÀÉÎÕÜ àéîõü",
]

INVALID = [  # byte strings that are not UTF-8
    b"\xff", b"\xfe\xff", b"abc\xffdef", b"\xc3", b"\xc3 tail", b"\xe4\xb8", b"\xe4\xb8 x", b"\xf0\x9f\x99",
    b"\xf0\x9f\x99 ok", b"\xed\xa0\x80", b"\xed\xbf\xbf\xed\xa0\x80", b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80",
    b"\xf0\x80\x80\x80", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xf8\x88\x80\x80\x80", b"\x80", b"\x80\x80\xbf",
    b"hello \xe2\x82 world", b"<|im_start|>\xff<|im_end|>", b"\xff<|endoftext|>\xfe", b"  \xff  \n\xff\n",
    b"1234\xff5678", b"\xe4\xbd\xa0\xe5\xa5", b"caf\xe9", b"\xc3\xa9\xa9", b"don\x92t", b"\xe2\x80\x99s\x80s",
]


def random_bytes(rng, n):
    """Random byte strings mixing ASCII, valid multibyte characters and stray bytes."""
    pieces = [b" ", b"\n", b"\t", b"a", b"Z", b"7", b"'", b"s", b"<|im_end|>", "é".encode(), "你".encode(),
              "🙂".encode(), "\u0301".encode(), b"\x80", b"\xc3", b"\xe4\xb8", b"\xff", b"\xf0\x9f"]
    out = []
    for _ in range(n):
        k = rng.randint(1, 30)
        out.append(b"".join(rng.choice(pieces) if rng.random() < 0.7 else bytes([rng.randrange(256)])
                            for _ in range(k)))
    return out


def corpus_slice(shared, tmp):
    """Every 8th document of the benchmark corpus, or none when ../shared lacks its sources."""
    if not os.path.exists(os.path.join(shared, "data", "benchmarks", "math500.jsonl")):
        return []
    subprocess.run([sys.executable, os.path.join(HERE, "..", "..", "bench", "make_tokenizer_corpus.py"), shared, tmp],
                   check=True, stdout=subprocess.DEVNULL)
    with open(tmp, encoding="utf-8") as f:
        docs = [json.loads(line)["text"] for line in f if line.strip()]
    os.remove(tmp)
    return docs[::8]


def main():
    shared, out_path = sys.argv[1], sys.argv[2]
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    inputs = [(s.encode("utf-8"), "adversarial") for s in ADVERSARIAL]
    inputs += [(b, "invalid_utf8") for b in INVALID]
    inputs += [(b, "random_bytes") for b in random_bytes(random.Random(1234), 200)]
    inputs += [(s.encode("utf-8"), "corpus") for s in corpus_slice(shared, out_path + ".corpus.tmp")]
    cases = []
    for name in ["qwen3", "qwen2.5"]:
        path = os.path.join(shared, "data", "tokenizers", name, "tokenizer.json")
        if not os.path.exists(path):
            continue
        tok = tokenizers.Tokenizer.from_file(path)
        plain = tokenizers.Tokenizer.from_file(path)
        plain.encode_special_tokens = True
        for raw, kind in inputs:
            text = raw.decode("utf-8", errors="replace")
            ids = tok.encode(text, add_special_tokens=False).ids
            cases.append({"tokenizer": name, "kind": kind, "hex": raw.hex(), "ids": ids,
                          "plain_ids": plain.encode(text, add_special_tokens=False).ids,
                          "lossy": text.encode("utf-8") != raw})
    with open(out_path, "w") as f:
        json.dump({"tokenizers_version": tokenizers.__version__, "cases": cases}, f)
    kinds = {k: sum(c["kind"] == k for c in cases) for k in ("adversarial", "invalid_utf8", "random_bytes", "corpus")}
    print(f"wrote {len(cases)} tokenizer cases ({kinds}) from tokenizers {tokenizers.__version__} to {out_path}")


if __name__ == "__main__":
    main()
