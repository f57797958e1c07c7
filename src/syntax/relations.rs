//! Gold relation graphs over code tokens (METHODS.md 2) and tree distances (METHODS.md 4).
//!
//! Role: from the flattened tree (`parse.rs`'s `Arena`) and the code tokens, build
//! - the **AST motif graph** G, exactly as the study's `traverse_node` in
//!   `attention/graph_utils.py` (stg-tud/code-LLM-critical-evaluation): for token t with
//!   parent P, `t -> u` when u is another leaf child of P, or a leaf child of a non-leaf
//!   sibling S of t whose kind is not `block`. A collapsed string counts as a leaf of its
//!   parent (METHODS.md 1, documented deviation). Comments and zero-width MISSING leaves
//!   are not tokens, so they take part in no edge;
//! - the **syntactic** graph (edges of G with no identifier end) and the
//!   **syntactic-identifier** edges (exactly one identifier end);
//! - the **data-flow graph** (identifier -> identifier), GraphCodeBERT style
//!   (`GraphCodeBERT/codesearch/parser/DFG.py`, microsoft/CodeBERT), see [`Dfg`];
//! - parent links for LCA / tree-distance queries ([`TreeInfo`]).
//!
//! Invariants: every edge list is sorted and deduplicated, has no self edge and indexes
//! `tokens`; the DFG only links identifier tokens. Graph size is bounded by
//! [`MAX_GRAPH_EDGES`] (the motif graph is quadratic in sibling count).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::lang::Language;
use super::parse::{
    java_is_target, python_is_method, Arena, Binding, Category, Coarse, CodeToken, IdentRole, Role,
    NONE,
};
use super::{Lca, SyntaxError};

/// Upper bound on the number of motif edges of one snippet; beyond it [`parse()`] fails
/// with [`SyntaxError::TooManyEdges`] instead of allocating gigabytes (a flat list
/// literal with n elements has ~4n² motif edges).
///
/// [`parse()`]: super::parse()
pub const MAX_GRAPH_EDGES: usize = 4_000_000;

/// Kind of a data-flow edge `i -> j` (GraphCodeBERT's two relations).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum DfgKind {
    /// Occurrence i holds a value that comes from occurrence j: a use from its reaching
    /// definition(s); a declared name / default parameter from the identifiers of its
    /// initializer (GraphCodeBERT's `variable_declarator` / `default_parameter` rule).
    #[serde(rename = "comesFrom")]
    ComesFrom,
    /// Target i is computed from identifier j of the assigned expression
    /// (assignments, augmented assignments, loop / `with` / `except` / pattern targets,
    /// walrus, `instanceof` bindings).
    #[serde(rename = "computedFrom")]
    ComputedFrom,
}

/// The gold graphs of one snippet. Indices are into [`super::Syntax::tokens`]; every list
/// is sorted and deduplicated.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Graphs {
    /// AST motif graph G (directed, not symmetric).
    pub ast_motif: Vec<(usize, usize)>,
    /// Edges of G between two non-identifier tokens.
    pub syntactic: Vec<(usize, usize)>,
    /// Edges of G with exactly one identifier end.
    pub syntactic_identifier: Vec<(usize, usize)>,
    /// Data-flow edges between identifier tokens.
    pub dfg: Vec<(usize, usize, DfgKind)>,
}

/// The gold graphs by name (METHODS.md 2). `ALL` is the report order; `name()` is the
/// key used in every JSON, CSV and table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Graph {
    /// AST motif graph G.
    AstMotif,
    /// Edges of G between two non-identifier tokens.
    Syntactic,
    /// Edges of G with exactly one identifier end.
    SyntacticIdentifier,
    /// Data-flow graph.
    Dfg,
}

impl Graph {
    /// Every graph, in report order.
    pub const ALL: [Graph; 4] = [
        Graph::AstMotif,
        Graph::Syntactic,
        Graph::SyntacticIdentifier,
        Graph::Dfg,
    ];

    /// The key used in JSON, CSV and tables (`ast_motif`, `dfg`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Graph::AstMotif => "ast_motif",
            Graph::Syntactic => "syntactic",
            Graph::SyntacticIdentifier => "syntactic_identifier",
            Graph::Dfg => "dfg",
        }
    }

    /// A label for people (panel titles, figure captions).
    pub fn label(self) -> &'static str {
        match self {
            Graph::AstMotif => "AST motif",
            Graph::Syntactic => "syntactic",
            Graph::SyntacticIdentifier => "syntactic-identifier",
            Graph::Dfg => "data flow",
        }
    }

    /// The graph called `name` (as [`Graph::name`] spells it).
    pub fn from_name(name: &str) -> Option<Graph> {
        Graph::ALL.into_iter().find(|g| g.name() == name)
    }
}

impl std::fmt::Display for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Graphs {
    /// Edges of graph `g` as `(i, j)` pairs (data-flow kinds dropped).
    pub fn edges(&self, g: Graph) -> Vec<(usize, usize)> {
        match g {
            Graph::AstMotif => self.ast_motif.clone(),
            Graph::Syntactic => self.syntactic.clone(),
            Graph::SyntacticIdentifier => self.syntactic_identifier.clone(),
            Graph::Dfg => self.dfg.iter().map(|&(i, j, _)| (i, j)).collect(),
        }
    }

    /// DFG edges without their kind, deduplicated (for P/R/F1 against attention).
    pub fn dfg_pairs(&self) -> Vec<(usize, usize)> {
        let mut v: Vec<_> = self.dfg.iter().map(|&(i, j, _)| (i, j)).collect();
        v.dedup();
        v
    }
}

/// Build all graphs. `root` is the node the analysis starts from (the tree root, or
/// the wrapper's body for wrapped Java).
pub(crate) fn build_graphs(
    arena: &Arena,
    tokens: &[CodeToken],
    tree: &TreeInfo,
    lang: Language,
    root: u32,
) -> Result<Graphs, SyntaxError> {
    let ast_motif = motif_graph(arena, &tree.token_node)?;
    let is_id = |i: usize| tokens[i].coarse == Coarse::Identifier;
    let syntactic = ast_motif
        .iter()
        .copied()
        .filter(|&(i, j)| !is_id(i) && !is_id(j))
        .collect();
    let syntactic_identifier = ast_motif
        .iter()
        .copied()
        .filter(|&(i, j)| is_id(i) != is_id(j))
        .collect();
    let dfg = data_flow_graph(arena, tokens, lang, root);
    Ok(Graphs {
        ast_motif,
        syntactic,
        syntactic_identifier,
        dfg,
    })
}

