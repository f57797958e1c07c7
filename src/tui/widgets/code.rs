//! The code panel: the snippet as written, tokens coloured by category (identifiers by
//! role, definitions bold), the cursor token, and for the current layer and head the
//! attention from (or to) the cursor token as background intensity. With `d`, the
//! cursor's data-flow neighbours are marked. While editing, the editor replaces it.

use ratatui::layout::{Position, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{clip, one_line, panel};
use crate::syntax::{Category, DfgKind};
use crate::tui::app::{App, Direction, Focus};
use crate::tui::data::{advance, TAB};

/// Expand tabs in `s` placed at display column `col`; returns the text and the new column.
fn expand(s: &str, col: usize) -> (String, usize) {
    let mut out = String::with_capacity(s.len());
    let mut c = col;
    for ch in s.chars() {
        match ch {
            '\t' => {
                let next = (c / TAB + 1) * TAB;
                out.extend(std::iter::repeat_n(' ', next - c));
                c = next;
            }
            '\r' => {}
            ch if ch.is_control() => {
                out.push(' ');
                c += 1;
            }
            ch => {
                out.push(ch);
                c += 1;
            }
        }
    }
    (out, c)
}

pub fn draw(app: &App, f: &mut Frame, area: Rect) {
    if app.editor.is_some() {
        draw_editor(app, f, area);
        return;
    }
    let t = &app.theme;
    let doc = &app.doc;
    let cursor_tok = doc.syntax.as_ref().and_then(|s| s.tokens.get(app.cursor));
    let dir = match app.direction {
        Direction::From => "from",
        Direction::To => "to",
    };
    let base = std::path::Path::new(&doc.name)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| doc.name.clone());
    let room = (area.width as usize).saturating_sub(12);
    let mut head = format!(" · {} ({})", base, doc.lang.name());
    if let Some(ct) = cursor_tok {
        let sel = format!(" · {dir} «{}»", clip(&one_line(&ct.text), 12));
        if head.chars().count() + sel.chars().count() > room {
            head = format!(
                " · {}",
                clip(&base, room.saturating_sub(sel.chars().count() + 3))
            );
        }
        head.push_str(&sel);
    }
    let title = vec![
        Span::styled("Code", t.accent()),
        Span::styled(clip(&head, room), t.dim()),
    ];
    let block = panel(app, Focus::Code, title);
    let inner = block.inner(area);
    f.render_widget(block, area);
    if inner.height < 2 || inner.width < 8 {
        return;
    }
    let legend_h = if inner.height >= 8 { 1 } else { 0 };
    let text_h = inner.height - legend_h;
    app.code_rows.set(text_h as usize);
    let lay = &doc.layout;
    let gutter = lay.lines.len().to_string().len() + 1;
    let text_w = (inner.width as usize).saturating_sub(gutter + 1).max(1);

    // Scroll so the cursor token stays visible (a margin of 2 lines when possible).
    let (mut top, mut left) = app.code_scroll.get();
    let (cl, cc, cw) = match cursor_tok {
        Some(ct) => (
            lay.tok_line[app.cursor],
            lay.tok_col[app.cursor],
            one_line(&ct.text).chars().count().min(text_w),
        ),
        None => (0, 0, 0),
    };
    let h = text_h as usize;
    let margin = if h > 6 { 2 } else { 0 };
    if cl < top + margin {
        top = cl.saturating_sub(margin);
    } else if cl + margin >= top + h {
        top = cl + margin + 1 - h;
    }
    top = top.min(lay.lines.len().saturating_sub(h.min(lay.lines.len())));
    if cc < left {
        left = cc.saturating_sub(4);
    } else if cc + cw > left + text_w {
        left = cc + cw - text_w + 4;
    }
    if cc + cw <= text_w {
        left = 0;
    }
    app.code_scroll.set((top, left));

    // Attention weights normalised by the largest weight on another token.
    let weights = app.token_weights();
    let wmax = weights
        .as_ref()
        .map(|w| {
            w.iter()
                .enumerate()
                .filter(|(i, _)| *i != app.cursor)
                .filter_map(|(_, v)| *v)
                .fold(0.0f32, f32::max)
        })
        .unwrap_or(0.0);
    let threshold = app.threshold();
    // Data-flow neighbours of the cursor token.
    let mut dfg_mark: Vec<Option<DfgKind>> = vec![None; doc.n_tokens()];
    if app.dfg {
        if let Some(syn) = &doc.syntax {
            for &(i, j, k) in &syn.graphs.dfg {
                if i == app.cursor {
                    dfg_mark[j] = Some(k);
                } else if j == app.cursor {
                    dfg_mark[i] = Some(k);
                }
            }
        }
    }
    let search = app.search.as_ref().map(|s| s.to_lowercase());

    let tokens = doc.syntax.as_ref().map(|s| &s.tokens[..]).unwrap_or(&[]);
    let mut lines: Vec<Line> = Vec::with_capacity(h);
    for li in top..(top + h).min(lay.lines.len()) {
        let (ls, le) = lay.lines[li];
        let mut spans = Vec::new();
        let num_style = if li == cl { t.accent() } else { t.dim() };
        spans.push(Span::styled(
            format!("{:>w$} ", li + 1, w = gutter - 1),
            num_style,
        ));
        spans.push(Span::raw(if li == cl { "▸" } else { " " }));
        let mut col = 0usize;
        let mut pos = ls;
        let mut k = tokens.partition_point(|tk| tk.end <= ls);
        let mut body: Vec<Span> = Vec::new();
        while pos < le {
            let (seg_end, tok) = match tokens.get(k) {
                Some(tk) if tk.start <= pos => (tk.end.min(le), Some(k)),
                Some(tk) if tk.start < le => (tk.start, None),
                _ => (le, None),
            };
            let seg_end = seg_end.max(pos + 1).min(le);
            let seg_end = if doc.text.is_char_boundary(seg_end) {
                seg_end
            } else {
                (seg_end..le)
                    .find(|&b| doc.text.is_char_boundary(b))
                    .unwrap_or(le)
            };
            let (s, c2) = expand(&doc.text[pos..seg_end], col);
            col = c2;
            let style = match tok {
                None => t.dim(),
                Some(i) => {
                    let tk = &tokens[i];
                    let mut st = t.token(tk);
                    if let Some(Some(w)) = weights.as_ref().and_then(|ws| ws.get(i)) {
                        if i != app.cursor && wmax > 0.0 {
                            let v = (w / wmax).clamp(0.0, 1.0);
                            if t.colored() {
                                if v > 0.02 {
                                    st = st.bg(t.heat(v.sqrt() * 0.9, false));
                                    if let Some(fg) = t.on_heat(v.sqrt() * 0.9) {
                                        st = st.fg(fg);
                                    }
                                }
                            } else if v >= 0.5 {
                                st = st.add_modifier(Modifier::REVERSED);
                            } else if v >= 0.2 {
                                st = st.add_modifier(Modifier::UNDERLINED);
                            }
                            if *w > threshold && t.colored() {
                                st = st.add_modifier(Modifier::UNDERLINED);
                            }
                        }
                    }
                    if let Some(kind) = dfg_mark.get(i).copied().flatten() {
                        st = if t.colored() {
                            st.bg(t.heat(0.7, true)).fg(t.color((0, 0, 0)))
                        } else {
                            st.add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
                        };
                        let _ = kind;
                    }
                    if let Some(p) = &search {
                        if tk.text.to_lowercase().contains(p.as_str()) && t.colored() {
                            st = st.add_modifier(Modifier::ITALIC | Modifier::UNDERLINED);
                        }
                    }
                    if i == app.cursor {
                        st = t.cursor();
                    }
                    st
                }
            };
            body.push(Span::styled(s, style));
            pos = seg_end;
            if let Some(i) = tok {
                if tokens[i].end <= seg_end {
                    k = i + 1;
                }
            }
        }
        // Horizontal scroll: drop `left` display columns from the body.
        let mut skip = left;
        for sp in body {
            let n = sp.content.chars().count();
            if skip >= n {
                skip -= n;
                continue;
            }
            if skip > 0 {
                let rest: String = sp.content.chars().skip(skip).collect();
                skip = 0;
                spans.push(Span::styled(rest, sp.style));
            } else {
                spans.push(sp);
            }
        }
        lines.push(Line::from(spans));
    }
    let text_area = Rect::new(inner.x, inner.y, inner.width, text_h);
    f.render_widget(Paragraph::new(lines), text_area);

    if legend_h > 0 {
        let y = inner.y + text_h;
        let mut l = Vec::new();
        for c in Category::ALL {
            let sw = if t.colored() { "■" } else { "" };
            l.push(Span::styled(format!("{sw}{} ", short(c)), t.legend(c)));
        }
        let mut info = String::new();
        if let Some(ct) = cursor_tok {
            let role = ct.role.as_deref().unwrap_or(ct.category.name());
            info = format!(" │ {role}");
            if app.dfg {
                let links = dfg_mark.iter().filter(|m| m.is_some()).count();
                info.push_str(&format!(
                    " · {links} data-flow link{}",
                    if links == 1 { "" } else { "s" }
                ));
            }
            if let Some(Some(w)) = weights
                .as_ref()
                .map(|ws| ws.get(app.cursor).copied().flatten())
            {
                info.push_str(&format!(" · self {w:.2}"));
            }
            if weights
                .as_ref()
                .is_some_and(|ws| ws.get(app.cursor).is_some_and(|w| w.is_none()))
            {
                info.push_str(" · not analysed");
            }
        }
        l.push(Span::styled(info, t.dim()));
        f.render_widget(
            Paragraph::new(Line::from(l)),
            Rect::new(inner.x, y, inner.width, 1),
        );
    }
}

