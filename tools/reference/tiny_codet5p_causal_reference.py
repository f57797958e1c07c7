#!/usr/bin/env python3
"""The causal tests on the CROSS stack of the tiny CodeT5+ (tests/fixtures/tiny_codet5p)
with its RELEASED modelling code: the reference of tests/it/t5_bart_reference.rs's
cross-stack test for `codet5p`, as tiny_encdec_causal_reference.py is for T5, BART and
PLBART (the same snippet, hand-listed code tokens and edge sets, copied here because
that script needs transformers 5 and this one transformers 4.30.2).

The classes come from tiny_codet5p_reference.py (the released configuration_codet5p.py /
modeling_codet5p.py); the weights are the fixture's pytorch_model.bin. CodeT5+'s cross
stack is ONE layer, the last decoder block's cross-attention:
- knockout: for an edge set's code-token pairs, every (query subword i, key subword j)
  blocked as -inf before the softmax of that cross-attention (its `_attn` wrapped to add
  the mask), in every head: decoder position p = (i + 1) mod n may not attend to encoder
  position j;
- ablation: each of its heads in turn, zero and mean, a pre-hook on its `out_proj`
  (heads are contiguous slices of its input, after `_merge_heads`);
- per code token the bits of its subwords summed (subword i predicted at decoder
  position i), per head the mean change over identifiers, syntactic tokens and all.
The encoding is codescope's (`codescope --stack cross trace --json`; the model input).
Writes tests/fixtures/codet5p_causal_reference.json. Run from the repository root after
`cargo build`, with the venv tiny_codet5p_reference.py describes:
  PY tools/reference/tiny_codet5p_causal_reference.py
"""
import copy
import json
import math
import os
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiny_codet5p_reference import (CodeT5pConfig, CodeT5pEncoderDecoderModel,  # noqa: E402
                                    shift_tokens_right)

FIXTURE = "tests/fixtures/tiny_codet5p"
SNIPPET = "def add(a, b):\n    return a + b\n"
# (start, end, coarse class) of SNIPPET's code tokens, by hand (as in
# tiny_encdec_causal_reference.py).
CODE_TOKENS = [(0, 3, "syntactic"), (4, 7, "identifier"), (7, 8, "syntactic"),
               (8, 9, "identifier"), (9, 10, "syntactic"), (11, 12, "identifier"),
               (12, 13, "syntactic"), (13, 14, "syntactic"), (19, 25, "syntactic"),
               (26, 27, "identifier"), (28, 29, "syntactic"), (30, 31, "identifier")]
EDGE_SETS = {"syn-id": ("syntactic", "identifier"), "id-id": ("identifier", "identifier"),
             "syn-syn": ("syntactic", "syntactic")}


def r7(x):
    return float(f"{x:.7g}")


def encoding(path):
    out = subprocess.run(["target/debug/codescope", "--model", FIXTURE, "--stack", "cross",
                          "trace", "--json", path], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["tokens"]


def head_hook(head, mode, d):
    def hook(_module, args):
        x = args[0].clone()
        cols = slice(head * d, (head + 1) * d)
        if mode == "zero":
            x[..., cols] = 0
        else:
            x[..., cols] = x[..., cols].mean(dim=1, keepdim=True)
        return (x,) + args[1:]

    return hook


def token_bits(per_subword, subs):
    return [r7(sum(per_subword[i] for i in s)) if s else None for s in subs]


def class_means(base, changed):
    out = {}
    for cls in ("identifier", "syntactic", "all"):
        d = [c - b for (b, c, t) in zip(base, changed, CODE_TOKENS)
             if b is not None and c is not None and (cls == "all" or t[2] == cls)]
        out[cls] = r7(sum(d) / len(d)) if d else None
    return out


def main():
    cfg_json = json.load(open(f"{FIXTURE}/config.json"))
    config = CodeT5pConfig(**copy.deepcopy(cfg_json))
    model = CodeT5pEncoderDecoderModel(config).eval()
    model.load_state_dict({k: v.float() if v.dtype == torch.float16 else v
                           for k, v in torch.load(f"{FIXTURE}/pytorch_model.bin").items()})
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "snippet.py")
        with open(path, "w") as fh:
            fh.write(SNIPPET)
        enc = encoding(path)
    ids = [t["id"] for t in enc]
    n = len(ids)
    subs = [[i for i, t in enumerate(enc) if not t["special"] and max(t["start"], a) < min(t["end"], b)]
            for (a, b, _) in CODE_TOKENS]
    x = torch.tensor([ids])
    dec = shift_tokens_right(x, 0, config.decoder.decoder_start_token_id)
    mask = torch.ones_like(x)
    xattn = model.decoder.transformer.h[-1].crossattention
    heads = config.decoder.n_head
    hd = config.decoder.n_embd // heads

    def bits():
        with torch.no_grad():
            logits = model(input_ids=x, attention_mask=mask, decoder_input_ids=dec,
                           use_cache=False).logits[0]
        lp = torch.log_softmax(logits.double(), -1)
        return token_bits([-lp[p, ids[p]].item() / math.log(2) for p in range(n)], subs)

    base = bits()
    c = {"name": "tiny_codet5p", "ids": ids, "bits": base, "knockouts": [], "ablations": []}
    plain_attn = xattn._attn
    for edges, (qc, kc) in EDGE_SETS.items():
        pairs, tokens = set(), 0
        for q, (_, _, a) in enumerate(CODE_TOKENS):
            for k, (_, _, b) in enumerate(CODE_TOKENS):
                if q == k or a != qc or b != kc:
                    continue
                sp = {((i + 1) % n, j) for i in subs[q] for j in subs[k]}
                tokens += bool(sp)
                pairs |= sp
        calls = []

        def knocked(query, key, value, attention_mask=None, head_mask=None):
            calls.append(1)
            extra = torch.zeros(1, 1, query.shape[-2], key.shape[-2], dtype=torch.float32)
            for p, j in pairs:
                extra[0, 0, p, j] = float("-inf")
            am = extra if attention_mask is None else attention_mask + extra
            return plain_attn(query, key, value, am, head_mask)

        xattn._attn = knocked
        try:
            k_bits = bits()
        finally:
            xattn._attn = plain_attn
        assert calls == [1] and k_bits != base, edges
        c["knockouts"].append({"edges": edges, "token_pairs": tokens, "subword_pairs": len(pairs),
                               "bits": k_bits})
    for head in range(heads):
        for mode in ("zero", "mean"):
            h = xattn.out_proj.register_forward_pre_hook(head_hook(head, mode, hd))
            try:
                ab = bits()
            finally:
                h.remove()
            c["ablations"].append({"layer": 0, "head": head, "mode": mode, **class_means(base, ab)})
    out = {"environment": {"torch": torch.__version__, "transformers": "4.30.2",
                           "modelling": "released configuration_codet5p.py / modeling_codet5p.py"},
           "cross": {"snippet": SNIPPET, "code_tokens": CODE_TOKENS, "cases": [c]}}
    with open("tests/fixtures/codet5p_causal_reference.json", "w") as fh:
        json.dump(out, fh, separators=(",", ":"))
        fh.write("\n")
    print("tiny_codet5p cross", n, "subwords", file=sys.stderr)


if __name__ == "__main__":
    main()
