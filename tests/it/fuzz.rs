//! A bounded fuzz harness inside `cargo test` (issue #16): generated and mutated inputs
//! through the public APIs, which must return `Ok` or a one-line `Err`, never panic,
//! hang or allocate without bound.
//!
//! - source text (the bundled samples and fixtures, mutated: token insertions, deletions,
//!   duplications, truncation at any byte, unicode, deep nesting, long chains) through
//!   `syntax::parse`, `syntax::align` (with random subword splits) and, for one
//!   input in fifteen, `analysis::analyze` with a tiny random BERT;
//! - model files mutated byte-wise and field-wise: GGUF (header and tokenizer metadata),
//!   safetensors, `pytorch_model.bin` pickles, `config.json` and `tokenizer.json`,
//!   through the readers and `LoadedModel::load`.
//!
//! Defaults keep CI's run bounded: 1,500 text inputs and 150 mutations of each of six
//! model files (2,400 inputs). Longer local runs: `CODESCOPE_FUZZ_CASES=100000
//! CODESCOPE_FUZZ_FILES=5000 cargo test --release --test it fuzz -- --nocapture`
//! (`CODESCOPE_FUZZ_SEED` picks another stream). A failure prints the seed and case.

use std::path::Path;
use std::time::Instant;

use codescope::analysis;
use codescope::model::testutil::{write_tiny_model, SplitMix, Tiny};
use codescope::model::{gguf, LoadedModel, ModelFiles};
use codescope::syntax::{self, Language, SubwordSpan};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

fn seed() -> u64 {
    env_usize("CODESCOPE_FUZZ_SEED", 0x5eed) as u64
}

