"""Merged against unmerged LoRA in the decode loop, on this CPU (#36 item 2, docs/lora.md "Sampling with the adapters").

gspo samples with the adapters merged into a copy of the weights (W' = W + (alpha / r) B A once per step), so a decode
step runs the base model's matrix products. PEFT's unmerged path keeps W and adds s B (A x) to every targeted
projection's output instead. This times one decoder layer's seven projections (q, k, v, o, gate, up, down) both ways,
at decode (S rows, one token each) and at prefill (S rows x T tokens), with PyTorch's own kernels on the CPU: the same
matrix products gspo's TorchScript models run. Each figure is the median of REPEATS timed calls after warm-up; the
ratio is unmerged / merged. The merge itself (B A and the add, once per step) is timed too, per layer.

usage: scripts/py bench/lora_unmerged.py [--threads 2] [--rows 8] [--prefill 256] [--repeats 30]
"""
import argparse
import statistics
import time

import torch

SHAPES = {  # name: (hidden, q/o width, k/v width, MLP width)
    "bench model (hidden 768)": (768, 768, 256, 3072),
    "Qwen3-8B layer": (4096, 4096, 1024, 12288),
}


def projections(h, q, kv, mlp):
    """(in, out) of q, k, v, o, gate, up, down."""
    return [(h, q), (h, kv), (h, kv), (q, h), (h, mlp), (h, mlp), (mlp, h)]


def timed(fn, repeats):
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--prefill", type=int, default=256, help="tokens a row at prefill")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    dt = getattr(torch, args.dtype)
    print(f"torch {torch.__version__}, {args.threads} threads, {args.dtype}, {args.rows} rows; median of "
          f"{args.repeats}")
    print("| layer | r | decode merged (ms) | decode unmerged (ms) | ratio | prefill merged (ms) | prefill unmerged (ms) "
          "| ratio | merge once (ms) |")
    print("|---|---|---|---|---|---|---|---|---|")
    with torch.no_grad():
        for name, shape in SHAPES.items():
            ps = projections(*shape)
            W = [torch.randn(o, i, dtype=dt) * 0.02 for i, o in ps]
            for r in (16, 32):
                A = [torch.randn(r, i, dtype=dt) * 0.02 for i, _ in ps]
                B = [torch.randn(o, r, dtype=dt) * 0.02 for _, o in ps]
                s = 2.0

                def merged(x_of):
                    for w, (i, _) in zip(W, ps):
                        torch.nn.functional.linear(x_of[i], w)

                def unmerged(x_of):
                    for w, a, b, (i, _) in zip(W, A, B, ps):
                        x = x_of[i]
                        torch.nn.functional.linear(x, w) + s * torch.nn.functional.linear(
                            torch.nn.functional.linear(x, a), b)

                def inputs(tokens):
                    return {i: torch.randn(tokens, i, dtype=dt) for i in {i for i, _ in ps}}

                dec, pre = inputs(args.rows), inputs(args.rows * args.prefill)
                dm, du = timed(lambda: merged(dec), args.repeats), timed(lambda: unmerged(dec), args.repeats)
                pm, pu = (timed(lambda: merged(pre), max(5, args.repeats // 5)),
                          timed(lambda: unmerged(pre), max(5, args.repeats // 5)))
                merge = timed(lambda: [w + s * (b @ a) for w, a, b in zip(W, A, B)], max(5, args.repeats // 5))
                print(f"| {name} | {r} | {dm * 1e3:.3f} | {du * 1e3:.3f} | {du / dm:.2f} | {pm * 1e3:.1f} | "
                      f"{pu * 1e3:.1f} | {pu / pm:.2f} | {merge * 1e3:.1f} |")


if __name__ == "__main__":
    main()
