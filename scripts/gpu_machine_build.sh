#!/usr/bin/env bash
# The same build as scripts/build.sh, on a lent GPU machine (docs/gpu.md): it has CUDA 13 and Python with the same
# torch 2.11.0+cu130 wheel, but reaches no package registry. So the C++ libraries come as Debian .debs carried in
# .deps/ (scripts/fetch_gpu_deps.sh, run on a development machine) and unpacked into a private prefix, never into /;
# the machine's own python stands in for the pinned environment (its torch version is checked). Then the suite runs
# there, CUDA tests included, unless GSPO_SKIP_TESTS=1.
#
#   bash scripts/gpu_machine_build.sh      # -> build/gspo; source build/env.sh before running it by hand
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX="${DEPS_PREFIX:-/tmp/gspo-deps}"
export GSPO_PY="${GSPO_PY:-$(command -v python3)}"
"$GSPO_PY" -c 'import torch, sys; v = torch.__version__.split("+")[0]; sys.exit(0 if v == "2.11.0" else "gspo: this machine has torch %s, gspo pins 2.11.0" % v); print("gspo: torch", torch.__version__, "CUDA", torch.version.cuda, "devices", torch.cuda.device_count())'

if compgen -G ".deps/*.deb" >/dev/null; then
  mkdir -p "$PREFIX"
  for f in .deps/*.deb; do dpkg -x "$f" "$PREFIX"; done
  # pkg-config files name prefix=/usr; point them at the private prefix.
  find "$PREFIX" -name '*.pc' -exec sed -i "s|^prefix=/usr|prefix=$PREFIX/usr|" {} +
fi
LIBDIR="$PREFIX/usr/lib/x86_64-linux-gnu"
export PATH="$PREFIX/usr/bin:$PATH"
export PKG_CONFIG_PATH="$LIBDIR/pkgconfig:$PREFIX/usr/share/pkgconfig:${PKG_CONFIG_PATH:-}"
export LD_LIBRARY_PATH="$LIBDIR:${LD_LIBRARY_PATH:-}"
export CPLUS_INCLUDE_PATH="$PREFIX/usr/include:${CPLUS_INCLUDE_PATH:-}"   # gloo headers for ProcessGroupGloo
EXTRA=(-DCMAKE_PREFIX_PATH="$PREFIX/usr;$LIBDIR/cmake;$PREFIX/usr/share/cmake")
if ! command -v pkg-config >/dev/null && [ -x "$PREFIX/usr/bin/pkgconf" ]; then
  EXTRA+=(-DPKG_CONFIG_EXECUTABLE="$PREFIX/usr/bin/pkgconf")
fi
rm -f build/CMakeCache.txt
bash scripts/build.sh "${EXTRA[@]}"
echo "export LD_LIBRARY_PATH=\"$LD_LIBRARY_PATH\"" > build/env.sh
echo "gspo: built build/gspo (source build/env.sh before running it by hand)"
if [ "${GSPO_SKIP_TESTS:-0}" != 1 ]; then
  (cd build && ctest -j "$(nproc)" --output-on-failure)
fi
