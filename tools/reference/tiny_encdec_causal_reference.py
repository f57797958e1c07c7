#!/usr/bin/env python3
"""Interventions on the DECODER stack of the tiny encoder-decoders in Hugging Face
transformers: the reference of tests/it/t5_bart_reference.rs's causal tests (knockout,
head ablation and the logit lens with `--stack decoder`, docs/METHODS.md 8).

For each fixture (tests/fixtures/tiny_t5, tiny_t5_v11, tiny_bart, tiny_plbart) on the ids
of its decoder_reference.json (tiny_encdec_decoder_reference.py), teacher-forced as
`model(input_ids=ids, labels=ids)` (eager attention, f32), so transformers builds the
decoder input from the labels itself:

- knockout: in the decoder's SELF-attention of `layers` and `heads`, decoder position p
  may not attend to the decoder positions `rows[p]` (1 and p // 2, never p itself). An
  attention function registered with transformers' AttentionInterface wraps the family's
  own `eager_attention_forward` and adds -inf at those entries to the mask it is given,
  for the causal (decoder self-attention) modules only; the encoder's self-attention and
  the cross-attention run unchanged;
- ablation: a forward pre-hook on the decoder self-attention's output projection (T5's
  `SelfAttention.o`, BART's `self_attn.out_proj`) replaces head h's slice of its input by
  zeros, or by its mean over the positions;
- lens: decoder_hidden_states[l] (the residual stream entering decoder layer l; 0 = the
  decoder's embeddings) through the decoder's final norm (T5's `final_layer_norm`; BART
  has none), T5's `d_model ** -0.5` rescale when the config asks for it, and the LM head
  (BART: plus `final_logits_bias`), the model's own logits as the last layer: per decoder
  position p >= 1 the probability and rank of labels[p] and the top id.

The CROSS stack (`--stack cross`, the decoder's cross-attention: queries decoder
positions, keys encoder positions) through the binary's causal tests, on SNIPPET:

- its encoding is codescope's (`codescope --stack cross trace --json`: ids, subword
  spans, special tokens; the model input, not a result), its code tokens are listed here
  by hand (CODE_TOKENS: spans and classes), and a subword belongs to a code token when
  their spans overlap (special tokens to none);
- knockout: for an edge set over code tokens (class pairs: syntactic queries and
  identifier keys for `syn-id`, ...; never a token with itself), every (query subword i,
  key subword j) of its token pairs is blocked as -inf in the CROSS-attention of every
  decoder layer and head: decoder position p = i + 1 (the position that reads s_i) may
  not attend to encoder position j. The same attention function, for the cross-attention
  modules only (the decoder's self-attention and the encoder run unchanged);
- ablation: every decoder layer's cross-attention heads in turn (zero and mean), the same
  pre-hook on the cross-attention's output projection (T5's `EncDecAttention.o`, BART's
  `encoder_attn.out_proj`);
- per code token the bits of its subwords summed (subword i predicted at decoder
  position i), and per head the mean change over identifiers, syntactic tokens and all.

Patching on the DECODER stack (`patch --stack decoder`), on SNIPPET and its twin TWIN
(`rename:shuffle`: `a` and `b` swapped; the twin's encoding is codescope's too): the
patched positions P are the subwords of the renamed tokens (by span, as above); for each
hidden state l (output_hidden_states numbering: 0 the decoder's embeddings, the last the
decoder's last hidden state), A's pass (`model(input_ids=A, labels=A)`: A's encoder, A's
decoder) with the decoder's residual stream at l taken from B's pass at the decoder
positions p = i + 1 reading the subwords i in P: a forward pre-hook on decoder layer l
(on the LM head's input for the last hidden state, T5's rescale included on both sides)
replaces those rows by the same hook point's rows recorded in B's pass. Per code token
the bits of A's ids in A, in B (B's tokens have A's spans) and patched.

Positions here are the DECODER's (p reads labels[p - 1] and predicts labels[p]); the test
moves them to codescope's read order. Bits: -log2 softmax(logits[p])[labels[p]] for every
p. Writes tests/fixtures/encdec_causal_reference.json. Deterministic; run from the
repository root (after `cargo build`, for the cross stack's encoding):
  PY tools/reference/tiny_encdec_causal_reference.py
with PY a Python with torch and transformers (README "Reference environment").
"""
import json
import math
import os
import subprocess
import sys
import tempfile

import torch
import transformers
from transformers import (AttentionInterface, BartForConditionalGeneration,
                          PLBartForConditionalGeneration, T5ForConditionalGeneration)
from transformers.masking_utils import AttentionMaskInterface, eager_mask

# The decoder-only reference's rounding, knockout rows and ablation hook (this directory).
from causal_reference import head_hook, knock_rows, r7

