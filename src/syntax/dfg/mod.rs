//! The data-flow graph (METHODS.md 2.3): identifier -> identifier edges, GraphCodeBERT
//! style (`GraphCodeBERT/codesearch/parser/DFG.py`, microsoft/CodeBERT), see [`Dfg`].
//!
//! Role: `mod.rs` holds the language-independent engine (scopes, name resolution,
//! reads and writes, branch and loop merging); `python.rs` and `java.rs` hold each
//! language's rules (which node binds what).
//!
//! Invariants: edges link identifier tokens only, sorted, deduplicated, no self edges.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::arena::Arena;
use super::lang::Language;
use super::roles::java::java_is_target;
use super::token::{Binding, Category, CodeToken, IdentRole, Role};

mod java;
mod python;

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

/// Deepest syntax nesting the DFG walker follows; deeper subtrees add no DFG edges.
const MAX_DFG_DEPTH: usize = 1500;
/// Stack for the recursive DFG walk (run on its own thread so deep code cannot overflow
/// the caller's stack).
const DFG_STACK_BYTES: usize = 64 << 20;
/// Symbols of attribute/field keys (`self.x`, `this.x`) have this bit set.
const FIELD: u32 = 1 << 31;

/// The data-flow graph (identifier -> identifier); see [`Dfg`] for the rules.
pub(crate) fn data_flow_graph(
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
    kind == "as_pattern_target" || super::roles::python::PY_TARGET_CONTAINERS.contains(&kind)
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
    fn deep_nesting_does_not_overflow() {
        let src = format!("x = {}1{}\n", "(".repeat(3000), ")".repeat(3000));
        let s = parse(&src, Language::Python).unwrap();
        assert_eq!(s.tokens.len(), 6003);
        let long = format!("y = 1\nx = y{}\n", " + y".repeat(3000));
        let s = parse(&long, Language::Python).unwrap();
        assert!(!s.graphs.dfg.is_empty());
    }
}
