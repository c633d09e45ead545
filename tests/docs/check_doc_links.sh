#!/usr/bin/env bash
# The docs a reader gets (README.md and docs/**/*.md) must stand on their own:
#  1. every relative link, [text](path) or ![alt](path) or a [name]: path definition, names a
#     file or folder inside the repository (not beside it), and its #anchor, when it points
#     into a Markdown file, names a heading there (GitHub's slug);
#  2. no doc, header, source or script names the design notes (design.md) or the seed findings
#     (FINDINGS.md) unless the repository holds a file of that name: their content lives in
#     docs/architecture.md and docs/prior-art.md;
#  3. every path of the repository a doc names, in prose, `code spans` or fenced code, exists:
#     src/core/stats/stats.cpp, include/gradscope/io/store/run_writer.h, "gradscope/torch/audit/
#     audit.h" in an #include, core/trees/rules.h (a layer's header or source), with globs
#     (src/core/stats/kernels_*.cpp) and one {a,b} group (tests/io/tree_{store,render}_test.cpp)
#     matching something. Placeholders (src/<layer>, tests/fuzz/NAME_fuzz.cpp) are not paths;
#  4. no doc puts one of a run's documents (embedding.json, trees.json, units.json, rows.json,
#     compression.json) in a run folder as a file: since schema 5 they are rows of run.db's
#     `documents` table (docs/run-store.md). A sentence (in prose: split at ". " before a capital
#     or a backtick, not after "e.g."/"i.e."; a table row, a heading and a line of fenced code
#     each stand alone) is flagged when it names a document and
#       a. names it by a path through a run folder: a component before the name is run, runs,
#          RUN, <run>, $RUN, run_dir, run-folder, run-directory, ...-runs (gradscope-runs) or
#          demo-... (RUN/units.json, runs/mf/embedding.json, gradscope-runs/demo-x/rows.json),
#          unless the path starts with a folder of the repository (tests/..., data/...);
#       b. lists it with a run folder's files (run.db, report.*, embedding_report.json,
#          recipe.json, model.json, model.gsq.safetensors), joined by "," or "and"; or
#       c. says where files sit: "beside/next to/alongside run.db" (or "... the run", "... it"),
#          "in/into the/each run folder/directory", "the run folder holds/has/contains", "side
#          file";
#     and the sentence does not also say export, upgrade, schema 4 ("schema-4", "before schema
#     5") or "documents", the words that mark a document written out by `export --format
#     documents` or read from an old run. "the run's units.json document", "-o rows.json" (a
#     file the user names) and DIR/units.json (the folder export writes) are not flagged.
# Links in fenced code blocks and `code spans` are code, not links, and are not checked as links.
# Usage: check_doc_links.sh REPO_ROOT. Exit 0 when all is well, 1 with one line per problem
# (FILE:LINE: what) on stderr.
set -u
root=$(realpath "${1:?usage: check_doc_links.sh REPO_ROOT}") || exit 2
cd "$root" || exit 2
export LC_ALL=C
problems=0
problem() { echo "$1" >&2; problems=$((problems + 1)); }

# LINE<TAB>TARGET for each link outside code in a Markdown file.
links_of() {
  awk '
    /^[ \t]*(```|~~~)/ { fence = !fence; next }
    fence { next }
    {
      line = $0
      gsub(/`[^`]*`/, "", line)
      if (match(line, /^ ? ? ?\[[^]^][^]]*\]:[ \t]+[^ \t]+/)) {
        def = substr(line, RSTART, RLENGTH); sub(/^ ? ? ?\[[^]^][^]]*\]:[ \t]+/, "", def)
        print NR "\t" def
      }
      while (match(line, /\]\([^)]*\)/)) {
        print NR "\t" substr(line, RSTART + 2, RLENGTH - 3)
        line = substr(line, RSTART + RLENGTH)
      }
    }' "$1"
}

