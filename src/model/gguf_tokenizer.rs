//! A Hugging Face [`Tokenizer`] rebuilt from a GGUF file's `tokenizer.ggml.*` metadata, so a
//! GGUF model runs without a `tokenizer.json`.
//!
//! The reference is transformers' own GGUF conversion
//! (`transformers/integrations/gguf/gguf_tokenizer_mapping.py`, 5.24): for the same file,
//! [`from_gguf`] builds the same pipeline, so ids and offsets are identical (checked by
//! `tests/it/gguf_tokenizer.rs` on the packaged Gemma 3 270M and on two tiny tokenizer-only
//! files for the `gpt2` and non-Gemma `llama` paths). For Gemma-style vocabularies
//! [`fast_from_gguf`] builds codescope's own encoder instead ([`super::spm_bpe`]: the same
//! encodings, tested against this pipeline, in a fraction of the build time); the
//! pipeline stays the reference. Two `tokenizer.ggml.model` types:
//!
//! - `llama` — SentencePiece BPE with byte fallback. The file has tokens, scores and token
//!   types but no merges: they are derived from the vocabulary as transformers'
//!   `generate_merges` does — every split of a token into two vocabulary pieces is a merge,
//!   ranked by the merged token's score (SentencePiece merges the best-scoring pair first),
//!   ties broken by longer left piece, then longer right piece, then piece ids. Gemma files
//!   (`general.architecture` gemma/gemma2/gemma3) rank by file position instead (their
//!   scores do not follow the merge order; for Gemma 3's ordinary tokens score = −position
//!   anyway) and store whitespace-run tokens with real spaces, respelled here as `▁` runs.
//!   Text: Gemma replaces spaces by `▁` in a normalizer (no pre-tokenizer: the whole text
//!   between added tokens is one BPE word); other llama-type files use `Metaspace`, and
//!   `phi3` a prepend + replace normalizer (transformers' `phi3_tokenizer`; not checked
//!   against a real file). The file's unknown token is the BPE's `unk` (transformers'
//!   `LlamaTokenizer` sets none; it matters only if a `<0xNN>` byte token is missing).
//! - `gpt2` — byte-level BPE with the file's `tokenizer.ggml.merges`, split by the regex
//!   `tokenizer.ggml.pre` names (llama3, qwen2, gpt-4o families) or GPT-2's.
//!
//! Token types (llama.cpp): CONTROL tokens become special added tokens, USER_DEFINED ones
//! plain added tokens (both matched whole in the raw text, e.g. Gemma's `\n\n` and
//! `<start_of_turn>`); BOS/EOS/UNK/PAD are special too. `add_bos_token` (default: yes for
//! `llama`, no for `gpt2`) and `add_eos_token` set the post-processor. As in transformers,
//! a special token's text inside the input (`<bos>` typed in code) is that token, with
//! real offsets and special mask 0. Gemma's whitespace-run tokens are *not* added tokens:
//! transformers, and so codescope, lets BPE find them (llama.cpp matches them whole in the
//! raw text, so its split of a long space run may differ).
//!
//! Prefix space: `tokenizer.ggml.add_space_prefix` is honoured (default: no for Gemma, as
//! its tokenizer; yes for other `llama` files, as llama.cpp). transformers ignores the flag
//! and applies its per-family default, so the two differ only on files whose flag
//! contradicts that default (Gemma 3's says no, like the default).
//!
//! Offsets are byte offsets into the original text: `▁` (3 bytes) produced by the normalizer
//! maps back to the 1-byte space it replaced, and byte-fallback tokens `<0xNN>` carry the
//! span of the whole character they came from.

use std::collections::HashSet;

use rayon::prelude::*;

use super::gguf::{Array, Metadata, Value};
use tokenizers::decoders::byte_fallback::ByteFallback;
use tokenizers::decoders::fuse::Fuse;
use tokenizers::decoders::sequence::Sequence as DecoderSequence;
use tokenizers::decoders::strip::Strip;
use tokenizers::models::bpe::{Vocab, BPE};

use super::spm_bpe::{FxMap, Merges, Parts, SpmBpe};
use tokenizers::normalizers::{Prepend, Replace, Sequence as NormalizerSequence};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::metaspace::{Metaspace, PrependScheme};
use tokenizers::pre_tokenizers::sequence::Sequence as PreTokenizerSequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::processors::template::{SpecialToken, TemplateProcessing};
use tokenizers::{AddedToken, Model, SplitDelimiterBehavior, Tokenizer, TokenizerImpl};

use crate::error::{Error, Result};

/// `tokenizer.ggml.model` values [`from_gguf`] builds.
pub const SUPPORTED_TYPES: &[&str] = &["llama", "gpt2"];

/// llama.cpp's `llama_token_type` values (`tokenizer.ggml.token_type`).
const CONTROL: i32 = 3;
const USER_DEFINED: i32 = 4;

/// The SentencePiece meta-space.
const META: char = '\u{2581}';

/// Architectures whose `llama`-type vocabulary transformers reads the Gemma way.
const GEMMA_ARCHS: &[&str] = &["gemma", "gemma2", "gemma3"];

/// Pre-tokenizer regexes for `tokenizer.ggml.pre` (transformers' `GGUF_PRE_TOKENIZER_SPLITS`).
const LLAMA3_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const TEKKEN_SPLIT: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const GPT4O_SPLIT: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";

