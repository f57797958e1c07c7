//! Exports of a view as files: [`figure`] (slide-grade SVG figures of every view, and
//! of the whole explorer screen), [`png`] (those figures as PNG, rendered in-process
//! with the bundled fonts) and [`json`] (the numbers on screen).
//!
//! Figures are plain functions of a plain [`FigureData`] (what the explorer showed, as
//! numbers) and of the figure options, so the explorer's `x` menu, `codescope render`
//! and the tour deck draw byte-identical files for the same state: both build the
//! `FigureData` from an explorer state (`tui::figure_data`), the renderer from a headless one.
//! Exports go to an export directory ([`export_dir`]) outside the working directory.

pub mod figure;
pub mod json;
pub mod png;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// One code token as exported.
#[derive(Debug, Clone, Serialize)]
pub struct Token {
    /// Index into the snippet's code tokens.
    pub index: usize,
    pub text: String,
    /// Byte span in `FigureData::source`.
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
    /// The knockout's change of this token (Δ bits, or 1 − cos for an encoder), present
    /// when the knockout mode was on; `null` for a token without a measure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub knockout: Option<Option<f64>>,
    /// Its change with the patch view's selected hidden state patched from the twin (Δ
    /// bits), present when the patch view was on; `null` for a renamed token or one not
    /// measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<Option<f64>>,
}

/// The knockout mode (`K`), when it was on: the edge set and the per-class summary.
#[derive(Debug, Clone, Serialize)]
pub struct KnockoutData {
    pub edges: String,
    /// `bits` or `one_minus_cos`.
    pub measure: String,
    pub token_pairs: usize,
    pub subword_pairs: usize,
    pub control_draws: usize,
    pub summary: Vec<KnockoutClass>,
}

/// One token class of a knockout.
#[derive(Debug, Clone, Serialize)]
pub struct KnockoutClass {
    pub class: String,
    pub tokens: usize,
    pub mean: Option<f64>,
    /// The control's mean and 95% interval `[mean, lo, hi]`.
    pub control: Option<[f64; 3]>,
}

/// The head ablation (the head grid's scores 7 and 8), when it was asked for: each
/// head's effect when zeroed, `[layer][head]` (`None`: not done, or no token of the
/// class), with the head grid's F1 against the AST motif beside it.
#[derive(Debug, Clone, Serialize)]
pub struct AblationData {
    /// `bits` or `one_minus_cos`.
    pub measure: String,
    /// `zero`.
    pub ablation: String,
    pub heads_done: usize,
    pub heads_total: usize,
    pub identifier: Vec<Vec<Option<f64>>>,
    pub syntactic: Vec<Vec<Option<f64>>>,
    pub f1_ast_motif: Vec<Vec<Option<f64>>>,
}

/// The logit lens, when its view was open: per code token with a prediction, per layer
/// (0 = the embeddings) the top-1 guess and the actual first subword's probability and
/// rank.
#[derive(Debug, Clone, Serialize)]
pub struct LensData {
    /// Layers read (the embeddings, then every layer's output).
    pub layers: usize,
    /// The selected layer (0 = the embeddings).
    pub layer: usize,
    /// Index into `tokens` of the selected token.
    pub selected: Option<usize>,
    pub tokens: Vec<LensToken>,
}

/// One code token of the logit lens.
#[derive(Debug, Clone, Serialize)]
pub struct LensToken {
    pub text: String,
    pub category: String,
    pub identifier: bool,
    /// Its first subword (the one predicted).
    pub actual: String,
    /// The first layer at which it is the top guess.
    pub decided_at: Option<usize>,
    /// Per layer `{top, p, rank}` (`None` where there is no prediction).
    pub layers: Vec<Option<LensCell>>,
}

/// One layer's read-out for a token.
#[derive(Debug, Clone, Serialize)]
pub struct LensCell {
    pub top: String,
    pub p: f32,
    pub rank: u32,
}

