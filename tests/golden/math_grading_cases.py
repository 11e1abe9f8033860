#!/usr/bin/env python3
"""Math grading cases: generated (response, reference) pairs labelled by Math-Verify 0.9.0.

This is the outside test set for gspo's math reward grader. It generates several hundred grading cases in eight
categories (relation, equation, matrix, latex_forms, prose, gold_extract, conventions, regression) and labels each
one with Math-Verify's verdict. The cases were written to cover these kinds of answers from how models and datasets
actually write them (MATH / NuminaMath / OpenThoughts style solutions, Minerva "Final Answer: ..." endings,
"**Answer:**" lines, prose with the answer as the last math span, several boxes in one response, units, thousands
separators, JSON-escaped backslashes, ...), not from gspo's grading rules and not from Math-Verify's own tests.
Responses come from templates (phrasings of real model responses) crossed with value pools drawn from a fixed-seed
random.Random, plus hand-written cases for tricky forms; true cases and near misses are paired.

Labels (math-verify 0.9.0, default extraction, any exception counts as "not equal"):
  gold "answer":  verify(parse("\\boxed{" + reference + "}"), parse(response))   -- a dataset's plain answer field
  gold "extract": verify(parse(reference), parse(response))                       -- a reference that needs
                  extraction: a whole solution ending in \\boxed{...}, "The answer is $\\frac{3}{4}$.", "$x=5$"

Output (same format as math_oracle_cases.py, plus "gold"):
  {"oracle": "math-verify 0.9.0",
   "cases": [{"category", "response", "reference", "gold": "answer"|"extract", "math_verify": bool}, ...]}

The labels are Math-Verify's verdicts even where a careful human grader would disagree (kept on purpose, since
Math-Verify is what TRL / open-r1 / verl train with), e.g. `2x > 4` vs gold `x > 2` and `4 > t > 2` vs `2 < t < 4`
are "not equal", `\\boxed{754 444}` reads as 754 + 444, a trailing `t`/`m` after a relation is dropped as a unit, a
period inside `\\[ ... 36\\pi. \\]` drops the `\\pi`, `\\sin 60^\\circ` is taken in radians.

Deterministic (fixed seeds, lists only). Run by ctest as a fixture writing ${GSPO_TEST_MODELS}/math_grading_cases.json,
which a C++ test reads and requires >= 97% agreement with.

    python3 tests/golden/math_grading_cases.py OUT.json
"""
import json
import os
import random
import sys
from fractions import Fraction

from math_verify import parse, verify

CATEGORIES = ["relation", "equation", "matrix", "latex_forms", "prose", "gold_extract", "conventions", "regression"]
MINERVA = "Final Answer: The final answer is ${}$. I hope it is correct."

# ----------------------------------------------------------------------------------------------------------------
# formatting helpers
# ----------------------------------------------------------------------------------------------------------------


def frac_tex(q, style="frac"):
    """LaTeX for a rational number: 3, -\\frac{1}{2}, \\dfrac{7}{3}, 0.5 ..."""
    q = Fraction(q)
    if q.denominator == 1:
        return str(q.numerator)
    sign = "-" if q < 0 else ""
    n, d = abs(q.numerator), q.denominator
    if style == "slash":
        return f"{sign}{n}/{d}"
    return f"{sign}\\{style}{{{n}}}{{{d}}}"


def term(coef, var, first):
    """One term of a linear form: coefficient times variable, with the sign written for non-first terms."""
    coef = Fraction(coef)
    if coef == 0:
        return ""
    sign = "-" if coef < 0 else ("" if first else "+")
    a = abs(coef)
    if var == "":
        body = frac_tex(a)
    elif a == 1:
        body = var
    elif a.denominator == 1:
        body = f"{a.numerator}{var}"
    else:
        body = f"\\frac{{{a.numerator}}}{{{a.denominator}}}{var}"
    return sign + body


def lin(coefs, names, spaced=False):
    """Linear form sum(coef*name) ("" name = constant)."""
    out = []
    for c, v in zip(coefs, names):
        t = term(c, v, not out)
        if t:
            out.append(t)
    if not out:
        return "0"
    s = "".join(out)
    if spaced:
        s = s[0] + s[1:].replace("+", " + ").replace("-", " - ")
    return s


def matrix_tex(rows, env="pmatrix", fmt=str, sep=" \\\\ ", amp=" & "):
    body = sep.join(amp.join(fmt(e) for e in r) for r in rows)
    if env in ("pmatrix", "bmatrix", "matrix", "vmatrix"):
        inner = f"\\begin{{{env}}} {body} \\end{{{env}}}"
        return inner if env != "matrix" else f"\\left( {inner} \\right)"
    if env == "array":
        cols = "c" * len(rows[0])
        return f"\\left[\\begin{{array}}{{{cols}}} {body} \\end{{array}}\\right]"
    if env == "array_paren":
        cols = "c" * len(rows[0])
        return f"\\left(\\begin{{array}}{{{cols}}} {body} \\end{{array}}\\right)"
    raise ValueError(env)


def choice(rng, seq):
    return seq[rng.randrange(len(seq))]


# Ways a model closes a solution with a box after a full sentence; <A> is the answer.
BOX_ENDINGS = [
    "Therefore, the answer is $\\boxed{<A>}$.",
    "So the final answer is $\\boxed{<A>}$.",
    "Thus the answer is $\\boxed{<A>}$.",
    "**Final Answer**\n\\[\n\\boxed{<A>}\n\\]",
    "The final answer is: $\\boxed{<A>}$",
    "Hence the answer is \\(\\boxed{<A>}\\).",
    "Putting it together, we get\n$$\\boxed{<A>}$$",
    "So the answer is \\boxed{<A>}.",
]
# Ways a box continues a sentence that is not finished ("..., the line is").
BOX_CONTINUATIONS = [" $\\boxed{<A>}$.", " \\boxed{<A>}.", "\n\\[\n\\boxed{<A>}\n\\]", " \\(\\boxed{<A>}\\).",
                     " $$\\boxed{<A>}.$$"]


def boxed(rng, ans, lead=""):
    """A response: the lead (reasoning), then the answer in a box. A lead that ends a sentence gets a closing
    sentence; a lead that stops mid-sentence ("so the line is") is continued by the box."""
    if not lead:
        return choice(rng, BOX_ENDINGS).replace("<A>", ans)
    if lead[-1] in ".!?":
        sep = choice(rng, [" ", "\n", "\n\n"])
        return lead + sep + choice(rng, BOX_ENDINGS).replace("<A>", ans)
    return lead + choice(rng, BOX_CONTINUATIONS).replace("<A>", ans)


# ----------------------------------------------------------------------------------------------------------------
# 1. relation: inequalities and other relations as answers
# ----------------------------------------------------------------------------------------------------------------

GE = ["\\geq", "\\ge", "\\geqslant", ">="]
LE = ["\\leq", "\\le", "\\leqslant", "<="]
GT = [">", "\\gt"]
LT = ["<", "\\lt"]
NE = ["\\neq", "\\ne", "!="]
OPS = {"ge": GE, "le": LE, "gt": GT, "lt": LT, "ne": NE}
FLIP = {"ge": "le", "le": "ge", "gt": "lt", "lt": "gt", "ne": "ne"}
STRICT_SWAP = {"ge": "gt", "gt": "ge", "le": "lt", "lt": "le"}
REL_VARS = ["x", "x", "x", "t", "n", "a", "k", "m"]

REL_LEADS = [
    "Subtracting the constant from both sides and dividing by the positive coefficient isolates the variable.",
    "Moving every term to the left-hand side, the inequality becomes linear, so we solve it directly.",
    "Since the function is increasing, the condition reduces to a single bound on the variable.",
    "We need the expression under the square root to be nonnegative, so",
    "Combining the two conditions, only the stronger bound matters, so the solution is",
    "Solving the linear inequality step by step, we get",
    "Testing a value on each side of the boundary confirms the direction of the inequality.",
]


