//! Subword <-> code token alignment by byte overlap (docs/METHODS.md 1, "Subword alignment").
//!
//! Role: the meeting point of `model` and `syntax` (docs/ARCHITECTURE.md): a tokenizer gives
//! each subword a byte span of the same string the code tokens index; a subword belongs
//! to every code token its span overlaps.
//!
//! Works on byte spans only, so it is indifferent to how a tokenizer spells its pieces
//! (WordPiece `##`, byte-level BPE `Ġ`, SentencePiece `▁` and `<0xNN>` byte fallback):
//! - a subword spanning two code tokens (`Ġ(x` covering `(` and `x`) maps to both;
//! - a code token split into many subwords maps to all of them;
//! - whitespace-only subwords overlap no token and map to nothing, as do empty spans;
//! - special subwords (CLS/SEP/BOS/...) map to nothing (docs/METHODS.md 1);
//! - spans may start or end inside a multi-byte UTF-8 character (byte fallback) or lie
//!   past the end of the text: only integers are compared, nothing is sliced, so
//!   alignment never panics.
//!
//! Overlap is strict: `[s, e)` and `[t.start, t.end)` share at least one byte.

use super::token::CodeToken;

/// A subword's byte span in the text the tokenizer saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SubwordSpan {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
    /// Special token (CLS, SEP, BOS, EOS, PAD, ...): aligned to nothing.
    pub special: bool,
}

impl SubwordSpan {
    /// An ordinary subword covering `[start, end)`.
    pub fn new(start: usize, end: usize) -> Self {
        SubwordSpan {
            start,
            end,
            special: false,
        }
    }

    /// A special token (no span).
    pub fn special() -> Self {
        SubwordSpan {
            start: 0,
            end: 0,
            special: true,
        }
    }
}

/// The alignment in both directions; every inner list is sorted ascending.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Alignment {
    /// For each subword, the code tokens it overlaps (empty for specials/whitespace).
    pub subword_to_tokens: Vec<Vec<usize>>,
    /// For each code token, the subwords overlapping it.
    pub token_to_subwords: Vec<Vec<usize>>,
}

impl Alignment {
    /// Code tokens that no subword covers (e.g. truncated by the model's max length).
    pub fn uncovered_tokens(&self) -> Vec<usize> {
        (0..self.token_to_subwords.len())
            .filter(|&i| self.token_to_subwords[i].is_empty())
            .collect()
    }
}

/// Align subwords to code tokens by byte overlap. `tokens` must be sorted by `start`
/// and non-overlapping (as [`super::parse()`] produces them).
pub fn align(subwords: &[SubwordSpan], tokens: &[CodeToken]) -> Alignment {
    let mut subword_to_tokens = vec![Vec::new(); subwords.len()];
    let mut token_to_subwords = vec![Vec::new(); tokens.len()];
    for (k, sw) in subwords.iter().enumerate() {
        if sw.special || sw.end <= sw.start {
            continue;
        }
        // First token that ends after the subword starts.
        let mut i = tokens.partition_point(|t| t.end <= sw.start);
        while i < tokens.len() && tokens[i].start < sw.end {
            // A zero-width token (paper mode's tokens that are not fed) takes no subword.
            if tokens[i].end > sw.start && tokens[i].end > tokens[i].start {
                subword_to_tokens[k].push(i);
                token_to_subwords[i].push(k);
            }
            i += 1;
        }
    }
    Alignment {
        subword_to_tokens,
        token_to_subwords,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse, Language};
    use super::*;

    fn spans(v: &[(usize, usize)]) -> Vec<SubwordSpan> {
        v.iter().map(|&(s, e)| SubwordSpan::new(s, e)).collect()
    }

    #[test]
    fn wordpiece_style_split_and_merge() {
        // "x = foo_bar(y)" ; tokens: x = foo_bar ( y )
        let s = parse("x = foo_bar(y)\n", Language::Python).unwrap();
        let texts: Vec<_> = s.tokens.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(texts, ["x", "=", "foo_bar", "(", "y", ")"]);
        // [CLS] x = foo ##_ ##bar ( y ) [SEP]
        let mut sw = vec![SubwordSpan::special()];
        sw.extend(spans(&[
            (0, 1),
            (2, 3),
            (4, 7),
            (7, 8),
            (8, 11),
            (11, 12),
            (12, 13),
            (13, 14),
        ]));
        sw.push(SubwordSpan::special());
        let al = align(&sw, &s.tokens);
        assert!(al.subword_to_tokens[0].is_empty());
        assert_eq!(al.subword_to_tokens[3], [2]);
        assert_eq!(al.token_to_subwords[2], [3, 4, 5]);
        assert!(al.subword_to_tokens[9].is_empty());
        assert_eq!(al.uncovered_tokens(), Vec::<usize>::new());
    }

    #[test]
    fn bpe_subword_spanning_two_tokens_maps_to_both() {
        let s = parse("f(x)\n", Language::Python).unwrap();
        // byte-level BPE might produce "f", "(x", ")"
        let al = align(&spans(&[(0, 1), (1, 3), (3, 4)]), &s.tokens);
        assert_eq!(al.subword_to_tokens[1], [1, 2]);
        assert_eq!(al.token_to_subwords[2], [1]);
    }

    #[test]
    fn whitespace_and_empty_subwords_map_to_nothing() {
        let s = parse("a  =  b\n", Language::Python).unwrap();
        // "Ġ" style: whitespace pieces "  " between tokens, and a zero-width piece.
        let al = align(
            &spans(&[(0, 1), (1, 3), (3, 4), (4, 6), (6, 7), (7, 7)]),
            &s.tokens,
        );
        assert!(al.subword_to_tokens[1].is_empty());
        assert!(al.subword_to_tokens[3].is_empty());
        assert!(al.subword_to_tokens[5].is_empty());
        assert_eq!(al.subword_to_tokens[4], [2]);
    }

    #[test]
    fn byte_fallback_inside_multibyte_identifier() {
        // "café = 1": é is 2 bytes (bytes 3..5); byte fallback splits it.
        let src = "café = 1\n";
        let s = parse(src, Language::Python).unwrap();
        assert_eq!(s.tokens[0].text, "café");
        assert_eq!((s.tokens[0].start, s.tokens[0].end), (0, 5));
        let al = align(
            &spans(&[(0, 3), (3, 4), (4, 5), (5, 7), (7, 8), (100, 200)]),
            &s.tokens,
        );
        assert_eq!(al.subword_to_tokens[1], [0]);
        assert_eq!(al.subword_to_tokens[2], [0]);
        assert_eq!(al.token_to_subwords[0], [0, 1, 2]);
        assert!(al.subword_to_tokens[5].is_empty());
    }

    #[test]
    fn reversed_span_is_ignored() {
        let s = parse("a\n", Language::Python).unwrap();
        let al = align(&spans(&[(1, 0)]), &s.tokens);
        assert!(al.subword_to_tokens[0].is_empty());
    }
}
