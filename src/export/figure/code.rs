//! The code block of the heatmap and surprisal figures: the snippet as written (tabs
//! expanded to 4), line numbers, tokens in their category colours (definitions bold),
//! each token's background shaded by the attention of the selected token or by its
//! surprisal, text colour switched where it would not read on the shade, the selected
//! token framed, its data-flow neighbours underlined in gold; a colour bar with values
//! and the category legend under it. Also the whole surprisal figure.

use super::palette::{readable, Palette, Rgb};
use super::svg::{clip, text_w, Anchor, Font, Svg, CHAR_W};
use super::{
    colorbar_h, fmt_value, header, linear_ticks, sqrt_ticks, swatch, title_of, Crop, Figure,
    Metrics,
};
use crate::export::FigureData;
use crate::model::tokenizer::show_subword;

/// What the token backgrounds show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shade {
    /// Attention from (or to) the selected token, `sqrt(w / max)` over the others.
    Attention,
    /// Surprisal in bits / the snippet's largest.
    Surprisal,
    /// A knockout's change per token, `sign · √(|Δ| / max |Δ|)` (diverging).
    Knockout,
    /// The patch view's change per token at its selected hidden state, as a knockout's.
    Patch,
}

/// A drawable piece of a line: 0-based line, display column, text, token index.
type Piece = (usize, usize, String, Option<usize>);

/// The source cut into per-line pieces: tokens and the text between them.
fn pieces(view: &FigureData) -> Vec<Piece> {
    let src = &view.source;
    let mut bounds: Vec<(usize, usize, Option<usize>)> = Vec::new();
    let mut pos = 0;
    for (i, t) in view.tokens.iter().enumerate() {
        if t.start > pos {
            bounds.push((pos, t.start, None));
        }
        if t.start >= pos {
            bounds.push((t.start, t.end, Some(i)));
            pos = t.end;
        }
    }
    if pos < src.len() {
        bounds.push((pos, src.len(), None));
    }
    let mut out = Vec::new();
    let (mut line, mut col) = (0usize, 0usize);
    for (s, e, tok) in bounds {
        let Some(text) = src.get(s..e) else { continue };
        for (k, part) in text.split('\n').enumerate() {
            if k > 0 {
                line += 1;
                col = 0;
            }
            let part = part.trim_end_matches('\r');
            if part.is_empty() {
                continue;
            }
            let mut w = col;
            let mut shown = String::new();
            for ch in part.chars() {
                if ch == '\t' {
                    let next = (w / 4 + 1) * 4;
                    shown.extend(std::iter::repeat_n(' ', next - w));
                    w = next;
                } else {
                    shown.push(if ch.is_control() { ' ' } else { ch });
                    w += 1;
                }
            }
            out.push((line, col, shown, tok));
            col = w;
        }
    }
    out
}

/// Geometry of a code block.
#[derive(Debug, Clone, Copy)]
pub struct CodeBox {
    pub font: f64,
    pub line_h: f64,
    /// Columns of code shown (longer lines end in `…`).
    pub cols: usize,
    /// Line-number gutter in chars (digits + 1).
    pub gutter: usize,
    pub width: f64,
    /// Height of the text lines only.
    pub text_h: f64,
}

impl CodeBox {
    /// Display width in columns of each of the crop's lines (tabs expanded).
    pub fn line_widths(view: &FigureData, crop: &Crop) -> Vec<usize> {
        let mut w = vec![0usize; crop.l1 - crop.l0 + 1];
        for p in pieces(view) {
            if (crop.l0..=crop.l1).contains(&p.0) {
                let e = p.1 + p.2.chars().count();
                w[p.0 - crop.l0] = w[p.0 - crop.l0].max(e);
            }
        }
        w
    }

