#!/usr/bin/env bash
# Low-rank adapters in training (model.lora_rank, docs/lora.md) on tiny_prior: with B = 0 the first step samples what
# full fine-tuning's first step samples (every sample-derived metric equal); the merged sampling copy follows the
# adapters (behaviour log-probs equal the trainer's at every step); 2 ranks (plain AdamW and ZeRO-1) and a rollout
# rank beside a trainer (the adapters alone sent), ZeRO-3 over the frozen base (2 ranks, and 2 trainers beside a
# rollout rank, and resumed with ZeRO-1) = 1 process on the merged weights; a KL penalty's reference is the base
# with the adapters off (= a loaded copy of it, also under ZeRO-3); a checkpoint holds adapter.pt + adapter.json and no policy.pt, a resume continues bit for bit and
# refuses another base or a full-fine-tuning config; partial rollouts run with adapters; bad settings are config
# errors naming the keys.
# usage: test_lora.sh GSPO_BINARY TEST_MODELS_DIR SOURCE_DIR [PYTHON]
set -u
GSPO="$1"; MODELS="$2"; SRC="$3"; PY="${4:-/usr/bin/python3}"
TMP="$(mktemp -d)"; trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
LAUNCH="$SRC/scripts/launch_local.sh"
source "$SRC/tests/dist/lib.sh"

# rank 4, alpha 32 (scale 8), 10x tiny.yaml's learning rate, as LoRA recipes do
L=(--set model.lora_rank=4 --set model.lora_alpha=32 --set optimizer.lr=5e-3)

# --- B = 0: step 1 samples what full fine-tuning samples ----------------------------------------------------------
run full 1 && run l1 1 "${L[@]}" && {
  if "$PY" - "$TMP/full/metrics.jsonl" "$TMP/l1/metrics.jsonl" "$TMP/metrics_schema.json" <<'PY'
import json, sys
full, lora = (json.loads(open(p).readline()) for p in sys.argv[1:3])
exact = [r["name"] for r in json.load(open(sys.argv[3])) if r["match"] == "exact"]
sampled = [k for k in exact if k.startswith(("reward", "response_len", "correct", "finish", "trunc")) and k in full]
assert len(sampled) >= 5, sampled
diff = [(k, full[k], lora[k]) for k in sampled if full[k] != lora[k]]
assert not diff, f"step 1 differs: {diff}"
print(f"{len(sampled)} sample metrics equal at step 1 (reward_mean {full['reward_mean']})")
PY
  then ok "B = 0: the adapted model's first step samples full fine-tuning's"; else bad "B = 0 first step" "$TMP/l1.log"; fi
}

# --- the merged sampling copy follows the adapters; the checkpoint holds adapters only --------------------------
if [ -f "$TMP/l1/metrics.jsonl" ]; then
  if out="$("$PY" - "$TMP/l1" "$STEPS" <<'PY'
import json, os, sys
run, steps = sys.argv[1], int(sys.argv[2])
lines = [json.loads(l) for l in open(f"{run}/metrics.jsonl")]
worst = max(abs(m["mismatch_logprob_diff_max"]) for m in lines)
assert worst < 1e-4, f"behaviour vs trainer log-prob difference {worst}: the sampling copy lags the adapters"
assert sum(m["grad_norm"] > 0 for m in lines) >= 2, "too few steps with gradients"
ck = f"{run}/checkpoints/step_{steps:08d}"
files = sorted(os.listdir(ck))
assert "adapter.pt" in files and "adapter.json" in files and "policy.pt" not in files, files
meta = json.load(open(f"{ck}/adapter.json"))
assert meta["rank"] == 4 and meta["alpha"] == 32 and len(meta["names"]) % 7 == 0 and meta["names"], meta
assert os.path.isabs(meta["base_path"]) and meta["base_path"].endswith("tiny_prior.pt"), meta["base_path"]
print(f"max |behaviour - trainer log-prob| {worst:.2g} over {len(lines)} steps; checkpoint files {files}")
PY
)"; then ok "merged sampling copy and adapter checkpoint: $out"; else bad "sampling copy / checkpoint: $out"; fi
  # the copy holds only the adapted weights of its own: the rest (embedding, norms, head) is the policy's tensors
  if grep -Eq "sampling copy: shares [1-9][0-9]* of the base" "$TMP/l1.log"; then
    ok "$(grep -o "sampling copy: shares.*" "$TMP/l1.log" | cut -c1-110)"
  else bad "the sampling copy shares nothing with the policy" "$TMP/l1.log"; fi
