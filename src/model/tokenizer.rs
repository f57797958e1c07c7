//! Tokenizers for the supported checkpoints, with truncation that codescope controls.
//!
//! Sources, in order: `tokenizer.json`; else the slow-tokenizer files a checkpoint ships
//! (`vocab.json` + `merges.txt`: RoBERTa byte-level BPE, as CodeBERT on the hub has, or
//! GPT-2's when the vocabulary has `<|endoftext|>` and no `<s>`: GPT-2, CodeGen, CodeT5+; or
//! `vocab.txt`: BERT WordPiece, lower-casing per `tokenizer_config.json`); for a GGUF
//! file, its metadata ([`super::gguf_tokenizer`]: codescope's own encoder,
//! [`super::spm_bpe`], for Gemma-style vocabularies, else a `tokenizers` pipeline).
//!
//! A `tokenizer.json` may carry truncation and padding settings (the packaged MiniLM's
//! truncates and pads to 128): both are switched off at load, so ids are exactly the
//! text's tokens plus the model's special tokens. Fitting the model's window is done here,
//! explicitly: leading and trailing special tokens are kept, text tokens beyond the window
//! are dropped, and the number dropped is reported.
//!
//! Offsets are byte offsets into the text (`Tokenizer::encode`, not the char variant);
//! special tokens carry `(0, 0)`.

use std::path::{Path, PathBuf};

use tokenizers::Tokenizer;

use super::limits::{check_file_size, MAX_CONFIG_BYTES, MAX_TOKENIZER_BYTES};
use super::trace::Subword;
use crate::error::{Error, Result};

/// Where a tokenizer comes from on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenizerFiles {
    /// A fast-tokenizer `tokenizer.json`.
    Json(PathBuf),
    /// RoBERTa/GPT-2 byte-level BPE: `vocab.json` + `merges.txt`.
    Bpe { vocab: PathBuf, merges: PathBuf },
    /// BERT WordPiece: `vocab.txt` (+ `tokenizer_config.json` for lower-casing).
    WordPiece { vocab: PathBuf },
    /// Rebuilt from a GGUF file's `tokenizer.ggml.*` metadata.
    Gguf(PathBuf),
    /// PLBART's SentencePiece BPE model, `sentencepiece.bpe.model` (+
    /// `tokenizer_config.json` for `language_codes` and `src_lang`).
    SentencePiece(PathBuf),
}

impl TokenizerFiles {
    /// Find the tokenizer files in a model directory.
    pub fn find(dir: &Path) -> Option<Self> {
        let json = dir.join("tokenizer.json");
        if json.is_file() {
            return Some(TokenizerFiles::Json(json));
        }
        let (vocab, merges) = (dir.join("vocab.json"), dir.join("merges.txt"));
        if vocab.is_file() && merges.is_file() {
            return Some(TokenizerFiles::Bpe { vocab, merges });
        }
        let vocab = dir.join("vocab.txt");
        if vocab.is_file() {
            return Some(TokenizerFiles::WordPiece { vocab });
        }
        let spm = dir.join("sentencepiece.bpe.model");
        spm.is_file().then_some(TokenizerFiles::SentencePiece(spm))
    }
}

/// The text tokens of one input after fitting the window.
#[derive(Debug, Clone)]
pub struct Encoded {
    pub ids: Vec<u32>,
    pub tokens: Vec<Subword>,
    /// Text tokens dropped to fit the window.
    pub truncated: usize,
}

/// A model's tokenizer with truncation and padding disabled.
#[derive(Clone)]
pub struct CodeTokenizer {
    inner: Inner,
    /// UniXcoder's mode prefix: the ids of `<encoder-only>` and `</s>`, when the
    /// vocabulary has that mode token (only UniXcoder's does). Its authors' encoder input
    /// is `<s> <encoder-only> </s> tokens </s>` (their `unixcoder.py`), and so is the
    /// study's (its attention `merge_tokens_and_attention`, start index 3).
    mode_prefix: Option<(u32, u32)>,
}

#[derive(Clone)]
enum Inner {
    /// A `tokenizers` pipeline.
    Hf(Box<Tokenizer>),
    /// codescope's own Gemma-style SentencePiece encoder (GGUF files it covers).
    Spm(std::sync::Arc<super::spm_bpe::SpmBpe>),
    /// PLBART from its SentencePiece model ([`super::sentencepiece::PlBart`]).
    PlBart(std::sync::Arc<super::sentencepiece::PlBart>),
}