def gen_relation(rng):
    out = []

    def add(resp, ref):
        out.append(("relation", resp, ref, "answer"))

    def rel(v, op, b, form=None):
        o = form if form is not None else choice(rng, OPS[op])
        return f"{v} {o} {b}"

    # (a) the same relation, the operator spelled differently (\ge, \geqslant, >=, \lt, !=, ...) or spaced differently
    for op in ["ge", "le", "gt", "lt", "ne", "ge", "le", "ne"]:
        v, b = choice(rng, REL_VARS), rng.randint(-9, 15)
        gold = rel(v, op, b, OPS[op][0])
        alt = OPS[op][rng.randrange(1, len(OPS[op]))]
        pred = choice(rng, [f"{v} {alt} {b}", f"{v}{alt}{b}", f"{v} {alt}{b}"])
        add(boxed(rng, pred, choice(rng, REL_LEADS)), gold)
    add(boxed(rng, "x \\ge 1.5", "Dividing both sides by 2, we get"), "x \\geq \\frac{3}{2}")
    add(boxed(rng, "x \\geq \\dfrac{3}{2}", "Dividing both sides by 2, we get"), "x \\geq 1.5")
    add(boxed(rng, "x \\leq -\\frac{1}{2}", "Dividing both sides by 4, we get"), "x \\le -0.5")
    # (b) sides swapped: 5 \geq x for x \leq 5 (true); swapped sides with the operator kept (false)
    for op in ["ge", "le", "gt", "lt", "ge", "lt"]:
        v, b = choice(rng, REL_VARS), rng.randint(-5, 20)
        gold = rel(v, op, b, OPS[op][0])
        add(boxed(rng, f"{b} {choice(rng, OPS[FLIP[op]])} {v}", choice(rng, REL_LEADS)), gold)
    for op in ["ge", "lt", "le"]:
        v, b = choice(rng, REL_VARS), rng.randint(-5, 20)
        gold = rel(v, op, b, OPS[op][0])
        add(boxed(rng, f"{b} {OPS[op][0]} {v}", choice(rng, REL_LEADS)), gold)
    # (c) scaled / negated: 2x > 4 for x > 2, -x > -1 for x < 1; negated without turning the sign (false)
    for op in ["gt", "lt", "ge", "le"]:
        v, b = choice(rng, ["x", "x", "t", "y"]), rng.randint(1, 9)
        k = rng.randint(2, 5)
        gold = rel(v, op, b, OPS[op][0])
        add(f"Expanding and collecting terms, the condition becomes ${k}{v} {OPS[op][0]} {k * b}$. "
            f"So the answer is $\\boxed{{{k}{v} {OPS[op][0]} {k * b}}}$.", gold)
        add(boxed(rng, f"-{v} {OPS[FLIP[op]][0]} {-b}", "Moving the variable to the right-hand side, we obtain"), gold)
    for op in ["gt", "le"]:
        v, b = "x", rng.randint(1, 9)
        gold = rel(v, op, b, OPS[op][0])
        add(boxed(rng, f"-{v} {OPS[op][0]} {-b}", "Multiplying both sides by $-1$,"), gold)
    add(boxed(rng, "2x > 4", "Subtracting 3 from both sides of $2x + 3 > 7$ gives"), "x > 2")
    add(boxed(rng, "5 \\leq m", "The mass must be at least 5, so"), "m \\geq 5")
    add(boxed(rng, "m \\geq 5", "The mass must be at least 5, so"), "m \\geq 5")
    add(boxed(rng, "-x > -1", "Rearranging $3 - x > 2$, we get"), "x < 1")
    # (d) double inequalities
    for lo, hi, v in [(-3, 2, "x"), (1, 6, "t"), (-5, -1, "x")]:
        gold = f"{lo} < {v} < {hi}"
        lead = f"The quadratic is negative strictly between its roots ${lo}$ and ${hi}$, so"
        add(boxed(rng, f"{lo} \\lt {v} \\lt {hi}", lead), gold)
        add(boxed(rng, f"{hi} > {v} > {lo}", lead), gold)
        add(boxed(rng, f"{lo} \\leq {v} < {hi}", lead), gold)
        add(boxed(rng, f"{lo} < {v} < {hi + 1}", lead), gold)
    lo, hi = -2, 5
    add(boxed(rng, f"({lo}, {hi})", "The quadratic is negative strictly between its roots, so the solution set is"),
        f"{lo} < x < {hi}")
    add(boxed(rng, f"x \\in ({lo}, {hi})", "So the inequality holds for"), f"{lo} < x < {hi}")
    add(boxed(rng, f"[{lo}, {hi}]", "So the solution set is"), f"{lo} < x < {hi}")
    add(boxed(rng, "-3 \\le x \\le 3", "Since $|x| \\le 3$, we get"), "-3 \\leq x \\leq 3")
    add(boxed(rng, "|x| \\le 3", "The condition on $x$ is"), "-3 \\leq x \\leq 3")
    # (e) a relation as gold, an interval as the response
    for op, iv in [("ge", "[{b}, \\infty)"), ("gt", "({b}, \\infty)"), ("le", "(-\\infty, {b}]"),
                   ("lt", "(-\\infty, {b})")]:
        b = rng.randint(-4, 12)
        gold = rel("x", op, b, OPS[op][0])
        add(boxed(rng, iv.format(b=b), "In interval notation, the solution set is"), gold)
        add(boxed(rng, "x \\in " + iv.format(b=b), "Therefore the solution is"), gold)
        wrong = {"ge": "({b}, \\infty)", "gt": "[{b}, \\infty)", "le": "(-\\infty, {b})", "lt": "({b}, \\infty)"}[op]
        add(boxed(rng, wrong.format(b=b), "In interval notation, the solution set is"), gold)
    add(boxed(rng, "(-\\infty, 3) \\cup (3, \\infty)", "So $x$ can be any real number except 3:"), "x \\neq 3")
    # (f) near misses that must be false: strictness changed, direction flipped, bound changed
    for op in ["ge", "le", "gt", "lt", "ge"]:
        v, b = choice(rng, REL_VARS), rng.randint(-9, 15)
        gold = rel(v, op, b, OPS[op][0])
        add(boxed(rng, rel(v, STRICT_SWAP[op], b), choice(rng, REL_LEADS)), gold)
        add(boxed(rng, rel(v, FLIP[op], b), choice(rng, REL_LEADS)), gold)
        add(boxed(rng, rel(v, op, b + choice(rng, [-1, 1, 2])), choice(rng, REL_LEADS)), gold)
    for v, b in [("x", 2), ("y", 0)]:
        lead = "The denominator vanishes only at one point, so the restriction is"
        add(boxed(rng, rel(v, "ne", b + 1), lead), rel(v, "ne", b, "\\neq"))
        add(boxed(rng, rel(v, "ne", b), lead), rel(v, "ne", b, "\\neq"))
    add(boxed(rng, "y \\geq 5", "Solving for the unknown, we find"), "x \\geq 5")
    add(boxed(rng, "x = 5", "The boundary case gives"), "x \\geq 5")
    # relations in prose answers
    add("Since $3x - 7 \\ge 8$, adding 7 gives $3x \\ge 15$, so $x \\ge 5$.\n" + MINERVA.format("x \\ge 5"),
        "x \\geq 5")
    add("Since $3x - 7 \\ge 8$, adding 7 gives $3x \\ge 15$, so $x \\ge 5$.\n" + MINERVA.format("x > 5"),
        "x \\geq 5")
    add("Dividing both sides by $-2$ reverses the inequality, so the answer is $x < -4$.", "x < -4")
    add("Dividing both sides by $-2$, the answer is $x > -4$.", "x < -4")
    return out


# ----------------------------------------------------------------------------------------------------------------
# 2. equation: equations as answers
# ----------------------------------------------------------------------------------------------------------------

LINE_LEADS = [
    "Using the point-slope form and clearing denominators, the equation of the line is",
    "The line passes through both points, so after simplifying we get",
    "Substituting the slope and the point of tangency, the tangent line is",
    "The slope is the negative reciprocal of the given slope. Rearranging into standard form, the line is",
]
PLANE_LEADS = [
    "The normal vector is the cross product of the two direction vectors, so the plane is",
    "Plugging in the given point to find the constant term, the equation of the plane is",
    "Taking the normal vector and the given point, we get the plane",
]


