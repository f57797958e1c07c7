//! The encoder–decoder families (`t5`, `bart`, `plbart`) against Hugging Face transformers:
//! tiny random T5 v1.0 (relu, tied, `pytorch_model.bin`, CodeT5's RoBERTa BPE files), T5
//! v1.1 (gated-gelu, untied, safetensors), BART (safetensors) and PLBART (`pytorch_model.bin`,
//! a `tokenizer.json` ending `</s> __python__`, no `scale_embedding` in its config). Their
//! ENCODER self-attention and hidden states at 1e-4, T5's position buckets exactly; the
//! CLI end to end (`trace --json`, `analyze --json`, a preset from the hub cache layout);
//! random weights with each family's transformers init; the `spiece.model`-only error.
//! Fixtures made by `tools/reference/tiny_encdec_reference.py`.

use std::path::{Path, PathBuf};

use codescope::model::random::{generate, InitRules};
use codescope::model::source::{ModelFiles, Weights};
use codescope::model::{Family, ForwardOptions, LoadOptions, LoadedModel, Stack};

use crate::cli_sources::{fails, fixture, ok, sandboxed};

fn dir(name: &str) -> PathBuf {
    PathBuf::from(fixture(name))
}

fn reference(name: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir(name).join("reference.json")).unwrap())
        .unwrap()
}

fn load(name: &str, seed: Option<u64>) -> LoadedModel {
    let files = ModelFiles::from_dir(&dir(name), name.into()).unwrap();
    LoadedModel::load_with(&files, seed).unwrap()
}

#[test]
fn t5_bart_plbart_encoders_match_transformers() {
    for (name, arch, bin) in [
        ("tiny_t5", "t5", true),
        ("tiny_t5_v11", "t5", false),
        ("tiny_bart", "bart", false),
        ("tiny_plbart", "plbart", true),
    ] {
        let files = ModelFiles::from_dir(&dir(name), name.into()).unwrap();
        assert_eq!(matches!(files.weights, Weights::Pth(_)), bin, "{name}");
        let m = LoadedModel::load(&files).unwrap();
        assert_eq!(m.info.architecture, arch);
        assert_eq!(m.info.stack, Some("encoder"));
        assert!(!m.info.causal);
        assert_eq!(
            (m.info.layers, m.info.heads, m.info.hidden_size),
            (2, 4, 32)
        );
        assert_eq!(m.info.window, 64, "{name}");
        let r = reference(name);
        let opts = ForwardOptions {
            hidden: true,
            ..Default::default()
        };
        let t = m.trace(r["text"].as_str().unwrap(), &opts).unwrap();
        let ids: Vec<u64> = t.tokens.iter().map(|s| s.id as u64).collect();
        let want: Vec<u64> = r["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(ids, want, "{name} ids");
        for (i, o) in r["offsets"].as_array().unwrap().iter().enumerate() {
            if t.tokens[i].special {
                continue;
            }
            let span = (
                o[0].as_u64().unwrap() as usize,
                o[1].as_u64().unwrap() as usize,
            );
            assert_eq!(
                (t.tokens[i].start, t.tokens[i].end),
                span,
                "{name} offset {i}"
            );
        }
        let n = ids.len();
        let mut worst = (0.0f64, 0.0f64);
        for l in 0..2 {
            for h in 0..4 {
                for q in 0..n {
                    let mut row = 0.0;
                    for k in 0..n {
                        let w = r["attention"][l][h][q][k].as_f64().unwrap();
                        let got = t.attention.get(l, h, q, k) as f64;
                        row += got;
                        let d = (got - w).abs();
                        worst.0 = worst.0.max(d);
                        assert!(d < 1e-4, "{name} attention {l} {h} {q} {k}: {got} vs {w}");
                    }
                    assert!((row - 1.0).abs() < 1e-4);
                }
            }
        }
        let hid = t.hidden.as_ref().unwrap();
        assert_eq!(hid.layers.len(), 3);
        for l in 0..3 {
            for p in 0..n {
                for (d, &x) in hid.vector(l, p).iter().enumerate() {
                    let w = r["hidden_states"][l][p][d].as_f64().unwrap();
                    let diff = (x as f64 - w).abs();
                    worst.1 = worst.1.max(diff / w.abs().max(1.0));
                    assert!(
                        diff < 1e-4 * w.abs().max(1.0),
                        "{name} hidden {l} {p} {d}: {x} vs {w}"
                    );
                }
            }
        }
        eprintln!(
            "{name}: {n} tokens, max |attention diff| {:.2e}, max hidden diff (relative above 1) {:.2e}",
            worst.0, worst.1
        );
        // A layer recomputed from its recorded input is the full pass's, bit for bit
        // (T5's shared position bias included).
        let raw: Vec<u32> = t.tokens.iter().map(|s| s.id).collect();
        let full = m
            .forward_ids(
                &raw,
                &ForwardOptions {
                    hidden: true,
                    ..Default::default()
                },
            )
            .unwrap();
        let full_hidden = full.hidden.unwrap();
        for l in 0..2 {
            let again = m.layer_attention(&raw, l, &full_hidden.layers[l]).unwrap();
            assert!(
                again
                    .iter()
                    .zip(&full.attention.layers[l])
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{name} layer {l} recomputed"
            );
        }
    }
}

#[test]
fn t5_position_buckets_match_transformers() {
    for name in ["tiny_t5", "tiny_t5_v11"] {
        for table in reference(name)["buckets"].as_array().unwrap() {
            let (nb, md) = (
                table["num_buckets"].as_u64().unwrap() as usize,
                table["max_distance"].as_u64().unwrap() as usize,
            );
            let first = table["first"].as_i64().unwrap();
            for (i, b) in table["values"].as_array().unwrap().iter().enumerate() {
                let rel = first + i as i64;
                assert_eq!(
                    codescope::model::t5::relative_bucket(rel, nb, md) as u64,
                    b.as_u64().unwrap(),
                    "{nb} buckets, max distance {md}, offset {rel}"
                );
            }
        }
    }
}

/// `codescope` on `sample` with `args`, in a sandbox rooted at `root`.
pub(crate) fn run(root: &Path, args: &[&str]) -> std::process::Output {
    sandboxed(root)
        .env("HF_HUB_OFFLINE", "1")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn t5_bart_trace_and_analyze_through_the_cli() {
    let root = tempfile::tempdir().unwrap();
    let sample = root.path().join("sample.py");
    std::fs::write(&sample, "def add(a, b):\n    return a + b\n").unwrap();
    let sample = sample.display().to_string();
    for (name, arch) in [("tiny_t5", "t5"), ("tiny_plbart", "plbart")] {
        let m = fixture(name);
        let out = ok(&run(
            root.path(),
            &["trace", "--json", "--hidden", "--model", &m, &sample],
        ));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["model"]["architecture"], arch);
        assert_eq!(v["model"]["stack"], "encoder");
        let n = v["tokens"].as_array().unwrap().len();
        assert_eq!(v["attention"].as_array().unwrap().len(), 2);
        assert_eq!(v["attention"][1][3].as_array().unwrap().len(), n);
        assert_eq!(v["hidden_states"].as_array().unwrap().len(), 3);
        let out = ok(&run(root.path(), &["trace", "--model", &m, &sample]));
        assert!(
            out.contains(&format!("({arch}, encoder stack, 2 layers x 4 heads")),
            "{out}"
        );
        let out = ok(&run(
            root.path(),
            &["analyze", "--json", "--model", &m, &sample],
        ));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["model"]["architecture"], arch);
        assert_eq!(v["model"]["stack"], "encoder");
        let out = ok(&run(root.path(), &["analyze", "--model", &m, &sample]));
        assert!(
            out.contains(&format!("({arch}, encoder stack, 2 layers x 4 heads")),
            "{out}"
        );
    }
    // The explorer's screen (a headless render) says which stack is shown.
    let screen = root.path().join("screen.txt");
    let m = fixture("tiny_bart");
    ok(&run(
        root.path(),
        &[
            "--model",
            &m,
            "render",
            &sample,
            "--view",
            "screen",
            "--size",
            "120x40",
            "--out",
            &screen.display().to_string(),
        ],
    ));
    let text = std::fs::read_to_string(&screen).unwrap();
    assert!(text.contains("(bart, encoder stack)"), "{text}");
    // An encoder has no LM head: surprisal is refused in one line.
    let line = fails(&run(
        root.path(),
        &[
            "trace",
            "--surprisal",
            "--model",
            &fixture("tiny_t5"),
            &sample,
        ],
    ));
    assert!(line.contains("causal"), "{line}");
}

