//! CodeT5+ 2B/6B/16B (`codet5p`) against its released modelling code
//! (`modeling_codet5p.py` under transformers 4.30.2): a tiny random checkpoint with the
//! 2B's layout (an encoder narrower than the decoder, so `enc_to_dec_proj`; the
//! cross-attention in the last decoder block only; float16 `pytorch_model.bin` with the
//! `causal_mask` buffers, and the same weights as safetensors). Every stack's attention
//! and hidden states at 1e-4, the decoder's logits and the labels' surprisal at 1e-4
//! (bits: 1e-3 asked); the CLI end to end; the presets from the hub cache layout.
//! Fixture made by `tools/reference/tiny_codet5p_reference.py`.

use std::path::PathBuf;

use codescope::model::source::{ModelFiles, Weights};
use codescope::model::{ForwardOptions, LoadOptions, LoadedModel, Stack};

use crate::cli_sources::{fails, fixture, ok};
use crate::t5_bart_reference::run;

fn dir() -> PathBuf {
    PathBuf::from(fixture("tiny_codet5p"))
}

fn reference() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir().join("reference.json")).unwrap()).unwrap()
}

/// The fixture with only one weights file, `keep` (`model.safetensors` or
/// `pytorch_model.bin`), in a temporary directory.
fn only(keep: &str) -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let m = root.path().join("tiny_codet5p");
    std::fs::create_dir_all(&m).unwrap();
    for f in ["config.json", "tokenizer.json", keep] {
        std::fs::copy(dir().join(f), m.join(f)).unwrap();
    }
    (root, m)
}

fn load(path: &std::path::Path, stack: Stack) -> LoadedModel {
    let files = ModelFiles::from_dir(path, "tiny_codet5p".into()).unwrap();
    LoadedModel::load_opts(
        &files,
        &LoadOptions {
            random_weights: None,
            stack,
        },
    )
    .unwrap()
}

fn close(got: f64, want: f64, tol: f64, worst: &mut f64, what: impl Fn() -> String) {
    let d = (got - want).abs() / want.abs().max(1.0);
    *worst = worst.max(d);
    assert!(d < tol, "{}: {got} vs {want}", what());
}

fn at(r: &serde_json::Value, path: &[usize]) -> f64 {
    let mut v = r;
    for &i in path {
        v = &v[i];
    }
    v.as_f64().unwrap_or_else(|| panic!("no value at {path:?}"))
}

