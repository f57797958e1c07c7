//! Parsing: source text -> tree-sitter tree -> [`Syntax`] (tokens, roles, depths, graphs).
//!
//! Role: runs tree-sitter under [`Limits`], picks a wrapper for bare Java snippets and
//! pasted Python methods, flattens the tree into an [`Arena`](super::arena::Arena)
//! (`arena.rs`), classifies the tokens (`token.rs`), assigns identifier roles (`roles/`),
//! lists ERROR/MISSING nodes, then hands over to `graph.rs` for the gold graphs.
//!
//! Token rules (docs/METHODS.md 1, with codescope's documented choices):
//! - a code token is a leaf (`child_count == 0`) of non-zero width, not a comment and not
//!   Python's `line_continuation`; zero-width leaves are tree-sitter MISSING nodes and
//!   appear in `errors` only;
//! - a string node (Python `string`, incl. f-strings with their interpolations and format
//!   specs; Java `string_literal`, incl. text blocks) is ONE token of kind `string`, its
//!   depth that of the string node; an implicit concatenation `"a" "b"` is two tokens;
//! - categories and roles: see `token.rs` and `roles/`.

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use super::arena::{Builder, TreeInfo};
use super::graph;
use super::lang::Language;
use super::roles;

pub(super) mod java;
pub(super) mod python;
use super::token::{categorize, Category, CodeToken, ParseIssue};
use super::{Syntax, SyntaxError};

/// The largest source parsed by default (bytes); the input module reads no more either.
pub const MAX_SOURCE_BYTES: usize = 1_000_000;

/// Resource limits for [`parse_with`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Sources longer than this many bytes are refused ([`SyntaxError::TooLarge`]).
    pub max_bytes: usize,
    /// Wall-clock budget for tree-sitter ([`SyntaxError::Timeout`]); covers every
    /// wrapper candidate tried for a Java snippet.
    pub timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: MAX_SOURCE_BYTES,
            timeout: Duration::from_secs(2),
        }
    }
}

/// Parse `source` with the default [`Limits`].
pub fn parse(source: &str, lang: Language) -> Result<Syntax, SyntaxError> {
    parse_with(source, lang, &Limits::default())
}

/// Parse `source` as `lang`: tokens, categories, roles, depths, graphs and errors.
///
/// Errors only for resource limits and build problems; broken code parses (see
/// [`Syntax::errors`]).
pub fn parse_with(source: &str, lang: Language, limits: &Limits) -> Result<Syntax, SyntaxError> {
    if source.len() > limits.max_bytes {
        return Err(SyntaxError::TooLarge {
            size: source.len(),
            max: limits.max_bytes,
        });
    }
    let deadline = Instant::now() + limits.timeout;
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&lang.grammar())
        .map_err(|e| SyntaxError::Grammar(e.to_string()))?;

    let (text, prefix, tree, wrapped) = choose_parse(&mut parser, source, lang, deadline, limits)?;
    let region = (prefix, prefix + source.len());

    let (arena, raw, comments) = Builder::new(lang, &text, region).build(&tree);

    // Rebase depths so that the wrapper's body node is the root (depth 0).
    let container_id = if wrapped {
        arena.container(prefix, prefix + source.trim_end().len())
    } else {
        0
    };
    let base = arena.nodes[container_id as usize].depth;

    let role_cx = roles::Context::new(&arena, lang);
    let mut tokens = Vec::with_capacity(raw.len());
    let mut token_node = Vec::with_capacity(raw.len());
    for r in &raw {
        let n = &arena.nodes[r.node as usize];
        let category = categorize(
            lang,
            r.kind,
            &text[r.start..r.end],
            r.collapsed,
            arena.parent_kind(r.node),
        );
        let role = (category == Category::Identifier)
            .then(|| role_cx.role(&arena, r.node))
            .map(|r| r.to_string());
        tokens.push(CodeToken {
            text: text[r.start..r.end].to_string(),
            start: r.start - prefix,
            end: r.end - prefix,
            kind: if r.collapsed {
                "string".to_string()
            } else {
                r.kind.to_string()
            },
            category,
            coarse: category.coarse(),
            role,
            depth: (n.depth.saturating_sub(base)) as usize,
        });
        token_node.push(r.node);
    }

    let errors = collect_errors(&tree, &text, region);
    let comments = comments
        .into_iter()
        .map(|(s, e)| (s - prefix, e - prefix))
        .collect();
    let tree_info = TreeInfo::new(&arena, container_id, base, token_node);
    let graphs = graph::build_graphs(&arena, source, &tokens, &tree_info, lang, container_id)?;

    Ok(Syntax {
        language: lang,
        source: source.to_string(),
        tokens,
        graphs,
        errors,
        comments,
        wrapped,
        tree: tree_info,
    })
}

// ---------------------------------------------------------------------------------------
// Parsing and wrapping
// ---------------------------------------------------------------------------------------

