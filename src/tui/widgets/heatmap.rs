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
    let t = &app.theme;
    let mut title = vec![Span::styled("Heatmap", t.accent())];
    let (layers, heads) = app.dims();
    if layers > 0 {
        let h = if app.mean {
            "mean of heads".to_string()
        } else {
            format!("H{}", app.head + 1)
        };
        title.push(Span::styled(format!(" · L{} {h}", app.layer + 1), t.dim()));
        let _ = heads;
    }
    if app.gold {
        title.push(Span::styled(" · gold: AST motif + data flow", t.warn()));
    }
    let block = panel(app, Focus::Heatmap, title);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let Some((_, p)) = app.data.as_ref() else {
        f.render_widget(
            Paragraph::new(Span::styled(
                app.busy.clone().unwrap_or_else(|| "no analysis yet".into()),
                t.dim(),
            )),
            inner,
        );
        return;
    };
    let n = p.n();
    if n == 0 || inner.height < 4 || inner.width < 12 {
        return;
    }
    let ta = &p.analysis.token_attention;
    let labels: Vec<String> = ta
        .tokens
        .iter()
        .map(|&i| one_line(&p.analysis.tokens[i].text))
        .collect();
    let sel = p.pos.get(app.cursor).copied().flatten();
    let half = t.colored();
    let gutter: usize = if inner.width >= 40 { 12 } else { 7 };
    let label_rows: usize = if inner.height >= 14 { 3 } else { 1 };
    let info_rows = 1usize;
    let cols_avail = (inner.width as usize).saturating_sub(gutter).max(1);
    let rows_avail = (inner.height as usize)
        .saturating_sub(label_rows + info_rows)
        .max(1);
    let px_rows = if half { rows_avail * 2 } else { rows_avail };
    let fit = n.div_ceil(cols_avail).max(n.div_ceil(px_rows)).max(1);
    app.heat_fit.set(fit);
    let z = if app.zoom == 0 { fit } else { app.zoom.min(n) };
    let cells = n.div_ceil(z);
    let vis_c = cells.min(cols_avail);
    let vis_r = cells.min(px_rows);
    // Keep the selected token's row and column in view.
    let (mut r0, mut c0) = app.heat_origin.get();
    if let Some(s) = sel {
        let sc = s / z;
        if sc < c0 {
            c0 = sc;
        } else if sc >= c0 + vis_c {
            c0 = sc + 1 - vis_c;
        }
        if sc < r0 {
            r0 = sc;
        } else if sc >= r0 + vis_r {
            r0 = sc + 1 - vis_r;
        }
    }
    c0 = c0.min(cells - vis_c);
    r0 = r0.min(cells - vis_r);
    app.heat_origin.set((r0, c0));

    let gold = app.gold.then_some(&p.gold_any[..]);
    let _ = app.with_matrix(|a, n| {
        let vmax = a.iter().copied().fold(0.0f32, f32::max).max(1e-9);
        let scale = |v: f32| (v / vmax).clamp(0.0, 1.0).sqrt();
        let mut lines: Vec<Line> = Vec::with_capacity(inner.height as usize);
        // Info line.
        let zoom = if z == 1 {
            "1:1".to_string()
        } else {
            format!("{z} tok/cell")
        };
        let zoom = if app.zoom == 0 {
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
    });
}
