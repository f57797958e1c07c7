//! The plain data the explorer draws: the document (text, tokens, where each token sits
//! on screen) and a prepared analysis (the [`SnippetAnalysis`] plus what the views derive
//! from it once: gold masks for re-thresholding, per-head entropy, token positions).
//!
//! Causal models add per-code-token surprisal ([`TokenSurprisal`]); source-mode analyses
//! keep the code tokens' hidden states at every layer ([`Prepared::features`], what a
//! trained probe labels).
//!
//! Memory: a prepared analysis keeps the code-token attention
//! (`layers * heads * n^2 * 4` bytes, n = analysed code tokens) and drops the subword
//! attention of the trace, which the views never read. MiniLM (6x12) on a full 512-subword
//! window is at most 6*12*512^2*4 B = 75 MB of code-token attention; CodeBERT (12x12)
//! twice that. The code-token hidden states are `(layers + 1) * n * hidden * 4` bytes:
//! MiniLM 7*512*384*4 B = 5.5 MB, CodeBERT 13*512*768*4 B = 20 MB, small next to the
//! attention. At most two analyses are alive at once (the one shown and the one the
//! worker is handing over).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::analysis::{self, GoldMask, HeadScores, Mode, SnippetAnalysis, GRAPHS};
use crate::model::{Prediction, Surprisal};
use crate::probe::dataset::SnippetHidden;
use crate::syntax::{self, Coarse, Language, Syntax};

/// Display columns a tab advances to (multiples of this).
pub const TAB: usize = 4;

/// A snippet as the explorer shows it: the text, its tokens and their screen positions.
#[derive(Debug, Clone)]
pub struct Doc {
    pub name: String,
    pub text: String,
    pub lang: Language,
    /// `None` when the parser refused the text (too large, timeout).
    pub syntax: Option<Syntax>,
    pub layout: Layout,
}

/// Where lines and tokens are, in display columns (tabs expanded to [`TAB`]).
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// Byte range of each line, without its line break.
    pub lines: Vec<(usize, usize)>,
    /// Per token: line of its first byte.
    pub tok_line: Vec<usize>,
    /// Per token: display column of its first byte.
    pub tok_col: Vec<usize>,
}

/// Display width of `s` starting at column `col` (tabs to the next stop).
pub fn advance(s: &str, mut col: usize) -> usize {
    for ch in s.chars() {
        match ch {
            '\t' => col = (col / TAB + 1) * TAB,
            '\r' => {}
            _ => col += 1,
        }
    }
    col
}

impl Layout {
    pub fn new(text: &str, syntax: Option<&Syntax>) -> Self {
        let mut lines = Vec::new();
        let mut start = 0;
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                lines.push((start, i));
                start = i + 1;
            }
        }
        if start < text.len() || lines.is_empty() {
            lines.push((start, text.len()));
        }
        let mut tok_line = Vec::new();
        let mut tok_col = Vec::new();
        if let Some(syn) = syntax {
            let mut li = 0;
            for t in &syn.tokens {
                while li + 1 < lines.len() && lines[li].1 < t.start {
                    li += 1;
                }
                tok_line.push(li);
                let ls = lines[li].0.min(t.start);
                tok_col.push(advance(&text[ls..t.start], 0));
            }
        }
        Layout {
            lines,
            tok_line,
            tok_col,
        }
    }

    /// Index of the first token on line `line` or later.
    pub fn first_token_from_line(&self, line: usize) -> usize {
        self.tok_line.partition_point(|&l| l < line)
    }
}

impl Doc {
    /// Parse `text` (fast, on the UI thread) and lay it out.
    pub fn new(name: impl Into<String>, text: impl Into<String>, lang: Language) -> Self {
        let text = text.into();
        let syntax = syntax::parse(&text, lang).ok();
        let layout = Layout::new(&text, syntax.as_ref());
        Doc {
            name: name.into(),
            text,
            lang,
            syntax,
            layout,
        }
    }

    /// Number of code tokens.
    pub fn n_tokens(&self) -> usize {
        self.syntax.as_ref().map_or(0, |s| s.tokens.len())
    }
}

