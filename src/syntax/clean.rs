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
    match lang {
        Language::Python => python(source),
        Language::Java => Ok(java(source)),
    }
}

/// Python's `str.isspace()` (Rust's `char::is_whitespace` plus the four information
/// separators).
fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `'\n'.join(x for x in text.split('\n') if x.strip() != "")`.
fn drop_blank_lines(text: &str) -> String {
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

// ---------------------------------------------------------------------------------------
// Java: the regular expression
// ---------------------------------------------------------------------------------------

fn java(source: &str) -> String {
    let b = source.as_bytes();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        let end = match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                // `//.*?$`: up to the first line break (not included).
                Some(source[i..].find('\n').map_or(b.len(), |k| i + k))
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                source[i + 2..].find("*/").map(|k| i + 2 + k + 2)
            }
            q @ (b'\'' | b'"') => literal_end(b, i, q),
            _ => None,
        };
        match end {
            Some(e) => {
                if b[i] == b'/' {
                    out.push_str(&source[copied..i]);
                    out.push(' ');
                    copied = e;
                }
                i = e;
            }
            None => i += 1,
        }
    }
    out.push_str(&source[copied..]);
    drop_blank_lines(&out)
}

/// `'(?:\\.|[^\\'])*'` (DOTALL) from `i`: the end of the literal, if it is closed.
fn literal_end(b: &[u8], i: usize, q: u8) -> Option<usize> {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => {
                if j + 1 >= b.len() {
                    return None;
                }
                // `.` under DOTALL: any character (a multi-byte one is skipped byte by
                // byte below, which is the same).
                j += 2;
            }
            c if c == q => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

// ---------------------------------------------------------------------------------------
// Python: CPython 3.11's tokenize, then the rebuild
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Comment,
    Str,
    Indent,
    Newline,
    /// Every other token (NAME, NUMBER, OP, NL, DEDENT, ERRORTOKEN, ENDMARKER): the
    /// rebuild treats them alike.
    Other,
}

struct Tok {
    kind: Kind,
    text: String,
    start: (usize, usize),
    end: (usize, usize),
}

const TABSIZE: usize = 8;

/// Valid string prefixes, lowercased (`_all_string_prefixes`).
fn is_prefix(p: &[char]) -> bool {
    let s: String = p.iter().collect::<String>().to_ascii_lowercase();
    matches!(
        s.as_str(),
        "" | "b" | "r" | "u" | "f" | "br" | "rb" | "fr" | "rf"
    )
}

/// Python's `\w` (approximately: Unicode letters and numbers, and `_`).
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn digitpart(l: &[char], mut p: usize) -> Option<usize> {
    if !l.get(p).is_some_and(char::is_ascii_digit) {
        return None;
    }
    p += 1;
    loop {
        if l.get(p).is_some_and(char::is_ascii_digit) {
            p += 1;
        } else if l.get(p) == Some(&'_') && l.get(p + 1).is_some_and(char::is_ascii_digit) {
            p += 2;
        } else {
            return Some(p);
        }
    }
}

fn exponent(l: &[char], p: usize) -> Option<usize> {
    if !matches!(l.get(p), Some('e' | 'E')) {
        return None;
    }
    let q = if matches!(l.get(p + 1), Some('+' | '-')) {
        p + 2
    } else {
        p + 1
    };
    digitpart(l, q)
}

fn pointfloat(l: &[char], p: usize) -> Option<usize> {
    let base = match digitpart(l, p) {
        Some(d) if l.get(d) == Some(&'.') => Some(digitpart(l, d + 1).unwrap_or(d + 1)),
        _ if l.get(p) == Some(&'.') => digitpart(l, p + 1),
        _ => None,
    }?;
    Some(exponent(l, base).unwrap_or(base))
}

fn floatnumber(l: &[char], p: usize) -> Option<usize> {
    pointfloat(l, p).or_else(|| digitpart(l, p).and_then(|d| exponent(l, d)))
}

