//! Category attention relative to uniform: for the coarse 2x2 (syntactic / identifier)
//! and the fine 5x5 (keyword, operator, delimiter, literal, identifier) classes (rows =
//! query class, columns = key class, self-pairs excluded), each cell is the mean weight
//! of a query-key pair divided by uniform attention `1/n` over the `n` analysed tokens
//! (`×`: 1 = an even spread, 3 = three times that), so long snippets, where every mean
//! is about `1/n`, still say something. The share (`%`) is the part of the query class's
//! attention that goes to the key class. Shown for the current head (or head mean) and
//! beside it the layer average; a footer line says what the numbers are.

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{clip, panel};
use crate::analysis::CategoryMatrix;
use crate::tui::app::{App, Focus};

const COARSE: [&str; 2] = ["syn", "id"];
const FINE: [&str; 5] = ["kw", "op", "dl", "lit", "id"];
const CW: usize = 4;

/// What a block of cells shows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cells {
    /// Mean pair weight / (1/n).
    Ratio,
    /// Share of the row's attention, %.
    Share,
}

fn cell(v: Option<f64>, what: Cells) -> String {
    match v {
        None => format!("{:>CW$}", "·"),
        Some(x) => match what {
            Cells::Ratio if x < 9.95 => format!("{x:>CW$.1}"),
            Cells::Ratio => format!("{:>CW$.0}", x.min(999.0)),
            Cells::Share => format!("{:>CW$.0}", x * 100.0),
        },
    }
}

/// The lines of one matrix: title, column header, one row per query class. Every line
/// is exactly `4 + k * CW` columns wide.
fn one<'a>(
    app: &App,
    names: &[&str],
    vals: &dyn Fn(usize, usize) -> Option<f64>,
    what: Cells,
    title: &str,
    vmax: f64,
) -> Vec<Line<'a>> {
    let t = &app.theme;
    let k = names.len();
    let w = 4 + k * CW;
    let mut out = vec![Line::from(Span::styled(
        format!("{:<w$}", clip(title, w)),
        t.accent(),
    ))];
    let mut head = vec![Span::styled("q\\k ", t.dim())];
    for n in names {
        head.push(Span::styled(format!("{n:>CW$}"), t.dim()));
    }
    out.push(Line::from(head));
    for (q, name) in names.iter().enumerate() {
        let mut row = vec![Span::styled(format!("{name:<4}"), t.dim())];
        for kk in 0..k {
            let v = vals(q, kk);
            let mut st = Style::default();
            if t.colored() {
                if let Some(x) = v {
                    let s = ((x / vmax.max(1e-12)) as f32).clamp(0.0, 1.0).sqrt() * 0.85;
                    st = st.bg(t.heat(s, false));
                    if let Some(fg) = t.on_heat(s) {
                        st = st.fg(fg);
                    }
                }
            }
            row.push(Span::styled(cell(v, what), st));
        }
        out.push(Line::from(row));
    }
    out
}

/// Blocks of lines side by side, three columns apart.
fn beside<'a>(blocks: Vec<Vec<Line<'a>>>) -> Vec<Line<'a>> {
    let mut it = blocks.into_iter();
    let Some(first) = it.next() else {
        return Vec::new();
    };
    it.fold(first, |acc, b| {
        acc.into_iter()
            .zip(b)
            .map(|(mut x, y)| {
                x.spans.push(Span::raw("   "));
                x.spans.extend(y.spans);
                x
            })
            .collect()
    })
}

fn ratio_max(ms: &[&CategoryMatrix], n: usize) -> f64 {
    ms.iter()
        .flat_map(|m| (0..m.k * m.k).map(move |i| m.ratio_to_uniform_at(i / m.k, i % m.k, n)))
        .flatten()
        .fold(0.0f64, f64::max)
}

