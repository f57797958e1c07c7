#!/usr/bin/env python3
"""GGUF files of the tiny random Llama, Qwen2, Qwen3, Gemma 1 and Phi-3 fixtures (and, by
`convert_more`, StarCoder2, Gemma 2, Granite and Mistral), written the way
llama.cpp's convert_hf_to_gguf.py writes them (llama.cpp tensor names; Llama's Q/K rows
permuted for llama.cpp's interleaved rope; Qwen3's q/k norms as attn_q_norm / attn_k_norm;
Gemma's RMSNorm weights stored as 1 + w, its head_dim as attention.key_length, no rope
base and no output.weight (tied); Phi-3's fused attn_qkv / ffn_up, its rotary width as
rope.dimension_count and its sliding window; f32 tensors so results are exact), for
tests/gguf_models.rs.

Each file is checked here first: transformers 5.24 loads it (undoing the permutation with
its own code) and must reproduce the safetensors model's logits, so the files are what a
real converter would produce. codescope's outputs from the GGUF are then compared with the
fixtures' existing reference.json (transformers on the safetensors weights).

  /work/ref/venv/bin/python tools/reference/tiny_gguf_reference.py [NAME ...]

(a venv with torch, transformers==5.24.0 and gguf==0.19.0; names: any of llama, qwen2,
qwen3, gemma, phi3, starcoder2, gemma2, granite, mistral; all when none given).
"""
import json
import os
import sys
import tempfile

import gguf
import numpy as np
import torch
from safetensors.numpy import load_file
from transformers import AutoConfig, AutoModelForCausalLM

OUT = "tests/fixtures/tiny_gguf"