fn pre_split(pre: &str) -> Option<&'static str> {
    Some(match pre {
        "llama3" | "llama-v3" | "llama-bpe" | "falcon3" | "falcon-h1" | "pixtral" | "midm-2.0"
        | "lfm2" | "jina-v5-nano" | "dbrx" | "smaug-bpe" => LLAMA3_SPLIT,
        "tekken" => TEKKEN_SPLIT,
        "qwen2" | "deepseek-r1-qwen" | "kormo" | "f2llmv2" | "megrez" => QWEN2_SPLIT,
        "gpt-4o" | "llama4" | "kanana2" | "talkie" | "minimax-m2" => GPT4O_SPLIT,
        _ => return None,
    })
}

/// A tokenizer pipeline with the library's type-erased components.
type Wrapped = TokenizerImpl<
    tokenizers::ModelWrapper,
    tokenizers::NormalizerWrapper,
    tokenizers::PreTokenizerWrapper,
    tokenizers::PostProcessorWrapper,
    tokenizers::DecoderWrapper,
>;

fn bad(reason: impl std::fmt::Display) -> Error {
    Error::Tokenizer(format!("GGUF tokenizer metadata: {reason}"))
}

fn unsupported(kind: &str) -> Error {
    Error::Tokenizer(format!(
        "GGUF tokenizer type '{kind}' is not supported (supported: {})",
        SUPPORTED_TYPES.join(", ")
    ))
}

fn tk_err(context: &str, e: impl std::fmt::Display) -> Error {
    Error::Tokenizer(format!("GGUF tokenizer: {context}: {e}"))
}

/// Typed access to the metadata, tolerant of the integer width a writer chose.
struct Meta<'a>(&'a Metadata);

impl<'a> Meta<'a> {
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.0.get(key)
    }

    fn str(&self, key: &str) -> Result<Option<&'a str>> {
        self.get(key)
            .map(|v| match v {
                Value::String(s) => Ok(s.as_str()),
                _ => Err(bad(format!("{key} is not a string"))),
            })
            .transpose()
    }

    fn bool(&self, key: &str) -> Result<Option<bool>> {
        self.get(key)
            .map(|v| match v {
                Value::Bool(b) => Ok(*b),
                _ => Err(bad(format!("{key} is not a bool"))),
            })
            .transpose()
    }

    fn id(&self, key: &str) -> Result<Option<u32>> {
        self.get(key)
            .map(|v| int(v).ok_or_else(|| bad(format!("{key} is not a token id"))))
            .transpose()
    }

    fn array(&self, key: &str) -> Result<Option<&'a Array>> {
        self.get(key)
            .map(|v| match v {
                Value::Array(a) => Ok(a),
                _ => Err(bad(format!("{key} is not an array"))),
            })
            .transpose()
    }

    fn strings(&self, key: &str) -> Result<Option<Vec<&'a str>>> {
        match self.array(key)? {
            None => Ok(None),
            Some(Array::String(v)) => Ok(Some(v.iter().map(String::as_str).collect())),
            Some(a) if a.is_empty() => Ok(Some(Vec::new())),
            Some(_) => Err(bad(format!("{key} holds a non-string"))),
        }
    }
}

/// A non-negative integer of any width that fits a `u32`.
fn int(v: &Value) -> Option<u32> {
    let x: i128 = match *v {
        Value::U8(x) => x.into(),
        Value::I8(x) => x.into(),
        Value::U16(x) => x.into(),
        Value::I16(x) => x.into(),
        Value::U32(x) => x.into(),
        Value::I32(x) => x.into(),
        Value::U64(x) => x.into(),
        Value::I64(x) => x.into(),
        _ => return None,
    };
    u32::try_from(x).ok()
}

/// The special-token ids and flags every type uses.
struct Specials {
    bos: Option<u32>,
    eos: Option<u32>,
    unk: Option<u32>,
    pad: Option<u32>,
    add_bos: bool,
    add_eos: bool,
}

/// The `tokenizer.ggml.*` metadata every builder reads, checked.
struct Parsed<'a> {
    kind: &'a str,
    arch: &'a str,
    tokens: Vec<&'a str>,
    types: Option<Vec<i32>>,
    specials: Specials,
    add_space_prefix: Option<bool>,
}

