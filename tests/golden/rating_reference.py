#!/usr/bin/env python3
"""Independent reference for gspo's competition ratings (src/gspo/eval/rating.h, docs/evaluation.md "CodeForces").

Written from the method's description, not from the C++ code:
  difficulty rating: the root of sum_j (c_j - n_j / (1 + 10^((d_j - r) / 400))) found with mpmath at 50 digits
    (Anderson-Bjoerck's bracketing solver, not bisection), standard error (400 / ln 10) / sqrt(sum_j n_j p_j (1 - p_j));
  CodeElo (QwenLM/CodeElo calc_rating.py, described in arXiv 2501.01257): the model's points and penalty from its
    first accepted attempts, its rank counted as the rated rows not strictly worse (the standings are sorted), the
    rating as the largest integer r in [0, max(0, max old rating) + 100) with 1 + sum_i 1/(1 + 10^((r - r_i)/400))
    >= rank found by bisect over the integers (0 when none), the percentile as bisect_left over a sorted table.
Random cases from a fixed seed; writes rating_cases.json, read by tests/unit/test_rating.cpp (tolerances there).

    python3 tests/golden/rating_reference.py OUT.json
"""
import bisect
import json
import random
import sys

import mpmath

mpmath.mp.dps = 50


def difficulty_case(rng):
    k = rng.randint(1, 12)
    problems = []
    for _ in range(k):
        n = rng.choice([1, 4, 8, 16])
        problems.append({"difficulty": rng.randrange(800, 3600, 100), "attempts": n, "accepted": rng.randint(0, n)})
    total_c = sum(p["accepted"] for p in problems)
    total_n = sum(p["attempts"] for p in problems)
    case = {"problems": problems}
    if total_c == 0 or total_c == total_n:
        case["kind"] = "none" if total_c == 0 else "all"
        return case

    def gap(r):
        return sum(p["accepted"] - p["attempts"] / (1 + mpmath.power(10, (p["difficulty"] - r) / mpmath.mpf(400)))
                   for p in problems)

    lo = min(p["difficulty"] for p in problems) - 6000
    hi = max(p["difficulty"] for p in problems) + 6000
    r = mpmath.findroot(gap, (mpmath.mpf(lo), mpmath.mpf(hi)), solver="anderson", tol=mpmath.mpf(10) ** -40)
    info = mpmath.mpf(0)
    for p in problems:
        q = 1 / (1 + mpmath.power(10, (p["difficulty"] - r) / mpmath.mpf(400)))
        info += p["attempts"] * q * (1 - q)
    case["kind"] = "estimate"
    case["rating"] = float(r)
    case["stderr"] = float((400 / mpmath.log(10)) / mpmath.sqrt(info))
    return case


def contest_case(rng):
    problems = []
    point_scored = rng.random() < 0.5
    for idx in "ABCDEF"[: rng.randint(2, 6)]:
        problems.append({"index": idx, "points": rng.choice([500, 750, 1000, 1500, 2000]) if point_scored else None})
    first = [rng.choice([None, 0, 1, 2, 5, 7, 12]) for _ in problems]
    points = penalty = 0
    for p, i in zip(problems, first):
        if i is None:
            continue
        if p["points"] is not None:
            points += max(0, p["points"] - 50 * i)
        else:
            points += 1
            penalty += 10 * i
    n = rng.randint(1, 300)
    rows = []
    for _ in range(n):
        if point_scored:
            pts = rng.choice([0, 250, 450, 500, 700, 950, 1000, 1450, 1500, 2500, 3000])
        else:
            pts = rng.randint(0, len(problems))
        rows.append([pts, rng.randint(0, 8) * 10, rng.randint(-50, 3600)])
    rows.sort(key=lambda r: (-r[0], r[1]))  # standings order: more points, then less penalty
    rank = sum(1 for r in rows if not (r[0] < points or (r[0] == points and r[1] > penalty)))
    cap = max(0, max(r[2] for r in rows)) + 100
    def fits(cand):  # decreasing in cand: True up to the rating, False after
        return 1 + sum(1 / (1 + 10 ** ((cand - r[2]) / 400)) for r in rows) >= rank

    first_not = bisect.bisect_left(range(cap), True, key=lambda cand: not fits(cand))
    rating = max(0, first_not - 1)
    return {"problems": problems, "first_accepted": first, "rows": rows, "points": points, "penalty": penalty,
            "rank": rank, "rating": rating}


def percentile_case(rng):
    table = sorted(rng.randint(-100, 4000) for _ in range(rng.randint(1, 50)))
    rating = rng.choice(table) if rng.random() < 0.5 else rng.uniform(-200, 4200)
    return {"table": table, "rating": rating, "percentile": round(bisect.bisect_left(table, rating) / len(table) * 100, 1)}


def main():
    rng = random.Random(57)
    cases = {
        "difficulty": [difficulty_case(rng) for _ in range(200)],
        "contests": [contest_case(rng) for _ in range(120)],
        "percentiles": [percentile_case(rng) for _ in range(200)],
    }
    with open(sys.argv[1], "w") as f:
        json.dump(cases, f)


if __name__ == "__main__":
    main()