struct Rng(SplitMix);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        (self.0.next_u64() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// The seed corpus: bundled samples and snippet fixtures, with their language.
fn corpus() -> Vec<(String, Language)> {
    let mut out = Vec::new();
    for dir in [
        "assets/samples/python",
        "assets/samples/java",
        "tests/fixtures/snippets",
    ] {
        let mut files: Vec<_> = std::fs::read_dir(root().join(dir))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        files.sort();
        for f in files {
            if let (Ok(text), Some(lang)) = (std::fs::read_to_string(&f), Language::from_path(&f)) {
                out.push((text, lang));
            }
        }
    }
    assert!(out.len() >= 8, "seed corpus");
    out
}

const PIECES: &[&str] = &[
    "(", ")", "[", "]", "{", "}", ":", ";", ",", ".", "\n", "    ", "\t", "\r\n", "def ", "class ",
    "lambda ", "return ", "if ", "else", "for ", "in ", "'", "\"", "\"\"\"", "#", "\\", "@", "->",
    "=", "==", "+=", "**", "x", "_y1", "0x", "1e", "async ", "await ", "yield ", "public ",
    "static ", "void ", "<", ">", "/*", "*/", "//", "é", "😀", "\u{200b}", "\u{feff}", "\0",
    "new ", "int ", "String ", "try:", "except ", "finally",
];

/// One mutated (or generated) source text.
fn mutate(r: &mut Rng, seed_text: &str) -> String {
    if r.chance(20) {
        // Generated shapes that stress depth and breadth (bounded sizes).
        let n = 1 + r.below(400);
        return match r.below(5) {
            0 => format!("x = {}1{}\n", "(".repeat(n), ")".repeat(n)),
            1 => format!("x = a{}\n", ".b".repeat(n * 5)),
            2 => format!("x = [{}]\n", vec!["1"; n * 5].join(", ")),
            3 => format!("y = {}\n", vec!["a"; n * 3].join(" + ")),
            _ => format!("{}pass\n", "if x:\n".repeat(n.min(90))),
        };
    }
    let mut b: Vec<u8> = seed_text.as_bytes().to_vec();
    for _ in 0..1 + r.below(6) {
        let len = b.len().max(1);
        match r.below(5) {
            0 => {
                let at = r.below(len);
                let p = PIECES[r.below(PIECES.len())].as_bytes();
                b.splice(at.min(b.len())..at.min(b.len()), p.iter().copied());
            }
            1 => {
                let a = r.below(len);
                let e = (a + r.below(40)).min(b.len());
                b.drain(a.min(e)..e);
            }
            2 => {
                let a = r.below(len);
                let e = (a + r.below(200)).min(b.len());
                let piece: Vec<u8> = b[a.min(e)..e].to_vec();
                let at = r.below(len).min(b.len());
                b.splice(at..at, piece);
            }
            3 => {
                let at = r.below(len);
                b.truncate(at);
            }
            _ => {
                if !b.is_empty() {
                    let at = r.below(b.len());
                    b[at] = (r.below(95) + 32) as u8;
                }
            }
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

/// Random subword spans over `text` (char boundaries), specials at both ends.
fn subwords(r: &mut Rng, text: &str) -> Vec<SubwordSpan> {
    let mut v = vec![SubwordSpan::special()];
    let mut at = 0;
    while at < text.len() {
        let mut e = (at + 1 + r.below(6)).min(text.len());
        while !text.is_char_boundary(e) {
            e += 1;
        }
        if !r.chance(10) {
            v.push(SubwordSpan::new(at, e));
        }
        at = e;
    }
    v.push(SubwordSpan::special());
    v
}

#[test]
fn text_inputs_through_syntax_alignment_and_analysis() {
    let n = env_usize("CODESCOPE_FUZZ_CASES", 1500);
    let seeds = corpus();
    let dir = tempfile::tempdir().unwrap();
    write_tiny_model(dir.path(), &Tiny::default()).unwrap();
    let model =
        LoadedModel::load(&ModelFiles::from_dir(dir.path(), "tiny".into()).unwrap()).unwrap();
    let mut r = Rng(SplitMix::new(seed()));
    let (mut parsed, mut refused, mut analysed) = (0, 0, 0);
    let t0 = Instant::now();
    for case in 0..n {
        let (seed_text, lang) = &seeds[r.below(seeds.len())];
        let text = mutate(&mut r, seed_text);
        let ctx = || format!("seed {} case {case} ({lang:?}): {text:?}", seed());
        match syntax::parse(&text, *lang) {
            Ok(syn) => {
                parsed += 1;
                for t in &syn.tokens {
                    assert!(
                        t.start <= t.end
                            && t.end <= text.len()
                            && text.is_char_boundary(t.start)
                            && text.is_char_boundary(t.end),
                        "token {t:?} out of bounds; {}",
                        ctx()
                    );
                }
                let spans = subwords(&mut r, &text);
                let a = syntax::align(&spans, &syn.tokens);
                assert_eq!(a.subword_to_tokens.len(), spans.len(), "{}", ctx());
                assert_eq!(a.token_to_subwords.len(), syn.tokens.len(), "{}", ctx());
            }
            Err(e) => {
                refused += 1;
                assert_eq!(e.to_string().lines().count(), 1, "{}", ctx());
            }
        }
        if case % 15 == 0 {
            let opts = analysis::AnalyzeOptions {
                mode: if r.chance(2) {
                    analysis::Mode::Source
                } else {
                    analysis::Mode::Paper
                },
                threshold: 0.05,
                sweep: r.chance(4),
            };
            match analysis::analyze(&model, &text, *lang, &opts) {
                Ok(a) => {
                    analysed += 1;
                    assert_eq!(a.token_attention.layers, 2, "{}", ctx());
                }
                Err(e) => assert_eq!(e.to_string().lines().count(), 1, "{}", ctx()),
            }
        }
    }
    eprintln!(
        "fuzz text: {n} inputs ({parsed} parsed, {refused} refused, {analysed} analysed) in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

/// Byte-level mutations of a file: flips, extreme little-endian integers written over
/// fields, truncation, duplication of a slice. `hot` bytes at the start are favoured
/// (headers).
fn mutate_bytes(r: &mut Rng, b: &[u8], hot: usize) -> Vec<u8> {
    let mut v = b.to_vec();
    for _ in 0..1 + r.below(4) {
        let span = if r.chance(4) {
            v.len()
        } else {
            hot.min(v.len())
        };
        let at = r.below(span.max(1)).min(v.len().saturating_sub(1));
        match r.below(5) {
            0 => {
                if !v.is_empty() {
                    v[at] ^= 1 << r.below(8);
                }
            }
            1 => {
                let vals: [u64; 7] = [
                    0,
                    1,
                    u32::MAX as u64,
                    u64::MAX,
                    1 << 31,
                    1 << 40,
                    1_000_000_000,
                ];
                let x = vals[r.below(vals.len())].to_le_bytes();
                let w = [1, 2, 4, 8][r.below(4)];
                for (i, byte) in x.iter().take(w).enumerate() {
                    if at + i < v.len() {
                        v[at + i] = *byte;
                    }
                }
            }
            2 => v.truncate(at),
            3 => {
                let e = (at + r.below(64)).min(v.len());
                let piece = v[at..e].to_vec();
                v.splice(at..at, piece);
            }
            _ => {
                if !v.is_empty() {
                    v[at] = r.below(256) as u8;
                }
            }
        }
    }
    v
}

/// Assert an error is one line (a panic would already fail the test).
fn one_line<T>(r: codescope::Result<T>, what: &str) -> bool {
    match r {
        Ok(_) => true,
        Err(e) => {
            let s = e.to_string();
            assert_eq!(s.lines().count(), 1, "{what}: {s}");
            false
        }
    }
}

#[test]
fn model_files_mutated() {
    let n = env_usize("CODESCOPE_FUZZ_FILES", 150);
    let mut r = Rng(SplitMix::new(seed() ^ 0xf11e));
    let work = tempfile::tempdir().unwrap();
    let fx = root().join("tests/fixtures");
    let t0 = Instant::now();
    let mut loaded = [0usize; 5];
    // GGUF: the tiny Llama (header, metadata, tensors) and the SentencePiece tokenizer
    // fixture (tokenizer metadata).
    for (i, file) in ["tiny_gguf/llama.gguf", "gguf_tok_spm.gguf"]
        .iter()
        .enumerate()
    {
        let good = std::fs::read(fx.join(file)).unwrap();
        for case in 0..n {
            let bad = mutate_bytes(&mut r, &good, 4096);
            let p = work.path().join(format!("g{i}-{case}.gguf"));
            std::fs::write(&p, &bad).unwrap();
            let what = format!("{file} case {case} seed {}", seed());
            if let Ok(f) = gguf::GgufFile::open(&p) {
                if i == 0 {
                    if one_line(codescope::model::load_gguf_backbone(&p).map(|_| ()), &what) {
                        loaded[0] += 1;
                    }
                } else if one_line(
                    codescope::model::gguf_tokenizer::from_gguf(f.metadata()).map(|_| ()),
                    &what,
                ) {
                    loaded[0] += 1;
                }
            }
            std::fs::remove_file(&p).unwrap();
        }
    }
    // A tiny model directory whose one file is mutated per case.
    let base = work.path().join("base");
    write_tiny_model(&base, &Tiny::default()).unwrap();
    let codegen = fx.join("tiny_codegen");
    let cases: [(&str, &Path, &str, usize); 4] = [
        ("safetensors", &base, "model.safetensors", 2048),
        ("config", &base, "config.json", 1 << 20),
        ("tokenizer", &codegen, "tokenizer.json", 1 << 20),
        ("pickle", &codegen, "pytorch_model.bin", 1 << 20),
    ];
    for (k, (kind, src, file, hot)) in cases.iter().enumerate() {
        let dir = work.path().join(kind);
        std::fs::create_dir_all(&dir).unwrap();
        for e in std::fs::read_dir(src).unwrap().flatten() {
            // The pickle case must use the .bin: leave out the safetensors.
            if *kind == "pickle" && e.file_name() == "model.safetensors" {
                continue;
            }
            std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
        }
        let good = std::fs::read(dir.join(file)).unwrap();
        for case in 0..n {
            let bad = if *kind == "pickle" {
                mutate_pickle(&mut r, &good)
            } else {
                mutate_bytes(&mut r, &good, *hot)
            };
            std::fs::write(dir.join(file), &bad).unwrap();
            let what = format!("{kind} case {case} seed {}", seed());
            let res = ModelFiles::from_dir(&dir, kind.to_string())
                .and_then(|f| LoadedModel::load(&f))
                .and_then(|m| m.trace("def f(x):\n    return x\n", &Default::default()));
            if one_line(res, &what) {
                loaded[k + 1] += 1;
            }
        }
        std::fs::write(dir.join(file), &good).unwrap();
    }
    eprintln!(
        "fuzz files: {} mutations per kind; still usable: gguf {}, safetensors {}, config {}, tokenizer {}, pickle {} ({:.1} s)",
        n,
        loaded[0],
        loaded[1],
        loaded[2],
        loaded[3],
        loaded[4],
        t0.elapsed().as_secs_f64()
    );
}

/// Mutate the `data.pkl` inside a torch zip (stored entries rewritten with a new pickle).
fn mutate_pickle(r: &mut Rng, zip_bytes: &[u8]) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut z = zip::ZipArchive::new(std::io::Cursor::new(zip_bytes)).unwrap();
    let mut out = std::io::Cursor::new(Vec::new());
    {
        let mut w = zip::ZipWriter::new(&mut out);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        for i in 0..z.len() {
            let mut e = z.by_index(i).unwrap();
            let name = e.name().unwrap().to_string();
            let mut b = Vec::new();
            e.read_to_end(&mut b).unwrap();
            if name.ends_with("data.pkl") {
                b = mutate_bytes(r, &b, b.len());
            }
            w.start_file(name, opts).unwrap();
            w.write_all(&b).unwrap();
        }
        w.finish().unwrap();
    }
    out.into_inner()
}

/// Random text drawn heavily from what a terminal or an XML parser must never see raw
/// (C0 and C1 controls, DEL, escape sequences, bidirectional overrides, non-characters of
/// every plane) through the one escaping function of messages (`error::printable`), its
/// terminal form (`printable_for_terminal`, codescope's colour codes kept) and the
/// figures' (`svg::esc`): no control or non-character survives, only `ESC [ digits m`
/// does where colour is kept, and every escaped string is XML character data that parses.
#[test]
fn escaping_functions_leave_nothing_raw() {
    use codescope::error::{printable, printable_for_terminal};
    use codescope::export::figure::svg::esc;
    let cases = env_usize("CODESCOPE_FUZZ_CASES", 1500);
    let mut r = Rng(SplitMix::new(seed() ^ 0xe5c));
    let nonchar = |c: char| matches!(c, '\u{fdd0}'..='\u{fdef}') || (c as u32 & 0xfffe) == 0xfffe;
    let pieces: &[&str] = &[
        "\u{1b}]0;title\u{7}",
        "\u{1b}]52;c;aGk=\u{7}",
        "\u{1b}[2J",
        "\u{1b}[31m",
        "\u{1b}[0m",
        "\u{1b}[1;2;3m",
        "\u{1b}[?1049h",
        "\r",
        "\n",
        "\t",
        "\u{7f}",
        "\u{9b}",
        "\u{202e}",
        "\u{2066}",
        "<&>\"",
        "def f(x):",
        "é",
        "\u{fffd}",
    ];
    for case in 0..cases {
        let mut s = String::new();
        for _ in 0..r.below(12) {
            match r.below(3) {
                0 => s.push_str(pieces[r.below(pieces.len())]),
                1 => s.push(char::from_u32(r.below(0x100) as u32).unwrap()),
                _ => {
                    // A non-character of a random plane, or any scalar value.
                    let c = if r.chance(2) {
                        (r.below(17) as u32) << 16 | 0xfffe | r.below(2) as u32
                    } else {
                        r.below(0x11_0000) as u32
                    };
                    s.extend(char::from_u32(c));
                }
            }
        }
        let ctx = format!("seed {:#x} case {case}: {s:?}", seed());
        for keep in [false, true] {
            let p = printable(&s, keep);
            assert!(
                !p.chars().any(|c| (c.is_control() && !(keep && c == '\n'))
                    || nonchar(c)
                    || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')),
                "printable({keep}) {ctx}: {p:?}"
            );
            let t = printable_for_terminal(&s, keep);
            let mut rest: &str = &t;
            while let Some(i) = rest.find('\u{1b}') {
                assert!(keep, "an escape kept without colour, {ctx}: {t:?}");
                let body = &rest[i + 1..];
                let n = body
                    .strip_prefix('[')
                    .map(|b| {
                        b.bytes()
                            .take_while(|b| b.is_ascii_digit() || *b == b';')
                            .count()
                    })
                    .unwrap_or_else(|| panic!("a raw escape, {ctx}: {t:?}"));
                assert_eq!(body.as_bytes().get(1 + n), Some(&b'm'), "{ctx}: {t:?}");
                rest = &body[1 + n..];
            }
            assert!(
                !t.chars().any(|c| c != '\u{1b}'
                    && c != '\n'
                    && c != '\t'
                    && (c.is_control() || nonchar(c))),
                "printable_for_terminal({keep}) {ctx}: {t:?}"
            );
        }
        let x = esc(&s);
        assert!(
            !x.chars().any(|c| c.is_control() || nonchar(c)),
            "esc {ctx}: {x:?}"
        );
        let doc = format!("<svg xmlns=\"http://www.w3.org/2000/svg\"><text>{x}</text></svg>");
        resvg::usvg::Tree::from_str(&doc, &resvg::usvg::Options::default())
            .unwrap_or_else(|e| panic!("esc {ctx}: the SVG does not parse: {e}"));
    }
}
