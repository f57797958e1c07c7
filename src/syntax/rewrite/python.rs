//! Python name binding for `rename:*`: which identifier occurrences refer to a name the
//! snippet itself binds, and with what role.
//!
//! One walk over the tree-sitter tree builds the scopes (module, function/lambda, class,
//! comprehension, and an annotation scope for class type parameters) with their bindings
//! and records every identifier occurrence with its scope and context; then the
//! occurrences are resolved with Python's rules:
//! - a name is local to a function/comprehension scope when the scope binds it anywhere
//!   (parameters, assignment / `for` / `with` / `except` / `del` / match-capture targets,
//!   `def`, `class`, imports), unless the scope declares it `global` (then it lives in the
//!   module) or `nonlocal` (the nearest enclosing function that binds it);
//! - lookups climb to enclosing scopes but skip class bodies (a method does not see its
//!   class's names); a comprehension's first iterable is evaluated in the enclosing scope,
//!   a walrus target binds in the nearest non-comprehension scope; decorators, defaults,
//!   annotations and base classes are evaluated where the definition stands;
//! - names no scope of the snippet binds are builtins or come from outside: never renamed.
//!
//! Never renamed (kept as written): imported names and module paths; the receiver
//! parameter of a method (`self`, `cls`, whatever it is called) — a convention, not a
//! chosen name; `_`; dunder names (`__init__`, `__all__`: protocols); attributes of objects
//! whose class the snippet does not define; keyword names of calls to functions it does not
//! define. Attributes: the class body's names, the methods and the fields a method assigns
//! through its receiver (`self.x = ...`) are members of the class; an attribute `E.x` is
//! renamed when `E` is a receiver, a snippet class or `super()` inside a snippet class, and
//! `x` is a member of that class's inheritance component (snippet classes joined by
//! inheritance). Methods are renamed except dunders; fields and class-body names only when
//! every class of the component has snippet-only bases (a class deriving from an outside
//! class may be reading or overriding the base's attributes). A keyword argument is
//! renamed when the callee is a snippet function, method or class (its `__init__`, or a
//! `@dataclass`'s fields) and the keyword names one of its parameters.
//!
//! Left as written, documented limits: names inside strings (`getattr(o, "x")`,
//! `__all__`, `__slots__`, string annotations), `locals()` / `eval` access.

use std::collections::{HashMap, HashSet};

use tree_sitter::Node;

use super::{Ns, Occ, Resolved};
use crate::syntax::Role;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Module,
    Function,
    Class(usize),
    Comprehension,
}

#[derive(Debug, Clone)]
struct Bind {
    role: Role,
    /// Imports, receivers, `_`, dunders: bound here but never renamed.
    fixed: bool,
    /// Definitions behind the name: functions (their parameters) and classes.
    defs: Vec<Def>,
}

#[derive(Debug, Clone, Copy)]
enum Def {
    Function(usize),
    Class(usize),
}

struct Scope {
    kind: Kind,
    parent: Option<usize>,
    binds: HashMap<String, Bind>,
    globals: HashSet<String>,
    nonlocals: HashSet<String>,
    /// Methods: the receiver parameter's name and the class.
    receiver: Option<(String, usize)>,
}

#[derive(Default)]
struct Class {
    /// The synthetic wrapper around pasted methods (`class __W:`).
    wrapper: bool,
    /// Base-class expressions: `Some(name, scope)` for a plain name, `None` otherwise.
    bases: Vec<Option<(String, usize)>>,
    /// A keyword in the bases (`metaclass=`): the class is open.
    keyword_bases: bool,
    dataclass: bool,
    /// Method name -> function index.
    methods: HashMap<String, Vec<usize>>,
    /// Fields assigned through the receiver or the class name.
    fields: HashSet<String>,
    scope: usize,
}

#[derive(Debug, Clone, Copy)]
enum Ctx<'t> {
    /// A variable name (binding or use).
    Name,
    /// The attribute of `object.attr`.
    Attr(Node<'t>),
    /// A keyword argument of a call to `callee`.
    Kwarg(Node<'t>),
    /// `case C(key=...)`: the class pattern's name node.
    KeyPattern(Node<'t>),
    /// Never renamed (imports, bases' keywords, ...).
    Keep,
}

struct Ident<'t> {
    node: Node<'t>,
    scope: usize,
    ctx: Ctx<'t>,
}

struct Binder<'t> {
    src: &'t [u8],
    scopes: Vec<Scope>,
    classes: Vec<Class>,
    /// Function index -> parameter names (receiver excluded).
    functions: Vec<Vec<String>>,
    idents: Vec<Ident<'t>>,
    /// `obj.attr` assignment targets: (scope, object node, attribute name).
    field_targets: Vec<(usize, Node<'t>, String)>,
}

fn text<'a>(src: &'a [u8], n: Node) -> &'a str {
    std::str::from_utf8(&src[n.byte_range()]).unwrap_or("")
}

