#!/usr/bin/env python3
"""Reference tokenizer for bench_tokenizer: Hugging Face `tokenizers` (the Rust library behind transformers' fast
tokenizers) from the pinned environment, loading the same tokenizer.json with Tokenizer.from_file.

Usage: reference_tokenize.py TOKENIZER CORPUS.jsonl OUT_IDS.jsonl [--repeats N] [--no-batch]
  TOKENIZER      a tokenizer.json, or a directory holding one
  CORPUS.jsonl   JSON lines {"text": ...}; empty lines are skipped (as bench_tokenizer does)
  OUT_IDS.jsonl  written: one JSON list of ids per document, in corpus order

Encodes every document with `Tokenizer.encode(text, add_special_tokens=False)`, one call per string, on one thread
(RAYON_NUM_THREADS=1 and TOKENIZERS_PARALLELISM=false are set before `tokenizers` is imported). Timing: one full
warm-up pass (fills the BPE cache, like bench_tokenizer's first pass), then the best of N passes (default 3); the
timed loop is encode + `.ids` (ids as a Python list), with the garbage collector paused. MB = UTF-8 bytes / 1e6.

Unless --no-batch, it then re-runs itself as a child process with Rust parallelism on (TOKENIZERS_PARALLELISM=true,
RAYON_NUM_THREADS as the caller had it, by default one rayon thread per available CPU) to time `encode_batch` over
the whole corpus the same way, and checks the child's ids against the single-threaded ones. That figure is
multi-threaded and reported apart.

Prints `key=value` lines on stdout (bench_tokenizer reads them):
  tokenizers_version=, python=, documents=, bytes=,
  encode_mb_per_s=            single thread, per-string encode (the baseline bench_tokenizer compares against)
  encode_batch_mb_per_s=, encode_batch_threads=, encode_batch_identical=K/N   (only with the batch pass)
  encode_batch_error=         instead of those when the batch child failed (the single-thread result stands)
Exit status 0 on success; non-zero (with a message on stderr) on any failure.
"""
import os
import sys

# Before importing tokenizers: rayon's global pool is sized when first used, and encode must run on one thread.
_USER_RAYON_THREADS = os.environ.get("RAYON_NUM_THREADS")  # the batch child gets this back
if "--batch-child" not in sys.argv:
    os.environ["RAYON_NUM_THREADS"] = "1"
    os.environ["TOKENIZERS_PARALLELISM"] = "false"

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

import tokenizers  # noqa: E402


def load_docs(path):
    # Byte-wise split on "\n" and skip empty lines: the same documents std::getline + nlohmann::json give the C++ side.
    with open(path, "rb") as f:
        return [json.loads(line)["text"] for line in f.read().split(b"\n") if line]


def load_tokenizer(path):
    if os.path.isdir(path):
        path = os.path.join(path, "tokenizer.json")
    return tokenizers.Tokenizer.from_file(path)


def best_of(fn, repeats):
    """Runs fn once as warm-up, then `repeats` timed times; returns (best seconds, result of the best pass)."""
    fn()
    best, out = None, None
    for _ in range(repeats):
        gc.collect()
        gc.disable()
        try:
            t0 = time.perf_counter()
            res = fn()
            dt = time.perf_counter() - t0
        finally:
            gc.enable()
        if best is None or dt < best:
            best, out = dt, res
    return best, out


def batch_child(a):
    tok = load_tokenizer(a.tokenizer)
    docs = load_docs(a.corpus)
    nbytes = sum(len(d.encode("utf-8")) for d in docs)
    secs, ids = best_of(lambda: [e.ids for e in tok.encode_batch(docs, add_special_tokens=False)], a.repeats)
    with open(a.out, "rb") as f:
        single = [json.loads(line) for line in f.read().split(b"\n") if line]
    same = sum(x == y for x, y in zip(ids, single))
    threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if os.environ.get("RAYON_NUM_THREADS"):
        threads = int(os.environ["RAYON_NUM_THREADS"])
    print(f"encode_batch_mb_per_s={nbytes / 1e6 / secs:.3f}")
    print(f"encode_batch_threads={threads}")
    print(f"encode_batch_identical={same}/{len(docs)}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tokenizer")
    p.add_argument("corpus")
    p.add_argument("out")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--no-batch", action="store_true", help="skip the multi-threaded encode_batch pass")
    p.add_argument("--batch-child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.repeats < 1:
        p.error("--repeats must be >= 1")
    if a.batch_child:
        batch_child(a)
        return 0

    tok = load_tokenizer(a.tokenizer)
    docs = load_docs(a.corpus)
    nbytes = sum(len(d.encode("utf-8")) for d in docs)
    enc = tok.encode
    secs, ids = best_of(lambda: [enc(d, add_special_tokens=False).ids for d in docs], a.repeats)
    with open(a.out, "w", encoding="utf-8") as f:
        for x in ids:
            f.write(json.dumps(x, separators=(",", ":")) + "\n")
    print(f"tokenizers_version={tokenizers.__version__}")
    print(f"python={sys.executable} ({sys.version.split()[0]})")
    print(f"documents={len(docs)}")
    print(f"bytes={nbytes}")
    print(f"encode_mb_per_s={nbytes / 1e6 / secs:.3f}", flush=True)

    if not a.no_batch:
        env = dict(os.environ)
        env.pop("RAYON_NUM_THREADS", None)
        if _USER_RAYON_THREADS:
            env["RAYON_NUM_THREADS"] = _USER_RAYON_THREADS
        env["TOKENIZERS_PARALLELISM"] = "true"
        r = subprocess.run([sys.executable, os.path.abspath(__file__), a.tokenizer, a.corpus, a.out,
                            "--repeats", str(a.repeats), "--batch-child"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            # The batch figure is informational: say why it is missing, keep the single-thread result.
            print(f"encode_batch_error=child exited {r.returncode}: {r.stdout.strip()[-2000:]}")
        else:
            print(r.stdout, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
