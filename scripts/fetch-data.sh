#!/usr/bin/env bash
# Fetches the real data sets gradscope trains on, from Debian packages, into data/ (never
# committed). Idempotent: silent when everything is already there.
#   data/digits.csv         sklearn digits, 1797 rows x (64 pixels + label), from python3-sklearn
#   data/breast_cancer.csv  sklearn breast cancer, from python3-sklearn
#   data/diabetes.csv       sklearn diabetes (442 rows, 10 raw features + target), from
#                           python3-sklearn, with a header row: age,sex,bmi,...,s6,target
#   data/movielens.csv      MovieLens ratings from r-cran-dslabs (see below)
#   data/fashion-mnist/     Fashion-MNIST (IDX files, decompressed) from dataset-fashion-mnist
# Usage: fetch-data.sh [movielens | fashion-mnist]. Without an argument a failure to get MovieLens only warns
# (the demo then falls back to the digits pixels); with `movielens` it is an error.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
data="${GRADSCOPE_DATA_DIR:-$root/data}"
mkdir -p "$data"

have_sklearn() { [ -s "$data/digits.csv" ] && [ -s "$data/breast_cancer.csv" ] && [ -s "$data/diabetes.csv" ]; }

if ! have_sklearn; then
  echo "fetch-data: extracting sklearn datasets from Debian's python3-sklearn"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  # apt-get download runs as _apt when it can; a world-writable folder lets it.
  chmod 777 "$tmp"
  if ! (cd "$tmp" && apt-get download -qq python3-sklearn 2>/dev/null); then
    [ "$(id -u)" -eq 0 ] && apt-get update -qq
    (cd "$tmp" && apt-get download -qq python3-sklearn)
  fi
  dpkg-deb -x "$tmp"/python3-sklearn_*.deb "$tmp/x"
  src="$(find "$tmp/x" -type d -path '*sklearn/datasets/data' | head -n 1)"
  [ -n "$src" ] || { echo "fetch-data: sklearn datasets not found in the package" >&2; exit 3; }
  gzip -dc "$src/digits.csv.gz" > "$data/digits.csv.part" && mv "$data/digits.csv.part" "$data/digits.csv"
  cp "$src/breast_cancer.csv" "$data/breast_cancer.csv"
  # Diabetes comes as two space-separated files (features, target): one CSV with names.
  { echo "age,sex,bmi,bp,s1,s2,s3,s4,s5,s6,target"
    paste -d ' ' <(gzip -dc "$src/diabetes_data_raw.csv.gz") <(gzip -dc "$src/diabetes_target.csv.gz") |
      awk '{ $1 = $1; gsub(/ /, ","); print }'; } > "$data/diabetes.csv.part"
  mv "$data/diabetes.csv.part" "$data/diabetes.csv"
  echo "fetch-data: wrote $data/digits.csv ($(wc -l < "$data/digits.csv") rows)"
fi

# MovieLens ratings (the demo's matrix-factorisation run and `make validate-embedding`):
# r-cran-dslabs ships them in an R data base, Rscript from r-base-core extracts them.
#   data/movielens.csv      userId,movieId,rating,timestamp (100,004 ratings)
# The default run asks for them in a child process and only warns when that fails; it then
# leaves data/.movielens-failed so later runs stay quick (an explicit `movielens` retries).
failed="$data/.movielens-failed"
if [ "${1:-}" = "" ] && [ ! -s "$data/movielens.csv" ] && [ ! -e "$failed" ]; then
  log="$(mktemp)"
  status=0
  bash "$0" movielens 2>"$log" || status=$?
  if [ "$status" -ne 0 ]; then
    reason="$(tail -n 1 "$log")"
    echo "fetch-data: warning: MovieLens not fetched (${reason:-exit status $status}); the demo" \
      "uses the digits pixels instead; retry with: bash scripts/fetch-data.sh movielens" >&2
    touch "$failed"
  fi
  rm -f "$log"
fi

if [ "${1:-}" = "movielens" ] && [ ! -s "$data/movielens.csv" ]; then
  rdata=/usr/lib/R/site-library/dslabs/data/Rdata
  if [ ! -f "$rdata.rdb" ] || ! command -v Rscript >/dev/null; then
    echo "fetch-data: installing r-base-core and r-cran-dslabs (MovieLens ratings)"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends r-base-core r-cran-dslabs >/dev/null
  fi
  Rscript --vanilla -e "e <- new.env(); lazyLoad('$rdata', envir = e);
    write.csv(e\$movielens[, c('userId','movieId','rating','timestamp')],
              '$data/movielens.csv.part', row.names = FALSE)" >/dev/null
  mv "$data/movielens.csv.part" "$data/movielens.csv"
  rm -f "$failed"
  echo "fetch-data: wrote $data/movielens.csv ($(($(wc -l < "$data/movielens.csv") - 1)) ratings)"
fi

# Fashion-MNIST (docs/compression.md, `make validate-compression`): Debian's
# dataset-fashion-mnist ships the four IDX files gzipped under /usr/share/datasets; they are
# taken from the installed package, else from the downloaded .deb (no root needed), and
# decompressed into data/fashion-mnist/. The default run tries quietly and only warns.
fm="$data/fashion-mnist"
fm_files=(train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte)
have_fm() { for f in "${fm_files[@]}"; do [ -s "$fm/$f" ] || return 1; done; }
fetch_fm() {
  local src=/usr/share/datasets/fashion-mnist tmp
  tmp="$(mktemp -d)"
  chmod 777 "$tmp"
  if [ ! -s "$src/train-images-idx3-ubyte.gz" ]; then
    if ! (cd "$tmp" && apt-get download -qq dataset-fashion-mnist 2>/dev/null); then
      [ "$(id -u)" -eq 0 ] && apt-get update -qq
      (cd "$tmp" && apt-get download -qq dataset-fashion-mnist)
    fi
    dpkg-deb -x "$tmp"/dataset-fashion-mnist_*.deb "$tmp/x"
    src="$tmp/x/usr/share/datasets/fashion-mnist"
  fi
  mkdir -p "$fm"
  for f in "${fm_files[@]}"; do
    gzip -dc "$src/$f.gz" > "$fm/$f.part" && mv "$fm/$f.part" "$fm/$f"
  done
  rm -rf "$tmp"
  echo "fetch-data: wrote $fm (Fashion-MNIST, 60000 + 10000 images)"
}
if ! have_fm; then
  if [ "${1:-}" = "fashion-mnist" ]; then
    fetch_fm
  elif [ "${1:-}" = "" ] && [ ! -e "$data/.fashion-mnist-failed" ]; then
    if ! (fetch_fm) 2>/dev/null; then
      echo "fetch-data: warning: Fashion-MNIST not fetched; retry with: bash scripts/fetch-data.sh fashion-mnist" >&2
      touch "$data/.fashion-mnist-failed"
    fi
  fi
fi