fn parse(metadata: &Metadata) -> Result<Parsed<'_>> {
    let meta = Meta(metadata);
    let kind = meta
        .str("tokenizer.ggml.model")?
        .ok_or_else(|| bad("no tokenizer.ggml.model (the file carries no tokenizer)"))?;
    if !SUPPORTED_TYPES.contains(&kind) {
        return Err(unsupported(kind));
    }
    let arch = meta.str("general.architecture")?.unwrap_or("");
    let tokens = meta
        .strings("tokenizer.ggml.tokens")?
        .ok_or_else(|| bad("no tokenizer.ggml.tokens"))?;
    if tokens.is_empty() {
        return Err(bad("tokenizer.ggml.tokens is empty"));
    }
    let n = tokens.len();
    let types: Option<Vec<i32>> = meta
        .array("tokenizer.ggml.token_type")?
        .map(|a| match a {
            Array::I32(v) => Ok(v.clone()),
            a => (0..a.len())
                .map(|i| {
                    a.int(i)
                        .and_then(|t| i32::try_from(t).ok())
                        .ok_or_else(|| bad("tokenizer.ggml.token_type holds a non-integer"))
                })
                .collect::<Result<Vec<_>>>(),
        })
        .transpose()?;
    if types.as_ref().is_some_and(|t| t.len() != n) {
        return Err(bad(format!(
            "{n} tokens but {} token types",
            types.as_ref().map_or(0, Vec::len)
        )));
    }
    let specials = Specials {
        bos: meta.id("tokenizer.ggml.bos_token_id")?,
        eos: meta.id("tokenizer.ggml.eos_token_id")?,
        unk: meta.id("tokenizer.ggml.unknown_token_id")?,
        pad: meta.id("tokenizer.ggml.padding_token_id")?,
        add_bos: meta
            .bool("tokenizer.ggml.add_bos_token")?
            .unwrap_or(kind == "llama"),
        add_eos: meta.bool("tokenizer.ggml.add_eos_token")?.unwrap_or(false),
    };
    for id in [specials.bos, specials.eos, specials.unk, specials.pad]
        .into_iter()
        .flatten()
    {
        if id as usize >= n {
            return Err(bad(format!(
                "special token id {id} outside the {n}-token vocabulary"
            )));
        }
    }
    let add_space_prefix = meta.bool("tokenizer.ggml.add_space_prefix")?;
    Ok(Parsed {
        kind,
        arch,
        tokens,
        types,
        specials,
        add_space_prefix,
    })
}

/// The `llama`-type scores, checked against the token count.
fn scores(metadata: &Metadata, n: usize) -> Result<Vec<f32>> {
    let scores = Meta(metadata)
        .array("tokenizer.ggml.scores")?
        .ok_or_else(|| bad("llama-type tokenizer without tokenizer.ggml.scores"))?;
    if scores.len() != n {
        return Err(bad(format!("{n} tokens but {} scores", scores.len())));
    }
    match scores {
        Array::F32(v) => Ok(v.clone()),
        a if a.is_empty() => Ok(Vec::new()),
        _ => Err(bad("tokenizer.ggml.scores holds a non-f32")),
    }
}

fn flavor(arch: &str) -> SpFlavor {
    if GEMMA_ARCHS.contains(&arch) {
        SpFlavor::Gemma
    } else if arch == "phi3" {
        SpFlavor::Phi3
    } else {
        SpFlavor::Llama
    }
}

/// Rebuild the tokenizer a GGUF file describes (see the module docs for what is honoured).
pub fn from_gguf(metadata: &Metadata) -> Result<Tokenizer> {
    let p = parse(metadata)?;
    let (tok, vocab_tokens) = match p.kind {
        "llama" => {
            let scores = scores(metadata, p.tokens.len())?;
            sentencepiece(
                &p.tokens,
                &scores,
                flavor(p.arch),
                p.add_space_prefix,
                &p.specials,
            )?
        }
        "gpt2" => {
            let meta = Meta(metadata);
            let merges = meta
                .strings("tokenizer.ggml.merges")?
                .ok_or_else(|| bad("gpt2-type tokenizer without tokenizer.ggml.merges"))?;
            let pre = meta.str("tokenizer.ggml.pre")?;
            byte_level(&p.tokens, &merges, pre)?
        }
        other => return Err(unsupported(other)),
    };
    finish(
        tok,
        &p.tokens,
        &vocab_tokens,
        p.types.as_deref(),
        p.kind,
        &p.specials,
    )
}

