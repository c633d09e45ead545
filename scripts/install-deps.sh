#!/usr/bin/env bash
# Installs the Debian packages gradscope builds with. Idempotent: silent when all are present.
set -euo pipefail

packages=(
  cmake ninja-build g++ ccache pkg-config
  libtorch-dev            # the LibTorch adapter and the demo
  libopenblas0-pthread    # Debian's LibTorch links the reference BLAS; OpenBLAS takes over
                          # through update-alternatives: a 256x1024x1024 matmul went from
                          # ~1 s-per-step training to 168 GFLOPS on the 2-core machine
  nlohmann-json3-dev      # JSON renderer
  libfmt-dev              # terminal table
  libsqlite3-dev          # the run store
  libcli11-dev            # command line
  libgtest-dev libgmock-dev
  libbenchmark-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