fi

# --- data parallel: 2 ranks = 1 process (merged weights W + (alpha / r) B A compared) ---------------------------
run l2 2 "${L[@]}" && same "LoRA, 2 ranks = 1 process" l1 l2
run l2z1 2 "${L[@]}" --set distributed.zero_stage=1 && same "LoRA, 2 ranks ZeRO-1 = 1 process" l1 l2z1

# --- ZeRO-3: the frozen base sharded over the ranks (no masters, moments or gradients), the adapters replicated ------
Z3=(--set distributed.zero_stage=3 --set train.activation_checkpointing=true)
run l2z3 2 "${L[@]}" "${Z3[@]}" && {
  same "LoRA, 2 ranks ZeRO-3 (frozen base sharded) = 1 process" l1 l2z3
  # (the bytes a rank holds are tests/unit/test_zero3.cpp's and bench/run_lora_memory.sh's: on this 2-layer model a
  # layer kept gathered for the next forward weighs as much as the half of the base a rank no longer holds)
  if grep -q "sampling: the whole hold gathers the sharded base" "$TMP/l2z3.log"; then
    ok "LoRA ZeRO-3 samples through the whole hold (no sampling copy): $(grep -o "sampling: the whole.*" "$TMP/l2z3.log" | head -1 | cut -c1-100)"
  else bad "LoRA ZeRO-3: no sampling line" "$TMP/l2z3.log"; fi
}
# trainers under ZeRO-3 beside a rollout rank: the adapters alone are sent, the base is never gathered whole
run la12z3 3 "${L[@]}" "${Z3[@]}" --set distributed.rollout_ranks=1 && \
  CMP_EXTRA="--one-sided version_lag_mean,version_lag_max" same "LoRA, 1 rollout rank + 2 ZeRO-3 trainers = 1 process" l1 la12z3
# the adapters' optimizer state is ZeRO-1's under ZeRO-3 too: 2 steps sharded, resumed with zero_stage 1
PHASES[lz3to1]="2 2 ${L[*]} ${Z3[*]}"$'\n'"2 $STEPS ${L[*]} --set distributed.zero_stage=1 --resume auto"$'\n'
launch lz3to1 2 2 "${L[@]}" "${Z3[@]}" && launch lz3to1 2 "$STEPS" "${L[@]}" --set distributed.zero_stage=1 --resume auto \
  && same "LoRA, ZeRO-3 for 2 steps then resumed with ZeRO-1 = 1 process" l1 lz3to1

