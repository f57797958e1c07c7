//! Java's comment removal: the study's regular expression (see the module docs of
//! `clean`).

use super::{drop_blank_lines, CleanError};

/// The study's Java comment removal; it never fails.
pub(crate) fn remove(source: &str) -> Result<String, CleanError> {
    Ok(java(source))
}

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

/// AST-Probe's Java removal (`remove_comments_and_docstrings_java_js`): the regular
/// expression `(".*?"|'.*?')|(/\*.*?\*/|//[^\r\n]*$)` (`re.MULTILINE | re.DOTALL`), as
/// Python's `re` runs it (leftmost match, first alternative that matches there): a quoted
/// run from a quote to the next same quote (no escapes) is kept, a comment is removed
/// (replaced by nothing; a `//` comment ending in `\r\n` is not one, `$` being before
/// `\n` only), and no line is dropped.
pub(crate) fn remove_astprobe(source: &str) -> String {
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
