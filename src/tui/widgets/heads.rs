//! The head grid: small multiples of one per-head score, heads as rows and layers as
//! columns (so ← → and ↑ ↓ mean the same here as everywhere). The current head is
//! highlighted; in this panel the arrows move the grid's own cursor and Enter jumps.
//! For F1 scores the best head of each layer is underlined (METHODS.md 3: "per layer,
//! report the best head by F1").

use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{clip, panel};
use crate::tui::app::{App, Focus};
use crate::tui::data::Metric;
use crate::tui::theme::Theme;

fn fmt_cell(m: Metric, v: Option<f64>, w: usize) -> String {
    let s = match v {
        None => "·".to_string(),
        Some(x) if m == Metric::Entropy => {
            if w >= 3 && x < 9.95 {
                format!("{x:.1}")
            } else {
                format!("{:.0}", x)
            }
        }
        // Differences (compare mode): the magnitude; the colour (or a sign glyph) says
        // which way.
        Some(x) => format!("{:.0}", (x.abs() * 100.0).min(99.0)),
    };
    format!("{s:>w$}")
}

pub fn draw(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    let block = panel(
        app,
        Focus::Heads,
        vec![
            Span::styled("Heads", t.accent()),
            Span::styled(
                if app.comparison().is_some() {
                    " · B−A"
                } else {
                    ""
                },
                t.warn(),
            ),
            Span::styled(format!(" · {} [s]", app.view.metric.name()), t.dim()),
        ],
    );
    let inner = block.inner(area);
    f.render_widget(block, area);
    let Some(p) = app.prepared() else {
        f.render_widget(
            Paragraph::new(Span::styled("waiting for the analysis…", t.dim())),
            inner,
        );
        return;
    };
    let values = app.view.metric.values(p, &app.shown.scores);
    // Compare mode: the twin's score minus the original's, on a diverging scale.
    let diff = app.compare_grid(&values);
    let signed = diff.is_some();
    let values = diff.unwrap_or(values);
    let layers = values.len();
    let heads = values.first().map_or(0, |r| r.len());
    if layers == 0 || heads == 0 || inner.height < 3 {
        return;
    }
    let smax = if signed {
        values
            .iter()
            .flatten()
            .flatten()
            .fold(0.0f64, |m, v| m.max(v.abs()))
            .max(1e-9)
    } else {
        app.view.metric.scale_max(&values)
    };
    let label_w = 4usize;
    let cw = if inner.width as usize >= label_w + layers * 3 {
        3
    } else {
        2
    };
    let f1 = !signed && matches!(app.view.metric, Metric::F1Motif | Metric::F1Dfg);
    let best: Vec<Option<usize>> = values
        .iter()
        .map(|row| {
            if !f1 {
                return None;
            }
            let mut b: Option<(usize, f64)> = None;
            for (h, &v) in row.iter().enumerate() {
                if let Some(v) = v {
                    if v > 0.0 && b.is_none_or(|(_, bv)| v > bv) {
                        b = Some((h, v));
                    }
                }
            }
            b.map(|(h, _)| h)
        })
        .collect();
    let focused = app.view.focus == Focus::Heads;
    let (gl, gh) = if focused {
        app.view.grid
    } else {
        (app.view.layer, app.view.head)
    };
    // Rows available for heads: header + footer take two lines.
    let rows = (inner.height as usize).saturating_sub(2).max(1);
    let h0 = if heads <= rows {
        0
    } else {
        gh.saturating_sub(rows / 2).min(heads - rows)
    };
    let mut lines = Vec::new();
    let mut header = vec![Span::styled(format!("{:<label_w$}", ""), t.dim())];
    for l in 0..layers {
        let s = if cw >= 3 {
            format!("{:>3}", format!("L{}", l + 1))
        } else {
            format!("{:>2}", (l + 1) % 100)
        };
        let st = if l == app.view.layer {
            t.accent()
        } else {
            t.dim()
        };
        header.push(Span::styled(s, st));
    }
    lines.push(Line::from(header));
    #[allow(clippy::needless_range_loop)] // rows are heads, `values` is [layer][head]
    for h in h0..(h0 + rows).min(heads) {
        let st = if h == app.view.head && !app.view.mean {
            t.accent()
        } else {
            t.dim()
        };
        let mut spans = vec![Span::styled(
            format!("{:<label_w$}", format!("H{}", h + 1)),
            st,
        )];
        for l in 0..layers {
            let v = values[l][h];
            let x = v.map_or(0.0, |v| (v / smax) as f32);
            let mut style = if t.colored() && signed {
                Style::default()
                    .bg(t.diverging(x.signum() * x.abs().sqrt()))
                    .fg(t.color(if t.light {
                        (20, 20, 25)
                    } else {
                        (235, 235, 240)
                    }))
            } else if t.colored() {
                let mut s = Style::default().bg(t.heat(x.sqrt(), false));
                if let Some(fg) = t.on_heat(x.sqrt()) {
                    s = s.fg(fg);
                } else {
                    s = s.fg(t.color(if t.light {
                        (40, 40, 50)
                    } else {
                        (200, 205, 215)
                    }));
                }
                s
            } else {
                Style::default()
            };
            let mut text = fmt_cell(app.view.metric, v, cw);
            if !t.colored() {
                // Shape instead of colour: the leading column carries a shade glyph.
                let g = match v {
                    Some(d) if signed && d < 0.0 => '-',
                    Some(d) if signed && d > 0.0 => '+',
                    _ => Theme::shade(x.abs()),
                };
                text = format!("{g}{}", &fmt_cell(app.view.metric, v, cw - 1));
            }
            if best[l] == Some(h) {
                style = style.add_modifier(Modifier::UNDERLINED);
            }
            if l == app.view.layer && h == app.view.head && !app.view.mean {
                style = t.cursor();
            } else if app.view.mean && l == app.view.layer {
                style = style.add_modifier(Modifier::BOLD);
            }
            if focused && l == gl && h == gh {
                style = t.selected().add_modifier(Modifier::BOLD);
            }
            spans.push(Span::styled(text, style));
        }
        lines.push(Line::from(spans));
    }
    // Footer: the value under the grid cursor (or the current head).
    let mut foot = format!("L{} H{}: ", gl + 1, gh + 1);
    let diff_here = values.get(gl).and_then(|r| r.get(gh)).copied().flatten();
    match app.view.metric {
        _ if signed => match diff_here {
            Some(v) if app.view.metric == Metric::Entropy => {
                foot.push_str(&format!("B−A {v:+.2} bits"))
            }
            Some(v) => foot.push_str(&format!("B−A {:+.1} points", v * 100.0)),
            None => foot.push_str("n/a"),
        },
        Metric::F1Motif | Metric::F1Dfg => {
            let g = app.view.metric.graph();
            if let Some(s) = g
                .and_then(|g| app.shown.scores.get(&g))
                .and_then(|s| s.scores.get(gl))
                .and_then(|r| r.get(gh))
            {
                foot.push_str(&format!(
                    "F1 {:.2} P {:.2} R {:.2}",
                    s.f1, s.precision, s.recall
                ));
            }
        }
        m => match values.get(gl).and_then(|r| r.get(gh)).copied().flatten() {
            Some(v) if m == Metric::Entropy => foot.push_str(&format!("{v:.2} bits")),
            Some(v) => foot.push_str(&format!("{:.0}%", v * 100.0)),
            None => foot.push_str("n/a"),
        },
    }
    if focused {
        foot.push_str(" · Enter: jump");
    } else if f1 {
        foot.push_str(" · _ best");
    } else if signed {
        foot.push_str(" · blue −, orange +");
    }
    lines.push(Line::from(Span::styled(
        clip(&foot, inner.width as usize),
        t.dim(),
    )));
    f.render_widget(Paragraph::new(lines), inner);
}
