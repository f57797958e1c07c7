//! Parsing: tree-sitter tree -> code tokens with category, role and depth.
//!
//! Role: runs tree-sitter under [`Limits`], picks a wrapper for bare Java snippets and
//! pasted Python methods,
//! flattens the tree into an [`Arena`] (O(1) parent/child access for the graph code),
//! extracts code tokens (METHODS.md 1), classifies them, assigns identifier roles, lists
//! ERROR/MISSING nodes, then hands over to `relations.rs` for the graphs.
//!
//! Token rules (METHODS.md 1, with codescope's documented choices):
//! - a code token is a leaf (`child_count == 0`) of non-zero width, not a comment and not
//!   Python's `line_continuation`; zero-width leaves are tree-sitter MISSING nodes and
//!   appear in `errors` only;
//! - a string node (Python `string`, incl. f-strings with their interpolations and format
//!   specs; Java `string_literal`, incl. text blocks) is ONE token of kind `string`, its
//!   depth that of the string node; an implicit concatenation `"a" "b"` is two tokens;
//! - categories are decided in this order: collapsed strings and literal kinds (numbers,
//!   strings, `True`/`False`/`None`, `true`/`false`/`null`, `...`, chars) -> `literal`;
//!   identifier kinds (Python `identifier`; Java `identifier`, `type_identifier`,
//!   `field_identifier`) -> `identifier`, except Java's `var` type -> `keyword`;
//!   word-like text (letters, digits, `_`, starting with a letter or `_`: `def`, `in`,
//!   `not`, `lambda`, `public`, `int`, `void`, `this`, `super`, `_`, plus Java
//!   `@interface` and `non-sealed`) -> `keyword`; `( ) [ ] { } , ; : .` and Java generic
//!   angle brackets (`<`/`>` under `type_arguments`/`type_parameters`) -> `delimiter`;
//!   every other symbol (`= + -> :: := ** @ ? ...` and `* /` separators) -> `operator`.
//!   So `.` and `:` are always delimiters (member access, slices, blocks, annotations,
//!   Java's ternary `:` and labels), and `::` is an operator.
//!
//! Roles: every identifier gets `"<binding>:<role>"` where binding is `definition` (the
//! occurrence binds or assigns the name) or `use`; see [`Role`] for the role list and
//! [`IdentRole`] for the string form. Non-identifiers have no role.

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::lang::Language;
use super::relations;
use super::{Syntax, SyntaxError};

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
            max_bytes: 1_000_000,
            timeout: Duration::from_secs(2),
        }
    }
}

/// Fine category of a code token (METHODS.md 1, the study's split extended).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// Word-like syntax: `def`, `return`, `in`, `not`, `public`, `int`, `void`, `this`.
    Keyword,
    /// Symbols that are not delimiters: `= + == += -> :: := ** @ ? ...`.
    Operator,
    /// `( ) [ ] { } , ; : .` and Java generic angle brackets.
    Delimiter,
    /// Numbers, strings (one token each), booleans, `None`/`null`, `...` (Python).
    Literal,
    /// Identifier leaves.
    Identifier,
}

impl Category {
    /// All categories, in display order.
    pub const ALL: [Category; 5] = [
        Category::Keyword,
        Category::Operator,
        Category::Delimiter,
        Category::Literal,
        Category::Identifier,
    ];

    /// The study's coarse split: identifiers vs everything else ("syntactic").
    pub fn coarse(&self) -> Coarse {
        match self {
            Category::Identifier => Coarse::Identifier,
            _ => Coarse::Syntactic,
        }
    }

    /// Lowercase name, as serialized.
    pub fn name(&self) -> &'static str {
        match self {
            Category::Keyword => "keyword",
            Category::Operator => "operator",
            Category::Delimiter => "delimiter",
            Category::Literal => "literal",
            Category::Identifier => "identifier",
        }
    }

    /// ANSI 256-colour index used by [`Syntax::render_table`].
    pub fn ansi256(&self) -> u8 {
        match self {
            Category::Keyword => 204,
            Category::Operator => 215,
            Category::Delimiter => 245,
            Category::Literal => 114,
            Category::Identifier => 75,
        }
    }
}

/// Coarse category: the study's identifier / syntactic split (literals are syntactic).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Coarse {
    /// Keywords, operators, delimiters and literals.
    Syntactic,
    /// Identifiers.
    Identifier,
}

