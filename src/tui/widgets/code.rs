//! The code panel: the snippet as written, tokens coloured by category (identifiers by
//! role, definitions bold), the cursor token, and for the current layer and head the
//! attention from (or to) the cursor token as background intensity. With `d`, the
//! cursor's data-flow neighbours are marked. While editing, the editor replaces it.
//!
//! Surprisal view (`S`, causal models): backgrounds show each token's surprisal instead
//! (bits / the snippet's largest, on the theme's surprisal ramp; NO_COLOR: the top
//! decile bold and underlined, unscored tokens dim), the legend line gives the scale and
//! the snippet's perplexity, and a box under the code lists what the model expected
//! where the cursor token starts (top 5 at the previous position, with p) and the
//! token's own surprisal.

use ratatui::layout::{Position, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{clip, one_line, panel};
use crate::analysis::TokenSurprisal;
use crate::model::tokenizer::show_subword;
use crate::syntax::{Category, DfgKind, Graph};
use crate::tui::app::{App, Direction, Focus};
use crate::tui::data::{advance, TAB};
use crate::tui::layout;

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
    let cursor_tok = doc
        .syntax
        .as_ref()
        .and_then(|s| s.tokens.get(app.view.cursor));
    let dir = match app.view.direction {
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
    // The patch view's selected hidden state: each token's Δ bits, the renamed tokens.
    let pt = app.patch_shown().zip(app.patch_layer()).map(|(r, l)| {
        let d = r.token_delta(l);
        let max = d.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()));
        (l, d, max, r.patched_tokens.clone())
    });
    let ko = app.knockout_shown().filter(|_| pt.is_none());
    let surp = app
        .surprisal_shown()
        .filter(|_| ko.is_none() && pt.is_none());
    let mut title = vec![Span::styled("Code", t.accent())];
    if let Some((l, ..)) = &pt {
        title.push(Span::styled(format!(" · patch L{l} (Δ bits)"), t.warn()));
    }
    if let Some(k) = ko {
        let unit = match k.measure {
            crate::analysis::causal::Measure::Bits => "Δ bits",
            crate::analysis::causal::Measure::PllBits => "Δ PLL bits",
            crate::analysis::causal::Measure::Cosine => "1 − cos",
        };
        title.push(Span::styled(
            format!(" · knockout {} ({unit})", k.edges),
            t.warn(),
        ));
    }
    if surp.is_some() {
        title.push(Span::styled(" · surprisal", t.warn()));
    }
    title.push(Span::styled(clip(&head, room), t.dim()));
    let block = panel(app, Focus::Code, title);
    f.render_widget(block, area);
    let Some(g) = layout::code_geom(app, area) else {
        return;
    };
    let (inner, legend_h, pred_h, gutter) = (g.inner, g.legend_h, g.pred_h, g.gutter);
    let text_h = g.text_rows as u16;
    let lay = &doc.layout;
    // The scroll that keeps the cursor in view was settled by `App::update`.
    let (top, left) = app.view.code_scroll;
    let cl = cursor_tok.map_or(0, |_| lay.tok_line[app.view.cursor]);
    let h = text_h as usize;

    // Attention weights normalised by the largest weight on another token.
    let ko_max = ko.map_or(0.0, knockout_max);
    let weights = app.token_weights();
    let wmax = weights
        .as_ref()
        .map(|w| {
            w.iter()
                .enumerate()
                .filter(|(i, _)| *i != app.view.cursor)
                .filter_map(|(_, v)| *v)
                .fold(0.0f32, f32::max)
        })
        .unwrap_or(0.0);
    let threshold = app.threshold();
    // Data-flow neighbours of the cursor token, in the graph the head grid scores
    // (the refined one while its F1 is shown, else the study's).
    let dfg_graph = app.view.dfg_graph();
    let mut dfg_mark: Vec<Option<DfgKind>> = vec![None; doc.n_tokens()];
    if app.view.dfg {
        if let Some(syn) = &doc.syntax {
            for &(i, j, k) in syn.graphs.dfg_edges(dfg_graph).unwrap_or(&[]) {
                if i == app.view.cursor {
                    dfg_mark[j] = Some(k);
                } else if j == app.view.cursor {
                    dfg_mark[i] = Some(k);
                }
            }
        }
    }
    let search = app.view.search.as_ref().map(|s| s.to_lowercase());

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
                    if let Some((_, d, max, renamed)) = &pt {
                        st = if renamed.contains(&i) {
                            st.add_modifier(Modifier::UNDERLINED)
                        } else {
                            diverging_style(app, st, d.get(i).copied().flatten(), *max)
                        };
                    } else if let Some(k) = ko {
                        st = knockout_style(app, st, k, ko_max, i);
                    } else if let Some(sp) = surp {
                        st = surprisal_style(app, st, sp, i);
                    } else if let Some(Some(w)) = weights.as_ref().and_then(|ws| ws.get(i)) {
                        if i != app.view.cursor && wmax > 0.0 {
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
                    if i == app.view.cursor {
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
        spans.extend(hscroll(body, left, g.text_w, t.warn()));
        lines.push(Line::from(spans));
    }
    let text_area = Rect::new(inner.x, inner.y, inner.width, text_h);
    f.render_widget(Paragraph::new(lines), text_area);

    if let Some(sp) = surp {
        if legend_h > 0 {
            let y = inner.y + text_h;
            f.render_widget(
                Paragraph::new(surprisal_legend(app, sp, inner.width as usize)),
                Rect::new(inner.x, y, inner.width, 1),
            );
        }
        if pred_h > 0 {
            let r = Rect::new(inner.x, inner.y + text_h + legend_h, inner.width, pred_h);
            expected_box(app, f, r, sp);
        }
        return;
    }
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
            if app.view.dfg {
                let links = dfg_mark.iter().filter(|m| m.is_some()).count();
                info.push_str(&format!(
                    " · {links} {}data-flow link{}",
                    if dfg_graph == Graph::DfgRefined {
                        "refined "
                    } else {
                        ""
                    },
                    if links == 1 { "" } else { "s" }
                ));
            }
            if let Some(Some(w)) = weights
                .as_ref()
                .map(|ws| ws.get(app.view.cursor).copied().flatten())
            {
                info.push_str(&format!(" · self {w:.2}"));
            }
            if weights
                .as_ref()
                .is_some_and(|ws| ws.get(app.view.cursor).is_some_and(|w| w.is_none()))
            {
                info.push_str(" · not analysed");
            }
        }
        let used: usize = l.iter().map(|s| s.content.chars().count()).sum();
        l.push(Span::styled(
            clip(&info, (inner.width as usize).saturating_sub(used)),
            t.dim(),
        ));
        f.render_widget(
            Paragraph::new(Line::from(l)),
            Rect::new(inner.x, y, inner.width, 1),
        );
    }
}

