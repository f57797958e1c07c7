#!/usr/bin/env bash
# The explorer's layer-by-layer figures of docs/performance.md, from its own log:
# time from the forward pass's start to the first layer on screen against one layer's
# time, and `S` (surprisal) against the LM head's time.
#
#   cargo build [--release] && tools/stream_timing.sh [MODEL] [FILE]
#   tools/stream_timing.sh --log LOG     # only read the figures from an earlier log
#
# Runs the explorer in a detached tmux session (160 x 50) on FILE (default: the three
# bundled Java samples as one class, tools/java-585.sh) with MODEL (default
# gemma3-270m), waits for the analysis, presses S, waits for the surprisal, quits, and
# prints the figures from the log lines the explorer writes ("explorer analysis
# started", "analysis layer sent", "first analysis layer on screen", "analysis asked",
# "LM head over the kept final hidden state", "surprisal on screen"). Needs tmux.
set -euo pipefail
cd "$(dirname "$0")/.."
figures() {
    awk '
    function num(key,   m) { if (match($0, key "=[0-9]+")) return substr($0, RSTART + length(key) + 1, RLENGTH - length(key) - 1); return -1 }
    /explorer analysis started/ && /lm_head_only=false/ && start == "" { start = num("since_start_ms") }
    /analysing layer by layer/ && subw == "" { subw = num("subwords"); tok = num("code_tokens") }
    /analysis layer sent/ { t[n++] = num("ms") }
    /first analysis layer on screen/ && screen == "" { screen = num("since_start_ms") }
    /explorer analysis done/ && /lm_head_only=false/ && pass == "" { pass = num("ms") }
    /analysis asked/ && /lm_head_only=true/ { asked = num("since_start_ms") }
    /LM head over the kept final hidden state/ { head = num("ms") }
    /explorer analysis done/ && /lm_head_only=true/ { sjob = num("ms") }
    /surprisal on screen/ { shown = num("since_start_ms") }
    END {
        for (i = 1; i < n; i++) d[i] = t[i] - t[i - 1]
        # median of the n - 1 layer intervals (insertion sort: 17 values)
        for (i = 1; i < n; i++) for (j = i + 1; j < n; j++) if (d[j] < d[i]) { x = d[i]; d[i] = d[j]; d[j] = x }
        m = n - 1; med = (m % 2) ? d[(m + 1) / 2] : (d[m / 2] + d[m / 2 + 1]) / 2
        printf "input: %d subwords, %d code tokens, %d layers\n", subw, tok, n
        printf "pass start -> first layer sent: %d ms\n", t[0]
        printf "pass start -> first layer on screen: %d ms\n", screen - start
        printf "one layer (median interval between layers sent): %d ms (min %d, max %d)\n", med, d[1], d[m]
        printf "ratio first layer on screen / one layer: %.2f\n", (screen - start) / med
        printf "whole pass: %d ms\n", pass
        if (head != "") {
            printf "S: LM head alone %d ms; the job %d ms; key to surprisal on screen %d ms (+%.1f%%)\n", head, sjob, shown - asked, 100 * (shown - asked - head) / head
        }
    }' "$1"
}
if [ "${1:-}" = "--log" ]; then
    figures "$2"
    exit
fi
model=${1:-gemma3-270m}
file=${2:-}
bin=${BIN:-target/debug/codescope}
work=$(mktemp -d)
trap 'tmux kill-session -t codescope-timing 2>/dev/null || true; rm -rf "$work"' EXIT
if [ -z "$file" ]; then
    file=$work/Samples.java
    tools/java-585.sh >"$file"
fi
log=$work/codescope.log
wait_for() {
    for _ in $(seq 1 300); do
        grep -q "$1" "$log" 2>/dev/null && return
        sleep 1
    done
    echo "timed out waiting for: $1" >&2
    exit 1
}
tmux new-session -d -s codescope-timing -x 160 -y 50 "$bin --model $model --log-file $log $file"
wait_for "explorer analysis done"
sleep 2
tmux send-keys -t codescope-timing S
wait_for "surprisal on screen"
tmux send-keys -t codescope-timing q
figures "$log"
