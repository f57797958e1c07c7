//! Drawing of the presenting features: the `x` export menu.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

use super::clip;
use crate::tui::app::App;

/// The `x` menu, centred: what each choice writes and where.
pub fn export_menu(app: &App, f: &mut Frame, area: Rect, kind: crate::export::figure::Kind) {
    let t = &app.theme;
    let this = kind.name();
    let dir = app.present.export_dir.display().to_string();
    let w = 56u16.min(area.width);
    let inner_w = w.saturating_sub(4) as usize;
    let item = |k: &'static str, what: String| {
        Line::from(vec![
            Span::styled(format!(" {k}  "), t.warn()),
            Span::raw(clip(&what, inner_w.saturating_sub(4))),
        ])
    };
    let lines = vec![
        item("1", format!("this view ({this}): SVG, PNG, JSON")),
        item("2", "every panel: a figure each, JSON".into()),
        item("3", "whole screen: SVG, PNG, text".into()),
        Line::from(""),
        Line::from(Span::styled(clip(&format!(" to {dir}"), inner_w), t.dim())),
        Line::from(Span::styled(" Esc: cancel", t.dim())),
    ];
    let h = (lines.len() as u16 + 2).min(area.height);
    let r = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    f.render_widget(Clear, r);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.border(true))
        .title(Line::from(Span::styled(" Export ", t.accent())))
        .style(t.text());
    let inner = block.inner(r);
    f.render_widget(block, r);
    f.render_widget(Paragraph::new(lines), inner);
}

/// The model overview: every head's attention as a half-block thumbnail (each head on
/// its own scale, `sqrt`), the head grid's score under it, the current head and the
/// pinned one marked, the cursor highlighted. NO_COLOR: shade glyphs, one cell per
/// character.
pub fn overview(app: &App, f: &mut Frame, c: crate::tui::app::OverviewCursor) {
    use ratatui::style::Style;
    let t = &app.theme;
    let (area, _) = crate::tui::app::overview_area(app.size);
    f.render_widget(Clear, area);
    let metric = app.view.metric;
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.border(true))
        .title(Line::from(vec![
            Span::styled(" Overview ", t.accent()),
            Span::styled(
                format!(
                    "· {} · Enter: open · *: pin · x: export · Esc ",
                    if app.cross_stack_shown() {
                        "no head scores on the cross stack".to_string()
                    } else {
                        format!("{} [s]", metric.name())
                    }
                ),
                t.dim(),
            ),
        ]))
        .style(t.text());
    let inner = block.inner(area);
    f.render_widget(block, area);
    let Some(p) = app.prepared() else { return };
    let (layers, heads) = (p.layers(), p.heads());
    let Some(g) = crate::tui::app::overview_geom(inner, layers, heads, c.sel.1) else {
        f.render_widget(
            Paragraph::new(Span::styled("too small for the overview", t.dim())),
            inner,
        );
        return;
    };
    let Some(th) = app.present.thumbs.as_ref() else {
        if !p.token_attention.resident() {
            let msg = format!(
                "no thumbnails: {} code tokens are too many to keep every layer's attention \
                 (CODESCOPE_ATTENTION_BUDGET_MB); the heat map computes the layer it shows",
                p.n()
            );
            f.render_widget(
                Paragraph::new(Span::styled(msg, t.dim()))
                    .wrap(ratatui::widgets::Wrap { trim: true }),
                inner,
            );
        }
        return;
    };
    // The cross stack has no head scores (`CROSS_NO_SCORES`): `·` under every thumbnail.
    let values = if app.cross_stack_shown() {
        Vec::new()
    } else {
        app.grid_values(metric).unwrap_or_default()
    };
    let mut lines: Vec<Line> = Vec::new();
    let mut head = vec![Span::raw(" ".repeat(g.label_w as usize))];
    for l in 0..layers {
        let st = if l == c.sel.0 { t.accent() } else { t.dim() };
        head.push(Span::styled(
            format!("{:<w$}", format!("L{}", l + 1), w = g.col_w as usize),
            st,
        ));
    }
    lines.push(Line::from(head));
    let tw = g.thumb_w as usize;
    let px_rows = 2 * g.thumb_h as usize;
    for h in g.top..(g.top + g.rows).min(heads) {
        for row in 0..g.thumb_h as usize {
            let label = if row == 0 {
                format!("{:<w$}", format!("H{}", h + 1), w = g.label_w as usize)
            } else {
                " ".repeat(g.label_w as usize)
            };
            let lst = if h == c.sel.1 { t.accent() } else { t.dim() };
            let mut spans = vec![Span::styled(label, lst)];
            for l in 0..layers {
                let cells = &th.cells[l * heads + h];
                let s = (cells.len() as f64).sqrt().round() as usize;
                let at = |py: usize, px: usize| -> f32 {
                    if s == 0 {
                        return 0.0;
                    }
                    cells[(py * s / px_rows).min(s - 1) * s + (px * s / tw).min(s - 1)]
                };
                for px in 0..tw {
                    if t.colored() && t.ascii {
                        let v = at(2 * row, px).max(at(2 * row + 1, px));
                        let bg = t.heat(v.sqrt(), false);
                        spans.push(Span::styled(" ", Style::default().bg(bg)));
                    } else if t.colored() {
                        let up = t.heat(at(2 * row, px).sqrt(), false);
                        let dn = t.heat(at(2 * row + 1, px).sqrt(), false);
                        spans.push(Span::styled("▀", Style::default().fg(up).bg(dn)));
                    } else {
                        let v = at(2 * row, px).max(at(2 * row + 1, px));
                        spans.push(Span::raw(
                            crate::tui::theme::Theme::shade(v.sqrt()).to_string(),
                        ));
                    }
                }
                spans.push(Span::raw(" ".repeat((g.col_w as usize).saturating_sub(tw))));
            }
            lines.push(Line::from(spans));
        }
        // Score line.
        let mut spans = vec![Span::raw(" ".repeat(g.label_w as usize))];
        for l in 0..layers {
            let v = values.get(l).and_then(|r| r.get(h)).copied().flatten();
            let text = match v {
                None => "·".to_string(),
                Some(x) if metric == crate::tui::data::Metric::Entropy => format!("{x:.1}"),
                Some(x) => crate::export::figure::fmt_value(x),
            };
            let pinned = app.present.pin == Some((l, h));
            let current = !app.view.mean && (app.view.layer, app.view.head) == (l, h);
            let mark = if pinned {
                "*"
            } else if current {
                "•"
            } else {
                " "
            };
            let cell = clip(&format!("{mark}{text}"), tw);
            let st = if (l, h) == c.sel {
                t.selected()
            } else if current {
                t.accent()
            } else if pinned {
                t.warn()
            } else {
                t.dim()
            };
            spans.push(Span::styled(format!("{cell:<tw$}"), st));
            spans.push(Span::raw(" ".repeat((g.col_w as usize).saturating_sub(tw))));
        }
        lines.push(Line::from(spans));
    }
    f.render_widget(Paragraph::new(lines), inner);
}