/// All three stacks, from both weight files, against the released code's outputs.
#[test]
fn codet5p_stacks_match_the_released_modelling_code() {
    let r = reference();
    let text = r["text"].as_str().unwrap();
    let want_ids: Vec<u32> = r["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect();
    let n = want_ids.len();
    // Decoder position p is reported at index (p + n - 1) % n: index i holds (i + 1) % n.
    let pos = |i: usize| (i + 1) % n;
    for weights in ["pytorch_model.bin", "model.safetensors"] {
        let (_keep, path) = only(weights);
        let files = ModelFiles::from_dir(&path, "t".into()).unwrap();
        assert_eq!(
            matches!(files.weights, Weights::Pth(_)),
            weights.ends_with(".bin")
        );
        let opts = ForwardOptions {
            hidden: true,
            ..Default::default()
        };
        let (mut wa, mut wh) = (0.0, 0.0);

        // The encoder: bidirectional, its own width and heads.
        let m = load(&path, Stack::Encoder);
        assert_eq!(m.info.architecture, "codet5p");
        assert_eq!(m.info.stack, Some("encoder"));
        assert!(!m.info.causal);
        assert_eq!(
            (m.info.layers, m.info.heads, m.info.hidden_size),
            (2, 4, 24)
        );
        let t = m.trace(text, &opts).unwrap();
        let ids: Vec<u32> = t.tokens.iter().map(|s| s.id).collect();
        assert_eq!(ids, want_ids, "ids");
        let mut above_diagonal = 0.0;
        for l in 0..2 {
            for h in 0..4 {
                for i in 0..n {
                    for j in 0..n {
                        let got = t.attention.get(l, h, i, j) as f64;
                        close(
                            got,
                            at(&r["encoder_attention"], &[l, h, i, j]),
                            1e-4,
                            &mut wa,
                            || format!("{weights} encoder attention {l} {h} {i} {j}"),
                        );
                        if j > i {
                            above_diagonal += got;
                        }
                    }
                }
            }
        }
        assert!(above_diagonal > 1.0, "the encoder attends to later tokens");
        let hid = t.hidden.as_ref().unwrap();
        assert_eq!(hid.layers.len(), 3);
        for l in 0..3 {
            for i in 0..n {
                for (d, &x) in hid.vector(l, i).iter().enumerate() {
                    close(
                        x as f64,
                        at(&r["encoder_hidden_states"], &[l, i, d]),
                        1e-4,
                        &mut wh,
                        || format!("{weights} encoder hidden {l} {i} {d}"),
                    );
                }
            }
        }
        assert!(m.trace_lm(text, &opts).is_err());

        // The decoder: causal, every layer, the LM head and the labels' surprisal.
        let m = load(&path, Stack::Decoder);
        assert_eq!(m.info.stack, Some("decoder"));
        assert!(m.info.causal);
        assert_eq!(
            (m.info.layers, m.info.heads, m.info.hidden_size),
            (2, 8, 32)
        );
        let t = m.trace_lm(text, &opts).unwrap();
        let (mut wd, mut wdh, mut wl, mut wb) = (0.0, 0.0, 0.0, 0.0);
        for l in 0..2 {
            for h in 0..8 {
                for i in 0..n {
                    for j in 0..n {
                        let got = t.attention.get(l, h, i, j) as f64;
                        let w = at(&r["decoder_attention"], &[l, h, pos(i), pos(j)]);
                        close(got, w, 1e-4, &mut wd, || {
                            format!("{weights} decoder attention {l} {h} {i} {j}")
                        });
                        if pos(j) > pos(i) {
                            assert_eq!(got, 0.0, "causal {l} {h} {i} {j}");
                        }
                    }
                }
            }
        }
        let hid = t.hidden.as_ref().unwrap();
        assert_eq!(hid.layers.len(), 3);
        for l in 0..3 {
            for i in 0..n {
                for (d, &x) in hid.vector(l, i).iter().enumerate() {
                    let w = at(&r["decoder_hidden_states"], &[l, pos(i), d]);
                    close(x as f64, w, 1e-4, &mut wdh, || {
                        format!("{weights} decoder hidden {l} {i} {d}")
                    });
                }
            }
        }
        let logits = m.logits_ids(&want_ids).unwrap();
        let vocab = m.vocab_size();
        assert_eq!(logits.len(), n * vocab);
        for i in 0..n {
            for v in 0..vocab {
                let got = logits[i * vocab + v] as f64;
                close(got, at(&r["logits"], &[pos(i), v]), 1e-4, &mut wl, || {
                    format!("{weights} logits {i} {v}")
                });
            }
        }
        let s = t.surprisal.as_ref().unwrap();
        assert_eq!(s.bits.len(), n);
        for (i, b) in s.bits.iter().enumerate() {
            let w = r["label_bits"][i].as_f64().unwrap();
            close(b.unwrap() as f64, w, 1e-3, &mut wb, || {
                format!("{weights} bits {i}")
            });
        }

        // The cross stack: one layer, the last decoder block's cross-attention.
        let c = load(&path, Stack::Cross);
        assert_eq!(c.info.stack, Some("cross"));
        assert!(!c.info.causal);
        assert_eq!((c.info.layers, c.info.heads), (1, 8));
        let t = c.trace(text, &opts).unwrap();
        let mut wc = 0.0;
        for h in 0..8 {
            for i in 0..n {
                for j in 0..n {
                    let got = t.attention.get(0, h, i, j) as f64;
                    close(
                        got,
                        at(&r["cross_attention"], &[0, h, pos(i), j]),
                        1e-4,
                        &mut wc,
                        || format!("{weights} cross attention {h} {i} {j}"),
                    );
                }
            }
        }
        // Its hidden states: the stream entering the last block, the decoder's output.
        let hid = t.hidden.as_ref().unwrap();
        assert_eq!(hid.layers.len(), 2);
        for (k, l) in [(0, 1), (1, 2)] {
            for i in 0..n {
                for (d, &x) in hid.vector(k, i).iter().enumerate() {
                    let w = at(&r["decoder_hidden_states"], &[l, pos(i), d]);
                    close(x as f64, w, 1e-4, &mut wdh, || {
                        format!("{weights} cross hidden {k} {i} {d}")
                    });
                }
            }
        }
        // A layer recomputed from its recorded input is the full pass's, bit for bit.
        let full = c.forward_ids(&want_ids, &opts).unwrap();
        let again = c
            .layer_attention(&want_ids, 0, &full.hidden.as_ref().unwrap().layers[0])
            .unwrap();
        assert!(again
            .iter()
            .zip(&full.attention.layers[0])
            .all(|(a, b)| a.to_bits() == b.to_bits()));
        assert!(c.trace_lm(text, &ForwardOptions::default()).is_err());
        eprintln!(
            "codet5p ({weights}): {n} tokens; max diff (relative above 1): encoder attention \
             {wa:.2e}, encoder hidden {wh:.2e}, decoder attention {wd:.2e}, decoder and cross \
             hidden {wdh:.2e}, cross attention {wc:.2e}, logits {wl:.2e}, label bits {wb:.2e}"
        );
    }
}

#[test]
fn codet5p_stacks_through_the_cli() {
    let root = tempfile::tempdir().unwrap();
    let sample = root.path().join("sample.py");
    std::fs::write(&sample, "def add(a, b):\n    return a + b\n").unwrap();
    let sample = sample.display().to_string();
    let m = fixture("tiny_codet5p");
    for (stack, layers, heads) in [("encoder", 2, 4), ("decoder", 2, 8), ("cross", 1, 8)] {
        let out = ok(&run(
            root.path(),
            &[
                "trace", "--stack", stack, "--json", "--hidden", "--model", &m, &sample,
            ],
        ));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["model"]["architecture"], "codet5p");
        assert_eq!(v["model"]["stack"], stack);
        let n = v["tokens"].as_array().unwrap().len();
        assert_eq!(v["attention"].as_array().unwrap().len(), layers, "{stack}");
        assert_eq!(
            v["attention"][0].as_array().unwrap().len(),
            heads,
            "{stack}"
        );
        assert_eq!(v["attention"][0][0].as_array().unwrap().len(), n);
        assert_eq!(v["hidden_states"].as_array().unwrap().len(), layers + 1);
        let out = ok(&run(
            root.path(),
            &["trace", "--stack", stack, "--model", &m, &sample],
        ));
        assert!(
            out.contains(&format!(
                "(codet5p, {stack} stack, {layers} layers x {heads} heads"
            )),
            "{out}"
        );
        let out = ok(&run(
            root.path(),
            &[
                "analyze", "--stack", stack, "--json", "--model", &m, &sample,
            ],
        ));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["model"]["architecture"], "codet5p");
        assert_eq!(v["model"]["stack"], stack);
    }
    // Random weights (the released `_init_weights`: normal(0, initializer_range), zero
    // biases, unit norms) load for every stack and change the attention.
    for stack in ["encoder", "decoder", "cross"] {
        let json = |extra: &[&str]| -> serde_json::Value {
            let mut args = vec!["trace", "--stack", stack, "--json", "--model", &m, &sample];
            args.extend_from_slice(extra);
            serde_json::from_str(&ok(&run(root.path(), &args))).unwrap()
        };
        let (a, b) = (json(&[]), json(&["--random-weights", "7"]));
        assert_eq!(b["model"]["architecture"], "codet5p");
        assert_ne!(a["attention"], b["attention"], "{stack}");
    }
    // Seq2seq surprisal for every subword on the decoder stack; refused elsewhere.
    let out = ok(&run(
        root.path(),
        &[
            "trace",
            "--json",
            "--surprisal",
            "--stack",
            "decoder",
            "--model",
            &m,
            &sample,
        ],
    ));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let bits = v["surprisal"].as_array().unwrap();
    assert_eq!(bits.len(), v["tokens"].as_array().unwrap().len());
    assert!(
        bits.iter().all(|b| b.as_f64().is_some_and(|b| b > 0.0)),
        "{bits:?}"
    );
    for stack in ["encoder", "cross"] {
        let line = fails(&run(
            root.path(),
            &[
                "trace",
                "--surprisal",
                "--stack",
                stack,
                "--model",
                &m,
                &sample,
            ],
        ));
        assert!(
            line.contains("--stack decoder") || line.contains("causal"),
            "{line}"
        );
    }
    // The cross stack takes a knockout (in its one cross-attention), not the lens.
    let out = ok(&run(
        root.path(),
        &[
            "knockout", "--edges", "syn-id", "--stack", "cross", "--json", "--model", &m, &sample,
        ],
    ));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["model"]["stack"], "cross");
    let line = fails(&run(
        root.path(),
        &["lens", "--stack", "cross", "--model", &m, &sample],
    ));
    assert!(line.contains("cross stack"), "{line}");
}

