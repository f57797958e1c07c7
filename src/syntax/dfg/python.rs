//! Python rules of the data-flow graph: definitions, parameters, assignments, loops,
//! branches, comprehensions, `with`/`except`/`match` bindings, `global`/`nonlocal`.

use super::super::roles::python::{python_is_method, PY_TARGET_CONTAINERS};
use super::super::token::Role;
use super::refined::{ClassScope, Index, Loc, Member, Rebind, Refined, ScopeKind, FIELD, PUNCT};
use super::study::Study;
use super::{DfgKind, DfgRules};

/// Python's rules of both data-flow walks.
pub(crate) static RULES: DfgRules = DfgRules {
    study_visit: |w, n| w.python(n),
    study_leaf_types: |_| Vec::new(),
    refined_start: |d, n| d.py_start(n),
    refined_visit: |d, n| d.visit_python(n),
    class_scope: ClassScope::OwnBody,
    field_loc: |d, n| d.py_field_loc(n),
    def_locs: |d, n, role, s| d.py_def_locs(n, role, s),
    decorators_are_uses: true,
    bind_container,
    member: Member {
        kind: "attribute",
        object: "object",
        member: "attribute",
    },
    index: Index {
        kind: "subscript",
        base: "value",
    },
    rebind: Rebind::Local,
};

/// Assignment-target containers (shared with role inference) plus `as` targets.
fn bind_container(kind: &str) -> bool {
    kind == "as_pattern_target" || PY_TARGET_CONTAINERS.contains(&kind)
}

