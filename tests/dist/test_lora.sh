#!/usr/bin/env bash
# Low-rank adapters in training (model.lora_rank, docs/lora.md) on tiny_prior: with B = 0 the first step samples what
# full fine-tuning's first step samples (every sample-derived metric equal); the merged sampling copy follows the
# adapters (behaviour log-probs equal the trainer's at every step); 2 ranks (plain AdamW and ZeRO-1) = 1 process on
# the merged weights; a checkpoint holds adapter.pt + adapter.json and no policy.pt, a resume continues bit for bit and
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
fi

# --- data parallel: 2 ranks = 1 process (merged weights W + (alpha / r) B A compared) ---------------------------
run l2 2 "${L[@]}" && same "LoRA, 2 ranks = 1 process" l1 l2
run l2z1 2 "${L[@]}" --set distributed.zero_stage=1 && same "LoRA, 2 ranks ZeRO-1 = 1 process" l1 l2z1

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

# --- config errors ---------------------------------------------------------------------------------------------------
expect_err dropout "model.lora_dropout must be 0" -- "${L[@]}" --set model.lora_dropout=0.05
expect_err targets "'lm_head' is not a decoder-layer projection" -- "${L[@]}" --set 'model.lora_targets=[q_proj, lm_head]'
expect_err zero3 "model.lora_rank with distributed.zero_stage 3 is not built yet" -- "${L[@]}" --set distributed.zero_stage=3
expect_err rollout-ranks "model.lora_rank with distributed.rollout_ranks is not built yet" WORLD_SIZE=2 -- "${L[@]}" \
  --set distributed.rollout_ranks=1
expect_err per-layer "model.lora_rank needs the per-layer pass" -- "${L[@]}" --set train.chunked_head=false \
  --set train.activation_checkpointing=false

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
