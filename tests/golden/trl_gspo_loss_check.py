#!/usr/bin/env python3
"""One fixed batch through TRL's GSPO loss and through gspo's (issue 13 item 4): losses and gradients agree.

TRL side: trl.GRPOTrainer(importance_sampling_level="sequence", loss_type="grpo", beta=0, epsilon=3e-4,
epsilon_high=4e-4).compute_loss on hand-built inputs (left-padded prompts, completions of lengths 1..7, old
log-probs shifted per sequence across both clip bounds, advantages from rewards as TRL computes them), float64, a
tiny random-init Qwen3 model. gspo side: tests/golden/loss_reference.py's GSPO (the independent reference that
tests/unit/test_loss_golden.cpp holds the C++ loss to within 1e-5) on the per-token log-probs of the same model.

Compared (max abs difference; the model and both losses run in float64):
  - the loss and d loss / d log-prob on the same inputs (TRL's log-probs and advantages fed to gspo's loss): 1e-12;
  - per-token log-probs: TRL's fused LM head (trl.kernels.ChunkedLogProbFunction computes in float32 even for a
    float64 model) against log_softmax of the model's float64 logits: 1e-6;
  - advantages: TRL's formula (trl.trainer.utils.nanstd, + 1e-4) against gspo's group_norm with std_kind sample and
    adv_eps 1e-4 (gspo's defaults, population std and 1e-6, differ: a convention). 1e-7, because nanstd's Bessel
    factor count / (count - 1) is an int tensor division, float32 even for float64 rewards;
  - end to end (each side its own log-probs and advantages): the loss 1e-7, d loss / d log-prob and the gradient of
    every model parameter 1e-6.
TRL's GRPOConfig turns bf16 on by default, which on CPU means bf16 autocast (log-probs off by ~1e-3 here); both
here and in bench/trl_side_by_side.py it is set off, so both sides train in float32 (float64 here).

Conventions that agree: s_i = exp(mean over the response's tokens of log pi - log pi_old); clipping once per
sequence; loss = -(1/N) sum_i min(s_i A_i, clip(s_i) A_i), every sequence weighted equally (TRL's loss_type "grpo"
takes a per-sequence token mean of a per-sequence constant, then the batch mean). Differences: gspo clamps log s_i
at algorithm.log_ratio_clamp (10) before exp, TRL does not (no effect unless a ratio exceeds e^10); TRL divides by
gradient_accumulation_steps (1 here, and in the side-by-side benchmark: each of the 4 mini-batches is one
optimizer step), gspo weights micro-batches by n_k / N (equal for equal micro-batches).

    python3 tests/golden/trl_gspo_loss_check.py     # exits 1 when a difference exceeds its tolerance
"""
import math
import os
import sys
import tempfile
import warnings

import torch

warnings.filterwarnings("ignore")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loss_reference as ref  # noqa: E402


def build(clip_low, clip_high, tmp):
    from datasets import Dataset
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM
    from trl import GRPOConfig, GRPOTrainer
    vocab = {"<pad>": 0, "<eos>": 1, **{f"t{i}": i for i in range(2, 48)}}
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel(vocab, unk_token="t2")),
                                  pad_token="<pad>", eos_token="<eos>")
    cfg = Qwen3Config(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, head_dim=8, max_position_embeddings=64, eos_token_id=1, pad_token_id=0,
                      bos_token_id=None, tie_word_embeddings=True)
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(cfg).double()
    args = GRPOConfig(output_dir=tmp, use_cpu=True, bf16=False, fp16=False, report_to="none", per_device_train_batch_size=8,
                      num_generations=4, max_completion_length=7, beta=0.0, epsilon=clip_low, epsilon_high=clip_high,
                      importance_sampling_level="sequence", loss_type="grpo", temperature=1.0, save_strategy="no")
    trainer = GRPOTrainer(model=model, reward_funcs=lambda completions, **kw: [0.0] * len(completions), args=args,
                          train_dataset=Dataset.from_list([{"prompt": "t3 t4"}] * 8), processing_class=tok)
    trainer.current_gradient_accumulation_steps = 1
    return trainer


def batch(model):
    gen = torch.Generator().manual_seed(20251123)
    n, p, t = 8, 5, 7
    prompt_lens = [5, 3, 5, 4, 2, 5, 5, 1]
    lengths = [7, 3, 1, 5, 7, 2, 1, 6]
    prompt_ids = torch.randint(2, 48, (n, p), generator=gen)
    prompt_mask = torch.zeros(n, p, dtype=torch.long)
    for i, k in enumerate(prompt_lens):  # left padding
        prompt_mask[i, p - k:] = 1
    prompt_ids = torch.where(prompt_mask > 0, prompt_ids, torch.zeros_like(prompt_ids))
    completion_ids = torch.randint(2, 48, (n, t), generator=gen)
    completion_mask = torch.zeros(n, t, dtype=torch.long)
    for i, k in enumerate(lengths):
        completion_mask[i, :k] = 1
        if k < t:
            completion_ids[i, k - 1] = 1  # EOS ends it, padding after
            completion_ids[i, k:] = 0
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.3, 0.9, 0.2, 0.2], dtype=torch.float64)
    return prompt_ids, prompt_mask, completion_ids, completion_mask, rewards


def trl_advantages(rewards, g):
    from trl.trainer.utils import nanstd
    grouped = rewards.view(-1, g)
    mean = grouped.mean(dim=1).repeat_interleave(g)
    std = nanstd(grouped, dim=1).repeat_interleave(g)
    return (rewards - mean) / (std + 1e-4)


