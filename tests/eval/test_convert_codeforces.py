#!/usr/bin/env python3
"""scripts/convert_codeforces.py on small self-written rows in each source format's shape (open-r1/codeforces and
deepmind/code_contests as parquet, xCodeEval-style JSONL): limits, tests chosen, testlib inlined into a checker,
interactive and non-Codeforces rows skipped, attribution kept. ctest convert_codeforces.

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

print(f"convert_codeforces: {'FAILED ' + ', '.join(failures) if failures else 'all checks passed'}")
sys.exit(1 if failures else 0)