/// codescope's own encoder ([`SpmBpe`]) for the files it covers: `llama` type read the
/// Gemma way without a space prefix (Gemma 3, the packaged model), whose added tokens all
/// name vocabulary entries. `None` for every other file ([`from_gguf`] builds those).
/// Same ids, strings and offsets as [`from_gguf`]'s pipeline (tests), built in a fraction
/// of its time: the merges stay ids, never strings hashed by the `tokenizers` builder.
///
/// `stored`: what [`SpmBpe::to_bytes`] wrote for this file before (the dequantized-weight
/// cache keeps it): the merge table is then read instead of derived, and for a
/// vocabulary without repeated strings no token is hashed at all. A stored form that does
/// not fit the vocabulary is ignored.
pub fn fast_from_gguf(metadata: &Metadata, stored: Option<&[u8]>) -> Result<Option<SpmBpe>> {
    let p = parse(metadata)?;
    if p.kind != "llama" || flavor(p.arch) != SpFlavor::Gemma || p.add_space_prefix.unwrap_or(false)
    {
        return Ok(None);
    }
    // Only the ranking by file position is used for Gemma; the scores are still checked
    // as the reference path checks them, so both accept the same files.
    scores(metadata, p.tokens.len())?;
    let vocab_tokens = gemma_spelling(&p.tokens);
    let n = vocab_tokens.len();
    let stored = stored
        .and_then(|b| SpmBpe::stored_merges(b, n))
        .filter(|&(_, distinct)| distinct == n);
    // Token → (last) id: by the map when derived; when stored and no string repeats, a
    // token's id is its position (the map is not built).
    let (merges, vocab) = match stored {
        Some((merges, _)) => (merges, None),
        None => {
            let vocab = ref_vocab(&vocab_tokens);
            let rank: Vec<f64> = (0..n).map(|i| -(i as f64)).collect();
            let ranked = ranked_merges(&vocab_tokens, &vocab, &rank);
            let merges = Merges::from_ranked(ranked.iter().map(|c| (c.left, c.right, c.merged)));
            (merges, Some(vocab))
        }
    };
    // The id of `s`, which is (or spells like) token `i`.
    let id_of = |s: &str, i: usize| -> Option<u32> {
        match &vocab {
            Some(v) => v.get(s).copied(),
            None => (vocab_tokens[i] == s).then_some(i as u32),
        }
    };
    // The added tokens `finish` registers, as (content, id); contents outside the
    // vocabulary would get new ids there: not covered here.
    let mut added: Vec<(String, u32)> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut add = |content: &str, i: usize, special: bool| -> bool {
        if content.is_empty() || !seen.insert(content.to_string()) {
            return true;
        }
        match id_of(content, i) {
            Some(id) => {
                added.push((content.to_string(), id));
                true
            }
            None => !special,
        }
    };
    let mut covered = true;
    if let Some(types) = &p.types {
        for (i, (tok, &ty)) in p.tokens.iter().zip(types).enumerate() {
            if ty == CONTROL {
                covered &= add(tok, i, true);
            } else if ty == USER_DEFINED && id_of(tok, i).is_some() {
                covered &= add(tok, i, false);
            }
        }
    }
    let sp = &p.specials;
    for id in [sp.bos, sp.eos, sp.unk, sp.pad].into_iter().flatten() {
        covered &= add(&vocab_tokens[id as usize], id as usize, true);
    }
    if !covered {
        return Ok(None);
    }
    let last_id = |id: u32| id_of(&vocab_tokens[id as usize], id as usize).unwrap_or(id);
    let post = |on: bool, id: Option<u32>| {
        id.filter(|_| on)
            .map(|id| (id, vocab_tokens[id as usize].clone()))
    };
    let unk = sp.unk.map(last_id);
    let (bos, eos) = (post(sp.add_bos, sp.bos), post(sp.add_eos, sp.eos));
    // Single characters and `<0xNN>` byte tokens, scanned in id order (the last id of a
    // repeated string wins, as in the map).
    let mut chars: FxMap<char, u32> = FxMap::default();
    let mut bytes: Vec<Option<u32>> = vec![None; 256];
    for (i, t) in vocab_tokens.iter().enumerate() {
        let mut cs = t.chars();
        if let (Some(c), None) = (cs.next(), cs.next()) {
            chars.insert(c, i as u32);
        } else if let Some(b) = t
            .strip_prefix("<0x")
            .and_then(|h| h.strip_suffix('>'))
            .filter(|h| h.len() == 2)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .filter(|b| *t == format!("<{b:#04X}>"))
        {
            bytes[b as usize] = Some(i as u32);
        }
    }
    let (distinct, last) = match &vocab {
        Some(v) if v.len() < n => (
            v.len(),
            Some(
                (0..n)
                    .map(|i| v[vocab_tokens[i].as_str()] as usize == i)
                    .collect(),
            ),
        ),
        Some(v) => (v.len(), None),
        None => (n, None),
    };
    drop(vocab);
    SpmBpe::new(Parts {
        tokens: vocab_tokens,
        distinct,
        last,
        chars,
        bytes,
        merges,
        unk,
        added,
        bos,
        eos,
    })
    .map(Some)
}

/// How a `llama`-type (SentencePiece) vocabulary is read, per transformers' builders.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum SpFlavor {
    /// `GemmaTokenizer`: spaces → `▁` by a normalizer, merges ranked by file position.
    Gemma,
    /// transformers' `phi3_tokenizer`: the prefix `▁` comes from a normalizer.
    Phi3,
    /// `LlamaTokenizer`: `Metaspace` pre-tokenizer, merges ranked by score.
    Llama,
}

/// Python's `str.isspace` (Unicode White_Space plus the four ASCII separators U+001C–1F).
fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

fn sentencepiece(
    tokens: &[&str],
    scores: &[f32],
    flavor: SpFlavor,
    add_space_prefix: Option<bool>,
    specials: &Specials,
) -> Result<(Wrapped, Vec<String>)> {
    let vocab_tokens: Vec<String> = match flavor {
        SpFlavor::Gemma => gemma_spelling(tokens),
        _ => tokens.iter().map(|t| t.to_string()).collect(),
    };
    let rank: Vec<f64> = match flavor {
        SpFlavor::Gemma => (0..tokens.len()).map(|i| -(i as f64)).collect(),
        _ => scores.iter().map(|&s| f64::from(s)).collect(),
    };
    let merges = merges_from_ranking(&vocab_tokens, &rank);
    let vocab = vocab_of(&vocab_tokens);
    let mut bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .byte_fallback(true)
        .fuse_unk(true);
    if let Some(unk) = specials.unk {
        bpe = bpe.unk_token(vocab_tokens[unk as usize].clone());
    }
    let bpe = bpe
        .build()
        .map_err(|e| tk_err("building the BPE model", e))?;
    let mut t: Wrapped = TokenizerImpl::new(bpe.into());
    let space = Replace::new(" ", META.to_string()).map_err(|e| tk_err("normalizer", e))?;
    let prepend = Prepend::new(META.to_string());
    let prefix = match flavor {
        SpFlavor::Gemma => add_space_prefix.unwrap_or(false),
        _ => add_space_prefix.unwrap_or(true),
    };
    match flavor {
        SpFlavor::Gemma | SpFlavor::Phi3 => {
            let norm: tokenizers::NormalizerWrapper = if prefix {
                NormalizerSequence::new(vec![prepend.into(), space.into()]).into()
            } else {
                space.into()
            };
            t.with_normalizer(Some(norm))
                .map_err(|e| tk_err("normalizer", e))?;
        }
        SpFlavor::Llama => {
            let scheme = if prefix {
                PrependScheme::First
            } else {
                PrependScheme::Never
            };
            t.with_pre_tokenizer(Some(Metaspace::new(META, scheme, false)));
        }
    }
    let mut decoders = vec![
        Replace::new(META.to_string(), " ")
            .map_err(|e| tk_err("decoder", e))?
            .into(),
        ByteFallback::new().into(),
        Fuse::new().into(),
    ];
    if prefix {
        decoders.push(Strip::new(' ', 1, 0).into());
    }
    t.with_decoder(Some(DecoderSequence::new(decoders)));
    Ok((t, vocab_tokens))
}

