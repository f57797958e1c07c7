#!/usr/bin/env python3
"""AST-Probe's own preprocessing and encoding on the ORIGINAL text, on 2022 grammars.

Writes tests/fixtures/astprobe_paper.json, the reference of `codescope probe --probe ast
--protocol paper`: for every function of the bundled corpus (assets/probe/python,
assets/probe/java, cut as codescope cuts them: outermost functions / methods and
constructors, dedented), plus Python functions with docstrings and comments from this
Python's standard library, a hand-made Python function with case patterns and hand-made
Java methods with comments, the leaves (code
tokens) and (d, c, u) that the released AST-Probe code (github.com/martin-wey/ast-probe
at a12634981d26c3b5e77573f8d2a81cf88c7886cb) computes from the original text. Per snippet
this is its `convert_sample_to_features`: `code2ast` (comment and docstring removal:
`remove_comments_and_docstrings_python`, a tokenize walk that also drops docstrings, or
`remove_comments_and_docstrings_java_js`, a regular expression, after wrapping Java in
`public class Main {\\n ... \\n}`; the tree-sitter parse; `get_graph_from_tree` from the
root; `solve_string_problems`), `ast2binary`, `tree_to_distance` and `get_tokens_ast`.
Snippets the paper's dataset filter drops (`code2ast` raises, the tree is not a tree, or
it has an ERROR node) are listed as skipped, with the reason.

One departure, for Java only (the paper's experiments have no Java; its Java branch is
unused): the tree is rooted at the method (the one member of the wrapper's class body),
so the wrapper's `public class Main {` and `}` are not leaves.

Grammars: AST-Probe's README clones tree-sitter-python and tree-sitter-java at their
default branch (no version pinned; py-tree-sitter 0.20.0 in requirements.txt) for the
ASE 2022 paper. Here: Python, the grammar the study compiled at the same time
(`attention/build/my-languages.so` of stg-tud/code-LLM-critical-evaluation, see
tools/reference/study/README.md; `--python-so FILE`); Java, tree-sitter-java v0.20.0
(2022-05-30, commit ac14b4b1884102839455d32543ab6d53ae089ab7; npm has no 0.20.0, so its
src/ from the git tag), compiled by py-tree-sitter 0.20.1's `Language.build_library`
(`--java-src DIR`, the grammar checkout).

Set-up and run (~5 s):
  python3 -m venv VENV && VENV/bin/pip install numpy networkx tqdm requests 'tree-sitter==0.20.1'
  git clone https://github.com/martin-wey/ast-probe /work/ref/ast-probe
  git clone https://github.com/tree-sitter/tree-sitter-java /tmp/tsj && git -C /tmp/tsj checkout v0.20.0
  VENV/bin/python tools/reference/astprobe_paper_reference.py --ast-probe /work/ref/ast-probe \\
      --python-so STUDY/my-languages.so --java-src /tmp/tsj --out tests/fixtures/astprobe_paper.json

(tqdm and requests are imported by the reference's data/utils.py, never used here.)

Output (compact JSON): {"reference", "grammars", "about", "c_labels", "u_labels",
"cases": [{"origin", "language", "code" (the original snippet), "text" (the paper's
preprocessed text, Java without the wrapper), "tokens" (leaf strings in source order),
"d" (ints), "c", "u" (indices into c_labels / u_labels)}], "skipped": [{"origin",
"language", "reason"}]}.
"""

import argparse
import glob
import hashlib
import importlib
import json
import os
import sys
import sysconfig
import types

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

# Stdlib files whose functions (those with a docstring or a comment) are added, at most
# --stdlib-per-file each.
STDLIB_FILES = ["textwrap.py", "shlex.py", "fnmatch.py", "base64.py", "bisect.py", "genericpath.py", "posixpath.py"]

# Java methods with comments (the bundled ones have none), comment markers in strings
# and character literals, a Javadoc, a block comment inside an expression.
JAVA_EXTRA = [
    ("hand:javadoc", "/**\n * Returns the larger value.\n * @param a first\n */\npublic static int max(int a, int b) {\n    // pick one\n    return a > b ? a : b; // done\n}\n"),
    ("hand:strings", "String url(String host) {\n    String s = \"http://\" + host; // scheme\n    char c = '/'; /* slash */\n    return s + c + \"/* not a comment */\";\n}\n"),
    ("hand:block", "int sum(int[] xs) {\n    int t = 0;\n    /* add\n       them all */\n    for (int x : xs) {\n        t += /* inline */ x;\n    }\n    return t;\n}\n"),
    ("hand:escapes", "String quote(String s) {\n    // escaped quote inside\n    return \"\\\"\" + s + \"\\\"\"; // q\n}\n"),
    ("hand:ctor", "Point(int x, int y) {\n    this.x = x; // x\n    this.y = y; // y\n}\n"),
    ("hand:generic", "<T extends Comparable<T>> T best(List<T> xs) {\n    /* the first is the best so far */\n    T b = xs.get(0);\n    for (T x : xs) {\n        if (x.compareTo(b) > 0) b = x; // better\n    }\n    return b;\n}\n"),
    ("hand:lambda", "List<String> names(List<Person> ps) {\n    // keep adults\n    return ps.stream().filter(p -> p.age >= 18).map(p -> p.name).collect(Collectors.toList());\n}\n"),
    ("hand:trycatch", "int parse(String s) {\n    try {\n        return Integer.parseInt(s); // fast path\n    } catch (NumberFormatException e) {\n        /* fall back */\n        return -1;\n    }\n}\n"),
]