/// The part of a line's `body` spans from display column `left`, at most `w` columns:
/// a line cut on the right ends with `›`, one scrolled on the left starts with `‹`, so a
/// clipped line never looks whole.
fn hscroll<'a>(
    body: Vec<Span<'a>>,
    left: usize,
    w: usize,
    marker: ratatui::style::Style,
) -> Vec<Span<'a>> {
    let total: usize = body.iter().map(|s| s.content.chars().count()).sum();
    let cut_right = total > left + w;
    // Columns of text kept after `left` (one fewer on each clipped side for its marker).
    let mut skip = left + usize::from(left > 0);
    let mut room = w.saturating_sub(usize::from(cut_right) + usize::from(left > 0));
    let mut out = Vec::new();
    if left > 0 && total > left {
        out.push(Span::styled("‹", marker));
    }
    for sp in body {
        if room == 0 {
            break;
        }
        let n = sp.content.chars().count();
        if skip >= n {
            skip -= n;
            continue;
        }
        let take = (n - skip).min(room);
        let text: String = sp.content.chars().skip(skip).take(take).collect();
        skip = 0;
        room -= take;
        out.push(Span::styled(text, sp.style));
    }
    if cut_right {
        out.push(Span::styled("›", marker));
    }
    out
}

/// The largest change of any token in a knockout (the diverging scale's end).
fn knockout_max(k: &crate::analysis::causal::KnockoutResult) -> f64 {
    k.delta.iter().flatten().fold(0.0f64, |m, d| m.max(d.abs()))
}

/// The style of token `i` in the knockout mode: its change on a diverging scale (the
/// square root of its share of the largest, so small changes still show); without
/// colour, tokens that lose at least half the largest change are bold and underlined,
/// tokens that gain as much italic and underlined.
fn knockout_style(
    app: &App,
    st: ratatui::style::Style,
    k: &crate::analysis::causal::KnockoutResult,
    max: f64,
    i: usize,
) -> ratatui::style::Style {
    diverging_style(app, st, k.delta.get(i).copied().flatten(), max)
}

/// A token's change `d` on the diverging scale ending at `max` (the knockout mode, the
/// patch view): the square root of its share, so small changes still show; without
/// colour, at least half the largest loss bold + underlined, as much gain italic +
/// underlined; no change measured: dim.
fn diverging_style(
    app: &App,
    st: ratatui::style::Style,
    d: Option<f64>,
    max: f64,
) -> ratatui::style::Style {
    let t = &app.theme;
    let Some(d) = d else {
        return st.add_modifier(Modifier::DIM);
    };
    let v = if max > 0.0 { d / max } else { 0.0 };
    if t.colored() {
        let u = (v.signum() * v.abs().sqrt()) as f32;
        st.bg(t.diverging(u * 0.9))
    } else if v >= 0.5 {
        st.add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
    } else if v <= -0.5 {
        st.add_modifier(Modifier::ITALIC | Modifier::UNDERLINED)
    } else {
        st
    }
}

