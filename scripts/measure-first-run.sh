#!/usr/bin/env bash
# How long a newcomer waits: the README's two commands, each in a clean clone of this
# repository's HEAD with the compiler cache off (CCACHE_DISABLE=1), so nothing built before
# helps: `make demo` in one clone, then `make test` from nothing in another. The set-up they do
# (apt through scripts/install-deps.sh, each clone's own .venv through scripts/setup-venv.sh, the
# data sets) is inside the times; Debian packages this machine already has are not downloaded
# again, and the JSON says whether they were all there before (`deps_preinstalled`); the venv's
# packages come from pip's cache where it holds them (the torch wheel from the machine's disk).
# docs/benchmarks.md, "Build time", has the figures.
#
#   bash scripts/measure-first-run.sh [WORK_DIR [COMMIT]]    # over an hour on 2 cores
#
# COMMIT (default HEAD) measures an earlier state the same way, e.g. the commit before the
# build was cut; FIRST_RUN_TARGETS="demo" measures `make demo` only (test_s is then null).
#
# Prints the progress of each command to stderr (a line a minute) and, last, one JSON line:
#   {"bench":"first_run","demo_s":...,"test_s":...,"deps_preinstalled":...,"cores":...,
#    "load_start":...,"load_end":...,"commit":"..."}
# The clones and their logs stay in WORK_DIR (default: a new folder under /tmp). Exits 1 when a
# command fails, naming its log.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d /tmp/gradscope-first-run.XXXXXX)}
mkdir -p "$work"
commit=$(git -C "$src" rev-parse --short "${2:-HEAD}")
targets=${FIRST_RUN_TARGETS:-demo test}

preinstalled=true
bash "$src/scripts/install-deps.sh" --check >/dev/null 2>&1 || preinstalled=false

# Runs `make TARGET` in a fresh clone; prints its wall seconds.
timed_make() {
  local target=$1 clone="$work/clone-$1" log="$work/make-$1.log"
  rm -rf "$clone"
  git clone -q "$src" "$clone"
  git -C "$clone" checkout -q "$commit"
  local start end pid
  start=$(date +%s.%N)
  (cd "$clone" && CCACHE_DISABLE=1 make "$target" >"$log" 2>&1) &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 60
    kill -0 "$pid" 2>/dev/null &&
      echo "measure-first-run: make $target: $(tail -n 1 "$log" | cut -c1-100)" >&2
  done
  if ! wait "$pid"; then
    echo "measure-first-run: make $target failed; see $log" >&2
    exit 1
  fi
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }'
}

load_start=$(cut -d' ' -f1 /proc/loadavg)
demo_s=null test_s=null
for target in $targets; do
  case $target in
    demo) demo_s=$(timed_make demo) ;;
    test) test_s=$(timed_make test) ;;
    *) echo "measure-first-run: FIRST_RUN_TARGETS names demo and test only, not '$target'" >&2
       exit 2 ;;
  esac
done
load_end=$(cut -d' ' -f1 /proc/loadavg)
printf '{"bench":"first_run","demo_s":%s,"test_s":%s,"deps_preinstalled":%s,"cores":%d,"load_start":%s,"load_end":%s,"commit":"%s"}\n' \
  "$demo_s" "$test_s" "$preinstalled" "$(nproc)" "$load_start" "$load_end" "$commit"
