//! The probe panel for AST-Probe: per-layer constituent F1 against the control trees'
//! (the bars of the other tasks), then the snippet's tree rebuilt by the probe at the
//! current layer's output beside its gold tree.
//!
//! Lines, top to bottom: the job's progress while it runs; a summary (this snippet's
//! constituent F1 / precision / recall at the layer, or why there is no tree); the
//! legend and a window of layer rows around the current one (with a range line when not
//! every layer fits); a header naming the two trees with their counts of marked
//! constituents; then the two trees side by side as indented text.
//!
//! Marks: a constituent the other tree lacks is drawn in the error colour after `✗`
//! (rebuilt side: wrong; gold side: missed), one whose leaves the other tree groups
//! under another label in the warning colour after `≈`, so both survive NO_COLOR and 256
//! colours; leaves are the tokens' text in `«»`. Each tree scrolls on its own to keep the
//! token cursor's leaf (marked `▸`) in the middle, and indents relative to its
//! shallowest visible row, so the token keys (h l j k w b, PgUp PgDn) walk both trees.
//! The layer rows take at most two fifths of the height; a panel too short for the
//! trees says so in the summary line.

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::probes::{bar_width, frac, legend_line, range_line, result_line};
use super::{clip, one_line};
use crate::probe::astprobe::view::{self, Mark, Row, RowKind, SnippetTrees};
use crate::probe::ProbeResult;
use crate::tui::app::App;

/// Fewest lines below the layer rows for the trees (their header and three rows).
const TREE_MIN_H: usize = 4;

/// Where the AST panel's lines go in an inner area of height `h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AstRows {
    pub status: bool,
    pub summary: bool,
    pub legend: bool,
    /// First layer row shown and how many.
    pub start: usize,
    pub rows: usize,
    pub range: bool,
    /// Lines for the trees (header included); 0 = no trees.
    pub tree_h: usize,
}

impl AstRows {
    /// Offset of the first layer row from the top of the inner area.
    pub fn layer_y(&self) -> u16 {
        u16::from(self.status) + u16::from(self.summary) + u16::from(self.legend)
    }
}

/// The AST panel's line budget for `n` layer rows (`hl`: the current layer's row) in
/// `h` lines: status and summary first, the layer rows in at most two fifths of the rest
/// (all of it when the trees would not fit), the trees below.
pub fn rows_for(n: usize, hl: Option<usize>, status: bool, h: usize) -> AstRows {
    let mut room = h;
    let status = status && room >= 2;
    room -= usize::from(status);
    let summary = room >= 2;
    room -= usize::from(summary);
    // The layer part: legend + rows (+ range line); the trees get what is left when
    // at least TREE_MIN_H lines remain beside three layer lines.
    let (layer_room, tree_h) = if n > 0 && room >= TREE_MIN_H + 3 {
        let part = (room * 2 / 5).max(3).min(n + 1);
        (part, room - part)
    } else {
        (room, 0)
    };
    let mut left = layer_room;
    // Beside the trees the legend yields to a third layer row (the title names the
    // bars' value and control).
    let legend = n > 0 && left >= if tree_h > 0 { 5 } else { 3 };
    left -= usize::from(legend);
    let range = n > left && left >= 3;
    left -= usize::from(range);
    let rows = left.min(n);
    let start = super::centred_start(hl, rows, n);
    AstRows {
        status,
        summary,
        legend,
        start,
        rows,
        range,
        // Lines the layer part leaves unused go to the trees.
        tree_h: tree_h
            + if tree_h > 0 {
                layer_room - usize::from(legend) - usize::from(range) - rows
            } else {
                0
            },
    }
}

/// Draw the AST panel's body (below the title) in `inner`.
pub fn draw_body(
    app: &App,
    f: &mut Frame,
    inner: Rect,
    results: &[&ProbeResult],
    status: Option<String>,
) {
    let t = &app.theme;
    let (w, h) = (inner.width as usize, inner.height as usize);
    let r = rows_for(
        results.len(),
        super::probes::current_row(app, results),
        status.is_some(),
        h,
    );
    let bw = bar_width(w);
    let trees = app.ast_trees();
    let mut lines = Vec::new();
    if r.status {
        if let Some(text) = &status {
            lines.push(Line::from(Span::styled(clip(text, w), t.warn())));
        }
    }
    if r.summary {
        lines.push(summary_line(app, trees, r.tree_h > 0, w));
    }
    if r.legend {
        lines.push(legend_line(app, bw, "F1"));
    }
    for x in &results[r.start..r.start + r.rows] {
        lines.push(result_line(app, x, bw));
    }
    if r.range {
        lines.push(range_line(app, results, r.start, r.rows, w));
    }
    let used = lines.len() as u16;
    f.render_widget(
        Paragraph::new(lines),
        Rect::new(inner.x, inner.y, inner.width, used.min(inner.height)),
    );
    if let (Some(Ok(tr)), true) = (trees, r.tree_h > 0) {
        let y = inner.y + used;
        let area = Rect::new(
            inner.x,
            y,
            inner.width,
            (r.tree_h as u16).min(inner.bottom().saturating_sub(y)),
        );
        f.render_widget(Paragraph::new(tree_lines(app, tr, area)), area);
    }
}