def gen_equation(rng):
    out = []

    def add(resp, ref):
        out.append(("equation", resp, ref, "answer"))

    # (a) lines ax + by + c = 0 in different forms
    for _ in range(4):
        a, b, c = rng.choice([1, 2, 3, 4, -2, 5]), rng.choice([1, 2, 3, 4, -3]), rng.randint(-9, 9) or 7
        gold = lin([a, b, c], ["x", "y", ""]) + "=0"
        k = rng.choice([2, 3, -1, -2])
        scaled = lin([k * a, k * b, k * c], ["x", "y", ""], spaced=True) + " = 0"
        slope = lin([Fraction(-a, b), Fraction(-c, b)], ["x", ""])
        add(boxed(rng, scaled, choice(rng, LINE_LEADS)), gold)
        add(boxed(rng, "y = " + slope, "Solving for $y$, the line is"), gold)
        add(boxed(rng, lin([a, b], ["x", "y"]) + f" = {-c}", choice(rng, LINE_LEADS)), gold)
        # false: changed constant, changed coefficient, scaled by a variable
        add(boxed(rng, lin([a, b, c + choice(rng, [1, -1, 2])], ["x", "y", ""]) + "=0", choice(rng, LINE_LEADS)),
            gold)
        add(boxed(rng, lin([a + 1, b, c], ["x", "y", ""]) + "=0", choice(rng, LINE_LEADS)), gold)
        add(boxed(rng, "x(" + lin([a, b, c], ["x", "y", ""]) + ")=0", "Factoring out $x$ from the equation, we get"),
            gold)
    add(boxed(rng, "y = -\\frac{1}{2}x + \\frac{3}{4}", "Solving for $y$, the line is"), "2x+4y-3=0")
    add(boxed(rng, "y = \\frac{1}{2}x + \\frac{3}{4}", "Solving for $y$, the line is"), "2x+4y-3=0")
    add(boxed(rng, "x + 2y = \\frac{3}{2}", "Dividing through by 2, the line is"), "2x+4y-3=0")
    add(boxed(rng, "2a+4b-3=0", "In terms of the unknowns $a$ and $b$, the relation is"), "2x+4y-3=0")
    add(boxed(rng, "2x-y+1=0", "Moving every term to the left, the line is"), "y = 2x+1")
    add(boxed(rng, "2x-y-1=0", "Moving every term to the left, the line is"), "y = 2x+1")
    add(boxed(rng, "y = 2x", "The line through the origin with slope 2 is"), "y = 2x+1")
    # (b) planes
    for _ in range(3):
        a, b, c, d = rng.randint(-40, 40) or 3, rng.randint(-40, 40) or 5, rng.randint(-30, 30) or 2, \
            rng.randint(-100, 100)
        gold = lin([a, b, c, d], ["x", "y", "z", ""]) + "=0"
        add(boxed(rng, lin([-a, -b, -c, -d], ["x", "y", "z", ""], spaced=True) + " = 0", choice(rng, PLANE_LEADS)),
            gold)
        add(boxed(rng, lin([a, b, c], ["x", "y", "z"]) + f" = {-d}", choice(rng, PLANE_LEADS)), gold)
        add(boxed(rng, lin([a, b, -c, d], ["x", "y", "z", ""]) + "=0", choice(rng, PLANE_LEADS)), gold)
    add(boxed(rng, "34x+45y-20z+100=0", "Multiplying through by $-1$, the plane is"), "-34x-45y+20z-100=0")
    add(boxed(rng, "34x+45y-20z-100=0", "Multiplying through by $-1$, the plane is"), "-34x-45y+20z-100=0")
    add(boxed(rng, "2x - y + 3z = 8", "The plane through the three points is"), "4x-2y+6z-16=0")
    # (c) circles, expanded or not
    for h, k, r in [(2, -5, 3), (-3, 1, 4), (4, 4, 2)]:
        gold = f"(x{-h:+d})^2+(y{-k:+d})^2={r * r}"
        expanded = lin([1, 1, -2 * h, -2 * k, h * h + k * k - r * r], ["x^2", "y^2", "x", "y", ""]) + "=0"
        add(boxed(rng, expanded, "Expanding the squares, the circle is"), gold)
        add(boxed(rng, f"(x{-h:+d})^2+(y{-k:+d})^2={r}^2", "Completing the square, the equation is"), gold)
        add(boxed(rng, f"(x{h:+d})^2+(y{-k:+d})^2={r * r}", "Completing the square, the equation is"), gold)
        add(boxed(rng, f"(x{-h:+d})^2+(y{-k:+d})^2={r}", "The center and the radius are known, so the circle is"),
            gold)
    # (d) chains and approximations: the last side is the answer
    for _ in range(3):
        a, b, c = rng.randint(2, 30), rng.randint(2, 30), rng.randint(1, 9)
        s = a + b + c
        add(boxed(rng, f"x = {a}+{b}+{c} = {s}", "Adding up the three parts,"), str(s))
        add(boxed(rng, f"x = {a}+{b}+{c} = {s + 1}", "Adding up the three parts,"), str(s))
    for v in [11, 27, 3]:
        add(boxed(rng, f"x \\approx {v}", "Using Newton's method, the root is approximately"), str(v))
        add(boxed(rng, f"x \\approx {v}.4", "Using Newton's method, the root is approximately"), str(v))
    add(boxed(rng, "T = 2\\cdot 6 + 3 = 15", "Counting both kinds of tiles,"), "15")
    add(boxed(rng, "n = \\frac{120}{8} = 15", "Dividing the total by the group size,"), "15")
    # (e) f(x) = ... answers
    for _ in range(3):
        a, b = rng.randint(2, 7), rng.randint(-9, 9) or 4
        gold = lin([a, b], ["x", ""])
        add(boxed(rng, "f(x) = " + lin([a, b], ["x", ""], spaced=True), "Matching coefficients, we find"), gold)
        add(boxed(rng, "f(x) = " + lin([b, a], ["", "x"]), "Matching coefficients, we find"), gold)
        add(boxed(rng, "f(x) = " + lin([a, -b], ["x", ""]), "Matching coefficients, we find"), gold)
    add(boxed(rng, "g^{-1}(x) = \\frac{x-3}{2}", "Swapping $x$ and $y$ and solving for $y$,"), "\\frac{x-3}{2}")
    add(boxed(rng, "p(x) = x^2 - 5x + 6", "By Vieta's formulas, the monic quadratic is"), "p(x) = (x-2)(x-3)")
    add(boxed(rng, "p(x) = x^2 - 5x - 6", "By Vieta's formulas, the monic quadratic is"), "p(x) = (x-2)(x-3)")
    # (f) a different variable
    add(boxed(rng, "y = 5", "Solving the system by elimination,"), "x = 5")
    add(boxed(rng, "x + 2z = 4", "Eliminating the third variable, we get"), "x + 2y = 4")
    add(boxed(rng, "t = 3", "The ball hits the ground when"), "3")
    return out


# ----------------------------------------------------------------------------------------------------------------
# 3. matrix
# ----------------------------------------------------------------------------------------------------------------

MAT_LEADS = [
    "Multiplying the two matrices, row by column, gives",
    "Using the formula for the inverse, we swap the diagonal entries, negate the others and divide by the determinant.",
    "Applying the transformation to the standard basis vectors, we read off the columns.",
    "Computing each entry of the product separately, we obtain",
    "Thus the matrix is",
    "Solving the four linear equations for the entries,",
]


def rand_matrix(rng, r, c, lo=-9, hi=9):
    return [[rng.randint(lo, hi) for _ in range(c)] for _ in range(r)]