fn is_dunder(s: &str) -> bool {
    s.len() > 4 && s.starts_with("__") && s.ends_with("__")
}

/// Names never renamed wherever they are bound.
fn always_fixed(s: &str) -> bool {
    s == "_" || is_dunder(s)
}

const COMPREHENSIONS: [&str; 4] = [
    "list_comprehension",
    "set_comprehension",
    "dictionary_comprehension",
    "generator_expression",
];

/// Resolve the snippet's names in `root` (the module node). `region` is the byte range of
/// the snippet inside the parsed text (a wrapper around pasted methods lies outside it);
/// `wrapped_class` says the snippet's methods sit in a synthetic class.
pub(crate) fn resolve(root: Node, src: &[u8], region: (usize, usize)) -> Resolved {
    let mut b = Binder {
        src,
        scopes: vec![Scope {
            kind: Kind::Module,
            parent: None,
            binds: HashMap::new(),
            globals: HashSet::new(),
            nonlocals: HashSet::new(),
            receiver: None,
        }],
        classes: Vec::new(),
        functions: Vec::new(),
        idents: Vec::new(),
        field_targets: Vec::new(),
    };
    if pasted_methods(root, src) {
        // Methods pasted out of their class without the indentation that makes the
        // syntax layer wrap them: read them as the wrapper would (an outside class).
        let ci = b.classes.len();
        b.classes.push(Class {
            wrapper: true,
            ..Class::default()
        });
        let s = b.new_scope(Kind::Class(ci), 0);
        b.classes[ci].scope = s;
        b.block(root, s, region);
    } else {
        b.block(root, 0, region);
    }
    b.finish(region)
}

/// Top level made only of function definitions, one of which takes `self` or `cls` first.
fn pasted_methods(root: Node, src: &[u8]) -> bool {
    let mut c = root.walk();
    let mut any = false;
    for n in root.named_children(&mut c) {
        let f = match n.kind() {
            "comment" => continue,
            "function_definition" => n,
            "decorated_definition" => match n.child_by_field_name("definition") {
                Some(d) if d.kind() == "function_definition" => d,
                _ => return false,
            },
            _ => return false,
        };
        let first = f
            .child_by_field_name("parameters")
            .and_then(|p| p.named_child(0))
            .map(|p| text(src, p));
        any |= matches!(first, Some("self" | "cls"));
    }
    any
}

