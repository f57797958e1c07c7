#!/usr/bin/env python3
"""Tiny random-weight decoder LMs of the newer code-model families with Hugging Face
transformers' outputs on a short code snippet: the fixtures of
tests/it/families_reference.rs (made with transformers 5.24.0, torch 2.15.0, tokenizers
0.23.3; see README.md here).

Each fixture directory tests/fixtures/tiny_<family>/ holds config.json + model.safetensors
+ tokenizer.json (the byte-level BPE of tiny_decoder_reference.py, trained here on the same
corpus) + reference.json (ids, byte offsets, eager attention probabilities,
output_hidden_states, logits, surprisal in bits and the top-5 next-token predictions), as
tiny_decoder_reference.py writes them, on a shorter text so each stays under ~200 KB.
The text is 31 or 32 tokens long (with a BOS): every sliding window below is shorter than it.

- tiny_qwen3: per-head q/k RMSNorms before rope, head_dim 16 != hidden / heads (8),
  4 query heads on 2 KV heads, no biases, untied head, rope_theta 1e6.
- tiny_mistral: 4 query heads on 1 KV head, sliding_window 6 on every layer, untied head.
- tiny_starcoder2: LayerNorm with bias, biases on every projection (use_bias),
  c_fc -> gelu_pytorch_tanh -> c_proj MLP, 4 heads on 2 KV heads, sliding_window 8, tied.
- tiny_gemma: Gemma 1 / CodeGemma: (1 + w) RMSNorms, embedding scaled by sqrt(hidden),
  one KV head (as codegemma-2b), head_dim 16, GELU-tanh gated MLP, tied, BOS.
- tiny_gemma2: sliding (window 6) / global / sliding layers, attention logit
  soft-capping 2 and final logit soft-capping 5 (both small, so they bite on these
  weights), query_pre_attn_scalar 12 != head_dim 8, pre+post feed-forward norms, BOS.
- tiny_granite: embedding_multiplier 3, attention_multiplier 0.1 (the attention scale),
  residual_multiplier 0.5, logits_scaling 4, attention biases, BOS.
- tiny_phi3: fused qkv_proj and gate_up_proj, partial_rotary_factor 0.5 (rope on half of
  each head, as Phi-4-mini's 0.75), sliding_window 7, untied, BOS.

Arguments: the families to (re)build (default: all), e.g. `... phi3 granite`.

Run from the repository root:
  /work/ref/venv/bin/python tools/reference/tiny_llm_families_reference.py
"""
import json
import math
import os
import sys

import torch
import transformers
from transformers import (Gemma2Config, GemmaConfig, GraniteConfig, MistralConfig, Phi3Config,
                          Qwen3Config, Starcoder2Config, AutoModelForCausalLM)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiny_decoder_reference import r6, tokenizer  # noqa: E402

TEXT = "for x in items:\n    total += x.price  # 合計\n"


def config(arch, vocab):
    common = dict(vocab_size=vocab, hidden_size=32, intermediate_size=48, max_position_embeddings=64)
    if arch == "qwen3":
        return Qwen3Config(**common, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                           head_dim=16, rms_norm_eps=1e-6, tie_word_embeddings=False,
                           rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                           bos_token_id=0, eos_token_id=0)
    if arch == "mistral":
        return MistralConfig(**common, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
                             rms_norm_eps=1e-5, tie_word_embeddings=False, sliding_window=6,
                             rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                             bos_token_id=0, eos_token_id=1)
    if arch == "starcoder2":
        return Starcoder2Config(**common, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                norm_epsilon=1e-5, use_bias=True, sliding_window=8,
                                hidden_act="gelu_pytorch_tanh", tie_word_embeddings=True,
                                rope_parameters={"rope_type": "default", "rope_theta": 100000.0},
                                bos_token_id=0, eos_token_id=0)
    if arch == "gemma":
        return GemmaConfig(**common, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
                           head_dim=16, rms_norm_eps=1e-6, hidden_act="gelu_pytorch_tanh",
                           tie_word_embeddings=True,
                           rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                           pad_token_id=0, eos_token_id=1, bos_token_id=2)
    if arch == "gemma2":
        return Gemma2Config(**common, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                            head_dim=8, rms_norm_eps=1e-6, hidden_activation="gelu_pytorch_tanh",
                            query_pre_attn_scalar=12, sliding_window=6,
                            layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                            attn_logit_softcapping=2.0, final_logit_softcapping=5.0,
                            tie_word_embeddings=True,
                            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                            pad_token_id=0, eos_token_id=1, bos_token_id=2)
    if arch == "granite":
        return GraniteConfig(**common, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                             rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=True,
                             embedding_multiplier=3.0, attention_multiplier=0.1,
                             residual_multiplier=0.5, logits_scaling=4.0,
                             rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                             bos_token_id=0, eos_token_id=1, pad_token_id=None)
    if arch == "phi3":
        return Phi3Config(**common, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                          rms_norm_eps=1e-5, tie_word_embeddings=False, sliding_window=7,
                          original_max_position_embeddings=64,
                          rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                           "partial_rotary_factor": 0.5},
                          bos_token_id=0, eos_token_id=1, pad_token_id=1)
    raise SystemExit(f"unknown family {arch}")


SPECIALS = {
    "qwen3": (["<|endoftext|>", "<|im_start|>", "<|im_end|>"], None),
    "mistral": (["<s>", "</s>", "<unk>"], "<s>"),
    "starcoder2": (["<|endoftext|>", "<fim_prefix>", "<fim_middle>"], None),
    "gemma": (["<pad>", "<eos>", "<bos>", "<unk>"], "<bos>"),
    "gemma2": (["<pad>", "<eos>", "<bos>", "<unk>"], "<bos>"),
    "granite": (["<|endoftext|>", "<fim_prefix>", "<fim_middle>"], "<|endoftext|>"),
    "phi3": (["<s>", "</s>", "<unk>"], "<s>"),
}


def build(out, arch):
    os.makedirs(out, exist_ok=True)
    specials, bos = SPECIALS[arch]
    tk = tokenizer(specials, bos)
    cfg = config(arch, tk.get_vocab_size())
    tk.save(f"{out}/tokenizer.json")
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg).eval()
    gemma = arch.startswith("gemma")
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                # Gemma stores w of (1 + w): keep the effective scale near 1 as for the others.
                p.copy_((0.0 if gemma and name.endswith("weight") else 1.0) + 0.2 * torch.randn_like(p))
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

    model = AutoModelForCausalLM.from_pretrained(out, attn_implementation="eager").eval()
    assert type(model).__name__.lower().startswith(arch.replace("starcoder2", "starcoder2")), type(model)
    with torch.no_grad():
        o = model(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
        base = model.base_model(torch.tensor([ids]))
    logits = o.logits[0]
    # output_hidden_states: [0] the (scaled) embeddings, [L] after the final norm.
    emb = model.model.embed_tokens(torch.tensor([ids]))[0]
    if arch == "granite":
        emb = emb * cfg.embedding_multiplier
    assert torch.equal(o.hidden_states[0][0], emb), arch
    assert torch.equal(o.hidden_states[-1][0], base.last_hidden_state[0])
    # The sliding windows must bite: some allowed key is masked in a sliding layer.
    window = getattr(cfg, "sliding_window", None)
    if window is not None:
        assert len(ids) > window, (arch, len(ids), window)
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
    archs = sys.argv[1:] or ["qwen3", "mistral", "starcoder2", "gemma", "gemma2", "granite", "phi3"]
    for arch in archs:
        build(f"tests/fixtures/tiny_{arch}", arch)


if __name__ == "__main__":
    main()
