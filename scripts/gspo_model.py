"""The TorchScript policy architecture that gspo's model contract (docs/model-contract.md) is written against.

A Llama-style decoder (RMSNorm, RoPE in the rotate-half convention, grouped-query attention, SwiGLU MLP), with
switches for the Qwen2 (qkv bias) and Qwen3 (q/k RMSNorm) variants. Attention is
torch.nn.functional.scaled_dot_product_attention (fused kernels, no [heads, T, T] scores kept for backward) with
grouped-query heads through enable_gqa (no K/V copies per query head). Exported for the pinned torch 2.11.

Attention masks: a full-sequence pass (forward, logits_from, the per-layer methods, prefill) whose rows hold their real
tokens as a prefix (no left padding) runs causal SDPA with no mask at all; left-padded rows get one boolean
[B, 1, T, T] mask shared by every layer. gspo's trainer right-aligns rows before the per-layer pass, so training
always takes the mask-free form. Decode steps get a [B, 1, 1, S] boolean mask; the slot passes on CUDA in bf16/fp16
take no mask at all: varlen_attention (the flash kernel's per-row key lengths over the sequence-major cache).

Padding: rows may be left-padded (prompts) and right-padded (responses); attention_mask marks real tokens and
positions are cumsum(attention_mask) - 1, so a token's position does not depend on the padding before it.
Outputs at padded query positions are unspecified.

RewardModel: the same decoder with a one-output score head (Hugging Face's *ForSequenceClassification, num_labels 1)
and one method, score: each row's score at its last real token.
"""
import json
import math
from typing import List, Optional, Tuple

import torch
from torch import Tensor, nn

CONTRACT_VERSION = 1
LAYER_API_VERSION = 1  # the optional per-layer methods (docs/model-contract.md, "Per-layer methods")
SLOT_API_VERSION = 3  # the optional slot methods (docs/model-contract.md, "Slot methods")
REWARD_API_VERSION = 1  # RewardModel's `score` (docs/model-contract.md, "Reward models (reward_api 1)")


