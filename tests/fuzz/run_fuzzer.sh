#!/usr/bin/env bash
# Runs one fuzz target for a bounded time:
#   run_fuzzer.sh FUZZ_BUILD TARGET SECONDS SEED CORPUS [--fresh]
# FUZZ_BUILD is <build>/fuzz (the target's binary, its seeds in seeds/TARGET). New inputs that
# reach new code go to CORPUS (--fresh empties it first, so a run depends on the seeds alone);
# an input that crashes, leaks, hangs (10 s) or takes over 2 GB is saved in
# FUZZ_BUILD/crashes/TARGET/ and the run fails, naming the file and how to reproduce it.
# SEED is libFuzzer's random seed: the same seed, build and corpus give the same sequence of
# inputs; 0 picks a new one (libFuzzer prints it).
set -euo pipefail
if [ $# -lt 5 ]; then
  echo "usage: run_fuzzer.sh FUZZ_BUILD TARGET SECONDS SEED CORPUS [--fresh]" >&2
  exit 2
fi
fuzz_build=$1 target=$2 seconds=$3 seed=$4 corpus=$5 fresh=${6:-}
bin="$fuzz_build/${target}_fuzz"
seeds="$fuzz_build/seeds/$target"
crashes="$fuzz_build/crashes/$target"
if [ ! -x "$bin" ]; then
  echo "fuzz $target: $bin is missing; build the gradscope_fuzz target (make fuzz does)" >&2
  exit 1
fi
if [ ! -d "$seeds" ]; then
  echo "fuzz $target: no seeds in $seeds; run $fuzz_build/fuzz_seeds $fuzz_build/seeds" >&2
  exit 1
fi
[ "$fresh" = --fresh ] && rm -rf "$corpus"
mkdir -p "$corpus" "$crashes"
marker=$(mktemp)
trap 'rm -f "$marker"' EXIT

echo "fuzz $target: ${seconds} s, seed $seed, seeds $seeds, corpus $corpus"
status=0
# ASan holds freed memory back (its quarantine) to catch use after free: 16 MB instead of 256 is
# far more than one input frees, and recycling 256 MB made every input about twice as slow.
export ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=16} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
"$bin" -seed="$seed" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$crashes/" "$corpus" "$seeds" || status=$?
if [ "$status" -ne 0 ]; then
  found=$(find "$crashes" -type f -newer "$marker" | sort)
  echo "fuzz $target: FAILED (libFuzzer exit $status); the inputs are kept in $crashes/:"
  for f in $found; do
    echo "  $f"
    echo "    reproduce: UBSAN_OPTIONS=print_stacktrace=1 $bin $f"
  done
  [ -n "$found" ] || echo "  (none written: see the output above)"
  exit "$status"
fi
echo "fuzz $target: no crash in ${seconds} s"
