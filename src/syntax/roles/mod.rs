//! Identifier roles, one file per language: `"<definition|use>:<role>"` for every
//! identifier token (see [`IdentRole`](super::IdentRole)).
//!
//! Each language file exposes a `Context` (per-node facts from above, computed once from
//! the root down, so that no identifier climbs the tree: linear time on any shape) and
//! `role(arena, context, leaf) -> IdentRole`, plus the tree predicates its data-flow
//! rules share (methods, receivers).

use super::arena::Arena;
use super::lang::Language;
use super::token::IdentRole;

pub(crate) mod java;
pub(crate) mod python;

/// The role context of one tree.
pub(crate) enum Context {
    Python(python::Context),
    Java(java::Context),
}

impl Context {
    pub fn new(a: &Arena, lang: Language) -> Self {
        match lang {
            Language::Python => Context::Python(python::Context::new(a)),
            Language::Java => Context::Java(java::Context::new(a)),
        }
    }

    /// The role of identifier leaf `n`.
    pub fn role(&self, a: &Arena, n: u32) -> IdentRole {
        match self {
            Context::Python(cx) => python::role(a, cx, n),
            Context::Java(cx) => java::role(a, cx, n),
        }
    }
}
