#!/usr/bin/env python3
"""Reference for the study's graph edit distance (docs/METHODS.md section 3).

The study ("A Critical Study of What Code-LLMs (Do Not) Learn") reported, per head and gold
graph, the FIRST value networkx's `optimize_graph_edit_distance` yields, on nodes named by
its `make_nodes_unique`, with edge deletion/insertion 1 and edge substitution 0, divided by
n. This script runs exactly that call (networkx 3.0, the study's environment) on

  (a) random small directed 0/1 graphs (self loops included) with random node names:
      study-like pairs (the same names on both sides, made unique or left with repeats)
      and pairs of different names and sizes (deletions, insertions, assignment ties);
  (b) real cases: codescope's own thresholded code-token attention of every MiniLM head
      against its gold graphs, on short snippets in paper mode, as dumped by
      `CODESCOPE_GED_DUMP=/tmp/ged_inputs.json cargo test --test it ged_study::dump -- --ignored`
      (the inputs are then exactly codescope's; this script names the nodes itself with
      the study's `make_nodes_unique`, so that the names are checked too);

and scipy's `linear_sum_assignment` on small random integer matrices with many ties
(square and rectangular). It writes tests/fixtures/ged_reference.json, which
tests/it/ged_study.rs compares with `codescope::analysis::ged` (every distance exactly).

Usage (repository root; a venv with networkx 3.0):
  python3 -m venv /tmp/gedvenv && /tmp/gedvenv/bin/pip install networkx==3.0 scipy numpy
  CODESCOPE_GED_DUMP=/tmp/ged_inputs.json cargo test --test it ged_study::dump -- --ignored
  /tmp/gedvenv/bin/python tools/reference/ged_reference.py --inputs /tmp/ged_inputs.json

Deterministic (seeded): byte-identical output on re-run.
"""
import argparse
import json
import platform
import random
import sys

import networkx as nx
import numpy as np
import scipy
import scipy.optimize


def make_nodes_unique(tokens):  # the study's utils.py, in place
    for i, token in enumerate(tokens):
        num_occ = 0
        for j in range(i + 1, len(tokens)):
            if token == tokens[j]:
                num_occ += 1
                tokens[j] = tokens[j] + '_' + str(num_occ)
    return tokens


def study_ged(p_mask, g_mask, names_p, names_g):
    """The study's call: the first value networkx yields (an integer-valued float)."""
    P = nx.from_numpy_array(p_mask, create_using=nx.DiGraph)
    G = nx.from_numpy_array(g_mask, create_using=nx.DiGraph)
    nx.set_node_attributes(P, {i: {'name': nm} for i, nm in enumerate(names_p)})
    nx.set_node_attributes(G, {i: {'name': nm} for i, nm in enumerate(names_g)})
    first = next(nx.optimize_graph_edit_distance(
        P, G,
        node_match=lambda a, b: a['name'] == b['name'],
        edge_del_cost=lambda e: 1, edge_ins_cost=lambda e: 1,
        edge_subst_cost=lambda a, b: 0))
    assert first == int(first)
    return int(first)


def to_hex(mask):
    """Row-major bits, 4 a hex digit, the first bit the digit's highest."""
    bits = [int(b) for b in np.asarray(mask, dtype=bool).ravel()]
    bits += [0] * (-len(bits) % 4)
    return ''.join('%x' % (bits[k] * 8 + bits[k + 1] * 4 + bits[k + 2] * 2 + bits[k + 3])
                   for k in range(0, len(bits), 4))


def from_hex(s, n):
    bits = []
    for ch in s:
        v = int(ch, 16)
        bits += [(v >> 3) & 1, (v >> 2) & 1, (v >> 1) & 1, v & 1]
    return np.array(bits[:n * n], dtype=bool).reshape(n, n)


