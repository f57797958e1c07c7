#!/usr/bin/env python3
"""Tiny random-weight CodeGen and GPTBigCode (StarCoder) LMs with Hugging Face
transformers' outputs on real code: more fixtures of tests/decoder_reference.rs, made the
same way as tools/reference/tiny_decoder_reference.py (whose helpers this reuses).

- tiny_codegen: CodeGen (as Salesforce/codegen-*-mono) with 8 heads over the fused
  `qkv_proj` (so each of the `mp_num = 4` blocks holds two heads), partial rotary
  (`rotary_dim` 4 of head_dim 6), untied LM head with bias. Tokenizer: the GPT-2-style
  byte-level BPE of tests/fixtures/tiny_gpt2 (CodeGen uses GPT-2's tokenizer). Weights are
  float16 (as the hub checkpoint; the reference runs them in float32), and the directory also holds
  `pytorch_model.bin`: the same weights as a float16 PyTorch pickle with the boolean
  `attn.causal_mask` buffers old CodeGen checkpoints carry, for the `.bin` loading path.
- tiny_starcoder: GPTBigCode with multi-query attention (one shared K/V head),
  gelu_pytorch_tanh, tied LM head (as bigcode/tiny_starcoder_py); tokenizer: byte-level
  BPE with StarCoder's single-digit pre-tokenizer and FIM special tokens.
- tiny_bigcode_mha: GPTBigCode with `multi_query: false` (per-head interleaved
  `c_attn`), exact-erf `gelu`, `scale_attn_weights: false`; the tiny_starcoder tokenizer.

Texts: verbatim lines of CPython 3.11.7 `Lib/textwrap.py` and JDK 25
`java/util/ArrayList.java` (tests/fixtures/snippets/).

Run from the repository root (after tiny_decoder_reference.py, whose tiny_gpt2
tokenizer this copies):
  /work/ref/venv/bin/python tools/reference/tiny_codegen_bigcode_reference.py
"""
import json
import math
import os
import shutil
import sys

import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import CodeGenConfig, CodeGenForCausalLM, GPTBigCodeConfig, GPTBigCodeForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiny_decoder_reference import CORPUS, r6  # noqa: E402

SNIPPETS = "tests/fixtures/snippets"


def lines(name, a, b):
    """Lines a..b (1-based, inclusive) of a committed snippet, newline-terminated."""
    with open(f"{SNIPPETS}/{name}", encoding="utf-8") as f:
        ls = f.read().split("\n")
    return "\n".join(ls[a - 1:b]) + "\n"


# textwrap.indent's default predicate (Lib/textwrap.py 479-480 = snippet lines 10-11).
CODEGEN_TEXT = lines("py_textwrap_indent.py", 10, 11)
# ArrayList.indexOf (java/util/ArrayList.java 286-288): digits for StarCoder's splitter.
STARCODER_TEXT = lines("java_arraylist_indexof.java", 1, 3)


