//! AST-Probe's syntax tree of a text as the paper's pipeline builds it (martin-wey/ast-probe
//! `src/data/code2ast.py`: `code2ast`, `get_graph_from_tree`, `solve_string_problems`),
//! read in the shapes of the 2022 grammars it ran on (`probe --probe ast --protocol paper`,
//! docs/METHODS.md 4). The text is expected to be the paper's preprocessed text
//! ([`super::remove_comments_and_docstrings_astprobe`]).
//!
//! - every node of the tree-sitter tree is a node, every childless node a leaf (comments
//!   included, should the preprocessing have left one), a `string` or `*string_literal*`
//!   node a leaf over its whole span (`solve_string_problems`);
//! - Python is rooted at the `module`; Java is parsed in the paper's wrapper
//!   `public class Main {\n` … `\n}` and rooted at the wrapper's one member (the method or
//!   constructor), so the wrapper's tokens are not leaves (the paper's Java branch, which
//!   its experiments do not use, keeps them under the `program` root);
//! - the 2022 grammar's shapes (tree-sitter-python of about 2022, tree-sitter-java
//!   v0.20.0): the nodes of [`Language::study_transparent`] are left out (their children
//!   hang from the parent: `is not`, `not in`, `list[int]`'s `type_parameter` and the
//!   `type` around each argument, a `match` statement's `block`), and Python's type
//!   nodes have their old expression names: `generic_type` is a `subscript`,
//!   `union_type` (`int | None`) a `binary_operator`, `member_type` (`a.B`) an
//!   `attribute`, the `type` nodes inside the last two left out; in a `match` statement's
//!   case (Python 3.10, younger than the paper's data; the old grammar read a pattern as
//!   an expression under one `case_pattern`) a `list_pattern` is a `list`, a
//!   `tuple_pattern` a `tuple`, a `splat_pattern` a `list_splat`, a capture's
//!   `dotted_name` is its `identifier` and `A.B` an `attribute`, and the inner
//!   `case_pattern`s are left out. Class, mapping, union, keyword and `as` patterns,
//!   negative numbers and dotted names of three or more parts keep today's shapes (the
//!   old grammar's would need nodes added). Checked against the paper's own code on those
//!   grammars (tests/fixtures/astprobe_paper.json).
//!
//! Self-contained: nothing here changes how [`super::parse()`] builds a [`super::Syntax`].

use super::arena::NONE;
use super::lang::Language;
use super::SyntaxError;

/// The paper's wrapper of a Java snippet (`code2ast`, `lang == 'java'`).
pub const ASTPROBE_JAVA_WRAP: (&str, &str) = ("public class Main {\n", "\n}");

/// AST-Probe's tree of one text: nodes (the root is node 0) and leaves in source order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AstProbeTree {
    kinds: Vec<&'static str>,
    parents: Vec<u32>,
    /// Byte spans of the leaves in the text (not the wrapped text), in source order.
    pub leaves: Vec<(usize, usize)>,
    leaf_parent: Vec<u32>,
}

impl AstProbeTree {
    /// The ancestors of leaf `k` as (node id, kind), its parent first, the root last.
    ///
    /// # Panics
    /// If `k` is not a leaf index.
    pub fn ancestors(&self, k: usize) -> Vec<(u32, &'static str)> {
        let mut out = Vec::new();
        let mut n = self.leaf_parent[k];
        while n != NONE {
            out.push((n, self.kinds[n as usize]));
            n = self.parents[n as usize];
        }
        out
    }

    /// Kind of the root node.
    pub fn root_kind(&self) -> &'static str {
        self.kinds.first().copied().unwrap_or("")
    }
}

/// The kind a node of today's grammar had in the 2022 grammar, `None` for a node that
/// grammar did not have (its children belong to the parent). `parent` and `grandparent`
/// are today's kinds.
fn old_kind(
    lang: Language,
    kind: &'static str,
    parent: &str,
    grandparent: &str,
    children: u32,
) -> Option<&'static str> {
    if lang.study_transparent(kind, parent, grandparent) {
        return None;
    }
    match lang {
        Language::Python => match kind {
            "generic_type" => Some("subscript"),
            "union_type" => Some("binary_operator"),
            "member_type" => Some("attribute"),
            "type" if matches!(parent, "union_type" | "member_type") => None,
            // Case patterns were expressions under one `case_pattern` (elsewhere, as in
            // `for (a, b) in ...`, the pattern nodes are as they were).
            "list_pattern" if parent == "case_pattern" => Some("list"),
            "tuple_pattern" if parent == "case_pattern" => Some("tuple"),
            "splat_pattern" if parent == "case_pattern" => Some("list_splat"),
            "case_pattern" if parent != "case_clause" => None,
            "dotted_name" if parent == "case_pattern" && children == 1 => None,
            "dotted_name" if parent == "case_pattern" && children == 3 => Some("attribute"),
            k => Some(k),
        },
        Language::Java => Some(kind),
    }
}

