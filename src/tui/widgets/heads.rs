//! The head grid: small multiples of one per-head score, heads as rows and layers as
//! columns (so ← → and ↑ ↓ mean the same here as everywhere), transposed (layers as
//! rows) when the panel shows more cells that way ([`layout::grid_geom`]; inside the
//! transposed grid ↑ ↓ move along layers and ← → along heads). The current head is
//! highlighted; in this panel the arrows move the grid's own cursor and Enter jumps.
//! For F1 scores the best head of each layer is underlined (docs/METHODS.md 3: "per layer,
//! report the best head by F1").
//!
//! Deep and wide models: every cell is a separating space plus two digits (three for
//! entropy; plus a shade glyph without colour), and every layer number in the header is
//! right-aligned over its column, so numbers never run together. When not every layer
//! or head fits, the grid scrolls (the origin is settled by `App::update` from
//! [`layout::grid_geom`], keeping the followed cell a few cells from the edges) and
//! `◂ ▸ ▴ ▾` mark the sides with more; the footer names the visible range.

use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{clip, fit_title, panel};
use crate::analysis::causal::Measure;
use crate::tui::app::{App, Focus};
use crate::tui::data::Metric;
use crate::tui::layout::{self, GRID_LABEL_W};
use crate::tui::theme::Theme;

/// What a metric's cells are, with their unit, for the panel title.
pub fn unit(m: Metric) -> &'static str {
    match m {
        Metric::F1Motif => "F1×100 vs AST motif",
        Metric::F1Dfg => "F1×100 vs data flow",
        Metric::F1DfgRefined => "F1×100, dfg_refined",
        Metric::SynToId => "syn→id, % of attention",
        Metric::IdToSyn => "id→syn, % of attention",
        Metric::Entropy => "entropy, bits",
        Metric::AblationId => "ablation: ids",
        Metric::AblationSyn => "ablation: syn",
    }
}

/// A cell's value in `w` columns (right-aligned).
fn fmt_cell(m: Metric, v: Option<f64>, w: usize) -> String {
    let s = match v {
        None => "·".to_string(),
        Some(x) if m == Metric::Entropy || m.is_ablation() => {
            // Ablation: the magnitude (the colour, or a sign glyph, says which way).
            let x = x.abs();
            if w >= 3 && x < 9.95 {
                format!("{x:.1}")
            } else {
                format!("{:.0}", x.min(99.0))
            }
        }
        // Differences (compare mode): the magnitude; the colour (or a sign glyph) says
        // which way.
        Some(x) => format!("{:.0}", (x.abs() * 100.0).min(99.0)),
    };
    format!("{s:>w$}")
}

/// [`crate::tui::app::CROSS_NO_SCORES`], wrapped to the panel.
pub fn cross_note(t: &Theme) -> Paragraph<'static> {
    Paragraph::new(Span::styled(crate::tui::app::CROSS_NO_SCORES, t.dim()))
        .wrap(ratatui::widgets::Wrap { trim: true })
}

