//! A SentencePiece BPE model file (`sentencepiece.bpe.model`, a protobuf `ModelProto`)
//! read without the sentencepiece library, and PLBART's tokenizer built on it as
//! transformers' `PLBartTokenizer` builds it (its SentencePiece backend).
//!
//! The model file: the pieces (string, score, type), the trainer's model type (BPE only
//! here; byte fallback and whitespace-as-suffix models are refused) and the normalizer
//! spec (its precompiled character map, `add_dummy_prefix`, `remove_extra_whitespaces`,
//! `escape_whitespaces`). Encoding follows sentencepiece's `normalizer.cc` and
//! `bpe_model.cc`:
//!
//! 1. normalize: at each position the longest rule of the character map (a darts-clone
//!    double array) or, without one, the character itself; user-defined pieces are kept
//!    whole; leading spaces dropped, runs of spaces made one, trailing spaces dropped; a
//!    space (`▁`) prefixed; spaces escaped as `▁`;
//! 2. BPE: the characters (user-defined pieces frozen) merged pair by pair, the pair
//!    whose joined string is a piece of the highest score first, the leftmost on a tie;
//!    unused pieces split back into the pieces they were merged from;
//! 3. a run of unknown pieces is one unknown piece.
//!
//! PLBART ([`PlBart`]): fairseq's ids (`<s>` 0, `<pad>` 1, `</s>` 2, `<unk>` 3, piece `i`
//! → `i + 1`, the model's own unknown piece → 3), the language codes after the pieces
//! (`base`: `__java__ __python__ __en_XX__`, then `<mask>`; `multi`: seven codes, `<mask>`
//! unknown), special-token text split out before encoding (`<mask>` takes the spaces
//! before it), and a source sequence
//! `tokens </s>` or, with a source language, `tokens </s> __lang__`; the analyses give each
//! input its own language's code ([`PlBart::encode_lang`]: `__python__`, `__java__`), the
//! configured `src_lang` standing for inputs of no known language.
//! `tests/it/plbart_spm.rs` checks the ids against transformers.

use std::collections::{BinaryHeap, HashMap};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

use crate::error::{Error, Result};
use crate::model::trace::Subword;

const META: &str = "\u{2581}";

/// A piece's type, as `ModelProto.SentencePiece.Type` numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Normal,
    Unknown,
    Control,
    UserDefined,
    Unused,
    Byte,
}

/// A protobuf message's fields: `(number, value)`, in file order.
enum Value<'a> {
    Int(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
}

fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// The fields of one message; `None` if it is not well formed.
fn fields(b: &[u8]) -> Option<Vec<(u64, Value<'_>)>> {
    let mut at = 0;
    let mut out = Vec::new();
    while at < b.len() {
        let key = varint(b, &mut at)?;
        let value = match key & 7 {
            0 => Value::Int(varint(b, &mut at)?),
            1 => {
                at = at.checked_add(8).filter(|&e| e <= b.len())?;
                continue;
            }
            2 => {
                let n = usize::try_from(varint(b, &mut at)?).ok()?;
                let end = at.checked_add(n).filter(|&e| e <= b.len())?;
                let v = &b[at..end];
                at = end;
                Value::Bytes(v)
            }
            5 => {
                let end = at.checked_add(4).filter(|&e| e <= b.len())?;
                let v = u32::from_le_bytes(b[at..end].try_into().ok()?);
                at = end;
                Value::Fixed32(v)
            }
            _ => return None,
        };
        out.push((key >> 3, value));
    }
    Some(out)
}

/// A precompiled character map: sentencepiece's double array over the rules' sources and
/// the blob of their NUL-terminated replacements.
struct Charsmap {
    units: Vec<u32>,
    normalized: Vec<u8>,
}

