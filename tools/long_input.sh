#!/usr/bin/env bash
# A long Python input for the layer-by-layer analysis (issue #18, "Long inputs"), and its
# measurement: peak RSS and wall time of `codescope analyze --json` on it.
#
#   cargo build --release && tools/long_input.sh [TOKENS] [MODEL]
#
# Writes $OUT (default /tmp/codescope_long.py): top-level functions of this machine's
# Python standard library, whole, in a fixed order (sorted files, source order), until
# the file is as close to TOKENS subwords (default 8192, special tokens included) as
# whole functions allow without passing it. The subword count comes from codescope
# itself: a run under a 1 MiB attention budget truncates at once and its notice names
# the window and the number of tokens dropped. Then analyses the file with MODEL
# (default gemma3-270m) under /usr/bin/time -v and prints the JSON's truncation, the
# peak RSS and the wall time. Needs python3 (for the standard library only).
set -euo pipefail
tokens=${1:-8192}
model=${2:-gemma3-270m}
out=${OUT:-/tmp/codescope_long.py}
bin=${BIN:-$(dirname "$0")/../target/release/codescope}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Functions of the stdlib, in order, to $work/funcs.jsonl (one JSON string per line).
python3 - "$work/funcs.jsonl" <<'EOF'
import ast, json, os, sys, sysconfig
root = sysconfig.get_paths()["stdlib"]
out = open(sys.argv[1], "w")
kept = 0
for dirpath, dirs, files in sorted(os.walk(root)):
    if kept >= 500:  # about 150k tokens, under the 1 MB input limit
        break
    dirs[:] = sorted(d for d in dirs if d not in ("test", "tests", "idlelib", "site-packages"))
    for f in sorted(files):
        if not f.endswith(".py"):
            continue
        try:
            src = open(os.path.join(dirpath, f), encoding="utf-8").read()
            tree = ast.parse(src)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        lines = src.splitlines()
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and not node.decorator_list:
                seg = "\n".join(lines[node.lineno - 1 : node.end_lineno])
                if 200 <= len(seg) <= 4000 and "\t" not in seg:
                    out.write(json.dumps(seg) + "\n")
                    kept += 1
EOF

# Write the first K functions to FILE.
write() { # k file
  python3 - "$work/funcs.jsonl" "$1" "$2" <<'EOF'
import json, sys
funcs = [json.loads(l) for l in open(sys.argv[1])]
k = int(sys.argv[2])
open(sys.argv[3], "w").write("\n\n".join(funcs[:k]) + "\n")
EOF
}
# Subwords of FILE under MODEL (special tokens included).
count() { # file
  local err note
  err=$(CODESCOPE_ATTENTION_BUDGET_MB=1 "$bin" analyze --model "$model" --json "$1" 2>&1 >/dev/null || true)
  note=$(echo "$err" | grep -o 'window of [0-9]* tokens ([0-9]* dropped)' || true)
  if [ -z "$note" ]; then echo "no truncation notice: $err" >&2; exit 1; fi
  local w d
  w=$(echo "$note" | grep -o 'of [0-9]*' | grep -o '[0-9]*')
  d=$(echo "$note" | grep -o '([0-9]*' | grep -o '[0-9]*')
  echo $((w + d))
}

# Whole functions: bisect K on the subword count.
total=$(wc -l < "$work/funcs.jsonl")
lo=1 hi=$total
while [ $((hi - lo)) -gt 1 ]; do
  mid=$(((lo + hi) / 2))
  write "$mid" "$work/try.py"
  n=$(count "$work/try.py")
  if [ "$n" -le "$tokens" ]; then lo=$mid; else hi=$mid; fi
done
write "$lo" "$out"
n=$(count "$out")
echo "$out: $lo functions, $(wc -c < "$out") bytes, $n subwords ($model)"

/usr/bin/time -v -o "$work/time" "$bin" analyze --model "$model" --json "$out" > "$work/out.json" 2> "$work/err"
cat "$work/err"
python3 - "$work/out.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"truncated: {d['truncated']} subwords; analysed code tokens: {len(d['analysed_tokens'])}")
EOF
grep -E 'Maximum resident|Elapsed \(wall' "$work/time"
