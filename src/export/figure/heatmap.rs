//! The heatmap figure: the code shaded by the selected token's attention beside the
//! layer/head's attention matrix (with a pinned head, the two matrices side by side on
//! one colour scale), a colour bar, a legend and the head's scores per gold graph.
//!
//! Layout: code on the left when nine lines in ten fit beside matrices of at least
//! 420 px (longer lines end in `…`), else on top; the matrices take the rest, each square, labels outside the cells, the colour bar right of the
//! last matrix, captions and scores under them.

use super::code::{draw_block, draw_key, legend_rows, CodeBox, Shade};
use super::matrix::{self, axes};
use super::palette::Palette;
use super::svg::{clip, Font, Svg};
use super::{
    colorbar_v, colorbar_v_width, fmt_value, header, settings_line, sqrt_ticks, title_of, Crop,
    Figure, Metrics, GOLD_GRAPHS,
};
use crate::export::{FigureData, GraphScore};
use std::collections::BTreeMap;

/// Smallest side of a matrix beside the code (px at scale 1).
const MIN_SIDE: f64 = 420.0;

/// One matrix to draw: caption, cells, scores.
struct Panel<'a> {
    caption: String,
    matrix: &'a [Vec<f32>],
    scores: &'a BTreeMap<String, GraphScore>,
}

