"""The tool-only task of configs/tiny-tools.yaml: prompts "KEY?" (KEY a random number of 4 digits) whose answer is a
secret digit that only the `lookup` tool (scripts/tools/lookup.sh, the same rule) knows. Keys are distinct, so a
model cannot learn the answers by heart in a short run; it can learn to ask the tool.

    scripts/py scripts/make_tools_task.py --out data/tools_lookup.jsonl [--rows 4000] [--seed 0]
"""
import argparse
import json
import random


def secret(key: int) -> int:
    return ((key * 7919 + 17) % 104729) % 10


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--rows", type=int, default=4000)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    keys = random.Random(a.seed).sample(range(1000, 10000), a.rows)
    with open(a.out, "w", encoding="utf-8") as f:
        for k in keys:
            f.write(json.dumps({"problem": f"{k}?", "answer": str(secret(k))}) + "\n")


if __name__ == "__main__":
    main()
