//! PLBART's tokenizer from its SentencePiece model alone (`sentencepiece.bpe.model`, no
//! `tokenizer.json`) against transformers' `PLBartTokenizer`: ids on the bundled snippets
//! and tricky strings (whitespace runs, tabs, unicode, unknown characters, the character
//! map's rules, special-token text), for no source language, `python`, `java` and the
//! `multi` language codes; a PLBART directory with only the model traces through the
//! binary; a corrupt, unigram or byte-fallback model is a one-line error. Fixtures made by
//! `tools/reference/plbart_spm_reference.py`.

use std::path::{Path, PathBuf};

use codescope::model::tokenizer::CodeTokenizer;

use crate::cli_sources::{fails, fixture, ok};
use crate::t5_bart_reference::run;

fn model() -> PathBuf {
    PathBuf::from(fixture("tiny_plbart")).join("sentencepiece.bpe.model")
}

fn reference() -> serde_json::Value {
    let p = PathBuf::from(fixture("plbart_spm_reference.json"));
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The tokenizer as `PLBartTokenizer.from_pretrained` would build it from a directory
/// with this `tokenizer_config.json` (none when `None`).
fn tokenizer(config: Option<serde_json::Value>) -> CodeTokenizer {
    let d = tempfile::tempdir().unwrap();
    if let Some(c) = config {
        std::fs::write(d.path().join("tokenizer_config.json"), c.to_string()).unwrap();
    }
    CodeTokenizer::plbart(&model(), d.path()).unwrap()
}

#[test]
fn plbart_sentencepiece_ids_match_transformers() {
    let r = reference();
    let forms = [
        ("none", None),
        ("python", Some(serde_json::json!({"src_lang": "python"}))),
        ("java", Some(serde_json::json!({"src_lang": "__java__"}))),
        (
            "multi_java",
            Some(serde_json::json!({"language_codes": "multi", "src_lang": "java"})),
        ),
    ];
    let cases = r["cases"].as_array().unwrap();
    assert!(cases.len() > 20);
    for (form, config) in forms {
        let t = tokenizer(config);
        assert_eq!(
            t.vocab_size() as u64,
            r["vocab_size"][form].as_u64().unwrap()
        );
        for c in cases {
            let text = c["text"].as_str().unwrap();
            let toks = t.encode_all(text).unwrap();
            let ids: Vec<u64> = toks.iter().map(|s| s.id as u64).collect();
            let want: Vec<u64> = c["ids"][form]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .collect();
            assert_eq!(ids, want, "{form} {}: {text:?}", c["name"]);
            if let (Some(p), "none") = (c.get("pieces"), form) {
                let pieces: Vec<String> = toks.iter().map(|s| s.text.clone()).collect();
                let want: Vec<String> = p
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap().to_string())
                    .collect();
                assert_eq!(pieces, want, "{text:?}");
            }
            // Offsets lie in the text, in order; only the suffix is special.
            let mut at = 0;
            for s in &toks {
                if !s.special {
                    assert!(s.start >= at && s.start <= s.end && s.end <= text.len());
                    assert!(text.is_char_boundary(s.start) && text.is_char_boundary(s.end));
                    at = s.end;
                }
            }
            let n = if form == "none" { 1 } else { 2 };
            assert!(toks[toks.len() - n..].iter().all(|s| s.special));
            assert!(toks[..toks.len() - n].iter().all(|s| !s.special));
        }
    }
}

#[test]
fn plbart_sentencepiece_offsets_name_the_source_text() {
    let t = tokenizer(Some(serde_json::json!({"src_lang": "python"})));
    let text = "  if  x\t<= y:";
    let toks = t.encode_all(text).unwrap();
    let spans: Vec<(&str, &str)> = toks
        .iter()
        .map(|s| (s.text.as_str(), &text[s.start..s.end]))
        .collect();
    // The leading spaces are dropped; the collapsed spaces and the tab (a space by the
    // character map) belong to the `▁` that stands for them; `<=` is the character
    // map's `≤`, unknown here.
    assert_eq!(
        spans,
        [
            ("▁if", "if"),
            ("▁", "  "),
            ("x", "x"),
            ("▁", "\t"),
            ("<unk>", "<="),
            ("▁", " "),
            ("y", "y"),
            (":", ":"),
            ("</s>", ""),
            ("__python__", ""),
        ]
    );
}