/// AST-Probe's tree of `text` (see the module docs); `None` when the text does not parse
/// cleanly (an ERROR or MISSING node: the paper's dataset filter drops such snippets), a
/// Java text is not exactly one class member, or the tree has no leaf.
///
/// # Errors
/// [`SyntaxError::TooLarge`] past [`super::MAX_SOURCE_BYTES`]; [`SyntaxError::Grammar`]
/// for a grammar that does not load.
pub fn astprobe_tree(text: &str, lang: Language) -> Result<Option<AstProbeTree>, SyntaxError> {
    if text.len() > super::MAX_SOURCE_BYTES {
        return Err(SyntaxError::TooLarge {
            size: text.len(),
            max: super::MAX_SOURCE_BYTES,
        });
    }
    let (full, prefix) = match lang {
        Language::Python => (text.to_string(), 0),
        Language::Java => (
            format!("{}{text}{}", ASTPROBE_JAVA_WRAP.0, ASTPROBE_JAVA_WRAP.1),
            ASTPROBE_JAVA_WRAP.0.len(),
        ),
    };
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&lang.grammar())
        .map_err(|e| SyntaxError::Grammar(e.to_string()))?;
    let Some(tree) = parser.parse(&full, None) else {
        return Ok(None);
    };
    let root = tree.root_node();
    if root.has_error() {
        return Ok(None);
    }
    let top = match lang {
        Language::Python => root,
        Language::Java => {
            let Some(body) = root
                .child(0)
                .filter(|c| c.kind() == "class_declaration" && root.child_count() == 1)
                .and_then(|c| c.child_by_field_name("body"))
            else {
                return Ok(None);
            };
            let mut cur = body.walk();
            let members: Vec<_> = body
                .children(&mut cur)
                .filter(|c| !matches!(c.kind(), "{" | "}"))
                .collect();
            match members.as_slice() {
                [m] => *m,
                _ => return Ok(None),
            }
        }
    };
    let names = lang.names();
    let mut t = AstProbeTree {
        kinds: Vec::new(),
        parents: Vec::new(),
        leaves: Vec::new(),
        leaf_parent: Vec::new(),
    };
    // (node, its parent in the tree being built, today's parent kind, today's
    // grandparent kind); children pushed in reverse, so popped in source order.
    let mut stack = vec![(top, NONE, "", "")];
    while let Some((node, parent, pk, gk)) = stack.pop() {
        let kind = names.kind(node.kind_id());
        let collapsed = kind == "string" || kind.contains("string_literal");
        if node.child_count() == 0 || collapsed {
            if parent == NONE {
                return Ok(None); // a root that is a leaf: no tree
            }
            let (s, e) = (node.start_byte(), node.end_byte());
            if s < prefix || e > prefix + text.len() {
                return Ok(None);
            }
            t.leaves.push((s - prefix, e - prefix));
            t.leaf_parent.push(parent);
            continue;
        }
        let id = match old_kind(lang, kind, pk, gk, node.child_count()) {
            Some(k) => {
                t.kinds.push(k);
                t.parents.push(parent);
                (t.kinds.len() - 1) as u32
            }
            None if parent != NONE => parent,
            None => return Ok(None),
        };
        let mut cur = node.walk();
        let kids: Vec<_> = node.children(&mut cur).collect();
        for c in kids.into_iter().rev() {
            stack.push((c, id, kind, pk));
        }
    }
    Ok((!t.leaves.is_empty()).then_some(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(text: &str, lang: Language) -> Vec<(String, Vec<&'static str>)> {
        let t = astprobe_tree(text, lang).unwrap().unwrap();
        t.leaves
            .iter()
            .enumerate()
            .map(|(k, &(s, e))| {
                let kinds = t.ancestors(k).into_iter().map(|(_, kind)| kind).collect();
                (text[s..e].to_string(), kinds)
            })
            .collect()
    }

    #[test]
    fn python_reads_the_2022_shapes() {
        let s = shape(
            "def f(x: list[int]) -> int | None:\n    return x is not None\n",
            Language::Python,
        );
        let of = |tok: &str| s.iter().find(|(t, _)| t == tok).unwrap().1.clone();
        // `list[int]`: a subscript, `int` its direct child.
        assert_eq!(of("int")[..3], ["subscript", "type", "typed_parameter"]);
        assert_eq!(of("[")[0], "subscript");
        // `int | None`: a binary operator under the return type.
        assert_eq!(of("|")[..2], ["binary_operator", "type"]);
        assert_eq!(of("None")[..2], ["binary_operator", "type"]);
        // `is not`: two keyword children of the comparison.
        assert_eq!(of("is")[0], "comparison_operator");
        assert_eq!(of("not")[0], "comparison_operator");
        assert_eq!(*of("def").last().unwrap(), "module");
    }

    #[test]
    fn strings_are_leaves_and_java_is_rooted_at_the_method() {
        let s = shape(
            "int f() {\n    return g(\"a\\\"b\", 'c');\n}",
            Language::Java,
        );
        let texts: Vec<&str> = s.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(
            texts,
            [
                "int",
                "f",
                "(",
                ")",
                "{",
                "return",
                "g",
                "(",
                "\"a\\\"b\"",
                ",",
                "'c'",
                ")",
                ";",
                "}"
            ]
        );
        assert!(s
            .iter()
            .all(|(_, a)| *a.last().unwrap() == "method_declaration"));
        let py = shape("x = f'{a}' 'b'\n", Language::Python);
        assert_eq!(py.len(), 4, "{py:?}");
    }

    #[test]
    fn unclean_texts_have_no_tree() {
        assert_eq!(astprobe_tree("def f(:\n", Language::Python).unwrap(), None);
        assert_eq!(
            astprobe_tree("int a;\nint b;", Language::Java).unwrap(),
            None
        );
    }
}