fn tk_err(context: &str, e: impl std::fmt::Display) -> Error {
    Error::Tokenizer(format!("{context}: {e}"))
}

impl CodeTokenizer {
    /// Load from files; `dir` is used to read `tokenizer_config.json` for the slow-file
    /// fallbacks.
    pub fn load(files: &TokenizerFiles, dir: &Path) -> Result<Self> {
        if let TokenizerFiles::Gguf(path) = files {
            return Self::from_gguf(&super::gguf::GgufFile::open(path)?);
        }
        if let TokenizerFiles::SentencePiece(path) = files {
            return Self::plbart(path, dir);
        }
        // tokenizers panics on some malformed files (an `expect` in its decoder
        // deserializer): one error line instead.
        let t = crate::logging::contain_panics(
            || build(files, dir),
            |m| {
                Error::Tokenizer(format!(
                    "cannot read the tokenizer in {}: {m}",
                    dir.display()
                ))
            },
        )?;
        Self::from_tokenizer(t)
    }

    /// Wrap an existing tokenizer (tests, GGUF-rebuilt tokenizers).
    pub fn from_tokenizer(mut inner: Tokenizer) -> Result<Self> {
        inner
            .with_truncation(None)
            .map_err(|e| tk_err("disabling truncation", e))?;
        inner.with_padding(None);
        let mode_prefix = inner
            .token_to_id(UNIXCODER_MODE)
            .zip(inner.token_to_id("</s>"));
        Ok(CodeTokenizer {
            inner: Inner::Hf(Box::new(inner)),
            mode_prefix,
        })
    }

    /// PLBART's tokenizer from `sentencepiece.bpe.model`, with `tokenizer_config.json`'s
    /// `language_codes` (default `base`) and `src_lang` (default none), as
    /// `PLBartTokenizer.from_pretrained` reads them.
    pub fn plbart(model: &Path, dir: &Path) -> Result<Self> {
        check_file_size(model, MAX_TOKENIZER_BYTES, "sentencepiece.bpe.model")?;
        let bytes = std::fs::read(model).map_err(|e| Error::io(model, e))?;
        let tc = read_tokenizer_config(dir)?;
        let s = |k: &str| tc.get(k).and_then(|v| v.as_str());
        let codes = s("language_codes").unwrap_or("base");
        let t = super::sentencepiece::PlBart::new(&bytes, codes, s("src_lang")).map_err(
            |e| match e {
                Error::Tokenizer(m) => Error::Tokenizer(format!("{}: {m}", model.display())),
                other => other,
            },
        )?;
        Ok(CodeTokenizer {
            inner: Inner::PlBart(std::sync::Arc::new(t)),
            mode_prefix: None,
        })
    }

    /// The tokenizer stored in a GGUF file's metadata: codescope's own encoder where it
    /// covers the file (Gemma-style vocabularies), else the `tokenizers` pipeline
    /// [`super::gguf_tokenizer::from_gguf`] builds. Both give the same encodings.
    pub fn from_gguf(file: &super::gguf::GgufFile) -> Result<Self> {
        Self::from_gguf_stored(file, None)
    }

    /// [`CodeTokenizer::from_gguf`], starting from what [`CodeTokenizer::stored_form`]
    /// gave for the same file (ignored if it does not fit).
    pub fn from_gguf_stored(file: &super::gguf::GgufFile, stored: Option<&[u8]>) -> Result<Self> {
        if let Some(spm) = super::gguf_tokenizer::fast_from_gguf(file.metadata(), stored)? {
            return Ok(CodeTokenizer {
                inner: Inner::Spm(std::sync::Arc::new(spm)),
                mode_prefix: None,
            });
        }
        Self::from_tokenizer(super::gguf_tokenizer::from_gguf(file.metadata())?)
    }

    /// What a later build of codescope's own encoder from the same GGUF can start from
    /// (`None` for a `tokenizers` pipeline and for PLBART's).
    pub fn stored_form(&self) -> Option<Vec<u8>> {
        match &self.inner {
            Inner::Hf(_) | Inner::PlBart(_) => None,
            Inner::Spm(s) => Some(s.to_bytes()),
        }
    }

    /// Whether this is codescope's own encoder (rather than a `tokenizers` pipeline).
    pub fn is_native(&self) -> bool {
        matches!(self.inner, Inner::Spm(_) | Inner::PlBart(_))
    }