/// The error line of `trace --model m s`.
fn trace_fails(root: &Path, m: &Path, s: &Path) -> String {
    fails(&run(
        root,
        &[
            "trace",
            "--model",
            &m.display().to_string(),
            &s.display().to_string(),
        ],
    ))
}

/// A PLBART directory as the hub has it: config, weights, the SentencePiece model, a
/// `tokenizer_config.json`; no `tokenizer.json`.
fn plbart_dir(root: &Path, model: &[u8]) -> PathBuf {
    let m = root.join("plbart");
    std::fs::create_dir_all(&m).unwrap();
    for f in ["config.json", "pytorch_model.bin"] {
        std::fs::copy(PathBuf::from(fixture("tiny_plbart")).join(f), m.join(f)).unwrap();
    }
    std::fs::write(m.join("sentencepiece.bpe.model"), model).unwrap();
    std::fs::write(
        m.join("tokenizer_config.json"),
        r#"{"src_lang": "python", "language_codes": "base"}"#,
    )
    .unwrap();
    m
}

#[test]
fn plbart_with_only_its_sentencepiece_model_traces_through_the_cli() {
    let root = tempfile::tempdir().unwrap();
    let m = plbart_dir(root.path(), &std::fs::read(model()).unwrap());
    let sample = root.path().join("s.py");
    let text = "def add(a, b):\n    return a + b\n";
    std::fs::write(&sample, text).unwrap();
    let out = ok(&run(
        root.path(),
        &[
            "trace",
            "--json",
            "--model",
            &m.display().to_string(),
            &sample.display().to_string(),
        ],
    ));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["model"]["architecture"], "plbart");
    let ids: Vec<u64> = v["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_u64().unwrap())
        .collect();
    let want: Vec<u64> = tokenizer(Some(serde_json::json!({"src_lang": "python"})))
        .encode_all(text)
        .unwrap()
        .iter()
        .map(|s| s.id as u64)
        .collect();
    assert_eq!(ids, want);
    assert_eq!(ids[ids.len() - 2..], [2, 98], "</s> __python__");
    let n = ids.len();
    assert_eq!(v["attention"][1][3].as_array().unwrap().len(), n);
}