fn short(c: Category) -> &'static str {
    match c {
        Category::Keyword => "keyword",
        Category::Operator => "operator",
        Category::Delimiter => "delim",
        Category::Literal => "literal",
        Category::Identifier => "ident",
    }
}

fn draw_editor(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    let Some(ed) = &app.editor else { return };
    let block = panel(
        app,
        Focus::Code,
        vec![
            Span::styled("Edit", t.accent()),
            Span::styled(" · Esc: apply and re-analyse · Ctrl-D: discard", t.dim()),
        ],
    )
    .border_style(t.border(true));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let h = inner.height as usize;
    app.code_rows.set(h);
    // The editor keeps its own scroll; compute the view here without mutating it.
    let mut top = ed.scroll;
    if ed.row < top {
        top = ed.row;
    } else if ed.row >= top + h.max(1) {
        top = ed.row + 1 - h.max(1);
    }
    let gutter = ed.lines.len().to_string().len() + 1;
    let w = (inner.width as usize).saturating_sub(gutter + 1);
    let cur_col = advance(
        &ed.lines[ed.row].chars().take(ed.col).collect::<String>(),
        0,
    );
    let left = cur_col.saturating_sub(w.saturating_sub(1));
    let lines: Vec<Line> = ed
        .lines
        .iter()
        .enumerate()
        .skip(top)
        .take(h)
        .map(|(i, l)| {
            let (s, _) = expand(l, 0);
            let s: String = s.chars().skip(left).collect();
            Line::from(vec![
                Span::styled(format!("{:>g$} ", i + 1, g = gutter - 1), t.dim()),
                Span::raw(" "),
                Span::raw(s),
            ])
        })
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
    let x = inner.x + (gutter + 1 + cur_col - left) as u16;
    let y = inner.y + (ed.row - top) as u16;
    if x < inner.right() && y < inner.bottom() {
        f.set_cursor_position(Position::new(x, y));
    }
}

#[cfg(test)]
mod tests {
    use super::expand;

    #[test]
    fn tabs_expand_to_stops() {
        assert_eq!(expand("\tx", 0), ("    x".to_string(), 5));
        assert_eq!(expand("ab\tx", 0), ("ab  x".to_string(), 5));
        assert_eq!(expand("a\r", 2), ("a".to_string(), 3));
    }
}
