"""The check lines of the export tests run as plain scripts (test_moe_capturable.py, test_shared_layer.py): each check
prints "ok" or "FAIL" with its figure, and `failures` collects the failed ones for the exit code."""

failures = []


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}")
    if not ok:
        failures.append(name)


def close(name, a, b, rel):
    """|a - b| at most rel of b's scale (its largest magnitude, at least 1)."""
    d = (a - b).abs().max().item()
    tol = rel * max(1.0, b.abs().max().item())
    check(name, d <= tol, f"max |diff| {d:.2e} (tolerance {tol:.1e})")
