#!/usr/bin/env bash
# The GPU check (docs/devices.md, "The GPU check"): builds the Python module against the torch of
# a given Python with the libraries scripts/gpu-carry.sh unpacked into .gpu-carry/ (nothing is
# fetched), runs the CUDA tests in tests/gpu/ and the step benchmark bench/gpu_bench.py, whose
# JSON is the last line printed.
#
#   bash scripts/gpu-check.sh [PYTHON]     # PYTHON: python3 on PATH unless given
#
# Without CUDA every CUDA test reports "not run: CUDA absent" and the benchmark prints null
# figures; then the same tests run once more as a stand-in, on CPU tensors through the ATen path
# (GRADSCOPE_FORCE_ATEN_STATS=1) with Gloo in place of NCCL, which checks the tests themselves,
# not a GPU. Environment: GRADSCOPE_CARRY (the unpacked folder), GRADSCOPE_CHECK_BUILD (the build
# folder, build-gpu), GRADSCOPE_CHECK_HIDE_SYSTEM=1 (root, here: hide this machine's own copies of
# the carried libraries in a private mount namespace, so that only the carried ones can be used).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=${1:-$(command -v python3 || true)}
[[ -z $python || $python == /* ]] || python=$PWD/$python  # as given (a venv's python stays a link)
cd "$root"
carry=${GRADSCOPE_CARRY:-$root/.gpu-carry}
build=${GRADSCOPE_CHECK_BUILD:-$root/build-gpu}
arch=x86_64-linux-gnu

# Hides Debian's copies of what .gpu-carry holds (headers, CMake configs, libraries, protoc) in
# this process's own mount namespace: empty folders and empty files over them.
hide_system_copies() {
  local empty=/tmp/gpu-check-empty-file
  : >"$empty"
  for d in /usr/include/boost /usr/include/fmt /usr/include/nlohmann /usr/include/google/protobuf \
           /usr/lib/$arch/cmake/fmt /usr/lib/$arch/cmake/Boost-* /usr/lib/$arch/cmake/boost_* \
           /usr/share/cmake/nlohmann_json; do
    [[ -d $d ]] && mount -t tmpfs none "$d"
  done
  for f in /usr/include/sqlite3*.h /usr/lib/$arch/libfmt.so* /usr/lib/$arch/libsqlite3.so* \
           /usr/lib/$arch/libprotobuf*.so* /usr/lib/$arch/libprotoc.so* /usr/bin/protoc*; do
    [[ -e $f ]] && mount --bind "$empty" "$f"
  done
  echo "gpu-check: this machine's own fmt, nlohmann-json, SQLite, protobuf and Boost are hidden (empty) here"
}
if [[ ${GRADSCOPE_CHECK_HIDE_SYSTEM:-0} == 1 && -z ${GRADSCOPE_CHECK_HIDDEN:-} ]]; then
  exec unshare -m env GRADSCOPE_CHECK_HIDDEN=1 bash "${BASH_SOURCE[0]}" "$@"
fi
[[ -n ${GRADSCOPE_CHECK_HIDDEN:-} ]] && hide_system_copies

section() { echo; echo "== $* =="; }
fail() { echo "gpu-check: $*" >&2; exit 2; }

[[ -x $python ]] || fail "no Python to build against (give one: bash scripts/gpu-check.sh /path/to/python3)"
[[ -d $carry/usr ]] || fail "$carry is missing: run bash scripts/gpu-carry.sh on a Debian 12 machine first"
# cmake and ninja: on PATH, or beside the Python (pip's cmake and ninja).
bin=$(dirname "$python")
cmake=$(command -v cmake || echo "$bin/cmake")
ninja=$(command -v ninja || echo "$bin/ninja")
[[ -x $cmake ]] || fail "no cmake on PATH or in $bin"
[[ -x $ninja ]] || fail "no ninja on PATH or in $bin"

section "machine"
echo "$(uname -m), $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"), $(nproc) cores"
echo "python: $python ($("$python" -c 'import sys; print(sys.version.split()[0])'))"
"$python" -c '
import torch
cuda = torch.cuda.is_available()
print("torch", torch.__version__, "CUDA", torch.version.cuda, "available:", cuda,
      "device:", torch.cuda.get_device_name(0) if cuda else None)'
echo "cmake: $("$cmake" --version | head -1); ninja: $("$ninja" --version); c++: $(c++ --version | head -1)"
command -v nvcc >/dev/null && echo "nvcc: $(nvcc --version | tail -1)"
python_include=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
[[ -f $python_include/Python.h ]] || fail "no Python.h in $python_include: the module needs the Python headers"
echo "carried ($carry):"
sed -n '2,$p' "$carry/MANIFEST"

section "configure (module only, carried libraries)"
c=$carry/usr
lib=$c/lib/$arch
mkdir -p "$build"
# ccache (where there is one) hits across build folders, as make's builds do.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros}
# Every carried package named explicitly, and the folder first on the search path besides.
"$cmake" -S "$root" -B "$build" -G Ninja -DCMAKE_MAKE_PROGRAM="$ninja" -DCMAKE_BUILD_TYPE=Release \
  -DGRADSCOPE_MODULE_ONLY=ON -DGRADSCOPE_PYTHON="$python" \
  -DCMAKE_PREFIX_PATH="$c" \
  -Dfmt_DIR="$lib/cmake/fmt" -Dnlohmann_json_DIR="$c/share/cmake/nlohmann_json" \
  -DBoost_DIR="$lib/cmake/Boost-1.74.0" -DBoost_NO_SYSTEM_PATHS=ON \
  -DSQLite3_INCLUDE_DIR="$c/include" -DSQLite3_LIBRARY="$lib/libsqlite3.so" \
  -DProtobuf_INCLUDE_DIR="$c/include" -DProtobuf_LIBRARY="$lib/libprotobuf.so" \
  -DProtobuf_LITE_LIBRARY="$lib/libprotobuf-lite.so" -DProtobuf_PROTOC_LIBRARY="$lib/libprotoc.so" \
  -DProtobuf_PROTOC_EXECUTABLE="$carry/bin/protoc" >"$build/configure.log" 2>&1
status=$?
grep -E -A1 '^-- gradscope|Warning|Error' "$build/configure.log" | grep -v '^--$'
[[ $status -eq 0 ]] || { cat "$build/configure.log"; fail "configure failed"; }
echo "what CMake found (CMakeCache.txt):"
grep -E '^(fmt_DIR|nlohmann_json_DIR|Boost_DIR|Boost_INCLUDE_DIR|SQLite3_INCLUDE_DIR|SQLite3_LIBRARY|Protobuf_INCLUDE_DIR|Protobuf_LITE_LIBRARY|Protobuf_PROTOC_EXECUTABLE|Torch_DIR|Python_EXECUTABLE):' \
  "$build/CMakeCache.txt" | sed 's/^/  /'

section "build gradscope_python"
start=$SECONDS
"$cmake" --build "$build" --target gradscope_python -j "$(nproc)" >"$build/build.log" 2>&1
status=$?
tail -n 1 "$build/build.log" | cut -c 1-160
[[ $status -eq 0 ]] || { tail -n 60 "$build/build.log"; fail "build failed"; }
echo "built in $((SECONDS - start)) s"
echo "the headers the compiler read (ninja's dependency log):"
"$ninja" -C "$build" -t deps | grep -oE '[^ ]*/(boost/crc.hpp|fmt/core.h|nlohmann/json.hpp|sqlite3.h|google/protobuf/message_lite.h)$' |
  sort -u | sed 's/^/  /'
module=$(ls "$build"/python/gradscope/_engine*.so)
echo "where $(basename "$module") finds the carried libraries (ldd):"
ldd "$module" | grep -E 'fmt|sqlite|protobuf' | sed 's/^\s*/  /'

export PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
pytest_args=(-p no:cacheprovider -v -rs --tb=short tests/gpu)
tests_status=0

section "tests/gpu (CUDA tensors)"
timeout 900 "$python" -m pytest "${pytest_args[@]}"
tests_status=$?

cuda=$("$python" -c 'import torch; print(int(torch.cuda.is_available()))')
if [[ $cuda == 0 ]]; then
  section "stand-in: the same tests on CPU tensors through the ATen path, Gloo for NCCL (no GPU result)"
  GRADSCOPE_GPU_CHECK_STANDIN=1 GRADSCOPE_FORCE_ATEN_STATS=1 timeout 900 "$python" -m pytest "${pytest_args[@]}"
  standin_status=$?
  [[ $standin_status -eq 0 ]] || tests_status=$standin_status
  section "stand-in: bench/gpu_bench.py --standin (a tiny GPT on the CPU; checks the script, no GPU figure)"
  "$python" bench/gpu_bench.py --standin || tests_status=1
fi

section "bench/gpu_bench.py"
"$python" bench/gpu_bench.py
bench_status=$?
[[ $tests_status -eq 0 && $bench_status -eq 0 ]]