/// Run tree-sitter on `text`, cancelling at `deadline`.
fn run_parser(
    parser: &mut tree_sitter::Parser,
    text: &str,
    deadline: Instant,
    limits: &Limits,
) -> Result<tree_sitter::Tree, SyntaxError> {
    let bytes = text.as_bytes();
    let len = bytes.len();
    let mut progress = |_: &tree_sitter::ParseState| {
        if Instant::now() >= deadline {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let options = tree_sitter::ParseOptions::new().progress_callback(&mut progress);
    let tree = parser.parse_with_options(
        &mut |i, _| if i < len { &bytes[i..] } else { &[] },
        None,
        Some(options),
    );
    // `None` means the progress callback cancelled the parse; a cancelled parser would
    // resume on its next call, so reset it.
    tree.ok_or_else(|| {
        parser.reset();
        SyntaxError::Timeout(limits.timeout)
    })
}

/// Parse the source, trying the wrappers its language offers for it (`wrappers_for`:
/// bare Java members and statements, pasted Python methods).
/// Returns (parsed text, byte offset of the source inside it, tree, wrapped).
fn choose_parse(
    parser: &mut tree_sitter::Parser,
    source: &str,
    lang: Language,
    deadline: Instant,
    limits: &Limits,
) -> Result<(String, usize, tree_sitter::Tree, bool), SyntaxError> {
    let original = run_parser(parser, source, deadline, limits)?;
    let candidates = if source.trim().is_empty() {
        Vec::new()
    } else {
        (lang.rules().wrappers_for)(&original, source)
    };
    let mut best: Option<(usize, String, usize, tree_sitter::Tree)> = None;
    for (pre, post) in candidates {
        let text = format!("{pre}{source}{post}");
        let tree = run_parser(parser, &text, deadline, limits)?;
        let errs = count_errors(&tree);
        if best.as_ref().is_none_or(|b| errs < b.0) {
            best = Some((errs, text, pre.len(), tree));
        }
        if errs == 0 {
            break;
        }
    }
    let original_errs = count_errors(&original);
    match best {
        Some((errs, text, prefix, tree)) if errs <= original_errs => Ok((text, prefix, tree, true)),
        _ => Ok((source.to_string(), 0, original, false)),
    }
}

/// Number of ERROR and MISSING nodes.
fn count_errors(tree: &tree_sitter::Tree) -> usize {
    let mut n = 0;
    walk_errors(tree.root_node(), &mut |_| n += 1);
    n
}

/// Visit outermost ERROR nodes and all MISSING nodes, skipping error-free subtrees.
fn walk_errors(root: tree_sitter::Node, f: &mut dyn FnMut(tree_sitter::Node)) {
    if !root.has_error() {
        return;
    }
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        let mut descend = node.has_error();
        if node.is_error() {
            f(node);
            descend = false;
        } else if node.is_missing() {
            f(node);
        }
        if descend && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return;
            }
        }
    }
}

fn collect_errors(tree: &tree_sitter::Tree, text: &str, region: (usize, usize)) -> Vec<ParseIssue> {
    let mut out = Vec::new();
    walk_errors(tree.root_node(), &mut |n| {
        // Clamp into the caller's source (wrapper text is never reported).
        let s = n.start_byte().clamp(region.0, region.1) - region.0;
        let e = n.end_byte().clamp(region.0, region.1) - region.0;
        let message = if n.is_missing() {
            format!("missing `{}`", n.kind())
        } else {
            let snippet = text
                .get(n.start_byte().max(region.0)..n.end_byte().min(region.1))
                .unwrap_or("");
            let snippet: String = snippet.split_whitespace().collect::<Vec<_>>().join(" ");
            let clipped: String = snippet.chars().take(40).collect();
            let ell = if clipped.len() < snippet.len() {
                "…"
            } else {
                ""
            };
            if clipped.is_empty() {
                "syntax error".to_string()
            } else {
                format!("syntax error near `{clipped}{ell}`")
            }
        };
        out.push(ParseIssue {
            start: s,
            end: e,
            message,
        });
    });
    out.sort_by_key(|i| (i.start, i.end));
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_refuse_large_input() {
        let limits = Limits {
            max_bytes: 10,
            ..Limits::default()
        };
        let err = parse_with("x = 1 + 2 + 3 + 4", Language::Python, &limits).unwrap_err();
        assert!(
            matches!(err, SyntaxError::TooLarge { size: 17, max: 10 }),
            "{err}"
        );
        assert!(err.to_string().contains("over the limit"));
    }

    #[test]
    fn timeout_is_reported() {
        let big = "x = [".to_string() + &"1, ".repeat(100_000) + "]\n";
        let limits = Limits {
            max_bytes: usize::MAX,
            timeout: Duration::from_nanos(1),
        };
        let err = parse_with(&big, Language::Python, &limits).unwrap_err();
        assert!(matches!(err, SyntaxError::Timeout(_)), "{err}");
    }
}
