//! Tiny random-weight models written to disk in Hugging Face layout, for tests and
//! benchmarks (docs/ARCHITECTURE.md: "tiny random-weight models built in the test").
//!
//! Weights come from a seeded SplitMix64 stream, so a given seed always gives the same
//! model. The files go through the same loading path as real checkpoints
//! (`config.json`, safetensors, and one of the tokenizer forms).

use std::collections::HashMap;
use std::path::Path;

use candle_core::{Device, Tensor};

/// Deterministic f32 stream in `[-scale, scale)` ([`crate::rng::Rng`]).
pub use crate::rng::Rng as SplitMix;

/// Which tokenizer files to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TinyTokenizer {
    /// `vocab.txt` (BERT WordPiece fallback path).
    VocabTxt,
    /// `tokenizer.json` with truncation (8) and padding (32) configured, which codescope
    /// must ignore.
    JsonWithTruncation,
    /// `vocab.json` + `merges.txt` (RoBERTa byte-level BPE fallback path).
    Bpe,
}

/// Options for [`write_tiny_model`].
#[derive(Debug, Clone)]
pub struct Tiny {
    pub roberta: bool,
    pub layers: usize,
    pub heads: usize,
    pub hidden: usize,
    pub intermediate: usize,
    pub max_positions: usize,
    pub seed: u64,
    pub tokenizer: TinyTokenizer,
    /// Prefix for tensor names (`""`, `"bert."`, `"roberta."`).
    pub prefix: String,
}

impl Default for Tiny {
    fn default() -> Self {
        Tiny {
            roberta: false,
            layers: 2,
            heads: 4,
            hidden: 32,
            intermediate: 64,
            max_positions: 128,
            seed: 7,
            tokenizer: TinyTokenizer::VocabTxt,
            prefix: String::new(),
        }
    }
}

/// GPT-2's byte → printable-char table (`bytes_to_unicode`).
pub fn byte_level_alphabet() -> Vec<char> {
    let mut bs: Vec<u32> = (b'!' as u32..=b'~' as u32)
        .chain(0xA1..=0xAC)
        .chain(0xAE..=0xFF)
        .collect();
    let mut cs = bs.clone();
    let mut n = 0;
    for b in 0..256u32 {
        if !bs.contains(&b) {
            bs.push(b);
            cs.push(256 + n);
            n += 1;
        }
    }
    let mut pairs: Vec<(u32, u32)> = bs.into_iter().zip(cs).collect();
    pairs.sort();
    pairs
        .into_iter()
        .map(|(_, c)| char::from_u32(c).unwrap_or('?'))
        .collect()
}

const WORDS: &[&str] = &[
    "def", "return", "self", "for", "in", "if", "else", "import", "class", "public", "static",
    "void", "int", "new", "while", "x", "total", "count", "value", "name",
];

fn wordpiece_vocab() -> Vec<String> {
    let mut v: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for c in '!'..='~' {
        v.push(c.to_string());
    }
    for c in 'a'..='z' {
        v.push(format!("##{c}"));
    }
    for c in '0'..='9' {
        v.push(format!("##{c}"));
    }
    v.push("##_".into());
    v.extend(WORDS.iter().map(|w| w.to_string()));
    v
}

