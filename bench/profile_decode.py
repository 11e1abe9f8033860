#!/usr/bin/env python3
"""Where a batch-1 decode step of a gspo TorchScript policy spends its time (issue 13 item 5, docs/perf/limits.md).

    scripts/py bench/profile_decode.py --model models/limits_180m.pt [--threads 1] [--steps 32] [--top 15]

Prefills a 16-token prompt, then runs --steps decode calls (argmax feedback) of the same TorchScript file gspo loads,
once untimed, once timed, once under torch.profiler. Prints the ms per step, the profiler's operators by self CPU
time, and the effective read bandwidth of the matrix products (weight bytes / their time). With
THP_MEM_ALLOC_ENABLE=1 in the environment LibTorch backs large tensors with transparent huge pages.
"""
import argparse
import os
import time

import torch


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=32)
    p.add_argument("--top", type=int, default=15)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    m = torch.jit.load(args.model)
    prompt = 16
    ids = (torch.arange(prompt) * 7 % 256).view(1, prompt)
    mask = torch.ones(1, prompt + args.steps + 1, dtype=torch.long)

    def run() -> float:
        with torch.no_grad():
            cache = m.init_cache(1, prompt + args.steps + 1)
            logits = m.prefill(ids, mask[:, :prompt], cache)
            t0 = time.perf_counter()
            for s in range(args.steps):
                nxt = logits.argmax(-1).view(1, 1)
                logits = m.decode(nxt, mask[:, :prompt + s + 1], cache, prompt + s)
            return time.perf_counter() - t0

    run()
    t = min(run() for _ in range(2))
    weight_bytes = sum(q.numel() * q.element_size() for n, q in m.named_parameters() if "embed_tokens" not in n)
    print(f"threads {args.threads}, THP_MEM_ALLOC_ENABLE={os.environ.get('THP_MEM_ALLOC_ENABLE', '')}: "
          f"{1000 * t / args.steps:.2f} ms per decode step ({args.steps / t:.2f} tok/s), "
          f"{weight_bytes / 1e6:.1f} MB of weights -> {weight_bytes * args.steps / t / 1e9:.1f} GB/s overall")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        t_prof = run()
    ka = prof.key_averages()
    print(ka.table(sort_by="self_cpu_time_total", row_limit=args.top))
    total_self = sum(e.self_cpu_time_total for e in ka)
    mm = sum(e.self_cpu_time_total for e in ka if e.key in ("aten::addmm", "aten::mm", "aten::mv", "aten::bmm"))
    # attention products (q k^T, p v) are aten::matmul -> bmm/mm on tiny matrices; count them apart from weights
    print(f"profiled run {1000 * t_prof / args.steps:.2f} ms per step; profiler self time (prefill included) "
          f"{total_self / 1e3:.1f} ms, matrix products {mm / 1e3:.1f} ms ({100 * mm / max(total_self, 1):.1f}%)")


if __name__ == "__main__":
    main()
