//! Drawing: `draw(app, frame)` lays out the panels for the terminal size and calls one
//! function per panel. Everything here reads `&App`; the only state written while
//! drawing is the scroll/zoom bookkeeping kept in `Cell`s (so the next key press knows
//! what was on screen).
//!
//! Layouts: at least [`FULL_W`]x[`FULL_H`] all panels (code | heatmap over heads |
//! categories | probes); smaller, down to [`MIN_W`]x[`MIN_H`], the code beside one side
//! panel chosen with Tab (below 76 columns only the focused panel); smaller still, a
//! "terminal too small" message.

mod categories;
mod code;
mod heads;
mod heatmap;
mod overlay;
mod probes;
mod status;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;

use super::app::{App, Focus, Overlay};

/// Smallest usable terminal.
pub const MIN_W: u16 = 60;
pub const MIN_H: u16 = 16;
/// Size from which every panel is shown at once.
pub const FULL_W: u16 = 110;
pub const FULL_H: u16 = 32;

/// Draw the whole explorer.
pub fn draw(app: &App, f: &mut Frame) {
    let area = f.area();
    let base = app.theme.text();
    f.buffer_mut().set_style(area, base);
    if area.width < MIN_W || area.height < MIN_H {
        too_small(app, f, area);
        return;
    }
    let [main, status_area] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(2)]).areas(area);
    if area.width >= FULL_W && area.height >= FULL_H {
        full(app, f, main);
    } else {
        compact(app, f, main);
    }
    status::draw(app, f, status_area);
    match &app.overlay {
        Overlay::None => {}
        Overlay::Help => overlay::help(app, f, area),
        Overlay::Prompt(kind, input) => overlay::prompt(app, f, status_area, *kind, input),
        Overlay::Models(p) => overlay::models(app, f, area, p),
    }
}

fn full(app: &App, f: &mut Frame, main: Rect) {
    let (layers, heads) = app.dims();
    let heads = if heads == 0 { 12 } else { heads };
    let bottom_h = (heads as u16 + 4).clamp(14, main.height / 2);
    let [top, bottom] =
        Layout::vertical([Constraint::Min(8), Constraint::Length(bottom_h)]).areas(main);
    let [code_a, heat_a] =
        Layout::horizontal([Constraint::Percentage(54), Constraint::Percentage(46)]).areas(top);
    let layers = if layers == 0 { 12 } else { layers };
    let grid_w = (5 + 3 * layers as u16 + 2).max(32);
    let [grid_a, cat_a, probe_a] = Layout::horizontal([
        Constraint::Length(grid_w),
        Constraint::Length(54),
        Constraint::Min(18),
    ])
    .areas(bottom);
    code::draw(app, f, code_a);
    heatmap::draw(app, f, heat_a);
    heads::draw(app, f, grid_a);
    categories::draw(app, f, cat_a);
    probes::draw(app, f, probe_a);
}

fn compact(app: &App, f: &mut Frame, main: Rect) {
    let side = if app.side == Focus::Code {
        Focus::Heatmap
    } else {
        app.side
    };
    if main.width < 76 {
        if app.focus == Focus::Code || app.editor.is_some() {
            code::draw(app, f, main);
        } else {
            side_panel(app, f, main, side);
        }
        return;
    }
    let [code_a, side_a] =
        Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(main);
    code::draw(app, f, code_a);
    side_panel(app, f, side_a, side);
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
    let focused = app.focus == which;
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

/// Clip `s` to `w` display chars with an ellipsis.
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
