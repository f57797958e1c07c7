//! The attention heatmap of the current layer and head (or head mean): queries are
//! rows, keys columns, over the analysed code tokens. Two rows per character with `▀`
//! (fg = upper cell, bg = lower cell), so cells are square. Zoomed out, a cell shows the
//! maximum of its block of tokens. Colour is `sqrt(a / max)` on a blue ramp; with `g`,
//! cells on a gold edge (AST motif or data flow) use a gold ramp instead. NO_COLOR: one
//! row per character, intensity as ` ░▒▓█`, gold cells as `○`/`●`.

use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{clip, one_line, panel};
use crate::tui::app::{App, Focus};
use crate::tui::layout;
use crate::tui::theme::Theme;

/// Max of `a` over the block of rows `r0..r1`, columns `c0..c1`, and whether any pair
/// in it is a gold edge.
fn block_max(
    a: &[f32],
    gold: Option<&[bool]>,
    n: usize,
    r: (usize, usize),
    c: (usize, usize),
) -> (f32, bool) {
    let mut m = 0.0f32;
    let mut g = false;
    for i in r.0..r.1.min(n) {
        let row = &a[i * n + c.0..i * n + c.1.min(n)];
        for &v in row {
            m = m.max(v);
        }
        if let Some(gm) = gold {
            g |= gm[i * n + c.0..i * n + c.1.min(n)].iter().any(|&x| x);
        }
    }
    (m, g)
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
        if pinned.is_some() { "Pinned" } else { "Heatmap" },
        t.accent(),
    )];
    let (layers, heads) = app.dims();
    if let Some((l, h)) = pinned {
        title.push(Span::styled(format!(" · L{} H{} [*]", l + 1, h + 1), t.warn()));
    } else if layers > 0 {
        let h = if app.view.mean {
            "mean of heads".to_string()
        } else {
            format!("H{}", app.view.head + 1)
        };
        title.push(Span::styled(
            format!(" · L{} {h}", app.view.layer + 1),
            t.dim(),
        ));
        let _ = heads;
    }
    if app.view.gold {
        title.push(Span::styled(" · gold: AST motif + data flow", t.warn()));
    }
    let block = panel(app, Focus::Heatmap, title);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let Some((_, p)) = app.shown.data.as_ref() else {
        f.render_widget(
            Paragraph::new(Span::styled(
                app.status
                    .busy
                    .clone()
                    .unwrap_or_else(|| "no analysis yet".into()),
                t.dim(),
            )),
            inner,
        );
        return;
    };
    let n = p.n();
    let ta = &p.token_attention;
    let labels: Vec<String> = ta
        .tokens
        .iter()
        .map(|&i| one_line(&p.tokens[i].text))
        .collect();
    let sel = p.pos.get(app.view.cursor).copied().flatten();
    let half = t.colored();
    let Some(g) = layout::heat_geom(app, area, n) else {
        return;
    };
    let (gutter, label_rows, cols_avail, px_rows, fit) =
        (g.gutter, g.label_rows, g.cols_avail, g.px_rows, g.fit);
    let z = if app.view.zoom == 0 {
        fit
    } else {
        app.view.zoom.min(n)
    };
    let cells = n.div_ceil(z);
    let vis_c = cells.min(cols_avail);
    let vis_r = cells.min(px_rows);
    // The origin that keeps the selected token in view was settled by `App::update`.
    let (r0, c0) = app.view.heat_origin;
    let r0 = r0.min(cells - vis_r);
    let c0 = c0.min(cells - vis_c);

    let gold = app.view.gold.then_some(&p.gold_any[..]);
    let mut draw_matrix = |a: &[f32], n: usize| {
        let vmax = a.iter().copied().fold(0.0f32, f32::max).max(1e-9);
        let scale = |v: f32| (v / vmax).clamp(0.0, 1.0).sqrt();
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
        let mut info = format!(" {n} tokens · max {vmax:.2} · √ scale · {zoom}");
        if let Some(s) = sel {
            info.push_str(&format!(" · row «{}»", clip(&labels[s], 10)));
        }
        lines.push(Line::from(Span::styled(
            clip(&info, inner.width as usize),
            t.dim(),
        )));
        // Column labels: the first token of each column, written downwards.
        for k in 0..label_rows {
            let mut spans = vec![Span::raw(" ".repeat(gutter))];
            for c in c0..c0 + vis_c {
                let tok = c * z;
                let ch = labels[tok].chars().nth(k).unwrap_or(' ');
                let is_sel = sel.is_some_and(|s| s / z == c);
                let style = if is_sel { t.cursor() } else { t.dim() };
                spans.push(Span::styled(ch.to_string(), style));
            }
            lines.push(Line::from(spans));
        }
        let step = if half { 2 } else { 1 };
        let mut r = r0;
        while r < r0 + vis_r {
            let upper = r;
            let lower = (r + 1 < r0 + vis_r && half).then_some(r + 1);
            let is_sel = |cell: usize| sel.is_some_and(|s| s / z == cell);
            let label = |cell: usize| -> String {
                labels[cell * z]
                    .chars()
                    .take(if gutter >= 12 { 5 } else { 6 })
                    .collect()
            };
            let lab = if gutter >= 12 {
                match lower {
                    Some(lw) => format!("{:>5}/{:<5}", label(upper), label(lw)),
                    None => format!("{:>5}/{:<5}", label(upper), ""),
                }
            } else {
                format!("{:>6}", label(upper))
            };
            let marker = if is_sel(upper) || lower.is_some_and(is_sel) {
                "▶"
            } else {
                " "
            };
            let lab_style = if is_sel(upper) || lower.is_some_and(is_sel) {
                t.accent()
            } else {
                t.dim()
            };
            let mut spans = vec![
                Span::styled(lab, lab_style),
                Span::styled(marker, lab_style),
            ];
            for c in c0..c0 + vis_c {
                let cols = (c * z, (c + 1) * z);
                let (vu, gu) = block_max(a, gold, n, (upper * z, (upper + 1) * z), cols);
                if half {
                    let fg = t.heat(scale(vu), gu);
                    let bg = match lower {
                        Some(lw) => {
                            let (vl, gl) = block_max(a, gold, n, (lw * z, (lw + 1) * z), cols);
                            t.heat(scale(vl), gl)
                        }
                        None => t.color(t.background()),
                    };
                    spans.push(Span::styled("▀", Style::default().fg(fg).bg(bg)));
                } else {
                    let v = scale(vu);
                    let ch = if gu {
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
        f.render_widget(Paragraph::new(lines), inner);
    };
    match pinned {
        Some((l, h)) if l < ta.layers && h < ta.heads => draw_matrix(ta.head(l, h), ta.n()),
        Some(_) => {}
        None => {
            let _ = app.with_matrix(draw_matrix);
        }
    }
}
