#!/usr/bin/env bash
# Wall time of CI (`.ci/run`) on a clean clone of a revision, with an empty target
# directory (the packaged models come from codescope's cache, as a second CI run would
# find them; pass CODESCOPE_CACHE=$(mktemp -d) to time the downloads too).
#
#   tools/ci_time.sh [REV]        (default HEAD)
#
# Prints the revision, the wall seconds and the totals line. Run it on a quiet machine:
# it compiles everything from scratch.
set -euo pipefail
rev=${1:-HEAD}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone -q "$repo" "$work/src"
git -C "$work/src" checkout -q "$rev"
export CARGO_TARGET_DIR="$work/target"
start=$(date +%s)
(cd "$work/src" && .ci/run) > "$work/log" 2>&1 || { tail -40 "$work/log"; echo "CI FAILED"; exit 1; }
end=$(date +%s)
echo "$(git -C "$work/src" rev-parse --short HEAD): $((end - start)) s; $(tail -1 "$work/log")"
