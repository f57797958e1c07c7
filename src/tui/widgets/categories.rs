//! Category attention: the coarse 2x2 (syntactic / identifier) and the fine 5x5
//! (keyword, operator, delimiter, literal, identifier) mean-attention matrices of the
//! current head beside its layer average (rows = query class, columns = key class,
//! self-pairs excluded; values x100).

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::panel;
use crate::analysis::CategoryMatrix;
use crate::tui::app::{App, Focus};

const COARSE: [&str; 2] = ["syn", "id"];
const FINE: [&str; 5] = ["kw", "op", "dl", "lit", "id"];
const CW: usize = 4;

fn cell(v: Option<f64>) -> String {
    match v {
        None => format!("{:>CW$}", "·"),
        Some(x) => {
            let p = x * 100.0;
            if p < 9.95 {
                format!("{p:>CW$.1}")
            } else {
                format!("{p:>CW$.0}")
            }
        }
    }
}

fn vmax_of(ms: &[&CategoryMatrix]) -> f64 {
    ms.iter()
        .flat_map(|m| m.mean.iter())
        .flatten()
        .fold(0.0f64, |m, &v| m.max(v))
        .max(1e-12)
}

/// The lines of one matrix: title, column header, one row per query class. Every line
/// is exactly `4 + k * CW` columns wide.
fn one<'a>(app: &App, names: &[&str], m: &CategoryMatrix, title: &str, vmax: f64) -> Vec<Line<'a>> {
    let t = &app.theme;
    let k = names.len();
    let w = 4 + k * CW;
    let mut out = vec![Line::from(Span::styled(format!("{title:<w$}"), t.accent()))];
    let mut head = vec![Span::styled("q\\k ", t.dim())];
    for n in names {
        head.push(Span::styled(format!("{n:>CW$}"), t.dim()));
    }
    out.push(Line::from(head));
    for (q, name) in names.iter().enumerate() {
        let mut row = vec![Span::styled(format!("{name:<4}"), t.dim())];
        for kk in 0..k {
            let v = m.mean_at(q, kk);
            let mut st = Style::default();
            if t.colored() {
                if let Some(x) = v {
                    let s = ((x / vmax) as f32).sqrt() * 0.85;
                    st = st.bg(t.heat(s, false));
                    if let Some(fg) = t.on_heat(s) {
                        st = st.fg(fg);
                    }
                }
            }
            row.push(Span::styled(cell(v), st));
        }
        out.push(Line::from(row));
    }
    out
}

/// Two blocks of lines side by side.
fn beside<'a>(a: Vec<Line<'a>>, b: Vec<Line<'a>>) -> Vec<Line<'a>> {
    a.into_iter()
        .zip(b)
        .map(|(mut x, y)| {
            x.spans.push(Span::raw("   "));
            x.spans.extend(y.spans);
            x
        })
        .collect()
}

pub fn draw(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    let block = panel(
        app,
        Focus::Categories,
        vec![
            Span::styled("Categories", t.accent()),
            Span::styled(" · mean attention x100", t.dim()),
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
    let a = p;
    let l = app.view.layer.min(a.coarse.len().saturating_sub(1));
    let h = app
        .view
        .head
        .min(a.coarse.first().map_or(0, |r| r.len()).saturating_sub(1));
    if a.coarse.is_empty() {
        return;
    }
    let (hc, hf, hname) = if app.view.mean {
        (
            &a.coarse_layer[l],
            &a.fine_layer[l],
            format!("L{} mean", l + 1),
        )
    } else {
        (
            &a.coarse[l][h],
            &a.fine[l][h],
            format!("L{} H{}", l + 1, h + 1),
        )
    };
    let lname = format!("L{} average", l + 1);
    let (cl, fl) = (&a.coarse_layer[l], &a.fine_layer[l]);
    let cmax = vmax_of(&[hc, cl]);
    let fmax = vmax_of(&[hf, fl]);
    let wide = inner.width as usize >= 2 * (4 + 5 * CW) + 3;
    let mut lines = Vec::new();
    if wide {
        lines.extend(beside(
            one(app, &COARSE, hc, &hname, cmax),
            one(app, &COARSE, cl, &lname, cmax),
        ));
        lines.push(Line::from(""));
        lines.extend(beside(
            one(app, &FINE, hf, &hname, fmax),
            one(app, &FINE, fl, &lname, fmax),
        ));
    } else {
        // Narrow: the 2x2 of head and layer side by side, then the head's 5x5.
        lines.extend(beside(
            one(app, &COARSE, hc, &hname, cmax),
            one(app, &COARSE, cl, &lname, cmax),
        ));
        lines.push(Line::from(""));
        lines.extend(one(app, &FINE, hf, &format!("{hname} (fine)"), fmax));
        lines.push(Line::from(Span::styled(
            "wider panel: the layer average too",
            t.dim(),
        )));
    }
    f.render_widget(Paragraph::new(lines), inner);
}
