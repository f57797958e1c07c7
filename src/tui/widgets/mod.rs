//! Drawing: `draw(app, frame)` places the panels where the pure layout
//! ([`crate::tui::layout::geometry`]) puts them and calls one function per panel.
//! Everything here reads `&App` and writes nothing but the frame.

mod astprobe;
mod categories;
mod code;
mod heads;
mod heatmap;
mod lens;
mod overlay;
mod patch;
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
pub use lens::word as lens_word;
pub use probes::probe_rows;

/// Draw the whole explorer.
pub fn draw(app: &App, f: &mut Frame) {
    draw_screen(app, f);
    if app.theme.ascii {
        let colored = app.theme.colored();
        let area = f.area();
        asciify(f.buffer_mut(), area, colored);
    }
}

/// The ASCII stand-in of a drawing glyph (`--ascii`): box drawing as `+-|`, shades and
/// blocks as the ramp `.+#@` (a full block in colour becomes a space on that colour:
/// see [`asciify`]), markers as letters. `None`: keep the symbol (text, ASCII).
pub fn ascii_glyph(c: char) -> Option<char> {
    Some(match c {
        '─' | '━' | '═' | '┄' | '┈' | '╌' => '-',
        '│' | '┃' | '║' | '┆' | '┊' | '╎' | '¦' => '|',
        '\u{2500}'..='\u{257f}' => '+',
        '░' => '.',
        '▒' => '+',
        '▓' => '#',
        '█' | '▀' | '▄' => '@',
        '▏' | '▎' | '▍' | '▌' | '▋' | '▊' | '▉' | '▐' | '▕' => '|',
        '▁' | '▂' | '▃' | '▅' | '▆' | '▇' | '▔' => '_',
        '\u{2580}'..='\u{259f}' => '#',
        '▶' | '►' | '▸' => '>',
        '◀' | '◄' | '◂' => '<',
        '▾' | '▼' => 'v',
        '▴' | '▲' => '^',
        '●' => '@',
        '○' => 'o',
        '■' => '#',
        '□' => 'o',
        '\u{25a0}'..='\u{25ff}' => '*',
        _ => return None,
    })
}

/// Replace every drawing glyph of `area` by its [`ascii_glyph`]. In colour, a full or
/// half block (a heat-map cell) becomes a space whose background is the block's colour.
pub fn asciify(buf: &mut ratatui::buffer::Buffer, area: Rect, colored: bool) {
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            let Some(cell) = buf.cell_mut((x, y)) else {
                continue;
            };
            let mut chars = cell.symbol().chars();
            let (Some(c), None) = (chars.next(), chars.next()) else {
                continue;
            };
            if colored && matches!(c, '█' | '▀' | '▄') {
                let fg = cell.fg;
                cell.set_symbol(" ");
                cell.bg = fg;
            } else if let Some(a) = ascii_glyph(c) {
                cell.set_char(a);
            }
        }
    }
}

fn draw_screen(app: &App, f: &mut Frame) {
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
    if let Some(r) = g.patch {
        patch::draw(app, f, r);
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
        Overlay::Lens => lens::draw(app, f),
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

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::buffer::Buffer;
    use ratatui::style::{Color, Style};

    #[test]
    fn asciify_leaves_no_drawing_glyph_and_keeps_heat_colours() {
        let area = Rect::new(0, 0, 12, 2);
        let mut b = Buffer::empty(area);
        b.set_string(0, 0, "┌─┐│░▒▓ ●○▶¦", Style::default());
        b.set_string(0, 1, "█▀x…→", Style::default().fg(Color::Rgb(9, 8, 7)));
        let mut mono = b.clone();
        asciify(&mut b, area, true);
        let row = |b: &Buffer, y: u16| -> String { (0..12).map(|x| b[(x, y)].symbol()).collect() };
        assert_eq!(row(&b, 0), "+-+|.+# @o>|");
        // A heat-map cell in colour: a space on the cell's colour.
        assert_eq!(row(&b, 1), "  x…→       ");
        assert_eq!(b[(0, 1)].bg, Color::Rgb(9, 8, 7));
        assert_eq!(b[(1, 1)].bg, Color::Rgb(9, 8, 7));
        // Without colour the blocks take the top of the ramp; text stays as it is.
        asciify(&mut mono, area, false);
        assert_eq!(row(&mono, 1), "@@x…→       ");
        for c in '\u{2500}'..='\u{25ff}' {
            assert!(ascii_glyph(c).is_some_and(|a| a.is_ascii()), "{c}");
        }
    }
}
