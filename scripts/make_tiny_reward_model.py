#!/usr/bin/env python3
"""Trains and exports the tiny learned reward model of configs/tiny-rm.yaml: the demo's verifier learned from
preference pairs, standing in for the exact reward (docs/verifiers.md, "Model rewards", "A worked example").

    scripts/py scripts/make_tiny_reward_model.py --out models/tiny_rm.pt [--seed 0] [--steps 1000]

A transformers Qwen3ForSequenceClassification (num_labels 1; hidden 64, MLP 128, 2 layers, 4 heads, 2 KV heads;
vocab 259: bytes 0..255, <|pad|> 256, <|bos|> 257, <|eos|> 258; 64 positions) is trained on one CPU thread (about
30 s) with the Bradley-Terry loss -log sigmoid(r_chosen - r_rejected) on fresh pairs each step, then saved with
save_pretrained and a byte-level gspo_tokenizer.json (no BOS) to --hf-dir and exported with
`scripts/export_hf.py --reward --max-seq-len 64` to --out. Same --seed and options, same weights.

The text it reads is what gspo renders with reward.model_template none: data.prompt_template's prompt (the default
"{prompt}": the arithmetic task's "a+b=") followed by the response as the policy's byte tokenizer decodes it (special
tokens dropped, EOS not part of it), e.g. "3+4=7", "3+4=7\xe9q", "3+4=". Prompts: all 25 of operands 0..4 with '+'
(data.max_operand 4), so the held-out sums are known too (the reward model is the verifier; the policy never trains
on the held-out prompts). Responses are 0..3 bytes as the demo's (rollout.max_new_tokens 3): each byte a digit half
the time, else any byte (the tiny policy's prior favours digits), the first byte the sum 40% of the time, and one in
five of 2-3 bytes led by ' ', '+', '0' or '-' and a digit. Each is labelled by the demo's verifier, leading_integer (a
Python copy of src/gspo/reward/base/verifier.cpp): right when the response's leading integer is the sum, whatever follows
("7\xe9q", "07" and " 7" are right; "71", "-7", "", "x7" wrong). A pair is a right (chosen) and a wrong (rejected)
response to one prompt, their lengths drawn from one distribution (length tells nothing; a GSPO group compares
responses of different lengths, so scores must compare across lengths). Half the pairs are minimal: the wrong
response is the right one with another digit ("7q" / "3q"), which teaches the addition table itself.

Ties (--tie-weight, 1 by default; 0 = plain Bradley-Terry): each right response beside the next right one in the
batch, and each wrong beside the next wrong, count as a tie, half a win each way (-(log s(d) + log s(-d)) / 2, d the
score difference), so the model scores equally graded responses alike. Plain Bradley-Terry constrains only
right-vs-wrong differences and leaves the wrong answers' order to chance; GSPO's groups of all-wrong answers then
follow that order, and the policy learns slower (docs/verifiers.md, "A worked example", has the figures).

At the end: pairwise accuracy (the share of (right, wrong) pairs scored right > wrong) over every pair of a fixed set
of responses per prompt (the empty one, every 1-byte one, 2-byte ones over 10 digits and ' ', '+', '-' and 18 other
first bytes x 10 digits and 16 other second bytes, 300 drawn 3-byte ones: the same set for every seed), and over
the minimal pairs of that set (each right response against itself with each other digit); exit 1 if either is below
0.95.
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
PAD, BOS, EOS, VOCAB = 256, 257, 258, 259
MAX_POS = 64
MAX_OPERAND = 4  # configs/tiny.yaml data.max_operand; operator '+'
DIGITS = b"0123456789"
MIN_ACCURACY = 0.95
EVAL_SEED = 12345  # the evaluation set does not depend on --seed
MINIMAL_PAIRS = 0.5  # share of pairs whose wrong response is the right one with another digit


def canonical_int(s: bytes) -> bytes:
    """src/gspo/reward/base/verifier.cpp canonical_int: sign kept only for non-zero, leading zeros removed."""
    if not s:
        return s
    neg = s[:1] == b"-"
    i = 1 if s[:1] in (b"-", b"+") else 0
    while i + 1 < len(s) and s[i:i + 1] == b"0":
        i += 1
    digits = s[i:]
    if digits == b"0":
        neg = False
    return (b"-" if neg else b"") + digits


def leading_integer(text: bytes) -> bytes:
    """src/gspo/reward/base/verifier.cpp leading_integer: optional spaces/tabs, an optional sign, then digits."""
    i = 0
    while i < len(text) and text[i:i + 1] in (b" ", b"\t"):
        i += 1
    if i == len(text):
        return b""
    start = i
    if text[i:i + 1] in (b"-", b"+"):
        i += 1
    digits = i
    while i < len(text) and text[i:i + 1].isdigit():
        i += 1
    return b"" if i == digits else text[start:i]


def correct(response: bytes, answer: int) -> bool:
    """The demo's reward, leading_integer: the response's leading integer equals the answer."""
    got = leading_integer(response)
    return bool(got) and canonical_int(got) == canonical_int(str(answer).encode())


def prompts():
    """Every "a+b=" of the demo's space with its sum, as the arithmetic task writes it (src/gspo/data/dataset.cpp)."""
    return [(f"{a}+{b}=".encode(), a + b) for a in range(MAX_OPERAND + 1) for b in range(MAX_OPERAND + 1)]