// ---------------------------------------------------------------------------------------
// AST motif graph
// ---------------------------------------------------------------------------------------

/// Number of motif targets a child `c` of a token's parent contributes.
fn motif_contribution(a: &Arena, c: u32) -> usize {
    if a.is_leaf(c) {
        usize::from(a.token(c).is_some())
    } else if a.kind(c) != "block" {
        a.children(c)
            .iter()
            .filter(|&&g| a.is_leaf(g) && a.token(g).is_some())
            .count()
    } else {
        0
    }
}

/// The AST motif graph (graph_utils.py `traverse_node`, `motif_nodes`).
fn motif_graph(a: &Arena, token_node: &[u32]) -> Result<Vec<(usize, usize)>, SyntaxError> {
    // Count first (O(nodes)) so that a quadratic blow-up is refused before allocation.
    let mut per_parent: HashMap<u32, usize> = HashMap::new();
    let mut total = 0usize;
    for &t in token_node {
        let Some(p) = a.parent(t) else { continue };
        let c = *per_parent.entry(p).or_insert_with(|| {
            a.children(p)
                .iter()
                .map(|&c| motif_contribution(a, c))
                .sum()
        });
        total += c.saturating_sub(1);
    }
    if total > MAX_GRAPH_EDGES {
        return Err(SyntaxError::TooManyEdges {
            edges: total,
            max: MAX_GRAPH_EDGES,
        });
    }
    let mut edges = Vec::with_capacity(total);
    for (i, &t) in token_node.iter().enumerate() {
        let Some(p) = a.parent(t) else { continue };
        for &c in a.children(p) {
            if c == t {
                continue;
            }
            if a.is_leaf(c) {
                if let Some(j) = a.token(c) {
                    edges.push((i, j));
                }
            } else if a.kind(c) != "block" {
                for &g in a.children(c) {
                    if a.is_leaf(g) {
                        if let Some(j) = a.token(g) {
                            edges.push((i, j));
                        }
                    }
                }
            }
        }
    }
    edges.sort_unstable();
    edges.dedup();
    edges.retain(|&(i, j)| i != j);
    Ok(edges)
}

// ---------------------------------------------------------------------------------------
// Tree distance
// ---------------------------------------------------------------------------------------

/// Parent links and rebased depths of the tree, for LCA queries (METHODS.md 4).
#[derive(Debug, Clone, Default)]
pub(crate) struct TreeInfo {
    parent: Vec<u32>,
    depth: Vec<u32>,
    kind: Vec<&'static str>,
    /// Arena node of each token (the leaf, or the collapsed string node).
    pub token_node: Vec<u32>,
}

impl TreeInfo {
    /// `root` becomes the root (its parent link is cut); depths are reduced by `base`.
    pub fn new(a: &Arena, root: u32, base: u32, token_node: Vec<u32>) -> Self {
        let mut parent: Vec<u32> = a.nodes.iter().map(|n| n.parent).collect();
        parent[root as usize] = NONE;
        TreeInfo {
            parent,
            depth: a
                .nodes
                .iter()
                .map(|n| n.depth.saturating_sub(base))
                .collect(),
            kind: a.nodes.iter().map(|n| n.kind).collect(),
            token_node,
        }
    }

    /// Ancestors of token `i` (node id, kind), its parent first, the root last.
    pub fn ancestors(&self, i: usize) -> Vec<(u32, &'static str)> {
        let mut out = Vec::new();
        let mut n = self.parent[self.token_node[i] as usize];
        while n != NONE {
            out.push((n, self.kind[n as usize]));
            n = self.parent[n as usize];
        }
        out
    }

    /// Lowest common ancestor of tokens `i` and `j`.
    pub fn lca(&self, i: usize, j: usize) -> Lca {
        let (mut x, mut y) = (self.token_node[i], self.token_node[j]);
        let d = |n: u32| self.depth[n as usize];
        while x != y {
            let (px, py) = (self.parent[x as usize], self.parent[y as usize]);
            if d(x) >= d(y) && px != NONE {
                x = px;
            } else if py != NONE {
                y = py;
            } else if px != NONE {
                x = px;
            } else {
                // Disconnected (cannot happen for tokens under the root): the root.
                return Lca { depth: 0, kind: "" };
            }
        }
        Lca {
            depth: d(x) as usize,
            kind: self.kind[x as usize],
        }
    }
}

// ---------------------------------------------------------------------------------------
// Data-flow graph
// ---------------------------------------------------------------------------------------

/// Deepest syntax nesting the DFG walker follows; deeper subtrees add no DFG edges.
const MAX_DFG_DEPTH: usize = 1500;
/// Stack for the recursive DFG walk (run on its own thread so deep code cannot overflow
/// the caller's stack).
const DFG_STACK_BYTES: usize = 64 << 20;
/// Symbols of attribute/field keys (`self.x`, `this.x`) have this bit set.
const FIELD: u32 = 1 << 31;

