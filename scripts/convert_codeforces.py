#!/usr/bin/env python3
"""Converts Codeforces problem sets to gspo's competition rows (docs/evaluation.md, "CodeForces").

Formats (--format) and their tests (--tests):
  open-r1      open-r1/codeforces parquet or JSONL (CC-BY-4.0): statement parts, time_limit (s), memory_limit (MB),
               rating, examples, official_tests and generated_checker (C++ on testlib; --testlib PATH inlines
               testlib.h into it, since the sandbox has no include path; without it such rows keep token comparison
               and are counted). --tests official (default): the official (hidden) tests where a row's set is
               complete, else its examples, and those rows are counted and named in a warning ("official tests
               missing or incomplete (examples used)"); official-only: such rows are skipped and counted instead;
               examples: the examples of every row.
  code_contests DeepMind's code_contests parquet or JSONL (CC-BY-4.0): description, public/private/generated tests
               (--tests public, public+private (default), all; rows with no private tests are counted), time_limit
               {seconds, nanos}, memory_limit_bytes (none: 2 s and 256 MB, counted), cf_contest_id, cf_index,
               cf_points, cf_rating; only Codeforces rows (source 2).
  xcodeeval    xCodeEval-style JSONL (description, input_spec, output_spec, notes, sample_inputs/outputs,
               "2 seconds", "256 megabytes", difficulty, src_uid): sample tests only (--tests samples).
A --tests value the format does not have is refused.

Every row keeps where it came from ("source", "license", "attribution"). Rows without tests are skipped and counted.
The prompt asks for one fenced ```python or ```cpp block reading stdin and writing stdout (what gspo runs).

Limits are numbers (or "2", "2 seconds", "256 megabytes"); ratings numbers or numeric strings. A row with no time or
memory limit (null or absent; open-r1, xcodeeval) is skipped, counted and named in a warning, as rows without tests
are; a row with no rating (null, or 0) gets no difficulty (counted). Malformed input refuses the whole file, as a
line that is not JSON does: one line "convert_codeforces.py: error: FILE:LINE (or FILE row N): ..." naming the field
(a worded "two seconds", a rating "hard", a row that is a list), exit 2, and no output written; so are a missing
input or --testlib file, an unreadable parquet file and an --out that cannot be written (a file where its directory
should be). The output is written under a temporary name and renamed when complete.

    scripts/py scripts/convert_codeforces.py --format open-r1 train-00000.parquet -o cf.jsonl
"""
import argparse
import json
import math
import os
import re
import sys
from collections import Counter

LICENSES = {
    "open-r1": ("CC-BY-4.0", "open-r1/codeforces (Hugging Face), problems from codeforces.com"),
    "code_contests": ("CC-BY-4.0", "deepmind/code_contests (Li et al. 2022), problems from codeforces.com"),
    "xcodeeval": ("see the NTU-NLP-sg/xCodeEval dataset card", "NTU-NLP-sg/xCodeEval (Khan et al. 2023), problems from codeforces.com"),
}

INSTRUCTION = ("Write a program that solves the problem: it reads the input from standard input and writes the "
               "answer to standard output. Give the whole program in one fenced code block, ```python (Python 3) or "
               "```cpp (C++17).")


TESTS = {"open-r1": ("official", "official-only", "examples"), "code_contests": ("public", "public+private", "all"),
         "xcodeeval": ("samples",)}
PROG = "convert_codeforces.py"
WARN_NAMES = 5  # rows named in a warning


def die(msg):
    """Bad input: one line naming the file and row or field, exit 2 (argparse's code), no traceback."""
    print(f"{PROG}: error: {msg}", file=sys.stderr, flush=True)
    sys.exit(2)


class BadRow(Exception):
    """A malformed row: refuses the whole file, naming the row (as a line that is not JSON does)."""


def read_rows(path):
    """(where, row) of each row: where is "FILE:LINE" for JSONL, "FILE row N" (1-based) for parquet."""
    if path.endswith(".parquet"):
        try:
            import pyarrow.parquet as pq
        except ImportError:
            die("reading parquet needs pyarrow (scripts/requirements.txt pins it; run scripts/setup.sh)")
        try:
            rows = pq.read_table(path).to_pylist()
        except Exception as e:  # pyarrow raises ArrowInvalid, OSError, ... for a truncated or foreign file
            die(f"{path}: not a readable parquet file ({type(e).__name__}: {str(e).splitlines()[0][:160]})")
        for n, r in enumerate(rows, 1):
            yield f"{path} row {n}", r
        return
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    try:
                        yield f"{path}:{n}", json.loads(line)
                    except json.JSONDecodeError as e:
                        die(f"{path}:{n}: not JSON ({e})")
    except UnicodeDecodeError as e:
        die(f"{path}: not UTF-8 text ({e})")
    except OSError as e:
        die(f"{path}: cannot be read ({e.strerror})")


