//! The status bar: model, `layer l/L` (with how many layers are in while an analysis
//! comes in layer by layer), `head h/H`, threshold, input mode, direction,
//! the surprisal view (causal models: its perplexity when on, the key when off), compute
//! time (line 1); worker progress, the last message and notices (line 2).

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::clip;
use crate::tui::app::{App, Direction, Level};

/// Notices about the document and analysis shown (truncation, parse errors, staleness).
pub fn notices(app: &App) -> Vec<(Level, String)> {
    let mut out = Vec::new();
    if let Some(syn) = &app.doc.syntax {
        if !syn.errors.is_empty() {
            out.push((
                Level::Warn,
                format!(
                    "{} parse error{} (tokens kept as tree-sitter recovered them)",
                    syn.errors.len(),
                    if syn.errors.len() == 1 { "" } else { "s" }
                ),
            ));
        }
    }
    if let Some(p) = app.prepared() {
        let tr = &p.trace;
        if tr.truncated > 0 {
            let left = app.doc.n_tokens().saturating_sub(p.n());
            out.push((
                Level::Warn,
                format!(
                    "truncated to the model's {}-subword window: {} subwords, {} code tokens left out",
                    // A truncated input fills the window it was fitted to.
                    tr.tokens.len(),
                    tr.truncated,
                    left
                ),
            ));
        }
        if let Some(note) = &p.input_note {
            out.push((Level::Warn, format!("paper mode: {note}")));
        }
        if app.stale() {
            out.push((Level::Info, "showing the previous analysis".into()));
        }
    }
    // Why this model (the start-up choice): until something else is said; it is on
    // stderr at exit too.
    if let Some(n) = app
        .model
        .notice
        .as_ref()
        .filter(|_| app.status.message.is_none())
    {
        out.push((Level::Info, n.clone()));
    }
    out
}

pub fn draw(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    let st = t.status();
    let sep = Span::styled(" │ ", st);
    let (layers, heads) = app.dims();
    // The label (a path can be long) and what follows it, which says what is analysed
    // and is kept whole when the bar is narrow.
    let (label, arch) = match &app.model.loaded {
        Some((label, info)) => (
            label.clone(),
            format!(" ({}{})", info.architecture_note(), info.weights_note()),
        ),
        None => ("no model yet".into(), String::new()),
    };
    let model = format!("{label}{arch}");
    let frac = |i: usize, n: usize| {
        if n == 0 {
            "-/-".to_string()
        } else {
            format!("{}/{n}", i + 1)
        }
    };
    let head = if app.view.mean {
        format!("head mean/{heads}")
    } else {
        format!("head {}", frac(app.view.head, heads))
    };
    // Items in order; optional ones (flagged) are dropped from the right when narrow.
    let mut items: Vec<(String, bool)> = vec![
        (format!(" {model}"), false),
        (
            match app.partial() {
                // The analysis in progress: how many of its layers are in.
                Some(pt) => format!("layer {} ({} in)", frac(app.view.layer, layers), pt.have()),
                None => format!("layer {}", frac(app.view.layer, layers)),
            },
            false,
        ),
        (head, false),
        (format!("t {:.2}", app.threshold()), false),
        (app.view.mode.name().to_string(), false),
        (
            match app.view.direction {
                Direction::From => "from",
                Direction::To => "to",
            }
            .to_string(),
            true,
        ),
    ];
    if let Some(sp) = app.surprisal_shown() {
        // The code panel's title says "surprisal"; the bar gives the headline number.
        let ppl = sp
            .perplexity
            .map_or("ppl -".to_string(), |p| format!("ppl {p:.1}"));
        items.push((ppl, false));
    } else if app.view.surprisal {
        items.push(("surprisal…".into(), false));
    } else if app.model.loaded.as_ref().is_some_and(|(_, i)| i.causal) {
        items.push(("S surprisal".into(), true));
    }
    if let Some(c) = app.compare_status() {
        items.push((c, false));
    }
    if let Some(p) = app.prepared().filter(|_| !app.status.hide_timing) {
        items.push((
            format!("analysed in {:.0} ms", p.elapsed.as_secs_f64() * 1e3),
            true,
        ));
    }
    if app.editor.is_some() {
        items.push(("EDIT".into(), false));
    }
    // Always shown: the way to every other key.
    items.push(("? help".into(), false));
    let width = area.width as usize;
    let total = |it: &[(String, bool)]| -> usize {
        it.iter().map(|(s, _)| s.chars().count()).sum::<usize>() + 3 * it.len().saturating_sub(1)
    };
    while total(&items) > width {
        let Some(i) = items.iter().rposition(|(_, opt)| *opt) else {
            break;
        };
        items.remove(i);
    }
    // Still too wide: the model's label gives way from its left while 8 of its characters
    // stay (a path keeps its last part; the architecture and stack stay whole), else the
    // whole item is cut (with a marker); never `? help`.
    let over = total(&items).saturating_sub(width);
    if over > 0 {
        let n = label.chars().count();
        let keep = n.saturating_sub(over + 1);
        if keep >= 8 {
            let tail: String = label.chars().skip(n - keep).collect();
            items[0].0 = format!(" …{tail}{arch}");
        }
        let over = total(&items).saturating_sub(width);
        if over > 0 {
            let m = &mut items[0].0;
            let keep = m.chars().count().saturating_sub(over).max(4);
            *m = clip(m, keep);
        }
    }
    let mut l1 = Vec::new();
    for (i, (s, _)) in items.into_iter().enumerate() {
        if i > 0 {
            l1.push(sep.clone());
        }
        l1.push(Span::styled(s, st));
    }
    let used: usize = l1.iter().map(|s| s.content.chars().count()).sum();
    let pad = width.saturating_sub(used);
    l1.push(Span::styled(" ".repeat(pad), st));

    let mut parts: Vec<(Level, String)> = Vec::new();
    if let Some(b) = &app.status.busy {
        parts.push((Level::Warn, format!("⟳ {b}")));
    }
    if let Some(m) = &app.status.message {
        parts.push(m.clone());
    }
    parts.extend(notices(app));
    let mut l2 = vec![Span::raw(" ")];
    let mut room = (area.width as usize).saturating_sub(1);
    // A tour step's caption comes first: it is what the audience reads.
    if let Some(c) = app.caption() {
        let c = clip(&format!("▶ {c}"), room);
        room = room.saturating_sub(c.chars().count() + 3);
        l2.push(Span::styled(c, t.accent()));
        if !parts.is_empty() {
            l2.push(Span::styled(" · ", t.dim()));
        }
    }
    for (i, (lvl, text)) in parts.iter().enumerate() {
        if room < 4 {
            break;
        }
        if i > 0 {
            l2.push(Span::styled(" · ", t.dim()));
            room = room.saturating_sub(3);
        }
        let s = clip(text, room);
        room = room.saturating_sub(s.chars().count());
        let style = match lvl {
            Level::Info => t.dim(),
            Level::Warn => t.warn(),
            Level::Error => t.error(),
        };
        l2.push(Span::styled(s, style));
    }
    f.render_widget(Paragraph::new(vec![Line::from(l1), Line::from(l2)]), area);
}
