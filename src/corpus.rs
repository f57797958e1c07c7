//! Corpora of code snippets for the corpus-level analyses (`reproduce`, probes).
//!
//! Sources:
//! - CodeSearchNet-style `.jsonl` / `.jsonl.gz`: one JSON object per line with the code in
//!   `code` or `original_string` and an optional `language`; a record's `code_tokens`
//!   (CodeSearchNet's, or the study's `exp_data` records) are kept for paper mode, which
//!   feeds the study's input from them ([`study_input_tokens`]);
//! - a directory (recursively) or a `.zip` (e.g. a JDK's `lib/src.zip`) of `.py` / `.java`
//!   files, or a single source file: one snippet per function or method, extracted with
//!   tree-sitter (outermost `function_definition`s, Python methods included;
//!   `method_declaration`s and `constructor_declaration`s in Java), dedented to their
//!   first line's column.
//!
//! Snippets come in a deterministic order (sorted paths, file order), so a run can be
//! resumed by index. Unreadable files and non-UTF-8 files are skipped and counted, never
//! fatal: a corpus is real-world data.
//!
//! Reads are bounded: a source file (in a directory or a zip) over
//! [`crate::input::MAX_INPUT_BYTES`] and a JSONL line over [`MAX_LINE_BYTES`] are
//! skipped after reading at most that much, so a zip bomb or an endless line costs
//! bounded memory.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::syntax::Language;

/// One snippet of a corpus.
#[derive(Debug, Clone)]
pub struct Snippet {
    /// Where it came from (`path:line` or `file.jsonl:record`).
    pub origin: String,
    pub language: Language,
    pub code: String,
    /// The record's own code tokens, when a JSONL record carries them (CodeSearchNet's
    /// `code_tokens`, and the study's `exp_data` records, whose `code_tokens` are already
    /// cleaned). Paper mode feeds the study's input from them: see
    /// [`study_input_tokens`].
    pub code_tokens: Option<Vec<String>>,
}

/// The study's model input tokens from a record's `code_tokens`, as its
/// `create_csn_exp_data.py` prepared them: tokens starting with `#`, `"""` or `'''` removed,
/// then each `*` directly followed by a `*` merged into `**`. On the study's own `exp_data`
/// records (already prepared) this changes nothing.
pub fn study_input_tokens(code_tokens: &[String]) -> Vec<String> {
    let kept: Vec<&String> = code_tokens
        .iter()
        .filter(|t| !(t.starts_with('#') || t.starts_with("\"\"\"") || t.starts_with("'''")))
        .collect();
    let mut out = Vec::with_capacity(kept.len());
    let mut i = 0;
    while i < kept.len() {
        if kept[i] == "*" && kept.get(i + 1).is_some_and(|n| *n == "*") {
            out.push("**".to_string());
            i += 2;
        } else {
            out.push(kept[i].clone());
            i += 1;
        }
    }
    out
}

/// A loaded corpus and what was skipped on the way.
#[derive(Debug, Default)]
pub struct Corpus {
    pub snippets: Vec<Snippet>,
    /// Files or records that could not be used (unreadable, non-UTF-8, unparsable JSON).
    pub skipped: usize,
}

/// Snippets longer than this many bytes are skipped (a function that long is noise for
/// a 512-token model and slow to analyse).
pub const MAX_SNIPPET_BYTES: usize = 20_000;

/// JSONL lines longer than this are skipped (CodeSearchNet's longest are ~1 MB).
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// At most `limit` bytes of `r` as UTF-8; `None` when longer, unreadable or not UTF-8.
fn read_bounded(r: impl Read, limit: usize) -> Option<String> {
    let mut buf = Vec::new();
    r.take(limit as u64 + 1).read_to_end(&mut buf).ok()?;
    if buf.len() > limit {
        return None;
    }
    String::from_utf8(buf).ok()
}

