//! The engine of codescope's refined data-flow graph (`dfg_refined`): scopes, name
//! resolution, reads and writes, branch and loop merging. The per-language rules (which
//! node binds what) are the `impl Refined` blocks of `python.rs` and `java.rs`, reached
//! through the language's [`DfgRules`]; the engine reads those and never the language.
//! The rules themselves are listed on [`Refined`].
//!
//! Invariants: edges link identifier tokens only, sorted, deduplicated, no self edges.

use std::collections::HashMap;

use super::super::arena::Arena;
use super::super::lang::Language;
use super::super::token::{Binding, Category, CodeToken, IdentRole, Role};
use super::state::{Diff, Key, States};
use super::study::VISIT_BUDGET_PER_NODE;
use super::{DfgKind, DfgRules};

/// Deepest syntax nesting the walker follows; deeper subtrees add no edges.
const MAX_DFG_DEPTH: usize = 1500;
/// Symbols of attribute/field keys (`self.x`, `this.x`) have this bit set.
pub(super) const FIELD: u32 = 1 << 31;

/// The refined data-flow graph from `root`.
pub(super) fn run(
    a: &Arena,
    tokens: &[CodeToken],
    lang: Language,
    root: u32,
) -> Vec<(usize, usize, DfgKind)> {
    let mut d = Refined::new(a, tokens, lang);
    (d.rules.refined_start)(&mut d, root);
    d.visit(root);
    d.finish()
}

/// How a bare name sees the class scopes around it ([`DfgRules`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ClassScope {
    /// Python: a class body's names are visible in the body itself only, not from its
    /// methods (they reach fields through the receiver).
    OwnBody,
    /// Java: a class scope holds its fields, visible as fields from everything inside it.
    Fields,
}

/// Where a write into part of a variable (`a[i] = v`, `a.f = v`) rebinds it
/// ([`DfgRules`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Rebind {
    /// Python: where a new binding of the name goes ([`Refined::bare_def_loc`]).
    Local,
    /// Java: the declaration the name resolves to, else the innermost scope.
    Reaching,
}

/// A member access node ([`DfgRules`]): its kind, the fields of its object and member.
pub(super) struct Member {
    pub(super) kind: &'static str,
    pub(super) object: &'static str,
    pub(super) member: &'static str,
}

/// An index access node ([`DfgRules`]): its kind and the field of the indexed value.
pub(super) struct Index {
    pub(super) kind: &'static str,
    pub(super) base: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ScopeKind {
    Module,
    Function,
    Comprehension,
    Class,
}

/// One open scope. Its variables live in [`Refined::vars`] under keys made of the
/// scope's `uid` and the symbol, so that branches can be undone without copying scopes.
#[derive(Debug, Clone)]
pub(super) struct Scope {
    pub(super) kind: ScopeKind,
    /// Unique over the walk (a scope index is reused after a pop; a uid never is).
    pub(super) uid: u32,
    /// Python: the receiver parameter (`self`) of a method scope.
    pub(super) receiver: Option<u32>,
    /// Python `global` / `nonlocal`: symbol -> scope index that owns it (function-wide,
    /// as in Python, so not undone with a branch).
    pub(super) redirect: HashMap<u32, usize>,
}

pub(super) type Loc = (usize, u32);

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
pub(super) struct Refined<'a> {
    pub(super) a: &'a Arena,
    pub(super) tokens: &'a [CodeToken],
    pub(super) roles: Vec<Option<IdentRole>>,
    /// The language's rules.
    pub(super) rules: &'static DfgRules,
    pub(super) syms: HashMap<&'a str, u32>,
    pub(super) scopes: Vec<Scope>,
    /// Reaching definitions of every scope's variables (key: scope uid, symbol).
    pub(super) vars: States,
    next_uid: u32,
    /// Nodes visited, for the loop budget.
    visits: usize,
    budget: usize,
    pub(super) edges: Vec<(usize, usize, DfgKind)>,
    /// Identifier tokens touched (used or defined), in visit order; a slice of it is
    /// the set of "identifiers of an expression".
    pub(super) log: Vec<usize>,
    /// Subject identifiers while visiting a pattern (`case`, Java patterns).
    pub(super) pattern_sources: Option<Vec<usize>>,
    /// Python: the root whose top-level `def`s are methods of an implicit class.
    pub(super) bare_methods_of: Option<u32>,
    pub(super) depth: usize,
}

