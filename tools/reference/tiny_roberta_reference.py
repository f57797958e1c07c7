#!/usr/bin/env python3
"""A tiny random RoBERTa laid out like microsoft/codebert-base on the hub (no
tokenizer.json, no safetensors: vocab.json + merges.txt + pytorch_model.bin), with HF
transformers' outputs on a code snippet. Checks codescope's RoBERTa path end to end:
slow-tokenizer fallback (byte-level BPE), PyTorch pickle weights, `roberta.` prefix,
position ids offset by pad_token_id + 1.

Writes tests/fixtures/tiny_roberta/{config.json,vocab.json,merges.txt,pytorch_model.bin,
reference.json}. Run from the repository root:
  /work/ref/venv/bin/python tools/reference/tiny_roberta_reference.py
"""
import json
import os

import torch
import transformers
from transformers import RobertaConfig, RobertaForMaskedLM

OUT = "tests/fixtures/tiny_roberta"
TEXT = 'def total(self, items):\n    return sum(x.price for x in items)  # 合計 é\n'


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def r7(x):
    """Round nested lists to 7 significant digits (keeps the fixture small)."""
    if isinstance(x, list):
        return [r7(v) for v in x]
    return float(f"{x:.7g}")


def main():
    os.makedirs(OUT, exist_ok=True)
    alphabet = [bytes_to_unicode()[b] for b in range(256)]
    vocab = ["<s>", "<pad>", "</s>", "<unk>"] + alphabet
    merges = [("d", "e"), ("de", "f"), ("Ġ", "x"), ("r", "e"), ("re", "t"), ("ret", "u"),
              ("retu", "r"), ("retur", "n"), ("Ġ", "return"), ("s", "e"), ("se", "l"),
              ("sel", "f"), ("i", "n"), ("Ġ", "in"), ("Ġ", "Ġ"), ("ĠĠ", "ĠĠ")]
    for a, b in merges:
        vocab.append(a + b)
    vocab.append("<mask>")
    with open(f"{OUT}/vocab.json", "w") as f:
        json.dump({t: i for i, t in enumerate(vocab)}, f, ensure_ascii=False)
    with open(f"{OUT}/merges.txt", "w") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    cfg = RobertaConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=64, max_position_embeddings=130,
                        type_vocab_size=1, pad_token_id=1, bos_token_id=0, eos_token_id=2)
    torch.manual_seed(0)
    model = RobertaForMaskedLM(cfg).eval()  # task-head checkpoint: weights under `roberta.`
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    # A PyTorch pickle, as older hub checkpoints (CodeBERT) ship.
    cfg.architectures = ["RobertaForMaskedLM"]
    cfg.to_json_file(f"{OUT}/config.json")
    torch.save(model.state_dict(), f"{OUT}/pytorch_model.bin")
    # The slow-file tokenizer as transformers' RoBERTa fast tokenizer builds it.
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, decoders
    tk = Tokenizer(models.BPE.from_file(f"{OUT}/vocab.json", f"{OUT}/merges.txt"))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=True, add_prefix_space=False)
    enc = tk.encode(TEXT)
    ids = enc.ids
    cum = [0]
    for ch in TEXT:
        cum.append(cum[-1] + len(ch.encode("utf-8")))
    offsets = [[cum[a], cum[b]] for a, b in enc.offsets]
    model = RobertaForMaskedLM(cfg).eval()
    model.load_state_dict(torch.load(f"{OUT}/pytorch_model.bin"))
    model.config._attn_implementation = "eager"
    with torch.no_grad():
        o = model.roberta(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
    ref = {
        "text": TEXT,
        "ids": ids,
        "offsets": offsets,
        "attention": r7([a[0].tolist() for a in o.attentions]),
        "hidden_states": r7([h[0].tolist() for h in o.hidden_states]),
        "environment": {"torch": torch.__version__, "transformers": transformers.__version__},
    }
    with open(f"{OUT}/reference.json", "w") as f:
        json.dump(ref, f)
    print(len(ids), "tokens;", sorted(os.listdir(OUT)))


if __name__ == "__main__":
    main()