impl Charsmap {
    fn parse(b: &[u8]) -> Option<Self> {
        let n = u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize;
        let trie = b.get(4..4usize.checked_add(n)?)?;
        if !n.is_multiple_of(4) || n == 0 {
            return None;
        }
        let units = trie
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Some(Charsmap {
            units,
            normalized: b[4 + n..].to_vec(),
        })
    }

    /// The longest rule matching a prefix of `key`: (its length, its replacement).
    fn longest(&self, key: &[u8]) -> Option<(usize, &str)> {
        let unit = |pos: usize| self.units.get(pos).copied();
        let offset = |u: u32| ((u >> 10) << ((u & (1 << 9)) >> 6)) as usize;
        let mut pos = offset(unit(0)?);
        let mut best = None;
        for (i, &c) in key.iter().enumerate() {
            pos ^= c as usize;
            let u = unit(pos)?;
            if (u & ((1 << 31) | 0xff)) as usize != c as usize {
                break;
            }
            pos ^= offset(u);
            if (u >> 8) & 1 == 1 {
                let value = (unit(pos)? & 0x7fff_ffff) as usize;
                best = Some((i + 1, value));
            }
        }
        let (len, value) = best?;
        let rest = self.normalized.get(value..)?;
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        Some((len, std::str::from_utf8(&rest[..end]).ok()?))
    }
}

/// A SentencePiece BPE model (see the module docs).
pub struct SpmModel {
    pieces: Vec<(String, f32, Kind)>,
    /// Normal, user-defined and unused pieces → id (sentencepiece's `pieces_`).
    ids: HashMap<String, u32>,
    /// Unknown, control and byte pieces → id.
    reserved: HashMap<String, u32>,
    unk: u32,
    /// User-defined pieces, longest first.
    user: Vec<String>,
    charsmap: Option<Charsmap>,
    dummy_prefix: bool,
    collapse: bool,
    escape: bool,
}

fn corrupt(why: &str) -> Error {
    Error::Tokenizer(format!("not a SentencePiece model ({why})"))
}