impl<'t> Binder<'t> {
    fn t(&self, n: Node) -> &'t str {
        text(self.src, n)
    }

    fn new_scope(&mut self, kind: Kind, parent: usize) -> usize {
        self.scopes.push(Scope {
            kind,
            parent: Some(parent),
            binds: HashMap::new(),
            globals: HashSet::new(),
            nonlocals: HashSet::new(),
            receiver: None,
        });
        self.scopes.len() - 1
    }

    fn ident(&mut self, node: Node<'t>, scope: usize, ctx: Ctx<'t>) {
        self.idents.push(Ident { node, scope, ctx });
    }

    /// Bind `name` in `scope` (honouring `global` / `nonlocal`).
    fn bind(&mut self, name: &str, scope: usize, role: Role, fixed: bool, def: Option<Def>) {
        let target = if self.scopes[scope].globals.contains(name) {
            0
        } else if self.scopes[scope].nonlocals.contains(name) {
            return;
        } else {
            scope
        };
        let fixed = fixed || always_fixed(name);
        let e = self.scopes[target]
            .binds
            .entry(name.to_string())
            .or_insert(Bind {
                role,
                fixed,
                defs: Vec::new(),
            });
        e.fixed |= fixed;
        if let Some(d) = def {
            e.defs.push(d);
        }
    }

    /// Bind the identifier `n` and record it as a name occurrence.
    fn bind_ident(&mut self, n: Node<'t>, scope: usize, role: Role) {
        let name = self.t(n);
        self.bind(name, scope, role, false, None);
        self.ident(n, scope, Ctx::Name);
    }

    /// The nearest scope that is not a comprehension (walrus targets bind there).
    fn non_comprehension(&self, mut s: usize) -> usize {
        while self.scopes[s].kind == Kind::Comprehension {
            s = self.scopes[s].parent.unwrap_or(0);
        }
        s
    }

    /// Visit the children of `n` in `scope`.
    fn block(&mut self, n: Node<'t>, scope: usize, region: (usize, usize)) {
        let mut c = n.walk();
        let kids: Vec<Node<'t>> = n.children(&mut c).collect();
        for k in kids {
            self.visit(k, scope, region);
        }
    }

    fn visit(&mut self, n: Node<'t>, scope: usize, region: (usize, usize)) {
        match n.kind() {
            "identifier" => self.ident(n, scope, Ctx::Name),
            "comment" => {}
            "function_definition" => self.function(n, scope, region, &[]),
            "decorated_definition" => {
                let mut decorators = Vec::new();
                let mut c = n.walk();
                for k in n.children(&mut c).collect::<Vec<_>>() {
                    if k.kind() == "decorator" {
                        decorators.push(k);
                        self.block(k, scope, region);
                    }
                }
                if let Some(d) = n.child_by_field_name("definition") {
                    match d.kind() {
                        "function_definition" => self.function(d, scope, region, &decorators),
                        "class_definition" => self.class(d, scope, region, &decorators),
                        _ => self.visit(d, scope, region),
                    }
                }
            }
            "class_definition" => self.class(n, scope, region, &[]),
            "lambda" => {
                let s = self.new_scope(Kind::Function, scope);
                if let Some(p) = n.child_by_field_name("parameters") {
                    self.parameters(p, scope, s, region, None, None);
                }
                if let Some(body) = n.child_by_field_name("body") {
                    self.visit(body, s, region);
                }
            }
            k if COMPREHENSIONS.contains(&k) => {
                let s = self.new_scope(Kind::Comprehension, scope);
                let mut first = true;
                let mut c = n.walk();
                for k in n.children(&mut c).collect::<Vec<_>>() {
                    if k.kind() == "for_in_clause" {
                        if let Some(l) = k.child_by_field_name("left") {
                            self.target(l, s, Role::Variable, region);
                        }
                        let mut cc = k.walk();
                        for r in k
                            .children_by_field_name("right", &mut cc)
                            .collect::<Vec<_>>()
                        {
                            self.visit(r, if first { scope } else { s }, region);
                        }
                        first = false;
                    } else {
                        self.visit(k, s, region);
                    }
                }
            }
            "assignment" | "augmented_assignment" => {
                if let Some(l) = n.child_by_field_name("left") {
                    self.target(l, scope, Role::Variable, region);
                }
                for f in ["type", "right"] {
                    if let Some(x) = n.child_by_field_name(f) {
                        self.visit(x, scope, region);
                    }
                }
            }
            "for_statement" => {
                let mut c = n.walk();
                for k in n.children(&mut c).collect::<Vec<_>>() {
                    if n.child_by_field_name("left") == Some(k) {
                        self.target(k, scope, Role::Variable, region);
                    } else {
                        self.visit(k, scope, region);
                    }
                }
            }
            "as_pattern_target" => {
                let mut c = n.walk();
                for k in n.children(&mut c).collect::<Vec<_>>() {
                    self.target(k, scope, Role::Variable, region);
                }
            }
            "named_expression" => {
                if let Some(name) = n.child_by_field_name("name") {
                    let s = self.non_comprehension(scope);
                    let t = self.t(name);
                    self.bind(t, s, Role::Variable, false, None);
                    self.ident(name, scope, Ctx::Name);
                }
                if let Some(v) = n.child_by_field_name("value") {
                    self.visit(v, scope, region);
                }
            }
            "delete_statement" => {
                let mut c = n.walk();
                for k in n.children(&mut c).collect::<Vec<_>>() {
                    self.target(k, scope, Role::Variable, region);
                }
            }
            "global_statement" | "nonlocal_statement" => {
                let global = n.kind() == "global_statement";
                let mut c = n.walk();
                for k in n.children(&mut c).collect::<Vec<_>>() {
                    if k.kind() == "identifier" {
                        let name = self.t(k).to_string();
                        let sc = &mut self.scopes[scope];
                        if global {
                            sc.globals.insert(name);
                        } else {
                            sc.nonlocals.insert(name);
                        }
                        self.ident(k, scope, Ctx::Name);
                    }
                }
            }
            "import_statement" | "import_from_statement" | "future_import_statement" => {
                self.import(n, scope)
            }
            "attribute" => {
                if let Some(o) = n.child_by_field_name("object") {
                    self.visit(o, scope, region);
                    if let Some(a) = n.child_by_field_name("attribute") {
                        self.ident(a, scope, Ctx::Attr(o));
                    }
                }
            }
            "keyword_argument" => {
                // The callee: argument_list -> call; keywords of a class's bases
                // (`metaclass=`) and of unknown shapes are kept.
                let callee = n
                    .parent()
                    .filter(|p| p.kind() == "argument_list")
                    .and_then(|p| p.parent())
                    .filter(|c| c.kind() == "call")
                    .and_then(|c| c.child_by_field_name("function"));
                if let Some(name) = n.child_by_field_name("name") {
                    match callee {
                        Some(f) => self.ident(name, scope, Ctx::Kwarg(f)),
                        None => self.ident(name, scope, Ctx::Keep),
                    }
                }
                if let Some(v) = n.child_by_field_name("value") {
                    self.visit(v, scope, region);
                }
            }
            "case_clause" => {
                let mut c = n.walk();
                for k in n.children(&mut c).collect::<Vec<_>>() {
                    if k.kind() == "case_pattern" {
                        self.pattern(k, scope, region);
                    } else {
                        self.visit(k, scope, region);
                    }
                }
            }
            "type_alias_statement" => {
                // `type X[T] = ...`: X (and its parameters) bound where it stands.
                if let Some(l) = n.child_by_field_name("left") {
                    self.type_params_and_name(l, scope);
                }
                if let Some(r) = n.child_by_field_name("right") {
                    self.visit(r, scope, region);
                }
            }
            _ => self.block(n, scope, region),
        }
    }

    /// `type X[T]` left side: bind X and T as types.
    fn type_params_and_name(&mut self, n: Node<'t>, scope: usize) {
        let mut stack = vec![n];
        while let Some(x) = stack.pop() {
            if x.kind() == "identifier" {
                self.bind_ident(x, scope, Role::Type);
                continue;
            }
            let mut c = x.walk();
            stack.extend(x.children(&mut c));
        }
    }

    /// Bind the names of an assignment-like target; attributes and subscripts are uses
    /// (attribute targets through a receiver declare fields).
    fn target(&mut self, n: Node<'t>, scope: usize, role: Role, region: (usize, usize)) {
        match n.kind() {
            "identifier" => self.bind_ident(n, scope, role),
            "pattern_list"
            | "tuple_pattern"
            | "list_pattern"
            | "tuple"
            | "list"
            | "parenthesized_expression"
            | "expression_list"
            | "list_splat_pattern"
            | "list_splat"
            | "as_pattern_target" => {
                let mut c = n.walk();
                for k in n.children(&mut c).collect::<Vec<_>>() {
                    self.target(k, scope, role, region);
                }
            }
            "attribute" => {
                if let (Some(o), Some(a)) = (
                    n.child_by_field_name("object"),
                    n.child_by_field_name("attribute"),
                ) {
                    if o.kind() == "identifier" {
                        let name = self.t(a).to_string();
                        self.field_targets.push((scope, o, name));
                    }
                }
                self.visit(n, scope, region);
            }
            _ => self.visit(n, scope, region),
        }
    }

    fn import(&mut self, n: Node<'t>, scope: usize) {
        // Every identifier inside is kept; the names the statement binds are fixed
        // bindings (they shadow outer names but are never renamed).
        let mut stack = vec![n];
        while let Some(x) = stack.pop() {
            if x.kind() == "identifier" {
                self.ident(x, scope, Ctx::Keep);
            }
            let mut c = x.walk();
            stack.extend(x.children(&mut c));
        }
        let mut c = n.walk();
        let from = n.kind() == "import_from_statement";
        for k in n.children_by_field_name("name", &mut c).collect::<Vec<_>>() {
            let bound = match k.kind() {
                "aliased_import" => k.child_by_field_name("alias"),
                // `import a.b` binds `a`; `from m import a` binds `a`.
                "dotted_name" if from => k.child(k.child_count().saturating_sub(1)),
                "dotted_name" => k.child(0),
                _ => None,
            };
            if let Some(b) = bound {
                let t = self.t(b);
                self.bind(t, scope, Role::Import, true, None);
            }
        }
    }

    fn function(&mut self, n: Node<'t>, scope: usize, region: (usize, usize), decorators: &[Node]) {
        let in_class = match self.scopes[scope].kind {
            Kind::Class(c) => Some(c),
            _ => None,
        };
        let f = self.functions.len();
        self.functions.push(Vec::new());
        if let Some(name) = n.child_by_field_name("name") {
            let t = self.t(name);
            let role = if in_class.is_some() {
                Role::Method
            } else {
                Role::Function
            };
            self.bind(t, scope, role, false, Some(Def::Function(f)));
            if let Some(c) = in_class {
                self.classes[c]
                    .methods
                    .entry(t.to_string())
                    .or_default()
                    .push(f);
            }
            self.ident(name, scope, Ctx::Name);
        }
        let s = self.new_scope(Kind::Function, scope);
        if let Some(tp) = n.child_by_field_name("type_parameters") {
            self.type_params_and_name(tp, s);
        }
        let static_method = decorators.iter().any(|d| {
            let t = self.t(*d);
            t.contains("staticmethod")
        });
        let receiver = in_class.filter(|_| !static_method);
        if let Some(p) = n.child_by_field_name("parameters") {
            self.parameters(p, scope, s, region, receiver, Some(f));
        }
        if let Some(r) = n.child_by_field_name("return_type") {
            self.visit(r, scope, region);
        }
        if let Some(body) = n.child_by_field_name("body") {
            self.visit(body, s, region);
        }
    }

    /// Bind parameters in `inner`; defaults and annotations are evaluated in `outer`.
    /// With `receiver`, the first plain parameter is the method's receiver (fixed).
    fn parameters(
        &mut self,
        p: Node<'t>,
        outer: usize,
        inner: usize,
        region: (usize, usize),
        receiver: Option<usize>,
        function: Option<usize>,
    ) {
        let mut first = true;
        let mut c = p.walk();
        for k in p.named_children(&mut c).collect::<Vec<_>>() {
            let name = match k.kind() {
                "identifier" => Some(k),
                "typed_parameter" => {
                    let mut cc = k.walk();
                    let id = k.named_children(&mut cc).find(|x| {
                        matches!(
                            x.kind(),
                            "identifier" | "list_splat_pattern" | "dictionary_splat_pattern"
                        )
                    });
                    id.map(|x| {
                        if x.kind() == "identifier" {
                            x
                        } else {
                            x.named_child(0).unwrap_or(x)
                        }
                    })
                }
                "default_parameter" | "typed_default_parameter" => k.child_by_field_name("name"),
                "list_splat_pattern" | "dictionary_splat_pattern" => k.named_child(0),
                _ => None,
            };
            // Defaults and annotations: the enclosing scope.
            for field in ["type", "value"] {
                if let Some(x) = k.child_by_field_name(field) {
                    self.visit(x, outer, region);
                }
            }
            let Some(name) = name.filter(|x| x.kind() == "identifier") else {
                continue;
            };
            let t = self.t(name);
            if first && receiver.is_some() && k.kind() != "list_splat_pattern" {
                let c = receiver.unwrap_or(0);
                self.scopes[inner].receiver = Some((t.to_string(), c));
                self.bind(t, inner, Role::Parameter, true, None);
                self.ident(name, inner, Ctx::Name);
            } else {
                self.bind_ident(name, inner, Role::Parameter);
                if let Some(ps) = function.and_then(|f| self.functions.get_mut(f)) {
                    ps.push(t.to_string());
                }
            }
            first = false;
        }
    }

    fn class(&mut self, n: Node<'t>, scope: usize, region: (usize, usize), decorators: &[Node]) {
        let ci = self.classes.len();
        let wrapper = n.start_byte() < region.0;
        if let Some(name) = n.child_by_field_name("name") {
            let t = self.t(name);
            self.bind(t, scope, Role::Class, wrapper, Some(Def::Class(ci)));
            self.ident(name, scope, Ctx::Name);
        }
        let dataclass = decorators.iter().any(|d| self.t(*d).contains("dataclass"));
        self.classes.push(Class {
            wrapper,
            dataclass,
            ..Class::default()
        });
        let mut bases = Vec::new();
        let mut keyword_bases = false;
        if let Some(sup) = n.child_by_field_name("superclasses") {
            let mut c = sup.walk();
            for k in sup.named_children(&mut c).collect::<Vec<_>>() {
                match k.kind() {
                    "identifier" => bases.push(Some((self.t(k).to_string(), scope))),
                    "keyword_argument" => keyword_bases = true,
                    "comment" => {}
                    _ => bases.push(None),
                }
            }
            self.visit(sup, scope, region);
        }
        // Class type parameters live in an annotation scope between the class and its
        // surroundings.
        let outer = if let Some(tp) = n.child_by_field_name("type_parameters") {
            let a = self.new_scope(Kind::Function, scope);
            self.type_params_and_name(tp, a);
            a
        } else {
            scope
        };
        let s = self.new_scope(Kind::Class(ci), outer);
        let c = &mut self.classes[ci];
        c.bases = bases;
        c.keyword_bases = keyword_bases;
        c.scope = s;
        if let Some(body) = n.child_by_field_name("body") {
            self.visit(body, s, region);
        }
    }

    /// A match-statement pattern: bare names capture (bind), dotted names are values.
    fn pattern(&mut self, n: Node<'t>, scope: usize, region: (usize, usize)) {
        match n.kind() {
            "dotted_name" => {
                let mut c = n.walk();
                let ids: Vec<Node<'t>> = n
                    .named_children(&mut c)
                    .filter(|x| x.kind() == "identifier")
                    .collect();
                if ids.len() == 1 {
                    self.bind_ident(ids[0], scope, Role::Variable);
                } else {
                    self.value_path(&ids, scope);
                }
            }
            "class_pattern" => {
                let mut c = n.walk();
                let kids: Vec<Node<'t>> = n.named_children(&mut c).collect();
                let class = kids.first().copied().filter(|k| k.kind() == "dotted_name");
                if let Some(cls) = class {
                    let mut cc = cls.walk();
                    let ids: Vec<Node<'t>> = cls
                        .named_children(&mut cc)
                        .filter(|x| x.kind() == "identifier")
                        .collect();
                    self.value_path(&ids, scope);
                }
                for k in kids.into_iter().skip(usize::from(class.is_some())) {
                    self.pattern_in_class(k, class, scope, region);
                }
            }
            "splat_pattern" => {
                let mut c = n.walk();
                for k in n.named_children(&mut c).collect::<Vec<_>>() {
                    if k.kind() == "identifier" {
                        self.bind_ident(k, scope, Role::Variable);
                    }
                }
            }
            "as_pattern" => {
                let mut c = n.walk();
                for k in n.named_children(&mut c).collect::<Vec<_>>() {
                    if k.kind() == "identifier" {
                        self.bind_ident(k, scope, Role::Variable);
                    } else {
                        self.pattern(k, scope, region);
                    }
                }
            }
            "identifier" => self.bind_ident(n, scope, Role::Variable),
            "string" | "concatenated_string" => self.visit(n, scope, region),
            _ => {
                let mut c = n.walk();
                for k in n.children(&mut c).collect::<Vec<_>>() {
                    if n.kind() == "dict_pattern" && n.child_by_field_name("key") == Some(k) {
                        self.visit(k, scope, region);
                    } else {
                        self.pattern(k, scope, region);
                    }
                }
            }
        }
    }

    fn pattern_in_class(
        &mut self,
        k: Node<'t>,
        class: Option<Node<'t>>,
        scope: usize,
        region: (usize, usize),
    ) {
        let inner = if k.kind() == "case_pattern" {
            k.named_child(0).filter(|x| x.kind() == "keyword_pattern")
        } else {
            Some(k).filter(|x| x.kind() == "keyword_pattern")
        };
        let Some(kw) = inner else {
            return self.pattern(k, scope, region);
        };
        let mut c = kw.walk();
        let kids: Vec<Node<'t>> = kw.named_children(&mut c).collect();
        if let Some(key) = kids.first().filter(|x| x.kind() == "identifier") {
            match class {
                Some(cls) => self.ident(*key, scope, Ctx::KeyPattern(cls)),
                None => self.ident(*key, scope, Ctx::Keep),
            }
        }
        for v in kids.into_iter().skip(1) {
            self.pattern(v, scope, region);
        }
    }

    /// `a.b.c` in a pattern: `a` a name, the rest attributes of what precedes them.
    fn value_path(&mut self, ids: &[Node<'t>], scope: usize) {
        for (i, id) in ids.iter().enumerate() {
            if i == 0 {
                self.ident(*id, scope, Ctx::Name);
            } else {
                self.ident(*id, scope, Ctx::Attr(ids[i - 1]));
            }
        }
    }

    // -----------------------------------------------------------------------------------
    // Resolution
    // -----------------------------------------------------------------------------------

    /// The scope whose binding `name` refers to from `scope`, if the snippet binds it.
    fn lookup(&self, scope: usize, name: &str) -> Option<usize> {
        let mut s = scope;
        let mut first = true;
        loop {
            let sc = &self.scopes[s];
            let skip = !first && matches!(sc.kind, Kind::Class(_));
            if !skip {
                if sc.globals.contains(name) {
                    return self.scopes[0].binds.contains_key(name).then_some(0);
                }
                if !sc.nonlocals.contains(name) && sc.binds.contains_key(name) {
                    return Some(s);
                }
            }
            first = false;
            s = sc.parent?;
        }
    }

    fn binding(&self, scope: usize, name: &str) -> Option<(usize, &Bind)> {
        let s = self.lookup(scope, name)?;
        self.scopes[s].binds.get(name).map(|b| (s, b))
    }

    /// The snippet class an expression evaluates to an instance (or the class) of.
    fn class_of(&self, obj: Node, scope: usize) -> Option<usize> {
        match obj.kind() {
            "identifier" => {
                let name = self.t(obj);
                let (s, b) = self.binding(scope, name)?;
                if let Some((r, c)) = &self.scopes[s].receiver {
                    if r == name {
                        return Some(*c);
                    }
                }
                b.defs.iter().find_map(|d| match d {
                    Def::Class(c) => Some(*c),
                    Def::Function(_) => None,
                })
            }
            "call" => {
                // `super()` inside a method: the class's component.
                let f = obj.child_by_field_name("function")?;
                if f.kind() == "identifier"
                    && self.t(f) == "super"
                    && self.lookup(scope, "super").is_none()
                {
                    let mut s = scope;
                    loop {
                        if let Some((_, c)) = self.scopes[s].receiver {
                            return Some(c);
                        }
                        s = self.scopes[s].parent?;
                    }
                }
                None
            }
            _ => None,
        }
    }
}

