#!/usr/bin/env bash
# Installs the Debian packages gradscope builds with, and the HTML report's chart libraries
# (web/, npm ci). Idempotent: silent when all are present. With --check it installs nothing and
# exits 1, naming what is missing.
set -euo pipefail

packages=(
  cmake ninja-build g++ ccache pkg-config
  libtorch-dev            # the LibTorch adapter and the demo
  libgloo-dev             # headers of LibTorch's c10d Gloo backend (many processes, docs/distributed.md)
  libopenblas0-pthread    # Debian's LibTorch links the reference BLAS; OpenBLAS takes over
                          # through update-alternatives: a 256x1024x1024 matmul went from
                          # ~1 s-per-step training to 168 GFLOPS on the 2-core machine
  nlohmann-json3-dev      # JSON renderer
  libfmt-dev              # terminal table
  libsqlite3-dev          # the run store
  libcli11-dev            # command line
  libgtest-dev libgmock-dev
  libbenchmark-dev
  libprotobuf-dev protobuf-compiler  # TensorBoard event files (src/tensorboard): protobuf-lite
                                     # classes generated from a .proto of TensorBoard's field numbers
  libboost-dev            # Boost.CRC: the CRC-32C of each event-file record (header-only)
  python3-protobuf python3-crc32c  # the TensorBoard tests' independent reader (tests/tensorboard);
                                   # python3-tensorboard is not packaged for Debian 12
  libxgboost-dev xgboost  # boosted trees: live XGBoost training through its C API (issue 12),
                          # and the xgboost CLI that trains models for the reader tests
  clang libclang-rt-14-dev  # the fuzz targets: libFuzzer and clang's ASan/UBSan runtimes
                            # (tests/fuzz; clang does not pull the runtimes in by itself)
  chromium                # browser tests of the HTML report (driven by npm playwright-core)
  python3-torch pybind11-dev python3-dev  # the Python module (python/): PyTorch from the same
                                          # source as libtorch-dev, so tensors pass with no copy
  python3-pytest python3-venv python3-setuptools python3-pip  # its tests and `pip install .`
  neovim                  # tests/editors: the real Neovim (0.7 on Debian 12) as the LSP client
                          # of `gradscope lsp`, headless
  dataset-fashion-mnist   # Fashion-MNIST for the compression validation (scripts/fetch-data.sh)
)
# Node.js and npm fetch the chart libraries; a machine that already has npm (from nodesource or
# nvm, say) keeps it, since Debian's nodejs package would conflict with it.
command -v npm >/dev/null || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# --check: install nothing; exit 1, naming them, when packages are missing.
if [ "${1:-}" = "--check" ]; then
  [ ${#missing[@]} -eq 0 ] && exit 0
  echo "install-deps: missing ${missing[*]}"
  exit 1
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "install-deps: done"
fi

# web/node_modules is current when its stamp holds the sha256 of the lock it was installed from;
# the build embeds the chart libraries from there, so a changed lock must reinstall them.
web="$(cd "$(dirname "$0")/.." && pwd)/web"
stamp="$web/node_modules/.gradscope-lock-sha256"
lock_sum="$(sha256sum "$web/package-lock.json" | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sum" ]; then
  echo "install-deps: npm ci --prefix web"
  npm ci --prefix "$web" --no-audit --no-fund --loglevel=error >/dev/null
  echo "$lock_sum" >"$stamp"
fi