def rope_inv_freq(head_dim: int, theta: float, scaling) -> Tensor:
    """RoPE inverse frequencies (float64), with Hugging Face's 'llama3' scaling when given ('linear' scales positions
    instead; 'default'/None leaves them)."""
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2).double() / head_dim))
    kind = None if not scaling else scaling.get("rope_type", scaling.get("type"))
    if kind in (None, "default", "linear"):
        return inv
    if kind != "llama3":
        raise ValueError(f"unsupported rope_scaling type {kind!r} (supported: linear, llama3)")
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old_ctx = scaling["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old_ctx / low, old_ctx / high
    wavelen = 2 * math.pi / inv
    scaled = torch.where(wavelen > low_wavelen, inv / factor, inv)
    smooth = (old_ctx / wavelen - low) / (high - low)
    mid = (1 - smooth) * scaled / factor + smooth * scaled
    is_mid = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
    return torch.where(is_mid, mid, scaled)


class Linear(nn.Linear):
    """nn.Linear (same parameters and state-dict names) whose one-row float32 CPU product (batch-1 decode) runs as a
    batched product over 4 blocks of output rows: MKL runs a one-row `linear` on one thread whatever the
    intra-op thread count, while `bmm` spreads its batch over the threads, so two threads read the weights at
    ~1.6x the rate (docs/perf/limits.md). Same dot products, different summation order (float rounding only). Every
    other input (training and prefill rows, CUDA, other dtypes, out_features not a multiple of 4) takes
    the plain `linear`."""

    def forward(self, x: Tensor) -> Tensor:
        parts = 4  # blocks of output rows (>= the threads that can help; 4 costs no more than 2 on 2 threads)
        n = self.weight.size(0)
        k = self.weight.size(1)
        if x.numel() == k and not x.is_cuda and x.dtype == torch.float32 and n % parts == 0:
            w = self.weight.view(parts, n // parts, k).transpose(1, 2)  # [parts, k, n / parts], a view
            y = torch.bmm(x.reshape(1, 1, k).expand(parts, 1, k), w).reshape(list(x.shape[:-1]) + [n])
            if self.bias is not None:
                y = y + self.bias
            return y
        return torch.nn.functional.linear(x, self.weight, self.bias)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * y.to(x.dtype)


def rotate_half(x: Tensor) -> Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def varlen_attention(q: Tensor, k: Tensor, v: Tensor, cu_q: Tensor, cu_k: Tensor, used_k: Optional[Tensor],
                     max_q: int, max_k: int, causal: bool) -> Tensor:
    """FlashAttention-2's variable-length forward (torch's own build, CUDA, fp16/bf16): sequence b's queries are rows
    [cu_q[b], cu_q[b + 1]) of q [Nq, heads, D]; its keys and values start at row cu_k[b] of k, v [Nk, kv_heads, D] and
    number used_k[b] (or cu_k[b + 1] - cu_k[b] when None). Grouped-query heads natively; causal aligns the queries
    with the last keys (bottom right). Reads each sequence's keys once, no mask. Returns [Nq, heads, D]."""
    return torch.ops.aten._flash_attention_forward(q, k, v, cu_q, cu_k, max_q, max_k, 0.0, causal, False,
                                                   seqused_k=used_k)[0]


class Attention(nn.Module):
    def __init__(self, hidden: int, n_heads: int, n_kv_heads: int, head_dim: int, qkv_bias: bool, qk_norm: bool,
                 eps: float, o_bias: bool = False):
        super().__init__()
        self.n_heads = n_heads
        self.n_kv_heads = n_kv_heads
        self.head_dim = head_dim
        self.q_proj = Linear(hidden, n_heads * head_dim, bias=qkv_bias)
        self.k_proj = Linear(hidden, n_kv_heads * head_dim, bias=qkv_bias)
        self.v_proj = Linear(hidden, n_kv_heads * head_dim, bias=qkv_bias)
        self.o_proj = Linear(n_heads * head_dim, hidden, bias=o_bias)
        self.qk_norm = qk_norm
        self.q_norm = RMSNorm(head_dim, eps)
        self.k_norm = RMSNorm(head_dim, eps)

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor, mask: Optional[Tensor], kv: Optional[Tensor], start: int,
                position: Optional[Tensor], slots: Optional[Tensor] = None,
                source: Optional[Tensor] = None, columns: Optional[Tensor] = None) -> Tensor:
        # x [B, T, H]; cos/sin [B, 1, T, D]; mask: bool [B, 1, T, S] (True = may attend) or None = causal over T = S
        # columns, or in the slot methods int32 varlen metadata (varlen_meta: the flash kernel reads each row's live
        # keys, no mask); kv [2, B, S_max, Hkv, D] (sequence-major: a row's columns are contiguous) or None.
        # position (int64 [1], T = 1): write the new column there and attend over all S_max columns (static shapes).
        # Slot methods: with `source`, attention is over the T local columns and input row source[m]'s keys/values go
        # to cache row slots[m], columns [0, T) (prefill_slots); with `columns` ([B, T]), input row b's tokens go to
        # cache row slots[b] at columns[b] and attention is over that row's first `start` columns under `mask`
        # (append_slots); with `slots` alone (T = 1), row b's new column goes to cache column slots[b] of cache row b
        # (of the first B cache rows) and attention is over the first `start` cache columns (decode_slots).
        b, t, _ = x.shape
        q, k, v = self._project(x, cos, sin)
        varlen = mask is not None and mask.dtype == torch.int32
        if kv is not None and columns is not None and slots is not None:
            rows = slots.view(b, 1).expand(b, t)
            kv[0].index_put_([rows, columns], k.transpose(1, 2))
            kv[1].index_put_([rows, columns], v.transpose(1, 2))
            if varlen and mask is not None:
                # row b's t queries are the last t of its first columns[b] + t keys (causal from the bottom right).
                width = kv.shape[2]
                keys_at = (torch.cat([slots, slots.narrow(0, 0, 1)]) * width).to(torch.int32)
                out = varlen_attention(q.transpose(1, 2).reshape(b * t, self.n_heads, self.head_dim),
                                       kv[0].view(-1, self.n_kv_heads, self.head_dim),
                                       kv[1].view(-1, self.n_kv_heads, self.head_dim),
                                       mask[0], keys_at, mask[1].narrow(0, 0, b), t, width, True)
                return self.o_proj(out.view(b, t, self.n_heads * self.head_dim))
            k = kv[0].index_select(0, slots).narrow(1, 0, start).transpose(1, 2)
            v = kv[1].index_select(0, slots).narrow(1, 0, start).transpose(1, 2)
        elif kv is not None and source is not None and slots is not None:
            kv[0].narrow(1, 0, t).index_copy_(0, slots, k.transpose(1, 2).index_select(0, source))
            kv[1].narrow(1, 0, t).index_copy_(0, slots, v.transpose(1, 2).index_select(0, source))
            if varlen and mask is not None:
                # each prompt causal over its own T columns (right padding: real tokens never see it)
                out = varlen_attention(q.transpose(1, 2).reshape(b * t, self.n_heads, self.head_dim),
                                       k.transpose(1, 2).reshape(b * t, self.n_kv_heads, self.head_dim),
                                       v.transpose(1, 2).reshape(b * t, self.n_kv_heads, self.head_dim),
                                       mask[0], mask[0], None, t, t, True)
                return self.o_proj(out.view(b, t, self.n_heads * self.head_dim))
            mask = None
        elif kv is not None and slots is not None:
            at = slots.view(b, 1, 1, 1).expand(b, 1, self.n_kv_heads, self.head_dim)
            k_rows = kv[0].narrow(0, 0, b)  # the first b slots: the sampler keeps its running rows in front
            v_rows = kv[1].narrow(0, 0, b)
            k_rows.scatter_(1, at, k.transpose(1, 2))
            v_rows.scatter_(1, at, v.transpose(1, 2))
            if varlen and mask is not None:
                # one query a row over its own first min(column + 1, width) keys: row b's keys start at b * S_max
                out = varlen_attention(q.reshape(b, self.n_heads, self.head_dim),
                                       kv[0].view(-1, self.n_kv_heads, self.head_dim),
                                       kv[1].view(-1, self.n_kv_heads, self.head_dim),
                                       mask[0], mask[0] * kv.shape[2], mask[1].narrow(0, 0, b), 1, start, False)
                return self.o_proj(out.view(b, t, self.n_heads * self.head_dim))
            if not x.is_cuda and b > 1:
                return self.o_proj(self._attend_each(q, kv[0], kv[1], slots, start).transpose(1, 2)
                                   .reshape(b, t, self.n_heads * self.head_dim))
            k = k_rows.narrow(1, 0, start).transpose(1, 2)
            v = v_rows.narrow(1, 0, start).transpose(1, 2)
        elif kv is not None and position is not None:
            kv[0].index_copy_(1, position, k.transpose(1, 2))
            kv[1].index_copy_(1, position, v.transpose(1, 2))
            k = kv[0].transpose(1, 2)
            v = kv[1].transpose(1, 2)
        elif kv is not None:
            kv[0, :, start:start + t] = k.transpose(1, 2)
            kv[1, :, start:start + t] = v.transpose(1, 2)
            k = kv[0, :, :start + t].transpose(1, 2)
            v = kv[1, :, :start + t].transpose(1, 2)
        # [B, heads, T, D]; the query heads of one KV head share it (enable_gqa), no repeat_interleave copies.
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None,
                                                               enable_gqa=self.n_heads != self.n_kv_heads)
        out = out.transpose(1, 2).reshape(b, t, self.n_heads * self.head_dim)
        return self.o_proj(out)

    def _project(self, x: Tensor, cos: Tensor, sin: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        """x [B, T, H] -> q [B, heads, T, D], k and v [B, kv heads, T, D]: projected, normed (q/k norm), rotated."""
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.n_heads, self.head_dim)
        k = self.k_proj(x).view(b, t, self.n_kv_heads, self.head_dim)
        v = self.v_proj(x).view(b, t, self.n_kv_heads, self.head_dim)
        if self.qk_norm:
            q = self.q_norm(q)
            k = self.k_norm(k)
        q = q.transpose(1, 2)
        k = k.transpose(1, 2)
        v = v.transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        # norms kept in float32 beside bf16 projections (RMSNorm's weight * y promotes) would send float32 queries and
        # keys beside bf16 values and cache: attention computes in the projections' dtype (a no-op when they agree)
        return q.to(v.dtype), k.to(v.dtype), v

    def shared(self, xp: Tensor, cos_p: Tensor, sin_p: Tensor, xr: Tensor, cos_r: Tensor, sin_r: Tensor,
               group: Tensor, prompt_len: Tensor) -> Tuple[Tensor, Tensor]:
        """Attention of responses that share prompts, each prompt run once (shared-prefix training, #71): xp [K, P, H]
        the K prompts (real tokens first, right-padded), xr [M, R, H] the M responses (right-padded), response m's
        prompt group[m] (int64 [M]) of prompt_len[k] real tokens; cos/sin as forward's, the responses' positions
        continuing from their prompt's end. The prompts attend causally; response m's tokens attend to its prompt's
        real tokens and causally to its own. Equal to forward over each prompt + response row (the prompt's keys and
        values copied to each of its responses here, their gradients summed back)."""
        qp, kp, vp = self._project(xp, cos_p, sin_p)
        qr, kr, vr = self._project(xr, cos_r, sin_r)
        gqa = self.n_heads != self.n_kv_heads
        op = torch.nn.functional.scaled_dot_product_attention(qp, kp, vp, is_causal=True, enable_gqa=gqa)
        p, r = xp.shape[1], xr.shape[1]
        keys = torch.cat([kp.index_select(0, group), kr], 2)
        values = torch.cat([vp.index_select(0, group), vr], 2)
        col = torch.arange(p + r, device=xr.device).view(1, 1, 1, p + r)
        row = torch.arange(r, device=xr.device).view(1, 1, r, 1)
        real = prompt_len.index_select(0, group).view(-1, 1, 1, 1)
        mask = torch.where(col < p, col < real, (col - p) <= row)  # [M, 1, R, P + R]
        orr = torch.nn.functional.scaled_dot_product_attention(qr, keys, values, attn_mask=mask, enable_gqa=gqa)
        k_, m_ = xp.shape[0], xr.shape[0]
        return (self.o_proj(op.transpose(1, 2).reshape(k_, p, self.n_heads * self.head_dim)),
                self.o_proj(orr.transpose(1, 2).reshape(m_, r, self.n_heads * self.head_dim)))

    def _attend_each(self, q: Tensor, k: Tensor, v: Tensor, columns: Tensor, width: int) -> Tensor:
        """decode_slots on the CPU: each slot attends over its own columns [0, columns[i]] only. One masked SDPA over
        the batch would read every slot's keys and values up to the longest slot's column (memory-bandwidth bound on
        a CPU); a call per slot reads what each slot needs (a few microseconds of dispatch each). k, v: the
        sequence-major cache [S, S_max, Hkv, D]; returns [B, heads, 1, D]."""
        outs: List[Tensor] = []
        cols: List[int] = columns.tolist()
        for i in range(len(cols)):
            n = min(cols[i] + 1, width)
            outs.append(torch.nn.functional.scaled_dot_product_attention(
                q[i:i + 1], k[i:i + 1, :n].transpose(1, 2), v[i:i + 1, :n].transpose(1, 2),
                enable_gqa=self.n_heads != self.n_kv_heads))
        return torch.cat(outs, 0)


