//! The probe panel: per-layer linear-probe accuracy against its control task for the
//! loaded model, one task at a time (`p` trains in the worker, `P` cycles the task).
//!
//! One row per hidden layer (`emb` = embeddings, then the output of layer 1, 2, ...):
//! a bar whose `▒` part is the control accuracy and whose `█` part is what the probe
//! gets beyond it (`░` where control beats the probe), then the accuracy and the
//! selectivity (accuracy - control). The row of the current layer's output is
//! highlighted (and marked `▸`). The legend shows whenever two rows fit beside it; a long
//! stack of layers (deep models) scrolls to keep the current one in view (← → move it,
//! so does the wheel), with a line naming the rows shown; the corpus sizes follow when
//! every row fits.
//!
//! With a report cached, the first line is the probe's label for the cursor token at the
//! current layer's output beside the gold label (token-level tasks: category, depth).
//! Pair tasks label token pairs, so they have no single-token line; the line says so.
//!
//! AST-Probe (the last choice of `P`) draws its per-layer constituent F1 the same way
//! (its control: the probe trained on the control trees) and, below, the snippet's tree
//! rebuilt at the current layer beside the gold tree ([`super::astprobe`]).

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use super::{clip, panel};
use crate::probe::ProbeResult;
use crate::tui::app::{App, Focus, PanelTask, TokenProbe};

/// The probe results shown for the panel's task, by layer (the cached report's, else
/// the running job's partial ones), and the status line above them.
fn results_of(app: &App) -> (Vec<&ProbeResult>, Option<(String, bool)>) {
    let mut results: Vec<&ProbeResult> = Vec::new();
    let mut status = None;
    if let Some(r) = app.probe_report() {
        results.extend(r.results.iter().filter(|x| x.task == app.probe.task.name()));
        if results.is_empty() {
            status = Some(("too few examples for this task".to_string(), true));
        }
    } else if let Some(run) = app.probe_running() {
        results.extend(run.partial.iter());
        status = Some((run.progress.clone(), true));
    }
    results.sort_by_key(|x| x.layer);
    (results, status)
}

/// The index of the current layer's output among `results`.
pub(super) fn current_row(app: &App, results: &[&ProbeResult]) -> Option<usize> {
    results.iter().position(|x| x.layer == app.view.layer + 1)
}

/// Where the probe panel's lines go in its inner area of height `h`.
struct Rows {
    show_status: bool,
    token_line: bool,
    show_legend: bool,
    /// A "rows a–b of n" line (when not every layer fits), else the sizes line if it fits.
    show_range: bool,
    show_sizes: bool,
    /// First result shown and how many.
    start: usize,
    rows: usize,
}

fn rows_for(app: &App, n: usize, hl: Option<usize>, status: bool, h: usize) -> Rows {
    let mut room = h;
    let show_status = status && room >= 2;
    if show_status {
        room -= 1;
    }
    let token_line = app.token_probe().is_some() && room >= 2;
    if token_line {
        room -= 1;
    }
    // The legend says what the bars are: shown whenever two result rows remain.
    let show_legend = n > 0 && room >= 3;
    if show_legend {
        room -= 1;
    }
    let show_range = n > room && room >= 3;
    if show_range {
        room -= 1;
    }
    let show_sizes = !show_range && n > 0 && room > n;
    if show_sizes {
        room -= 1;
    }
    let rows = room.min(n);
    // The current layer's row in the middle where the stack allows.
    let start = super::centred_start(hl, rows, n);
    Rows {
        show_status,
        token_line,
        show_legend,
        show_range,
        show_sizes,
        start,
        rows,
    }
}

/// The screen row of each result row shown in probe panel `area` with its layer (0 =
/// embeddings), for mouse clicks (`None` without results).
pub fn probe_rows(app: &App, area: Rect) -> Option<Vec<(u16, usize)>> {
    let inner = crate::tui::layout::inner(area);
    let (results, status) = results_of(app);
    if results.is_empty() {
        return None;
    }
    let hl = current_row(app, &results);
    if app.probe.task == PanelTask::Ast {
        let r =
            super::astprobe::rows_for(results.len(), hl, status.is_some(), inner.height as usize);
        let y0 = inner.y + r.layer_y();
        return Some(
            results[r.start..r.start + r.rows]
                .iter()
                .enumerate()
                .map(|(k, x)| (y0 + k as u16, x.layer))
                .collect(),
        );
    }
    let r = rows_for(
        app,
        results.len(),
        hl,
        status.is_some(),
        inner.height as usize,
    );
    let y0 =
        inner.y + u16::from(r.show_status) + u16::from(r.token_line) + u16::from(r.show_legend);
    Some(
        results[r.start..r.start + r.rows]
            .iter()
            .enumerate()
            .map(|(k, x)| (y0 + k as u16, x.layer))
            .collect(),
    )
}