    /// The vocabulary size including added tokens.
    pub fn vocab_size(&self) -> usize {
        match &self.inner {
            Inner::Hf(t) => t.get_vocab_size(true),
            Inner::Spm(s) => s.vocab_size(),
            Inner::PlBart(s) => s.vocab_size(),
        }
    }

    /// The vocabulary string of `id` (added tokens included).
    pub fn id_to_token(&self, id: u32) -> Option<String> {
        match &self.inner {
            Inner::Hf(t) => t.id_to_token(id),
            Inner::Spm(s) => s.id_to_token(id),
            Inner::PlBart(s) => s.id_to_token(id),
        }
    }

    /// The id of the mask token a masked-LM head was trained with (`[MASK]` or
    /// `<mask>`), if the vocabulary has one.
    pub fn mask_id(&self) -> Option<u32> {
        match &self.inner {
            Inner::Hf(t) => ["[MASK]", "<mask>"].iter().find_map(|m| t.token_to_id(m)),
            // Gemma-style and PLBART vocabularies: no encoder masked-LM head reads them
            // (PLBART is an encoder–decoder).
            Inner::Spm(_) | Inner::PlBart(_) => None,
        }
    }

    /// Every token of `text`, special tokens included, before windowing.
    pub fn encode_all(&self, text: &str) -> Result<Vec<Subword>> {
        self.encode_all_lang(text, None)
    }

    /// [`CodeTokenizer::encode_all`] for an input in language `lang` (`python`, `java`):
    /// PLBART's SentencePiece tokenizer ends it with that language's code
    /// ([`super::sentencepiece::PlBart::encode_lang`]); the other tokenizers ignore it.
    pub fn encode_all_lang(&self, text: &str, lang: Option<&str>) -> Result<Vec<Subword>> {
        let t = match &self.inner {
            Inner::Hf(t) => t,
            Inner::Spm(s) => return Ok(s.encode(text)),
            Inner::PlBart(s) => return Ok(s.encode_lang(text, lang)),
        };
        let enc = t
            .encode(text, true)
            .map_err(|e| tk_err("encoding failed", e))?;
        let ids = enc.get_ids();
        let toks = enc.get_tokens();
        let offs = enc.get_offsets();
        let special = enc.get_special_tokens_mask();
        let mut out: Vec<Subword> = (0..ids.len())
            .map(|i| {
                let is_special = special[i] == 1;
                let (start, end) = if is_special { (0, 0) } else { offs[i] };
                Subword {
                    id: ids[i],
                    text: toks[i].clone(),
                    start,
                    end,
                    special: is_special,
                }
            })
            .collect();
        // UniXcoder: its mode tokens after the leading `<s>`.
        if let (Some((mode, sep)), Some(first)) = (self.mode_prefix, out.first()) {
            if first.special {
                let special = |id: u32, text: &str| Subword {
                    id,
                    text: text.to_string(),
                    start: 0,
                    end: 0,
                    special: true,
                };
                out.splice(1..1, [special(mode, UNIXCODER_MODE), special(sep, "</s>")]);
            }
        }
        Ok(out)
    }

    /// Tokenize `text` with special tokens and fit it into `window` tokens.
    pub fn encode(&self, text: &str, window: usize) -> Result<Encoded> {
        self.encode_lang(text, window, None)
    }

    /// [`CodeTokenizer::encode`] for an input in language `lang` (see
    /// [`CodeTokenizer::encode_all_lang`]).
    pub fn encode_lang(&self, text: &str, window: usize, lang: Option<&str>) -> Result<Encoded> {
        let all = self.encode_all_lang(text, lang)?;
        let n = all.len();
        let prefix = all.iter().take_while(|t| t.special).count();
        let suffix = if prefix == n {
            0
        } else {
            all.iter().rev().take_while(|t| t.special).count()
        };
        let text_tokens = n - prefix - suffix;
        if n <= window {
            return Ok(Encoded {
                ids: all.iter().map(|t| t.id).collect(),
                tokens: all,
                truncated: 0,
            });
        }
        let keep = window.saturating_sub(prefix + suffix);
        if keep == 0 {
            return Err(Error::Tokenizer(format!(
                "model window of {window} tokens has no room after {} special tokens",
                prefix + suffix
            )));
        }
        let mut tokens: Vec<Subword> = all[..prefix + keep].to_vec();
        tokens.extend_from_slice(&all[n - suffix..]);
        Ok(Encoded {
            ids: tokens.iter().map(|t| t.id).collect(),
            tokens,
            truncated: text_tokens - keep,
        })
    }
}

