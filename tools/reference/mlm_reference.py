#!/usr/bin/env python3
"""Masked-LM heads and the whole-code-token pseudo-log-likelihood in transformers.

Writes tests/fixtures/tiny_bert/ (a tiny random BertForMaskedLM: config.json, a small
WordPiece vocab.txt, model.safetensors with `cls.predictions.*`) and
tests/fixtures/mlm_reference.json: for it and for tests/fixtures/tiny_roberta (a
RobertaForMaskedLM with `lm_head.*`, made by tiny_roberta_reference.py) on one Python
snippet:

- `ids`, and the masked-LM logits of the unmasked input (`logits`, 6 significant digits);
- per code token (spans from a regex split of the snippet into names and punctuation,
  the snippet having neither strings nor numbers, and `keyword.iskeyword` for the
  class): every subword overlapping its span replaced by the mask token at once, one
  pass, `-log2 p(original subword)` summed over those subwords (`pll`);
- the same with each head's output zeroed in turn (a forward pre-hook on the attention
  output dense, as causal_reference.py ablates): per head the mean over identifiers and
  over syntactic tokens of `pll_ablated - pll` (`ablation`).

Deterministic, ~5 s. Run from the repository root in a venv outside it:
  python -m venv /tmp/venv-c2 && /tmp/venv-c2/bin/pip install torch transformers==5.24.0
  /tmp/venv-c2/bin/python tools/reference/mlm_reference.py
Checked by tests/it/mlm_reference.rs.
"""
import json
import keyword
import math
import os
import re

import torch
import transformers
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from transformers import BertConfig, BertForMaskedLM, RobertaForMaskedLM

TEXT = "def total(self, items):\n    return sum(x.price for x in items)\n"
BERT = "tests/fixtures/tiny_bert"
ROBERTA = "tests/fixtures/tiny_roberta"
OUT = "tests/fixtures/mlm_reference.json"


def r6(x):
    if isinstance(x, list):
        return [r6(v) for v in x]
    return float(f"{x:.6g}")


def code_tokens(text):
    out = []
    for m in re.finditer(r"\w+|[^\w\s]", text):
        w = m.group(0)
        ident = bool(re.match(r"\w", w)) and not keyword.iskeyword(w)
        out.append({"text": w, "span": [m.start(), m.end()],
                    "coarse": "identifier" if ident else "syntactic"})
    return out


def make_bert():
    os.makedirs(BERT, exist_ok=True)
    words = ["def", "total", "self", "items", "return", "sum", "for", "in", "x", "pr", "##ice",
             "##s", "item", "to", "##tal", "su", "##m"]
    chars = sorted(set(c for c in TEXT if not c.isspace())) + list("abcdefghijklmnopqrstuvwxyz")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    for w in chars + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"] + words:
        if w not in vocab:
            vocab.append(w)
    with open(f"{BERT}/vocab.txt", "w") as f:
        f.write("\n".join(vocab) + "\n")
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                     num_attention_heads=4, intermediate_size=64, max_position_embeddings=64,
                     type_vocab_size=2, hidden_act="gelu")
    torch.manual_seed(1)
    model = BertForMaskedLM(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    cfg.architectures = ["BertForMaskedLM"]
    model.save_pretrained(BERT)
    tk = Tokenizer(models.WordPiece.from_file(f"{BERT}/vocab.txt", unk_token="[UNK]"))
    tk.normalizer = normalizers.BertNormalizer(lowercase=True)
    tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tk.post_processor = processors.BertProcessing(("[SEP]", 3), ("[CLS]", 2))
    return model, tk, 4


def load_roberta():
    model = RobertaForMaskedLM.from_pretrained(ROBERTA).eval()
    tk = Tokenizer(models.BPE.from_file(f"{ROBERTA}/vocab.json", f"{ROBERTA}/merges.txt"))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=True,
                                                     add_prefix_space=False)
    mask = json.load(open(f"{ROBERTA}/vocab.json"))["<mask>"]
    return model, tk, mask


def logits_of(model, ids, hook=None):
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0].double()


def pll(model, ids, groups, mask):
    out = []
    for g in groups:
        if not g:
            out.append(None)
            continue
        m = list(ids)
        for p in g:
            m[p] = mask
        lp = torch.log_softmax(logits_of(model, m), dim=-1)
        out.append(sum(-lp[p, ids[p]].item() / math.log(2) for p in g))
    return out


def out_dense(model, layer):
    enc = model.bert if hasattr(model, "bert") else model.roberta
    return enc.encoder.layer[layer].attention.output.dense


def case(name, model, tk, mask):
    model.config._attn_implementation = "eager"
    enc = tk.encode(TEXT)
    ids = enc.ids
    special = enc.special_tokens_mask
    toks = code_tokens(TEXT)
    groups = [[i for i, (a, b) in enumerate(enc.offsets)
               if not special[i] and a < t["span"][1] and t["span"][0] < b] for t in toks]
    base = pll(model, ids, groups, mask)
    cfg = model.config
    heads, d = cfg.num_attention_heads, cfg.hidden_size // cfg.num_attention_heads
    ablation = []
    for layer in range(cfg.num_hidden_layers):
        for head in range(heads):
            def hook(_m, args, head=head):
                x = args[0].clone()
                x[..., head * d:(head + 1) * d] = 0
                return (x,) + args[1:]
            h = out_dense(model, layer).register_forward_pre_hook(hook)
            try:
                knocked = pll(model, ids, groups, mask)
            finally:
                h.remove()
            row = {"layer": layer + 1, "head": head + 1}
            for cls in ["identifier", "syntactic"]:
                v = [k - b for k, b, t in zip(knocked, base, toks)
                     if t["coarse"] == cls and b is not None]
                row[cls] = sum(v) / len(v)
            ablation.append(row)
    for t, b, g in zip(toks, base, groups):
        t["pll"] = b
        t["subwords"] = g
    return name, {
        "ids": ids,
        "mask": mask,
        "logits": r6(logits_of(model, ids).tolist()),
        "tokens": toks,
        "ablation": ablation,
    }


def main():
    cases = dict([case("tiny_bert", *make_bert()), case("tiny_roberta", *load_roberta())])
    ref = {"text": TEXT, "cases": cases,
           "environment": {"torch": torch.__version__, "transformers": transformers.__version__}}
    with open(OUT, "w") as f:
        json.dump(ref, f)
    for k, v in cases.items():
        print(k, len(v["ids"]), "ids", [round(t["pll"], 3) for t in v["tokens"]][:6])


if __name__ == "__main__":
    main()
