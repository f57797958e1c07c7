//! Java rules of the data-flow graph: declarations, fields, parameters, assignments,
//! updates, loops, branches, `switch`, `try`, `instanceof` patterns, lambdas.

use super::{Dfg, DfgKind, ScopeKind, FIELD};

impl Dfg<'_> {
    pub(super) fn visit_java(&mut self, n: u32) {
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
