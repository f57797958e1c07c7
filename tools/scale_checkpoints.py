#!/usr/bin/env python3
"""Random-weight checkpoints with the real shapes of two models codescope targets.

    tools/scale_checkpoints.py [OUT]        (default OUT: /tmp/codescope-scale)

Writes, under OUT (never commit them: 3.1 GB and 3.9 GB):

- `qwen2.5-coder-1.5b-bf16/`: config.json with Qwen2.5-Coder-1.5B's shapes (28 layers,
  hidden 1536, 12 query and 2 key/value heads, MLP 8960, vocabulary 151,936 rows, tied
  head), model.safetensors with every tensor bf16 drawn from N(0, 0.02) (norms 1), and a
  tokenizer.json;
- `codellama-7b-q4_k_m.gguf`: CodeLlama-7B's shapes (32 layers, hidden 4096, 32 heads,
  MLP 11008, vocabulary 32,016, rope base 1e6) with llama.cpp's Q4_K_M type choice (Q4_K
  throughout, Q6_K for the output and for attn_v / ffn_down of the layers llama.cpp gives
  more bits), each block random with sane f16 scales, and the same tokenizer as a GGUF
  `gpt2` vocabulary.

The tokenizer is a Qwen2-style byte-level BPE (Qwen2's split regex, byte-level
alphabet) trained by the `tokenizers` package on this repository's sources, samples and
docs; the corpus gives fewer merges than the real vocabularies (the count is printed), so
the embeddings keep their real row counts and the high ids are never produced. Needs
numpy and tokenizers (`pip install numpy tokenizers` in a venv outside the repository).
"""
import json
import struct
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/tmp/codescope-scale")
RNG = np.random.default_rng(0)

QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
               r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def tokenizer(vocab_size):
    """A byte-level BPE trained on the repository's text, as a `tokenizers.Tokenizer`."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    files = [str(p) for pattern in ("src/**/*.rs", "assets/samples/*/*", "docs/*.md", "*.md",
                                    "crates/**/*.rs", "tests/**/*.rs")
             for p in sorted(ROOT.glob(pattern)) if p.is_file()]
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=2, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<|endoftext|>"])
    tok.train(files, trainer)
    return tok


def bf16(a):
    """float32 array -> bf16 bit patterns (round to nearest even)."""
    u = a.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def write_safetensors(path, specs):
    """`specs`: [(name, shape, make)] with `make()` giving the bf16 bits; streamed."""
    header, offset = {}, 0
    for name, shape, _ in specs:
        n = int(np.prod(shape)) * 2
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for name, shape, make in specs:
            data = make()
            assert data.dtype == np.uint16 and data.size == int(np.prod(shape)), name
            f.write(data.tobytes())


def qwen(out, tok):
    d = out / "qwen2.5-coder-1.5b-bf16"
    d.mkdir(parents=True, exist_ok=True)
    layers, h, heads, kv, inter, vocab = 28, 1536, 12, 2, 8960, 151936
    hd = h // heads
    cfg = {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
        "hidden_size": h, "intermediate_size": inter, "num_hidden_layers": layers,
        "num_attention_heads": heads, "num_key_value_heads": kv,
        "max_position_embeddings": 32768, "max_window_layers": 28, "rms_norm_eps": 1e-6,
        "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"},
        "layer_types": ["full_attention"] * layers, "sliding_window": None,
        "use_sliding_window": False, "tie_word_embeddings": True, "vocab_size": vocab,
        "bos_token_id": 0, "eos_token_id": 0, "initializer_range": 0.02, "dtype": "bfloat16",
    }
    (d / "config.json").write_text(json.dumps(cfg, indent=2))
    tok.save(str(d / "tokenizer.json"))
    normal = lambda shape: lambda: bf16(RNG.standard_normal(shape, dtype=np.float32) * 0.02)
    ones = lambda shape: lambda: bf16(np.ones(shape, np.float32))
    specs = [("model.embed_tokens.weight", (vocab, h), normal((vocab, h)))]
    for i in range(layers):
        p = f"model.layers.{i}"
        for name, shape in [("self_attn.q_proj.weight", (h, h)), ("self_attn.q_proj.bias", (h,)),
                            ("self_attn.k_proj.weight", (kv * hd, h)), ("self_attn.k_proj.bias", (kv * hd,)),
                            ("self_attn.v_proj.weight", (kv * hd, h)), ("self_attn.v_proj.bias", (kv * hd,)),
                            ("self_attn.o_proj.weight", (h, h)),
                            ("mlp.gate_proj.weight", (inter, h)), ("mlp.up_proj.weight", (inter, h)),
                            ("mlp.down_proj.weight", (h, inter))]:
            specs.append((f"{p}.{name}", shape, normal(shape)))
        for name in ["input_layernorm.weight", "post_attention_layernorm.weight"]:
            specs.append((f"{p}.{name}", (h,), ones((h,))))
    specs.append(("model.norm.weight", (h,), ones((h,))))
    write_safetensors(d / "model.safetensors", specs)
    return d


# GGUF (version 3) writing: metadata value types and ggml tensor types.
U32, I32, F32, BOOL, STRING, ARRAY, U64 = 4, 5, 6, 7, 8, 9, 10
GGML_F32, GGML_Q4_K, GGML_Q6_K = 0, 12, 14


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_value(t, v):
    if t == STRING:
        return gguf_string(v)
    if t == ARRAY:
        et, items = v
        body = b"".join(gguf_value(et, x) for x in items)
        return struct.pack("<IQ", et, len(items)) + body
    return struct.pack({U32: "<I", I32: "<i", F32: "<f", BOOL: "<?", U64: "<Q"}[t], v)


def q4_k(rows, cols):
    """Random Q4_K blocks (144 bytes a 256 values): d, dmin f16, 12 bytes of 6-bit scales
    and mins, 128 bytes of 4-bit quants; values about N(0, 0.02)-sized."""
    n = rows * cols // 256
    b = np.frombuffer(RNG.bytes(n * 144), np.uint8).reshape(n, 144).copy()
    b[:, 0:2] = np.full(n, 1.4e-4, np.float16).view(np.uint8).reshape(n, 2)
    b[:, 2:4] = np.full(n, 1.0e-3, np.float16).view(np.uint8).reshape(n, 2)
    return b


def q6_k(rows, cols):
    """Random Q6_K blocks (210 bytes a 256 values): 128 + 64 bytes of 6-bit quants, 16
    int8 scales (kept in 1..31), d f16."""
    n = rows * cols // 256
    b = np.frombuffer(RNG.bytes(n * 210), np.uint8).reshape(n, 210).copy()
    b[:, 192:208] = RNG.integers(1, 32, (n, 16), dtype=np.uint8)
    b[:, 208:210] = np.full(n, 7.0e-5, np.float16).view(np.uint8).reshape(n, 2)
    return b


def codellama(out, tok):
    path = out / "codellama-7b-q4_k_m.gguf"
    layers, h, heads, inter, vocab = 32, 4096, 32, 11008, 32016
    vocab_json = json.loads(tok.to_str())["model"]
    tokens = [t for t, _ in sorted(vocab_json["vocab"].items(), key=lambda x: x[1])]
    merges = [m if isinstance(m, str) else " ".join(m) for m in vocab_json["merges"]]
    assert len(tokens) <= vocab
    meta = [
        ("general.architecture", STRING, "llama"),
        ("general.name", STRING, "codescope scale simulation: CodeLlama-7B shapes, random"),
        ("general.file_type", U32, 15),  # MOSTLY_Q4_K_M
        ("general.alignment", U32, 32),
        ("llama.vocab_size", U32, vocab),
        ("llama.context_length", U32, 16384),
        ("llama.embedding_length", U32, h),
        ("llama.block_count", U32, layers),
        ("llama.feed_forward_length", U32, inter),
        ("llama.rope.dimension_count", U32, h // heads),
        ("llama.rope.freq_base", F32, 1000000.0),
        ("llama.attention.head_count", U32, heads),
        ("llama.attention.head_count_kv", U32, heads),
        ("llama.attention.layer_norm_rms_epsilon", F32, 1e-5),
        ("tokenizer.ggml.model", STRING, "gpt2"),
        ("tokenizer.ggml.pre", STRING, "qwen2"),
        ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)),
        ("tokenizer.ggml.token_type", ARRAY, (I32, [3 if t == "<|endoftext|>" else 1 for t in tokens])),
        ("tokenizer.ggml.merges", ARRAY, (STRING, merges)),
        ("tokenizer.ggml.eos_token_id", U32, tokens.index("<|endoftext|>")),
        ("tokenizer.ggml.add_bos_token", BOOL, False),
    ]

    def more_bits(i):  # llama.cpp's use_more_bits for Q4_K_M
        return i < layers // 8 or i >= 7 * layers // 8 or (i - layers // 8) % 3 == 2

    # (name, GGUF dims: inner first, type, make)
    tensors = [("token_embd.weight", (h, vocab), GGML_Q4_K, lambda: q4_k(vocab, h))]
    for i in range(layers):
        kind = GGML_Q6_K if more_bits(i) else GGML_Q4_K
        mk = q6_k if more_bits(i) else q4_k
        tensors += [
            (f"blk.{i}.attn_norm.weight", (h,), GGML_F32, lambda: np.ones(h, np.float32)),
            (f"blk.{i}.attn_q.weight", (h, h), GGML_Q4_K, lambda: q4_k(h, h)),
            (f"blk.{i}.attn_k.weight", (h, h), GGML_Q4_K, lambda: q4_k(h, h)),
            (f"blk.{i}.attn_v.weight", (h, h), kind, lambda mk=mk: mk(h, h)),
            (f"blk.{i}.attn_output.weight", (h, h), GGML_Q4_K, lambda: q4_k(h, h)),
            (f"blk.{i}.ffn_norm.weight", (h,), GGML_F32, lambda: np.ones(h, np.float32)),
            (f"blk.{i}.ffn_gate.weight", (h, inter), GGML_Q4_K, lambda: q4_k(inter, h)),
            (f"blk.{i}.ffn_up.weight", (h, inter), GGML_Q4_K, lambda: q4_k(inter, h)),
            (f"blk.{i}.ffn_down.weight", (inter, h), kind, lambda mk=mk: mk(h, inter)),
        ]
    tensors += [("output_norm.weight", (h,), GGML_F32, lambda: np.ones(h, np.float32)),
                ("output.weight", (h, vocab), GGML_Q6_K, lambda: q6_k(vocab, h))]

    def nbytes(dims, t):
        n = int(np.prod(dims))
        return {GGML_F32: n * 4, GGML_Q4_K: n // 256 * 144, GGML_Q6_K: n // 256 * 210}[t]

    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(meta))
    head += b"".join(gguf_string(k) + struct.pack("<I", t) + gguf_value(t, v) for k, t, v in meta)
    offset = 0
    for name, dims, t, _ in tensors:
        head += gguf_string(name) + struct.pack("<I", len(dims))
        head += b"".join(struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", t, offset)
        offset += nbytes(dims, t)
        offset += -offset % 32
    head += b"\0" * (-len(head) % 32)
    with open(path, "wb") as f:
        f.write(head)
        for name, dims, t, make in tensors:
            data = make().tobytes()
            assert len(data) == nbytes(dims, t), name
            f.write(data)
            f.write(b"\0" * (-len(data) % 32))
    return path


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    tok = tokenizer(151643)
    print(f"tokenizer: {tok.get_vocab_size()} tokens", flush=True)
    print(qwen(OUT, tok), flush=True)
    print(codellama(OUT, tokenizer(32016)), flush=True)


if __name__ == "__main__":
    main()
