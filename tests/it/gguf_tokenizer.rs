//! The tokenizer rebuilt from the packaged Gemma 3 270M GGUF's metadata against
//! transformers 5.24's own GGUF conversion (`tests/fixtures/gguf_tokenizer_reference.json`,
//! made by `tools/reference/gguf_tokenizer_reference.py`): identical ids and byte offsets on
//! real Python/Java code and edge cases, decode round trips, and offsets that slice the
//! input the way the syntax alignment needs.
//!
//! Needs the real GGUF (~250 MB): `CODESCOPE_GEMMA_GGUF`, else the path below. Missing file
//! = failure, not a skip.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use codescope::model::gguf::GgufFile;
use codescope::model::gguf_tokenizer::from_gguf;
use codescope::model::CodeTokenizer;
use serde_json::Value;
use tokenizers::Tokenizer;

/// The packaged Gemma 3 270M Q4_K_M GGUF (`codescope fetch gemma3-270m`, run by
/// `.ci/run`), or `CODESCOPE_GEMMA_GGUF`.
fn gemma_gguf() -> PathBuf {
    if let Some(p) = std::env::var_os("CODESCOPE_GEMMA_GGUF") {
        return PathBuf::from(p);
    }
    let files = codescope::model::source::resolve("gemma3-270m")
        .expect("packaged Gemma 3 GGUF (run `codescope fetch gemma3-270m`)");
    match files.weights {
        codescope::model::Weights::Gguf(p) => p,
        other => panic!("gemma3-270m resolved to {other:?}"),
    }
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn reference() -> &'static Value {
    static R: OnceLock<Value> = OnceLock::new();
    R.get_or_init(|| {
        let p = root().join("tests/fixtures/gguf_tokenizer_reference.json");
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    })
}

/// CPU seconds this process has used (user + system, all threads; Linux).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|x| x.parse().ok())
        .collect();
    f.iter().sum::<f64>() / 100.0
}

/// The tokenizer, built once per test binary; prints how long reading the metadata and
/// building took (wall and CPU; the CPU figure is what an idle machine would need at most).
fn tokenizer() -> &'static Tokenizer {
    static T: OnceLock<Tokenizer> = OnceLock::new();
    T.get_or_init(|| {
        let path = gemma_gguf();
        let want = reference()["gguf"]["bytes"].as_u64().unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        assert_eq!(
            len,
            want,
            "{} is not the GGUF the fixture was made from",
            path.display()
        );
        let t0 = Instant::now();
        let file = GgufFile::open(&path).unwrap();
        let (t1, c1) = (Instant::now(), cpu_seconds());
        let tok = from_gguf(file.metadata()).unwrap();
        eprintln!(
            "GGUF metadata read {:.0} ms; tokenizer built in {:.0} ms wall, {:.0} ms CPU",
            (t1 - t0).as_secs_f64() * 1e3,
            t1.elapsed().as_secs_f64() * 1e3,
            (cpu_seconds() - c1) * 1e3
        );
        tok
    })
}

/// What `CodeTokenizer::from_gguf` gives for the packaged file: codescope's own encoder.
fn native() -> &'static CodeTokenizer {
    static T: OnceLock<CodeTokenizer> = OnceLock::new();
    T.get_or_init(|| {
        let file = GgufFile::open(&gemma_gguf()).unwrap();
        let (t0, c0) = (Instant::now(), cpu_seconds());
        let tok = CodeTokenizer::from_gguf(&file).unwrap();
        eprintln!(
            "native encoder built in {:.0} ms wall, {:.0} ms CPU",
            t0.elapsed().as_secs_f64() * 1e3,
            (cpu_seconds() - c0) * 1e3
        );
        assert!(tok.is_native(), "Gemma 3 takes codescope's own encoder");
        tok
    })
}