/// The style of token `i` in the surprisal view.
fn surprisal_style(
    app: &App,
    st: ratatui::style::Style,
    sp: &TokenSurprisal,
    i: usize,
) -> ratatui::style::Style {
    let t = &app.theme;
    let Some(b) = sp.bits.get(i).copied().flatten() else {
        return st.add_modifier(Modifier::DIM);
    };
    if t.colored() {
        let v = (b / sp.scale_bits.max(1e-6)).clamp(0.0, 1.0);
        st.bg(t.color(t.surprisal_rgb(v))).fg(t.on_surprisal(v))
    } else if b >= sp.top_decile {
        st.add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
    } else {
        st
    }
}

/// Scale and headline numbers of the surprisal view, one line.
fn surprisal_legend<'a>(app: &App, sp: &TokenSurprisal, w: usize) -> Line<'a> {
    let t = &app.theme;
    let ppl = match (sp.perplexity, sp.mean_bits) {
        (Some(p), Some(b)) => format!(" · ppl {p:.1} ({b:.2} bits/subword)"),
        _ => " · nothing scored".to_string(),
    };
    let mut l = Vec::new();
    if t.colored() {
        l.push(Span::styled("0 ", t.dim()));
        for k in 0..6 {
            let v = k as f32 / 5.0;
            l.push(Span::styled(
                "  ",
                ratatui::style::Style::default().bg(t.color(t.surprisal_rgb(v))),
            ));
        }
        // The scale stops at the 95th percentile: one long token does not wash out the rest.
        let top = if sp.max_bits > sp.scale_bits + 0.05 {
            format!(" ≥{:.1} bits (p95; max {:.1})", sp.scale_bits, sp.max_bits)
        } else {
            format!(" {:.1} bits", sp.max_bits)
        };
        l.push(Span::styled(top, t.dim()));
    } else {
        let top = if sp.top_decile.is_finite() {
            format!("{:.1}", sp.top_decile)
        } else {
            "-".into()
        };
        l.push(Span::styled(
            "top 10%",
            ratatui::style::Style::default().add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
        ));
        l.push(Span::styled(
            format!(" ≥ {top} bits · max {:.1}", sp.max_bits),
            t.dim(),
        ));
    }
    let used: usize = l.iter().map(|s| s.content.chars().count()).sum();
    l.push(Span::styled(clip(&ppl, w.saturating_sub(used)), t.text()));
    Line::from(l)
}

/// A probability in four columns or fewer: `.312`, `1.0`, `4e-4`.
pub(crate) fn prob(p: f32) -> String {
    if p >= 0.9995 {
        "1.0".into()
    } else if p >= 0.0005 {
        format!("{p:.3}").trim_start_matches('0').to_string()
    } else {
        format!("{p:.0e}")
    }
}

/// A bar of `w` cells for `v` in `[0, 1]` in eighths of a cell, so small values still
/// show as a sliver.
fn bar8(v: f32, w: usize) -> String {
    const PART: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    let e = ((v.clamp(0.0, 1.0) * (w * 8) as f32).round() as usize).max(usize::from(v > 0.0));
    let mut out = "█".repeat((e / 8).min(w));
    if e / 8 < w {
        out.push(PART[e % 8]);
        out.extend(std::iter::repeat_n(' ', w - e / 8 - 1));
    }
    out
}

