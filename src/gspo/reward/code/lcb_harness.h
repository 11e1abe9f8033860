// The Python program that runs a LiveCodeBench functional (call-based) sample inside the sandbox: it reads the
// verdict marker from stdin and the tests from tests.json (then deletes the file, so the candidate code cannot read
// the expected outputs), executes solution.py, calls the method on every test with a per-test wall-clock alarm,
// and prints one line "<marker> {json verdict}" on its real stdout. Used by run_lcb_tests() only.
#pragma once

namespace gspo::reward {

inline constexpr const char* kLcbCallHarness = R"PY(
import io, json, os, signal, sys

class _GspoTimeout(BaseException):
    pass

def _gspo_alarm(signum, frame):
    raise _GspoTimeout()

def _gspo_main():
    marker = sys.stdin.readline().strip()
    real_stdout = sys.stdout

    def verdict(**kw):
        real_stdout.write("\n" + marker + " " + json.dumps(kw) + "\n")
        real_stdout.flush()
        os._exit(0)

    with open("tests.json") as f:
        spec = json.load(f)
    os.remove("tests.json")
    timeout, name, tests = spec["timeout"], spec["func_name"], spec["tests"]
    with open("solution.py") as f:
        src = f.read()
    signal.signal(signal.SIGALRM, _gspo_alarm)

    def timed(fn):
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            return fn()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    ns = {"__name__": "solution", "__builtins__": __builtins__}
    sys.stdout = io.StringIO()
    try:
        timed(lambda: exec(compile(src, "solution.py", "exec"), ns))
        target = ns["Solution"]() if "class Solution" in src else None
        method = getattr(target, name) if target is not None else ns[name]
    except _GspoTimeout:
        verdict(passed=0, failure="timeout", test=0, message="defining the solution took too long")
    except SyntaxError as e:
        verdict(passed=0, failure="compile error", test=0, message=repr(e)[:300])
    except BaseException as e:
        verdict(passed=0, failure="compile error", test=0, message=repr(e)[:300])
    for i, (inp, out) in enumerate(tests):
        args = [json.loads(line) for line in inp.rstrip("\n").split("\n")]
        expected = json.loads(out)
        sys.stdout = io.StringIO()
        try:
            got = timed(lambda: method(*args))
        except _GspoTimeout:
            verdict(passed=i, failure="timeout", test=i + 1, message="")
        except BaseException as e:
            verdict(passed=i, failure="runtime error", test=i + 1, message=repr(e)[:300])
        if isinstance(got, tuple):
            got = list(got)
        try:
            same = bool(got == expected)
        except BaseException:
            same = False
        if not same:
            verdict(passed=i, failure="wrong answer", test=i + 1, message=repr(got)[:100])
    verdict(passed=len(tests), failure="", test=0, message="")

_gspo_main()
)PY";

// Put before every LiveCodeBench program (stdin and functional), as LiveCodeBench's evaluator does: the standard
// modules its reference solutions and LeetCode starter code use without importing them (typing's List, Optional;
// collections, heapq, bisect, math, ...), and a deep recursion limit.
inline constexpr const char* kLcbImports = R"PY(from string import *
from re import *
from datetime import *
from collections import *
from heapq import *
from bisect import *
from copy import *
from math import *
from random import *
from statistics import *
from itertools import *
from functools import *
from operator import *
from io import *
from sys import *
from json import *
from builtins import *
from typing import *
import string, re, datetime, collections, heapq, bisect, copy, math, random, statistics, itertools, functools
import operator, io, sys, json
sys.setrecursionlimit(50000)
)PY";

}  // namespace gspo::reward