def starcoder_tokenizer():
    """Byte-level BPE with StarCoder's pre-tokenizer (every digit its own token)."""
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320,
        special_tokens=["<|endoftext|>", "<fim_prefix>", "<fim_middle>", "<fim_suffix>", "<fim_pad>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tk.train_from_iterator(CORPUS, trainer)
    tk.post_processor = processors.ByteLevel(trim_offsets=False)
    return tk


def randomize(model, fp16):
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name.endswith("ln_f.weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            else:
                p.normal_(0.0, 0.25)
            if fp16:
                p.copy_(p.half().float())


def build(out, arch):
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.remove(f"{out}/{f}")
    if arch == "codegen":
        shutil.copy("tests/fixtures/tiny_gpt2/tokenizer.json", f"{out}/tokenizer.json")
        tk = Tokenizer.from_file(f"{out}/tokenizer.json")
        text = CODEGEN_TEXT
        cfg = CodeGenConfig(
            vocab_size=tk.get_vocab_size(), n_positions=64, n_ctx=64, n_embd=48, n_layer=2, n_head=8,
            rotary_dim=4, n_inner=48, activation_function="gelu_new", tie_word_embeddings=False,
            bos_token_id=0, eos_token_id=0,
        )
        cls = CodeGenForCausalLM
    else:
        tk = starcoder_tokenizer()
        tk.save(f"{out}/tokenizer.json")
        text = STARCODER_TEXT
        mqa = arch == "starcoder"
        cfg = GPTBigCodeConfig(
            vocab_size=tk.get_vocab_size(), n_positions=64, n_embd=32, n_layer=2, n_head=4, n_inner=48,
            multi_query=mqa, activation_function="gelu_pytorch_tanh" if mqa else "gelu",
            scale_attn_weights=mqa, bos_token_id=0, eos_token_id=0,
        )
        cls = GPTBigCodeForCausalLM
    model = cls(cfg).eval()
    randomize(model, fp16=arch == "codegen")
    if arch == "codegen":
        # Stored as float16, as the hub checkpoint (the values are fp16-exact).
        model.half().save_pretrained(out, safe_serialization=True)
        model.float()
    else:
        model.save_pretrained(out, safe_serialization=True)
    for extra in ["generation_config.json"]:
        if os.path.exists(f"{out}/{extra}"):
            os.remove(f"{out}/{extra}")
    if arch == "codegen":
        # The hub checkpoint's layout: fp16 pickle, plus the (ignored) causal-mask buffers.
        sd = {k: v.half() for k, v in model.state_dict().items()}
        for i in range(cfg.n_layer):
            sd[f"transformer.h.{i}.attn.causal_mask"] = torch.tril(
                torch.ones((cfg.n_positions, cfg.n_positions), dtype=torch.bool)).view(
                1, 1, cfg.n_positions, cfg.n_positions)
        torch.save(sd, f"{out}/pytorch_model.bin")

    enc = tk.encode(text)
    ids = enc.ids
    cum = [0]
    for ch in text:
        cum.append(cum[-1] + len(ch.encode("utf-8")))
    offsets = [[cum[a], cum[b]] for a, b in enc.offsets]
    special = enc.special_tokens_mask

    model = cls.from_pretrained(out, attn_implementation="eager", dtype=torch.float32).eval()
    if arch == "codegen":
        # The pickle holds exactly the safetensors weights (fp16 values both).
        sd = torch.load(f"{out}/pytorch_model.bin")
        for k, v in model.state_dict().items():
            if k in sd:
                assert torch.equal(sd[k].float(), v), k
    with torch.no_grad():
        o = model(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
        base = model.base_model(torch.tensor([ids]))
    logits = o.logits[0]
    emb = model.transformer.wte(torch.tensor([ids]))[0]
    if arch != "codegen":
        emb = emb + model.transformer.wpe(torch.arange(len(ids)))
    assert torch.equal(o.hidden_states[0][0], emb)
    assert torch.equal(o.hidden_states[-1][0], base.last_hidden_state[0])
    assert len(o.hidden_states) == cfg.n_layer + 1
    logp = torch.log_softmax(logits.double(), dim=-1)
    surprisal = [None] + [float(-logp[i - 1, ids[i]] / math.log(2)) for i in range(1, len(ids))]
    probs = torch.softmax(logits.double(), dim=-1)
    top = []
    for i in range(len(ids)):
        p, j = torch.topk(probs[i], 5)
        top.append([{"id": int(a), "token": tk.id_to_token(int(a)), "p": float(b)} for b, a in zip(p, j)])
    ref = {
        "text": text,
        "ids": ids,
        "offsets": offsets,
        "special": special,
        "attention": r6([a[0].tolist() for a in o.attentions]),
        "hidden_states": r6([h[0].tolist() for h in o.hidden_states]),
        "logits": r6(logits.tolist()),
        "surprisal": surprisal,
        "top_next": top,
        "environment": {"torch": torch.__version__, "transformers": transformers.__version__},
    }
    with open(f"{out}/reference.json", "w") as f:
        json.dump(ref, f)
    sizes = {f: os.path.getsize(f"{out}/{f}") for f in sorted(os.listdir(out))}
    print(out, len(ids), "tokens;", sizes, "total", sum(sizes.values()))


def main():
    build("tests/fixtures/tiny_codegen", "codegen")
    build("tests/fixtures/tiny_starcoder", "starcoder")
    build("tests/fixtures/tiny_bigcode_mha", "bigcode_mha")


if __name__ == "__main__":
    main()