# --- a KL penalty to the base: the policy's frozen base is the reference (adapters off), no second copy ------------
KL=(--set algorithm.kl_coef=0.1)
run lkl 1 "${L[@]}" "${KL[@]}" && run lklref 1 "${L[@]}" "${KL[@]}" --set "algorithm.reference_model=$MODELS/tiny_prior.pt" && {
  if grep -q "KL reference: the policy's frozen base" "$TMP/lkl.log" && ! grep -q "KL reference: the policy's frozen base" "$TMP/lklref.log" \
     && kl="$("$PY" -c "
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
assert all(x['kl'] == y['kl'] for x, y in zip(a, b)) and len(a) == len(b), [(x['kl'], y['kl']) for x, y in zip(a, b)]
assert max(x['kl'] for x in a) > 0, 'KL stayed 0: the adapters never moved the policy off the base'
print(', '.join(f\"{x['kl']:.3g}\" for x in a))" "$TMP/lkl/metrics.jsonl" "$TMP/lklref/metrics.jsonl" 2>&1)"; then
    ok "KL to the base with the adapters off = KL to a loaded copy of it, every step equal (kl $kl)"
  else bad "KL reference = the base: $kl" "$TMP/lkl.log"; fi
  same "LoRA + KL: the base as reference = a loaded reference model" lklref lkl
}
run lklz3 2 "${L[@]}" "${KL[@]}" "${Z3[@]}" && same "LoRA + KL to the base, 2 ranks ZeRO-3 = 1 process" lkl lklz3

# --- a rollout rank beside a trainer: adapters alone travel (float32), merged into the rollout rank's copy ----------
run la11 2 "${L[@]}" --set distributed.rollout_ranks=1 && {
  CMP_EXTRA="--one-sided version_lag_mean,version_lag_max" same "LoRA, 1 rollout rank + 1 trainer, max_staleness 0 = 1 process" l1 la11
  if mb="$("$PY" -c "
import json, sys
ms = [json.loads(l) for l in open(sys.argv[1])]
sync = [m['weight_sync_mb'] for m in ms if m.get('weight_sync_mb', 0) > 0]
assert sync, 'no weight sync recorded'
print(max(sync))" "$TMP/la11/metrics.jsonl")" && "$PY" -c "import sys; sys.exit(0 if float(sys.argv[1]) < 0.2 else 1)" "$mb"; then
    ok "LoRA weight sync: ${mb} MB a sync (the adapters in float32, under 0.2 MB; the whole model would be ~0.6 MB)"
  else bad "LoRA weight sync size: $mb MB" "$TMP/la11.rank0.log"; fi
}

# --- a LoRA student with a distillation teacher (#69): the teacher scores the merged-adapter student's rows; ZeRO-3
# shards the student's frozen base, the teacher stays whole on each rank. (lr 1e-3: at L's 5e-3 an Adam step of a
# near-zero gradient element amplifies summation-order rounding to ~1e-5 after 4 steps, the comparison's tolerance.)
DIST=(--set "distill.teacher=$MODELS/tiny.pt" --set algorithm.loss=gspo_token --set distill.reward_weight=0.5
      --set optimizer.lr=1e-3)
run ld1 1 "${L[@]}" "${DIST[@]}" && run ld2z3 2 "${L[@]}" "${DIST[@]}" "${Z3[@]}" \
  && same "LoRA student distilled, 2 ranks ZeRO-3 = 1 process" ld1 ld2z3

# --- resume: bit for bit; another base or a full-fine-tuning config refused --------------------------------------
launch lres 1 2 "${L[@]}" && launch lres 1 "$STEPS" "${L[@]}" --resume auto && {
  if CMP_EXTRA="--weight-tol 0" compare "LoRA resumed at step 2" l1 lres; then
    ok "LoRA resumed at step 2 = uninterrupted: $(head -1 "$TMP/cmp_LoRA resumed at step 2.log")"
  else bad "LoRA resume" "$TMP/cmp_LoRA resumed at step 2.log"; fi
}
resume_err() {  # resume_err NAME NEEDLE [extra...]: resuming l1 with the extra settings exits 2 naming NEEDLE
  local name="$1" needle="$2"; shift 2
  out="$("$GSPO" "${TRAIN[@]}" --set train.max_steps=$((STEPS + 1)) --set "train.output_dir=$TMP/l1" "$@" --resume auto 2>&1)"
  rc=$?
  if [ $rc -eq 2 ] && grep -qF -- "$needle" <<<"$out"; then ok "$name: $(grep -m1 -F -- "$needle" <<<"$out" | cut -c1-160)"
  else bad "$name: exit $rc: $out"; fi
}
resume_err "another base" "tiny_prior.pt' (weights fingerprint" "${L[@]}" --set "model.path=$MODELS/tiny.pt"
resume_err "full fine-tuning config" "holds low-rank adapters" --set optimizer.lr=5e-3

# --- partial rollouts with adapters (the sampling copy merged before each call) -----------------------------------
launch lpart 1 3 "${L[@]}" --set async.partial_rollout=true --set async.max_staleness=1 --set async.prompts_in_flight=12 \
  --set rollout.max_new_tokens=12 && {
  if grep -q "finished after step 3" "$TMP/lpart.log"; then ok "partial rollouts with adapters: 3 steps"
  else bad "partial rollouts with adapters" "$TMP/lpart.log"; fi
}

# --- adapters outside training: generate / inspect / eval --adapter, model.adapter to start from ------------------
CK="$TMP/l1/checkpoints/step_$(printf %08d "$STEPS")"
# The reference: the base with W + (alpha / r) B A written in by Python (compare_runs.py's merge, float64 then float32).
"$PY" - "$CK" "$TMP/merged.pt" "$SRC/tests/dist" <<'PY' >"$TMP/merged.log" 2>&1 || bad "Python merge" "$TMP/merged.log"
import sys, torch
sys.path.insert(0, sys.argv[3])
from compare_runs import merged_adapters
import json
meta = json.load(open(sys.argv[1] + "/adapter.json"))
extra = {"gspo_manifest.json": "", "gspo_tokenizer.json": ""}
m = torch.jit.load(meta["base_path"], map_location="cpu", _extra_files=extra)
w = merged_adapters(sys.argv[1])
with torch.no_grad():
    for n, p in m.named_parameters():
        p.copy_(w[n].to(p.dtype))
torch.jit.save(m, sys.argv[2], _extra_files=extra)
PY
gen() { "$GSPO" generate -m "$@" -p "1+2=" -p "3+4=" -p "0+0=" -p "2+2=" -t 0 --max-new-tokens 8 --json; }
# same_gen A B: the same greedy tokens, log-probs within 1e-5 (float32 merge in gspo, float64 in Python)
same_gen() {
  "$PY" -c "
import json, sys
a, b = ([json.loads(l) for l in t.splitlines()] for t in sys.argv[1:3])
assert len(a) == len(b) == 4 and all(x['ids'] == y['ids'] for x, y in zip(a, b)), 'tokens differ'
d = max(abs(p - q) for x, y in zip(a, b) for p, q in zip(x['logprobs'], y['logprobs']))
assert d <= 1e-5, f'log-probs differ by {d}'
print(f'{d:.2g}')" "$1" "$2"
}
if a="$(gen "$MODELS/tiny_prior.pt" --adapter "$CK" 2>&1)" && b="$(gen "$TMP/merged.pt" 2>&1)" && d="$(same_gen "$a" "$b" 2>&1)"; then
  if ! same_gen "$a" "$(gen "$MODELS/tiny_prior.pt")" >/dev/null 2>&1; then  # the base answers otherwise
    ok "generate --adapter = the model Python merged (greedy, 4 prompts: tokens equal, log-probs within $d), not the base"
  else bad "generate --adapter answers as the base does: the adapters changed nothing greedy decoding shows"; fi
else bad "generate --adapter vs the Python merge: $d"; fi
# -m a checkpoint of adapters (or its run directory): its base from adapter.json, the adapters merged
if a2="$(gen "$TMP/l1" 2>"$TMP/gen_run.log")" && d="$(same_gen "$a" "$a2" 2>&1)" \
   && grep -q "with adapters $CK (from checkpoint $CK)" "$TMP/gen_run.log"; then
  ok "generate -m RUN_DIR of adapters = the base --adapter its newest checkpoint (log-probs within $d)"
else bad "generate -m RUN_DIR of adapters: $d $(cat "$TMP/gen_run.log")"; fi
if out="$("$GSPO" generate -m "$CK" --adapter "$TMP/lres/checkpoints/step_00000002" -p "1+2=" 2>&1)"; then
  bad "generate -m a checkpoint of adapters with other --adapter ran: $out"
else ok "generate -m CHECKPOINT --adapter OTHER refused: $(grep -o "is a checkpoint of adapters.*" <<<"$out" | cut -c1-80)"; fi
if out="$("$GSPO" inspect "$MODELS/tiny_prior.pt" --adapter "$CK" 2>&1)" && grep -q "LoRA rank 4, alpha 32" <<<"$out"    && grep -q "contract     ok" <<<"$out"; then ok "inspect --adapter: $(grep adapter <<<"$out" | cut -c1-120)"
else bad "inspect --adapter: $out"; fi
EV=(eval -m "$MODELS/tiny_prior.pt" -d "$SRC/data/math_sample.jsonl" -k 2 --max-problems 2 --set rollout.max_new_tokens=8
    --no-progress)
if "$GSPO" "${EV[@]}" --adapter "$CK" -o "$TMP/ev" >"$TMP/ev.log" 2>&1 && grep -q '"adapter"' "$TMP/ev/eval_state.json"; then
  ok "eval --adapter: finished, its state names the adapters"
else bad "eval --adapter" "$TMP/ev.log"; fi
rm -f "$TMP/ev/summary.json"  # an unfinished eval: resumable only with the same adapters
if out="$("$GSPO" "${EV[@]}" --adapter "$TMP/lres/checkpoints/step_00000002" -o "$TMP/ev" 2>&1)"; then
  bad "eval resumed with other adapters: $out"
else ok "eval with other adapters does not resume: $(grep -o 'other settings ([^)]*)' <<<"$out")"; fi
# Bad adapters are refused at load, naming adapter.pt and the tensor (#59: NaN adapters used to generate NUL bytes and
# eval wrote them as responses with exit 0): a NaN in B of the first adapter; adapter.json saying rank 8 over rank-4
# tensors (train used to accept it, generate refused it with other words).
cp -r "$CK" "$TMP/nan_ck" && cp -r "$CK" "$TMP/rank8_ck" && "$PY" - "$TMP/nan_ck" "$TMP/rank8_ck" <<'PY'
import json, sys, torch
m = torch.jit.load(sys.argv[1] + "/adapter.pt")
with torch.no_grad():
    dict(m.named_parameters())["1"][0, 0] = float("nan")
m.save(sys.argv[1] + "/adapter.pt")
meta = json.load(open(sys.argv[2] + "/adapter.json"))
meta["rank"] = 8
json.dump(meta, open(sys.argv[2] + "/adapter.json", "w"))
PY
refused() {  # refused NAME WANT_RC NEEDLE command...: exit WANT_RC with NEEDLE in its output
  local name="$1" want="$2" needle="$3"; shift 3
  out="$("$@" 2>&1)"; rc=$?
  if [ $rc -eq "$want" ] && grep -qF -- "$needle" <<<"$out"; then ok "$name refused: $needle"
  else bad "$name: exit $rc (wanted $want, '$needle'): $(tail -3 <<<"$out")"; fi
}
NAN_MSG="nan_ck/adapter.pt': B of 'layers.0.self_attn.q_proj.weight' (tensor 1) holds 1 non-finite value (NaN or Inf)"
refused "generate --adapter NaN" 5 "$NAN_MSG" "$GSPO" generate -m "$MODELS/tiny_prior.pt" --adapter "$TMP/nan_ck" -p "1+2="
refused "eval --adapter NaN" 5 "$NAN_MSG" "$GSPO" "${EV[@]}" --adapter "$TMP/nan_ck" -o "$TMP/ev_nan"
[ ! -e "$TMP/ev_nan/samples.jsonl" ] && ok "eval --adapter NaN wrote no samples" || bad "eval --adapter NaN wrote samples"
refused "inspect --adapter NaN" 5 "$NAN_MSG" "$GSPO" inspect "$MODELS/tiny_prior.pt" --adapter "$TMP/nan_ck"
refused "train model.adapter NaN" 5 "$NAN_MSG" "$GSPO" "${TRAIN[@]}" "${L[@]}" --set train.max_steps=1 \
  --set "train.output_dir=$TMP/e_nan" --set "model.adapter=$TMP/nan_ck"
RANK_MSG="A of 'layers.0.self_attn.q_proj.weight' (tensor 0) has rank 4, but adapter.json says rank 8"
refused "generate --adapter rank 8 over rank 4" 5 "$RANK_MSG" "$GSPO" generate -m "$MODELS/tiny_prior.pt" --adapter "$TMP/rank8_ck" -p "1+2="
refused "train model.adapter rank 8 over rank 4" 5 "$RANK_MSG" "$GSPO" "${TRAIN[@]}" "${L[@]}" --set train.max_steps=1 \
  --set "train.output_dir=$TMP/e_rank8" --set "model.adapter=$TMP/rank8_ck"
# PEFT round trip of a trained checkpoint: export --peft, import back onto the same base: the same tensors, bit for bit
if "$PY" "$SRC/scripts/export_to_hf.py" --checkpoint "$CK" --out "$TMP/peft" --peft >"$TMP/peft.log" 2>&1 \
   && "$PY" "$SRC/scripts/peft_adapter.py" import --peft "$TMP/peft" --base "$MODELS/tiny_prior.pt" --out "$TMP/back" \
        >>"$TMP/peft.log" 2>&1 \
   && "$PY" -c "
import json, sys, torch
a, b = (torch.jit.load(d + '/adapter.pt') for d in sys.argv[1:3])
ma, mb = (json.load(open(d + '/adapter.json')) for d in sys.argv[1:3])
assert ma['names'] == mb['names'] and ma['rank'] == mb['rank'] and ma['alpha'] == mb['alpha'], (ma, mb)
assert ma['base_fingerprint'] == mb['base_fingerprint'] or all(abs(x - y) <= 1e-9 * (1 + abs(x)) for x, y in zip(ma['base_fingerprint'], mb['base_fingerprint']))
pa, pb = dict(a.named_parameters()), dict(b.named_parameters())
assert len(pa) == len(pb) == 2 * len(ma['names']) and all(torch.equal(pa[k], pb[k]) for k in pa)" "$CK" "$TMP/back" 2>>"$TMP/peft.log"; then
  ok "PEFT round trip: export_to_hf.py --peft then peft_adapter.py import gives the checkpoint's adapters bit for bit"
else bad "PEFT round trip" "$TMP/peft.log"; fi
# model.adapter: training starts from those adapters
# (optimizer.lr 1e-30: a step that changes no float32 value above 1e-29, so the checkpoint shows the start)
TINY_LR=(--set optimizer.lr=1e-30 --set optimizer.weight_decay=0)
launch lstart 1 1 "${L[@]}" "${TINY_LR[@]}" --set "model.adapter=$CK" && {
  if d="$("$PY" -c "
import torch, sys
a, b = (torch.jit.load(f + '/adapter.pt') for f in sys.argv[1:3])
names = [n for n, _ in a.named_parameters()] + [n for n, _ in a.named_buffers()]
print(max((getattr(a, n) - getattr(b, n)).abs().max().item() for n in names), len(names))" "$CK" "$TMP/lstart/checkpoints/step_00000001")" \
     && "$PY" -c "import sys; d, n = sys.argv[1].split(); sys.exit(0 if float(d) <= 1e-12 and int(n) >= 2 else 1)" "$d"; then
    ok "model.adapter: training starts from the given adapters (max |difference| after a 1e-30 step, tensors: $d)"
  else bad "model.adapter start: $d" "$TMP/lstart.log"; fi
}
expect_err start-alpha "differs from the alpha the adapters" -- "${L[@]}" --set model.lora_alpha=16 --set "model.adapter=$CK"
expect_err start-base "(weights fingerprint" -- "${L[@]}" --set "model.path=$MODELS/tiny.pt" --set "model.adapter=$CK"
# model.adapter with lora_rank 0: full fine-tuning of the merged model (policy.pt after a 1e-30 step: the Python merge)
launch fstart 1 1 "${TINY_LR[@]}" --set "model.adapter=$CK" && {
  if d="$("$PY" -c "
import torch, sys
a = dict(torch.jit.load(sys.argv[1]).named_parameters()); b = dict(torch.jit.load(sys.argv[2]).named_parameters())
print(max((a[n] - b[n]).abs().max().item() for n in a))" "$TMP/fstart/checkpoints/step_00000001/policy.pt" "$TMP/merged.pt")"      && "$PY" -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 1e-6 else 1)" "$d"; then
    ok "model.adapter with lora_rank 0: fine-tunes the merged model (max |w - Python merge| $d, tolerance 1e-6)"
  else bad "model.adapter full fine-tuning start: $d" "$TMP/fstart.log"; fi
}