#[test]
fn t5_codet5_preset_loads_from_the_hub_cache_layout() {
    let root = tempfile::tempdir().unwrap();
    let sample = root.path().join("sample.py");
    std::fs::write(&sample, "x = 1\n").unwrap();
    // The tiny T5 laid out as Salesforce/codet5-base is on the hub (vocab.json +
    // merges.txt + pytorch_model.bin).
    crate::cli_sources::hub_cache(
        &root.path().join("hf"),
        "Salesforce/codet5-base",
        &dir("tiny_t5"),
    );
    let out = ok(&run(
        root.path(),
        &[
            "trace",
            "--json",
            "--model",
            "codet5-base",
            &sample.display().to_string(),
        ],
    ));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["model"]["architecture"], "t5");
    assert_eq!(v["model"]["source"], "Salesforce/codet5-base");
    let out = ok(&run(root.path(), &["models"]));
    for (p, local) in [
        ("codet5-base", "yes"),
        ("codet5-large", "no"),
        ("codet5p-220m", "no"),
        ("codet5p-770m", "no"),
        ("plbart-base", "no"),
    ] {
        let line = out.lines().find(|l| l.starts_with(p)).unwrap_or("");
        assert_eq!(line.split_whitespace().nth(2), Some(local), "{out}");
    }
    assert!(out.contains("t5, bart, plbart"), "{out}");
}

#[test]
fn t5_sentencepiece_only_tokenizer_is_a_one_line_error() {
    let root = tempfile::tempdir().unwrap();
    let m = root.path().join("t5");
    std::fs::create_dir_all(&m).unwrap();
    for f in ["config.json", "pytorch_model.bin"] {
        std::fs::copy(dir("tiny_t5").join(f), m.join(f)).unwrap();
    }
    std::fs::write(m.join("spiece.model"), b"not read").unwrap();
    let sample = root.path().join("s.py");
    std::fs::write(&sample, "x = 1\n").unwrap();
    let line = fails(&run(
        root.path(),
        &[
            "trace",
            "--model",
            &m.display().to_string(),
            &sample.display().to_string(),
        ],
    ));
    assert!(
        line.contains("spiece.model") && line.contains("tokenizer.json"),
        "{line}"
    );
}

/// The std transformers' `_init_weights` gives a T5 matrix (the test's own reading).
fn t5_std(name: &str, cfg: &serde_json::Value) -> f64 {
    let f = |k: &str| cfg[k].as_f64().unwrap();
    let (d, kv, ff, h) = (f("d_model"), f("d_kv"), f("d_ff"), f("num_heads"));
    let last = name.rsplit('.').nth(1).unwrap();
    match last {
        "shared" | "embed_tokens" | "lm_head" => 1.0,
        "q" => 1.0 / (d * kv).sqrt(),
        "k" | "v" | "wi" | "wi_0" | "wi_1" | "relative_attention_bias" => 1.0 / d.sqrt(),
        "o" => 1.0 / (h * kv).sqrt(),
        "wo" => 1.0 / ff.sqrt(),
        other => panic!("no T5 init for {other} ({name})"),
    }
}