pub fn draw(view: &FigureData, crop: &Crop, m: Metrics, pal: Palette) -> Figure {
    let mut svg = Svg::new(m.width(), m.width() * 0.5);
    let mut sub = vec![settings_line(view)];
    let mut detail = Vec::new();
    if let Some(t) = view.selected.and_then(|i| view.tokens.get(i)) {
        detail.push(format!(
            "attention {} «{}»",
            view.direction,
            clip(&t.text.replace('\n', " "), 20)
        ));
    }
    if crop.cropped {
        detail.push(format!(
            "lines {}-{}, tokens {}-{}",
            crop.l0 + 1,
            crop.l1 + 1,
            crop.t0,
            crop.t1
        ));
    }
    if !detail.is_empty() {
        sub.push(detail.join(" · "));
    }
    // Compare mode: which side the matrix is, and of which twin.
    let cmp = view
        .compare
        .as_ref()
        .map(|c| (c.heatmap.as_str(), c.twin.as_str()));
    let signed = cmp.is_some_and(|(s, _)| s == "B−A");
    if let Some((s, twin)) = cmp {
        sub.push(match s {
            "B−A" => format!("compare mode: the twin's attention minus the original's (B − A) on aligned tokens · B = {twin} · orange: more in the twin, blue: less"),
            "B" => format!("compare mode: the twin's attention (B = {twin}) on the original's aligned tokens"),
            _ => format!("compare mode: the original (A); its twin B = {twin}"),
        });
    }
    let y0 = header(&mut svg, m, pal, &title_of(view), &sub);

    let mut panels = vec![Panel {
        caption: match (view.head, cmp) {
            (Some(h), Some((s, _))) => format!("layer {} head {h} · {s}", view.layer),
            (None, Some((s, _))) => format!("layer {} mean of heads · {s}", view.layer),
            (Some(h), None) => format!("layer {} head {h}", view.layer),
            (None, None) => format!("layer {} mean of heads", view.layer),
        },
        matrix: &view.matrix,
        scores: &view.scores,
    }];
    if let Some(p) = &view.pinned {
        panels[0].caption.push_str(" (current)");
        panels.push(Panel {
            caption: format!("layer {} head {} (pinned)", p.layer, p.head),
            matrix: &p.matrix,
            scores: &p.scores,
        });
    }
    let ks = matrix::positions(view, crop.t0, crop.t1);
    let n = ks.len().max(1);
    let vmax = panels
        .iter()
        .map(|p| matrix::vmax(p.matrix, &ks))
        .fold(1e-9f32, f32::max);
    let ticks = if signed {
        super::signed_ticks(vmax as f64)
    } else {
        sqrt_ticks(vmax as f64)
    };
    let bar_caption = if signed { "B − A (√)" } else { "attention" };
    let bar_w = colorbar_v_width(m, &ticks, bar_caption);

    // The code (with its colour bar and legend) beside the matrices when nine lines in ten fit and leave the matrices at least
    // MIN_SIDE (longer lines end in `…`); otherwise above them (a 16:9 slide wants the
    // first).
    let k = panels.len() as f64;
    let right_need = k * (MIN_SIDE + 150.0) * m.s + bar_w + (k + 1.0) * m.gap();
    let room = m.inner() - right_need;
    let mut widths = CodeBox::line_widths(view, crop);
    widths.sort_unstable();
    let p90 = widths[(widths.len() * 9 / 10).min(widths.len() - 1)];
    let gutter = (crop.l1 + 1).to_string().len() + 1;
    let beside = (p90 + gutter + 1) as f64 * super::svg::CHAR_W * m.body() <= room;
    let code = CodeBox::measure(view, crop, m, if beside { room } else { m.inner() });
    let left_w = if beside {
        code.width.max(620.0 * m.s).min(room)
    } else {
        m.inner()
    };
    let key_w = if beside { left_w } else { m.inner() };
    let mut code_bottom = y0;
    code_bottom += draw_block(
        &mut svg,
        view,
        crop,
        (m, pal),
        (m.margin(), y0),
        &code,
        Shade::Attention,
    );
    code_bottom += m.gap() * 0.6;
    code_bottom += draw_key(
        &mut svg,
        view,
        crop,
        (m, pal),
        (m.margin(), code_bottom, key_w),
        Shade::Attention,
    );
    let (mx, my, avail) = if beside {
        let x = m.margin() + left_w + m.gap();
        (x, y0, m.width() - m.margin() - x)
    } else {
        (m.margin(), code_bottom + m.gap(), m.inner())
    };

    // Matrix size: first with a guessed label room, then with the room the labels of
    // that cell size need.
    let side_for = |label: f64| {
        ((avail - bar_w - m.gap() - k * (label + 8.0 * m.s) - (k - 1.0) * m.gap()) / k)
            .clamp(200.0 * m.s, 1000.0 * m.s)
    };
    let mut ax = axes(view, &ks, m, side_for(140.0 * m.s) / n as f64);
    let mut side = side_for(ax.label);
    for _ in 0..2 {
        ax = axes(view, &ks, m, side / n as f64);
        side = side_for(ax.label);
    }
    let cell = side / n as f64;
    let top = my + ax.label + 8.0 * m.s + 1.5 * m.small();
    let mut x = mx;
    for p in &panels {
        let cx = x + ax.label + 8.0 * m.s;
        svg.text(
            cx,
            my + m.small(),
            Font::new(m.small(), pal.fg()).bold(),
            &p.caption,
        );
        matrix::draw(
            &mut svg,
            view,
            p.matrix,
            &ks,
            (m, pal),
            (cx, top, cell),
            ax,
            vmax,
        );
        x = cx + side + m.gap();
    }
    colorbar_v(
        &mut svg,
        m,
        pal,
        (x - m.gap() + m.gap() * 0.6, top, side),
        &if signed {
            pal.diverging_stops()
        } else {
            pal.heat_stops().to_vec()
        },
        &ticks,
        bar_caption,
    );

    // Captions and scores under the matrices.
    let mut cy = top + side + m.gap() * 0.5;
    let small = m.small();
    let every = if ax.stride == 1 {
        "every token labelled".to_string()
    } else {
        format!("every {} token labelled", super::ordinal(ax.stride))
    };
    let cap = if signed {
        format!(
            "rows: queries · columns: keys · {} tokens · {every} · colour = sign · √(|B − A| / {})",
            ks.len(),
            fmt_value(vmax as f64)
        )
    } else {
        format!(
            "rows: queries · columns: keys · {} tokens · {every} · colour = √(a / {})",
            ks.len(),
            fmt_value(vmax as f64)
        )
    };
    for line in super::wrap(&cap, (avail / (super::svg::CHAR_W * small)) as usize) {
        cy += m.line(small);
        svg.text(mx, cy, Font::new(small, pal.dim()), &line);
    }
    let mut items = Vec::new();
    if view.selected.is_some() {
        let what = if view.direction == "to" {
            "column"
        } else {
            "row"
        };
        items.push((None, Some(pal.accent()), format!("selected token's {what}")));
    }
    if view.gold_overlay {
        items.push((None, Some(pal.gold()), format!("gold edge ({GOLD_GRAPHS})")));
    }
    if !items.is_empty() {
        cy += legend_rows(&mut svg, m, pal, (mx, cy + 0.3 * small, avail), &items);
    }
    for p in &panels {
        if p.scores.is_empty() {
            continue;
        }
        cy += m.line(small);
        let parts: Vec<String> = p
            .scores
            .iter()
            .map(|(g, s)| {
                format!(
                    "{g} P {} R {} F1 {} ({} gold edges)",
                    fmt_value(s.precision),
                    fmt_value(s.recall),
                    fmt_value(s.f1),
                    s.gold_edges
                )
            })
            .collect();
        // The scores are always the original's (A), whatever side the matrix shows.
        let who = match cmp {
            Some(_) => format!(
                "{}, the original's (A) scores",
                p.caption.split(" · ").next().unwrap_or(&p.caption)
            ),
            None => p.caption.clone(),
        };
        let line = format!("{who}: {}", parts.join(" · "));
        for (i, l) in super::wrap(&line, (avail / (super::svg::CHAR_W * small)) as usize)
            .into_iter()
            .enumerate()
        {
            if i > 0 {
                cy += m.line(small);
            }
            svg.text(mx, cy, Font::new(small, pal.fg()), &l);
        }
    }
    let bottom = code_bottom.max(cy) + m.margin();
    svg.grow_to(m.width(), bottom);
    let (width, height) = (svg.width, svg.height);
    Figure {
        svg: svg.finish(
            pal.bg(),
            &format!(
                "{} · {}",
                title_of(view),
                if signed {
                    "attention, B − A"
                } else {
                    "attention"
                }
            ),
        ),
        width,
        height,
    }
}
