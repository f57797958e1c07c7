//! Roles of Java identifiers, type identifiers and field identifiers (see [`Role`] and
//! [`IdentRole`]), from their place in the tree-sitter-java tree.

use super::super::arena::Arena;
use super::super::token::{IdentRole, Role};
use super::RoleContext;

/// Is this Java node (a field access / identifier) written to?
pub(crate) fn java_is_target(a: &Arena, n: u32) -> bool {
    match a.parent(n) {
        Some(p) => {
            (a.kind(p) == "assignment_expression" && a.field(n) == Some("left"))
                || a.kind(p) == "update_expression"
        }
        None => false,
    }
}

/// Per node, computed once from the root down: the top of the unbroken chain of
/// `scoped_identifier` parents above it (the node itself when its parent is not one),
/// so that no identifier climbs a long `a.b.c...` name.
pub(crate) struct Context {
    top_scoped: Vec<u32>,
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
        let mut top_scoped: Vec<u32> = (0..n as u32).collect();
        for x in 1..n {
            if let Some(p) = a.parent(x as u32) {
                if a.kind(p) == "scoped_identifier" {
                    top_scoped[x] = top_scoped[p as usize];
                }
            }
        }
        Context { top_scoped }
    }
}

/// Role of a Java identifier / type_identifier leaf `n`.
pub(crate) fn role(a: &Arena, cx: &Context, n: u32) -> IdentRole {
    let Some(p) = a.parent(n) else {
        return IdentRole::use_(Role::Variable);
    };
    let pk = a.kind(p);
    // Annotations, packages and imports: the whole scoped name.
    let cur = cx.top_scoped[n as usize];
    if let Some(top) = a.parent(cur) {
        match a.kind(top) {
            "marker_annotation" | "annotation" if a.field(cur) == Some("name") => {
                return IdentRole::use_(Role::Decorator)
            }
            "package_declaration" => return IdentRole::use_(Role::Module),
            "import_declaration" => {
                // The last component (`List` in `import java.util.List;`) is imported.
                let is_last = n == cur || (a.field(n) == Some("name") && p == cur);
                let wildcard = a.child_of_kind(top, "asterisk").is_some();
                return if is_last && !wildcard {
                    IdentRole::def(Role::Import)
                } else {
                    IdentRole::use_(Role::Module)
                };
            }
            _ => {}
        }
    }
    if a.kind(n) == "type_identifier" {
        return if pk == "type_parameter" {
            IdentRole::def(Role::Type)
        } else {
            IdentRole::use_(Role::Type)
        };
    }
    let f = a.field(n);
    match (pk, f) {
        (
            "class_declaration"
            | "interface_declaration"
            | "enum_declaration"
            | "record_declaration"
            | "annotation_type_declaration",
            Some("name"),
        ) => IdentRole::def(Role::Class),
        (
            "method_declaration"
            | "constructor_declaration"
            | "compact_constructor_declaration"
            | "annotation_type_element_declaration",
            Some("name"),
        ) => IdentRole::def(Role::Method),
        ("formal_parameter", Some("name")) | ("receiver_parameter", _) => {
            IdentRole::def(Role::Parameter)
        }
        ("variable_declarator", Some("name")) => match a.parent_kind(p) {
            "field_declaration" | "constant_declaration" => IdentRole::def(Role::Attribute),
            "spread_parameter" => IdentRole::def(Role::Parameter),
            _ => IdentRole::def(Role::Variable),
        },
        ("catch_formal_parameter", Some("name"))
        | ("resource", Some("name"))
        | ("enhanced_for_statement", Some("name"))
        | ("instanceof_expression", Some("name"))
        | ("type_pattern", _)
        | ("record_pattern_component", _) => IdentRole::def(Role::Variable),
        ("inferred_parameters", _) | ("lambda_expression", Some("parameters")) => {
            IdentRole::def(Role::Parameter)
        }
        ("record_pattern", _) => IdentRole::use_(Role::Type),
        ("enum_constant", Some("name")) => IdentRole::def(Role::Attribute),
        ("method_invocation", Some("name")) => IdentRole::use_(Role::Method),
        ("field_access", Some("field")) => {
            if java_is_target(a, p) {
                IdentRole::def(Role::Attribute)
            } else {
                IdentRole::use_(Role::Attribute)
            }
        }
        ("method_reference", _) if a.children(p).first() != Some(&n) => {
            IdentRole::use_(Role::Method)
        }
        ("labeled_statement", _) => IdentRole::def(Role::Label),
        ("break_statement" | "continue_statement", _) => IdentRole::use_(Role::Label),
        ("element_value_pair", Some("key")) => IdentRole::use_(Role::KeywordArgument),
        ("assignment_expression", Some("left")) | ("update_expression", _) => {
            IdentRole::def(Role::Variable)
        }
        _ => IdentRole::use_(Role::Variable),
    }
}