class MLP(nn.Module):
    def __init__(self, hidden: int, intermediate: int):
        super().__init__()
        self.gate_proj = Linear(hidden, intermediate, bias=False)
        self.up_proj = Linear(hidden, intermediate, bias=False)
        self.down_proj = Linear(intermediate, hidden, bias=False)
        self.register_buffer("last_load", torch.zeros(0), persistent=False)  # dense: no routing to report
        self.top_k = 0  # (what moe_routing reads of a dense layer)
        self.norm_topk_prob = False

    def forward(self, x: Tensor) -> Tensor:
        return self.down_proj(torch.nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))

    def routed(self, x: Tensor, routes: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
        """SparseMoE.routed's form for a dense layer: no routing, an empty int64 tensor for it."""
        return self.forward(x), torch.zeros(0, dtype=torch.long, device=x.device)


# On CUDA, passes of at most this many tokens (a decode step of a slot pool of that many rows) run every expert on
# every token, weighted by a gating matrix that is zero off each token's top-k: no data-dependent shape, no read back
# to the host, so a decode step can be captured as a CUDA graph (the manifest's moe_capture_rows tells gspo). The cost
# is num_experts / top_k times the routed FLOPs; a decode step of T rows reads every expert's weights anyway once
# T x top_k covers the experts, so on an H200 (4.8 TB/s, ~990 bf16 TFLOPS) the dense pass stays within
# T x 4.8e12 / 9.9e14 = T / 206 of the weight-reading floor: 1.24x at 256 rows, and the routed path's per-expert
# host syncs (E x layers a step) cost more than that. Larger passes (prefill, a bigger pool) are routed as on the CPU.
MOE_CAPTURE_ROWS = 256


class SparseMoE(nn.Module):
    """Qwen3-MoE feed-forward: a linear router, softmax over experts, top-k per token (renormalised when
    norm_topk_prob), each selected expert's SwiGLU output weighted and summed. Only routed tokens reach an expert
    (but on CUDA in passes of at most capture_rows tokens: MOE_CAPTURE_ROWS)."""

    def __init__(self, hidden: int, intermediate: int, num_experts: int, top_k: int, norm_topk_prob: bool,
                 capture_rows: int = MOE_CAPTURE_ROWS):
        super().__init__()
        self.gate = Linear(hidden, num_experts, bias=False)
        self.experts = nn.ModuleList([MLP(hidden, intermediate) for _ in range(num_experts)])
        self.top_k = top_k
        self.norm_topk_prob = norm_topk_prob
        self.capture_rows = capture_rows
        # Fraction of the last forward's routing slots (tokens x top_k, padding included) each expert received.
        self.register_buffer("last_load", torch.zeros(num_experts), persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.routed(x, None)[0]

    def routed(self, x: Tensor, routes: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
        """x [..., H] -> (output [..., H], the top-k experts of each token [..., top_k] int64). With `routes` (int64
        [..., top_k], e.g. recorded by an earlier pass) those experts are used instead of the router's top-k, their
        gating weights still taken from the current router's softmax (renormalised over them when norm_topk_prob): with
        routes equal to the router's own choice the output is bit for bit the unrouted one (Routing Replay)."""
        shape = x.shape
        flat = x.reshape(-1, shape[-1])
        probs = torch.softmax(self.gate(flat).float(), dim=-1)
        if routes is None:
            weights, chosen = torch.topk(probs, self.top_k, dim=-1)
        else:
            chosen = routes.reshape(-1, self.top_k).to(torch.long)
            weights = probs.gather(-1, chosen)
        if self.norm_topk_prob:
            weights = weights / weights.sum(-1, keepdim=True)
        weights = weights.to(flat.dtype)
        # (scatter_add, not bincount: bincount sizes its output from the ids' maximum, read on the host)
        load = torch.zeros(len(self.experts), dtype=torch.float, device=flat.device)
        self.last_load = load.scatter_add(0, chosen.reshape(-1), torch.ones(chosen.numel(), device=flat.device)) \
            / chosen.numel()
        if flat.is_cuda and flat.size(0) <= self.capture_rows and not torch.is_grad_enabled():
            out = self.dense(flat, chosen, weights)
        else:
            out = self.sparse(flat, chosen, weights)
        out_shape: List[int] = list(shape[:-1])
        out_shape.append(self.top_k)
        return out.reshape(shape), chosen.reshape(out_shape)

    def sparse(self, flat: Tensor, chosen: Tensor, weights: Tensor) -> Tensor:
        """Each expert on the tokens routed to it (data-dependent shapes: the host reads each expert's count)."""
        out = torch.zeros_like(flat)
        for j, expert in enumerate(self.experts):
            token, slot = torch.where(chosen == j)
            if token.numel() > 0:
                y = expert(flat.index_select(0, token)) * weights[token, slot].unsqueeze(-1)
                out = out.index_add(0, token, y)
        return out

    def dense(self, flat: Tensor, chosen: Tensor, weights: Tensor) -> Tensor:
        """Every expert on every token, weighted by the gating matrix [T, E] (zero off each token's top-k), summed in
        the experts' order as sparse() sums them: fixed shapes, nothing read back (capturable). Equal to sparse()
        up to the matmuls' blocking (an unchosen expert adds an exact zero)."""
        gating = torch.zeros(flat.size(0), len(self.experts), dtype=flat.dtype, device=flat.device)
        gating = gating.scatter(1, chosen, weights)
        out = torch.zeros_like(flat)
        for j, expert in enumerate(self.experts):
            out = out + expert(flat) * gating[:, j:j + 1]
        return out


class Block(nn.Module):
    def __init__(self, cfg: dict, moe: bool = False):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.self_attn = Attention(cfg["hidden_size"], cfg["num_heads"], cfg["num_kv_heads"], cfg["head_dim"],
                                   cfg.get("qkv_bias", False), cfg.get("qk_norm", False), cfg["rms_norm_eps"],
                                   cfg.get("o_bias", False))
        self.post_attention_layernorm = RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        if moe:
            self.mlp = SparseMoE(cfg["hidden_size"], cfg["moe_intermediate_size"], cfg["num_experts"],
                                 cfg["num_experts_per_tok"], cfg.get("norm_topk_prob", True))
        else:
            self.mlp = MLP(cfg["hidden_size"], cfg["intermediate_size"])

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor, mask: Optional[Tensor], kv: Optional[Tensor], start: int,
                position: Optional[Tensor], slots: Optional[Tensor] = None,
                source: Optional[Tensor] = None, columns: Optional[Tensor] = None) -> Tensor:
        h, n = self.cached_attention(x, cos, sin, mask, kv, start, position, slots, source, columns)
        return h + self.mlp(n)

    def cached_attention(self, x: Tensor, cos: Tensor, sin: Tensor, mask: Optional[Tensor], kv: Optional[Tensor],
                         start: int, position: Optional[Tensor], slots: Optional[Tensor] = None,
                         source: Optional[Tensor] = None, columns: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
        """forward up to the feed-forward: (h, n), h = x + attention (the cache written as forward writes it) and n its
        post-attention norm; forward = h + mlp(n)."""
        h = x + self.self_attn(self.input_layernorm(x), cos, sin, mask, kv, start, position, slots, source, columns)
        return h, self.post_attention_layernorm(h)

    def routed(self, x: Tensor, cos: Tensor, sin: Tensor, mask: Optional[Tensor],
               routes: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
        """forward over a full sequence (no cache), the MLP through its routed form: (output, experts chosen)."""
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask, None, 0, None, None, None)
        y, chosen = self.mlp.routed(self.post_attention_layernorm(x), routes)
        return x + y, chosen

    def shared(self, xp: Tensor, cos_p: Tensor, sin_p: Tensor, xr: Tensor, cos_r: Tensor, sin_r: Tensor,
               group: Tensor, prompt_len: Tensor, routes_p: Optional[Tensor],
               routes_r: Optional[Tensor]) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        """routed() over rows that share prompts, each prompt once (Attention.shared): (prompts out, responses out,
        the prompts' experts, the responses' experts)."""
        hp, hr = self.self_attn.shared(self.input_layernorm(xp), cos_p, sin_p, self.input_layernorm(xr), cos_r, sin_r,
                                       group, prompt_len)
        xp = xp + hp
        xr = xr + hr
        yp, chosen_p = self.mlp.routed(self.post_attention_layernorm(xp), routes_p)
        yr, chosen_r = self.mlp.routed(self.post_attention_layernorm(xr), routes_r)
        return xp + yp, xr + yr, chosen_p, chosen_r

    def attention(self, x: Tensor, cos: Tensor, sin: Tensor, mask: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
        """The layer up to its feed-forward over a full sequence: (x + attention, its post-attention norm). The
        layer's output is the first plus the feed-forward of the second."""
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask, None, 0, None, None, None)
        return x, self.post_attention_layernorm(x)


class CausalLM(nn.Module):
    """The contract's methods (forward, init_cache, prefill, decode, reorder_cache) and the optional ones
    (logits_from, decode_static, expert_load, the per-layer methods)."""

    def __init__(self, cfg: dict):
        super().__init__()
        self.num_layers = cfg["num_layers"]
        self.n_kv_heads = cfg["num_kv_heads"]
        self.head_dim = cfg["head_dim"]
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.layers = nn.ModuleList([Block(cfg, i in cfg.get("moe_layers", [])) for i in range(cfg["num_layers"])])
        self.norm = RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.lm_head = Linear(cfg["hidden_size"], cfg["vocab_size"], bias=cfg.get("lm_head_bias", False))
        if cfg.get("tie_word_embeddings", False):
            self.lm_head.weight = self.embed_tokens.weight
        inv_freq = rope_inv_freq(self.head_dim, cfg["rope_theta"], cfg.get("rope_scaling"))
        pos = torch.arange(cfg["max_seq_len"]).double()
        if (cfg.get("rope_scaling") or {}).get("rope_type", (cfg.get("rope_scaling") or {}).get("type")) == "linear":
            pos = pos / cfg["rope_scaling"]["factor"]
        freqs = torch.outer(pos, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_table", emb.cos().float(), persistent=True)
        self.register_buffer("sin_table", emb.sin().float(), persistent=True)
        self.varlen_anywhere = False  # tests: the flash path's index arithmetic on the CPU against a reference kernel
        # FlashAttention-2 needs sm80+: gspo (model/policy.cpp gate_flash) sets this False on an older GPU, where the
        # slot passes then attend through SDPA under a mask (TorchScript cannot ask the device itself)
        self.flash_ok = True

    def _rope(self, attention_mask: Tensor, start: int, total: int, dtype: torch.dtype) -> Tuple[Tensor, Tensor]:
        """cos/sin [B, 1, total - start, D] of columns [start, total) at positions cumsum(mask) - 1."""
        positions = (attention_mask[:, :total].cumsum(-1) - 1).clamp(min=0)[:, start:total]
        return self.cos_table[positions].to(dtype).unsqueeze(1), self.sin_table[positions].to(dtype).unsqueeze(1)

    def _mask(self, attention_mask: Tensor, start: int, total: int) -> Optional[Tensor]:
        """None (causal SDPA, no mask tensor) when queries cover every column from 0 and each row's real tokens form
        a prefix, so causality alone excludes the padding (right padding is only seen by padded queries, whose
        outputs are unspecified). Otherwise bool [B, 1, T, total]: key <= query and real, or the query's own column
        (so a padded query row is never fully masked: NaN-free outputs and gradients)."""
        b = attention_mask.shape[0]
        m = attention_mask[:, :total]
        if start == 0 and bool((m[:, 1:] <= m[:, :-1]).all()):
            return None
        q_idx = torch.arange(start, total, device=m.device).view(1, 1, total - start, 1)
        k_idx = torch.arange(0, total, device=m.device).view(1, 1, 1, total)
        return ((k_idx <= q_idx) & (m.view(b, 1, 1, total) > 0)) | (k_idx == q_idx)

    def _run(self, input_ids: Tensor, attention_mask: Tensor, cache: Optional[Tensor], start: int,
             first: int) -> Tensor:
        """The layers over every column; the final norm and lm_head only over columns [first, T) (-1: the last)."""
        total = start + input_ids.shape[1]
        x = self.embed_tokens(input_ids)
        cos, sin = self._rope(attention_mask, start, total, x.dtype)
        mask = self._mask(attention_mask, start, total)
        i = 0
        for layer in self.layers:
            kv: Optional[Tensor] = None
            if cache is not None:
                kv = cache[i]
            x = layer(x, cos, sin, mask, kv, start, None)
            i += 1
        if first < 0:
            x = x[:, -1:, :]
        elif first > 0:
            x = x[:, first:, :]
        return self.lm_head(self.norm(x))

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        """[B, T] int64 ids and mask -> [B, T, V] logits in the weights' dtype (float32 for float32 weights);
        gspo takes the float32 log-softmax itself, in chunks, so a bf16 model never holds float32 [B, T, V]."""
        return self._run(input_ids, attention_mask, None, 0, 0)

    @torch.jit.export
    def logits_from(self, input_ids: Tensor, attention_mask: Tensor, first: int) -> Tensor:
        """forward's logits of columns [first, T) only: [B, T - first, V]. Training needs the response columns
        alone, so the lm_head (a large share of a small model's FLOPs, and [B, T, V] of memory) skips the prompt."""
        return self._run(input_ids, attention_mask, None, 0, first)

    @torch.jit.export
    def init_cache(self, batch: int, max_len: int) -> Tensor:
        """An empty KV cache for `batch` rows and `max_len` columns (layout private to the model; slot_api 3:
        [layers, 2, rows, columns, kv_heads, head_dim], each row's columns contiguous, so the flash kernel reads a
        row's live keys as one block)."""
        w = self.embed_tokens.weight
        return torch.zeros([self.num_layers, 2, batch, max_len, self.n_kv_heads, self.head_dim], dtype=w.dtype,
                           device=w.device)

    @torch.jit.export
    def prefill(self, input_ids: Tensor, attention_mask: Tensor, cache: Tensor) -> Tensor:
        """Fills cache columns [0, T) from [B, T] ids; returns [B, V] float32 logits of the last column."""
        return self._run(input_ids, attention_mask, cache, 0, -1).squeeze(1).float()

    @torch.jit.export
    def decode(self, input_ids: Tensor, attention_mask: Tensor, cache: Tensor, start: int) -> Tensor:
        """One new column: ids [B, 1] at column `start`, mask [B, start + 1]; returns [B, V] float32 logits."""
        return self._run(input_ids, attention_mask, cache, start, -1).squeeze(1).float()

    @torch.jit.export
    def decode_static(self, input_ids: Tensor, attention_mask: Tensor, cache: Tensor, position: Tensor) -> Tensor:
        """Optional: decode with shapes that stay the same from step to step, so a CUDA graph can replay it. ids
        [B, 1] go to column `position` (int64 [1] tensor); attention_mask [B, S_max] covers every cache column and
        is 0 past `position`. Returns [B, V] float32 logits equal to decode's (within float rounding)."""
        b = input_ids.shape[0]
        s = attention_mask.shape[1]
        pos = (attention_mask.cumsum(-1) - 1).clamp(min=0).index_select(1, position)
        x = self.embed_tokens(input_ids)
        cos = self.cos_table[pos].to(x.dtype).unsqueeze(1)
        sin = self.sin_table[pos].to(x.dtype).unsqueeze(1)
        k_idx = torch.arange(0, s, device=input_ids.device).view(1, 1, 1, s)
        at = position.view(1, 1, 1, 1)
        mask = ((k_idx <= at) & (attention_mask.view(b, 1, 1, s) > 0)) | (k_idx == at)
        i = 0
        for layer in self.layers:
            x = layer(x, cos, sin, mask, cache[i], 0, position)
            i += 1
        return self.lm_head(self.norm(x)).squeeze(1).float()

    # ---- Optional slot methods (slot_api 1): the cache as a pool of rows ("slots") that hold one sequence each, its
    # tokens from column 0 (no padding inside a row), so rows at different lengths decode together and a finished
    # row's slot takes the next waiting sequence (continuous batching). A token's position is its column.

    @torch.jit.export
    def slot_api(self) -> int:
        """Version of the slot methods below (docs/model-contract.md): 2 = 1 and append_slots; 3 = 2 with the
        sequence-major cache (decode reads each row's live keys only, through the flash kernel on CUDA)."""
        return 3  # SLOT_API_VERSION

    @torch.jit.export
    def prefill_slots(self, input_ids: Tensor, lengths: Tensor, cache: Tensor, slots: Tensor,
                      source: Tensor) -> Tensor:
        """Prefills K prompts once and shares them: input_ids [K, T] right-padded (row k's real tokens are its first
        lengths[k]), cache rows slots[m] get prompt source[m]'s keys/values in columns [0, T) (columns past a prompt's
        length hold padding the decode mask never reaches before overwriting). Returns [K, V] float32 logits of each
        prompt's last real token."""
        x, cos, sin, mask, cols = self.prefill_context(input_ids, lengths)
        i = 0
        for layer in self.layers:
            x = layer(x, cos, sin, mask, cache[i], 0, None, slots, source, cols)
            i += 1
        return self.slot_logits(x, lengths - 1)

    @torch.jit.export
    def decode_slots(self, input_ids: Tensor, cache: Tensor, columns: Tensor, width: int) -> Tensor:
        """One token for each of the first S cache rows (S <= the cache's rows): ids [S, 1], row s's token written at
        column columns[s] (its position), attending over that row's columns [0, columns[s]] (width >= every
        columns[s] + 1 bounds the columns read; a row whose column is >= width is written but attends over all
        `width`). Returns [S, V] float32 logits. Shapes depend on S and width only, so with width = the cache's length
        a CUDA graph can replay it."""
        x, cos, sin, mask, cols = self.decode_context(input_ids, columns, width)
        i = 0
        for layer in self.layers:
            x = layer(x, cos, sin, mask, cache[i], width, None, columns, None, cols)
            i += 1
        return self.slot_logits(x, None)

    @torch.jit.export
    def append_slots(self, input_ids: Tensor, lengths: Tensor, cache: Tensor, slots: Tensor, columns: Tensor,
                     width: int) -> Tensor:
        """Appends tokens to M slots at their current columns (text written into a running sequence, e.g. a tool's
        output): row m's first lengths[m] tokens of input_ids [M, K] (right-padded) go to cache row slots[m], columns
        [columns[m], columns[m] + lengths[m]) (their positions), each attending over that row's columns up to its own.
        Needs columns[m] + K <= the cache's columns (padding is written past the real tokens, where nothing reads it
        before it is overwritten) and width >= max(columns + lengths). Returns [M, V] float32 logits of each row's
        last appended token."""
        return self._append(input_ids, lengths, cache, slots, columns, width)

    def _append(self, input_ids: Tensor, lengths: Tensor, cache: Tensor, slots: Tensor, columns: Tensor,
                width: int) -> Tensor:
        x, cos, sin, mask, cols = self.append_context(input_ids, columns, width)
        i = 0
        for layer in self.layers:
            x = layer(x, cos, sin, mask, cache[i], width, None, slots, None, cols)
            i += 1
        return self.slot_logits(x, lengths - 1)

    @torch.jit.export
    def copy_slots(self, cache: Tensor, src: Tensor, dst: Tensor, columns: int):
        """Copies columns [0, columns) of cache rows src[m] into rows dst[m] (a prompt shared by a later sample)."""
        part = cache.narrow(3, 0, columns)
        part.index_copy_(2, dst, part.index_select(2, src))

    # ---- Optional per-layer methods (layer_api 1): gspo drives the decoder layers itself, for activation
    # checkpointing (only each layer's input kept through the forward) and a chunked LM head (no [T, V] logits).
    # embed -> layer(0..n-1) -> final_norm -> hidden @ head_weight^T (+ head_bias) equals forward's logits.

    @torch.jit.export
    def layer_api(self) -> int:
        """Version of the per-layer methods below (docs/model-contract.md)."""
        return 1  # LAYER_API_VERSION (TorchScript cannot read a module-level int)

    @torch.jit.export
    def num_decoder_layers(self) -> int:
        return self.num_layers

    @torch.jit.export
    def embed(self, input_ids: Tensor) -> Tensor:
        """[B, T] ids -> [B, T, H] hidden states in the weights' dtype."""
        return self.embed_tokens(input_ids)

    @torch.jit.export
    def layer_context(self, attention_mask: Tensor) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
        """What every layer of a full-sequence pass over [B, T] needs: rotary cos/sin [B, 1, T, D] in the weights' dtype and
        the attention mask (None = causal, the form for rows whose real tokens are a prefix)."""
        total = attention_mask.shape[1]
        cos, sin = self._rope(attention_mask, 0, total, self.embed_tokens.weight.dtype)
        return cos, sin, self._mask(attention_mask, 0, total)

    @torch.jit.export
    def layer(self, index: int, x: Tensor, cos: Tensor, sin: Tensor, mask: Optional[Tensor]) -> Tensor:
        """Decoder layer `index` over a full sequence: [B, T, H] -> [B, T, H] (no cache)."""
        return self.routed_layer(index, x, cos, sin, mask, None)[0]

    @torch.jit.export
    def shared_layer(self, index: int, xp: Tensor, cos_p: Tensor, sin_p: Tensor, xr: Tensor, cos_r: Tensor,
                     sin_r: Tensor, group: Tensor, prompt_len: Tensor, routes_p: Optional[Tensor],
                     routes_r: Optional[Tensor]) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        """Decoder layer `index` over responses that share prompts, each prompt run once (shared-prefix training,
        #71; optional, found by name): xp [K, P, H] the prompts (real tokens first), xr [M, R, H] the responses,
        group [M] int64 each response's prompt, prompt_len [K] int64 each prompt's real tokens; cos/sin [K or M, 1,
        T, D] the rows' rotary tables (a response's positions continue from its prompt's end). The attention is split:
        each prompt causal over itself, each response over its prompt's real keys and causally its own. Returns (xp',
        xr', experts of xp, experts of xr) (experts: int64 [..., top_k] for an MoE layer, empty for a dense one;
        routes_p / routes_r replay given ones as routed_layer does). Equal to layer() over each prompt + response row
        up to float rounding."""
        out = (xp, xr, torch.zeros(0, dtype=torch.long, device=xp.device),
               torch.zeros(0, dtype=torch.long, device=xp.device))
        i = 0
        for block in self.layers:
            if i == index:
                out = block.shared(xp, cos_p, sin_p, xr, cos_r, sin_r, group, prompt_len, routes_p, routes_r)
            i += 1
        return out

    @torch.jit.export
    def final_norm(self, x: Tensor) -> Tensor:
        """The norm before the LM head: [N, H] or [B, T, H], same shape."""
        return self.norm(x)

    @torch.jit.export
    def head_weight(self) -> Tensor:
        """The LM head's weight [V, H] (the embedding itself when tied: one tensor, one gradient)."""
        return self.lm_head.weight

    @torch.jit.export
    def head_bias(self) -> Optional[Tensor]:
        """The LM head's bias [V], or None."""
        return self.lm_head.bias

    # ---- Routing methods (optional, route_api 1): a decoder layer that reports the experts its MoE routed each token
    # to, or runs with given experts (Routing Replay). `layer` and `routed_layer(..., None)` are the same computation.
    # route_api 2 adds routed_feed_forward: the feed-forward of a slot pass one layer at a time (ep_api 2) with the
    # experts it used, so a rollout records the experts that produced its tokens (Rollout Routing Replay).

    @torch.jit.export
    def route_api(self) -> int:
        """Version of the routing methods (docs/model-contract.md, "Routing methods")."""
        return 2  # ROUTE_API_VERSION

    @torch.jit.export
    def routed_feed_forward(self, index: int, n: Tensor, routes: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
        """feed_forward(index, n) of n [..., H], and the experts each token used: [..., top_k] int64 for an MoE layer,
        an empty int64 tensor for a dense one. routes (int64 [..., top_k], MoE layers only): those experts instead of
        the router's top-k, gating weights from the current router over them. Without routes it is feed_forward."""
        out = n
        chosen = torch.zeros(0, dtype=torch.long, device=n.device)
        i = 0
        for block in self.layers:
            if i == index:
                out, chosen = block.mlp.routed(n, routes)
            i += 1
        return out, chosen

    @torch.jit.export
    def moe_layers(self) -> List[int]:
        """Indices of the decoder layers whose feed-forward routes tokens to experts (empty for a dense model)."""
        out: List[int] = []
        i = 0
        for block in self.layers:
            if block.mlp.last_load.numel() > 0:
                out.append(i)
            i += 1
        return out

    @torch.jit.export
    def routed_layer(self, index: int, x: Tensor, cos: Tensor, sin: Tensor, mask: Optional[Tensor],
                     routes: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
        """layer(index, x, cos, sin, mask), and the experts: (output [B, T, H], experts [B, T, top_k] int64 for an MoE
        layer, an empty int64 tensor for a dense one). routes (int64 [B, T, top_k], MoE layers only): use these
        experts for each token, gating weights from the current router over them."""
        out = x
        chosen = torch.zeros(0, dtype=torch.long, device=x.device)
        i = 0
        for block in self.layers:
            if i == index:
                out, chosen = block.routed(x, cos, sin, mask, routes)
            i += 1
        return out, chosen

    # ---- Expert-parallel methods (optional, ep_api 1): an MoE layer run in two parts, so gspo can run its experts
    # itself, each rank only its own (parallel/expert_parallel.h). The router and experts are the parameters
    # layers.<i>.mlp.gate.weight [E, H] and layers.<i>.mlp.experts.<e>.{gate,up,down}_proj.weight.

    @torch.jit.export
    def ep_api(self) -> int:
        """Version of the expert-parallel methods (docs/model-contract.md, "Expert-parallel methods")."""
        return 2  # EP_API_VERSION: 2 = 1 and the slot passes one layer at a time

    @torch.jit.export
    def attention_block(self, index: int, x: Tensor, cos: Tensor, sin: Tensor,
                        mask: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
        """Decoder layer `index` up to its feed-forward: (h, n) with h = x + attention, n its post-attention norm;
        layer(index, ...) = h + the feed-forward of n."""
        out = (x, x)
        i = 0
        for block in self.layers:
            if i == index:
                out = block.attention(x, cos, sin, mask)
            i += 1
        return out

    @torch.jit.export
    def moe_routing(self, index: int) -> Tuple[int, bool]:
        """Decoder layer `index`'s routing: (top_k, norm_topk_prob); (0, False) for a dense layer."""
        out = (0, False)
        i = 0
        for block in self.layers:
            if i == index and block.mlp.last_load.numel() > 0:
                out = (block.mlp.top_k, block.mlp.norm_topk_prob)
            i += 1
        return out

    # ep_api 2: the slot methods' passes one layer at a time, so the MoE layers of a rollout's decode step can run their
    # experts on the ranks that hold them. prefill_slots = prefill_context, then per layer slot_attention (cache
    # written as prefill_slots writes it) and h + feed_forward(n), then slot_logits(x, lengths - 1); the same for
    # decode_slots (decode_context; slots = columns; slot_logits(x, None)) and append_slots (append_context).

    @torch.jit.export
    def prefill_context(self, input_ids: Tensor,
                        lengths: Tensor) -> Tuple[Tensor, Tensor, Tensor, Optional[Tensor], Optional[Tensor]]:
        """prefill_slots' pass: (x, cos, sin, mask, columns) with x the embedded ids; mask and columns None."""
        k_rows, t = input_ids.shape
        valid = (torch.arange(t, device=input_ids.device).view(1, t) < lengths.view(k_rows, 1)).to(torch.long)
        x = self.embed_tokens(input_ids)
        cos, sin = self._rope(valid, 0, t, x.dtype)
        none: Optional[Tensor] = None
        if self._varlen(x):
            return x, cos, sin, self._varlen_meta(k_rows, t, None), none
        return x, cos, sin, none, none

    @torch.jit.export
    def decode_context(self, input_ids: Tensor, columns: Tensor,
                       width: int) -> Tuple[Tensor, Tensor, Tensor, Optional[Tensor], Optional[Tensor]]:
        """decode_slots' pass: (x, cos, sin, mask over `width` columns, None)."""
        s = input_ids.shape[0]
        x = self.embed_tokens(input_ids)
        cos = self.cos_table.index_select(0, columns).to(x.dtype).view(s, 1, 1, self.head_dim)
        sin = self.sin_table.index_select(0, columns).to(x.dtype).view(s, 1, 1, self.head_dim)
        none: Optional[Tensor] = None
        if self._varlen(x):
            return x, cos, sin, self._varlen_meta(s, 1, (columns + 1).clamp(max=width)), none
        k_idx = torch.arange(0, width, device=input_ids.device).view(1, 1, 1, width)
        return x, cos, sin, k_idx <= columns.view(s, 1, 1, 1), none

    @torch.jit.export
    def append_context(self, input_ids: Tensor, columns: Tensor,
                       width: int) -> Tuple[Tensor, Tensor, Tensor, Optional[Tensor], Optional[Tensor]]:
        """append_slots' pass: (x, cos, sin, mask, the [M, K] cache column of every token)."""
        m, t = input_ids.shape
        cols = columns.view(m, 1) + torch.arange(t, device=input_ids.device).view(1, t)
        x = self.embed_tokens(input_ids)
        cos = self.cos_table.index_select(0, cols.reshape(-1)).to(x.dtype).view(m, 1, t, self.head_dim)
        sin = self.sin_table.index_select(0, cols.reshape(-1)).to(x.dtype).view(m, 1, t, self.head_dim)
        if self._varlen(x):
            return x, cos, sin, self._varlen_meta(m, t, columns + t), cols
        k_idx = torch.arange(0, width, device=input_ids.device).view(1, 1, 1, width)
        return x, cos, sin, k_idx <= cols.view(m, 1, t, 1), cols

    def _varlen(self, x: Tensor) -> bool:
        """Whether the slot passes attend through varlen_attention (the flash kernel: CUDA, fp16/bf16, head_dim a
        multiple of 8 up to 256) rather than SDPA under a mask. varlen_anywhere (tests only) takes it on any device."""
        if self.varlen_anywhere:
            return True
        return self.flash_ok and x.is_cuda and (x.dtype == torch.bfloat16 or x.dtype == torch.float16) \
            and self.head_dim % 8 == 0 and self.head_dim <= 256

    def _varlen_meta(self, rows: int, t: int, used: Optional[Tensor]) -> Tensor:
        """The slot passes' varlen metadata (int32 [2, rows + 1], in the `mask` place): the queries' row offsets
        (t a row), and each row's keys used (padded by one; none for prefill, whose keys are its own queries)."""
        starts = torch.arange(0, rows + 1, device=self.cos_table.device, dtype=torch.int32) * t
        if used is None:
            return torch.stack([starts, starts])
        return torch.stack([starts, torch.cat([used, used.narrow(0, 0, 1)]).to(torch.int32)])

    @torch.jit.export
    def slot_attention(self, index: int, x: Tensor, cos: Tensor, sin: Tensor, mask: Optional[Tensor], cache: Tensor,
                       start: int, slots: Tensor, source: Optional[Tensor],
                       columns: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
        """Decoder layer `index` of a slot pass up to its feed-forward, through cache[index]: (h, n) with h = x +
        attention and n its post-attention norm (start: 0 for prefill, else the width; slots: the slot methods' slots,
        decode's columns; source: prefill's; columns: the context's)."""
        out = (x, x)
        i = 0
        for block in self.layers:
            if i == index:
                out = block.cached_attention(x, cos, sin, mask, cache[i], start, None, slots, source, columns)
            i += 1
        return out

    @torch.jit.export
    def feed_forward(self, index: int, n: Tensor) -> Tensor:
        """Decoder layer `index`'s feed-forward (the MLP, or the routed experts) of n [..., H]."""
        out = n
        i = 0
        for block in self.layers:
            if i == index:
                out = block.mlp(n)
            i += 1
        return out

    @torch.jit.export
    def slot_logits(self, x: Tensor, last: Optional[Tensor]) -> Tensor:
        """[M, V] float32 logits of a slot pass's hidden states x [M, T, H]: at column last[m] of each row, or (None) of
        the one column of a decode."""
        if last is None:
            return self.lm_head(self.norm(x)).squeeze(1).float()
        at = last.view(-1, 1, 1).expand(x.shape[0], 1, x.shape[2])
        return self.lm_head(self.norm(x.gather(1, at))).squeeze(1).float()

    @torch.jit.export
    def expert_load(self) -> List[Tensor]:
        """Optional: per layer, the routing-slot fraction each expert got in the last forward (empty for dense layers)."""
        out: List[Tensor] = []
        for layer in self.layers:
            out.append(layer.mlp.last_load)
        return out

    @torch.jit.export
    def reorder_cache(self, cache: Tensor, rows: Tensor) -> Tensor:
        """The cache restricted to (and reordered by) the batch rows `rows` (int64 [B'])."""
        return cache.index_select(2, rows)


def rope_tables(cfg: dict) -> Tuple[Tensor, Tensor]:
    """The float32 cos/sin tables [max_seq_len, head_dim] that CausalLM.__init__ builds (RoPE at every position, linear
    scaling dividing positions, llama3 scaling through rope_inv_freq); RewardModel's, held to CausalLM's by
    tests/hf_export/test_reward_export.py."""
    inv_freq = rope_inv_freq(cfg["head_dim"], cfg["rope_theta"], cfg.get("rope_scaling"))
    pos = torch.arange(cfg["max_seq_len"]).double()
    if (cfg.get("rope_scaling") or {}).get("rope_type", (cfg.get("rope_scaling") or {}).get("type")) == "linear":
        pos = pos / cfg["rope_scaling"]["factor"]
    freqs = torch.outer(pos, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().float(), emb.sin().float()


class RewardModel(nn.Module):
    """A reward model (docs/model-contract.md, "Reward models (reward_api 1)"): CausalLM's decoder (the same
    embed_tokens, layers, norm and rope tables, the same state-dict names) with a one-output score head instead of the
    LM head: Hugging Face's *ForSequenceClassification with num_labels 1. One method, `score`. The head is named
    score_head (transformers' `score.weight`), since the method holds the name `score`."""

    def __init__(self, cfg: dict):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.layers = nn.ModuleList([Block(cfg, i in cfg.get("moe_layers", [])) for i in range(cfg["num_layers"])])
        self.norm = RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.score_head = nn.Linear(cfg["hidden_size"], 1, bias=False)
        cos, sin = rope_tables(cfg)
        self.register_buffer("cos_table", cos, persistent=True)
        self.register_buffer("sin_table", sin, persistent=True)

    # The policy's positions (cumsum of the mask) and attention mask (None when every row's real tokens are a prefix),
    # the same functions compiled against this module's cos_table/sin_table.
    _rope = CausalLM._rope
    _mask = CausalLM._mask

    @torch.jit.export
    def score(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        """input_ids, attention_mask int64 [B, T] (1 = real token; padding on either side, rows of any lengths) ->
        float32 [B]: the score head of the final-normed hidden state at each row's last real token (its last column
        whose mask is 1), attention causal over the row's real tokens, positions counted over them. A row needs one
        real token at least (a row of padding only scores its column 0: unspecified)."""
        b, t = input_ids.shape
        x = self.embed_tokens(input_ids)
        cos, sin = self._rope(attention_mask, 0, t, x.dtype)
        mask = self._mask(attention_mask, 0, t)
        for layer in self.layers:
            x = layer(x, cos, sin, mask, None, 0, None)
        columns = torch.arange(t, device=input_ids.device).view(1, t)
        last = (columns * (attention_mask > 0).to(columns.dtype)).amax(-1)  # [B]
        at = last.view(b, 1, 1).expand(b, 1, x.shape[2])
        return self.score_head(self.norm(x.gather(1, at))).view(b).float()


def shape_for(cfg: dict) -> dict:
    """The architecture's sizes beyond the manifest's top-level fields (docs/model-contract.md, "shape")."""
    shape = {
        "intermediate_size": cfg["intermediate_size"],
        "tie_word_embeddings": bool(cfg.get("tie_word_embeddings", False)),
        "qkv_bias": bool(cfg.get("qkv_bias", False)), "o_bias": bool(cfg.get("o_bias", False)),
        "qk_norm": bool(cfg.get("qk_norm", False)), "lm_head_bias": bool(cfg.get("lm_head_bias", False)),
    }
    if cfg.get("moe_layers"):
        shape.update({"num_experts": cfg["num_experts"], "num_experts_per_tok": cfg["num_experts_per_tok"],
                      "moe_intermediate_size": cfg["moe_intermediate_size"], "moe_layers": list(cfg["moe_layers"])})
    return shape


def manifest_for(cfg: dict, tokenizer: dict, dtype: str) -> dict:
    return {
        "format": "gspo-policy",
        "contract_version": CONTRACT_VERSION,
        "architecture": cfg.get("architecture", "llama"),
        "vocab_size": cfg["vocab_size"],
        "max_seq_len": cfg["max_seq_len"],
        "bos_token_id": cfg["bos_token_id"],
        "eos_token_id": cfg["eos_token_id"],
        # every id that ends a response (eos_token_id first); absent = [eos_token_id] (docs/model-contract.md)
        **({"eos_token_ids": [int(x) for x in cfg["eos_token_ids"]]} if cfg.get("eos_token_ids") else {}),
        "pad_token_id": cfg["pad_token_id"],
        "num_layers": cfg["num_layers"],
        "hidden_size": cfg["hidden_size"],
        "num_heads": cfg["num_heads"],
        "num_kv_heads": cfg["num_kv_heads"],
        "head_dim": cfg["head_dim"],
        "dtype": dtype,
        "tokenizer_type": tokenizer["type"],
        "shape": shape_for(cfg),  # what `gspo plan` counts parameters and activations from, without the weights
        **({"hf_source": cfg["hf_source"]} if "hf_source" in cfg else {}),  # for scripts/export_to_hf.py
        # MoE: on CUDA, passes of at most this many tokens route without reading back to the host (SparseMoE.dense),
        # so decode steps of slot pools up to this size can be captured (rollout.cuda_graphs: auto)
        **({"moe_capture_rows": MOE_CAPTURE_ROWS} if cfg.get("moe_layers") else {}),
    }


def reward_manifest_for(cfg: dict, tokenizer: dict, dtype: str, num_parameters: int) -> dict:
    """A RewardModel's manifest: the policy manifest's fields under the same names, its format and version replaced
    (no contract_version: a reward model is not a policy), and the exact parameter count (shape describes the decoder;
    a reward model has no LM head whatever shape's tie_word_embeddings says)."""
    policy = manifest_for(cfg, tokenizer, dtype)
    return {"format": "gspo-reward-model", "reward_api": REWARD_API_VERSION,
            **{k: v for k, v in policy.items() if k not in ("format", "contract_version", "hf_source")},
            "num_parameters": int(num_parameters)}


def save_scripted(model: nn.Module, cfg: dict, tokenizer: dict, dtype: str, path: str,
                  manifest: Optional[dict] = None) -> None:
    """Scripts `model` and writes it with the manifest (manifest_for's unless given) and tokenizer as TorchScript
    extra files."""
    model.eval()
    scripted = torch.jit.script(model)
    extra = {
        "gspo_manifest.json": json.dumps(manifest_for(cfg, tokenizer, dtype) if manifest is None else manifest,
                                         indent=1),
        "gspo_tokenizer.json": json.dumps(tokenizer),
    }
    scripted.save(path, _extra_files=extra)
