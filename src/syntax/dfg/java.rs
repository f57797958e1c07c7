//! Java rules of the data-flow graph: declarations, fields, parameters, assignments,
//! updates, loops, branches, `switch`, `try`, `instanceof` patterns, lambdas.

use super::super::arena::Arena;
use super::super::roles::java::java_is_target;
use super::super::token::Role;
use super::refined::{ClassScope, Index, Loc, Member, Rebind, Refined, ScopeKind, FIELD};
use super::study::Study;
use super::{DfgKind, DfgRules};

/// Java's rules of both data-flow walks.
pub(crate) static RULES: DfgRules = DfgRules {
    study_visit: |w, n| w.java(n),
    study_leaf_types,
    refined_start: |_, _| {},
    refined_visit: |d, n| d.visit_java(n),
    class_scope: ClassScope::Fields,
    field_loc: |d, n| d.java_field_loc(n),
    def_locs: |d, n, role, s| d.java_def_locs(n, role, s),
    decorators_are_uses: false,
    bind_container: |kind| kind == "parenthesized_expression",
    member: Member {
        kind: "field_access",
        object: "object",
        member: "field",
    },
    index: Index {
        kind: "array_access",
        base: "array",
    },
    rebind: Rebind::Reaching,
};

impl Refined<'_> {
    /// The field key of `this.x`'s `x` (the nearest class).
    fn java_field_loc(&mut self, n: u32) -> Option<Loc> {
        let a = self.a;
        let p = a.parent(n)?;
        let tok = a.token(n)?;
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

    /// Where a definition of leaf `n` (symbol `s`) binds: fields in the nearest class,
    /// assigned variables where they were declared, declared variables and parameters in
    /// the innermost scope; other names nowhere.
    fn java_def_locs(&mut self, n: u32, role: Role, s: u32) -> Option<Vec<Loc>> {
        let a = self.a;
        let inner = self.inner();
        match role {
            Role::Attribute => {
                if a.parent_kind(n) == "field_access" {
                    self.field_loc(n).map(|l| vec![l])
                } else {
                    Some(match self.nearest_class() {
                        Some(c) => vec![(c, s | FIELD)],
                        None => vec![(inner, s)],
                    })
                }
            }
            Role::Variable if java_is_target(a, n) => {
                Some(vec![self.resolve(s).unwrap_or((inner, s))])
            }
            Role::Variable | Role::Parameter => Some(vec![(inner, s)]),
            _ => None,
        }
    }

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
                let m = self.open();
                self.visit_opt(a.child_by_field(n, "consequence"));
                let then_end = self.take(m);
                match a.child_by_field(n, "alternative") {
                    Some(alt) => {
                        self.visit(alt);
                        let else_end = self.take(m);
                        self.merge_ends(&[m, m], vec![then_end, else_end], false);
                    }
                    None => self.merge_ends(&[m], vec![then_end], true),
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
                let m = self.open();
                self.visit_opt(body);
                self.visit_opt(cond);
                let second = self.take(m);
                self.merge_ends(&[m], vec![second], true);
            }
            "switch_expression" | "switch_statement" => self.java_switch(n),
            "try_statement" | "try_with_resources_statement" => {
                self.visit_opt(a.child_by_field(n, "resources"));
                let before = self.open();
                self.visit_opt(a.child_by_field(n, "body"));
                let (mut marks, mut diffs) = (Vec::new(), Vec::new());
                let mut finally = None;
                for &c in a.children(n) {
                    match a.kind(c) {
                        "catch_clause" => {
                            let m = self.mark();
                            self.merge_with_mark(before);
                            self.visit(c);
                            diffs.push(self.take(m));
                            marks.push(m);
                        }
                        "finally_clause" => finally = Some(c),
                        _ => {}
                    }
                }
                // The ends: every catch, and the body's own end.
                self.merge_ends(&marks, diffs, true);
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
        let (mut marks, mut diffs) = (Vec::new(), Vec::new());
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
        let m = self.open();
        for g in groups {
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
            diffs.push(self.take(m));
            marks.push(m);
        }
        let fall_through = !has_default || diffs.is_empty();
        self.merge_ends(&marks, diffs, fall_through);
    }
}