/// The study's finding in the Categories panel (`F`): per layer the best head's F1 (and
/// the mean over heads) for syn–syn, id–id (data flow) and syn–id edges, with where each
/// class's attention goes, and one line that says whether the study's pattern shows.
fn draw_finding(app: &App, f: &mut Frame, area: Rect) {
    let t = &app.theme;
    let thr = app.threshold();
    let title = vec![
        Span::styled("Finding", t.accent()),
        Span::styled(
            format!(" · F1 best head (head mean) · t {thr:.2} · F: categories"),
            t.dim(),
        ),
    ];
    let Some((inner, a)) = framed(app, f, area, title) else {
        return;
    };
    if app.cross_stack_shown() {
        f.render_widget(super::heads::cross_note(t), inner);
        return;
    }
    let fd = crate::analysis::finding::Finding::of(a);
    let w = inner.width as usize;
    // Below the rows: the marker's legend, then the reading wrapped to the panel.
    let mut footer = vec![Line::from(Span::styled(
        clip("◂ = syn–id below both others (the study's pattern)", w),
        t.dim(),
    ))];
    let mut cur = String::new();
    for word in fd.reading().split(' ') {
        if !cur.is_empty() && cur.chars().count() + 1 + word.chars().count() > w {
            footer.push(Line::from(Span::styled(std::mem::take(&mut cur), t.dim())));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() {
        footer.push(Line::from(Span::styled(clip(&cur, w), t.dim())));
    }
    // More layers than rows (Gemma 3's 18 in a short panel): a window that keeps the
    // current layer in view, the header saying which layers are shown.
    let n = fd.layers.len();
    let height = inner.height as usize;
    let fits = 1 + n + footer.len() <= height;
    // Windowed: one more line says which layers are shown.
    let mut rows = if fits {
        n
    } else {
        height.saturating_sub(2 + footer.len())
    };
    if rows < n.min(3) {
        footer.clear();
        rows = height.saturating_sub(2);
    }
    let rows = rows.min(n);
    let first = app
        .view
        .layer
        .saturating_sub(rows / 2)
        .min(n.saturating_sub(rows));
    if rows < n {
        footer.insert(
            0,
            Line::from(Span::styled(
                clip(
                    &format!("layers {}–{} of {n} (← → move)", first + 1, first + rows),
                    w,
                ),
                t.warn(),
            )),
        );
    }
    let head = " L  syn–syn    id–id      syn–id     %s→i %i→s";
    let mut lines = vec![Line::from(Span::styled(clip(head, w), t.dim()))];
    let pct = |v: Option<f64>| v.map_or("·".to_string(), |v| format!("{:.0}", v * 100.0));
    let pattern = fd.pattern_layers();
    for (i, l) in fd.layers.iter().enumerate().skip(first).take(rows) {
        let cell =
            |r: &crate::analysis::finding::Rel| format!("{:.2}({:.2})", r.best_f1, r.mean_f1);
        let sh = l.shares.unwrap_or([None; 4]);
        // Where each class's attention goes: the cross-class shares (the same-class ones
        // are 100 % less these).
        let row = format!(
            "{:>2}  {:<10} {:<10} {:<10} {:>4} {:>4}",
            i + 1,
            cell(&l.rels[0]),
            cell(&l.rels[1]),
            cell(&l.rels[2]),
            pct(sh[1]),
            pct(sh[2]),
        );
        let style = if i == app.view.layer {
            t.accent()
        } else {
            Style::default()
        };
        let mark = if pattern.contains(&(i + 1)) {
            "◂"
        } else {
            " "
        };
        lines.push(Line::from(vec![
            Span::styled(clip(&row, w.saturating_sub(1)), style),
            Span::styled(mark, t.dim()),
        ]));
    }
    lines.extend(footer);
    f.render_widget(Paragraph::new(lines), inner);
}

/// The panel's frame with `title`, and the analysis shown (a waiting line without one).
fn framed<'a>(
    app: &'a App,
    f: &mut Frame,
    area: Rect,
    title: Vec<Span<'static>>,
) -> Option<(Rect, &'a std::sync::Arc<crate::analysis::SnippetAnalysis>)> {
    let t = &app.theme;
    let block = panel(app, Focus::Categories, super::fit_title(title, area.width));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let Some(a) = app.prepared() else {
        f.render_widget(
            Paragraph::new(Span::styled("waiting for the analysis…", t.dim())),
            inner,
        );
        return None;
    };
    Some((inner, a))
}

pub fn draw(app: &App, f: &mut Frame, area: Rect) {
    if app.view.finding {
        return draw_finding(app, f, area);
    }
    let t = &app.theme;
    let title = vec![
        Span::styled("Categories", t.accent()),
        Span::styled(" · × uniform, % share", t.dim()),
    ];
    let Some((inner, a)) = framed(app, f, area, title) else {
        return;
    };
    if a.coarse.is_empty() {
        return;
    }
    let n = a.n();
    let l = app.view.layer.min(a.coarse.len() - 1);
    let h = app
        .view
        .head
        .min(a.coarse.first().map_or(0, |r| r.len()).saturating_sub(1));
    let (hc, hf, hname) = if app.view.mean {
        (
            &a.coarse_layer[l],
            &a.fine_layer[l],
            format!("L{} mean", l + 1),
        )
    } else {
        (
            &a.coarse[l][h],
            &a.fine[l][h],
            format!("L{} H{}", l + 1, h + 1),
        )
    };
    let lname = format!("L{} avg", l + 1);
    let (cl, fl) = (&a.coarse_layer[l], &a.fine_layer[l]);
    let cmax = ratio_max(&[hc, cl], n);
    let fmax = ratio_max(&[hf, fl], n);
    let r_of = |m: &CategoryMatrix| {
        let m = m.clone();
        move |q: usize, k: usize| m.ratio_to_uniform_at(q, k, n)
    };
    let s_of = |m: &CategoryMatrix| {
        let m = m.clone();
        move |q: usize, k: usize| m.share_at(q, k)
    };
    let w = inner.width as usize;
    let wide = w >= 2 * (4 + 5 * CW) + 3;
    let three = w >= 3 * (4 + 2 * CW) + 6;
    let mut lines = Vec::new();
    let mut coarse = vec![
        one(
            app,
            &COARSE,
            &r_of(hc),
            Cells::Ratio,
            &format!("{hname} ×"),
            cmax,
        ),
        one(
            app,
            &COARSE,
            &s_of(hc),
            Cells::Share,
            &format!("{hname} %"),
            1.0,
        ),
    ];
    if three {
        coarse.push(one(
            app,
            &COARSE,
            &r_of(cl),
            Cells::Ratio,
            &format!("{lname} ×"),
            cmax,
        ));
    }
    lines.extend(beside(coarse));
    // coarse (4 lines) + fine (7) + footer (1), and a blank line between if it fits
    let room_blank = inner.height as usize > 4 + 7 + 1;
    if room_blank {
        lines.push(Line::from(""));
    }
    if wide {
        lines.extend(beside(vec![
            one(
                app,
                &FINE,
                &r_of(hf),
                Cells::Ratio,
                &format!("{hname} ×"),
                fmax,
            ),
            one(
                app,
                &FINE,
                &r_of(fl),
                Cells::Ratio,
                &format!("{lname} ×"),
                fmax,
            ),
        ]));
    } else {
        lines.extend(one(
            app,
            &FINE,
            &r_of(hf),
            Cells::Ratio,
            &format!("{hname} × (fine)"),
            fmax,
        ));
    }
    let foot = format!("× = weight ÷ uniform 1/{n} · % = share of the row");
    lines.push(Line::from(Span::styled(clip(&foot, w), t.dim())));
    f.render_widget(Paragraph::new(lines), inner);
}