# --- the shipped configs/tiny-lora.yaml trains (on tiny_prior: its own base, tiny_warm.pt, is made by a script) --------
if "$GSPO" train -c "$SRC/configs/tiny-lora.yaml" --set "model.path=$MODELS/tiny_prior.pt" --set train.max_steps=3 \
     --set train.threads=1 --set logging.progress=false --set "train.output_dir=$TMP/shipped" >"$TMP/shipped.log" 2>&1 \
   && grep -q "training low-rank adapters: rank 16" "$TMP/shipped.log"; then ok "configs/tiny-lora.yaml: 3 steps of rank-16 adapters"
else bad "configs/tiny-lora.yaml" "$TMP/shipped.log"; fi

# --- config errors ---------------------------------------------------------------------------------------------------
expect_err dropout "model.lora_dropout must be 0" -- "${L[@]}" --set model.lora_dropout=0.05
expect_err targets "'lm_head' is not a decoder-layer projection" -- "${L[@]}" --set 'model.lora_targets=[q_proj, lm_head]'
expect_err z3-keep "distributed.zero3_keep_whole with model.lora_rank" -- "${L[@]}" "${Z3[@]}" \
  --set distributed.zero3_keep_whole=true
expect_err z3-bf16 "rollout.dtype bfloat16 with model.lora_rank, distributed.zero_stage 3" -- "${L[@]}" "${Z3[@]}" \
  --set rollout.dtype=bfloat16
expect_err huge-rank "model.lora_rank 100000 is above the smaller dimension of 'layers.0.self_attn.q_proj.weight'" -- \
  "${L[@]}" --set model.lora_rank=100000
expect_err per-layer "model.lora_rank needs the per-layer pass" -- "${L[@]}" --set train.chunked_head=false \
  --set train.activation_checkpointing=false

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