/// The snippet's F1 at the layer, or why no tree is shown.
fn summary_line<'a>(
    app: &App,
    trees: Option<Result<&std::sync::Arc<SnippetTrees>, &str>>,
    room: bool,
    w: usize,
) -> Line<'a> {
    let t = &app.theme;
    let dim = |s: String| Line::from(Span::styled(clip(&s, w), t.dim()));
    if app.probe_report().is_none() {
        return dim("the snippet's tree shows once the probe is trained".into());
    }
    match trees {
        None if app.prepared().is_none() => dim("waiting for the analysis…".into()),
        None => dim("rebuilding the tree…".into()),
        Some(Err(e)) => dim(format!("no tree: {e}")),
        Some(Ok(tr)) => {
            let at = if tr.layer == 0 {
                "emb".to_string()
            } else {
                format!("L{}", tr.layer)
            };
            let mut spans = vec![
                Span::styled(format!("{at} this snippet "), t.dim()),
                Span::styled(format!("F1 {}", frac(tr.f1)), t.accent()),
                Span::styled(
                    format!(" P {} R {}", frac(tr.precision), frac(tr.recall)),
                    t.dim(),
                ),
            ];
            if tr.left_out > 0 {
                spans.push(Span::styled(
                    format!(" · first {} tokens", tr.tokens.len()),
                    t.dim(),
                ));
            }
            if !room {
                spans.push(Span::styled(" · trees need a taller panel", t.warn()));
            }
            clip_spans(spans, w)
        }
    }
}

/// Spans clipped to `w` chars, the cut one ending in `…`.
fn clip_spans(spans: Vec<Span<'_>>, w: usize) -> Line<'_> {
    let mut room = w;
    let mut out = Vec::new();
    for s in spans {
        let n = s.content.chars().count();
        if n <= room {
            room -= n;
            out.push(s);
        } else {
            out.push(Span::styled(clip(&s.content, room), s.style));
            break;
        }
    }
    Line::from(out)
}

/// The header and the two trees side by side, `area` high.
fn tree_lines<'a>(app: &App, tr: &SnippetTrees, area: Rect) -> Vec<Line<'a>> {
    let t = &app.theme;
    let w = area.width as usize;
    let lw = w.saturating_sub(1) / 2;
    let rw = w.saturating_sub(1 + lw);
    let vis = (area.height as usize).saturating_sub(1);
    let leaf = tr.leaf_near(app.view.cursor);
    let head = |name: &str, rows: &[Row], cw: usize| -> Vec<Span<'a>> {
        let (_, relabelled, absent) = view::counts(rows);
        let spans = vec![
            Span::styled(name.to_string(), t.accent()),
            Span::styled(format!(" {}{absent}", view::GLYPH_ABSENT), t.error()),
            Span::styled(format!(" {}{relabelled}", view::GLYPH_RELABELLED), t.warn()),
        ];
        pad(clip_spans(spans, cw).spans, cw)
    };
    let mut header = head("rebuilt", &tr.predicted, lw);
    header.push(Span::styled("│", t.dim()));
    header.extend(head("gold", &tr.gold, rw));
    let left = column(app, tr, &tr.predicted, leaf, lw, vis);
    let right = column(app, tr, &tr.gold, leaf, rw, vis);
    let mut out = vec![Line::from(header)];
    for (l, r) in left.into_iter().zip(right) {
        let mut spans = pad(l, lw);
        spans.push(Span::styled("│", t.dim()));
        spans.extend(r);
        out.push(Line::from(spans));
    }
    out
}

/// `spans` padded with spaces to `w` chars.
fn pad(mut spans: Vec<Span<'_>>, w: usize) -> Vec<Span<'_>> {
    let used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
    if used < w {
        spans.push(Span::raw(" ".repeat(w - used)));
    }
    spans
}

/// `vis` lines of one tree, `cw` chars wide, scrolled to keep leaf `leaf` in the middle.
fn column<'a>(
    app: &App,
    tr: &SnippetTrees,
    rows: &[Row],
    leaf: usize,
    cw: usize,
    vis: usize,
) -> Vec<Vec<Span<'a>>> {
    let t = &app.theme;
    let shown = vis.min(rows.len());
    let at = SnippetTrees::leaf_row(rows, leaf).unwrap_or(0);
    let start = at.saturating_sub(shown / 2).min(rows.len() - shown);
    let window = &rows[start..start + shown];
    // Indent relative to the shallowest row shown, at most half the column.
    let base = window.iter().map(|r| r.depth).min().unwrap_or(0);
    let max_indent = cw / 2;
    let mut out: Vec<Vec<Span<'a>>> = window
        .iter()
        .map(|r| {
            let indent = (r.depth - base).min(max_indent);
            let (glyph, text, style): (char, String, Style) = match &r.kind {
                RowKind::Node { label, mark, .. } => {
                    let style = match mark {
                        Mark::Same => t.text(),
                        Mark::Relabelled => t.warn(),
                        Mark::Absent => t.error(),
                    };
                    (mark.glyph(), label.clone(), style)
                }
                RowKind::Leaf(k) => {
                    // «» tell a token from a label without colour.
                    let text = format!("«{}»", one_line(&tr.leaves[*k]));
                    if *k == leaf {
                        ('▸', text, t.selected())
                    } else {
                        (' ', text, t.dim())
                    }
                }
            };
            let room = cw.saturating_sub(1 + indent);
            vec![
                Span::styled(clip(&glyph.to_string(), cw), style),
                Span::raw(" ".repeat(indent.min(cw.saturating_sub(1)))),
                Span::styled(clip(&text, room), style),
            ]
        })
        .collect();
    out.resize_with(vis, Vec::new);
    out
}