/// UniXcoder's encoder-only mode token ([`CodeTokenizer`]'s mode prefix).
pub const UNIXCODER_MODE: &str = "<encoder-only>";

/// Build the `tokenizers` tokenizer as the files describe it (settings untouched).
pub fn build(files: &TokenizerFiles, dir: &Path) -> Result<Tokenizer> {
    match files {
        TokenizerFiles::Json(p) => {
            check_file_size(p, MAX_TOKENIZER_BYTES, "tokenizer.json")?;
            Tokenizer::from_file(p).map_err(|e| tk_err(&format!("cannot read {}", p.display()), e))
        }
        TokenizerFiles::Bpe { vocab, merges } => build_bpe(vocab, merges),
        TokenizerFiles::WordPiece { vocab } => build_wordpiece(vocab, dir),
        TokenizerFiles::Gguf(path) => {
            let file = super::gguf::GgufFile::open(path)?;
            super::gguf_tokenizer::from_gguf(file.metadata())
        }
        TokenizerFiles::SentencePiece(p) => Err(Error::Tokenizer(format!(
            "{} is read by codescope's own PLBART tokenizer, not a tokenizers pipeline",
            p.display()
        ))),
    }
}

/// A tokenizer pipeline with the library's type-erased components.
type Wrapped = tokenizers::TokenizerImpl<
    tokenizers::ModelWrapper,
    tokenizers::NormalizerWrapper,
    tokenizers::PreTokenizerWrapper,
    tokenizers::PostProcessorWrapper,
    tokenizers::DecoderWrapper,
>;

fn special_id(
    vocab: &std::collections::HashMap<String, u32>,
    names: &[&str],
) -> Option<(String, u32)> {
    names
        .iter()
        .find_map(|n| vocab.get(*n).map(|&id| (n.to_string(), id)))
}

/// The end-of-text token of GPT-2-style vocabularies (GPT-2, CodeGen, CodeT5+ 2B+).
const GPT2_EOS: &str = "<|endoftext|>";

/// A GPT-2-style vocabulary (`<|endoftext|>`, no `<s>`/`</s>`: GPT-2, CodeGen, CodeT5+
/// 2B+) as transformers' `GPT2Tokenizer`/`CodeGenTokenizer` read `vocab.json` +
/// `merges.txt`: byte-level BPE without a prefix space, no special tokens added around the
/// input, `<|endoftext|>` a special token. The same ids as the `tokenizer.json` those
/// checkpoints ship (tested on the tiny GPT-2, CodeGen and CodeT5+ fixtures).
fn gpt2_bpe(bpe: tokenizers::models::bpe::BPE) -> Result<Tokenizer> {
    use tokenizers::pre_tokenizers::byte_level::ByteLevel;
    use tokenizers::{AddedToken, TokenizerImpl};
    let mut t: Wrapped = TokenizerImpl::new(bpe.into());
    t.with_pre_tokenizer(Some(ByteLevel::new(false, true, true)));
    t.with_decoder(Some(ByteLevel::new(false, true, true)));
    t.with_post_processor(Some(ByteLevel::new(true, false, true)));
    let mut tok: Tokenizer = t.into();
    tok.add_special_tokens(vec![AddedToken::from(GPT2_EOS.to_string(), true)])
        .map_err(|e| tk_err("adding special tokens", e))?;
    Ok(tok)
}

