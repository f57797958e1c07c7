#!/usr/bin/env python3
"""The study's own gold graphs (tokens, AST motif, data flow) for a list of functions, as
the compact JSON fixture codescope's tests compare against (tests/it/study_graphs.rs).

    study_fixture.py python FUNCTIONS.json --study DIR > tests/fixtures/study_graphs_python.json
    study_fixture.py java FUNCTIONS.json --study DIR > tests/fixtures/study_graphs_java.json

FUNCTIONS.json comes from extract_functions.py. DIR is a directory you prepare from the
study's public replication repository, stg-tud/code-LLM-critical-evaluation (see "The study's
code" in tools/reference/study/README.md): study_code.py (its graph and DFG functions,
verbatim), dfg_java.py (GraphCodeBERT's DFG_java), study_graphs.py (the driver that calls
them as the study's scripts do) and my-languages.so (the grammar it compiled). Runs under
py-tree-sitter 0.20.1 (the study's pin); Java also needs the tree_sitter_languages 1.5.0
wheel (its bundled tree-sitter-java of the same era), see tools/reference/study/README.md.

Python: the text is remove_comments_and_docstrings(code, 'python') and the graphs are
study_graphs.graphs() on it, i.e. the study's functions unchanged. Java: the study has no
code of its own; the text is remove_comments_and_docstrings(code, 'java') and the data flow
is GraphCodeBERT's DFG_java on the old grammar's tree of `class __W {\\n` + text + `\\n}\\n`
(a bare method does not parse as one in that grammar; the wrapper's tokens are dropped),
with the adjacency built as get_dfg_adj builds it.

Output: {"functions": [{"id", "text", "tokens": [start0, end0, start1, ...] (byte offsets
into text),
"ast_motif": [[i, [j...]]] (rows with their columns), "dfg": [[i, j, kind]], "errors": [...]}]}.
A function with errors is one the study's pipeline raised on or flagged: the test skips it.
"""
import argparse
import json
import os
import sys

sys.dont_write_bytecode = True


def rows(edges):
    out = {}
    for i, j in edges:
        out.setdefault(i, []).append(j)
    return [[i, out[i]] for i in sorted(out)]


def python_entry(sg, sc, parser, fid, code):
    try:
        text = sc.remove_comments_and_docstrings(code, 'python')
    except Exception as e:
        return {'id': fid, 'text': code, 'tokens': [], 'ast_motif': [], 'dfg': [],
                'errors': [f'remove_comments_and_docstrings: {type(e).__name__}: {e}']}
    g = sg.graphs(text, parser)
    if any(t['start'] == t['end'] for t in g['tokens']):
        # A def whose body was only a docstring: after the removal the grammar inserts a
        # zero-width MISSING block, a token of the study's; codescope has no empty tokens.
        g['errors'].append('zero-width token (a MISSING node after comment removal)')
    return {'id': fid, 'text': text, 'tokens': [b for t in g['tokens'] for b in (t['start'], t['end'])],
            'ast_motif': rows(g['ast_motif']), 'dfg': g['dfg'], 'errors': g['errors']}


def java_entry(sc, dj, parser, fid, code):
    import numpy as np
    text = sc.remove_comments_and_docstrings(code, 'java')
    pre, post = 'class __W {\n', '\n}\n'
    full = pre + text + post
    bc = full.encode('utf-8')
    root = parser.parse(bc).root_node
    errors = ['the old grammar reports a parse error'] if root.has_error else []
    starts = [0] + [i + 1 for i, b in enumerate(bc) if b == 10]
    index = sc.tree_to_token_index(root)
    spans = [(starts[s[0]] + s[1], starts[e[0]] + e[1]) for s, e in index]
    lines = full.split('\n')
    code_tokens = [sc.index_to_code_token(x, lines) for x in index]
    index_to_code = {ix: (k, c) for k, (ix, c) in enumerate(zip(index, code_tokens))}
    edges = []
    try:
        dfg, _ = dj.DFG_java(root, index_to_code, {})
        n = len(code_tokens)
        adj = np.zeros((n, n))
        count = 0
        kinds = {}
        for e in sorted(dfg, key=lambda x: x[1]):
            for col in e[-1]:
                count += 1
                adj[e[1], col] = 1
                kinds.setdefault((e[1], col), set()).add(e[2])
        assert count == adj.sum()
        edges = [[int(i), int(j), '/'.join(sorted(kinds[(int(i), int(j))]))] for i, j in zip(*adj.nonzero())]
    except Exception as e:
        errors.append(f'dfg: {type(e).__name__}: {e}')
    # Drop the wrapper's tokens: keep those inside the text, renumbered.
    lo, hi = len(pre.encode()), len(pre.encode()) + len(text.encode())
    keep = [k for k, (a, b) in enumerate(spans) if a >= lo and b <= hi and b > a]
    new = {k: m for m, k in enumerate(keep)}
    dfg_out = [[new[i], new[j], k] for i, j, k in edges if i in new and j in new]
    return {'id': fid, 'text': text, 'tokens': [spans[k][m] - lo for k in keep for m in (0, 1)],
            'ast_motif': [], 'dfg': sorted(dfg_out), 'errors': errors}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('lang', choices=['python', 'java'])
    ap.add_argument('functions')
    ap.add_argument('--study', required=True, metavar='DIR',
                    help="the study's code (study_code.py, dfg_java.py, study_graphs.py, "
                         "my-languages.so) taken from stg-tud/code-LLM-critical-evaluation")
    a = ap.parse_args()
    sys.path.insert(0, a.study)
    import study_code as sc
    funcs = json.load(open(a.functions))
    out = []
    if a.lang == 'python':
        import study_graphs as sg
        parser = sg.parser()
        for f in funcs:
            out.append(python_entry(sg, sc, parser, f['id'], f['code']))
    else:
        import dfg_java as dj
        import tree_sitter_languages as tl
        parser = tl.get_parser('java')
        for f in funcs:
            out.append(java_entry(sc, dj, parser, f['id'], f['code']))
    sys.stdout.write('{"functions": [\n')
    sys.stdout.write(',\n'.join(json.dumps(x, separators=(',', ':'), ensure_ascii=False) for x in out))
    sys.stdout.write('\n]}\n')


if __name__ == '__main__':
    main()
