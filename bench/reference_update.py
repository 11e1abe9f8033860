#!/usr/bin/env python3
"""Straightforward PyTorch GSPO update on a gspo TorchScript policy: recompute old log-probs, then one AdamW
step per mini-batch with the length-normalised sequence ratio and sequence-level clipping. The batch layout is the
same deterministic one bench_train builds. Prints `tokens_per_s=X` (real tokens through forward+backward per
second of the update phase, old log-prob pass included)."""
import argparse
import time

import torch


def batch(n, prompt_len, max_resp):
    P, R = prompt_len, max_resp
    ids = torch.zeros(n, P + R, dtype=torch.long)
    mask = torch.zeros(n, P + R, dtype=torch.long)
    resp = torch.zeros(n, R)
    for i in range(n):
        length = 1 + (i * 37) % R
        for t in range(P + length):
            ids[i, t] = (i * 7 + t * 3) % 256
            mask[i, t] = 1
        resp[i, :length] = 1
    adv = torch.tensor([((i % 5) - 2) * 0.5 for i in range(n)])
    return ids, mask, resp, adv


def logprobs(m, ids, mask, P):
    logits = m(ids, mask)
    pred = logits[:, P - 1:-1]
    return pred.gather(-1, ids[:, P:].unsqueeze(-1)).squeeze(-1) - pred.logsumexp(-1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--n", type=int, default=64)
    p.add_argument("--prompt-len", type=int, default=16)
    p.add_argument("--max-resp", type=int, default=48)
    p.add_argument("--minibatches", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=0)
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    m = torch.jit.load(a.model)
    params = list(m.parameters())
    opt = torch.optim.AdamW(params, lr=1e-5, weight_decay=0.0)
    ids, mask, resp, adv = batch(a.n, a.prompt_len, a.max_resp)
    P = a.prompt_len
    size = a.n // a.minibatches
    best = None
    for rep in range(a.repeats + 1):
        t0 = time.perf_counter()
        with torch.no_grad():
            old = [logprobs(m, ids[k:k + size], mask[k:k + size], P) for k in range(0, a.n, size)]
        for j, k in enumerate(range(0, a.n, size)):
            opt.zero_grad()
            lp = logprobs(m, ids[k:k + size], mask[k:k + size], P)
            rm = resp[k:k + size]
            log_s = ((lp - old[j]) * rm).sum(1) / rm.sum(1)
            s = torch.exp(log_s.clamp(max=10.0))
            A = adv[k:k + size]
            loss = -torch.min(s * A, s.clamp(1 - 3e-4, 1 + 4e-4) * A).mean()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
        dt = time.perf_counter() - t0
        if rep > 0:
            best = dt if best is None else min(best, dt)
    tokens = 2 * int(mask.sum())  # old log-prob pass + update pass
    print(f"tokens_per_s={tokens / best:.1f}")


if __name__ == "__main__":
    main()