    /// The block for the crop's lines, at most `max_w` px wide.
    pub fn measure(view: &FigureData, crop: &Crop, m: Metrics, max_w: f64) -> CodeBox {
        let font = m.body();
        let cw = CHAR_W * font;
        let gutter = (crop.l1 + 1).to_string().len() + 1;
        let widest = pieces(view)
            .iter()
            .filter(|p| (crop.l0..=crop.l1).contains(&p.0))
            .map(|p| p.1 + p.2.chars().count())
            .max()
            .unwrap_or(1)
            .max(24);
        let fit = ((max_w / cw) as usize).saturating_sub(gutter + 1).max(16);
        let cols = widest.min(fit);
        let line_h = (font * 1.45).round();
        CodeBox {
            font,
            line_h,
            cols,
            gutter,
            width: (cols + gutter + 1) as f64 * cw,
            text_h: (crop.l1 - crop.l0 + 1) as f64 * line_h,
        }
    }
}

/// Per token: its shade in `[0, 1]` (None: no shade) for `shade`, and the value the
/// colour bar's top stands for.
fn shades(view: &FigureData, crop: &Crop, shade: Shade) -> (Vec<Option<f32>>, f32) {
    match shade {
        Shade::Attention => {
            // Compare mode's B − A is signed: `sign · √(|w| / max |w|)`, a diverging ramp.
            let wmax = view
                .tokens
                .iter()
                .filter(|t| Some(t.index) != view.selected && crop.has_token(t.index))
                .filter_map(|t| t.weight)
                .fold(0.0f32, |m, w| m.max(w.abs()));
            let v = view
                .tokens
                .iter()
                .map(|t| {
                    let w = t.weight?;
                    (Some(t.index) != view.selected && wmax > 0.0)
                        .then(|| (w.abs() / wmax).clamp(0.0, 1.0).sqrt().copysign(w))
                })
                .collect();
            (v, wmax)
        }
        Shade::Knockout | Shade::Patch => {
            let d = |t: &super::super::Token| {
                if shade == Shade::Patch {
                    t.patch.flatten()
                } else {
                    t.knockout.flatten()
                }
            };
            let max = view
                .tokens
                .iter()
                .filter(|t| crop.has_token(t.index))
                .filter_map(d)
                .fold(0.0f64, |m, v| m.max(v.abs()));
            let v = view
                .tokens
                .iter()
                .map(|t| {
                    let x = d(t)?;
                    Some(if max > 0.0 {
                        ((x.abs() / max).sqrt().copysign(x)) as f32
                    } else {
                        0.0
                    })
                })
                .collect();
            (v, max as f32)
        }
        Shade::Surprisal => {
            // The 95th percentile tops the scale (one long token does not wash out the
            // rest); an export from before the field existed falls back to the max.
            let max = view.surprisal.as_ref().map_or(0.0, |s| {
                if s.scale_bits > 0.0 {
                    s.scale_bits
                } else {
                    s.max_bits
                }
            });
            let v = view
                .tokens
                .iter()
                .map(|t| {
                    let b = t.surprisal.flatten()?;
                    Some((b / max.max(1e-6)).clamp(0.0, 1.0))
                })
                .collect();
            (v, max)
        }
    }
}

