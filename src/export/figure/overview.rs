//! The model overview figure: every head's code-token attention as a small thumbnail
//! (block maxima, each head on its own scale, `sqrt`), its score under it, the current
//! head framed in the accent colour and a pinned head in the second accent. Layers run
//! down and heads across, or the other way round when a model has more layers than
//! heads, so the grid suits a 16:9 slide.

use super::palette::Palette;
use super::svg::{png_rgba, Anchor, Font, Svg};
use super::{colorbar_v, colorbar_v_width, fmt_value, header, title_of, Figure, Metrics};
use crate::export::{FigureData, Overview};

pub fn draw(view: &FigureData, o: &Overview, m: Metrics, pal: Palette) -> Figure {
    let layers = o.heads.len();
    let heads = o.heads.first().map_or(0, |r| r.len());
    let mut svg = Svg::new(m.width(), m.width() * 0.5);
    let sub = vec![
        format!(
            "every head's code-token attention on this snippet, each on its own scale · under each: {} · threshold {:.2} · {} input",
            o.metric_name, view.threshold, view.mode
        ),
        match &view.pinned {
            Some(p) => format!(
                "framed: current head (layer {}), pinned head layer {} head {}",
                view.layer, p.layer, p.head
            ),
            None => format!("framed: current head (layer {})", view.layer),
        },
    ];
    let y0 = header(&mut svg, m, pal, &title_of(view), &sub);
    // Layers down, heads across; swapped when there are more layers than heads.
    let across_layers = layers > heads;
    let (rows, cols) = if across_layers {
        (heads, layers)
    } else {
        (layers, heads)
    };
    let small = m.small();
    let ticks = vec![
        (0.0, "0".to_string()),
        (0.5, "¼ max".to_string()),
        (1.0, "max".to_string()),
    ];
    let caption = "of head max";
    let bar_w = colorbar_v_width(m, &ticks, caption);
    let label_w = 4.0 * super::svg::CHAR_W * small + 12.0 * m.s;
    let gap = 14.0 * m.s;
    let avail = m.inner() - label_w - m.gap() - bar_w;
    let ts = ((avail / cols.max(1) as f64) - gap).clamp(72.0 * m.s, 300.0 * m.s);
    let cell_h = ts + small * 1.5 + gap;
    let x0 = m.margin() + label_w;
    let top = y0 + small * 1.4;
    let f1 = o.metric.starts_with("f1_");
    let best: Vec<Option<usize>> = o
        .heads
        .iter()
        .map(|row| {
            if !f1 {
                return None;
            }
            let mut b: Option<(usize, f64)> = None;
            for (h, t) in row.iter().enumerate() {
                if let Some(v) = t.score {
                    if v > 0.0 && b.is_none_or(|(_, bv)| v > bv) {
                        b = Some((h, v));
                    }
                }
            }
            b.map(|(h, _)| h)
        })
        .collect();
    // Axis labels.
    for c in 0..cols {
        let label = if across_layers {
            format!("L{}", c + 1)
        } else {
            format!("H{}", c + 1)
        };
        svg.text(
            x0 + c as f64 * (ts + gap) + ts * 0.5,
            top - 0.4 * small,
            Font::new(small, pal.dim()).anchor(Anchor::Middle),
            &label,
        );
    }
    for r in 0..rows {
        let label = if across_layers {
            format!("H{}", r + 1)
        } else {
            format!("L{}", r + 1)
        };
        svg.text(
            x0 - 12.0 * m.s,
            top + r as f64 * cell_h + ts * 0.5 + 0.36 * small,
            Font::new(small, pal.dim()).anchor(Anchor::End),
            &label,
        );
    }
    svg.group("overview");
    for (l, row) in o.heads.iter().enumerate() {
        for (h, t) in row.iter().enumerate() {
            let (r, c) = if across_layers { (h, l) } else { (l, h) };
            let x = x0 + c as f64 * (ts + gap);
            let y = top + r as f64 * cell_h;
            let side = (t.cells.len() as f64).sqrt().round() as usize;
            if side > 0 {
                let mut rgba = Vec::with_capacity(side * side * 4);
                for &v in &t.cells {
                    let c = pal.heat(v.max(0.0).sqrt());
                    rgba.extend_from_slice(&[c.0, c.1, c.2, 255]);
                }
                svg.image_png(x, y, ts, ts, &png_rgba(side as u32, side as u32, &rgba));
            }
            svg.frame(x, y, ts, ts, pal.rule(), m.s);
            let cur = view.layer == l + 1 && view.head == Some(h + 1);
            let pinned = view
                .pinned
                .as_ref()
                .is_some_and(|p| p.layer == l + 1 && p.head == h + 1);
            let sw = 5.0 * m.s;
            if cur {
                svg.frame(
                    x - sw,
                    y - sw,
                    ts + 2.0 * sw,
                    ts + 2.0 * sw,
                    pal.accent(),
                    sw,
                );
            } else if pinned {
                svg.frame(x - sw, y - sw, ts + 2.0 * sw, ts + 2.0 * sw, pal.pin(), sw);
            }
            let score = t.score.map_or("·".to_string(), |v| {
                if o.metric == "entropy_bits" {
                    format!("{v:.1}")
                } else {
                    fmt_value(v)
                }
            });
            let mut f = Font::new(small, pal.fg()).anchor(Anchor::Middle);
            if best[l] == Some(h) || cur {
                f = f.bold();
            }
            if cur {
                f.fill = pal.accent();
            }
            svg.text(x + ts * 0.5, y + ts + small * 1.15, f, &score);
        }
    }
    svg.end_group();
    let grid_h = rows as f64 * cell_h;
    colorbar_v(
        &mut svg,
        m,
        pal,
        (
            x0 + cols as f64 * (ts + gap) + m.gap() * 0.5,
            top,
            ts.max(160.0 * m.s),
        ),
        pal.heat_stops(),
        &ticks,
        caption,
    );
    svg.grow_to(m.width(), top + grid_h + m.margin());
    let (width, height) = (svg.width, svg.height);
    Figure {
        svg: svg.finish(pal.bg(), &format!("{} · overview", title_of(view))),
        width,
        height,
    }
}
