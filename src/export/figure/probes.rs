//! The probe figure: for one task, a row per hidden layer (embeddings, then each layer's
//! output) with the probe's accuracy and its control task's accuracy as bars on one
//! 0-1 axis, the values and selectivity (accuracy - control) beside them, the
//! majority-class baseline as a line, the current layer's row marked.
//!
//! AST-Probe's figure has the constituent F1 in place of accuracy (its control: the
//! probe on the control trees; its baseline: the featureless tree), and below the axis
//! the snippet's tree rebuilt at the current layer beside the gold tree, as the panel
//! shows them: indented text, unmatched constituents after `✗` and `≈` in their own
//! colours, a window of at most [`TREE_ROWS`] rows around the selected token's leaf.

use super::palette::Palette;
use super::svg::{text_w, Anchor, Font, Svg};
use super::{fmt_value, header, swatch, title_of, Figure, Metrics};
use crate::export::{FigureData, ProbeChart, ProbeTrees, TreeLine};

/// Most rows of each tree drawn (a window around the selected token's leaf).
pub const TREE_ROWS: usize = 48;

pub fn draw(view: &FigureData, p: &ProbeChart, m: Metrics, pal: Palette) -> Figure {
    let ast = p.probe == "ast";
    let mut svg = Svg::new(m.width(), m.width() * 0.5);
    let mut sub = vec![if ast {
        format!(
            "AST-Probe (constituent F1 of the tree rebuilt from each layer) · {} ({} snippets, split by {}) · train {} snippets · test {}",
            p.corpus, p.snippets, p.split, p.train_size, p.test_size
        )
    } else {
        format!(
            "{} probe for {} · {} ({} snippets, split by {}) · train {} · test {}",
            p.probe, p.task, p.corpus, p.snippets, p.split, p.train_size, p.test_size
        )
    }];
    sub.push(if ast {
        format!(
            "selectivity = F1 - control (the probe on random trees keyed by token strings) · current: layer {} output",
            view.layer
        )
    } else {
        format!(
            "selectivity = accuracy - control (a probe on random labels per token string) · current: layer {} output",
            view.layer
        )
    });
    if let Some(l) = &p.token_label {
        sub.push(format!("selected token: {l}"));
    }
    let y0 = header(&mut svg, m, pal, &title_of(view), &sub);
    let body = m.body();
    let small = m.small();
    // Legend.
    let acc_c = pal.heat(0.8);
    let ctl_c = pal.rule();
    let mut lx = m.margin();
    let ly = y0 + small;
    let (value, control, baseline) = if ast {
        ("F1", "control trees", "featureless tree")
    } else {
        ("accuracy", "control task", "majority baseline")
    };
    lx = swatch(&mut svg, m, pal, (lx, ly), Some(acc_c), None, value);
    lx = swatch(&mut svg, m, pal, (lx, ly), Some(ctl_c), None, control);
    swatch(
        &mut svg,
        m,
        pal,
        (lx, ly),
        Some(pal.gold()),
        None,
        &format!("{baseline} {}", fmt_value(p.majority)),
    );
    let label_w = text_w("emb ", body) + 12.0 * m.s;
    let values_w = text_w("acc .00  ctl .00  sel +.00", body) + m.gap();
    let x0 = m.margin() + label_w;
    let bar_w = m.inner() - label_w - values_w;
    let row_h = (body * 2.3).round();
    let top = y0 + m.line(small) + 24.0 * m.s;
    let current = view.layer; // hidden layer index of the current layer's output
    let mut rows = p.rows.clone();
    rows.sort_by_key(|r| r.layer);
    svg.group("probes");
    for (i, r) in rows.iter().enumerate() {
        let y = top + i as f64 * row_h;
        let sel = r.layer == current;
        if sel {
            svg.rect(
                m.margin() - 8.0 * m.s,
                y,
                m.inner() + 16.0 * m.s,
                row_h,
                pal.heat(0.12),
            );
        }
        let label = if r.layer == 0 {
            "emb".to_string()
        } else {
            r.layer.to_string()
        };
        let f = if sel {
            Font::new(body, pal.accent()).bold()
        } else {
            Font::new(body, pal.dim())
        };
        svg.text(
            x0 - 12.0 * m.s,
            y + row_h * 0.5 + 0.36 * body,
            f.anchor(Anchor::End),
            &label,
        );
        let bh = row_h * 0.32;
        let acc_w = r.accuracy.clamp(0.0, 1.0) * bar_w;
        let ctl_w = r.control_accuracy.clamp(0.0, 1.0) * bar_w;
        svg.rect_titled(
            x0,
            y + row_h * 0.16,
            acc_w.max(m.s),
            bh,
            acc_c,
            &format!("{value} {:.4}", r.accuracy),
        );
        svg.rect_titled(
            x0,
            y + row_h * 0.16 + bh + 2.0 * m.s,
            ctl_w.max(m.s),
            bh,
            ctl_c,
            &format!("control {:.4}", r.control_accuracy),
        );
        let sign = if r.selectivity < 0.0 { "-" } else { "+" };
        let text = format!(
            "{} {}  ctl {}  sel {sign}{}",
            if ast { "F1 " } else { "acc" },
            fmt_value(r.accuracy),
            fmt_value(r.control_accuracy),
            fmt_value(r.selectivity.abs())
        );
        let fill = if r.selectivity <= 0.0 {
            pal.accent()
        } else {
            pal.fg()
        };
        let mut f = Font::new(body, fill);
        if sel {
            f = f.bold();
        }
        svg.text(
            x0 + bar_w + 16.0 * m.s,
            y + row_h * 0.5 + 0.36 * body,
            f,
            &text,
        );
    }
    svg.end_group();
    let bottom = top + rows.len() as f64 * row_h;
    // Majority baseline and the axis.
    let mx = x0 + p.majority.clamp(0.0, 1.0) * bar_w;
    svg.line(mx, top, mx, bottom, pal.gold(), 3.0 * m.s);
    svg.line(x0, bottom, x0 + bar_w, bottom, pal.dim(), 1.5 * m.s);
    for k in 0..=4 {
        let v = k as f64 / 4.0;
        let tx = x0 + v * bar_w;
        svg.line(tx, bottom, tx, bottom + 8.0 * m.s, pal.dim(), 1.5 * m.s);
        svg.text(
            tx,
            bottom + 8.0 * m.s + small,
            Font::new(small, pal.fg()).anchor(Anchor::Middle),
            &fmt_value(v),
        );
    }
    svg.text(
        x0 + bar_w * 0.5,
        bottom + 8.0 * m.s + 2.2 * small,
        Font::new(small, pal.dim()).anchor(Anchor::Middle),
        if ast {
            "test constituent F1"
        } else {
            "test accuracy"
        },
    );
    let mut end = bottom + 3.0 * small;
    if let Some(t) = &p.tree {
        end = trees(&mut svg, t, end + m.gap(), m, pal);
    }
    svg.grow_to(m.width(), end + m.margin());
    let (width, height) = (svg.width, svg.height);
    Figure {
        svg: svg.finish(pal.bg(), &format!("{} · probes {}", title_of(view), p.task)),
        width,
        height,
    }
}