/// Write a tiny random model into `dir`. Returns the vocabulary size.
pub fn write_tiny_model(dir: &Path, t: &Tiny) -> std::io::Result<usize> {
    std::fs::create_dir_all(dir)?;
    let vocab_size = match t.tokenizer {
        TinyTokenizer::VocabTxt | TinyTokenizer::JsonWithTruncation => {
            let v = wordpiece_vocab();
            std::fs::write(dir.join("vocab.txt"), v.join("\n") + "\n")?;
            if t.tokenizer == TinyTokenizer::JsonWithTruncation {
                write_json_tokenizer(dir)?;
                std::fs::remove_file(dir.join("vocab.txt"))?;
            }
            v.len()
        }
        TinyTokenizer::Bpe => write_bpe(dir)?,
    };
    let pad = if t.roberta { 1 } else { 0 };
    let positions = t.max_positions + if t.roberta { pad + 1 } else { 0 };
    let config = serde_json::json!({
        "model_type": if t.roberta { "roberta" } else { "bert" },
        "architectures": [if t.roberta { "RobertaModel" } else { "BertModel" }],
        "vocab_size": vocab_size,
        "hidden_size": t.hidden,
        "num_hidden_layers": t.layers,
        "num_attention_heads": t.heads,
        "intermediate_size": t.intermediate,
        "hidden_act": "gelu",
        "max_position_embeddings": positions,
        "type_vocab_size": if t.roberta { 1 } else { 2 },
        "layer_norm_eps": 1e-12,
        "pad_token_id": pad,
    });
    std::fs::write(
        dir.join("config.json"),
        serde_json::to_string_pretty(&config)?,
    )?;
    let mut rng = SplitMix::new(t.seed);
    let mut ts: HashMap<String, Tensor> = HashMap::new();
    let dev = Device::Cpu;
    let mut put = |name: String, shape: &[usize], scale: f32, offset: f32| {
        let n: usize = shape.iter().product();
        let data: Vec<f32> = rng.vec(n, scale).into_iter().map(|x| x + offset).collect();
        let tensor = Tensor::from_vec(data, shape, &dev).expect("shape matches data");
        ts.insert(format!("{}{name}", t.prefix), tensor);
    };
    let h = t.hidden;
    put(
        "embeddings.word_embeddings.weight".into(),
        &[vocab_size, h],
        0.5,
        0.0,
    );
    put(
        "embeddings.position_embeddings.weight".into(),
        &[positions, h],
        0.5,
        0.0,
    );
    put(
        "embeddings.token_type_embeddings.weight".into(),
        &[if t.roberta { 1 } else { 2 }, h],
        0.5,
        0.0,
    );
    put("embeddings.LayerNorm.weight".into(), &[h], 0.1, 1.0);
    put("embeddings.LayerNorm.bias".into(), &[h], 0.1, 0.0);
    for l in 0..t.layers {
        let p = format!("encoder.layer.{l}.");
        for m in ["query", "key", "value"] {
            put(format!("{p}attention.self.{m}.weight"), &[h, h], 0.6, 0.0);
            put(format!("{p}attention.self.{m}.bias"), &[h], 0.1, 0.0);
        }
        put(
            format!("{p}attention.output.dense.weight"),
            &[h, h],
            0.3,
            0.0,
        );
        put(format!("{p}attention.output.dense.bias"), &[h], 0.1, 0.0);
        put(
            format!("{p}attention.output.LayerNorm.weight"),
            &[h],
            0.1,
            1.0,
        );
        put(
            format!("{p}attention.output.LayerNorm.bias"),
            &[h],
            0.1,
            0.0,
        );
        put(
            format!("{p}intermediate.dense.weight"),
            &[t.intermediate, h],
            0.3,
            0.0,
        );
        put(
            format!("{p}intermediate.dense.bias"),
            &[t.intermediate],
            0.1,
            0.0,
        );
        put(
            format!("{p}output.dense.weight"),
            &[h, t.intermediate],
            0.3,
            0.0,
        );
        put(format!("{p}output.dense.bias"), &[h], 0.1, 0.0);
        put(format!("{p}output.LayerNorm.weight"), &[h], 0.1, 1.0);
        put(format!("{p}output.LayerNorm.bias"), &[h], 0.1, 0.0);
    }
    candle_core::safetensors::save(&ts, dir.join("model.safetensors"))
        .map_err(std::io::Error::other)?;
    Ok(vocab_size)
}

/// A `tokenizer.json` (built from the `vocab.txt` already in `dir`) that truncates to 8
/// and pads to 32, like the packaged MiniLM's does to 128.
fn write_json_tokenizer(dir: &Path) -> std::io::Result<()> {
    use tokenizers::utils::padding::{PaddingParams, PaddingStrategy};
    use tokenizers::utils::truncation::TruncationParams;
    let files = crate::model::tokenizer::TokenizerFiles::WordPiece {
        vocab: dir.join("vocab.txt"),
    };
    let tok = crate::model::tokenizer::build(&files, dir).map_err(std::io::Error::other)?;
    let mut tok = tok;
    tok.with_truncation(Some(TruncationParams {
        max_length: 8,
        ..Default::default()
    }))
    .map_err(std::io::Error::other)?;
    tok.with_padding(Some(PaddingParams {
        strategy: PaddingStrategy::Fixed(32),
        ..Default::default()
    }));
    tok.save(dir.join("tokenizer.json"), true)
        .map_err(std::io::Error::other)?;
    Ok(())
}

/// `vocab.json` + `merges.txt` for a byte-level BPE with a handful of merges.
fn write_bpe(dir: &Path) -> std::io::Result<usize> {
    let mut vocab: Vec<String> = ["<s>", "<pad>", "</s>", "<unk>"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    vocab.extend(byte_level_alphabet().into_iter().map(|c| c.to_string()));
    let merges = [
        ("d", "e"),
        ("de", "f"),
        ("Ġ", "x"),
        ("r", "e"),
        ("re", "t"),
        ("Ġ", "re"),
        ("s", "e"),
        ("se", "l"),
        ("sel", "f"),
        ("Ġ", "self"),
    ];
    for (a, b) in merges {
        vocab.push(format!("{a}{b}"));
    }
    vocab.push("<mask>".into());
    let map: serde_json::Map<String, serde_json::Value> = vocab
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), serde_json::Value::from(i)))
        .collect();
    std::fs::write(dir.join("vocab.json"), serde_json::to_string(&map)?)?;
    let mut m = String::from("#version: 0.2\n");
    for (a, b) in merges {
        m.push_str(&format!("{a} {b}\n"));
    }
    std::fs::write(dir.join("merges.txt"), m)?;
    Ok(vocab.len())
}