/// Draw the code block at (`x`, `y`) (top left); returns the height used.
pub fn draw_block(
    svg: &mut Svg,
    view: &FigureData,
    crop: &Crop,
    (m, pal): (Metrics, Palette),
    (x, y): (f64, f64),
    b: &CodeBox,
    shade: Shade,
) -> f64 {
    let (vals, _) = shades(view, crop, shade);
    let cw = CHAR_W * b.font;
    let code_x = x + (b.gutter + 1) as f64 * cw;
    let base =
        |line: usize| y + (line - crop.l0) as f64 * b.line_h + 0.5 * b.line_h + 0.36 * b.font;
    let top = |line: usize| y + (line - crop.l0) as f64 * b.line_h;
    let dataflow: &[usize] = view.dataflow.as_deref().unwrap_or(&[]);
    svg.group("code");
    for line in crop.l0..=crop.l1 {
        svg.text(
            x + (b.gutter - 1) as f64 * cw,
            base(line),
            Font::new(b.font, pal.dim()).anchor(Anchor::End),
            &(line + 1).to_string(),
        );
    }
    let mut selected_box = None;
    for (line, col, text, tok) in pieces(view) {
        if !(crop.l0..=crop.l1).contains(&line) || col >= b.cols {
            continue;
        }
        let room = b.cols - col;
        let shown = clip(&text, room);
        let px = code_x + col as f64 * cw;
        let w = shown.chars().count() as f64 * cw;
        let Some(i) = tok.filter(|&i| crop.has_token(i)) else {
            svg.text(px, base(line), Font::new(b.font, pal.dim()), &shown);
            continue;
        };
        let t = &view.tokens[i];
        let mut fg = pal.token(&t.category, t.role.as_deref());
        if let Some(v) = vals[i] {
            if v.abs() > 0.02 {
                let bg = match shade {
                    Shade::Attention if signed(view) => pal.diverging(v),
                    Shade::Attention => pal.heat(v),
                    Shade::Surprisal => pal.surprisal(v),
                    Shade::Knockout | Shade::Patch => pal.diverging(v),
                };
                let tip = match shade {
                    Shade::Attention => format!("{:.3}", t.weight.unwrap_or(0.0)),
                    Shade::Surprisal => {
                        format!("{:.2} bits", t.surprisal.flatten().unwrap_or(0.0))
                    }
                    Shade::Knockout => format!("{:+.3}", t.knockout.flatten().unwrap_or(0.0)),
                    Shade::Patch => format!("{:+.3} bits", t.patch.flatten().unwrap_or(0.0)),
                };
                svg.rect_titled(px, top(line), w, b.line_h, bg, &tip);
                fg = readable(fg, bg);
            }
        } else if shade == Shade::Surprisal && t.surprisal.is_some()
            || shade == Shade::Knockout && matches!(t.knockout, Some(None))
            || shade == Shade::Patch && matches!(t.patch, Some(None))
        {
            fg = pal.dim(); // not scored
        }
        let mut f = Font::new(b.font, fg);
        let def = t
            .role
            .as_deref()
            .is_some_and(|r| r.starts_with("definition"));
        if def || Some(i) == view.selected {
            f = f.bold();
        }
        svg.text(px, base(line), f, &shown);
        if dataflow.contains(&i) {
            let uy = top(line) + b.line_h - 3.0 * m.s;
            svg.line(px, uy, px + w, uy, pal.gold(), 4.0 * m.s);
        }
        if Some(i) == view.selected {
            selected_box = Some((px, top(line), w));
        }
    }
    if let Some((px, ty, w)) = selected_box {
        let pad = 2.0 * m.s;
        svg.frame(
            px - pad,
            ty + pad,
            w + 2.0 * pad,
            b.line_h - 2.0 * pad,
            pal.accent(),
            3.0 * m.s,
        );
    }
    svg.end_group();
    b.text_h
}