/// A config the released code would not build, or codescope does not implement, is a
/// one-line error naming the key.
#[test]
fn codet5p_bad_configs_are_one_line_errors() {
    let root = tempfile::tempdir().unwrap();
    let sample = root.path().join("s.py");
    std::fs::write(&sample, "x = 1\n").unwrap();
    let cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir().join("config.json")).unwrap()).unwrap();
    type Edit = Box<dyn Fn(&mut serde_json::Value)>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "heads",
            Box::new(|c| c["encoder"]["n_head"] = 6.into()),
            "n_head",
        ),
        (
            "rotary",
            Box::new(|c| c["decoder"]["rotary_dim"] = serde_json::Value::Null),
            "rotary_dim",
        ),
        (
            "tied",
            Box::new(|c| c["tie_encoder_decoder"] = true.into()),
            "tie_encoder_decoder",
        ),
        (
            "no decoder",
            Box::new(|c| {
                c.as_object_mut().unwrap().remove("decoder");
            }),
            "decoder",
        ),
    ];
    for (what, edit, key) in cases {
        let (_keep, m) = only("model.safetensors");
        let mut c = cfg.clone();
        edit(&mut c);
        std::fs::write(m.join("config.json"), c.to_string()).unwrap();
        let line = fails(&run(
            root.path(),
            &[
                "trace",
                "--model",
                &m.display().to_string(),
                &sample.display().to_string(),
            ],
        ));
        assert!(line.contains(key), "{what}: {line}");
    }
    // Without a start token the decoder stacks are refused; the encoder still loads.
    let (_keep, m) = only("model.safetensors");
    let mut c = cfg.clone();
    c["decoder"]["decoder_start_token_id"] = serde_json::Value::Null;
    std::fs::write(m.join("config.json"), c.to_string()).unwrap();
    let md = m.display().to_string();
    let s = sample.display().to_string();
    let line = fails(&run(
        root.path(),
        &["trace", "--stack", "decoder", "--model", &md, &s],
    ));
    assert!(line.contains("decoder_start_token_id"), "{line}");
    ok(&run(root.path(), &["trace", "--model", &md, &s]));
}

