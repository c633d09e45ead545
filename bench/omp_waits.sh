#!/usr/bin/env bash
# What OpenMP's wait policy does to the quick demo (`gradscope demo --quick`, the torch wheel's
# 2 OpenMP threads) on this machine, with 0, 1 and 2 busy processes (`yes`) beside it: the wait
# policy unset (libgomp spins a while, then sleeps), ACTIVE (threads spin between parallel
# regions), PASSIVE (they sleep at once), and one thread (no waits at all). Seconds of wall time per run, REPEATS runs
# each (default 3), interleaved; the last line is one JSON object of medians.
# docs/benchmarks.md, "OpenMP waits", has the figures.
#
#   bash bench/omp_waits.sh [BUILD_DIR]      # about 4 minutes on 2 cores
set -euo pipefail
build=${1:-build}
repeats=${REPEATS:-3}
out=$(mktemp -d /tmp/gradscope-omp-waits.XXXXXX)
trap 'rm -rf "$out"; kill $(jobs -p) 2>/dev/null || true' EXIT

run_once() {  # policy env assignment -> seconds
  local start end
  start=$(date +%s.%N)
  env -u OMP_WAIT_POLICY "$@" "$build/gradscope" demo --quick --out "$out/run" >/dev/null 2>&1
  end=$(date +%s.%N)
  rm -rf "$out/run"
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }'
}
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

json='{"bench":"omp_waits"'
for busy in 0 1 2; do
  pids=()
  for ((i = 0; i < busy; ++i)); do yes >/dev/null & pids+=($!); done
  unset=() active=() passive=() single=()
  for ((r = 0; r < repeats; ++r)); do
    unset+=("$(run_once)")
    active+=("$(run_once OMP_WAIT_POLICY=ACTIVE)")
    passive+=("$(run_once OMP_WAIT_POLICY=PASSIVE)")
    single+=("$(run_once OMP_NUM_THREADS=1)")
  done
  kill "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
  echo "busy $busy: unset ${unset[*]} s; active ${active[*]} s; passive ${passive[*]} s; one thread ${single[*]} s"
  json+=",\"busy${busy}_unset_s\":$(median "${unset[@]}"),\"busy${busy}_active_s\":$(median "${active[@]}"),\"busy${busy}_passive_s\":$(median "${passive[@]}"),\"busy${busy}_one_thread_s\":$(median "${single[@]}")"
done
echo "$json,\"cores\":$(nproc)}"
