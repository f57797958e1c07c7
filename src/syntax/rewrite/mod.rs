//! Counterfactual twins (docs/METHODS.md 5): semantics-preserving identifier renamings of a
//! snippet, and a user's hand-edited twin, each with a code-token alignment to the
//! original.
//!
//! Rewrites ([`Rewrite`]):
//! - `rename:neutral` — every name the snippet itself binds gets a role-based neutral
//!   name: functions `f1`, methods `m1`, classes `C1`, parameters `p1`, variables `v1`,
//!   attributes / fields `a1`, type parameters `T1`, labels `L1`, numbered in order of first
//!   appearance and never equal to an identifier already in the snippet;
//! - `rename:shuffle` — the snippet's own names are permuted among the names of the same
//!   role (a seeded random cyclic permutation, so no name keeps its place when its role
//!   has two or more). Only names whose every occurrence is renamed take part, so the
//!   permutation cannot capture a name left as written.
//!
//! Which occurrences are the snippet's is decided by a scope analysis per language
//! (`python.rs`, `java.rs`; their docs list the rules and what is never renamed: builtins,
//! imports, attributes of outside objects, keyword names of outside calls, library types,
//! protocol names). The mapping is per name and namespace: every occurrence that resolves
//! to a binding of the snippet is renamed, and all bindings of one name share the new
//! name (so shadowing stays shadowing), while occurrences of the same name that refer to
//! something outside (a builtin the snippet shadows elsewhere, an outside object's
//! attribute) stay. Names and members are separate namespaces: `renamed` lists a member
//! (attribute, field, method) as `".name"`.
//!
//! Every rewrite is checked, not assumed ([`check`]): the twin must parse with no more
//! parse errors than the original, the same syntax tree (node kinds and shape, wrapper
//! included), the same code tokens (kinds, categories, depths, roles; texts equal except
//! the renamed identifiers and the strings whose interpolations were renamed) and the same
//! gold graphs (AST motif, data flow, ...). A failure is an error naming what differs.
//! Because the study's data-flow graph links occurrences by spelling, a renaming that
//! splits one spelling (a method `time` renamed beside the module `time` it calls) changes
//! that graph; such a twin is retried once with the shared spellings left as written.
//!
//! A user's twin (a second file, the explorer's edited text) is aligned to the original by
//! a diff over code tokens ([`user_twin`]): equal tokens (kind and text) are matched by a
//! longest common subsequence; a changed stretch with as many tokens on both sides and the
//! same kinds is aligned token by token (a hand rename); other tokens stay unaligned.

mod diff;
pub(crate) mod java;
pub(crate) mod python;

use std::collections::{BTreeMap, HashMap, HashSet};

use super::{Graph, Language, Role, Syntax, SyntaxError};

/// A namespace of renamed names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Ns {
    /// Variables, parameters, functions, classes and types (Java) by plain name.
    Name,
    /// Attributes, fields and methods reached through an object or class.
    Member,
}

/// One identifier occurrence to rename: byte span in the snippet, namespace, original
/// name and the role of the binding it refers to.
#[derive(Debug, Clone)]
pub(crate) struct Occ {
    pub start: usize,
    pub end: usize,
    pub ns: Ns,
    pub name: String,
    pub role: Role,
}

/// What a language's scope analysis finds.
#[derive(Debug, Default)]
pub(crate) struct Resolved {
    /// Occurrences bound by the snippet.
    pub occs: Vec<Occ>,
    /// Texts of identifier occurrences left as written.
    pub kept: HashSet<String>,
    /// Texts of every identifier in the snippet.
    pub idents: HashSet<String>,
}

/// A semantics-preserving rewrite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rewrite {
    /// Role-based neutral names (`f1`, `p1`, `v1`, ...).
    Neutral,
    /// A seeded permutation of the snippet's names within each role.
    Shuffle {
        /// Seed of the permutation.
        seed: u64,
    },
}

