#!/usr/bin/env python3
"""Checks a run's rollouts/ against its metrics.jsonl (tests/dist/test_rollout_log.sh; docs/metrics.md "Rollouts").

    check_rollouts.py RUN --steps 1,2,4,5 --rows 24 --group 4      # the files, their rows, each row's fields
    check_rollouts.py RUN --same OTHER_RUN                           # the same rows as another run's (another world size)

Every row: its fields, group = row // G, rows in global order, logprobs one per response token, staleness 0 without
rollout ranks. A file holding every row of its step: the mean of its rewards is the step's reward_mean, the mean of its
advantages is the step's advantage_mean (within the 4 significant digits written). Exits 1 naming the first
difference."""
import argparse, json, math, os, sys

FIELDS = ["step", "row", "group", "prompt", "response", "reward", "correct", "advantage", "tokens",
          "inserted_tokens", "finish", "version", "staleness", "logprobs"]


def fail(msg):
    print("DIFF " + msg)
    sys.exit(1)


def load(run):
    d = os.path.join(run, "rollouts")
    out = {}
    for name in sorted(os.listdir(d)):
        rows = [json.loads(l) for l in open(os.path.join(d, name)) if l.strip()]
        out[int(name[5:-6])] = rows
    return out


def check(args):
    files = load(args.run)
    want = [int(s) for s in args.steps.split(",")]
    if sorted(files) != want:
        fail(f"steps written {sorted(files)}, expected {want}")
    metrics = {m["step"]: m for m in map(json.loads, open(os.path.join(args.run, "metrics.jsonl")))}
    for step, rows in files.items():
        if len(rows) != args.rows:
            fail(f"step {step}: {len(rows)} rows, expected {args.rows}")
        for i, r in enumerate(rows):
            if [f for f in r if f != "components"] != FIELDS:
                fail(f"step {step} row {i}: fields {list(r)}")
            if r["step"] != step or r["row"] != i or r["group"] != i // args.group:
                fail(f"step {step} row {i}: step/row/group {r['step']}/{r['row']}/{r['group']}")
            if len(r["logprobs"]) != r["tokens"] + r["inserted_tokens"]:
                fail(f"step {step} row {i}: {len(r['logprobs'])} log-probs for {r['tokens']} tokens")
            if any(lp > 1e-6 for lp in r["logprobs"]) or r["staleness"] != 0 or r["version"] != step - 1:
                fail(f"step {step} row {i}: log-probs, version or staleness wrong: {r}")
            if r["finish"] not in ("eos", "stop", "length", "max_turns"):
                fail(f"step {step} row {i}: finish {r['finish']}")
        if args.all_rows:
            m = metrics[step]
            for key, field in (("reward_mean", "reward"), ("advantage_mean", "advantage")):
                mean = sum(r[field] for r in rows) / len(rows)
                if key in m and not math.isclose(mean, m[key], abs_tol=2e-3):
                    fail(f"step {step}: mean {field} {mean} against metrics {key} {m[key]}")
    print(f"ok: steps {sorted(files)}, {args.rows} rows each")


def same(args):
    a, b = load(args.run), load(args.same)
    if not set(b) <= set(a):  # a resumed run also has the last step of its first invocation
        fail(f"steps {sorted(a)} lack some of {sorted(b)}")
    for step in b:
        for i, (x, y) in enumerate(zip(a[step], b[step])):
            for f in ("row", "group", "prompt", "response", "reward", "correct", "tokens", "finish"):
                if x[f] != y[f]:
                    fail(f"step {step} row {i}: {f} {x[f]!r} against {y[f]!r}")
            if any(abs(p - q) > 1e-3 for p, q in zip(x["logprobs"], y["logprobs"])):
                fail(f"step {step} row {i}: log-probs differ by more than 1e-3")
        if len(a[step]) != len(b[step]):
            fail(f"step {step}: {len(a[step])} rows against {len(b[step])}")
    print(f"ok: the same rows at steps {sorted(b)}")


p = argparse.ArgumentParser()
p.add_argument("run")
p.add_argument("--steps", default="")
p.add_argument("--rows", type=int, default=0)
p.add_argument("--group", type=int, default=1)
p.add_argument("--all-rows", action="store_true", help="the files hold every row of their step")
p.add_argument("--same", default="")
a = p.parse_args()
same(a) if a.same else check(a)
