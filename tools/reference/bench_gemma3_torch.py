#!/usr/bin/env python3
"""torch timings for Gemma 3 270M (the packaged GGUF dequantized to float32 by
transformers), mirroring benches/gemma3.rs: the same 128 ids, eager attention with
output_attentions=True (capture), logits for the last position only
(logits_to_keep=1) and for all positions. Best of --repeat runs after a warm-up.

  /work/ref/venv/bin/python tools/reference/bench_gemma3_torch.py --threads 2
"""
import argparse
import json
import os
import time

import torch
from transformers import AutoModelForCausalLM


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", default="/work/ref/gemma/gemma-3-270m-q4_k_m.gguf")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_grad_enabled(False)
    ids = next(c["ids"] for c in json.load(open("tests/fixtures/gemma3_reference.json"))["cases"]
               if len(c["ids"]) >= 128)[:128]
    d, f = os.path.split(args.gguf)
    t0 = time.perf_counter()
    m = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32,
                                             attn_implementation="eager").eval()
    print(f"load (from GGUF, dequantize): {time.perf_counter() - t0:.2f} s")
    x = torch.tensor([ids])
    for name, kw in [("capture, last logits", dict(logits_to_keep=1)), ("capture, all logits", {})]:
        m(x, output_attentions=True, **kw)
        best = min(timeit(lambda: m(x, output_attentions=True, **kw)) for _ in range(args.repeat))
        print(f"{name}: {best * 1000:.0f} ms ({args.threads} threads)")


def timeit(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
