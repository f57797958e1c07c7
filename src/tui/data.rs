//! The plain data the explorer draws: the document (text, tokens once parsed, where each
//! token sits on screen) and the head-grid metrics read off an analysis. The analysis
//! itself ([`crate::analysis::SnippetAnalysis`]) comes from the one pipeline, computed by
//! the worker; nothing analytical is computed here.
//!
//! Memory: an analysis keeps the code-token attention (`layers * heads * n^2 * 4` bytes,
//! n = analysed code tokens) and drops the subword attention of the trace. MiniLM (6x12)
//! on a full 512-subword window is at most 6*12*512^2*4 B = 75 MB of code-token
//! attention; CodeBERT (12x12) twice that. The code-token hidden states are
//! `(layers + 1) * n * hidden * 4` bytes: MiniLM 7*512*384*4 B = 5.5 MB, CodeBERT
//! 13*512*768*4 B = 20 MB, small next to the attention. At most two analyses are alive
//! at once (the one shown and the one the worker is handing over).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::analysis::{Graph, HeadScores, SnippetAnalysis};
use crate::syntax::{Language, Syntax};

/// Display columns a tab advances to (multiples of this).
pub const TAB: usize = 4;

/// A snippet as the explorer shows it: the text, its tokens and their screen positions.
#[derive(Debug, Clone)]
pub struct Doc {
    pub name: String,
    pub text: String,
    pub lang: Language,
    /// The parsed snippet (`None` until the parse arrives, or when it was refused).
    pub syntax: Option<Arc<Syntax>>,
    /// Why the parser refused the text (too large, timeout).
    pub parse_error: Option<String>,
    pub layout: Layout,
    /// Changed in the editor since it was opened (quitting asks once).
    pub edited: bool,
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

/// `A-B` (or one line `A`) as typed at the `r` prompt or given as `--lines`.
pub fn parse_lines(s: &str) -> Result<(usize, usize), String> {
    let (a, b) = s.split_once('-').unwrap_or((s, s));
    let n = |x: &str| {
        x.trim().parse::<usize>().map_err(|_| {
            format!(
                "`{}` is not a range of lines like 5-20",
                crate::error::printable(s, false)
            )
        })
    };
    let (a, b) = (n(a)?, n(b)?);
    if b < a {
        return Err(format!("lines {a}-{b}: the end comes before the start"));
    }
    Ok((a, b))
}

/// Lines `a` to `b` (1-based, inclusive) of `text` as a snippet of their own: `b` is
/// clipped to the last line, and the common indentation of the non-blank lines is taken
/// off (a method cut out of a class parses as a method). Returns the text and the lines
/// it covers; an error names what is wrong with the range.
pub fn region(text: &str, (a, b): (usize, usize)) -> Result<(String, (usize, usize)), String> {
    let lines: Vec<&str> = text.lines().collect();
    let n = lines.len();
    if a == 0 || b < a {
        return Err(format!("lines {a}-{b}: a range like 5-20, counting from 1"));
    }
    if a > n {
        return Err(format!("lines {a}-{b}: the snippet has {n} lines"));
    }
    let b = b.min(n);
    let part = &lines[a - 1..b];
    let indent = |l: &str| l.len() - l.trim_start_matches([' ', '\t']).len();
    let common = part
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| &l[..indent(l)])
        .reduce(|x, y| {
            let k = x.bytes().zip(y.bytes()).take_while(|(p, q)| p == q).count();
            &x[..k]
        })
        .unwrap_or("");
    let mut out = String::new();
    for l in part {
        out.push_str(
            l.strip_prefix(common)
                .unwrap_or(l.trim_start_matches([' ', '\t'])),
        );
        out.push('\n');
    }
    if out.trim().is_empty() {
        return Err(format!("lines {a}-{b} are blank"));
    }
    Ok((out, (a, b)))
}

impl Doc {
    /// A document not parsed yet (the explorer asks for the parse off the UI thread).
    pub fn new(name: impl Into<String>, text: impl Into<String>, lang: Language) -> Self {
        let text = text.into();
        let layout = Layout::new(&text, None);
        Doc {
            name: name.into(),
            text,
            lang,
            syntax: None,
            parse_error: None,
            layout,
            edited: false,
        }
    }

    /// A document with its parse (tests and tools that parse on the spot).
    pub fn parsed(name: impl Into<String>, text: impl Into<String>, lang: Language) -> Self {
        let mut d = Doc::new(name, text, lang);
        match crate::analysis::parse(&d.text, lang) {
            Ok(syn) => d.set_syntax(Arc::new(syn)),
            Err(e) => d.parse_error = Some(e.to_string()),
        }
        d
    }

    /// Attach the parse of `text` and lay the tokens out.
    pub fn set_syntax(&mut self, syn: Arc<Syntax>) {
        self.layout = Layout::new(&self.text, Some(&syn));
        self.syntax = Some(syn);
        self.parse_error = None;
    }

