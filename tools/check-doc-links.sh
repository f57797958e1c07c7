#!/usr/bin/env bash
# Every document the repository cites must be in the repository.
#
#   tools/check-doc-links.sh        (from anywhere inside the repository)
#
# Scans every file git knows of (tracked, plus untracked files that are not ignored, so a
# new document counts before its commit; binary files skipped) and fails, listing
# FILE:LINE for each problem, when a file
# - mentions the team's outside directory (the word "shared" followed by a slash, as in
#   "../" + "shared" + "/X"): documents there are not part of a clone;
# - cites a Markdown document (a path ending in .md) that is not in the repository. A link
#   target in a Markdown file, `[text](path.md)`, is resolved relative to that file's
#   directory; any other mention is resolved from the repository root (else from the
#   citing file's directory). The methods and architecture documents live in docs/, so
#   their bare file names without a directory count as broken; URLs are not checked.
# Exit status: 0 when nothing is wrong, 1 otherwise. Needs bash 4, git, grep, sed.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
self=tools/check-doc-links.sh

declare -A present=()
while IFS= read -r -d '' f; do
    [ -f "$f" ] && present["$f"]=1
done < <(git ls-files -z --cached --others --exclude-standard)

# Normalise a relative path: drop `.` and empty parts, fold `..` (one above the root stays,
# so it cannot match a repository file).
normalise() {
    local IFS=/ part out=()
    for part in $1; do
        case $part in
            '' | .) ;;
            ..) if [ ${#out[@]} -gt 0 ] && [ "${out[-1]}" != .. ]; then unset 'out[-1]'; else out+=(..); fi ;;
            *) out+=("$part") ;;
        esac
    done
    printf '%s\n' "${out[*]}"
}

problems=0
report() {
    printf '%s:%s: %s\n' "$1" "$2" "$3"
    problems=$((problems + 1))
}

files() {
    local f
    for f in "${!present[@]}"; do
        [ "$f" = "$self" ] || printf '%s\0' "$f"
    done
}

# 1. The outside directory, as a path (the pattern is built so this file does not match it).
word=shared
md=md # (spelt apart so that this file does not cite the documents it checks for)
while IFS= read -r hit; do
    file=${hit%%:*}
    rest=${hit#*:}
    report "$file" "${rest%%:*}" "refers to the outside '$word' directory: ${rest#*:}"
done < <(files | xargs -0 grep -HInE "(^|[^A-Za-z0-9_-])$word/|\.\./$word([^A-Za-z0-9_-]|\$)" 2>/dev/null | sort -t: -k1,1 -k2,2n || true)

# 2. Markdown documents cited by path.
while IFS= read -r hit; do
    file=${hit%%:*}
    rest=${hit#*:}
    line=${rest%%:*}
    tok=${rest#*:}
    tok=$(printf '%s' "$tok" | sed -E 's/[^A-Za-z0-9_]$//')
    case $tok in *://*) continue ;; esac # a URL
    tok=${tok##*:}                       # `file:README.md` forms: the path after the colon
    [ -n "$tok" ] || continue
    case $tok in
        /* | '~'*)
            report "$file" "$line" "absolute path outside the repository: $tok"
            continue
            ;;
    esac
    dir=$(dirname "$file")
    text=$(sed -n "${line}p" "$file")
    if [[ $file == *.md && $text == *"]($tok"* ]]; then
        target=$(normalise "$dir/$tok")
        [ -n "${present[$target]:-}" ] || report "$file" "$line" "link to a missing document: $tok (resolved: $target)"
        continue
    fi
    base=${tok##*/}
    if [ "$tok" = "$base" ] && { [ "$base" = METHODS.$md ] || [ "$base" = ARCHITECTURE.$md ]; }; then
        report "$file" "$line" "bare $tok: the document is docs/$tok"
        continue
    fi
    target=$(normalise "$tok")
    [ -n "${present[$target]:-}" ] && continue
    target=$(normalise "$dir/$tok")
    [ -n "${present[$target]:-}" ] && continue
    report "$file" "$line" "cites a document the repository does not have: $tok"
done < <(files | xargs -0 grep -HInoE '[A-Za-z0-9_./~:-]*[A-Za-z0-9_]\.md([^A-Za-z0-9_]|$)' 2>/dev/null | sort -t: -k1,1 -k2,2n || true)

if [ "$problems" -gt 0 ]; then
    echo "check-doc-links: $problems reference(s) to documents outside the repository" >&2
    exit 1
fi
echo "check-doc-links: every cited document is in the repository"