impl Rewrite {
    /// `rename:neutral` or `rename:shuffle`.
    pub fn name(&self) -> &'static str {
        match self {
            Rewrite::Neutral => "rename:neutral",
            Rewrite::Shuffle { .. } => "rename:shuffle",
        }
    }

    /// Parse `rename:neutral` / `rename:shuffle` (the seed is given separately).
    pub fn from_name(name: &str, seed: u64) -> Option<Rewrite> {
        match name {
            "rename:neutral" | "neutral" => Some(Rewrite::Neutral),
            "rename:shuffle" | "shuffle" => Some(Rewrite::Shuffle { seed }),
            _ => None,
        }
    }
}

/// Where a twin comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TwinKind {
    /// A checked rewrite of the original.
    Rename(Rewrite),
    /// Text the user gave (a file name, or "edited").
    User(String),
}

impl TwinKind {
    /// `rename:neutral`, `rename:shuffle`, or `twin:<label>`.
    pub fn label(&self) -> String {
        match self {
            TwinKind::Rename(r) => r.name().to_string(),
            TwinKind::User(l) => format!("twin:{l}"),
        }
    }
}

/// The original's counterpart: its parse and how its code tokens align with the
/// original's.
#[derive(Debug, Clone)]
pub struct Twin {
    /// Rewrite or user twin.
    pub kind: TwinKind,
    /// The twin, parsed.
    pub b: Syntax,
    /// Aligned code tokens `(index in A, index in B)`, increasing in both.
    pub pairs: Vec<(usize, usize)>,
    /// Per pair: the token's text differs between A and B.
    pub changed: Vec<bool>,
    /// Renamed names, `old -> new` (members as `".old" -> "new"`); empty for user twins.
    pub renamed: BTreeMap<String, String>,
}

impl Twin {
    /// Per token of A: its aligned token in B.
    pub fn a_to_b(&self, n_a: usize) -> Vec<Option<usize>> {
        let mut v = vec![None; n_a];
        for &(i, j) in &self.pairs {
            if i < n_a {
                v[i] = Some(j);
            }
        }
        v
    }

    /// Per token of B: its aligned token in A.
    pub fn b_to_a(&self) -> Vec<Option<usize>> {
        let mut v = vec![None; self.b.tokens.len()];
        for &(i, j) in &self.pairs {
            if j < v.len() {
                v[j] = Some(i);
            }
        }
        v
    }

    /// Per token of B: aligned and with a text different from A's (a renamed token).
    pub fn b_changed(&self) -> Vec<bool> {
        let mut v = vec![false; self.b.tokens.len()];
        for (&(_, j), &c) in self.pairs.iter().zip(&self.changed) {
            if j < v.len() {
                v[j] = c;
            }
        }
        v
    }
}

/// Why a twin could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RewriteError {
    /// The syntax layer refused the twin text.
    #[error("the twin could not be parsed: {0}")]
    Parse(#[from] SyntaxError),
    /// The rewrite introduced parse errors.
    #[error("the twin has {after} parse errors, the original {before}")]
    NewErrors {
        /// Errors in the original.
        before: usize,
        /// Errors in the twin.
        after: usize,
    },
    /// The rewrite changed the syntax tree or the code tokens.
    #[error("the twin's syntax differs: {0}")]
    Shape(String),
    /// The rewrite changed a gold graph.
    #[error("the twin's {graph} graph differs ({edges_a} edges vs {edges_b})")]
    Graph {
        /// Graph name.
        graph: &'static str,
        /// Edges in the original.
        edges_a: usize,
        /// Edges in the twin.
        edges_b: usize,
    },
    /// A user twin in another language.
    #[error("the twin is {b} code, the original {a}")]
    Language {
        /// The original's language.
        a: &'static str,
        /// The twin's language.
        b: &'static str,
    },
    /// The diff of a user twin would be too large to compute.
    #[error("the twins differ in too many tokens to align ({0} x {1} changed tokens)")]
    TooDifferent(usize, usize),
}

/// A renamed text before it is checked.
#[derive(Debug, Clone)]
pub struct Renaming {
    /// The twin's source text.
    pub text: String,
    /// `old -> new` (members as `".old"`).
    pub renamed: BTreeMap<String, String>,
    /// Identifier occurrences rewritten.
    pub occurrences: usize,
}

