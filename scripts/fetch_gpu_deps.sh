#!/usr/bin/env bash
# Downloads (does not install) the Debian packages gspo builds against that a GPU machine with a CUDA PyTorch
# lacks: yaml-cpp, spdlog, fmt, CLI11, nlohmann-json, Catch2, PCRE2, utf8proc, pkg-config, gloo headers. They land in .deps/
# (git-ignored), to be carried to that machine and unpacked into a private prefix by scripts/gpu_machine_build.sh.
# Run on a Debian machine that reaches Debian's package registry (the development machines do).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .deps
apt-get update -qq
cd .deps
apt-get download libyaml-cpp-dev libyaml-cpp0.7 libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 libcli11-dev \
  nlohmann-json3-dev catch2 libgloo-dev libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3 \
  libutf8proc-dev libutf8proc2 pkg-config libpkgconf3 pkgconf pkgconf-bin
ls -1 ./*.deb | wc -l | xargs echo "gspo: .deps/ holds these packages:"