def gspo_advantages(rewards, g, eps=1e-4):
    """docs/algorithm.md group_norm, std_kind sample: (r - mean) / (std + adv_eps), std with G - 1."""
    out = []
    r = rewards.tolist()
    for s in range(0, len(r), g):
        grp = r[s:s + g]
        m = sum(grp) / g
        std = math.sqrt(sum((x - m) ** 2 for x in grp) / (g - 1))
        out += [(x - m) / (std + eps) for x in grp]
    return torch.tensor(out, dtype=torch.float64)


def model_logps(model, prompt_ids, prompt_mask, completion_ids, completion_mask):
    ids = torch.cat([prompt_ids, completion_ids], 1)
    att = torch.cat([prompt_mask, completion_mask], 1)
    logits = model(input_ids=ids, attention_mask=att).logits[:, prompt_ids.shape[1] - 1:-1]
    return torch.log_softmax(logits.double(), -1).gather(-1, completion_ids.unsqueeze(-1)).squeeze(-1)


def run_case(name, clip_low, clip_high, shifts):
    with tempfile.TemporaryDirectory() as tmp:
        trainer = build(clip_low, clip_high, tmp)
        model = trainer.model
        model.train()
        prompt_ids, prompt_mask, completion_ids, completion_mask, rewards = batch(model)
        adv_trl = trl_advantages(rewards, 4)
        adv_ours = gspo_advantages(rewards, 4)
        with torch.no_grad():
            lp0 = model_logps(model, prompt_ids, prompt_mask, completion_ids, completion_mask)
        gen = torch.Generator().manual_seed(7)
        noise = (torch.rand(lp0.shape, generator=gen, dtype=torch.float64) - 0.5) * 2e-4
        old = (lp0 - shifts.unsqueeze(1) + noise) * completion_mask  # log s_i = mean(lp - old) ~ shift_i

        # TRL: its compute_loss; the log-probs it computes keep their gradient (d loss / d log-prob).
        captured = {}
        orig = trainer._get_per_token_logps_and_entropies

        def capture(*a, **kw):
            logps, ent, aux = orig(*a, **kw)
            logps.retain_grad()
            captured["lp"] = logps
            return logps, ent, aux

        trainer._get_per_token_logps_and_entropies = capture
        inputs = dict(prompt_ids=prompt_ids, prompt_mask=prompt_mask, completion_ids=completion_ids,
                      completion_mask=completion_mask, advantages=adv_trl, old_per_token_logps=old)
        model.zero_grad()
        loss_trl = trainer.compute_loss(model, inputs)
        loss_trl.backward()
        grads_trl = {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}
        dlp_trl = captured["lp"].grad * completion_mask

        # gspo: the golden reference's GSPO on the same model's log-probs.
        model.zero_grad()
        lp = model_logps(model, prompt_ids, prompt_mask, completion_ids, completion_mask)
        lp.retain_grad()
        terms, stats = ref.seq_terms("gspo", lp, old, completion_mask.double(), adv_ours, clip_low, clip_high, 10.0)
        loss_ours = -sum(terms) / len(terms)
        loss_ours.backward()
        grads_ours = {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}
        dlp_ours = lp.grad * completion_mask

        # The loss alone: gspo's on exactly TRL's inputs (its float32-kernel log-probs, its advantages).
        lp_same = captured["lp"].detach().clone().requires_grad_(True)
        terms_same, _ = ref.seq_terms("gspo", lp_same, old, completion_mask.double(), adv_trl, clip_low, clip_high,
                                      10.0)
        loss_same = -sum(terms_same) / len(terms_same)
        loss_same.backward()

        assert set(grads_trl) == set(grads_ours), "different parameters received gradients"
        diffs = {  # name: (max abs difference, tolerance)
            "loss, same inputs": (abs(loss_trl.item() - loss_same.item()), 1e-12),
            "dloss/dlogprob, same inputs": ((dlp_trl - lp_same.grad * completion_mask).abs().max().item(), 1e-12),
            "logprobs": (((captured["lp"].detach() - lp.detach()) * completion_mask).abs().max().item(), 1e-6),
            "advantages": ((adv_trl - adv_ours).abs().max().item(), 1e-7),
            "loss, end to end": (abs(loss_trl.item() - loss_ours.item()), 1e-7),
            "dloss/dlogprob, end to end": ((dlp_trl - dlp_ours).abs().max().item(), 1e-6),
            "param grads, end to end": (max((grads_trl[k] - grads_ours[k]).abs().max().item() for k in grads_ours),
                                        1e-6),
        }
        gmax = max(g.abs().max().item() for g in grads_ours.values())
        clipped = stats["seq_clipped_low"] + stats["seq_clipped_high"]
        print(f"{name}: loss TRL {loss_trl.item():.12f} gspo {loss_ours.item():.12f}; sequences clipped "
              f"{clipped}/8 (low {stats['seq_clipped_low']}, high {stats['seq_clipped_high']}); max |param grad| "
              f"{gmax:.3e}")
        for k, (v, tol) in diffs.items():
            print(f"  max abs diff {k:28s} {v:.3e}  (tolerance {tol:.0e}){'' if v <= tol else '  EXCEEDED'}")
        return diffs, clipped


def main():
    shifts = torch.tensor([1e-3, -1e-3, 2e-4, 5e-4, -6e-4, 1e-3, -1e-3, 1e-4], dtype=torch.float64)
    d1, clipped = run_case("GSPO paper clip 3e-4/4e-4", 3e-4, 4e-4, shifts)
    d2, clipped2 = run_case("wide clip 0.2/0.2 (nothing clipped)", 0.2, 0.2, shifts)
    bad = [k for d in (d1, d2) for k, (v, tol) in d.items() if not v <= tol]
    if not 0 < clipped < 8 or clipped2 != 0:
        bad.append("the paper-clip batch must clip some sequences and not others, the wide one none")
    print("PASS" if not bad else "FAIL: " + "; ".join(bad))
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
