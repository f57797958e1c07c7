//! Paper mode: the study's model input.
//!
//! Role: docs/METHODS.md 1 ("Paper mode" input). The study did not feed the source as
//! written: it ran its comment and docstring removal (`remove_comments_and_docstrings`,
//! [`super::remove_comments_and_docstrings`]), took the code tokens of what was left,
//! dropped every token whose text starts with `#`, `"""` or `'''` (its
//! `create_csn_exp_data.py`), and joined the rest with single spaces. [`paper_input`]
//! does exactly that for a parsed snippet and keeps the original token indexing:
//! - each original token gets its span in the paper text, or none when the study's
//!   pipeline does not feed it (a docstring, a remaining triple-quoted string);
//! - the gold graphs are those of the *cleaned* snippet (what the study scored against),
//!   mapped back onto the original token indices ([`PaperInput::edges_within`]).
//!
//! When the study's cleaning fails on a text (Python's tokenizer refuses it, e.g. an
//! unclosed bracket), the study dropped the snippet; [`paper_input`] keeps going with
//! the uncleaned tokens (still without `#`/`"""`/`'''` tokens) and says why in
//! [`PaperInput::note`], so a corpus run can skip the snippet and the explorer can say so.
//!
//! [`paper_text`] is the plain join of every code token (no cleaning), kept for callers
//! that want exactly that.
//!
//! Invariants: `spans.len() == tokens.len()`; consecutive fed tokens are separated by
//! exactly one space; a fed token's text is its text after the study's cleaning (equal to
//! the original but for a multi-line string, whose blank lines the cleaning drops too).

use super::clean::remove_comments_and_docstrings;
use super::graph::Graph;
use super::parse::parse;
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

/// Join every code token of `syntax` with single spaces, nothing removed (the study's
/// input is [`paper_input`]).
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

/// Does the study's pipeline drop this code token from its input? Its
/// `create_csn_exp_data.py` removes every token starting with `#`, `"""` or `'''`
/// (collected, then `tokens.remove(t)` for each: every such token goes).
pub fn study_drops(text: &str) -> bool {
    text.starts_with('#') || text.starts_with("\"\"\"") || text.starts_with("'''")
}

/// Where the gold graphs of an analysis come from: a snippet's own graphs, or paper
/// mode's graphs of the cleaned snippet mapped onto the original tokens.
pub trait GoldSource {
    /// The edges of `g` with both ends among `tokens` (indices into the snippet's
    /// tokens, ascending), sorted.
    fn edges_within(&self, g: Graph, tokens: &[usize]) -> Vec<(usize, usize)>;
}

impl GoldSource for Syntax {
    fn edges_within(&self, g: Graph, tokens: &[usize]) -> Vec<(usize, usize)> {
        self.graphs.edges_within(g, tokens)
    }
}

/// The study's paper-mode input for one parsed snippet (see the module docs).
#[derive(Debug, Clone)]
pub struct PaperInput {
    /// The fed tokens joined by single spaces.
    pub text: String,
    /// Per token of the original snippet: its span in `text`, or `None` when it is not fed.
    pub spans: Vec<Option<(usize, usize)>>,
    /// Why the study's cleaning was not applied (it fails on this text, or the cleaned
    /// text does not parse into a subsequence of the original tokens); `None` when it was.
    pub note: Option<String>,
    /// The cleaned snippet (its graphs are the gold graphs); `None` when not cleaned.
    cleaned: Option<Syntax>,
    /// Original token index -> cleaned token index.
    to_cleaned: Vec<Option<usize>>,
    /// Cleaned token index -> original token index (ascending).
    from_cleaned: Vec<usize>,
}

impl PaperInput {
    /// Copies of `tokens` (the snippet's) with `start`/`end` in the paper text; a token
    /// that is not fed gets an empty span (which aligns to no subword) where the text
    /// stood after the previous fed token.
    pub fn retarget(&self, tokens: &[CodeToken]) -> Vec<CodeToken> {
        let mut at = 0;
        tokens
            .iter()
            .zip(&self.spans)
            .map(|(t, sp)| {
                let (s, e) = match *sp {
                    Some((s, e)) => {
                        at = e;
                        (s, e)
                    }
                    None => (at, at),
                };
                CodeToken {
                    text: self.text[s..e].to_string(),
                    start: s,
                    end: e,
                    ..t.clone()
                }
            })
            .collect()
    }

