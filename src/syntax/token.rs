//! Code tokens and what codescope says about each: fine and coarse category, identifier
//! role, the token record itself and parse problems (docs/METHODS.md 1).
//!
//! Category rules ([`categorize`], docs/METHODS.md 1 with codescope's documented choices):
//! categories are decided in this order: collapsed strings and literal kinds (numbers,
//! strings, `True`/`False`/`None`, `true`/`false`/`null`, `...`, chars) -> `literal`;
//! identifier kinds (Python `identifier`; Java `identifier`, `type_identifier`,
//! `field_identifier`) -> `identifier`, except Java's `var` type -> `keyword`;
//! word-like text (letters, digits, `_`, starting with a letter or `_`: `def`, `in`,
//! `not`, `lambda`, `public`, `int`, `void`, `this`, `super`, `_`, plus Java
//! `@interface` and `non-sealed`) -> `keyword`; `( ) [ ] { } , ; : .` and Java generic
//! angle brackets (`<`/`>` under `type_arguments`/`type_parameters`) -> `delimiter`;
//! every other symbol (`= + -> :: := ** @ ? ...` and `* /` separators) -> `operator`.
//! So `.` and `:` are always delimiters (member access, slices, blocks, annotations,
//! Java's ternary `:` and labels), and `::` is an operator.
//!
//! Roles: every identifier gets `"<binding>:<role>"` where binding is `definition` (the
//! occurrence binds or assigns the name) or `use`; see [`Role`] for the role list and
//! [`IdentRole`] for the string form. Non-identifiers have no role. The per-language
//! rules live in `roles/`.

use serde::{Deserialize, Serialize};

use super::lang::Language;

/// Fine category of a code token (docs/METHODS.md 1, the study's split extended).
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

/// One code token (docs/METHODS.md 1). Serializes as
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
        // Names a language reserves (Java's `var`, a reserved type name since Java 10).
        if lang.rules().keyword_identifiers.contains(&(kind, text)) {
            return Category::Keyword;
        }
        return Category::Identifier;
    }
    if lang.rules().keyword_kinds.contains(&kind) {
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
    if matches!(text, "<" | ">") && lang.rules().angle_bracket_parents.contains(&parent_kind) {
        return Category::Delimiter;
    }
    Category::Operator
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
}
