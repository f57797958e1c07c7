//! Supported source languages and their tree-sitter grammars.
//!
//! Role: the one place that maps a [`Language`] to its grammar, its file extensions and
//! the node kinds the rest of `syntax` treats specially (comments, string literals,
//! literal leaves, identifier leaves).
//!
//! Invariants: every kind listed here exists in the pinned grammar versions
//! (tree-sitter-python 0.25, tree-sitter-java 0.23); `Language` serializes as
//! `"python"` / `"java"`, the same strings [`Language::name`] returns and
//! [`Language::from_name`] accepts.

use std::path::Path;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::SyntaxError;

/// A language codescope can parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// Python 3 (tree-sitter-python 0.25).
    Python,
    /// Java up to 21 (tree-sitter-java 0.23).
    Java,
}

impl Language {
    /// All supported languages, in display order.
    pub const ALL: [Language; 2] = [Language::Python, Language::Java];

    /// Guess the language from a file extension (`.py`, `.pyi`, `.pyw`, `.java`).
    pub fn from_path(path: &Path) -> Option<Language> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "py" | "pyi" | "pyw" => Some(Language::Python),
            "java" => Some(Language::Java),
            _ => None,
        }
    }

    /// Guess the language of a text whose file name does not say (a `.txt`, stdin):
    /// Java when its lines look like Java (ending in `;`, `{` or `}`; `public`,
    /// `import java.`, `System.`) more than like Python (ending in `:`; `def`, `elif`,
    /// `self.`, `from x import`), else Python. Reads at most the first 64 KiB.
    pub fn from_text(text: &str) -> Language {
        let mut end = text.len().min(64 << 10);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let (mut java, mut py) = (0i64, 0i64);
        for line in text[..end].lines() {
            let l = line.trim();
            if l.is_empty() {
                continue;
            }
            if l.ends_with(';') || l.ends_with('{') || l == "}" {
                java += 1;
            }
            if l.ends_with(':') {
                py += 1;
            }
            for w in [
                "public ",
                "private ",
                "protected ",
                "static void ",
                "import java",
                "System.",
                "@Override",
                "package ",
            ] {
                if l.starts_with(w) || l.contains(&format!(" {w}")) {
                    java += 2;
                }
            }
            for w in ["def ", "elif ", "self.", "from ", "print(", "lambda "] {
                if l.starts_with(w) || l.contains(&format!(" {w}")) {
                    py += 2;
                }
            }
            if l.starts_with('#') {
                py += 1;
            }
            if l.starts_with("//") || l.starts_with("/*") {
                java += 1;
            }
        }
        if java > py {
            Language::Java
        } else {
            Language::Python
        }
    }

    /// Parse a language name as typed by a user (`python`, `py`, `java`; case-insensitive).
    pub fn from_name(name: &str) -> Result<Language, SyntaxError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "python" | "py" | "python3" => Ok(Language::Python),
            "java" => Ok(Language::Java),
            _ => Err(SyntaxError::UnknownLanguage(name.to_string())),
        }
    }

    /// The canonical lowercase name (`"python"` or `"java"`).
    pub fn name(&self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::Java => "java",
        }
    }

    /// The tree-sitter grammar for this language.
    pub(crate) fn grammar(&self) -> tree_sitter::Language {
        match self {
            Language::Python => tree_sitter_python::LANGUAGE.into(),
            Language::Java => tree_sitter_java::LANGUAGE.into(),
        }
    }

    /// Node kind and field names of the grammar with a `'static` lifetime (tree-sitter's
    /// API ties them to the tree; the grammar's tables are copied once per process).
    pub(crate) fn names(&self) -> &'static GrammarNames {
        static PY: OnceLock<GrammarNames> = OnceLock::new();
        static JAVA: OnceLock<GrammarNames> = OnceLock::new();
        let cell = match self {
            Language::Python => &PY,
            Language::Java => &JAVA,
        };
        cell.get_or_init(|| GrammarNames::new(&self.grammar()))
    }

    /// Comment node kinds: excluded from code tokens, their spans kept (docs/METHODS.md 1).
    pub(crate) fn is_comment(&self, kind: &str) -> bool {
        match self {
            Language::Python => kind == "comment",
            Language::Java => matches!(kind, "line_comment" | "block_comment" | "comment"),
        }
    }

    /// Extra leaves that are neither code tokens nor comments (Python's `\` line
    /// continuation).
    pub(crate) fn is_ignored_leaf(&self, kind: &str) -> bool {
        matches!(self, Language::Python) && kind == "line_continuation"
    }

    /// String-like nodes collapsed into ONE code token of kind `string` (docs/METHODS.md 1).
    /// Python f-strings are `string` nodes too, so an f-string with its interpolations is
    /// one token. Java text blocks are `string_literal` in 0.23 (`text_block` in other
    /// grammar versions); a Java `character_literal` is a leaf already and is renamed
    /// `string` like the others (docs/METHODS.md 1: "Same for Java string/char/text-block").
    pub(crate) fn is_collapsed_string(&self, kind: &str) -> bool {
        match self {
            Language::Python => kind == "string",
            Language::Java => matches!(kind, "string_literal" | "text_block" | "character_literal"),
        }
    }

    /// Leaf kinds whose category is `literal`: numbers, strings, booleans, None/null.
    /// Also string pieces that survive outside a `string` node in broken code.
    pub(crate) fn is_literal_kind(&self, kind: &str) -> bool {
        match self {
            Language::Python => matches!(
                kind,
                "string"
                    | "integer"
                    | "float"
                    | "true"
                    | "false"
                    | "none"
                    | "ellipsis"
                    | "string_start"
                    | "string_content"
                    | "string_end"
                    | "escape_sequence"
            ),
            Language::Java => matches!(
                kind,
                "string"
                    | "decimal_integer_literal"
                    | "hex_integer_literal"
                    | "octal_integer_literal"
                    | "binary_integer_literal"
                    | "decimal_floating_point_literal"
                    | "hex_floating_point_literal"
                    | "character_literal"
                    | "true"
                    | "false"
                    | "null_literal"
                    | "string_fragment"
                    | "multiline_string_fragment"
                    | "escape_sequence"
            ),
        }
    }

    /// Leaf kinds whose category is `identifier` (docs/METHODS.md 1).
    pub(crate) fn is_identifier_kind(&self, kind: &str) -> bool {
        match self {
            Language::Python => kind == "identifier",
            Language::Java => {
                matches!(kind, "identifier" | "type_identifier" | "field_identifier")
            }
        }
    }

    /// Nodes of today's grammar that the study's grammar (about 2022) did not have,
    /// their children being children of the parent then: Python's `is not` / `not in`
    /// (two keyword leaves of `comparison_operator` then) and, inside a `generic_type`
    /// (`list[int]`, a `subscript` then), its `type_parameter` and the `type` wrapped
    /// around each argument, and the `block` around a `match` statement's cases. Found by
    /// comparing both grammars' trees on 3,000 standard library functions
    /// (`tools/reference/study/`); the only other differences are case patterns (Python
    /// 3.10, which the study's data predates; the old grammar read them as expressions),
    /// kept in today's shape, and the old grammar's own misparses. Java: none that matter
    /// for the study's data flow (its one leaf difference is handled by the data flow).
    pub(crate) fn study_transparent(&self, kind: &str, parent: &str, grandparent: &str) -> bool {
        match self {
            Language::Python => match kind {
                "is not" | "not in" => true,
                "type_parameter" => parent == "generic_type",
                "type" => parent == "type_parameter" && grandparent == "generic_type",
                "block" => parent == "match_statement",
                _ => false,
            },
            Language::Java => false,
        }
    }

    /// Did the study's grammar give a string literal quote children (a non-leaf
    /// `string`)? Python: yes (`"` leaves, escape sequences, interpolations), which is why
    /// the study's motif code gives a string incoming edges only. Java's grammar of the
    /// time had `string_literal` as one leaf.
    pub(crate) fn study_string_has_quotes(&self) -> bool {
        matches!(self, Language::Python)
    }

    /// File extensions, for file pickers.
    pub fn extensions(&self) -> &'static [&'static str] {
        match self {
            Language::Python => &["py", "pyi", "pyw"],
            Language::Java => &["java"],
        }
    }
}

