//! Tiny random-weight BERT and RoBERTa models, written in HF layout by the test and
//! loaded through the real path: shapes, normalisation, special tokens, truncation,
//! determinism, tokenizer settings that must not leak, and bad-weight errors.

use codescope::model::source::ModelFiles;
use codescope::model::testutil::{write_tiny_model, Tiny, TinyTokenizer};
use codescope::model::{ForwardOptions, LoadedModel, Trace};

fn load(dir: &std::path::Path) -> LoadedModel {
    let files = ModelFiles::from_dir(dir, dir.display().to_string()).expect("files");
    LoadedModel::load(&files).expect("load")
}

fn tiny(t: Tiny) -> (tempfile::TempDir, LoadedModel) {
    let dir = tempfile::tempdir().unwrap();
    write_tiny_model(dir.path(), &t).unwrap();
    let m = load(dir.path());
    (dir, m)
}

const CODE: &str = "def total(self, x):\n    return self.count + x * 2\n";

fn trace(m: &LoadedModel, text: &str) -> Trace {
    m.trace(
        text,
        &ForwardOptions {
            hidden: true,
            cancel: None,
            ..Default::default()
        },
    )
    .expect("trace")
}

fn check_invariants(t: &Trace, layers: usize, heads: usize, dim: usize) {
    let n = t.tokens.len();
    assert_eq!(t.attention.num_layers(), layers);
    assert_eq!(t.attention.len, n);
    for l in 0..layers {
        assert_eq!(t.attention.layers[l].len(), heads * n * n);
        for h in 0..heads {
            for q in 0..n {
                let s: f32 = t.attention.row(l, h, q).iter().sum();
                assert!((s - 1.0).abs() < 1e-5, "row sum {s} at {l},{h},{q}");
                assert!(t
                    .attention
                    .row(l, h, q)
                    .iter()
                    .all(|&a| (0.0..=1.0).contains(&a)));
            }
        }
    }
    let hid = t.hidden.as_ref().expect("hidden requested");
    assert_eq!(hid.layers.len(), layers + 1);
    assert!(hid.layers.iter().all(|v| v.len() == n * dim));
    assert!(hid.layers.iter().flatten().all(|x| x.is_finite()));
    // Special tokens first and last, with empty spans; the others slice the text.
    assert!(t.tokens[0].special && t.tokens[n - 1].special);
    for s in &t.tokens {
        if s.special {
            assert_eq!((s.start, s.end), (0, 0));
        } else {
            // Whitespace-only BPE pieces get empty spans (trim_offsets), as in HF.
            assert!(s.start <= s.end && s.end <= t.text.len());
            assert!(t.text.is_char_boundary(s.start) && t.text.is_char_boundary(s.end));
        }
    }
}

#[test]
fn tiny_bert_shapes_rows_specials() {
    let (_d, m) = tiny(Tiny::default());
    assert_eq!(m.info.architecture, "bert");
    assert_eq!(
        (m.info.layers, m.info.heads, m.info.hidden_size),
        (2, 4, 32)
    );
    let t = trace(&m, CODE);
    check_invariants(&t, 2, 4, 32);
    assert_eq!(t.tokens[0].text, "[CLS]");
    assert_eq!(t.tokens.last().unwrap().text, "[SEP]");
    // WordPiece: `total` is a whole word in the tiny vocab, `self.count` splits.
    let texts: Vec<&str> = t.tokens.iter().map(|s| s.text.as_str()).collect();
    assert!(
        texts.contains(&"total") && texts.contains(&"self"),
        "{texts:?}"
    );
    assert_eq!(t.truncated, 0);
}

#[test]
fn tiny_roberta_bpe_shapes_and_offsets() {
    let (_d, m) = tiny(Tiny {
        roberta: true,
        tokenizer: TinyTokenizer::Bpe,
        prefix: "roberta.".into(),
        heads: 2,
        ..Tiny::default()
    });
    assert_eq!(m.info.architecture, "roberta");
    assert_eq!(m.info.window, 128);
    let t = trace(&m, CODE);
    check_invariants(&t, 2, 2, 32);
    assert_eq!(t.tokens[0].text, "<s>");
    assert_eq!(t.tokens.last().unwrap().text, "</s>");
    // Byte-level BPE: merged `def` and `Ġself`; offsets exclude the leading space.
    let def = t
        .tokens
        .iter()
        .find(|s| s.text == "def")
        .expect("def merged");
    assert_eq!(&t.text[def.start..def.end], "def");
    let gself = t
        .tokens
        .iter()
        .find(|s| s.text == "Ġself")
        .expect("Ġself merged");
    assert_eq!(&t.text[gself.start..gself.end], "self");
}

#[test]
fn unicode_identifiers_keep_byte_offsets() {
    let (_d, m) = tiny(Tiny {
        roberta: true,
        tokenizer: TinyTokenizer::Bpe,
        ..Tiny::default()
    });
    let text = "größe = 1  # 名前 🎉\n";
    let t = trace(&m, text);
    check_invariants(&t, 2, 4, 32);
    let covered: usize = t
        .tokens
        .iter()
        .filter(|s| !s.special)
        .map(|s| s.end - s.start)
        .sum();
    assert!(covered >= text.trim_end().replace(' ', "").len());
}

