//! Paper mode: the study's model input, code tokens joined by single spaces.
//!
//! Role: METHODS.md 1 ("Paper mode" input): the study feeds `" ".join(code_tokens)`
//! rather than the raw source. [`paper_text`] builds that string and records where each
//! code token landed, so the same [`CodeToken`] list can be aligned (with
//! [`super::align()`]) against a tokenizer run on the paper text: use
//! [`PaperText::retarget`] to get tokens whose spans point into the paper text.
//!
//! Invariants: `spans.len() == tokens.len()`; `&text[spans[i].0..spans[i].1] ==
//! tokens[i].text`; consecutive tokens are separated by exactly one space; a token's own
//! text is kept verbatim (a docstring or text block keeps its inner newlines). Docstrings
//! stay (the study dropped them; codescope keeps every code token).

use super::token::CodeToken;
use super::Syntax;

/// The paper-mode text and the span of each code token in it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PaperText {
    /// Code tokens joined by single spaces.
    pub text: String,
    /// Byte span of token i in `text`.
    pub spans: Vec<(usize, usize)>,
}

impl PaperText {
    /// Copies of `tokens` with `start`/`end` moved to their paper-mode spans (for
    /// [`super::align()`] against the paper text). `tokens` must be the list the paper
    /// text was built from.
    pub fn retarget(&self, tokens: &[CodeToken]) -> Vec<CodeToken> {
        tokens
            .iter()
            .zip(&self.spans)
            .map(|(t, &(s, e))| CodeToken {
                start: s,
                end: e,
                ..t.clone()
            })
            .collect()
    }
}

/// Join the code tokens of `syntax` with single spaces (METHODS.md 1).
pub fn paper_text(syntax: &Syntax) -> PaperText {
    paper_text_of(&syntax.tokens)
}

/// [`paper_text`] for a bare token list.
pub fn paper_text_of(tokens: &[CodeToken]) -> PaperText {
    let mut text = String::with_capacity(tokens.iter().map(|t| t.text.len() + 1).sum());
    let mut spans = Vec::with_capacity(tokens.len());
    for (i, t) in tokens.iter().enumerate() {
        if i > 0 {
            text.push(' ');
        }
        let s = text.len();
        text.push_str(&t.text);
        spans.push((s, text.len()));
    }
    PaperText { text, spans }
}

#[cfg(test)]
mod tests {
    use super::super::{align, parse, Language, SubwordSpan};
    use super::*;

    #[test]
    fn joins_with_single_spaces() {
        let s = parse(
            "def add(a, b=1):\n  x = a + b\n  return x",
            Language::Python,
        )
        .unwrap();
        let p = paper_text(&s);
        assert_eq!(p.text, "def add ( a , b = 1 ) : x = a + b return x");
        assert_eq!(p.spans[1], (4, 7));
        for (i, &(a, b)) in p.spans.iter().enumerate() {
            assert_eq!(&p.text[a..b], s.tokens[i].text);
        }
    }

    #[test]
    fn retargeted_tokens_align_against_paper_text() {
        let s = parse("x=f(y)", Language::Python).unwrap();
        let p = paper_text(&s);
        assert_eq!(p.text, "x = f ( y )");
        let toks = p.retarget(&s.tokens);
        // A tokenizer on the paper text: "x", " =", " f", " (", " y", " )"
        let sw: Vec<_> = [(0, 1), (1, 3), (3, 5), (5, 7), (7, 9), (9, 11)]
            .iter()
            .map(|&(a, b)| SubwordSpan::new(a, b))
            .collect();
        let al = align(&sw, &toks);
        for i in 0..6 {
            assert_eq!(al.subword_to_tokens[i], [i]);
        }
    }

    #[test]
    fn empty_source_gives_empty_text() {
        let s = parse("", Language::Python).unwrap();
        assert_eq!(paper_text(&s), PaperText::default());
    }
}
