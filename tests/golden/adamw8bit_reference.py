"""Golden values for optimizer.state_bits 8 (tests/unit/test_adamw8bit.cpp) from the pinned bitsandbytes.

bitsandbytes 0.50.2 runs on the CPU: its quantisation maps, dequantize_blockwise and the 8-bit AdamW step
(backends/cpu/ops.py, optimizer_update_8bit_blockwise) all have CPU paths. Its CPU quantize_blockwise however is not
the GPU's rounding: it looks the normalised value up in a 65536-entry table over [-1, 1], whose step (3e-5) is coarser
than the map near zero, so about a third of the codes of a typical tensor differ from the nearest entry the CUDA kernels
(dQuantize, quantize_2D) pick, and its AdamW applies the weight decay before the update where the CUDA kernel
(kOptimizerStatic8bit2StateBlockwise) applies it after. gspo follows the CUDA kernel (what runs on the GPUs this is
for). So this script writes three references:
  1. bitsandbytes itself: the maps (create_dynamic_map), dequantize_blockwise, the absmax of quantize_blockwise, its CPU
     codes, and N steps of bitsandbytes.optim.AdamW8bit on the CPU (a loose agreement, tolerance in the C++ test);
  2. a line-by-line transcription of the CUDA kernel's quantize_2D binary search (independent of gspo's bucketize), the
     codes gspo must equal;
  3. a transcription of kOptimizerStatic8bit2StateBlockwise (ADAM), float32 element-wise as the kernel writes it, for N
     steps on the same gradients (a tight agreement).
Output: one torch.save'd dict of tensors (read by torch::pickle_load).
"""
import math
import sys

import numpy as np
import torch

import bitsandbytes as bnb
import bitsandbytes.functional as F

BLOCK = 256
STEPS = 10
HYPER = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.1)
SHAPES = [(96, 80), (300, 50), (64, 32)]  # 7680 (8-bit), 15000 (8-bit, a short last block), 2048 (float32: < 4096)


def quantize_2d(x, code, signed):
    """bitsandbytes csrc/kernels.cu quantize_2D<SIGNED> (the quadrants are code[63], code[127], code[191])."""
    pivot = torch.full(x.shape, 127, dtype=torch.long)
    upper_pivot = torch.full(x.shape, 255, dtype=torch.long)
    lower_pivot = torch.zeros(x.shape, dtype=torch.long)
    lower = torch.full(x.shape, -1.0 if signed else 0.0)
    upper = torch.ones(x.shape)
    val = code[pivot]
    i = 64
    while i > 0:
        gt = x > val
        lower_pivot = torch.where(gt, pivot, lower_pivot)
        lower = torch.where(gt, val, lower)
        upper_pivot = torch.where(gt, upper_pivot, pivot)
        upper = torch.where(gt, upper, val)
        pivot = torch.where(gt, pivot + i, pivot - i)
        val = code[pivot]
        i >>= 1
    gt = x > val
    hi = torch.where(x > (upper + val) * 0.5, upper_pivot, pivot)
    lo = torch.where(x < (lower + val) * 0.5, lower_pivot, pivot)
    return torch.where(gt, hi, lo)