    /// Whether the study's cleaning was applied.
    pub fn cleaned(&self) -> bool {
        self.cleaned.is_some()
    }

    /// The cleaned snippet (the one the study parsed: its tokens, tree and gold graphs);
    /// `None` when the cleaning was not applied.
    pub fn cleaned_syntax(&self) -> Option<&Syntax> {
        self.cleaned.as_ref()
    }

    /// The cleaned token index of original token `t` (`None`: removed by the cleaning).
    pub fn cleaned_index(&self, t: usize) -> Option<usize> {
        self.to_cleaned.get(t).copied().flatten()
    }

    /// Number of original tokens the study's input leaves out.
    pub fn dropped(&self) -> usize {
        self.spans.iter().filter(|s| s.is_none()).count()
    }
}

impl GoldSource for PaperInput {
    fn edges_within(&self, g: Graph, tokens: &[usize]) -> Vec<(usize, usize)> {
        let Some(c) = &self.cleaned else {
            return Vec::new();
        };
        let inner: Vec<usize> = tokens
            .iter()
            .filter_map(|&t| self.to_cleaned.get(t).copied().flatten())
            .collect();
        // The map is increasing, so sorted edges stay sorted.
        c.graphs
            .edges_within(g, &inner)
            .into_iter()
            .map(|(i, j)| (self.from_cleaned[i], self.from_cleaned[j]))
            .collect()
    }
}

/// The study's paper-mode input for `syntax` (see the module docs).
pub fn paper_input(syntax: &Syntax) -> PaperInput {
    let n = syntax.tokens.len();
    let uncleaned = |note: String| {
        let fed: Vec<Option<&str>> = syntax
            .tokens
            .iter()
            .map(|t| Some(t.text.as_str()).filter(|t| !study_drops(t)))
            .collect();
        let (text, spans) = join(&fed);
        PaperInput {
            text,
            spans,
            note: Some(note),
            cleaned: None,
            to_cleaned: vec![None; n],
            from_cleaned: Vec::new(),
        }
    };
    let text = match remove_comments_and_docstrings(&syntax.source, syntax.language) {
        Ok(t) => t,
        Err(e) => return uncleaned(format!("{e}; comments and docstrings kept")),
    };
    let c = match parse(&text, syntax.language) {
        Ok(c) => c,
        Err(e) => {
            return uncleaned(format!(
                "the cleaned text could not be parsed ({e}); comments and docstrings kept"
            ))
        }
    };
    let Some(from_cleaned) = match_cleaned(&syntax.tokens, &c.tokens) else {
        return uncleaned(
            "the text without comments and docstrings parses into other tokens; comments and docstrings kept"
                .into(),
        );
    };
    let mut to_cleaned = vec![None; n];
    for (k, &o) in from_cleaned.iter().enumerate() {
        to_cleaned[o] = Some(k);
    }
    // What the study fed: the cleaned tokens' text (the cleaning also drops blank lines
    // inside multi-line strings), less the tokens its filter drops.
    let fed: Vec<Option<&str>> = to_cleaned
        .iter()
        .map(|k| {
            k.map(|k| c.tokens[k].text.as_str())
                .filter(|t| !study_drops(t))
        })
        .collect();
    let (text, spans) = join(&fed);
    PaperInput {
        text,
        spans,
        note: None,
        cleaned: Some(c),
        to_cleaned,
        from_cleaned,
    }
}

fn join(fed: &[Option<&str>]) -> (String, Vec<Option<(usize, usize)>>) {
    let mut text = String::with_capacity(fed.iter().flatten().map(|t| t.len() + 1).sum());
    let spans = fed
        .iter()
        .map(|t| {
            t.map(|t| {
                if !text.is_empty() {
                    text.push(' ');
                }
                let s = text.len();
                text.push_str(t);
                (s, text.len())
            })
        })
        .collect();
    (text, spans)
}

