//! AST-Probe's tree encoding (Hernández López et al. 2022, martin-wey/ast-probe
//! `src/data/binary_tree.py`) and its inverse, over the code tokens of one snippet.
//!
//! **Encoding** ([`encode`]): the syntax tree restricted to the given tokens (every node
//! with at least one of them below it; comments and tokens past a truncation never
//! appear) is binarised as `ast2binary` does:
//! - a node with one child that is a node is fused with it, the labels joined by
//!   [`SEP`] (`expression_statement<sep>call`);
//! - a node with one child that is a token becomes that token's *unary* label `u`;
//! - a node with more than two children keeps its first child on the left and a
//!   right-branching spine of [`EMPTY`] nodes for the rest.
//!
//! Then, in order over the binary tree (`tree_to_distance`): `d[i]` is the height of the
//! lowest common ancestor of leaves `i` and `i + 1` (a leaf has height 0), `c[i]` that
//! ancestor's label, `u[k]` the unary label of leaf `k` ([`EMPTY`] when none).
//!
//! **Rebuilding** ([`rebuild`]: `distance_to_tree`, `remove_empty_nodes`, `add_unary`,
//! `extend_complex_nodes`): split the leaf range at the first largest `d`, label the
//! node `c` there, recurse on both sides; drop [`EMPTY`] nodes (their children move up;
//! an empty root is renamed [`BAD_ROOT`]); put each leaf's unary label above it; expand
//! fused labels into chains. From gold `(d, c, u)` this gives back exactly the restricted
//! syntax tree's constituents (the root's `d` is the unique maximum of its range, at
//! every level).
//!
//! **Scores** ([`prf`], `get_precision_recall_f1`): constituents are `(label, first
//! leaf, last leaf)` of every node that has children; precision = predicted
//! constituents found among the gold ones / predicted, recall = the same count / gold
//! (membership, as the reference: a duplicate predicted constituent counts each time).

use std::collections::HashMap;

use crate::syntax::{AstProbeTree, Syntax};

/// Joins the labels of a fused unary chain.
pub const SEP: &str = "<sep>";
/// The label of binarisation nodes (and of "no unary label").
pub const EMPTY: &str = "<empty>";
/// What an [`EMPTY`] root is renamed to when rebuilding (the reference's name).
pub const BAD_ROOT: &str = "bad_root";

/// A tree over `n` leaves in AST-Probe's `(d, c, u)` form.
#[derive(Debug, Clone, PartialEq)]
pub struct Encoding {
    /// `n - 1` values: the height of the LCA of leaves `i` and `i + 1` (gold), or the
    /// probe's squared distance (predicted). Only their order matters.
    pub d: Vec<f64>,
    /// `n - 1` labels of those ancestors.
    pub c: Vec<String>,
    /// `n` unary labels, [`EMPTY`] for none.
    pub u: Vec<String>,
}

impl Encoding {
    /// Number of leaves.
    pub fn len(&self) -> usize {
        self.u.len()
    }
    pub fn is_empty(&self) -> bool {
        self.u.is_empty()
    }
}

#[derive(Debug, Clone, Copy)]
enum Child {
    Leaf,
    Node(usize),
}

struct Node {
    kind: &'static str,
    children: Vec<Child>,
}

/// The syntax tree of `syn` restricted to `tokens` (syntax-token indices in source
/// order): its nodes and the root's index; `None` without tokens.
fn restricted(syn: &Syntax, tokens: &[usize]) -> Option<(Vec<Node>, usize)> {
    restricted_by(tokens, |t| syn.ancestors(t))
}