/// What an identifier names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A function: Python `def` outside a class, or a called name `f(...)`.
    Function,
    /// A method: `def` in a class body, Java methods and constructors, `obj.m(...)`,
    /// the name after `::` in a Java method reference.
    Method,
    /// A class (Python class, Java class/interface/enum/record/annotation type).
    Class,
    /// A parameter (functions, lambdas, Java record components, `*args`, `**kw`).
    Parameter,
    /// A local or global variable; the default for uses.
    Variable,
    /// An attribute / field: `obj.attr`, Java `this.f`, field declarations, enum
    /// constants, Python class-body assignments.
    Attribute,
    /// A type name: Python annotations and type parameters, Java `type_identifier`.
    Type,
    /// A keyword-argument name (`f(key=v)`, Python `case C(key=p)`, Java annotation
    /// element `@A(key = v)`).
    KeywordArgument,
    /// A module path component (`import a.b`, `from a import`, Java package/import).
    Module,
    /// A name brought in by `from m import name` / the last part of a Java import.
    Import,
    /// A Java statement label (`outer:` / `break outer`).
    Label,
    /// A Python decorator name or a Java annotation name.
    Decorator,
}

impl Role {
    /// snake_case name, as used in role strings.
    pub fn name(&self) -> &'static str {
        match self {
            Role::Function => "function",
            Role::Method => "method",
            Role::Class => "class",
            Role::Parameter => "parameter",
            Role::Variable => "variable",
            Role::Attribute => "attribute",
            Role::Type => "type",
            Role::KeywordArgument => "keyword_argument",
            Role::Module => "module",
            Role::Import => "import",
            Role::Label => "label",
            Role::Decorator => "decorator",
        }
    }

    const ALL: [Role; 12] = [
        Role::Function,
        Role::Method,
        Role::Class,
        Role::Parameter,
        Role::Variable,
        Role::Attribute,
        Role::Type,
        Role::KeywordArgument,
        Role::Module,
        Role::Import,
        Role::Label,
        Role::Decorator,
    ];
}

/// Whether an identifier occurrence binds (defines/assigns) its name or uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Binding {
    /// Declarations, parameters, assignment / loop / `with` / `except` / pattern targets,
    /// augmented assignments and `i++` (they write), import aliases.
    Definition,
    /// Every other occurrence.
    Use,
}

/// The role of an identifier token, written `"<binding>:<role>"` in
/// [`CodeToken::role`], e.g. `"definition:function"`, `"use:variable"`,
/// `"use:attribute"`, `"definition:parameter"`, `"use:keyword_argument"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IdentRole {
    /// Definition or use.
    pub binding: Binding,
    /// What the name names.
    pub role: Role,
}

impl IdentRole {
    pub(crate) const fn def(role: Role) -> Self {
        IdentRole {
            binding: Binding::Definition,
            role,
        }
    }
    pub(crate) const fn use_(role: Role) -> Self {
        IdentRole {
            binding: Binding::Use,
            role,
        }
    }
    /// True for `definition:*`.
    pub fn is_definition(&self) -> bool {
        self.binding == Binding::Definition
    }
}

impl std::fmt::Display for IdentRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let b = match self.binding {
            Binding::Definition => "definition",
            Binding::Use => "use",
        };
        write!(f, "{b}:{}", self.role.name())
    }
}

impl std::str::FromStr for IdentRole {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (b, r) = s.split_once(':').ok_or_else(|| format!("bad role `{s}`"))?;
        let binding = match b {
            "definition" => Binding::Definition,
            "use" => Binding::Use,
            _ => return Err(format!("bad binding in role `{s}`")),
        };
        let role = Role::ALL
            .into_iter()
            .find(|x| x.name() == r)
            .ok_or_else(|| format!("bad role `{s}`"))?;
        Ok(IdentRole { binding, role })
    }
}

/// One code token (METHODS.md 1). Serializes as
/// `{text, start, end, kind, category, coarse, role, depth}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeToken {
    /// `&source[start..end]`.
    pub text: String,
    /// Byte offset of the first byte.
    pub start: usize,
    /// Byte offset one past the last byte.
    pub end: usize,
    /// tree-sitter node kind (`identifier`, `def`, `(`, `integer`, ...); `string` for
    /// collapsed string literals.
    pub kind: String,
    /// Fine category.
    pub category: Category,
    /// Coarse category (`category.coarse()`).
    pub coarse: Coarse,
    /// `"<definition|use>:<role>"` for identifiers (see [`IdentRole`]), `None` otherwise.
    pub role: Option<String>,
    /// Depth of the leaf in the tree (root = 0; for a collapsed string, the string node).
    pub depth: usize,
}

impl CodeToken {
    /// The parsed role, for identifiers.
    pub fn ident_role(&self) -> Option<IdentRole> {
        self.role.as_deref().and_then(|r| r.parse().ok())
    }
}

