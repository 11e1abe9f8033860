#!/usr/bin/env python3
"""Checks a run's rollouts/ against its metrics.jsonl (tests/dist/test_rollout_log.sh; docs/metrics.md "Rollouts").

    check_rollouts.py RUN --steps 1,2,4,5 --rows 24 --group 4      # the files, their rows, each row's fields
    check_rollouts.py RUN --same OTHER_RUN                           # the same rows as another run's (another world size)

Every row: its fields, group = row // G, rows in global order, logprobs one per response token, staleness 0 without
rollout ranks. A file holding every row of its step: the mean of its rewards is the step's reward_mean, the mean of its
advantages is the step's advantage_mean (within the 4 significant digits written). Exits 1 naming the first
difference."""
import argparse, json, math, os, sys

VOCAB = 259  # the tiny model's (256 bytes and 3 specials); entropies are at most log V

FIELDS = ["step", "row", "group", "prompt", "response", "reward", "correct", "advantage", "tokens",
          "inserted_tokens", "finish", "version", "staleness", "prompt_ids", "response_ids", "pieces", "logprobs",
          "trainer_logprobs", "entropy"]


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
            n = r["tokens"] + r["inserted_tokens"]
            if any(len(r[f]) != n for f in ("logprobs", "trainer_logprobs", "entropy", "response_ids", "pieces")):
                fail(f"step {step} row {i}: per-token fields of other lengths than its {n} tokens")
            # The tiny model's tokens are its bytes and 3 specials: ASCII pieces spell the response (a byte of a longer
            # UTF-8 character is U+FFFD alone, so those rows are left out).
            text = "".join(p for p in r["pieces"] if p not in ("<|eos|>", "<|bos|>", "<|pad|>"))
            if text.isascii() and text != r["response"]:
                fail(f"step {step} row {i}: pieces {r['pieces']} do not spell the response {r['response']!r}")
            # The sampler's and the trainer's log-probs of the same weights (float32 on the CPU): equal but for the
            # batch shapes' rounding.
            if any(abs(p - q) > 2e-3 for p, q in zip(r["logprobs"], r["trainer_logprobs"])):
                fail(f"step {step} row {i}: behaviour and trainer log-probs differ by more than 2e-3")
            if any(not (-1e-4 <= h <= math.log(VOCAB) + 1e-3) for h in r["entropy"]):
                fail(f"step {step} row {i}: an entropy outside [0, log V]")
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


def reference(args):
    """Step 1's trainer log-probs and entropies against the step-start model run by torch in Python: the TorchScript
    export's forward on each row's prompt and response ids, log_softmax(logits / T), within 1e-4."""
    import torch
    model = torch.jit.load(args.reference)
    rows = load(args.run)[1]
    worst = 0.0
    for r in rows:
        ids = torch.tensor([r["prompt_ids"] + r["response_ids"]])
        with torch.no_grad():
            logits = model.forward(ids, torch.ones_like(ids)).float() / args.temperature
        logp = torch.log_softmax(logits[0], -1)
        P = len(r["prompt_ids"])
        for t, tok in enumerate(r["response_ids"]):
            lp = logp[P - 1 + t]
            want_lp, want_h = lp[tok].item(), -(lp.exp() * lp).sum().item()
            worst = max(worst, abs(want_lp - r["trainer_logprobs"][t]) / max(1.0, abs(want_lp)),
                        abs(want_h - r["entropy"][t]) / max(1.0, abs(want_h)))
    if worst > 1e-3:  # the file keeps 4 significant digits
        fail(f"trainer log-probs or entropies differ from torch's by {worst:.2e} (relative)")
    print(f"ok: {len(rows)} rows of step 1 against torch, worst relative difference {worst:.1e}")


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
p.add_argument("--reference", default="", help="a TorchScript export: step 1's trainer log-probs recomputed in torch")
p.add_argument("--temperature", type=float, default=1.0)
a = p.parse_args()
reference(a) if a.reference else same(a) if a.same else check(a)
