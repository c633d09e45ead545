#!/usr/bin/env bash
# The tree-reader fuzz targets, built and run outside the fuzz build of the `fuzz` branch
# (cmake/fuzz.cmake, tests/fuzz/run_fuzzer.sh), whose layout they follow:
#   tree_fuzz.sh BUILD build
#       builds BUILD/fuzz-trees/<target>_fuzz (clang, libFuzzer, ASan, UBSan), writes the seeds
#   tree_fuzz.sh BUILD TARGET LIMIT SEED [--fresh|--keep [CORPUS]]
#       runs TARGET (tree_xgboost_json, tree_xgboost_ubjson, tree_lightgbm_text,
#       tree_lightgbm_json, tree_catboost_json, tree_model, tree_csv) for LIMIT: "60s"
#       (seconds) or "100000" (inputs); SEED is libFuzzer's (0: a new one)
# BUILD is the project's build folder: its tree_fuzz_seeds program writes the seeds from
# ../shared/fixtures/trees and GRADSCOPE_DATA_DIR (default data/); when either is missing the
# build exits 77 (ctest's skip), or fails when CI is set. New inputs go to CORPUS (default
# BUILD/fuzz-trees/corpus/TARGET; --fresh empties it first). An input that crashes, leaks,
# hangs (10 s) or takes over 2 GB is kept in BUILD/fuzz-trees/crashes/TARGET/ and the run fails.
set -euo pipefail
usage="usage: tree_fuzz.sh BUILD build
   or: tree_fuzz.sh BUILD TARGET LIMIT SEED [--fresh|--keep [CORPUS]]"
[ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
fuzz="$build/fuzz-trees"
target=$2

if [ "$target" = build ]; then
  fixtures=${GRADSCOPE_TREE_FIXTURES:-$root/../shared/fixtures/trees}
  data=${GRADSCOPE_DATA_DIR:-${GRADSCOPE_DEFAULT_DATA_DIR:-$root/data}}
  for need in "$fixtures/catboost/creditgermany.json" "$data/digits.csv"; do
    [ -f "$need" ] && continue
    case "${CI:-}" in
      "" | 0 | false) echo "tree_fuzz: $need is missing: skipped"; exit 77 ;;
      *) echo "tree_fuzz: $need is missing under CI" >&2; exit 1 ;;
    esac
  done
  cxx=$(command -v clang++-14 || command -v clang++ || true)
  if [ -z "$cxx" ]; then
    echo "tree_fuzz: clang++ is missing (Debian: clang libclang-rt-14-dev)" >&2
    exit 1
  fi
  [ -f "$fuzz/build.ninja" ] || cmake -S "$root/tests/fuzz/trees" -B "$fuzz" -G Ninja \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$fuzz" -j "${JOBS:-2}"
  cmake --build "$build" -j "${JOBS:-2}" --target tree_fuzz_seeds
  "$build/tests/trees/tree_fuzz_seeds" "$fixtures" "$data" "$fuzz/seeds"
  exit 0
fi

[ $# -ge 4 ] || { echo "$usage" >&2; exit 2; }
limit=$3 seed=$4 fresh=${5:-}
bin="$fuzz/${target}_fuzz" seeds="$fuzz/seeds/$target"
corpus=${6:-$fuzz/corpus/$target} crashes="$fuzz/crashes/$target"
if [ ! -x "$bin" ] || [ ! -d "$seeds" ]; then
  echo "fuzz $target: run tree_fuzz.sh $1 build first" >&2
  exit 1
fi
case "$limit" in
  *s) bound=(-max_total_time="${limit%s}") ;;
  *) bound=(-runs="$limit") ;;
esac
[ "$fresh" = --fresh ] && rm -rf "$corpus"
mkdir -p "$corpus" "$crashes"
marker=$(mktemp)
trap 'rm -f "$marker"' EXIT
echo "fuzz $target: $limit, seed $seed, seeds $seeds, corpus $corpus"
status=0
# A small ASan quarantine: recycling the default 256 MB made every input about twice as slow.
export ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=16}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
"$bin" -seed="$seed" "${bound[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$crashes/" "$corpus" "$seeds" || status=$?
if [ "$status" -ne 0 ]; then
  echo "fuzz $target: FAILED (libFuzzer exit $status); the inputs are kept in $crashes/:"
  for f in $(find "$crashes" -type f -newer "$marker" | sort); do
    echo "  $f"
    echo "    reproduce: UBSAN_OPTIONS=print_stacktrace=1 $bin $f"
  done
  exit "$status"
fi
echo "fuzz $target: no crash in $limit"