# The GitHub anchors of a Markdown file's headings, one a line.
anchors_of() {
  awk '
    /^[ \t]*(```|~~~)/ { fence = !fence; next }
    fence || !/^#+[ \t]/ { next }
    {
      h = tolower($0); sub(/^#+[ \t]+/, "", h); sub(/[ \t]+#*[ \t]*$/, "", h)
      gsub(/[^a-z0-9 _-]/, "", h); gsub(/ /, "-", h)
      print h; n[h]++; if (n[h] > 1) print h "-" (n[h] - 1)
    }' "$1"
}

docs=(README.md)
while IFS= read -r f; do docs+=("$f"); done < <(find docs -name '*.md' -type f | sort)

for doc in "${docs[@]}"; do
  dir=$(dirname "$doc")
  while IFS=$'\t' read -r line target; do
    target=${target#<}; target=${target%%>*}  # <path with spaces>
    target=${target%% *}                        # (path "title")
    case "$target" in
      *://* | mailto:* | "") continue ;;
    esac
    file=${target%%#*}
    anchor=""
    [[ "$target" == *"#"* ]] && anchor=${target#*#}
    if [ -z "$file" ]; then
      path=$root/$doc
    else
      path=$(realpath -m "$dir/$file")
    fi
    if [[ "$path" != "$root" && "$path" != "$root"/* ]]; then
      problem "$doc:$line: link leaves the repository: $target"
    elif [ ! -e "$path" ]; then
      problem "$doc:$line: link to a path the repository does not have: $target"
    elif [ -n "$anchor" ] && [[ "$path" == *.md ]] && ! anchors_of "$path" | grep -qxF "$anchor"; then
      problem "$doc:$line: no heading in ${path#"$root"/} for #$anchor"
    fi
  done < <(links_of "$doc")
done

# Outside notes that once held what the docs now say. A file of the name anywhere in the
# repository (outside the build) makes the mention fine.
for name in design.md FINDINGS.md; do
  if [ -n "$(find . \( -path ./build -o -path './build-*' -o -path ./.git -o -path ./.venv \) -prune \
                -o -type f -iname "$name" -print -quit)" ]; then
    continue
  fi
  while IFS= read -r hit; do
    problem "${hit%%:*}:$(cut -d: -f2 <<<"$hit"): names $name, which is not in the repository"
  done < <(grep -rniE --binary-files=without-match "(^|[^A-Za-z0-9_-])${name//./\\.}" \
             README.md docs include src python bench tests scripts examples CMakeLists.txt Makefile \
             --exclude=check_doc_links.sh 2>/dev/null)
done

# LINE<TAB>PATH for each path of the repository a Markdown file names: one that starts with a
# top-level folder, an include path (gradscope/...), or a layer's path (core/..., io/...).
# A path starts after a space, a quote, a bracket or a backtick: not inside a URL or another path.
paths_of() {
  awk '
    {
      line = $0
      while (match(line, /(^|[] \t`"(<[])(src|include|tests|docs|python|bench|examples|scripts|web|cmake|gradscope|core|io|torch|trees|tensorboard)\/[A-Za-z0-9_.\/*{},<>-]+/)) {
        token = substr(line, RSTART, RLENGTH); sub(/^[] \t`"(<[]/, "", token)
        line = substr(line, RSTART + RLENGTH)
        sub(/[.,:;]+$/, "", token)
        print NR "\t" token
      }
    }' "$1"
}

# The repository paths a token names: the token itself, under include/ or src/ for the shorter
# forms. Prints the candidates; the token names something when one of them exists.
path_exists() {
  local token=$1 prefixes=("")
  case "$token" in
    gradscope/*) prefixes=("include/") ;;
    core/* | io/* | torch/* | trees/* | tensorboard/*) prefixes=("include/gradscope/" "src/") ;;
  esac
  local expanded=("$token")
  if [[ "$token" =~ ^([^{}]*)\{([^{}]*)\}([^{}]*)$ ]]; then
    local head=${BASH_REMATCH[1]} tail=${BASH_REMATCH[3]} part
    expanded=()
    IFS=, read -ra parts <<<"${BASH_REMATCH[2]}"
    for part in "${parts[@]}"; do expanded+=("$head$part$tail"); done
  fi
  local path prefix
  for path in "${expanded[@]}"; do
    local found=0
    for prefix in "${prefixes[@]}"; do
      if [[ "$path" == *"*"* ]]; then
        compgen -G "$prefix$path" >/dev/null && found=1
      elif [ -e "$prefix$path" ]; then
        found=1
      fi
    done
    [ "$found" -eq 1 ] || return 1
  done
  return 0
}

for doc in "${docs[@]}"; do
  while IFS=$'\t' read -r line token; do
    # placeholders
    [[ "$token" == *[\<\>]* || "$token" =~ [A-Z]{3,} ]] && continue
    # An include path or a layer's path is one only when it names a header or source ("core/trees"
    # in prose is a phrase, gradscope/report a TensorBoard tag), and one deeper than a file only
    # below a folder of that layer (torch/csrc/... is PyTorch's).
    case "$token" in
      src/* | include/* | tests/* | docs/* | python/* | bench/* | examples/* | scripts/* | web/* | cmake/*) ;;
      gradscope/*.h) ;;
      gradscope/*) continue ;;
      */*/*.h | */*/*.cpp)
        layer_dir=${token%%/*}/$(cut -d/ -f2 <<<"$token")
        [ -d "include/gradscope/$layer_dir" ] || [ -d "src/$layer_dir" ] || continue ;;
      *.h | *.cpp) ;;
      *) continue ;;
    esac
    path_exists "$token" || problem "$doc:$line: names a path the repository does not have: $token"
  done < <(paths_of "$doc")
done

# LINE<TAB>DOCUMENT<TAB>WHAT for each sentence of a Markdown file that puts a run's document in
# a run folder as a file (check 4 above). mawk-compatible awk: no intervals, no gawk extensions.
read -r -d '' side_files_awk <<'AWK'
BEGIN {
  doc = "(embedding|trees|units|rows|compression)\\.json"  # as a whole name: see doc_at
  allowed = "export|upgrade|schema[ -]?4|before schema 5|documents"
  # A path ending in a document's name; the character before it starts the token.
  path_re = "[^] \t`'\"(),;[]*/" doc
  list_file = "(run\\.db|report\\.[a-z{},]+|embedding_report\\.json|recipe\\.json|model\\.json|model\\.gsq\\.safetensors)"
  list_re1 = list_file "`?(,|,? and) +`?" doc
  list_re2 = doc "`?(,|,? and) +`?" list_file
  beside_re = "(beside|next to|alongside) (the |its |each |a )?(run's )?`?run\\.db|(beside|next to|alongside) ((the|its|each|a) run( folder| directory)?|it)([ ,;:).]|$)|in(to)? (the|each|every|a|its) run('s)? (folder|directory|dir)([^a-z]|$)|run (folder|directory)('s)? (holds|has|contains|keeps)|side[ -]files?"
  repo = "^(src|include|tests|docs|python|bench|examples|scripts|web|cmake|data|build)$"
}
function lines_before(text, n,    k, c) {
  c = 0
  for (k = 1; k < n; ++k) if (substr(text, k, 1) == "\n") ++c
  return c
}
# The position of the first document name in `text` (lower case) from `from` on, a whole name
# (not rows.jsonl, my_rows.json or demo-trees.json), its name in found; 0 for none.
function doc_at(text, from,    p, b, a) {
  while (match(substr(text, from), doc)) {
    p = from + RSTART - 1
    b = p > 1 ? substr(text, p - 1, 1) : ""
    a = substr(text, p + RLENGTH, 1)
    if (b !~ /[a-z0-9_.-]/ && a !~ /[a-z0-9_-]/) { found = substr(text, p, RLENGTH); return p }
    from = p + 1
  }
  return 0
}
function run_component(c) {
  c = tolower(c)
  gsub(/[<>${}]/, "", c)
  return c ~ /^(run|runs|rundir|run[-_](dir|folder|directory)|[a-z0-9_.-]*[-_]runs?|demo-.*)$/
}
# Prints the first problem of one sentence (its text keeps its line breaks; it starts on line at).
function check_sentence(s, at,    low, rest, off, token, parts, n, k, hit, name, what, pos) {
  low = tolower(s)
  gsub(/\n/, " ", low)
  if (!doc_at(low, 1) || low ~ allowed) return
  # a. a path through a run folder
  rest = low; off = 0
  while (match(rest, path_re)) {
    token = substr(rest, RSTART, RLENGTH)
    pos = off + RSTART
    rest = substr(rest, RSTART + RLENGTH); off = pos + RLENGTH - 1
    if (rest ~ /^[a-z0-9_-]/) continue  # units.jsonl, rows.json_x: another name
    n = split(token, parts, "/")
    if (parts[1] ~ repo) continue
    hit = 0
    for (k = 1; k < n; ++k) if (run_component(parts[k])) hit = 1
    if (!hit) continue
    name = parts[n]
    print at + lines_before(s, pos + length(token) - length(name)) "\t" name "\tnames it by a path through a run folder: " substr(s, pos, length(token))
    return
  }
  # b. listed with a run folder's files
  if (match(low, list_re1) || match(low, list_re2)) {
    what = substr(s, RSTART, RLENGTH); pos = doc_at(low, RSTART)
    gsub(/\n/, " ", what); gsub(/`/, "", what)
    print at + lines_before(s, pos) "\t" found "\tlists it with a run folder's files: " what
    return
  }
  # c. a phrase that says where files sit
  if (match(low, beside_re)) {
    what = substr(s, RSTART, RLENGTH); pos = doc_at(low, 1)
    gsub(/\n/, " ", what); gsub(/`/, "", what); sub(/[ ,;:).]$/, "", what)
    print at + lines_before(s, pos) "\t" found "\tsays where it sits: \"" what "\""
  }
}
# Where the sentence that starts `text` ends: the position of its ". " (or "! ", "? ", or a line
# break for the space) before a capital or a backtick, not the one of "e.g." or "i.e."; 0 for none.
function sentence_end(text,    from, p) {
  from = 1
  while (match(substr(text, from), /[.!?][ \n]+[A-Z`]/)) {
    p = from + RSTART - 1
    if (p < 4 || (substr(text, p - 3, 4) != "e.g." && substr(text, p - 3, 4) != "i.e.")) return p
    from = p + 1
  }
  return 0
}
# Checks one unit (a paragraph, list item, table row, heading or code line), sentence by sentence.
function check_unit(u, at,    rest, cut) {
  rest = u
  while ((cut = sentence_end(rest)) > 0) {
    check_sentence(substr(rest, 1, cut), at)
    at += lines_before(rest, cut + 1)
    rest = substr(rest, cut + 1)
    while (substr(rest, 1, 1) == " " || substr(rest, 1, 1) == "\n") {
      if (substr(rest, 1, 1) == "\n") ++at
      rest = substr(rest, 2)
    }
  }
  check_sentence(rest, at)
}
function flush() {
  if (unit != "") check_unit(unit, start)
  unit = ""
}
/^[ \t]*(```|~~~)/ { flush(); fence = !fence; next }
fence { flush(); unit = $0; start = NR; flush(); next }
/^[ \t]*$/ { flush(); next }
/^#/ || /^[ \t]*\|/ { flush(); unit = $0; start = NR; flush(); next }
/^[ \t]*([-*+]|[0-9]+\.)[ \t]/ { flush() }
{
  if (unit == "") { unit = $0; start = NR } else unit = unit "\n" $0
}
END { flush() }
AWK

for doc in "${docs[@]}"; do
  while IFS=$'\t' read -r line name what; do
    problem "$doc:$line: puts $name in a run folder as a file ($what); since schema 5 it is a document in run.db (say so, or name export --format documents, upgrade or schema 4)"
  done < <(awk "$side_files_awk" "$doc")
done

if [ "$problems" -gt 0 ]; then
  echo "check_doc_links: $problems problem(s) in the docs' links and references" >&2
  exit 1
fi
echo "check_doc_links: ${#docs[@]} docs, every relative link and reference resolves in the repository"
