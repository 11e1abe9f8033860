#!/usr/bin/env python3
"""Reads the tokenizer arrays of a GGUF file (tokenizer.ggml.tokens, tokenizer.ggml.merges, bos/eos ids) and writes
the equivalent Hugging Face tokenizer.json for a GPT-2-style byte-level BPE (ByteLevel pre-tokenizer with GPT-2's
regex). Used to check gspo's tokenizer against llama.cpp's GPT-2 vectors, whose vocabulary ships only as GGUF.

    python3 tests/golden/gguf_to_tokenizer_json.py ggml-vocab-gpt-2.gguf OUT_DIR
"""
import json
import os
import struct
import sys

SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


class Reader:
    def __init__(self, data):
        self.d, self.i = data, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.d, self.i)[0]
        self.i += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("<Q")
        s = self.d[self.i:self.i + n].decode("utf-8")
        self.i += n
        return s

    def value(self, t):
        if t in SCALAR:
            return self.take(SCALAR[t])
        if t == 8:
            return self.string()
        if t == 9:
            inner, n = self.take("<I"), self.take("<Q")
            return [self.value(inner) for _ in range(n)]
        raise ValueError(f"unknown GGUF value type {t}")


def main():
    src, out = sys.argv[1], sys.argv[2]
    if not os.path.exists(src):
        print(f"no {src}: nothing to convert")
        return
    r = Reader(open(src, "rb").read())
    if r.d[:4] != b"GGUF":
        sys.exit(f"{src}: not a GGUF file")
    r.i = 4
    r.take("<I")  # version
    r.take("<Q")  # tensor count
    kv = {}
    for _ in range(r.take("<Q")):
        key = r.string()
        kv[key] = r.value(r.take("<I"))
    tokens, merges = kv["tokenizer.ggml.tokens"], kv["tokenizer.ggml.merges"]
    eos = kv.get("tokenizer.ggml.eos_token_id")
    tj = {"version": "1.0", "added_tokens": [], "normalizer": None,
          "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
          "decoder": {"type": "ByteLevel"},
          "model": {"type": "BPE", "vocab": {t: i for i, t in enumerate(tokens)}, "merges": merges}}
    if eos is not None:
        tj["added_tokens"].append({"id": eos, "content": tokens[eos], "special": True})
    os.makedirs(out, exist_ok=True)
    json.dump(tj, open(os.path.join(out, "tokenizer.json"), "w"), ensure_ascii=False)
    print(f"wrote {out}/tokenizer.json: {len(tokens)} tokens, {len(merges)} merges")


if __name__ == "__main__":
    main()
