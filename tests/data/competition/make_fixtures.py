#!/usr/bin/env python3
"""Writes the competition fixtures of tests/unit/test_competition_eval.cpp (written for gspo, CC0): three small
problems in gspo's competition rows (one with a checker: several right answers) and two responses per problem in
gspo score's format. Run from anywhere; it writes beside itself:

    python3 tests/data/competition/make_fixtures.py
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
INSTRUCTION = "Answer with one fenced ```python or ```cpp block that reads stdin and writes stdout."

PAIR_CHECKER = """import sys
n = int(open(sys.argv[1]).read().split()[0])
out = open(sys.argv[2]).read().split()
try:
    a, b = (int(x) for x in out)
except ValueError:
    sys.exit(1)
sys.exit(0 if 1 <= a <= n and 1 <= b <= n and a != b and (a + b) % 2 == 1 else 1)
"""


def problem(text, tl, mb, difficulty, index, cases, checker=None):
    tests = {"type": "competition", "cases": [{"input": i, "output": o} for i, o in cases]}
    if checker:
        tests["checker"], tests["checker_language"] = checker, "python"
    return {"problem": text + "\n\n" + INSTRUCTION, "time_limit_s": tl, "memory_limit_mb": mb,
            "difficulty": difficulty, "tests": tests, "contest_id": "9001", "index": index,
            "source": "gspo fixture", "license": "CC0-1.0", "attribution": "written for gspo's tests"}


PROBLEMS = [
    problem("# Sum\n\nThe first line holds n, the second n integers. Print their sum.", 1, 256, 800, "A",
            [("3\n1 2 3\n", "6\n"), ("1\n-5\n", "-5\n"), ("4\n1000000000 1000000000 1000000000 1000000000\n",
                                                           "4000000000\n")]),
    problem("# Odd pair\n\nGiven n >= 2, print two distinct integers a, b in [1, n] whose sum is odd.", 1, 256, 1200,
            "B", [("2\n", "1 2\n"), ("7\n", "3 4\n"), ("1000\n", "1 2\n")], PAIR_CHECKER),
    problem("# Sort\n\nThe first line holds n, the second n integers. Print them in non-decreasing order.", 1, 64,
            1600, "C", [("5\n5 1 4 2 3\n", "1 2 3 4 5\n"), ("2\n7 7\n", "7 7\n")]),
]


def fence(lang, src):
    return f"```{lang}\n{src.strip()}\n```"


RESPONSES = [
    [fence("python", "print(0)"),
     fence("python", "input()\nprint(sum(map(int, input().split())))")],
    [fence("cpp", "#include <cstdio>\nint main(){ puts(\"1 2\"); }"),
     "Any odd pair works:\n" + fence("python", "n = int(input())\nprint(n, n - 1)")],
    [fence("python", "while True:\n    pass"),
     fence("cpp", "int main() { return }")],
]


def main():
    with open(os.path.join(HERE, "problems.jsonl"), "w") as f:
        for p in PROBLEMS:
            f.write(json.dumps(p) + "\n")
    with open(os.path.join(HERE, "responses.jsonl"), "w") as f:
        for i, rs in enumerate(RESPONSES):
            f.write(json.dumps({"index": i, "responses": rs}) + "\n")


if __name__ == "__main__":
    main()
