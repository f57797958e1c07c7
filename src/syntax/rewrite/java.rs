//! Java name binding for `rename:*`: which identifier occurrences refer to a name the
//! snippet declares, and with what role.
//!
//! One walk records the scopes (classes — named, local, anonymous —, methods, blocks,
//! lambdas, `for` / `catch` / `try` resources) with their declarations, and every
//! identifier occurrence with its context; resolution follows Java's rules:
//! - a simple name is the innermost local (parameter, local variable, `for` / `catch` /
//!   resource / pattern variable, lambda parameter) declared before it, else a field of an
//!   enclosing class (its own or inherited from a snippet superclass: fields shadowed by
//!   locals stay fields through `this.`), else a type the snippet declares;
//! - `E.f` / `E.m(...)` / `E::m` are members of the class `E` evaluates to, when the
//!   snippet declares that class: `this`, `super`, a class name, a local / field /
//!   parameter whose declared type is a snippet class, `new C(...)`, a cast, a call of a
//!   snippet method with a snippet return type; otherwise (a library object) they stay;
//! - `m(...)` is a method of an enclosing class; overloads share the new name;
//! - types: type parameters in scope and the classes / interfaces / enums / records the
//!   snippet declares (constructors follow their class); library types stay.
//!
//! Never renamed: methods that override something outside the snippet (`@Override`
//! without a snippet supertype declaring the name, methods of anonymous classes of
//! outside types), `java.lang.Object`'s method names and `main` (contracts with code
//! outside), annotation names and elements, package and import paths, the synthetic
//! wrapper (`__W`, `__m`), the unnamed variable `_`. Enum constants are fields (renamed in `case` labels too);
//! record components are fields and their accessors share the new name.

use std::collections::{HashMap, HashSet};

use tree_sitter::Node;

use super::{Ns, Occ, Resolved};
use crate::syntax::Role;

const OBJECT_METHODS: [&str; 10] = [
    "equals",
    "hashCode",
    "toString",
    "clone",
    "finalize",
    "getClass",
    "notify",
    "notifyAll",
    "wait",
    "main",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Class(usize),
    Local,
}

#[derive(Debug, Clone)]
struct Decl {
    start: usize,
    role: Role,
    /// Declared type name (the base name of a class type), for member access.
    ty: Option<String>,
}

struct Scope {
    kind: Kind,
    parent: Option<usize>,
    locals: HashMap<String, Vec<Decl>>,
    /// Type parameters declared here.
    type_params: HashSet<String>,
}

#[derive(Default)]
struct Class {
    name: Option<String>,
    wrapper: bool,
    anonymous: bool,
    /// Supertype names (extends / implements / the anonymous class's type).
    supers: Vec<String>,
    /// Field name -> declared type.
    fields: HashMap<String, Option<String>>,
    /// Method name -> return type names of its declarations.
    methods: HashMap<String, Vec<Option<String>>>,
    /// Methods annotated `@Override`.
    overrides: HashSet<String>,
    /// Enum constants.
    constants: HashSet<String>,
    scope: usize,
}

#[derive(Debug, Clone, Copy)]
enum Ctx<'t> {
    /// A simple name in an expression (or a local's declaration).
    Name,
    /// A field or enum-constant declaration.
    FieldDecl,
    /// A method declaration.
    MethodDecl,
    /// A type name (declaration, use, constructor name).
    Type,
    /// `object.field` (`None`: unqualified method call).
    Field(Node<'t>),
    /// `object.m(...)`, or `m(...)` when `None`.
    Call(Option<Node<'t>>),
    /// `X::m`.
    MethodRef(Node<'t>),
    /// An identifier in a `case` label (an enum constant).
    CaseLabel,
    /// A statement label.
    Label,
    /// Never renamed.
    Keep,
}

struct Ident<'t> {
    node: Node<'t>,
    scope: usize,
    ctx: Ctx<'t>,
}

struct Binder<'t> {
    src: &'t [u8],
    region: (usize, usize),
    scopes: Vec<Scope>,
    classes: Vec<Class>,
    idents: Vec<Ident<'t>>,
}

