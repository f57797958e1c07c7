#!/usr/bin/env python3
"""AST-Probe reference (issue #17): the paper's own code on codescope's snippets and features.

Runs the released implementation of AST-Probe (Hernández López et al. 2022,
github.com/martin-wey/ast-probe at a12634981d26c3b5e77573f8d2a81cf88c7886cb; pass the
checkout with --ast-probe, its `src/` is imported as is: `data/binary_tree.py`,
`data/code2ast.py`, `probe/probe.py`, `probe/loss.py`).

encode  -> tests/fixtures/astprobe_encoding.json
    The (d, c, u) encoding of snippets cut from the bundled corpus (assets/probe), built
    by the reference's `get_graph_from_tree`, `solve_string_problems`, `ast2binary` and
    `tree_to_distance` on the same tree-sitter grammars codescope links
    (tree-sitter-python 0.25.0, tree-sitter-java 0.23.5). codescope's snippet handling is
    mirrored: Python top-level functions parsed alone (root `module`); Java methods and
    constructors inside codescope's wrapper `class __W {\\n ... \\n}\\n` with the class
    body as the root and the wrapper's braces left out; comment nodes dropped (the
    reference strips comments from the text first, which gives the same tree here).
    Snippets with parse errors are skipped, as the reference's dataset filter does.

train DUMP -> tests/fixtures/astprobe_reference.json
    Reads what `codescope probe --probe ast --dump DUMP` wrote (the features of every
    layer, `ast.json`: each usable snippet's gold (d, c, u), the label sets and the
    train / validation / test split), divides each coordinate by its root mean square
    over the training tokens as codescope does, and trains the reference's `ParserProbe` with its
    `ParserLoss(loss='rank')` + 5 * orthogonality term, Adam lr 1e-3, batch 32,
    ReduceLROnPlateau(factor 0.1, patience 0), at most 20 epochs, early stopping after 5,
    best validation checkpoint, exactly as `run_probing_train`; then scores the test
    snippets with `distance_to_tree` / `remove_empty_nodes` / `add_unary` /
    `extend_complex_nodes` / `get_precision_recall_f1` as `run_probing_eval_f1`. Writes
    precision / recall / F1 per layer (and c / u accuracy).

Usage:
  git clone https://github.com/martin-wey/ast-probe /work/ref/ast-probe
  /work/ref/venv/bin/python tools/reference/astprobe_reference.py encode \\
      --ast-probe /work/ref/ast-probe --out tests/fixtures/astprobe_encoding.json
  codescope --model minilm probe --probe ast --limit 160 --lang python --dump /tmp/astdump
  /work/ref/venv/bin/python tools/reference/astprobe_reference.py train /tmp/astdump \\
      --ast-probe /work/ref/ast-probe --out tests/fixtures/astprobe_reference.json
"""

import argparse
import glob
import importlib
import json
import os
import sys
import types


def load_reference(path):
    """Import the reference's modules without running its package __init__ (which loads
    a compiled grammar library)."""
    for name, sub in (("astp_data", "src/data"), ("astp_probe", "src/probe")):
        pkg = types.ModuleType(name)
        pkg.__path__ = [os.path.join(path, sub)]
        sys.modules[name] = pkg
    bt = importlib.import_module("astp_data.binary_tree")
    c2a = importlib.import_module("astp_data.code2ast")
    return bt, c2a


def parsers():
    import tree_sitter_java as tsj
    import tree_sitter_python as tsp
    from tree_sitter import Language, Parser

    return {
        "python": Parser(Language(tsp.language())),
        "java": Parser(Language(tsj.language())),
    }


COMMENTS = {"comment", "line_comment", "block_comment"}


def reference_dcu(bt, c2a, node, keep):
    """The reference's encoding of the subtree `node`, keeping only the leaves whose byte
    span satisfies keep(start, end) (wrapper tokens out) and no comments."""
    import networkx as nx

    G = nx.DiGraph()
    G.add_node(0, type=node.type, is_terminal=False, start=node.start_byte, end=node.end_byte)
    c2a.get_graph_from_tree(node, G, 0)
    drop = [n for n in G if G.nodes[n]["type"] in COMMENTS]
    for n in drop:
        if n in G:
            G.remove_nodes_from(list(nx.descendants(G, n)) + [n])
    c2a.solve_string_problems(G)
    drop = [n for n in G if G.nodes[n]["is_terminal"] and not keep(G.nodes[n]["start"], G.nodes[n]["end"])]
    G.remove_nodes_from(drop)
    # Nodes left without any leaf below them (e.g. only wrapper tokens) go too.
    while True:
        bare = [n for n in G if not G.nodes[n]["is_terminal"] and G.out_degree(n) == 0]
        if not bare:
            break
        G.remove_nodes_from(bare)
    binary = bt.ast2binary(G)
    d, c, _, u = bt.tree_to_distance(binary, 0)
    leaves = sorted((n for n in G if G.nodes[n]["is_terminal"]), key=lambda n: G.nodes[n]["start"])
    return d, c, u, leaves, G