#[test]
fn codet5p_presets_load_from_the_hub_cache_layout() {
    let root = tempfile::tempdir().unwrap();
    let sample = root.path().join("sample.py");
    std::fs::write(&sample, "x = 1\n").unwrap();
    // The tiny checkpoint laid out as Salesforce/codet5p-2b is on the hub (config.json,
    // the CodeGen tokenizer, one float16 pytorch_model.bin).
    let (_keep, m) = only("pytorch_model.bin");
    crate::cli_sources::hub_cache(&root.path().join("hf"), "Salesforce/codet5p-2b", &m);
    let out = ok(&run(
        root.path(),
        &[
            "trace",
            "--json",
            "--stack",
            "decoder",
            "--model",
            "codet5p-2b",
            &sample.display().to_string(),
        ],
    ));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["model"]["architecture"], "codet5p");
    assert_eq!(v["model"]["source"], "Salesforce/codet5p-2b");
    let out = ok(&run(root.path(), &["models"]));
    for (p, hub, local) in [
        ("codet5p-2b", "Salesforce/codet5p-2b", "yes"),
        ("codet5p-6b", "Salesforce/codet5p-6b", "no"),
        ("codet5p-16b", "Salesforce/codet5p-16b", "no"),
    ] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{p} ")))
            .unwrap_or("");
        assert_eq!(line.split_whitespace().nth(1), Some(hub), "{out}");
        assert_eq!(line.split_whitespace().nth(2), Some(local), "{out}");
    }
    assert!(out.contains("codet5p"), "{out}");
}

