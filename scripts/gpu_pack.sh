#!/usr/bin/env bash
# Packs what scripts/gpu_check.sh needs on a lent GPU machine into .gpu/ (git-ignored through .git/info/exclude), so
# that the machine's few minutes go to measuring, not to compiling (docs/gpu.md): the binaries built here (gspo, the
# test binary, the benchmarks; the same CUDA build CI makes, against the same torch 2.11.0+cu130 wheel the machine
# has), the shared libraries they need that the machine lacks (yaml-cpp, spdlog, fmt, PCRE2, utf8proc, copied from
# this machine), the models of the CUDA tests and of the tiny runs, the Qwen3 tokenizer (../shared does not travel),
# and the commit they were built from. Carry it: run(..., carry=[".gpu", ".deps"]).
#
#   bash scripts/gpu_pack.sh          # builds first (scripts/build.sh), then fills .gpu/; prints its size
#
# Environment: WHEELS=1 adds TRL's wheels (.gpu/whl, from PyPI) for the trl stage; GPU_PACK_DIR (.gpu) and
# GPU_PACK_BUILD (build: its binaries are taken as they are, not rebuilt) and GPU_PACK_QUICK are for the dry-run test
# (tests/gpu/test_gpu_check_dry_run.sh), which packs a finished build into a temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/pyenv.sh
PACK="${GPU_PACK_DIR:-.gpu}"
B="${GPU_PACK_BUILD:-}"
if [ -z "$B" ]; then
  B=build
  bash scripts/build.sh > /tmp/gpu_pack_build.log 2>&1 || { tail -30 /tmp/gpu_pack_build.log; exit 1; }
fi
TOK=../shared/data/tokenizers/qwen3
[ -f "$TOK/tokenizer.json" ] || { echo "gpu_pack: no $TOK/tokenizer.json (../shared beside the checkout)" >&2; exit 3; }
if [ "$PACK" = .gpu ]; then
  grep -qx "/.gpu/" .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo "/.gpu/" >> .git/info/exclude; }
fi
rm -rf "$PACK"
mkdir -p "$PACK"/{bin,lib,models,test_models,tokenizer}
cp "$B/gspo" "$B/tests/gspo_tests" "$B/bench/bench_rollout" "$B/bench/bench_long_context" "$PACK/bin/"
# The libraries outside torch, CUDA and the C runtime: the machine has none of them.
ldd "$B/gspo" "$B/tests/gspo_tests" | awk '/=> \//{print $3}' | sort -u \
  | grep -E 'yaml-cpp|spdlog|fmt|pcre2|utf8proc' | xargs -r -I{} cp -L {} "$PACK/lib/"
# The CUDA tests read these test models (tests/cuda/test_cuda.cpp: grep model_path).
[ -f "$B/test_models/slot_api3_same_weights.pt" ] || (cd "$B" && ctest -R '^make_test_models$' > /dev/null)
cp "$B"/test_models/{tiny,tiny_prior,tiny_qwen3,qwen3_moe_tiny,slot_api3_same_weights}.pt "$PACK/test_models/"
# The tiny runs' models: the checkout's models/ when made there, else made into the pack (as the demo scripts make them).
M="$PACK/models"
if [ -f models/tiny_demo.pt ]; then cp models/tiny_demo.pt "$M/"; else
  "$GSPO_PY" scripts/make_tiny_model.py --out "$M/tiny_demo.pt" --prior-text 0123456789 --prior-logit 3.0 > /dev/null; fi
# GPU_PACK_QUICK=1 (the dry-run test): the LoRA and tools models without their warm-up (minutes on 2 busy cores);
# the dry run checks the plumbing, not what they learn.
if [ -f models/tiny_warm.pt ]; then cp models/tiny_warm.pt "$M/"
elif [ "${GPU_PACK_QUICK:-0}" = 1 ]; then "$GSPO_PY" scripts/make_tiny_model.py --out "$M/tiny_warm.pt" > /dev/null
else bash scripts/make_warm_base.sh "$M/tiny_warm.pt" > /dev/null; fi
if [ -f models/tiny_tools.pt ]; then cp models/tiny_tools.pt "$M/"; else
  "$GSPO_PY" scripts/make_tiny_model.py --out "$M/tiny_tools.pt" --warm data/tools_warm.txt \
    --warm-steps "$([ "${GPU_PACK_QUICK:-0}" = 1 ] && echo 20 || echo 1000)" > /dev/null; fi
rm -f "$M"/*.txt  # make_warm_base.sh's training text
cp "$TOK/tokenizer.json" "$TOK/tokenizer_config.json" "$PACK/tokenizer/"
if [ "${WHEELS:-0}" = 1 ]; then
  mkdir -p "$PACK/whl"
  "$GSPO_PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$PACK/whl" \
    trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19
fi
git rev-parse HEAD > "$PACK/commit"
if git status --porcelain --untracked-files=no | grep -q .; then echo "dirty" >> "$PACK/commit"; fi
echo "gpu_pack: $PACK $(du -sm "$PACK" | cut -f1) MiB (the device tool carries 64 MiB with the working tree), commit $(head -c 12 "$PACK/commit")"