/// A parse problem: an ERROR node (unexpected text) or a MISSING node (inserted by
/// tree-sitter's error recovery, zero width).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParseIssue {
    /// Byte offset in the source.
    pub start: usize,
    /// Byte offset one past the end (`== start` for MISSING).
    pub end: usize,
    /// Human-readable description, e.g. ``syntax error near `= 2` `` or ``missing `)` ``.
    pub message: String,
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

    let mut b = Builder {
        lang,
        text: &text,
        region,
        arena: Arena::default(),
        tokens: Vec::new(),
        comments: Vec::new(),
    };
    b.build(&tree);
    let Builder {
        arena,
        tokens: raw,
        comments,
        ..
    } = b;

    // Rebase depths so that the wrapper's body node is the root (depth 0).
    let container_id = if wrapped {
        arena.container(prefix, prefix + source.trim_end().len())
    } else {
        0
    };
    let base = arena.nodes[container_id as usize].depth;

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
            .then(|| match lang {
                Language::Python => python_role(&arena, r.node),
                Language::Java => java_role(&arena, r.node),
            })
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
    let tree_info = relations::TreeInfo::new(&arena, container_id, base, token_node);
    let graphs = relations::build_graphs(&arena, &tokens, &tree_info, lang, container_id)?;

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

const CLASS_WRAP: (&str, &str) = ("class __W {\n", "\n}\n");
const METHOD_WRAP: (&str, &str) = ("class __W { void __m() {\n", "\n}}\n");
const PY_CLASS_WRAP: (&str, &str) = ("class __W:\n", "\n");
const PY_CLASS_WRAP_INDENT: (&str, &str) = ("class __W:\n    ", "\n");

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

