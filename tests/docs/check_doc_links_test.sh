#!/usr/bin/env bash
# check_doc_links.sh on a small repository with planted problems: it must name each missing
# path (plain, in an #include, a layer's short form, one of a {a,b} group) and nothing else
# (a path that exists, a glob that matches, placeholders, URLs, another project's paths).
# Usage: check_doc_links_test.sh CHECK_SCRIPT
set -u
check=$(realpath "${1:?usage: check_doc_links_test.sh CHECK_SCRIPT}") || exit 2
root=$(mktemp -d) || exit 2
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/docs" "$root/src/core/stats" "$root/include/gradscope/core/stats"
touch "$root/src/core/stats/a.cpp" "$root/include/gradscope/core/stats/a.h"
cat >"$root/README.md" <<'DOC'
# Planted

Exists: `src/core/stats/a.cpp`, core/stats/a.h, src/core/stats/*.cpp, src/core/{stats,stats}/a.cpp.
Missing: `src/core/stats/b.cpp`.
A layer's old short form: (core/stats.h).
One of a group: src/core/stats/{a,c}.cpp.
Not paths: src/<layer>, tests/fuzz/NAME_fuzz.cpp, https://example.com/src/core/gone.cpp,
PyTorch's torch/csrc/distributed/init.cpp, the tag gradscope/report.

```cpp
#include "gradscope/core/stats/a.h"
#include "gradscope/core/stats.h"
```
DOC
printf '# Nothing\n' >"$root/docs/empty.md"

out=$(bash "$check" "$root" 2>&1)
rc=$?
want="README.md:4: names a path the repository does not have: src/core/stats/b.cpp
README.md:5: names a path the repository does not have: core/stats.h
README.md:6: names a path the repository does not have: src/core/stats/{a,c}.cpp
README.md:12: names a path the repository does not have: gradscope/core/stats.h
check_doc_links: 4 problem(s) in the docs' links and references"
if [ "$rc" -ne 1 ] || [ "$out" != "$want" ]; then
  printf 'check_doc_links_test: expected exit 1 and\n%s\ngot exit %s and\n%s\n' "$want" "$rc" "$out" >&2
  exit 1
fi
echo "check_doc_links_test: the planted paths, and only they, were named"