# Python functions beyond the bundled ones: case patterns the 2022 grammar read as
# expressions (codescope reads list, tuple, star, capture and two-part dotted patterns the
# old way).
PYTHON_EXTRA = [
    ("hand:match", "def route(cmd):\n    # dispatch\n    match cmd:\n        case [\"go\", (x, y)]:\n            return x + y\n        case [first, *rest]:\n            return rest\n        case Color.RED:\n            return 1\n        case name:\n            return name\n        case _:\n            return None\n"),
]


def load_reference(path):
    """Import the reference's data modules without its package __init__ (which loads a
    compiled grammar library from grammars/)."""
    pkg = types.ModuleType("astp_data")
    pkg.__path__ = [os.path.join(path, "src/data")]
    sys.modules["astp_data"] = pkg
    return importlib.import_module("astp_data.binary_tree"), importlib.import_module("astp_data.code2ast")


def parsers(python_so, java_src, build_dir):
    from tree_sitter import Language, Parser

    java_so = os.path.join(build_dir, "java-2022.so")
    Language.build_library(java_so, [java_src])
    out = {}
    for lang, so in (("python", python_so), ("java", java_so)):
        p = Parser()
        p.set_language(Language(so, lang))
        out[lang] = p
    return out


def dedent(body, col):
    """codescope's corpus::dedent: up to `col` leading spaces/tabs off every line but
    the first."""
    out = []
    for i, line in enumerate(split_inclusive(body)):
        if i == 0:
            out.append(line)
            continue
        k = 0
        while k < min(col, len(line)) and line[k : k + 1] in (b" ", b"\t"):
            k += 1
        out.append(line[k:])
    return b"".join(out)


def split_inclusive(b):
    parts, start = [], 0
    for i, ch in enumerate(b):
        if ch == 0x0A:
            parts.append(b[start : i + 1])
            start = i + 1
    if start < len(b):
        parts.append(b[start:])
    return parts


def functions(parser, text, kinds):
    """codescope's corpus::functions: outermost nodes of `kinds`, as (line, dedented
    text), in source order."""
    data = text.encode()
    tree = parser.parse(data)
    out, stack = [], [tree.root_node]
    while stack:
        n = stack.pop()
        if n.type in kinds:
            out.append((n.start_byte, n.start_point[0] + 1, dedent(data[n.start_byte : n.end_byte], n.start_point[1]).decode()))
            continue
        stack.extend(reversed(n.children))
    return [(line, code) for _, line, code in sorted(out)]


