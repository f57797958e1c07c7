//! An attention matrix as a figure part: cells coloured `sqrt(a / max)` on the heat
//! ramp (rows = queries, columns = keys), token labels on both axes (every k-th token,
//! k chosen so labels at the smallest text size never collide; the selected token's
//! label always shown), gold edges outlined (or drawn on the gold ramp when cells are
//! too small for outlines), the selected token's row (or column) framed.
//!
//! Up to [`VECTOR_MAX`] tokens the cells are SVG rectangles (runs of equal colour merged);
//! beyond, one PNG raster with a pixel per cell, drawn without smoothing. A 512-token
//! matrix is then a ~100-300 kB image instead of 262,144 rectangles.

use super::palette::{Palette, Rgb};
use super::svg::{clip, png_rgba, Anchor, Font, Svg, CHAR_W};
use super::Metrics;
use crate::export::FigureData;

/// Largest matrix drawn as vector cells.
pub const VECTOR_MAX: usize = 120;

/// Longest axis label in chars.
const LABEL_CHARS: usize = 10;

/// Gold cells on a gold ramp (raster mode), light and dark.
fn gold_ramp(pal: Palette, t: f32) -> Rgb {
    let stops: [Rgb; 3] = if pal.light {
        [(250, 215, 120), (225, 150, 20), (150, 80, 0)]
    } else {
        [(110, 85, 10), (210, 160, 20), (255, 235, 120)]
    };
    super::palette::ramp(&stops, t)
}

/// The analysed positions (matrix rows/columns) inside the token crop.
pub fn positions(view: &FigureData, t0: usize, t1: usize) -> Vec<usize> {
    view.matrix_tokens
        .iter()
        .enumerate()
        .filter(|(_, &t)| (t0..=t1).contains(&t))
        .map(|(k, _)| k)
        .collect()
}

/// Largest value of `matrix` over the positions `ks` (at least a tiny positive).
pub fn vmax(matrix: &[Vec<f32>], ks: &[usize]) -> f32 {
    let mut m = 0.0f32;
    for &i in ks {
        for &j in ks {
            let v = matrix[i][j];
            if v.is_finite() {
                // |v|: compare mode's B − A is signed.
                m = m.max(v.abs());
            }
        }
    }
    m.max(1e-9)
}

/// Where labels go: every `stride`-th position.
#[derive(Debug, Clone, Copy)]
pub struct Axes {
    pub stride: usize,
    /// Width of the row labels and height of the column labels (px).
    pub label: f64,
}

/// Label stride and room for `n` cells of `cell` px.
pub fn axes(view: &FigureData, ks: &[usize], m: Metrics, cell: f64) -> Axes {
    let pitch = m.small() * 1.2;
    let stride = ((pitch / cell).ceil() as usize).max(1);
    let longest = ks
        .iter()
        .map(|&k| label_of(view, k).chars().count())
        .max()
        .unwrap_or(1);
    Axes {
        stride,
        label: longest as f64 * CHAR_W * m.small() + 12.0 * m.s,
    }
}

fn label_of(view: &FigureData, k: usize) -> String {
    let t = &view.tokens[view.matrix_tokens[k]];
    clip(&t.text.replace(['\n', '\t'], " "), LABEL_CHARS)
}