impl Refined<'_> {
    /// Before the walk of `root`: the class scope of wrapped pasted methods, or of bare
    /// ones.
    fn py_start(&mut self, root: u32) {
        if self.a.parent_kind(root) == "class_definition" {
            // Wrapped pasted methods: the wrapper's class scope.
            self.push(ScopeKind::Class, None);
        } else if self.py_bare_methods(root) {
            // Methods without their class (a corpus snippet is one dedented method): the
            // class they came from, so `self.x = a` reaches `return self.x`.
            self.push(ScopeKind::Class, None);
            self.bare_methods_of = Some(root);
        }
    }

    /// The field key of `self.x`'s `x` (the receiver of the nearest method scope).
    fn py_field_loc(&mut self, n: u32) -> Option<Loc> {
        let a = self.a;
        let p = a.parent(n)?;
        let tok = a.token(n)?;
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

    /// Where a definition of leaf `n` (symbol `s`) binds: attributes through `self` as
    /// fields, class-body names both as names and fields, no binding for type names,
    /// keyword-argument names, labels and decorators.
    fn py_def_locs(&mut self, n: u32, role: Role, s: u32) -> Option<Vec<Loc>> {
        let inner = self.inner();
        let in_class = self.scopes[inner].kind == ScopeKind::Class;
        match role {
            Role::Attribute if self.a.parent_kind(n) == "attribute" => {
                self.field_loc(n).map(|l| vec![l])
            }
            Role::Attribute | Role::Method | Role::Function if in_class => {
                Some(vec![(inner, s), (inner, s | FIELD)])
            }
            Role::Type | Role::KeywordArgument | Role::Label | Role::Decorator => None,
            _ => Some(vec![self.bare_def_loc(s)]),
        }
    }

    pub(super) fn visit_python(&mut self, n: u32) {
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
                            if self.bound((i, s)) {
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
            && (python_is_method(a, n) || self.py_is_bare_method(n))
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

    /// Is the snippet made only of `def`s (comments aside), at least one taking `self` or
    /// `cls` first: methods pasted without their class?
    pub(super) fn py_bare_methods(&self, root: u32) -> bool {
        let a = self.a;
        let mut any = false;
        for &c in a.children(root) {
            let func = match a.kind(c) {
                "comment" => continue,
                "function_definition" => c,
                "decorated_definition" => match a.child_by_field(c, "definition") {
                    Some(d) if a.kind(d) == "function_definition" => d,
                    _ => return false,
                },
                _ => return false,
            };
            any |= self
                .py_first_param(func)
                .is_some_and(|t| matches!(self.tokens[t].text.as_str(), "self" | "cls"));
        }
        any
    }

    /// The token of a function's first parameter name.
    fn py_first_param(&self, func: u32) -> Option<usize> {
        let a = self.a;
        let ps = a.child_by_field(func, "parameters")?;
        let first = a
            .children(ps)
            .iter()
            .copied()
            .find(|&c| !matches!(a.kind(c), "(" | ")" | "," | "comment"))?;
        let name = match a.kind(first) {
            "identifier" => first,
            "typed_parameter" => *a.children(first).first()?,
            "default_parameter" | "typed_default_parameter" => a.child_by_field(first, "name")?,
            _ => return None,
        };
        self.ident(name)
    }

    /// A top-level `def` of a snippet of bare methods (see `py_bare_methods`).
    fn py_is_bare_method(&self, func: u32) -> bool {
        let a = self.a;
        let Some(root) = self.bare_methods_of else {
            return false;
        };
        let mut p = a.parent(func);
        if p.is_some_and(|p| a.kind(p) == "decorated_definition") {
            p = p.and_then(|p| a.parent(p));
        }
        p == Some(root)
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

    /// `if` / `elif` / `else`: each branch starts from the state after its condition
    /// (and the conditions before it); the state after is the union of the branch ends,
    /// plus the state after the last condition when there is no `else`.
    fn py_if(&mut self, n: u32) {
        let a = self.a;
        self.visit_opt(a.child_by_field(n, "condition"));
        let (mut marks, mut diffs) = (Vec::new(), Vec::new());
        let m = self.open();
        self.visit_opt(a.child_by_field(n, "consequence"));
        diffs.push(self.take(m));
        marks.push(m);
        let mut has_else = false;
        for alt in a.children_by_field(n, "alternative") {
            if a.kind(alt) == "elif_clause" {
                self.visit_opt(a.child_by_field(alt, "condition"));
                let m = self.mark();
                self.visit_opt(a.child_by_field(alt, "consequence"));
                diffs.push(self.take(m));
                marks.push(m);
            } else {
                has_else = true;
                let m = self.mark();
                self.visit_children(alt);
                diffs.push(self.take(m));
                marks.push(m);
            }
        }
        self.merge_ends(&marks, diffs, !has_else);
    }

    /// `try`: an `except` starts from the union of the states before and after the body;
    /// `else` from the state after it; the state after is the union of the ends (and of
    /// the body's end when there is no `else`), then `finally` runs.
    fn py_try(&mut self, n: u32) {
        let a = self.a;
        let before = self.open();
        self.visit_opt(a.child_by_field(n, "body"));
        let (mut marks, mut diffs) = (Vec::new(), Vec::new());
        let mut has_else = false;
        let mut finally = None;
        for &c in a.children(n) {
            match a.kind(c) {
                "except_clause" | "except_group_clause" => {
                    let m = self.mark();
                    self.merge_with_mark(before);
                    self.visit_children(c);
                    diffs.push(self.take(m));
                    marks.push(m);
                }
                "else_clause" => {
                    let m = self.mark();
                    self.visit(c);
                    diffs.push(self.take(m));
                    marks.push(m);
                    has_else = true;
                }
                "finally_clause" => finally = Some(c),
                _ => {}
            }
        }
        self.merge_ends(&marks, diffs, !has_else);
        self.visit_opt(finally);
    }

    /// `match`: each case from the state after the subject; the union of the case ends
    /// and that state.
    fn py_match(&mut self, n: u32) {
        let a = self.a;
        let mark = self.log.len();
        for s in a.children_by_field(n, "subject") {
            self.visit(s);
        }
        let srcs = self.since(mark);
        let (mut marks, mut diffs) = (Vec::new(), Vec::new());
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
        let m = self.open();
        for case in cases {
            let old = self.pattern_sources.replace(srcs.clone());
            for &c in a.children(case) {
                if a.kind(c) == "case_pattern" {
                    self.visit(c);
                }
            }
            self.pattern_sources = old;
            self.visit_opt(a.child_by_field(case, "guard"));
            self.visit_opt(a.child_by_field(case, "consequence"));
            diffs.push(self.take(m));
            marks.push(m);
        }
        self.merge_ends(&marks, diffs, true);
    }
}

// ---------------------------------------------------------------------------------------
// The study's graph: DFG_python (GraphCodeBERT, attention/dfg/DFG.py), rule for rule
// ---------------------------------------------------------------------------------------

impl Study<'_> {
    /// `DFG_python` on a non-leaf node (leaves are handled by the engine).
    pub(super) fn python(&mut self, n: u32) {
        let a = self.a;
        match a.kind(n) {
            "default_parameter" => {
                let name = a.child_by_field(n, "name");
                let value = a.child_by_field(n, "value");
                self.declarator(name, value);
            }
            "assignment" | "augmented_assignment" | "for_in_clause" => self.py_assignment(n),
            "if_statement" => {
                let kids = self.kids(n);
                let is_alt = |c: u32| matches!(a.kind(c), "elif_clause" | "else_clause");
                let main: Vec<u32> = kids.iter().copied().filter(|&c| !is_alt(c)).collect();
                let alts: Vec<u32> = kids.iter().copied().filter(|&c| is_alt(c)).collect();
                let has_else = kids.iter().any(|&c| a.kind(c).contains("else"));
                self.branches(&main, &alts, !has_else);
            }
            "for_statement" => {
                let body = self
                    .kids(n)
                    .last()
                    .copied()
                    .filter(|&c| a.kind(c) == "block");
                for _ in 0..self.twice() {
                    let (left, right) = (a.child_by_field(n, "left"), a.child_by_field(n, "right"));
                    if let (Some(l), Some(r)) = (left, right) {
                        self.py_pairs(l, r);
                    }
                    if let Some(b) = body {
                        self.visit(b);
                    }
                }
            }
            "while_statement" => {
                for _ in 0..self.twice() {
                    self.children(n, &[]);
                }
            }
            _ => self.children(n, &["for_in_clause"]),
        }
    }

    /// `assignment`, `augmented_assignment` and `for_in_clause`.
    fn py_assignment(&mut self, n: u32) {
        let a = self.a;
        if a.kind(n) == "for_in_clause" {
            // right_nodes = [children[-1]], left_nodes = [left]
            let right = self.kids(n).last().copied();
            let left = a.child_by_field(n, "left");
            if let Some(r) = right {
                self.visit(r);
                if let Some(l) = left {
                    let (t, s) = (self.vars(l), self.vars(r));
                    self.assign(&t, &s, DfgKind::ComputedFrom);
                }
            }
            return;
        }
        // `x: int` (no right side): no edges, no definition.
        let (Some(l), Some(r)) = (a.child_by_field(n, "left"), a.child_by_field(n, "right")) else {
            return;
        };
        self.py_pairs(l, r);
    }

    /// The pairing of DFG_python's assignment and `for` rules: the non-comma children of
    /// both sides pairwise when there are as many on each side (and at least one),
    /// otherwise the two sides whole; the right nodes walked first, then each left
    /// token `computedFrom` every token of its right node.
    fn py_pairs(&mut self, left: u32, right: u32) {
        let a = self.a;
        let split = |s: &Self, x: u32| -> Vec<u32> {
            s.kids(x)
                .iter()
                .copied()
                .filter(|&c| a.kind(c) != ",")
                .collect()
        };
        let mut ls = split(self, left);
        let mut rs = split(self, right);
        if ls.len() != rs.len() {
            ls = vec![left];
            rs = vec![right];
        }
        if ls.is_empty() {
            ls = vec![left];
        }
        if rs.is_empty() {
            rs = vec![right];
        }
        for &r in &rs {
            self.visit(r);
        }
        for (&l, &r) in ls.iter().zip(&rs) {
            let (t, s) = (self.vars(l), self.vars(r));
            self.assign(&t, &s, DfgKind::ComputedFrom);
        }
    }
}