/// Per-class facts after the walk: inheritance components and whether each is closed.
struct Members {
    /// Class -> component id.
    comp: Vec<usize>,
    /// Component -> every class has snippet-only bases (and none is the wrapper).
    closed: Vec<bool>,
    /// Component -> member name -> (declared as a method somewhere, role).
    names: Vec<HashMap<String, (bool, Role)>>,
}

impl<'t> Binder<'t> {
    fn members(&mut self) -> Members {
        let n = self.classes.len();
        // Snippet bases.
        let mut parent: Vec<usize> = (0..n).collect();
        fn find(p: &mut [usize], x: usize) -> usize {
            let mut r = x;
            while p[r] != r {
                r = p[r];
            }
            let mut y = x;
            while p[y] != r {
                let nx = p[y];
                p[y] = r;
                y = nx;
            }
            r
        }
        let mut open: Vec<bool> = self
            .classes
            .iter()
            .map(|c| c.wrapper || c.keyword_bases)
            .collect();
        for (c, is_open) in open.iter_mut().enumerate() {
            let bases = self.classes[c].bases.clone();
            for b in bases {
                match b {
                    Some((name, s)) => {
                        let base = self.binding(s, &name).and_then(|(_, b)| {
                            b.defs.iter().find_map(|d| match d {
                                Def::Class(x) => Some(*x),
                                Def::Function(_) => None,
                            })
                        });
                        match base {
                            Some(x) => {
                                let (ra, rb) = (find(&mut parent, c), find(&mut parent, x));
                                parent[ra] = rb;
                            }
                            None if name == "object" && self.lookup(s, "object").is_none() => {}
                            None => *is_open = true,
                        }
                    }
                    None => *is_open = true,
                }
            }
        }
        // Fields assigned through receivers or class names.
        let targets = std::mem::take(&mut self.field_targets);
        for (s, obj, name) in &targets {
            if let Some(c) = self.class_of(*obj, *s) {
                self.classes[c].fields.insert(name.clone());
            }
        }
        let mut comp = vec![0; n];
        let mut ids: HashMap<usize, usize> = HashMap::new();
        for (c, slot) in comp.iter_mut().enumerate() {
            let r = find(&mut parent, c);
            let next = ids.len();
            *slot = *ids.entry(r).or_insert(next);
        }
        let k = ids.len();
        let mut closed = vec![true; k];
        let mut names: Vec<HashMap<String, (bool, Role)>> = vec![HashMap::new(); k];
        for c in 0..n {
            if open[c] {
                closed[comp[c]] = false;
            }
            let cls = &self.classes[c];
            let m = &mut names[comp[c]];
            for name in cls.methods.keys() {
                m.entry(name.clone()).or_insert((true, Role::Method)).0 = true;
            }
            for (name, b) in &self.scopes[cls.scope].binds {
                if !cls.methods.contains_key(name) {
                    let role = if b.role == Role::Class {
                        Role::Class
                    } else {
                        Role::Attribute
                    };
                    m.entry(name.clone()).or_insert((false, role));
                }
            }
            for name in &cls.fields {
                m.entry(name.clone()).or_insert((false, Role::Attribute));
            }
        }
        Members {
            comp,
            closed,
            names,
        }
    }
}

