//! Python rules of the data-flow graph: definitions, parameters, assignments, loops,
//! branches, comprehensions, `with`/`except`/`match` bindings, `global`/`nonlocal`.

use super::super::roles::python::python_is_method;
use super::super::token::Role;
use super::{Dfg, DfgKind, ScopeKind, PUNCT};

impl Dfg<'_> {
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
}