/// The data-flow graph (identifier -> identifier); see [`Dfg`] for the rules.
fn data_flow_graph(
    a: &Arena,
    tokens: &[CodeToken],
    lang: Language,
    root: u32,
) -> Vec<(usize, usize, DfgKind)> {
    // Captures only shared references, so the closure is `Copy`: it can still run
    // inline if the thread cannot be spawned.
    let run = move || {
        let mut d = Dfg::new(a, tokens, lang);
        if lang == Language::Python && a.parent_kind(root) == "class_definition" {
            // Wrapped pasted methods: the wrapper's class scope.
            d.push(ScopeKind::Class, None);
        }
        d.visit(root);
        d.finish()
    };
    // Small inputs cannot nest deeply: skip the thread.
    if a.nodes.len() < 2_000 {
        return run();
    }
    std::thread::scope(|s| {
        match std::thread::Builder::new()
            .stack_size(DFG_STACK_BYTES)
            .spawn_scoped(s, run)
        {
            // A panic in the walker costs the DFG, not the caller.
            Ok(h) => h.join().unwrap_or_default(),
            Err(_) => run(),
        }
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ScopeKind {
    Module,
    Function,
    Comprehension,
    Class,
}

#[derive(Debug, Clone)]
struct Scope {
    kind: ScopeKind,
    /// symbol -> tokens of the reaching definitions (sorted).
    vars: HashMap<u32, Vec<u32>>,
    /// Python: the receiver parameter (`self`) of a method scope.
    receiver: Option<u32>,
    /// Python `global` / `nonlocal`: symbol -> scope index that owns it.
    redirect: HashMap<u32, usize>,
}

impl Scope {
    fn new(kind: ScopeKind) -> Self {
        Scope {
            kind,
            vars: HashMap::new(),
            receiver: None,
            redirect: HashMap::new(),
        }
    }
}

type Loc = (usize, u32);

/// GraphCodeBERT-style data flow (DFG.py), restricted to identifier tokens.
///
/// Semantics followed from DFG.py:
/// - a use gets `comesFrom` edges to the last definition(s) of its name; the first
///   occurrence of an unbound name acts as its definition (DFG.py's `states[code] = [idx]`);
/// - assignment targets get `computedFrom` edges to every identifier of the right side
///   (element-wise for `a, b = c, d` when both sides have the same arity);
///   `variable_declarator` / `default_parameter` names get `comesFrom` edges to their
///   initializer's identifiers;
/// - `if`/`elif`/`else`, `try`/`except`, `match`/`switch` are branches: each starts
///   from the state before it and the reaching definitions after it are the UNION of
///   the branch ends (plus the fall-through state when there is no `else`/`default`);
/// - loop bodies are walked twice, so uses see definitions from later in the body
///   (loop-carried), and the state after the loop is the union of "not entered" and
///   "after the body".
///
/// codescope's refinements (documented deviations):
/// - only identifiers that are values take part: keyword-argument names, type names,
///   labels, module paths, Java method names and attribute names on arbitrary objects
///   are left out; attributes through `self` (the first parameter of a Python method)
///   or Java `this`, and Java bare field names, are tracked per class as fields, so
///   `self.x = v` in `__init__` reaches `return self.x` in a later method;
/// - scopes: functions, lambdas, comprehensions and classes open scopes (Python class
///   bodies are not visible from methods; `global`/`nonlocal` are honoured);
/// - `x += y`, `i++` and writes through `a[i] = v` / `a.f = v` also read the old value
///   (`comesFrom` the previous definition) and do not create self edges;
/// - `for k, v in d.items()` binds every target from the whole iterable (DFG.py pairs
///   targets with the call's children, which drops `v`);
/// - `with ... as x`, `except E as e`, pattern captures (`case P(x=a)`, Java type /
///   record patterns, `instanceof T t`) are `computedFrom` their subject expression.
struct Dfg<'a> {
    a: &'a Arena,
    tokens: &'a [CodeToken],
    roles: Vec<Option<IdentRole>>,
    lang: Language,
    syms: HashMap<&'a str, u32>,
    scopes: Vec<Scope>,
    edges: Vec<(usize, usize, DfgKind)>,
    /// Identifier tokens touched (used or defined), in visit order; a slice of it is
    /// the set of "identifiers of an expression".
    log: Vec<usize>,
    /// Subject identifiers while visiting a pattern (`case`, Java patterns).
    pattern_sources: Option<Vec<usize>>,
    depth: usize,
}

/// Assignment-target containers (shared with role inference) plus `as` targets.
fn py_bind_container(kind: &str) -> bool {
    kind == "as_pattern_target" || super::parse::PY_TARGET_CONTAINERS.contains(&kind)
}

const PUNCT: [&str; 5] = [",", "(", ")", "[", "]"];

impl<'a> Dfg<'a> {
    fn new(a: &'a Arena, tokens: &'a [CodeToken], lang: Language) -> Self {
        Dfg {
            a,
            tokens,
            roles: tokens.iter().map(CodeToken::ident_role).collect(),
            lang,
            syms: HashMap::new(),
            scopes: vec![Scope::new(ScopeKind::Module)],
            edges: Vec::new(),
            log: Vec::new(),
            pattern_sources: None,
            depth: 0,
        }
    }

    fn finish(mut self) -> Vec<(usize, usize, DfgKind)> {
        let tokens = self.tokens;
        self.edges.retain(|&(i, j, _)| {
            i != j
                && tokens[i].category == Category::Identifier
                && tokens[j].category == Category::Identifier
        });
        self.edges.sort_unstable();
        self.edges.dedup();
        self.edges
    }

    // --- small helpers -------------------------------------------------------------

    fn sym(&mut self, tok: usize) -> u32 {
        let next = self.syms.len() as u32;
        *self
            .syms
            .entry(self.tokens[tok].text.as_str())
            .or_insert(next)
    }

    /// Token of a leaf node if it is an identifier.
    fn ident(&self, n: u32) -> Option<usize> {
        let t = self.a.token(n)?;
        (self.tokens[t].category == Category::Identifier).then_some(t)
    }

    fn inner(&self) -> usize {
        self.scopes.len() - 1
    }

    fn since(&self, mark: usize) -> Vec<usize> {
        let mut v = self.log[mark..].to_vec();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Visit `n` and return the identifiers it touched.
    fn sources_of(&mut self, n: Option<u32>) -> Vec<usize> {
        let mark = self.log.len();
        if let Some(n) = n {
            self.visit(n);
        }
        self.since(mark)
    }

    fn snapshot(&self) -> Vec<Scope> {
        self.scopes.clone()
    }

    fn merge(states: Vec<Vec<Scope>>) -> Vec<Scope> {
        let mut it = states.into_iter();
        let mut base = it.next().unwrap_or_default();
        for st in it {
            for (i, sc) in st.into_iter().enumerate().take(base.len()) {
                for (k, v) in sc.vars {
                    let e = base[i].vars.entry(k).or_default();
                    e.extend(v);
                    e.sort_unstable();
                    e.dedup();
                }
            }
        }
        base
    }

    fn restore_merged(&mut self, states: Vec<Vec<Scope>>) {
        let merged = Self::merge(states);
        if merged.len() == self.scopes.len() {
            self.scopes = merged;
        }
    }

    fn push(&mut self, kind: ScopeKind, receiver: Option<u32>) {
        let mut s = Scope::new(kind);
        s.receiver = receiver;
        self.scopes.push(s);
    }

    fn pop(&mut self) {
        if self.scopes.len() > 1 {
            self.scopes.pop();
        }
    }

    fn nearest_class(&self) -> Option<usize> {
        self.scopes.iter().rposition(|s| s.kind == ScopeKind::Class)
    }

    // --- name resolution -------------------------------------------------------------

    /// Where a bare name is currently bound.
    fn resolve(&self, s: u32) -> Option<Loc> {
        let inner = self.inner();
        if let Some(&t) = self.scopes[inner].redirect.get(&s) {
            return self.scopes[t].vars.contains_key(&s).then_some((t, s));
        }
        for (i, sc) in self.scopes.iter().enumerate().rev() {
            match (self.lang, sc.kind) {
                (Language::Python, ScopeKind::Class) if i != inner => continue,
                (Language::Java, ScopeKind::Class) => {
                    if sc.vars.contains_key(&(s | FIELD)) {
                        return Some((i, s | FIELD));
                    }
                }
                _ => {
                    if sc.vars.contains_key(&s) {
                        return Some((i, s));
                    }
                }
            }
        }
        None
    }

    /// Where a new binding of a bare name goes.
    fn bare_def_loc(&self, s: u32) -> Loc {
        let inner = self.inner();
        match self.scopes[inner].redirect.get(&s) {
            Some(&t) => (t, s),
            None => (inner, s),
        }
    }

    /// Field key of an attribute leaf `n` reached through the receiver (`self.x`,
    /// `this.x`), as (class scope, key).
    fn field_loc(&mut self, n: u32) -> Option<Loc> {
        let a = self.a;
        let p = a.parent(n)?;
        let tok = a.token(n)?;
        match self.lang {
            Language::Python => {
                if a.kind(p) != "attribute" || a.field(n) != Some("attribute") {
                    return None;
                }
                let obj = a.child_by_field(p, "object")?;
                let obj_tok = self.ident(obj)?;
                let obj_sym = self.sym(obj_tok);
                // The nearest method scope decides what the receiver is.
                for i in (0..self.scopes.len()).rev() {
                    match self.scopes[i].kind {
                        ScopeKind::Class => return None,
                        _ => {
                            if let Some(r) = self.scopes[i].receiver {
                                if r != obj_sym || i == 0 {
                                    return None;
                                }
                                let c = i - 1;
                                if self.scopes[c].kind != ScopeKind::Class {
                                    return None;
                                }
                                let key = self.sym(tok) | FIELD;
                                return Some((c, key));
                            }
                        }
                    }
                }
                None
            }
            Language::Java => {
                if a.kind(p) != "field_access" || a.field(n) != Some("field") {
                    return None;
                }
                let obj = a.child_by_field(p, "object")?;
                if a.kind(obj) != "this" {
                    return None;
                }
                let c = self.nearest_class()?;
                Some((c, self.sym(tok) | FIELD))
            }
        }
    }

    // --- events ----------------------------------------------------------------------

    fn edge(&mut self, i: usize, j: usize, kind: DfgKind) {
        if i != j {
            self.edges.push((i, j, kind));
        }
    }

    /// A read of `tok` at `loc`; unbound -> the occurrence becomes the definition at
    /// `fallback` (DFG.py).
    fn read(&mut self, tok: usize, loc: Option<Loc>, fallback: Loc) {
        let defs = loc.and_then(|(i, k)| self.scopes[i].vars.get(&k).cloned());
        match defs {
            Some(defs) => {
                for d in defs {
                    self.edge(tok, d as usize, DfgKind::ComesFrom);
                }
            }
            None => {
                self.scopes[fallback.0]
                    .vars
                    .insert(fallback.1, vec![tok as u32]);
            }
        }
        self.log.push(tok);
    }

    fn use_bare(&mut self, tok: usize) {
        let s = self.sym(tok);
        let loc = self.resolve(s);
        let fallback = self.bare_def_loc(s);
        self.read(tok, loc, fallback);
    }

    /// A (re)definition of `tok` at `locs`, from `sources`.
    fn write(&mut self, tok: usize, locs: &[Loc], aug: bool, sources: &[usize], kind: DfgKind) {
        if aug {
            for &(i, k) in locs {
                if let Some(defs) = self.scopes[i].vars.get(&k).cloned() {
                    for d in defs {
                        self.edge(tok, d as usize, DfgKind::ComesFrom);
                    }
                }
            }
        }
        for &s in sources {
            self.edge(tok, s, kind);
        }
        for &(i, k) in locs {
            self.scopes[i].vars.insert(k, vec![tok as u32]);
        }
        self.log.push(tok);
    }

    /// Define identifier leaf `n` (token `tok`) according to its role.
    fn define(
        &mut self,
        tok: usize,
        n: u32,
        role: Role,
        aug: bool,
        sources: &[usize],
        kind: DfgKind,
    ) {
        let s = self.sym(tok);
        let inner = self.inner();
        let in_class = self.scopes[inner].kind == ScopeKind::Class;
        let a = self.a;
        let locs: Vec<Loc> = match (self.lang, role) {
            (Language::Python, Role::Attribute) if a.parent_kind(n) == "attribute" => {
                match self.field_loc(n) {
                    Some(l) => vec![l],
                    None => return,
                }
            }
            (Language::Python, Role::Attribute | Role::Method | Role::Function) if in_class => {
                vec![(inner, s), (inner, s | FIELD)]
            }
            (
                Language::Python,
                Role::Type | Role::KeywordArgument | Role::Label | Role::Decorator,
            ) => return,
            (Language::Python, _) => vec![self.bare_def_loc(s)],
            (Language::Java, Role::Attribute) => {
                if a.parent_kind(n) == "field_access" {
                    match self.field_loc(n) {
                        Some(l) => vec![l],
                        None => return,
                    }
                } else {
                    match self.nearest_class() {
                        Some(c) => vec![(c, s | FIELD)],
                        None => vec![(inner, s)],
                    }
                }
            }
            (Language::Java, Role::Variable) if java_is_target(a, n) => {
                vec![self.resolve(s).unwrap_or((inner, s))]
            }
            (Language::Java, Role::Variable | Role::Parameter) => vec![(inner, s)],
            (Language::Java, _) => return,
        };
        self.write(tok, &locs, aug, sources, kind);
    }

    /// Define leaf `n` with its own role (or as a variable when it has none).
    fn define_leaf(&mut self, n: u32, aug: bool, sources: &[usize], kind: DfgKind) {
        if let Some(tok) = self.ident(n) {
            let role = self.roles[tok]
                .filter(IdentRole::is_definition)
                .map_or(Role::Variable, |r| r.role);
            self.define(tok, n, role, aug, sources, kind);
        }
    }

    // --- traversal -------------------------------------------------------------------

    fn visit(&mut self, n: u32) {
        if self.depth >= MAX_DFG_DEPTH {
            return;
        }
        self.depth += 1;
        if self.a.is_leaf(n) {
            self.leaf(n);
        } else {
            match self.lang {
                Language::Python => self.visit_python(n),
                Language::Java => self.visit_java(n),
            }
        }
        self.depth -= 1;
    }

    fn visit_opt(&mut self, n: Option<u32>) {
        if let Some(n) = n {
            self.visit(n);
        }
    }

    fn visit_children(&mut self, n: u32) {
        let a = self.a;
        for &c in a.children(n) {
            self.visit(c);
        }
    }

    fn leaf(&mut self, n: u32) {
        let Some(tok) = self.ident(n) else { return };
        let Some(role) = self.roles[tok] else { return };
        match role.binding {
            Binding::Use => match role.role {
                Role::Variable | Role::Function => self.use_bare(tok),
                Role::Decorator if self.lang == Language::Python => self.use_bare(tok),
                Role::Attribute | Role::Method => {
                    if let Some(loc) = self.field_loc(n) {
                        self.read(tok, Some(loc), loc);
                    }
                }
                _ => {}
            },
            Binding::Definition => {
                let sources = self.pattern_sources.clone().unwrap_or_default();
                self.define(tok, n, role.role, false, &sources, DfgKind::ComputedFrom);
            }
        }
    }

    /// Bind assignment target `l` from `sources`.
    fn bind(&mut self, l: u32, sources: &[usize], aug: bool) {
        let a = self.a;
        if a.is_leaf(l) {
            self.define_leaf(l, aug, sources, DfgKind::ComputedFrom);
            return;
        }
        let k = a.kind(l);
        match (self.lang, k) {
            (Language::Python, c) if py_bind_container(c) => {
                for &ch in a.children(l) {
                    self.bind(ch, sources, aug);
                }
            }
            (Language::Java, "parenthesized_expression") => {
                for &ch in a.children(l) {
                    self.bind(ch, sources, aug);
                }
            }
            (Language::Python, "attribute") | (Language::Java, "field_access") => {
                let (of, ff) = if k == "attribute" {
                    ("object", "attribute")
                } else {
                    ("object", "field")
                };
                let obj = a.child_by_field(l, of);
                let field = a.child_by_field(l, ff);
                let through_receiver = field.is_some_and(|f| self.field_loc(f).is_some());
                if through_receiver {
                    self.visit_opt(obj);
                    if let Some(f) = field {
                        self.define_leaf(f, aug, sources, DfgKind::ComputedFrom);
                    }
                } else if let Some(o) = obj {
                    self.mutate(o, sources);
                }
            }
            (Language::Python, "subscript") | (Language::Java, "array_access") => {
                let base_field = if k == "subscript" { "value" } else { "array" };
                let base = a.child_by_field(l, base_field);
                for &ch in a.children(l) {
                    if Some(ch) != base {
                        self.visit(ch);
                    }
                }
                if let Some(b) = base {
                    self.mutate(b, sources);
                }
            }
            _ => self.visit(l),
        }
    }

    /// A write into part of `obj` (`obj[i] = v`, `obj.f = v`): the variable is read and
    /// redefined (DFG.py makes the whole left side a target).
    fn mutate(&mut self, obj: u32, sources: &[usize]) {
        let a = self.a;
        if a.is_leaf(obj) {
            if let Some(tok) = self.ident(obj) {
                self.use_bare(tok);
                let s = self.sym(tok);
                let loc = match self.lang {
                    Language::Python => self.bare_def_loc(s),
                    Language::Java => self.resolve(s).unwrap_or((self.inner(), s)),
                };
                self.write(tok, &[loc], false, sources, DfgKind::ComputedFrom);
            }
        } else if matches!(
            a.kind(obj),
            "attribute" | "subscript" | "field_access" | "array_access"
        ) {
            self.bind(obj, sources, true);
        } else {
            self.visit(obj);
        }
    }

    /// Walk `body` twice (loop-carried flow); afterwards the state is the union of
    /// "not entered" and "after the body".
    fn loop_twice(&mut self, mut body: impl FnMut(&mut Self)) {
        let before = self.snapshot();
        for _ in 0..2 {
            body(self);
            let after = self.snapshot();
            self.restore_merged(vec![before.clone(), after]);
        }
    }

    // --- Python ----------------------------------------------------------------------

    fn visit_python(&mut self, n: u32) {
        let a = self.a;
        match a.kind(n) {
            "function_definition" => self.py_function(n),
            "lambda" => self.py_function(n),
            "class_definition" => {
                self.visit_opt(a.child_by_field(n, "superclasses"));
                if let Some(name) = a.child_by_field(n, "name") {
                    self.leaf(name);
                }
                self.push(ScopeKind::Class, None);
                self.visit_opt(a.child_by_field(n, "body"));
                self.pop();
            }
            "assignment" => self.py_assign(n, false),
            "augmented_assignment" => self.py_assign(n, true),
            "named_expression" => {
                let srcs = self.sources_of(a.child_by_field(n, "value"));
                if let Some(name) = a.child_by_field(n, "name") {
                    self.bind(name, &srcs, false);
                }
            }
            "for_statement" => {
                let srcs = self.sources_of(a.child_by_field(n, "right"));
                let left = a.child_by_field(n, "left");
                let body = a.child_by_field(n, "body");
                self.loop_twice(|d| {
                    if let Some(l) = left {
                        d.bind(l, &srcs, false);
                    }
                    d.visit_opt(body);
                });
                self.visit_opt(a.child_by_field(n, "alternative"));
            }
            "while_statement" => {
                let cond = a.child_by_field(n, "condition");
                let body = a.child_by_field(n, "body");
                self.loop_twice(|d| {
                    d.visit_opt(cond);
                    d.visit_opt(body);
                });
                self.visit_opt(a.child_by_field(n, "alternative"));
            }
            "if_statement" => self.py_if(n),
            "try_statement" => self.py_try(n),
            "match_statement" => self.py_match(n),
            "list_comprehension"
            | "set_comprehension"
            | "dictionary_comprehension"
            | "generator_expression" => {
                self.push(ScopeKind::Comprehension, None);
                for &c in a.children(n) {
                    match a.kind(c) {
                        "for_in_clause" => {
                            let mark = self.log.len();
                            for r in a.children_by_field(c, "right") {
                                self.visit(r);
                            }
                            let srcs = self.since(mark);
                            if let Some(l) = a.child_by_field(c, "left") {
                                self.bind(l, &srcs, false);
                            }
                        }
                        "if_clause" => self.visit(c),
                        _ => {}
                    }
                }
                self.visit_opt(a.child_by_field(n, "body"));
                self.pop();
            }
            "as_pattern" => {
                let kids = a.children(n);
                let as_pos = kids.iter().position(|&c| a.kind(c) == "as");
                let (value, targets) = match as_pos {
                    Some(p) => (&kids[..p], &kids[p + 1..]),
                    None => (kids, &kids[..0]),
                };
                let mark = self.log.len();
                for &v in value {
                    self.visit(v);
                }
                let mut srcs = self.since(mark);
                if let Some(p) = &self.pattern_sources {
                    srcs.extend(p.iter().copied());
                }
                for &t in targets {
                    self.bind(t, &srcs, false);
                }
            }
            "global_statement" | "nonlocal_statement" => {
                let global = a.kind(n) == "global_statement";
                let inner = self.inner();
                for &c in a.children(n) {
                    let Some(tok) = self.ident(c) else { continue };
                    let s = self.sym(tok);
                    let target = if global {
                        0
                    } else {
                        let funcs = (0..inner)
                            .rev()
                            .filter(|&i| matches!(self.scopes[i].kind, ScopeKind::Function));
                        let mut first = None;
                        let mut owner = None;
                        for i in funcs {
                            first.get_or_insert(i);
                            if self.scopes[i].vars.contains_key(&s) {
                                owner = Some(i);
                                break;
                            }
                        }
                        owner.or(first).unwrap_or(0)
                    };
                    self.scopes[inner].redirect.insert(s, target);
                }
            }
            // Types are not values; a type alias defines no variable.
            "type" | "type_alias_statement" => {}
            _ => self.visit_children(n),
        }
    }

    /// `def` and `lambda`: defaults in the enclosing scope, then a new scope with the
    /// parameters (GraphCodeBERT: a default parameter `comesFrom` its value).
    fn py_function(&mut self, n: u32) {
        let a = self.a;
        let mut params: Vec<(u32, Vec<usize>)> = Vec::new();
        if let Some(ps) = a.child_by_field(n, "parameters") {
            for &p in a.children(ps) {
                self.py_param(p, &mut params);
            }
        }
        if let Some(name) = a.child_by_field(n, "name") {
            self.leaf(name);
        }
        let receiver = if a.kind(n) == "function_definition"
            && python_is_method(a, n)
            && !self.py_is_static(n)
        {
            params
                .first()
                .and_then(|&(p, _)| self.ident(p))
                .map(|t| self.sym(t))
        } else {
            None
        };
        self.push(ScopeKind::Function, receiver);
        for (p, srcs) in params {
            if let Some(tok) = self.ident(p) {
                self.define(tok, p, Role::Parameter, false, &srcs, DfgKind::ComesFrom);
            }
        }
        self.visit_opt(a.child_by_field(n, "body"));
        self.pop();
    }

    fn py_param(&mut self, p: u32, out: &mut Vec<(u32, Vec<usize>)>) {
        let a = self.a;
        match a.kind(p) {
            "identifier" => out.push((p, Vec::new())),
            "default_parameter" | "typed_default_parameter" => {
                let srcs = self.sources_of(a.child_by_field(p, "value"));
                if let Some(name) = a.child_by_field(p, "name") {
                    out.push((name, srcs));
                }
            }
            "typed_parameter"
            | "list_splat_pattern"
            | "dictionary_splat_pattern"
            | "tuple_pattern" => {
                for &c in a.children(p) {
                    if a.field(c) != Some("type") {
                        self.py_param(c, out);
                    }
                }
            }
            _ => {}
        }
    }

    fn py_is_static(&self, func: u32) -> bool {
        let a = self.a;
        let Some(dd) = a
            .parent(func)
            .filter(|&d| a.kind(d) == "decorated_definition")
        else {
            return false;
        };
        a.children(dd)
            .iter()
            .filter(|&&c| a.kind(c) == "decorator")
            .flat_map(|&c| a.children(c).iter().copied())
            .any(|c| {
                a.token(c)
                    .is_some_and(|t| self.tokens[t].text == "staticmethod")
            })
    }

    fn py_assign(&mut self, n: u32, aug: bool) {
        let a = self.a;
        let left = a.child_by_field(n, "left");
        // `x: int` binds nothing at run time (DFG.py returns no edges either).
        let Some(right) = a.child_by_field(n, "right") else {
            return;
        };
        let Some(left) = left else {
            self.visit(right);
            return;
        };
        let seq = |k: &str| {
            matches!(
                k,
                "pattern_list"
                    | "tuple_pattern"
                    | "list_pattern"
                    | "expression_list"
                    | "tuple"
                    | "list"
            )
        };
        if seq(a.kind(left)) && matches!(a.kind(right), "expression_list" | "tuple" | "list") {
            let ls: Vec<u32> = a
                .children(left)
                .iter()
                .copied()
                .filter(|&c| !PUNCT.contains(&a.kind(c)))
                .collect();
            let rs: Vec<u32> = a
                .children(right)
                .iter()
                .copied()
                .filter(|&c| !PUNCT.contains(&a.kind(c)))
                .collect();
            if !ls.is_empty() && ls.len() == rs.len() {
                let srcs: Vec<Vec<usize>> = rs.iter().map(|&r| self.sources_of(Some(r))).collect();
                for (l, s) in ls.into_iter().zip(srcs) {
                    self.bind(l, &s, aug);
                }
                return;
            }
        }
        let srcs = self.sources_of(Some(right));
        self.bind(left, &srcs, aug);
    }

    fn py_if(&mut self, n: u32) {
        let a = self.a;
        self.visit_opt(a.child_by_field(n, "condition"));
        let mut cur = self.snapshot();
        self.visit_opt(a.child_by_field(n, "consequence"));
        let mut ends = vec![self.snapshot()];
        let mut has_else = false;
        for alt in a.children_by_field(n, "alternative") {
            self.scopes = cur.clone();
            if a.kind(alt) == "elif_clause" {
                self.visit_opt(a.child_by_field(alt, "condition"));
                cur = self.snapshot();
                self.visit_opt(a.child_by_field(alt, "consequence"));
            } else {
                has_else = true;
                self.visit_children(alt);
            }
            ends.push(self.snapshot());
        }
        if !has_else {
            ends.push(cur);
        }
        self.restore_merged(ends);
    }

    fn py_try(&mut self, n: u32) {
        let a = self.a;
        let before = self.snapshot();
        self.visit_opt(a.child_by_field(n, "body"));
        let after_try = self.snapshot();
        let mut ends = Vec::new();
        let mut has_else = false;
        let mut finally = None;
        for &c in a.children(n) {
            match a.kind(c) {
                "except_clause" | "except_group_clause" => {
                    self.scopes = Self::merge(vec![before.clone(), after_try.clone()]);
                    self.visit_children(c);
                    ends.push(self.snapshot());
                }
                "else_clause" => {
                    self.scopes = after_try.clone();
                    self.visit(c);
                    ends.push(self.snapshot());
                    has_else = true;
                }
                "finally_clause" => finally = Some(c),
                _ => {}
            }
        }
        if !has_else {
            ends.push(after_try);
        }
        self.restore_merged(ends);
        self.visit_opt(finally);
    }

    fn py_match(&mut self, n: u32) {
        let a = self.a;
        let mark = self.log.len();
        for s in a.children_by_field(n, "subject") {
            self.visit(s);
        }
        let srcs = self.since(mark);
        let before = self.snapshot();
        let mut ends = Vec::new();
        let cases: Vec<u32> = a
            .child_by_field(n, "body")
            .map(|b| {
                a.children(b)
                    .iter()
                    .copied()
                    .filter(|&c| a.kind(c) == "case_clause")
                    .collect()
            })
            .unwrap_or_default();
        for case in cases {
            self.scopes = before.clone();
            let old = self.pattern_sources.replace(srcs.clone());
            for &c in a.children(case) {
                if a.kind(c) == "case_pattern" {
                    self.visit(c);
                }
            }
            self.pattern_sources = old;
            self.visit_opt(a.child_by_field(case, "guard"));
            self.visit_opt(a.child_by_field(case, "consequence"));
            ends.push(self.snapshot());
        }
        ends.push(before);
        self.restore_merged(ends);
    }

    // --- Java ------------------------------------------------------------------------

    fn visit_java(&mut self, n: u32) {
        let a = self.a;
        match a.kind(n) {
            "class_declaration"
            | "interface_declaration"
            | "enum_declaration"
            | "record_declaration"
            | "annotation_type_declaration" => {
                self.push(ScopeKind::Class, None);
                if let Some(ps) = a.child_by_field(n, "parameters") {
                    // Record components are fields of the record.
                    for &p in a.children(ps) {
                        if let Some(name) = a.child_by_field(p, "name") {
                            if let Some(tok) = self.ident(name) {
                                let key = self.sym(tok) | FIELD;
                                let c = self.inner();
                                self.write(tok, &[(c, key)], false, &[], DfgKind::ComesFrom);
                            }
                        }
                    }
                }
                if let Some(body) = a.child_by_field(n, "body") {
                    self.java_members(body);
                }
                self.pop();
            }
            "class_body" => {
                self.push(ScopeKind::Class, None);
                self.java_members(n);
                self.pop();
            }
            "method_declaration"
            | "constructor_declaration"
            | "compact_constructor_declaration" => {
                self.push(ScopeKind::Function, None);
                if let Some(ps) = a.child_by_field(n, "parameters") {
                    self.java_params(ps);
                }
                self.visit_opt(a.child_by_field(n, "body"));
                self.pop();
            }
            "static_initializer" => {
                self.push(ScopeKind::Function, None);
                self.visit_children(n);
                self.pop();
            }
            "lambda_expression" => {
                self.push(ScopeKind::Function, None);
                if let Some(ps) = a.child_by_field(n, "parameters") {
                    match a.kind(ps) {
                        "identifier" => self.define_leaf(ps, false, &[], DfgKind::ComesFrom),
                        _ => self.java_params(ps),
                    }
                }
                self.visit_opt(a.child_by_field(n, "body"));
                self.pop();
            }
            "local_variable_declaration" | "field_declaration" | "constant_declaration" => {
                for d in a.children_by_field(n, "declarator") {
                    self.java_declarator(d);
                }
            }
            "resource" if a.child_by_field(n, "name").is_some() => self.java_declarator(n),
            "assignment_expression" => {
                let srcs = self.sources_of(a.child_by_field(n, "right"));
                let aug = a
                    .child_by_field(n, "operator")
                    .and_then(|o| a.token(o))
                    .is_some_and(|t| self.tokens[t].text != "=");
                if let Some(l) = a.child_by_field(n, "left") {
                    self.bind(l, &srcs, aug);
                }
            }
            "update_expression" => {
                let operand = a
                    .children(n)
                    .iter()
                    .copied()
                    .find(|&c| !matches!(a.kind(c), "++" | "--"));
                if let Some(o) = operand {
                    self.bind(o, &[], true);
                }
            }
            "if_statement" => {
                self.visit_opt(a.child_by_field(n, "condition"));
                let before = self.snapshot();
                self.visit_opt(a.child_by_field(n, "consequence"));
                let then_end = self.snapshot();
                match a.child_by_field(n, "alternative") {
                    Some(alt) => {
                        self.scopes = before;
                        self.visit(alt);
                        let else_end = self.snapshot();
                        self.restore_merged(vec![then_end, else_end]);
                    }
                    None => self.restore_merged(vec![then_end, before]),
                }
            }
            "for_statement" => {
                for i in a.children_by_field(n, "init") {
                    self.visit(i);
                }
                let cond = a.child_by_field(n, "condition");
                let body = a.child_by_field(n, "body");
                let updates: Vec<u32> = a.children_by_field(n, "update").collect();
                self.loop_twice(|d| {
                    d.visit_opt(cond);
                    d.visit_opt(body);
                    for &u in &updates {
                        d.visit(u);
                    }
                });
            }
            "enhanced_for_statement" => {
                let srcs = self.sources_of(a.child_by_field(n, "value"));
                let name = a.child_by_field(n, "name");
                let body = a.child_by_field(n, "body");
                self.loop_twice(|d| {
                    if let Some(nm) = name {
                        d.define_leaf(nm, false, &srcs, DfgKind::ComputedFrom);
                    }
                    d.visit_opt(body);
                });
            }
            "while_statement" => {
                let cond = a.child_by_field(n, "condition");
                let body = a.child_by_field(n, "body");
                self.loop_twice(|d| {
                    d.visit_opt(cond);
                    d.visit_opt(body);
                });
            }
            "do_statement" => {
                let cond = a.child_by_field(n, "condition");
                let body = a.child_by_field(n, "body");
                // The body runs at least once: no "not entered" state.
                self.visit_opt(body);
                self.visit_opt(cond);
                let first = self.snapshot();
                self.visit_opt(body);
                self.visit_opt(cond);
                let second = self.snapshot();
                self.restore_merged(vec![first, second]);
            }
            "switch_expression" | "switch_statement" => self.java_switch(n),
            "try_statement" | "try_with_resources_statement" => {
                self.visit_opt(a.child_by_field(n, "resources"));
                let before = self.snapshot();
                self.visit_opt(a.child_by_field(n, "body"));
                let after_try = self.snapshot();
                let mut ends = vec![after_try.clone()];
                let mut finally = None;
                for &c in a.children(n) {
                    match a.kind(c) {
                        "catch_clause" => {
                            self.scopes = Self::merge(vec![before.clone(), after_try.clone()]);
                            self.visit(c);
                            ends.push(self.snapshot());
                        }
                        "finally_clause" => finally = Some(c),
                        _ => {}
                    }
                }
                self.restore_merged(ends);
                self.visit_opt(finally);
            }
            "instanceof_expression" => {
                let srcs = self.sources_of(a.child_by_field(n, "left"));
                if let Some(name) = a.child_by_field(n, "name") {
                    self.define_leaf(name, false, &srcs, DfgKind::ComputedFrom);
                }
                for &c in a.children(n) {
                    if matches!(a.kind(c), "record_pattern" | "type_pattern" | "pattern") {
                        let old = self.pattern_sources.replace(srcs.clone());
                        self.visit(c);
                        self.pattern_sources = old;
                    }
                }
            }
            // Names of packages, imports and annotations are not values.
            "package_declaration" | "import_declaration" | "marker_annotation" | "annotation" => {}
            _ => self.visit_children(n),
        }
    }

    /// Class members: field declarations (and enum constants) first, as their
    /// initializers run before any constructor or method; then the rest in order.
    fn java_members(&mut self, body: u32) {
        let a = self.a;
        let mut members = Vec::new();
        for &c in a.children(body) {
            if a.kind(c) == "enum_body_declarations" {
                members.extend(a.children(c).iter().copied());
            } else {
                members.push(c);
            }
        }
        let is_field = |k: &str| {
            matches!(
                k,
                "field_declaration" | "constant_declaration" | "enum_constant"
            )
        };
        for &m in &members {
            if is_field(a.kind(m)) {
                self.visit(m);
            }
        }
        for &m in &members {
            match a.kind(m) {
                k if is_field(k) => {}
                "block" => {
                    // Instance initializer.
                    self.push(ScopeKind::Function, None);
                    self.visit(m);
                    self.pop();
                }
                _ => self.visit(m),
            }
        }
    }

    fn java_params(&mut self, ps: u32) {
        let a = self.a;
        for &p in a.children(ps) {
            match a.kind(p) {
                "formal_parameter" => {
                    if let Some(name) = a.child_by_field(p, "name") {
                        self.define_leaf(name, false, &[], DfgKind::ComesFrom);
                    }
                }
                "spread_parameter" => {
                    if let Some(name) = a
                        .child_of_kind(p, "variable_declarator")
                        .and_then(|d| a.child_by_field(d, "name"))
                    {
                        self.define_leaf(name, false, &[], DfgKind::ComesFrom);
                    }
                }
                "identifier" => self.define_leaf(p, false, &[], DfgKind::ComesFrom),
                _ => {}
            }
        }
    }

    /// `T x = v` (also fields and resources): x `comesFrom` v's identifiers (DFG.py).
    fn java_declarator(&mut self, d: u32) {
        let a = self.a;
        let srcs = self.sources_of(a.child_by_field(d, "value"));
        if let Some(name) = a.child_by_field(d, "name") {
            self.define_leaf(name, false, &srcs, DfgKind::ComesFrom);
        }
    }

    fn java_switch(&mut self, n: u32) {
        let a = self.a;
        let srcs = self.sources_of(a.child_by_field(n, "condition"));
        let before = self.snapshot();
        let mut ends = Vec::new();
        let mut has_default = false;
        let groups: Vec<u32> = a
            .child_by_field(n, "body")
            .map(|b| {
                a.children(b)
                    .iter()
                    .copied()
                    .filter(|&g| {
                        matches!(a.kind(g), "switch_block_statement_group" | "switch_rule")
                    })
                    .collect()
            })
            .unwrap_or_default();
        for g in groups {
            self.scopes = before.clone();
            for &c in a.children(g) {
                if a.kind(c) == "switch_label" {
                    has_default |= a
                        .children(c)
                        .first()
                        .is_some_and(|&k| a.kind(k) == "default");
                    let old = self.pattern_sources.replace(srcs.clone());
                    self.visit(c);
                    self.pattern_sources = old;
                } else {
                    self.visit(c);
                }
            }
            ends.push(self.snapshot());
        }
        if !has_default || ends.is_empty() {
            ends.push(before);
        }
        self.restore_merged(ends);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse, Language};
    use super::*;

    #[test]
    fn dfg_kind_serializes_camel_case() {
        assert_eq!(
            serde_json::to_value(DfgKind::ComesFrom).unwrap(),
            "comesFrom"
        );
        assert_eq!(
            serde_json::to_value(DfgKind::ComputedFrom).unwrap(),
            "computedFrom"
        );
    }

    #[test]
    fn huge_flat_list_is_refused() {
        let src = format!("x = [{}]\n", "1, ".repeat(1500));
        let err = parse(&src, Language::Python).unwrap_err();
        assert!(matches!(err, SyntaxError::TooManyEdges { .. }), "{err}");
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let src = format!("x = {}1{}\n", "(".repeat(3000), ")".repeat(3000));
        let s = parse(&src, Language::Python).unwrap();
        assert_eq!(s.tokens.len(), 6003);
        let long = format!("y = 1\nx = y{}\n", " + y".repeat(3000));
        let s = parse(&long, Language::Python).unwrap();
        assert!(!s.graphs.dfg.is_empty());
    }

    #[test]
    fn lca_of_same_token_is_itself() {
        let s = parse("x = a + b\n", Language::Python).unwrap();
        assert_eq!(s.tree_distance(2, 2), 0);
        assert_eq!(s.lca(2, 2).kind, "identifier");
        // a and b share binary_operator: distance 2.
        assert_eq!(s.tree_distance(2, 4), 2);
        assert_eq!(s.lca(2, 4).kind, "binary_operator");
    }
}