def kernel_quantize(s, code, signed, keep_sign):
    """A block's codes as the optimizer kernel writes them: s / absmax, quantize_2D, the exp_avg sign rule."""
    n = s.numel()
    blocks = -(-n // BLOCK)
    padded = torch.nn.functional.pad(s, (0, blocks * BLOCK - n)).view(blocks, BLOCK)
    absmax = padded.abs().amax(1)
    safe = torch.where(absmax > 0, absmax, torch.ones_like(absmax))  # an all-zero block: codes of 0 (see the C++)
    x = (padded / safe[:, None]).reshape(-1)[:n]
    c = quantize_2d(x, code, signed)
    if keep_sign:
        flip = torch.signbit(code[c]) != torch.signbit(x)
        c = c + flip.long() * torch.where(x > 0, 1, -1)
    return c.to(torch.uint8), absmax


def dequantize(codes, absmax, code):
    n = codes.numel()
    blocks = absmax.numel()
    vals = torch.nn.functional.pad(code[codes.long()], (0, blocks * BLOCK - n)).view(blocks, BLOCK)
    return (vals * absmax[:, None]).reshape(-1)[:n]


def f32(x):
    return float(np.float32(x))


def kernel_step(p, g, st, maps, step):
    """kOptimizerStatic8bit2StateBlockwise, OPTIMIZER == ADAM, gnorm_scale 1, float32 throughout."""
    b1, b2 = np.float32(HYPER["beta1"]), np.float32(HYPER["beta2"])
    lr, eps, wd = np.float32(HYPER["lr"]), np.float32(HYPER["eps"]), np.float32(HYPER["weight_decay"])
    c1 = np.float32(1) - np.power(b1, np.float32(step))
    c2 = np.sqrt(np.float32(1) - np.power(b2, np.float32(step)))
    step_size = np.float32(-lr * c2) / c1
    s2 = dequantize(st["v"], st["v_absmax"], maps[1])
    s2 = s2 * float(b2) + ((f32(np.float32(1) - b2) * g) * g)
    s1 = dequantize(st["m"], st["m_absmax"], maps[0])
    s1 = s1 * float(b1) + f32(np.float32(1) - b1) * g
    p = p + float(step_size) * (s1 / (torch.sqrt(s2) + float(np.float32(c2 * eps))))
    p = p * f32(np.float32(1) - lr * wd)
    st["m"], st["m_absmax"] = kernel_quantize(s1, maps[0], True, True)
    st["v"], st["v_absmax"] = kernel_quantize(s2, maps[1], False, False)
    return p


def torch_adamw_step(p, g, m, v, step):
    """torch.optim.AdamW's element-wise sequence (gspo's float32 moments below min_8bit_size)."""
    h = HYPER
    p = p * (1 - h["lr"] * h["weight_decay"])
    m.mul_(h["beta1"]).add_(g, alpha=1 - h["beta1"])
    v.mul_(h["beta2"]).addcmul_(g, g, value=1 - h["beta2"])
    bc1, bc2 = 1 - h["beta1"] ** step, 1 - h["beta2"] ** step
    return p.addcdiv(m, (v.sqrt() / math.sqrt(bc2)).add_(h["eps"]), value=-h["lr"] / bc1)


def quantise_cases(out, maps, gen):
    n = 70000 + 77  # a short last block
    x = torch.randn(n, generator=gen) * torch.exp(torch.randn(n, generator=gen) * 3)
    x[256:512] = 0  # an all-zero block
    for name, signed, data in (("signed", True, x), ("unsigned", False, x.abs())):
        code = maps[0] if signed else maps[1]
        bnb_codes, bnb_absmax = F.quantize_blockwise(data, code=code, blocksize=BLOCK)
        codes, absmax = kernel_quantize(data, code, signed, False)
        assert torch.equal(absmax, bnb_absmax.absmax if hasattr(bnb_absmax, "absmax") else bnb_absmax)
        out[f"x_{name}"] = data
        out[f"codes_{name}"] = codes
        out[f"absmax_{name}"] = absmax
        out[f"bnb_cpu_codes_{name}"] = bnb_codes
        rand = torch.randint(0, 256, (n,), generator=gen, dtype=torch.uint8)
        out[f"rand_codes_{name}"] = rand
        out[f"deq_{name}"] = F.dequantize_blockwise(rand, absmax=absmax, code=code, blocksize=BLOCK)


def optimizer_cases(out, maps, gen):
    params = [torch.randn(s, generator=gen) * 0.1 for s in SHAPES]
    grads = [[torch.randn(s, generator=gen) * 0.01 * (1 + k % 3) for s in SHAPES] for k in range(STEPS)]
    for i, p in enumerate(params):
        out[f"p0_{i}"] = p.clone()
        for k in range(STEPS):
            out[f"g_{k}_{i}"] = grads[k][i]
    # bitsandbytes' own AdamW8bit on the CPU
    bp = [torch.nn.Parameter(p.clone()) for p in params]
    h = HYPER
    opt = bnb.optim.AdamW8bit(bp, lr=h["lr"], betas=(h["beta1"], h["beta2"]), eps=h["eps"],
                              weight_decay=h["weight_decay"])
    for k in range(STEPS):
        for i, p in enumerate(bp):
            p.grad = grads[k][i].clone()
        opt.step()
    for i, p in enumerate(bp):
        out[f"bnb_p_{i}"] = p.detach().clone()
    # the transcribed kernel (8-bit tensors) and torch's AdamW sequence (the float32 one)
    for i, p in enumerate(params):
        p = p.reshape(-1).clone()
        n = p.numel()
        if n >= 4096:
            blocks = -(-n // BLOCK)
            st = dict(m=torch.zeros(n, dtype=torch.uint8), v=torch.zeros(n, dtype=torch.uint8),
                      m_absmax=torch.zeros(blocks), v_absmax=torch.zeros(blocks))
            for k in range(STEPS):
                p = kernel_step(p, grads[k][i].reshape(-1), st, maps, k + 1)
            for key, t in st.items():
                out[f"kernel_{key}_{i}"] = t
        else:
            m, v = torch.zeros(n), torch.zeros(n)
            for k in range(STEPS):
                p = torch_adamw_step(p, grads[k][i].reshape(-1), m, v, k + 1)
        out[f"kernel_p_{i}"] = p.view(SHAPES[i])


def main():
    out_path = sys.argv[1]
    torch.set_num_threads(1)
    maps = (F.create_dynamic_map(signed=True), F.create_dynamic_map(signed=False))
    out = {"map_signed": maps[0], "map_unsigned": maps[1]}
    gen = torch.Generator().manual_seed(56)
    quantise_cases(out, maps, gen)
    optimizer_cases(out, maps, gen)
    torch.save(out, out_path)
    print(f"wrote {len(out)} tensors to {out_path}")


if __name__ == "__main__":
    main()