/// `(name, text)` of every reference case (files are read from the repository).
fn cases() -> Vec<(String, String, &'static Value)> {
    reference()["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let name = c["name"].as_str().unwrap().to_string();
            let text = match c["file"].as_str() {
                Some(f) => std::fs::read_to_string(root().join(f)).unwrap(),
                None => c["text"].as_str().unwrap().to_string(),
            };
            (name, text, c)
        })
        .collect()
}

fn u32s(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

/// A case's `[[start, end], ...]` offsets.
fn offsets(v: &Value) -> Vec<(usize, usize)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o[0].as_u64().unwrap() as usize,
                o[1].as_u64().unwrap() as usize,
            )
        })
        .collect()
}

#[test]
fn vocabulary_matches_reference() {
    let t = tokenizer();
    let r = &reference()["tokenizer"];
    assert_eq!(
        t.get_vocab_size(true) as u64,
        r["vocab_size_with_added"].as_u64().unwrap()
    );
    assert_eq!(
        t.get_added_tokens_decoder().len() as u64,
        r["added_tokens"].as_u64().unwrap()
    );
    assert_eq!(t.token_to_id("<bos>"), Some(2));
    assert_eq!(t.token_to_id("<0x41>"), Some(238 + 0x41));
}

#[test]
fn ids_and_offsets_match_transformers() {
    let t = tokenizer();
    let mut n = 0;
    for (name, text, c) in cases() {
        let enc = t.encode(text.as_str(), true).unwrap();
        assert_eq!(enc.get_ids(), u32s(&c["ids"]).as_slice(), "ids of {name}");
        let want = offsets(&c["offsets"]);
        assert_eq!(enc.get_offsets(), want.as_slice(), "offsets of {name}");
        n += enc.len();
    }
    assert!(n > 5000, "{n} tokens compared");
}

/// codescope's own encoder against the same fixture: ids, and offsets for every text token
/// (its BOS is special: offsets `(0, 0)`, as the pipeline reports them).
#[test]
fn native_encoder_matches_transformers() {
    let t = native();
    let r = &reference()["tokenizer"];
    assert_eq!(
        t.vocab_size() as u64,
        r["vocab_size_with_added"].as_u64().unwrap()
    );
    let mut n = 0;
    for (name, text, c) in cases() {
        let enc = t.encode_all(&text).unwrap();
        let ids: Vec<u32> = enc.iter().map(|s| s.id).collect();
        assert_eq!(ids, u32s(&c["ids"]), "ids of {name}");
        let want = offsets(&c["offsets"]);
        let got: Vec<(usize, usize)> = enc.iter().map(|s| (s.start, s.end)).collect();
        assert_eq!(got, want, "offsets of {name}");
        n += enc.len();
    }
    assert!(n > 5000, "{n} tokens compared");
}

/// Texts built to hit every branch of the encoder: added-token text whole, cut and
/// adjacent; space, tab and newline runs; `▁` typed in; accents, CJK, emoji with joiners
/// and modifiers; private-use and control characters (byte fallback).
fn generated_texts() -> Vec<String> {
    const PIECES: &[&str] = &[
        "def",
        " ",
        "  ",
        "    ",
        "\t",
        "\n",
        "\n\n",
        "\r\n",
        "x",
        "_",
        "(",
        ")",
        ":",
        "=",
        "==",
        "return",
        "self",
        ".",
        ",",
        "'",
        "\"",
        "#",
        "0",
        "42",
        "3.14",
        "é",
        "ß",
        "Δ",
        "世界",
        "合計",
        "한",
        "😀",
        "👩\u{200d}💻",
        "👍🏽",
        "🇩🇪",
        "\u{e000}",
        "\u{0}",
        "\u{7}",
        "\u{200b}",
        "𠀀",
        "\u{2581}",
        "\u{2581}\u{2581}",
        "<bos>",
        "<eos>",
        "<pad>",
        "<mask>",
        "<start_of_turn>",
        "<end_of_turn>",
        "<unused0>",
        "<unused12>",
        "<bo",
        "s>",
        "<unused",
        "<",
        ">",
        "[multimodal]",
        "<start_of_image>",
        "\u{a0}",
        "\u{3000}",
        "\u{2028}",
        "café",
        "naïve",
        "String",
        "public",
        "{",
        "}",
        ";",
        "ArrayList<Integer>",
        "//",
        "/*",
        "*/",
        "@Override",
        "lambda",
        "   \t ",
    ];
    let mut rng = codescope::rng::Rng::new(0x5eed_70c0);
    let mut out: Vec<String> = (0..1000)
        .map(|i| {
            let len = (rng.next_u64() % (1 + i as u64 % 120)) as usize;
            (0..len)
                .map(|_| PIECES[(rng.next_u64() % PIECES.len() as u64) as usize])
                .collect()
        })
        .collect();
    // Every bundled sample, whole.
    for lang in ["python", "java"] {
        let dir = root().join("assets/samples").join(lang);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        out.extend(files.iter().map(|f| std::fs::read_to_string(f).unwrap()));
    }
    out
}