/// Gemma stores a token of spaces with real spaces; its text side looks them up as ▁ runs.
fn gemma_spelling(tokens: &[&str]) -> Vec<String> {
    tokens
        .iter()
        .map(|t| {
            if t.contains(' ') && t.chars().all(py_space) {
                META.to_string().repeat(t.chars().count())
            } else {
                t.to_string()
            }
        })
        .collect()
}

/// Token → id (the last id of a repeated token, as a Python dict built in order).
fn vocab_of(vocab_tokens: &[String]) -> Vocab {
    vocab_tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), i as u32))
        .collect()
}

/// Token → id like [`vocab_of`], borrowing the strings (no copy of 262k of them).
fn ref_vocab(vocab_tokens: &[String]) -> FxMap<&str, u32> {
    let mut m = FxMap::with_capacity_and_hasher(vocab_tokens.len(), Default::default());
    for (i, t) in vocab_tokens.iter().enumerate() {
        m.insert(t.as_str(), i as u32);
    }
    m
}

/// The merges of [`ranked_merges`] as the `tokenizers` builder takes them.
fn merges_from_ranking(tokens: &[String], rank: &[f64]) -> Vec<(String, String)> {
    ranked_merges(tokens, &ref_vocab(tokens), rank)
        .into_par_iter()
        .map(|c| {
            (
                tokens[c.left as usize].clone(),
                tokens[c.right as usize].clone(),
            )
        })
        .collect()
}

/// Merges implied by a vocabulary without a merge list (transformers'
/// `tokenization_utils_base.generate_merges` with scores): for each token, in vocabulary
/// order, every split into two vocabulary pieces (sorted by the pieces' ids); all of them
/// then stably sorted by the token's rank descending, then left-piece length, then
/// right-piece length (in characters), both descending. A token listed twice counts once,
/// at its first position, with its last id and rank (Python dict semantics). `vocab` maps
/// each token to its last id. Parallel over tokens; the result does not depend on it.
fn ranked_merges(tokens: &[String], vocab: &FxMap<&str, u32>, rank: &[f64]) -> Vec<Candidate> {
    // Tokens to skip: later occurrences of a repeated token (none in a sane file).
    let mut skip = vec![false; tokens.len()];
    let repeats = vocab.len() < tokens.len();
    if repeats {
        let mut seen: HashSet<&str> = HashSet::new();
        for (i, t) in tokens.iter().enumerate() {
            skip[i] = !seen.insert(t.as_str());
        }
    }
    const CHUNK: usize = 8192;
    let per_chunk: Vec<Vec<Candidate>> = tokens
        .par_chunks(CHUNK)
        .enumerate()
        .map(|(c, chunk)| {
            let mut out = Vec::with_capacity(2 * chunk.len());
            for (j, t) in chunk.iter().enumerate() {
                let i = c * CHUNK + j;
                if skip[i] {
                    continue;
                }
                let last = if repeats {
                    vocab[t.as_str()] as usize
                } else {
                    i
                };
                let first = out.len();
                let total = t.chars().count() as u32;
                for (k, (b, _)) in t.char_indices().enumerate().skip(1) {
                    let Some(&left) = vocab.get(&t[..b]) else {
                        continue;
                    };
                    let Some(&right) = vocab.get(&t[b..]) else {
                        continue;
                    };
                    out.push(Candidate {
                        rank: rank[last],
                        merged: last as u32,
                        left_chars: k as u32,
                        right_chars: total - k as u32,
                        left,
                        right,
                    });
                }
                out[first..].sort_by_key(|c: &Candidate| (c.left, c.right));
            }
            out
        })
        .collect();
    let mut cands = per_chunk.concat();
    // Stable, like Python's sort with reverse=True.
    cands.par_sort_by(|a, b| {
        b.rank
            .total_cmp(&a.rank)
            .then(b.left_chars.cmp(&a.left_chars))
            .then(b.right_chars.cmp(&a.right_chars))
    });
    cands
}

/// One derived merge before ranking.
#[derive(Clone, Copy)]
struct Candidate {
    rank: f64,
    /// The merged token's id (its last id, as the builder's vocabulary lookup gives).
    merged: u32,
    left_chars: u32,
    right_chars: u32,
    left: u32,
    right: u32,
}

