//! Identifier roles, one file per language: `"<definition|use>:<role>"` for every
//! identifier token (see [`IdentRole`](super::IdentRole)).
//!
//! Each language file exposes `role(arena, leaf) -> IdentRole` plus the tree predicates
//! its data-flow rules share (assignment targets, methods, receivers).

pub(crate) mod java;
pub(crate) mod python;
