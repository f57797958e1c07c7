#!/usr/bin/env python3
"""Tiny random encoder-decoders laid out as the study's models are on the hub, with HF
transformers' ENCODER outputs (eager attention) on a code snippet. Checks codescope's
`t5` and `bart` families: the encoder self-attention and hidden states.

Writes four fixture directories under tests/fixtures/:
- tiny_t5: T5 v1.0 as CodeT5 ships it: `feed_forward_proj` relu, tied embeddings,
  T5ForConditionalGeneration, pytorch_model.bin, vocab.json + merges.txt (RoBERTa
  byte-level BPE, `<s> ... </s>`, as the study fed CodeT5); few relative-position buckets
  (8, max distance 20) so that the snippet reaches the logarithmic buckets and the clamp;
- tiny_t5_v11: T5 v1.1: `gated-gelu`, an untied LM head (its own `lm_head.weight`, config
  `tie_word_embeddings: false` as the hub's v1.1 configs, hence no `d_model ** -0.5`
  rescale of the decoder output), model.safetensors, the default 32 buckets / 128;
- tiny_bart: BartForConditionalGeneration, model.safetensors, the same BPE files;
- tiny_plbart: PLBartForConditionalGeneration, pytorch_model.bin, a tokenizer.json
  (Metaspace BPE trained here, `... </s> __python__` as PLBART's tokenizer ends a source
  sequence with the language code); its config.json has no `scale_embedding`, so PLBART's
  default (true, sqrt(d_model)) is what both sides must use.

Each reference.json: text, ids, UTF-8 byte offsets, the encoder's attentions and
`output_hidden_states` (6 significant digits), and for T5 the bucket table of
`_relative_position_bucket` (bidirectional) for offsets -600..600 under the fixture's
and CodeT5's (32, 128) settings. Deterministic. Run from the repository root:
  PY tools/reference/tiny_encdec_reference.py
with PY a Python with torch and transformers (README "Reference environment").
"""
import json
import os

import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (BartConfig, BartForConditionalGeneration, PLBartConfig,
                          PLBartForConditionalGeneration, T5Config, T5ForConditionalGeneration)
from transformers.models.t5.modeling_t5 import T5Attention

ROOT = "tests/fixtures"
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


def r6(x):
    """Round nested lists to 6 significant digits (keeps the fixtures small)."""
    if isinstance(x, list):
        return [r6(v) for v in x]
    return float(f"{x:.6g}")


def byte_offsets(text, offsets):
    cum = [0]
    for ch in text:
        cum.append(cum[-1] + len(ch.encode("utf-8")))
    return [[cum[a], cum[b]] for a, b in offsets]


def write_bpe(out):
    """CodeT5's tokenizer files: RoBERTa byte-level BPE (vocab.json + merges.txt) with
    `<pad>` 0, `<s>` 1, `</s>` 2, `<unk>` 3 as CodeT5's vocabulary has them. Returns the
    pipeline transformers' RoBERTa fast tokenizer builds from them (as
    tiny_roberta_reference.py), and the vocab size."""
    alphabet = [bytes_to_unicode()[b] for b in range(256)]
    vocab = ["<pad>", "<s>", "</s>", "<unk>"] + alphabet
    merges = [("d", "e"), ("de", "f"), ("Ġ", "x"), ("r", "e"), ("re", "t"), ("ret", "u"),
              ("retu", "r"), ("retur", "n"), ("Ġ", "return"), ("s", "e"), ("se", "l"),
              ("sel", "f"), ("i", "n"), ("Ġ", "in"), ("Ġ", "Ġ"), ("ĠĠ", "ĠĠ")]
    for a, b in merges:
        vocab.append(a + b)
    vocab.append("<mask>")
    with open(f"{out}/vocab.json", "w") as f:
        json.dump({t: i for i, t in enumerate(vocab)}, f, ensure_ascii=False)
    with open(f"{out}/merges.txt", "w") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    tk = Tokenizer(models.BPE.from_file(f"{out}/vocab.json", f"{out}/merges.txt"))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 1), trim_offsets=True,
                                                     add_prefix_space=False)
    return tk, len(vocab)


