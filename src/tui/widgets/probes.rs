//! The probe panel: per-layer linear-probe accuracy against its control task for the
//! loaded model, one task at a time (`p` trains in the worker, `P` cycles the task).
//!
//! One row per hidden layer (`emb` = embeddings, then the output of layer 1, 2, ...):
//! a bar whose `▒` part is the control accuracy and whose `█` part is what the probe
//! gets beyond it (`░` where control beats the probe), then the accuracy and the
//! selectivity (accuracy - control). The row of the current layer's output is
//! highlighted (and marked `▸`). Rows come first when space is short; the legend and sizes follow if
//! they fit, and a long stack of layers scrolls to keep the current one in view.
//!
//! With a report cached, the first line is the probe's label for the cursor token at the
//! current layer's output beside the gold label (token-level tasks: category, depth).
//! Pair tasks label token pairs, so they have no single-token line; the line says so.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use super::{clip, panel};
use crate::probe::ProbeResult;
use crate::tui::app::{App, Focus, TokenProbe};

pub fn draw(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    let block = panel(
        app,
        Focus::Probes,
        vec![
            Span::styled("Probes", t.accent()),
            Span::raw(" "),
            Span::styled(app.probe.task.name(), t.warn()),
        ],
    );
    let inner = block.inner(area);
    f.render_widget(block, area);
    let (w, h) = (inner.width as usize, inner.height as usize);
    if w == 0 || h == 0 {
        return;
    }
    let mut results: Vec<&ProbeResult> = Vec::new();
    let mut status: Option<Line> = None;
    if let Some(r) = app.probe_report() {
        results.extend(r.results.iter().filter(|x| x.task == app.probe.task.name()));
        if results.is_empty() {
            status = Some(Line::from(Span::styled(
                clip("too few examples for this task", w),
                t.warn(),
            )));
        }
    } else if let Some(run) = app.probe_running() {
        results.extend(run.partial.iter());
        status = Some(Line::from(Span::styled(clip(&run.progress, w), t.warn())));
    } else {
        let (text, style) = if app.model.loaded.is_none() {
            ("waiting for the model…".to_string(), t.dim())
        } else if let Some(e) = app.probe_failure() {
            (format!("probe failed: {e}"), t.error())
        } else {
            (String::new(), t.text())
        };
        let mut lines = Vec::new();
        if !text.is_empty() {
            lines.push(Line::from(Span::styled(text, style)));
        }
        lines.push(Line::from(vec![
            Span::styled("p", t.warn()),
            Span::raw(format!(
                ": train linear probes for {} on the bundled {} corpus (per-layer accuracy vs control; in the background, cached after)",
                app.probe.task.name(),
                app.doc.lang.name()
            )),
        ]));
        lines.push(Line::from(vec![
            Span::styled("P", t.warn()),
            Span::raw(": next task"),
        ]));
        f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }), inner);
        return;
    }
    results.sort_by_key(|x| x.layer);

    // Row layout: label(3) bar(bw) acc(3) sel(4), single spaces between.
    let bw = w.saturating_sub(13).max(3);
    let current = app.view.layer + 1; // the current layer's output (0 = embeddings)
    let n = results.len();
    let mut room = h;
    // The progress line always shows; legend and sizes only if every row fits too.
    let show_status = status.is_some() && room >= 2;
    if show_status {
        room -= 1;
    }
    let token_line = app
        .token_probe()
        .filter(|_| room >= 2)
        .map(|tp| token_probe_line(app, &tp, w));
    if token_line.is_some() {
        room -= 1;
    }
    let mut take = || {
        let ok = n > 0 && room > n;
        if ok {
            room -= 1;
        }
        ok
    };
    let show_legend = take();
    let show_sizes = take();
    let rows = room.min(n);
    let hl = results.iter().position(|x| x.layer == current);
    let start = hl
        .map(|i| i.saturating_sub(rows / 2))
        .unwrap_or(0)
        .min(n - rows);

    let mut lines = Vec::new();
    if show_status {
        lines.extend(status);
    }
    lines.extend(token_line);
    if show_legend {
        let (acc, ctl) = if bw >= 13 {
            ("acc ", "control")
        } else {
            ("", "ctl")
        };
        let used = 2 + acc.len() + ctl.len();
        lines.push(Line::from(vec![
            Span::raw("    "),
            Span::styled("█", t.accent()),
            Span::raw(acc),
            Span::styled("▒", t.dim()),
            Span::raw(ctl),
            Span::raw(" ".repeat(bw.saturating_sub(used))),
            Span::styled(" acc  sel", t.dim()),
        ]));
    }
    for x in &results[start..start + rows] {
        let sel = x.layer == current;
        let label = match (x.layer, sel) {
            (0, _) => "emb".to_string(),
            (l, true) => format!("▸{l:>2}"),
            (l, false) => format!("{l:>3}"),
        };
        let label_style = if sel { t.selected() } else { t.dim() };
        let num_style = if sel { t.selected() } else { t.text() };
        let mut spans = vec![Span::styled(label, label_style), Span::raw(" ")];
        spans.extend(bar(app, x.accuracy, x.control_accuracy, bw));
        spans.push(Span::raw(" "));
        spans.push(Span::styled(frac(x.accuracy), num_style));
        spans.push(Span::raw(" "));
        let sign = if x.selectivity < 0.0 { "-" } else { "+" };
        spans.push(Span::styled(
            format!("{sign}{}", frac(x.selectivity.abs())),
            if x.selectivity <= 0.0 {
                t.warn()
            } else {
                num_style
            },
        ));
        lines.push(Line::from(spans));
    }
    if show_sizes {
        if let Some(x) = results.first() {
            lines.push(Line::from(Span::styled(
                clip(
                    &format!(
                        "train {} test {} maj {}",
                        x.train_size,
                        x.test_size,
                        frac(x.majority)
                    ),
                    w,
                ),
                t.dim(),
            )));
        }
    }
    f.render_widget(Paragraph::new(lines), inner);
}

