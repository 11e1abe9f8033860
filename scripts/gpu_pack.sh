#!/usr/bin/env bash
# Packs what scripts/gpu_check.sh needs on a lent GPU machine into .gpu/ (git-ignored through .git/info/exclude), so
# that the machine's few minutes go to measuring, not to compiling (docs/gpu.md): the binaries built here (gspo, the
# test binary, the benchmarks; the same CUDA build CI makes, against the same torch 2.11.0+cu130 wheel the machine
# has), the shared libraries they need that the machine lacks (yaml-cpp, spdlog, fmt, PCRE2, utf8proc, copied from
# this machine), the models of the CUDA tests and of the tiny runs, the Qwen3 tokenizer (../shared does not travel),
# and the commit they were built from. Carry it: run(..., carry=[".gpu"]).
#
#   bash scripts/gpu_pack.sh          # builds first (scripts/build.sh), then fills .gpu/; prints its size
#
# TRL's wheels, for the trl stage, go into .gpu/whl when WHEELS=1 (PyPI reached from here).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/pyenv.sh
bash scripts/build.sh > /tmp/gpu_pack_build.log 2>&1 || { tail -30 /tmp/gpu_pack_build.log; exit 1; }
grep -qx "/.gpu/" .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo "/.gpu/" >> .git/info/exclude; }
rm -rf .gpu
mkdir -p .gpu/bin .gpu/lib .gpu/models .gpu/test_models .gpu/tokenizer
cp build/gspo build/tests/gspo_tests build/bench/bench_rollout build/bench/bench_long_context .gpu/bin/
# The libraries outside torch, CUDA and the C runtime: the machine has none of them.
ldd build/gspo build/tests/gspo_tests | awk '/=> \//{print $3}' | sort -u \
  | grep -E 'yaml-cpp|spdlog|fmt|pcre2|utf8proc' | xargs -r -I{} cp -L {} .gpu/lib/
# The CUDA tests read tiny.pt, tiny_prior.pt and tiny_qwen3.pt (tests/cuda/test_cuda.cpp).
[ -f build/test_models/tiny_qwen3.pt ] || (cd build && ctest -R '^make_test_models$' > /dev/null)
cp build/test_models/{tiny,tiny_prior,tiny_qwen3}.pt .gpu/test_models/
[ -f models/tiny_demo.pt ] || "$GSPO_PY" scripts/make_tiny_model.py --out models/tiny_demo.pt --prior-text 0123456789 \
  --prior-logit 3.0 > /dev/null
[ -f models/tiny_warm.pt ] || bash scripts/make_warm_base.sh > /dev/null
[ -f models/tiny_tools.pt ] || "$GSPO_PY" scripts/make_tiny_model.py --out models/tiny_tools.pt \
  --warm data/tools_warm.txt --warm-steps 1000 > /dev/null
cp models/tiny_demo.pt models/tiny_warm.pt models/tiny_tools.pt .gpu/models/
cp ../shared/data/tokenizers/qwen3/tokenizer.json ../shared/data/tokenizers/qwen3/tokenizer_config.json .gpu/tokenizer/
if [ "${WHEELS:-0}" = 1 ]; then
  mkdir -p .gpu/whl
  "$GSPO_PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .gpu/whl \
    trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19
fi
git rev-parse HEAD > .gpu/commit
git status --porcelain --untracked-files=no | grep -q . && echo "dirty" >> .gpu/commit
echo "gpu_pack: .gpu/ $(du -sm .gpu | cut -f1) MiB (the device tool carries 64 MiB with the working tree), commit $(head -c 12 .gpu/commit)"
