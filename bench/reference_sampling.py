#!/usr/bin/env python3
"""Plain PyTorch sampling loop over a gspo TorchScript policy (prefill + decode through its KV cache, temperature
sampling, no early stop): the baseline bench_sampling compares gspo against. Prints `tokens_per_s=X`."""
import argparse
import time

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--prompt-len", type=int, default=16)
    p.add_argument("--new-tokens", type=int, default=64)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=0)
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    m = torch.jit.load(a.model)
    g = torch.Generator().manual_seed(0)
    ids = (torch.arange(a.batch * a.prompt_len).view(a.batch, a.prompt_len) * 7 % 256).long()
    best = None
    with torch.no_grad():
        for rep in range(a.repeats + 1):
            t0 = time.perf_counter()
            total = a.prompt_len + a.new_tokens
            mask = torch.zeros(a.batch, total, dtype=torch.long)
            mask[:, :a.prompt_len] = 1
            cache = m.init_cache(a.batch, total)
            logits = m.prefill(ids, mask[:, :a.prompt_len], cache)
            for step in range(a.new_tokens):
                probs = torch.softmax(logits, -1)
                tok = torch.multinomial(probs, 1, generator=g)
                torch.log_softmax(logits, -1).gather(-1, tok)  # behaviour log-probs, as gspo records them
                pos = a.prompt_len + step
                mask[:, pos] = 1
                if step + 1 < a.new_tokens:
                    logits = m.decode(tok, mask[:, :pos + 1], cache, pos)
            dt = time.perf_counter() - t0
            if rep > 0:  # first repetition is warm-up
                best = dt if best is None else min(best, dt)
    print(f"tokens_per_s={a.batch * a.new_tokens / best:.1f}")


if __name__ == "__main__":
    main()
