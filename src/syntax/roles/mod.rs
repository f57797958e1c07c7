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

/// One language's role inference over one tree: its per-node facts, and the rule that
/// reads them ([`LanguageRules::roles`](super::lang::LanguageRules::roles) builds it).
pub(crate) trait RoleContext {
    /// The role of identifier leaf `n`.
    fn role(&self, a: &Arena, n: u32) -> IdentRole;
}

/// The role context of one tree.
pub(crate) struct Context(Box<dyn RoleContext>);

impl Context {
    pub fn new(a: &Arena, lang: Language) -> Self {
        Context((lang.rules().roles)(a))
    }

    /// The role of identifier leaf `n`.
    pub fn role(&self, a: &Arena, n: u32) -> IdentRole {
        self.0.role(a, n)
    }
}
