//! The attention heatmap of the current layer and head (or head mean): queries are
//! rows, keys columns, over the analysed code tokens. Zoomed out, a cell shows the
//! maximum of its block of tokens. Colour is `sqrt(a / max)` on a blue ramp; with `g`,
//! cells on a gold edge (AST motif or data flow) use a gold ramp instead.
//!
//! Rows: one query row per text row, labelled with its token, whenever that shows every
//! row at the zoom shown; otherwise two rows per character with `▀` (fg = upper row, bg
//! = lower row, so cells are square) and labels `upper¦lower`. The legend line under the
//! map is the colour bar (from 0 to the matrix's largest weight, with the middle's
//! value: the scale is a square root) and says how rows are labelled. NO_COLOR: one row
//! per character, intensity as ` ░▒▓█`, gold cells as `○`/`●`. `◂ ▸` beside the column
//! labels and `▴ ▾` in the legend mark the sides with more tokens when zoomed in.

use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{clip, one_line, panel};
use crate::tui::app::{App, Focus};
use crate::tui::layout::{self, HeatGeom};
use crate::tui::theme::Theme;

/// Max of `a` over the block of rows `r0..r1`, columns `c0..c1` (`signed`: the value of
/// largest magnitude, sign kept), and whether any pair in it is a gold edge.
fn block_max(
    a: &[f32],
    gold: Option<&[bool]>,
    n: usize,
    r: (usize, usize),
    c: (usize, usize),
    signed: bool,
) -> (f32, bool) {
    let mut m = 0.0f32;
    let mut g = false;
    for i in r.0..r.1.min(n) {
        let row = &a[i * n + c.0..i * n + c.1.min(n)];
        for &v in row {
            if !signed {
                m = m.max(v);
            } else if v.abs() > m.abs() {
                m = v;
            }
        }
        if let Some(gm) = gold {
            g |= gm[i * n + c.0..i * n + c.1.min(n)].iter().any(|&x| x);
        }
    }
    (m, g)
}

/// A weight in at most four columns: `.27`, `1.0`, `3e-3`.
pub(crate) fn weight(v: f32) -> String {
    if v >= 0.995 {
        format!("{v:.1}")
    } else if v >= 0.005 {
        format!("{v:.2}").trim_start_matches('0').to_string()
    } else if v > 0.0 {
        format!("{v:.0e}")
    } else {
        "0".into()
    }
}

/// The first visible (row, column) cell and the visible counts for `cells` per side.
pub(crate) fn visible(app: &App, g: &HeatGeom, cells: usize) -> ((usize, usize), usize, usize) {
    let vis_c = cells.min(g.cols_avail);
    let vis_r = cells.min(g.px_rows);
    let (r0, c0) = app.view.heat_origin;
    ((r0.min(cells - vis_r), c0.min(cells - vis_c)), vis_r, vis_c)
}

pub fn draw(app: &App, f: &mut Frame, area: Rect) {
    draw_head(app, f, area, None);
}

/// The pinned head (`*`), beside the current one, with the same zoom and scroll.
pub fn draw_pinned(app: &App, f: &mut Frame, area: Rect) {
    if let Some(pin) = app.present.pin {
        draw_head(app, f, area, Some(pin));
    }
}