/// codescope's own encoder and the `tokenizers` pipeline give the same subwords (id,
/// string, offsets, special flag) on generated text and every bundled sample, and the same
/// vocabulary strings for every id.
#[test]
fn native_encoder_agrees_with_the_pipeline() {
    let pipeline = CodeTokenizer::from_tokenizer(tokenizer().clone()).unwrap();
    let native = native();
    assert!(!pipeline.is_native());
    let mut n = 0;
    for text in generated_texts() {
        let want = pipeline.encode_all(&text).unwrap();
        let got = native.encode_all(&text).unwrap();
        assert_eq!(got.len(), want.len(), "{text:?}");
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(
                (g.id, &g.text, g.start, g.end, g.special),
                (w.id, &w.text, w.start, w.end, w.special),
                "{text:?}"
            );
        }
        n += got.len();
    }
    assert!(n > 20_000, "{n} subwords compared");
    // Rebuilt from its stored form (the merge table a cache entry keeps): the same.
    let file = GgufFile::open(&gemma_gguf()).unwrap();
    let stored = native.stored_form().unwrap();
    let again = CodeTokenizer::from_gguf_stored(&file, Some(&stored)).unwrap();
    assert!(again.is_native());
    assert_eq!(again.stored_form().unwrap(), stored);
    for text in generated_texts().iter().step_by(7) {
        let a = again.encode_all(text).unwrap();
        let b = native.encode_all(text).unwrap();
        assert_eq!(a.len(), b.len(), "{text:?}");
        assert!(a
            .iter()
            .zip(&b)
            .all(|(x, y)| (x.id, &x.text, x.start, x.end, x.special)
                == (y.id, &y.text, y.start, y.end, y.special)));
    }
    // A stored form that does not fit is ignored (derived again).
    let other = CodeTokenizer::from_gguf_stored(&file, Some(&stored[..100])).unwrap();
    assert_eq!(other.stored_form().unwrap(), stored);
    assert_eq!(native.vocab_size(), pipeline.vocab_size());
    for id in 0..pipeline.vocab_size() as u32 + 2 {
        assert_eq!(native.id_to_token(id), pipeline.id_to_token(id), "id {id}");
    }
}

#[test]
fn decode_round_trips() {
    let t = tokenizer();
    for (name, text, c) in cases() {
        let ids = t.encode(text.as_str(), true).unwrap().get_ids().to_vec();
        assert_eq!(ids.first(), Some(&2), "{name}: BOS first");
        let back = t.decode(&ids[1..], false).unwrap();
        // Only a literal ▁ in the text cannot come back (it decodes to a space).
        let want = c["decoded"].as_str().unwrap_or(&text);
        assert_eq!(back, want, "decode of {name}");
        assert_eq!(c["round_trip"].as_bool().unwrap(), back == text, "{name}");
        // Skipping special tokens drops the BOS (and nothing else in code without
        // special-token text).
        if !text.contains('<') {
            assert_eq!(
                t.decode(&ids, true).unwrap(),
                want,
                "{name} skipping specials"
            );
        }
    }
}