/// The patch view (`A`), when it was on: the twin, the selected hidden state and, per
/// hidden state, `patch --json`'s `per_layer` entry.
#[derive(Debug, Clone, Serialize)]
pub struct PatchData {
    /// `rename:neutral`, `rename:shuffle` or `twin:FILE`.
    pub twin: String,
    /// The seed of a `rename:shuffle` twin.
    pub seed: Option<u64>,
    /// Hidden states patched (the embeddings, then every layer's output).
    pub layers: usize,
    /// The selected hidden state (0 = the embeddings): the one the code is coloured by.
    pub layer: usize,
    /// The rename effect on the unchanged tokens (bits, B − A, summed).
    pub rename_bits: f64,
    pub unchanged_tokens: usize,
    /// The renamed tokens (indices into `tokens`), whose subwords are patched.
    pub patched_tokens: Vec<usize>,
    /// As `patch --json`'s `per_layer`.
    pub per_layer: Vec<serde_json::Value>,
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
pub struct SurprisalData {
    /// Per-subword perplexity of the snippet and its mean bits (scored non-special
    /// subwords).
    pub perplexity: Option<f64>,
    pub mean_bits: Option<f64>,
    /// Top of the colour scale (the largest code-token surprisal) and where the top
    /// decile starts, in bits.
    pub max_bits: f32,
    pub top_decile_bits: Option<f32>,
    /// Top of the colour scale (the 95th percentile of the code tokens' bits; tokens
    /// above it take the top colour).
    #[serde(default)]
    pub scale_bits: f32,
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
    /// Key (`f1_ast_motif`, ...) and display name (`F1 vs AST motif`) of the metric.
    pub metric: String,
    pub name: String,
    pub values: Vec<Vec<Option<f64>>>,
    /// Compare mode: the values are the twin's minus the original's (B − A), drawn on a
    /// diverging scale with signed numbers.
    #[serde(default)]
    pub signed: bool,
}

/// Compare mode, as the export shows it: the twin and what the heatmap holds.
#[derive(Debug, Clone, Serialize)]
pub struct CompareInfo {
    /// The twin (`rename:neutral`, `rename:shuffle`, `twin:FILE`).
    pub twin: String,
    /// What `matrix` holds: `A` (the original), `B` (the twin on A's aligned tokens) or
    /// `B−A` (their difference, signed).
    pub heatmap: String,
}

/// Everything one export holds: what the explorer showed, as numbers.
#[derive(Debug, Clone, Serialize)]
pub struct FigureData {
    /// A title the figures take instead of the file and model (a tour step's caption).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
    /// Snippet name (file) and language.
    pub name: String,
    pub language: String,
    /// Model as the user named it, its resolved source and architecture (an
    /// encoder–decoder's with its stack: `t5, decoder stack`).
    pub model: String,
    pub model_source: String,
    pub architecture: String,
    /// The seed of a random-weight baseline (`--random-weights`, the explorer's `R`);
    /// `null`: the trained weights.
    pub random_weights: Option<u64>,
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
    pub surprisal: Option<SurprisalData>,
    /// The knockout mode, when on (the code is then coloured by each token's change).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub knockout: Option<KnockoutData>,
    /// The head ablation, when asked for (the head grid's scores 7 and 8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ablation: Option<AblationData>,
    /// The logit lens, when its view was open.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lens: Option<LensData>,
    /// The patch view, when it was on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<PatchData>,
    /// The selected token's data-flow neighbours (token indices), when the data-flow
    /// highlight (`d`) was on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dataflow: Option<Vec<usize>>,
    /// The pinned head shown beside the current one (`*`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pinned: Option<Pinned>,
    /// The probe panel's results for the current task, when probes were trained.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probes: Option<ProbeChart>,
    /// Every head as a thumbnail with its score (the model overview), when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overview: Option<Overview>,
    /// Compare mode: the twin, and which side the heatmap and its `matrix` show.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compare: Option<CompareInfo>,
    /// The study's finding for this snippet (`analysis::finding`'s JSON: per layer the
    /// best-head and head-mean F1 of syn–syn, id–id and syn–id edges, shares, reading).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finding: Option<serde_json::Value>,
}

/// A head pinned for side-by-side comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Pinned {
    /// 1-based layer and head.
    pub layer: usize,
    pub head: usize,
    /// Its code-token attention `[query][key]` over `FigureData::matrix_tokens`.
    pub matrix: Vec<Vec<f32>>,
    /// Its scores per gold graph at the view's threshold.
    pub scores: BTreeMap<String, GraphScore>,
}

/// One layer's probe result as the probe panel shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ProbeRow {
    /// Hidden layer: 0 = embeddings, l = output of layer l.
    pub layer: usize,
    pub accuracy: f64,
    pub control_accuracy: f64,
    pub selectivity: f64,
}

/// The probe panel: per-layer accuracy against the control task for one task.
#[derive(Debug, Clone, Serialize)]
pub struct ProbeChart {
    pub task: String,
    /// `linear`, `mlp`, ...
    pub probe: String,
    /// Where the probe data came from and how many snippets.
    pub corpus: String,
    pub snippets: usize,
    pub split: String,
    pub train_size: usize,
    pub test_size: usize,
    /// Accuracy of always guessing the most frequent label.
    pub majority: f64,
    pub rows: Vec<ProbeRow>,
    /// The probe's label for the selected token at the current layer, as the panel
    /// shows it (e.g. `«total» L2 identifier gold identifier ✓`).
    pub token_label: Option<String>,
    /// AST-Probe (`probe` = `ast`, the rows' accuracy = constituent F1): the snippet's
    /// tree rebuilt at the current layer beside the gold tree, when shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tree: Option<ProbeTrees>,
}

