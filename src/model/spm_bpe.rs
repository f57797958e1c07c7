//! codescope's own encoder for Gemma-style SentencePiece BPE vocabularies (GGUF `llama`
//! type read the Gemma way, without a space prefix: the packaged Gemma 3).
//!
//! [`super::gguf_tokenizer::from_gguf`] builds the same tokenizer as a `tokenizers`
//! pipeline, exactly as transformers converts the file; that pipeline is the reference.
//! Building it costs about a second on this machine, most of it the `tokenizers` BPE
//! builder hashing 515k merges given as string pairs — the critical path of opening a
//! GGUF model. This encoder takes the same ranked merges as ids
//! ([`super::gguf_tokenizer::fast_from_gguf`]: 0.3–0.45 s from the metadata, 40–70 ms
//! from the merge table a cache entry keeps) and reproduces the pipeline step by step:
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

use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

use crate::error::{Error, Result};
use crate::model::trace::Subword;

/// The SentencePiece meta-space, as the normalizer writes a space.
const META: &str = "\u{2581}";

/// rustc's Fx hash: a multiply-rotate over 8-byte words. Fast on the short keys here
/// (vocabulary strings, id pairs); not for untrusted keys chosen to collide (a GGUF's
/// vocabulary could at worst slow its own load).
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().unwrap_or_default()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(i.into());
    }
    fn write_u32(&mut self, i: u32) {
        self.add(i.into());
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    fn finish(&self) -> u64 {
        // The product's entropy sits in its high bits; hashbrown indexes buckets with the
        // low ones (rustc-hash 2 rotates the same way).
        self.0.rotate_left(26)
    }
}

/// A hash map with [`FxHasher`].
pub type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// Merges: `(left, right)` ids → `(rank, merged id)`, as a sorted table (built by one
/// sort, stored and read back as plain arrays: [`Merges::to_bytes`]).
#[derive(Clone, PartialEq, Eq)]
pub struct Merges {
    /// `left << 32 | right`, strictly increasing.
    keys: Vec<u64>,
    /// `(rank, merged id)` per key.
    vals: Vec<(u32, u32)>,
}

const MERGES_MAGIC: &[u8; 8] = b"CSMERGE1";

impl Merges {
    /// From `(left, right, merged)` in rank order (rank = position). A pair listed twice
    /// keeps its later rank, as a map filled in order would.
    pub fn from_ranked(ranked: impl Iterator<Item = (u32, u32, u32)>) -> Self {
        use rayon::prelude::*;
        let mut all: Vec<(u64, u32, u32)> = ranked
            .enumerate()
            .map(|(rank, (l, r, m))| ((u64::from(l) << 32) | u64::from(r), rank as u32, m))
            .collect();
        all.par_sort_unstable_by_key(|e| (e.0, e.1));
        all.dedup_by(|later, earlier| {
            if later.0 == earlier.0 {
                *earlier = *later;
                true
            } else {
                false
            }
        });
        Merges {
            keys: all.iter().map(|e| e.0).collect(),
            vals: all.iter().map(|e| (e.1, e.2)).collect(),
        }
    }

    /// The merge of `(left, right)`, if any.
    pub fn get(&self, pair: &(u32, u32)) -> Option<&(u32, u32)> {
        let key = (u64::from(pair.0) << 32) | u64::from(pair.1);
        self.keys.binary_search(&key).ok().map(|i| &self.vals[i])
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The table as bytes (little-endian; read back by [`Merges::from_bytes`]).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(16 + self.keys.len() * 16);
        b.extend_from_slice(MERGES_MAGIC);
        b.extend_from_slice(&(self.keys.len() as u64).to_le_bytes());
        for k in &self.keys {
            b.extend_from_slice(&k.to_le_bytes());
        }
        for (r, m) in &self.vals {
            b.extend_from_slice(&r.to_le_bytes());
            b.extend_from_slice(&m.to_le_bytes());
        }
        b
    }

    /// A table written by [`Merges::to_bytes`] for a vocabulary of `vocab` ids; `None`
    /// unless it is well formed (sizes, keys strictly increasing, every id in range).
    pub fn from_bytes(b: &[u8], vocab: usize) -> Option<Self> {
        let word = |at: usize| -> Option<u64> {
            Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
        };
        if b.get(..8)? != MERGES_MAGIC {
            return None;
        }
        let n = usize::try_from(word(8)?).ok()?;
        if b.len() != 16usize.checked_add(n.checked_mul(16)?)? {
            return None;
        }
        let keys: Vec<u64> = (0..n).map(|i| word(16 + 8 * i)).collect::<Option<_>>()?;
        let base = 16 + 8 * n;
        let vals: Vec<(u32, u32)> = (0..n)
            .map(|i| {
                let w = word(base + 8 * i)?;
                Some((w as u32, (w >> 32) as u32))
            })
            .collect::<Option<_>>()?;
        let v = vocab as u64;
        let ok = keys.windows(2).all(|w| w[0] < w[1])
            && keys.iter().all(|k| (k >> 32) < v && (k & 0xffff_ffff) < v)
            && vals.iter().all(|&(_, m)| u64::from(m) < v);
        ok.then_some(Merges { keys, vals })
    }
}