/// The original index of each cleaned token, or `None` when the two lists are not the
/// same tokens less some strings. The study's cleaning removes comments (never tokens),
/// docstrings and other statement-level strings, and blank lines (also inside multi-line
/// strings): every other token is unchanged and in order, so the non-string tokens pair
/// one to one; between two of them, the cleaned strings are matched to the original
/// ones in order, preferring equal text (an alignment over the few strings of the gap).
fn match_cleaned(orig: &[CodeToken], clean: &[CodeToken]) -> Option<Vec<usize>> {
    let is_str = |t: &CodeToken| t.kind == "string";
    let anchors =
        |v: &[CodeToken]| -> Vec<usize> { (0..v.len()).filter(|&i| !is_str(&v[i])).collect() };
    let (ao, ac) = (anchors(orig), anchors(clean));
    if ao.len() != ac.len()
        || ao
            .iter()
            .zip(&ac)
            .any(|(&i, &j)| orig[i].text != clean[j].text || orig[i].kind != clean[j].kind)
    {
        return None;
    }
    let mut out = vec![0; clean.len()];
    // Gaps: before the first anchor, between anchors, after the last.
    let mut bounds_o: Vec<usize> = ao.clone();
    bounds_o.push(orig.len());
    let mut bounds_c: Vec<usize> = ac.clone();
    bounds_c.push(clean.len());
    let (mut po, mut pc) = (0, 0);
    for (k, (&eo, &ec)) in bounds_o.iter().zip(&bounds_c).enumerate() {
        let (go, gc) = (po..eo, pc..ec);
        let m = align_gap(&orig[go.clone()], &clean[gc.clone()])?;
        for (j, i) in m.into_iter().enumerate() {
            out[gc.start + j] = go.start + i;
        }
        if k < ao.len() {
            out[ec] = eo;
        }
        po = eo + 1;
        pc = ec + 1;
    }
    Some(out)
}

