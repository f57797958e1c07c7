//! The logit lens overlay (`Y`): layers (rows, L0 = the embeddings) by code tokens
//! (columns, a window around the selected one), each cell the top-1 guess for the
//! token's first subword at that layer, shaded by the probability of the actual one
//! (`sqrt`; NO_COLOR: a shade glyph), bold where the guess is right, underlined where an
//! identifier is first decided; under it the selected cell, the selected token's
//! decided layer and every identifier's; with room, a side list of the selected token's
//! top-1, probability and rank per layer. Every size is clipped, never negative.

use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

use super::{clip, one_line};
use crate::analysis::causal::LensCell;
use crate::syntax::Coarse;
use crate::tui::app::lens::columns;
use crate::tui::app::App;
use crate::tui::msg::LensData;
use crate::tui::theme::Theme;

/// Columns of one token (its text and a separating space).
const CELL_W: usize = 7;
/// Columns of the row labels (`L18 `).
const LABEL_W: usize = 4;
/// Width of the side list of the selected token, shown when the grid keeps 8 columns.
const SIDE_W: usize = 34;

/// A subword as shown: the tokenizer's word-start marks as a space, control
/// characters as spaces; in `--ascii` anything else outside ASCII as `?`.
pub fn word(s: &str, ascii: bool) -> String {
    let s: String = s
        .chars()
        .map(|c| match c {
            '\u{2581}' | '\u{120}' => ' ',
            '\u{10a}' => '↵',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    if ascii {
        s.chars()
            .map(|c| if c.is_ascii() { c } else { '?' })
            .collect()
    } else {
        s
    }
}

/// `L0 emb`, `L3`, `L18 out`: how a layer row is named.
fn layer_name(l: usize, last: usize) -> String {
    if l == 0 {
        "L0 (embeddings)".into()
    } else if l == last {
        format!("L{l} (output)")
    } else {
        format!("L{l}")
    }
}

pub fn draw(app: &App, f: &mut Frame) {
    let t = &app.theme;
    let (area, _) = crate::tui::app::overview_area(app.size);
    f.render_widget(Clear, area);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.border(true))
        .title(Line::from(vec![
            Span::styled(" Logit lens ", t.accent()),
            Span::styled(
                "· top-1 guess per layer, shaded by p(actual) · ←→ token · ↑↓ layer · x: export · Esc ",
                t.dim(),
            ),
        ]))
        .style(t.text());
    let inner = block.inner(area);
    f.render_widget(block, area);
    if inner.width == 0 || inner.height == 0 {
        return;
    }
    let Some(d) = app.lens_shown() else {
        let msg = match app.lens.result.as_ref() {
            Some(Err(e)) => format!("no logit lens: {e}"),
            _ => "reading every layer through the LM head…".into(),
        };
        f.render_widget(
            Paragraph::new(Span::styled(clip(&msg, inner.width as usize), t.dim())),
            inner,
        );
        return;
    };
    let cols = columns(d);
    if cols.is_empty() {
        f.render_widget(
            Paragraph::new(Span::styled("no code token has a prediction", t.dim())),
            inner,
        );
        return;
    }
    let w = inner.width as usize;
    let h = inner.height as usize;
    let info_h = if h >= 8 { 3 } else { 1.min(h) };
    let side = w >= LABEL_W + 8 * CELL_W + 1 + SIDE_W && h >= 6;
    let grid_w = if side { w - SIDE_W - 1 } else { w };
    let grid = Rect::new(inner.x, inner.y, grid_w as u16, (h - info_h) as u16);
    let sel = cols.iter().position(|&x| x == app.lens.token).unwrap_or(0);
    let token = cols[sel];
    let last = d.lens.cells.len().saturating_sub(1);
    let layer = app.lens.layer.min(last);
    draw_grid(app, f, grid, d, &cols, sel, layer);
    if side {
        let r = Rect::new(
            inner.x + (grid_w + 1) as u16,
            inner.y,
            SIDE_W as u16,
            (h - info_h) as u16,
        );
        draw_side(app, f, r, d, token, layer);
    }
    // The selected cell, the token's decided layer, every identifier's.
    let l = &d.lens;
    let ct = &l.tokens[token];
    let text = word(&one_line(&ct.text), t.ascii);
    let actual = l.first_subword[token]
        .and_then(|p| l.ids.get(p))
        .map_or(String::new(), |&id| word(&d.word(id), t.ascii));
    let cell = match l.token_cell(layer, token) {
        Some(c) => format!(
            "{}: top-1 «{}» · p(«{actual}») {:.3} · rank {}",
            layer_name(layer, last),
            word(&d.word(c.top), t.ascii),
            c.prob,
            c.rank
        ),
        None => format!("{}: no prediction", layer_name(layer, last)),
    };
    let decided = match l.decided_at(token) {
        Some(dl) => format!(
            "«{text}» ({}) is decided at L{dl}: the first layer where it is the top guess",
            ct.category.name()
        ),
        None => format!("«{text}» ({}) is never the top guess", ct.category.name()),
    };
    let idents: Vec<String> = cols
        .iter()
        .filter(|&&x| l.tokens[x].coarse == Coarse::Identifier)
        .map(|&x| {
            let name = word(&one_line(&l.tokens[x].text), t.ascii);
            match l.decided_at(x) {
                Some(dl) => format!("{name} L{dl}"),
                None => format!("{name} –"),
            }
        })
        .collect();
    let idents = format!("identifiers decided at: {}", idents.join(" · "));
    let mut info = vec![Line::from(Span::styled(clip(&cell, w), t.text()))];
    if info_h >= 3 {
        info.push(Line::from(Span::styled(clip(&decided, w), t.dim())));
        info.push(Line::from(Span::styled(clip(&idents, w), t.dim())));
    }
    let ir = Rect::new(
        inner.x,
        inner.y + (h - info_h) as u16,
        inner.width,
        info_h as u16,
    );
    f.render_widget(Paragraph::new(info), ir);
}

/// The first of `vis` items out of `n` that keeps `cur` in view, centred where it can.
fn window(cur: usize, vis: usize, n: usize) -> usize {
    if n <= vis {
        0
    } else {
        cur.saturating_sub(vis / 2).min(n - vis)
    }
}

fn draw_grid(
    app: &App,
    f: &mut Frame,
    r: Rect,
    d: &LensData,
    cols: &[usize],
    sel: usize,
    layer: usize,
) {
    let t = &app.theme;
    let (w, h) = (r.width as usize, r.height as usize);
    if h == 0 || w <= LABEL_W {
        return;
    }
    let l = &d.lens;
    let n_layers = l.cells.len();
    let ncols = ((w - LABEL_W) / CELL_W).clamp(1, cols.len());
    let c0 = window(sel, ncols, cols.len());
    let nrows = (h - 1).min(n_layers);
    let r0 = window(layer, nrows, n_layers);
    let tw = CELL_W - 1;
    let mut lines = Vec::new();
    let mut head = vec![Span::styled(
        format!("{:<LABEL_W$}", if c0 > 0 { "◂" } else { "" }),
        t.dim(),
    )];
    for (k, &tok) in cols.iter().enumerate().skip(c0).take(ncols) {
        let ct = &l.tokens[tok];
        let st = if k == sel {
            t.selected().add_modifier(Modifier::BOLD)
        } else if ct.coarse == Coarse::Identifier {
            t.accent()
        } else {
            t.dim()
        };
        let text = clip(&word(&one_line(&ct.text), t.ascii), tw);
        head.push(Span::styled(format!("{text:<tw$}"), st));
        head.push(Span::raw(" "));
    }
    if c0 + ncols < cols.len() {
        head.push(Span::styled("▸", t.warn()));
    }
    lines.push(Line::from(head));
    for li in r0..r0 + nrows {
        let mark = if li == r0 && r0 > 0 {
            "▴"
        } else if li + 1 == r0 + nrows && r0 + nrows < n_layers {
            "▾"
        } else {
            " "
        };
        let st = if li == layer { t.accent() } else { t.dim() };
        let mut spans = vec![Span::styled(
            format!("{:<w$}{mark}", format!("L{li}"), w = LABEL_W - 1),
            st,
        )];
        for (k, &tok) in cols.iter().enumerate().skip(c0).take(ncols) {
            let c = l.token_cell(li, tok);
            let decided =
                l.tokens[tok].coarse == Coarse::Identifier && l.decided_at(tok) == Some(li);
            let (text, mut style) = cell(t, c, d, tw);
            if c.is_some_and(|c| c.rank == 1) {
                style = style.add_modifier(Modifier::BOLD);
            }
            if decided {
                style = style.add_modifier(Modifier::UNDERLINED);
            }
            if k == sel && li == layer {
                style = t.cursor();
            }
            spans.push(Span::styled(text, style));
            spans.push(Span::raw(" "));
        }
        lines.push(Line::from(spans));
    }
    f.render_widget(Paragraph::new(lines), r);
}

/// One cell: the top guess `tw` wide on the heat of `sqrt(p(actual))` (NO_COLOR: a
/// shade glyph first).
fn cell(t: &Theme, c: Option<LensCell>, d: &LensData, tw: usize) -> (String, Style) {
    let Some(c) = c else {
        return (format!("{:<tw$}", "·"), t.dim());
    };
    let v = c.prob.clamp(0.0, 1.0).sqrt();
    let top = word(&d.word(c.top), t.ascii);
    if t.colored() {
        let mut st = Style::default().bg(t.heat(v, false));
        st = st.fg(t.on_heat(v).unwrap_or(t.color(if t.light {
            (40, 40, 50)
        } else {
            (200, 205, 215)
        })));
        (format!("{:<tw$}", clip(&top, tw)), st)
    } else {
        let g = Theme::shade(v);
        (
            format!("{g}{:<w$}", clip(&top, tw - 1), w = tw - 1),
            Style::default(),
        )
    }
}

/// The selected token's top-1, p(actual) and rank at every layer.
fn draw_side(app: &App, f: &mut Frame, r: Rect, d: &LensData, token: usize, layer: usize) {
    let t = &app.theme;
    let h = r.height as usize;
    if h == 0 {
        return;
    }
    let l = &d.lens;
    let n = l.cells.len();
    let rows = (h - 1).min(n);
    let r0 = window(layer, rows, n);
    let mut lines = vec![Line::from(Span::styled(
        format!("{:<6}{:<13}{:>7}{:>7}", "layer", "top-1", "p", "rank"),
        t.dim(),
    ))];
    for li in r0..r0 + rows {
        let s = match l.token_cell(li, token) {
            Some(c) => format!(
                "{:<6}{:<13}{:>7.3}{:>7}",
                format!("L{li}"),
                clip(&word(&d.word(c.top), t.ascii), 12),
                c.prob,
                c.rank
            ),
            None => format!("{:<6}{:<13}", format!("L{li}"), "·"),
        };
        let st = if li == layer {
            t.accent()
        } else if l.token_cell(li, token).is_some_and(|c| c.rank == 1) {
            t.text().add_modifier(Modifier::BOLD)
        } else {
            t.text()
        };
        lines.push(Line::from(Span::styled(clip(&s, r.width as usize), st)));
    }
    f.render_widget(Paragraph::new(lines), r);
}
