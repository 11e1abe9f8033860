#!/usr/bin/env python3
"""Hand-made LiveCodeBench code_generation_lite rows and responses, each labelled with the verdict that
LiveCodeBench's evaluator rules give (lcb_runner/evaluation/testing_util.py: stdin outputs compared line by line
after stripping, then as lists of Decimals; functional tests call Solution().func_name(*args) with JSON-parsed
arguments, a tuple result counts as a list, == the JSON-parsed expected output; all tests must pass; 6 s per test).
The labels are written by hand from those rules, not produced by gspo. Private tests are stored both ways
LiveCodeBench stores them: a JSON string and base64(zlib(pickle(JSON string))).

    python3 tests/eval/make_lcb_cases.py OUT_DIR   -> OUT_DIR/lcb_rows.jsonl, lcb_responses.jsonl, lcb_expected.json
"""
import base64
import json
import os
import pickle
import sys
import zlib


def packed(tests, protocol):
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(tests), protocol=protocol))).decode()


def stdin_tests(pairs):
    return [{"input": i, "output": o, "testtype": "stdin"} for i, o in pairs]


def call_tests(pairs):
    return [{"input": "\n".join(json.dumps(a) for a in args), "output": json.dumps(out), "testtype": "functional"}
            for args, out in pairs]


def row(qid, title, difficulty, date, public, private, starter="", func_name=None, private_form="pickle4"):
    if private_form == "json":
        priv = json.dumps(private)
    else:
        priv = packed(private, int(private_form[-1]))
    return {"question_title": title, "question_content": f"Problem {title}.", "platform": "atcoder",
            "question_id": qid, "contest_id": "abc000", "contest_date": date, "starter_code": starter,
            "difficulty": difficulty, "public_test_cases": json.dumps(public), "private_test_cases": priv,
            "metadata": json.dumps({"func_name": func_name} if func_name else {})}


def fenced(code):
    return "Here is my solution.\n```python\n" + code + "\n```\n"


ROWS = [
    # 0: stdin sum of two numbers; private tests pickled with protocol 4 (LiveCodeBench's).
    row("p0", "sum", "easy", "2024-08-03T00:00:00",
        stdin_tests([("1 2\n", "3\n")]), stdin_tests([("10 20\n", "30\n"), ("-5 5\n", "0\n")])),
    # 1: stdin division printing a decimal; expected "2.5" and "3" (integer-valued output written without ".0").
    row("p1", "halve", "medium", "2024-09-10T00:00:00",
        stdin_tests([("5\n", "2.5\n")]), stdin_tests([("6\n", "3\n")]), private_form="json"),
    # 2: functional, LeetCode style, returns a pair as a list; protocol 5 pickle.
    row("p2", "two_sum", "medium", "2024-10-01T00:00:00",
        call_tests([(([2, 7, 11, 15], 9), [0, 1])]), call_tests([(([3, 2, 4], 6), [1, 2]), (([3, 3], 6), [0, 1])]),
        starter="class Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n        ",
        func_name="twoSum", private_form="pickle5"),
    # 3: functional returning a float; protocol 2 pickle; an old date (outside a 2024-08..2024-12 window).
    row("p3", "average", "hard", "2023-05-01T00:00:00",
        call_tests([(([1, 2],), 1.5)]), call_tests([(([4, 4, 4],), 4.0)]),
        starter="class Solution:\n    def average(self, a: List[int]) -> float:\n        ",
        func_name="average", private_form="pickle2"),
    # 4: stdin with several output lines and extra spaces.
    row("p4", "lines", "easy", "2024-11-11T00:00:00",
        stdin_tests([("3\n", "1\n2\n3\n")]), stdin_tests([("1\n", "1\n")])),
]