def gen_matrix(rng):
    out = []

    def add(resp, ref):
        out.append(("matrix", resp, ref, "answer"))

    envs = ["pmatrix", "bmatrix", "array", "matrix", "array_paren"]
    for i in range(10):
        shape = choice(rng, [(2, 2), (2, 2), (3, 3), (2, 3), (3, 1), (2, 1)])
        m = rand_matrix(rng, *shape)
        gold = matrix_tex(m, "pmatrix")
        env = envs[i % len(envs)]
        sep = choice(rng, [" \\\\ ", "\\\\", " \\\\\n"])
        amp = choice(rng, [" & ", "&"])
        add(boxed(rng, matrix_tex(m, env, sep=sep, amp=amp), choice(rng, MAT_LEADS)), gold)
        # one entry changed
        m2 = [row[:] for row in m]
        ri, ci = rng.randrange(shape[0]), rng.randrange(shape[1])
        m2[ri][ci] += choice(rng, [1, -1, 2])
        add(boxed(rng, matrix_tex(m2, env), choice(rng, MAT_LEADS)), gold)
        # a sign flipped
        m3 = [row[:] for row in m]
        nz = [(a, b) for a in range(shape[0]) for b in range(shape[1]) if m[a][b] != 0]
        a, b = choice(rng, nz)
        m3[a][b] = -m3[a][b]
        if i % 2 == 0:
            add(boxed(rng, matrix_tex(m3, "bmatrix"), choice(rng, MAT_LEADS)), gold)
        # transposed (another shape when not square)
        mt = [list(r) for r in zip(*m)]
        if mt != m and i % 3 == 0:
            add(boxed(rng, matrix_tex(mt, env), choice(rng, MAT_LEADS)), gold)
    # entries as fractions / decimals / expressions
    for _ in range(5):
        q = [[Fraction(rng.randint(-9, 9), choice(rng, [2, 4, 5, 8])) for _ in range(2)] for _ in range(2)]
        gold = matrix_tex(q, "pmatrix", fmt=lambda e: frac_tex(e))
        dec = matrix_tex(q, "bmatrix", fmt=lambda e: ("%g" % float(e)))
        add(boxed(rng, dec, "Writing the entries as decimals, the inverse is"), gold)
        dfr = matrix_tex(q, "pmatrix", fmt=lambda e: frac_tex(e, "dfrac"))
        add(boxed(rng, dfr, "Dividing the adjugate by the determinant, the inverse is"), gold)
        q2 = [row[:] for row in q]
        q2[1][0] = q2[1][0] + Fraction(1, 2)
        add(boxed(rng, matrix_tex(q2, "pmatrix", fmt=lambda e: ("%g" % float(e))),
                  "Writing the entries as decimals, the inverse is"), gold)
    rot = ("\\begin{pmatrix} \\frac{\\sqrt{2}}{2} & -\\frac{\\sqrt{2}}{2} \\\\ \\frac{\\sqrt{2}}{2} & "
           "\\frac{\\sqrt{2}}{2} \\end{pmatrix}")
    lead = "A rotation by $45^\\circ$ counterclockwise has matrix"
    add(boxed(rng, "\\begin{pmatrix} \\sqrt{2}/2 & -\\sqrt{2}/2 \\\\ \\sqrt{2}/2 & \\sqrt{2}/2 \\end{pmatrix}", lead),
        rot)
    add(boxed(rng, "\\begin{pmatrix} 1/\\sqrt{2} & -1/\\sqrt{2} \\\\ 1/\\sqrt{2} & 1/\\sqrt{2} \\end{pmatrix}", lead),
        rot)
    add(boxed(rng, "\\begin{pmatrix} \\frac{\\sqrt{2}}{2} & \\frac{\\sqrt{2}}{2} \\\\ -\\frac{\\sqrt{2}}{2} & "
                   "\\frac{\\sqrt{2}}{2} \\end{pmatrix}", lead), rot)
    add(boxed(rng, "\\begin{pmatrix} \\cos 45^\\circ & -\\sin 45^\\circ \\\\ \\sin 45^\\circ & \\cos 45^\\circ "
                   "\\end{pmatrix}", lead), rot)
    half = "\\begin{pmatrix} \\frac{1}{2} & 0 \\\\ 0 & \\frac{1}{2} \\end{pmatrix}"
    add(boxed(rng, "\\begin{pmatrix} 0.5 & 0 \\\\ 0 & 0.5 \\end{pmatrix}", "A dilation by one half has matrix"), half)
    add(boxed(rng, "\\frac{1}{2}\\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}", "A dilation by one half has matrix"),
        half)
    add(boxed(rng, "\\begin{pmatrix} 2a & b \\\\ 0 & a+b \\end{pmatrix}", "In terms of $a$ and $b$, the product is"),
        "\\begin{pmatrix} a+a & b \\\\ 0 & b+a \\end{pmatrix}")
    add(boxed(rng, "\\begin{pmatrix} 2a & b \\\\ 0 & a-b \\end{pmatrix}", "In terms of $a$ and $b$, the product is"),
        "\\begin{pmatrix} 2a & b \\\\ 0 & a+b \\end{pmatrix}")
    # column vectors vs rows and other shapes
    gv = "\\begin{pmatrix} 3 \\\\ -1 \\\\ 4 \\end{pmatrix}"
    lead = "The projection of $\\mathbf{v}$ onto $\\mathbf{w}$ is"
    add(boxed(rng, "\\begin{pmatrix}3\\\\-1\\\\4\\end{pmatrix}", lead), gv)
    add(boxed(rng, "\\left(\\begin{array}{c} 3 \\\\ -1 \\\\ 4 \\end{array}\\right)", lead), gv)
    add(boxed(rng, "\\begin{pmatrix} 3 & -1 & 4 \\end{pmatrix}", lead), gv)
    add(boxed(rng, "\\begin{pmatrix}3\\\\1\\\\4\\end{pmatrix}", lead), gv)
    add(boxed(rng, "\\begin{pmatrix}3\\\\-1\\end{pmatrix}", lead), gv)
    g23 = "\\begin{pmatrix} 1 & 2 & 3 \\\\ 4 & 5 & 6 \\end{pmatrix}"
    add(boxed(rng, "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\\\ 5 & 6 \\end{pmatrix}", "The product is"), g23)
    add(boxed(rng, "\\begin{bmatrix} 1 & 2 & 3 \\\\ 4 & 5 & 6 \\end{bmatrix}", "The product is"), g23)
    add(boxed(rng, "\\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}", "The product is the identity:"),
        "\\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}")
    add(boxed(rng, "\\begin{pmatrix} 0 & 0 \\\\ 0 & 0 \\end{pmatrix}",
              "The determinant is zero, so the inverse does not exist and we enter the zero matrix:"),
        "\\begin{pmatrix} 0 & 0 \\\\ 0 & 0 \\end{pmatrix}")
    add(boxed(rng, "\\begin{pmatrix} 0 & 0 \\\\ 0 & 0 \\end{pmatrix}",
              "The determinant is zero, so the inverse does not exist and we enter the zero matrix:"),
        "\\begin{pmatrix} 0 & 0 \\\\ 0 & 1 \\end{pmatrix}")
    return out


# ----------------------------------------------------------------------------------------------------------------
# 4. latex_forms
# ----------------------------------------------------------------------------------------------------------------


