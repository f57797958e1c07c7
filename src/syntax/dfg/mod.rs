//! The data-flow graphs (docs/METHODS.md 2.3): which occurrence takes its value from which.
//!
//! Two graphs, both GraphCodeBERT's two relations (`comesFrom`, `computedFrom`):
//! - `dfg`, the study's: GraphCodeBERT's `DFG_python` / `DFG_java` exactly as the study's
//!   code runs them, edge for edge on today's grammars (`study.rs` + the `impl Study`
//!   blocks of `python.rs` / `java.rs`). Every leaf whose type is not its text takes part
//!   (literals, attribute and keyword-argument names too), and loops walked twice give
//!   self edges;
//! - `dfg_refined`, codescope's: identifier to identifier only, with scopes, branches,
//!   loops that may not run, fields through `self`/`this` (`refined.rs` + the
//!   `impl Refined` blocks; its rules are listed on [`refined::Refined`]).
//!
//! Each language file holds that language's rules for both graphs, gathered in its
//! [`DfgRules`] (which its language's config points to), so a third language is one more
//! file here; the engines read the rules and never match on the language.
//!
//! Both walks recurse once per tree level; they run on a thread with a large stack when
//! the tree is big, and stop descending at a fixed depth (see `study.rs`).

use serde::{Deserialize, Serialize};

use super::arena::Arena;
use super::lang::Language;
use super::token::{CodeToken, Role};
use super::SyntaxError;

pub(crate) mod java;
pub(crate) mod python;
mod refined;
mod state;
mod study;

use refined::{ClassScope, Index, Loc, Member, Rebind, Refined};
use study::Study;

/// One language's rules for both walks, reached through the language's config
/// ([`LanguageRules::dfg`](super::lang::LanguageRules::dfg)): what is data (node kinds,
/// field names, how scopes see each other) as fields, what is code as functions of the
/// language's file (`python.rs`, `java.rs`). The engines (`study.rs`, `refined.rs`) read
/// these and never the language.
pub(crate) struct DfgRules {
    /// The study's walk on a non-leaf node (`DFG_python`, `DFG_java`).
    study_visit: fn(&mut Study<'_>, u32),
    /// Per node, the type the study's grammar gave a leaf where it differs from today's
    /// (`None` elsewhere; an empty list: none differ).
    study_leaf_types: fn(&Arena) -> Vec<Option<&'static str>>,
    /// Scopes to open before the refined walk of `root` (Python: the class around pasted
    /// methods).
    refined_start: fn(&mut Refined<'_>, u32),
    /// The refined walk on a non-leaf node.
    refined_visit: fn(&mut Refined<'_>, u32),
    /// How a bare name sees the class scopes around it.
    class_scope: ClassScope,
    /// The field key of a member leaf reached through the receiver (`self.x`, `this.x`).
    field_loc: fn(&mut Refined<'_>, u32) -> Option<Loc>,
    /// Where a definition of leaf `n` (symbol `s`) with `role` is bound; `None`: nowhere
    /// (a name that is no variable of the flow).
    def_locs: fn(&mut Refined<'_>, u32, Role, u32) -> Option<Vec<Loc>>,
    /// A decorator's name is a use of the variable it names.
    decorators_are_uses: bool,
    /// Nodes that only regroup assignment targets (`a, b = ...`).
    bind_container: fn(&str) -> bool,
    /// The member access node (`a.f`).
    member: Member,
    /// The index access node (`a[i]`).
    index: Index,
    /// Where a write into part of a variable (`a[i] = v`) rebinds it.
    rebind: Rebind,
}

/// Kind of a data-flow edge `i -> j` (GraphCodeBERT's two relations).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum DfgKind {
    /// Occurrence i holds a value that comes from occurrence j: a use from its reaching
    /// definition(s); a declared name / default parameter from the tokens of its
    /// initializer (GraphCodeBERT's `variable_declarator` / `default_parameter` rule).
    #[serde(rename = "comesFrom")]
    ComesFrom,
    /// Target i is computed from token j of the assigned expression (assignments,
    /// augmented assignments, loop targets; in the refined graph also `with` / `except`
    /// / pattern targets, walrus, `instanceof` bindings).
    #[serde(rename = "computedFrom")]
    ComputedFrom,
}

/// Stack for the recursive walks (run on their own thread so deep code cannot overflow
/// the caller's stack).
const STACK_BYTES: usize = 64 << 20;

/// Run `f` on a thread with a large stack when the tree is big (small trees cannot nest
/// deeply). A panic in the walker is reported, not propagated.
fn on_big_stack<T: Send>(a: &Arena, f: impl FnOnce() -> T + Send + Copy) -> Option<T> {
    if a.nodes.len() < 2_000 {
        return Some(f());
    }
    std::thread::scope(|s| {
        match std::thread::Builder::new()
            .stack_size(STACK_BYTES)
            .spawn_scoped(s, f)
        {
            Ok(h) => h.join().ok(),
            Err(_) => Some(f()),
        }
    })
}

/// The study's data-flow graph from `root` (see `study.rs`). `source` is the text the
/// token spans point into.
pub(crate) fn study_graph(
    a: &Arena,
    source: &str,
    tokens: &[CodeToken],
    lang: Language,
    root: u32,
) -> Result<Vec<(usize, usize, DfgKind)>, SyntaxError> {
    on_big_stack(a, move || {
        study::Study::new(a, source, tokens, lang).run(root)
    })
    .unwrap_or_else(|| Ok(Vec::new()))
}

/// codescope's refined data-flow graph from `root` (see [`refined::Refined`]).
pub(crate) fn refined_graph(
    a: &Arena,
    tokens: &[CodeToken],
    lang: Language,
    root: u32,
) -> Vec<(usize, usize, DfgKind)> {
    on_big_stack(a, move || refined::run(a, tokens, lang, root)).unwrap_or_default()
}