def draw_byte(rng):
    return rng.choice(DIGITS) if rng.random() < 0.5 else rng.randrange(256)


def draw_response(rng, answer, length):
    """A response of `length` bytes like the tiny policy's: digits half the time, the answer first 40% of the time."""
    out = bytearray(draw_byte(rng) for _ in range(length))
    if length and rng.random() < 0.4:
        out[0] = ord(str(answer))
    if length >= 2 and rng.random() < 0.2:  # forms leading_integer reads past (" 7", "+7", "07"; "-7"), right or not
        out[0] = rng.choice(b" +0-")
        out[1] = ord(str(answer)) if rng.random() < 0.5 else rng.choice(DIGITS)
    return bytes(out)


def draw_length(rng):
    return rng.choices((0, 1, 2, 3), weights=(1, 3, 3, 4))[0]


def draw_labelled(rng, answer, want):
    """A response whose label (right or not) is `want`, by rejection."""
    while True:
        r = draw_response(rng, answer, draw_length(rng))
        if correct(r, answer) == want:
            return r


def swap_digit(response, answer, digit):
    """The response with its first answer digit replaced by `digit` (a minimal pair: "7ab" -> "3ab"; "07" -> "03")."""
    i = response.index(str(answer).encode())
    return response[:i] + bytes([digit]) + response[i + 1:]


def draw_pair(rng, answer):
    """(right, wrong) responses to one prompt; half the time the wrong one is the right one with another digit."""
    right = draw_labelled(rng, answer, True)
    if rng.random() < MINIMAL_PAIRS:
        wrong = swap_digit(right, answer, rng.choice([d for d in DIGITS if d != ord(str(answer))]))
        if not correct(wrong, answer):
            return right, wrong
    return right, draw_labelled(rng, answer, False)


def encode(texts):
    """Right-padded ids and mask (PAD never occurs in a text: bytes only)."""
    width = max(len(t) for t in texts)
    ids = torch.full((len(texts), width), PAD, dtype=torch.long)
    mask = torch.zeros((len(texts), width), dtype=torch.long)
    for i, t in enumerate(texts):
        ids[i, :len(t)] = torch.tensor(list(t), dtype=torch.long)
        mask[i, :len(t)] = 1
    return ids, mask


def scores(model, texts, batch=1024):
    out = []
    with torch.no_grad():
        for i in range(0, len(texts), batch):
            ids, mask = encode(texts[i:i + batch])
            out.append(model(input_ids=ids, attention_mask=mask).logits[:, 0].float())
    return torch.cat(out)


def eval_set():
    """Per prompt: (prompt, answer, responses): the same fixed set for every seed."""
    rng = random.Random(EVAL_SEED)
    others = [b for b in range(256) if b not in DIGITS]
    firsts = list(DIGITS) + list(b" +-") + rng.sample(others, 18)
    seconds = list(DIGITS) + rng.sample(others, 16)
    out = []
    for prompt, answer in prompts():
        rs = {b""} | {bytes([c]) for c in range(256)} | {bytes([f, s]) for f in firsts for s in seconds}
        rs |= {draw_response(rng, answer, 3) for _ in range(300)}
        out.append((prompt, answer, sorted(rs)))
    return out


