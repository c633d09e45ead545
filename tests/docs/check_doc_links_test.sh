#!/usr/bin/env bash
# check_doc_links.sh on a small repository with planted problems: it must name each missing
# path (plain, in an #include, a layer's short form, one of a {a,b} group) and nothing else
# (a path that exists, a glob that matches, placeholders, URLs, another project's paths); and
# each sentence that puts a run's document in a run folder as a file (a path through a run
# folder, in prose, a table and fenced code; a list of the folder's files; "side file"; "beside
# run.db" across a line break), and not one that says it is a document, or names export,
# upgrade or schema 4, or another file (rows.jsonl, -o rows.json, DIR/rows.json).
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
cat >"$root/docs/run-folder.md" <<'DOC'
# Run folders

Flagged: `RUN/units.json` holds the profile.
Each run folder holds `run.db`, `report.json` and `embedding.json`.
The trees.json side file is read with the run.
A saved run keeps compression.json beside
`run.db`. The next sentence is fine.

Allowed: the run's `units.json` document, inside run.db (e.g. `runs/exp1/run.db`).
`gradscope export RUN --format documents -o RUN/out` writes RUN/out/rows.json.
A schema-4 run keeps `rows.json` beside `run.db`; `gradscope upgrade RUN` moves it in.
Runs before schema 5 kept `embedding.json` next to run.db.
Not a document: rows.jsonl beside run.db, data/runs/my_units.json. Out of a run: DIR/rows.json.

| table | `runs/exp1/units.json` |

```sh
ls gradscope-runs/demo-mf-movielens/rows.json
gradscope compress RUN --table item=1 -o rows.json
```
DOC

out=$(bash "$check" "$root" 2>&1)
rc=$?
fix="since schema 5 it is a document in run.db (say so, or name export --format documents, upgrade or schema 4)"
want="README.md:4: names a path the repository does not have: src/core/stats/b.cpp
README.md:5: names a path the repository does not have: core/stats.h
README.md:6: names a path the repository does not have: src/core/stats/{a,c}.cpp
README.md:12: names a path the repository does not have: gradscope/core/stats.h
docs/run-folder.md:3: puts units.json in a run folder as a file (names it by a path through a run folder: RUN/units.json); $fix
docs/run-folder.md:4: puts embedding.json in a run folder as a file (lists it with a run folder's files: report.json and embedding.json); $fix
docs/run-folder.md:5: puts trees.json in a run folder as a file (says where it sits: \"side file\"); $fix
docs/run-folder.md:6: puts compression.json in a run folder as a file (says where it sits: \"beside run.db\"); $fix
docs/run-folder.md:15: puts units.json in a run folder as a file (names it by a path through a run folder: runs/exp1/units.json); $fix
docs/run-folder.md:18: puts rows.json in a run folder as a file (names it by a path through a run folder: gradscope-runs/demo-mf-movielens/rows.json); $fix
check_doc_links: 10 problem(s) in the docs' links and references"
if [ "$rc" -ne 1 ] || [ "$out" != "$want" ]; then
  printf 'check_doc_links_test: expected exit 1 and\n%s\ngot exit %s and\n%s\n' "$want" "$rc" "$out" >&2
  exit 1
fi
echo "check_doc_links_test: the planted paths and run-folder documents, and only they, were named"