/// `compare`, `render` and `probe` on CodeT5+ through the binary, on each stack: the
/// comparison's attention shift has the stack's layers and heads (head-score differences
/// on the encoder and decoder stacks, none on the cross stack), `render` writes the heat
/// map naming the stack, and a probe trains on the encoder's and the decoder's hidden
/// states.
#[test]
fn codet5p_compare_render_and_probe_run_on_every_stack() {
    let root = tempfile::tempdir().unwrap();
    let sample = root.path().join("sample.py");
    std::fs::write(
        &sample,
        "def area(width, height):\n    return width * height\n",
    )
    .unwrap();
    let sample = sample.display().to_string();
    let m = fixture("tiny_codet5p");
    for (stack, layers, heads) in [("encoder", 2, 4), ("decoder", 2, 8), ("cross", 1, 8)] {
        let out = ok(&run(
            root.path(),
            &[
                "--stack", stack, "compare", "--json", "--model", &m, &sample,
            ],
        ));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["model"]["stack"], stack);
        let shift = v["attention_shift"].as_array().unwrap();
        assert_eq!(shift.len(), layers, "{stack}");
        assert_eq!(shift[0].as_array().unwrap().len(), heads, "{stack}");
        assert_eq!(v["relations"].is_null(), stack == "cross", "{stack}");
        let svg = root.path().join(format!("{stack}.svg"));
        ok(&run(
            root.path(),
            &[
                "--stack",
                stack,
                "--model",
                &m,
                "render",
                &sample,
                "--view",
                "heatmap",
                "--out",
                svg.to_str().unwrap(),
            ],
        ));
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.contains("<svg") && text.contains("codet5p"), "{stack}");
    }
    for stack in ["encoder", "decoder"] {
        let out = ok(&run(
            root.path(),
            &[
                "--stack", stack, "--model", &m, "probe", "--task", "category", "--layer", "1",
                "--limit", "12", "--json",
            ],
        ));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["model"]["stack"], stack);
        let r = &v["results"][0];
        assert_eq!(r["layer"], 1, "{stack}: {v}");
        assert!(
            r["accuracy"].as_f64().is_some_and(|a| a > 0.0)
                && r["control_accuracy"].as_f64().is_some(),
            "{stack}: {v}"
        );
    }
}

/// A GPT-2-style checkpoint (GPT-2, CodeGen, CodeT5+ 2B+: `<|endoftext|>`, no `<s>`) with
/// only `vocab.json` + `merges.txt` tokenizes as the `tokenizer.json` that transformers
/// wrote for it does: the same ids on a bundled sample (no `<s>`/`</s>` added), and
/// `<|endoftext|>` one special token.
#[test]
fn gpt2_style_vocab_and_merges_tokenize_as_their_tokenizer_json() {
    let root = tempfile::tempdir().unwrap();
    let sample = root.path().join("s.py");
    std::fs::write(
        &sample,
        "def f(x):\n    return x  # <|endoftext|> done\n\n\tprint('é', x)\n",
    )
    .unwrap();
    let sample = sample.display().to_string();
    let ids = |dir: &str| -> Vec<u64> {
        let out = ok(&run(
            root.path(),
            &["trace", "--json", "--model", dir, &sample],
        ));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_u64().unwrap())
            .collect()
    };
    for name in ["tiny_gpt2", "tiny_codegen", "tiny_codet5p"] {
        let src = PathBuf::from(fixture(name));
        let dir = root.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        for f in ["config.json", "model.safetensors"] {
            std::fs::copy(src.join(f), dir.join(f)).unwrap();
        }
        let tj: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(src.join("tokenizer.json")).unwrap())
                .unwrap();
        let model = &tj["model"];
        std::fs::write(dir.join("vocab.json"), model["vocab"].to_string()).unwrap();
        let mut merges = String::from("#version: 0.2\n");
        for m in model["merges"].as_array().unwrap() {
            match m {
                serde_json::Value::String(s) => merges.push_str(s),
                pair => merges.push_str(
                    &pair
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|p| p.as_str().unwrap())
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
            }
            merges.push('\n');
        }
        std::fs::write(dir.join("merges.txt"), merges).unwrap();
        let want = ids(&fixture(name));
        let got = ids(dir.to_str().unwrap());
        assert_eq!(got, want, "{name}");
        let eos = model["vocab"]["<|endoftext|>"].as_u64().unwrap();
        assert_eq!(got.iter().filter(|&&i| i == eos).count(), 1, "{name}");
    }
}