#[test]
fn t5_bart_random_weights_follow_the_transformers_init() {
    for (name, family) in [
        ("tiny_t5", Family::T5),
        ("tiny_t5_v11", Family::T5),
        ("tiny_bart", Family::Bart),
        ("tiny_plbart", Family::PlBart),
    ] {
        let d = dir(name);
        let cfg: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("config.json")).unwrap()).unwrap();
        let rules = InitRules::from_config(family, &cfg);
        let tensors: Vec<(String, Vec<usize>)> = if d.join("model.safetensors").exists() {
            candle_core::safetensors::load(d.join("model.safetensors"), &candle_core::Device::Cpu)
                .unwrap()
                .into_iter()
                .map(|(n, t)| (n, t.dims().to_vec()))
                .collect()
        } else {
            candle_core::pickle::read_all(d.join("pytorch_model.bin"))
                .unwrap()
                .into_iter()
                .map(|(n, t)| (n, t.dims().to_vec()))
                .collect()
        };
        let pad = cfg["pad_token_id"].as_u64().unwrap() as usize;
        for (t, dims) in tensors {
            let v = generate(&rules, 5, &t, &dims);
            if t.ends_with(".bias") {
                assert!(v.iter().all(|&x| x == 0.0), "{name} {t}");
                continue;
            }
            if dims.len() == 1 {
                assert!(v.iter().all(|&x| x == 1.0), "{name} {t}");
                continue;
            }
            let want = if family == Family::T5 {
                t5_std(&t, &cfg)
            } else {
                0.02
            };
            let padded = family != Family::T5
                && (t.ends_with("shared.weight") || t.ends_with("embed_tokens.weight"));
            let cols = dims[1];
            let mut vals: Vec<f64> = Vec::new();
            for (r, row) in v.chunks_exact(cols).enumerate() {
                let zero = row.iter().all(|&x| x == 0.0);
                assert_eq!(zero, padded && r == pad, "{name} {t} row {r}");
                if !zero {
                    vals.extend(row.iter().map(|&x| x as f64));
                }
            }
            let n = vals.len() as f64;
            let sd = (vals.iter().map(|x| x * x).sum::<f64>() / n).sqrt();
            if vals.len() >= 2000 {
                assert!(
                    (sd / want - 1.0).abs() < 0.1,
                    "{name} {t}: std {sd} vs {want}"
                );
            }
        }
        // The model runs on them, deterministically, and differs from the checkpoint.
        let ids = [1u32, 40, 50, 60, 2];
        let a = load(name, Some(5));
        assert_eq!(a.info.random_weights, Some(5));
        let a1 = a.forward_ids(&ids, &ForwardOptions::default()).unwrap();
        let a2 = load(name, Some(5))
            .forward_ids(&ids, &ForwardOptions::default())
            .unwrap();
        let trained = load(name, None)
            .forward_ids(&ids, &ForwardOptions::default())
            .unwrap();
        assert_eq!(a1.attention.layers, a2.attention.layers, "{name}");
        assert_ne!(a1.attention.layers, trained.attention.layers, "{name}");
        for l in &a1.attention.layers {
            for row in l.chunks_exact(ids.len()) {
                assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-4);
            }
        }
    }
}

/// A `T5EncoderModel` checkpoint (`shared` + `encoder.*` only, no decoder or LM head) is
/// the same encoder: the tiny v1.1 fixture cut down to those tensors gives the same
/// attention and hidden states, bit for bit.
#[test]
fn t5_encoder_model_checkpoint_loads_as_the_same_encoder() {
    let root = tempfile::tempdir().unwrap();
    let m = root.path().join("enc");
    std::fs::create_dir_all(&m).unwrap();
    let src = dir("tiny_t5_v11");
    for f in ["vocab.json", "merges.txt"] {
        std::fs::copy(src.join(f), m.join(f)).unwrap();
    }
    let mut cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(src.join("config.json")).unwrap()).unwrap();
    cfg["architectures"] = serde_json::json!(["T5EncoderModel"]);
    // Older configs name only the class; the family follows from it.
    cfg.as_object_mut().unwrap().remove("model_type");
    std::fs::write(m.join("config.json"), cfg.to_string()).unwrap();
    let tensors: std::collections::HashMap<String, candle_core::Tensor> =
        candle_core::safetensors::load(src.join("model.safetensors"), &candle_core::Device::Cpu)
            .unwrap()
            .into_iter()
            .filter(|(n, _)| n == "shared.weight" || n.starts_with("encoder."))
            .collect();
    assert!(tensors.len() > 10);
    candle_core::safetensors::save(&tensors, m.join("model.safetensors")).unwrap();
    let enc = LoadedModel::load(&ModelFiles::from_dir(&m, "enc".into()).unwrap()).unwrap();
    assert_eq!(enc.info.architecture, "t5");
    let full = load("tiny_t5_v11", None);
    let ids = [1u32, 40, 50, 60, 70, 2];
    let opts = ForwardOptions {
        hidden: true,
        ..Default::default()
    };
    let (a, b) = (
        enc.forward_ids(&ids, &opts).unwrap(),
        full.forward_ids(&ids, &opts).unwrap(),
    );
    assert_eq!(a.attention.layers, b.attention.layers);
    assert_eq!(a.hidden.unwrap().layers, b.hidden.unwrap().layers);
}

fn decoder_reference(name: &str) -> serde_json::Value {
    serde_json::from_str(
        &std::fs::read_to_string(dir(name).join("decoder_reference.json")).unwrap(),
    )
    .unwrap()
}

fn load_stack(name: &str, stack: Stack) -> LoadedModel {
    let files = ModelFiles::from_dir(&dir(name), name.into()).unwrap();
    LoadedModel::load_opts(
        &files,
        &LoadOptions {
            random_weights: None,
            stack,
        },
    )
    .unwrap()
}

