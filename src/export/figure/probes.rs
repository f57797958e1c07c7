//! The probe figure: for one task, a row per hidden layer (embeddings, then each layer's
//! output) with the probe's accuracy and its control task's accuracy as bars on one
//! 0-1 axis, the values and selectivity (accuracy - control) beside them, the
//! majority-class baseline as a line, the current layer's row marked.

use super::palette::Palette;
use super::svg::{text_w, Anchor, Font, Svg};
use super::{fmt_value, header, swatch, title_of, Figure, Metrics};
use crate::export::{ProbeChart, View};

pub fn draw(view: &View, p: &ProbeChart, m: Metrics, pal: Palette) -> Figure {
    let mut svg = Svg::new(m.width(), m.width() * 0.5);
    let mut sub = vec![format!(
        "{} probe for {} · {} ({} snippets, split by {}) · train {} · test {}",
        p.probe, p.task, p.corpus, p.snippets, p.split, p.train_size, p.test_size
    )];
    sub.push(format!(
        "selectivity = accuracy - control (a probe on random labels per token string) · current: layer {} output",
        view.layer
    ));
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
    lx = swatch(&mut svg, m, pal, (lx, ly), Some(acc_c), None, "accuracy");
    lx = swatch(
        &mut svg,
        m,
        pal,
        (lx, ly),
        Some(ctl_c),
        None,
        "control task",
    );
    swatch(
        &mut svg,
        m,
        pal,
        (lx, ly),
        Some(pal.gold()),
        None,
        &format!("majority baseline {}", fmt_value(p.majority)),
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
            &format!("accuracy {:.4}", r.accuracy),
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
            "acc {}  ctl {}  sel {sign}{}",
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
        "test accuracy",
    );
    svg.grow_to(m.width(), bottom + 3.0 * small + m.margin());
    let (width, height) = (svg.width, svg.height);
    Figure {
        svg: svg.finish(pal.bg(), &format!("{} · probes {}", title_of(view), p.task)),
        width,
        height,
    }
}