impl SpmModel {
    /// Parse a `ModelProto`.
    pub fn parse(b: &[u8]) -> Result<Self> {
        let bad = || corrupt("not a protobuf ModelProto");
        let mut pieces = Vec::new();
        let (mut model_type, mut byte_fallback, mut suffix) = (1u64, false, false);
        let (mut charsmap, mut dummy_prefix, mut collapse, mut escape) = (None, true, true, true);
        for (n, v) in fields(b).ok_or_else(bad)? {
            match (n, v) {
                (1, Value::Bytes(p)) => {
                    let (mut text, mut score, mut kind) = (None, 0f32, 1u64);
                    for (n, v) in fields(p).ok_or_else(bad)? {
                        match (n, v) {
                            (1, Value::Bytes(s)) => {
                                text = Some(String::from_utf8(s.to_vec()).map_err(|_| bad())?)
                            }
                            (2, Value::Fixed32(f)) => score = f32::from_bits(f),
                            (3, Value::Int(t)) => kind = t,
                            _ => {}
                        }
                    }
                    let kind = match kind {
                        1 => Kind::Normal,
                        2 => Kind::Unknown,
                        3 => Kind::Control,
                        4 => Kind::UserDefined,
                        5 => Kind::Unused,
                        6 => Kind::Byte,
                        _ => return Err(corrupt("a piece of an unknown type")),
                    };
                    pieces.push((text.ok_or_else(bad)?, score, kind));
                }
                (2, Value::Bytes(t)) => {
                    for (n, v) in fields(t).ok_or_else(bad)? {
                        match (n, v) {
                            (3, Value::Int(t)) => model_type = t,
                            (24, Value::Int(t)) => suffix = t != 0,
                            (35, Value::Int(t)) => byte_fallback = t != 0,
                            _ => {}
                        }
                    }
                }
                (3, Value::Bytes(t)) => {
                    for (n, v) in fields(t).ok_or_else(bad)? {
                        match (n, v) {
                            (2, Value::Bytes(m)) if !m.is_empty() => {
                                charsmap = Some(
                                    Charsmap::parse(m)
                                        .ok_or_else(|| corrupt("a broken character map"))?,
                                )
                            }
                            (3, Value::Int(t)) => dummy_prefix = t != 0,
                            (4, Value::Int(t)) => collapse = t != 0,
                            (5, Value::Int(t)) => escape = t != 0,
                            _ => {}
                        }
                    }
                }
                (1..=3, _) => return Err(bad()),
                _ => {}
            }
        }
        if pieces.is_empty() {
            return Err(corrupt("no pieces"));
        }
        if model_type != 2 {
            let name = match model_type {
                1 => "a unigram",
                3 => "a word",
                4 => "a char",
                _ => "an unknown-type",
            };
            return Err(Error::Tokenizer(format!(
                "the SentencePiece model is {name} model; codescope reads BPE models only"
            )));
        }
        if byte_fallback || suffix {
            return Err(Error::Tokenizer(format!(
                "the SentencePiece model uses {}, which codescope does not read",
                if byte_fallback {
                    "byte fallback"
                } else {
                    "whitespace as a suffix"
                }
            )));
        }
        let (mut ids, mut reserved, mut unk) = (HashMap::new(), HashMap::new(), None);
        for (i, (text, _, kind)) in pieces.iter().enumerate() {
            let i = i as u32;
            let map = match kind {
                Kind::Normal | Kind::UserDefined | Kind::Unused => &mut ids,
                _ => &mut reserved,
            };
            if map.insert(text.clone(), i).is_some() {
                return Err(corrupt(&format!("the piece {text:?} twice")));
            }
            if *kind == Kind::Unknown {
                unk = Some(i);
            }
        }
        let mut user: Vec<String> = pieces
            .iter()
            .filter(|p| p.2 == Kind::UserDefined)
            .map(|p| p.0.clone())
            .collect();
        user.sort_by_key(|u| std::cmp::Reverse(u.len()));
        Ok(SpmModel {
            unk: unk.ok_or_else(|| corrupt("no unknown piece"))?,
            pieces,
            ids,
            reserved,
            user,
            charsmap,
            dummy_prefix,
            collapse,
            escape,
        })
    }