/// Parse the source, trying Java wrappers when it has no top-level type declaration.
/// Returns (parsed text, byte offset of the source inside it, tree, wrapped).
fn choose_parse(
    parser: &mut tree_sitter::Parser,
    source: &str,
    lang: Language,
    deadline: Instant,
    limits: &Limits,
) -> Result<(String, usize, tree_sitter::Tree, bool), SyntaxError> {
    let original = run_parser(parser, source, deadline, limits)?;
    let candidates: Vec<(&str, &str)> = match lang {
        _ if source.trim().is_empty() => Vec::new(),
        Language::Java if !java_has_top_level_decl(&original) => vec![CLASS_WRAP, METHOD_WRAP],
        Language::Python if python_looks_like_methods(&original, source) => {
            // Methods pasted out of a class: give them their class back, so `self` is a
            // receiver. The first line's indentation decides the wrapper's. A first line
            // at column 0 is re-indented (by 4, the first line only) just when the body
            // lines are indented deeper than that (a def copied without its indentation,
            // body still indented): for a method dedented as a whole, as corpus
            // extraction gives it, the one-line indent would leave the body outside the
            // def and break its data flow.
            let indent = |l: &str| {
                l.chars()
                    .take_while(|c| *c == ' ' || *c == '\t')
                    .map(|c| if c == '\t' { 8 } else { 1 })
                    .sum::<usize>()
            };
            let mut lines = source.lines().filter(|l| !l.trim().is_empty());
            let first = lines.next().unwrap_or("");
            let body: Vec<usize> = lines.map(indent).collect();
            if indent(first) > 0 {
                vec![PY_CLASS_WRAP]
            } else if body.first().is_some_and(|&b| b > 4) && body.iter().all(|&b| b >= 4) {
                vec![PY_CLASS_WRAP_INDENT]
            } else {
                Vec::new()
            }
        }
        _ => Vec::new(),
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

/// Python source made only of function definitions, at least one of which takes
/// `self` or `cls` first: methods copied out of a class.
fn python_looks_like_methods(tree: &tree_sitter::Tree, source: &str) -> bool {
    let root = tree.root_node();
    let mut c = root.walk();
    let mut any_method = false;
    for n in root.named_children(&mut c) {
        let func = match n.kind() {
            "comment" => continue,
            "function_definition" => n,
            "decorated_definition" => match n.child_by_field_name("definition") {
                Some(d) => d,
                None => return false,
            },
            _ => return false,
        };
        let first = func
            .child_by_field_name("parameters")
            .and_then(|p| p.named_child(0))
            .map(|p| match p.kind() {
                "typed_parameter" => p.named_child(0).unwrap_or(p),
                _ => p,
            });
        if let Some(p) = first {
            let name = source.get(p.start_byte()..p.end_byte()).unwrap_or("");
            any_method |= matches!(name, "self" | "cls");
        }
    }
    any_method
}

/// Does a Java tree declare a type (or package/imports) at top level? Then it is a file.
fn java_has_top_level_decl(tree: &tree_sitter::Tree) -> bool {
    let root = tree.root_node();
    let mut c = root.walk();
    let found = root.children(&mut c).any(|n| {
        matches!(
            n.kind(),
            "class_declaration"
                | "interface_declaration"
                | "enum_declaration"
                | "record_declaration"
                | "annotation_type_declaration"
                | "package_declaration"
                | "import_declaration"
                | "module_declaration"
        )
    });
    found
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

// ---------------------------------------------------------------------------------------
// Arena
// ---------------------------------------------------------------------------------------

/// Sentinel for "no node" / "no token".
pub(crate) const NONE: u32 = u32::MAX;

/// One tree node, flattened. Collapsed strings and comments are arena leaves (their
/// insides are not represented).
#[derive(Debug, Clone)]
pub(crate) struct ANode {
    pub kind: &'static str,
    pub field: Option<&'static str>,
    pub start: usize,
    pub end: usize,
    pub parent: u32,
    pub depth: u32,
    first: u32,
    len: u32,
    /// Index into the token list, or [`NONE`].
    pub token: u32,
}

/// The syntax tree in preorder, with children stored contiguously.
#[derive(Debug, Default, Clone)]
pub(crate) struct Arena {
    pub nodes: Vec<ANode>,
    kids: Vec<u32>,
}

impl Arena {
    pub fn children(&self, n: u32) -> &[u32] {
        let a = &self.nodes[n as usize];
        &self.kids[a.first as usize..(a.first + a.len) as usize]
    }
    pub fn kind(&self, n: u32) -> &'static str {
        self.nodes[n as usize].kind
    }
    pub fn field(&self, n: u32) -> Option<&'static str> {
        self.nodes[n as usize].field
    }
    pub fn parent(&self, n: u32) -> Option<u32> {
        let p = self.nodes[n as usize].parent;
        (p != NONE).then_some(p)
    }
    pub fn parent_kind(&self, n: u32) -> &'static str {
        self.parent(n).map_or("", |p| self.kind(p))
    }
    pub fn is_leaf(&self, n: u32) -> bool {
        self.nodes[n as usize].len == 0
    }
    pub fn token(&self, n: u32) -> Option<usize> {
        let t = self.nodes[n as usize].token;
        (t != NONE).then_some(t as usize)
    }
    pub fn child_by_field(&self, n: u32, field: &str) -> Option<u32> {
        self.children(n)
            .iter()
            .copied()
            .find(|&c| self.field(c) == Some(field))
    }
    pub fn children_by_field<'a>(
        &'a self,
        n: u32,
        field: &'a str,
    ) -> impl Iterator<Item = u32> + 'a {
        self.children(n)
            .iter()
            .copied()
            .filter(move |&c| self.field(c) == Some(field))
    }
    /// First child of kind `kind`.
    pub fn child_of_kind(&self, n: u32, kind: &str) -> Option<u32> {
        self.children(n)
            .iter()
            .copied()
            .find(|&c| self.kind(c) == kind)
    }
    /// The wrapper's body node for a source at `[start, end)` of the parsed text: the
    /// deepest inner node that begins inside the wrapper prefix and covers the source.
    /// For `class __W {` that is the `class_body`, for the method wrapper the `block`,
    /// for Python's `class __W:` the class's body `block`.
    fn container(&self, start: usize, end: usize) -> u32 {
        let mut node = 0u32;
        'down: loop {
            for &c in self.children(node) {
                let cn = &self.nodes[c as usize];
                if cn.start < start && cn.end >= end && !self.is_leaf(c) {
                    node = c;
                    continue 'down;
                }
            }
            // A Python class body (`block`) starts at its first statement, inside the
            // source: step into it explicitly.
            if self.kind(node) == "class_definition" {
                if let Some(b) = self.child_by_field(node, "body") {
                    return b;
                }
            }
            return node;
        }
    }
}

struct RawToken {
    node: u32,
    start: usize,
    end: usize,
    kind: &'static str,
    collapsed: bool,
}

struct Builder<'a> {
    lang: Language,
    text: &'a str,
    region: (usize, usize),
    arena: Arena,
    tokens: Vec<RawToken>,
    comments: Vec<(usize, usize)>,
}

