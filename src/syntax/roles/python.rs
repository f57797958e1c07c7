//! Roles of Python identifiers (see [`Role`] and [`IdentRole`]): definition vs use and
//! what the name names, from the identifier's place in the tree-sitter-python tree.

use super::super::arena::{Arena, NONE};
use super::super::token::{IdentRole, Role};
use super::RoleContext;

/// Kinds that only regroup assignment targets (`a, b = ...`, `[a, *b] = ...`).
pub(crate) const PY_TARGET_CONTAINERS: [&str; 9] = [
    "pattern_list",
    "tuple_pattern",
    "list_pattern",
    "list_splat_pattern",
    "tuple",
    "list",
    "expression_list",
    "parenthesized_expression",
    "list_splat",
];

/// The per-node facts role inference needs from above a node, computed in one pass
/// from the root down (a parent before its children: the arena is in preorder), so that
/// no identifier climbs the tree (a chain `a.b.b.b...` would make that quadratic).
pub(crate) struct Context {
    /// The node is (part of) a decorator's head: `@a.b(...)`, not the arguments.
    dec_head: Vec<bool>,
    /// What a climb from the node towards the statement finds about types.
    types: Vec<TypeClimb>,
    /// If the node sits in a binding target, the binding statement node
    /// (`assignment`, `augmented_assignment`, `for_statement`, `for_in_clause`).
    target: Vec<u32>,
    /// First identifier leaf of each type alias's left side, found once per alias.
    alias_first: std::cell::RefCell<std::collections::HashMap<u32, Option<u32>>>,
}

/// The first decisive ancestor of a node, looking up from it, for type roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TypeClimb {
    /// A statement boundary, with or without a `type` node on the way.
    Stop { in_type: bool },
    /// A type parameter of a def or class: a type definition.
    Def,
    /// The left side (a `type` node) of a `type X = ...` alias.
    Alias(u32),
}

/// The role context of a tree ([`LanguageRules::roles`](crate::syntax::lang::LanguageRules::roles)).
pub(crate) fn context(a: &Arena) -> Box<dyn RoleContext> {
    Box::new(Context::new(a))
}

impl RoleContext for Context {
    fn role(&self, a: &Arena, n: u32) -> IdentRole {
        role(a, self, n)
    }
}

impl Context {
    pub fn new(a: &Arena) -> Self {
        let n = a.nodes.len();
        let mut dec_head = vec![false; n];
        let mut types = vec![TypeClimb::Stop { in_type: false }; n];
        let mut target = vec![NONE; n];
        for x in 1..n {
            let xi = x as u32;
            let Some(p) = a.parent(xi) else { continue };
            let (pk, pi) = (a.kind(p), p as usize);
            dec_head[x] = match pk {
                "decorator" => true,
                "attribute" => dec_head[pi],
                "call" if a.field(xi) == Some("function") => dec_head[pi],
                _ => false,
            };
            types[x] = match pk {
                "type"
                    if a.field(p) == Some("left") && a.parent_kind(p) == "type_alias_statement" =>
                {
                    TypeClimb::Alias(p)
                }
                "type" => match types[pi] {
                    TypeClimb::Stop { .. } => TypeClimb::Stop { in_type: true },
                    other => other,
                },
                "type_parameter"
                    if a.field(p) == Some("type_parameters")
                        && matches!(
                            a.parent_kind(p),
                            "function_definition" | "class_definition"
                        ) =>
                {
                    TypeClimb::Def
                }
                "block"
                | "module"
                | "expression_statement"
                | "function_definition"
                | "class_definition" => TypeClimb::Stop { in_type: false },
                _ => types[pi],
            };
            target[x] = if PY_TARGET_CONTAINERS.contains(&pk) {
                target[pi]
            } else if matches!(
                pk,
                "assignment" | "augmented_assignment" | "for_statement" | "for_in_clause"
            ) && a.field(xi) == Some("left")
            {
                p
            } else {
                NONE
            };
        }
        Context {
            dec_head,
            types,
            target,
            alias_first: Default::default(),
        }
    }

    /// If `n` sits in a binding target, the binding statement node.
    pub fn target_stmt(&self, n: u32) -> Option<u32> {
        let t = self.target[n as usize];
        (t != NONE).then_some(t)
    }

    /// Python type context: `Some(true)` for a type definition (type parameter of a
    /// def/class, the name of a `type X = ...` alias), `Some(false)` for a type use.
    fn type_role(&self, a: &Arena, n: u32) -> Option<bool> {
        match self.types[n as usize] {
            TypeClimb::Stop { in_type } => in_type.then_some(false),
            TypeClimb::Def => Some(true),
            TypeClimb::Alias(p) => {
                // The alias name is the first identifier of the left side.
                let first = *self
                    .alias_first
                    .borrow_mut()
                    .entry(p)
                    .or_insert_with(|| first_leaf_ident(a, p));
                Some(first == Some(n))
            }
        }
    }
}

/// Is this Python `function_definition` directly in a class body?
pub(crate) fn python_is_method(a: &Arena, func: u32) -> bool {
    let mut p = a.parent(func);
    if p.is_some_and(|p| a.kind(p) == "decorated_definition") {
        p = p.and_then(|p| a.parent(p));
    }
    p.filter(|&p| a.kind(p) == "block")
        .and_then(|b| a.parent(b))
        .is_some_and(|c| a.kind(c) == "class_definition")
}