fn build_bpe(vocab: &Path, merges: &Path) -> Result<Tokenizer> {
    use tokenizers::models::bpe::BPE;
    use tokenizers::pre_tokenizers::byte_level::ByteLevel;
    use tokenizers::processors::roberta::RobertaProcessing;
    use tokenizers::{AddedToken, TokenizerImpl};
    check_file_size(vocab, MAX_TOKENIZER_BYTES, "vocab.json")?;
    check_file_size(merges, MAX_TOKENIZER_BYTES, "merges.txt")?;
    let vocab_s = vocab.to_string_lossy().to_string();
    let merges_s = merges.to_string_lossy().to_string();
    let bpe = BPE::from_file(&vocab_s, &merges_s)
        .build()
        .map_err(|e| tk_err(&format!("cannot read {} / {}", vocab_s, merges_s), e))?;
    let v = tokenizers::Model::get_vocab(&bpe);
    if !v.contains_key("<s>") && !v.contains_key("</s>") && v.contains_key(GPT2_EOS) {
        return gpt2_bpe(bpe);
    }
    let cls =
        special_id(&v, &["<s>"]).ok_or_else(|| Error::Tokenizer("vocab.json has no <s>".into()))?;
    let sep = special_id(&v, &["</s>"])
        .ok_or_else(|| Error::Tokenizer("vocab.json has no </s>".into()))?;
    let specials: Vec<AddedToken> = ["<s>", "</s>", "<pad>", "<unk>", "<mask>"]
        .iter()
        .filter(|s| v.contains_key(**s))
        .map(|s| AddedToken::from(s.to_string(), true))
        .collect();
    let mut t: Wrapped = TokenizerImpl::new(bpe.into());
    t.with_pre_tokenizer(Some(ByteLevel::new(false, true, true)));
    t.with_decoder(Some(ByteLevel::new(false, true, true)));
    t.with_post_processor(Some(
        RobertaProcessing::new(sep, cls)
            .trim_offsets(true)
            .add_prefix_space(false),
    ));
    let mut tok: Tokenizer = t.into();
    tok.add_special_tokens(specials)
        .map_err(|e| tk_err("adding special tokens", e))?;
    Ok(tok)
}

/// `tokenizer_config.json` of `dir` (empty when there is none): optional, but one that is
/// there must be read and parse.
fn read_tokenizer_config(dir: &Path) -> Result<serde_json::Value> {
    let cfg = dir.join("tokenizer_config.json");
    match std::fs::symlink_metadata(&cfg) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(serde_json::json!({})),
        _ => {
            let text = crate::fsio::read_to_string_bounded(
                &cfg,
                MAX_CONFIG_BYTES,
                "tokenizer_config.json",
            )?;
            serde_json::from_str(&text).map_err(|e| Error::BadConfig {
                path: cfg.clone(),
                reason: e.to_string(),
            })
        }
    }
}

fn build_wordpiece(vocab: &Path, dir: &Path) -> Result<Tokenizer> {
    use tokenizers::models::wordpiece::WordPiece;
    use tokenizers::normalizers::bert::BertNormalizer;
    use tokenizers::pre_tokenizers::bert::BertPreTokenizer;
    use tokenizers::processors::bert::BertProcessing;
    use tokenizers::{AddedToken, TokenizerImpl};
    let lowercase = read_tokenizer_config(dir)?
        .get("do_lower_case")
        .and_then(|b| b.as_bool())
        .unwrap_or(true);
    check_file_size(vocab, MAX_TOKENIZER_BYTES, "vocab.txt")?;
    let vocab_s = vocab.to_string_lossy().to_string();
    let wp = WordPiece::from_file(&vocab_s)
        .unk_token("[UNK]".into())
        .build()
        .map_err(|e| tk_err(&format!("cannot read {vocab_s}"), e))?;
    let v = tokenizers::Model::get_vocab(&wp);
    let cls = special_id(&v, &["[CLS]"])
        .ok_or_else(|| Error::Tokenizer("vocab.txt has no [CLS]".into()))?;
    let sep = special_id(&v, &["[SEP]"])
        .ok_or_else(|| Error::Tokenizer("vocab.txt has no [SEP]".into()))?;
    let specials: Vec<AddedToken> = ["[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]"]
        .iter()
        .filter(|s| v.contains_key(**s))
        .map(|s| AddedToken::from(s.to_string(), true))
        .collect();
    let mut t: Wrapped = TokenizerImpl::new(wp.into());
    t.with_normalizer(Some(BertNormalizer::new(true, true, None, lowercase)))
        .map_err(|e| tk_err("normalizer", e))?;
    t.with_pre_tokenizer(Some(BertPreTokenizer));
    t.with_post_processor(Some(BertProcessing::new(sep, cls)));
    let mut tok: Tokenizer = t.into();
    tok.add_special_tokens(specials)
        .map_err(|e| tk_err("adding special tokens", e))?;
    Ok(tok)
}

/// A vocabulary string as shown: byte-level BPE and SentencePiece space markers as `␣`,
/// newlines `↵`, tabs `⇥`, other control characters as spaces.
pub fn show_subword(s: &str) -> String {
    let s = s.replace("<0x0A>", "↵").replace("<0x09>", "⇥");
    s.chars()
        .map(|c| match c {
            'Ġ' | '▁' | ' ' => '␣',
            'Ċ' | '\n' => '↵',
            'ĉ' | '\t' => '⇥',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}