/// `|got - want|`, relative above 1, checked under 1e-4; the worst kept in `worst`.
fn close(got: f64, want: f64, worst: &mut f64, what: impl Fn() -> String) {
    let d = (got - want).abs() / want.abs().max(1.0);
    *worst = worst.max(d);
    assert!(d < 1e-4, "{}: {got} vs {want}", what());
}

/// The decoder stack (teacher-forced self-attention, hidden states, logits, the labels'
/// surprisal) and the cross stack against transformers' `model(input_ids=ids,
/// labels=ids)`, which builds the decoder input itself (T5's `_shift_right`, BART's and
/// PLBART's `shift_tokens_right`). codescope reports decoder position `p` at the index of
/// the subword it reads, `(p + n - 1) % n`.
#[test]
fn t5_bart_plbart_decoder_and_cross_stacks_match_transformers() {
    for (name, arch) in [
        ("tiny_t5", "t5"),
        ("tiny_t5_v11", "t5"),
        ("tiny_bart", "bart"),
        ("tiny_plbart", "plbart"),
    ] {
        let r = decoder_reference(name);
        let text = r["text"].as_str().unwrap();
        let want_ids: Vec<u32> = r["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as u32)
            .collect();
        let n = want_ids.len();
        let at = |i: usize| (i + 1) % n;
        let m = load_stack(name, Stack::Decoder);
        assert_eq!(m.info.architecture, arch);
        assert_eq!(m.info.stack, Some("decoder"));
        assert!(m.info.causal);
        assert_eq!((m.info.layers, m.info.heads), (1, 4), "{name}");
        let opts = ForwardOptions {
            hidden: true,
            ..Default::default()
        };
        let t = m.trace_lm(text, &opts).unwrap();
        let ids: Vec<u32> = t.tokens.iter().map(|s| s.id).collect();
        assert_eq!(ids, want_ids, "{name} ids");
        let (mut wa, mut wh, mut wl, mut wb, mut wc) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for h in 0..4 {
            for i in 0..n {
                for j in 0..n {
                    let w = r["decoder_attention"][0][h][at(i)][at(j)].as_f64().unwrap();
                    let got = t.attention.get(0, h, i, j) as f64;
                    close(got, w, &mut wa, || {
                        format!("{name} decoder attention {h} {i} {j}")
                    });
                    // Causal: a decoder position sees no later one (exactly 0).
                    if at(j) > at(i) {
                        assert_eq!(got, 0.0, "{name} {h} {i} {j}");
                    }
                }
            }
        }
        let hid = t.hidden.as_ref().unwrap();
        assert_eq!(hid.layers.len(), 2);
        for l in 0..2 {
            for i in 0..n {
                for (d, &x) in hid.vector(l, i).iter().enumerate() {
                    let w = r["decoder_hidden_states"][l][at(i)][d].as_f64().unwrap();
                    close(x as f64, w, &mut wh, || {
                        format!("{name} hidden {l} {i} {d}")
                    });
                }
            }
        }
        let logits = m.logits_ids(&ids).unwrap();
        let vocab = m.vocab_size();
        assert_eq!(logits.len(), n * vocab);
        for i in 0..n {
            for v in 0..vocab {
                let w = r["logits"][at(i)][v].as_f64().unwrap();
                let got = logits[i * vocab + v] as f64;
                close(got, w, &mut wl, || format!("{name} logits {i} {v}"));
            }
        }
        // Every label is scored, the first from the decoder's first position.
        let s = t.surprisal.as_ref().unwrap();
        for (i, b) in s.bits.iter().enumerate() {
            let w = r["label_bits"][i].as_f64().unwrap();
            close(b.unwrap() as f64, w, &mut wb, || format!("{name} bits {i}"));
        }
        assert!(s.top_next[n - 1].is_empty());
        assert_eq!(s.top_next[0].len(), 5);
        // A layer recomputed from its recorded input is the full pass's, bit for bit.
        let full = m.forward_ids(&ids, &opts).unwrap();
        let again = m
            .layer_attention(&ids, 0, &full.hidden.as_ref().unwrap().layers[0])
            .unwrap();
        assert!(again
            .iter()
            .zip(&full.attention.layers[0])
            .all(|(a, b)| a.to_bits() == b.to_bits()));

        let c = load_stack(name, Stack::Cross);
        assert_eq!(c.info.stack, Some("cross"));
        assert!(!c.info.causal);
        let t = c.trace(text, &ForwardOptions::default()).unwrap();
        for h in 0..4 {
            for i in 0..n {
                for j in 0..n {
                    let w = r["cross_attention"][0][h][at(i)][j].as_f64().unwrap();
                    let got = t.attention.get(0, h, i, j) as f64;
                    close(got, w, &mut wc, || {
                        format!("{name} cross attention {h} {i} {j}")
                    });
                }
            }
        }
        assert!(c.trace_lm(text, &ForwardOptions::default()).is_err());
        eprintln!(
            "{name}: {n} tokens; max diff (relative above 1): decoder attention {wa:.2e}, \
             cross attention {wc:.2e}, decoder hidden {wh:.2e}, logits {wl:.2e}, label bits {wb:.2e}"
        );
    }
}

/// tiny_t5_v11 is T5 v1.1 as the hub has it: config `tie_word_embeddings: false` and its
/// own `lm_head.weight`, distinct from `shared`, so the decoder output goes to that head
/// unscaled. transformers' logits are that head on the last decoder hidden state, and far
/// from the tied head, the rescaled one, or both: the 1e-4 logit check of
/// `t5_bart_plbart_decoder_and_cross_stacks_match_transformers` fails for either mistake.
#[test]
fn t5_v11_lm_head_is_untied_and_unscaled() {
    let cfg: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir("tiny_t5_v11").join("config.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(cfg["tie_word_embeddings"], false);
    assert!(cfg.get("scale_decoder_outputs").is_none());
    let t = candle_core::safetensors::load(
        dir("tiny_t5_v11").join("model.safetensors"),
        &candle_core::Device::Cpu,
    )
    .unwrap();
    let mat = |n: &str| -> Vec<Vec<f32>> { t[n].to_vec2().unwrap() };
    let (head, shared) = (mat("lm_head.weight"), mat("shared.weight"));
    assert_eq!(head.len(), shared.len());
    assert_ne!(head, shared);
    let r = decoder_reference("tiny_t5_v11");
    let hs = r["decoder_hidden_states"].as_array().unwrap();
    let last = hs.last().unwrap().as_array().unwrap();
    let d = head[0].len();
    let scale = (d as f64).powf(-0.5);
    let dot = |w: &[f32], x: &[serde_json::Value]| -> f64 {
        w.iter()
            .zip(x)
            .map(|(a, b)| *a as f64 * b.as_f64().unwrap())
            .sum()
    };
    let (mut own, mut tied, mut rescaled, mut both) = (0f64, 0f64, 0f64, 0f64);
    for (p, x) in last.iter().enumerate() {
        let x = x.as_array().unwrap();
        for v in 0..head.len() {
            let want = r["logits"][p][v].as_f64().unwrap();
            let rel = |got: f64| (got - want).abs() / want.abs().max(1.0);
            let (h, s) = (dot(&head[v], x), dot(&shared[v], x));
            own = own.max(rel(h));
            tied = tied.max(rel(s));
            rescaled = rescaled.max(rel(h * scale));
            both = both.max(rel(s * scale));
        }
    }
    assert!(own < 1e-4, "{own}");
    assert!(
        tied > 0.1 && rescaled > 0.1 && both > 0.1,
        "{tied} {rescaled} {both}"
    );
}

#[test]
fn t5_decoder_buckets_are_one_directional() {
    use codescope::model::t5::causal_bucket;
    // transformers' _relative_position_bucket(bidirectional=False) for 32 buckets, 128
    // (torch 2.x): 16 exact offsets, then logarithmic, clamped at 31; later keys share
    // bucket 0.
    let want = [
        (0, 0),
        (1, 0),
        (50, 0),
        (-1, 1),
        (-15, 15),
        (-16, 16),
        (-20, 17),
        (-32, 21),
        (-64, 26),
        (-127, 31),
        (-128, 31),
        (-1000, 31),
    ];
    for (rel, b) in want {
        assert_eq!(causal_bucket(rel, 32, 128), b, "offset {rel}");
    }
}

#[test]
fn t5_bart_decoder_stacks_through_the_cli() {
    let root = tempfile::tempdir().unwrap();
    let sample = root.path().join("sample.py");
    std::fs::write(&sample, "def add(a, b):\n    return a + b\n").unwrap();
    let sample = sample.display().to_string();
    for (name, arch) in [("tiny_t5", "t5"), ("tiny_plbart", "plbart")] {
        let m = fixture(name);
        let out = ok(&run(
            root.path(),
            &[
                "trace", "--stack", "decoder", "--json", "--model", &m, &sample,
            ],
        ));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["model"]["architecture"], arch);
        assert_eq!(v["model"]["stack"], "decoder");
        let n = v["tokens"].as_array().unwrap().len();
        assert_eq!(v["attention"].as_array().unwrap().len(), 1);
        assert_eq!(v["attention"][0].as_array().unwrap().len(), 4);
        assert_eq!(v["attention"][0][3].as_array().unwrap().len(), n);
        assert_eq!(v["attention"][0][3][0].as_array().unwrap().len(), n);
        // The global option also goes after the subcommand; surprisal for every subword.
        let out = ok(&run(
            root.path(),
            &[
                "trace",
                "--json",
                "--surprisal",
                "--model",
                &m,
                &sample,
                "--stack",
                "decoder",
            ],
        ));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let bits = v["surprisal"].as_array().unwrap();
        assert_eq!(bits.len(), n);
        assert!(
            bits.iter().all(|b| b.as_f64().is_some_and(|b| b > 0.0)),
            "{bits:?}"
        );
        let out = ok(&run(
            root.path(),
            &[
                "trace",
                "--stack",
                "decoder",
                "--surprisal",
                "--model",
                &m,
                &sample,
            ],
        ));
        assert!(
            out.contains(&format!("({arch}, decoder stack, 1 layers x 4 heads")),
            "{out}"
        );
        let out = ok(&run(
            root.path(),
            &[
                "analyze", "--stack", "cross", "--json", "--model", &m, &sample,
            ],
        ));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["model"]["stack"], "cross");
        let out = ok(&run(
            root.path(),
            &["analyze", "--stack", "decoder", "--model", &m, &sample],
        ));
        assert!(out.contains(&format!("({arch}, decoder stack")), "{out}");
    }
    // The cross stack has no LM head; a decoder-only or encoder-only model has no stacks.
    let line = fails(&run(
        root.path(),
        &[
            "trace",
            "--stack",
            "cross",
            "--surprisal",
            "--model",
            &fixture("tiny_t5"),
            &sample,
        ],
    ));
    assert!(line.contains("--stack decoder"), "{line}");
    for (other, family) in [("tiny_gpt2", "gpt2"), ("tiny_roberta", "roberta")] {
        for stack in ["decoder", "cross"] {
            let line = fails(&run(
                root.path(),
                &[
                    "trace",
                    "--stack",
                    stack,
                    "--model",
                    &fixture(other),
                    &sample,
                ],
            ));
            assert!(
                line.contains(&format!("--stack {stack}"))
                    && line.contains(family)
                    && line.contains("t5, bart, plbart"),
                "{line}"
            );
        }
    }
    // Commands without a model refuse the option.
    let o = run(root.path(), &["syntax", "--stack", "decoder", &sample]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("--stack does nothing"),
        "{err}"
    );
}