/// The span of the character holding byte `i` of `s`.
fn char_span(s: &str, i: usize) -> (usize, usize) {
    let start = (0..=i).rev().find(|&j| s.is_char_boundary(j)).unwrap();
    let len = s[start..].chars().next().unwrap().len_utf8();
    (start, start + len)
}

/// Every text token's offsets slice the original text to exactly what the token spells
/// (`▁` = space; a byte-fallback token covers its whole character), and the spans tile the
/// text in order, so byte-span alignment with tree-sitter sees each byte once.
#[test]
fn offsets_slice_the_input() {
    let code = native();
    for (name, text, _) in cases() {
        let enc = code.encode(&text, 1 << 20).unwrap();
        assert_eq!(enc.truncated, 0);
        assert!(enc.tokens[0].special && enc.tokens[0].text == "<bos>");
        assert_eq!((enc.tokens[0].start, enc.tokens[0].end), (0, 0));
        let mut pos = 0;
        let mut bytes: Vec<u8> = Vec::new();
        let mut byte_span = None;
        for s in &enc.tokens[1..] {
            assert!(!s.special, "{name}: only the BOS is special");
            assert!(s.start < s.end && s.end <= text.len(), "{name}: {s:?}");
            assert!(text.is_char_boundary(s.start) && text.is_char_boundary(s.end));
            let piece = &text[s.start..s.end];
            if let Some(hex) = s.text.strip_prefix("<0x").and_then(|h| h.strip_suffix('>')) {
                // Byte fallback: consecutive tokens share their character's span.
                if byte_span != Some((s.start, s.end)) {
                    assert_eq!(s.start, pos, "{name}: gap before {s:?}");
                    bytes.clear();
                    byte_span = Some((s.start, s.end));
                }
                bytes.push(u8::from_str_radix(hex, 16).unwrap());
                assert_eq!(char_span(&text, s.start), (s.start, s.end));
                if bytes.len() == piece.len() {
                    assert_eq!(bytes.as_slice(), piece.as_bytes(), "{name}: {s:?}");
                    pos = s.end;
                }
                continue;
            }
            byte_span = None;
            assert_eq!(s.start, pos, "{name}: gap or overlap before {s:?}");
            let spelled = s.text.replace('\u{2581}', " ");
            if name == "meta_space_literal" {
                // A literal ▁ in the text is indistinguishable from a space once normalized.
                assert_eq!(piece.replace('\u{2581}', " "), spelled, "{name}: {s:?}");
            } else {
                assert_eq!(piece, spelled, "{name}: {s:?}");
            }
            pos = s.end;
        }
        assert_eq!(pos, text.len(), "{name}: tokens cover the text");
    }
}

/// A Python snippet through `CodeTokenizer`: windowing keeps the BOS, code tokens carry
/// byte offsets of multi-byte text correctly.
#[test]
fn python_snippet_through_code_tokenizer() {
    let code = native();
    let text = "def 合計(xs):\n    return sum(x for x in xs)  # ß\n";
    let enc = code.encode(text, 1024).unwrap();
    let spans: Vec<&str> = enc.tokens[1..]
        .iter()
        .map(|s| &text[s.start..s.end])
        .collect();
    assert_eq!(spans.concat(), text);
    assert!(
        spans.contains(&"    "),
        "indentation run is one token: {spans:?}"
    );
    assert!(spans.contains(&"\n"), "newline is a token: {spans:?}");
    let short = code.encode(text, 5).unwrap();
    assert_eq!(short.ids.len(), 5);
    assert_eq!(short.ids[0], 2);
    assert_eq!(short.truncated, enc.ids.len() - 5);
}