/// In-order match of every string of `clean` to one of `orig` (same gap), most equal
/// texts first; `None` when `clean` has more strings than `orig`.
fn align_gap(orig: &[CodeToken], clean: &[CodeToken]) -> Option<Vec<usize>> {
    let (n, m) = (orig.len(), clean.len());
    if m > n {
        return None;
    }
    if m == n {
        return Some((0..n).collect());
    }
    // best[i][j]: most equal pairs matching clean[..j] within orig[..i] (j <= i).
    let mut best = vec![vec![None::<usize>; m + 1]; n + 1];
    for row in best.iter_mut() {
        row[0] = Some(0);
    }
    for i in 1..=n {
        for j in 1..=m.min(i) {
            let skip = best[i - 1][j];
            let take =
                best[i - 1][j - 1].map(|b| b + usize::from(orig[i - 1].text == clean[j - 1].text));
            best[i][j] = skip.max(take);
        }
    }
    let mut out = vec![0; m];
    let (mut i, mut j) = (n, m);
    while j > 0 {
        let take =
            best[i - 1][j - 1].map(|b| b + usize::from(orig[i - 1].text == clean[j - 1].text));
        if take.is_some() && take >= best[i - 1][j] {
            out[j - 1] = i - 1;
            j -= 1;
        }
        i -= 1;
    }
    Some(out)
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

    fn fed(p: &PaperInput, s: &Syntax) -> Vec<String> {
        s.tokens
            .iter()
            .zip(&p.spans)
            .filter(|(_, sp)| sp.is_some())
            .map(|(t, _)| t.text.clone())
            .collect()
    }

    #[test]
    fn paper_input_removes_comments_and_docstrings_as_the_study_did() {
        let src = "def f(x):\n    \"\"\"Doc string.\"\"\"\n    # c\n    return x + 1\n";
        let s = parse(src, Language::Python).unwrap();
        let p = paper_input(&s);
        assert_eq!(p.note, None);
        assert!(p.cleaned());
        assert_eq!(p.text, "def f ( x ) : return x + 1");
        assert_eq!(p.dropped(), 1);
        // Spans point into the paper text; the docstring has none.
        for (t, sp) in s.tokens.iter().zip(&p.spans) {
            match sp {
                Some((a, b)) => assert_eq!(&p.text[*a..*b], t.text),
                None => assert!(t.text.starts_with("\"\"\"")),
            }
        }
        // The retargeted docstring is empty and takes no subword.
        let toks = p.retarget(&s.tokens);
        let doc = s
            .tokens
            .iter()
            .position(|t| t.text.starts_with('"'))
            .unwrap();
        assert_eq!(toks[doc].start, toks[doc].end);
        let sw: Vec<_> = [(0, 3), (3, 5), (5, 7), (7, 9), (9, 11), (11, 13), (13, 20)]
            .iter()
            .map(|&(a, b)| SubwordSpan::new(a, b))
            .collect();
        let al = align(&sw, &toks);
        assert!(al.token_to_subwords[doc].is_empty());
        assert_eq!(al.token_to_subwords[doc + 1], [6]);
    }

    #[test]
    fn paper_gold_graphs_are_the_cleaned_snippets_on_the_original_indices() {
        let src = "def f(a):\n    '''Doc.'''\n    b = a  # copy\n    return b\n";
        let s = parse(src, Language::Python).unwrap();
        let p = paper_input(&s);
        let c = parse("def f(a):\n    b = a\n    return b", Language::Python).unwrap();
        let texts: Vec<&str> = c.tokens.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(fed(&p, &s), texts);
        let orig: Vec<usize> = (0..s.tokens.len())
            .filter(|&i| p.spans[i].is_some())
            .collect();
        assert_eq!(orig.len(), c.tokens.len());
        let all: Vec<usize> = (0..c.tokens.len()).collect();
        for g in Graph::ALL {
            let want: Vec<(usize, usize)> = c
                .graphs
                .edges_within(g, &all)
                .into_iter()
                .map(|(i, j)| (orig[i], orig[j]))
                .collect();
            assert_eq!(p.edges_within(g, &orig), want, "{g}");
            // A window keeps only the edges inside it.
            let window = &orig[..4];
            assert!(p
                .edges_within(g, window)
                .iter()
                .all(|(i, j)| window.contains(i) && window.contains(j)));
        }
        // The docstring has no edge at all in paper mode.
        let doc = s
            .tokens
            .iter()
            .position(|t| t.text.starts_with("'''"))
            .unwrap();
        let every: Vec<usize> = (0..s.tokens.len()).collect();
        assert!(p
            .edges_within(Graph::AstMotif, &every)
            .iter()
            .all(|&(i, j)| i != doc && j != doc));
        assert!(!s.graphs.edges_within(Graph::AstMotif, &every).is_empty());
    }

    #[test]
    fn remaining_triple_quoted_strings_are_dropped_like_the_study() {
        // Not a docstring (an assignment), so the cleaning keeps it; the study's
        // token filter drops it; `r\"\"\"` does not start with a quote and stays.
        let src = "def f():\n    x = \"\"\"a\"\"\"\n    y = r\"\"\"b\"\"\"\n    return x + y\n";
        let s = parse(src, Language::Python).unwrap();
        let p = paper_input(&s);
        assert!(p.cleaned());
        assert_eq!(p.text, "def f ( ) : x = y = r\"\"\"b\"\"\" return x + y");
        assert!(study_drops("#x") && study_drops("'''") && !study_drops("r'''x'''"));
    }

    #[test]
    fn text_the_study_cannot_clean_is_kept_with_a_note() {
        let src = "def f(x):\n    \"\"\"d\"\"\"\n    return (x,\n";
        let s = parse(src, Language::Python).unwrap();
        let p = paper_input(&s);
        assert!(!p.cleaned());
        let note = p.note.as_deref().unwrap();
        assert!(note.contains("comment removal fails"), "{note}");
        // Still the study's token filter, still every other token.
        assert_eq!(p.text, "def f ( x ) : return ( x ,");
        // No gold graph without the study's cleaning.
        let every: Vec<usize> = (0..s.tokens.len()).collect();
        assert!(p.edges_within(Graph::AstMotif, &every).is_empty());
    }

    #[test]
    fn java_comments_go_and_tokens_keep_their_order() {
        let src = "class A {\n  // one\n  int f(int x) { /* two */ return x; }\n}\n";
        let s = parse(src, Language::Java).unwrap();
        let p = paper_input(&s);
        assert!(p.cleaned());
        assert_eq!(p.text, "class A { int f ( int x ) { return x ; } }");
    }

    #[test]
    fn empty_source_gives_empty_text() {
        let s = parse("", Language::Python).unwrap();
        assert_eq!(paper_text(&s), PaperText::default());
    }
}