def cut(parser, text, kinds):
    tree = parser.parse(text.encode())
    out = []
    stack = [tree.root_node]
    while stack:
        n = stack.pop()
        if n.type in kinds:
            out.append(n)
            continue
        stack.extend(reversed(n.children))
    return sorted(out, key=lambda n: n.start_byte)


def encode(args):
    bt, c2a = load_reference(args.ast_probe)
    ps = parsers()
    root = os.path.join(os.path.dirname(__file__), "..", "..", "assets", "probe")
    cases = []
    for path in sorted(glob.glob(os.path.join(root, "python", "*.py"))):
        text = open(path, encoding="utf-8").read()
        for n in cut(ps["python"], text, {"function_definition"}):
            if n.start_point[1] != 0:
                continue  # methods: codescope wraps them, not mirrored here
            params = n.child_by_field_name("parameters")
            first = params.named_children[0].text.decode() if params and params.named_children else ""
            if first in ("self", "cls"):
                continue
            code = text[n.start_byte : n.end_byte]
            tree = ps["python"].parse(code.encode())
            if tree.root_node.has_error:
                continue
            d, c, u, leaves, G = reference_dcu(bt, c2a, tree.root_node, lambda s, e: True)
            toks = [code.encode()[G.nodes[l]["start"] : G.nodes[l]["end"]].decode() for l in leaves]
            cases.append({"language": "python", "code": code, "tokens": toks, "d": d, "c": c, "u": u})
    pre, post = "class __W {\n", "\n}\n"
    for path in sorted(glob.glob(os.path.join(root, "java", "*.java"))):
        text = open(path, encoding="utf-8").read()
        for n in cut(ps["java"], text, {"method_declaration", "constructor_declaration"}):
            body = text[n.start_byte : n.end_byte]
            col = n.start_point[1]
            lines = body.split("\n")
            code = "\n".join([lines[0]] + [l[min(col, len(l) - len(l.lstrip(" \t"))):] for l in lines[1:]])
            wrapped = pre + code + post
            tree = ps["java"].parse(wrapped.encode())
            if tree.root_node.has_error:
                continue
            cls = tree.root_node.children[0]
            body_node = cls.child_by_field_name("body")
            lo, hi = len(pre.encode()), len(pre.encode()) + len(code.encode())
            d, c, u, leaves, G = reference_dcu(bt, c2a, body_node, lambda s, e: lo <= s and e <= hi)
            toks = [wrapped.encode()[G.nodes[l]["start"] : G.nodes[l]["end"]].decode() for l in leaves]
            cases.append({"language": "java", "code": code, "tokens": toks, "d": d, "c": c, "u": u})
    by_lang = {}
    for k in cases:
        by_lang.setdefault(k["language"], []).append(k)
    keep = []
    for lang, v in sorted(by_lang.items()):
        keep.extend(v[: args.max_per_language])
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"reference": "martin-wey/ast-probe a12634981d26", "cases": keep}, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {len(keep)} snippets to {args.out}", file=sys.stderr)