/// The current matrix, or head `pinned` (layer, head).
fn draw_head(app: &App, f: &mut Frame, area: Rect, pinned: Option<(usize, usize)>) {
    let t = &app.theme;
    let mut title = vec![Span::styled(
        if pinned.is_some() {
            "Pinned"
        } else {
            "Heatmap"
        },
        t.accent(),
    )];
    let (layers, _) = app.dims();
    if let Some((l, h)) = pinned {
        title.push(Span::styled(
            format!(" · L{} H{} [*]", l + 1, h + 1),
            t.warn(),
        ));
    } else if layers > 0 {
        let h = if app.view.mean {
            "mean of heads".to_string()
        } else {
            format!("H{}", app.view.head + 1)
        };
        title.push(Span::styled(
            format!(" · L{} {h} · attention weight", app.view.layer + 1),
            t.dim(),
        ));
    }
    // Compare mode: the twin (B) or the difference (B − A) on the original's tokens (the
    // pinned head stays the original's).
    let side = app
        .compare_matrix()
        .map(|(_, side)| side)
        .filter(|_| pinned.is_none());
    if let Some(side) = side {
        title.push(Span::styled(format!(" · {}", side.label()), t.warn()));
    }
    let signed = side == Some(crate::tui::app::HeatSide::Diff);
    if app.view.gold {
        title.push(Span::styled(" · gold: AST motif + data flow", t.warn()));
    }
    // The analysis in progress: how many of its layers are in.
    let partial = app.partial();
    if let Some(pt) = partial.filter(|_| pinned.is_none()) {
        title.push(Span::styled(format!(" · {}", pt.so_far()), t.warn()));
    }
    let block = panel(app, Focus::Heatmap, super::fit_title(title, area.width));
    let inner = block.inner(area);
    f.render_widget(block, area);
    // The tokens: those of the layers coming in, else the analysis shown's.
    let cursor = app.view.cursor;
    let (n, labels, sel, gold_any) = match (partial, app.shown.data.as_ref()) {
        (Some(pt), _) => (
            pt.frame.n(),
            pt.frame.labels.clone(),
            pt.frame.pos.get(cursor).copied().flatten(),
            &pt.frame.gold_any[..],
        ),
        (None, Some((_, p))) => (
            p.n(),
            p.token_attention
                .tokens
                .iter()
                .map(|&i| one_line(&p.tokens[i].text))
                .collect::<Vec<String>>(),
            p.pos.get(cursor).copied().flatten(),
            &p.gold_any[..],
        ),
        (None, None) => {
            f.render_widget(
                Paragraph::new(Span::styled(
                    clip(
                        app.status.busy.as_deref().unwrap_or("no analysis yet"),
                        inner.width as usize,
                    ),
                    t.dim(),
                )),
                inner,
            );
            return;
        }
    };
    let Some(g) = layout::heat_geom(app, area, n) else {
        return;
    };
    let (gutter, z, half) = (g.gutter, g.zoom, g.half);
    let cells = n.div_ceil(z);
    // The origin that keeps the selected token in view was settled by `App::update`.
    let ((r0, c0), vis_r, vis_c) = visible(app, &g, cells);

    let gold = app.view.gold.then_some(gold_any);
    let mut draw_matrix = |a: &[f32], n: usize| {
        let vmax = a
            .iter()
            .copied()
            .fold(0.0f32, |m, v| m.max(if signed { v.abs() } else { v }))
            .max(1e-9);
        let scale = |v: f32| (v.abs() / vmax).clamp(0.0, 1.0).sqrt();
        // B − A: a diverging scale (square root of the magnitude, sign kept).
        let colour = |v: f32, g: bool| {
            if signed {
                t.diverging(v.signum() * scale(v))
            } else {
                t.heat(scale(v), g)
            }
        };
        let w = inner.width as usize;
        let mut lines: Vec<Line> = Vec::with_capacity(inner.height as usize);
        // Info line.
        let zoom = if z == 1 {
            "1:1".to_string()
        } else {
            format!("{z} tok/cell")
        };
        let zoom = if app.view.zoom == 0 {
            format!("fit {zoom}")
        } else {
            zoom
        };
        let mut info = if signed {
            format!(" {n} tokens · B−A · rows query, cols key · {zoom}")
        } else {
            format!(" {n} tokens · rows query, cols key · {zoom}")
        };
        if let Some(s) = sel {
            info.push_str(&format!(" · row «{}»", clip(&labels[s], 10)));
        }
        lines.push(Line::from(Span::styled(clip(&info, w), t.dim())));
        // Column labels: the first token of each column, written downwards; ◂ ▸ where
        // columns are hidden.
        for k in 0..g.label_rows {
            let mut spans = vec![Span::raw(" ".repeat(gutter - 1))];
            spans.push(if k == 0 && c0 > 0 {
                Span::styled("◂", t.warn())
            } else {
                Span::raw(" ")
            });
            for c in c0..c0 + vis_c {
                let ch = labels[c * z].chars().nth(k).unwrap_or(' ');
                let is_sel = sel.is_some_and(|s| s / z == c);
                let style = if is_sel { t.cursor() } else { t.dim() };
                spans.push(Span::styled(ch.to_string(), style));
            }
            if k == 0 && c0 + vis_c < cells {
                spans.push(Span::styled("▸", t.warn()));
            }
            lines.push(Line::from(spans));
        }
        let step = if half { 2 } else { 1 };
        let is_sel = |cell: usize| sel.is_some_and(|s| s / z == cell);
        let label = |cell: usize, w: usize| -> String {
            let s = &labels[cell * z];
            if s.chars().count() > w {
                clip(s, w)
            } else {
                s.clone()
            }
        };
        let lab_w = gutter - 1;
        let mut r = r0;
        while r < r0 + vis_r {
            let upper = r;
            let lower = (half && r + 1 < r0 + vis_r).then_some(r + 1);
            let lab = if half && lab_w >= 11 {
                let lw = label(upper, 5);
                match lower {
                    // `¦`, not `/`: a slash is a token of its own.
                    Some(lo) => format!("{lw:>5}¦{:<5}", label(lo, 5)),
                    None => format!("{lw:>5}{:6}", ""),
                }
            } else {
                format!("{:>lab_w$}", label(upper, lab_w))
            };
            let selected = is_sel(upper) || lower.is_some_and(is_sel);
            let (marker, lab_style) = if selected {
                ("▶", t.accent())
            } else {
                (" ", t.dim())
            };
            let mut spans = vec![
                Span::styled(lab, lab_style),
                Span::styled(marker, lab_style),
            ];
            for c in c0..c0 + vis_c {
                let cols = (c * z, (c + 1) * z);
                let (vu, gu) = block_max(a, gold, n, (upper * z, (upper + 1) * z), cols, signed);
                if half {
                    let fg = colour(vu, gu);
                    let bg = match lower {
                        Some(lw) => {
                            let (vl, gl) =
                                block_max(a, gold, n, (lw * z, (lw + 1) * z), cols, signed);
                            colour(vl, gl)
                        }
                        None => t.color(t.background()),
                    };
                    spans.push(Span::styled("▀", Style::default().fg(fg).bg(bg)));
                } else if t.colored() {
                    let st = Style::default().fg(colour(vu, gu));
                    spans.push(Span::styled("█", st));
                } else {
                    let v = scale(vu);
                    let ch = if signed {
                        // No colour for the sign: `-` / `+` where the change is at least
                        // a quarter of the largest, else blank.
                        match (v >= 0.5, vu < 0.0) {
                            (false, _) => ' ',
                            (true, true) => '-',
                            (true, false) => '+',
                        }
                    } else if gu {
                        if v >= 0.5 {
                            '●'
                        } else {
                            '○'
                        }
                    } else {
                        Theme::shade(v)
                    };
                    let mut st = Style::default();
                    if is_sel(upper) {
                        st = st.add_modifier(Modifier::BOLD);
                    }
                    spans.push(Span::styled(ch.to_string(), st));
                }
            }
            lines.push(Line::from(spans));
            r += step;
        }
        // Pad to the legend line.
        let legend_y = (inner.height as usize).saturating_sub(g.legend_rows);
        while lines.len() < legend_y {
            lines.push(Line::from(""));
        }
        if g.legend_rows > 0 {
            let more = match (r0 > 0, r0 + vis_r < cells) {
                (true, true) => " ▴▾",
                (true, false) => " ▴",
                (false, true) => " ▾",
                (false, false) => "",
            };
            lines.push(legend(app, vmax, signed, (half, lab_w >= 11), more, w));
        }
        f.render_widget(Paragraph::new(lines), inner);
    };
    let waiting = |f: &mut Frame, text: String| {
        f.render_widget(Paragraph::new(Span::styled(text, t.dim())), inner);
    };
    let Some((_, p)) = app.shown.data.as_ref().filter(|_| partial.is_none()) else {
        // Layers coming in: the current one if it is in, else that it is coming.
        let Some(pt) = partial else { return };
        match pinned {
            Some((l, h)) => {
                if let Some(m) = app.partial_head(l, h) {
                    draw_matrix(m, n);
                }
            }
            None => {
                if app.with_partial_matrix(draw_matrix).is_none() {
                    let l = app.view.layer;
                    let text = if l >= pt.have() {
                        format!("layer {} is coming ({})…", l + 1, pt.so_far())
                    } else {
                        format!(
                            "layer {}'s attention shows once the analysis is done ({n} code \
                             tokens: too many to keep every layer's)",
                            l + 1
                        )
                    };
                    waiting(f, text);
                }
            }
        }
        return;
    };
    let ta = &p.token_attention;
    match pinned {
        Some((l, h)) => {
            if let Some(m) = app.head_matrix(l, h) {
                draw_matrix(m, ta.n());
            }
        }
        None => {
            if app.with_matrix(draw_matrix).is_none() && !ta.resident() {
                let l = app.view.layer.min(ta.layers.saturating_sub(1));
                f.render_widget(
                    Paragraph::new(Span::styled(
                        format!(
                            "computing layer {}'s attention ({} code tokens: too many to keep \
                             every layer's)…",
                            l + 1,
                            ta.n()
                        ),
                        t.dim(),
                    )),
                    inner,
                );
            }
        }
    }
}

