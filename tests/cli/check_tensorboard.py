#!/usr/bin/env python3
"""Reads a run's TensorBoard event files with the pinned tensorboard package's own reader (EventAccumulator) and
compares them with the run's metrics.jsonl: every numeric field of every line is a scalar at its step, with the same
value (to float32, what a scalar summary holds), each step exactly once, and no scalar that metrics.jsonl lacks; the
resolved config is there as text.

usage: check_tensorboard.py RUN_DIR [TB_DIR]   (TB_DIR defaults to RUN_DIR/tensorboard)"""
import json
import math
import sys

from tensorboard.backend.event_processing import event_accumulator


def main():
    run = sys.argv[1]
    tb = sys.argv[2] if len(sys.argv) > 2 else f"{run}/tensorboard"
    acc = event_accumulator.EventAccumulator(tb, size_guidance={event_accumulator.SCALARS: 0,
                                                                event_accumulator.TENSORS: 0})
    acc.Reload()
    expected = {}  # tag -> {step: value}
    lines = [json.loads(l) for l in open(f"{run}/metrics.jsonl")]
    for m in lines:
        for k, v in m.items():
            if k == "step" or isinstance(v, bool):
                continue
            if isinstance(v, (int, float)):
                expected.setdefault(k, {})[m["step"]] = v
            elif isinstance(v, list):
                for i, x in enumerate(v):
                    if isinstance(x, (int, float)) and not isinstance(x, bool):
                        expected.setdefault(f"{k}/{i}", {})[m["step"]] = x
    problems = []
    tags = set(acc.Tags()["scalars"])
    if tags != set(expected):
        problems.append(f"tags only in the events: {sorted(tags - set(expected))[:5]}, "
                        f"only in metrics.jsonl: {sorted(set(expected) - tags)[:5]}")
    compared = 0
    for tag in sorted(tags & set(expected)):
        events = acc.Scalars(tag)
        steps = [e.step for e in events]
        if len(steps) != len(set(steps)):
            problems.append(f"{tag}: a step written twice: {steps}")
        got = {e.step: e.value for e in events}
        if set(got) != set(expected[tag]):
            problems.append(f"{tag}: steps {sorted(got)} vs metrics.jsonl {sorted(expected[tag])}")
        for step, want in expected[tag].items():
            if step in got:
                compared += 1
                w = float(want)
                if not math.isclose(got[step], w, rel_tol=1e-6, abs_tol=1e-30) and not (
                        abs(w) > 3.4e38 and math.isinf(got[step])):
                    problems.append(f"{tag} step {step}: {got[step]!r} vs {w!r}")
    texts = acc.Tags().get("tensors", [])
    config = [t for t in texts if t.startswith("config")]
    if not config:
        problems.append(f"no config text (tensor tags: {texts})")
    else:
        text = acc.Tensors(config[0])[0].tensor_proto.string_val[0].decode()
        if "train:" not in text or "max_steps" not in text:
            problems.append(f"the config text is not the resolved config: {text[:80]!r}")
    for p in problems[:10]:
        print("DIFF", p)
    print(f"{len(tags)} scalar tags, {compared} values over {len(lines)} steps compared with metrics.jsonl"
          f"{'' if problems else ', all equal'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
