//! The head grid figure: one score per head (layers across, heads down, as in the
//! explorer), each cell coloured `sqrt(v / max)` with its value written in it, the
//! current head framed, for F1 metrics the best head of each layer underlined, and a
//! colour bar.

use super::palette::{readable, Palette};
use super::svg::{Anchor, Font, Svg};
use super::{
    colorbar_v, colorbar_v_width, fmt_signed, fmt_value, header, signed_t, signed_ticks, title_of,
    Figure, Metrics,
};
use crate::export::FigureData;

fn is_f1(metric: &str) -> bool {
    metric.starts_with("f1_")
}

/// A cell's text: F1 and shares as `.42`, entropy in bits as `3.2`.
fn cell_text(metric: &str, v: Option<f64>) -> String {
    match v {
        None => "·".into(),
        Some(x) if metric == "entropy_bits" => format!("{x:.1}"),
        Some(x) => fmt_value(x),
    }
}

/// One grid of a head-grid figure: a score per head, the heads of `best` underlined.
pub struct Grid<'a> {
    pub metric: &'a str,
    pub values: &'a [Vec<Option<f64>>],
    pub signed: bool,
    pub best: &'a [Option<usize>],
    /// The colour bar's caption instead of the metric's.
    pub caption: Option<&'a str>,
}

/// Per layer, the head with the largest positive value.
pub fn best_per_layer(values: &[Vec<Option<f64>>]) -> Vec<Option<usize>> {
    values
        .iter()
        .map(|row| {
            let mut b: Option<(usize, f64)> = None;
            for (h, v) in row.iter().enumerate() {
                if let Some(v) = *v {
                    if v > 0.0 && b.is_none_or(|(_, bv)| v > bv) {
                        b = Some((h, v));
                    }
                }
            }
            b.map(|(h, _)| h)
        })
        .collect()
}