pub fn draw(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    let block = panel(
        app,
        Focus::Probes,
        super::fit_title(
            vec![
                Span::styled("Probes", t.accent()),
                Span::raw(" "),
                Span::styled(app.probe.task.name(), t.warn()),
                Span::styled(
                    if app.probe.task == PanelTask::Ast {
                        " · tree F1 vs control"
                    } else {
                        " · accuracy vs control"
                    },
                    t.dim(),
                ),
            ],
            area.width,
        ),
    );
    let inner = block.inner(area);
    f.render_widget(block, area);
    let (w, h) = (inner.width as usize, inner.height as usize);
    if w == 0 || h == 0 {
        return;
    }
    let (results, status) = results_of(app);
    if results.is_empty() && status.is_none() {
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
        let what = match app.probe.task {
            PanelTask::Task(task) => format!(
                ": train linear probes for {} on the bundled {} corpus (per-layer accuracy vs control; in the background, cached after)",
                task.name(),
                app.doc.lang.name()
            ),
            PanelTask::Ast => format!(
                ": train AST-Probe on the bundled {} corpus (per-layer tree F1 vs control, and this snippet's tree rebuilt beside the gold one; in the background, cached after)",
                app.doc.lang.name()
            ),
        };
        lines.push(Line::from(vec![
            Span::styled("p", t.warn()),
            Span::raw(what),
        ]));
        lines.push(Line::from(vec![
            Span::styled("P", t.warn()),
            Span::raw(": next task"),
        ]));
        f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }), inner);
        return;
    }

    if app.probe.task == PanelTask::Ast {
        super::astprobe::draw_body(app, f, inner, &results, status.map(|s| s.0));
        return;
    }
    let bw = bar_width(w);
    let n = results.len();
    let r = rows_for(app, n, current_row(app, &results), status.is_some(), h);
    let mut lines = Vec::new();
    if r.show_status {
        if let Some((text, _)) = &status {
            lines.push(Line::from(Span::styled(clip(text, w), t.warn())));
        }
    }
    if r.token_line {
        if let Some(tp) = app.token_probe() {
            lines.push(token_probe_line(app, &tp, w));
        }
    }
    if r.show_legend {
        lines.push(legend_line(app, bw, "acc"));
    }
    for x in &results[r.start..r.start + r.rows] {
        lines.push(result_line(app, x, bw));
    }
    if r.show_range {
        lines.push(range_line(app, &results, r.start, r.rows, w));
    }
    if r.show_sizes {
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

/// Width of a result row's bar in a panel `w` wide. Row layout: label(3) bar(bw)
/// value(3) selectivity(4), single spaces between.
pub(super) fn bar_width(w: usize) -> usize {
    w.saturating_sub(13).max(3)
}

/// The legend above the result rows (`what`: the value's name, `acc` or `F1`).
pub(super) fn legend_line<'a>(app: &App, bw: usize, what: &str) -> Line<'a> {
    let t = &app.theme;
    let (val, ctl) = if bw >= 13 {
        (format!("{what} "), "control")
    } else {
        (String::new(), "ctl")
    };
    let used = 2 + val.chars().count() + ctl.len();
    Line::from(vec![
        Span::raw("    "),
        Span::styled("█", t.accent()),
        Span::raw(val),
        Span::styled("▒", t.dim()),
        Span::raw(ctl),
        Span::raw(" ".repeat(bw.saturating_sub(used))),
        Span::styled(format!(" {what:>3}  sel"), t.dim()),
    ])
}

/// One layer's row: label, bar, value and selectivity; the current layer's output
/// highlighted and marked `▸`.
pub(super) fn result_line<'a>(app: &App, x: &ProbeResult, bw: usize) -> Line<'a> {
    let t = &app.theme;
    let sel = x.layer == app.view.layer + 1;
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
    Line::from(spans)
}

/// The "rows a–b of n" line under a scrolled stack of result rows.
pub(super) fn range_line<'a>(
    app: &App,
    results: &[&ProbeResult],
    start: usize,
    rows: usize,
    w: usize,
) -> Line<'a> {
    let name = |l: usize| {
        if l == 0 {
            "emb".to_string()
        } else {
            l.to_string()
        }
    };
    let n = results.len();
    let first = results[start].layer;
    let last = results[start + rows - 1].layer;
    let up = if start > 0 { "▴" } else { " " };
    let down = if start + rows < n { "▾" } else { " " };
    Line::from(Span::styled(
        clip(
            &format!(
                "{up}{down} {}–{} of {n} · ← → scroll",
                name(first),
                name(last)
            ),
            w,
        ),
        app.theme.dim(),
    ))
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
pub(super) fn frac(v: f64) -> String {
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