/// The colour bar with its values and how rows are labelled (`half`: two query rows a
/// text row; `labels_both`: both are labelled), one line of `w` columns. `signed`: the
/// diverging bar of compare mode's B − A, from −vmax through 0 to +vmax.
fn legend<'a>(
    app: &App,
    vmax: f32,
    signed: bool,
    (half, labels_both): (bool, bool),
    more: &str,
    w: usize,
) -> Line<'a> {
    let t = &app.theme;
    if signed {
        let mut l = vec![Span::styled(format!(" −{} ", weight(vmax)), t.dim())];
        if t.colored() {
            for k in -4i32..=4 {
                let v = k as f32 / 4.0;
                l.push(Span::styled(
                    "█",
                    Style::default().fg(t.diverging(v.signum() * v.abs().sqrt())),
                ));
            }
        } else {
            l.push(Span::styled("- · +", Style::default()));
        }
        let text = format!(
            " +{} √ · blue: B lower, orange: B higher{more}",
            weight(vmax)
        );
        let used: usize = l.iter().map(|s| s.content.chars().count()).sum();
        l.push(Span::styled(clip(&text, w.saturating_sub(used)), t.dim()));
        return Line::from(l);
    }
    let mut l = vec![Span::styled(" 0 ", t.dim())];
    if t.colored() {
        for k in 0..8 {
            let v = k as f32 / 7.0;
            l.push(Span::styled("█", Style::default().fg(t.heat(v, false))));
        }
    } else {
        for c in [' ', '░', '▒', '▓', '█'] {
            l.push(Span::styled(c.to_string(), Style::default()));
        }
    }
    // The scale is a square root: the bar's middle is a quarter of the largest weight.
    let text = format!(
        " {} √ (mid {}){more}{}",
        weight(vmax),
        weight(vmax / 4.0),
        match (half, labels_both) {
            (true, true) => " · 2 rows a line, labels top¦bottom",
            (true, false) => " · 2 rows a line, label: top",
            (false, _) => "",
        }
    );
    let used: usize = l.iter().map(|s| s.content.chars().count()).sum();
    l.push(Span::styled(clip(&text, w.saturating_sub(used)), t.dim()));
    Line::from(l)
}

#[cfg(test)]
mod tests {
    use super::weight;

    #[test]
    fn weights_fit_four_columns() {
        assert_eq!(weight(0.27), ".27");
        assert_eq!(weight(1.0), "1.0");
        assert_eq!(weight(0.003), "3e-3");
        assert_eq!(weight(0.0), "0");
        assert_eq!(weight(0.0675), ".07");
    }
}