def number(value, field, units=(), positive=True):
    """A row's numeric field: a number, or a string holding one and optionally one of `units` ("2 seconds");
    None when null. Anything else (a worded "two seconds", another unit, NaN, <= 0 when positive) is a BadRow."""
    if value is None:
        return None
    x = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        x = float(value)
    elif isinstance(value, str):
        m = re.fullmatch(r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)\s*", value)
        if m and (not m.group(2) or m.group(2).lower() in units):
            x = float(m.group(1))
    if x is None or not math.isfinite(x) or (positive and x <= 0):
        unit = f" ({units[0]})" if units else ""
        raise BadRow(f"{field} is {json.dumps(value)[:60]}, not a {'positive ' if positive else ''}number{unit}")
    return x


SECONDS = ("seconds", "second", "s", "sec")
MEGABYTES = ("megabytes", "megabyte", "mb", "mib")


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


def rating(r, key, stats):
    """The row's rating as an int; None when it has none (null, or 0: code_contests' "unrated"), counted."""
    x = number(r.get(key), key, positive=False)
    if x is not None and x < 0:
        raise BadRow(f"{key} is {json.dumps(r.get(key))[:60]}, not a rating (a number >= 0)")
    if not x:
        stats["no rating (no difficulty)"] += 1
        return None
    return int(x)


def limits(r, time_key, memory_key, skip):
    """(seconds, megabytes) of an open-r1 / xcodeeval row, or None after skip(reason) when one is missing."""
    seconds, mb = number(r.get(time_key), time_key, SECONDS), number(r.get(memory_key), memory_key, MEGABYTES)
    if seconds is None or mb is None:
        skip(f"no {'time' if seconds is None else 'memory'} limit (skipped)")
        return None
    return seconds, mb


def from_open_r1(r, args, stats, note):
    examples = [(e["input"], e["output"]) for e in (r.get("examples") or [])]
    official = [(t["input"], t["output"]) for t in (r.get("official_tests") or [])]
    if r.get("interaction_format"):
        stats["interactive (skipped)"] += 1
        return None
    lim = limits(r, "time_limit", "memory_limit", note)
    if lim is None:
        return None
    tests = examples
    if args.tests in ("official", "official-only"):
        if official and r.get("official_tests_complete", True):
            tests = official
        elif args.tests == "official-only":
            note("official tests missing or incomplete (skipped)")
            return None
        else:  # a user asking for the official (hidden) tests is told which rows have only their examples
            note("official tests missing or incomplete (examples used)")
    checker, missing = inline_testlib(r.get("generated_checker"), args.testlib_text)
    stats["checker needs --testlib (token comparison kept)"] += missing
    parts = [("", r.get("description")), ("Input", r.get("input_format")), ("Output", r.get("output_format")),
             ("Note", r.get("note"))]
    text = prompt(r.get("title"), limits_text(*lim), parts, examples)
    return row("open-r1", text, *lim, tests, rating(r, "rating", stats), r.get("contest_id"),
               r.get("index"), None, checker, r.get("id"))


def from_code_contests(r, args, stats, note):
    if r.get("source") not in (2, "CODEFORCES"):
        stats["not Codeforces (skipped)"] += 1
        return None
    def pairs(key):
        t = r.get(key) or {}
        if not isinstance(t, dict):
            raise BadRow(f"{key} is a {type(t).__name__}, not an object of input and output lists")
        return list(zip(t.get("input") or [], t.get("output") or []))
    tests = pairs("public_tests")
    if args.tests in ("public+private", "all"):
        private = pairs("private_tests")
        if not private:
            stats["no private tests (public only)"] += 1
        tests += private
    if args.tests == "all":
        tests += pairs("generated_tests")
    tl = r.get("time_limit") or {}
    if not isinstance(tl, dict):
        raise BadRow(f"time_limit is {json.dumps(tl)[:60]}, not an object {{seconds, nanos}}")
    seconds = ((number(tl.get("seconds"), "time_limit.seconds", positive=False) or 0)
               + (number(tl.get("nanos"), "time_limit.nanos", positive=False) or 0) / 1e9)
    if seconds <= 0:
        stats["no time limit (2 s used)"] += 1
        seconds = 2.0
    mb = (number(r.get("memory_limit_bytes"), "memory_limit_bytes", positive=False) or 0) / (1 << 20)
    if mb <= 0:
        stats["no memory limit (256 MB used)"] += 1
        mb = 256.0
    text = prompt(r.get("name"), limits_text(seconds, mb), [("", r.get("description"))], [])
    return row("code_contests", text, seconds, mb, tests, rating(r, "cf_rating", stats), r.get("cf_contest_id") or None,
               r.get("cf_index") or None, number(r.get("cf_points"), "cf_points", positive=False), None, r.get("name"))