def write_plbart_tokenizer(out):
    """A tokenizer.json shaped like PLBART's: SentencePiece-style (Metaspace) BPE with
    fairseq's `<s>` 0 `<pad>` 1 `</s>` 2 `<unk>` 3 and language codes; a source sequence
    ends `</s> __python__`."""
    tk = Tokenizer(models.BPE(unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Metaspace()
    tk.decoder = decoders.Metaspace()
    corpus = [TEXT, "def f(x):\n    return x + 1\n", "for item in items:\n    print(item.price)\n"]
    trainer = trainers.BpeTrainer(vocab_size=120, special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
                                  show_progress=False)
    tk.train_from_iterator(corpus, trainer)
    tk.add_special_tokens(["__java__", "__python__", "<mask>"])
    eos, lang = tk.token_to_id("</s>"), tk.token_to_id("__python__")
    tk.post_processor = processors.TemplateProcessing(
        single="$A </s> __python__", special_tokens=[("</s>", eos), ("__python__", lang)])
    tk.save(f"{out}/tokenizer.json")
    return tk, tk.get_vocab_size(with_added_tokens=True)


def randomize(model, std, rel_std=1.0):
    """Weights far from an init (norm scales around 1, non-zero biases) so that every one
    of them shows in the outputs."""
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") and p.dim() == 1:
                p.normal_(0.0, 0.1)
            elif p.dim() == 1:
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif "relative_attention_bias" in name:
                p.normal_(0.0, rel_std)
            else:
                p.normal_(0.0, std)


def eager(model):
    model.set_attn_implementation("eager")
    return model.eval()


def reference(model, tk, extra=None):
    enc = tk.encode(TEXT)
    ids = enc.ids
    with torch.no_grad():
        o = model.get_encoder()(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
    assert torch.allclose(o.hidden_states[-1], o.last_hidden_state)
    ref = {
        "text": TEXT,
        "ids": ids,
        "offsets": byte_offsets(TEXT, enc.offsets),
        "attention": r6([a[0].tolist() for a in o.attentions]),
        "hidden_states": r6([h[0].tolist() for h in o.hidden_states]),
        "environment": {"torch": torch.__version__, "transformers": transformers.__version__},
    }
    ref.update(extra or {})
    return ref


def buckets(num_buckets, max_distance):
    rel = torch.arange(-600, 601)
    b = T5Attention._relative_position_bucket(rel, bidirectional=True, num_buckets=num_buckets,
                                              max_distance=max_distance)
    return {"num_buckets": num_buckets, "max_distance": max_distance, "first": -600, "values": b.tolist()}


def save_bin(model, out):
    model.config.save_pretrained(out)
    torch.save(model.state_dict(), f"{out}/pytorch_model.bin")


def save_safetensors(model, out):
    model.save_pretrained(out)
    gen = f"{out}/generation_config.json"
    if os.path.exists(gen):
        os.remove(gen)


def finish(out, ref):
    with open(f"{out}/reference.json", "w") as f:
        json.dump(ref, f)
    # decoder_reference.json, from tiny_encdec_decoder_reference.py, is not counted here.
    size = sum(os.path.getsize(f"{out}/{f}") for f in os.listdir(out) if f != "decoder_reference.json")
    print(out, len(ref["ids"]), "tokens;", sorted(os.listdir(out)), size, "bytes")
    assert size < 700_000, f"{out} is {size} bytes"


def untie(model):
    """T5 v1.1's own LM head: transformers 5 always builds T5 with `lm_head` tied to
    `shared` (whatever `tie_word_embeddings` says), so a distinct, seeded `lm_head.weight`
    replaces it here (the other tensors, drawn before, are unchanged)."""
    g = torch.Generator().manual_seed(11)
    w = torch.randn(model.lm_head.weight.shape, generator=g) * 0.15
    model.lm_head.weight = torch.nn.Parameter(w)
    model.all_tied_weights_keys.pop("lm_head.weight", None)
    assert model.lm_head.weight.data_ptr() != model.shared.weight.data_ptr()


def check_untied(model, out):
    """The hub's v1.1 config (`tie_word_embeddings: false`, no transformers-5
    `scale_decoder_outputs`), and that the saved file and transformers, loading it, keep
    the head distinct from `shared` and do not rescale the decoder output."""
    from safetensors.torch import load_file
    path = f"{out}/config.json"
    with open(path) as f:
        c = json.load(f)
    c["tie_word_embeddings"] = False
    c.pop("scale_decoder_outputs", None)
    with open(path, "w") as f:
        json.dump(c, f, indent=2, sort_keys=True)
    sd = load_file(f"{out}/model.safetensors")
    assert "lm_head.weight" in sd, sorted(sd)
    assert not torch.equal(sd["lm_head.weight"], sd["shared.weight"])
    assert torch.equal(sd["lm_head.weight"], model.lm_head.weight.detach())
    back = T5ForConditionalGeneration.from_pretrained(out)
    assert not back.config.scale_decoder_outputs
    assert torch.equal(back.lm_head.weight.detach(), sd["lm_head.weight"])
    assert not torch.equal(back.lm_head.weight.detach(), back.shared.weight.detach())


def t5(out, ff, tied, buckets_n, distance, bin_weights):
    os.makedirs(out, exist_ok=True)
    tk, vocab = write_bpe(out)
    cfg = T5Config(vocab_size=vocab, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=1,
                   num_heads=4, relative_attention_num_buckets=buckets_n,
                   relative_attention_max_distance=distance, feed_forward_proj=ff,
                   tie_word_embeddings=tied, pad_token_id=0, eos_token_id=2, decoder_start_token_id=0,
                   n_positions=64)
    cfg.architectures = ["T5ForConditionalGeneration"]
    model = eager(T5ForConditionalGeneration(cfg))
    randomize(model, 0.15)
    if not tied:
        untie(model)
    (save_bin if bin_weights else save_safetensors)(model, out)
    if not tied:
        check_untied(model, out)
    extra = {"buckets": [buckets(buckets_n, distance), buckets(32, 128)]}
    finish(out, reference(model, tk, extra))


def bart(out, plbart):
    os.makedirs(out, exist_ok=True)
    if plbart:
        tk, vocab = write_plbart_tokenizer(out)
        cfg = PLBartConfig(vocab_size=vocab, d_model=32, encoder_layers=2, decoder_layers=1,
                           encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                           decoder_ffn_dim=64, max_position_embeddings=64, pad_token_id=1,
                           bos_token_id=0, eos_token_id=2)
        cfg.architectures = ["PLBartForConditionalGeneration"]
        model = eager(PLBartForConditionalGeneration(cfg))
    else:
        tk, vocab = write_bpe(out)
        cfg = BartConfig(vocab_size=vocab, d_model=32, encoder_layers=2, decoder_layers=1,
                         encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                         decoder_ffn_dim=64, max_position_embeddings=64, pad_token_id=0,
                         bos_token_id=1, eos_token_id=2, decoder_start_token_id=2)
        cfg.architectures = ["BartForConditionalGeneration"]
        model = eager(BartForConditionalGeneration(cfg))
    randomize(model, 0.3)
    if plbart:
        save_bin(model, out)
        # PLBART's default scale_embedding (true) must be what a config without it means.
        assert model.config.scale_embedding
        path = f"{out}/config.json"
        with open(path) as f:
            c = json.load(f)
        c.pop("scale_embedding", None)
        with open(path, "w") as f:
            json.dump(c, f, indent=2, sort_keys=True)
        assert PLBartConfig.from_pretrained(out).scale_embedding
    else:
        assert not model.config.scale_embedding
        save_safetensors(model, out)
    finish(out, reference(model, tk))


def main():
    t5(f"{ROOT}/tiny_t5", "relu", True, 8, 20, bin_weights=True)
    t5(f"{ROOT}/tiny_t5_v11", "gated-gelu", False, 32, 128, bin_weights=False)
    bart(f"{ROOT}/tiny_bart", plbart=False)
    bart(f"{ROOT}/tiny_plbart", plbart=True)


if __name__ == "__main__":
    main()
