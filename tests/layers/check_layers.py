#!/usr/bin/env python3
"""Fails when an include runs back up the layer order.

The order is the table in docs/architecture.md (one row per layer, first column `name`): a file under src/gspo/LAYER/
may include headers of LAYER and of the layers listed before it, never of those after it. Every folder under
src/gspo/ must be a listed layer, so a new folder cannot slip past the check.

usage: check_layers.py SOURCE_DIR        exit 0 when the order holds; 1 with each offending include listed."""
import pathlib
import re
import sys


def layer_order(doc):
    order = []
    for line in doc.read_text().splitlines():
        m = re.match(r"\|\s*`(\w+)`\s*\|", line)
        if m:
            order.append(m.group(1))
    return order


def main():
    root = pathlib.Path(sys.argv[1])
    order = layer_order(root / "docs" / "architecture.md")
    if len(order) < 5:
        print(f"FAIL: found only {order} as layers in docs/architecture.md")
        return 1
    rank = {name: i for i, name in enumerate(order)}
    src = root / "src" / "gspo"
    problems, checked = [], 0
    for folder in sorted(p for p in src.iterdir() if p.is_dir()):
        if folder.name not in rank:
            problems.append(f"src/gspo/{folder.name}/ is not a layer of docs/architecture.md")
            continue
        for f in sorted(folder.iterdir()):
            if f.suffix not in (".h", ".cpp"):
                continue
            for n, line in enumerate(f.read_text().splitlines(), 1):
                m = re.match(r'\s*#\s*include\s+"gspo/(\w+)/', line)
                if not m:
                    continue
                checked += 1
                used = m.group(1)
                if used not in rank:
                    problems.append(f"{f.relative_to(root)}:{n}: includes unknown layer '{used}'")
                elif rank[used] > rank[folder.name]:
                    problems.append(f"{f.relative_to(root)}:{n}: {folder.name} includes {used}, a later layer")
    for p in problems:
        print("FAIL", p)
    print(f"{checked} includes checked against the layer order {' < '.join(order)}: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
