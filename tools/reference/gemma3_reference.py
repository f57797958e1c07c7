#!/usr/bin/env python3
"""Gemma 3 270M (the packaged Q4_K_M GGUF) in Hugging Face transformers, dequantized to
float32 by transformers' own GGUF loader: the reference of tests/gemma3_reference.rs.

For each snippet (real CPython / JDK code from tests/fixtures/snippets, plus one input
longer than the 512-token sliding window), writes to tests/fixtures/gemma3_reference.json:
- ids from transformers' GGUF tokenizer (BOS included),
- surprisal in bits per position (null first) and the top-1 next-token id,
- top-5 next tokens at a few positions,
- samples of eager attention probabilities and output_hidden_states (fixed seeded
  positions; every layer), with per-layer checksums of the full tensors,
- a few raw logits.

Run from the repository root (needs the assembled GGUF; ~2 min on 2 cores):
  /work/ref/venv/bin/python tools/reference/gemma3_reference.py [--gguf PATH]
"""
import argparse
import json
import math
import os
import random

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

SNIPPETS = [
    "py_shlex_join.py",
    "py_textwrap_indent.py",
    "java_arraylist_equalsarraylist.java",
    "java_arraylist_indexof.java",
    "py_shlex_class_long.py",  # > 512 tokens: exercises the sliding-window layers
]
MAX_TOKENS = 900


def r7(x):
    return float(f"{x:.7g}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", default="/work/ref/gemma/gemma-3-270m-q4_k_m.gguf")
    ap.add_argument("--out", default="tests/fixtures/gemma3_reference.json")
    args = ap.parse_args()
    d, f = os.path.split(args.gguf)
    torch.set_grad_enabled(False)
    tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
    model = AutoModelForCausalLM.from_pretrained(
        d, gguf_file=f, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    out = {"gguf_sha256": "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
           "transformers": __import__("transformers").__version__, "cases": []}
    for name in SNIPPETS:
        text = open(os.path.join("tests/fixtures/snippets", name), encoding="utf-8").read()
        ids = tok(text)["input_ids"][:MAX_TOKENS]
        n = len(ids)
        o = model(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
        logits = o.logits[0].double()
        logp = torch.log_softmax(logits, -1)
        bits = [None] + [r7(-logp[i - 1, ids[i]].item() / math.log(2)) for i in range(1, n)]
        top1 = logits.argmax(-1).tolist()
        rng = random.Random(n)
        top5 = {}
        for p in sorted(rng.sample(range(n), min(8, n))):
            pr = torch.softmax(logits[p], -1)
            v, i = pr.topk(5)
            top5[str(p)] = [[int(a), r7(b)] for a, b in zip(i.tolist(), v.tolist())]
        att = []
        for l, a in enumerate(o.attentions):
            a = a[0].double()  # [heads, n, n]
            samples = []
            for _ in range(40):
                h = rng.randrange(a.shape[0]); q = rng.randrange(n); k = rng.randrange(q + 1)
                samples.append([h, q, k, r7(a[h, q, k].item())])
            # near the diagonal, where the mass is
            for _ in range(20):
                h = rng.randrange(a.shape[0]); q = rng.randrange(n); k = max(0, q - rng.randrange(4))
                samples.append([h, q, k, r7(a[h, q, k].item())])
            w = torch.arange(n, dtype=torch.float64)
            att.append({"samples": samples,
                        "checksum": r7((a * (1 + w.view(1, -1, 1) % 7) * (1 + w.view(1, 1, -1) % 5)).sum().item())})
        hid = []
        for l, h in enumerate(o.hidden_states):
            h = h[0].double()
            samples = []
            for _ in range(40):
                p = rng.randrange(n); j = rng.randrange(h.shape[1])
                samples.append([p, j, r7(h[p, j].item())])
            hid.append({"samples": samples, "abs_sum": r7(h.abs().sum().item()),
                        "max_abs": r7(h.abs().max().item())})
        raw = [[p, j, r7(logits[p, j].item())] for p, j in
               [(rng.randrange(n), rng.randrange(logits.shape[1])) for _ in range(20)]]
        out["cases"].append({"name": name, "ids": ids, "surprisal": bits, "top1": top1,
                             "top5": top5, "attention": att, "hidden": hid, "logits": raw})
        print(name, n, "tokens")
    with open(args.out, "w") as fh:
        json.dump(out, fh, separators=(",", ":"))
    print("wrote", args.out, os.path.getsize(args.out), "bytes")


if __name__ == "__main__":
    main()