// ---------------------------------------------------------------------------------------
// The study's graph: GraphCodeBERT's DFG_java, rule for rule
// ---------------------------------------------------------------------------------------

/// Where tree-sitter-java 0.23 gives a leaf another type than the grammar of
/// GraphCodeBERT's time, that type (per node, `None` elsewhere): a class literal of a
/// class name, `Foo.class` or `a.b.Foo.class`, was then a chain of `field_access` over
/// `identifier`s, `class` included (so each is a value, and `class` chains from one such
/// literal to the next); `int.class` and `Foo[].class` were `class_literal`s as now.
/// One pass in preorder (a parent before its children).
fn study_leaf_types(a: &Arena) -> Vec<Option<&'static str>> {
    let n = a.nodes.len();
    let mut in_name_literal = vec![false; n];
    let mut out = vec![None; n];
    for i in 0..n {
        let id = i as u32;
        let parent_flag = a.parent(id).is_some_and(|p| in_name_literal[p as usize]);
        match a.kind(id) {
            "class_literal" => {
                in_name_literal[i] = a.children(id).first().is_some_and(|&c| {
                    matches!(a.kind(c), "type_identifier" | "scoped_type_identifier")
                });
            }
            "scoped_type_identifier" => in_name_literal[i] = parent_flag,
            "type_identifier" | "class" if parent_flag => out[i] = Some("identifier"),
            _ => {}
        }
    }
    out
}

impl Study<'_> {
    /// `DFG_java` on a non-leaf node (leaves are handled by the engine).
    pub(super) fn java(&mut self, n: u32) {
        let a = self.a;
        match a.kind(n) {
            "variable_declarator" => {
                let name = a.child_by_field(n, "name");
                let value = a.child_by_field(n, "value");
                self.declarator(name, value);
            }
            "assignment_expression" => {
                let (left, right) = (a.child_by_field(n, "left"), a.child_by_field(n, "right"));
                let Some(r) = right else { return };
                self.visit(r);
                if let Some(l) = left {
                    let (t, s) = (self.vars(l), self.vars(r));
                    self.assign(&t, &s, DfgKind::ComputedFrom);
                }
            }
            "update_expression" => {
                let t = self.vars(n);
                self.assign(&t, &t, DfgKind::ComputedFrom);
            }
            "if_statement" => {
                // Children up to the first `if_statement` or `else` child on the current
                // state; that child and the rest each on the state before; the union of
                // all ends and the state before (added by the `else` leaf, whose walk
                // changes nothing, or else explicitly).
                let kids = self.kids(n);
                let split = kids
                    .iter()
                    .position(|&c| matches!(a.kind(c), "if_statement" | "else"))
                    .unwrap_or(kids.len());
                let (main, alts) = kids.split_at(split);
                self.branches(main, alts, true);
            }
            "for_statement" => {
                let kids = self.kids(n);
                for &c in kids.iter() {
                    self.visit(c);
                }
                // Walked again from after a `local_variable_declaration` init.
                if let Some(p) = kids
                    .iter()
                    .position(|&c| a.kind(c) == "local_variable_declaration")
                {
                    if self.twice() == 2 {
                        for &c in &kids[p + 1..] {
                            self.visit(c);
                        }
                    }
                }
            }
            "enhanced_for_statement" => {
                let name = a.child_by_field(n, "name");
                let value = a.child_by_field(n, "value");
                let body = a.child_by_field(n, "body");
                for _ in 0..self.twice() {
                    if let Some(v) = value {
                        self.visit(v);
                        if let Some(nm) = name {
                            let (t, s) = (self.vars(nm), self.vars(v));
                            self.assign(&t, &s, DfgKind::ComputedFrom);
                        }
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
            _ => self.children(n, &[]),
        }
    }
}
