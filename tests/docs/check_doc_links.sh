#!/usr/bin/env bash
# The docs a reader gets (README.md and docs/**/*.md) must stand on their own:
#  1. every relative link, [text](path) or ![alt](path) or a [name]: path definition, names a
#     file or folder inside the repository (not beside it), and its #anchor, when it points
#     into a Markdown file, names a heading there (GitHub's slug);
#  2. no doc, header, source or script names the design notes (design.md) or the seed findings
#     (FINDINGS.md) unless the repository holds a file of that name: their content lives in
#     docs/architecture.md and docs/prior-art.md.
# Links in fenced code blocks and `code spans` are code, not links, and are not checked.
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

if [ "$problems" -gt 0 ]; then
  echo "check_doc_links: $problems problem(s) in the docs' links and references" >&2
  exit 1
fi
echo "check_doc_links: ${#docs[@]} docs, every relative link and reference resolves in the repository"
