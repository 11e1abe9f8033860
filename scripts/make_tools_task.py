"""The tool-only task of configs/tiny-tools.yaml: prompts "KEY?" (KEY a random number of 4 digits) whose answer is a
secret digit that only the `lookup` tool (scripts/tools/lookup.sh, the same rule) knows. Keys are distinct, so a
model cannot learn the answers by heart in a short run; it can learn to ask the tool.

    scripts/py scripts/make_tools_task.py --out data/tools_lookup.jsonl [--rows 4000] [--seed 0]
        [--warm-out data/tools_warm.txt --warm-call-frac 0.2]

--warm-out writes the text a tiny model is warm-started on (make_tiny_model.py --warm), a stand-in for a pretrained
model that has seen the tool used: one line per key the task does not use, as an episode's text would read, a
fraction of them calling the tool and copying its answer ("1234?[]{5}5"), the others guessing a digit ("1234?7").
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
    p.add_argument("--warm-out", default="")
    p.add_argument("--warm-call-frac", type=float, default=0.2)
    a = p.parse_args()
    rng = random.Random(a.seed)
    keys = rng.sample(range(1000, 10000), a.rows)
    with open(a.out, "w", encoding="utf-8") as f:
        for k in keys:
            f.write(json.dumps({"problem": f"{k}?", "answer": str(secret(k))}) + "\n")
    if a.warm_out:
        used = set(keys)
        with open(a.warm_out, "w", encoding="utf-8") as f:
            for k in (k for k in range(1000, 10000) if k not in used):
                call = rng.random() < a.warm_call_frac
                f.write(f"{k}?[]{{{secret(k)}}}{secret(k)}\n" if call else f"{k}?{rng.randrange(10)}\n")


if __name__ == "__main__":
    main()