/// The tree whose leaf `t` has the ancestors `ancestors(t)` (parent first, root last)
/// restricted to the leaves `tokens` (in source order).
fn restricted_by(
    tokens: &[usize],
    ancestors: impl Fn(usize) -> Vec<(u32, &'static str)>,
) -> Option<(Vec<Node>, usize)> {
    let mut nodes: Vec<Node> = Vec::new();
    let mut index: HashMap<u32, usize> = HashMap::new();
    let mut root = None;
    for &t in tokens {
        let chain = ancestors(t);
        let &(top, top_kind) = chain.last()?;
        let mut parent = *index.entry(top).or_insert_with(|| {
            nodes.push(Node {
                kind: top_kind,
                children: Vec::new(),
            });
            nodes.len() - 1
        });
        match root {
            None => root = Some(parent),
            Some(r) if r != parent => return None,
            _ => {}
        }
        for &(id, kind) in chain.iter().rev().skip(1) {
            // Tokens come in source order, so a node is first met at its first token
            // and children are appended in source order.
            let child = match index.get(&id) {
                Some(&c) => c,
                None => {
                    nodes.push(Node {
                        kind,
                        children: Vec::new(),
                    });
                    let c = nodes.len() - 1;
                    index.insert(id, c);
                    nodes[parent].children.push(Child::Node(c));
                    c
                }
            };
            parent = child;
        }
        nodes[parent].children.push(Child::Leaf);
    }
    Some((nodes, root?))
}

/// The `(d, c, u)` encoding of the tree of `syn` restricted to the tokens `tokens`
/// (syntax-token indices, in source order); `None` with fewer than two tokens.
pub fn encode(syn: &Syntax, tokens: &[usize]) -> Option<Encoding> {
    if tokens.len() < 2 {
        return None;
    }
    encode_nodes(restricted(syn, tokens)?, tokens.len())
}

/// The `(d, c, u)` encoding of AST-Probe's own tree ([`crate::syntax::astprobe_tree`], the
/// paper's pipeline) restricted to its leaves `leaves` (indices, in source order); `None`
/// with fewer than two.
pub fn encode_astprobe(tree: &AstProbeTree, leaves: &[usize]) -> Option<Encoding> {
    if leaves.len() < 2 {
        return None;
    }
    encode_nodes(restricted_by(leaves, |k| tree.ancestors(k))?, leaves.len())
}

fn encode_nodes((nodes, root): (Vec<Node>, usize), n: usize) -> Option<Encoding> {
    let mut e = Encoder {
        nodes: &nodes,
        out: Encoding {
            d: Vec::with_capacity(n - 1),
            c: Vec::with_capacity(n - 1),
            u: Vec::with_capacity(n),
        },
    };
    e.node(root, String::new());
    debug_assert_eq!(e.out.u.len(), n);
    Some(e.out)
}

/// The constituents of the syntax tree of `syn` restricted to `tokens`, read off the
/// tree itself (no encoding): every node as `(kind, first leaf, last leaf)`, leaves
/// numbered `0..tokens.len()`. What [`rebuild`] of the gold [`encode`] must give back.
pub fn syntax_constituents(syn: &Syntax, tokens: &[usize]) -> Vec<Constituent> {
    let Some((nodes, root)) = restricted(syn, tokens) else {
        return Vec::new();
    };
    fn walk(nodes: &[Node], i: usize, next: &mut usize, out: &mut Vec<Constituent>) {
        let lo = *next;
        let at = out.len();
        out.push((nodes[i].kind.to_string(), lo, lo));
        for c in &nodes[i].children {
            match c {
                Child::Leaf => *next += 1,
                Child::Node(j) => walk(nodes, *j, next, out),
            }
        }
        out[at].2 = *next - 1;
    }
    let mut out = Vec::new();
    walk(&nodes, root, &mut 0, &mut out);
    out
}

struct Encoder<'a> {
    nodes: &'a [Node],
    out: Encoding,
}

impl Encoder<'_> {
    /// Encode node `i` (its label prefixed by the fused chain above it); returns its
    /// height in the binary tree.
    fn node(&mut self, i: usize, prefix: String) -> u32 {
        let n = &self.nodes[i];
        let label = if prefix.is_empty() {
            n.kind.to_string()
        } else {
            format!("{prefix}{SEP}{}", n.kind)
        };
        match n.children.as_slice() {
            [] => {
                // Cannot happen (every node has a token below it); a leaf of height 0.
                self.out.u.push(EMPTY.into());
                0
            }
            [Child::Node(j)] => self.node(*j, label),
            [Child::Leaf] => {
                self.out.u.push(label);
                0
            }
            [first, rest @ ..] => self.binary(label, first, rest),
        }
    }

    fn child(&mut self, c: &Child) -> u32 {
        match c {
            Child::Leaf => {
                self.out.u.push(EMPTY.into());
                0
            }
            Child::Node(j) => self.node(*j, String::new()),
        }
    }

    /// A binary node `label` over `left` and `rest` (one child, or a right-branching
    /// spine of `<empty>` nodes over several).
    fn binary(&mut self, label: String, left: &Child, rest: &[Child]) -> u32 {
        let hl = self.child(left);
        let pos = self.out.d.len();
        self.out.d.push(0.0);
        self.out.c.push(label);
        let hr = match rest {
            [one] => self.child(one),
            [next, more @ ..] => self.binary(EMPTY.into(), next, more),
            [] => 0,
        };
        let h = hl.max(hr) + 1;
        self.out.d[pos] = h as f64;
        h
    }
}