def from_xcodeeval(r, args, stats, note):
    lim = limits(r, "time_limit", "memory_limit", note)
    if lim is None:
        return None
    examples = list(zip(r.get("sample_inputs") or [], r.get("sample_outputs") or []))
    parts = [("", r.get("description")), ("Input", r.get("input_spec")), ("Output", r.get("output_spec")),
             ("Note", r.get("notes"))]
    text = prompt("", limits_text(*lim), parts, examples)
    return row("xcodeeval", text, *lim, examples, rating(r, "difficulty", stats), ident=r.get("src_uid"))


def read_testlib(path):
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        die(f"--testlib {path}: no such file")
    except (OSError, UnicodeDecodeError) as e:
        die(f"--testlib {path}: cannot be read ({getattr(e, 'strerror', None) or e})")


def open_output(path):
    """The output's temporary file (renamed to `path` when complete), refused naming `path` when it cannot be."""
    if os.path.isdir(path):
        die(f"-o {path}: is a directory (give the output JSONL file)")
    tmp = path + ".tmp"
    try:
        return tmp, open(tmp, "w", encoding="utf-8")
    except NotADirectoryError:
        die(f"-o {path}: a file is in the way of its directory {os.path.dirname(path)}")
    except FileNotFoundError:
        die(f"-o {path}: its directory {os.path.dirname(path) or '.'} does not exist")
    except OSError as e:
        die(f"-o {path}: cannot be written ({e.strerror})")


def main():
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+", help="parquet or JSONL files")
    ap.add_argument("-o", "--out", required=True, help="output JSONL")
    ap.add_argument("--format", required=True, choices=["open-r1", "code_contests", "xcodeeval"])
    ap.add_argument("--tests", default=None,
                    help="open-r1: official (default), official-only or examples; code_contests: public, "
                         "public+private (default), all; xcodeeval: samples")
    ap.add_argument("--testlib", help="testlib.h to inline into open-r1's C++ checkers")
    args = ap.parse_args()
    if args.tests is None:
        args.tests = TESTS[args.format][0] if args.format != "code_contests" else "public+private"
    if args.tests not in TESTS[args.format]:  # it used to fall through to the examples, silently
        die(f"--tests {args.tests}: --format {args.format} has {', '.join(TESTS[args.format])}")
    for path in args.inputs:
        if not os.path.exists(path):
            die(f"{path}: no such file")
        if os.path.isdir(path):
            die(f"{path}: is a directory (give parquet or JSONL files)")
    args.testlib_text = read_testlib(args.testlib)
    convert = {"open-r1": from_open_r1, "code_contests": from_code_contests, "xcodeeval": from_xcodeeval}[args.format]
    stats, named = Counter(), {}
    tmp, out = open_output(args.out)
    done = False
    try:
        with out:
            for path in args.inputs:
                for where, r in read_rows(path):
                    def note(reason):
                        stats[reason] += 1
                        named.setdefault(reason, []).append(where)
                    if not isinstance(r, dict):
                        die(f"{where}: a JSON {type(r).__name__}, not an object (one problem per row)")
                    try:
                        converted = convert(r, args, stats, note)
                    except BadRow as e:
                        die(f"{where}: {e}")
                    except (KeyError, TypeError, ValueError, AttributeError) as e:
                        die(f"{where}: malformed row ({type(e).__name__}: {str(e)[:120]})")
                    if converted is None:
                        continue
                    if not converted["tests"]["cases"]:
                        stats["no tests (skipped)"] += 1
                        continue
                    out.write(json.dumps(converted, ensure_ascii=False) + "\n")
                    stats["written"] += 1
        os.replace(tmp, args.out)
        done = True
    finally:
        if not done and os.path.exists(tmp):
            os.remove(tmp)
    for reason, wheres in sorted(named.items()):
        more = f", ... ({len(wheres) - WARN_NAMES} more)" if len(wheres) > WARN_NAMES else ""
        print(f"{PROG}: warning: {len(wheres)} row(s) {reason}: {', '.join(wheres[:WARN_NAMES])}{more}",
              file=sys.stderr)
    print(f"convert_codeforces: {args.out}: " + ", ".join(f"{k} {v}" for k, v in sorted(stats.items())))


if __name__ == "__main__":
    main()