/// The converter paths the Gemma file does not take — `gpt2` type (byte-level BPE with the
/// file's merges, Qwen2 pre-tokenizer regex, control + user-defined tokens, no BOS) and
/// `llama` type on a non-Gemma architecture (scores ranking, Metaspace prefix space, BOS) —
/// on tiny GGUFs written by the reference script, against transformers' conversion of the
/// same files.
#[test]
fn synthetic_ggufs_match_transformers() {
    let r: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/fixtures/gguf_tokenizer_synthetic.json"))
            .unwrap(),
    )
    .unwrap();
    let files = r["files"].as_object().unwrap();
    assert_eq!(files.len(), 2);
    for (file, want) in files {
        let f = GgufFile::open(&root().join("tests/fixtures").join(file)).unwrap();
        let t = from_gguf(f.metadata()).unwrap();
        assert_eq!(
            t.get_vocab_size(true) as u64,
            want["vocab_size_with_added"].as_u64().unwrap(),
            "{file}"
        );
        let cases = want["cases"].as_array().unwrap();
        assert!(cases.len() > 10);
        for c in cases {
            let name = c["name"].as_str().unwrap();
            let text = match c["file"].as_str() {
                Some(p) => std::fs::read_to_string(root().join(p)).unwrap(),
                None => c["text"].as_str().unwrap().to_string(),
            };
            let enc = t.encode(text.as_str(), true).unwrap();
            assert_eq!(
                enc.get_ids(),
                u32s(&c["ids"]).as_slice(),
                "{file}: ids of {name}"
            );
            let offsets: Vec<(usize, usize)> = c["offsets"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| {
                    (
                        o[0].as_u64().unwrap() as usize,
                        o[1].as_u64().unwrap() as usize,
                    )
                })
                .collect();
            assert_eq!(
                enc.get_offsets(),
                offsets.as_slice(),
                "{file}: offsets of {name}"
            );
            if !name.ends_with("_specials") {
                // SentencePiece with a prefix space: a text that already starts with a
                // space gets no extra ▁, and the decoder's strip then eats one of its
                // spaces (transformers' LlamaTokenizer pipeline does the same).
                let want = match text.strip_prefix(' ') {
                    Some(rest) if file.contains("spm") => rest,
                    _ => text.as_str(),
                };
                assert_eq!(
                    t.decode(enc.get_ids(), true).unwrap(),
                    want,
                    "{file}: {name}"
                );
            }
        }
    }
}

/// The real syntax alignment on the Gemma subwords: every code token of every Python/Java
/// case is covered by the subwords overlapping it, the BOS aligns to nothing, and a
/// subword overlapping a code token lies within the text.
#[test]
fn syntax_alignment_covers_every_code_token() {
    use codescope::syntax::{align, parse, Language, SubwordSpan};
    let code = native();
    let mut checked = 0;
    for (name, text, c) in cases() {
        let Some(lang) = c["file"]
            .as_str()
            .and_then(|f| Language::from_path(Path::new(f)))
        else {
            continue;
        };
        let syntax = parse(&text, lang).unwrap();
        let enc = code.encode(&text, 1 << 20).unwrap();
        let spans: Vec<SubwordSpan> = enc
            .tokens
            .iter()
            .map(|s| {
                if s.special {
                    SubwordSpan::special()
                } else {
                    SubwordSpan::new(s.start, s.end)
                }
            })
            .collect();
        let a = align(&spans, &syntax.tokens);
        assert!(
            a.subword_to_tokens[0].is_empty(),
            "{name}: BOS aligns to nothing"
        );
        assert!(
            a.uncovered_tokens().is_empty(),
            "{name}: uncovered code tokens"
        );
        for (i, tok) in syntax.tokens.iter().enumerate() {
            let subs = &a.token_to_subwords[i];
            let first = spans[subs[0]].start;
            let last = spans[*subs.last().unwrap()].end;
            assert!(
                first <= tok.start && last >= tok.end,
                "{name}: {:?} not spanned by its subwords",
                tok.text
            );
        }
        checked += syntax.tokens.len();
    }
    assert!(checked > 1000, "{checked} code tokens checked");
}
