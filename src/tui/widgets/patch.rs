//! The patch view's panel (`A`, under the code in the twin's place): per hidden state
//! (L0 = the embeddings, the last = the output) the Δ bits on the unchanged tokens and
//! the fraction of the rename effect it carries, for identifiers and syntactic tokens
//! (`-`: the rename moves that class by less than the smallest effect a fraction is
//! given for). The selected state is highlighted; the rows scroll to keep it in view.

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use super::{fit_title, panel};
use crate::tui::app::{App, Focus};

/// One row of the table: the state's label and its identifier and syntactic values.
pub fn row(r: &crate::analysis::patch::PatchResult, l: usize) -> String {
    let frac = |f: Option<f64>| f.map_or("-".to_string(), |f| format!("{f:.3}"));
    let (i, s) = (r.class(l, "identifier"), r.class(l, "syntactic"));
    format!(
        "{:<4}{:>9}{:>7}{:>10}{:>7}",
        format!("L{l}"),
        format!("{:+.3}", i.delta_bits),
        frac(i.fraction),
        format!("{:+.3}", s.delta_bits),
        frac(s.fraction)
    )
}

/// The header over the rows (a row is the selection mark and [`row`]).
pub fn header() -> String {
    format!(
        "{:<5}{:>9}{:>7}{:>10}{:>7}",
        "", "id Δbits", "frac", "syn Δbits", "frac"
    )
}

/// The marker of the selected state's row (the highlight without colour).
const MARK: &str = "▸";

pub fn draw(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    let mut title = vec![
        Span::styled("Patch", t.accent()),
        Span::styled(format!(" · {}", app.compare.choice.label()), t.dim()),
    ];
    let shown = app.patch_shown();
    if let (Some(r), Some(l)) = (shown, app.patch_layer()) {
        let all = r.class(0, "all");
        title.push(Span::styled(
            format!(" · L{l} · rename {:+.2} bits", all.rename_bits),
            t.warn(),
        ));
    }
    let block = panel(app, Focus::Code, fit_title(title, area.width));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let msg = |text: String, style: Style| {
        Paragraph::new(Span::styled(text, style)).wrap(Wrap { trim: true })
    };
    let Some(r) = shown else {
        let (text, style) = match app.patch_problem() {
            Some(why) => (why, t.error()),
            None if app.prepared().is_none() => (
                "the patch comes once the snippet is analysed".into(),
                t.dim(),
            ),
            None => (
                "patching: the twin's residual stream, one hidden state at a time…".into(),
                t.dim(),
            ),
        };
        f.render_widget(msg(text, style), inner);
        return;
    };
    if inner.height < 2 || inner.width < 8 {
        return;
    }
    let sel = app.patch_layer().unwrap_or(0);
    let states = r.states();
    let rows = (inner.height as usize).saturating_sub(1).max(1);
    let top = sel
        .saturating_sub(rows / 2)
        .min(states.saturating_sub(rows));
    let mut head = header();
    if top > 0 {
        head.push_str(&format!(" ↑{top}"));
    }
    let mut lines = vec![Line::from(Span::styled(head, t.dim()))];
    for l in top..(top + rows).min(states) {
        let mark = if l == sel { MARK } else { " " };
        let mut text = format!("{mark}{}", row(r, l));
        let note = match l {
            0 => "  embeddings",
            l if l == r.layers => "  output",
            _ => "",
        };
        if text.chars().count() + note.chars().count() <= inner.width as usize {
            text.push_str(note);
        }
        let style = if l == sel { t.selected() } else { t.text() };
        lines.push(Line::from(Span::styled(text, style)));
    }
    if top + rows < states {
        if let Some(last) = lines.last_mut() {
            last.spans
                .push(Span::styled(format!(" ↓{}", states - top - rows), t.dim()));
        }
    }
    f.render_widget(Paragraph::new(lines), inner);
}
