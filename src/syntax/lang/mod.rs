//! Supported source languages, and each one's rules as data.
//!
//! Role: the one place that maps a [`Language`] to its [`LanguageRules`]: its grammar, its
//! names and file extensions, the node kinds the rest of `syntax` treats specially
//! (comments, string literals, literal and identifier leaves, the study's grammar
//! differences), and the per-language hooks of the engines (wrappers, roles, both data
//! flows, comment removal, the renaming twin's scopes). The engines read these fields
//! instead of matching on the language; a language's own code sits in that language's
//! file of each engine (`parse/`, `roles/`, `dfg/`, `clean/`, `rewrite/`), its data in
//! `lang/<language>.rs`. A third language is one more file per engine, one config here and
//! one variant of [`Language`].
//!
//! Invariants: every kind listed in a config exists in the pinned grammar versions
//! (tree-sitter-python 0.25, tree-sitter-java 0.23); `Language` serializes as
//! `"python"` / `"java"`, the same strings [`Language::name`] returns and
//! [`Language::from_name`] accepts.

use std::path::Path;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::arena::Arena;
use super::clean::CleanError;
use super::dfg::DfgRules;
use super::rewrite::Resolved;
use super::roles::RoleContext;
use super::SyntaxError;

mod java;
mod python;

/// A language codescope can parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// Python 3 (tree-sitter-python 0.25).
    Python,
    /// Java up to 21 (tree-sitter-java 0.23).
    Java,
}

/// Everything `syntax` knows about one language: data the engines read, and hooks to the
/// language's own code in each engine's file for it. One `static` per language
/// (`lang/python.rs`, `lang/java.rs`), reached through [`Language::rules`].
pub(crate) struct LanguageRules {
    /// The canonical lowercase name ([`Language::name`]).
    pub name: &'static str,
    /// Other names [`Language::from_name`] accepts (lowercase).
    pub aliases: &'static [&'static str],
    /// File extensions, lowercase, without the dot ([`Language::from_path`], file pickers).
    pub extensions: &'static [&'static str],
    /// The tree-sitter grammar.
    pub grammar: fn() -> tree_sitter::Language,
    /// The grammar's names with a `'static` lifetime, filled on first use.
    pub names: OnceLock<GrammarNames>,
    /// What [`Language::from_text`] counts as a sign of this language.
    pub text_cues: TextCues,
    /// Comment node kinds: excluded from code tokens, their spans kept (docs/METHODS.md 1).
    pub comments: &'static [&'static str],
    /// Extra leaves that are neither code tokens nor comments.
    pub ignored_leaves: &'static [&'static str],
    /// String-like nodes collapsed into ONE code token of kind `string`.
    pub collapsed_strings: &'static [&'static str],
    /// Leaf kinds whose category is `literal`.
    pub literals: &'static [&'static str],
    /// Leaf kinds whose category is `identifier`.
    pub identifiers: &'static [&'static str],
    /// Leaf kinds that are keywords though not spelled as words (Java's `@interface`,
    /// `non-sealed`).
    pub keyword_kinds: &'static [&'static str],
    /// Identifier leaves (kind, text) that are keywords all the same.
    pub keyword_identifiers: &'static [(&'static str, &'static str)],
    /// Parents in which `<` and `>` are delimiters (type arguments), not operators.
    pub angle_bracket_parents: &'static [&'static str],
    /// Node kinds of a function, as a corpus cuts a file into snippets.
    pub functions: &'static [&'static str],
    /// Nodes the study's grammar did not have: `(kind, parent, grandparent)`.
    pub study_transparent: fn(&str, &str, &str) -> bool,
    /// Did the study's grammar give a string literal quote children (a non-leaf `string`)?
    pub study_string_has_quotes: bool,
    /// Every wrapper a snippet may be parsed in (`(before, after)`), in trying order.
    pub wrappers: &'static [(&'static str, &'static str)],
    /// The wrappers worth trying for a source whose own parse is `tree` (none: it parses
    /// as it is).
    pub wrappers_for: fn(&tree_sitter::Tree, &str) -> Vec<(&'static str, &'static str)>,
    /// The identifier-role context of a tree (`roles/<language>.rs`).
    pub roles: fn(&Arena) -> Box<dyn RoleContext>,
    /// The per-language rules of both data-flow graphs (`dfg/<language>.rs`).
    pub dfg: &'static DfgRules,
    /// The study's comment and docstring removal (`clean/<language>.rs`).
    pub clean: fn(&str) -> Result<String, CleanError>,
    /// AST-Probe's comment and docstring removal (`clean/<language>.rs`; `probe --probe
    /// ast --protocol paper`).
    pub clean_astprobe: fn(&str) -> Result<String, CleanError>,
    /// The renaming twin's scope analysis (`rewrite/<language>.rs`): the tree's root, its
    /// text, the snippet's byte region in it.
    pub rewrite_scopes: fn(tree_sitter::Node<'_>, &[u8], (usize, usize)) -> Resolved,
}

