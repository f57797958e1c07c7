//! The house's layering, read off the source: the module map in `src/lib.rs` lists the
//! top-level modules from the front ends down to the foundations, one row per layer, and
//! a module may use only modules in its own row or the rows below it. This test reads every
//! `crate::` path in `src/` (comments left out) and fails on a use that reaches up the map,
//! on a cycle between top-level modules, and on a top-level module the map does not name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The map's rows, top first: each row's module names (`[`name`]` or `` `name` `` in the
/// table's first column).
fn map_rows(lib: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for line in lib.lines() {
        let Some(rest) = line.strip_prefix("//! | ") else {
            continue;
        };
        let first = rest.split(" | ").next().unwrap_or("");
        let names: Vec<String> = first
            .split(',')
            .filter_map(|c| {
                let c = c.trim().trim_start_matches('[').trim_end_matches(']');
                let c = c.trim_matches('`');
                (!c.is_empty() && c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_'))
                    .then(|| c.to_string())
            })
            .collect();
        if !names.is_empty() && names[0] != "module" {
            rows.push(names);
        }
    }
    rows
}

/// The source without comments and without the contents of string literals (so a `"//"`
/// in a string starts no comment, and a path in a message is no use).
fn strip_comments(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'"' {
            // a string literal: copy it whole (escapes skipped)
            out.push('"');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            out.push('"');
            i += 1;
        } else if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            i += 2;
            while i + 1 < b.len() && !b[i..].starts_with(b"*/") {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'\'' && i + 2 < b.len() && b[i + 2] == b'\'' {
            // a char literal like '"'
            out.push_str("' '");
            i += 3;
        } else {
            let ch = src[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// The top-level modules named after `crate::` in `src` (groups `crate::{a, b::c}` too).
fn crate_uses(src: &str) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    let mut rest = src;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().last();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue; // `codescope_crate::` or similar
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut word = String::new();
            let mut at_start = true;
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => at_start = true,
                    c if depth == 1 && at_start && (c.is_ascii_alphanumeric() || c == '_') => {
                        word.push(c)
                    }
                    _ => {
                        if !word.is_empty() {
                            used.insert(std::mem::take(&mut word));
                        }
                        if depth == 1 && !c.is_whitespace() {
                            at_start = false;
                        }
                    }
                }
            }
            if !word.is_empty() {
                used.insert(word);
            }
        } else {
            let w: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            used.insert(w);
        }
    }
    used
}

fn rust_files(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(p).unwrap().flatten().collect();
        entries.sort_by_key(|e| e.path());
        for e in entries {
            rust_files(&e.path(), out);
        }
    } else if p.is_file() && p.extension().is_some_and(|e| e == "rs") {
        out.push(p.to_path_buf());
    }
}

/// Top-level module -> (used module -> a file that uses it).
fn graph(src: &Path, modules: &BTreeSet<String>) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut g: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for m in modules {
        let (file, dir) = (src.join(format!("{m}.rs")), src.join(m));
        let mut files = Vec::new();
        rust_files(&file, &mut files);
        rust_files(&dir, &mut files);
        let e = g.entry(m.clone()).or_default();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for u in crate_uses(&strip_comments(&text)) {
                if &u != m && modules.contains(&u) {
                    e.entry(u)
                        .or_insert_with(|| f.strip_prefix(src).unwrap().display().to_string());
                }
            }
        }
    }
    g
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The top-level modules `src/lib.rs` declares.
fn declared(lib: &str) -> BTreeSet<String> {
    lib.lines()
        .filter_map(|l| {
            l.strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("mod "))
        })
        .map(|l| l.trim_end_matches(';').trim().to_string())
        .collect()
}

#[test]
fn no_module_uses_one_above_it_in_the_map() {
    let src = src_dir();
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let rows = map_rows(&lib);
    let modules = declared(&lib);
    let mut level = BTreeMap::new();
    for (i, row) in rows.iter().enumerate() {
        for m in row {
            level.insert(m.clone(), i);
        }
    }
    let unmapped: Vec<_> = modules.iter().filter(|m| !level.contains_key(*m)).collect();
    assert!(
        unmapped.is_empty(),
        "src/lib.rs's map does not name {unmapped:?}"
    );
    let g = graph(&src, &modules);
    let mut upward = Vec::new();
    for (m, uses) in &g {
        for (u, file) in uses {
            if level[u] < level[m] {
                upward.push(format!(
                    "{m} uses {u} (in src/{file}), which stands above it"
                ));
            }
        }
    }
    assert!(upward.is_empty(), "{}", upward.join("\n"));
}

#[test]
fn no_cycle_between_top_level_modules() {
    let src = src_dir();
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let modules = declared(&lib);
    let g = graph(&src, &modules);
    // depth-first search for a back edge, reporting the cycle's path
    fn visit(
        m: &str,
        g: &BTreeMap<String, BTreeMap<String, String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(m.to_string(), 1);
        path.push(m.to_string());
        for u in g.get(m).into_iter().flat_map(|e| e.keys()) {
            match state.get(u.as_str()).copied().unwrap_or(0) {
                1 => {
                    let from = path.iter().position(|p| p == u).unwrap_or(0);
                    let mut c = path[from..].to_vec();
                    c.push(u.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(u, g, state, path) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(m.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in &modules {
        if state.get(m.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(m, &g, &mut state, &mut Vec::new()) {
                panic!("a cycle between top-level modules: {}", c.join(" -> "));
            }
        }
    }
}

#[test]
fn the_reader_sees_uses_and_skips_comments() {
    let src = "use crate::{analysis::{self, X}, model};\n// crate::tui\n/* crate::cli */\nlet s = \"crate::present\"; crate::fsio::write();\n";
    let u = crate_uses(&strip_comments(src));
    let want: BTreeSet<String> = ["analysis", "model", "fsio"]
        .into_iter()
        .map(String::from)
        .collect();
    // comments and string literals are not uses
    assert_eq!(u, want);
    let rows = map_rows("//! | module | owns |\n//! |---|---|\n//! | [`cli`] | x |\n//! | [`color`], [`rng`] | y |\n");
    assert_eq!(
        rows,
        vec![vec!["cli".to_string()], vec!["color".into(), "rng".into()]]
    );
}
