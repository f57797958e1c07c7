//! Java's rules (tree-sitter-java 0.23): the data the engines of `syntax` read, and the
//! hooks to Java's file of each engine.

use std::sync::OnceLock;

use super::{LanguageRules, TextCues};
use crate::syntax::{clean, dfg, parse, rewrite, roles};

pub(super) static RULES: LanguageRules = LanguageRules {
    name: "java",
    aliases: &[],
    extensions: &["java"],
    grammar: || tree_sitter_java::LANGUAGE.into(),
    names: OnceLock::new(),
    text_cues: TextCues {
        line_ends: &[";", "{"],
        lines: &["}"],
        words: &[
            "public ",
            "private ",
            "protected ",
            "static void ",
            "import java",
            "System.",
            "@Override",
            "package ",
        ],
        comments: &["//", "/*"],
    },
    comments: &["line_comment", "block_comment", "comment"],
    ignored_leaves: &[],
    // Text blocks are `string_literal` in 0.23 (`text_block` in other grammar versions);
    // a `character_literal` is a leaf already and is renamed `string` like the others
    // (docs/METHODS.md 1: "Same for Java string/char/text-block").
    collapsed_strings: &["string_literal", "text_block", "character_literal"],
    literals: &[
        "string",
        "decimal_integer_literal",
        "hex_integer_literal",
        "octal_integer_literal",
        "binary_integer_literal",
        "decimal_floating_point_literal",
        "hex_floating_point_literal",
        "character_literal",
        "true",
        "false",
        "null_literal",
        "string_fragment",
        "multiline_string_fragment",
        "escape_sequence",
    ],
    identifiers: &["identifier", "type_identifier", "field_identifier"],
    keyword_kinds: &["@interface", "non-sealed"],
    // `var` is a reserved type name since Java 10: a keyword, not a type.
    keyword_identifiers: &[("type_identifier", "var")],
    angle_bracket_parents: &["type_arguments", "type_parameters"],
    functions: &["method_declaration", "constructor_declaration"],
    // None that matter for the study's data flow (its one leaf difference is handled by
    // the data flow).
    study_transparent: |_, _, _| false,
    // The grammar of the time had `string_literal` as one leaf.
    study_string_has_quotes: false,
    wrappers: &parse::java::WRAPPERS,
    wrappers_for: parse::java::wrappers_for,
    roles: roles::java::context,
    dfg: &dfg::java::RULES,
    clean: clean::java::remove,
    clean_astprobe: |s| Ok(clean::java::remove_astprobe(s)),
    rewrite_scopes: rewrite::java::resolve,
};