    /// Pieces in the model.
    pub fn len(&self) -> usize {
        self.pieces.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// The string of piece `id`.
    pub fn piece(&self, id: u32) -> Option<&str> {
        self.pieces.get(id as usize).map(|p| p.0.as_str())
    }

    /// The model's unknown piece.
    pub fn unk(&self) -> u32 {
        self.unk
    }

    /// The user-defined piece at the start of `s`, if any: its length.
    fn user_prefix(&self, s: &str) -> Option<usize> {
        self.user
            .iter()
            .find(|u| s.starts_with(u.as_str()))
            .map(String::len)
    }

    /// The normalized form of `text` and, per normalized byte plus one past the end, the
    /// byte of `text` it came from (`normalizer.cc`'s `norm_to_orig`).
    fn normalize(&self, text: &str) -> (String, Vec<usize>) {
        // One step: (replacement, bytes consumed).
        let step = |s: &str| -> (String, usize) {
            if let Some(n) = self.user_prefix(s) {
                return (s[..n].to_string(), n);
            }
            if let Some((n, r)) = self.charsmap.as_ref().and_then(|m| m.longest(s.as_bytes())) {
                return (r.to_string(), n);
            }
            let n = s.chars().next().map_or(1, char::len_utf8);
            (s[..n].to_string(), n)
        };
        let (mut out, mut orig) = (String::new(), Vec::new());
        let mut at = 0;
        if self.collapse {
            while at < text.len() {
                let (r, n) = step(&text[at..]);
                if r != " " {
                    break;
                }
                at += n;
            }
        }
        if at >= text.len() {
            return (out, vec![at.min(text.len())]);
        }
        let space = if self.escape { META } else { " " };
        if self.dummy_prefix {
            out.push_str(space);
            orig.extend(std::iter::repeat_n(at, space.len()));
        }
        let mut prev_space = self.collapse;
        while at < text.len() {
            let (r, n) = step(&text[at..]);
            let mut r = r.as_str();
            if prev_space {
                r = r.trim_start_matches(' ');
            }
            if !r.is_empty() {
                for c in r.chars() {
                    let s = if c == ' ' && self.escape {
                        META.to_string()
                    } else {
                        c.to_string()
                    };
                    orig.extend(std::iter::repeat_n(at, s.len()));
                    out.push_str(&s);
                }
                prev_space = r.ends_with(' ');
            }
            at += n;
            if !self.collapse {
                prev_space = false;
            }
        }
        let mut end = at;
        if self.collapse {
            while out.ends_with(space) {
                let len = out.len() - space.len();
                end = orig[len];
                out.truncate(len);
                orig.truncate(len);
            }
        }
        orig.push(end);
        (out, orig)
    }

    /// The pieces of `text`: `(piece id, start, end)`, byte offsets into `text`.
    pub fn encode(&self, text: &str) -> Vec<(u32, usize, usize)> {
        let (norm, orig) = self.normalize(text);
        // Symbols: (start, end) in `norm`, prev, next, frozen.
        struct Sym {
            a: usize,
            b: usize,
            prev: isize,
            next: isize,
            frozen: bool,
        }
        let mut syms: Vec<Sym> = Vec::new();
        let mut at = 0;
        while at < norm.len() {
            let (n, frozen) = match self.user_prefix(&norm[at..]) {
                Some(n) => (n, true),
                None => (norm[at..].chars().next().map_or(1, char::len_utf8), false),
            };
            let i = syms.len() as isize;
            syms.push(Sym {
                a: at,
                b: at + n,
                prev: i - 1,
                next: if at + n < norm.len() { i + 1 } else { -1 },
                frozen,
            });
            at += n;
        }
        #[derive(PartialEq)]
        struct Pair {
            score: f32,
            left: usize,
            right: usize,
            size: usize,
        }
        impl Eq for Pair {}
        impl Ord for Pair {
            fn cmp(&self, o: &Self) -> std::cmp::Ordering {
                self.score
                    .total_cmp(&o.score)
                    .then_with(|| o.left.cmp(&self.left))
            }
        }
        impl PartialOrd for Pair {
            fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(o))
            }
        }
        let mut agenda = BinaryHeap::new();
        let mut rev: HashMap<&str, usize> = HashMap::new();
        let mut add = |syms: &[Sym], l: isize, r: isize, agenda: &mut BinaryHeap<Pair>| {
            if l < 0 || r < 0 {
                return;
            }
            let (ls, rs) = (&syms[l as usize], &syms[r as usize]);
            if ls.frozen || rs.frozen {
                return;
            }
            let joined = &norm[ls.a..rs.b];
            let Some(&id) = self.ids.get(joined) else {
                return;
            };
            let (_, score, kind) = &self.pieces[id as usize];
            agenda.push(Pair {
                score: *score,
                left: l as usize,
                right: r as usize,
                size: joined.len(),
            });
            if *kind == Kind::Unused {
                rev.insert(joined, ls.b - ls.a);
            }
        };
        for i in 1..syms.len() as isize {
            add(&syms, i - 1, i, &mut agenda);
        }
        while let Some(top) = agenda.pop() {
            let (l, r) = (&syms[top.left], &syms[top.right]);
            if l.a == l.b || r.a == r.b || (l.b - l.a) + (r.b - r.a) != top.size {
                continue;
            }
            let (rb, rnext) = (r.b, r.next);
            syms[top.left].b = rb;
            syms[top.left].next = rnext;
            if rnext >= 0 {
                syms[rnext as usize].prev = top.left as isize;
            }
            let r = &mut syms[top.right];
            r.b = r.a;
            let (prev, next) = (syms[top.left].prev, syms[top.left].next);
            add(&syms, prev, top.left as isize, &mut agenda);
            add(&syms, top.left as isize, next, &mut agenda);
        }
        let id_of = |w: &str| {
            self.reserved
                .get(w)
                .or_else(|| self.ids.get(w))
                .copied()
                .unwrap_or(self.unk)
        };
        let mut pieces: Vec<(u32, usize, usize)> = Vec::new();
        fn reseg(
            m: &SpmModel,
            norm: &str,
            rev: &HashMap<&str, usize>,
            id_of: &dyn Fn(&str) -> u32,
            (a, b): (usize, usize),
            out: &mut Vec<(u32, usize, usize)>,
        ) {
            let w = &norm[a..b];
            let id = id_of(w);
            let unused = m.pieces[id as usize].2 == Kind::Unused;
            match rev.get(w).filter(|_| unused) {
                Some(&left) => {
                    reseg(m, norm, rev, id_of, (a, a + left), out);
                    reseg(m, norm, rev, id_of, (a + left, b), out);
                }
                None => out.push((id, a, b)),
            }
        }
        let mut i: isize = if syms.is_empty() { -1 } else { 0 };
        while i >= 0 {
            let s = &syms[i as usize];
            reseg(self, &norm, &rev, &id_of, (s.a, s.b), &mut pieces);
            i = s.next;
        }
        // A run of unknown pieces is one.
        let mut out: Vec<(u32, usize, usize)> = Vec::with_capacity(pieces.len());
        for (id, a, b) in pieces {
            match out.last_mut() {
                Some(last) if id == self.unk && last.0 == self.unk => last.2 = b,
                _ => out.push((id, a, b)),
            }
        }
        out.into_iter()
            .map(|(id, a, b)| (id, orig[a], orig[b]))
            .collect()
    }
}