fn text<'a>(src: &'a [u8], n: Node) -> &'a str {
    std::str::from_utf8(&src[n.byte_range()]).unwrap_or("")
}

/// Resolve the snippet's names in `root` (the program node); `region` is the snippet's
/// byte range inside the parsed text (the synthetic wrapper lies outside it).
pub(crate) fn resolve(root: Node, src: &[u8], region: (usize, usize)) -> Resolved {
    let mut b = Binder {
        src,
        region,
        scopes: vec![Scope {
            kind: Kind::Local,
            parent: None,
            locals: HashMap::new(),
            type_params: HashSet::new(),
        }],
        classes: Vec::new(),
        idents: Vec::new(),
    };
    b.children(root, 0);
    b.finish()
}

impl<'t> Binder<'t> {
    fn t(&self, n: Node) -> &'t str {
        text(self.src, n)
    }

    fn new_scope(&mut self, kind: Kind, parent: usize) -> usize {
        self.scopes.push(Scope {
            kind,
            parent: Some(parent),
            locals: HashMap::new(),
            type_params: HashSet::new(),
        });
        self.scopes.len() - 1
    }

    fn ident(&mut self, node: Node<'t>, scope: usize, ctx: Ctx<'t>) {
        self.idents.push(Ident { node, scope, ctx });
    }

    fn children(&mut self, n: Node<'t>, scope: usize) {
        let mut c = n.walk();
        let kids: Vec<Node<'t>> = n.children(&mut c).collect();
        for k in kids {
            self.visit(k, scope);
        }
    }

    fn field(&mut self, n: Node<'t>, name: &str, scope: usize) {
        if let Some(x) = n.child_by_field_name(name) {
            self.visit(x, scope);
        }
    }

    /// The base class name of a type node (`List<T>` -> `List`, `a.B` -> `B`, `T[]` -> `T`).
    fn type_name(&self, n: Node) -> Option<String> {
        match n.kind() {
            "type_identifier" => Some(self.t(n).to_string()),
            "generic_type" | "annotated_type" => {
                let mut c = n.walk();
                let k = n
                    .named_children(&mut c)
                    .find(|x| matches!(x.kind(), "type_identifier" | "scoped_type_identifier"));
                k.and_then(|k| self.type_name(k))
            }
            "scoped_type_identifier" => {
                let mut c = n.walk();
                let last = n
                    .named_children(&mut c)
                    .filter(|x| x.kind() == "type_identifier")
                    .last();
                last.map(|x| self.t(x).to_string())
            }
            "array_type" => n
                .child_by_field_name("element")
                .and_then(|e| self.type_name(e)),
            _ => None,
        }
    }

    /// Bind a local in `scope`; `ty` its declared type (`var`: inferred from `init`).
    fn local(&mut self, name: Node<'t>, scope: usize, role: Role, ty: Option<String>) {
        let t = self.t(name).to_string();
        self.scopes[scope].locals.entry(t).or_default().push(Decl {
            start: name.start_byte(),
            role,
            ty,
        });
        self.ident(name, scope, Ctx::Name);
    }

    fn declared_type(&self, ty: Option<Node>, init: Option<Node>) -> Option<String> {
        match ty.and_then(|t| self.type_name(t)) {
            Some(t) if t != "var" => Some(t),
            _ => init.and_then(|i| match i.kind() {
                "object_creation_expression" | "cast_expression" => i
                    .child_by_field_name("type")
                    .and_then(|t| self.type_name(t)),
                _ => None,
            }),
        }
    }

    fn class_body_owner(&self, scope: usize) -> Option<usize> {
        match self.scopes[scope].kind {
            Kind::Class(c) => Some(c),
            Kind::Local => None,
        }
    }

    fn visit(&mut self, n: Node<'t>, scope: usize) {
        match n.kind() {
            "identifier" => self.ident(n, scope, Ctx::Name),
            "type_identifier" => self.ident(n, scope, Ctx::Type),
            "line_comment" | "block_comment" => {}
            "package_declaration" | "import_declaration" | "marker_annotation" => {
                self.keep_all(n, scope)
            }
            "annotation" => {
                if let Some(name) = n.child_by_field_name("name") {
                    self.keep_all(name, scope);
                }
                if let Some(args) = n.child_by_field_name("arguments") {
                    let mut c = args.walk();
                    for k in args.named_children(&mut c).collect::<Vec<_>>() {
                        if k.kind() == "element_value_pair" {
                            if let Some(key) = k.child_by_field_name("key") {
                                self.ident(key, scope, Ctx::Keep);
                            }
                            self.field(k, "value", scope);
                        } else {
                            self.visit(k, scope);
                        }
                    }
                }
            }
            "class_declaration"
            | "interface_declaration"
            | "enum_declaration"
            | "record_declaration"
            | "annotation_type_declaration" => self.class(n, scope),
            "field_declaration" | "constant_declaration" => {
                let owner = self.class_body_owner(scope);
                let ty_node = n.child_by_field_name("type");
                let ty = ty_node.and_then(|t| self.type_name(t));
                let mut c = n.walk();
                for k in n.children(&mut c).collect::<Vec<_>>() {
                    if k.kind() == "variable_declarator" {
                        if let (Some(name), Some(o)) = (k.child_by_field_name("name"), owner) {
                            let t = self.t(name).to_string();
                            self.classes[o].fields.insert(t, ty.clone());
                            self.ident(name, scope, Ctx::FieldDecl);
                        }
                        self.field(k, "value", scope);
                    } else {
                        self.visit(k, scope);
                    }
                }
            }
            "method_declaration"
            | "constructor_declaration"
            | "compact_constructor_declaration"
            | "annotation_type_element_declaration" => self.method(n, scope),
            "block"
            | "switch_block"
            | "for_statement"
            | "try_with_resources_statement"
            | "catch_clause"
            | "enhanced_for_statement"
            | "try_statement" => {
                let s = self.new_scope(Kind::Local, scope);
                if n.kind() == "enhanced_for_statement" {
                    let ty = n.child_by_field_name("type");
                    self.field(n, "type", s);
                    self.field(n, "value", scope);
                    if let Some(name) = n.child_by_field_name("name") {
                        let t = self.declared_type(ty, None);
                        self.local(name, s, Role::Variable, t);
                    }
                    self.field(n, "body", s);
                } else {
                    self.children(n, s);
                }
            }
            "local_variable_declaration" => {
                let ty_node = n.child_by_field_name("type");
                let mut c = n.walk();
                for k in n.children(&mut c).collect::<Vec<_>>() {
                    if k.kind() == "variable_declarator" {
                        let init = k.child_by_field_name("value");
                        self.field(k, "value", scope);
                        if let Some(name) = k.child_by_field_name("name") {
                            let t = self.declared_type(ty_node, init);
                            self.local(name, scope, Role::Variable, t);
                        }
                    } else {
                        self.visit(k, scope);
                    }
                }
            }
            "resource" => {
                let ty = n.child_by_field_name("type");
                self.field(n, "type", scope);
                self.field(n, "value", scope);
                match n.child_by_field_name("name") {
                    Some(name) => {
                        let init = n.child_by_field_name("value");
                        let t = self.declared_type(ty, init);
                        self.local(name, scope, Role::Variable, t);
                    }
                    None => {
                        // Java 9: an existing variable as resource.
                        let mut c = n.walk();
                        for k in n.named_children(&mut c).collect::<Vec<_>>() {
                            if n.child_by_field_name("type") != Some(k)
                                && n.child_by_field_name("value") != Some(k)
                            {
                                self.visit(k, scope);
                            }
                        }
                    }
                }
            }
            "catch_formal_parameter" | "formal_parameter" | "spread_parameter" => {
                self.parameter(n, scope, Role::Parameter)
            }
            "lambda_expression" => {
                let s = self.new_scope(Kind::Local, scope);
                if let Some(p) = n.child_by_field_name("parameters") {
                    match p.kind() {
                        "identifier" => self.local(p, s, Role::Parameter, None),
                        "inferred_parameters" => {
                            let mut c = p.walk();
                            for k in p.named_children(&mut c).collect::<Vec<_>>() {
                                if k.kind() == "identifier" {
                                    self.local(k, s, Role::Parameter, None);
                                }
                            }
                        }
                        _ => self.children(p, s),
                    }
                }
                self.field(n, "body", s);
            }
            "instanceof_expression" => {
                self.field(n, "left", scope);
                self.field(n, "right", scope);
                if let Some(p) = n.child_by_field_name("pattern") {
                    self.visit(p, scope);
                }
                if let Some(name) = n.child_by_field_name("name") {
                    let ty = n.child_by_field_name("right");
                    let t = self.declared_type(ty, None);
                    self.local(name, scope, Role::Variable, t);
                }
            }
            "type_pattern" => {
                let mut c = n.walk();
                let kids: Vec<Node<'t>> = n.named_children(&mut c).collect();
                let ty = kids.first().copied();
                for k in &kids {
                    if k.kind() == "identifier" {
                        let t = self.declared_type(ty, None);
                        self.local(*k, scope, Role::Variable, t);
                    } else {
                        self.visit(*k, scope);
                    }
                }
            }
            "labeled_statement" | "break_statement" | "continue_statement" => {
                let mut c = n.walk();
                for k in n.children(&mut c).collect::<Vec<_>>() {
                    if k.kind() == "identifier" {
                        self.ident(k, scope, Ctx::Label);
                    } else {
                        self.visit(k, scope);
                    }
                }
            }
            "method_invocation" => {
                let obj = n.child_by_field_name("object");
                let mut c = n.walk();
                for k in n.children(&mut c).collect::<Vec<_>>() {
                    if n.child_by_field_name("name") == Some(k) {
                        self.ident(k, scope, Ctx::Call(obj));
                    } else {
                        self.visit(k, scope);
                    }
                }
            }
            "field_access" => {
                let obj = n.child_by_field_name("object");
                if let Some(o) = obj {
                    self.visit(o, scope);
                }
                if let (Some(f), Some(o)) = (n.child_by_field_name("field"), obj) {
                    if f.kind() == "identifier" {
                        self.ident(f, scope, Ctx::Field(o));
                    }
                }
            }
            "method_reference" => {
                let mut c = n.walk();
                let kids: Vec<Node<'t>> = n.children(&mut c).collect();
                let first = kids.first().copied();
                for (i, k) in kids.iter().enumerate() {
                    if i > 0 && k.kind() == "identifier" {
                        match first {
                            Some(f) => self.ident(*k, scope, Ctx::MethodRef(f)),
                            None => self.ident(*k, scope, Ctx::Keep),
                        }
                    } else {
                        self.visit(*k, scope);
                    }
                }
            }
            "object_creation_expression" => {
                let mut c = n.walk();
                for k in n.children(&mut c).collect::<Vec<_>>() {
                    if k.kind() == "class_body" {
                        let sup = n
                            .child_by_field_name("type")
                            .and_then(|t| self.type_name(t));
                        self.anonymous(k, scope, sup);
                    } else {
                        self.visit(k, scope);
                    }
                }
            }
            "switch_label" => {
                let mut c = n.walk();
                for k in n.children(&mut c).collect::<Vec<_>>() {
                    if k.kind() == "identifier" {
                        self.ident(k, scope, Ctx::CaseLabel);
                    } else {
                        self.visit(k, scope);
                    }
                }
            }
            _ => self.children(n, scope),
        }
    }

    fn keep_all(&mut self, n: Node<'t>, scope: usize) {
        let mut stack = vec![n];
        while let Some(x) = stack.pop() {
            if matches!(x.kind(), "identifier" | "type_identifier") {
                self.ident(x, scope, Ctx::Keep);
            }
            let mut c = x.walk();
            stack.extend(x.children(&mut c));
        }
    }

    fn parameter(&mut self, n: Node<'t>, scope: usize, role: Role) {
        let ty_node = n.child_by_field_name("type").or_else(|| {
            let mut c = n.walk();
            let k = n.named_children(&mut c).find(|k| k.kind() != "modifiers");
            k
        });
        let mut name = n.child_by_field_name("name");
        let mut c = n.walk();
        for k in n.children(&mut c).collect::<Vec<_>>() {
            if Some(k) == name {
                continue;
            }
            if k.kind() == "variable_declarator" {
                name = k.child_by_field_name("name");
                continue;
            }
            self.visit(k, scope);
        }
        if let Some(nm) = name {
            let role = if n.kind() == "catch_formal_parameter" {
                Role::Variable
            } else {
                role
            };
            let ty = if n.kind() == "catch_formal_parameter" {
                None
            } else {
                self.declared_type(ty_node, None)
            };
            self.local(nm, scope, role, ty);
        }
    }

    fn type_parameters(&mut self, n: Node<'t>, scope: usize) {
        let mut c = n.walk();
        for tp in n.named_children(&mut c).collect::<Vec<_>>() {
            if tp.kind() != "type_parameter" {
                continue;
            }
            let mut cc = tp.walk();
            for k in tp.named_children(&mut cc).collect::<Vec<_>>() {
                if k.kind() == "type_identifier"
                    && !self.scopes[scope].type_params.contains(self.t(k))
                {
                    let t = self.t(k).to_string();
                    self.scopes[scope].type_params.insert(t);
                    self.ident(k, scope, Ctx::Type);
                } else {
                    self.visit(k, scope);
                }
            }
        }
    }

    fn class(&mut self, n: Node<'t>, scope: usize) {
        let ci = self.classes.len();
        let wrapper = n.start_byte() < self.region.0;
        let name = n.child_by_field_name("name");
        self.classes.push(Class {
            name: name.map(|x| self.t(x).to_string()),
            wrapper,
            ..Class::default()
        });
        let s = self.new_scope(Kind::Class(ci), scope);
        self.classes[ci].scope = s;
        let mut supers = Vec::new();
        let mut c = n.walk();
        for k in n.children(&mut c).collect::<Vec<_>>() {
            match k.kind() {
                _ if Some(k) == name => self.ident(k, scope, Ctx::Type),
                "type_parameters" => self.type_parameters(k, s),
                "superclass" | "super_interfaces" | "extends_interfaces" => {
                    let mut stack = vec![k];
                    while let Some(x) = stack.pop() {
                        if let Some(t) = self.type_name(x) {
                            supers.push(t);
                        } else {
                            let mut cc = x.walk();
                            stack.extend(x.named_children(&mut cc));
                        }
                    }
                    self.visit(k, s);
                }
                "formal_parameters" => {
                    // Record components: fields with accessors of the same name.
                    let mut cc = k.walk();
                    for p in k.named_children(&mut cc).collect::<Vec<_>>() {
                        if p.kind() != "formal_parameter" {
                            self.visit(p, s);
                            continue;
                        }
                        let ty = p.child_by_field_name("type");
                        if let Some(t) = ty {
                            self.visit(t, s);
                        }
                        if let Some(nm) = p.child_by_field_name("name") {
                            let t = self.t(nm).to_string();
                            let tyn = ty.and_then(|x| self.type_name(x));
                            self.classes[ci].fields.insert(t.clone(), tyn.clone());
                            self.classes[ci].methods.entry(t).or_default().push(tyn);
                            self.ident(nm, s, Ctx::FieldDecl);
                        }
                    }
                }
                "class_body" | "interface_body" | "annotation_type_body" => self.children(k, s),
                "enum_body" => self.enum_body(k, s, ci),
                _ => self.visit(k, s),
            }
        }
        self.classes[ci].supers = supers;
    }

    fn enum_body(&mut self, body: Node<'t>, s: usize, ci: usize) {
        let mut c = body.walk();
        for k in body.children(&mut c).collect::<Vec<_>>() {
            match k.kind() {
                "enum_constant" => {
                    let mut cc = k.walk();
                    for x in k.children(&mut cc).collect::<Vec<_>>() {
                        if k.child_by_field_name("name") == Some(x) {
                            let t = self.t(x).to_string();
                            let owner = self.classes[ci].name.clone();
                            self.classes[ci].constants.insert(t.clone());
                            self.classes[ci].fields.insert(t, owner);
                            self.ident(x, s, Ctx::FieldDecl);
                        } else if x.kind() == "class_body" {
                            let sup = self.classes[ci].name.clone();
                            self.anonymous(x, s, sup);
                        } else {
                            self.visit(x, s);
                        }
                    }
                }
                "enum_body_declarations" => self.children(k, s),
                _ => self.visit(k, s),
            }
        }
    }

    fn anonymous(&mut self, body: Node<'t>, scope: usize, sup: Option<String>) {
        let ci = self.classes.len();
        self.classes.push(Class {
            anonymous: true,
            supers: sup.into_iter().collect(),
            ..Class::default()
        });
        let s = self.new_scope(Kind::Class(ci), scope);
        self.classes[ci].scope = s;
        self.children(body, s);
    }

    fn method(&mut self, n: Node<'t>, scope: usize) {
        let owner = self.class_body_owner(scope);
        let s = self.new_scope(Kind::Local, scope);
        let is_ctor = matches!(
            n.kind(),
            "constructor_declaration" | "compact_constructor_declaration"
        );
        let keep_name = n.kind() == "annotation_type_element_declaration";
        let ret = n
            .child_by_field_name("type")
            .and_then(|t| self.type_name(t));
        let mut c = n.walk();
        for k in n.children(&mut c).collect::<Vec<_>>() {
            if n.child_by_field_name("name") == Some(k) {
                if keep_name {
                    self.ident(k, scope, Ctx::Keep);
                } else if is_ctor {
                    self.ident(k, scope, Ctx::Type);
                } else if let Some(o) = owner {
                    let t = self.t(k).to_string();
                    self.classes[o]
                        .methods
                        .entry(t)
                        .or_default()
                        .push(ret.clone());
                    self.ident(k, scope, Ctx::MethodDecl);
                } else {
                    self.ident(k, scope, Ctx::Keep);
                }
                continue;
            }
            match k.kind() {
                "modifiers" => {
                    let mut cc = k.walk();
                    let over = k.named_children(&mut cc).any(|a| {
                        matches!(a.kind(), "marker_annotation" | "annotation")
                            && a.child_by_field_name("name")
                                .is_some_and(|x| self.t(x) == "Override")
                    });
                    if over && !is_ctor {
                        if let (Some(o), Some(nm)) = (owner, n.child_by_field_name("name")) {
                            let t = self.t(nm).to_string();
                            self.classes[o].overrides.insert(t);
                        }
                    }
                    self.visit(k, s);
                }
                "type_parameters" => self.type_parameters(k, s),
                _ => self.visit(k, s),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Resolution
// ---------------------------------------------------------------------------------------

enum Found {
    Local(Role, Option<String>),
    Field(Option<String>),
    Type(usize),
}

impl<'t> Binder<'t> {
    /// Snippet classes by name (the wrapper excluded).
    fn class_named(&self, name: &str) -> Option<usize> {
        self.classes
            .iter()
            .position(|c| !c.wrapper && c.name.as_deref() == Some(name))
    }

    /// The class and its snippet supertypes, transitively (cycle-safe).
    fn lineage(&self, c: usize) -> Vec<usize> {
        let mut out = vec![c];
        let mut i = 0;
        while i < out.len() {
            for s in &self.classes[out[i]].supers {
                if let Some(x) = self.class_named(s) {
                    if !out.contains(&x) {
                        out.push(x);
                    }
                }
            }
            i += 1;
        }
        out
    }

    fn field_in(&self, c: usize, name: &str) -> Option<(usize, Option<String>)> {
        self.lineage(c)
            .into_iter()
            .find_map(|k| self.classes[k].fields.get(name).map(|t| (k, t.clone())))
    }

    fn method_in(&self, c: usize, name: &str) -> Option<(usize, Option<String>)> {
        self.lineage(c).into_iter().find_map(|k| {
            self.classes[k]
                .methods
                .get(name)
                .map(|ts| (k, ts.iter().flatten().next().cloned()))
        })
    }

    /// A simple name from `scope` at byte `pos`.
    fn lookup(&self, scope: usize, name: &str, pos: usize) -> Option<Found> {
        let mut s = Some(scope);
        while let Some(i) = s {
            let sc = &self.scopes[i];
            match sc.kind {
                Kind::Local => {
                    if let Some(d) = sc
                        .locals
                        .get(name)
                        .and_then(|ds| ds.iter().rev().find(|d| d.start <= pos))
                    {
                        return Some(Found::Local(d.role, d.ty.clone()));
                    }
                }
                Kind::Class(c) => {
                    if let Some((_, t)) = self.field_in(c, name) {
                        return Some(Found::Field(t));
                    }
                }
            }
            s = sc.parent;
        }
        self.class_named(name).map(Found::Type)
    }

    /// The innermost class around `scope`.
    fn enclosing_class(&self, scope: usize) -> Option<usize> {
        let mut s = Some(scope);
        while let Some(i) = s {
            if let Kind::Class(c) = self.scopes[i].kind {
                return Some(c);
            }
            s = self.scopes[i].parent;
        }
        None
    }

    /// The snippet class an expression evaluates to (an instance of, or the class itself).
    fn class_of(&self, e: Node, scope: usize, depth: usize) -> Option<usize> {
        if depth > 32 {
            return None;
        }
        let ty = |t: Option<String>| t.and_then(|t| self.class_named(&t));
        match e.kind() {
            "this" => self.enclosing_class(scope),
            "super" => {
                let c = self.enclosing_class(scope)?;
                self.classes[c]
                    .supers
                    .iter()
                    .find_map(|s| self.class_named(s))
            }
            "identifier" => match self.lookup(scope, self.t(e), e.start_byte())? {
                Found::Local(_, t) | Found::Field(t) => ty(t),
                Found::Type(c) => Some(c),
            },
            "field_access" => {
                let o = e.child_by_field_name("object")?;
                let f = e.child_by_field_name("field")?;
                if f.kind() == "this" {
                    return self.class_of(o, scope, depth + 1);
                }
                let c = self.class_of(o, scope, depth + 1)?;
                ty(self.field_in(c, self.t(f))?.1)
            }
            "method_invocation" => {
                let name = e.child_by_field_name("name")?;
                let c = match e.child_by_field_name("object") {
                    Some(o) => self.class_of(o, scope, depth + 1)?,
                    None => self.enclosing_class(scope)?,
                };
                ty(self.method_in(c, self.t(name))?.1)
            }
            "object_creation_expression" | "cast_expression" => ty(e
                .child_by_field_name("type")
                .and_then(|t| self.type_name(t))),
            "parenthesized_expression" => self.class_of(e.named_child(0)?, scope, depth + 1),
            "array_access" => self.class_of(e.child_by_field_name("array")?, scope, depth + 1),
            "type_identifier" | "generic_type" | "scoped_type_identifier" => ty(self.type_name(e)),
            _ => None,
        }
    }

    /// Method names that must keep their name (overriding outside code, contracts).
    fn fixed_methods(&self) -> HashSet<String> {
        let mut fixed: HashSet<String> = OBJECT_METHODS.iter().map(|s| s.to_string()).collect();
        for (ci, c) in self.classes.iter().enumerate() {
            let supers: Vec<usize> = self.lineage(ci).into_iter().skip(1).collect();
            let declared_above = |m: &str| {
                supers
                    .iter()
                    .any(|&s| self.classes[s].methods.contains_key(m))
            };
            for m in c.methods.keys() {
                let outside = (c.anonymous || c.overrides.contains(m)) && !declared_above(m);
                if outside {
                    fixed.insert(m.clone());
                }
            }
        }
        fixed
    }

    fn finish(self) -> Resolved {
        let fixed = self.fixed_methods();
        let enum_constants: HashSet<&str> = self
            .classes
            .iter()
            .flat_map(|c| c.constants.iter())
            .map(|n| n.as_str())
            .collect();
        let mut out = Resolved::default();
        let (r0, r1) = self.region;
        for id in &self.idents {
            let (s, e) = (id.node.start_byte(), id.node.end_byte());
            if s < r0 || e > r1 {
                continue;
            }
            let name = self.t(id.node);
            out.idents.insert(name.to_string());
            let member_field = |c: usize| -> Option<(Ns, Role)> {
                self.field_in(c, name)
                    .map(|_| (Ns::Member, Role::Attribute))
            };
            let member_method = |c: usize| -> Option<(Ns, Role)> {
                (!fixed.contains(name) && self.method_in(c, name).is_some())
                    .then_some((Ns::Member, Role::Method))
            };
            let hit: Option<(Ns, Role)> = match id.ctx {
                // `_`: Java 22's unnamed variable (and not a name before).
                _ if name == "_" => None,
                Ctx::Keep => None,
                Ctx::Name => match self.lookup(id.scope, name, s) {
                    Some(Found::Local(role, _)) => Some((Ns::Name, role)),
                    Some(Found::Field(_)) => Some((Ns::Member, Role::Attribute)),
                    Some(Found::Type(_)) => Some((Ns::Name, Role::Class)),
                    None => None,
                },
                Ctx::FieldDecl => Some((Ns::Member, Role::Attribute)),
                Ctx::MethodDecl => (!fixed.contains(name)).then_some((Ns::Member, Role::Method)),
                Ctx::Type => {
                    let mut sc = Some(id.scope);
                    let mut param = false;
                    while let Some(i) = sc {
                        if self.scopes[i].type_params.contains(name) {
                            param = true;
                            break;
                        }
                        sc = self.scopes[i].parent;
                    }
                    if param {
                        Some((Ns::Name, Role::Type))
                    } else {
                        self.class_named(name).map(|_| (Ns::Name, Role::Class))
                    }
                }
                Ctx::Field(o) => self.class_of(o, id.scope, 0).and_then(member_field),
                Ctx::Call(o) => match o {
                    Some(o) => self.class_of(o, id.scope, 0).and_then(member_method),
                    None => {
                        // Enclosing classes, innermost first.
                        let mut sc = Some(id.scope);
                        let mut hit = None;
                        while let Some(i) = sc {
                            if let Kind::Class(c) = self.scopes[i].kind {
                                if self.method_in(c, name).is_some() {
                                    hit = member_method(c);
                                    break;
                                }
                            }
                            sc = self.scopes[i].parent;
                        }
                        hit
                    }
                },
                Ctx::MethodRef(o) => self.class_of(o, id.scope, 0).and_then(member_method),
                Ctx::CaseLabel => match self.lookup(id.scope, name, s) {
                    Some(Found::Local(role, _)) => Some((Ns::Name, role)),
                    _ => enum_constants
                        .contains(name)
                        .then_some((Ns::Member, Role::Attribute)),
                },
                Ctx::Label => Some((Ns::Name, Role::Label)),
            };
            match hit {
                Some((ns, role)) => out.occs.push(Occ {
                    start: s - r0,
                    end: e - r0,
                    ns,
                    name: name.to_string(),
                    role,
                }),
                None => {
                    out.kept.insert(name.to_string());
                }
            }
        }
        out
    }
}