/// The colour bar and legend under a code block of width `w` at (`x`, `y`); returns
/// the height used.
pub fn draw_key(
    svg: &mut Svg,
    view: &FigureData,
    crop: &Crop,
    (m, pal): (Metrics, Palette),
    (x, y, w): (f64, f64, f64),
    shade: Shade,
) -> f64 {
    let (_, max) = shades(view, crop, shade);
    let mut h = 0.0;
    let sel = view
        .selected
        .and_then(|i| view.tokens.get(i))
        .map(|t| clip(&t.text.replace('\n', " "), 16));
    match shade {
        Shade::Attention if signed(view) => {
            let dir = if view.direction == "to" { "to" } else { "from" };
            let caption = match sel.as_deref() {
                Some(s) => format!("B − A of the attention {dir} «{s}» (√)"),
                None => "B − A of the attention (√)".into(),
            };
            h += colorbar_h(
                svg,
                m,
                pal,
                (x, y, w.min(900.0 * m.s)),
                &pal.diverging_stops(),
                &super::signed_ticks(max as f64),
                &caption,
            );
        }
        Shade::Attention => {
            let (caption, ticks) = attention_key(sel.as_deref(), &view.direction, max);
            h += colorbar_h(
                svg,
                m,
                pal,
                (x, y, w.min(900.0 * m.s)),
                &sampled(|t| pal.heat(t)),
                &ticks,
                &caption,
            );
        }
        Shade::Knockout => {
            let (edges, unit) = view.knockout.as_ref().map_or(("?", "Δ bits"), |k| {
                let unit = match k.measure.as_str() {
                    "bits" => "Δ bits",
                    "pll_bits" => "Δ PLL bits",
                    _ => "1 − cos",
                };
                (k.edges.as_str(), unit)
            });
            h += colorbar_h(
                svg,
                m,
                pal,
                (x, y, w.min(900.0 * m.s)),
                &pal.diverging_stops(),
                &super::signed_ticks(max as f64),
                &format!("{unit} per token with {edges} knocked out (√)"),
            );
        }
        Shade::Patch => {
            let l = view.patch.as_ref().map_or(0, |p| p.layer);
            // A longer caption than the others': the bar keeps 600 px beside it.
            h += colorbar_h(
                svg,
                m,
                pal,
                (x, y, w.min(1400.0 * m.s)),
                &pal.diverging_stops(),
                &super::signed_ticks(max as f64),
                &format!("Δ bits per token with hidden state L{l} patched from the twin (√)"),
            );
        }
        Shade::Surprisal => {
            let full = view.surprisal.as_ref().map_or(max, |s| s.max_bits);
            let caption = if full > max + 0.05 {
                format!("surprisal, bits (capped at p95 = {max:.1}; max {full:.1})")
            } else {
                "surprisal (bits)".to_string()
            };
            h += colorbar_h(
                svg,
                m,
                pal,
                (x, y, w.min(900.0 * m.s)),
                &sampled(|t| pal.surprisal(t)),
                &linear_ticks(max as f64, |v| format!("{v:.1}")),
                &caption,
            );
        }
    }
    h += 0.6 * m.small();
    // Category legend, wrapped to the block's width.
    let mut items: Vec<(Option<Rgb>, Option<Rgb>, String)> =
        ["keyword", "operator", "delimiter", "literal", "identifier"]
            .iter()
            .map(|c| (Some(pal.token(c, None)), None, (*c).to_string()))
            .collect();
    if sel.is_some() {
        items.push((None, Some(pal.accent()), "selected".into()));
    }
    if view.dataflow.is_some() {
        items.push((Some(pal.gold()), None, "data-flow link".into()));
    }
    if shade == Shade::Surprisal
        && view
            .tokens
            .iter()
            .any(|t| crop.has_token(t.index) && matches!(t.surprisal, Some(None)))
        || shade == Shade::Knockout
            && view
                .tokens
                .iter()
                .any(|t| crop.has_token(t.index) && matches!(t.knockout, Some(None)))
    {
        items.push((Some(pal.dim()), None, "not scored".into()));
    }
    if shade == Shade::Patch
        && view
            .tokens
            .iter()
            .any(|t| crop.has_token(t.index) && matches!(t.patch, Some(None)))
    {
        items.push((Some(pal.dim()), None, "renamed or not measured".into()));
    }
    h += legend_rows(svg, m, pal, (x, y + h, w), &items);
    h
}

/// The attention colour bar's caption and ticks. The scale is the largest weight on the
/// other code tokens shown; when there is none (a causal model's first code token attends
/// only to itself and the tokens before the code), five ".00" ticks would read as a broken
/// scale, so the caption says so and the bar keeps one tick.
/// Whether the view's attention is compare mode's signed B − A.
fn signed(view: &FigureData) -> bool {
    view.compare.as_ref().is_some_and(|c| c.heatmap == "B−A")
}