def permute(w, n_head):
    # convert_hf_to_gguf.py LlamaModel.permute
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def convert(name, longrope=False):
    """`longrope`: the Phi-3 file as the converter writes a 128k-context checkpoint (its
    rope_factors_long / rope_factors_short tensors; f16 weights to keep it small), which
    codescope must refuse; not checked in transformers."""
    src = os.path.join("tests/fixtures", f"tiny_{name}")
    cfg = json.load(open(os.path.join(src, "config.json")))
    sd = load_file(os.path.join(src, "model.safetensors"))
    arch = cfg["model_type"]
    heads, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    path = os.path.join(OUT, f"{name}{'_longrope' if longrope else ''}.gguf")
    w = gguf.GGUFWriter(path, arch)
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(heads)
    w.add_head_count_kv(kv)
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    if arch in ("qwen3", "gemma") and cfg.get("head_dim") is not None:
        # TextModel.set_gguf_parameters: key/value length from head_dim.
        w.add_key_length(cfg["head_dim"])
        w.add_value_length(cfg["head_dim"])
    rope = cfg.get("rope_parameters") or {}
    if arch == "phi3":
        # Phi3MiniModel.set_gguf_parameters.
        w.add_rope_scaling_orig_ctx_len(cfg["original_max_position_embeddings"])
        w.add_rope_dimension_count(int(rope.get("partial_rotary_factor", 1.0) * cfg["hidden_size"]) // heads)
        w.add_sliding_window(cfg.get("sliding_window") or 0)
    if arch != "gemma":
        # GemmaModel writes no rope base (llama.cpp's default 10 000).
        w.add_rope_freq_base(rope.get("rope_theta", 10000.0))
    if rope.get("rope_type") == "linear":
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(rope["factor"])
    w.add_vocab_size(cfg["vocab_size"])
    names = {
        "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
        "self_attn.o_proj": "attn_output", "input_layernorm": "attn_norm",
        "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate",
        "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
        "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
        "self_attn.qkv_proj": "attn_qkv", "mlp.gate_up_proj": "ffn_up",
    }
    for k, t in sd.items():
        t = t.astype(np.float32)
        if k == "model.embed_tokens.weight":
            g = "token_embd.weight"
        elif k == "model.norm.weight":
            g = "output_norm.weight"
        elif k == "lm_head.weight":
            g = "output.weight"
        else:
            parts = k.split(".")
            layer, rest, kind = parts[2], ".".join(parts[3:-1]), parts[-1]
            g = f"blk.{layer}.{names[rest]}.{kind}"
            if arch == "llama" and rest == "self_attn.q_proj":
                t = permute(t, heads)
            if arch == "llama" and rest == "self_attn.k_proj":
                t = permute(t, kv)
        if arch == "gemma" and k.endswith("norm.weight"):
            # GemmaModel.modify_tensors: llama.cpp's RMSNorm multiplies by w, Gemma's by 1 + w.
            t = t + 1
        # The names are llama.cpp's own (gguf's tensor-name map for the architecture).
        arch_id = {"llama": gguf.MODEL_ARCH.LLAMA, "qwen2": gguf.MODEL_ARCH.QWEN2,
                   "qwen3": gguf.MODEL_ARCH.QWEN3, "gemma": gguf.MODEL_ARCH.GEMMA,
                   "phi3": gguf.MODEL_ARCH.PHI3}[arch]
        stem = gguf.get_tensor_name_map(arch_id, cfg["num_hidden_layers"]).get_name(k.rsplit(".", 1)[0])
        assert stem is not None and g == f"{stem}.{k.rsplit('.', 1)[1]}", (k, g, stem)
        w.add_tensor(g, np.ascontiguousarray(t.astype(np.float16) if longrope else t))
    if longrope:
        # Phi3MiniModel.generate_extra_tensors: one factor per rotary pair.
        rot = int(cfg["rope_parameters"]["partial_rotary_factor"] * cfg["hidden_size"]) // heads
        w.add_rope_scaling_attn_factors(1.2)
        for g in ["rope_factors_long.weight", "rope_factors_short.weight"]:
            w.add_tensor(g, np.ones(rot // 2, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    if longrope:
        print(name, "->", path, os.path.getsize(path), "bytes (longrope: refused)")
        return
    if arch == "gemma":
        # transformers 5.24 has no GGUF loader for Gemma 1: the names above are checked
        # against gguf's map, the 1 + w edit is GemmaModel.modify_tensors'.
        print(name, "->", path, os.path.getsize(path), "bytes (no transformers GGUF loader for gemma)")
        return
    # Independent check: transformers' GGUF loader must give the safetensors model's logits.
    ref = json.load(open(os.path.join(src, "reference.json")))
    ids = torch.tensor([ref["ids"]])
    a = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32).eval()
    d, f = os.path.split(path)
    # transformers' GGUF config mapping drops rope scaling, so give it the real config;
    # the weights still come from the GGUF through its own (un)permutation.
    b = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, config=AutoConfig.from_pretrained(src),
                                             dtype=torch.float32).eval()
    with torch.no_grad():
        diff = (a(ids).logits - b(ids).logits).abs().max().item()
    print(name, "->", path, os.path.getsize(path), "bytes; transformers GGUF vs safetensors logits", diff)
    assert diff < 1e-5, diff


def convert_more(name):
    """StarCoder2, Gemma 2, Granite and Mistral as convert_hf_to_gguf.py writes them: the
    tensor names from gguf's own map for the architecture; StarCoder2 (TextModel's keys:
    LayerNorm epsilon, no sliding window); Gemma 2 (no rope base, head_dim as key/value
    length, both soft-capping values and the sliding window, norms stored as 1 + w, no
    lm_head); Granite (LlamaModel: Q/K rows of weights and biases permuted, its
    multipliers as embedding_scale / residual_scale / attention.scale / logit_scale);
    Mistral as `llama` (permuted Q/K) with its sliding window written."""
    src = os.path.join("tests/fixtures", f"tiny_{name}")
    cfg = json.load(open(os.path.join(src, "config.json")))
    sd = load_file(os.path.join(src, "model.safetensors"))
    arch = {"mistral": "llama"}.get(name, name)
    heads, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    layers = cfg["num_hidden_layers"]
    path = os.path.join(OUT, f"{name}.gguf")
    w = gguf.GGUFWriter(path, arch)
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_block_count(layers)
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(heads)
    w.add_head_count_kv(kv)
    theta = (cfg.get("rope_parameters") or {}).get("rope_theta", 10000.0)
    if name == "starcoder2":
        w.add_rope_freq_base(theta)
        w.add_layer_norm_eps(cfg["norm_epsilon"])
    else:
        w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    if name == "gemma2":
        w.add_key_length(cfg["head_dim"])
        w.add_value_length(cfg["head_dim"])
        w.add_attn_logit_softcapping(cfg["attn_logit_softcapping"])
        w.add_final_logit_softcapping(cfg["final_logit_softcapping"])
        w.add_sliding_window(cfg["sliding_window"])
    if arch in ("llama", "granite"):
        w.add_rope_freq_base(theta)
        w.add_vocab_size(cfg["vocab_size"])
        w.add_rope_dimension_count(cfg["hidden_size"] // heads)
    if name == "mistral":
        w.add_sliding_window(cfg["sliding_window"])
    if name == "granite":
        w.add_attention_scale(cfg["attention_multiplier"])
        w.add_embedding_scale(cfg["embedding_multiplier"])
        w.add_residual_scale(cfg["residual_multiplier"])
        w.add_logit_scale(cfg["logits_scaling"])
    arch_id = {"starcoder2": gguf.MODEL_ARCH.STARCODER2, "gemma2": gguf.MODEL_ARCH.GEMMA2,
               "granite": gguf.MODEL_ARCH.GRANITE, "llama": gguf.MODEL_ARCH.LLAMA}[arch]
    tmap = gguf.get_tensor_name_map(arch_id, layers)
    for k, t in sd.items():
        t = t.astype(np.float32)
        if name == "gemma2" and k == "lm_head.weight":
            continue
        base, kind = k.rsplit(".", 1)
        stem = tmap.get_name(base)
        assert stem is not None, k
        if arch in ("llama", "granite") and base.endswith("self_attn.q_proj"):
            t = permute(t, heads)
        if arch in ("llama", "granite") and base.endswith("self_attn.k_proj"):
            t = permute(t, kv)
        if name == "gemma2" and k.endswith("norm.weight"):
            t = t + 1
        w.add_tensor(f"{stem}.{kind}", np.ascontiguousarray(t))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    if name == "granite":
        # transformers 5.24 has no GGUF loader for granite: codescope's outputs from this
        # file are compared with reference.json directly.
        print(name, "->", path, os.path.getsize(path), "bytes (no transformers GGUF loader for granite)")
        return
    ref = json.load(open(os.path.join(src, "reference.json")))
    ids = torch.tensor([ref["ids"]])
    config = AutoConfig.from_pretrained(src)
    if name == "mistral":
        # transformers reads a `llama` GGUF only into a Llama model: both sides run as
        # Llama (no sliding window), which checks the weights and their un-permutation.
        from transformers import LlamaConfig
        config = LlamaConfig(**{k: v for k, v in config.to_dict().items() if k != "model_type"})
    a = AutoModelForCausalLM.from_pretrained(src, config=config, dtype=torch.float32).eval()
    d, f = os.path.split(path)
    b = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, config=config,
                                             dtype=torch.float32).eval()
    with torch.no_grad():
        diff = (a(ids).logits - b(ids).logits).abs().max().item()
    print(name, "->", path, os.path.getsize(path), "bytes; transformers GGUF vs safetensors logits", diff)
    assert diff < 1e-5, diff


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    first = ["llama", "qwen2", "qwen3", "gemma", "phi3"]
    more = ["starcoder2", "gemma2", "granite", "mistral"]
    for n in sys.argv[1:] or first + more:
        if n in first:
            convert(n)
        else:
            convert_more(n)
    if not sys.argv[1:]:
        convert("phi3", longrope=True)