def evaluate(model):
    """Pairwise accuracy (share of (right, wrong) pairs scored right > wrong) over every pair of one prompt's eval
    responses, and over the minimal pairs (each right response against itself with each of the 9 other digits), with
    the prompt of lowest minimal-pair accuracy. The minimal pairs are the hard case: the addition table itself."""
    won = total = mwon = mtotal = 0
    worst = (2.0, None)
    for prompt, answer, rs in eval_set():
        s = scores(model, [prompt + r for r in rs])
        ok = torch.tensor([correct(r, answer) for r in rs])
        diff = s[ok].view(-1, 1) - s[~ok].view(1, -1)  # [right, wrong]
        won += int((diff > 0).sum())
        total += diff.numel()
        right = [r for r in rs if correct(r, answer)]
        digits = [d for d in DIGITS if d != ord(str(answer))]
        swapped = scores(model, [prompt + swap_digit(r, answer, d) for r in right for d in digits])
        mdiff = s[ok].view(-1, 1) - swapped.view(len(right), len(digits))
        mwon += int((mdiff > 0).sum())
        mtotal += mdiff.numel()
        acc = float((mdiff > 0).float().mean())
        if acc < worst[0]:
            worst = (acc, prompt.decode())
    return won / total, total, mwon / mtotal, mtotal, worst


def make_model(seed):
    import transformers
    torch.manual_seed(seed)
    cfg = transformers.AutoConfig.for_model(
        "qwen3", vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, max_position_embeddings=MAX_POS, bos_token_id=BOS, eos_token_id=EOS,
        pad_token_id=PAD, num_labels=1, tie_word_embeddings=False)
    return transformers.Qwen3ForSequenceClassification(cfg)


def train(model, a):
    """Bradley-Terry on fresh pairs each step: AdamW, linear warm-up then linear decay to 0."""
    rng = random.Random(a.seed)
    table = prompts()
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.0)
    warm = max(1, a.steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (a.steps - s) / max(1, a.steps - warm))))
    model.train()
    for step in range(a.steps):
        chosen, rejected = [], []
        for _ in range(a.batch):
            prompt, answer = rng.choice(table)
            right, wrong = draw_pair(rng, answer)
            chosen.append(prompt + right)
            rejected.append(prompt + wrong)
        ids, mask = encode(chosen + rejected)
        r = model(input_ids=ids, attention_mask=mask).logits[:, 0].float()
        margin = r[:a.batch] - r[a.batch:]
        loss = -torch.nn.functional.logsigmoid(margin).mean()
        if a.tie_weight:  # each right beside the next right, each wrong beside the next wrong: a tie
            d = torch.cat([r[:a.batch] - r[:a.batch].roll(1), r[a.batch:] - r[a.batch:].roll(1)])
            tie = 0.5 * (torch.nn.functional.softplus(d) + torch.nn.functional.softplus(-d)) - math.log(2.0)
            loss = loss + a.tie_weight * tie.mean()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step == 0 or (step + 1) % 250 == 0:
            print(f"step {step + 1}/{a.steps}: loss {loss.item():.4f}, batch pair accuracy "
                  f"{(margin > 0).float().mean().item():.3f}", flush=True)
    model.eval()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="the exported reward model (.pt)")
    p.add_argument("--hf-dir", default="", help="where the Hugging Face checkpoint is saved; default: OUT without "
                                                 ".pt, plus _hf")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--batch", type=int, default=64, help="pairs per step")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--tie-weight", type=float, default=1.0,
                   help="weight of the ties between equally graded responses; 0 = plain Bradley-Terry")
    a = p.parse_args()
    hf_dir = a.hf_dir or os.path.splitext(a.out)[0] + "_hf"
    torch.set_num_threads(1)  # same seed, same model; the model is too small for threads to pay
    t0 = time.time()
    model = make_model(a.seed)
    train(model, a)
    acc, pairs, minimal, minimal_pairs, (worst, worst_prompt) = evaluate(model)
    import transformers
    transformers.utils.logging.disable_progress_bar()
    model.save_pretrained(hf_dir)
    with open(os.path.join(hf_dir, "gspo_tokenizer.json"), "w") as f:
        json.dump({"type": "byte", "add_bos": False,
                   "special_tokens": {"<|pad|>": PAD, "<|bos|>": BOS, "<|eos|>": EOS}}, f)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    subprocess.run([sys.executable, os.path.join(HERE, "export_hf.py"), "--hf", hf_dir, "--out", a.out, "--reward",
                    "--max-seq-len", str(MAX_POS)], check=True)
    print(f"pairwise accuracy {acc:.4f} over {pairs} (right, wrong) pairs of 25 prompts; {minimal:.4f} over "
          f"{minimal_pairs} minimal pairs (a wrong digit in a right response; lowest {worst:.4f} on {worst_prompt!r}); "
          f"{time.time() - t0:.1f} s")
    if min(acc, minimal) < MIN_ACCURACY:
        sys.exit(f"pairwise accuracy {min(acc, minimal):.4f} < {MIN_ACCURACY}: train longer (--steps) or use another "
                 f"--seed")


if __name__ == "__main__":
    main()