/// The cursor token's probe label line.
fn token_probe_line<'a>(app: &App, tp: &TokenProbe, w: usize) -> Line<'a> {
    let t = &app.theme;
    let dim = |s: &str| Line::from(Span::styled(clip(s, w), t.dim()));
    match tp {
        TokenProbe::Label {
            token,
            layer,
            predicted,
            gold,
        } => {
            let ok = predicted == gold;
            let name = clip(&super::one_line(token), 10);
            let at = if *layer == 0 {
                "emb".to_string()
            } else {
                format!("L{layer}")
            };
            let mut spans = vec![
                Span::styled(format!("«{name}» {at} "), t.dim()),
                Span::styled(predicted.clone(), t.accent()),
                Span::styled(format!(" gold {gold} "), t.dim()),
                Span::styled(
                    if ok { "✓" } else { "✗" },
                    if ok { t.accent() } else { t.error() },
                ),
            ];
            let used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
            if used > w {
                // Narrow: drop the token name first.
                spans.remove(0);
                spans.insert(0, Span::styled(format!("{at} "), t.dim()));
            }
            Line::from(spans)
        }
        TokenProbe::PairTask => dim("pair task: no single-token label"),
        TokenProbe::NoFeatures => dim("labels need source input (m)"),
        TokenProbe::NotCovered { token } => dim(&format!(
            "«{}» outside the window",
            clip(&super::one_line(token), 10)
        )),
        TokenProbe::NoProbe => dim("no probe fitted at this layer"),
    }
}

/// `0.82` as `.82`, `1.0` as `1.0` (three columns).
fn frac(v: f64) -> String {
    let c = (v.clamp(0.0, 1.0) * 100.0).round() as u32;
    if c >= 100 {
        "1.0".into()
    } else {
        format!(".{c:02}")
    }
}

/// The bar of one layer, `w` cells: `▒` up to the control accuracy, `█` from there to
/// the accuracy (or `░` from the accuracy up to a higher control), `·` after.
fn bar(app: &App, acc: f64, ctl: f64, w: usize) -> Vec<Span<'static>> {
    let t = &app.theme;
    let cells = |v: f64| ((v.clamp(0.0, 1.0) * w as f64).round() as usize).min(w);
    let (a, c) = (cells(acc), cells(ctl));
    let both = a.min(c);
    let mut out = Vec::new();
    let mut push = |n: usize, ch: &str, style| {
        if n > 0 {
            out.push(Span::styled(ch.repeat(n), style));
        }
    };
    push(both, "▒", t.dim());
    push(a.saturating_sub(c), "█", t.accent());
    push(c.saturating_sub(a), "░", t.warn());
    push(w - a.max(c), "·", t.dim());
    out
}