/// What [`SpmBpe::new`] is built from.
pub struct Parts {
    /// id → vocabulary string (`▁` runs for Gemma's whitespace tokens).
    pub tokens: Vec<String>,
    /// Distinct strings among `tokens`.
    pub distinct: usize,
    /// Per id: whether it is the last id of its string (`None`: all are).
    pub last: Option<Vec<bool>>,
    /// Single-character tokens: character → (last) id.
    pub chars: FxMap<char, u32>,
    /// `<0xNN>` ids, by byte.
    pub bytes: Vec<Option<u32>>,
    pub merges: Merges,
    pub unk: Option<u32>,
    /// `(content, id)` of every added token.
    pub added: Vec<(String, u32)>,
    /// Post-processor tokens `(id, string)`.
    pub bos: Option<(u32, String)>,
    pub eos: Option<(u32, String)>,
}

/// A Gemma-style SentencePiece BPE tokenizer (see the module docs).
pub struct SpmBpe {
    tokens: Vec<String>,
    distinct: usize,
    last: Option<Vec<bool>>,
    chars: FxMap<char, u32>,
    merges: Merges,
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
            .field("vocab", &self.distinct)
            .field("merges", &self.merges.len())
            .field("added", &self.added_ids.len())
            .finish()
    }
}

impl SpmBpe {
    /// What a later build from the same file can start from (the distinct-string count
    /// and the merge table; `gguf::cache` keeps it beside the dequantized weights).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = (self.distinct as u64).to_le_bytes().to_vec();
        b.extend(self.merges.to_bytes());
        b
    }

    /// `(merges, distinct strings)` from [`SpmBpe::to_bytes`]'s output, if well formed
    /// for a vocabulary of `vocab` ids.
    pub fn stored_merges(b: &[u8], vocab: usize) -> Option<(Merges, usize)> {
        let distinct = usize::try_from(u64::from_le_bytes(b.get(..8)?.try_into().ok()?)).ok()?;
        let merges = Merges::from_bytes(&b[8..], vocab)?;
        (distinct <= vocab).then_some((merges, distinct))
    }

    /// Assemble (builds the added-token matcher).
    pub fn new(p: Parts) -> Result<Self> {
        let added = p.added;
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
            tokens: p.tokens,
            distinct: p.distinct,
            last: p.last,
            chars: p.chars,
            merges: p.merges,
            bytes: p.bytes,
            unk: p.unk,
            added: matcher,
            added_ids: added.into_iter().map(|(_, id)| id).collect(),
            bos: p.bos,
            eos: p.eos,
        })
    }

    /// Distinct vocabulary strings (every added token names one).
    pub fn vocab_size(&self) -> usize {
        self.distinct
    }

    /// The vocabulary string of `id`: `None` past the vocabulary and for an earlier id of
    /// a repeated string (the model's reverse map holds last ids only).
    pub fn id_to_token(&self, id: u32) -> Option<String> {
        let t = self.tokens.get(id as usize)?;
        let last = self.last.as_ref().is_none_or(|l| l[id as usize]);
        last.then(|| t.clone())
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
            let (norm, key): (&str, char) = if c == ' ' {
                (META, '\u{2581}')
            } else {
                (c.encode_utf8(&mut buf), c)
            };
            align.extend(std::iter::repeat_n(span, norm.len()));
            if let Some(&id) = self.chars.get(&key) {
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
fn merge_all(syms: &mut [Symbol], merges: &Merges) {
    let mut queue: BinaryHeap<Merge> = syms
        .windows(2)
        .enumerate()
        .filter_map(|(pos, w)| {
            merges
                .get(&(w[0].id, w[1].id))
                .map(|&(rank, merged)| Merge { pos, rank, merged })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_table_keeps_later_ranks_and_round_trips() {
        // (1, 2) listed twice: the later rank wins, as in a map filled in order.
        let m = Merges::from_ranked([(1, 2, 5), (0, 1, 4), (1, 2, 6), (3, 0, 7)].into_iter());
        assert_eq!(m.len(), 3);
        assert_eq!(m.get(&(1, 2)), Some(&(2, 6)));
        assert_eq!(m.get(&(0, 1)), Some(&(1, 4)));
        assert_eq!(m.get(&(3, 0)), Some(&(3, 7)));
        assert_eq!(m.get(&(2, 1)), None);
        let b = m.to_bytes();
        assert!(Merges::from_bytes(&b, 8) == Some(m.clone()));
        // Ids past the vocabulary, a cut table, another magic, keys out of order.
        assert!(Merges::from_bytes(&b, 7).is_none());
        assert!(Merges::from_bytes(&b[..b.len() - 1], 8).is_none());
        let mut bad = b.clone();
        bad[0] ^= 1;
        assert!(Merges::from_bytes(&bad, 8).is_none());
        let mut swapped = b.clone();
        let (k0, k1) = (16..24, 24..32);
        let first = swapped[k0.clone()].to_vec();
        swapped.copy_within(k1.clone(), k0.start);
        swapped[k1].copy_from_slice(&first);
        assert!(Merges::from_bytes(&swapped, 8).is_none());
        assert!(SpmBpe::stored_merges(&[0u8; 4], 8).is_none());
    }
}