fn radix(l: &[char], p: usize, marks: [char; 2], ok: fn(&char) -> bool) -> Option<usize> {
    if l.get(p) != Some(&'0') || !l.get(p + 1).is_some_and(|c| marks.contains(c)) {
        return None;
    }
    let mut q = p + 2;
    let start = q;
    loop {
        if l.get(q).is_some_and(ok) {
            q += 1;
        } else if l.get(q) == Some(&'_') && l.get(q + 1).is_some_and(ok) {
            q += 2;
        } else {
            break;
        }
    }
    (q > start).then_some(q)
}

fn intnumber(l: &[char], p: usize) -> Option<usize> {
    radix(l, p, ['x', 'X'], char::is_ascii_hexdigit)
        .or_else(|| radix(l, p, ['b', 'B'], |c| matches!(c, '0' | '1')))
        .or_else(|| radix(l, p, ['o', 'O'], |c| ('0'..='7').contains(c)))
        .or_else(|| match l.get(p) {
            Some('0') => {
                let mut q = p + 1;
                loop {
                    if l.get(q) == Some(&'0') {
                        q += 1;
                    } else if l.get(q) == Some(&'_') && l.get(q + 1) == Some(&'0') {
                        q += 2;
                    } else {
                        return Some(q);
                    }
                }
            }
            Some('1'..='9') => digitpart(l, p),
            _ => None,
        })
}

/// tokenize's `Number` at `p`: its end.
fn number(l: &[char], p: usize) -> Option<usize> {
    let j = |e: usize| matches!(l.get(e), Some('j' | 'J')).then_some(e + 1);
    digitpart(l, p)
        .and_then(j)
        .or_else(|| floatnumber(l, p).and_then(j))
        .or_else(|| floatnumber(l, p))
        .or_else(|| intnumber(l, p))
}

/// The operators of `EXACT_TOKEN_TYPES`, longest first.
const OPERATORS: [&str; 47] = [
    "**=", "...", "//=", "<<=", ">>=", "!=", "%=", "&=", "**", "*=", "+=", "-=", "->", "//", "/=",
    ":=", "<<", "<=", "==", ">=", ">>", "@=", "^=", "|=", "%", "&", "(", ")", "*", "+", ",", "-",
    ".", "/", ":", ";", "<", "=", ">", "@", "[", "]", "^", "{", "|", "}", "~",
];

fn operator(l: &[char], p: usize) -> Option<usize> {
    OPERATORS.iter().find_map(|op| {
        let n = op.chars().count();
        (l.len() >= p + n && l[p..p + n].iter().copied().eq(op.chars())).then_some(p + n)
    })
}

/// A string opening at `p`: (end of the prefix and quotes, the quote, triple?).
fn string_start(l: &[char], p: usize) -> Option<(usize, char, bool)> {
    let mut q = p;
    while q < l.len() && q - p < 2 && l[q].is_ascii_alphabetic() {
        q += 1;
    }
    // Try the longest prefix first, then shorter ones (the regex backtracks).
    for k in (p..=q).rev() {
        if !is_prefix(&l[p..k]) {
            continue;
        }
        if let Some(&c @ ('\'' | '"')) = l.get(k) {
            let triple = l.get(k + 1) == Some(&c) && l.get(k + 2) == Some(&c);
            return Some((if triple { k + 3 } else { k + 1 }, c, triple));
        }
    }
    None
}

/// `endpats`: the end of a string body starting at `p` with quote `q`, on this line.
fn string_end(l: &[char], mut p: usize, q: char, triple: bool) -> Option<usize> {
    while p < l.len() {
        match l[p] {
            '\\' => p += 2,
            c if c == q => {
                if !triple {
                    return Some(p + 1);
                }
                if l.get(p + 1) == Some(&q) && l.get(p + 2) == Some(&q) {
                    return Some(p + 3);
                }
                p += 1;
            }
            _ => p += 1,
        }
    }
    None
}

/// A single-quoted string body from `p`: `Ok(end)` when closed on this line,
/// `Err(true)` when continued by a backslash-newline, `Err(false)` when neither.
fn contstr(l: &[char], mut p: usize, q: char) -> Result<usize, bool> {
    while p < l.len() {
        match l[p] {
            c if c == q => return Ok(p + 1),
            '\n' => return Err(false),
            '\\' => match l.get(p + 1) {
                Some('\n') => return Err(true),
                Some('\r') if l.get(p + 2) == Some(&'\n') => return Err(true),
                Some(_) => p += 2,
                None => return Err(false),
            },
            _ => p += 1,
        }
    }
    Err(false)
}