/// An analysis with what the views derive from it, computed once off the UI thread.
pub struct Prepared {
    pub analysis: SnippetAnalysis,
    /// Gold graphs restricted to the analysed tokens (to re-score at another threshold).
    pub golds: Vec<(&'static str, GoldMask)>,
    /// `[layer][head]` mean row entropy (bits) of the code-token attention, each row
    /// normalised to the mass that stays on code tokens.
    pub entropy: Vec<Vec<f64>>,
    /// Syntax token index → analysed position (row/column of the matrices).
    pub pos: Vec<Option<usize>>,
    /// `n x n` mask over analysed positions: an AST motif or data-flow edge `i -> j`.
    pub gold_any: Vec<bool>,
    /// Wall time of parse + forward + analyses.
    pub elapsed: Duration,
    /// Per-code-token surprisal (causal models).
    pub surprisal: Option<TokenSurprisal>,
    /// Code-token hidden states at every layer (source mode only: the probes are
    /// trained on source-mode features).
    pub features: Option<SnippetHidden>,
}

/// Surprisal aggregated from subwords to code tokens.
///
/// A code token's surprisal is `-log2 p(all its subwords | the subwords before them)`,
/// the SUM of its subwords' bits (the chain rule). A subword that overlaps two code
/// tokens (a merged `):`, say) counts for both, so summing code tokens would count it
/// twice: the snippet's perplexity is therefore taken over subwords (scored,
/// non-special), as the model sees it. A token is unscored (`None`) when one of its
/// subwords is (the first subword of an input without BOS) or it has none (beyond a
/// truncated window).
#[derive(Debug, Clone)]
pub struct TokenSurprisal {
    /// Per syntax token: bits.
    pub bits: Vec<Option<f32>>,
    /// Per syntax token: its subwords (trace positions, in order).
    pub subwords: Vec<Vec<usize>>,
    /// Per syntax token: one of its subwords also covers another code token.
    pub shared: Vec<bool>,
    /// Per-subword perplexity `2^mean_bits` and mean bits (scored non-special subwords).
    pub perplexity: Option<f64>,
    pub mean_bits: Option<f64>,
    /// Top of the colour scale: the largest code-token surprisal.
    pub max_bits: f32,
    /// The top decile starts here (the 90th percentile of the scored code tokens).
    pub top_decile: f32,
    /// The subword-level scores (for the predictions).
    pub lm: Surprisal,
    /// Subword texts as the model saw them.
    pub subword_text: Vec<String>,
}

impl TokenSurprisal {
    /// From a trace's surprisal and the subword → code-token alignment (`tokens` are the
    /// syntax tokens, in the order of `token_to_subwords`).
    pub fn new(a: &SnippetAnalysis) -> Option<Self> {
        let s = a.trace.surprisal.as_ref()?;
        let al = &a.alignment;
        let n = al.token_to_subwords.len();
        let mut bits = vec![None; n];
        let mut shared = vec![false; n];
        for t in 0..n {
            let subs = &al.token_to_subwords[t];
            if subs.is_empty() {
                continue;
            }
            bits[t] = subs
                .iter()
                .map(|&k| s.bits.get(k).copied().flatten())
                .sum::<Option<f32>>();
            shared[t] = subs
                .iter()
                .any(|&k| al.subword_to_tokens.get(k).is_some_and(|v| v.len() > 1));
        }
        let mut scored: Vec<f32> = bits.iter().flatten().copied().collect();
        scored.sort_by(f32::total_cmp);
        let max_bits = scored.last().copied().unwrap_or(0.0);
        let top_decile = if scored.is_empty() {
            f32::INFINITY
        } else {
            scored[((scored.len() as f64 * 0.9).ceil() as usize).clamp(1, scored.len()) - 1]
        };
        Some(TokenSurprisal {
            bits,
            subwords: al.token_to_subwords.clone(),
            shared,
            perplexity: s.perplexity(&a.trace.tokens),
            mean_bits: s.mean_bits(&a.trace.tokens),
            max_bits,
            top_decile,
            lm: s.clone(),
            subword_text: a.trace.tokens.iter().map(|t| t.text.clone()).collect(),
        })
    }