pub fn draw(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    let m = app.view.metric;
    let block = panel(
        app,
        Focus::Heads,
        fit_title(
            vec![
                Span::styled("Heads", t.accent()),
                Span::styled(
                    if app.comparison().is_some() && !m.is_ablation() {
                        " · B−A"
                    } else {
                        ""
                    },
                    t.warn(),
                ),
                Span::styled(
                    format!(
                        " · {}{} [s]",
                        unit(m),
                        // An encoder's 1 − cos is small: its cells show it ×100.
                        if m.is_ablation() && app.ablation.measure == Some(Measure::Cosine) {
                            " ×100"
                        } else {
                            ""
                        }
                    ),
                    t.dim(),
                ),
            ],
            area.width,
        ),
    );
    let inner = block.inner(area);
    f.render_widget(block, area);
    // The ablation's effects are causal, not scores against the gold graphs: the cross
    // stack shows them.
    if app.cross_stack_shown() && !m.is_ablation() {
        f.render_widget(cross_note(t), inner);
        return;
    }
    // The layers of the analysis in progress (the rest `·`), else the analysis shown.
    let partial = app.partial();
    let values = match (partial, app.prepared()) {
        (Some(pt), _) => pt.values(m),
        (None, Some(_)) => app.grid_values(m).unwrap_or_default(),
        (None, None) => {
            f.render_widget(
                Paragraph::new(Span::styled("waiting for the analysis…", t.dim())),
                inner,
            );
            return;
        }
    };
    let Some(g) = layout::grid_geom(app, area) else {
        return;
    };
    // Compare mode: the twin's score minus the original's, on a diverging scale.
    let diff = partial
        .is_none()
        .then(|| app.compare_grid(&values))
        .flatten();
    // The ablation's effects are signed too (a head whose removal helps).
    let signed = diff.is_some() || m.is_ablation();
    let compared = diff.is_some();
    let values = diff.unwrap_or(values);
    let (layers, heads) = (values.len(), values.first().map_or(0, |r| r.len()));
    if layers != g.layers || heads != g.heads {
        return; // the analysis shown is not the model's (a switch is under way)
    }
    let smax = if signed {
        values
            .iter()
            .flatten()
            .flatten()
            .fold(0.0f64, |m, v| m.max(v.abs()))
            .max(1e-9)
    } else {
        m.scale_max(&values)
    };
    let cosine = m.is_ablation() && app.ablation.measure == Some(Measure::Cosine);
    let show_k = if cosine { 100.0 } else { 1.0 };
    let cw = g.cw as usize;
    let digits = if t.colored() { cw - 1 } else { cw - 2 };
    let f1 = !signed && m.graph().is_some();
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
    let (c0, cvis, _) = g.cols();
    let (r0, rvis, _) = g.rows();
    // (layer, head) of the cell in column c, row r.
    let at = |c: usize, r: usize| if g.transposed { (r, c) } else { (c, r) };
    let mut lines = Vec::new();
    // Header: one right-aligned number per column (layers; heads when transposed);
    // ◂ / ▸ where columns are hidden.
    let lw = GRID_LABEL_W as usize;
    let left = if g.more_left() { "◂" } else { " " };
    let corner = if g.transposed { "L\\H" } else { "H\\L" };
    let mut header = vec![Span::styled(
        format!("{:<lw$}", format!("{corner}{left}")),
        t.dim(),
    )];
    for c in c0..c0 + cvis {
        let current = if g.transposed {
            c == app.view.head && !app.view.mean
        } else {
            c == app.view.layer
        };
        let st = if current {
            t.accent().add_modifier(Modifier::BOLD)
        } else {
            t.dim()
        };
        header.push(Span::styled(format!("{:>cw$}", c + 1), st));
    }
    if g.more_right() {
        header.push(Span::styled("▸", t.warn()));
    }
    lines.push(Line::from(header));
    for r in r0..r0 + rvis {
        let (current, name) = if g.transposed {
            (r == app.view.layer, format!("L{}", r + 1))
        } else {
            (r == app.view.head && !app.view.mean, format!("H{}", r + 1))
        };
        let st = if current { t.accent() } else { t.dim() };
        let mark = if r == r0 && g.more_up() {
            "▴"
        } else if r + 1 == r0 + rvis && g.more_down() {
            "▾"
        } else {
            " "
        };
        let label = format!("{name:<w$}{mark}", w = lw - 1);
        let mut spans = vec![Span::styled(label, st)];
        for c in c0..c0 + cvis {
            let (l, h) = at(c, r);
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
            let text = if t.colored() {
                fmt_cell(m, v.map(|x| x * show_k), digits)
            } else {
                // Shape instead of colour: a shade glyph (compare mode: the sign) before
                // the digits.
                let g = match v {
                    Some(d) if signed && d < 0.0 => '-',
                    Some(d) if signed && d > 0.0 => '+',
                    _ => Theme::shade(x.abs()),
                };
                format!("{g}{}", fmt_cell(m, v.map(|x| x * show_k), digits))
            };
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
            // The separating space keeps the panel's background: columns stay apart
            // even where neighbouring cells have the same colour.
            spans.push(Span::raw(" "));
            spans.push(Span::styled(text, style));
        }
        lines.push(Line::from(spans));
    }
    // Footer: the value under the grid cursor (or the current head), then the visible
    // range when the grid scrolls, then the keys.
    let mut foot = vec![format!("L{} H{}: ", gl + 1, gh + 1)];
    let diff_here = values.get(gl).and_then(|r| r.get(gh)).copied().flatten();
    let ab_unit = crate::tui::app::ablation::unit(app.ablation.measure);
    match m {
        _ if m.is_ablation() && !compared => {
            let e = app
                .ablation_shown()
                .and_then(|a| a.grid.get(gl)?.get(gh).copied().flatten());
            match e {
                Some(e) => {
                    let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:+.3}"));
                    foot[0].push_str(&format!("identifiers {}", f(e.identifier)));
                    foot.push(format!("syntactic {} {ab_unit}", f(e.syntactic)));
                }
                None => foot[0].push_str("not yet"),
            }
        }
        _ if signed => match diff_here {
            Some(v) if m == Metric::Entropy => foot[0].push_str(&format!("B−A {v:+.2} bits")),
            Some(v) => foot[0].push_str(&format!("B−A {:+.1} points", v * 100.0)),
            None => foot[0].push_str("n/a"),
        },
        Metric::F1Motif | Metric::F1Dfg | Metric::F1DfgRefined => {
            let score = m.graph().and_then(|gr| match partial {
                Some(pt) => pt.layers.get(gl)?.scores.get(&gr)?.get(gh).copied(),
                None => app.shown.scores.get(&gr)?.scores.get(gl)?.get(gh).copied(),
            });
            if let Some(s) = score {
                foot[0].push_str(&format!(
                    "F1 {:.2} P {:.2} R {:.2}",
                    s.f1, s.precision, s.recall
                ));
            } else {
                foot[0].push_str("n/a");
            }
        }
        _ => match values.get(gl).and_then(|r| r.get(gh)).copied().flatten() {
            Some(v) if m == Metric::Entropy => foot[0].push_str(&format!("{v:.2} bits")),
            Some(v) => foot[0].push_str(&format!("{:.0}%", v * 100.0)),
            None => foot[0].push_str("n/a"),
        },
    }
    if g.lvis < layers || g.hvis < heads {
        foot.push(format!(
            "L{}–{} of {layers}, H{}–{} of {heads}",
            g.l0 + 1,
            g.l0 + g.lvis,
            g.h0 + 1,
            g.h0 + g.hvis
        ));
    }
    if let Some(pt) = partial {
        foot.push(pt.so_far());
    }
    if m.is_ablation() && partial.is_none() {
        match app.ablation_shown() {
            Some(a) if a.done < a.total => foot.push(format!("{}/{} heads", a.done, a.total)),
            _ => {}
        }
    }
    if focused {
        foot.push("Enter: open".into());
    } else if f1 {
        foot.push("_ best".into());
    } else if signed {
        foot.push("blue −, orange +".into());
    }
    let w = inner.width as usize;
    let mut rows: Vec<String> = vec![String::new()];
    for part in foot {
        let n_rows = rows.len();
        let cur = rows.last_mut().expect("a row");
        let add = if cur.is_empty() {
            part.chars().count()
        } else {
            part.chars().count() + 3
        };
        if !cur.is_empty() && cur.chars().count() + add > w && n_rows < g.footer_h as usize {
            rows.push(part);
            continue;
        } else {
            if !cur.is_empty() {
                cur.push_str(" · ");
            }
            cur.push_str(&part);
        }
    }
    for r in rows {
        lines.push(Line::from(Span::styled(clip(&r, w), t.dim())));
    }
    f.render_widget(Paragraph::new(lines), inner);
}