def random_cases(rng, count):
    out = []
    for k in range(count):
        kind = ('study', 'repeats', 'different')[k % 3]
        n1 = rng.randint(0, 8) if kind == 'different' else rng.randint(1, 9)
        n2 = rng.randint(0, 8) if kind == 'different' else n1
        alphabet = 'abcd'[:rng.randint(1, 4)]
        names1 = [rng.choice(alphabet) for _ in range(n1)]
        if kind == 'study':
            names1 = make_nodes_unique(names1)
        names2 = list(names1) if kind != 'different' else [rng.choice(alphabet) for _ in range(n2)]
        d1, d2 = rng.random(), rng.random() * 0.6
        m1 = np.array([[rng.random() < d1 for _ in range(n1)] for _ in range(n1)], dtype=bool)
        m2 = np.array([[rng.random() < d2 for _ in range(n2)] for _ in range(n2)], dtype=bool)
        if kind == 'study' and n1 and rng.random() < 0.5:
            np.fill_diagonal(m1, True)  # thresholded attention keeps most of its diagonal
        m1 = m1.reshape(n1, n1)
        m2 = m2.reshape(n2, n2)
        out.append({
            'kind': kind, 'names1': names1, 'names2': names2,
            'edges1': to_hex(m1), 'edges2': to_hex(m2),
            'distance': study_ged(m1, m2, names1, names2),
        })
    return out


def lsap_cases(rng, count):
    out = []
    for _ in range(count):
        nr, nc = rng.randint(1, 7), rng.randint(1, 7)
        cost = [rng.randint(0, 2) for _ in range(nr * nc)]
        rows, cols = scipy.optimize.linear_sum_assignment(np.array(cost, dtype=float).reshape(nr, nc))
        out.append({'nr': nr, 'nc': nc, 'cost': cost,
                    'rows': [int(x) for x in rows], 'cols': [int(x) for x in cols]})
    return out


def real_cases(inputs):
    out = []
    for s in inputs['snippets']:
        n = s['n']
        names = make_nodes_unique(list(s['tokens']))
        graphs = list(s['gold'])
        golds = [from_hex(s['gold'][g], n) for g in graphs]
        heads = []
        for hd in s['heads']:
            p = from_hex(hd['p'], n)
            heads.append({'layer': hd['layer'], 'head': hd['head'], 'p': hd['p'],
                          'distance': [study_ged(p, m, names, names) for m in golds]})
        out.append({'file': s['file'], 'mode': s['mode'], 'threshold': s['threshold'], 'n': n,
                    'tokens': s['tokens'], 'names': names, 'graphs': graphs, 'gold': s['gold'],
                    'heads': heads})
        print(f"{s['file']}: n = {n}, {len(heads)} heads x {len(golds)} graphs", file=sys.stderr)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--inputs', required=True, help='what the ignored dump test wrote')
    ap.add_argument('--out', default='tests/fixtures/ged_reference.json')
    ap.add_argument('--random', type=int, default=240)
    ap.add_argument('--lsap', type=int, default=80)
    args = ap.parse_args()
    assert nx.__version__ == '3.0', f'networkx {nx.__version__}: the study used 3.0'
    with open(args.inputs) as f:
        inputs = json.load(f)
    rng = random.Random(20261202)
    doc = {
        'schema_version': 1,
        'description': "networkx 3.0 optimize_graph_edit_distance, first value, the study's costs "
                       "and make_nodes_unique; scipy linear_sum_assignment. Masks: row-major bits "
                       "as hex, 4 a digit, first bit highest.",
        'environment': {'python': platform.python_version(), 'networkx': nx.__version__,
                        'scipy': scipy.__version__, 'numpy': np.__version__},
        'model': inputs['model'],
        'lsap': lsap_cases(rng, args.lsap),
        'random': random_cases(rng, args.random),
        'real': real_cases(inputs),
    }
    with open(args.out, 'w') as f:
        json.dump(doc, f, separators=(',', ':'), ensure_ascii=False)
        f.write('\n')
    print(f"wrote {args.out}: {len(doc['lsap'])} assignments, {len(doc['random'])} random pairs, "
          f"{sum(len(s['heads']) * len(s['gold']) for s in doc['real'])} real head-graph pairs",
          file=sys.stderr)


if __name__ == '__main__':
    main()
