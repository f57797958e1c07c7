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

Positions here are the DECODER's (p reads labels[p - 1] and predicts labels[p]); the test
moves them to codescope's read order. Bits: -log2 softmax(logits[p])[labels[p]] for every
p. Writes tests/fixtures/encdec_causal_reference.json. Deterministic; run from the
repository root:
  PY tools/reference/tiny_encdec_causal_reference.py
with PY a Python with torch and transformers (README "Reference environment").
"""
import json
import math
import sys

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
    out = {"environment": {"torch": torch.__version__, "transformers": transformers.__version__},
           "cases": [case(name, cls) for name, cls in FIXTURES]}
    with open(f"{ROOT}/encdec_causal_reference.json", "w") as fh:
        json.dump(out, fh, separators=(",", ":"))
        fh.write("\n")


if __name__ == "__main__":
    main()
