#!/usr/bin/env bash
# `codescope syntax --json` of every bundled file (assets/ and tests/fixtures/snippets/), for
# byte-identity checks across refactors of the syntax layer.
#
#   tools/check_syntax_json.sh save OUT_DIR [BINARY]    write one JSON per file
#   tools/check_syntax_json.sh check OUT_DIR [BINARY]   compare with a saved set (exit 1 on a diff)
#
# Only the syntax layer is exercised (no model needed); tools/json_snapshot.sh covers the
# model-dependent commands.
set -euo pipefail
mode=${1:?usage: tools/check_syntax_json.sh save|check OUT_DIR [BINARY]}
dir=${2:?usage: tools/check_syntax_json.sh save|check OUT_DIR [BINARY]}
bin=$(realpath "${3:-target/debug/codescope}")
cd "$(dirname "$0")/.."
files=$(find assets tests/fixtures/snippets -type f \( -name '*.py' -o -name '*.java' \) | sort)
case $mode in
  save)
    mkdir -p "$dir"
    for f in $files; do
      "$bin" syntax --json "$f" > "$dir/$(echo "$f" | tr / _).json"
    done
    echo "saved $(echo "$files" | wc -l) files to $dir"
    ;;
  check)
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    bad=0
    for f in $files; do
      n=$(echo "$f" | tr / _).json
      "$bin" syntax --json "$f" > "$tmp/$n"
      if ! cmp -s "$dir/$n" "$tmp/$n"; then
        echo "differs: $f"
        bad=1
      fi
    done
    [ $bad = 0 ] && echo "all $(echo "$files" | wc -l) files byte-identical"
    exit $bad
    ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
