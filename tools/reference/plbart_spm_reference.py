#!/usr/bin/env python3
"""PLBART's tokenizer from its SentencePiece model alone: a tiny `sentencepiece.bpe.model`
trained here on the repository's code snippets, and transformers' `PLBartTokenizer`
(SentencePiece backend, transformers 5.24.0) ids on the bundled snippets and on tricky
strings. Checks codescope's reading of the model file (`model::sentencepiece`).

Writes:
- tests/fixtures/tiny_plbart/sentencepiece.bpe.model: a BPE model of 96 pieces (so the
  PLBART vocabulary, 4 fairseq specials + 95 pieces + 3 language codes + `<mask>`, is
  tiny_plbart's 101), character coverage 0.98 (rarer characters are unknown), and a
  small user normalization table (tab -> space, fullwidth letters -> ASCII, `<=` and
  `<=>` -> arrows: the precompiled charsmap and its longest match) instead of nmt_nfkc's
  240 KB one; the normalizer's other settings are the defaults PLBART's model has
  (dummy prefix, extra whitespace removed, spaces escaped);
- tests/fixtures/plbart_spm_reference.json: per case, the text and the ids for
  `src_lang` None (`tokens </s>`), "python" and "java" (`tokens </s> __lang__`),
  language codes "base", and "multi" with src_lang "java".

Deterministic (one training thread). Run from the repository root:
  PY tools/reference/plbart_spm_reference.py
with PY a Python with transformers==5.24.0, sentencepiece and protobuf
(`python -m venv /tmp/venv-pl && /tmp/venv-pl/bin/pip install transformers==5.24.0
sentencepiece protobuf`). Checked by `tests/it/plbart_spm.rs`.
"""
import glob
import json
import os
import tempfile

import sentencepiece as spm
import transformers
from transformers import PLBartTokenizer

ROOT = "tests/fixtures"
RULES = [
    ("09", "20"),
    *[(f"{0xFF21 + i:X}", f"{0x41 + i:X}") for i in range(26)],
    *[(f"{0xFF41 + i:X}", f"{0x61 + i:X}") for i in range(26)],
    ("3C 3D", "2264"),
    ("3C 3D 3E", "21D4"),
]
TRICKY = [
    "",
    "   ",
    "x",
    "  leading and trailing  ",
    "a    b\t\tc\t d",
    "def f(x):\n\treturn x  <= 1 <=> 2 <\n",
    "Ｆｕｌｌ ｗｉｄｔｈ = 1",
    "caf\u00e9 \u00fcber na\u00efve \u5408\u8a08 \U0001F600\U0001F600 x",
    "\u2603\u2603\u2603 snow \u2603 a\u2603b",
    "if (a != b) { return a[i] + b->c; } // ~`@$%^&|",
    "\u2581 meta \u2581\u2581space",
    "unknown \u00a7\u00b6 \u0416\u0437 then x",
    "\n\n\nblank lines\n\n",
    "public static void main(String[] args) { System.out.println(\"hi\"); }",
    "x </s> y __java__ z",
    "a <mask> b  <mask>c<s><pad><unk>__python____en_XX__ __go__",
]


def main():
    files = sorted(glob.glob(f"{ROOT}/snippets/*.py")) + sorted(glob.glob(f"{ROOT}/snippets/*.java"))
    samples = [open(f, encoding="utf-8").read() for f in files]
    out_dir = f"{ROOT}/tiny_plbart"
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            f.write("".join(samples))
        rules = os.path.join(tmp, "rules.tsv")
        with open(rules, "w") as f:
            f.writelines(f"{a}\t{b}\n" for a, b in RULES)
        spm.SentencePieceTrainer.train(
            input=corpus, model_prefix=os.path.join(tmp, "m"), vocab_size=96, model_type="bpe",
            character_coverage=0.98, normalization_rule_tsv=rules, num_threads=1, minloglevel=2)
        model = open(os.path.join(tmp, "m.model"), "rb").read()
    with open(f"{out_dir}/sentencepiece.bpe.model", "wb") as f:
        f.write(model)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "sentencepiece.bpe.model")
        with open(path, "wb") as f:
            f.write(model)
        forms = {
            "none": PLBartTokenizer(path),
            "python": PLBartTokenizer(path, src_lang="python"),
            "java": PLBartTokenizer(path, src_lang="java"),
            "multi_java": PLBartTokenizer(path, language_codes="multi", src_lang="java"),
        }
        cases = []
        for name, text in [(os.path.basename(f), s) for f, s in zip(files, samples)] + [
                (f"tricky{i}", t) for i, t in enumerate(TRICKY)]:
            ids = {k: t(text)["input_ids"] for k, t in forms.items()}
            case = {"name": name, "text": text, "ids": ids}
            if name.startswith("tricky"):
                case["pieces"] = forms["none"].convert_ids_to_tokens(ids["none"])
            cases.append(case)
        vocab = {k: t.vocab_size for k, t in forms.items()}
    ref = {"transformers": transformers.__version__, "sentencepiece": spm.__version__,
           "vocab_size": vocab, "cases": cases}
    with open(f"{ROOT}/plbart_spm_reference.json", "w", encoding="utf-8") as f:
        json.dump(ref, f, ensure_ascii=False, indent=0)
        f.write("\n")
    print(len(model), "bytes of model;", len(cases), "cases; vocab", vocab)


if __name__ == "__main__":
    main()
