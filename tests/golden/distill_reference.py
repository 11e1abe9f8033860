#!/usr/bin/env python3
"""Fixture: on-policy distillation's per-token terms computed by transformers (tests/unit/test_distill.cpp; #69 item 2).

    distill_reference.py TEST_MODELS_DIR

A random Qwen3 student (qwen3_tiny_hf) and a wider random Qwen3 teacher (qwen3_teacher_hf), both with the real Qwen3
tokenizer (make_test_models.py), run by transformers in float32 on rows of the real tokenizer's ids. Per response token:
log_softmax(logits / T) of the sampled id under each, and for a few option sets the advantage the docs state,

    A_{i,t} = reward_weight * A_i + coef * clip(log pi_T - log pi_S, -c, c)    (c = 0: no clip)

on the trained tokens (0 elsewhere), and the mean k1 reverse-KL estimate log pi_S - log pi_T over them; the teacher's
top-k log-probs and ids, and each sequence's forward KL and generalised JSD over the top k (and over the whole
vocabulary, directly). Written in the
rollout layout gspo's passes take (prompts left-padded to P columns, responses right-padded to R) to
TEST_MODELS_DIR/distill_cases.json. Skips (saying so, no file written) without the Qwen3 models."""
import json, os, sys

import torch
from tokenizers import Tokenizer
from transformers import AutoModelForCausalLM

out = sys.argv[1]
student_dir, teacher_dir = f"{out}/qwen3_tiny_hf", f"{out}/qwen3_teacher_hf"
if not (os.path.isdir(student_dir) and os.path.isdir(teacher_dir)):
    print("no qwen3_tiny_hf / qwen3_teacher_hf (no ../shared qwen3 tokenizer): distill_cases.json not written")
    sys.exit(0)
tok = Tokenizer.from_file(f"{student_dir}/tokenizer.json")
student = AutoModelForCausalLM.from_pretrained(student_dir, dtype=torch.float32).eval()
teacher = AutoModelForCausalLM.from_pretrained(teacher_dir, dtype=torch.float32).eval()

T = 0.7
texts = [("<|im_start|>user\nWhat is 12 * 7?<|im_end|>\n<|im_start|>assistant\n", "12 * 7 = 84. The answer is 84.<|im_end|>"),
         ("<|im_start|>user\nName a prime.<|im_end|>\n<|im_start|>assistant\n", "Seven.<|im_end|>"),
         ("<|im_start|>user\nDifférence entre 3 et 10 ? Réponds en un mot.<|im_end|>\n<|im_start|>assistant\n",
          "Sept — 七 ✓<|im_end|>"),
         ("<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n", "<think>\n\n</think>\n\ny = 2x + 1, so y(3) = 7")]
prompts = [tok.encode(p, add_special_tokens=False).ids for p, _ in texts]
responses = [tok.encode(r, add_special_tokens=False).ids for _, r in texts]
n, P, R = len(texts), max(map(len, prompts)), max(map(len, responses))
ids = [[0] * (P - len(p)) + p + r + [0] * (R - len(r)) for p, r in zip(prompts, responses)]
mask = [[0] * (P - len(p)) + [1] * (len(p) + len(r)) + [0] * (R - len(r)) for p, r in zip(prompts, responses)]
loss_mask = [[1.0] * len(r) + [0.0] * (R - len(r)) for r in responses]
loss_mask[0][3] = loss_mask[0][4] = 0.0  # two tokens inserted into the response (a tool's output): not trained


def response_logprobs(model, p, r):
    x = torch.tensor([p + r])
    with torch.no_grad():
        logits = model(input_ids=x).logits[0].double() / T
    lp = torch.log_softmax(logits, -1)
    return [lp[len(p) - 1 + t, tok_id].item() for t, tok_id in enumerate(r)] + [0.0] * (R - len(r))