impl Builder<'_> {
    /// One preorder walk with a cursor (no recursion: deep trees cannot overflow).
    fn build(&mut self, tree: &tree_sitter::Tree) {
        let names = self.lang.names();
        let mut cursor = tree.walk();
        let mut stack: Vec<u32> = Vec::new();
        loop {
            let node = cursor.node();
            let id = self.arena.nodes.len() as u32;
            let kind = names.kind(node.kind_id());
            debug_assert_eq!(kind, node.kind());
            let (start, end) = (node.start_byte(), node.end_byte());
            let collapsed = self.lang.is_collapsed_string(kind);
            let comment = self.lang.is_comment(kind);
            let leaf = node.child_count() == 0 || collapsed || comment;
            let in_region = start >= self.region.0 && end <= self.region.1;
            let mut token = NONE;
            if leaf && in_region {
                if comment {
                    self.comments.push((start, end));
                } else if end > start
                    && !self.lang.is_ignored_leaf(kind)
                    && self.text.get(start..end).is_some()
                {
                    token = self.tokens.len() as u32;
                    self.tokens.push(RawToken {
                        node: id,
                        start,
                        end,
                        kind,
                        collapsed,
                    });
                }
            }
            self.arena.nodes.push(ANode {
                kind,
                field: cursor.field_id().map(|f| names.field(f.get())),
                start,
                end,
                parent: stack.last().copied().unwrap_or(NONE),
                depth: stack.len() as u32,
                first: 0,
                len: 0,
                token,
            });
            if !leaf && cursor.goto_first_child() {
                stack.push(id);
                continue;
            }
            loop {
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() {
                    self.link_children();
                    return;
                }
                stack.pop();
            }
        }
    }

    /// Fill the contiguous child lists (preorder keeps siblings in source order).
    fn link_children(&mut self) {
        let nodes = &mut self.arena.nodes;
        let n = nodes.len();
        let mut count = vec![0u32; n];
        for node in nodes.iter() {
            if node.parent != NONE {
                count[node.parent as usize] += 1;
            }
        }
        let mut next = 0u32;
        for (i, node) in nodes.iter_mut().enumerate() {
            node.first = next;
            node.len = count[i];
            next += count[i];
        }
        let mut fill: Vec<u32> = nodes.iter().map(|x| x.first).collect();
        let mut kids = vec![0u32; next as usize];
        for (i, node) in nodes.iter().enumerate() {
            if node.parent != NONE {
                let p = node.parent as usize;
                kids[fill[p] as usize] = i as u32;
                fill[p] += 1;
            }
        }
        self.arena.kids = kids;
    }
}

// ---------------------------------------------------------------------------------------
// Categories
// ---------------------------------------------------------------------------------------

const DELIMITERS: [&str; 10] = ["(", ")", "[", "]", "{", "}", ",", ";", ":", "."];

/// Fine category of a leaf (rules in the module docs).
pub(crate) fn categorize(
    lang: Language,
    kind: &str,
    text: &str,
    collapsed: bool,
    parent_kind: &str,
) -> Category {
    if collapsed || lang.is_literal_kind(kind) {
        return Category::Literal;
    }
    if lang.is_identifier_kind(kind) {
        // `var` is a reserved type name since Java 10: a keyword, not a type.
        if lang == Language::Java && kind == "type_identifier" && text == "var" {
            return Category::Keyword;
        }
        return Category::Identifier;
    }
    if matches!(kind, "@interface" | "non-sealed") {
        return Category::Keyword;
    }
    let mut chars = text.chars();
    let first = chars.next().unwrap_or(' ');
    if (first.is_alphabetic() || first == '_')
        && text.chars().all(|c| c.is_alphanumeric() || c == '_')
    {
        return Category::Keyword;
    }
    if first.is_ascii_digit() {
        return Category::Literal;
    }
    if DELIMITERS.contains(&text) {
        return Category::Delimiter;
    }
    if lang == Language::Java
        && matches!(text, "<" | ">")
        && matches!(parent_kind, "type_arguments" | "type_parameters")
    {
        return Category::Delimiter;
    }
    Category::Operator
}

// ---------------------------------------------------------------------------------------
// Roles
// ---------------------------------------------------------------------------------------

/// Kinds that only regroup assignment targets (`a, b = ...`, `[a, *b] = ...`).
pub(crate) const PY_TARGET_CONTAINERS: [&str; 9] = [
    "pattern_list",
    "tuple_pattern",
    "list_pattern",
    "list_splat_pattern",
    "tuple",
    "list",
    "expression_list",
    "parenthesized_expression",
    "list_splat",
];

/// If `n` sits in a Python binding target, the binding statement node
/// (`assignment`, `augmented_assignment`, `for_statement`, `for_in_clause`).
pub(crate) fn python_target_stmt(a: &Arena, mut n: u32) -> Option<u32> {
    loop {
        let p = a.parent(n)?;
        let pk = a.kind(p);
        if PY_TARGET_CONTAINERS.contains(&pk) {
            n = p;
            continue;
        }
        let is_target = matches!(
            pk,
            "assignment" | "augmented_assignment" | "for_statement" | "for_in_clause"
        ) && a.field(n) == Some("left");
        return is_target.then_some(p);
    }
}