/// Each input carries its own language's code (`tokens </s> __python__` / `__java__`), as
/// transformers' `PLBartTokenizer` with `src_lang` set to that language encodes it,
/// whatever `src_lang` the directory's `tokenizer_config.json` names (python here):
/// `trace` through the binary on the bundled Python and Java snippets, by file
/// extension and by `--lang`, and the analysis (`analyze`, the explorer, the causal tests)
/// and the probes' hidden states on the Java one.
#[test]
fn plbart_encoder_input_ends_with_each_snippets_language_code() {
    use codescope::analysis::{self, AnalyzeOptions};
    use codescope::syntax::Language;
    let r = reference();
    let root = tempfile::tempdir().unwrap();
    let m = plbart_dir(root.path(), &std::fs::read(model()).unwrap());
    let ids_of = |c: &serde_json::Value, form: &str| -> Vec<u64> {
        c["ids"][form]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect()
    };
    let trace_ids = |file: &Path, extra: &[&str]| -> Vec<u64> {
        let mut args = vec!["trace", "--json", "--model"];
        let (ms, fs) = (m.display().to_string(), file.display().to_string());
        args.push(&ms);
        args.extend_from_slice(extra);
        args.push(&fs);
        let v: serde_json::Value = serde_json::from_str(&ok(&run(root.path(), &args))).unwrap();
        v["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_u64().unwrap())
            .collect()
    };
    let mut seen = [false; 2];
    for c in r["cases"].as_array().unwrap() {
        let name = c["name"].as_str().unwrap();
        let (form, code, ext) = match name.split('_').next() {
            Some("py") => ("python", 98, "py"),
            Some("java") => ("java", 97, "java"),
            _ => continue,
        };
        seen[(ext == "java") as usize] = true;
        let text = c["text"].as_str().unwrap();
        let want = ids_of(c, form);
        assert_eq!(want[want.len() - 2..], [2, code], "{name}");
        let file = root.path().join(format!("s.{ext}"));
        std::fs::write(&file, text).unwrap();
        // The model's window keeps the first subwords and the two suffix tokens.
        let fits = |got: &[u64]| {
            let k = got.len() - 2;
            got.len() > 2 && got[..k] == want[..k] && got[k..] == want[want.len() - 2..]
        };
        assert!(fits(&trace_ids(&file, &[])), "{name}");
        // No extension: `--lang` names it.
        let bare = root.path().join("s.txt");
        std::fs::write(&bare, text).unwrap();
        assert!(fits(&trace_ids(&bare, &["--lang", form])), "{name} --lang");
        if form == "java" {
            let lm = codescope::model::LoadedModel::load(
                &codescope::model::ModelFiles::from_dir(&m, "plbart".into()).unwrap(),
            )
            .unwrap();
            let a =
                analysis::analyze(&lm, text, Language::Java, &AnalyzeOptions::default()).unwrap();
            let got: Vec<u64> = a.trace.tokens.iter().map(|s| s.id as u64).collect();
            assert!(fits(&got), "{name} analysed: {got:?}");
            // The probes' features: the same input, not the configured python code's.
            let syn = codescope::syntax::parse(text, Language::Java).unwrap();
            let h = analysis::hidden::hidden_states(&lm, &syn).unwrap();
            let with = |l: Language| {
                let enc = lm.encode_code(text, lm.info.window, Some(l)).unwrap();
                let opts = codescope::model::ForwardOptions {
                    hidden: true,
                    ..Default::default()
                };
                let t = lm.trace_encoded(text, enc, &opts, false).unwrap();
                analysis::hidden::token_hidden(&t, &syn.tokens)
                    .unwrap()
                    .layers
            };
            assert_eq!(h.layers, with(Language::Java));
            assert_ne!(h.layers, with(Language::Python));
        }
    }
    assert_eq!(seen, [true, true]);
}

#[test]
fn plbart_corrupt_or_unigram_sentencepiece_model_is_a_one_line_error() {
    let good = std::fs::read(model()).unwrap();
    let sample = "x = 1\n";
    for (what, bytes, want) in [
        ("text", b"not read".to_vec(), "not a SentencePiece model"),
        (
            "cut",
            good[..good.len() / 2].to_vec(),
            "not a SentencePiece model",
        ),
        (
            // The trainer spec's model_type (field 3) set to 1, unigram.
            "unigram",
            unigram(&good),
            "unigram",
        ),
        (
            // A second trainer spec (protobuf merges it) with byte_fallback (field 35).
            "byte fallback",
            [&good[..], &[0x12, 0x03, 0x98, 0x02, 0x01]].concat(),
            "byte fallback",
        ),
    ] {
        let root = tempfile::tempdir().unwrap();
        let m = plbart_dir(root.path(), &bytes);
        let s = root.path().join("s.py");
        std::fs::write(&s, sample).unwrap();
        let line = trace_fails(root.path(), &m, &s);
        assert!(
            line.contains("sentencepiece.bpe.model") && line.contains(want),
            "{what}: {line}"
        );
    }
}

#[test]
fn sentencepiece_bpe_model_beside_another_family_is_a_one_line_error() {
    let root = tempfile::tempdir().unwrap();
    let m = plbart_dir(root.path(), &std::fs::read(model()).unwrap());
    let cfg = std::fs::read_to_string(m.join("config.json")).unwrap();
    std::fs::write(m.join("config.json"), cfg.replace("\"plbart\"", "\"bart\"")).unwrap();
    let s = root.path().join("s.py");
    std::fs::write(&s, "x = 1\n").unwrap();
    let line = trace_fails(root.path(), &m, &s);
    assert!(
        line.contains("PLBART's tokenizer") && line.contains("bart model"),
        "{line}"
    );
}

/// The model with its trainer spec's `model_type` made unigram: a `ModelProto` field 2
/// message rewritten in place (`model_type` is the varint after the key byte 0x18).
fn unigram(good: &[u8]) -> Vec<u8> {
    let mut b = good.to_vec();
    let mut at = 0;
    while at < b.len() {
        let key = b[at];
        let (len, skip) = varint(&b[at + 1..]);
        if key == 0x12 {
            let body = at + 1 + skip;
            let spec = &mut b[body..body + len];
            let mut i = 0;
            while i < spec.len() {
                if spec[i] == 0x18 && spec[i + 1] == 2 {
                    spec[i + 1] = 1;
                    return b;
                }
                i += 1;
            }
        }
        at += 1 + skip + if key & 7 == 2 { len } else { 0 };
    }
    panic!("no trainer spec");
}

fn varint(b: &[u8]) -> (usize, usize) {
    let (mut v, mut i) = (0usize, 0);
    loop {
        v |= ((b[i] & 0x7f) as usize) << (7 * i);
        i += 1;
        if b[i - 1] & 0x80 == 0 {
            return (v, i);
        }
    }
}
