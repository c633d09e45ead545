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
#     matching something. Placeholders (src/<layer>, tests/fuzz/NAME_fuzz.cpp) are not paths.
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
  if [ -n "$(find . \( -path ./build -o -path './build-*' -o -path ./.git -o -path '*/node_modules' \) -prune \
                -o -type f -iname "$name" -print -quit)" ]; then
    continue
  fi
  while IFS= read -r hit; do
    problem "${hit%%:*}:$(cut -d: -f2 <<<"$hit"): names $name, which is not in the repository"
  done < <(grep -rniE --binary-files=without-match "(^|[^A-Za-z0-9_-])${name//./\\.}" \
             README.md docs include src python bench tests scripts examples CMakeLists.txt Makefile \
             --exclude-dir=node_modules --exclude=check_doc_links.sh 2>/dev/null)
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
    # placeholders, and folders the build or npm makes
    [[ "$token" == *[\<\>]* || "$token" =~ [A-Z]{3,} || "$token" == *node_modules* ]] && continue
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

if [ "$problems" -gt 0 ]; then
  echo "check_doc_links: $problems problem(s) in the docs' links and references" >&2
  exit 1
fi
echo "check_doc_links: ${#docs[@]} docs, every relative link and reference resolves in the repository"
