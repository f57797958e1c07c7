//! The study's comment and docstring removal: GraphCodeBERT's
//! `remove_comments_and_docstrings(source, lang)` (`attention/dfg/utils.py` in the study's
//! repository), reproduced exactly, blank-line dropping included. Paper mode and
//! `reproduce` run it before tokens and graphs, as the study did; source mode keeps the
//! text as written.
//!
//! Python: the original walks CPython's `tokenize` (3.11's pure-Python tokenizer here,
//! ported: the tokens, their character columns, INDENT/DEDENT, NEWLINE vs NL, continued
//! strings, its errors) and rebuilds the text token by token:
//! - a gap between tokens becomes as many spaces as it had characters (a tab is one
//!   space), so indentation is kept as spaces, except on a line that opens a block, whose
//!   indentation token is copied as written;
//! - comments are dropped (the spaces before them stay, then the blank-line filter);
//! - a string token is dropped when the token before it (of any kind, comments and blank
//!   lines included) is an INDENT or a NEWLINE, or when it starts at column 0: docstrings,
//!   but also any statement that is a bare string, and a string at the start of a
//!   continuation line;
//! - a backslash continuation vanishes with its line break (the next line's text follows
//!   on the same line);
//! - finally, lines that are blank after `str.strip()` are dropped and the rest joined with
//!   `\n` (no final newline).
//!
//! The original raises where `tokenize` does (an unindent to no outer level, end of file
//!   inside a bracket or a string); so does [`remove_comments_and_docstrings`].
//!
//! Java: the original's regular expression, `//.*?$`, `/\*.*?\*/`, and character and string
//! literals that protect their contents (`re.DOTALL | re.MULTILINE`): comments become one
//! space, then the same blank-line filter. Unterminated comments and literals are left as
//! they are.
//!
//! Checked against the study's own function on 3,987 inputs (700 whole standard-library
//! files, 1,500 functions, 1,700 JDK methods and files, and hand-made edge cases): equal
//! output, or an error where it raises.
//!
//! Invariant: the output never contains a line that is blank by `str.strip()`, and never
//! ends with a newline.

use super::lang::Language;

pub(crate) mod java;
pub(crate) mod python;

/// Why the study's Python comment removal fails on a text (the message of the Python
/// exception `tokenize` raises there).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the study's comment removal fails here (Python's tokenize: {message} at line {line})")]
pub struct CleanError {
    /// `tokenize`'s message, e.g. `EOF in multi-line statement`.
    pub message: String,
    /// 1-based line number.
    pub line: usize,
}

/// The study's `remove_comments_and_docstrings(source, lang)` (see the module docs).
///
/// # Errors
/// Python text on which the original raises ([`CleanError`]); Java never fails.
pub fn remove_comments_and_docstrings(source: &str, lang: Language) -> Result<String, CleanError> {
    (lang.rules().clean)(source)
}

/// AST-Probe's comment and docstring removal (martin-wey/ast-probe `src/data/utils.py`,
/// run by its `code2ast` before parsing; `probe --probe ast --protocol paper`).
///
/// Python, `remove_comments_and_docstrings_python`: the same tokenize walk as the
/// study's (GraphCodeBERT's) function, its one difference the final filter,
/// `'\n'.join(l for l in out.splitlines() if l.strip())`: `splitlines` also breaks at
/// `\r`, `\x0b`, `\x0c`, `\x1c`-`\x1e`, `\x85`, U+2028 and U+2029.
///
/// Java, `remove_comments_and_docstrings_java_js`: a regular expression that knows no
/// escapes, removes comments without leaving a space and drops no line
/// (`clean/java.rs`).
///
/// # Errors
/// Python text on which `tokenize` raises ([`CleanError`]); Java never fails.
pub fn remove_comments_and_docstrings_astprobe(
    source: &str,
    lang: Language,
) -> Result<String, CleanError> {
    (lang.rules().clean_astprobe)(source)
}

