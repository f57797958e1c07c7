//! Presenting findings, as plain data below the explorer: what a view shows as a
//! serializable [`Scene`] (layer, head, selected token, threshold, view, ...), the
//! [`tour`] file format (`--tour talk.toml`: scenes with snippets, models and captions to
//! step through; `B` appends to it) and the [`session`] file (the explorer's state saved
//! on quit and signals, `--resume`). Nothing here knows the command line or the terminal.
//!
//! A scene is applied by `App::apply_scene` (`tui::app::presenting`), the same code for a
//! tour step in the live explorer and for `codescope render` on the headless one (the
//! front ends that present — `render`, decks, the explorer's start — are in `commands`).

pub mod session;
pub mod tour;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::export::figure::Kind;

/// A head: its 1-based number or `"mean"` (mean over heads).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum HeadSpec {
    Number(usize),
    Name(String),
}

impl HeadSpec {
    /// `Some(h)` (0-based) for a head, `None` for the mean; an error for anything else.
    pub fn resolve(&self) -> Result<Option<usize>, String> {
        match self {
            HeadSpec::Number(0) => Err("heads are numbered from 1".into()),
            HeadSpec::Number(h) => Ok(Some(h - 1)),
            HeadSpec::Name(s) if s == "mean" => Ok(None),
            HeadSpec::Name(s) => match s.parse::<usize>() {
                Ok(h) => HeadSpec::Number(h).resolve(),
                Err(_) => Err(format!("head `{s}`: a number from 1, or `mean`")),
            },
        }
    }

    /// From a command-line string.
    pub fn parse(s: &str) -> HeadSpec {
        match s.trim().parse::<usize>() {
            Ok(h) => HeadSpec::Number(h),
            Err(_) => HeadSpec::Name(s.trim().to_string()),
        }
    }
}

/// A token: its index among the snippet's code tokens (0-based) or its text (`TEXT`
/// is the first such token, `TEXT#K` the K-th).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TokenSpec {
    Index(usize),
    Text(String),
}

impl TokenSpec {
    /// From a command-line string: a number is an index.
    pub fn parse(s: &str) -> TokenSpec {
        match s.trim().parse::<usize>() {
            Ok(i) => TokenSpec::Index(i),
            Err(_) => TokenSpec::Text(s.to_string()),
        }
    }

    /// The token index among `texts`, or why there is none.
    pub fn resolve<'a>(&self, texts: impl Iterator<Item = &'a str>) -> Result<usize, String> {
        let texts: Vec<&str> = texts.collect();
        match self {
            TokenSpec::Index(i) if *i < texts.len() => Ok(*i),
            TokenSpec::Index(i) => Err(format!(
                "token {i}: the snippet has tokens 0-{}",
                texts.len().saturating_sub(1)
            )),
            TokenSpec::Text(s) => {
                // `TEXT#K`, unless the whole string is a token (e.g. `#`).
                let (text, k) = match s.rsplit_once('#') {
                    Some((t, k)) if !t.is_empty() && !texts.contains(&s.as_str()) => {
                        match k.parse::<usize>() {
                            Ok(k) if k >= 1 => (t, k),
                            _ => (s.as_str(), 1),
                        }
                    }
                    _ => (s.as_str(), 1),
                };
                let hits: Vec<usize> = texts
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| **t == text)
                    .map(|(i, _)| i)
                    .collect();
                hits.get(k - 1).copied().ok_or_else(|| match hits.len() {
                    0 => format!("no token `{text}` in the snippet"),
                    n => format!("token `{text}` occurs {n} times, not {k}"),
                })
            }
        }
    }
}

/// What a view shows, every part optional (absent = leave as it is).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scene {
    /// The view: heatmap, heads, categories, probes, surprisal, knockout, ablation,
    /// lens, overview, finding (or screen).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view: Option<Kind>,
    /// 1-based layer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<usize>,
    /// 1-based head or `"mean"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<HeadSpec>,
    /// The selected token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<TokenSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f32>,
    /// `source` or `paper` input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// `from` or `to` the selected token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<String>,
    /// Gold edges on the heatmap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gold: Option<bool>,
    /// The selected token's data-flow links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataflow: Option<bool>,
    /// Head grid metric key (`f1_ast_motif`, `f1_dfg`, `f1_dfg_refined`,
    /// `share_syn_to_id`, `share_id_to_syn`, `entropy_bits`, `ablation_identifier`,
    /// `ablation_syntactic`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    /// A pinned head `"LAYER:HEAD"` (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<String>,
    /// Probe task of the probes view.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// The knockout mode on with this edge set (`syn-id`, `id-syn`, `syn-syn`, `id-id`,
    /// `ast_motif`, `dfg`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knockout: Option<String>,
}

/// An input mode by name (`source`, `paper`).
pub fn parse_mode(s: &str) -> Result<crate::analysis::Mode, String> {
    use crate::analysis::Mode;
    [Mode::Source, Mode::Paper]
        .into_iter()
        .find(|m| m.name() == s)
        .ok_or_else(|| format!("input mode `{s}`: source or paper"))
}

/// `"L:H"` (1-based) as 0-based (layer, head).
pub fn parse_pin(s: &str) -> Result<(usize, usize), String> {
    let bad = || format!("pin `{s}`: LAYER:HEAD, both from 1");
    let (l, h) = s.split_once(':').ok_or_else(bad)?;
    let l: usize = l.trim().parse().map_err(|_| bad())?;
    let h: usize = h.trim().parse().map_err(|_| bad())?;
    if l == 0 || h == 0 {
        return Err(bad());
    }
    Ok((l - 1, h - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_tokens_and_pins() {
        assert_eq!(HeadSpec::parse("3").resolve(), Ok(Some(2)));
        assert_eq!(HeadSpec::parse("mean").resolve(), Ok(None));
        assert!(HeadSpec::parse("0").resolve().is_err());
        assert!(HeadSpec::parse("all").resolve().is_err());
        let toks = ["def", "f", "(", "x", ")", ":", "x", "#"];
        let r = |s: &str| TokenSpec::parse(s).resolve(toks.iter().copied());
        assert_eq!(r("3"), Ok(3));
        assert_eq!(r("x"), Ok(3));
        assert_eq!(r("x#2"), Ok(6));
        assert_eq!(r("#"), Ok(7));
        assert!(r("x#3").unwrap_err().contains("occurs 2 times"));
        assert!(r("y").unwrap_err().contains("no token `y`"));
        assert!(r("9").is_err());
        assert_eq!(parse_pin("2:11"), Ok((1, 10)));
        assert!(parse_pin("0:1").is_err() && parse_pin("2").is_err());
    }

    #[test]
    fn scenes_read_from_toml() {
        let s: Scene = toml::from_str(
            "view = \"heads\"\nlayer = 2\nhead = \"mean\"\ntoken = \"total\"\nthreshold = 0.1\ngold = true",
        )
        .unwrap();
        assert_eq!(s.view, Some(Kind::Heads));
        assert_eq!(s.head, Some(HeadSpec::Name("mean".into())));
        assert_eq!(s.token, Some(TokenSpec::Text("total".into())));
        let s: Scene = toml::from_str("head = 4\ntoken = 12").unwrap();
        assert_eq!(s.head, Some(HeadSpec::Number(4)));
        assert_eq!(s.token, Some(TokenSpec::Index(12)));
        assert!(toml::from_str::<Scene>("colour = 1").is_err());
    }
}