    /// What the model expected where syntax token `t` starts: the top predictions at
    /// the position before its first subword (`None` for the first position or an
    /// uncovered token).
    pub fn expected(&self, t: usize) -> Option<&[Prediction]> {
        let first = *self.subwords.get(t)?.first()?;
        let prev = first.checked_sub(1)?;
        self.lm.top_next.get(prev).map(|v| v.as_slice())
    }

    /// The first subword of syntax token `t`: its text and probability.
    pub fn first_subword(&self, t: usize) -> Option<(&str, Option<f32>)> {
        let first = *self.subwords.get(t)?.first()?;
        let p = self
            .lm
            .bits
            .get(first)
            .copied()
            .flatten()
            .map(|b| (-b).exp2());
        Some((self.subword_text.get(first)?.as_str(), p))
    }
}

impl Prepared {
    /// Derive the view data. Drops the subword attention and hidden states (see the
    /// module note).
    pub fn new(mut analysis: SnippetAnalysis, elapsed: Duration) -> Self {
        let surprisal = TokenSurprisal::new(&analysis);
        let features = (analysis.mode == Mode::Source && analysis.trace.hidden.is_some())
            .then(|| {
                crate::probe::dataset::token_hidden(&analysis.trace, &analysis.tokens)
                    .map_err(|e| tracing::warn!(error = %e, "no token features"))
                    .ok()
            })
            .flatten();
        analysis.trace.attention.layers = Vec::new();
        analysis.trace.hidden = None;
        let ta = &analysis.token_attention;
        let n_all = analysis.tokens.len();
        let golds: Vec<(&'static str, GoldMask)> = GRAPHS
            .iter()
            .map(|&g| {
                (
                    g,
                    GoldMask::new(
                        analysis::graph_edges(&analysis.syntax, g, &ta.tokens),
                        &ta.tokens,
                        n_all,
                    ),
                )
            })
            .collect();
        let n = ta.n();
        let mut gold_any = vec![false; n * n];
        for (g, m) in &golds {
            if *g == "ast_motif" || *g == "dfg" {
                for (o, &b) in gold_any.iter_mut().zip(&m.mask) {
                    *o |= b;
                }
            }
        }
        let entropy = (0..ta.layers)
            .map(|l| {
                (0..ta.heads)
                    .map(|h| mean_entropy(ta.head(l, h), n))
                    .collect()
            })
            .collect();
        let mut pos = vec![None; n_all];
        for (k, &t) in ta.tokens.iter().enumerate() {
            if t < n_all {
                pos[t] = Some(k);
            }
        }
        Prepared {
            analysis,
            golds,
            entropy,
            pos,
            gold_any,
            elapsed,
            surprisal,
            features,
        }
    }

    /// Head scores of every gold graph at threshold `t` (no forward pass).
    pub fn scores_at(&self, t: f32) -> BTreeMap<&'static str, HeadScores> {
        self.golds
            .iter()
            .map(|(g, m)| {
                (
                    *g,
                    HeadScores::compute(&self.analysis.token_attention, m, t),
                )
            })
            .collect()
    }

    pub fn layers(&self) -> usize {
        self.analysis.token_attention.layers
    }
    pub fn heads(&self) -> usize {
        self.analysis.token_attention.heads
    }
    /// Number of analysed tokens (matrix size).
    pub fn n(&self) -> usize {
        self.analysis.token_attention.n()
    }
    /// Whether the analysed position `k` is an identifier.
    pub fn is_ident(&self, k: usize) -> bool {
        let t = self.analysis.token_attention.tokens[k];
        self.analysis.tokens[t].coarse == Coarse::Identifier
    }
}

/// Mean over rows of the Shannon entropy (bits) of each row normalised to sum 1.
pub fn mean_entropy(a: &[f32], n: usize) -> f64 {
    let mut total = 0.0f64;
    let mut rows = 0usize;
    for i in 0..n {
        let row = &a[i * n..(i + 1) * n];
        let s: f64 = row.iter().map(|&x| x as f64).sum();
        if s <= 0.0 {
            continue;
        }
        let mut h = 0.0f64;
        for &x in row {
            if x > 0.0 {
                let p = x as f64 / s;
                h -= p * p.log2();
            }
        }
        total += h;
        rows += 1;
    }
    if rows == 0 {
        0.0
    } else {
        total / rows as f64
    }
}

/// The per-head scores the head grid can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    F1Motif,
    F1Dfg,
    SynToId,
    IdToSyn,
    Entropy,
}