ROOT = "tests/fixtures"
FIXTURES = [("tiny_t5", T5ForConditionalGeneration), ("tiny_t5_v11", T5ForConditionalGeneration),
            ("tiny_bart", BartForConditionalGeneration),
            ("tiny_plbart", PLBartForConditionalGeneration)]


def is_t5(model):
    return isinstance(model, T5ForConditionalGeneration)


def dec_layers(model):
    return model.decoder.block if is_t5(model) else model.model.decoder.layers


def self_out(model, layer):
    b = dec_layers(model)[layer]
    return b.layer[0].SelfAttention.o if is_t5(model) else b.self_attn.out_proj


def run(model, ids, **kw):
    x = torch.tensor([ids])
    with torch.no_grad():
        return model(input_ids=x, labels=x, **kw)


def bits(logits, ids):
    lp = torch.log_softmax(logits.double(), dim=-1)
    return [r7(-lp[p, ids[p]].item() / math.log(2)) for p in range(len(ids))]


def knocked(model, ids, layers, heads, rows):
    eager = sys.modules[type(model).__module__].eager_attention_forward
    seen = []

    def attn(module, query, key, value, attention_mask, **kw):
        if module.is_causal:
            seen.append(module.layer_idx)
            if module.layer_idx in layers:
                n, m = query.shape[-2], key.shape[-2]
                extra = torch.zeros(1, query.shape[1], n, m, dtype=query.dtype)
                for h in heads:
                    for p, keys in enumerate(rows):
                        for q in keys:
                            extra[0, h, p, q] = float("-inf")
                assert attention_mask is not None and attention_mask.dtype == query.dtype
                attention_mask = attention_mask[:, :, :, :m] + extra
        return eager(module, query, key, value, attention_mask, **kw)

    AttentionInterface.register("knockout_ref", attn)
    AttentionMaskInterface.register("knockout_ref", eager_mask)
    model.set_attn_implementation("knockout_ref")
    try:
        logits = run(model, ids).logits[0]
        assert sorted(seen) == list(range(len(dec_layers(model)))), seen
        return logits
    finally:
        model.set_attn_implementation("eager")


def cross_modules(model):
    if is_t5(model):
        return [b.layer[1].EncDecAttention for b in model.decoder.block]
    return [l.encoder_attn for l in model.model.decoder.layers]


def cross_out(model, layer):
    m = cross_modules(model)[layer]
    return m.o if is_t5(model) else m.out_proj


def cross_knocked(model, ids, pairs):
    """Logits with decoder position p barred from encoder position j for (p, j) in pairs,
    in the cross-attention of every decoder layer and head."""
    eager = sys.modules[type(model).__module__].eager_attention_forward
    cross = {id(m) for m in cross_modules(model)}
    seen = []

    def attn(module, query, key, value, attention_mask, **kw):
        if id(module) in cross:
            seen.append(module)
            n, m = query.shape[-2], key.shape[-2]
            extra = torch.zeros(1, query.shape[1], n, m, dtype=query.dtype)
            for p, j in pairs:
                extra[0, :, p, j] = float("-inf")
            attention_mask = extra if attention_mask is None else attention_mask[:, :, :, :m] + extra
        return eager(module, query, key, value, attention_mask, **kw)

    AttentionInterface.register("cross_knockout_ref", attn)
    AttentionMaskInterface.register("cross_knockout_ref", eager_mask)
    model.set_attn_implementation("cross_knockout_ref")
    try:
        logits = run(model, ids).logits[0]
        assert len(seen) == len(cross), len(seen)
        return logits
    finally:
        model.set_attn_implementation("eager")


def cross_ablated(model, ids, layer, head, mode, d):
    h = cross_out(model, layer).register_forward_pre_hook(head_hook(head, mode, d))
    try:
        return run(model, ids).logits[0]
    finally:
        h.remove()


SNIPPET = "def add(a, b):\n    return a + b\n"
TWIN = "def add(b, a):\n    return b + a\n"
# CODE_TOKENS indices of the renamed tokens: a, b, a, b.
RENAMED = [3, 5, 9, 11]
# (start, end, coarse class) of SNIPPET's code tokens, by hand.
CODE_TOKENS = [(0, 3, "syntactic"), (4, 7, "identifier"), (7, 8, "syntactic"),
               (8, 9, "identifier"), (9, 10, "syntactic"), (11, 12, "identifier"),
               (12, 13, "syntactic"), (13, 14, "syntactic"), (19, 25, "syntactic"),
               (26, 27, "identifier"), (28, 29, "syntactic"), (30, 31, "identifier")]
EDGE_SETS = {"syn-id": ("syntactic", "identifier"), "id-id": ("identifier", "identifier"),
             "syn-syn": ("syntactic", "syntactic")}