/// What the model expected where the cursor token starts, and its surprisal.
fn expected_box(app: &App, f: &mut Frame, r: Rect, sp: &TokenSurprisal) {
    use ratatui::widgets::{Block, Borders};
    let t = &app.theme;
    let w = r.width as usize;
    let tok = app
        .doc
        .syntax
        .as_ref()
        .and_then(|s| s.tokens.get(app.view.cursor));
    let name = tok
        .map(|x| clip(&one_line(&x.text), 16))
        .unwrap_or_default();
    let bits = sp.bits.get(app.view.cursor).copied().flatten();
    let n_sub = sp.subwords.get(app.view.cursor).map_or(0, |v| v.len());
    let actual = match (bits, n_sub) {
        (_, 0) => "not analysed (beyond the model's window)".to_string(),
        (None, _) => "not scored: no prefix predicts the first subword".to_string(),
        (Some(b), n) => {
            let mut s = format!("{b:.2} bits (p {})", prob((-b).exp2()));
            if n > 1 {
                s.push_str(&format!(" over {n} subwords"));
            }
            if sp.shared.get(app.view.cursor).copied().unwrap_or(false) {
                s.push_str(" · shares a subword");
            }
            s
        }
    };
    let first = sp.first_subword(app.view.cursor);
    let expected = sp.expected(app.view.cursor).unwrap_or(&[]);
    let first_id = sp
        .subwords
        .get(app.view.cursor)
        .and_then(|v| v.first())
        .and_then(|&k| app.prepared().and_then(|p| p.trace.tokens.get(k)))
        .map(|s| s.id);
    let item = |p: &crate::model::Prediction| -> String {
        show_subword(p.token.as_deref().unwrap_or("?"))
    };
    if r.height < 3 {
        // Compact: the token's surprisal, then the expected tokens on one line.
        let mut l2 = vec![Span::styled("expected ", t.dim())];
        for p in expected {
            let st = if Some(p.id) == first_id {
                t.accent()
            } else {
                t.text()
            };
            l2.push(Span::styled(clip(&item(p), 10), st));
            l2.push(Span::styled(format!(" {}  ", prob(p.p)), t.dim()));
        }
        let lines = vec![
            Line::from(vec![
                Span::styled(format!("«{name}» "), t.warn()),
                Span::styled(
                    clip(&actual, w.saturating_sub(name.chars().count() + 3)),
                    t.text(),
                ),
            ]),
            Line::from(l2),
        ];
        f.render_widget(Paragraph::new(lines), r);
        return;
    }
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(t.border(false))
        .title(Line::from(vec![
            Span::styled(" Expected at ", t.accent()),
            Span::styled(format!("«{name}»"), t.warn()),
            Span::styled(" (top 5 before it) ", t.dim()),
        ]));
    let inner = block.inner(r);
    f.render_widget(block, r);
    let mut lines = vec![Line::from(vec![
        Span::styled("actual ", t.dim()),
        Span::styled(
            clip(&first.map(|(s, _)| show_subword(s)).unwrap_or_default(), 14),
            t.accent(),
        ),
        Span::raw(" "),
        Span::styled(clip(&actual, w.saturating_sub(22)), t.text()),
    ])];
    if expected.is_empty() && n_sub > 0 {
        lines.push(Line::from(Span::styled(
            "the first position has no prediction before it",
            t.dim(),
        )));
    }
    for (k, p) in expected.iter().enumerate() {
        let hit = Some(p.id) == first_id;
        let mut l = vec![
            Span::styled(format!(" {} ", k + 1), t.dim()),
            Span::styled(format!("{:>5} ", prob(p.p)), t.text()),
            Span::styled(format!("{} ", bar8(p.p, 8)), t.accent()),
            Span::styled(
                clip(&item(p), 18),
                if hit { t.selected() } else { t.text() },
            ),
        ];
        if hit {
            l.push(Span::styled(" ◂ actual", t.warn()));
        }
        lines.push(Line::from(l));
    }
    f.render_widget(Paragraph::new(lines), inner);
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
    use super::{bar8, expand, prob};
    use crate::model::tokenizer::show_subword;

    #[test]
    fn probability_bars_and_labels() {
        assert_eq!(bar8(0.0, 4), "    ");
        assert_eq!(bar8(1.0, 4), "████");
        assert_eq!(bar8(0.5, 4), "██  ");
        assert_eq!(bar8(0.01, 4), "▏   ", "a sliver for any p > 0");
        assert_eq!(bar8(0.3, 8).chars().count(), 8);
        assert_eq!(prob(0.3124), ".312");
        assert_eq!(prob(1.0), "1.0");
        assert_eq!(prob(0.0002), "2e-4");
        assert_eq!(show_subword("Ġfoo"), "␣foo");
        assert_eq!(show_subword("▁bar"), "␣bar");
        assert_eq!(show_subword("Ċĉ<0x0A>"), "↵⇥↵");
    }

    #[test]
    fn clipped_lines_are_marked() {
        use ratatui::style::Style;
        use ratatui::text::Span;
        let text = |v: Vec<Span>| v.iter().map(|s| s.content.to_string()).collect::<String>();
        let body = || vec![Span::raw("abcdef"), Span::raw("ghij")];
        assert_eq!(
            text(super::hscroll(body(), 0, 10, Style::default())),
            "abcdefghij"
        );
        assert_eq!(
            text(super::hscroll(body(), 0, 6, Style::default())),
            "abcde›"
        );
        assert_eq!(text(super::hscroll(body(), 3, 4, Style::default())), "‹ef›");
        assert_eq!(
            text(super::hscroll(body(), 4, 6, Style::default())),
            "‹fghij"
        );
    }

    #[test]
    fn tabs_expand_to_stops() {
        assert_eq!(expand("\tx", 0), ("    x".to_string(), 5));
        assert_eq!(expand("ab\tx", 0), ("ab  x".to_string(), 5));
        assert_eq!(expand("a\r", 2), ("a".to_string(), 3));
    }
}