/// Is this Python `function_definition` directly in a class body?
pub(crate) fn python_is_method(a: &Arena, func: u32) -> bool {
    let mut p = a.parent(func);
    if p.is_some_and(|p| a.kind(p) == "decorated_definition") {
        p = p.and_then(|p| a.parent(p));
    }
    p.filter(|&p| a.kind(p) == "block")
        .and_then(|b| a.parent(b))
        .is_some_and(|c| a.kind(c) == "class_definition")
}

/// Is this Python statement-level node directly in a class body?
fn python_in_class_body(a: &Arena, stmt: u32) -> bool {
    let mut p = a.parent(stmt);
    if p.is_some_and(|p| a.kind(p) == "expression_statement") {
        p = p.and_then(|p| a.parent(p));
    }
    p.filter(|&p| a.kind(p) == "block")
        .and_then(|b| a.parent(b))
        .is_some_and(|c| a.kind(c) == "class_definition")
}

fn python_import_role(a: &Arena, n: u32) -> Option<IdentRole> {
    let p = a.parent(n)?;
    let pk = a.kind(p);
    if pk == "aliased_import" && a.field(n) == Some("alias") {
        return Some(match a.parent_kind(p) {
            "import_statement" => IdentRole::def(Role::Module),
            _ => IdentRole::def(Role::Import),
        });
    }
    if pk != "dotted_name" {
        return None;
    }
    let dp = a.parent(p)?;
    let first = a.children(p).first() == Some(&n);
    Some(match (a.kind(dp), a.field(p)) {
        ("import_statement", _) if first => IdentRole::def(Role::Module),
        ("import_statement", _) => IdentRole::use_(Role::Module),
        ("aliased_import", _) => match a.parent_kind(dp) {
            "import_statement" => IdentRole::use_(Role::Module),
            _ => IdentRole::use_(Role::Import),
        },
        ("import_from_statement", Some("module_name")) => IdentRole::use_(Role::Module),
        ("import_from_statement", _) => IdentRole::def(Role::Import),
        ("relative_import", _) => IdentRole::use_(Role::Module),
        ("future_import_statement", _) => IdentRole::use_(Role::Import),
        _ => return None,
    })
}

/// Is `n` part of a decorator's head (`@a.b(...)`, not the arguments)?
fn in_decorator_head(a: &Arena, mut n: u32) -> bool {
    while let Some(p) = a.parent(n) {
        match a.kind(p) {
            "decorator" => return true,
            "attribute" => n = p,
            "call" if a.field(n) == Some("function") => n = p,
            _ => return false,
        }
    }
    false
}

/// Python type context: `Some(true)` for a type definition (type parameter of a
/// def/class, the name of a `type X = ...` alias), `Some(false)` for a type use.
fn python_type_role(a: &Arena, n: u32) -> Option<bool> {
    let mut in_type = false;
    let mut cur = n;
    let mut first_type: Option<u32> = None;
    while let Some(p) = a.parent(cur) {
        match a.kind(p) {
            "type" => {
                in_type = true;
                first_type.get_or_insert(p);
                if a.field(p) == Some("left") && a.parent_kind(p) == "type_alias_statement" {
                    // The alias name is the first identifier of the left side.
                    let first_ident = first_leaf_ident(a, p);
                    return Some(first_ident == Some(n));
                }
            }
            "type_parameter"
                if a.field(p) == Some("type_parameters")
                    && matches!(a.parent_kind(p), "function_definition" | "class_definition") =>
            {
                return Some(true);
            }
            "block"
            | "module"
            | "expression_statement"
            | "function_definition"
            | "class_definition" => break,
            _ => {}
        }
        cur = p;
    }
    in_type.then_some(false)
}

fn first_leaf_ident(a: &Arena, mut n: u32) -> Option<u32> {
    while !a.is_leaf(n) {
        n = *a.children(n).first()?;
    }
    (a.kind(n) == "identifier").then_some(n)
}