def gen_latex_forms(rng):
    out = []

    def add(resp, ref):
        out.append(("latex_forms", resp, ref, "answer"))

    # \cfrac, \dfrac, \tfrac; bare \frac in prose
    for style in ["cfrac", "dfrac", "tfrac", "dfrac", "tfrac"]:
        d = rng.randint(3, 13)
        n = rng.randint(1, d - 1)
        q = Fraction(n, d)
        if q.denominator == 1 or q.numerator == 1 and q.denominator == 2:
            q = Fraction(5, 7)
        gold = frac_tex(q)
        lead = (f"Of the ${q.denominator}$ equally likely outcomes, ${q.numerator}$ "
                f"{'is' if q.numerator == 1 else 'are'} favorable.")
        add(boxed(rng, f"\\{style}{{{q.numerator}}}{{{q.denominator}}}", lead), gold)
        add(boxed(rng, f"\\{style}{{{q.denominator}}}{{{q.numerator}}}" if q.numerator > 1
                  else f"\\{style}{{{q.numerator}}}{{{q.denominator + 1}}}", lead), gold)
    add("Together the two bags give \\frac{10}{9} of the original amount, so the ratio is \\frac{10}{9}.",
        "\\frac{10}{9}")
    add("Together the two bags give \\frac{10}{9} of the original amount, so the ratio is \\frac{9}{10}.",
        "\\frac{10}{9}")
    add("Dividing the favorable cases by the total, the answer is \\dfrac{5}{12}.", "\\frac{5}{12}")
    add("Dividing the favorable cases by the total, the answer is \\dfrac{5}{12}.", "\\frac{7}{12}")
    add("The probability is \\tfrac{1}{6} for each face, so the answer is \\tfrac{1}{6}.", "\\frac{1}{6}")
    add("The continued fraction evaluates to $\\boxed{1+\\cfrac{1}{2+\\cfrac{1}{2}}}$.", "\\frac{7}{5}")
    add("The continued fraction evaluates to $\\boxed{1+\\cfrac{1}{2+\\cfrac{1}{2}}}$.", "\\frac{5}{3}")
    # units in \text / \textnormal / \mbox
    unit_forms = [("\\text{ cm}", "The side of the square is"), ("\\textnormal{ miles}", "The car travels"),
                  ("\\mbox{ dollars}", "In total she spends"), ("\\text{ square units}", "The area of the region is"),
                  ("\\text{ cm}^2", "The area of the triangle is"), ("\\ \\text{meters}", "The height of the tower is"),
                  ("\\textnormal{ km/h}", "The average speed is")]
    for u, lead in unit_forms:
        v = rng.randint(5, 400)
        add(f"{lead} $\\boxed{{{v}{u}}}$.", str(v))
        add(f"{lead} $\\boxed{{{v + 1}{u}}}$.", str(v))
    add("At 50 miles per hour for 2.5 hours, the car covers $125\\textnormal{ miles}$.", "125")
    add("The total distance is $\\boxed{125\\text{ miles}}$.", "126")
    add("The area is $\\boxed{12 \\text{ cm}^2}$.", "12 \\text{ cm}^2")
    # \left( \right) tuples
    for _ in range(3):
        a, b = rng.randint(-9, 9), rng.randint(-9, 9)
        if a == b:
            b += 3
        add(boxed(rng, f"\\left( {a}, {b} \\right)", "Solving the system, the intersection point is"), f"({a},{b})")
        add(boxed(rng, f"\\left( {b}, {a} \\right)", "Solving the system, the intersection point is"), f"({a},{b})")
    add(boxed(rng, "\\left( \\frac{1}{2}, -\\frac{3}{2} \\right)", "Averaging the coordinates, the midpoint is"),
        "(0.5,-1.5)")
    add(boxed(rng, "\\left( 3, \\frac{\\pi}{2} \\right)", "In polar coordinates the point is"),
        "(3, \\frac{\\pi}{2})")
    add(boxed(rng, "\\left( 3, \\frac{\\pi}{3} \\right)", "In polar coordinates the point is"),
        "\\left( 3, \\frac{\\pi}{2} \\right)")
    # doubled backslashes, as in JSON-escaped text
    add("There are 2 favorable outcomes out of 4, so the probability is $\\\\frac{1}{2}$.", "\\frac{1}{2}")
    add("There are 2 favorable outcomes out of 4, so the probability is $\\\\boxed{\\\\frac{1}{2}}$.", "\\frac{1}{2}")
    add("There are 2 favorable outcomes out of 6, so the probability is $\\\\boxed{\\\\frac{1}{3}}$.", "\\frac{1}{2}")
    add("The height of the equilateral triangle is $\\\\boxed{2\\\\sqrt{3}}$.", "2\\sqrt{3}")
    add("The height of the equilateral triangle is $\\\\boxed{2\\\\sqrt{2}}$.", "2\\sqrt{3}")
    add("Therefore $\\\\boxed{\\\\dfrac{3}{4}}$.", "0.75")
    add("The answer is \\\\(\\\\frac{7}{8}\\\\).", "\\frac{7}{8}")
    add("The answer is \\\\(\\\\frac{7}{8}\\\\).", "\\frac{8}{7}")
    # trig / log identities and radicals that need symbolic equivalence
    trig = ("Using the identities $\\sin^2 x + \\cos^2 x = 1$ and $\\tan x = \\frac{\\sin x}{\\cos x}$, "
            "the expression simplifies to")
    logs = "Using the laws of logarithms, the expression equals"
    rads = "Pulling the perfect square out of the radical, the length is"
    pairs = [
        (trig, "\\sec^2(y)", "\\tan^2(y)+1", "\\tan^2(y)-1"),
        (trig, "1", "\\sin^2 x + \\cos^2 x", "\\sin^2 x - \\cos^2 x"),
        ("By the double-angle formula, the expression is", "\\sin 2x", "2\\sin x\\cos x", "\\sin x\\cos x"),
        ("By the double-angle formula, the expression is", "\\cos 2x", "\\cos^2 x - \\sin^2 x",
         "\\cos^2 x + \\sin^2 x"),
        (logs, "3", "\\log_2 8", "\\log_2 6"),
        (logs, "2", "\\ln(e^2)", "\\ln 2"),
        (rads, "2\\sqrt{2}", "\\sqrt{8}", "\\sqrt{6}"),
        (rads, "3\\sqrt{3}", "\\sqrt{27}", "\\sqrt{24}"),
        ("The height of the triangle is its side times the sine of the base angle, which is",
         "\\frac{\\sqrt{3}}{2}", "\\sin 60^\\circ", "\\cos 60^\\circ"),
        ("Evaluating at the given angle, the value is", "\\frac{1}{2}", "\\cos\\frac{\\pi}{3}", "\\sin\\frac{\\pi}{3}"),
        (trig, "\\tan x", "\\frac{\\sin x}{\\cos x}", "\\frac{\\cos x}{\\sin x}"),
        (logs, "2", "\\log_3 9", "\\log_9 3"),
        ("The angle swept is three quarters of a full turn, which is", "\\frac{3\\pi}{2}", "1.5\\pi",
         "\\frac{2\\pi}{3}"),
        ("The principal value of the angle is", "\\frac{\\pi}{6}", "\\arcsin\\frac{1}{2}", "\\arccos\\frac{1}{2}"),
        ("Squaring the exponential, we get", "e^{2x}", "(e^x)^2", "e^{x^2}"),
        (logs, "\\ln 6", "\\ln 2 + \\ln 3", "\\ln 2 \\cdot \\ln 3"),
    ]
    for lead, gold, eq, ne in pairs:
        add(boxed(rng, eq, lead), gold)
        add(boxed(rng, ne, lead), gold)
    # degrees and percent
    for v in [30, 150, 72]:
        add(f"The three angles sum to $180^\\circ$, so the missing angle is $\\boxed{{{v}^\\circ}}$.", str(v))
        add(f"Since the angles are supplementary, the missing angle is $\\boxed{{{v}^{{\\circ}}}}$.", f"{v}^\\circ")
        add(f"Since the angles are supplementary, the missing angle is $\\boxed{{{v + 10}^\\circ}}$.", str(v))
    add("The angle is $\\boxed{30^\\circ}$.", "\\frac{\\pi}{6}")
    add("In radians, the angle is $\\boxed{\\frac{\\pi}{6}}$.", "30")
    for p in [15, 40, 62.5]:
        add(f"Dividing the part by the whole and multiplying by 100, we get $\\boxed{{{p}\\%}}$.", f"{p}")
        add(f"Dividing the part by the whole and multiplying by 100, we get $\\boxed{{{p}\\%}}$.", f"{p}\\%")
        add(f"Dividing the part by the whole and multiplying by 100, we get $\\boxed{{{p + 5}\\%}}$.", f"{p}\\%")
    add("As a decimal, the rate is $\\boxed{0.15}$.", "15\\%")
    add("The price went up by $\\boxed{15}$ percent.", "15\\%")
    # pi multiples
    for k in [3, 8]:
        add(f"The area of the circle is $\\boxed{{{k}\\pi}}$ square units.", f"{k} \\pi")
        add(f"The area of the sector is $\\boxed{{\\pi \\cdot {k}}}$.", f"{k}\\pi")
        add(f"The area of the circle is $\\boxed{{{k * 2}\\pi}}$.", f"{k}\\pi")
    return out


# ----------------------------------------------------------------------------------------------------------------
# 5. prose: no \boxed{}
# ----------------------------------------------------------------------------------------------------------------

NAMES = ["Tom", "Maria", "Aisha", "Kenji", "Lucas", "Priya", "Omar", "Sofia", "Ben", "Elena"]
ITEMS = [("marbles", "bag", "bags"), ("stickers", "sheet", "sheets"), ("cookies", "box", "boxes"),
         ("pencils", "pack", "packs"), ("apples", "crate", "crates"), ("cards", "deck", "decks")]


def word_problem(rng):
    name = choice(rng, NAMES)
    item, cont, conts = choice(rng, ITEMS)
    a, b, c, d = rng.randint(3, 40), rng.randint(2, 9), rng.randint(4, 24), rng.randint(1, 15)
    bought = b * c
    total = a + bought - d
    text = (f"{name} starts with {a} {item} and buys {b} {conts} with {c} {item} in each {cont}. "
            f"That is {b} * {c} = {bought} new {item}, so {name} has {a} + {bought} = {a + bought}. "
            f"After giving {d} away, {name} has {a + bought} - {d} = {total} {item}.")
    return text, total, item


