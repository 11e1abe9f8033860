#!/usr/bin/env bash
# Installs what gspo needs to build, test and run its demo, idempotently and non-interactively:
#  1. Debian packages (compiler, CMake/Ninja, ccache, the C++ libraries, bubblewrap, iproute2, chromium); runs
#     `apt-get update` itself when something is missing. Needs root (or sudo).
#  2. The pinned Python environment (scripts/requirements.txt: torch 2.11.0, whose LibTorch gspo links against,
#     plus the test oracles and plotting) at a fixed per-machine place (scripts/pyenv.sh), built once per pin set.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(
  build-essential cmake ninja-build pkg-config ccache
  python3 python3-venv              # base interpreter of the pinned environment; candidate programs of the code verifier
  bubblewrap                        # sandbox for model-written code when not running as root
  libpcre2-dev libutf8proc-dev      # tokenizer: Unicode pre-split regex, NFC normalisation
  zlib1g-dev                        # LiveCodeBench rows: private tests are base64(zlib(pickle))
  libgloo-dev                       # Gloo headers for c10d's ProcessGroupGloo (the torch wheel ships its library, not its headers)
  iproute2                          # ip netns / veth: the two-host link-failure test (tests/dist/test_multihost.sh)
  chromium                          # headless browser: ctest report_browser opens gspo report's page (tests/report/test_report.sh)
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev catch2
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup: all ${#PKGS[@]} Debian packages already installed"
else
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

source scripts/pyenv.sh
if [ -f "$GSPO_VENV/.complete" ]; then
  echo "setup: Python environment ready at $GSPO_VENV"
else
  echo "setup: building the Python environment at $GSPO_VENV (torch 2.11.0 with CUDA 13 libraries: about 5 GB, a few minutes)"
  rm -rf "$GSPO_VENV"
  mkdir -p "$(dirname "$GSPO_VENV")"
  "$GSPO_BASE_PY" -m venv "$GSPO_VENV"
  "$GSPO_VENV/bin/python" -m pip install -q --disable-pip-version-check -r scripts/requirements.txt
  "$GSPO_VENV/bin/python" -c 'import torch; print("setup: torch", torch.__version__, "CUDA", torch.version.cuda)'
  touch "$GSPO_VENV/.complete"   # written last: an interrupted install is redone from scratch next time
fi

# Oracles added to the environment in place (scripts/requirements-oracles.txt), keyed by that file's hash.
extra_key="$(sha256sum scripts/requirements-oracles.txt | cut -c1-12)"
if [ -f "$GSPO_VENV/.oracles-$extra_key" ]; then
  echo "setup: test oracles ready"
else
  echo "setup: installing the test oracles (scripts/requirements-oracles.txt)"
  "$GSPO_VENV/bin/python" -m pip install -q --disable-pip-version-check -r scripts/requirements-oracles.txt
  touch "$GSPO_VENV/.oracles-$extra_key"
fi
