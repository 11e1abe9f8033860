#!/usr/bin/env bash
# Installs every Debian package gspo needs to build, test and run its demo.
# Idempotent and non-interactive; runs `apt-get update` itself. Needs root (or sudo).
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build pkg-config
  libtorch-dev libgloo-dev          # LibTorch 1.13 (CPU) with c10d + Gloo headers
  python3 python3-torch python3-numpy python3-matplotlib python3-jinja2   # exports, goldens, plots, chat-template reference
  libopenblas0-pthread              # fast BLAS behind libblas.so.3 (the default netlib one is ~50x slower)
  bubblewrap                        # sandbox for model-written code when not running as root
  libpcre2-dev libutf8proc-dev      # tokenizer: Unicode pre-split regex, NFC normalisation
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
  echo "setup: all ${#PKGS[@]} packages already installed"
  exit 0
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