/// Is this Python statement-level node directly in a class body?
fn python_in_class_body(a: &Arena, stmt: u32) -> bool {
    let mut p = a.parent(stmt);
    if p.is_some_and(|p| a.kind(p) == "expression_statement") {
        p = p.and_then(|p| a.parent(p));
    }
    p.filter(|&p| a.kind(p) == "block")
        .and_then(|b| a.parent(b))
        .is_some_and(|c| a.kind(c) == "class_definition")
}

fn python_import_role(a: &Arena, n: u32) -> Option<IdentRole> {
    let p = a.parent(n)?;
    let pk = a.kind(p);
    if pk == "aliased_import" && a.field(n) == Some("alias") {
        return Some(match a.parent_kind(p) {
            "import_statement" => IdentRole::def(Role::Module),
            _ => IdentRole::def(Role::Import),
        });
    }
    if pk != "dotted_name" {
        return None;
    }
    let dp = a.parent(p)?;
    let first = a.children(p).first() == Some(&n);
    Some(match (a.kind(dp), a.field(p)) {
        ("import_statement", _) if first => IdentRole::def(Role::Module),
        ("import_statement", _) => IdentRole::use_(Role::Module),
        ("aliased_import", _) => match a.parent_kind(dp) {
            "import_statement" => IdentRole::use_(Role::Module),
            _ => IdentRole::use_(Role::Import),
        },
        ("import_from_statement", Some("module_name")) => IdentRole::use_(Role::Module),
        ("import_from_statement", _) => IdentRole::def(Role::Import),
        ("relative_import", _) => IdentRole::use_(Role::Module),
        ("future_import_statement", _) => IdentRole::use_(Role::Import),
        _ => return None,
    })
}

fn first_leaf_ident(a: &Arena, mut n: u32) -> Option<u32> {
    while !a.is_leaf(n) {
        n = *a.children(n).first()?;
    }
    (a.kind(n) == "identifier").then_some(n)
}

/// Role of a Python identifier leaf `n`.
pub(crate) fn role(a: &Arena, cx: &Context, n: u32) -> IdentRole {
    if let Some(r) = python_import_role(a, n) {
        return r;
    }
    if cx.dec_head[n as usize] {
        return IdentRole::use_(Role::Decorator);
    }
    if let Some(def) = cx.type_role(a, n) {
        return if def {
            IdentRole::def(Role::Type)
        } else {
            IdentRole::use_(Role::Type)
        };
    }
    let Some(p) = a.parent(n) else {
        return IdentRole::use_(Role::Variable);
    };
    let f = a.field(n);
    match (a.kind(p), f) {
        ("function_definition", Some("name")) => {
            if python_is_method(a, p) {
                IdentRole::def(Role::Method)
            } else {
                IdentRole::def(Role::Function)
            }
        }
        ("class_definition", Some("name")) => IdentRole::def(Role::Class),
        ("keyword_argument", Some("name")) => IdentRole::use_(Role::KeywordArgument),
        ("parameters" | "lambda_parameters", _) => IdentRole::def(Role::Parameter),
        ("default_parameter" | "typed_default_parameter", Some("name")) => {
            IdentRole::def(Role::Parameter)
        }
        ("typed_parameter", None) => IdentRole::def(Role::Parameter),
        ("list_splat_pattern" | "dictionary_splat_pattern", _)
            if matches!(
                a.parent_kind(p),
                "parameters" | "lambda_parameters" | "typed_parameter"
            ) =>
        {
            IdentRole::def(Role::Parameter)
        }
        ("attribute", Some("attribute")) => {
            if a.field(p) == Some("function") && a.parent_kind(p) == "call" {
                IdentRole::use_(Role::Method)
            } else if cx.target_stmt(p).is_some() {
                IdentRole::def(Role::Attribute)
            } else {
                IdentRole::use_(Role::Attribute)
            }
        }
        ("call", Some("function")) => IdentRole::use_(Role::Function),
        ("global_statement" | "nonlocal_statement", _) => IdentRole::use_(Role::Variable),
        ("keyword_pattern", _) if a.children(p).first() == Some(&n) => {
            IdentRole::use_(Role::KeywordArgument)
        }
        ("as_pattern_target", _) | ("named_expression", Some("name")) => {
            IdentRole::def(Role::Variable)
        }
        ("as_pattern", _) => {
            // `except E as e` / `case P as p`: only the name after `as` is bound.
            let kids = a.children(p);
            let pos = kids.iter().position(|&c| c == n).unwrap_or(0);
            if kids[..pos].iter().any(|&c| a.kind(c) == "as") {
                IdentRole::def(Role::Variable)
            } else {
                IdentRole::use_(Role::Variable)
            }
        }
        ("splat_pattern", _) => IdentRole::def(Role::Variable),
        ("dotted_name", _) => {
            // Only case patterns reach here (imports were handled above).
            let kids = a.children(p);
            if a.parent_kind(p) == "class_pattern" {
                IdentRole::use_(Role::Type)
            } else if kids.len() == 1 {
                IdentRole::def(Role::Variable) // capture pattern
            } else if kids.first() == Some(&n) {
                IdentRole::use_(Role::Variable) // value pattern `Color.RED`
            } else {
                IdentRole::use_(Role::Attribute)
            }
        }
        _ => match cx.target_stmt(n) {
            Some(stmt) if python_in_class_body(a, stmt) && a.kind(stmt) != "for_statement" => {
                IdentRole::def(Role::Attribute)
            }
            Some(_) => IdentRole::def(Role::Variable),
            None => IdentRole::use_(Role::Variable),
        },
    }
}