fn err(message: &str, line: usize) -> CleanError {
    CleanError {
        message: message.to_string(),
        line,
    }
}

/// A string spanning lines, being read.
struct Continued {
    text: String,
    start: (usize, usize),
    quote: char,
    triple: bool,
    /// A single-quoted string continued by a backslash: each line must end with one.
    needcont: bool,
}

/// `tokenize.generate_tokens` (3.11), the kinds the rebuild needs.
fn tokenize(source: &str) -> Result<Vec<Tok>, CleanError> {
    let lines: Vec<Vec<char>> = source
        .split_inclusive('\n')
        .map(|l| l.chars().collect())
        .collect();
    let mut toks = Vec::new();
    let mut push = |kind, l: &[char], a: usize, b: usize, start, end| {
        toks.push(Tok {
            kind,
            text: l[a.min(l.len())..b.min(l.len())].iter().collect(),
            start,
            end,
        });
    };
    let (mut parenlev, mut continued) = (0usize, false);
    let mut indents = vec![0usize];
    let mut cont: Option<Continued> = None;
    let empty: Vec<char> = Vec::new();
    let mut lnum = 0;
    loop {
        let line: &[char] = lines.get(lnum).map_or(&empty[..], |l| &l[..]);
        lnum += 1;
        let max = line.len();
        let mut pos = 0;
        if let Some(Continued {
            mut text,
            start,
            quote: q,
            triple,
            needcont,
        }) = cont.take()
        {
            if line.is_empty() {
                return Err(err("EOF in multi-line string", start.0));
            }
            let end = if triple {
                string_end(line, 0, q, true)
            } else {
                contstr(line, 0, q).ok()
            };
            match end {
                Some(e) => {
                    text.extend(&line[..e]);
                    toks_push_str(&mut push, text, start, (lnum, e));
                    pos = e;
                }
                None => {
                    let backslashed =
                        line.ends_with(&['\\', '\n']) || line.ends_with(&['\\', '\r', '\n']);
                    if needcont && !backslashed {
                        text.extend(line);
                        toks_push_other(&mut push, text, start, (lnum, max));
                        continue;
                    }
                    text.extend(line);
                    cont = Some(Continued {
                        text,
                        start,
                        quote: q,
                        triple,
                        needcont,
                    });
                    continue;
                }
            }
        } else if parenlev == 0 && !continued {
            if line.is_empty() {
                break;
            }
            let mut column = 0;
            while pos < max {
                match line[pos] {
                    ' ' => column += 1,
                    '\t' => column = (column / TABSIZE + 1) * TABSIZE,
                    '\u{c}' => column = 0,
                    _ => break,
                }
                pos += 1;
            }
            if pos == max {
                break;
            }
            if matches!(line[pos], '#' | '\r' | '\n') {
                if line[pos] == '#' {
                    let mut e = max;
                    while e > pos && matches!(line[e - 1], '\r' | '\n') {
                        e -= 1;
                    }
                    push(Kind::Comment, line, pos, e, (lnum, pos), (lnum, e));
                    pos = e;
                }
                push(Kind::Other, line, pos, max, (lnum, pos), (lnum, max));
                continue;
            }
            if column > *indents.last().unwrap_or(&0) {
                indents.push(column);
                push(Kind::Indent, line, 0, pos, (lnum, 0), (lnum, pos));
            }
            while column < *indents.last().unwrap_or(&0) {
                if !indents.contains(&column) {
                    return Err(err(
                        "unindent does not match any outer indentation level",
                        lnum,
                    ));
                }
                indents.pop();
                push(Kind::Other, line, pos, pos, (lnum, pos), (lnum, pos));
            }
        } else {
            if line.is_empty() {
                return Err(err("EOF in multi-line statement", lnum));
            }
            continued = false;
        }

        while pos < max {
            // Whitespace, then the pseudo-token.
            let mut start = pos;
            while start < max && matches!(line[start], ' ' | '\u{c}' | '\t') {
                start += 1;
            }
            if start == max {
                break; // `\Z`
            }
            let c = line[start];
            let sp = (lnum, start);
            // PseudoExtras: backslash-newline, comment, triple-quoted string.
            if c == '\\'
                && (line.get(start + 1) == Some(&'\n')
                    || (line.get(start + 1) == Some(&'\r') && line.get(start + 2) == Some(&'\n')))
            {
                continued = true;
                pos = max;
                continue;
            }
            if c == '#' {
                let mut e = start;
                while e < max && !matches!(line[e], '\r' | '\n') {
                    e += 1;
                }
                push(Kind::Comment, line, start, e, sp, (lnum, e));
                pos = e;
                continue;
            }
            let opening = string_start(line, start);
            if let Some((body, q, true)) = opening {
                match string_end(line, body, q, true) {
                    Some(e) => {
                        push(Kind::Str, line, start, e, sp, (lnum, e));
                        pos = e;
                    }
                    None => {
                        cont = Some(Continued {
                            text: line[start..].iter().collect(),
                            start: sp,
                            quote: q,
                            triple: true,
                            needcont: false,
                        });
                        pos = max;
                    }
                }
                continue;
            }
            if let Some(e) = number(line, start) {
                push(Kind::Other, line, start, e, sp, (lnum, e));
                pos = e;
                continue;
            }
            if c == '\n' || (c == '\r' && line.get(start + 1) == Some(&'\n')) {
                let e = if c == '\n' { start + 1 } else { start + 2 };
                let kind = if parenlev > 0 {
                    Kind::Other
                } else {
                    Kind::Newline
                };
                push(kind, line, start, e, sp, (lnum, e));
                pos = e;
                continue;
            }
            if let Some(e) = operator(line, start) {
                match c {
                    '(' | '[' | '{' => parenlev += 1,
                    ')' | ']' | '}' => parenlev = parenlev.saturating_sub(1),
                    _ => {}
                }
                push(Kind::Other, line, start, e, sp, (lnum, e));
                pos = e;
                continue;
            }
            if let Some((body, q, false)) = opening {
                match contstr(line, body, q) {
                    Ok(e) => {
                        push(Kind::Str, line, start, e, sp, (lnum, e));
                        pos = e;
                        continue;
                    }
                    Err(true) => {
                        cont = Some(Continued {
                            text: line[start..].iter().collect(),
                            start: sp,
                            quote: q,
                            triple: false,
                            needcont: true,
                        });
                        pos = max;
                        continue;
                    }
                    Err(false) => {}
                }
            }
            if is_word(c) {
                let mut e = start + 1;
                while e < max && is_word(line[e]) {
                    e += 1;
                }
                push(Kind::Other, line, start, e, sp, (lnum, e));
                pos = e;
                continue;
            }
            // ERRORTOKEN: one character.
            push(Kind::Other, line, start, start + 1, sp, (lnum, start + 1));
            pos = start + 1;
        }
    }
    // The implicit NEWLINE when the text does not end with a line break.
    if let Some(last) = lines.last() {
        let first = last.iter().position(|c| !py_space(*c));
        let comment_line = first.is_some_and(|k| last[k] == '#');
        if !matches!(last.last(), Some('\r' | '\n')) && !comment_line {
            let (r, n) = (lines.len(), last.len());
            toks.push(Tok {
                kind: Kind::Newline,
                text: String::new(),
                start: (r, n),
                end: (r, n + 1),
            });
        }
    }
    // DEDENTs and ENDMARKER are empty tokens at column 0 of a line after the text: they
    // add nothing to the rebuild.
    Ok(toks)
}