def gen_prose(rng):
    out = []

    def add(resp, ref):
        out.append(("prose", resp, ref, "answer"))

    # the last math span is the answer
    for _ in range(4):
        a, b = rng.randint(-9, 12), rng.randint(-9, 12)
        if a == b:
            b += 2
        resp = (f"Adding the two equations gives $2x = {2 * a}$, so $x = {a}$. Substituting back, $y = {b}$. "
                f"Therefore, the ordered pair is $({a}, {b})$.")
        add(resp, f"({a},{b})")
        add(resp, f"({b},{a})")
    # Minerva format
    for _ in range(4):
        dd = rng.randint(5, 21)
        n = rng.randint(1, dd - 1)
        q = Fraction(n, dd)
        resp = (f"There are {q.denominator} equally likely outcomes and {q.numerator} of them "
                f"{'is' if q.numerator == 1 else 'are'} favorable.\n"
                + MINERVA.format(frac_tex(q)))
        add(resp, frac_tex(q))
        add(resp, frac_tex(q + Fraction(1, q.denominator)))
    # **Answer:** X / Answer: X / "the final answer is"
    for tmpl in ["**Answer:** {a}", "Answer: {a}", "The final answer is {a}.", "So the final answer is ${a}$.",
                 "**Final Answer:** ${a}$", "The answer is: {a}"]:
        pairs, left = rng.randint(5, 200), rng.randint(0, 1)
        v = 2 * pairs + left
        lead = f"We count {pairs} pairs and {left} left over, giving {v} in total.\n"
        add(lead + tmpl.format(a=v), str(v))
        add(lead + tmpl.format(a=v), str(v + 3))
    # text after the answer
    for _ in range(3):
        text, total, item = word_problem(rng)
        who = choice(rng, NAMES)
        add(f"Putting it all together, the number of {item} left is ${total}$, which is the number of {item} "
            f"{who} still has.", str(total))
        add(f"Putting it all together, the number of {item} left is ${total}$, which is the number of {item} "
            f"{who} still has.", str(total + 2))
    # the last plain number in a word problem
    for _ in range(6):
        text, total, _ = word_problem(rng)
        add(text, str(total))
        add(text, str(total + choice(rng, [1, -1, 10])))
    # \( \) and \[ \] displays
    for r in [3, 5, 7]:
        add(f"The area of a circle of radius {r} is \\(\\pi r^2\\), so the area is \\({r * r}\\pi\\).", f"{r * r}\\pi")
        add(f"The area of a circle of radius {r} is \\(\\pi r^2\\), so the area is \\({r * r}\\pi\\).", f"{2 * r}\\pi")
    for r in [3, 6]:
        v = Fraction(4, 3) * r ** 3
        vol = frac_tex(v)
        add(f"The volume of the sphere is\n\\[\nV = \\frac{{4}}{{3}}\\pi r^3 = {vol}\\pi\n\\]", f"{vol}\\pi")
        add(f"The volume of the sphere is\n\\[\nV = \\frac{{4}}{{3}}\\pi r^3 = {vol}\\pi.\n\\]", f"{vol}\\pi")
        add(f"The volume of the sphere is\n\\[\nV = \\frac{{4}}{{3}}\\pi r^3 = {vol}\\pi.\n\\]", vol)
    # several boxes in one response
    add("The equation factors as $(x-2)(x-3)=0$, so $x = \\boxed{2}$ or $x = \\boxed{3}$.", "2, 3")
    add("The equation factors as $(x-2)(x-3)=0$, so the solutions are $\\boxed{2}$ and $\\boxed{3}$.", "2, 3")
    add("The equation factors as $(x-2)(x-3)=0$, so the solutions are $\\boxed{2}$ and $\\boxed{3}$.", "3")
    add("The equation factors as $(x-2)(x+3)=0$, so the solutions are $\\boxed{2}$ and $\\boxed{-3}$.", "2, 3")
    for _ in range(3):
        v = rng.randint(10, 99)
        resp = (f"My first count gives $\\boxed{{{v + 4}}}$. Wait, I counted the four corners twice, so subtracting "
                f"them gives the corrected total $\\boxed{{{v}}}$.")
        add(resp, str(v))
        add(resp, str(v + 4))
    # the last math is not the answer
    add("The answer is $42$. To check: $6 \\cdot 7 = 42$ and $42 / 2 = 21$.", "42")
    add("So there are $15$ handshakes in total, since each of the $6$ people shakes hands with $5$ others.", "15")
    add("The maximum value is $9$, attained when $x = 3$.", "9")
    add("The minimum value is $-4$, and it occurs at $x = 2$.", "-4")
    add("Therefore $a = 7$. We can verify this by plugging in: $7 + 3 = 10$.", "7")
    # sets, intervals and fractions in prose
    add("Solving, the roots are \\(x = -1\\) and \\(x = 4\\), so the solution set is \\(\\{-1, 4\\}\\).",
        "\\{-1, 4\\}")
    add("Solving, the roots are \\(x = -1\\) and \\(x = 4\\), so the solution set is \\(\\{-1, 4\\}\\).",
        "\\{1, 4\\}")
    add("The derivative is positive for $x > 2$, so $f$ is increasing on $(2, \\infty)$.", "(2,\\infty)")
    add("The derivative is positive for $x > 2$, so $f$ is increasing on $(2, \\infty)$.", "[2,\\infty)")
    add("Thus the slope is \\[m = \\frac{7-1}{5-2} = 2\\]", "2")
    add("Thus the slope is \\[m = \\frac{7-1}{5-2} = 2\\]", "3")
    add("I'm not able to determine the value from the given information.", "12")
    add("The remainder is 4 when 100 is divided by 6, so the day is Thursday.", "4")
    add("So the answer is 42 apples.", "42")
    # "The answer is" on its own line, GSM8K "####"
    for _ in range(3):
        a, b = rng.randint(2, 12), rng.randint(2, 12)
        resp = (f"Each row has {a} seats and there are {b} rows, so there are {a} x {b} = {a * b} seats.\n"
                f"The answer is {a * b}.")
        add(resp, str(a * b))
        add(resp, str(a * b + a))
    add("She sells the remaining 9 eggs for $2 each.\n#### 18", "18")
    add("She makes 9 * 2 = 18 dollars per day.\n#### 18", "16")
    return out


# ----------------------------------------------------------------------------------------------------------------
# 6. gold_extract: references that need extraction (whole solutions, "The answer is ...", "$x=5$")
# ----------------------------------------------------------------------------------------------------------------


