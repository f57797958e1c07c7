#!/usr/bin/env python3
"""Tiny random-weight decoder LMs (Llama, Qwen2) with Hugging Face transformers' outputs
on a code snippet: the fixtures of tests/decoder_reference.rs.

Each fixture directory holds config.json + model.safetensors + tokenizer.json (a small
byte-level BPE trained here with the `tokenizers` library) + reference.json (ids, byte
offsets, eager attention probabilities, output_hidden_states, logits, surprisal in bits
and the top-5 next-token predictions).

- tiny_llama: grouped-query attention (4 query heads, 2 KV heads), no biases, untied LM
  head, linear rope scaling (as deepseek-coder-1.3b), BOS added by the post-processor.
- tiny_gpt2: GPT-2 with scale_attn_by_inverse_layer_idx, tied head, no BOS.
- tiny_qwen2: 4 query heads sharing 1 KV head, QKV biases, tied embeddings, rope_theta
  1e6, no BOS (a ByteLevel post-processor, as Qwen2.5-Coder).
- tiny_gemma3: Gemma 3 text decoder, 3 layers (sliding window 8 / global with linear rope
  scaling / sliding), 2 KV heads, head_dim 8 != query_pre_attn_scalar 16, qk-norm, final
  logit soft-capping 5, tied embeddings, BOS.

Arguments: the fixtures to (re)build (default: all), e.g. `... tiny_decoder_reference.py gemma3`.

Run from the repository root:
  /work/ref/venv/bin/python tools/reference/tiny_decoder_reference.py
"""
import json
import math
import os

import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (Gemma3ForCausalLM, Gemma3TextConfig, GPT2Config, GPT2LMHeadModel,
                          LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM)

TEXT = 'def total(self, items):\n    """Sum 合計 é."""\n    return sum(x.price for x in items)\n'
CORPUS = [
    "def add(a, b):\n    return a + b\n",
    "for x in items:\n    total += x.price\n",
    "class Stack:\n    def push(self, item):\n        self.items.append(item)\n",
    "public int size() { return count; }\n",
    "if (x != null) { return x.hashCode(); }\n",
    "import os\nprint(os.path.join('a', 'b'))\n",
] * 4


def r6(x):
    """Round nested lists to 6 significant digits (keeps the fixture small)."""
    if isinstance(x, list):
        return [r6(v) for v in x]
    return float(f"{x:.6g}")


def tokenizer(specials, bos):
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tk.train_from_iterator(CORPUS, trainer)
    if bos:
        tk.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tk.token_to_id(bos))]
        )
    else:
        tk.post_processor = processors.ByteLevel(trim_offsets=False)
    return tk


def build(out, arch):
    os.makedirs(out, exist_ok=True)
    if arch == "llama":
        tk = tokenizer(["<s>", "</s>", "<unk>"], "<s>")
        cfg = LlamaConfig(
            vocab_size=tk.get_vocab_size(), hidden_size=32, intermediate_size=48,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            max_position_embeddings=64, rms_norm_eps=1e-6, tie_word_embeddings=False,
            rope_theta=10000.0, rope_scaling={"rope_type": "linear", "factor": 2.0},
            bos_token_id=0, eos_token_id=1,
        )
        cls = LlamaForCausalLM
    elif arch == "gemma3":
        tk = tokenizer(["<pad>", "<eos>", "<bos>", "<unk>"], "<bos>")
        cfg = Gemma3TextConfig(
            vocab_size=tk.get_vocab_size(), hidden_size=32, intermediate_size=48,
            num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
            max_position_embeddings=64, rms_norm_eps=1e-6, tie_word_embeddings=True,
            query_pre_attn_scalar=16, sliding_window=8,
            layer_types=["sliding_attention", "full_attention", "sliding_attention"],
            rope_parameters={"full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1000000.0},
                             "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
            final_logit_softcapping=5.0, hidden_activation="gelu_pytorch_tanh",
            pad_token_id=0, eos_token_id=1, bos_token_id=2,
        )
        cls = Gemma3ForCausalLM
    elif arch == "gpt2":
        tk = tokenizer(["<|endoftext|>"], None)
        cfg = GPT2Config(
            vocab_size=tk.get_vocab_size(), n_embd=32, n_layer=2, n_head=4, n_positions=64,
            n_inner=48, scale_attn_by_inverse_layer_idx=True, bos_token_id=0, eos_token_id=0,
        )
        cls = GPT2LMHeadModel
    else:
        tk = tokenizer(["<|endoftext|>", "<|im_start|>", "<|im_end|>"], None)
        cfg = Qwen2Config(
            vocab_size=tk.get_vocab_size(), hidden_size=32, intermediate_size=48,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
            max_position_embeddings=64, rms_norm_eps=1e-6, tie_word_embeddings=True,
            rope_theta=1000000.0, bos_token_id=0, eos_token_id=0,
        )
        cls = Qwen2ForCausalLM
    tk.save(f"{out}/tokenizer.json")
    torch.manual_seed(0)
    model = cls(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            else:
                p.normal_(0.0, 0.25)
    model.save_pretrained(out, safe_serialization=True)
    for extra in ["generation_config.json"]:
        if os.path.exists(f"{out}/{extra}"):
            os.remove(f"{out}/{extra}")

    enc = tk.encode(TEXT)
    ids = enc.ids
    cum = [0]
    for ch in TEXT:
        cum.append(cum[-1] + len(ch.encode("utf-8")))
    offsets = [[cum[a], cum[b]] for a, b in enc.offsets]
    special = enc.special_tokens_mask

    model = cls.from_pretrained(out, attn_implementation="eager").eval()
    with torch.no_grad():
        o = model(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
        base = model.base_model(torch.tensor([ids]))
    logits = o.logits[0]
    # Document what output_hidden_states means here: [0] embeddings, [L] after the final norm.
    if arch == "gpt2":
        emb = model.transformer.wte(torch.tensor([ids]))[0] + model.transformer.wpe(torch.arange(len(ids)))
    else:
        emb = model.model.embed_tokens(torch.tensor([ids]))[0]
    assert torch.equal(o.hidden_states[0][0], emb)
    assert torch.equal(o.hidden_states[-1][0], base.last_hidden_state[0])
    logp = torch.log_softmax(logits.double(), dim=-1)
    surprisal = [None] + [float(-logp[i - 1, ids[i]] / math.log(2)) for i in range(1, len(ids))]
    probs = torch.softmax(logits.double(), dim=-1)
    top = []
    for i in range(len(ids)):
        p, j = torch.topk(probs[i], 5)
        top.append([{"id": int(a), "token": tk.id_to_token(int(a)), "p": float(b)} for b, a in zip(p, j)])
    ref = {
        "text": TEXT,
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
    print(out, len(ids), "tokens;", {f: os.path.getsize(f"{out}/{f}") for f in sorted(os.listdir(out))})


def main():
    import sys
    archs = sys.argv[1:] or ["llama", "qwen2", "gpt2", "gemma3"]
    for arch in archs:
        build(f"tests/fixtures/tiny_{arch}", arch)


if __name__ == "__main__":
    main()