#[test]
fn deterministic_and_seed_sensitive() {
    let (_d, m) = tiny(Tiny::default());
    let a = trace(&m, CODE);
    let b = trace(&m, CODE);
    assert_eq!(a.attention.layers, b.attention.layers);
    assert_eq!(
        a.hidden.as_ref().unwrap().layers,
        b.hidden.as_ref().unwrap().layers
    );
    let (_d2, m2) = tiny(Tiny {
        seed: 8,
        ..Tiny::default()
    });
    let c = trace(&m2, CODE);
    assert_ne!(a.attention.layers, c.attention.layers);
}

#[test]
fn tokenizer_json_truncation_and_padding_are_not_inherited() {
    let (_d, m) = tiny(Tiny {
        tokenizer: TinyTokenizer::JsonWithTruncation,
        ..Tiny::default()
    });
    let t = trace(&m, CODE);
    // The file says truncate to 8 and pad to 32; neither may apply.
    assert!(t.tokens.len() > 8, "truncated to {}", t.tokens.len());
    assert!(t.tokens.iter().all(|s| s.text != "[PAD]"));
    assert_eq!(t.tokens.iter().filter(|s| s.special).count(), 2);
}

#[test]
fn long_input_is_truncated_to_the_window_with_count() {
    let (_d, m) = tiny(Tiny {
        max_positions: 16,
        ..Tiny::default()
    });
    let full = m.tokenizer.encode(CODE, usize::MAX).unwrap();
    let t = trace(&m, CODE);
    assert_eq!(t.tokens.len(), 16);
    assert_eq!(t.truncated, full.tokens.len() - 16);
    assert!(t.tokens[15].special, "SEP kept at the end");
    // The kept text tokens are the first ones.
    assert_eq!(t.tokens[1..15], full.tokens[1..15]);
    check_invariants(&t, 2, 4, 32);
}

#[test]
fn hidden_states_only_when_asked() {
    let (_d, m) = tiny(Tiny::default());
    let t = m.trace(CODE, &ForwardOptions::default()).unwrap();
    assert!(t.hidden.is_none());
    assert_eq!(t.attention.num_layers(), 2);
}

#[test]
fn cancel_stops_between_layers() {
    let (_d, m) = tiny(Tiny::default());
    let cancel = |layer: usize| layer >= 1;
    let err = m
        .trace(
            CODE,
            &ForwardOptions {
                hidden: false,
                cancel: Some(&cancel),
                ..Default::default()
            },
        )
        .expect_err("cancelled");
    assert!(matches!(err, codescope::Error::Cancelled), "{err}");
}

#[test]
fn json_has_the_documented_shape() {
    let (_d, m) = tiny(Tiny::default());
    let t = trace(&m, CODE);
    let v: serde_json::Value = serde_json::to_value(t.json()).unwrap();
    let n = t.tokens.len();
    assert_eq!(v["model"]["layers"], 2);
    assert_eq!(v["model"]["heads"], 4);
    assert_eq!(v["model"]["hidden_size"], 32);
    assert_eq!(v["model"]["architecture"], "bert");
    assert_eq!(v["text"], CODE);
    assert_eq!(v["tokens"].as_array().unwrap().len(), n);
    let tok = &v["tokens"][1];
    for k in ["id", "text", "start", "end", "special"] {
        assert!(tok.get(k).is_some(), "token lacks {k}");
    }
    assert_eq!(v["attention"].as_array().unwrap().len(), 2);
    assert_eq!(v["attention"][1].as_array().unwrap().len(), 4);
    assert_eq!(v["attention"][1][3].as_array().unwrap().len(), n);
    assert_eq!(v["attention"][1][3][n - 1].as_array().unwrap().len(), n);
    let a = v["attention"][1][3][2][5].as_f64().unwrap() as f32;
    assert_eq!(a, t.attention.get(1, 3, 2, 5));
    assert_eq!(v["hidden_states"].as_array().unwrap().len(), 3);
    assert_eq!(v["hidden_states"][2][n - 1].as_array().unwrap().len(), 32);
    assert_eq!(v["truncated"], 0);
}