impl Members {
    /// The role under which member `name` of class `c` is renamed, if it is.
    fn renamable(&self, c: usize, name: &str) -> Option<Role> {
        let k = self.comp[c];
        let (method, role) = *self.names[k].get(name)?;
        if always_fixed(name) {
            return None;
        }
        (method || self.closed[k]).then_some(if method { Role::Method } else { role })
    }
}

impl<'t> Binder<'t> {
    fn finish(mut self, region: (usize, usize)) -> Resolved {
        let members = self.members();
        let mut out = Resolved::default();
        let idents = std::mem::take(&mut self.idents);
        for id in &idents {
            let (s, e) = (id.node.start_byte(), id.node.end_byte());
            if s < region.0 || e > region.1 {
                continue;
            }
            let name = self.t(id.node);
            out.idents.insert(name.to_string());
            let hit: Option<(Ns, Role)> = match id.ctx {
                Ctx::Keep => None,
                Ctx::Name => self.binding(id.scope, name).and_then(|(sc, b)| {
                    if b.fixed {
                        return None;
                    }
                    match self.scopes[sc].kind {
                        Kind::Class(c) => members.renamable(c, name).map(|r| (Ns::Member, r)),
                        _ => Some((Ns::Name, b.role)),
                    }
                }),
                Ctx::Attr(obj) => self
                    .class_of(obj, id.scope)
                    .and_then(|c| members.renamable(c, name))
                    .map(|r| (Ns::Member, r)),
                Ctx::KeyPattern(cls) => {
                    let mut c = cls.walk();
                    let last = cls
                        .named_children(&mut c)
                        .filter(|x| x.kind() == "identifier")
                        .last();
                    last.and_then(|l| {
                        let class = if cls.named_child_count() == 1 {
                            self.class_of(l, id.scope)
                        } else {
                            None
                        };
                        class.and_then(|c| members.renamable(c, name))
                    })
                    .map(|r| (Ns::Member, r))
                }
                Ctx::Kwarg(callee) => self.kwarg(callee, id.scope, name, &members),
            };
            match hit {
                Some((ns, role)) => out.occs.push(Occ {
                    start: s - region.0,
                    end: e - region.0,
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

    /// A keyword argument `name=` of a call to `callee`: renamed with the parameter it
    /// names when the callee is the snippet's.
    fn kwarg(&self, callee: Node, scope: usize, name: &str, m: &Members) -> Option<(Ns, Role)> {
        let param = |fs: &[usize]| {
            fs.iter()
                .any(|&f| self.functions[f].iter().any(|p| p == name))
        };
        let class_kw = |c: usize| -> Option<(Ns, Role)> {
            // `__init__` of the class or of a snippet base in its component.
            let comp = m.comp[c];
            let inits: Vec<usize> = (0..self.classes.len())
                .filter(|&x| m.comp[x] == comp)
                .filter_map(|x| self.classes[x].methods.get("__init__"))
                .flatten()
                .copied()
                .collect();
            if !inits.is_empty() {
                return param(&inits).then_some((Ns::Name, Role::Parameter));
            }
            if self.classes[c].dataclass {
                return m.renamable(c, name).map(|r| (Ns::Member, r));
            }
            None
        };
        match callee.kind() {
            "identifier" => {
                let (sc, b) = self.binding(scope, self.t(callee))?;
                if b.fixed {
                    return None;
                }
                let fs: Vec<usize> = b
                    .defs
                    .iter()
                    .filter_map(|d| match d {
                        Def::Function(f) => Some(*f),
                        Def::Class(_) => None,
                    })
                    .collect();
                if let Some(c) = b.defs.iter().find_map(|d| match d {
                    Def::Class(c) => Some(*c),
                    Def::Function(_) => None,
                }) {
                    return class_kw(c);
                }
                // A method called by its bare name inside the class body.
                if let Kind::Class(c) = self.scopes[sc].kind {
                    m.renamable(c, self.t(callee))?;
                }
                param(&fs).then_some((Ns::Name, Role::Parameter))
            }
            "attribute" => {
                let obj = callee.child_by_field_name("object")?;
                let attr = callee.child_by_field_name("attribute")?;
                // The method's parameters are the snippet's even when its name is kept
                // (`super().__init__(key=...)`).
                let c = self.class_of(obj, scope)?;
                let meth = self.t(attr);
                let comp = m.comp[c];
                let fs: Vec<usize> = (0..self.classes.len())
                    .filter(|&x| m.comp[x] == comp)
                    .filter_map(|x| self.classes[x].methods.get(meth))
                    .flatten()
                    .copied()
                    .collect();
                param(&fs).then_some((Ns::Name, Role::Parameter))
            }
            _ => None,
        }
    }
}
