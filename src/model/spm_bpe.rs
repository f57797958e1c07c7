//! codescope's own encoder for Gemma-style SentencePiece BPE vocabularies (GGUF `llama`
//! type read the Gemma way, without a space prefix: the packaged Gemma 3).
//!
//! [`super::gguf_tokenizer::from_gguf`] builds the same tokenizer as a `tokenizers`
//! pipeline, exactly as transformers converts the file; that pipeline is the reference.
//! Building it costs about a second on this machine, most of it the `tokenizers` BPE
//! builder hashing 515k merges given as string pairs — the critical path of opening a
//! GGUF model. This encoder takes the same ranked merges as ids
//! ([`super::gguf_tokenizer::fast_from_gguf`]) and reproduces the pipeline step by step:
//!
//! 1. added tokens (control and user-defined) are matched in the raw text,
//!    leftmost-longest, as `tokenizers`' `AddedVocabulary` does for tokens that are not
//!    normalized; each match is its token;
//! 2. the text between matches is normalized (` ` → `▁`) and is one BPE word: every
//!    character is its vocabulary entry, else its UTF-8 bytes as `<0xNN>` entries, else
//!    the unknown token (fused runs);
//! 3. merges apply lowest rank first, leftmost first, with `tokenizers`' queue and its
//!    stale-entry check ([`merge_all`] is a port of `Word::merge_all`);
//! 4. offsets: a symbol's normalized byte range maps back through the per-byte
//!    alignments (`▁` → the 1-byte space; every byte of a character → the whole
//!    character), so a byte-fallback token spans its whole character;
//! 5. BOS/EOS are added as the template post-processor does (special mask 1, no offsets).
//!
//! `tests/it/gguf_tokenizer.rs` checks ids, token strings and offsets against the
//! transformers fixture and against the `tokenizers` pipeline on generated text.

use std::collections::BinaryHeap;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use tokenizers::models::bpe::{MergeMap, Vocab};

use crate::error::{Error, Result};
use crate::model::trace::Subword;

/// The SentencePiece meta-space, as the normalizer writes a space.
const META: &str = "\u{2581}";

/// A Gemma-style SentencePiece BPE tokenizer (see the module docs).
pub struct SpmBpe {
    /// id → vocabulary string (`▁` runs for Gemma's whitespace tokens).
    tokens: Vec<String>,
    vocab: Vocab,
    merges: MergeMap,
    /// `<0xNN>` ids (byte fallback for characters outside the vocabulary).
    bytes: Vec<Option<u32>>,
    unk: Option<u32>,
    /// Matcher over the added tokens' contents; `added_ids[pattern]` is the token's id.
    added: Option<AhoCorasick>,
    added_ids: Vec<u32>,
    bos: Option<(u32, String)>,
    eos: Option<(u32, String)>,
}

impl std::fmt::Debug for SpmBpe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpmBpe")
            .field("vocab", &self.tokens.len())
            .field("merges", &self.merges.len())
            .field("added", &self.added_ids.len())
            .finish()
    }
}

impl SpmBpe {
    /// Assemble from the vocabulary (`tokens[id]`, `vocab` its last-id inverse), the
    /// merges `(left, right) → (rank, merged)`, the unknown token, the added tokens
    /// `(content, id)` and the post-processor's BOS/EOS.
    pub(crate) fn new(
        tokens: Vec<String>,
        vocab: Vocab,
        merges: MergeMap,
        unk: Option<u32>,
        added: Vec<(String, u32)>,
        bos: Option<(u32, String)>,
        eos: Option<(u32, String)>,
    ) -> Result<Self> {
        let bytes: Vec<Option<u32>> = (0..=255u8)
            .map(|b| vocab.get(&format!("<{b:#04X}>")).copied())
            .collect();
        let matcher = if added.is_empty() {
            None
        } else {
            Some(
                AhoCorasickBuilder::new()
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(added.iter().map(|(c, _)| c.as_str()))
                    .map_err(|e| Error::Tokenizer(format!("added-token matcher: {e}")))?,
            )
        };
        Ok(SpmBpe {
            tokens,
            vocab,
            merges,
            bytes,
            unk,
            added: matcher,
            added_ids: added.into_iter().map(|(_, id)| id).collect(),
            bos,
            eos,
        })
    }

    /// Distinct vocabulary strings (every added token names one).
    pub fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    /// The vocabulary string of `id`: `None` past the vocabulary and for an earlier id of
    /// a repeated string (the model's reverse map holds last ids only).
    pub fn id_to_token(&self, id: u32) -> Option<String> {
        let t = self.tokens.get(id as usize)?;
        (self.vocab.get(t) == Some(&id)).then(|| t.clone())
    }

    /// The tokens of `text` with BOS/EOS as configured; offsets are byte offsets into
    /// `text` (`(0, 0)` for BOS/EOS).
    pub fn encode(&self, text: &str) -> Vec<Subword> {
        let mut out = Vec::new();
        if let Some((id, t)) = &self.bos {
            out.push(special(*id, t));
        }
        let mut last = 0;
        if let Some(m) = &self.added {
            for hit in m.find_iter(text) {
                if hit.start() > last {
                    self.word(text, last, hit.start(), &mut out);
                }
                out.push(Subword {
                    id: self.added_ids[hit.pattern().as_usize()],
                    text: text[hit.start()..hit.end()].to_string(),
                    start: hit.start(),
                    end: hit.end(),
                    special: false,
                });
                last = hit.end();
            }
        }
        if last < text.len() {
            self.word(text, last, text.len(), &mut out);
        }
        if let Some((id, t)) = &self.eos {
            out.push(special(*id, t));
        }
        out
    }