/// A tree-sitter parse of a snippet, wrapped as `parse/` wrapped it.
struct Parsed {
    text: String,
    wrapper: (&'static str, &'static str),
    tree: tree_sitter::Tree,
}

impl Parsed {
    fn region(&self, source_len: usize) -> (usize, usize) {
        (self.wrapper.0.len(), self.wrapper.0.len() + source_len)
    }
}

fn parse_tree(
    source: &str,
    lang: Language,
    wrapper: (&'static str, &'static str),
) -> Option<Parsed> {
    let mut p = tree_sitter::Parser::new();
    p.set_language(&lang.grammar()).ok()?;
    let text = format!("{}{source}{}", wrapper.0, wrapper.1);
    let tree = p.parse(&text, None)?;
    Some(Parsed {
        text,
        wrapper,
        tree,
    })
}

fn tree_errors(t: &tree_sitter::Tree) -> usize {
    let mut n = 0;
    let mut stack = vec![t.root_node()];
    while let Some(x) = stack.pop() {
        if x.is_error() || x.is_missing() {
            n += 1;
        }
        if x.has_error() {
            let mut c = x.walk();
            stack.extend(x.children(&mut c));
        }
    }
    n
}

/// Parse `syn`'s source the way the syntax layer did: unwrapped, or in the wrapper with
/// the fewest errors.
fn parse_like(syn: &Syntax) -> Option<Parsed> {
    if !syn.wrapped {
        return parse_tree(&syn.source, syn.language, ("", ""));
    }
    // The wrappers `parse/` puts around bare Java members and statements and pasted
    // Python methods (see [`Syntax::wrapped`]); the rewrite parses the same way.
    let mut best: Option<(usize, Parsed)> = None;
    for &w in syn.language.rules().wrappers {
        let p = parse_tree(&syn.source, syn.language, w)?;
        let e = tree_errors(&p.tree);
        if best.as_ref().is_none_or(|(b, _)| e < *b) {
            best = Some((e, p));
        }
    }
    best.map(|(_, p)| p)
}

/// The scope analysis of the snippet.
fn resolve(syn: &Syntax, parsed: &Parsed) -> Resolved {
    let region = parsed.region(syn.source.len());
    let root = parsed.tree.root_node();
    (syn.language.rules().rewrite_scopes)(root, parsed.text.as_bytes(), region)
}

fn prefix(role: Role) -> &'static str {
    match role {
        Role::Function => "f",
        Role::Method => "m",
        Role::Class => "C",
        Role::Parameter => "p",
        Role::Variable => "v",
        Role::Attribute => "a",
        Role::Type => "T",
        Role::Label => "L",
        _ => "n",
    }
}

