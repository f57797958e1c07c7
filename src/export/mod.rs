//! Exports of a view as files: [`svg`] (a picture of the code with attention and the
//! heatmap) and [`json`] (the numbers on screen). Both are plain functions of a plain
//! [`View`], so the explorer's `x` key and a future `--svg` CLI option share them.

pub mod json;
pub mod svg;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// One code token as exported.
#[derive(Debug, Clone, Serialize)]
pub struct Token {
    /// Index into the snippet's code tokens.
    pub index: usize,
    pub text: String,
    /// Byte span in `View::source`.
    pub start: usize,
    pub end: usize,
    /// 0-based line and display column (tabs expanded to 4) of the first byte.
    pub line: usize,
    pub col: usize,
    /// `keyword`, `operator`, `delimiter`, `literal` or `identifier`.
    pub category: String,
    /// `definition:function`, `use:variable`, ... for identifiers.
    pub role: Option<String>,
    /// Attention from (or to) the selected token in the matrix shown; `None` when the
    /// token is not analysed (e.g. beyond a truncated window).
    pub weight: Option<f32>,
    /// Surprisal in bits (`-log2 p` of the token's subwords given the prefix), present
    /// when the surprisal view was shown; `null` for unscored tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub surprisal: Option<Option<f32>>,
}

/// One next-token prediction as exported.
#[derive(Debug, Clone, Serialize)]
pub struct Expected {
    /// The vocabulary string (`null` past the tokenizer's vocabulary).
    pub token: Option<String>,
    pub p: f32,
}

/// The surprisal view (causal models), when it was shown.
#[derive(Debug, Clone, Serialize)]
pub struct SurprisalView {
    /// Per-subword perplexity of the snippet and its mean bits (scored non-special
    /// subwords).
    pub perplexity: Option<f64>,
    pub mean_bits: Option<f64>,
    /// Top of the colour scale (the largest code-token surprisal) and where the top
    /// decile starts, in bits.
    pub max_bits: f32,
    pub top_decile_bits: Option<f32>,
    /// What the model expected where the selected token starts (top 5 at the previous
    /// position), best first.
    pub selected_expected: Vec<Expected>,
}

/// Precision / recall / F1 of the head shown against one gold graph.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct GraphScore {
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    pub gold_edges: usize,
}

/// The head grid as shown: one metric, `[layer][head]`.
#[derive(Debug, Clone, Serialize)]
pub struct HeadGrid {
    pub metric: String,
    pub values: Vec<Vec<Option<f64>>>,
}

/// Everything one export holds: what the explorer showed, as numbers.
#[derive(Debug, Clone, Serialize)]
pub struct View {
    /// Snippet name (file) and language.
    pub name: String,
    pub language: String,
    /// Model as the user named it, its resolved source and architecture.
    pub model: String,
    pub model_source: String,
    pub architecture: String,
    /// `source` or `paper`.
    pub mode: String,
    /// 1-based layer and head; `head: null` = mean over heads.
    pub layer: usize,
    pub layers: usize,
    pub head: Option<usize>,
    pub heads: usize,
    pub threshold: f32,
    /// `from` (row of the selected token) or `to` (its column).
    pub direction: String,
    /// The snippet text.
    pub source: String,
    pub tokens: Vec<Token>,
    /// Selected token (index into `tokens`).
    pub selected: Option<usize>,
    /// Token indices of the matrix rows and columns (the analysed tokens).
    pub matrix_tokens: Vec<usize>,
    /// Code-token attention `[query][key]` of the layer and head (or head mean) shown.
    pub matrix: Vec<Vec<f32>>,
    /// Gold edges (AST motif or data flow) as `[row, column]` matrix positions.
    pub gold_edges: Vec<(usize, usize)>,
    /// Whether the gold overlay was on.
    pub gold_overlay: bool,
    /// Scores of the head shown per gold graph at `threshold` (empty for the mean).
    pub scores: BTreeMap<String, GraphScore>,
    pub head_grid: HeadGrid,
    /// Category matrices: `coarse_head`, `coarse_layer`, `fine_head`, `fine_layer`, each
    /// `{"q->k": mean}`.
    pub categories: BTreeMap<String, serde_json::Map<String, serde_json::Value>>,
    /// The surprisal view, when shown (the code is then coloured by surprisal).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub surprisal: Option<SurprisalView>,
}

/// `codescope-YYYYMMDD-HHMMSS` (UTC) for the current time.
pub fn stem_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    stem_at(secs)
}

/// [`stem_now`] for a given Unix time.
pub fn stem_at(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "codescope-{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Write `<stem>.svg` and `<stem>.json` into `dir` (a `-N` suffix avoids overwriting).
pub fn write_files(view: &View, dir: &Path, stem: &str) -> std::io::Result<(PathBuf, PathBuf)> {
    let mut s = stem.to_string();
    let mut k = 1;
    while dir.join(format!("{s}.svg")).exists() || dir.join(format!("{s}.json")).exists() {
        s = format!("{stem}-{k}");
        k += 1;
    }
    let svg_path = dir.join(format!("{s}.svg"));
    let json_path = dir.join(format!("{s}.json"));
    write_named(&svg_path, svg::render(view).as_bytes())?;
    write_named(&json_path, json::render(view)?.as_bytes())?;
    Ok((svg_path, json_path))
}

/// `std::fs::write`, with the path in the error (the explorer shows it on one line).
fn write_named(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_errors_name_the_path() {
        let p = Path::new("/no/such/dir/codescope-x.svg");
        let e = write_named(p, b"x").unwrap_err().to_string();
        assert!(e.starts_with("/no/such/dir/codescope-x.svg: "), "{e}");
    }

    #[test]
    fn stems_are_utc_dates() {
        assert_eq!(stem_at(0), "codescope-19700101-000000");
        assert_eq!(stem_at(1_700_000_000), "codescope-20231114-221320");
        assert_eq!(stem_at(951_782_400), "codescope-20000229-000000");
    }
}
