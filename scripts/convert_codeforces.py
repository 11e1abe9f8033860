#!/usr/bin/env python3
"""Converts Codeforces problem sets to gspo's competition rows (docs/evaluation.md, "CodeForces").

Formats (--format):
  open-r1      open-r1/codeforces parquet or JSONL (CC-BY-4.0): statement parts, time_limit (s), memory_limit (MB),
               rating, examples, official_tests (--tests official, the default when a row's set is complete, else its
               examples) and generated_checker (C++ on testlib; --testlib PATH inlines testlib.h into it, since the
               sandbox has no include path; without it such rows keep token comparison and are counted).
  code_contests DeepMind's code_contests parquet or JSONL (CC-BY-4.0): description, public/private/generated tests
               (--tests public, public+private (default), all), time_limit {seconds, nanos}, memory_limit_bytes,
               cf_contest_id, cf_index, cf_points, cf_rating; only Codeforces rows (source 2).
  xcodeeval    xCodeEval-style JSONL (description, input_spec, output_spec, notes, sample_inputs/outputs,
               "2 seconds", "256 megabytes", difficulty, src_uid): sample tests only.

Every row keeps where it came from ("source", "license", "attribution"). Rows without tests are skipped and counted.
The prompt asks for one fenced ```python or ```cpp block reading stdin and writing stdout (what gspo runs).

    scripts/py scripts/convert_codeforces.py --format open-r1 train-00000.parquet -o cf.jsonl
"""
import argparse
import json
import re
import sys

LICENSES = {
    "open-r1": ("CC-BY-4.0", "open-r1/codeforces (Hugging Face), problems from codeforces.com"),
    "code_contests": ("CC-BY-4.0", "deepmind/code_contests (Li et al. 2022), problems from codeforces.com"),
    "xcodeeval": ("see the NTU-NLP-sg/xCodeEval dataset card", "NTU-NLP-sg/xCodeEval (Khan et al. 2023), problems from codeforces.com"),
}

INSTRUCTION = ("Write a program that solves the problem: it reads the input from standard input and writes the "
               "answer to standard output. Give the whole program in one fenced code block, ```python (Python 3) or "
               "```cpp (C++17).")


def read_rows(path):
    if path.endswith(".parquet"):
        try:
            import pyarrow.parquet as pq
        except ImportError:
            sys.exit("convert_codeforces: reading parquet needs pyarrow (scripts/requirements.txt pins it; "
                     "run scripts/setup.sh)")
        yield from pq.read_table(path).to_pylist()
        return
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as e:
                    sys.exit(f"convert_codeforces: {path}:{n}: not JSON ({e})")


def prompt(title, limits, parts, examples):
    text = (f"# {title}\n\n" if title else "") + limits + "\n\n"
    for head, body in parts:
        if body and body.strip():
            text += (f"## {head}\n\n" if head else "") + body.strip() + "\n\n"
    for i, (inp, out) in enumerate(examples, 1):
        text += f"## Example {i}\n\nInput:\n```\n{inp.rstrip()}\n```\n\nOutput:\n```\n{out.rstrip()}\n```\n\n"
    return text + INSTRUCTION


def limits_text(seconds, mb):
    return f"Time limit: {seconds:g} seconds per test. Memory limit: {mb:g} megabytes."


def cases(pairs):
    return [{"input": i, "output": o} for i, o in pairs]


def row(fmt, text, seconds, mb, tests, difficulty=None, contest=None, index=None, points=None, checker=None, ident=None):
    license_, attribution = LICENSES[fmt]
    out = {"problem": text, "time_limit_s": float(seconds), "memory_limit_mb": float(mb)}
    if difficulty:
        out["difficulty"] = int(difficulty)
    out["tests"] = {"type": "competition", "cases": cases(tests)}
    if checker:
        out["tests"]["checker"], out["tests"]["checker_language"] = checker, "cpp"
    if contest is not None and index is not None:
        out["contest_id"], out["index"] = str(contest), str(index)
    if points:
        out["points"] = float(points)
    out["source"] = fmt + (f":{ident}" if ident else "")
    out["license"], out["attribution"] = license_, attribution
    return out