type Push<'a> = dyn FnMut(Kind, &[char], usize, usize, (usize, usize), (usize, usize)) + 'a;

fn toks_push_str(push: &mut Push<'_>, text: String, start: (usize, usize), end: (usize, usize)) {
    let chars: Vec<char> = text.chars().collect();
    push(Kind::Str, &chars, 0, chars.len(), start, end);
}

fn toks_push_other(push: &mut Push<'_>, text: String, start: (usize, usize), end: (usize, usize)) {
    let chars: Vec<char> = text.chars().collect();
    push(Kind::Other, &chars, 0, chars.len(), start, end);
}

fn python(source: &str) -> Result<String, CleanError> {
    Ok(drop_blank_lines(&python_rebuild(source)?))
}

/// The token-by-token rebuild of the Python removal, before its blank-line filter.
fn python_rebuild(source: &str) -> Result<String, CleanError> {
    let toks = tokenize(source)?;
    let mut out = String::with_capacity(source.len());
    let mut prev = Kind::Indent;
    let (mut last_line, mut last_col) = (0usize, 0usize);
    for t in &toks {
        if t.start.0 > last_line {
            last_col = 0;
        }
        if t.start.1 > last_col {
            out.extend(std::iter::repeat_n(' ', t.start.1 - last_col));
        }
        match t.kind {
            Kind::Comment => {}
            Kind::Str => {
                if prev != Kind::Indent && prev != Kind::Newline && t.start.1 > 0 {
                    out.push_str(&t.text);
                }
            }
            _ => out.push_str(&t.text),
        }
        prev = t.kind;
        last_col = t.end.1;
        last_line = t.end.0;
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------
// AST-Probe's variants
// ---------------------------------------------------------------------------------------

/// AST-Probe's comment and docstring removal (martin-wey/ast-probe `src/data/utils.py`,
/// run by its `code2ast` before parsing; `probe --probe ast --protocol paper`).
///
/// Python, `remove_comments_and_docstrings_python`: the same tokenize walk as the
/// study's (GraphCodeBERT's) function, its one difference the final filter,
/// `'\n'.join(l for l in out.splitlines() if l.strip())`: `splitlines` also breaks at
/// `\r`, `\x0b`, `\x0c`, `\x1c`-`\x1e`, `\x85`, U+2028 and U+2029.
///
/// Java, `remove_comments_and_docstrings_java_js`: the regular expression
/// `(".*?"|'.*?')|(/\*.*?\*/|//[^\r\n]*$)` (`re.MULTILINE | re.DOTALL`): a quoted
/// run from a quote to the next same quote (no escapes) is kept, a comment is removed
/// (replaced by nothing; a `//` comment ending in `\r\n` is not one, `$` being before
/// `\n` only), and no line is dropped.
///
/// # Errors
/// Python text on which `tokenize` raises ([`CleanError`]); Java never fails.
pub fn remove_comments_and_docstrings_astprobe(
    source: &str,
    lang: Language,
) -> Result<String, CleanError> {
    match lang {
        Language::Python => Ok(drop_blank_splitlines(&python_rebuild(source)?)),
        Language::Java => Ok(java_astprobe(source)),
    }
}

/// `'\n'.join(l for l in text.splitlines() if l.strip())` (blank lines being dropped,
/// `\r\n` may count as two breaks).
fn drop_blank_splitlines(text: &str) -> String {
    let breaks = |c: char| {
        matches!(
            c,
            '\n' | '\r'
                | '\u{b}'
                | '\u{c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        )
    };
    let mut out = String::with_capacity(text.len());
    for line in text.split(breaks) {
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

/// The Java regular expression of [`remove_comments_and_docstrings_astprobe`], as
/// Python's `re` runs it (leftmost match, first alternative that matches there).
fn java_astprobe(source: &str) -> String {
    let b = source.as_bytes();
    let find = |from: usize, pat: &str| source[from..].find(pat).map(|k| from + k);
    let mut out = String::with_capacity(source.len());
    let (mut i, mut copied) = (0, 0);
    while i < b.len() {
        // (end of the match, whether it is a comment)
        let m = match b[i] {
            q @ (b'"' | b'\'') => {
                let q = if q == b'"' { "\"" } else { "'" };
                find(i + 1, q).map(|e| (e + 1, false))
            }
            b'/' if b.get(i + 1) == Some(&b'*') => find(i + 2, "*/").map(|e| (e + 2, true)),
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let e = source[i..].find(['\r', '\n']).map_or(b.len(), |k| i + k);
                (e == b.len() || b[e] == b'\n').then_some((e, true))
            }
            _ => None,
        };
        match m {
            Some((e, comment)) => {
                if comment {
                    out.push_str(&source[copied..i]);
                    copied = e;
                }
                i = e;
            }
            None => i += 1,
        }
    }
    out.push_str(&source[copied..]);
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