def train(args):
    import numpy as np
    import torch
    from safetensors.numpy import load_file

    bt, _ = load_reference(args.ast_probe)
    probe_mod = importlib.import_module("astp_probe.probe")
    loss_mod = importlib.import_module("astp_probe.loss")
    meta = json.load(open(os.path.join(args.dump, "ast.json")))
    trees = meta["trees"]
    c_labels, u_labels = meta["c_labels"], meta["u_labels"]
    c_id = {s: i for i, s in enumerate(c_labels)}
    u_id = {s: i for i, s in enumerate(u_labels)}
    results = []
    layers = args.layers or list(range(meta["layers"]))
    for layer in layers:
        f = load_file(os.path.join(args.dump, "features", f"layer_{layer}.safetensors"))
        hidden, offsets = f["hidden"], f["offsets"]

        def rows(t):
            s = offsets[t["snippet"]]
            return hidden[s : s + t["n"]]

        train_rows = np.concatenate([rows(trees[i]) for i in meta["train"] + meta["val"]]).astype(np.float64)
        rms = np.maximum(np.sqrt((train_rows**2).mean(0)), 1e-6)

        def sample(i):
            t = trees[i]
            x = (rows(t) / rms).astype(np.float32)
            return x, t["d"], [c_id[c] for c in t["c"]], [u_id[u] for u in t["u"]]

        def collate(batch):
            n = [len(b[3]) for b in batch]
            L = max(n)
            dim = batch[0][0].shape[1]
            X = torch.zeros(len(batch), L, dim)
            for k, b in enumerate(batch):
                X[k, : n[k]] = torch.from_numpy(b[0])
            ds = torch.tensor([b[1] + [-1] * (L - 1 - len(b[1])) for b in batch], dtype=torch.float)
            cs = torch.tensor([b[2] + [-1] * (L - 1 - len(b[2])) for b in batch])
            us = torch.tensor([b[3] + [-1] * (L - len(b[3])) for b in batch])
            return X, ds, cs, us, torch.tensor(n)

        torch.manual_seed(args.seed)
        rng = np.random.default_rng(args.seed)
        tr = [sample(i) for i in meta["train"]]
        va = [sample(i) for i in meta["val"]]
        te = [sample(i) for i in meta["test"]]
        dim = tr[0][0].shape[1]
        model = probe_mod.ParserProbe(probe_rank=args.rank, hidden_dim=dim,
                                      number_labels_c=len(c_labels), number_labels_u=len(u_labels))
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.1, patience=0)
        crit = loss_mod.ParserLoss(loss="rank")
        best, best_state, stale = float("inf"), None, 0
        for epoch in range(20):
            model.train()
            # Passes over the training snippets, each shuffled, until the epoch has
            # `--min-steps` batches (the reference's epoch is one pass of 20,000).
            batches = []
            while True:
                order = rng.permutation(len(tr))
                batches.extend(order[k : k + 32] for k in range(0, len(tr), 32))
                if len(batches) >= args.min_steps:
                    break
            for idx in batches:
                X, ds, cs, us, n = collate([tr[j] for j in idx])
                d_pred, sc, su = model(X)
                loss = crit(d_pred=d_pred, scores_c=sc, scores_u=su, d_real=ds, c_real=cs, u_real=us, length_batch=n)
                reg = 5.0 * (torch.norm(model.proj.T @ model.proj - torch.eye(args.rank)) ** 2)
                (loss + reg).backward()
                opt.step()
                opt.zero_grad()
            model.eval()
            with torch.no_grad():
                vl = []
                for k in range(0, len(va), 32):
                    X, ds, cs, us, n = collate(va[k : k + 32])
                    d_pred, sc, su = model(X)
                    vl.append(crit(d_pred=d_pred, scores_c=sc, scores_u=su, d_real=ds, c_real=cs, u_real=us, length_batch=n).item())
            v = float(np.mean(vl))
            sched.step(v)
            if v < best:
                best, best_state, stale = v, {k: t.clone() for k, t in model.state_dict().items()}, 0
            else:
                stale += 1
            if stale == 5:
                break
        model.load_state_dict(best_state)
        model.eval()
        P, R, F = [], [], []
        c_hit = c_n = u_hit = u_n = 0
        with torch.no_grad():
            for x, d, c, u in te:
                d_pred, sc, su = model(torch.from_numpy(x)[None])
                n = len(u)
                dp = d_pred[0, : n - 1].tolist()
                cp = sc[0].argmax(-1)[: n - 1].tolist()
                up = su[0].argmax(-1)[:n].tolist()
                c_hit += sum(int(a == b) for a, b in zip(cp, c))
                u_hit += sum(int(a == b) for a, b in zip(up, u))
                c_n += n - 1
                u_n += n
                toks = [str(i) for i in range(n)]
                gold = bt.distance_to_tree(d, [c_labels[i] for i in c], [u_labels[i] for i in u], toks)
                gold = bt.extend_complex_nodes(bt.add_unary(bt.remove_empty_nodes(gold)))
                pred = bt.distance_to_tree(dp, [c_labels[i] for i in cp], [u_labels[i] for i in up], toks)
                pred = bt.extend_complex_nodes(bt.add_unary(bt.remove_empty_nodes(pred)))
                p, r, f1 = bt.get_precision_recall_f1(gold, pred)
                P.append(p)
                R.append(r)
                F.append(f1)
        row = {"layer": layer, "precision": float(np.mean(P)), "recall": float(np.mean(R)),
               "f1": float(np.mean(F)), "c_accuracy": c_hit / c_n, "u_accuracy": u_hit / u_n,
               "epochs": epoch + 1}
        print(json.dumps(row), file=sys.stderr)
        results.append(row)
    doc = {"reference": "martin-wey/ast-probe a12634981d26", "rank": args.rank,
           "train": len(meta["train"]), "val": len(meta["val"]), "test": len(meta["test"]),
           "results": results}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("encode")
    e.add_argument("--ast-probe", required=True)
    e.add_argument("--out", default="tests/fixtures/astprobe_encoding.json")
    e.add_argument("--max-per-language", type=int, default=40)
    t = sub.add_parser("train")
    t.add_argument("dump")
    t.add_argument("--ast-probe", required=True)
    t.add_argument("--out", default="tests/fixtures/astprobe_reference.json")
    t.add_argument("--rank", type=int, default=128)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--layers", type=int, nargs="*")
    t.add_argument("--min-steps", type=int, default=0)
    args = ap.parse_args()
    {"encode": encode, "train": train}[args.cmd](args)


if __name__ == "__main__":
    main()