/// The next line of `r` (without its newline) if it is at most `limit` bytes; longer
/// lines are consumed and reported as `Some(Err(()))`. `None` at the end.
fn next_line(r: &mut impl BufRead, limit: usize) -> Option<std::io::Result<Result<String, ()>>> {
    let mut buf = Vec::new();
    match r
        .by_ref()
        .take(limit as u64 + 1)
        .read_until(b'\n', &mut buf)
    {
        Err(e) => return Some(Err(e)),
        Ok(0) => return None,
        Ok(_) => {}
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
    } else if buf.len() > limit {
        // Skip the rest of the over-long line without keeping it.
        loop {
            let chunk = match r.fill_buf() {
                Ok(c) => c,
                Err(e) => return Some(Err(e)),
            };
            if chunk.is_empty() {
                break;
            }
            let (used, done) = match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (chunk.len(), false),
            };
            r.consume(used);
            if done {
                break;
            }
        }
        return Some(Ok(Err(())));
    }
    Some(Ok(String::from_utf8(buf).map_err(|_| ())))
}

/// The sha256 (hex) of a corpus's contents: every snippet's language and text, in
/// order (their origins are not included: a corpus moved to another path keeps its
/// digest). `reproduce` checkpoints and shards record it, so that the same path with
/// other contents is told apart.
pub fn digest(snippets: &[Snippet]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(b"codescope-corpus-v1\0");
    h.update((snippets.len() as u64).to_le_bytes());
    for s in snippets {
        h.update(s.language.to_string().as_bytes());
        h.update([0]);
        h.update((s.code.len() as u64).to_le_bytes());
        h.update(s.code.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Load a corpus from `path`. `lang` filters (and, for JSONL without a `language` field,
/// sets) the language. `limit` stops after that many snippets.
pub fn load(path: &Path, lang: Option<Language>, limit: Option<usize>) -> Result<Corpus> {
    let name = path.display().to_string();
    let lower = name.to_ascii_lowercase();
    let mut c = Corpus::default();
    let limit = limit.unwrap_or(usize::MAX);
    if path.is_dir() {
        let mut files = Vec::new();
        walk(path, &mut files);
        files.sort();
        for f in files {
            if c.snippets.len() >= limit {
                break;
            }
            let Some(l) = Language::from_path(&f).filter(|l| lang.is_none_or(|x| x == *l)) else {
                continue;
            };
            match std::fs::File::open(&f)
                .ok()
                .and_then(|file| read_bounded(file, crate::input::MAX_INPUT_BYTES))
            {
                Some(text) => push_functions(&mut c, &f.display().to_string(), &text, l, limit),
                None => c.skipped += 1,
            }
        }
    } else if lower.ends_with(".zip") {
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let mut z = zip::ZipArchive::new(file).map_err(|e| Error::Input {
            name: name.clone(),
            reason: format!("not a readable zip: {e}"),
        })?;
        let mut names: Vec<String> = z
            .file_names()
            .filter_map(|n| n.ok().map(|n| n.to_string()))
            .collect();
        names.sort();
        for n in names {
            if c.snippets.len() >= limit {
                break;
            }
            let Some(l) =
                Language::from_path(Path::new(&n)).filter(|l| lang.is_none_or(|x| x == *l))
            else {
                continue;
            };
            let text = z
                .by_name(&n)
                .ok()
                .and_then(|e| read_bounded(e, crate::input::MAX_INPUT_BYTES));
            match text {
                Some(text) => push_functions(&mut c, &format!("{name}!{n}"), &text, l, limit),
                None => c.skipped += 1,
            }
        }
    } else if lower.ends_with(".jsonl")
        || lower.ends_with(".jsonl.gz")
        || lower.ends_with(".json.gz")
    {
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let mut reader: Box<dyn BufRead> = if lower.ends_with(".gz") {
            Box::new(std::io::BufReader::new(flate2::read::MultiGzDecoder::new(
                file,
            )))
        } else {
            Box::new(std::io::BufReader::new(file))
        };
        for i in 0.. {
            if c.snippets.len() >= limit {
                break;
            }
            let Some(line) = next_line(&mut reader, MAX_LINE_BYTES) else {
                break;
            };
            let line = line.map_err(|e| Error::Input {
                name: name.clone(),
                reason: format!("line {}: {e}", i + 1),
            })?;
            let Ok(line) = line else {
                // Over-long or not UTF-8.
                c.skipped += 1;
                continue;
            };
            if line.trim().is_empty() {
                continue;
            }
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
                c.skipped += 1;
                continue;
            };
            let code = v
                .get("code")
                .or_else(|| v.get("original_string"))
                .and_then(|x| x.as_str());
            let l = match v.get("language").and_then(|x| x.as_str()) {
                Some(s) => Language::from_name(s).ok(),
                None => lang.or(Some(Language::Python)),
            };
            match (code, l) {
                (Some(code), Some(l)) if lang.is_none_or(|x| x == l) => {
                    if code.trim().is_empty() || code.len() > MAX_SNIPPET_BYTES {
                        c.skipped += 1;
                    } else {
                        c.snippets.push(Snippet {
                            origin: format!("{name}:{}", i + 1),
                            language: l,
                            code: code.to_string(),
                            code_tokens: code_tokens(&v),
                        });
                    }
                }
                (Some(_), Some(_)) => {}
                _ => c.skipped += 1,
            }
        }
    } else if path.is_file() {
        let l = lang
            .or_else(|| Language::from_path(path))
            .ok_or_else(|| Error::Input {
                name: name.clone(),
                reason: "not a .py/.java file, directory, .zip or .jsonl(.gz) corpus".into(),
            })?;
        let text = crate::input::read(&name)?.text;
        push_functions(&mut c, &name, &text, l, limit);
    } else if path.exists() {
        // `/dev/null`, a FIFO, a socket: nothing a corpus can be read from.
        return Err(Error::Input {
            name,
            reason: "is not a regular file, a directory, a .zip or a .jsonl(.gz) corpus".into(),
        });
    } else {
        return Err(Error::Input {
            name,
            reason: "no such file or directory".into(),
        });
    }
    Ok(c)
}

/// A record's `code_tokens`, when it is an array of strings (anything else: none).
fn code_tokens(v: &serde_json::Value) -> Option<Vec<String>> {
    v.get("code_tokens")?
        .as_array()?
        .iter()
        .map(|t| t.as_str().map(str::to_string))
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            walk(&p, out);
        } else if ft.is_file() {
            out.push(p);
        }
    }
}

fn push_functions(c: &mut Corpus, origin: &str, text: &str, lang: Language, limit: usize) {
    for (line, code) in functions(text, lang) {
        if c.snippets.len() >= limit {
            return;
        }
        if code.len() > MAX_SNIPPET_BYTES {
            continue;
        }
        c.snippets.push(Snippet {
            origin: format!("{origin}:{line}"),
            language: lang,
            code,
            code_tokens: None,
        });
    }
}

/// The outermost functions / methods of a source file, as `(1-based line, dedented
/// text)`.
pub fn functions(text: &str, lang: Language) -> Vec<(usize, String)> {
    let mut parser = tree_sitter::Parser::new();
    if parser.set_language(&lang.grammar()).is_err() {
        return Vec::new();
    }
    let Some(tree) = parser.parse(text, None) else {
        return Vec::new();
    };
    let kinds = lang.function_kinds();
    let mut out = Vec::new();
    let mut stack = vec![tree.root_node()];
    while let Some(n) = stack.pop() {
        if kinds.contains(&n.kind()) {
            let col = n.start_position().column;
            let body = &text[n.start_byte()..n.end_byte()];
            out.push((
                n.start_position().row + 1,
                n.start_byte(),
                dedent(body, col),
            ));
            continue;
        }
        let mut cur = n.walk();
        let children: Vec<_> = n.children(&mut cur).collect();
        stack.extend(children.into_iter().rev());
    }
    out.sort_by_key(|x| x.1);
    out.into_iter().map(|(l, _, s)| (l, s)).collect()
}

/// Remove up to `col` leading spaces/tabs from every line but the first (which starts at
/// the node, so has none).
fn dedent(body: &str, col: usize) -> String {
    let mut out = String::with_capacity(body.len());
    for (i, line) in body.split_inclusive('\n').enumerate() {
        if i == 0 {
            out.push_str(line);
            continue;
        }
        let strip = line
            .bytes()
            .take(col)
            .take_while(|b| *b == b' ' || *b == b'\t')
            .count();
        out.push_str(&line[strip..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn study_input_tokens_removes_comments_and_merges_stars_as_the_study() {
        let t = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let raw = t(&[
            "def",
            "f",
            "(",
            "*",
            "*",
            "kw",
            ")",
            ":",
            "'''d'''",
            "\"\"\"e\"\"\"",
            "#c",
            "return",
            "a",
            "*",
            "*",
            "*",
            "b",
        ]);
        let want = t(&[
            "def", "f", "(", "**", "kw", ")", ":", "return", "a", "**", "*", "b",
        ]);
        assert_eq!(study_input_tokens(&raw), want);
        // Prepared tokens (the study's exp_data) are left as they are.
        assert_eq!(study_input_tokens(&want), want);
        assert!(study_input_tokens(&[]).is_empty());
        // A record's tokens are used only when they are all strings.
        let v = serde_json::json!({"code_tokens": ["a", "b"]});
        assert_eq!(code_tokens(&v), Some(t(&["a", "b"])));
        assert_eq!(
            code_tokens(&serde_json::json!({"code_tokens": ["a", 1]})),
            None
        );
        assert_eq!(
            code_tokens(&serde_json::json!({"code_tokens": "a b"})),
            None
        );
    }

    #[test]
    fn extracts_outermost_functions_and_dedents() {
        let src = "import os\n\nclass A:\n    def m(self, x):\n        def inner():\n            return x\n        return inner\n\ndef f(a):\n    return a + 1\n";
        let fs = functions(src, Language::Python);
        assert_eq!(fs.len(), 2);
        assert_eq!(fs[0].0, 4);
        assert_eq!(
            fs[0].1,
            "def m(self, x):\n    def inner():\n        return x\n    return inner"
        );
        assert_eq!(fs[1], (9, "def f(a):\n    return a + 1".to_string()));
        let java = "class A {\n  A() { x = 1; }\n  int f(int a) {\n    Runnable r = new Runnable() { public void run() {} };\n    return a;\n  }\n}\n";
        let fs = functions(java, Language::Java);
        assert_eq!(fs.len(), 2, "{fs:?}");
        assert!(fs[1].1.starts_with("int f(int a) {\n  Runnable r"));
    }

    #[test]
    fn loads_jsonl_dirs_and_skips_bad_records() {
        let d = tempfile::tempdir().unwrap();
        let j = d.path().join("c.jsonl");
        std::fs::write(
            &j,
            "{\"code\": \"def f():\\n    return 1\\n\", \"language\": \"python\"}\nnot json\n{\"original_string\": \"int g() { return 2; }\", \"language\": \"java\"}\n{\"language\": \"python\"}\n",
        )
        .unwrap();
        let c = load(&j, None, None).unwrap();
        assert_eq!(c.snippets.len(), 2);
        assert_eq!(c.skipped, 2);
        assert_eq!(c.snippets[1].language, Language::Java);
        let c = load(&j, Some(Language::Python), None).unwrap();
        assert_eq!(c.snippets.len(), 1);
        std::fs::create_dir_all(d.path().join("pkg")).unwrap();
        std::fs::write(
            d.path().join("pkg/a.py"),
            "def a():\n    pass\ndef b():\n    pass\n",
        )
        .unwrap();
        std::fs::write(d.path().join("pkg/bad.py"), b"\xff\xfe").unwrap();
        let c = load(&d.path().join("pkg"), None, Some(1)).unwrap();
        assert_eq!(c.snippets.len(), 1);
        assert!(c.snippets[0].origin.ends_with("a.py:1"));
        assert!(load(&d.path().join("nope"), None, None).is_err());
    }
}