pub(super) const PUNCT: [&str; 5] = [",", "(", ")", "[", "]"];

impl<'a> Refined<'a> {
    pub(super) fn new(a: &'a Arena, tokens: &'a [CodeToken], lang: Language) -> Self {
        Refined {
            a,
            tokens,
            roles: tokens.iter().map(CodeToken::ident_role).collect(),
            rules: lang.rules().dfg,
            syms: HashMap::new(),
            scopes: vec![Scope {
                kind: ScopeKind::Module,
                uid: 0,
                receiver: None,
                redirect: HashMap::new(),
            }],
            vars: States::default(),
            next_uid: 1,
            visits: 0,
            budget: VISIT_BUDGET_PER_NODE
                .saturating_mul(a.nodes.len())
                .max(100_000),
            edges: Vec::new(),
            log: Vec::new(),
            pattern_sources: None,
            bare_methods_of: None,
            depth: 0,
        }
    }

    pub(super) fn finish(mut self) -> Vec<(usize, usize, DfgKind)> {
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

    pub(super) fn sym(&mut self, tok: usize) -> u32 {
        let next = self.syms.len() as u32;
        *self
            .syms
            .entry(self.tokens[tok].text.as_str())
            .or_insert(next)
    }

    /// Token of a leaf node if it is an identifier.
    pub(super) fn ident(&self, n: u32) -> Option<usize> {
        let t = self.a.token(n)?;
        (self.tokens[t].category == Category::Identifier).then_some(t)
    }

    pub(super) fn inner(&self) -> usize {
        self.scopes.len() - 1
    }

    pub(super) fn since(&self, mark: usize) -> Vec<usize> {
        let mut v = self.log[mark..].to_vec();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Visit `n` and return the identifiers it touched.
    pub(super) fn sources_of(&mut self, n: Option<u32>) -> Vec<usize> {
        let mark = self.log.len();
        if let Some(n) = n {
            self.visit(n);
        }
        self.since(mark)
    }

    /// The variables key of a location.
    pub(super) fn key(&self, (i, k): Loc) -> Key {
        (u64::from(self.scopes[i].uid) << 32) | u64::from(k)
    }

    pub(super) fn bound(&self, loc: Loc) -> bool {
        self.vars.contains(self.key(loc))
    }

    pub(super) fn defs(&self, loc: Loc) -> Option<Vec<u32>> {
        self.vars.get(self.key(loc)).cloned()
    }

    pub(super) fn set_defs(&mut self, loc: Loc, v: Vec<u32>) {
        let k = self.key(loc);
        self.vars.set(k, v);
    }

    /// Open a branch construct (closed by [`Refined::merge_ends`]); its first mark.
    pub(super) fn open(&mut self) -> usize {
        self.vars.open()
    }

    /// A point to walk a branch from, inside an open construct.
    pub(super) fn mark(&self) -> usize {
        self.vars.mark()
    }

    /// The branch walked since `mark`, undone.
    pub(super) fn take(&mut self, mark: usize) -> Diff {
        self.vars.take_diff(mark)
    }

    /// Close the construct and merge its branch ends into the current state (see
    /// [`States::merge`]).
    pub(super) fn merge_ends(&mut self, marks: &[usize], diffs: Vec<Diff>, with_current: bool) {
        self.vars.close();
        self.vars.merge(marks, diffs, with_current);
    }

    /// Set the state to the union of the state at `mark` and the current one (an
    /// `except` clause may start before or after any statement of the `try` body).
    pub(super) fn merge_with_mark(&mut self, mark: usize) {
        self.vars.merge(&[mark], vec![Diff::new()], true);
    }

    pub(super) fn push(&mut self, kind: ScopeKind, receiver: Option<u32>) {
        let uid = self.next_uid;
        self.next_uid += 1;
        self.scopes.push(Scope {
            kind,
            uid,
            receiver,
            redirect: HashMap::new(),
        });
    }

    pub(super) fn pop(&mut self) {
        if self.scopes.len() > 1 {
            self.scopes.pop();
        }
    }

    pub(super) fn nearest_class(&self) -> Option<usize> {
        self.scopes.iter().rposition(|s| s.kind == ScopeKind::Class)
    }

    // --- name resolution -------------------------------------------------------------

    /// Where a bare name is currently bound.
    pub(super) fn resolve(&self, s: u32) -> Option<Loc> {
        let inner = self.inner();
        if let Some(&t) = self.scopes[inner].redirect.get(&s) {
            return self.bound((t, s)).then_some((t, s));
        }
        for (i, sc) in self.scopes.iter().enumerate().rev() {
            match (self.rules.class_scope, sc.kind) {
                (ClassScope::OwnBody, ScopeKind::Class) if i != inner => continue,
                (ClassScope::Fields, ScopeKind::Class) => {
                    if self.bound((i, s | FIELD)) {
                        return Some((i, s | FIELD));
                    }
                }
                _ => {
                    if self.bound((i, s)) {
                        return Some((i, s));
                    }
                }
            }
        }
        None
    }

    /// Where a new binding of a bare name goes.
    pub(super) fn bare_def_loc(&self, s: u32) -> Loc {
        let inner = self.inner();
        match self.scopes[inner].redirect.get(&s) {
            Some(&t) => (t, s),
            None => (inner, s),
        }
    }

    /// Field key of an attribute leaf `n` reached through the receiver (`self.x`,
    /// `this.x`), as (class scope, key).
    pub(super) fn field_loc(&mut self, n: u32) -> Option<Loc> {
        (self.rules.field_loc)(self, n)
    }

    // --- events ----------------------------------------------------------------------

    pub(super) fn edge(&mut self, i: usize, j: usize, kind: DfgKind) {
        if i != j {
            self.edges.push((i, j, kind));
        }
    }

    /// A read of `tok` at `loc`; unbound -> the occurrence becomes the definition at
    /// `fallback` (DFG.py).
    pub(super) fn read(&mut self, tok: usize, loc: Option<Loc>, fallback: Loc) {
        let defs = loc.and_then(|l| self.defs(l));
        match defs {
            Some(defs) => {
                for d in defs {
                    self.edge(tok, d as usize, DfgKind::ComesFrom);
                }
            }
            None => self.set_defs(fallback, vec![tok as u32]),
        }
        self.log.push(tok);
    }

    pub(super) fn use_bare(&mut self, tok: usize) {
        let s = self.sym(tok);
        let loc = self.resolve(s);
        let fallback = self.bare_def_loc(s);
        self.read(tok, loc, fallback);
    }

    /// A (re)definition of `tok` at `locs`, from `sources`.
    pub(super) fn write(
        &mut self,
        tok: usize,
        locs: &[Loc],
        aug: bool,
        sources: &[usize],
        kind: DfgKind,
    ) {
        if aug {
            for &l in locs {
                if let Some(defs) = self.defs(l) {
                    for d in defs {
                        self.edge(tok, d as usize, DfgKind::ComesFrom);
                    }
                }
            }
        }
        for &s in sources {
            self.edge(tok, s, kind);
        }
        for &l in locs {
            self.set_defs(l, vec![tok as u32]);
        }
        self.log.push(tok);
    }

    /// Define identifier leaf `n` (token `tok`) according to its role.
    pub(super) fn define(
        &mut self,
        tok: usize,
        n: u32,
        role: Role,
        aug: bool,
        sources: &[usize],
        kind: DfgKind,
    ) {
        let s = self.sym(tok);
        let Some(locs) = (self.rules.def_locs)(self, n, role, s) else {
            return;
        };
        self.write(tok, &locs, aug, sources, kind);
    }

    /// Define leaf `n` with its own role (or as a variable when it has none).
    pub(super) fn define_leaf(&mut self, n: u32, aug: bool, sources: &[usize], kind: DfgKind) {
        if let Some(tok) = self.ident(n) {
            let role = self.roles[tok]
                .filter(IdentRole::is_definition)
                .map_or(Role::Variable, |r| r.role);
            self.define(tok, n, role, aug, sources, kind);
        }
    }

    // --- traversal -------------------------------------------------------------------

    pub(super) fn visit(&mut self, n: u32) {
        if self.depth >= MAX_DFG_DEPTH {
            return;
        }
        self.visits += 1;
        self.depth += 1;
        if self.a.is_leaf(n) {
            self.leaf(n);
        } else {
            (self.rules.refined_visit)(self, n);
        }
        self.depth -= 1;
    }

    pub(super) fn visit_opt(&mut self, n: Option<u32>) {
        if let Some(n) = n {
            self.visit(n);
        }
    }

    pub(super) fn visit_children(&mut self, n: u32) {
        let a = self.a;
        for &c in a.children(n) {
            self.visit(c);
        }
    }

    pub(super) fn leaf(&mut self, n: u32) {
        let Some(tok) = self.ident(n) else { return };
        let Some(role) = self.roles[tok] else { return };
        match role.binding {
            Binding::Use => match role.role {
                Role::Variable | Role::Function => self.use_bare(tok),
                Role::Decorator if self.rules.decorators_are_uses => self.use_bare(tok),
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
    pub(super) fn bind(&mut self, l: u32, sources: &[usize], aug: bool) {
        let a = self.a;
        if a.is_leaf(l) {
            self.define_leaf(l, aug, sources, DfgKind::ComputedFrom);
            return;
        }
        let k = a.kind(l);
        let rules = self.rules;
        if (rules.bind_container)(k) {
            for &ch in a.children(l) {
                self.bind(ch, sources, aug);
            }
        } else if k == rules.member.kind {
            let obj = a.child_by_field(l, rules.member.object);
            let field = a.child_by_field(l, rules.member.member);
            let through_receiver = field.is_some_and(|f| self.field_loc(f).is_some());
            if through_receiver {
                self.visit_opt(obj);
                if let Some(f) = field {
                    self.define_leaf(f, aug, sources, DfgKind::ComputedFrom);
                }
            } else if let Some(o) = obj {
                self.mutate(o, sources);
            }
        } else if k == rules.index.kind {
            let base = a.child_by_field(l, rules.index.base);
            for &ch in a.children(l) {
                if Some(ch) != base {
                    self.visit(ch);
                }
            }
            if let Some(b) = base {
                self.mutate(b, sources);
            }
        } else {
            self.visit(l);
        }
    }

    /// A write into part of `obj` (`obj[i] = v`, `obj.f = v`): the variable is read and
    /// redefined (DFG.py makes the whole left side a target).
    pub(super) fn mutate(&mut self, obj: u32, sources: &[usize]) {
        let a = self.a;
        if a.is_leaf(obj) {
            if let Some(tok) = self.ident(obj) {
                self.use_bare(tok);
                let s = self.sym(tok);
                let loc = match self.rules.rebind {
                    Rebind::Local => self.bare_def_loc(s),
                    Rebind::Reaching => self.resolve(s).unwrap_or((self.inner(), s)),
                };
                self.write(tok, &[loc], false, sources, DfgKind::ComputedFrom);
            }
        } else if a.kind(obj) == self.rules.member.kind || a.kind(obj) == self.rules.index.kind {
            self.bind(obj, sources, true);
        } else {
            self.visit(obj);
        }
    }

    /// Walk `body` twice (loop-carried flow); afterwards the state is the union of
    /// "not entered" and "after the body". Past the visit budget (hostile nesting: k
    /// nested loops walk the innermost body 2^k times), once.
    pub(super) fn loop_twice(&mut self, mut body: impl FnMut(&mut Self)) {
        let m = self.open();
        let passes = if self.visits < self.budget { 2 } else { 1 };
        for pass in 0..passes {
            body(self);
            let after = self.take(m);
            if pass + 1 < passes {
                // Still open: the second pass is undone back to the state before the loop.
                self.vars.merge(&[m], vec![after], true);
            } else {
                self.merge_ends(&[m], vec![after], true);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::{parse, Language};
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
        assert!(!s.graphs.dfg_refined.is_empty());
    }
}
