#!/usr/bin/env python3
"""Independent reference for gspo's low-rank adapters (src/gspo/model/lora.h): autograd through an explicit
W' = W + (alpha / r) B A written into each targeted weight of the TorchScript model, the loss sum(logits * R) taken
through the model's own full-sequence forward (gspo runs the per-layer methods instead), and the gradients
of every A and B. Targets chosen here by their names, as PEFT's target_modules matches module names (a router,
mlp.gate, never; experts only when asked). Writes lora_cases.json, read by tests/unit/test_lora.cpp (tolerance stated
there: 1e-5 relative to each gradient's norm, float32 on both sides).

    python3 tests/golden/lora_reference.py MODELS_DIR OUT.json
"""
import json
import re
import sys

import torch

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
PATTERN = re.compile(r"(^|\.)layers\.(\d+)\.(.*\.)?([A-Za-z0-9_]+)\.weight$")


def targeted(name, experts):
    m = PATTERN.search(name)
    return bool(m) and m.group(4) in TARGETS and (experts or ".experts." not in name)


def owner(model, name):
    parts = name.split(".")
    mod = model
    for p in parts[:-1]:
        mod = getattr(mod, p)
    return mod, parts[-1]


def case(path, rank, alpha, experts, seed):
    model = torch.jit.load(path)
    model.eval()
    torch.manual_seed(seed)
    names = [n for n, p in model.named_parameters() if p.dim() == 2 and targeted(n, experts)]
    scale = alpha / rank
    adapters = []
    for n in names:
        w = dict(model.named_parameters())[n].detach()
        a = (torch.randn(rank, w.shape[1]) * 0.2).requires_grad_(True)
        b = (torch.randn(w.shape[0], rank) * 0.2).requires_grad_(True)  # not 0: A's gradient is then not 0 either
        mod, leaf = owner(model, n)
        mod._c.setattr(leaf, w + scale * (b @ a))
        adapters.append((n, a, b))
    ids = torch.tensor([[0, 0, 5, 17, 42, 7, 9], [3, 11, 23, 5, 8, 13, 2]], dtype=torch.long)
    mask = torch.tensor([[0, 0, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1]], dtype=torch.long)
    logits = model(ids, mask).float()  # the contract's forward: full-sequence logits
    r = torch.randn(logits.shape)
    loss = (logits * r * mask.unsqueeze(-1)).sum()
    loss.backward()
    flat = lambda t: t.detach().reshape(-1).tolist()
    return {"model": path.split("/")[-1], "rank": rank, "alpha": alpha, "experts": experts, "ids": ids.tolist(),
            "mask": mask.tolist(), "r": flat(r), "r_shape": list(r.shape), "loss": loss.item(),
            "adapters": [{"name": n, "a": flat(a), "b": flat(b), "a_shape": list(a.shape), "b_shape": list(b.shape),
                          "grad_a": flat(a.grad), "grad_b": flat(b.grad)} for n, a, b in adapters]}


def main():
    models, out = sys.argv[1], sys.argv[2]
    cases = [case(f"{models}/tiny.pt", 4, 8.0, False, 0),
             case(f"{models}/qwen3_moe_tiny.pt", 2, 4.0, True, 1)]
    with open(out, "w") as f:
        json.dump(cases, f)


if __name__ == "__main__":
    main()