/// The cross stack's head scores through every front end of the binary: `analyze` shows
/// the cross-attention's category attention but no head scores against the gold graphs
/// (text: one notice line instead of the tables and the finding; JSON: `relations` and
/// `finding` null, `head_scores_withheld` saying why, null on the other stacks; CSV: no
/// `relations` rows, the line on stderr; `--ged study` and `--sweep` add nothing);
/// `compare` gives the attention shift and shares but no F1 differences (text notice,
/// JSON `relations` null with `head_scores_withheld`, no CSV `relations` rows);
/// `reproduce` refuses the stack in one line; `render` draws the heat map and refuses the
/// head grid and the finding in one line.
#[test]
fn cross_stack_head_scores_are_withheld_in_every_front_end() {
    use codescope::analysis::CROSS_STACK_NO_SCORES;
    let root = tempfile::tempdir().unwrap();
    let sample = root.path().join("sample.py");
    std::fs::write(&sample, "def add(a, b):\n    return a + b\n").unwrap();
    let sample = sample.to_str().unwrap();
    let m = fixture("tiny_t5");
    let out = ok(&run(
        root.path(),
        &["--stack", "cross", "analyze", "--model", &m, sample],
    ));
    assert!(out.contains("t5, cross stack"), "{out}");
    assert!(
        out.contains(&format!("notice    {CROSS_STACK_NO_SCORES}")),
        "{out}"
    );
    assert!(out.contains("category attention"), "{out}");
    assert!(
        !out.contains("best head per layer") && !out.contains("reading:"),
        "{out}"
    );
    let enc = ok(&run(root.path(), &["analyze", "--model", &m, sample]));
    assert!(enc.contains("best head per layer") && !enc.contains("no head scores"));

    for extra in [&[][..], &["--sweep", "--ged", "study"][..]] {
        let mut args = vec![
            "--stack", "cross", "analyze", "--json", "--model", &m, sample,
        ];
        args.extend_from_slice(extra);
        let v: serde_json::Value = serde_json::from_str(&ok(&run(root.path(), &args))).unwrap();
        assert_eq!(v["head_scores_withheld"], CROSS_STACK_NO_SCORES);
        assert!(v["relations"].is_null() && v["finding"].is_null(), "{v}");
        assert!(v.get("sweep").is_none() && v.get("ged_study").is_none());
        assert!(v["category_attention"]["coarse_all"].is_object());
    }
    for stack in ["encoder", "decoder"] {
        let args = ["--stack", stack, "analyze", "--json", "--model", &m, sample];
        let v: serde_json::Value = serde_json::from_str(&ok(&run(root.path(), &args))).unwrap();
        assert!(v["head_scores_withheld"].is_null(), "{stack}");
        assert!(v["relations"]["ast_motif"]["f1"].is_array(), "{stack}");
        assert!(v["finding"].is_object(), "{stack}");
    }
    let o = run(
        root.path(),
        &[
            "--stack", "cross", "analyze", "--csv", "--model", &m, sample,
        ],
    );
    let csv = ok(&o);
    assert!(csv.lines().any(|l| l.starts_with("category_coarse,")));
    assert!(!csv.lines().any(|l| l.starts_with("relations,")), "{csv}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(CROSS_STACK_NO_SCORES), "{err}");
    let enc = ok(&run(
        root.path(),
        &["analyze", "--csv", "--model", &m, sample],
    ));
    assert!(enc.lines().any(|l| l.starts_with("relations,")));

    // compare: the attention shift and the category shares, no F1 differences.
    let cmp = ok(&run(
        root.path(),
        &["--stack", "cross", "compare", "--model", &m, sample],
    ));
    assert!(
        cmp.contains(&format!("notice   {CROSS_STACK_NO_SCORES}")),
        "{cmp}"
    );
    assert!(cmp.contains("heads whose attention moved most"), "{cmp}");
    assert!(!cmp.contains("F1 at t ="), "{cmp}");
    let enc = ok(&run(root.path(), &["compare", "--model", &m, sample]));
    assert!(enc.contains("ast_motif F1 at t =") && !enc.contains("no head scores"));
    let args = [
        "--stack", "cross", "compare", "--json", "--model", &m, sample,
    ];
    let v: serde_json::Value = serde_json::from_str(&ok(&run(root.path(), &args))).unwrap();
    assert_eq!(v["head_scores_withheld"], CROSS_STACK_NO_SCORES);
    assert!(v["relations"].is_null(), "{v}");
    assert!(v["attention_shift"].is_array() && v["shares"]["a"]["syn_to_id"].is_array());
    let args = [
        "--stack", "decoder", "compare", "--json", "--model", &m, sample,
    ];
    let v: serde_json::Value = serde_json::from_str(&ok(&run(root.path(), &args))).unwrap();
    assert!(v["head_scores_withheld"].is_null());
    assert!(v["relations"]["dfg"]["f1_diff"].is_array());
    let o = run(
        root.path(),
        &[
            "--stack", "cross", "compare", "--csv", "--model", &m, sample,
        ],
    );
    let csv = ok(&o);
    assert!(csv.lines().any(|l| l.starts_with("attention_shift,")));
    assert!(!csv.lines().any(|l| l.starts_with("relations,")), "{csv}");
    assert!(String::from_utf8_lossy(&o.stderr).contains(CROSS_STACK_NO_SCORES));

    // reproduce: its tables are the head scores.
    let corpus = root.path().join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    std::fs::copy(sample, corpus.join("a.py")).unwrap();
    let rep = root.path().join("rep");
    let line = fails(&run(
        root.path(),
        &[
            "--stack",
            "cross",
            "--model",
            &m,
            "reproduce",
            "--data",
            corpus.to_str().unwrap(),
            "--out",
            rep.to_str().unwrap(),
        ],
    ));
    assert!(
        line.contains("--stack cross") && line.contains(CROSS_STACK_NO_SCORES),
        "{line}"
    );
    assert!(!rep.exists());

    // render: the heat map of the cross-attention, no head grid or finding figure.
    let svg = root.path().join("cross.svg");
    let svg_s = svg.to_str().unwrap();
    ok(&run(
        root.path(),
        &[
            "--stack", "cross", "--model", &m, "render", sample, "--view", "heatmap", "--out",
            svg_s,
        ],
    ));
    assert!(std::fs::read_to_string(&svg)
        .unwrap()
        .contains("cross stack"));
    for view in ["heads", "finding"] {
        let line = fails(&run(
            root.path(),
            &[
                "--stack", "cross", "--model", &m, "render", sample, "--view", view, "--out", svg_s,
            ],
        ));
        assert!(
            line.contains("no head scores on the cross stack"),
            "{view}: {line}"
        );
    }
}

/// Bits within 1e-4 of the reference (absolute), the worst kept.
fn close_bits(got: f64, want: f64, worst: &mut f64, what: impl Fn() -> String) {
    let d = (got - want).abs();
    *worst = worst.max(d);
    assert!(d < 1e-4, "{}: {got} vs {want}", what());
}

/// The causal tests on the cross stack (the decoder's cross-attention) through the binary
/// against transformers (`tools/reference/tiny_encdec_causal_reference.py`, its `cross`
/// cases): `knockout --stack cross --json` blocks, for the edge set's code-token pairs,
/// decoder position `i + 1` (reading `s_i`) from the encoder's `s_j` in the cross-attention
/// of every layer and head (the reference aligns the hand-listed code tokens to the
/// subwords by their spans), and `ablate --stack cross --json` (zero and mean) ablates each
/// cross-attention head; per code token the decoder's bits, per head the class means. The
/// tiny CodeT5+ too, whose cross stack is its last decoder block's one cross-attention
/// (`tools/reference/tiny_codet5p_causal_reference.py`, the released modelling code).
#[test]
fn cross_stack_knockout_and_ablation_match_transformers_through_the_binary() {
    let r: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir("encdec_causal_reference.json")).unwrap(),
    )
    .unwrap();
    let cross = &r["cross"];
    let root = tempfile::tempdir().unwrap();
    let sample = root.path().join("sample.py");
    std::fs::write(&sample, cross["snippet"].as_str().unwrap()).unwrap();
    let sample = sample.display().to_string();
    let want_tokens = cross["code_tokens"].as_array().unwrap();
    // CodeT5+'s, by its released modelling code, on the same snippet and code tokens.
    let c5: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir("codet5p_causal_reference.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(c5["cross"]["snippet"], cross["snippet"]);
    assert_eq!(c5["cross"]["code_tokens"], cross["code_tokens"]);
    let cases: Vec<&serde_json::Value> = cross["cases"]
        .as_array()
        .unwrap()
        .iter()
        .chain(c5["cross"]["cases"].as_array().unwrap())
        .collect();
    assert_eq!(cases.len(), 5);
    let json = |args: &[&str]| -> serde_json::Value {
        serde_json::from_str(&ok(&run(root.path(), args))).unwrap()
    };
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let m = fixture(name);
        // The same input as the reference's.
        let t = json(&[
            "--stack", "cross", "trace", "--json", "--model", &m, &sample,
        ]);
        let ids: Vec<&serde_json::Value> = t["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| &s["id"])
            .collect();
        assert_eq!(
            ids,
            case["ids"].as_array().unwrap().iter().collect::<Vec<_>>(),
            "{name}"
        );
        let mut worst = 0.0f64;
        for k in case["knockouts"].as_array().unwrap() {
            let edges = k["edges"].as_str().unwrap();
            let v = json(&[
                "--stack",
                "cross",
                "knockout",
                "--edges",
                edges,
                "--control",
                "2",
                "--json",
                "--model",
                &m,
                &sample,
            ]);
            assert_eq!(
                (v["measure"].as_str(), v["model"]["stack"].as_str()),
                (Some("bits"), Some("cross"))
            );
            assert_eq!(
                v["blocked"]["token_pairs"], k["token_pairs"],
                "{name} {edges}"
            );
            assert_eq!(
                v["blocked"]["subword_pairs"], k["subword_pairs"],
                "{name} {edges}"
            );
            let tokens = v["tokens"].as_array().unwrap();
            assert_eq!(tokens.len(), want_tokens.len(), "{name}");
            for (i, (got, want)) in tokens.iter().zip(want_tokens).enumerate() {
                assert_eq!(got["span"][0], want[0], "{name} token {i}");
                assert_eq!(got["span"][1], want[1], "{name} token {i}");
                assert_eq!(got["coarse"], want[2], "{name} token {i}");
                for (field, w) in [("bits", &case["bits"][i]), ("bits_knocked", &k["bits"][i])] {
                    let (g, w) = (got[field].as_f64().unwrap(), w.as_f64().unwrap());
                    close_bits(g, w, &mut worst, || format!("{name} {edges} {field} {i}"));
                }
            }
            assert!(
                tokens
                    .iter()
                    .any(|t| t["delta_bits"].as_f64().is_some_and(|d| d.abs() > 1e-4)),
                "{name} {edges}: the knockout changes the surprisal"
            );
        }
        for mode in ["zero", "mean"] {
            let v = json(&[
                "--stack",
                "cross",
                "ablate",
                "--ablation",
                mode,
                "--json",
                "--model",
                &m,
                &sample,
            ]);
            let got = v["heads"].as_array().unwrap();
            let want: Vec<&serde_json::Value> = case["ablations"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|a| a["mode"] == mode)
                .collect();
            assert_eq!(
                got.len(),
                want.len(),
                "{name} {mode}: decoder layers x heads"
            );
            for (g, w) in got.iter().zip(want) {
                assert_eq!(
                    g["layer"].as_u64().unwrap(),
                    w["layer"].as_u64().unwrap() + 1
                );
                assert_eq!(g["head"].as_u64().unwrap(), w["head"].as_u64().unwrap() + 1);
                for class in ["identifier", "syntactic", "all"] {
                    close_bits(
                        g[class].as_f64().unwrap(),
                        w[class].as_f64().unwrap(),
                        &mut worst,
                        || format!("{name} {mode} ablation {} {class}", w["head"]),
                    );
                }
            }
            assert!(got.iter().any(|h| h["all"].as_f64().unwrap().abs() > 1e-3));
        }
        eprintln!("{name}: cross-stack knockout and ablation within {worst:.1e} bits");
    }
}