t_lp = [response_logprobs(teacher, p, r) for p, r in zip(prompts, responses)]
s_lp = [response_logprobs(student, p, r) for p, r in zip(prompts, responses)]
seq_adv = [0.8, -1.2, 0.35, 0.0]
cases = []
for coef, reward_weight, clip in [(1.0, 0.0, 0.0), (0.5, 0.3, 0.0), (2.0, 1.0, 0.25)]:
    adv, kl, tokens, teacher_abs, reward_abs = [], 0.0, 0.0, 0.0, 0.0
    for i in range(n):
        row = []
        for t in range(R):
            m = loss_mask[i][t]
            d = t_lp[i][t] - s_lp[i][t]
            if clip > 0:
                d = max(-clip, min(clip, d))
            row.append(m * (reward_weight * seq_adv[i] + coef * d))
            kl += m * (s_lp[i][t] - t_lp[i][t])
            tokens += m
            teacher_abs += m * abs(coef * d)
            reward_abs += m * abs(reward_weight * seq_adv[i])
        adv.append(row)
    cases.append({"coef": coef, "reward_weight": reward_weight, "clip": clip, "advantages": adv, "kl_mean": kl / tokens,
                  "teacher_share": teacher_abs / (teacher_abs + reward_abs)})


# forward_kl and jsd over the teacher's top-k at each response position (docs/algorithm.md): the teacher renormalised
# over its top k; forward KL against the student's full log-softmax, JSD against the student renormalised over them
# too. With k = V (the whole vocabulary) the same formulas are the exact divergences, computed here directly.
def full_logprobs(model, p, r):
    x = torch.tensor([p + r])
    with torch.no_grad():
        logits = model(input_ids=x).logits[0].double() / T
    return torch.log_softmax(logits, -1)[len(p) - 1:len(p) - 1 + len(r)]  # [len(r), V]


def divergence(objective, beta, lt, ls):
    if objective == "forward_kl":
        return (lt.exp() * (lt - ls)).sum(-1)
    lm = torch.logsumexp(torch.stack([lt + torch.log(torch.tensor(beta, dtype=lt.dtype)),
                                      ls + torch.log(torch.tensor(1 - beta, dtype=lt.dtype))]), 0)
    return beta * (lt.exp() * (lt - lm)).sum(-1) + (1 - beta) * (ls.exp() * (ls - lm)).sum(-1)


K = 8
top_lp, top_ids, topk_cases = [], [], []
full_t = [full_logprobs(teacher, p, r) for p, r in zip(prompts, responses)]
full_s = [full_logprobs(student, p, r) for p, r in zip(prompts, responses)]
for ft in full_t:
    v, i = ft.topk(K, -1)
    pad = R - v.shape[0]
    top_lp.append(v.tolist() + [[0.0] * K] * pad)
    top_ids.append(i.tolist() + [[0] * K] * pad)
for objective, beta, k in [("forward_kl", 0.5, K), ("jsd", 0.5, K), ("jsd", 0.3, K), ("forward_kl", 0.5, 0),
                           ("jsd", 0.3, 0)]:
    per_seq = []
    for i in range(n):
        ft, fs = full_t[i], full_s[i]
        if k:  # the top-k sets: teacher renormalised; the student full (forward KL) or renormalised (JSD)
            ids_k = ft.topk(k, -1).indices
            lt = torch.log_softmax(ft.gather(-1, ids_k), -1)
            ls = fs.gather(-1, ids_k)
            if objective == "jsd":
                ls = torch.log_softmax(ls, -1)
        else:  # the whole vocabulary, directly
            lt, ls = ft, fs
        d = divergence(objective, beta, lt, ls)
        m = torch.tensor(loss_mask[i][:len(responses[i])], dtype=d.dtype)
        per_seq.append(((d * m).sum() / m.sum()).item())
    topk_cases.append({"objective": objective, "jsd_beta": beta, "top_k": k, "per_sequence": per_seq})
json.dump({"temperature": T, "prompt_len": P, "ids": ids, "mask": mask, "loss_mask": loss_mask, "seq_adv": seq_adv,
           "teacher_lp": t_lp, "student_lp": s_lp, "cases": cases, "top_k": K, "teacher_top_lp": top_lp,
           "teacher_top_ids": top_ids, "topk_cases": topk_cases}, open(f"{out}/distill_cases.json", "w"))
print(f"distill_cases.json: {n} rows (P {P}, R {R}), {len(cases)} option sets, {len(topk_cases)} divergences, "
      f"temperature {T}")
