//! Compare mode's twin panel (under the code panel): the twin's code, tokens coloured by
//! category as in the code panel, renamed (changed) tokens bold and underlined, tokens
//! with no partner in the original (a user twin's insertions) in the warning colour, and
//! the token aligned with the cursor highlighted. The view follows the cursor's partner.
//!
//! With the surprisal view on (`S`, causal models), backgrounds show each aligned
//! token's surprisal difference B − A on a diverging scale (blue: less surprising in the
//! twin, orange: more; scaled to the largest difference; NO_COLOR: more surprising bold,
//! less dim). The title gives the twin, how many tokens changed, the rename sensitivity
//! and, when a probe is trained, its agreement between the twins at the current layer.

use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use super::{clip, panel};
use crate::tui::app::{App, Focus};

/// Expand tabs (4 columns) and drop control characters, for one display line.
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c == '\t' {
                "    ".to_string()
            } else if c.is_control() {
                String::new()
            } else {
                c.to_string()
            }
        })
        .collect()
}

pub fn draw(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    let mut title = vec![Span::styled("Twin", t.accent())];
    title.push(Span::styled(
        format!(" · {}", app.compare.choice.label()),
        t.dim(),
    ));
    let comparison = app.comparison();
    let twin = match app.compare_twin() {
        Some(Ok(tw)) => Some(tw.clone()),
        _ => None,
    };
    if let Some(tw) = &twin {
        let n = tw.changed.iter().filter(|c| **c).count();
        title.push(Span::styled(format!(" · {n} changed"), t.dim()));
    }
    if let Some(s) = comparison.and_then(|c| c.surprisal.as_ref()) {
        if let Some(r) = s.rename_sensitivity {
            title.push(Span::styled(
                format!(" · sensitivity {r:+.2} bits"),
                t.warn(),
            ));
        }
    }
    if let Some((task, layers)) = comparison.and_then(|c| c.probe.as_ref()) {
        let l = app.view.layer + 1;
        if let Some(p) = layers.iter().find(|p| p.layer == l) {
            title.push(Span::styled(
                format!(" · probe {task} agrees {:.0}%", 100.0 * p.agreement),
                t.dim(),
            ));
        }
    }
    // Drop title items from the right until the title fits the border.
    let room = (area.width as usize).saturating_sub(6);
    while title.len() > 1
        && title
            .iter()
            .map(|s| s.content.chars().count())
            .sum::<usize>()
            > room
    {
        title.pop();
    }
    let block = panel(app, Focus::Code, title);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let msg = |text: String, style: Style| {
        Paragraph::new(Span::styled(text, style)).wrap(Wrap { trim: true })
    };
    let tw = match app.compare_twin() {
        None => {
            let why = if app.prepared().is_none() {
                "the twin comes once the snippet is analysed"
            } else {
                "making the twin…"
            };
            f.render_widget(msg(why.into(), t.dim()), inner);
            return;
        }
        Some(Err(e)) => {
            f.render_widget(msg(format!("no twin: {e}"), t.error()), inner);
            return;
        }
        Some(Ok(tw)) => tw.clone(),
    };
    if inner.height < 2 || inner.width < 8 {
        return;
    }
    let b = &tw.b;
    let changed = tw.b_changed();
    let partner = tw.b_to_a();
    let cursor_b = tw
        .a_to_b(app.doc.n_tokens())
        .get(app.view.cursor)
        .copied()
        .flatten();
    // Surprisal differences per B token (surprisal view on, both traced with the LM head).
    let mut diff: Vec<Option<f32>> = vec![None; b.tokens.len()];
    if app.view.surprisal {
        if let Some(s) = comparison.and_then(|c| c.surprisal.as_ref()) {
            for &(_, j, x, y) in &s.pairs {
                if j < diff.len() {
                    diff[j] = Some(y - x);
                }
            }
        }
    }
    let dmax = diff
        .iter()
        .flatten()
        .fold(0.0f32, |m, d| m.max(d.abs()))
        .max(1e-6);
    let text_rows = (inner.height as usize).saturating_sub(1).max(1);
    // Line starts of B's text; the view centres the cursor's partner.
    let src = &b.source;
    let mut starts = vec![0usize];
    starts.extend(src.match_indices('\n').map(|(i, _)| i + 1));
    let line_of = |off: usize| starts.partition_point(|&s| s <= off).saturating_sub(1);
    let focus_line = cursor_b.map_or(0, |j| line_of(b.tokens[j].start));
    let top = focus_line
        .saturating_sub(text_rows / 2)
        .min(starts.len().saturating_sub(text_rows));
    let mut lines = Vec::with_capacity(inner.height as usize);
    let mut k = b
        .tokens
        .partition_point(|x| x.end <= starts[top.min(starts.len() - 1)]);
    for row in top..(top + text_rows).min(starts.len()) {
        let (ls, le) = (
            starts[row],
            starts
                .get(row + 1)
                .map_or(src.len(), |&e| e.saturating_sub(1)),
        );
        let mut spans = Vec::new();
        let mut at = ls;
        while k < b.tokens.len() && b.tokens[k].start < le {
            let tok = &b.tokens[k];
            let (s0, s1) = (tok.start.max(ls), tok.end.min(le));
            if s0 > at {
                spans.push(Span::raw(clean(&src[at..s0])));
            }
            let mut st = t.token(tok);
            if changed[k] {
                st = st.add_modifier(Modifier::BOLD | Modifier::UNDERLINED);
            }
            if partner[k].is_none() {
                st = st.patch(t.warn()).add_modifier(Modifier::ITALIC);
            }
            if let Some(d) = diff[k] {
                let v = d / dmax;
                st = if t.colored() {
                    st.bg(t.diverging(v.signum() * v.abs().sqrt()))
                } else if v > 0.25 {
                    st.add_modifier(Modifier::BOLD)
                } else if v < -0.25 {
                    st.add_modifier(Modifier::DIM)
                } else {
                    st
                };
            }
            if Some(k) == cursor_b {
                st = t.cursor();
            }
            spans.push(Span::styled(clean(&src[s0..s1]), st));
            at = s1;
            if tok.end > le {
                break; // continues on the next line
            }
            k += 1;
        }
        if at < le {
            spans.push(Span::raw(clean(&src[at..le])));
        }
        lines.push(Line::from(spans));
    }
    let legend = if diff.iter().any(|d| d.is_some()) {
        format!("surprisal B−A: blue −{dmax:.1} … orange +{dmax:.1} bits · underlined: renamed")
    } else if partner.iter().any(|p| p.is_none()) {
        "underlined: changed · italic: not in the original · v: heatmap A/B/B−A".to_string()
    } else {
        "underlined: renamed · v: heatmap A/B/B−A · C: another twin".to_string()
    };
    while lines.len() < text_rows {
        lines.push(Line::raw(""));
    }
    lines.push(Line::from(Span::styled(
        clip(&legend, inner.width as usize),
        t.dim(),
    )));
    f.render_widget(Paragraph::new(lines), inner);
}