/// Patching on the decoder stack through the binary against transformers (the
/// reference's `patch` cases): `patch --stack decoder --rewrite rename:shuffle --json`
/// copies B's decoder residual stream at the decoder positions reading the renamed
/// subwords into A's pass (A's decoder over A's encoder), one hidden state at a time; every
/// measured token's bits in A, in B and patched at each hidden state (forward pre-hooks on
/// the decoder layers and the LM head in the reference). `patch --data` on a corpus of the
/// snippet gives the same per-layer values.
#[test]
fn decoder_stack_patching_matches_transformers_through_the_binary() {
    let r: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir("encdec_causal_reference.json")).unwrap(),
    )
    .unwrap();
    let patch = &r["patch"];
    let root = tempfile::tempdir().unwrap();
    let corpus = root.path().join("corpus");
    std::fs::create_dir_all(&corpus).unwrap();
    let sample = corpus.join("sample.py");
    std::fs::write(&sample, patch["snippet"].as_str().unwrap()).unwrap();
    let twin = root.path().join("twin.py");
    std::fs::write(&twin, patch["twin"].as_str().unwrap()).unwrap();
    let (sample, twin) = (sample.display().to_string(), twin.display().to_string());
    let cases = patch["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 4);
    let json = |args: &[&str]| -> serde_json::Value {
        serde_json::from_str(&ok(&run(root.path(), args))).unwrap()
    };
    let ids = |v: &serde_json::Value| -> Vec<u64> {
        v["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_u64().unwrap())
            .collect()
    };
    let u64s = |v: &serde_json::Value| -> Vec<u64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect()
    };
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let m = fixture(name);
        for (file, key) in [(&sample, "ids_a"), (&twin, "ids_b")] {
            let t = json(&["--stack", "decoder", "trace", "--json", "--model", &m, file]);
            assert_eq!(ids(&t), u64s(&case[key]), "{name} {key}");
        }
        let v = json(&[
            "--stack",
            "decoder",
            "patch",
            &sample,
            "--rewrite",
            "rename:shuffle",
            "--json",
            "--model",
            &m,
        ]);
        assert_eq!(v["model"]["stack"], "decoder");
        assert_eq!(u64s(&v["positions"]), u64s(&case["positions"]), "{name}");
        let want_patched = case["patched"].as_array().unwrap();
        assert_eq!(v["layers"].as_u64().unwrap() as usize, want_patched.len());
        let tokens = v["tokens"].as_array().unwrap();
        assert!(tokens.len() >= 5, "{name}: measured tokens");
        let mut worst = 0.0f64;
        for t in tokens {
            let (i, j) = (
                t["index"].as_u64().unwrap() as usize,
                t["index_b"].as_u64().unwrap() as usize,
            );
            let mut pairs = vec![
                (
                    t["bits_a"].as_f64().unwrap(),
                    case["bits_a"][i].as_f64().unwrap(),
                    "A".to_string(),
                ),
                (
                    t["bits_b"].as_f64().unwrap(),
                    case["bits_b"][j].as_f64().unwrap(),
                    "B".to_string(),
                ),
            ];
            for (l, want) in want_patched.iter().enumerate() {
                pairs.push((
                    t["patched_bits"][l].as_f64().unwrap(),
                    want[i].as_f64().unwrap(),
                    format!("patched at {l}"),
                ));
            }
            for (g, w, what) in pairs {
                close_bits(g, w, &mut worst, || format!("{name} token {i} {what}"));
            }
        }
        assert!(
            tokens.iter().any(|t| {
                let a = t["bits_a"].as_f64().unwrap();
                t["patched_bits"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|p| (p.as_f64().unwrap() - a).abs() > 1e-3)
            }),
            "{name}: the patch changes the unchanged tokens' bits"
        );
        // The corpus run: its one snippet's per-layer values are the single file's (of the
        // snippet as the corpus holds it, without the final newline: the encoder reads
        // every subword, so that changes every number).
        let trimmed = root.path().join("trimmed.py");
        std::fs::write(&trimmed, patch["snippet"].as_str().unwrap().trim_end()).unwrap();
        let v = json(&[
            "--stack",
            "decoder",
            "patch",
            &trimmed.display().to_string(),
            "--rewrite",
            "rename:shuffle",
            "--json",
            "--model",
            &m,
        ]);
        let c = json(&[
            "--stack",
            "decoder",
            "patch",
            "--data",
            &corpus.display().to_string(),
            "--rewrite",
            "rename:shuffle",
            "--json",
            "--model",
            &m,
        ]);
        assert_eq!(
            (c["snippets"].as_u64(), c["skipped"].as_u64()),
            (Some(1), Some(0))
        );
        let per = &c["per_snippet"][0];
        for (l, row) in v["per_layer"].as_array().unwrap().iter().enumerate() {
            assert_eq!(
                per["per_layer"][l]["classes"], row["classes"],
                "{name} layer {l}"
            );
        }
        eprintln!("{name}: decoder-stack patch within {worst:.1e} bits");
    }
}