def inline_testlib(checker, testlib):
    if checker is None or "testlib.h" not in checker:
        return checker, False
    if testlib is None:
        return None, True
    return re.sub(r'#include\s*[<"]testlib\.h[">]', lambda _: testlib, checker), False


def from_open_r1(r, args, stats):
    examples = [(e["input"], e["output"]) for e in (r.get("examples") or [])]
    official = [(t["input"], t["output"]) for t in (r.get("official_tests") or [])]
    if r.get("interaction_format"):
        stats["interactive (skipped)"] += 1
        return None
    use_official = args.tests == "official" and official and r.get("official_tests_complete", True)
    tests = official if use_official else examples
    checker, missing = inline_testlib(r.get("generated_checker"), args.testlib_text)
    stats["checker needs --testlib (token comparison kept)"] += missing
    parts = [("", r.get("description")), ("Input", r.get("input_format")), ("Output", r.get("output_format")),
             ("Note", r.get("note"))]
    text = prompt(r.get("title"), limits_text(r["time_limit"], r["memory_limit"]), parts, examples)
    return row("open-r1", text, r["time_limit"], r["memory_limit"], tests, r.get("rating"), r.get("contest_id"),
               r.get("index"), None, checker, r.get("id"))


def from_code_contests(r, args, stats):
    if r.get("source") not in (2, "CODEFORCES"):
        stats["not Codeforces (skipped)"] += 1
        return None
    def pairs(key):
        t = r.get(key) or {}
        return list(zip(t.get("input") or [], t.get("output") or []))
    tests = pairs("public_tests")
    if args.tests in ("public+private", "all"):
        tests += pairs("private_tests")
    if args.tests == "all":
        tests += pairs("generated_tests")
    tl = r.get("time_limit") or {}
    seconds = (tl.get("seconds") or 0) + (tl.get("nanos") or 0) / 1e9 or 2.0
    mb = (r.get("memory_limit_bytes") or 256 << 20) / (1 << 20)
    text = prompt(r.get("name"), limits_text(seconds, mb), [("", r.get("description"))], [])
    return row("code_contests", text, seconds, mb, tests, r.get("cf_rating"), r.get("cf_contest_id") or None,
               r.get("cf_index") or None, r.get("cf_points"), None, r.get("name"))


def from_xcodeeval(r, args, stats):
    seconds = float(str(r["time_limit"]).split()[0])
    mb = float(str(r["memory_limit"]).split()[0])
    examples = list(zip(r.get("sample_inputs") or [], r.get("sample_outputs") or []))
    parts = [("", r.get("description")), ("Input", r.get("input_spec")), ("Output", r.get("output_spec")),
             ("Note", r.get("notes"))]
    text = prompt("", limits_text(seconds, mb), parts, examples)
    return row("xcodeeval", text, seconds, mb, examples, r.get("difficulty"), ident=r.get("src_uid"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="+", help="parquet or JSONL files")
    ap.add_argument("-o", "--out", required=True, help="output JSONL")
    ap.add_argument("--format", required=True, choices=["open-r1", "code_contests", "xcodeeval"])
    ap.add_argument("--tests", default=None,
                    help="open-r1: official (default) or examples; code_contests: public, public+private (default), all")
    ap.add_argument("--testlib", help="testlib.h to inline into open-r1's C++ checkers")
    args = ap.parse_args()
    if args.tests is None:
        args.tests = {"open-r1": "official", "code_contests": "public+private"}.get(args.format, "samples")
    args.testlib_text = open(args.testlib, encoding="utf-8").read() if args.testlib else None
    convert = {"open-r1": from_open_r1, "code_contests": from_code_contests, "xcodeeval": from_xcodeeval}[args.format]
    from collections import Counter
    stats = Counter()
    with open(args.out, "w", encoding="utf-8") as out:
        for path in args.inputs:
            for r in read_rows(path):
                converted = convert(r, args, stats)
                if converted is None:
                    continue
                if not converted["tests"]["cases"]:
                    stats["no tests (skipped)"] += 1
                    continue
                out.write(json.dumps(converted, ensure_ascii=False) + "\n")
                stats["written"] += 1
    print(f"convert_codeforces: {args.out}: " + ", ".join(f"{k} {v}" for k, v in sorted(stats.items())))


if __name__ == "__main__":
    main()