/// One row of a tree as indented text.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TreeLine {
    /// Nesting depth (the root is 0).
    pub depth: usize,
    /// A constituent's label, or a leaf's token text.
    pub text: String,
    /// `same`, `relabelled` (the other tree groups these leaves under another label),
    /// `absent` (the other tree lacks them), `leaf`, or `selected` (the selected
    /// token's leaf).
    pub mark: String,
}

/// AST-Probe's trees of the snippet at one layer.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ProbeTrees {
    /// Hidden layer (0 = embeddings).
    pub layer: usize,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    /// The rebuilt tree, marked against the gold one (`absent` = a wrong constituent).
    pub predicted: Vec<TreeLine>,
    /// The gold tree, marked against the rebuilt one (`absent` = a missed constituent).
    pub gold: Vec<TreeLine>,
}

/// One head of the model overview.
#[derive(Debug, Clone, Serialize)]
pub struct Thumb {
    /// `side x side` block maxima of the head's attention, divided by its maximum.
    pub cells: Vec<f32>,
    /// The head's largest attention weight.
    pub max: f32,
    /// The head grid's metric for this head.
    pub score: Option<f64>,
}

/// The model overview: every head's thumbnail and score.
#[derive(Debug, Clone, Serialize)]
pub struct Overview {
    /// The metric under each thumbnail (`f1_ast_motif`, ...) and its display name.
    pub metric: String,
    pub metric_name: String,
    /// Thumbnail side in cells.
    pub side: usize,
    /// `[layer][head]`.
    pub heads: Vec<Vec<Thumb>>,
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

/// Where exports go: `--export-dir` / `CODESCOPE_EXPORT_DIR` if given, else
/// `$XDG_DATA_HOME/codescope/exports` (`~/.local/share/codescope/exports`), never the
/// working directory (which is often a repository checkout).
pub fn export_dir(given: Option<&Path>) -> PathBuf {
    if let Some(p) = given {
        return p.to_path_buf();
    }
    if let Some(p) = std::env::var_os("CODESCOPE_EXPORT_DIR").filter(|v| !v.is_empty()) {
        return PathBuf::from(p);
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(std::env::temp_dir);
    data.join("codescope").join("exports")
}

/// `stem`, or `stem-1`, `stem-2`, ... : the first for which none of the files
/// `<stem><suffix>` exists in `dir` (so an export never overwrites another).
pub fn free_stem(dir: &Path, stem: &str, suffixes: &[String]) -> String {
    let taken = |s: &str| {
        suffixes
            .iter()
            .any(|x| dir.join(format!("{s}{x}")).exists())
    };
    let mut s = stem.to_string();
    let mut k = 1;
    while taken(&s) {
        s = format!("{stem}-{k}");
        k += 1;
    }
    s
}

/// The file name suffixes [`write_figures`] uses for these kinds (and the JSON).
pub fn suffixes(kinds: &[figure::Kind], json: bool) -> Vec<String> {
    let mut v: Vec<String> = kinds
        .iter()
        .flat_map(|k| [format!("-{}.svg", k.name()), format!("-{}.png", k.name())])
        .collect();
    if json {
        v.push(".json".into());
    }
    v
}

/// Write figures (`<stem>-<kind>.svg` and `.png` each) and, if given, the view's numbers
/// (`<stem>.json`) into `dir`, creating it. Returns the paths written.
pub fn write_figures(
    dir: &Path,
    stem: &str,
    figures: &[(figure::Kind, figure::Figure)],
    view: Option<&FigureData>,
) -> crate::Result<Vec<PathBuf>> {
    let io = |p: &Path, e: std::io::Error| crate::Error::io(p.display().to_string(), e);
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let mut out = Vec::new();
    for (kind, fig) in figures {
        let svg = dir.join(format!("{stem}-{}.svg", kind.name()));
        crate::fsio::write_atomic_io(&svg, fig.svg.as_bytes()).map_err(|e| io(&svg, e))?;
        out.push(svg);
        let png = dir.join(format!("{stem}-{}.png", kind.name()));
        crate::fsio::write_atomic_io(&png, &png::render(fig)?).map_err(|e| io(&png, e))?;
        out.push(png);
    }
    if let Some(v) = view {
        let json = dir.join(format!("{stem}.json"));
        crate::fsio::write_atomic_io(&json, json::render(v).map_err(|e| io(&json, e))?.as_bytes())
            .map_err(|e| io(&json, e))?;
        out.push(json);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_errors_name_the_path() {
        // /proc takes no new directories, even for root.
        let e = write_figures(Path::new("/proc/codescope-x"), "x", &[], None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("/proc/codescope-x"), "{e}");
    }

    #[test]
    fn stems_are_utc_dates() {
        assert_eq!(stem_at(0), "codescope-19700101-000000");
        assert_eq!(stem_at(1_700_000_000), "codescope-20231114-221320");
        assert_eq!(stem_at(951_782_400), "codescope-20000229-000000");
    }
}
