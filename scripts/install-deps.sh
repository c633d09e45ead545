#!/usr/bin/env bash
# Installs the Debian packages gradscope builds with (Debian 12 or 13). The Python side (PyTorch,
# whose LibTorch the C++ side builds against too, the chart bundle, the browser driver, the test
# tools) comes from PyPI into .venv: scripts/setup-venv.sh. Idempotent: silent when all are
# present. With --check it installs nothing and exits 1, naming what is missing.
set -euo pipefail

packages=(
  cmake ninja-build g++ ccache pkg-config
  libgloo-dev             # headers of LibTorch's c10d Gloo backend, which the wheel does not ship
                          # (the C++ tests make Gloo groups; docs/distributed.md)
  nlohmann-json3-dev      # JSON renderer
  libfmt-dev              # terminal table
  libsqlite3-dev          # the run store
  libcli11-dev            # command line
  libgtest-dev libgmock-dev
  libbenchmark-dev
  libprotobuf-dev protobuf-compiler  # TensorBoard event files (src/tensorboard): protobuf-lite
                                     # classes generated from a .proto of TensorBoard's field numbers
  libboost-dev            # Boost.CRC: the CRC-32C of each event-file record (header-only)
  libxgboost-dev          # boosted trees: live XGBoost training through its C API (issue 12)
                          # (1.7 on Debian 12, 3.0 on 13)
  clang libclang-rt-dev   # the fuzz targets: libFuzzer and clang's ASan/UBSan runtimes for
                          # Debian's default clang (14 on Debian 12, 19 on 13; tests/fuzz)
  chromium                # browser tests of the HTML report (driven by PyPI's playwright)
  python3-dev python3-venv  # a Python to make .venv with where python3 is Debian's own
  neovim                  # tests/editors: the real Neovim (0.7 on Debian 12) as the LSP client
                          # of `gradscope lsp`, headless
  dataset-fashion-mnist   # Fashion-MNIST for the compression validation (scripts/fetch-data.sh)
)
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
