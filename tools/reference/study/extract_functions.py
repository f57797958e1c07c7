#!/usr/bin/env python3
"""Cut real functions out of the CPython standard library (or Java methods out of a JDK's
src.zip) for the study-exact gold-graph fixtures. Deterministic: the same stdlib and the
same arguments give the same list.

    extract_functions.py python --seed S --count N [--exclude LIST.json] > functions.json
    extract_functions.py java --src-zip PATH --seed S --count N [--exclude ...] > methods.json

Output: [{"id": "Lib/json/encoder.py:py_encode_basestring", "code": "..."}], each function
dedented to column 0 as corpus extraction (CodeSearchNet) gives it: the `def` line and the
lines after it lose the `def`'s own indentation, nothing else changes. Python: every
`def` (module level, in classes, nested), decorators excluded, 4..40 lines; Java: every
method and constructor with a body, 3..40 lines. `--exclude` drops ids already used (so a
"fresh" set shares nothing with the fixture set).
"""
import argparse
import ast
import json
import os
import random
import re
import sys
import sysconfig
import zipfile


def dedent_block(lines):
    """Remove the first line's indentation from every line that has it (continuation
    lines of a signature keep their extra indentation)."""
    first = lines[0]
    ind = first[: len(first) - len(first.lstrip())]
    out = []
    for l in lines:
        out.append(l[len(ind):] if l.startswith(ind) else l.lstrip() if not l.strip() else l)
    return '\n'.join(out)


def python_functions(min_lines, max_lines):
    root = sysconfig.get_paths()['stdlib']
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames
                             if d not in ('test', 'tests', 'idle_test', 'site-packages', '__pycache__',
                                          'lib2to3', 'turtledemo'))
        for fn in sorted(filenames):
            if not fn.endswith('.py'):
                continue
            path = os.path.join(dirpath, fn)
            try:
                src = open(path, encoding='utf-8').read()
                tree = ast.parse(src)
            except (UnicodeDecodeError, SyntaxError, ValueError):
                continue
            lines = src.split('\n')
            rel = 'Lib/' + os.path.relpath(path, root)
            for node in ast.walk(tree):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                a, b = node.lineno, node.end_lineno
                if not (min_lines <= b - a + 1 <= max_lines):
                    continue
                yield f'{rel}:{a}:{node.name}', dedent_block(lines[a - 1:b])


JAVA_METHOD = re.compile(r'^(\s*)(?:(?:public|protected|private|static|final|synchronized|abstract|native|default|strictfp)\s+)*'
                         r'(?:<[^;{}()]*>\s+)?[\w$<>\[\],.? ]+\s+(\w+)\s*\([^;{}]*\)\s*(?:throws [\w.,\s]+)?\{\s*$')


def java_methods(src_zip, min_lines, max_lines, max_files=4000):
    """Methods found by brace matching after a method-looking header line (a one-line
    signature ending in `{`); comments and strings are skipped while matching."""
    with zipfile.ZipFile(src_zip) as z:
        names = sorted(n for n in z.namelist() if n.endswith('.java') and n.startswith('java.base/java/'))
        for name in names[:max_files]:
            text = z.read(name).decode('utf-8', 'replace')
            lines = text.split('\n')
            i = 0
            while i < len(lines):
                m = JAVA_METHOD.match(lines[i])
                if not m or lines[i].strip().startswith(('return', 'new', 'else', 'if', 'for', 'while', 'switch', 'catch', 'try', '}')):
                    i += 1
                    continue
                end = match_braces(lines, i)
                if end is None:
                    i += 1
                    continue
                if min_lines <= end - i + 1 <= max_lines:
                    yield f'{name}:{i + 1}:{m.group(2)}', dedent_block(lines[i:end + 1])
                i = end + 1


def match_braces(lines, start):
    depth = 0
    in_block = False
    for k in range(start, len(lines)):
        l = lines[k]
        j = 0
        while j < len(l):
            c = l[j]
            if in_block:
                if l.startswith('*/', j):
                    in_block = False
                    j += 1
            elif l.startswith('//', j):
                break
            elif l.startswith('/*', j):
                in_block = True
                j += 1
            elif c in '"\'':
                q = c
                j += 1
                while j < len(l) and l[j] != q:
                    j += 2 if l[j] == '\\' else 1
            elif c == '{':
                depth += 1
            elif c == '}':
                depth -= 1
                if depth == 0:
                    return k
            j += 1
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('lang', choices=['python', 'java'])
    ap.add_argument('--seed', type=int, required=True)
    ap.add_argument('--count', type=int, required=True)
    ap.add_argument('--exclude', action='append', default=[])
    ap.add_argument('--src-zip')
    ap.add_argument('--min-lines', type=int)
    ap.add_argument('--max-lines', type=int, default=40)
    a = ap.parse_args()
    skip = set()
    for f in a.exclude:
        skip |= {x['id'] for x in json.load(open(f))}
    if a.lang == 'python':
        found = list(python_functions(a.min_lines or 4, a.max_lines))
    else:
        if not a.src_zip:
            sys.exit('java needs --src-zip (a JDK lib/src.zip)')
        found = list(java_methods(a.src_zip, a.min_lines or 3, a.max_lines))
    found = [f for f in found if f[0] not in skip]
    rng = random.Random(a.seed)
    rng.shuffle(found)
    json.dump([{'id': i, 'code': c} for i, c in found[:a.count]], sys.stdout, indent=0)
    print()


if __name__ == '__main__':
    main()