/// Draw grid `g` below `y0` (layer numbers, cells with their values, the current head
/// framed, the colour bar); returns the y below it.
pub fn draw_grid(
    svg: &mut Svg,
    m: Metrics,
    pal: Palette,
    view: &FigureData,
    g: &Grid,
    y0: f64,
) -> f64 {
    let layers = g.values.len();
    let heads = g.values.first().map_or(0, |r| r.len());
    let amax = g
        .values
        .iter()
        .flatten()
        .flatten()
        .fold(0.0f64, |a, &b| a.max(b.abs()))
        .max(1e-9);
    let smax = if g.metric == "entropy_bits" {
        g.values
            .iter()
            .flatten()
            .flatten()
            .fold(0.0f64, |a, &b| a.max(b))
            .max(1e-9)
    } else {
        1.0
    };
    let ticks: Vec<(f64, String)> = if g.signed {
        signed_ticks(amax)
    } else {
        [0.0, 0.25, 0.5, 0.75, 1.0]
            .iter()
            .map(|&p: &f64| (p, cell_text(g.metric, Some(smax * p * p))))
            .collect()
    };
    let caption = if let Some(c) = g.caption {
        c
    } else if g.signed {
        "B − A (√)"
    } else if g.metric == "entropy_bits" {
        "bits (√)"
    } else if g.metric.starts_with("share") {
        "share (√)"
    } else {
        "F1 (√)"
    };
    let bar_w = colorbar_v_width(m, &ticks, caption);
    let label_w = 5.0 * super::svg::CHAR_W * m.body();
    let avail = m.inner() - label_w - m.gap() - bar_w;
    let cw = (avail / layers.max(1) as f64).clamp(64.0 * m.s, 150.0 * m.s);
    let ch = (cw * 0.55).clamp(40.0 * m.s, 64.0 * m.s);
    let x0 = m.margin() + label_w;
    let top = y0 + m.line(m.body());
    let body = m.body();
    // Column headers.
    for l in 0..layers {
        let f = if l + 1 == view.layer {
            Font::new(body, pal.accent()).bold()
        } else {
            Font::new(body, pal.dim())
        };
        svg.text(
            x0 + (l as f64 + 0.5) * cw,
            top - 0.4 * body,
            f.anchor(Anchor::Middle),
            &format!("L{}", l + 1),
        );
    }
    svg.group("grid");
    for h in 0..heads {
        let y = top + h as f64 * ch;
        let f = if view.head == Some(h + 1) {
            Font::new(body, pal.accent()).bold()
        } else {
            Font::new(body, pal.dim())
        };
        svg.text(
            m.margin(),
            y + ch * 0.5 + 0.36 * body,
            f,
            &format!("H{}", h + 1),
        );
        for (l, row) in g.values.iter().enumerate() {
            let v = row.get(h).copied().flatten();
            let x = x0 + l as f64 * cw;
            let bg = if g.signed {
                pal.diverging(v.map_or(0.0, |v| signed_t(v, amax)))
            } else {
                pal.heat(v.map_or(0.0, |v| ((v / smax).clamp(0.0, 1.0)).sqrt() as f32))
            };
            let title = match v {
                Some(v) => format!("L{} H{}: {v:.4}", l + 1, h + 1),
                None => format!("L{} H{}: undefined", l + 1, h + 1),
            };
            svg.rect_titled(x, y, cw, ch, bg, &title);
            let mut f = Font::new(body, readable(pal.fg(), bg)).anchor(Anchor::Middle);
            let is_best = g.best.get(l).copied().flatten() == Some(h);
            if is_best {
                f = f.bold();
            }
            let text = match v {
                Some(x) if g.signed => fmt_signed(x),
                _ => cell_text(g.metric, v),
            };
            svg.text(x + cw * 0.5, y + ch * 0.5 + 0.36 * body, f, &text);
            if is_best {
                let w = super::svg::text_w(&text, body);
                let uy = y + ch * 0.5 + 0.36 * body + 4.0 * m.s;
                svg.line(
                    x + (cw - w) * 0.5,
                    uy,
                    x + (cw + w) * 0.5,
                    uy,
                    f.fill,
                    2.5 * m.s,
                );
            }
        }
    }
    svg.frame(
        x0,
        top,
        cw * layers as f64,
        ch * heads as f64,
        pal.rule(),
        m.s,
    );
    let sw = 4.0 * m.s;
    match view.head {
        Some(hh) if view.layer >= 1 && hh >= 1 => svg.frame(
            x0 + (view.layer - 1) as f64 * cw + sw / 2.0,
            top + (hh - 1) as f64 * ch + sw / 2.0,
            cw - sw,
            ch - sw,
            pal.accent(),
            sw,
        ),
        None if view.layer >= 1 => svg.frame(
            x0 + (view.layer - 1) as f64 * cw + sw / 2.0,
            top + sw / 2.0,
            cw - sw,
            ch * heads as f64 - sw,
            pal.accent(),
            sw,
        ),
        _ => {}
    }
    svg.end_group();
    let grid_h = ch * heads as f64;
    colorbar_v(
        svg,
        m,
        pal,
        (
            x0 + cw * layers as f64 + m.gap(),
            top,
            grid_h.max(200.0 * m.s),
        ),
        &if g.signed {
            pal.diverging_stops()
        } else {
            pal.heat_stops().to_vec()
        },
        &ticks,
        caption,
    );
    top + grid_h.max(200.0 * m.s) + m.margin()
}

pub fn draw(view: &FigureData, m: Metrics, pal: Palette) -> Figure {
    let g = &view.head_grid;
    let layers = g.values.len();
    let mut svg = Svg::new(m.width(), m.width() * 0.5);
    let current = match view.head {
        Some(h) => format!("current: layer {} head {h} (framed)", view.layer),
        None => format!("current: mean of layer {} (framed)", view.layer),
    };
    let mut sub = vec![format!(
        "{} per head · threshold {:.2} · {} input · {current}",
        g.name, view.threshold, view.mode
    )];
    if g.signed {
        sub.push(
            "compare mode: each cell is the twin's score minus the original's (B − A): orange where the twin scores higher, blue lower".into(),
        );
    } else if is_f1(&g.metric) {
        sub.push("underlined: the best head of each layer".into());
    }
    let y0 = header(&mut svg, m, pal, &title_of(view), &sub);
    let best = if is_f1(&g.metric) && !g.signed {
        best_per_layer(&g.values)
    } else {
        vec![None; layers]
    };
    let grid = Grid {
        metric: &g.metric,
        values: &g.values,
        signed: g.signed,
        best: &best,
        caption: None,
    };
    let bottom = draw_grid(&mut svg, m, pal, view, &grid, y0);
    svg.grow_to(m.width(), bottom);
    let (width, height) = (svg.width, svg.height);
    Figure {
        svg: svg.finish(pal.bg(), &format!("{} · heads", title_of(view))),
        width,
        height,
    }
}
