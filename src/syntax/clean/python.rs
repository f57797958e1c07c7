//! Python's comment and docstring removal: CPython 3.11's tokenize, ported, then the
//! study's rebuild (see the module docs of `clean`).

use super::{drop_blank_lines, py_space, CleanError};

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

/// The study's Python comment and docstring removal: CPython 3.11's tokenize, then the
/// rebuild (see the module docs of `clean`).
pub(crate) fn remove(source: &str) -> Result<String, CleanError> {
    Ok(drop_blank_lines(&rebuild(source)?))
}

/// AST-Probe's Python removal (`remove_comments_and_docstrings_python`): the same walk,
/// then `'\n'.join(l for l in out.splitlines() if l.strip())`.
pub(crate) fn remove_astprobe(source: &str) -> Result<String, CleanError> {
    Ok(drop_blank_splitlines(&rebuild(source)?))
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

/// The token-by-token rebuild of the Python removal, before its blank-line filter.
fn rebuild(source: &str) -> Result<String, CleanError> {
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