/// The rebuilt and gold trees side by side from `top`; returns the bottom.
fn trees(svg: &mut Svg, t: &ProbeTrees, top: f64, m: Metrics, pal: Palette) -> f64 {
    let body = m.body();
    let col_w = (m.inner() - m.gap()) / 2.0;
    let count = |rows: &[TreeLine], mark: &str| rows.iter().filter(|r| r.mark == mark).count();
    let at = if t.layer == 0 {
        "the embeddings".to_string()
    } else {
        format!("layer {} output", t.layer)
    };
    svg.text(
        m.margin(),
        top,
        Font::new(body, pal.fg()).bold(),
        &format!(
            "this snippet at {at}: constituent F1 {} (P {} R {})",
            fmt_value(t.f1),
            fmt_value(t.precision),
            fmt_value(t.recall)
        ),
    );
    let y0 = top + m.line(body) * 1.5;
    let mut bottom = y0;
    svg.group("trees");
    for (k, (name, rows, absent)) in [
        ("rebuilt", &t.predicted, "wrong"),
        ("gold", &t.gold, "missed"),
    ]
    .into_iter()
    .enumerate()
    {
        let x = m.margin() + k as f64 * (col_w + m.gap());
        svg.text(
            x,
            y0,
            Font::new(body, pal.fg()).bold(),
            &format!(
                "{name} · ✗ {absent} {} · ≈ relabelled {}",
                count(rows, "absent"),
                count(rows, "relabelled")
            ),
        );
        let sel = rows.iter().position(|r| r.mark == "selected").unwrap_or(0);
        let shown = rows.len().min(TREE_ROWS);
        let start = sel.saturating_sub(shown / 2).min(rows.len() - shown);
        let line = m.line(body);
        let max_chars = (col_w / (super::svg::CHAR_W * body)) as usize;
        for (i, r) in rows[start..start + shown].iter().enumerate() {
            let y = y0 + (i + 1) as f64 * line + 4.0 * m.s;
            let (glyph, fill) = match r.mark.as_str() {
                "absent" => ('✗', pal.wrong()),
                "relabelled" => ('≈', pal.caution()),
                "selected" => ('▸', pal.accent()),
                "leaf" => (' ', pal.dim()),
                _ => (' ', pal.fg()),
            };
            // Two spaces a level, at most half the column.
            let indent = (2 * r.depth).min(max_chars / 2);
            let text = format!("{glyph} {}{}", " ".repeat(indent), r.text);
            let mut f = Font::new(body, fill);
            if r.mark == "selected" {
                f = f.bold();
            }
            svg.text(x, y, f, &super::svg::clip(&text, max_chars));
            bottom = bottom.max(y);
        }
        if shown < rows.len() {
            let y = y0 + (shown + 1) as f64 * line + 4.0 * m.s;
            svg.text(
                x,
                y,
                Font::new(m.small(), pal.dim()),
                &format!("rows {}–{} of {}", start + 1, start + shown, rows.len()),
            );
            bottom = bottom.max(y);
        }
    }
    svg.end_group();
    bottom
}