fn attention_key(
    selected: Option<&str>,
    direction: &str,
    max: f32,
) -> (String, Vec<(f64, String)>) {
    let dir = if direction == "to" { "to" } else { "from" };
    let caption = match selected {
        Some(s) => format!("attention {dir} «{s}» (√)"),
        None => "attention (√)".into(),
    };
    if max > 0.0 {
        (caption, sqrt_ticks(max as f64))
    } else {
        (
            format!("{caption}: no weight on the other code tokens shown"),
            vec![(0.0, fmt_value(0.0))],
        )
    }
}

/// Legend items in rows that wrap at width `w`; returns the height used.
pub fn legend_rows(
    svg: &mut Svg,
    m: Metrics,
    pal: Palette,
    (x, y, w): (f64, f64, f64),
    items: &[(Option<Rgb>, Option<Rgb>, String)],
) -> f64 {
    let small = m.small();
    let row_h = m.line(small);
    let item_w = |s: &str| small * 0.9 + 10.0 * m.s + text_w(s, small) + 32.0 * m.s;
    let mut cx = x;
    let mut cy = y + small;
    for (fill, stroke, label) in items {
        if cx > x && cx + item_w(label) > x + w {
            cx = x;
            cy += row_h;
        }
        cx = swatch(svg, m, pal, (cx, cy), *fill, *stroke, label);
    }
    cy - y + row_h * 0.5
}

/// Stops sampled from a ramp function (enough for a gradient to match the ramp).
pub fn sampled(f: impl Fn(f32) -> Rgb) -> Vec<Rgb> {
    (0..=16).map(|k| f(k as f32 / 16.0)).collect()
}

/// The surprisal figure: the code coloured by per-token surprisal, its colour bar, the
/// perplexity, and what the model expected where the selected token starts.
pub fn draw_surprisal(view: &FigureData, crop: &Crop, m: Metrics, pal: Palette) -> Figure {
    let Some(sv) = view.surprisal.as_ref() else {
        unreachable!("checked by the caller");
    };
    let mut svg = Svg::new(m.width(), m.width() * 0.5);
    let ppl = match (sv.perplexity, sv.mean_bits) {
        (Some(p), Some(b)) => format!("perplexity {p:.2} ({b:.2} bits per subword)"),
        _ => "nothing scored (no token has a prefix to predict it)".into(),
    };
    let mut sub = vec![format!(
        "surprisal view: -log2 p(token | prefix), summed over its subwords · {ppl} · {} input",
        view.mode
    )];
    if crop.cropped {
        sub.push(format!("lines {}-{}", crop.l0 + 1, crop.l1 + 1));
    }
    let mut y = header(&mut svg, m, pal, &title_of(view), &sub);
    let b = CodeBox::measure(view, crop, m, m.inner());
    y += draw_block(
        &mut svg,
        view,
        crop,
        (m, pal),
        (m.margin(), y),
        &b,
        Shade::Surprisal,
    );
    y += m.gap() * 0.6;
    y += draw_key(
        &mut svg,
        view,
        crop,
        (m, pal),
        (m.margin(), y, m.inner()),
        Shade::Surprisal,
    );
    // What the model expected where the selected token starts.
    if let Some(t) = view.selected.and_then(|i| view.tokens.get(i)) {
        y += m.gap() * 0.5;
        let name = clip(&t.text.replace('\n', " "), 24);
        let bits = t
            .surprisal
            .flatten()
            .map_or("not scored".to_string(), |b| format!("{b:.2} bits"));
        y += m.body();
        svg.text(
            m.margin(),
            y,
            Font::new(m.body(), pal.fg()).bold(),
            &format!("expected at the selected token «{name}» ({bits}): top 5 before it"),
        );
        y += m.line(m.body()) * 0.4;
        let bar_max = 600.0 * m.s;
        let label_w = 18.0 * CHAR_W * m.body();
        for e in &sv.selected_expected {
            y += m.line(m.body());
            let tok = clip(&show_subword(e.token.as_deref().unwrap_or("?")), 16);
            svg.text(m.margin(), y, Font::new(m.body(), pal.fg()), &tok);
            let bw = (e.p as f64).clamp(0.0, 1.0) * bar_max;
            let bh = m.body() * 0.8;
            svg.rect(
                m.margin() + label_w,
                y - bh * 0.85,
                bw.max(m.s),
                bh,
                pal.surprisal(0.8),
            );
            svg.text(
                m.margin() + label_w + bw + 12.0 * m.s,
                y,
                Font::new(m.small(), pal.fg()),
                &format!("p {:.3}", e.p),
            );
        }
        if sv.selected_expected.is_empty() {
            y += m.line(m.body());
            svg.text(
                m.margin(),
                y,
                Font::new(m.small(), pal.dim()),
                "the first position has no prediction before it",
            );
        }
        y += m.line(m.body()) * 0.5;
    }
    svg.grow_to(m.width(), y + m.margin());
    let (width, height) = (svg.width, svg.height);
    Figure {
        svg: svg.finish(pal.bg(), &format!("{} · surprisal", title_of(view))),
        width,
        height,
    }
}