/// Signs of a language in a line of text, for [`Language::from_text`]: a line scores 1
/// when it ends with one of `line_ends` or equals one of `lines`, 2 for each of `words`
/// it starts with or has after a space, and 1 when it starts with one of `comments`.
pub(crate) struct TextCues {
    pub line_ends: &'static [&'static str],
    pub lines: &'static [&'static str],
    pub words: &'static [&'static str],
    pub comments: &'static [&'static str],
}

impl TextCues {
    /// The score of one trimmed, non-empty line.
    fn score(&self, l: &str) -> i64 {
        let mut n = 0;
        if self.line_ends.iter().any(|e| l.ends_with(e)) || self.lines.contains(&l) {
            n += 1;
        }
        for w in self.words {
            if l.starts_with(w) || l.contains(&format!(" {w}")) {
                n += 2;
            }
        }
        if self.comments.iter().any(|c| l.starts_with(c)) {
            n += 1;
        }
        n
    }
}

impl Language {
    /// All supported languages, in display order.
    pub const ALL: [Language; 2] = [Language::Python, Language::Java];

    /// This language's rules.
    pub(crate) fn rules(&self) -> &'static LanguageRules {
        match self {
            Language::Python => &python::RULES,
            Language::Java => &java::RULES,
        }
    }

    /// Guess the language from a file extension (`.py`, `.pyi`, `.pyw`, `.java`).
    pub fn from_path(path: &Path) -> Option<Language> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Language::ALL
            .into_iter()
            .find(|l| l.rules().extensions.contains(&ext.as_str()))
    }

    /// Guess the language of a text whose file name does not say (a `.txt`, stdin):
    /// Java when its lines look like Java (ending in `;`, `{` or `}`; `public`,
    /// `import java.`, `System.`) more than like Python (ending in `:`; `def`, `elif`,
    /// `self.`, `from x import`), else Python: each language's [`TextCues`] scored over
    /// the lines, the first language of [`Language::ALL`] with the highest score. Reads at
    /// most the first 64 KiB.
    pub fn from_text(text: &str) -> Language {
        let mut end = text.len().min(64 << 10);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let mut scores = [0i64; Language::ALL.len()];
        for line in text[..end].lines() {
            let l = line.trim();
            if l.is_empty() {
                continue;
            }
            for (s, lang) in scores.iter_mut().zip(Language::ALL) {
                *s += lang.rules().text_cues.score(l);
            }
        }
        let mut best = 0;
        for (i, &s) in scores.iter().enumerate() {
            if s > scores[best] {
                best = i;
            }
        }
        Language::ALL[best]
    }

    /// Parse a language name as typed by a user (`python`, `py`, `java`; case-insensitive).
    pub fn from_name(name: &str) -> Result<Language, SyntaxError> {
        let n = name.trim().to_ascii_lowercase();
        Language::ALL
            .into_iter()
            .find(|l| l.rules().name == n || l.rules().aliases.contains(&n.as_str()))
            .ok_or_else(|| SyntaxError::UnknownLanguage(name.to_string()))
    }

    /// The canonical lowercase name (`"python"` or `"java"`).
    pub fn name(&self) -> &'static str {
        self.rules().name
    }

    /// The tree-sitter grammar for this language.
    pub(crate) fn grammar(&self) -> tree_sitter::Language {
        (self.rules().grammar)()
    }

    /// Node kind and field names of the grammar with a `'static` lifetime (tree-sitter's
    /// API ties them to the tree; the grammar's tables are copied once per process).
    pub(crate) fn names(&self) -> &'static GrammarNames {
        self.rules()
            .names
            .get_or_init(|| GrammarNames::new(&self.grammar()))
    }

    /// Comment node kinds: excluded from code tokens, their spans kept (docs/METHODS.md 1).
    pub(crate) fn is_comment(&self, kind: &str) -> bool {
        self.rules().comments.contains(&kind)
    }

    /// Extra leaves that are neither code tokens nor comments (Python's `\` line
    /// continuation).
    pub(crate) fn is_ignored_leaf(&self, kind: &str) -> bool {
        self.rules().ignored_leaves.contains(&kind)
    }

    /// String-like nodes collapsed into ONE code token of kind `string` (docs/METHODS.md 1).
    /// Python f-strings are `string` nodes too, so an f-string with its interpolations is
    /// one token. Java text blocks are `string_literal` in 0.23 (`text_block` in other
    /// grammar versions); a Java `character_literal` is a leaf already and is renamed
    /// `string` like the others (docs/METHODS.md 1: "Same for Java string/char/text-block").
    pub(crate) fn is_collapsed_string(&self, kind: &str) -> bool {
        self.rules().collapsed_strings.contains(&kind)
    }

    /// Leaf kinds whose category is `literal`: numbers, strings, booleans, None/null.
    /// Also string pieces that survive outside a `string` node in broken code.
    pub(crate) fn is_literal_kind(&self, kind: &str) -> bool {
        self.rules().literals.contains(&kind)
    }

    /// Leaf kinds whose category is `identifier` (docs/METHODS.md 1).
    pub(crate) fn is_identifier_kind(&self, kind: &str) -> bool {
        self.rules().identifiers.contains(&kind)
    }

    /// Nodes of today's grammar that the study's grammar (about 2022) did not have,
    /// their children being children of the parent then (see each language's
    /// `study_transparent`).
    pub(crate) fn study_transparent(&self, kind: &str, parent: &str, grandparent: &str) -> bool {
        (self.rules().study_transparent)(kind, parent, grandparent)
    }

    /// Did the study's grammar give a string literal quote children (a non-leaf
    /// `string`)? Python: yes (`"` leaves, escape sequences, interpolations), which is why
    /// the study's motif code gives a string incoming edges only. Java's grammar of the
    /// time had `string_literal` as one leaf.
    pub(crate) fn study_string_has_quotes(&self) -> bool {
        self.rules().study_string_has_quotes
    }

    /// File extensions, for file pickers.
    pub fn extensions(&self) -> &'static [&'static str] {
        self.rules().extensions
    }

    /// Node kinds of a function, as a corpus cuts a file into snippets (Python
    /// `function_definition`; Java methods and constructors).
    pub(crate) fn function_kinds(&self) -> &'static [&'static str] {
        self.rules().functions
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
                include_str!("../../../assets/samples/python/word_count.py"),
            ),
            (
                Language::Python,
                include_str!("../../../assets/samples/python/binary_search.py"),
            ),
            (
                Language::Python,
                include_str!("../../../assets/samples/python/inventory.py"),
            ),
            (
                Language::Python,
                include_str!("../../../assets/samples/python/async_fetch.py"),
            ),
            (
                Language::Java,
                include_str!("../../../assets/samples/java/BinarySearch.java"),
            ),
            (
                Language::Java,
                include_str!("../../../assets/samples/java/Inventory.java"),
            ),
            (
                Language::Java,
                include_str!("../../../assets/samples/java/Shapes.java"),
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
