//! Drawing: `draw(app, frame)` places the panels where the pure layout
//! ([`crate::tui::layout::geometry`]) puts them and calls one function per panel.
//! Everything here reads `&App` and writes nothing but the frame.

mod astprobe;
mod categories;
mod code;
mod heads;
mod heatmap;
mod overlay;
mod presenting;
mod probes;
mod status;
mod twin;

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;

use super::app::{App, Focus, Overlay};
use super::layout;
pub use super::layout::{FULL_H, FULL_W, MIN_H, MIN_W};
pub use heads::unit as metric_unit;
pub use probes::probe_rows;

/// Draw the whole explorer.
pub fn draw(app: &App, f: &mut Frame) {
    let area = f.area();
    let base = app.theme.text();
    f.buffer_mut().set_style(area, base);
    let g = layout::geometry_in(app, area);
    if g.too_small {
        too_small(app, f, area);
        return;
    }
    if let Some(r) = g.code {
        code::draw(app, f, r);
    }
    if let Some(r) = g.twin {
        twin::draw(app, f, r);
    }
    for &(which, r) in &g.panels {
        side_panel(app, f, r, which);
    }
    if let Some(r) = g.pinned {
        heatmap::draw_pinned(app, f, r);
    }
    status::draw(app, f, g.status);
    match &app.overlay {
        Overlay::None => {}
        Overlay::Help => overlay::help(app, f, area),
        Overlay::Prompt(kind, input) => overlay::prompt(app, f, g.status, *kind, input),
        Overlay::Models(p) => overlay::models(app, f, area, p),
        Overlay::ExportMenu(kind) => presenting::export_menu(app, f, area, *kind),
        Overlay::Overview(c) => presenting::overview(app, f, *c),
    }
}

fn side_panel(app: &App, f: &mut Frame, area: Rect, which: Focus) {
    match which {
        Focus::Code | Focus::Heatmap => heatmap::draw(app, f, area),
        Focus::Heads => heads::draw(app, f, area),
        Focus::Categories => categories::draw(app, f, area),
        Focus::Probes => probes::draw(app, f, area),
    }
}

/// A bordered panel with a title; the focused one is highlighted and says "Tab" on
/// small terminals so the cycling is discoverable.
pub(crate) fn panel<'a>(app: &App, which: Focus, title: Vec<Span<'a>>) -> Block<'a> {
    let focused = app.view.focus == which;
    let t = &app.theme;
    let mut spans = vec![Span::raw(" ")];
    spans.extend(title);
    spans.push(Span::raw(" "));
    Block::default()
        .borders(Borders::ALL)
        .border_style(t.border(focused))
        .title(Line::from(spans))
        .title_bottom(
            Line::from(Span::styled(
                if app.size.0 < FULL_W || app.size.1 < FULL_H {
                    " Tab: next panel "
                } else {
                    ""
                },
                t.dim(),
            ))
            .right_aligned(),
        )
}

fn too_small(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    let msg = vec![
        Line::from(Span::styled("terminal too small", t.error())),
        Line::from(format!(
            "{}x{} here; codescope needs at least {MIN_W}x{MIN_H}",
            area.width, area.height
        )),
        Line::from(Span::styled(
            "enlarge the window, or press q to quit",
            t.dim(),
        )),
    ];
    let h = (msg.len() as u16).min(area.height);
    let y = area.y + area.height.saturating_sub(h) / 2;
    f.render_widget(
        Paragraph::new(msg)
            .wrap(Wrap { trim: true })
            .centered()
            .style(Style::default()),
        Rect::new(area.x, y, area.width, h.max(1)),
    );
}

/// Title spans clipped to a panel `width` wide (borders and the spaces around the title
/// taken off), the last one kept ending in `…` when something was cut: ratatui would cut
/// a long title silently.
pub(crate) fn fit_title(spans: Vec<Span<'_>>, width: u16) -> Vec<Span<'_>> {
    let mut room = (width as usize).saturating_sub(4);
    let total: usize = spans.iter().map(|s| s.content.chars().count()).sum();
    if total <= room {
        return spans;
    }
    let mut out = Vec::new();
    for s in spans {
        let n = s.content.chars().count();
        if n < room {
            room -= n;
            out.push(s);
        } else {
            out.push(Span::styled(clip(&s.content, room), s.style));
            break;
        }
    }
    out
}

/// Clip `s` to `w` display chars with an ellipsis.
/// First of `rows` visible rows out of `n` (`rows <= n`) that keeps row `current` in the
/// middle where the list allows (the top without one).
pub(crate) fn centred_start(current: Option<usize>, rows: usize, n: usize) -> usize {
    current
        .map(|i| i.saturating_sub(rows / 2))
        .unwrap_or(0)
        .min(n - rows)
}

pub(crate) fn clip(s: &str, w: usize) -> String {
    let n = s.chars().count();
    if n <= w {
        s.to_string()
    } else if w == 0 {
        String::new()
    } else {
        let mut c: String = s.chars().take(w - 1).collect();
        c.push('…');
        c
    }
}

/// One-line form of a token's text (newlines and tabs shown as spaces).
pub(crate) fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}
