#!/usr/bin/env python3
"""HF transformers' DECODER outputs of the tiny encoder-decoders that
tiny_encdec_reference.py made (tests/fixtures/tiny_t5, tiny_t5_v11, tiny_bart,
tiny_plbart), with the snippet teacher-forced: checks codescope's `--stack decoder` and
`--stack cross`.

For each fixture the model is run as `model(input_ids=ids, labels=ids)` (eager attention),
so transformers itself builds the decoder input from the labels (T5's `_shift_right` with
`decoder_start_token_id`, BART's `shift_tokens_right` with it, PLBART's
`shift_tokens_right`, which wraps the last token, the language code, to the front). Writes
decoder_reference.json beside each fixture: text, ids (the encoder's input and the
labels), decoder_input_ids, the decoder's self-attention and cross-attention
(`[layer][head][query][key]`), `decoder_hidden_states`, the logits `[position][vocab]`
(6 significant digits) and, per decoder position p, `label_bits`: -log2 p(labels[p] |
encoder input, decoder input <= p), from the logits in float64.

BART's `final_logits_bias` is a buffer the random initialisation left at zero; so that the
check sees it, this script first sets it (seeded, deterministic) in tiny_bart's and
tiny_plbart's weight files, touching no other tensor (the encoder references stay valid).

The snippet is shorter than the encoder references' so that the files stay small; it is
long enough (26 subwords for the BPE fixtures) that the T5 decoder's one-directional
position buckets reach their logarithmic range and, with tiny_t5's 8 buckets and maximum
distance 20, the clamp (bucket 7 from distance 14 on). Deterministic. Run from the repository root:
  PY tools/reference/tiny_encdec_decoder_reference.py
with PY a Python with torch and transformers (README "Reference environment").
"""
import json
import math
import os

import torch
import transformers
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
from transformers import (BartForConditionalGeneration, PLBartForConditionalGeneration,
                          T5ForConditionalGeneration)

ROOT = "tests/fixtures"
TEXT = "def f(self, x):\n    return x.price in self\n"


def r6(x):
    if isinstance(x, list):
        return [r6(v) for v in x]
    return float(f"{x:.6g}")


def bpe_tokenizer(out):
    """The pipeline tiny_encdec_reference.py builds from vocab.json + merges.txt."""
    tk = Tokenizer(models.BPE.from_file(f"{out}/vocab.json", f"{out}/merges.txt"))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 1), trim_offsets=True,
                                                     add_prefix_space=False)
    return tk


def set_final_logits_bias(out):
    """A seeded, non-zero final_logits_bias in the fixture's weight file (idempotent)."""
    g = torch.Generator().manual_seed(7)
    st = f"{out}/model.safetensors"
    if os.path.exists(st):
        sd = load_file(st)
        bias = torch.randn(sd["final_logits_bias"].shape, generator=g) * 0.5
        sd["final_logits_bias"] = bias
        save_file(sd, st, metadata={"format": "pt"})
    else:
        path = f"{out}/pytorch_model.bin"
        sd = torch.load(path, weights_only=True)
        bias = torch.randn(sd["final_logits_bias"].shape, generator=g) * 0.5
        sd["final_logits_bias"] = bias
        torch.save(sd, path)
    return bias


def reference(out, cls, tk, bias=None):
    model = cls.from_pretrained(out, attn_implementation="eager").eval()
    if bias is not None:
        assert torch.equal(model.final_logits_bias, bias), "final_logits_bias did not load"
    ids = tk.encode(TEXT).ids
    x = torch.tensor([ids])
    with torch.no_grad():
        o = model(input_ids=x, labels=x, output_attentions=True, output_hidden_states=True)
    if cls is T5ForConditionalGeneration:
        dec = model._shift_right(x)
    elif cls is BartForConditionalGeneration:
        from transformers.models.bart.modeling_bart import shift_tokens_right
        dec = shift_tokens_right(x, model.config.pad_token_id, model.config.decoder_start_token_id)
    else:
        from transformers.models.plbart.modeling_plbart import shift_tokens_right
        dec = shift_tokens_right(x, model.config.pad_token_id)
    logits = o.logits[0]
    lp = torch.log_softmax(logits.double(), dim=-1)
    bits = [-lp[p, ids[p]].item() / math.log(2) for p in range(len(ids))]
    # The loss transformers computes from the same logits: the mean of the label bits in nats.
    assert abs(o.loss.item() - sum(bits) / len(bits) * math.log(2)) < 1e-4
    ref = {
        "text": TEXT,
        "ids": ids,
        "decoder_input_ids": dec[0].tolist(),
        "decoder_attention": r6([a[0].tolist() for a in o.decoder_attentions]),
        "cross_attention": r6([a[0].tolist() for a in o.cross_attentions]),
        "decoder_hidden_states": r6([h[0].tolist() for h in o.decoder_hidden_states]),
        "logits": r6(logits.tolist()),
        "label_bits": r6(bits),
        "environment": {"torch": torch.__version__, "transformers": transformers.__version__},
    }
    with open(f"{out}/decoder_reference.json", "w") as f:
        json.dump(ref, f)
    size = os.path.getsize(f"{out}/decoder_reference.json")
    print(out, len(ids), "tokens;", len(o.decoder_attentions), "decoder layers;", size, "bytes")
    assert size < 200_000, f"{out}/decoder_reference.json is {size} bytes"


def main():
    reference(f"{ROOT}/tiny_t5", T5ForConditionalGeneration, bpe_tokenizer(f"{ROOT}/tiny_t5"))
    reference(f"{ROOT}/tiny_t5_v11", T5ForConditionalGeneration, bpe_tokenizer(f"{ROOT}/tiny_t5_v11"))
    bias = set_final_logits_bias(f"{ROOT}/tiny_bart")
    reference(f"{ROOT}/tiny_bart", BartForConditionalGeneration, bpe_tokenizer(f"{ROOT}/tiny_bart"), bias)
    bias = set_final_logits_bias(f"{ROOT}/tiny_plbart")
    tk = Tokenizer.from_file(f"{ROOT}/tiny_plbart/tokenizer.json")
    reference(f"{ROOT}/tiny_plbart", PLBartForConditionalGeneration, tk, bias)


if __name__ == "__main__":
    main()