/// GPT-2's byte → printable character table (`bytes_to_unicode`).
fn byte_alphabet() -> [char; 256] {
    let mut table = ['\0'; 256];
    let mut extra = 0u32;
    for b in 0..=255u8 {
        let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        table[b as usize] = if printable {
            char::from(b)
        } else {
            extra += 1;
            char::from_u32(255 + extra).unwrap_or('\0')
        };
    }
    table
}

fn byte_level(
    tokens: &[&str],
    merges: &[&str],
    pre: Option<&str>,
) -> Result<(Wrapped, Vec<String>)> {
    let table = byte_alphabet();
    let alphabet: HashSet<char> = table.iter().copied().collect();
    // A token outside the byte alphabet (some converters store added tokens raw) is
    // respelled byte by byte, as transformers does.
    let vocab_tokens: Vec<String> = tokens
        .iter()
        .map(|t| {
            if t.chars().all(|c| alphabet.contains(&c)) {
                t.to_string()
            } else {
                t.bytes().map(|b| table[b as usize]).collect()
            }
        })
        .collect();
    let merges = merges
        .iter()
        .map(|m| {
            m.split_once(' ')
                .filter(|(_, r)| !r.contains(' '))
                .map(|(l, r)| (l.to_string(), r.to_string()))
                .ok_or_else(|| bad(format!("merge '{m}' is not two space-separated tokens")))
        })
        .collect::<Result<Vec<_>>>()?;
    let vocab: Vocab = vocab_tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), i as u32))
        .collect();
    let bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .build()
        .map_err(|e| tk_err("building the BPE model", e))?;
    let mut t: Wrapped = TokenizerImpl::new(bpe.into());
    match pre.and_then(pre_split) {
        Some(regex) => {
            let split = Split::new(
                SplitPattern::Regex(regex.into()),
                SplitDelimiterBehavior::Isolated,
                false,
            )
            .map_err(|e| tk_err("pre-tokenizer regex", e))?;
            t.with_pre_tokenizer(Some(PreTokenizerSequence::new(vec![
                split.into(),
                ByteLevel::new(false, true, false).into(),
            ])));
        }
        None => {
            t.with_pre_tokenizer(Some(ByteLevel::new(false, true, true)));
        }
    }
    t.with_decoder(Some(ByteLevel::default()));
    Ok((t, vocab_tokens))
}