/// PLBART's language codes, as `FAIRSEQ_LANGUAGE_CODES` lists them.
const BASE: &[&str] = &["__java__", "__python__", "__en_XX__"];
const MULTI: &[&str] = &[
    "__java__",
    "__python__",
    "__en_XX__",
    "__javascript__",
    "__php__",
    "__ruby__",
    "__go__",
];

/// PLBART's tokenizer over a SentencePiece model (see the module docs).
pub struct PlBart {
    sp: SpmModel,
    /// Fairseq specials, language codes and `<mask>`: `(string, id)`.
    specials: Vec<(String, u32)>,
    matcher: AhoCorasick,
    /// `</s>` and the source language code, if any.
    suffix: Vec<(u32, String)>,
}

impl std::fmt::Debug for PlBart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlBart")
            .field("pieces", &self.sp.len())
            .field("suffix", &self.suffix)
            .finish()
    }
}

impl PlBart {
    /// From the model file's bytes and `PLBartTokenizer`'s `language_codes` (`base` or
    /// `multi`) and `src_lang` (`python`, `java`, ... or `__python__`; `None`: no code).
    pub fn new(model: &[u8], language_codes: &str, src_lang: Option<&str>) -> Result<Self> {
        let sp = SpmModel::parse(model)?;
        let codes = match language_codes {
            "base" => BASE,
            "multi" => MULTI,
            other => {
                return Err(Error::Tokenizer(format!(
                    "PLBART language_codes {other:?} is neither \"base\" nor \"multi\""
                )))
            }
        };
        let n = sp.len() as u32;
        let mut specials: Vec<(String, u32)> = ["<s>", "<pad>", "</s>", "<unk>"]
            .iter()
            .enumerate()
            .map(|(i, s)| (s.to_string(), i as u32))
            .collect();
        specials.extend(
            codes
                .iter()
                .enumerate()
                .map(|(i, c)| (c.to_string(), n + 1 + i as u32)),
        );
        // `<mask>` is split out in both; `multi` has no id for it (the unknown one).
        let mask = if language_codes == "base" {
            n + 1 + codes.len() as u32
        } else {
            3
        };
        specials.push(("<mask>".into(), mask));
        let suffix = match src_lang {
            None => vec![(2, "</s>".to_string())],
            Some(l) => {
                let code = if l.starts_with("__") {
                    l.to_string()
                } else {
                    format!("__{l}__")
                };
                let &(_, id) = specials.iter().find(|s| s.0 == code).ok_or_else(|| {
                    Error::Tokenizer(format!(
                        "PLBART src_lang {l:?} is not one of its {language_codes} language codes"
                    ))
                })?;
                vec![(2, "</s>".to_string()), (id, code)]
            }
        };
        let matcher = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .build(specials.iter().map(|s| s.0.as_str()))
            .map_err(|e| Error::Tokenizer(format!("special-token matcher: {e}")))?;
        Ok(PlBart {
            sp,
            specials,
            matcher,
            suffix,
        })
    }

