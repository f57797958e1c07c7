//! The category figure: mean attention between token categories, the coarse 2x2
//! (syntactic / identifier) and the fine 5x5 (keyword, operator, delimiter, literal,
//! identifier), for the current head beside its layer's head average, values x100 in
//! the cells, one colour scale (and bar) per size, as the explorer's panel shows them.

use serde_json::{Map, Value};

use super::palette::{readable, Palette};
use super::svg::{text_w, Anchor, Font, Svg};
use super::{colorbar_v, header, title_of, Figure, Metrics};
use crate::analysis::categories::{COARSE, FINE};
use crate::export::FigureData;

/// Display names of the coarse classes.
const COARSE_NAMES: [&str; 2] = ["syntactic", "identifier"];

/// A colour bar value (already x100) with two significant digits.
fn tick_text(p: f64) -> String {
    if p >= 9.95 {
        format!("{p:.0}")
    } else if p >= 0.995 {
        format!("{p:.1}")
    } else {
        super::fmt_value(p)
    }
}

fn cell_text(v: Option<f64>) -> String {
    match v {
        None => "·".into(),
        Some(x) => {
            let p = x * 100.0;
            if p < 9.95 {
                format!("{p:.1}")
            } else {
                format!("{p:.0}")
            }
        }
    }
}

/// The `k x k` values of one exported category map.
fn values(map: Option<&Map<String, Value>>, names: &[&str]) -> Vec<Vec<Option<f64>>> {
    names
        .iter()
        .map(|q| {
            names
                .iter()
                .map(|k| {
                    map.and_then(|m| m.get(&format!("{q}->{k}")))
                        .and_then(Value::as_f64)
                })
                .collect()
        })
        .collect()
}

pub fn draw(view: &FigureData, m: Metrics, pal: Palette) -> Figure {
    let mut svg = Svg::new(m.width(), m.width() * 0.5);
    let head = match view.head {
        Some(h) => format!("layer {} head {h}", view.layer),
        None => format!("layer {} mean of heads", view.layer),
    };
    let layer = format!("layer {} average of heads", view.layer);
    let sub = vec![
        format!(
            "mean attention between token categories, x100 · rows: query category · columns: key category · self pairs excluded · {} input",
            view.mode
        ),
    ];
    let mut y = header(&mut svg, m, pal, &title_of(view), &sub);
    let cat = |k: &str| view.categories.get(k);
    let rows: [(&[&str], &[&str], &str, &str); 2] = [
        (&COARSE, &COARSE_NAMES, "coarse_head", "coarse_layer"),
        (&FINE, &FINE, "fine_head", "fine_layer"),
    ];
    let body = m.body();
    let small = m.small();
    let label_w = text_w("identifier", body) + 16.0 * m.s;
    // Two 5x5 matrices, their labels and a colour bar fit the width.
    let bar_room = 160.0 * m.s;
    let cell_w = ((m.inner() - 2.0 * label_w - 3.0 * m.gap() - bar_room) / 10.0)
        .clamp(text_w("identifier", small) + 8.0 * m.s, 150.0 * m.s);
    let cell_h = 64.0 * m.s;
    for (keys, names, hk, lk) in rows {
        let a = values(cat(hk), keys);
        let b = values(cat(lk), keys);
        let vmax = a
            .iter()
            .chain(&b)
            .flatten()
            .flatten()
            .fold(0.0f64, |x, &v| x.max(v))
            .max(1e-12);
        let k = keys.len();
        let ticks: Vec<(f64, String)> = [0.0, 0.25, 0.5, 0.75, 1.0]
            .iter()
            .map(|&p: &f64| (p, tick_text(vmax * p * p * 100.0)))
            .collect();
        let mut x = m.margin();
        let top = y + m.line(body) + m.line(small) + 8.0 * m.s;
        for (vals, name) in [(&a, head.as_str()), (&b, layer.as_str())] {
            let gx = x + label_w;
            svg.text(gx, y + body, Font::new(body, pal.fg()).bold(), name);
            for (j, n) in names.iter().enumerate() {
                svg.text(
                    gx + (j as f64 + 0.5) * cell_w,
                    top - 10.0 * m.s,
                    Font::new(small, pal.dim()).anchor(Anchor::Middle),
                    n,
                );
            }
            for (i, n) in names.iter().enumerate() {
                let cy = top + i as f64 * cell_h;
                svg.text(
                    gx - 12.0 * m.s,
                    cy + cell_h * 0.5 + 0.36 * small,
                    Font::new(small, pal.dim()).anchor(Anchor::End),
                    n,
                );
                for j in 0..k {
                    let v = vals[i][j];
                    let t = v.map_or(0.0, |v| (v / vmax).clamp(0.0, 1.0).sqrt() as f32);
                    let bg = pal.heat(t);
                    let cx = gx + j as f64 * cell_w;
                    let tip = format!(
                        "{} -> {}: {}",
                        names[i],
                        names[j],
                        v.map_or("n/a".into(), |v| format!("{v:.5}"))
                    );
                    svg.rect_titled(cx, cy, cell_w, cell_h, bg, &tip);
                    svg.text(
                        cx + cell_w * 0.5,
                        cy + cell_h * 0.5 + 0.36 * body,
                        Font::new(body, readable(pal.fg(), bg)).anchor(Anchor::Middle),
                        &cell_text(v),
                    );
                }
            }
            svg.frame(
                gx,
                top,
                cell_w * k as f64,
                cell_h * k as f64,
                pal.rule(),
                m.s,
            );
            x = gx + cell_w * k as f64 + m.gap();
        }
        let caption = "x100 (√)";
        let h = cell_h * k as f64;
        colorbar_v(
            &mut svg,
            m,
            pal,
            (x, top, h.max(160.0 * m.s)),
            pal.heat_stops(),
            &ticks,
            caption,
        );
        y = top + h.max(160.0 * m.s) + m.gap() * 1.5;
    }
    svg.grow_to(m.width(), y + m.margin() - m.gap());
    let (width, height) = (svg.width, svg.height);
    Figure {
        svg: svg.finish(pal.bg(), &format!("{} · categories", title_of(view))),
        width,
        height,
    }
}