/// `'static` copies of a grammar's node-kind and field names, indexed by id.
#[derive(Debug)]
pub(crate) struct GrammarNames {
    kinds: Vec<&'static str>,
    fields: Vec<&'static str>,
}

impl GrammarNames {
    fn new(g: &tree_sitter::Language) -> Self {
        let leak = |s: Option<&str>| -> &'static str { Box::leak(s.unwrap_or("").into()) };
        let kinds = (0..g.node_kind_count())
            .map(|i| leak(g.node_kind_for_id(i as u16)))
            .collect();
        let fields = (0..=g.field_count())
            .map(|i| {
                if i == 0 {
                    ""
                } else {
                    leak(g.field_name_for_id(i as u16))
                }
            })
            .collect();
        GrammarNames { kinds, fields }
    }

    /// Kind name for a node's `kind_id()` (`ERROR` for the error symbol).
    pub fn kind(&self, id: u16) -> &'static str {
        if id == u16::MAX {
            return "ERROR";
        }
        self.kinds.get(id as usize).copied().unwrap_or("ERROR")
    }

    /// Field name for a field id.
    pub fn field(&self, id: u16) -> &'static str {
        self.fields.get(id as usize).copied().unwrap_or("")
    }
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Language {
    type Err = SyntaxError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Language::from_name(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for l in Language::ALL {
            assert_eq!(Language::from_name(l.name()).unwrap(), l);
            assert_eq!(serde_json::to_value(l).unwrap(), l.name());
        }
        assert!(Language::from_name("cobol").is_err());
        assert_eq!(Language::from_name(" PY ").unwrap(), Language::Python);
    }

    #[test]
    fn from_text_tells_java_from_python() {
        let java = "package a;\n\npublic class Cart {\n    private int n;\n    int total() {\n        return n * 2;\n    }\n}\n";
        assert_eq!(Language::from_text(java), Language::Java);
        let py = "import os\n\ndef total(items):\n    # sum\n    return sum(items)\n";
        assert_eq!(Language::from_text(py), Language::Python);
        assert_eq!(Language::from_text(""), Language::Python);
        let samples = [
            (
                Language::Python,
                include_str!("../../assets/samples/python/word_count.py"),
            ),
            (
                Language::Python,
                include_str!("../../assets/samples/python/binary_search.py"),
            ),
            (
                Language::Python,
                include_str!("../../assets/samples/python/inventory.py"),
            ),
            (
                Language::Python,
                include_str!("../../assets/samples/python/async_fetch.py"),
            ),
            (
                Language::Java,
                include_str!("../../assets/samples/java/BinarySearch.java"),
            ),
            (
                Language::Java,
                include_str!("../../assets/samples/java/Inventory.java"),
            ),
            (
                Language::Java,
                include_str!("../../assets/samples/java/Shapes.java"),
            ),
        ];
        for (l, text) in samples {
            assert_eq!(Language::from_text(text), l, "{text}");
        }
    }

    #[test]
    fn from_path_uses_extension() {
        assert_eq!(
            Language::from_path(Path::new("a/b.py")),
            Some(Language::Python)
        );
        assert_eq!(
            Language::from_path(Path::new("A.JAVA")),
            Some(Language::Java)
        );
        assert_eq!(Language::from_path(Path::new("README")), None);
        assert_eq!(Language::from_path(Path::new("x.rs")), None);
    }
}