/// A rebuilt tree node: a label over the leaf range `lo ..= hi`.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeNode {
    pub label: String,
    pub lo: usize,
    pub hi: usize,
    pub children: Vec<TreeItem>,
}

/// A child in a rebuilt tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeItem {
    /// Leaf (code token) `k`.
    Leaf(usize),
    /// Node index in [`Tree::nodes`].
    Node(usize),
}

/// A tree rebuilt from `(d, c, u)`: `nodes[0]` is the root; every node has children.
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    pub nodes: Vec<TreeNode>,
}

/// A constituent: label and leaf range (inclusive).
pub type Constituent = (String, usize, usize);

impl Tree {
    /// Every node as a constituent, in pre-order.
    pub fn constituents(&self) -> Vec<Constituent> {
        self.nodes
            .iter()
            .map(|n| (n.label.clone(), n.lo, n.hi))
            .collect()
    }
}

/// Rebuild the tree of an encoding (see the module doc). `None` for fewer than two
/// leaves or inconsistent lengths.
pub fn rebuild(e: &Encoding) -> Option<Tree> {
    let n = e.u.len();
    if n < 2 || e.d.len() != n - 1 || e.c.len() != n - 1 {
        return None;
    }
    let mut t = Tree { nodes: Vec::new() };
    let items = split(e, 0, n - 1, true, &mut t);
    // The root is never removed (an empty root is renamed), so `items` is one node,
    // which `split` created first: index 0.
    debug_assert_eq!(items, vec![TreeItem::Node(0)]);
    Some(t)
}

/// A chain of nodes (outermost first) over `lo ..= hi` from a possibly fused `label`,
/// the innermost holding `children`; returns the outermost.
fn chain(t: &mut Tree, label: &str, lo: usize, hi: usize, children: Vec<TreeItem>) -> TreeItem {
    let parts: Vec<&str> = label.split(SEP).collect();
    let first = t.nodes.len();
    for (k, p) in parts.iter().enumerate() {
        t.nodes.push(TreeNode {
            label: p.to_string(),
            lo,
            hi,
            children: Vec::new(),
        });
        if k > 0 {
            let id = t.nodes.len() - 1;
            t.nodes[id - 1].children.push(TreeItem::Node(id));
        }
    }
    let last = t.nodes.len() - 1;
    t.nodes[last].children = children;
    TreeItem::Node(first)
}

/// The items the leaf range `lo ..= hi` contributes to its parent.
fn split(e: &Encoding, lo: usize, hi: usize, root: bool, t: &mut Tree) -> Vec<TreeItem> {
    if lo == hi {
        let u = &e.u[lo];
        if u == EMPTY {
            return vec![TreeItem::Leaf(lo)];
        }
        return vec![chain(t, u, lo, lo, vec![TreeItem::Leaf(lo)])];
    }
    // First largest d (numpy's argmax).
    let mut i = lo;
    for k in lo + 1..hi {
        if e.d[k] > e.d[i] {
            i = k;
        }
    }
    let label = e.c[i].as_str();
    if label == EMPTY && !root {
        let mut items = split(e, lo, i, false, t);
        items.extend(split(e, i + 1, hi, false, t));
        return items;
    }
    let label = if label == EMPTY { BAD_ROOT } else { label };
    // Reserve the chain's nodes before the children so that a node's index is below
    // its descendants' (the root is node 0).
    let item = chain(t, label, lo, hi, Vec::new());
    let mut children = split(e, lo, i, false, t);
    children.extend(split(e, i + 1, hi, false, t));
    let TreeItem::Node(first) = item else {
        unreachable!("chain returns a node")
    };
    let depth = label.split(SEP).count();
    t.nodes[first + depth - 1].children = children;
    vec![item]
}

/// Precision, recall and F1 of `pred` against `gold` constituents (the reference's
/// `get_precision_recall_f1`; all 0 when nothing matches).
pub fn prf(gold: &[Constituent], pred: &[Constituent]) -> (f64, f64, f64) {
    if gold.is_empty() || pred.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    let set: std::collections::HashSet<&Constituent> = gold.iter().collect();
    let hits = pred.iter().filter(|p| set.contains(p)).count() as f64;
    let (p, r) = (hits / pred.len() as f64, hits / gold.len() as f64);
    if p + r == 0.0 {
        return (0.0, 0.0, 0.0);
    }
    (p, r, 2.0 * p * r / (p + r))
}
