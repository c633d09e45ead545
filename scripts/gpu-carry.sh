#!/usr/bin/env bash
# Fills .gpu-carry/ (git-ignored) with what scripts/gpu-check.sh needs on a GPU machine that has
# python3 with a CUDA torch, CMake, ninja and a compiler, but none of Debian's -dev packages and no
# network: fmt, nlohmann-json, SQLite, protobuf (the libraries, their headers, protoc) and the
# Boost headers that Boost.CRC includes (not all of Boost: it is over 100 MB unpacked).
#
#   bash scripts/gpu-carry.sh [FOLDER]     # here: Debian 12, reaching Debian's mirrors
#
# The packages are Debian 12's, unpacked with dpkg -x (nothing is installed). Their libraries
# (glibc 2.36, libstdc++ of GCC 12) load on any newer glibc and libstdc++. The module finds them
# through its RUNPATH (CMake writes the folders of the libraries it links); protoc through the
# wrapper FOLDER/bin/protoc. docs/devices.md, "The GPU check", says how the device tool carries it.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
carry=${1:-$root/.gpu-carry}
arch=x86_64-linux-gnu
# What the Python module's libraries link (src/io, src/tensorboard): the -dev packages, the
# runtime libraries their .so links point at, and protoc with its library.
packages=(libfmt-dev libfmt9 nlohmann-json3-dev libsqlite3-dev libsqlite3-0
          libprotobuf-dev libprotobuf-lite32 libprotobuf32 libprotoc32 protobuf-compiler)
boost_package=libboost1.74-dev
boost_version=1.74.0

if [[ $(dpkg --print-architecture) != amd64 ]]; then
  echo "gpu-carry: the GPU machine is x86-64; run this on an amd64 Debian machine" >&2
  exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
if ! apt-get download "${packages[@]}" "$boost_package" >download.log 2>&1; then
  echo "gpu-carry: apt-get download failed; updating the package lists once and trying again" >&2
  apt-get update -qq
  apt-get download "${packages[@]}" "$boost_package" >download.log 2>&1 || { cat download.log >&2; exit 3; }
fi

rm -rf "$carry"
mkdir -p "$carry/bin"
for p in "${packages[@]}"; do
  dpkg -x "$work/${p}"_*.deb "$carry"
done
# Static libraries, manuals and changelogs: nothing the build reads.
rm -rf "$carry/usr/share/doc" "$carry/usr/share/man" "$carry/usr/share/lintian"
rm -f "$carry/usr/lib/$arch"/*.a

# Boost: only the headers that our Boost includes pull in, as the compiler itself lists them
# (g++ -M; clang++ too where it is here, and both standards the build may use), plus Boost's
# CMake config, which find_package(Boost) reads.
dpkg -x "$work/${boost_package}"_*.deb "$work/boost"
boost_include=$work/boost/usr/include
grep -rhoE '#include <boost/[^>]+>' "$root/src" "$root/include" | sort -u >"$work/probe.cpp"
echo 'int main() { return 0; }' >>"$work/probe.cpp"
: >"$work/headers"
for cxx in g++ clang++; do
  command -v "$cxx" >/dev/null || continue
  for std in c++17 c++20; do
    "$cxx" -std=$std -I"$boost_include" -M "$work/probe.cpp" | tr ' \\' '\n\n' | grep -F "$boost_include/" \
      >>"$work/headers" || true
  done
done
count=0
while read -r header; do
  real=$(realpath "$header")
  relative=${real#"$boost_include"/}
  mkdir -p "$carry/usr/include/$(dirname "$relative")"
  cp "$real" "$carry/usr/include/$relative"
  count=$((count + 1))
done < <(sort -u "$work/headers")
cmake_dir=usr/lib/$arch/cmake
mkdir -p "$carry/$cmake_dir"
cp -r "$work/boost/$cmake_dir/Boost-$boost_version" "$work/boost/$cmake_dir/boost_headers-$boost_version" \
  "$work/boost/$cmake_dir/BoostDetectToolset-$boost_version.cmake" "$carry/$cmake_dir/"

# protoc with its libraries beside it, wherever the folder lands.
cat >"$carry/bin/protoc" <<'EOF'
#!/bin/sh
# protoc from Debian 12 (scripts/gpu-carry.sh), with the carried libprotoc and libprotobuf.
here=$(cd "$(dirname "$0")/.." && pwd)
LD_LIBRARY_PATH="$here/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/usr/bin/protoc" "$@"
EOF
chmod +x "$carry/bin/protoc"

{
  echo "# What scripts/gpu-carry.sh unpacked here (Debian $(cat /etc/debian_version)), $(date -u +%Y-%m-%dT%H:%MZ)"
  for deb in "$work"/*.deb; do
    dpkg-deb -f "$deb" Package Version | sed 's/^[A-Za-z]*: //' | paste -sd ' '
  done
  echo "boost headers kept: $count (those that $(grep -c boost "$work/probe.cpp") include(s) of src/ and include/ pull in)"
} >"$carry/MANIFEST"
cat "$carry/MANIFEST"
"$carry/bin/protoc" --version
echo "gpu-carry: $(du -sh "$carry" | cut -f1) in $carry"