    /// BPE over `text[from..to]`, one word, appended to `out`.
    fn word(&self, text: &str, from: usize, to: usize, out: &mut Vec<Subword>) {
        let piece = &text[from..to];
        // Per normalized byte, the original span it came from.
        let mut align: Vec<(usize, usize)> = Vec::with_capacity(piece.len() + piece.len() / 2);
        let mut syms: Vec<Symbol> = Vec::with_capacity(piece.len());
        let mut unk: Option<(u32, usize)> = None;
        let mut buf = [0u8; 4];
        for (o, c) in piece.char_indices() {
            let span = (from + o, from + o + c.len_utf8());
            let norm: &str = if c == ' ' {
                META
            } else {
                c.encode_utf8(&mut buf)
            };
            align.extend(std::iter::repeat_n(span, norm.len()));
            if let Some(&id) = self.vocab.get(norm) {
                if let Some((u, len)) = unk.take() {
                    push(&mut syms, u, len);
                }
                push(&mut syms, id, norm.len());
                continue;
            }
            if norm.bytes().all(|b| self.bytes[b as usize].is_some()) {
                // As `tokenizers`: a pending unknown run is not flushed before byte
                // tokens (it lands after them).
                for b in norm.bytes().filter_map(|b| self.bytes[b as usize]) {
                    push(&mut syms, b, 1);
                }
                continue;
            }
            if let Some(u) = self.unk {
                unk = Some(match unk {
                    Some((u, len)) => (u, len + norm.len()),
                    None => (u, norm.len()),
                });
            }
        }
        if let Some((u, len)) = unk {
            push(&mut syms, u, len);
        }
        merge_all(&mut syms, &self.merges);
        let mut at = 0;
        for s in syms.iter().filter(|s| s.len > 0) {
            let (a, b) = (at, at + s.len);
            at = b;
            out.push(Subword {
                id: s.id,
                text: self.tokens[s.id as usize].clone(),
                start: align[a].0,
                end: align[b - 1].1,
                special: false,
            });
        }
    }
}

fn special(id: u32, text: &str) -> Subword {
    Subword {
        id,
        text: text.to_string(),
        start: 0,
        end: 0,
        special: true,
    }
}

#[derive(Clone, Copy, Debug)]
struct Symbol {
    id: u32,
    prev: isize,
    next: isize,
    /// Normalized bytes; 0 once merged into its left neighbour.
    len: usize,
}

fn push(syms: &mut Vec<Symbol>, id: u32, len: usize) {
    let n = syms.len() as isize;
    let prev = match syms.last_mut() {
        Some(last) => {
            last.next = n;
            n - 1
        }
        None => -1,
    };
    syms.push(Symbol {
        id,
        prev,
        next: -1,
        len,
    });
}

/// A queued merge: lowest rank first, then leftmost.
#[derive(PartialEq, Eq)]
struct Merge {
    pos: usize,
    rank: u32,
    merged: u32,
}

impl Ord for Merge {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other
            .rank
            .cmp(&self.rank)
            .then_with(|| other.pos.cmp(&self.pos))
    }
}

impl PartialOrd for Merge {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// `tokenizers`' `Word::merge_all` without dropout: the same queue discipline and the same
/// check that a popped entry still names the pair's merged token.
fn merge_all(syms: &mut [Symbol], merges: &MergeMap) {
    let mut queue: BinaryHeap<Merge> = syms
        .windows(2)
        .enumerate()
        .filter_map(|(pos, w)| {
            merges.get(&(w[0].id, w[1].id)).map(|&(rank, merged)| Merge {
                pos,
                rank,
                merged,
            })
        })
        .collect();
    while let Some(top) = queue.pop() {
        if syms[top.pos].len == 0 || syms[top.pos].next == -1 {
            continue;
        }
        let next_pos = syms[top.pos].next as usize;
        let right = syms[next_pos];
        if merges
            .get(&(syms[top.pos].id, right.id))
            .is_none_or(|&(_, merged)| merged != top.merged)
        {
            continue;
        }
        let cur = &mut syms[top.pos];
        cur.id = top.merged;
        cur.len += right.len;
        cur.next = right.next;
        syms[next_pos].len = 0;
        if right.next > -1 && (right.next as usize) < syms.len() {
            syms[right.next as usize].prev = top.pos as isize;
        }
        let cur = syms[top.pos];
        if cur.prev >= 0 {
            let prev = cur.prev as usize;
            if let Some(&(rank, merged)) = merges.get(&(syms[prev].id, cur.id)) {
                queue.push(Merge {
                    pos: prev,
                    rank,
                    merged,
                });
            }
        }
        let next = cur.next as usize;
        if cur.next >= 0 && next < syms.len() {
            if let Some(&(rank, merged)) = merges.get(&(cur.id, syms[next].id)) {
                queue.push(Merge {
                    pos: top.pos,
                    rank,
                    merged,
                });
            }
        }
    }
}