/// The knockout view: the code coloured by each token's change, the colour bar, and the
/// identifier and syntactic-token means beside the matched control's.
pub fn draw_knockout(view: &FigureData, crop: &Crop, m: Metrics, pal: Palette) -> Figure {
    let Some(k) = view.knockout.as_ref() else {
        unreachable!("checked by the caller");
    };
    let mut svg = Svg::new(m.width(), m.width() * 0.5);
    let mut sub = vec![format!(
        "knockout {}: {} code-token pairs ({} subword pairs) blocked in every layer and head · \
         control: {} draws of as many random pairs · {} input",
        k.edges, k.token_pairs, k.subword_pairs, k.control_draws, view.mode
    )];
    if crop.cropped {
        sub.push(format!("lines {}-{}", crop.l0 + 1, crop.l1 + 1));
    }
    let mut y = header(&mut svg, m, pal, &title_of(view), &sub);
    let b = CodeBox::measure(view, crop, m, m.inner());
    y += draw_block(
        &mut svg,
        view,
        crop,
        (m, pal),
        (m.margin(), y),
        &b,
        Shade::Knockout,
    );
    y += m.gap() * 0.6;
    y += draw_key(
        &mut svg,
        view,
        crop,
        (m, pal),
        (m.margin(), y, m.inner()),
        Shade::Knockout,
    );
    let bits = k.measure != "one_minus_cos";
    let f = |v: f64| {
        if bits {
            format!("{v:+.2}")
        } else {
            format!("{v:.2e}")
        }
    };
    for c in k
        .summary
        .iter()
        .filter(|c| c.class == "identifier" || c.class == "syntactic")
    {
        y += m.line(m.body());
        let mean = c.mean.map_or("-".to_string(), f);
        let ctl = c.control.map_or("no control".to_string(), |[mu, lo, hi]| {
            format!("control {} [{}, {}]", f(mu), f(lo), f(hi))
        });
        let unit = if bits { "bits" } else { "1 − cos" };
        svg.text(
            m.margin(),
            y,
            Font::new(m.body(), pal.fg()),
            &format!("{} ({} tokens): {mean} {unit} · {ctl}", c.class, c.tokens),
        );
    }
    y += m.line(m.body()) * 0.5;
    svg.grow_to(m.width(), y + m.margin());
    let (width, height) = (svg.width, svg.height);
    Figure {
        svg: svg.finish(
            pal.bg(),
            &format!("{} · knockout {}", title_of(view), k.edges),
        ),
        width,
        height,
    }
}