def encoding(name, path, stack="cross"):
    out = subprocess.run(["target/debug/codescope", "--model", f"{ROOT}/{name}", "--stack", stack,
                          "trace", "--json", path], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["tokens"]


def token_bits(per_subword, subs):
    return [r7(sum(per_subword[i] for i in s)) if s else None for s in subs]


def class_means(base, changed):
    out = {}
    for cls in ("identifier", "syntactic", "all"):
        d = [c - b for (b, c, t) in zip(base, changed, CODE_TOKENS)
             if b is not None and c is not None and (cls == "all" or t[2] == cls)]
        out[cls] = sum(d) / len(d) if d else None
    return out


def cross_case(name, cls, path):
    d = f"{ROOT}/{name}"
    enc = encoding(name, path)
    ids = [t["id"] for t in enc]
    n = len(ids)
    subs = [[i for i, t in enumerate(enc) if not t["special"] and max(t["start"], a) < min(t["end"], b)]
            for (a, b, _) in CODE_TOKENS]
    model = cls.from_pretrained(d, attn_implementation="eager").eval()
    cfg = model.config
    heads = cfg.num_heads if is_t5(model) else cfg.decoder_attention_heads
    hd = cfg.d_kv if is_t5(model) else cfg.d_model // heads
    raw = lambda logits: [-torch.log_softmax(logits.double(), -1)[p, ids[p]].item() / math.log(2)
                          for p in range(n)]
    base_sub = raw(run(model, ids).logits[0])
    base = token_bits(base_sub, subs)
    c = {"name": name, "ids": ids, "bits": base, "knockouts": [], "ablations": []}
    for edges, (qc, kc) in EDGE_SETS.items():
        pairs = set()
        tokens = 0
        for q, (_, _, a) in enumerate(CODE_TOKENS):
            for k, (_, _, b) in enumerate(CODE_TOKENS):
                if q == k or a != qc or b != kc:
                    continue
                sp = {((i + 1) % n, j) for i in subs[q] for j in subs[k]}
                tokens += bool(sp)
                pairs |= sp
        knocked = token_bits(raw(cross_knocked(model, ids, sorted(pairs))), subs)
        assert knocked != base, (name, edges)
        c["knockouts"].append({"edges": edges, "token_pairs": tokens, "subword_pairs": len(pairs),
                               "bits": knocked})
    for layer in range(len(dec_layers(model))):
        for head in range(heads):
            for mode in ("zero", "mean"):
                ab = token_bits(raw(cross_ablated(model, ids, layer, head, mode, hd)), subs)
                m = class_means(base, ab)
                c["ablations"].append({"layer": layer, "head": head, "mode": mode,
                                       **{k: (None if v is None else r7(v)) for k, v in m.items()}})
    print(name, "cross", n, "subwords", file=sys.stderr)
    return c


def hook_points(model):
    """The modules whose input is decoder hidden state l (the layers, then the LM head)."""
    return list(dec_layers(model)) + [model.lm_head]


def recorded(model, ids):
    """Each hook point's input hidden states in a pass over ids."""
    got = []

    def rec(_module, args, kwargs):
        h = args[0] if args else kwargs["hidden_states"]
        got.append(h.clone())

    hs = [m.register_forward_pre_hook(rec, with_kwargs=True) for m in hook_points(model)]
    try:
        logits = run(model, ids).logits[0]
    finally:
        for h in hs:
            h.remove()
    assert len(got) == len(hook_points(model))
    return got, logits


def patched(model, ids, point, rows, source):
    def swap(_module, args, kwargs):
        if args:
            h = args[0].clone()
            h[0, rows] = source[0, rows]
            return (h,) + tuple(args[1:]), kwargs
        h = kwargs["hidden_states"].clone()
        h[0, rows] = source[0, rows]
        kwargs["hidden_states"] = h
        return args, kwargs

    h = hook_points(model)[point].register_forward_pre_hook(swap, with_kwargs=True)
    try:
        return run(model, ids).logits[0]
    finally:
        h.remove()


def patch_case(name, cls, path_a, path_b):
    d = f"{ROOT}/{name}"
    enc_a, enc_b = encoding(name, path_a, "decoder"), encoding(name, path_b, "decoder")
    ids_a, ids_b = [t["id"] for t in enc_a], [t["id"] for t in enc_b]
    n = len(ids_a)
    assert len(ids_b) == n, name
    span_subs = lambda enc: [[i for i, t in enumerate(enc)
                              if not t["special"] and max(t["start"], a) < min(t["end"], b)]
                             for (a, b, _) in CODE_TOKENS]
    subs_a, subs_b = span_subs(enc_a), span_subs(enc_b)
    assert subs_a == subs_b, name
    positions = sorted({i for t in RENAMED for i in subs_a[t]})
    rows = sorted({(i + 1) % n for i in positions})
    model = cls.from_pretrained(d, attn_implementation="eager").eval()
    raw = lambda logits, ids: [-torch.log_softmax(logits.double(), -1)[p, ids[p]].item() / math.log(2)
                               for p in range(n)]
    rec_b, logits_b = recorded(model, ids_b)
    c = {"name": name, "ids_a": ids_a, "ids_b": ids_b, "positions": positions,
         "bits_a": token_bits(raw(run(model, ids_a).logits[0], ids_a), subs_a),
         "bits_b": token_bits(raw(logits_b, ids_b), subs_b), "patched": []}
    for point in range(len(hook_points(model))):
        c["patched"].append(token_bits(raw(patched(model, ids_a, point, rows, rec_b[point]), ids_a),
                                       subs_a))
    assert all(p != c["bits_a"] for p in c["patched"]), name
    print(name, "patch", n, "subwords", file=sys.stderr)
    return c


def ablated(model, ids, layer, head, mode, d):
    h = self_out(model, layer).register_forward_pre_hook(head_hook(head, mode, d))
    try:
        return run(model, ids).logits[0]
    finally:
        h.remove()


def read_out(model, h):
    with torch.no_grad():
        if is_t5(model):
            h = model.decoder.final_layer_norm(h)
            if model.config.scale_decoder_outputs:
                h = h * (model.config.d_model ** -0.5)
            return model.lm_head(h)
        return model.lm_head(h) + model.final_logits_bias


def lens(model, ids):
    out = run(model, ids, output_hidden_states=True)
    hs = out.decoder_hidden_states
    n_layers = len(dec_layers(model))
    layers = []
    for l in range(n_layers + 1):
        z = read_out(model, hs[l])[0] if l < n_layers else out.logits[0]
        p = torch.softmax(z.double(), dim=-1)
        rows = []
        for pos in range(1, len(ids)):
            t = ids[pos]
            rows.append([r7(p[pos, t].item()), int((z[pos] > z[pos, t]).sum().item()) + 1,
                         int(z[pos].argmax().item())])
        layers.append(rows)
    return layers


def case(name, cls):
    d = f"{ROOT}/{name}"
    ids = json.load(open(f"{d}/decoder_reference.json"))["ids"]
    model = cls.from_pretrained(d, attn_implementation="eager").eval()
    cfg = model.config
    heads = cfg.num_heads if is_t5(model) else cfg.decoder_attention_heads
    hd = cfg.d_kv if is_t5(model) else cfg.d_model // heads
    n_layers = len(dec_layers(model))
    rows = knock_rows(len(ids))
    k_heads = [0, heads - 1]
    c = {
        "name": name,
        "ids": ids,
        "bits": bits(run(model, ids).logits[0], ids),
        "knockout": {
            "layers": [n_layers - 1], "heads": k_heads, "rows": rows,
            "bits": bits(knocked(model, ids, {n_layers - 1}, k_heads, rows), ids),
        },
        "ablations": [],
        "lens": lens(model, ids),
    }
    for layer, head, mode in [(0, 1 % heads, "zero"), (n_layers - 1, 0, "mean")]:
        c["ablations"].append({
            "layer": layer, "head": head, "mode": mode,
            "bits": bits(ablated(model, ids, layer, head, mode, hd), ids),
        })
    # The knockout and the ablations must change something, else the check is empty.
    assert c["knockout"]["bits"] != c["bits"], name
    assert all(a["bits"] != c["bits"] for a in c["ablations"]), name
    print(name, len(ids), "tokens", file=sys.stderr)
    return c


def main():
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "snippet.py")
        with open(path, "w") as fh:
            fh.write(SNIPPET)
        cross = [cross_case(name, cls, path) for name, cls in FIXTURES]
        twin = os.path.join(tmp, "twin.py")
        with open(twin, "w") as fh:
            fh.write(TWIN)
        patch = [patch_case(name, cls, path, twin) for name, cls in FIXTURES]
    out = {"environment": {"torch": torch.__version__, "transformers": transformers.__version__},
           "cases": [case(name, cls) for name, cls in FIXTURES],
           "cross": {"snippet": SNIPPET, "code_tokens": CODE_TOKENS, "cases": cross},
           "patch": {"snippet": SNIPPET, "twin": TWIN, "renamed": RENAMED, "cases": patch}}
    with open(f"{ROOT}/encdec_causal_reference.json", "w") as fh:
        json.dump(out, fh, separators=(",", ":"))
        fh.write("\n")


if __name__ == "__main__":
    main()