/// splitmix64: a tiny seeded generator, so a seed gives the same twin everywhere.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The new name of every renamed (namespace, name), by the rewrite's rule. With
/// `spare_shared`, names whose spelling is also used for something outside (kept) are
/// left as written.
fn assign_names(res: &Resolved, rw: Rewrite, spare_shared: bool) -> HashMap<(Ns, String), String> {
    let mut occs: Vec<&Occ> = res
        .occs
        .iter()
        .filter(|o| !spare_shared || !res.kept.contains(&o.name))
        .collect();
    occs.sort_by_key(|o| o.start);
    // Keys in order of first appearance, with the role of their first occurrence.
    let mut keys: Vec<((Ns, String), Role)> = Vec::new();
    let mut seen = HashSet::new();
    for o in &occs {
        if seen.insert((o.ns, o.name.clone())) {
            keys.push(((o.ns, o.name.clone()), o.role));
        }
    }
    let mut out = HashMap::new();
    match rw {
        Rewrite::Neutral => {
            let mut counters: HashMap<&str, usize> = HashMap::new();
            for (key, role) in keys {
                let p = prefix(role);
                let k = counters.entry(p).or_insert(0);
                let fresh = loop {
                    *k += 1;
                    let cand = format!("{p}{k}");
                    if !res.idents.contains(&cand) {
                        break cand;
                    }
                };
                out.insert(key, fresh);
            }
        }
        Rewrite::Shuffle { seed } => {
            // A text may join only if no occurrence of it stays and it names one key.
            let mut texts: HashMap<&str, usize> = HashMap::new();
            for ((_, name), _) in &keys {
                *texts.entry(name.as_str()).or_insert(0) += 1;
            }
            let mut groups: BTreeMap<(Ns, &'static str), Vec<String>> = BTreeMap::new();
            for ((ns, name), role) in &keys {
                if texts[name.as_str()] == 1 && !res.kept.contains(name) {
                    groups
                        .entry((*ns, role.name()))
                        .or_default()
                        .push(name.clone());
                }
            }
            let mut rng = SplitMix(seed ^ 0x636f_6465_7363_6f70);
            for ((ns, _), names) in groups {
                // Sattolo's algorithm: a uniformly random cyclic permutation.
                let mut perm: Vec<usize> = (0..names.len()).collect();
                for i in (1..perm.len()).rev() {
                    let j = rng.below(i);
                    perm.swap(i, j);
                }
                for (i, name) in names.iter().enumerate() {
                    out.insert((ns, name.clone()), names[perm[i]].clone());
                }
            }
        }
    }
    out
}

/// The renamed text (not checked; see [`rename`]).
pub fn renaming(syn: &Syntax, rw: Rewrite) -> Renaming {
    renaming_with(syn, rw, false)
}

fn renaming_with(syn: &Syntax, rw: Rewrite, spare_shared: bool) -> Renaming {
    let Some(parsed) = parse_like(syn) else {
        return Renaming {
            text: syn.source.clone(),
            renamed: BTreeMap::new(),
            occurrences: 0,
        };
    };
    let res = resolve(syn, &parsed);
    let names = assign_names(&res, rw, spare_shared);
    let mut edits: Vec<(usize, usize, String)> = res
        .occs
        .iter()
        .filter_map(|o| {
            let new = names.get(&(o.ns, o.name.clone()))?;
            (*new != o.name).then(|| (o.start, o.end, new.clone()))
        })
        .collect();
    edits.sort_by_key(|e| e.0);
    edits.dedup_by_key(|e| e.0);
    let mut text = String::with_capacity(syn.source.len() + 64);
    let mut at = 0;
    for (s, e, new) in &edits {
        let (s, e) = (*s, *e);
        if s < at || e > syn.source.len() {
            continue;
        }
        text.push_str(&syn.source[at..s]);
        text.push_str(new);
        at = e;
    }
    text.push_str(&syn.source[at..]);
    let renamed = names
        .into_iter()
        .filter(|((_, old), new)| old != new)
        .map(|((ns, old), new)| match ns {
            Ns::Name => (old, new),
            Ns::Member => (format!(".{old}"), new),
        })
        .collect();
    Renaming {
        text,
        renamed,
        occurrences: edits.len(),
    }
}

/// Rename `syn` by `rw`, parse the twin and check it ([`check`]).
///
/// The study's data-flow graph links occurrences by spelling, so renaming a name whose
/// spelling is also used for something outside (a method `time` beside the module
/// `time`) splits one spelling in two and changes that graph. When the full renaming
/// fails its check, it is retried with such names left as written; a second failure is
/// the error.
pub fn rename(syn: &Syntax, rw: Rewrite) -> Result<Twin, RewriteError> {
    let first = renaming_with(syn, rw, false);
    let (r, b) = match attempt(syn, &first) {
        Ok(b) => (first, b),
        Err(e) => {
            let second = renaming_with(syn, rw, true);
            if second.text == first.text {
                return Err(e);
            }
            match attempt(syn, &second) {
                Ok(b) => (second, b),
                Err(_) => return Err(e),
            }
        }
    };
    let n = syn.tokens.len();
    let pairs: Vec<(usize, usize)> = (0..n).map(|i| (i, i)).collect();
    let changed = (0..n)
        .map(|i| syn.tokens[i].text != b.tokens[i].text)
        .collect();
    Ok(Twin {
        kind: TwinKind::Rename(rw),
        b,
        pairs,
        changed,
        renamed: r.renamed,
    })
}

fn attempt(syn: &Syntax, r: &Renaming) -> Result<Syntax, RewriteError> {
    let b = super::parse(&r.text, syn.language)?;
    check(syn, &b)?;
    Ok(b)
}

/// Preorder (kind, child count) of a tree: equal for two trees of the same shape.
fn shape(t: &tree_sitter::Tree) -> Vec<(u16, u32)> {
    let mut out = Vec::new();
    let mut c = t.walk();
    loop {
        let n = c.node();
        out.push((n.kind_id(), n.child_count()));
        if c.goto_first_child() {
            continue;
        }
        loop {
            if c.goto_next_sibling() {
                break;
            }
            if !c.goto_parent() {
                return out;
            }
        }
    }
}

/// Check that `b` is a structure-preserving rewrite of `a`: no new parse errors, the same
/// tree shape (in the same wrapper), the same code tokens up to identifier and string
/// texts, and the same gold graphs — except the study's `dfg`, which links tokens by
/// their text (GraphCodeBERT's DFG as the study ran it): a rename that gives a field and
/// a parameter of the same name different names changes it by design. Comparisons report
/// both sides' `dfg` edge counts; `dfg_refined` (scopes, not texts) must stay equal.
pub fn check(a: &Syntax, b: &Syntax) -> Result<(), RewriteError> {
    if b.errors.len() > a.errors.len() {
        return Err(RewriteError::NewErrors {
            before: a.errors.len(),
            after: b.errors.len(),
        });
    }
    if a.wrapped != b.wrapped {
        return Err(RewriteError::Shape("parsed with another wrapper".into()));
    }
    if let Some(pa) = parse_like(a) {
        let pb = parse_tree(&b.source, b.language, pa.wrapper);
        if pb.is_none_or(|pb| shape(&pa.tree) != shape(&pb.tree)) {
            return Err(RewriteError::Shape("the tree's nodes differ".into()));
        }
    }
    if a.tokens.len() != b.tokens.len() {
        return Err(RewriteError::Shape(format!(
            "{} code tokens instead of {}",
            b.tokens.len(),
            a.tokens.len()
        )));
    }
    for (i, (x, y)) in a.tokens.iter().zip(&b.tokens).enumerate() {
        let what = if x.kind != y.kind {
            Some("kind")
        } else if x.category != y.category {
            Some("category")
        } else if x.depth != y.depth {
            Some("depth")
        } else if x.role != y.role {
            Some("role")
        } else if x.text != y.text
            && !(a.language.is_identifier_kind(&x.kind) || x.kind == "string")
        {
            Some("text")
        } else {
            None
        };
        if let Some(w) = what {
            return Err(RewriteError::Shape(format!(
                "token {i} `{}` -> `{}`: its {w} changed",
                x.text, y.text
            )));
        }
    }
    for g in Graph::ALL.into_iter().filter(|&g| g != Graph::Dfg) {
        let (ea, eb) = (a.graphs.edges(g), b.graphs.edges(g));
        if ea != eb {
            return Err(RewriteError::Graph {
                graph: g.name(),
                edges_a: ea.len(),
                edges_b: eb.len(),
            });
        }
    }
    // Edge kinds (comesFrom / computedFrom) too.
    if a.graphs.dfg_refined != b.graphs.dfg_refined {
        return Err(RewriteError::Graph {
            graph: "dfg_refined",
            edges_a: a.graphs.dfg_refined.len(),
            edges_b: b.graphs.dfg_refined.len(),
        });
    }
    Ok(())
}

/// A user's twin of `a`: aligned by a diff over code tokens. No structural check (a hand
/// edit may change anything); unaligned tokens are left out of per-token comparisons.
pub fn user_twin(a: &Syntax, b: Syntax, label: &str) -> Result<Twin, RewriteError> {
    if a.language != b.language {
        return Err(RewriteError::Language {
            a: a.language.name(),
            b: b.language.name(),
        });
    }
    let pairs = diff::align(&a.tokens, &b.tokens)?;
    let changed = pairs
        .iter()
        .map(|&(i, j)| a.tokens[i].text != b.tokens[j].text)
        .collect();
    Ok(Twin {
        kind: TwinKind::User(label.to_string()),
        b,
        pairs,
        changed,
        renamed: BTreeMap::new(),
    })
}

#[cfg(test)]
mod tests;