/// Added tokens and the BOS/EOS post-processor, common to both types.
fn finish(
    mut t: Wrapped,
    tokens: &[&str],
    vocab_tokens: &[String],
    types: Option<&[i32]>,
    kind: &str,
    sp: &Specials,
) -> Result<Tokenizer> {
    let byte_alpha: Option<HashSet<char>> =
        (kind == "gpt2").then(|| byte_alphabet().into_iter().collect());
    let mut special: Vec<AddedToken> = Vec::new();
    let mut user: Vec<AddedToken> = Vec::new();
    if let Some(types) = types {
        for (tok, &ty) in tokens.iter().zip(types) {
            // A byte-level "control" token outside the byte alphabet is a llama.cpp mislabel
            // (transformers skips it too: it is not in the vocabulary as spelled).
            let spelled = byte_alpha
                .as_ref()
                .is_none_or(|a| tok.chars().all(|c| a.contains(&c)));
            if ty == CONTROL && spelled {
                special.push(AddedToken::from(*tok, true).normalized(false));
            } else if ty == USER_DEFINED && t.get_model().token_to_id(tok).is_some() {
                user.push(AddedToken::from(*tok, false).normalized(false));
            }
        }
    }
    for id in [sp.bos, sp.eos, sp.unk, sp.pad].into_iter().flatten() {
        let tok = &vocab_tokens[id as usize];
        if !special.iter().any(|a| &a.content == tok) {
            special.push(AddedToken::from(tok.clone(), true).normalized(false));
        }
    }
    let bos = sp.bos.filter(|_| sp.add_bos);
    let eos = sp.eos.filter(|_| sp.add_eos);
    let mut named: Vec<SpecialToken> = Vec::new();
    for (name, id) in [("bos", bos), ("eos", eos)] {
        if let Some(id) = id {
            named.push(
                SpecialToken::new(
                    name.into(),
                    vec![id],
                    vec![vocab_tokens[id as usize].clone()],
                )
                .map_err(|e| tk_err("post-processor", e))?,
            );
        }
    }
    // transformers' `update_post_processor`: "[bos:0] $A:0 [eos:0]" and, for pairs, the
    // same again for B with type 1.
    let template = |seq: &str, ty: u32| -> Vec<String> {
        let mut v = Vec::new();
        if bos.is_some() {
            v.push(format!("bos:{ty}"));
        }
        v.push(format!("{seq}:{ty}"));
        if eos.is_some() {
            v.push(format!("eos:{ty}"));
        }
        v
    };
    let single = template("$A", 0);
    let pair = [template("$A", 0), template("$B", 1)].concat();
    let post = TemplateProcessing::builder()
        .try_single(single)
        .and_then(|b| b.try_pair(pair))
        .map_err(|e| tk_err("post-processor", e))?
        .special_tokens(named)
        .build()
        .map_err(|e| tk_err("post-processor", e))?;
    t.with_post_processor(Some(post));
    let mut tok: Tokenizer = t.into();
    tok.add_special_tokens(special)
        .map_err(|e| tk_err("adding control tokens", e))?;
    tok.add_tokens(user)
        .map_err(|e| tk_err("adding user-defined tokens", e))?;
    Ok(tok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::gguf::reader::{read_header, write};

    /// Write `meta` as a tensor-less GGUF and read it back: the real reading path.
    fn content(meta: &[(&str, Value)]) -> Metadata {
        let bytes = write::gguf(meta, &[]);
        read_header(&bytes[..], bytes.len() as u64, 1 << 30)
            .unwrap()
            .metadata
    }

    fn strs<S: AsRef<str>>(v: impl IntoIterator<Item = S>) -> Value {
        Value::Array(Array::String(
            v.into_iter().map(|x| x.as_ref().to_string()).collect(),
        ))
    }

    fn s(x: &str) -> Value {
        Value::String(x.into())
    }

    /// A SentencePiece vocabulary: `<unk> <s> </s>`, the 256 byte tokens, then `extra`
    /// (token, score, type). Ids: `<unk>`=0, `<s>`=1, `</s>`=2, `<0xNN>`=3+NN, extra from 259.
    fn spm(arch: &str, extra: &[(&str, f32, i32)], flags: &[(&str, bool)]) -> Metadata {
        let mut toks = vec![("<unk>".to_string(), 0.0, 2), ("<s>".into(), 0.0, 3)];
        toks.push(("</s>".into(), 0.0, 3));
        toks.extend((0..=255u8).map(|b| (format!("<0x{b:02X}>"), 0.0, 6)));
        toks.extend(extra.iter().map(|&(t, sc, ty)| (t.to_string(), sc, ty)));
        let mut meta = vec![
            ("general.architecture", s(arch)),
            ("tokenizer.ggml.model", s("llama")),
            ("tokenizer.ggml.tokens", strs(toks.iter().map(|t| &t.0))),
            (
                "tokenizer.ggml.scores",
                Value::Array(Array::F32(toks.iter().map(|t| t.1).collect())),
            ),
            (
                "tokenizer.ggml.token_type",
                Value::Array(Array::I32(toks.iter().map(|t| t.2).collect())),
            ),
            ("tokenizer.ggml.unknown_token_id", Value::U32(0)),
            ("tokenizer.ggml.bos_token_id", Value::U32(1)),
            ("tokenizer.ggml.eos_token_id", Value::U32(2)),
        ];
        meta.extend(flags.iter().map(|&(k, b)| (k, Value::Bool(b))));
        content(&meta)
    }

    const NO_PREFIX: (&str, bool) = ("tokenizer.ggml.add_space_prefix", false);

    fn tokens(t: &Tokenizer, text: &str) -> Vec<String> {
        t.encode(text, false).unwrap().get_tokens().to_vec()
    }

    #[test]
    fn merges_follow_rank_then_piece_lengths() {
        // Checked against transformers' generate_merges on the same input.
        let toks: Vec<String> = ["a", "b", "c", "ab", "bc", "abc"]
            .iter()
            .map(|t| t.to_string())
            .collect();
        let m = merges_from_ranking(&toks, &[0.0, 0.0, 0.0, -2.0, -3.0, -1.0]);
        let pairs: Vec<(&str, &str)> = m.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        assert_eq!(
            pairs,
            [("ab", "c"), ("a", "bc"), ("a", "b"), ("b", "c")],
            "abc's two splits share its rank: longer left piece first"
        );
    }

    #[test]
    fn best_scoring_merge_applies_first() {
        let base = [("a", -10.0, 1), ("b", -11.0, 1), ("c", -12.0, 1)];
        let with = |ab: f32, bc: f32| {
            let mut v = base.to_vec();
            v.extend([("ab", ab, 1), ("bc", bc, 1)]);
            let t = from_gguf(&spm("llama", &v, &[NO_PREFIX])).unwrap();
            tokens(&t, "abc")
        };
        assert_eq!(with(-3.0, -1.0), ["a", "bc"]);
        assert_eq!(with(-1.0, -3.0), ["ab", "c"]);
    }

    #[test]
    fn byte_fallback_spells_unknown_characters() {
        let t = from_gguf(&spm("llama", &[("a", -1.0, 1)], &[NO_PREFIX])).unwrap();
        let enc = t.encode("aé😀", false).unwrap();
        assert_eq!(
            enc.get_tokens(),
            ["a", "<0xC3>", "<0xA9>", "<0xF0>", "<0x9F>", "<0x98>", "<0x80>"]
        );
        assert_eq!(
            enc.get_ids(),
            [
                259,
                3 + 0xC3,
                3 + 0xA9,
                3 + 0xF0,
                3 + 0x9F,
                3 + 0x98,
                3 + 0x80
            ]
        );
        // Each byte token carries its whole character's byte span.
        assert_eq!(
            enc.get_offsets(),
            [(0, 1), (1, 3), (1, 3), (3, 7), (3, 7), (3, 7), (3, 7)]
        );
        assert_eq!(t.decode(enc.get_ids(), false).unwrap(), "aé😀");
    }

    #[test]
    fn bos_eos_and_special_tokens() {
        let extra = [("a", -1.0, 1), ("b", -2.0, 1), ("\t\t", -3.0, 4)];
        let t = from_gguf(&spm("llama", &extra, &[NO_PREFIX])).unwrap();
        // add_bos_token absent: llama-type files get BOS; EOS only when asked.
        let enc = t.encode("a<s>b\t\t", true).unwrap();
        assert_eq!(enc.get_tokens(), ["<s>", "a", "<s>", "b", "\t\t"]);
        assert_eq!(enc.get_special_tokens_mask(), [1, 0, 0, 0, 0]);
        assert_eq!(
            enc.get_offsets()[2],
            (1, 4),
            "control token text matched whole"
        );
        let t = from_gguf(&spm(
            "llama",
            &extra,
            &[
                NO_PREFIX,
                ("tokenizer.ggml.add_bos_token", false),
                ("tokenizer.ggml.add_eos_token", true),
            ],
        ))
        .unwrap();
        assert_eq!(t.encode("ab", true).unwrap().get_ids(), [259, 260, 2]);
    }

    #[test]
    fn space_prefix_follows_the_flag() {
        let extra = [("a", -1.0, 1), ("b", -2.0, 1), ("\u{2581}", -3.0, 1)];
        let with = |prefix: bool| {
            let flag = ("tokenizer.ggml.add_space_prefix", prefix);
            from_gguf(&spm("llama", &extra, &[flag])).unwrap()
        };
        let (yes, no) = (with(true), with(false));
        assert_eq!(tokens(&yes, "a b"), ["▁", "a", "▁", "b"]);
        assert_eq!(tokens(&no, "a b"), ["a", "▁", "b"]);
        for t in [&yes, &no] {
            let ids = t.encode("a b", false).unwrap().get_ids().to_vec();
            assert_eq!(t.decode(&ids, false).unwrap(), "a b");
        }
        // Offsets: the ▁ standing for a space covers that one byte.
        let enc = no.encode("a b", false).unwrap();
        assert_eq!(enc.get_offsets(), [(0, 1), (1, 2), (2, 3)]);
    }

    #[test]
    fn gemma_ranks_by_position_and_respells_space_runs() {
        // File order says ab before bc; the scores say the opposite.
        let extra = [
            ("a", -1.0, 1),
            ("b", -2.0, 1),
            ("c", -3.0, 1),
            ("\u{2581}", -4.0, 1),
            ("ab", -9.0, 1),
            ("bc", -5.0, 1),
            ("  ", -1000.0, 4),
        ];
        let gemma = from_gguf(&spm("gemma3", &extra, &[NO_PREFIX])).unwrap();
        let llama = from_gguf(&spm("llama", &extra, &[NO_PREFIX])).unwrap();
        assert_eq!(tokens(&gemma, "abc"), ["ab", "c"]);
        assert_eq!(tokens(&llama, "abc"), ["a", "bc"]);
        // "  " is stored with spaces and matched as ▁▁ after normalisation.
        let enc = gemma.encode("a  b", false).unwrap();
        assert_eq!(enc.get_tokens(), ["a", "▁▁", "b"]);
        assert_eq!(enc.get_ids(), [259, 265, 260]);
        assert_eq!(enc.get_offsets(), [(0, 1), (1, 3), (3, 4)]);
        assert_eq!(gemma.decode(enc.get_ids(), false).unwrap(), "a  b");
    }

    #[test]
    fn byte_level_type_uses_file_merges() {
        let alphabet = byte_alphabet();
        let mut toks: Vec<String> = vec!["<|endoftext|>".into()];
        toks.extend(alphabet.iter().map(|c| c.to_string()));
        toks.extend(["ab", "Ġa", "Ġab"].map(String::from));
        let mut types = vec![3i32];
        types.extend((1..toks.len()).map(|_| 1i32));
        let c = content(&[
            ("general.architecture", s("qwen2")),
            ("tokenizer.ggml.model", s("gpt2")),
            ("tokenizer.ggml.pre", s("qwen2")),
            ("tokenizer.ggml.tokens", strs(&toks)),
            ("tokenizer.ggml.token_type", Value::Array(Array::I32(types))),
            ("tokenizer.ggml.merges", strs(["Ġ a", "a b", "Ġa b"])),
            ("tokenizer.ggml.eos_token_id", Value::U32(0)),
        ]);
        let t = from_gguf(&c).unwrap();
        // No BOS by default; the space joins the following word (Ġ); file order ranks the
        // merges ("Ġ a" before "a b", so " ab" becomes Ġa + b, then Ġab).
        let enc = t.encode("ab ab<|endoftext|>", true).unwrap();
        assert_eq!(enc.get_tokens(), ["ab", "Ġab", "<|endoftext|>"]);
        assert_eq!(enc.get_ids(), [257, 259, 0]);
        assert_eq!(t.decode(&enc.get_ids()[..2], false).unwrap(), "ab ab");
    }

    #[test]
    fn refuses_what_it_cannot_build() {
        let c = content(&[("tokenizer.ggml.model", s("t5"))]);
        let e = from_gguf(&c).unwrap_err().to_string();
        assert!(e.contains("'t5'") && e.contains("llama, gpt2"), "{e}");
        let c = content(&[
            ("tokenizer.ggml.model", s("llama")),
            ("tokenizer.ggml.tokens", strs(["a"])),
        ]);
        let e = from_gguf(&c).unwrap_err().to_string();
        assert!(e.contains("scores"), "{e}");
        let e = from_gguf(&content(&[("general.architecture", s("llama"))]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no tokenizer.ggml.model"), "{e}");
    }
}
