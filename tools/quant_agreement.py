#!/usr/bin/env python3
"""Quantized against f32 GGUF weights on the bundled samples.

    tools/quant_agreement.py [BINARY] [MODEL] [MODE]

Runs `trace --json --surprisal` with `--weights MODE` (native, the default, or kernels)
and `--weights f32` on every file of assets/samples/ and prints, over all of them: top-1
next-token agreement, the largest attention difference, and the Pearson correlation of
the per-token surprisal (docs/performance.md).
"""
import json
import math
import subprocess
import sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent
binary = sys.argv[1] if len(sys.argv) > 1 else str(root / "target/debug/codescope")
model = sys.argv[2] if len(sys.argv) > 2 else "gemma3-270m"
mode = sys.argv[3] if len(sys.argv) > 3 else "native"


def trace(path, weights):
    out = subprocess.run(
        [binary, "--weights", weights, "--model", model, "trace", "--json", "--surprisal", str(path)],
        check=True, capture_output=True, cwd=root,
    ).stdout
    return json.loads(out)


def pearson(a, b):
    n = len(a)
    ma, mb = sum(a) / n, sum(b) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    va = sum((x - ma) ** 2 for x in a)
    vb = sum((y - mb) ** 2 for y in b)
    return cov / math.sqrt(va * vb)


agree = total = 0
worst_attn = 0.0
bits_n, bits_f = [], []
for path in sorted((root / "assets/samples").glob("*/*")):
    n, f = trace(path, mode), trace(path, "f32")
    assert [t["id"] for t in n["tokens"]] == [t["id"] for t in f["tokens"]]
    file_agree = 0
    for tn, tf in zip(n["top_next"], f["top_next"]):
        file_agree += tn[0]["id"] == tf[0]["id"]
    agree += file_agree
    total += len(n["top_next"])
    w = 0.0
    for ln, lf in zip(n["attention"], f["attention"]):
        for hn, hf in zip(ln, lf):
            for rn, rf in zip(hn, hf):
                w = max(w, max(abs(x - y) for x, y in zip(rn, rf)))
    worst_attn = max(worst_attn, w)
    pairs = [(x, y) for x, y in zip(n["surprisal"], f["surprisal"]) if x is not None and y is not None]
    bits_n += [x for x, _ in pairs]
    bits_f += [y for _, y in pairs]
    print(f"{path.relative_to(root)}: {len(n['tokens'])} tokens, top-1 {file_agree}/{len(n['top_next'])}, "
          f"attention max diff {w:.2e}", flush=True)
print(f"top-1 agreement {agree}/{total} = {agree / total:.4f}")
print(f"attention max abs difference {worst_attn:.2e}")
print(f"surprisal Pearson r {pearson(bits_n, bits_f):.6f} over {len(bits_n)} tokens")
