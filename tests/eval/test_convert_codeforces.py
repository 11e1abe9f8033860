#!/usr/bin/env python3
"""scripts/convert_codeforces.py on small self-written rows in each source format's shape (open-r1/codeforces and
deepmind/code_contests as parquet, xCodeEval-style JSONL): limits, tests chosen, testlib inlined into a checker,
interactive and non-Codeforces rows skipped, attribution kept. ctest convert_codeforces.

Bad input (issue #65 item 9): a missing input file, a worded time limit or rating, a row that is a list, a missing
--testlib, a file in the way of the output's directory, a truncated parquet, a --tests value the format lacks
(`--tests hidden` used the examples silently): each exit 2 with one line "convert_codeforces.py: error: ..." naming the
file and row or field, no traceback, no output. A null time limit skips the row (counted, named in a warning), a null
rating gives no difficulty (counted), "2 seconds" is read as 2; open-r1 rows whose official tests are incomplete are
counted and named when their examples stand in (--tests official), skipped with --tests official-only.

    python3 tests/eval/test_convert_codeforces.py SOURCE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq

SRC = sys.argv[1]
SCRIPT = os.path.join(SRC, "scripts", "convert_codeforces.py")

OPEN_R1 = [
    {"id": "1/A", "contest_id": "1", "index": "A", "title": "Sum", "time_limit": 2.0, "memory_limit": 256.0,
     "description": "Add two numbers.", "input_format": "a b", "output_format": "a+b", "interaction_format": None,
     "note": None, "examples": [{"input": "1 2\n", "output": "3\n"}], "rating": 800,
     "official_tests": [{"input": "1 2\n", "output": "3\n"}, {"input": "5 5\n", "output": "10\n"}],
     "official_tests_complete": True,
     "generated_checker": '#include "testlib.h"\nint main(int argc, char* argv[]) { registerTestlibCmd(argc, argv); }'},
    {"id": "1/B", "contest_id": "1", "index": "B", "title": "Guess", "time_limit": 1.0, "memory_limit": 64.0,
     "description": "Interactive.", "input_format": "", "output_format": "", "interaction_format": "Ask queries.",
     "note": None, "examples": [{"input": "1\n", "output": "1\n"}], "rating": 1500, "official_tests": [],
     "official_tests_complete": False, "generated_checker": None},
]
CODE_CONTESTS = [
    {"name": "2_C. Sort", "description": "Sort the numbers.", "source": 2, "cf_contest_id": 2, "cf_index": "C",
     "cf_points": 1000.0, "cf_rating": 1300, "time_limit": {"seconds": 1, "nanos": 500000000},
     "memory_limit_bytes": 268435456,
     "public_tests": {"input": ["2\n2 1\n"], "output": ["1 2\n"]},
     "private_tests": {"input": ["1\n5\n"], "output": ["5\n"]},
     "generated_tests": {"input": ["3\n3 2 1\n"], "output": ["1 2 3\n"]}},
    {"name": "atcoder", "description": "x", "source": 4, "cf_contest_id": 0, "cf_index": "", "cf_points": 0.0,
     "cf_rating": 0, "time_limit": None, "memory_limit_bytes": 0,
     "public_tests": {"input": ["1\n"], "output": ["1\n"]}, "private_tests": {"input": [], "output": []},
     "generated_tests": {"input": [], "output": []}},
]
XCODEEVAL = {"description": "Print n.", "input_spec": "n", "output_spec": "n", "notes": None, "time_limit": "1 second",
             "memory_limit": "256 megabytes", "sample_inputs": ["7\n"], "sample_outputs": ["7"], "src_uid": "abc",
             "difficulty": 900}

failures = []


def expect(name, ok):
    if not ok:
        failures.append(name)
        print("FAIL", name)


def convert(fmt, path, out, *extra):
    r = subprocess.run([sys.executable, SCRIPT, "--format", fmt, path, "-o", out, *extra], capture_output=True,
                       text=True)
    expect(fmt + " exit", r.returncode == 0)
    return [json.loads(l) for l in open(out)], r.stdout


with tempfile.TemporaryDirectory() as tmp:
    pq.write_table(pa.Table.from_pylist(OPEN_R1), os.path.join(tmp, "r1.parquet"))
    pq.write_table(pa.Table.from_pylist(CODE_CONTESTS), os.path.join(tmp, "cc.parquet"))
    with open(os.path.join(tmp, "x.jsonl"), "w") as f:
        f.write(json.dumps(XCODEEVAL) + "\n")
    with open(os.path.join(tmp, "testlib.h"), "w") as f:
        f.write("// fake testlib for the test\nvoid registerTestlibCmd(int, char**) {}\n")

    rows, log = convert("open-r1", os.path.join(tmp, "r1.parquet"), os.path.join(tmp, "r1.jsonl"))
    expect("open-r1 interactive skipped", len(rows) == 1 and "interactive (skipped) 1" in log)
    r = rows[0]
    expect("open-r1 limits", r["time_limit_s"] == 2.0 and r["memory_limit_mb"] == 256.0 and r["difficulty"] == 800)
    expect("open-r1 official tests", len(r["tests"]["cases"]) == 2 and r["tests"]["type"] == "competition")
    expect("open-r1 contest", r["contest_id"] == "1" and r["index"] == "A")
    expect("open-r1 no testlib: checker dropped and counted",
           "checker" not in r["tests"] and "checker needs --testlib (token comparison kept) 1" in log)
    expect("open-r1 attribution", r["license"] == "CC-BY-4.0" and "open-r1/codeforces" in r["attribution"]
           and r["source"] == "open-r1:1/A")
    expect("open-r1 prompt", "# Sum" in r["problem"] and "## Example 1" in r["problem"] and "```cpp" in r["problem"])
    rows, _ = convert("open-r1", os.path.join(tmp, "r1.parquet"), os.path.join(tmp, "r1t.jsonl"),
                      "--testlib", os.path.join(tmp, "testlib.h"))
    checker = rows[0]["tests"].get("checker", "")
    expect("open-r1 testlib inlined", "fake testlib" in checker and '#include "testlib.h"' not in checker
           and rows[0]["tests"]["checker_language"] == "cpp")
    rows, _ = convert("open-r1", os.path.join(tmp, "r1.parquet"), os.path.join(tmp, "r1e.jsonl"), "--tests", "examples")
    expect("open-r1 examples only", len(rows[0]["tests"]["cases"]) == 1)

    rows, log = convert("code_contests", os.path.join(tmp, "cc.parquet"), os.path.join(tmp, "cc.jsonl"))
    expect("code_contests non-Codeforces skipped", len(rows) == 1 and "not Codeforces (skipped) 1" in log)
    r = rows[0]
    expect("code_contests limits", r["time_limit_s"] == 1.5 and r["memory_limit_mb"] == 256.0
           and r["difficulty"] == 1300 and r["points"] == 1000.0 and r["contest_id"] == "2" and r["index"] == "C")
    expect("code_contests public+private", len(r["tests"]["cases"]) == 2)
    rows, _ = convert("code_contests", os.path.join(tmp, "cc.parquet"), os.path.join(tmp, "cca.jsonl"), "--tests", "all")
    expect("code_contests all", len(rows[0]["tests"]["cases"]) == 3)

    rows, _ = convert("xcodeeval", os.path.join(tmp, "x.jsonl"), os.path.join(tmp, "xo.jsonl"))
    expect("xcodeeval", rows[0]["time_limit_s"] == 1.0 and rows[0]["tests"]["cases"] == [{"input": "7\n", "output": "7"}]
           and rows[0]["difficulty"] == 900 and rows[0]["source"] == "xcodeeval:abc")


def run(fmt, inputs, out, *extra):
    r = subprocess.run([sys.executable, SCRIPT, "--format", fmt, *inputs, "-o", out, *extra], capture_output=True,
                       text=True)
    return r.returncode, r.stdout, r.stderr


def refused(name, fmt, inputs, out, names, *extra):
    """Exit 2, one stderr line 'convert_codeforces.py: error: ...' holding every string of `names`, no traceback,
    neither the output nor its temporary file written."""
    rc, so, se = run(fmt, inputs, out, *extra)
    lines = [l for l in se.splitlines() if l.strip()]
    ok = (rc == 2 and len(lines) == 1 and lines[0].startswith("convert_codeforces.py: error: ")
          and "Traceback" not in se and all(n in lines[0] for n in names)
          and not os.path.isfile(out) and not os.path.exists(out + ".tmp"))
    expect(f"{name}: exit 2, one line naming {names} (exit {rc}: {se.strip()[-300:]!r})", ok)


def r1(**over):
    row = dict(OPEN_R1[0])
    row.update(over)
    return row


with tempfile.TemporaryDirectory() as tmp:
    def parquet(name, rows):
        path = os.path.join(tmp, name)
        pq.write_table(pa.Table.from_pylist(rows), path)
        return path

    def jsonl(name, rows):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
        return path

    out = os.path.join(tmp, "out.jsonl")
    good = parquet("good.parquet", OPEN_R1)
    missing = os.path.join(tmp, "no_such.parquet")
    refused("missing input", "open-r1", [missing], out, [missing, "no such file"])
    refused("--tests hidden", "open-r1", [good], out, ["--tests hidden", "official"], "--tests", "hidden")
    refused("--tests private for xcodeeval", "xcodeeval", [good], out, ["--tests private", "samples"],
            "--tests", "private")
    worded = jsonl("worded_time.jsonl", [r1(), r1(id="1/C", time_limit="two seconds")])
    refused("open-r1 worded time limit", "open-r1", [worded], out, [worded + ":2", "time_limit", "two seconds"])
    worded = parquet("worded_rating.parquet", [r1(rating="800"), r1(rating="hard")])
    refused("open-r1 worded rating", "open-r1", [worded], out, [worded + " row 2", "rating", "hard"])
    xw = jsonl("x_worded.jsonl", [dict(XCODEEVAL, memory_limit="lots of megabytes")])
    refused("xcodeeval worded memory limit", "xcodeeval", [xw], out, [xw + ":1", "memory_limit"])
    xr = jsonl("x_rating.jsonl", [dict(XCODEEVAL, difficulty="*1500")])
    refused("xcodeeval worded rating", "xcodeeval", [xr], out, [xr + ":1", "difficulty"])
    listed = os.path.join(tmp, "list_row.jsonl")
    with open(listed, "w") as f:
        f.write(json.dumps(XCODEEVAL) + "\n" + json.dumps([XCODEEVAL]) + "\n")
    refused("a row that is a list", "xcodeeval", [listed], out, [listed + ":2", "list", "not an object"])
    refused("a list row (open-r1 JSONL)", "open-r1", [listed], out, [listed + ":2", "not an object"])
    no_testlib = os.path.join(tmp, "no_testlib.h")
    refused("missing --testlib", "open-r1", [good], out, [no_testlib, "--testlib"], "--testlib", no_testlib)
    blocker = os.path.join(tmp, "blocker")
    open(blocker, "w").write("a file where the output's directory should be\n")
    refused("output directory in the way", "open-r1", [good], os.path.join(blocker, "out.jsonl"),
            [os.path.join(blocker, "out.jsonl"), "in the way"])
    refused("output is a directory", "open-r1", [good], tmp, [tmp, "is a directory"])
    cut = os.path.join(tmp, "cut.parquet")
    data = open(good, "rb").read()
    open(cut, "wb").write(data[:len(data) // 2])
    refused("truncated parquet", "open-r1", [cut], out, [cut, "parquet"])
    open(cut, "wb").write(b"PAR1 but nothing else")
    refused("garbage parquet", "open-r1", [cut], out, [cut, "parquet"])
    refused("a parquet file read as code_contests", "code_contests", [cut], out, [cut])

    # null limits skip the row (counted and named), null ratings give no difficulty (counted), "2 seconds" is read
    nulls = parquet("nulls.parquet", [r1(), r1(id="1/D", time_limit=None), r1(id="1/E", rating=None),
                                      r1(id="1/F", memory_limit=None)])
    rc, so, se = run("open-r1", [nulls], out)
    rows = [json.loads(l) for l in open(out)] if rc == 0 else []
    expect(f"null limits: exit 0, rows 1/A and 1/E written (exit {rc}: {se[-300:]!r})",
           rc == 0 and [r["source"] for r in rows] == ["open-r1:1/A", "open-r1:1/E"])
    expect(f"null time limit: counted and named ({so.strip()!r}, {se.strip()!r})",
           "no time limit (skipped) 1" in so and nulls + " row 2" in se and "Traceback" not in se)
    expect(f"null memory limit: counted and named", "no memory limit (skipped) 1" in so and nulls + " row 4" in se)
    expect(f"null rating: no difficulty, counted ({so.strip()!r})",
           "no rating (no difficulty) 1" in so and len(rows) == 2 and "difficulty" not in rows[1])
    xn = jsonl("x_null.jsonl", [dict(XCODEEVAL, time_limit=None), XCODEEVAL])
    rc, so, se = run("xcodeeval", [xn], out)
    expect(f"xcodeeval null time limit skipped, counted, named (exit {rc}: {so.strip()!r} {se.strip()!r})",
           rc == 0 and "no time limit (skipped) 1" in so and xn + ":1" in se and "written 1" in so)
    words = jsonl("words.jsonl", [r1(time_limit="2 seconds", memory_limit="256 megabytes", rating="1200")])
    rc, so, se = run("open-r1", [words], out)
    rows = [json.loads(l) for l in open(out)] if rc == 0 else []
    expect(f"'2 seconds', '256 megabytes', rating '1200' read as numbers (exit {rc}: {se[-300:]!r})",
           rc == 0 and rows and rows[0]["time_limit_s"] == 2.0 and rows[0]["memory_limit_mb"] == 256.0
           and rows[0]["difficulty"] == 1200)

    # open-r1 rows without a complete official set: their examples stand in, counted and named; or skipped
    partial = parquet("partial.parquet", [r1(), r1(id="1/G", official_tests=[], official_tests_complete=False),
                                          r1(id="1/H", official_tests_complete=False)])
    rc, so, se = run("open-r1", [partial], out, "--tests", "official")
    rows = [json.loads(l) for l in open(out)] if rc == 0 else []
    expect(f"--tests official: incomplete official sets counted and named ({so.strip()!r}, {se.strip()!r})",
           rc == 0 and "official tests missing or incomplete (examples used) 2" in so
           and partial + " row 2" in se and partial + " row 3" in se and "warning" in se
           and [len(r["tests"]["cases"]) for r in rows] == [2, 1, 1])
    rc, so, se = run("open-r1", [partial], out, "--tests", "official-only")
    rows = [json.loads(l) for l in open(out)] if rc == 0 else []
    expect(f"--tests official-only: those rows skipped and counted ({so.strip()!r})",
           rc == 0 and "official tests missing or incomplete (skipped) 2" in so and len(rows) == 1
           and rows[0]["source"] == "open-r1:1/A")

print(f"convert_codeforces: {'FAILED ' + ', '.join(failures) if failures else 'all checks passed'}")
sys.exit(1 if failures else 0)