/// Python's `str.isspace()` (Rust's `char::is_whitespace` plus the four information
/// separators).
pub(crate) fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `'\n'.join(x for x in text.split('\n') if x.strip() != "")`.
pub(crate) fn drop_blank_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split('\n') {
        if line.chars().all(py_space) {
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inputs and outputs of the study's own function (Python 3.11), verbatim.
    #[test]
    fn python_matches_the_studys_function() {
        #[rustfmt::skip]
        let cases: &[(&str, Option<&str>)] = &[
            ("def f():\n    \"\"\"doc\"\"\"\n    return 1\n", Some("def f():\n    return 1")),
            ("x = 1  # c\n\n\ny = 2", Some("x = 1  \ny = 2")),
            ("\"\"\"module doc\"\"\"\nimport os\n", Some("import os")),
            ("x = (\"a\"\n\"b\")\n", Some("x = (\"a\"\n)")),
            ("x = (\"a\"\n  \"b\")\n", Some("x = (\"a\"\n  \"b\")")),
            ("def f():\n    # c\n    \"\"\"doc\"\"\"\n    s = \"keep\"\n", Some("def f():\n    s = \"keep\"")),
            ("x = 1 + \\\n    2\n", Some("x = 1 +    2")),
            ("if x:\n\tif y:\n\t\tpass\n\telse:\n  \t  pass\n", Some("if x:\n\tif y:\n\t\tpass\n else:\n  \t  pass")),
            ("s = 'abc\\\ndef'\n", Some("s = 'abc\\\ndef'")),
            ("s = f\"{x!r:>{w}}\" + rb'\\x00' + u\"é\"\n", Some("s = f\"{x!r:>{w}}\" + rb'\\x00' + u\"é\"")),
            ("def g():\n    x = 1\n  y = 2\n", None),
            ("x = (1,\n", None),
            ("s = \"\"\"abc\n", None),
            ("x = 1\n   \n", Some("x = 1")),
            ("x = 1   ", Some("x = 1   ")),
            ("# only a comment", Some("")),
            ("def f(a,\n      b):  # sig\n    \"\"\"Doc\n    more\"\"\"\n    return a  # r\n", Some("def f(a,\n      b):  \n    return a  ")),
            ("x = [1,\n     2]  # c\n\"\"\"not a docstring? col 0\"\"\"\n", Some("x = [1,\n     2]  ")),
            ("class A:\n    \"\"\"Doc.\"\"\"\n    def m(self):\n        '''doc'''\n        return \"s\"\n", Some("class A:\n    def m(self):\n        return \"s\"")),
            ("x = 0x1F + 1_000 + 1.5e-3j + .5 + 0b101 + 0o17\n", Some("x = 0x1F + 1_000 + 1.5e-3j + .5 + 0b101 + 0o17")),
            ("print(\"a\", end=\"\")\r\nx = 1\r\n", Some("print(\"a\", end=\"\")\r\nx = 1\r")),
            ("x = y if z else'w'\n", Some("x = y if z else'w'")),
            ("λ = \"ü\" ; é = λ\n", Some("λ = \"ü\" ; é = λ")),
            ("def f():\n    return 1\n        # deep comment\n", Some("def f():\n    return 1")),
            ("s = 'unterminated\nx = 1\n", Some("s = 'unterminated\nx = 1")),
            ("x = a $ b ? c\n", Some("x = a $ b ? c")),
            ("async def f():\n    await g()\n", Some("async def f():\n    await g()")),
        ];
        for (input, want) in cases {
            let got = remove_comments_and_docstrings(input, Language::Python);
            match want {
                Some(w) => assert_eq!(got.as_deref(), Ok(*w), "{input:?}"),
                None => assert!(got.is_err(), "{input:?}: {got:?}"),
            }
        }
    }

    #[test]
    fn java_matches_the_studys_function() {
        #[rustfmt::skip]
        let cases: &[(&str, &str)] = &[
            ("int f() { // c\n  return 1; /* b */ }\n", "int f() {  \n  return 1;   }"),
            ("String s = \"a // not a comment\";\nchar c = '/'; /* multi\nline */ int x;\n", "String s = \"a // not a comment\";\nchar c = '/';   int x;"),
            ("x = \"unterminated\ny = 1; // c\n", "x = \"unterminated\ny = 1;  "),
            ("/* unterminated\nint a;\n", "/* unterminated\nint a;"),
            ("String t = \"esc \\\" // still string\";\n", "String t = \"esc \\\" // still string\";"),
            ("int a = 1 / 2; int b = 1/*c*/+2;\n\n\n   \nint c;", "int a = 1 / 2; int b = 1 +2;\nint c;"),
            ("char q = '\\''; // q\n", "char q = '\\'';  "),
        ];
        for (input, want) in cases {
            assert_eq!(
                remove_comments_and_docstrings(input, Language::Java).as_deref(),
                Ok(*want),
                "{input:?}"
            );
        }
    }

    /// Inputs and outputs of AST-Probe's own functions (`src/data/utils.py`, Python
    /// 3.11), verbatim.
    #[test]
    fn astprobe_variants_match_its_functions() {
        #[rustfmt::skip]
        let cases: &[(Language, &str, &str)] = &[
            (Language::Python, "def f():\n    \"\"\"doc\"\"\"\n    return 1  # c\n", "def f():\n    return 1  "),
            (Language::Python, "x = 1\x0cy = 2\n", "x = 1 y = 2"),
            (Language::Python, "print(\"a\")\r\nx = 1\r\n", "print(\"a\")\nx = 1"),
            (Language::Python, "s = 'a\u{2028}b'\n", "s = 'a\nb'"),
            (Language::Java, "int f() { // c\n  return 1; /* b */ }\n", "int f() { \n  return 1;  }\n"),
            (Language::Java, "String s = \"a // no\"; // yes\n\n\nint x;", "String s = \"a // no\"; \n\n\nint x;"),
            (Language::Java, "String t = \"esc \\\" // cut\";\n", "String t = \"esc \\\" \n"),
            (Language::Java, "char c = '\"'; // q\nint y; /* open\n", "char c = '\"'; \nint y; /* open\n"),
            (Language::Java, "a = 1; // crlf\r\nb = 2; // lf\n", "a = 1; // crlf\r\nb = 2; \n"),
            (Language::Java, "x = \"unterminated // c\n", "x = \"unterminated \n"),
        ];
        for (lang, input, want) in cases {
            assert_eq!(
                remove_comments_and_docstrings_astprobe(input, *lang).as_deref(),
                Ok(*want),
                "{input:?}"
            );
        }
    }

    #[test]
    fn errors_say_where() {
        let e = remove_comments_and_docstrings("x = (1,\n", Language::Python).unwrap_err();
        assert_eq!(e.message, "EOF in multi-line statement");
        assert_eq!(e.line, 2);
        assert!(e.to_string().contains("line 2"), "{e}");
    }

    #[test]
    fn output_has_no_blank_line_and_no_final_newline() {
        for lang in Language::ALL {
            let out = remove_comments_and_docstrings("a = 1\n\n \t\nb = 2\n\n", lang).unwrap();
            assert_eq!(out, "a = 1\nb = 2");
        }
    }
}
