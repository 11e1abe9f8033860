#!/usr/bin/env bash
# Builds gspo for the GPU against the CUDA LibTorch that an installed PyTorch wheel carries (torch 2.x for CUDA),
# with the other dependencies unpacked from the .deb files in .deps/ (scripts/fetch_gpu_deps.sh) into a private
# prefix, never into /. Then runs the test suite there unless GSPO_SKIP_TESTS=1.
#
#   bash scripts/build_cuda.sh                 # -> build-cuda/gspo, CUDA tests enabled
#   CUDA_ARCH=90 BUILD_DIR=build-cuda bash scripts/build_cuda.sh
#
# At run time the unpacked libraries must be found: source build-cuda/env.sh first (it sets LD_LIBRARY_PATH).
# Rehearsing the recipe on a CPU machine: ALLOW_NO_CUDA=1 CONFIGURE_ONLY=1 PYTHON=/usr/bin/python3 (configures
# WITH_CUDA=OFF against the unpacked packages, then stops).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
BUILD_DIR="${BUILD_DIR:-build-cuda}"
PREFIX="${DEPS_PREFIX:-/tmp/gspo-deps}"
CUDA_ARCH="${CUDA_ARCH:-90}"   # Hopper (H100/H200)

TORCH_PREFIX="$("$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)')"
WITH_CUDA=ON
if [ "${ALLOW_NO_CUDA:-0}" = 1 ]; then
  WITH_CUDA=OFF
else
  "$PY" -c 'import torch; assert torch.cuda.is_available(), "this PyTorch sees no CUDA device"; print("gspo: torch", torch.__version__, "CUDA", torch.version.cuda, torch.cuda.get_device_name(0))'
fi

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
# NCCL and cuDNN come from the nvidia-* wheels beside torch.
NV_LIBS="$("$PY" -c 'import os, nvidia; p = os.path.dirname(nvidia.__path__[0] if hasattr(nvidia, "__path__") else nvidia.__file__); print(":".join(os.path.join(r, d) for r, ds, _ in os.walk(os.path.join(p, "nvidia")) for d in ds if d == "lib"))' 2>/dev/null || true)"
[ -n "$NV_LIBS" ] && export LD_LIBRARY_PATH="$NV_LIBS:$LD_LIBRARY_PATH"

GEN=(); command -v ninja >/dev/null && GEN=(-G Ninja)
EXTRA=()
# The machine may have no pkg-config of its own: use the unpacked pkgconf.
if ! command -v pkg-config >/dev/null && [ -x "$PREFIX/usr/bin/pkgconf" ]; then
  EXTRA+=(-DPKG_CONFIG_EXECUTABLE="$PREFIX/usr/bin/pkgconf")
fi
command -v nvcc >/dev/null && EXTRA+=(-DCMAKE_CUDA_COMPILER="$(command -v nvcc)")
# Debian puts some CMake packages under lib/x86_64-linux-gnu/cmake, which a non-Debian CMake may not search.
cmake -S . -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DWITH_CUDA="$WITH_CUDA" \
  -DCMAKE_PREFIX_PATH="$TORCH_PREFIX;$PREFIX/usr;$LIBDIR/cmake;$PREFIX/usr/share/cmake" \
  -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" -DGSPO_PYTHON="$(command -v "$PY")" "${EXTRA[@]}"
[ "${CONFIGURE_ONLY:-0}" = 1 ] && exit 0
cmake --build "$BUILD_DIR" -j "$(nproc)"
cat > "$BUILD_DIR/env.sh" <<ENV
export LD_LIBRARY_PATH="$LD_LIBRARY_PATH"
ENV
echo "gspo: built $BUILD_DIR/gspo (source $BUILD_DIR/env.sh before running it)"
if [ "${GSPO_SKIP_TESTS:-0}" != 1 ]; then
  (cd "$BUILD_DIR" && ctest -j "$(nproc)" --output-on-failure)
fi