/// Role of a Python identifier leaf `n`.
pub(crate) fn python_role(a: &Arena, n: u32) -> IdentRole {
    if let Some(r) = python_import_role(a, n) {
        return r;
    }
    if in_decorator_head(a, n) {
        return IdentRole::use_(Role::Decorator);
    }
    if let Some(def) = python_type_role(a, n) {
        return if def {
            IdentRole::def(Role::Type)
        } else {
            IdentRole::use_(Role::Type)
        };
    }
    let Some(p) = a.parent(n) else {
        return IdentRole::use_(Role::Variable);
    };
    let f = a.field(n);
    match (a.kind(p), f) {
        ("function_definition", Some("name")) => {
            if python_is_method(a, p) {
                IdentRole::def(Role::Method)
            } else {
                IdentRole::def(Role::Function)
            }
        }
        ("class_definition", Some("name")) => IdentRole::def(Role::Class),
        ("keyword_argument", Some("name")) => IdentRole::use_(Role::KeywordArgument),
        ("parameters" | "lambda_parameters", _) => IdentRole::def(Role::Parameter),
        ("default_parameter" | "typed_default_parameter", Some("name")) => {
            IdentRole::def(Role::Parameter)
        }
        ("typed_parameter", None) => IdentRole::def(Role::Parameter),
        ("list_splat_pattern" | "dictionary_splat_pattern", _)
            if matches!(
                a.parent_kind(p),
                "parameters" | "lambda_parameters" | "typed_parameter"
            ) =>
        {
            IdentRole::def(Role::Parameter)
        }
        ("attribute", Some("attribute")) => {
            if a.field(p) == Some("function") && a.parent_kind(p) == "call" {
                IdentRole::use_(Role::Method)
            } else if python_target_stmt(a, p).is_some() {
                IdentRole::def(Role::Attribute)
            } else {
                IdentRole::use_(Role::Attribute)
            }
        }
        ("call", Some("function")) => IdentRole::use_(Role::Function),
        ("global_statement" | "nonlocal_statement", _) => IdentRole::use_(Role::Variable),
        ("keyword_pattern", _) if a.children(p).first() == Some(&n) => {
            IdentRole::use_(Role::KeywordArgument)
        }
        ("as_pattern_target", _) | ("named_expression", Some("name")) => {
            IdentRole::def(Role::Variable)
        }
        ("as_pattern", _) => {
            // `except E as e` / `case P as p`: only the name after `as` is bound.
            let kids = a.children(p);
            let pos = kids.iter().position(|&c| c == n).unwrap_or(0);
            if kids[..pos].iter().any(|&c| a.kind(c) == "as") {
                IdentRole::def(Role::Variable)
            } else {
                IdentRole::use_(Role::Variable)
            }
        }
        ("splat_pattern", _) => IdentRole::def(Role::Variable),
        ("dotted_name", _) => {
            // Only case patterns reach here (imports were handled above).
            let kids = a.children(p);
            if a.parent_kind(p) == "class_pattern" {
                IdentRole::use_(Role::Type)
            } else if kids.len() == 1 {
                IdentRole::def(Role::Variable) // capture pattern
            } else if kids.first() == Some(&n) {
                IdentRole::use_(Role::Variable) // value pattern `Color.RED`
            } else {
                IdentRole::use_(Role::Attribute)
            }
        }
        _ => match python_target_stmt(a, n) {
            Some(stmt) if python_in_class_body(a, stmt) && a.kind(stmt) != "for_statement" => {
                IdentRole::def(Role::Attribute)
            }
            Some(_) => IdentRole::def(Role::Variable),
            None => IdentRole::use_(Role::Variable),
        },
    }
}

/// Is this Java node (a field access / identifier) written to?
pub(crate) fn java_is_target(a: &Arena, n: u32) -> bool {
    match a.parent(n) {
        Some(p) => {
            (a.kind(p) == "assignment_expression" && a.field(n) == Some("left"))
                || a.kind(p) == "update_expression"
        }
        None => false,
    }
}