/// The patch figure: the code coloured by each token's change at the selected hidden
/// state, and per hidden state the Δ bits and the fraction of the rename effect carried
/// by identifiers and syntactic tokens (`patch --json`'s `per_layer`), the selected state
/// in bold.
pub fn draw_patch(
    view: &FigureData,
    p: &super::super::PatchData,
    crop: &Crop,
    m: Metrics,
    pal: Palette,
) -> Figure {
    let mut svg = Svg::new(m.width(), m.width() * 0.5);
    let mut sub = vec![format!(
        "patching from {}: the residual stream at the {} renamed tokens copied from the twin, \
         one hidden state at a time · rename effect {:+.3} bits on {} unchanged tokens · \
         L0 = embeddings, L{} = output",
        p.twin,
        p.patched_tokens.len(),
        p.rename_bits,
        p.unchanged_tokens,
        p.layers.saturating_sub(1)
    )];
    if crop.cropped {
        sub.push(format!("lines {}-{}", crop.l0 + 1, crop.l1 + 1));
    }
    let mut y = header(&mut svg, m, pal, &title_of(view), &sub);
    let b = CodeBox::measure(view, crop, m, m.inner());
    y += draw_block(
        &mut svg,
        view,
        crop,
        (m, pal),
        (m.margin(), y),
        &b,
        Shade::Patch,
    );
    y += m.gap() * 0.6;
    y += draw_key(
        &mut svg,
        view,
        crop,
        (m, pal),
        (m.margin(), y, m.inner()),
        Shade::Patch,
    );
    y += m.gap() * 0.6;
    // The table: per hidden state, per class, Δ bits and the fraction carried.
    let num = |v: &serde_json::Value| v.as_f64();
    let frac = |v: &serde_json::Value| num(v).map_or("-".to_string(), |f| format!("{f:.3}"));
    let head_f = Font::new(m.body(), pal.dim());
    let cols = [0.0, 260.0, 560.0, 760.0, 1060.0].map(|c| m.margin() + c * m.s);
    y += m.line(m.body());
    for (x, h) in cols.iter().zip([
        "hidden state",
        "identifiers Δ bits",
        "fraction",
        "syntactic Δ bits",
        "fraction",
    ]) {
        svg.text(*x, y, head_f, h);
    }
    for entry in &p.per_layer {
        let l = entry["layer"].as_u64().unwrap_or(0) as usize;
        let class = |c: &str| {
            entry["classes"]
                .as_array()
                .and_then(|a| a.iter().find(|x| x["class"] == c))
                .cloned()
                .unwrap_or_default()
        };
        let (i, s) = (class("identifier"), class("syntactic"));
        let name = match l {
            0 => "L0 (embeddings)".to_string(),
            l if l + 1 == p.layers => format!("L{l} (output)"),
            l => format!("L{l}"),
        };
        y += m.line(m.body());
        let mut f = Font::new(m.body(), pal.fg());
        if l == p.layer {
            f = f.bold();
        }
        let delta = |c: &serde_json::Value| {
            num(&c["delta_bits"]).map_or("-".to_string(), |d| format!("{d:+.3}"))
        };
        for (x, t) in cols.iter().zip([
            name,
            delta(&i),
            frac(&i["fraction"]),
            delta(&s),
            frac(&s["fraction"]),
        ]) {
            svg.text(*x, y, f, &t);
        }
    }
    y += m.line(m.body()) * 0.5;
    svg.grow_to(m.width(), y + m.margin());
    let (width, height) = (svg.width, svg.height);
    Figure {
        svg: svg.finish(
            pal.bg(),
            &format!("{} · patch from {} at L{}", title_of(view), p.twin, p.layer),
        ),
        width,
        height,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attention_key_says_when_there_is_no_scale() {
        let (caption, ticks) = attention_key(Some("import"), "from", 0.0);
        assert_eq!(
            caption,
            "attention from «import» (√): no weight on the other code tokens shown"
        );
        assert_eq!(ticks, vec![(0.0, ".00".to_string())]);
        let (caption, ticks) = attention_key(Some("x"), "to", 0.64);
        assert_eq!(caption, "attention to «x» (√)");
        let labels: Vec<&str> = ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, [".00", ".040", ".16", ".36", ".64"]);
    }
}