/// Draw `matrix` over positions `ks` with its top-left cell at (`x`, `y`) (labels go
/// left of and above that point, inside the room [`axes`] reported), each cell `cell`
/// px, colours scaled by `vmax`.
#[allow(clippy::too_many_arguments)]
pub fn draw(
    svg: &mut Svg,
    view: &FigureData,
    matrix: &[Vec<f32>],
    ks: &[usize],
    (m, pal): (Metrics, Palette),
    (x, y, cell): (f64, f64, f64),
    ax: Axes,
    vmax: f32,
) {
    let n = ks.len();
    let side = n as f64 * cell;
    // Compare mode's B − A: a diverging scale, `sign · √(|v| / vmax)`.
    let signed = view.compare.as_ref().is_some_and(|c| c.heatmap == "B−A");
    let scale = |v: f32| {
        if !v.is_finite() {
            0.0
        } else if signed {
            (v.abs() / vmax).clamp(0.0, 1.0).sqrt()
        } else {
            (v / vmax).clamp(0.0, 1.0).sqrt()
        }
    };
    let colour = |v: f32, t: f32| {
        if signed {
            pal.diverging(t.copysign(v))
        } else {
            pal.heat(t)
        }
    };
    let gold = |i: usize, j: usize| {
        view.gold_overlay && view.gold_edges.binary_search(&(ks[i], ks[j])).is_ok()
    };
    svg.group("heatmap");
    if n <= VECTOR_MAX {
        for i in 0..n {
            // Runs of equal colour in a row become one rectangle.
            let mut j = 0;
            while j < n {
                let q = |v: f32| {
                    (scale(v) * 128.0).round() / 128.0 * if signed && v < 0.0 { -1.0 } else { 1.0 }
                };
                let v0 = matrix[ks[i]][ks[j]];
                let t = q(v0);
                let mut e = j + 1;
                while e < n && q(matrix[ks[i]][ks[e]]) == t {
                    e += 1;
                }
                if t.abs() >= 0.04 {
                    svg.rect(
                        x + j as f64 * cell,
                        y + i as f64 * cell,
                        (e - j) as f64 * cell,
                        cell,
                        colour(v0, t.abs()),
                    );
                }
                j = e;
            }
        }
        if view.gold_overlay {
            let sw = (cell / 8.0).clamp(1.5 * m.s, 4.0 * m.s);
            for i in 0..n {
                for j in 0..n {
                    if gold(i, j) {
                        svg.frame(
                            x + j as f64 * cell + sw / 2.0,
                            y + i as f64 * cell + sw / 2.0,
                            cell - sw,
                            cell - sw,
                            pal.gold(),
                            sw,
                        );
                    }
                }
            }
        }
    } else {
        let mut rgba = Vec::with_capacity(n * n * 4);
        for i in 0..n {
            for j in 0..n {
                let v = matrix[ks[i]][ks[j]];
                let t = scale(v);
                let c = if gold(i, j) && !signed {
                    gold_ramp(pal, t)
                } else {
                    colour(v, t)
                };
                rgba.extend_from_slice(&[c.0, c.1, c.2, 255]);
            }
        }
        let png = png_rgba(n as u32, n as u32, &rgba);
        svg.image_png(x, y, side, side, &png);
    }
    svg.frame(x, y, side, side, pal.rule(), m.s);
    // The selected token's row (attention from it) or column (to it).
    let sel = view
        .selected
        .and_then(|t| view.matrix_tokens.iter().position(|&mt| mt == t))
        .and_then(|k| ks.iter().position(|&p| p == k));
    if let Some(s) = sel {
        let sw = 3.0 * m.s;
        let band = cell.max(sw * 2.0);
        let off = (band - cell) / 2.0;
        if view.direction == "to" {
            svg.frame(x + s as f64 * cell - off, y, band, side, pal.accent(), sw);
        } else {
            svg.frame(x, y + s as f64 * cell - off, side, band, pal.accent(), sw);
        }
    }
    svg.end_group();
    // Axis labels.
    let small = m.small();
    let near_sel = |i: usize| sel.is_some_and(|s| s != i && s.abs_diff(i) < ax.stride);
    svg.group("labels");
    for (i, &k) in ks.iter().enumerate().take(n) {
        let is_sel = sel == Some(i);
        if !is_sel && (i % ax.stride != 0 || near_sel(i)) {
            continue;
        }
        let t = &view.tokens[view.matrix_tokens[k]];
        let mut f = Font::new(small, pal.token(&t.category, t.role.as_deref()));
        if is_sel {
            f = Font::new(small, pal.accent()).bold();
        }
        let label = label_of(view, k);
        let c = (i as f64 + 0.5) * cell;
        svg.text(
            x - 8.0 * m.s,
            y + c + 0.35 * small,
            f.anchor(Anchor::End),
            &label,
        );
        let cx = x + c + 0.35 * small;
        let cy = y - 8.0 * m.s;
        svg.text_rotated(cx, cy, -90.0, f, &label);
    }
    svg.end_group();
}