SUM_OK = "a, b = map(int, input().split())\nprint(a + b)"
HALVE_FLOAT = "n = int(input())\nprint(n / 2)"  # prints 2.5 and 3.0: "3.0" equals "3" as decimals
HALVE_FORMAT = "n = int(input())\nprint('%.2f' % (n / 2))"  # 2.50 equals 2.5, 3.00 equals 3
TWO_SUM = ("class Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n"
           "        seen = {}\n        for i, x in enumerate(nums):\n            if target - x in seen:\n"
           "                return RET\n            seen[x] = i\n")

# (row, response, correct, failure): failure as gspo names it ("" when correct).
CASES = [
    (0, fenced(SUM_OK), True, ""),
    (0, fenced("a, b = map(int, input().split())\nprint(a - b)"), False, "wrong answer"),
    (0, fenced("a, b = map(int, input().split())\nprint(a + b)\nraise ValueError('late')"), False, "runtime error"),
    (0, fenced("import time\nwhile True:\n    pass"), False, "timeout"),
    (0, "I think the answer is to add the numbers.", False, "no code found"),
    (0, fenced("def f(:\n    pass"), False, "compile error"),
    # the last fenced block is graded, not the first
    (0, fenced("print(0)") + "\nBetter:\n" + fenced(SUM_OK), True, ""),
    (0, fenced(SUM_OK) + "\nOr:\n" + fenced("print(0)"), False, "wrong answer"),
    (1, fenced(HALVE_FLOAT), True, ""),
    (1, fenced(HALVE_FORMAT), True, ""),
    (1, fenced("n = int(input())\nprint(n // 2)"), False, "wrong answer"),  # 2 != 2.5
    (1, fenced("n = int(input())\nprint(str(n / 2) + 'x')"), False, "wrong answer"),  # not a decimal
    (2, fenced(TWO_SUM.replace("RET", "[seen[target - x], i]")), True, ""),
    (2, fenced(TWO_SUM.replace("RET", "(seen[target - x], i)")), True, ""),  # a tuple counts as a list
    (2, fenced(TWO_SUM.replace("RET", "[i, seen[target - x]]")), False, "wrong answer"),
    (2, fenced(TWO_SUM.replace("RET", "nums[10**9]")), False, "runtime error"),
    (2, fenced("class Solution:\n    def twoSum(self, nums, target):\n        while True:\n            pass"), False,
     "timeout"),
    (2, fenced("class Solution:\n    def other(self):\n        return 1"), False, "compile error"),  # no twoSum
    # printing does not disturb the verdict, and reading the tests file finds nothing (deleted before the call)
    (2, fenced("import os\nclass Solution:\n    def twoSum(self, nums, target):\n        print('debug')\n"
               "        return [0, 1] if os.path.exists('tests.json') else [-1]"), False, "wrong answer"),
    (3, fenced("class Solution:\n    def average(self, a):\n        return sum(a) / len(a)"), True, ""),
    (3, fenced("class Solution:\n    def average(self, a):\n        return sum(a) // len(a)"), False, "wrong answer"),
    (4, fenced("n = int(input())\nfor i in range(1, n + 1):\n    print(i, end='  \\n')\nprint()"), True, ""),
    (4, fenced("n = int(input())\nprint(' '.join(str(i) for i in range(1, n + 1)))"), False, "wrong answer"),
]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "lcb_rows.jsonl"), "w") as f:
        for r in ROWS:
            f.write(json.dumps(r) + "\n")
    with open(os.path.join(out, "lcb_responses.jsonl"), "w") as f:
        for i, (r, resp, _, _) in enumerate(CASES):
            f.write(json.dumps({"index": r, "response": resp}) + "\n")
    with open(os.path.join(out, "lcb_expected.json"), "w") as f:
        json.dump([{"index": r, "correct": ok, "failure": why} for r, _, ok, why in CASES], f, indent=1)
    print(f"wrote {len(ROWS)} LiveCodeBench rows and {len(CASES)} labelled responses to {out}")


if __name__ == "__main__":
    main()
