//! The finding figure: per layer, the F1 of the best head (a bar, with the head-mean F1
//! as a tick on it) against the syn–syn, id–id (data flow) and syn–id edges, side by side,
//! the share of each class's attention that goes to the other class, and the one-line
//! reading (`analysis::finding`). The explorer's `F` panel as a slide.

use serde_json::Value;

use super::palette::Palette;
use super::svg::{text_w, Anchor, Font, Svg};
use super::{header, title_of, Figure, Metrics};
use crate::export::FigureData;

/// The three columns: the JSON key and the label.
const COLUMNS: [(&str, &str); 3] = [
    ("syntactic", "syn–syn"),
    ("dfg", "id–id (data flow)"),
    ("syntactic_identifier", "syn–id"),
];

pub fn draw(view: &FigureData, fd: &Value, m: Metrics, pal: Palette) -> Figure {
    let layers = fd["layers"].as_array().cloned().unwrap_or_default();
    let pattern: Vec<u64> = fd["pattern_layers"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    let mut svg = Svg::new(m.width(), m.width() * 0.5);
    let sub = vec![
        format!(
            "F1 of each layer's best head (bar; head mean: tick) against syn–syn, id–id and syn–id edges · t = {} · {} input",
            fd["threshold"], view.mode
        ),
        "shares: the part of syntactic (identifier) tokens' attention that goes to identifiers (syntactic tokens) · ◂ syn–id below both others".into(),
    ];
    let mut y = header(
        &mut svg,
        m,
        pal,
        &format!("{} · the finding", title_of(view)),
        &sub,
    );
    let (body, small) = (m.body(), m.small());
    let label_w = text_w("layer 88", body) + 16.0 * m.s;
    let share_w = text_w("syn→id id→syn", small) + 40.0 * m.s;
    let col_w = (m.inner() - label_w - share_w - 3.0 * m.gap()) / 3.0;
    let row_h = (44.0 * m.s).max(body * 1.6);
    let vmax = layers
        .iter()
        .flat_map(|l| {
            COLUMNS
                .iter()
                .map(move |(k, _)| l[*k]["best_f1"].as_f64().unwrap_or(0.0))
        })
        .fold(0.0f64, f64::max)
        .max(0.05);
    // Column heads.
    let x0 = m.margin() + label_w;
    for (c, (_, name)) in COLUMNS.iter().enumerate() {
        svg.text(
            x0 + c as f64 * (col_w + m.gap()),
            y + body,
            Font::new(body, pal.fg()).bold(),
            name,
        );
    }
    let xs = x0 + 3.0 * (col_w + m.gap());
    svg.text(xs, y + body, Font::new(small, pal.dim()), "syn→id  id→syn");
    y += m.line(body) + 8.0 * m.s;
    for (i, l) in layers.iter().enumerate() {
        let cy = y + i as f64 * row_h;
        let mark = if pattern.contains(&(i as u64 + 1)) {
            " ◂"
        } else {
            ""
        };
        svg.text(
            m.margin() + label_w - 12.0 * m.s,
            cy + row_h * 0.5 + 0.36 * body,
            Font::new(body, pal.fg()).anchor(Anchor::End),
            &format!("layer {}{mark}", i + 1),
        );
        for (c, (key, name)) in COLUMNS.iter().enumerate() {
            let r = &l[*key];
            let best = r["best_f1"].as_f64().unwrap_or(0.0);
            let mean = r["mean_f1"].as_f64().unwrap_or(0.0);
            let head = r["best_head"].as_u64().unwrap_or(0);
            let cx = x0 + c as f64 * (col_w + m.gap());
            let bar_max = col_w - text_w("0.000 h88", small) - 16.0 * m.s;
            let w = (best / vmax).clamp(0.0, 1.0) * bar_max;
            let bh = row_h * 0.6;
            let by = cy + (row_h - bh) * 0.5;
            svg.rect(cx, by, bar_max, bh, pal.rule());
            svg.rect_titled(
                cx,
                by,
                w.max(1.0),
                bh,
                pal.heat((best / vmax).clamp(0.0, 1.0).sqrt() as f32),
                &format!(
                    "layer {} {name}: best F1 {best:.3} (head {head}), head mean {mean:.3}",
                    i + 1
                ),
            );
            let tx = cx + (mean / vmax).clamp(0.0, 1.0) * bar_max;
            svg.line(
                tx,
                by - 4.0 * m.s,
                tx,
                by + bh + 4.0 * m.s,
                pal.fg(),
                2.0 * m.s,
            );
            svg.text(
                cx + bar_max + 8.0 * m.s,
                cy + row_h * 0.5 + 0.36 * small,
                Font::new(small, pal.fg()),
                &format!("{best:.3} h{head}"),
            );
        }
        let pct = |k: &str| {
            l["shares"][k]
                .as_f64()
                .map_or("·".to_string(), |v| format!("{:.0}%", v * 100.0))
        };
        svg.text(
            xs,
            cy + row_h * 0.5 + 0.36 * small,
            Font::new(small, pal.fg()),
            &format!("{:>6}  {:>6}", pct("syn->id"), pct("id->syn")),
        );
    }
    y += layers.len() as f64 * row_h + m.gap();
    svg.text(
        m.margin(),
        y + body,
        Font::new(body, pal.fg()),
        &super::svg::clip(
            fd["reading"].as_str().unwrap_or(""),
            (m.inner() / (super::svg::CHAR_W * body)) as usize,
        ),
    );
    y += m.line(body);
    svg.grow_to(m.width(), y + m.margin());
    let (width, height) = (svg.width, svg.height);
    Figure {
        svg: svg.finish(pal.bg(), &format!("{} · finding", title_of(view))),
        width,
        height,
    }
}