    /// Ids: the fairseq specials, the pieces, the language codes (and `<mask>`).
    pub fn vocab_size(&self) -> usize {
        self.specials
            .iter()
            .map(|s| s.1 as usize + 1)
            .max()
            .unwrap_or(0)
            .max(self.sp.len() + 1)
    }

    pub fn id_to_token(&self, id: u32) -> Option<String> {
        if let Some(s) = self.specials.iter().find(|s| s.1 == id) {
            return Some(s.0.clone());
        }
        self.sp.piece(id.checked_sub(1)?).map(str::to_string)
    }

    fn fairseq(&self, piece: u32) -> u32 {
        if piece == self.sp.unk() {
            3
        } else {
            piece + 1
        }
    }

    /// The source sequence of `text`: its tokens, `</s>` and the language code.
    pub fn encode(&self, text: &str) -> Vec<Subword> {
        self.encode_lang(text, None)
    }

    /// [`PlBart::encode`] with the language code of `lang` (`python`, `java`: what
    /// `PLBartTokenizer` gives with `src_lang` set to it) when the vocabulary has that
    /// code; else (`None`, or a language without a code) the `src_lang` it was built with.
    pub fn encode_lang(&self, text: &str, lang: Option<&str>) -> Vec<Subword> {
        let code = lang.map(|l| format!("__{l}__"));
        let own = code
            .as_ref()
            .and_then(|c| self.specials.iter().find(|s| &s.0 == c))
            .map(|(c, id)| vec![(2, "</s>".to_string()), (*id, c.clone())]);
        let suffix = own.as_ref().unwrap_or(&self.suffix);
        let mut out = Vec::new();
        let mut last = 0;
        let push_text = |out: &mut Vec<Subword>, from: usize, to: usize| {
            for (id, a, b) in self.sp.encode(&text[from..to]) {
                let id = self.fairseq(id);
                out.push(Subword {
                    id,
                    text: self.id_to_token(id).unwrap_or_default(),
                    start: from + a,
                    end: from + b,
                    special: false,
                });
            }
        };
        for hit in self.matcher.find_iter(text) {
            let (content, id) = &self.specials[hit.pattern().as_usize()];
            // `<mask>` takes the whitespace before it (`lstrip`).
            let from = if content == "<mask>" {
                text[..hit.start()].trim_end().len().max(last)
            } else {
                hit.start()
            };
            if from > last {
                push_text(&mut out, last, from);
            }
            out.push(Subword {
                id: *id,
                text: content.clone(),
                start: hit.start(),
                end: hit.end(),
                special: false,
            });
            last = hit.end();
        }
        if last < text.len() {
            push_text(&mut out, last, text.len());
        }
        out.extend(suffix.iter().map(|(id, t)| Subword {
            id: *id,
            text: t.clone(),
            start: 0,
            end: 0,
            special: true,
        }));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_or_foreign_file_is_not_a_model() {
        for bytes in [&b"not read"[..], &[0x0a, 0x05, 0x0a][..], &[][..]] {
            assert!(SpmModel::parse(bytes).is_err());
        }
    }
}