def math_problems(rng):
    """MATH-style `solution` texts ending in \\boxed{ans}, with correct answer forms and plausible wrong answers."""
    probs = []
    # arithmetic series
    a, d, n = rng.randint(1, 9), rng.randint(2, 7), rng.randint(10, 30)
    if (n * (2 * a + (n - 1) * d)) % 2:
        n += 1
    last = a + (n - 1) * d
    s = n * (a + last) // 2
    probs.append((f"The sequence has first term ${a}$ and common difference ${d}$, so the ${n}$th term is "
                  f"${a} + {n - 1} \\cdot {d} = {last}$. The sum of an arithmetic series equals the number of terms "
                  f"times the average of the first and last terms, so the sum is $\\frac{{{n}({a}+{last})}}{{2}} = "
                  f"\\boxed{{{s}}}$.", [str(s), f"{s:,}"], [str(s + last), str(last)]))
    # probability
    m = rng.randint(6, 12)
    k = rng.randint(1, m - 1)
    q = Fraction(k, m)
    probs.append((f"There are ${m}$ equally likely outcomes, and ${k}$ of them are favorable. Hence the probability is "
                  f"$\\boxed{{{frac_tex(q)}}}$.",
                  [frac_tex(q, "dfrac"), frac_tex(q, "slash")], [frac_tex(1 - q) if q != Fraction(1, 2) else "1",
                                                                  frac_tex(Fraction(k, m + 1))]))
    # quadratic roots
    r1, r2 = rng.randint(-8, -1), rng.randint(1, 8)
    bq, cq = -(r1 + r2), r1 * r2
    poly = lin([1, bq, cq], ["x^2", "x", ""])
    probs.append((f"We factor ${poly} = (x{-r1:+d})(x{-r2:+d})$. Setting each factor equal to zero gives $x = {r1}$ "
                  f"or $x = {r2}$. The solutions are $\\boxed{{{r1}, {r2}}}$.",
                  [f"{r2}, {r1}", f"x = {r1}, {r2}"], [f"{-r1}, {-r2}", str(r2)]))
    # circle area
    r = rng.randint(2, 9)
    probs.append((f"The diameter is ${2 * r}$, so the radius is ${r}$. The area is $\\pi r^2 = \\pi \\cdot {r}^2 = "
                  f"\\boxed{{{r * r}\\pi}}$.", [f"{r * r}\\pi", f"{r * r} \\pi"], [f"{2 * r}\\pi", str(r * r)]))
    # gcd
    g = rng.randint(3, 15)
    x1, x2 = g * rng.choice([4, 6, 9]), g * rng.choice([5, 7, 11])
    probs.append((f"By the Euclidean algorithm, $\\gcd({x1}, {x2})$ reduces step by step, and the last nonzero "
                  f"remainder is ${g}$. Therefore the greatest common divisor is $\\boxed{{{g}}}$.",
                  [str(g)], [str(2 * g), str(x1 * x2 // g)]))
    # a linear equation
    c1, xv = rng.randint(2, 9), rng.randint(-12, 12) or 5
    c2 = rng.randint(1, 20)
    probs.append((f"Subtracting ${c2}$ from both sides gives ${c1}x = {c1 * xv}$, and dividing by ${c1}$ gives "
                  f"$x = \\boxed{{{xv}}}$.", [str(xv), f"x={xv}"], [str(-xv), str(c1 * xv)]))
    # an ordered pair
    px, py = rng.randint(-6, 6), rng.randint(-6, 6)
    if px == py:
        py += 1
    probs.append((f"From the first equation, $x = {px}$. Substituting into the second equation, $y = {py}$. "
                  f"So the point of intersection is $\\boxed{{({px},{py})}}$.",
                  [f"({px}, {py})", f"\\left({px}, {py}\\right)"], [f"({py}, {px})"]))
    # simplifying a radical
    sq = rng.choice([2, 3, 5, 6, 7])
    co = rng.randint(2, 6)
    probs.append((f"We have $\\sqrt{{{co * co * sq}}} = \\sqrt{{{co * co}}}\\cdot\\sqrt{{{sq}}}$, so the length is "
                  f"$\\boxed{{{co}\\sqrt{{{sq}}}}}$.", [f"\\sqrt{{{co * co * sq}}}", f"{co} \\sqrt {sq}"],
                  [f"{co * co}\\sqrt{{{sq}}}", f"{co}\\sqrt{{{co * sq}}}"]))
    # a domain (interval)
    b = rng.randint(1, 9)
    probs.append((f"The expression under the square root must be nonnegative, so $x - {b} \\ge 0$, i.e. $x \\ge {b}$. "
                  f"The domain is $\\boxed{{[{b},\\infty)}}$.", [f"[{b}, \\infty)", f"x \\in [{b}, \\infty)"],
                  [f"({b}, \\infty)", f"[{-b}, \\infty)"]))
    # money
    price, qty = rng.randint(3, 40), rng.randint(2, 9)
    probs.append((f"Each ticket costs $\\${price}$ and {qty} tickets are bought, so the total is "
                  f"${qty} \\cdot {price} = \\boxed{{\\${qty * price}}}$.", [str(qty * price), f"\\${qty * price}"],
                  [str(qty * price + price), str(price)]))
    return probs


def gen_gold_extract(rng):
    out = []

    def add(resp, ref):
        out.append(("gold_extract", resp, ref, "extract"))

    prose_tmpls = [
        "Working through the algebra carefully, I get $<A>$ as the result.\n" + MINERVA.format("<A>"),
        "After simplifying, the answer is $<A>$.",
        "Let me recompute to double check. Everything is consistent.\n\n**Answer:** $<A>$",
    ]
    leads = ["Following the same approach as the textbook solution and simplifying,",
             "Let me set up the problem carefully. After computing each step, the result is",
             "We compute the quantity directly."]
    for rep in range(2):
        for sol, good, bad in math_problems(rng):
            add(boxed(rng, choice(rng, good), choice(rng, leads)), sol)
            add(boxed(rng, choice(rng, bad), choice(rng, leads)), sol)
            if rep == 0:
                add(choice(rng, prose_tmpls).replace("<A>", choice(rng, good)), sol)
    # short answer fields that need extraction
    short = [
        ("The answer is $\\frac{3}{4}$.", "The tank is three quarters full, so the answer is $\\boxed{0.75}$.",
         "The tank is three quarters full, so the answer is $\\boxed{\\frac{4}{3}}$."),
        ("The answer is $\\frac{3}{4}$.", "So the fraction of the tank that is full is $\\frac{3}{4}$.",
         "So the fraction of the tank that is empty is $\\frac{1}{4}$."),
        ("$x=5$", "Dividing both sides by 3, we get $\\boxed{5}$.", "Dividing both sides by 3, we get $\\boxed{-5}$."),
        ("$x=5$", "Therefore $\\boxed{x = 5}$.", "Therefore $\\boxed{y = 6}$."),
        ("$12$", "The answer is $\\boxed{12}$.", "The answer is $\\boxed{21}$."),
        ("$\\$18$", "She earns $\\boxed{18}$ dollars.", "She earns $\\boxed{16}$ dollars."),
        ("The value of $k$ is $\\boxed{-2}$ since the discriminant must vanish.",
         "Setting the discriminant to zero, $k = \\boxed{-2}$.", "Setting the discriminant to zero, $k = \\boxed{2}$."),
        ("So the number of subsets is \\boxed{64}, as each element is either in or out.",
         "Each of the 6 elements is either in or out, so $2^6 = \\boxed{64}$.",
         "Excluding the empty set, $\\boxed{63}$."),
        ("Answer: $\\sqrt{13}$", "By the distance formula, the distance is $\\boxed{\\sqrt{13}}$.",
         "By the distance formula, the distance is $\\boxed{13}$."),
        ("$\\left(-\\infty, 2\\right]$", "So the domain is $\\boxed{(-\\infty, 2]}$.",
         "So the domain is $\\boxed{(-\\infty, 2)}$."),
        ("$y = 3x - 2$", "The line is $\\boxed{y = 3x - 2}$.", "The line is $\\boxed{y = 3x + 2}$."),
        ("The final answer is $\\boxed{\\text{(B)}}$", "Only option B satisfies both conditions, so the answer is "
         "$\\boxed{B}$.", "Only option D satisfies both conditions, so the answer is $\\boxed{D}$."),
        ("$\\frac{1}{2}$ and $\\frac{3}{4}$ are the two roots, so the larger root is $\\boxed{\\frac{3}{4}}$.",
         "The larger root is $\\boxed{0.75}$.", "The larger root is $\\boxed{0.5}$."),
        ("$a = 3, b = 4$, so $a + b = \\boxed{7}$.", "Hence $a+b = \\boxed{7}$.", "Hence $a + b = \\boxed{12}$."),
        ("The answer is 14.", "Adding the two groups, there are 14 students in total.",
         "Adding the two groups, there are 41 students in total."),
        ("Answer: 2.5", "The ratio is $\\boxed{\\frac{5}{2}}$.", "The ratio is $\\boxed{\\frac{2}{5}}$."),
    ]
    for ref, good, bad in short:
        add(good, ref)
        add(bad, ref)
    # a longer multi-step solution with several math spans
    sol = ("Let the width be $w$. Then the length is $w + 4$, and the perimeter is $2w + 2(w+4) = 4w + 8$. Setting "
           "$4w + 8 = 48$ gives $w = 10$, so the length is $14$. The area is $10 \\cdot 14 = \\boxed{140}$ square "
           "units.")
    add("The width is 10 and the length is 14, so the area is 140 square units.", sol)
    add("The width is 10 and the length is 14.", sol)
    add(boxed(rng, "140 \\text{ square units}", "Multiplying the width by the length, the area is"), sol)
    add(boxed(rng, "48", "Adding up the four sides, the perimeter is"), sol)
    return out


# ----------------------------------------------------------------------------------------------------------------
# 7. conventions
# ----------------------------------------------------------------------------------------------------------------


def gen_conventions(rng):
    out = []

    def add(resp, ref):
        out.append(("conventions", resp, ref, "answer"))

    leads = ["Multiplying the number of households by the average size, the population is",
             "Adding the amounts from the three years, the total revenue in dollars is",
             "The number of possible license plates is", "Multiplying the two counts, the number of arrangements is"]
    for i in range(8):
        lead = leads[i % len(leads)]
        n = rng.randint(1000, 9_999_999)
        form = ["comma", "space", "brace", "thin"][i % 4]
        s = {"comma": f"{n:,}", "space": f"{n:,}".replace(",", " "), "brace": f"{n:,}".replace(",", "{,}"),
             "thin": f"{n:,}".replace(",", "\\,")}[form]
        add(boxed(rng, s, lead), str(n))
        add(boxed(rng, s, lead), str(n + 9))
    add("The company's revenue for the year is $\\boxed{\\$7,425,000}$.", "7425000")
    add("The company's revenue for the year is $\\boxed{\\$7,425,000}$.", "7245000")
    add("The company's revenue for the year is \\$7,425,000.", "7425000")
    add("So the total prize money is 1 000 dollars.\nThe answer is 1 000.", "1000")
    add("Multiplying the price by the number of units sold, the answer is 7,425,000.", "7425000")
    add("Multiplying the price by the number of units sold, the answer is 7,425,000.", "742500")
    # decimals without a leading zero, trailing zeros
    for v, eq, ne in [(".4", "\\frac{2}{5}", "\\frac{1}{4}"), (".75", "\\frac34", "\\frac{7}{5}"),
                      (".125", "\\frac{1}{8}", "\\frac{1}{5}")]:
        add(boxed(rng, v, "Converting the fraction to a decimal, the probability is"), eq)
        add(boxed(rng, v, "Converting the fraction to a decimal, the probability is"), ne)
        add(boxed(rng, v, "Converting the fraction to a decimal, the probability is"), "0" + v)
    add(boxed(rng, "0.50", "Half of the outcomes are favorable, so the probability is"), "\\frac12")
    add(boxed(rng, "0.50", "Half of the outcomes are favorable, so the probability is"), "\\frac15")
    add(boxed(rng, "1.250", "Dividing the two lengths, the ratio is"), "\\frac{5}{4}")
    # a digit inside a word is not an answer
    add("The spare part needed for this repair is listed in the manual as model XDY2K", "2")
    add("After checking the inventory code A7, the item is found on shelf B12", "12")
    add("The correct choice is the option labelled Q3B", "3")
    # leading zeros
    add(boxed(rng, "007", "The last three digits of the product are"), "7")
    add(boxed(rng, "042", "The last three digits of the product are"), "42")
    add(boxed(rng, "042", "The last three digits of the product are"), "420")
    # negative numbers, the Unicode minus sign
    for v in [5, 12]:
        add(f"The temperature dropped below zero, so the answer is $\\boxed{{-{v}}}$.", f"-{v}")
        add(f"The temperature dropped below zero, so the answer is \u2212{v}.", f"-{v}")
        add(f"The temperature dropped below zero, so the answer is $\\boxed{{{v}}}$.", f"-{v}")
    add("The temperature dropped below zero, so the answer is $\\boxed{\u22123}$.", "-3")
    add("The final answer is \u22125.", "5")
    # infinity
    add("The series diverges, so the sum is $\\boxed{\\infty}$.", "\\infty")
    add("As $x$ grows without bound, the limit is $\\boxed{+\\infty}$.", "\\infty")
    add("As $x$ decreases without bound, the limit is $\\boxed{-\\infty}$.", "\\infty")
    add("Every real number is attained, so the range is $\\boxed{(-\\infty, \\infty)}$.", "\\mathbb{R}")
    # mixed numbers
    for w, n, d in [(2, 1, 2), (3, 3, 4), (1, 2, 3)]:
        imp = Fraction(w * d + n, d)
        add(f"Adding the two amounts of flour gives $\\boxed{{{w}\\frac{{{n}}}{{{d}}}}}$ cups.", frac_tex(imp))
        add(f"Adding the two amounts of flour gives ${w}\\tfrac{{{n}}}{{{d}}}$ cups.", frac_tex(imp))
        add(f"Adding the two amounts of flour gives $\\boxed{{{w}\\frac{{{n}}}{{{d}}}}}$ cups.",
            frac_tex(Fraction(w * n, d)))
    add("The trip takes 2 1/2 hours.", "\\frac{5}{2}")
    # scientific notation, money with cents
    add(boxed(rng, "1.2 \\times 10^{5}", "In scientific notation, the number of cells is"), "120000")
    add(boxed(rng, "1.2 \\times 10^{4}", "In scientific notation, the number of cells is"), "120000")
    add("The total cost is $\\boxed{\\$12.50}$.", "12.5")
    add("The total cost is $\\boxed{\\$12.05}$.", "12.5")
    add("He pays \\$3.75 per pound, so the answer is \\$3.75.", "3.75")
    add("The total cost is $\\boxed{\\$1,250}$.", "1250")
    return out


# ----------------------------------------------------------------------------------------------------------------
# 8. regression: wrong answers a loose grader might accept
# ----------------------------------------------------------------------------------------------------------------


def gen_regression(rng):
    out = []

    def add(resp, ref):
        out.append(("regression", resp, ref, "answer"))

    wrong = [
        ("x > 5", "x \\geq 5"), ("x \\leq 5", "x < 5"), ("x < 3", "x > 3"),
        ("\\begin{pmatrix} 1 & 2 \\\\ 3 & 5 \\end{pmatrix}", "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}"),
        ("x(2x+4y-3)=0", "2x+4y-3=0"), ("x^2 + 2x + 1 = 0", "x + 1 = 0"),
        ("[1, 2]", "(1, 2)"), ("(1, 2]", "(1, 2)"), ("\\{1, 3\\}", "\\{1,2\\}"), ("\\{1, 2, 3\\}", "\\{1,2\\}"),
        ("3.01", "3"), ("0.33", "\\frac{1}{3}"), ("0.3", "\\frac{1}{3}"), ("3.1", "\\pi"), ("3.14", "\\pi"),
        ("2x", "x^2"), ("x^3", "3x^2"), ("12345687", "12345678"), ("-2", "2"), ("\\frac{1}{2}", "2"),
        ("\\frac{2}{3}", "\\frac{3}{2}"), ("\\sqrt{3}", "3"), ("\\sqrt{2}", "2"), ("e", "2.718"),
        ("100", "10^3"), ("2^{10}", "2^{11}"), ("(2, 3)", "(3, 2)"), ("(2, 3, 4)", "(2, 3)"),
        ("5", "\\{5, -5\\}"), ("\\pm 5", "5"), ("y = 2x + 1", "y = 2x - 1"), ("x = 3", "y = 3"),
        ("\\frac{\\pi}{3}", "\\frac{\\pi}{6}"), ("60", "\\frac{\\pi}{3}"), ("1", "0"), ("0", "\\text{(A)}"),
        ("\\text{(A)}", "\\text{(B)}"), ("45 \\text{ cm}", "54"), ("12 \\text{ hours}", "720"),
        ("\\frac{x+1}{x-1}", "\\frac{x-1}{x+1}"), ("(-\\infty, 2)", "(-\\infty, 2]"), ("\\log 2", "\\ln 2"),
        ("1000", "1024"), ("0", "\\infty"),
        # issue #65: times that read x/0, ratios, a set against a tuple, "0,ddd" in a box, overflow, digit factors
        ("1:00", "12:00"), ("12:00", "1:00"), ("2:00", "12:00"), ("7:23", "7:32"), ("2^{1025}", "2^{1024}"),
        ("0,125", "125"), ("3,5", "3.5"), ("\\{2,1\\}", "(1,2)"), ("\\{1,3\\}", "(1,2)"), ("x2", "x^2"),
    ]
    leads = ["Carefully simplifying everything, we find", "After checking all the cases, the result is",
             "Putting the pieces together, the answer is", "We combine the results from the previous steps."]
    for pred, gold in wrong:
        add(boxed(rng, pred, choice(rng, leads)), gold)
    # a few true controls
    controls = [("x \\geq 5", "x\\ge5"), ("\\{2, 1\\}", "\\{1,2\\}"), ("0.5", "\\frac12"), ("12345678", "12,345,678"),
                ("2x", "x+x"), ("(1, 2)", "\\left(1,2\\right)"), ("12:00", "12:00"), ("0,125", "0.125"),
                ("\\{1,2\\}", "(1,2)"), ("x2", "2x")]
    for pred, gold in controls:
        add(boxed(rng, pred, choice(rng, leads)), gold)
    return out


GENERATORS = [gen_relation, gen_equation, gen_matrix, gen_latex_forms, gen_prose, gen_gold_extract, gen_conventions,
              gen_regression]


def all_cases():
    cases = []
    for i, gen in enumerate(GENERATORS):
        cases.extend(gen(random.Random(7919 * (i + 1))))
    # drop exact duplicates, keep the first
    seen, uniq = set(), []
    for c in cases:
        key = (c[0], c[1], c[2], c[3])
        if key not in seen:
            seen.add(key)
            uniq.append(c)
    return uniq


def label(response, reference, gold):
    try:
        g = parse("\\boxed{" + reference + "}") if gold == "answer" else parse(reference)
        return bool(verify(g, parse(response)))
    except Exception:  # a crash of the oracle counts as "not equal", as its own metric code does
        return False


def main():
    out = sys.argv[1]
    rows = [{"category": c, "response": r, "reference": ref, "gold": g, "math_verify": label(r, ref, g)}
            for c, r, ref, g in all_cases()]
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"oracle": "math-verify 0.9.0", "cases": rows}, f, indent=1)
    for cat in CATEGORIES:
        sel = [r for r in rows if r["category"] == cat]
        eq = sum(r["math_verify"] for r in sel)
        print(f"{cat:13s} {len(sel):4d} cases  {eq:4d} equal  {len(sel) - eq:4d} not equal")
    n_true = sum(r["math_verify"] for r in rows)
    print(f"{'total':13s} {len(rows):4d} cases  {n_true:4d} equal  {len(rows) - n_true:4d} not equal -> {out}")


if __name__ == "__main__":
    main()