impl Metric {
    pub const ALL: [Metric; 5] = [
        Metric::F1Motif,
        Metric::F1Dfg,
        Metric::SynToId,
        Metric::IdToSyn,
        Metric::Entropy,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Metric::F1Motif => "F1 vs AST motif",
            Metric::F1Dfg => "F1 vs data flow",
            Metric::SynToId => "syn→id share",
            Metric::IdToSyn => "id→syn share",
            Metric::Entropy => "entropy (bits)",
        }
    }

    /// Short key for exports.
    pub fn key(self) -> &'static str {
        match self {
            Metric::F1Motif => "f1_ast_motif",
            Metric::F1Dfg => "f1_dfg",
            Metric::SynToId => "share_syn_to_id",
            Metric::IdToSyn => "share_id_to_syn",
            Metric::Entropy => "entropy_bits",
        }
    }

    pub fn next(self) -> Metric {
        let i = Metric::ALL.iter().position(|&m| m == self).unwrap_or(0);
        Metric::ALL[(i + 1) % Metric::ALL.len()]
    }

    /// `[layer][head]` values (`None` where undefined, e.g. no identifiers).
    pub fn values(
        self,
        p: &Prepared,
        scores: &BTreeMap<&'static str, HeadScores>,
    ) -> Vec<Vec<Option<f64>>> {
        let a = &p.analysis;
        let f1 = |g: &str| -> Vec<Vec<Option<f64>>> {
            match scores.get(g) {
                Some(s) => s
                    .scores
                    .iter()
                    .map(|r| r.iter().map(|x| Some(x.f1)).collect())
                    .collect(),
                None => vec![vec![None; p.heads()]; p.layers()],
            }
        };
        match self {
            Metric::F1Motif => f1("ast_motif"),
            Metric::F1Dfg => f1("dfg"),
            Metric::SynToId => a
                .coarse
                .iter()
                .map(|r| r.iter().map(|m| m.share_at(0, 1)).collect())
                .collect(),
            Metric::IdToSyn => a
                .coarse
                .iter()
                .map(|r| r.iter().map(|m| m.share_at(1, 0)).collect())
                .collect(),
            Metric::Entropy => p
                .entropy
                .iter()
                .map(|r| r.iter().map(|&e| Some(e)).collect())
                .collect(),
        }
    }

    /// Upper end of the colour scale for `values`.
    pub fn scale_max(self, values: &[Vec<Option<f64>>]) -> f64 {
        match self {
            Metric::Entropy => values
                .iter()
                .flatten()
                .flatten()
                .fold(0.0f64, |a, &b| a.max(b))
                .max(1e-9),
            _ => 1.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_lines_and_columns() {
        let text = "def f(a):\n\treturn a\n";
        let d = Doc::new("t.py", text, Language::Python);
        assert_eq!(d.layout.lines, vec![(0, 9), (10, 19)]);
        let syn = d.syntax.as_ref().unwrap();
        let ret = syn.tokens.iter().position(|t| t.text == "return").unwrap();
        assert_eq!(d.layout.tok_line[ret], 1);
        assert_eq!(d.layout.tok_col[ret], TAB);
        assert_eq!(d.layout.tok_col[0], 0);
        assert_eq!(d.layout.first_token_from_line(1), ret);
    }

    #[test]
    fn entropy_of_uniform_rows() {
        let a = vec![0.25f32; 16];
        assert!((mean_entropy(&a, 4) - 2.0).abs() < 1e-9);
        let one_hot = [1.0f32, 0.0, 0.0, 1.0];
        assert!(mean_entropy(&one_hot, 2).abs() < 1e-9);
    }
}
