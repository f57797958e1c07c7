//! Python's rules (tree-sitter-python 0.25): the data the engines of `syntax` read, and
//! the hooks to Python's file of each engine.

use std::sync::OnceLock;

use super::{LanguageRules, TextCues};
use crate::syntax::{clean, dfg, parse, rewrite, roles};

pub(super) static RULES: LanguageRules = LanguageRules {
    name: "python",
    aliases: &["py", "python3"],
    extensions: &["py", "pyi", "pyw"],
    grammar: || tree_sitter_python::LANGUAGE.into(),
    names: OnceLock::new(),
    text_cues: TextCues {
        line_ends: &[":"],
        lines: &[],
        words: &["def ", "elif ", "self.", "from ", "print(", "lambda "],
        comments: &["#"],
    },
    comments: &["comment"],
    // The `\` line continuation.
    ignored_leaves: &["line_continuation"],
    // f-strings are `string` nodes too: an f-string with its interpolations is one token.
    collapsed_strings: &["string"],
    literals: &[
        "string",
        "integer",
        "float",
        "true",
        "false",
        "none",
        "ellipsis",
        "string_start",
        "string_content",
        "string_end",
        "escape_sequence",
    ],
    identifiers: &["identifier"],
    keyword_kinds: &[],
    keyword_identifiers: &[],
    angle_bracket_parents: &[],
    functions: &["function_definition"],
    study_transparent,
    // `"` leaves, escape sequences, interpolations: the study's motif code gives a string
    // incoming edges only.
    study_string_has_quotes: true,
    wrappers: &parse::python::WRAPPERS,
    wrappers_for: parse::python::wrappers_for,
    roles: roles::python::context,
    dfg: &dfg::python::RULES,
    clean: clean::python::remove,
    clean_astprobe: clean::python::remove_astprobe,
    rewrite_scopes: rewrite::python::resolve,
};

/// Nodes of today's grammar that the study's grammar (about 2022) did not have, their
/// children being children of the parent then: `is not` / `not in` (two keyword leaves
/// of `comparison_operator` then) and, inside a `generic_type` (`list[int]`, a
/// `subscript` then), its `type_parameter` and the `type` wrapped around each argument,
/// and the `block` around a `match` statement's cases. Found by comparing both grammars'
/// trees on 3,000 standard library functions (`tools/reference/study/`); the only other
/// differences are case patterns (Python 3.10, which the study's data predates; the old
/// grammar read them as expressions), kept in today's shape, and the old grammar's own
/// misparses.
fn study_transparent(kind: &str, parent: &str, grandparent: &str) -> bool {
    match kind {
        "is not" | "not in" => true,
        "type_parameter" => parent == "generic_type",
        "type" => parent == "type_parameter" && grandparent == "generic_type",
        "block" => parent == "match_statement",
        _ => false,
    }
}
