#!/usr/bin/env bash
# Tokenizer encode benchmark: gspo's C++ BPE against Hugging Face `tokenizers` (Rust, via Python in the pinned
# environment: bench/reference_tokenize.py), same tokenizer.json, same corpus, same run, ids compared one for one.
# Usage: bash bench/run_tokenizer_bench.sh [TOKENIZER]   TOKENIZER: qwen3 (default), qwen2.5, or a path to a
# tokenizer.json or a directory holding one. Needs ../shared beside the checkout (tokenizer files and the corpus's
# sources) and the pinned environment (scripts/setup.sh). Builds only bench_tokenizer (BUILD_TARGET overrides).
# Exits non-zero when the reference fails or any document's ids differ. Not part of the test suite.
set -euo pipefail
ARG="${1:-qwen3}"
case "$ARG" in */*|*.json) TOK="$(realpath -m -- "$ARG")" ;; esac   # a path: relative to the caller's directory
cd "$(dirname "$0")/.."
SHARED="$(cd .. && pwd)/shared"
TOK="${TOK:-$SHARED/data/tokenizers/$ARG}"
if [ ! -d "$SHARED/data/benchmarks" ] ||
   [ ! -f "$SHARED/data/tokenizers/qwen/llamacpp_vocab_test_qwen2.inp" ]; then
  echo "run_tokenizer_bench: needs the shared data directory beside the checkout: $SHARED" >&2
  echo "  (data/benchmarks/{math500,gsm8k_test,humaneval}.jsonl," \
       "data/tokenizers/qwen/llamacpp_vocab_test_qwen2.inp," >&2
  echo "   data/tokenizers/qwen3/tokenizer.json); it is not there, so there is nothing to measure." >&2
  exit 2
fi
if [ ! -f "$TOK" ] && [ ! -f "$TOK/tokenizer.json" ]; then
  echo "run_tokenizer_bench: no tokenizer.json at $TOK" >&2
  exit 2
fi
source scripts/pyenv.sh
if [ ! -x "$GSPO_PY" ]; then
  echo "run_tokenizer_bench: no Python environment at $GSPO_VENV; run: bash scripts/setup.sh" >&2
  exit 2
fi
if ! "$GSPO_PY" -c 'import tokenizers' 2>/dev/null; then
  echo "run_tokenizer_bench: $GSPO_PY has no 'tokenizers' package (pinned in scripts/requirements.txt);" \
       "run: bash scripts/setup.sh" >&2
  exit 2
fi
BUILD_TARGET="${BUILD_TARGET:-bench_tokenizer}" bash scripts/build.sh
built_py="$(sed -n 's/^GSPO_PYTHON:[A-Z]*=//p' build/CMakeCache.txt)"
if [ "$built_py" != "$GSPO_PY" ]; then   # bench_tokenizer runs the reference under the configured interpreter
  echo "run_tokenizer_bench: note: build/ was configured with GSPO_PYTHON=$built_py, not $GSPO_PY;" \
       "the reference runs under $built_py" >&2
fi
WORK="$PWD/build/bench_tokenizer_data"
mkdir -p "$WORK"
"$GSPO_PY" bench/make_tokenizer_corpus.py "$SHARED" "$WORK/corpus.jsonl"
build/bench/bench_tokenizer "$TOK" "$WORK/corpus.jsonl" "$WORK"