/// Role of a Java identifier / type_identifier leaf `n`.
pub(crate) fn java_role(a: &Arena, n: u32) -> IdentRole {
    let Some(p) = a.parent(n) else {
        return IdentRole::use_(Role::Variable);
    };
    let pk = a.kind(p);
    // Annotations, packages and imports: climb through scoped names.
    let mut cur = n;
    while let Some(pp) = a
        .parent(cur)
        .filter(|&pp| a.kind(pp) == "scoped_identifier")
    {
        cur = pp;
    }
    if let Some(top) = a.parent(cur) {
        match a.kind(top) {
            "marker_annotation" | "annotation" if a.field(cur) == Some("name") => {
                return IdentRole::use_(Role::Decorator)
            }
            "package_declaration" => return IdentRole::use_(Role::Module),
            "import_declaration" => {
                // The last component (`List` in `import java.util.List;`) is imported.
                let is_last = n == cur || (a.field(n) == Some("name") && p == cur);
                let wildcard = a.child_of_kind(top, "asterisk").is_some();
                return if is_last && !wildcard {
                    IdentRole::def(Role::Import)
                } else {
                    IdentRole::use_(Role::Module)
                };
            }
            _ => {}
        }
    }
    if a.kind(n) == "type_identifier" {
        return if pk == "type_parameter" {
            IdentRole::def(Role::Type)
        } else {
            IdentRole::use_(Role::Type)
        };
    }
    let f = a.field(n);
    match (pk, f) {
        (
            "class_declaration"
            | "interface_declaration"
            | "enum_declaration"
            | "record_declaration"
            | "annotation_type_declaration",
            Some("name"),
        ) => IdentRole::def(Role::Class),
        (
            "method_declaration"
            | "constructor_declaration"
            | "compact_constructor_declaration"
            | "annotation_type_element_declaration",
            Some("name"),
        ) => IdentRole::def(Role::Method),
        ("formal_parameter", Some("name")) | ("receiver_parameter", _) => {
            IdentRole::def(Role::Parameter)
        }
        ("variable_declarator", Some("name")) => match a.parent_kind(p) {
            "field_declaration" | "constant_declaration" => IdentRole::def(Role::Attribute),
            "spread_parameter" => IdentRole::def(Role::Parameter),
            _ => IdentRole::def(Role::Variable),
        },
        ("catch_formal_parameter", Some("name"))
        | ("resource", Some("name"))
        | ("enhanced_for_statement", Some("name"))
        | ("instanceof_expression", Some("name"))
        | ("type_pattern", _)
        | ("record_pattern_component", _) => IdentRole::def(Role::Variable),
        ("inferred_parameters", _) | ("lambda_expression", Some("parameters")) => {
            IdentRole::def(Role::Parameter)
        }
        ("record_pattern", _) => IdentRole::use_(Role::Type),
        ("enum_constant", Some("name")) => IdentRole::def(Role::Attribute),
        ("method_invocation", Some("name")) => IdentRole::use_(Role::Method),
        ("field_access", Some("field")) => {
            if java_is_target(a, p) {
                IdentRole::def(Role::Attribute)
            } else {
                IdentRole::use_(Role::Attribute)
            }
        }
        ("method_reference", _) if a.children(p).first() != Some(&n) => {
            IdentRole::use_(Role::Method)
        }
        ("labeled_statement", _) => IdentRole::def(Role::Label),
        ("break_statement" | "continue_statement", _) => IdentRole::use_(Role::Label),
        ("element_value_pair", Some("key")) => IdentRole::use_(Role::KeywordArgument),
        ("assignment_expression", Some("left")) | ("update_expression", _) => {
            IdentRole::def(Role::Variable)
        }
        _ => IdentRole::use_(Role::Variable),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cat(lang: Language, kind: &str, text: &str) -> Category {
        categorize(lang, kind, text, false, "")
    }

    #[test]
    fn category_rules() {
        use Category::*;
        let py = Language::Python;
        let java = Language::Java;
        assert_eq!(cat(py, "def", "def"), Keyword);
        assert_eq!(cat(py, "not", "not"), Keyword);
        assert_eq!(cat(py, "true", "True"), Literal);
        assert_eq!(cat(py, "none", "None"), Literal);
        assert_eq!(cat(py, "integer", "0x1F"), Literal);
        assert_eq!(cat(py, "ellipsis", "..."), Literal);
        assert_eq!(cat(py, "identifier", "x"), Identifier);
        assert_eq!(cat(py, ".", "."), Delimiter);
        assert_eq!(cat(py, ":", ":"), Delimiter);
        assert_eq!(cat(py, "->", "->"), Operator);
        assert_eq!(cat(py, ":=", ":="), Operator);
        assert_eq!(cat(py, "@", "@"), Operator);
        assert_eq!(cat(java, "::", "::"), Operator);
        assert_eq!(cat(java, "void_type", "void"), Keyword);
        assert_eq!(cat(java, "int", "int"), Keyword);
        assert_eq!(cat(java, "this", "this"), Keyword);
        assert_eq!(cat(java, "null_literal", "null"), Literal);
        assert_eq!(cat(java, "type_identifier", "String"), Identifier);
        assert_eq!(cat(java, "type_identifier", "var"), Keyword);
        assert_eq!(cat(java, "field_identifier", "f"), Identifier);
        assert_eq!(cat(java, "@interface", "@interface"), Keyword);
        assert_eq!(
            categorize(java, "<", "<", false, "type_arguments"),
            Delimiter
        );
        assert_eq!(
            categorize(java, "<", "<", false, "binary_expression"),
            Operator
        );
        assert_eq!(categorize(py, "string_start", "\"", true, ""), Literal);
        assert_eq!(cat(py, "ERROR", "$"), Operator);
    }

    #[test]
    fn role_strings_round_trip() {
        for r in Role::ALL {
            for b in [IdentRole::def(r), IdentRole::use_(r)] {
                let s = b.to_string();
                assert_eq!(s.parse::<IdentRole>().unwrap(), b);
            }
        }
        assert_eq!(
            IdentRole::def(Role::KeywordArgument).to_string(),
            "definition:keyword_argument"
        );
        assert!("use".parse::<IdentRole>().is_err());
        assert!("use:nothing".parse::<IdentRole>().is_err());
    }

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