    /// Number of code tokens.
    pub fn n_tokens(&self) -> usize {
        self.syntax.as_ref().map_or(0, |s| s.tokens.len())
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
    /// F1 against codescope's refined data flow (`dfg_refined`), beside the study's.
    F1DfgRefined,
    /// The head ablation's effect on identifiers: their mean surprisal change in bits
    /// when the head is zeroed (1 − cos of the last hidden state for an encoder). Not
    /// read off the analysis: the worker computes it head by head
    /// (`App::grid_values`).
    AblationId,
    /// The same on syntactic tokens.
    AblationSyn,
}

impl Metric {
    /// Cycle order of `s`; digit keys pick by position (`1`..`8`).
    pub const ALL: [Metric; 8] = [
        Metric::F1Motif,
        Metric::F1Dfg,
        Metric::SynToId,
        Metric::IdToSyn,
        Metric::Entropy,
        Metric::F1DfgRefined,
        Metric::AblationId,
        Metric::AblationSyn,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Metric::F1Motif => "F1 vs AST motif",
            Metric::F1Dfg => "F1 vs data flow",
            Metric::F1DfgRefined => "F1 vs refined data flow",
            Metric::SynToId => "syn→id share",
            Metric::IdToSyn => "id→syn share",
            Metric::Entropy => "entropy (bits)",
            Metric::AblationId => "ablation effect on identifiers",
            Metric::AblationSyn => "ablation effect on syntactic tokens",
        }
    }

    /// Short key for exports.
    pub fn key(self) -> &'static str {
        match self {
            Metric::F1Motif => "f1_ast_motif",
            Metric::F1Dfg => "f1_dfg",
            Metric::F1DfgRefined => "f1_dfg_refined",
            Metric::SynToId => "share_syn_to_id",
            Metric::IdToSyn => "share_id_to_syn",
            Metric::Entropy => "entropy_bits",
            Metric::AblationId => "ablation_identifier",
            Metric::AblationSyn => "ablation_syntactic",
        }
    }

    /// The head ablation's effect (computed by the worker, not read off the analysis).
    pub fn is_ablation(self) -> bool {
        matches!(self, Metric::AblationId | Metric::AblationSyn)
    }

    pub fn next(self) -> Metric {
        let i = Metric::ALL.iter().position(|&m| m == self).unwrap_or(0);
        Metric::ALL[(i + 1) % Metric::ALL.len()]
    }

    /// The gold graph of an F1 metric.
    pub fn graph(self) -> Option<Graph> {
        match self {
            Metric::F1Motif => Some(Graph::AstMotif),
            Metric::F1Dfg => Some(Graph::Dfg),
            Metric::F1DfgRefined => Some(Graph::DfgRefined),
            _ => None,
        }
    }

    /// `[layer][head]` values (`None` where undefined, e.g. no identifiers).
    pub fn values(
        self,
        p: &SnippetAnalysis,
        scores: &BTreeMap<Graph, HeadScores>,
    ) -> Vec<Vec<Option<f64>>> {
        let a = p;
        let f1 = |g: Graph| -> Vec<Vec<Option<f64>>> {
            match scores.get(&g) {
                Some(s) => s
                    .scores
                    .iter()
                    .map(|r| r.iter().map(|x| Some(x.f1)).collect())
                    .collect(),
                None => vec![vec![None; p.heads()]; p.layers()],
            }
        };
        match self {
            Metric::F1Motif => f1(Graph::AstMotif),
            Metric::F1Dfg => f1(Graph::Dfg),
            Metric::F1DfgRefined => f1(Graph::DfgRefined),
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
            Metric::AblationId | Metric::AblationSyn => vec![vec![None; p.heads()]; p.layers()],
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
    fn a_region_is_its_lines_with_their_common_indent_taken_off() {
        let text = "class A {\n    int f(int x) {\n        return x;\n\n    }\n}\n";
        let (part, lines) = region(text, (2, 5)).unwrap();
        assert_eq!(part, "int f(int x) {\n    return x;\n\n}\n");
        assert_eq!(lines, (2, 5));
        // The end is clipped to the last line; one line is a range too.
        assert_eq!(region(text, (6, 99)).unwrap(), ("}\n".to_string(), (6, 6)));
        assert_eq!(parse_lines("3").unwrap(), (3, 3));
        assert_eq!(parse_lines(" 2 - 7 ").unwrap(), (2, 7));
        assert!(parse_lines("7-2").unwrap_err().contains("before the start"));
        assert!(parse_lines("a-b").unwrap_err().contains("range of lines"));
        assert!(region(text, (0, 2))
            .unwrap_err()
            .contains("counting from 1"));
        assert!(region(text, (9, 12)).unwrap_err().contains("has 6 lines"));
        assert!(region(text, (4, 4)).unwrap_err().contains("blank"));
        // Tabs and spaces mixed: only the shared prefix goes.
        let (p, _) = region("\tdef f():\n\t    return 1\n", (1, 2)).unwrap();
        assert_eq!(p, "def f():\n    return 1\n");
    }

    #[test]
    fn layout_lines_and_columns() {
        let text = "def f(a):\n\treturn a\n";
        let d = Doc::parsed("t.py", text, Language::Python);
        assert_eq!(d.layout.lines, vec![(0, 9), (10, 19)]);
        let syn = d.syntax.as_ref().unwrap();
        let ret = syn.tokens.iter().position(|t| t.text == "return").unwrap();
        assert_eq!(d.layout.tok_line[ret], 1);
        assert_eq!(d.layout.tok_col[ret], TAB);
        assert_eq!(d.layout.tok_col[0], 0);
        assert_eq!(d.layout.first_token_from_line(1), ret);
    }
}
