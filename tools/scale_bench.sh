#!/usr/bin/env bash
# The scale simulation: a 256-token trace with surprisal through the random-weight
# checkpoints tools/scale_checkpoints.py writes (Qwen2.5-Coder-1.5B's shapes in bf16
# safetensors, CodeLlama-7B's in a Q4_K_M GGUF), one run at a time, each under
# /usr/bin/time -v: wall and user time, peak RSS, the tokens traced, the machine's load.
#
#   tools/scale_bench.sh [BINARY] [DIR] [BYTES]
#
# BINARY defaults to target/debug/codescope, DIR to /tmp/codescope-scale, BYTES (the
# snippet: the first BYTES of assets/samples/python/inventory.py) to 934, 256
# tokens with the simulation's tokenizer. Runs: the 1.5B with its matrices held bf16
# (the default) and with --weights f32, the 7B with its matrices held quantized. Figures:
# docs/performance.md, "The scale simulation".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/target/debug/codescope}
dir=${2:-/tmp/codescope-scale}
bytes=${3:-934}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
snippet=$work/snippet.py
head -c "$bytes" "$root/assets/samples/python/inventory.py" > "$snippet"

run() {
    local label=$1 model=$2 weights=$3
    /usr/bin/time -v "$bin" --weights "$weights" --model "$model" \
        --log-file "$work/log.txt" trace --json --surprisal "$snippet" \
        > "$work/out.json" 2> "$work/time.txt" || {
        echo "$label: failed"; tail -3 "$work/time.txt"; return 1; }
    local tokens wall user rss
    tokens=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["tokens"]))' "$work/out.json")
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/time.txt")
    user=$(sed -n 's/.*User time (seconds): //p' "$work/time.txt")
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time.txt")
    printf '%s: %s tokens, wall %s, user %s s, peak RSS %s MB, load %s\n' \
        "$label" "$tokens" "$wall" "$user" "$((rss / 1000))" \
        "$(cut -d' ' -f1-3 /proc/loadavg)"
}

echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $bin"
run "Qwen2.5-Coder-1.5B shapes, bf16 safetensors, native" "$dir/qwen2.5-coder-1.5b-bf16" native
run "Qwen2.5-Coder-1.5B shapes, bf16 safetensors, f32" "$dir/qwen2.5-coder-1.5b-bf16" f32
run "CodeLlama-7B shapes, Q4_K_M GGUF, native" "$dir/codellama-7b-q4_k_m.gguf" native