def sha(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def canonical(tokens, d, c, u):
    """What the encoding hash is taken of (serde_json's compact form is the same)."""
    return json.dumps([tokens, d, c, u], ensure_ascii=False, separators=(",", ":"))


def paper_case(bt, c2a, parser, code, lang):
    """(text, tokens, d, c, u) by the paper's convert_sample_to_features, or a reason."""
    import networkx as nx

    try:
        G, pre = c2a.code2ast(code=code, parser=parser, lang=lang)
        assert nx.is_tree(nx.Graph(G))
        assert nx.is_connected(nx.Graph(G))
    except Exception as e:  # the paper's filter_samples drops these
        return f"code2ast fails: {type(e).__name__}: {e}"
    if c2a.has_error(G):
        return "parse error (ERROR node)"
    text = pre
    if lang == "java":
        prefix, suffix = "public class Main {\n", "\n}"
        assert pre.startswith(prefix) and pre.endswith(suffix)
        text = pre[len(prefix) : len(pre) - len(suffix)]
        cls = [m for _, m in G.out_edges(0)]
        assert len(cls) == 1 and G.nodes[cls[0]]["type"] == "class_declaration", cls
        body = [m for _, m in G.out_edges(cls[0]) if G.nodes[m]["type"] == "class_body"]
        members = [m for _, m in G.out_edges(body[0]) if G.nodes[m]["type"] not in ("{", "}")]
        if len(members) != 1:
            return f"the class body has {len(members)} members"
        m = members[0]
        G = G.subgraph([m] + list(nx.descendants(G, m))).copy()
    binary = bt.ast2binary(G)
    d, c, _, u = bt.tree_to_distance(binary, 0)
    tokens = c2a.get_tokens_ast(G, pre)
    return text, tokens, d, c, u


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ast-probe", required=True, help="checkout of martin-wey/ast-probe")
    ap.add_argument("--python-so", required=True, help="the study's my-languages.so (Python, about 2022)")
    ap.add_argument("--java-src", required=True, help="tree-sitter-java checkout at v0.20.0")
    ap.add_argument("--build-dir", default="/tmp")
    ap.add_argument("--stdlib", default=sysconfig.get_paths()["stdlib"])
    ap.add_argument("--stdlib-per-file", type=int, default=3)
    ap.add_argument("--stdlib-max-bytes", type=int, default=1800)
    ap.add_argument("--stdlib-files", help="comma-separated stdlib files instead of the default ones")
    ap.add_argument("--stdlib-any", action="store_true",
                    help="every function of those files, not only small ones with a docstring and a comment "
                         "(for a larger check, not the committed fixture)")
    ap.add_argument("--full-per-file", type=int, default=1, help="bundled cases per file given in full")
    ap.add_argument("--full-max-bytes", type=int, default=700, help="other cases given in full up to this size")
    ap.add_argument("--out", default=os.path.join(ROOT, "tests/fixtures/astprobe_paper.json"))
    args = ap.parse_args()
    bt, c2a = load_reference(args.ast_probe)
    ps = parsers(args.python_so, args.java_src, args.build_dir)
    kinds = {"python": {"function_definition"}, "java": {"method_declaration", "constructor_declaration"}}
    snippets = []
    for lang, sub, ext in (("python", "python", "py"), ("java", "java", "java")):
        for path in sorted(glob.glob(os.path.join(ROOT, "assets", "probe", sub, f"*.{ext}"))):
            text = open(path, encoding="utf-8").read()
            rel = os.path.relpath(path, ROOT)
            for line, code in functions(ps[lang], text, kinds[lang]):
                snippets.append((f"{rel}:{line}", lang, code))
    for name in (args.stdlib_files.split(",") if args.stdlib_files else STDLIB_FILES):
        path = os.path.join(args.stdlib, name)
        text = open(path, encoding="utf-8").read()
        picked = 0
        for line, code in functions(ps["python"], text, kinds["python"]):
            if picked == args.stdlib_per_file:
                break
            if args.stdlib_any or ('"""' in code and "#" in code and len(code.encode()) <= args.stdlib_max_bytes):
                snippets.append((f"stdlib:{name}:{line}", "python", code))
                picked += 1
    for origin, code in PYTHON_EXTRA:
        snippets.append((origin, "python", code))
    for origin, code in JAVA_EXTRA:
        snippets.append((origin, "java", code))
    cases, skipped = [], []
    per_file = {}
    for origin, lang, code in snippets:
        r = paper_case(bt, c2a, ps[lang], code, lang)
        if isinstance(r, str):
            skipped.append({"origin": origin, "language": lang, "reason": r})
            continue
        text, tokens, d, c, u = r
        d = [int(x) for x in d]
        bundled = origin.startswith("assets/")
        case = {"origin": origin, "n": len(tokens), "text_sha": sha(text),
                "tokens_sha": sha(json.dumps(tokens, ensure_ascii=False, separators=(",", ":"))),
                "encoding_sha": sha(canonical(tokens, d, c, u))}
        if not bundled:
            case["language"] = lang
            case["code"] = code
        key = origin.rsplit(":", 1)[0]
        per_file[key] = per_file.get(key, 0) + 1
        small = len(code.encode()) <= args.full_max_bytes
        if per_file[key] <= args.full_per_file if bundled else small:
            case.update({"text": text, "tokens": tokens, "d": d, "c": c, "u": u})
        cases.append(case)
    doc = {
        "reference": "martin-wey/ast-probe a12634981d26c3b5e77573f8d2a81cf88c7886cb, convert_sample_to_features",
        "grammars": {
            "python": "the study's compiled tree-sitter-python of about 2022 (my-languages.so), py-tree-sitter 0.20.1",
            "java": "tree-sitter-java v0.20.0 (ac14b4b1884102839455d32543ab6d53ae089ab7), py-tree-sitter 0.20.1",
        },
        "about": "leaves and (d, c, u) of the original text through the paper's preprocessing; "
                 "Java rooted at the method (the wrapper's tokens are not leaves); bundled cases "
                 "(origin assets/...) are codescope's bundled snippets, looked up by origin; "
                 "text_sha = first 12 hex digits of SHA-256 of the preprocessed text, "
                 "tokens_sha = the same of the compact JSON list of leaves, "
                 "encoding_sha = the same of the compact JSON [tokens, d, c, u]; "
                 f"stdlib functions from CPython {sys.version.split()[0]}",
        "cases": cases,
        "skipped": skipped,
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {len(cases)} cases ({len(skipped)} skipped) to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
