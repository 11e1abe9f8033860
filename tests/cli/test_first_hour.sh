#!/usr/bin/env bash
# The README's first-hour block (between <!-- first-hour --> and <!-- /first-hour -->) run as written, from the source
# directory, on a random Qwen3 saved as a Hugging Face model. Only this changes: HF, DATA and RUN get scratch values,
# `build/gspo` is the binary under test, and settings that only make it short are appended (train: 2 steps of 2
# prompts x 2 samples, 16 new tokens, validation on 2 AIME problems x 1 sample; eval: 2 problems, 1 sample, 16
# tokens; tensorboard: a free port, 30 s). Then it checks what each command left: the exported model, metrics and
# AIME validation, TensorBoard events equal to metrics.jsonl (read by the pinned tensorboard package) and a server
# that answers, the eval of the run's newest checkpoint (`-m RUN`), and the Hugging Face export, which transformers
# loads and which gives the trained checkpoint's logits (within 1e-4).
# usage: test_first_hour.sh SOURCE_DIR GSPO_BINARY PYTHON
set -u
SRC="$1"; GSPO="$2"; PY="$3"
TMP="$(mktemp -d)"; trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
pass=0; fail=0
ok() { pass=$((pass+1)); echo "ok   $1"; }
bad() { fail=$((fail+1)); echo "FAIL $1"; [ -n "${2:-}" ] && tail -8 "$2"; }
cd "$SRC" || exit 1

# --- a random Qwen3 as a Hugging Face directory (a byte-level BPE trained on the math sample, chat tokens) ----------
"$PY" - "$TMP/hf" "$SRC" <<'PY' >"$TMP/make.log" 2>&1 || { bad "making the random Qwen3" "$TMP/make.log"; exit 1; }
import sys, torch
sys.path.insert(0, sys.argv[2] + "/tests/hf_export")
from test_roundtrip import make_tokenizer
from transformers import AutoConfig, AutoModelForCausalLM
out = sys.argv[1]
make_tokenizer(out, sys.argv[2])
torch.manual_seed(0)
cfg = AutoConfig.for_model("qwen3", vocab_size=384, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=2048,
                           tie_word_embeddings=True, bos_token_id=None, eos_token_id=0, pad_token_id=0)
AutoModelForCausalLM.from_config(cfg).save_pretrained(out)
PY

# --- the README block, as written -----------------------------------------------------------------------------------
block="$(sed -n '/^<!-- first-hour/,/^<!-- \/first-hour -->/p' README.md | sed -n '/^```sh$/,/^```$/p' | sed '1d;$d')"
[ "$(grep -c . <<<"$block")" -ge 7 ] || { bad "README has no first-hour block: $block"; exit 1; }
PORT="$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
SHORT_TRAIN=(--set train.max_steps=2 --set rollout.prompts_per_step=2 --set rollout.group_size=2
  --set rollout.max_new_tokens=16 --set algorithm.num_minibatches=1 --set algorithm.micro_batch_size=4
  --set eval.max_problems=2 --set eval.samples=1 --set checkpoint.every=1 --set model.device=cpu
  --set train.threads=2 --set logging.progress=false)
SHORT_EVAL=(--max-problems 2 -k 1 --set eval.max_new_tokens=16 --set model.device=cpu --no-progress)
n=0
while IFS= read -r line; do
  [ -n "$line" ] || continue
  n=$((n+1))
  case "$line" in
    HF=*) HF="$TMP/hf"; continue ;;
    DATA=*) eval "${line%%#*}"; continue ;;  # the shipped sample, as written
    RUN=*) RUN="$TMP/first-hour"; continue ;;
  esac
  cmd="${line%%#*}"  # the comment off
  cmd="${cmd//build\/gspo /\"\$GSPO\" }"
  case "$cmd" in
    *" train "*) extra=("${SHORT_TRAIN[@]}") ;;
    *" eval "*) extra=("${SHORT_EVAL[@]}") ;;
    *tensorboard.main*)
      eval "timeout 30 $cmd --port $PORT --host 127.0.0.1" >"$TMP/tb_server.log" 2>&1 &
      if "$PY" - "$PORT" <<'PY'; then ok "README line $n (TensorBoard) serves on a free port"; else bad "README line $n: TensorBoard does not serve" "$TMP/tb_server.log"; fi
import sys, time, urllib.request
for _ in range(100):
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/data/runs", timeout=2).read()
        sys.exit(0)
    except Exception:
        time.sleep(0.25)
sys.exit(1)
PY
      kill %% 2>/dev/null; continue ;;
    *) extra=() ;;
  esac
  if eval "$cmd" '"${extra[@]}"' >"$TMP/line$n.log" 2>&1; then ok "README line $n: $(cut -c1-90 <<<"$line")"
  else bad "README line $n exits $?: $line" "$TMP/line$n.log"; fi
done <<<"$block"

# --- what the commands left -------------------------------------------------------------------------------------------
if out="$("$PY" - "$RUN" "$RUN-hf" <<'PY' 2>&1
import json, os, sys, torch
run, hf_out = sys.argv[1:3]
m = [json.loads(l) for l in open(f"{run}/metrics.jsonl")]
assert [x["step"] for x in m] == [1, 2], [x["step"] for x in m]
v = [json.loads(l) for l in open(f"{run}/validation.jsonl")]
assert len(v) >= 2 and all(d["dataset"] == "aime24" for x in v for d in x["datasets"]), v
assert any(k.startswith("val/aime24/") for k in m[-1]), sorted(m[-1])
s = json.load(open(f"{run}/eval-aime24/summary.json"))
assert s, "empty eval summary"
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained(hf_out, dtype=torch.float32).eval()
assert json.load(open(f"{hf_out}/config.json"))["model_type"] == "qwen3"
ckpt = sorted(os.listdir(f"{run}/checkpoints"))[-1]
ours = torch.jit.load(f"{run}/checkpoints/{ckpt}/policy.pt")
ids = torch.tensor([[5, 17, 42, 99, 7, 3]])
with torch.no_grad():
    a = model(ids).logits
    b = ours.forward(ids, torch.ones_like(ids))
d = (a - b.to(a.dtype)).abs().max().item()
assert d <= 1e-4, f"HF export logits differ from the checkpoint's by {d}"
print(f"2 steps, {len(v)} AIME validations, eval summary, HF export = checkpoint {ckpt} (max |logit diff| {d:.2g})")
PY
)"; then ok "$(tail -1 <<<"$out")"; else bad "outputs: $out"; fi
if "$PY" "$SRC/tests/cli/check_tensorboard.py" "$RUN" >"$TMP/tb.log" 2>&1; then ok "TensorBoard events = metrics.jsonl: $(tail -1 "$TMP/tb.log" | cut -c1-100)"
else bad "TensorBoard events" "$TMP/tb.log"; fi
if grep -q "from checkpoint $RUN/checkpoints/step_00000002" "$TMP"/line*.log; then ok "eval -m RUN took the newest checkpoint"
else bad "eval -m RUN: which checkpoint" "$TMP/line7.log"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -ge 8 ]