#[test]
fn bad_weights_and_configs_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    write_tiny_model(dir.path(), &Tiny::default()).unwrap();
    let files = || ModelFiles::from_dir(dir.path(), "tiny".into());

    // Truncated safetensors.
    let st = dir.path().join("model.safetensors");
    let bytes = std::fs::read(&st).unwrap();
    std::fs::write(&st, &bytes[..bytes.len() / 2]).unwrap();
    let e = LoadedModel::load(&files().unwrap())
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("cannot load weights") && e.contains("truncated"),
        "{e}"
    );
    // Garbage safetensors.
    std::fs::write(&st, b"not a safetensors file at all").unwrap();
    let e = LoadedModel::load(&files().unwrap())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("cannot load weights"), "{e}");
    std::fs::write(&st, &bytes).unwrap();

    // Unknown architecture names the supported ones.
    let cfg_path = dir.path().join("config.json");
    let cfg = std::fs::read_to_string(&cfg_path).unwrap();
    std::fs::write(&cfg_path, cfg.replace("\"bert\"", "\"mamba\"")).unwrap();
    let e = LoadedModel::load(&files().unwrap())
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("unsupported architecture 'mamba'") && e.contains("bert, roberta"),
        "{e}"
    );
    std::fs::write(&cfg_path, "{ not json").unwrap();
    let e = LoadedModel::load(&files().unwrap())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("bad model config"), "{e}");
    std::fs::write(&cfg_path, &cfg).unwrap();

    // Wrong tensor shapes (a config that does not match the weights).
    std::fs::write(
        &cfg_path,
        cfg.replace("\"hidden_size\": 32", "\"hidden_size\": 64"),
    )
    .unwrap();
    let e = LoadedModel::load(&files().unwrap())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("cannot load weights"), "{e}");
    std::fs::write(&cfg_path, &cfg).unwrap();

    // Missing tokenizer / weights.
    std::fs::remove_file(dir.path().join("vocab.txt")).unwrap();
    let e = files().err().unwrap().to_string();
    assert!(e.contains("has no tokenizer"), "{e}");
    std::fs::remove_file(&st).unwrap();
    let e = files().err().unwrap().to_string();
    assert!(
        e.contains("no tokenizer") || e.contains("no weights"),
        "{e}"
    );
}

#[test]
fn bert_prefix_in_checkpoint_names_is_stripped() {
    let (_d, m) = tiny(Tiny {
        prefix: "bert.".into(),
        ..Tiny::default()
    });
    let (_d2, plain) = tiny(Tiny::default());
    // Same seed, same weights: only the names differ.
    assert_eq!(
        trace(&m, CODE).attention.layers,
        trace(&plain, CODE).attention.layers
    );
}

/// UniXcoder's input form: a vocabulary with its `<encoder-only>` mode token gets
/// `<s> <encoder-only> </s> code </s>` (its authors' and the study's encoder input), the
/// mode tokens special (so no code token aligns to them), through `trace` and `analyze`;
/// any other vocabulary is encoded as before.
#[test]
fn a_unixcoder_vocabulary_gets_its_mode_prefix() {
    use crate::cli_sources::{ok, sandboxed};
    let root = tempfile::tempdir().unwrap();
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny_roberta");
    let uni = root.path().join("tiny_unixcoder");
    std::fs::create_dir(&uni).unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, uni.join(p.file_name().unwrap())).unwrap();
    }
    // Give a vocabulary entry UniXcoder's mode token (its id stays in the embedding).
    let vocab: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(uni.join("vocab.json")).unwrap()).unwrap();
    // `<mask>`: a vocabulary entry the sample never produces and BPE merges never need.
    let victim = "<mask>".to_string();
    let id = vocab[&victim].as_u64().unwrap();
    let mut renamed = vocab.clone();
    renamed.remove(&victim);
    renamed.insert("<encoder-only>".into(), id.into());
    std::fs::write(
        uni.join("vocab.json"),
        serde_json::to_string(&renamed).unwrap(),
    )
    .unwrap();
    let sample = root.path().join("s.py");
    std::fs::write(&sample, "def f(x):\n    return x + 1\n").unwrap();
    let trace = |m: &std::path::Path| -> serde_json::Value {
        let o = sandboxed(root.path())
            .args(["trace", "--json", "--model"])
            .arg(m)
            .arg(&sample)
            .output()
            .unwrap();
        serde_json::from_str(&ok(&o)).unwrap()
    };
    let (plain, with) = (trace(&src), trace(&uni));
    let ids = |v: &serde_json::Value| -> Vec<u64> {
        v["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_u64().unwrap())
            .collect()
    };
    let (a, b) = (ids(&plain), ids(&with));
    assert_eq!(b.len(), a.len() + 2, "{a:?} {b:?}");
    let sep = *a.last().unwrap();
    assert_eq!((b[0], b[1], b[2]), (a[0], id, sep), "{b:?}");
    assert_eq!(&b[3..], &a[1..]);
    let toks = with["tokens"].as_array().unwrap();
    assert!(toks[1]["special"].as_bool().unwrap() && toks[2]["special"].as_bool().unwrap());
    assert_eq!(toks[1]["text"], "<encoder-only>");
    // The analysis covers the same code tokens either way.
    let analyze = |m: &std::path::Path| -> serde_json::Value {
        let o = sandboxed(root.path())
            .args(["analyze", "--json", "--model"])
            .arg(m)
            .arg(&sample)
            .output()
            .unwrap();
        serde_json::from_str(&ok(&o)).unwrap()
    };
    assert_eq!(
        analyze(&src)["analysed_tokens"],
        analyze(&uni)["analysed_tokens"]
    );
}
