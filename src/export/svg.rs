//! SVG of a [`View`]: the code as written with each token coloured by category and its
//! background shaded by the attention from (or to) the selected token, beside the
//! attention heatmap (`sqrt(a / max)` on a white-to-navy ramp, gold outlines for gold
//! edges when the overlay was on), a legend and the head's scores. When the surprisal
//! view was shown, the code backgrounds show each token's surprisal instead (bits / the
//! largest, on a yellow-to-red ramp), with the perplexity in the header and the selected
//! token's expected next tokens under the code. Plain SVG 1.1: rects and monospace
//! text, printable on white.

use crate::color::{hex, ramp};
use std::fmt::Write as _;

use super::View;

const FONT: f64 = 12.0;
const CHAR_W: f64 = 7.2;
const LINE_H: f64 = 16.0;
const PAD: f64 = 16.0;

/// Category colours (print-friendly, dark on white).
pub fn category_color(cat: &str) -> &'static str {
    match cat {
        "keyword" => "#aa146e",
        "operator" => "#b45a00",
        "delimiter" => "#6e6e78",
        "literal" => "#148228",
        "identifier" => "#1446c8",
        _ => "#333333",
    }
}

/// White → navy ramp for `t` in `[0, 1]`.
pub fn heat(t: f32) -> String {
    hex(ramp(
        &[
            (255, 255, 255),
            (198, 219, 239),
            (107, 174, 214),
            (33, 113, 181),
            (8, 48, 107),
        ],
        t,
    ))
}

/// White → yellow → red ramp for surprisal `t` in `[0, 1]`.
pub fn surprisal_color(t: f32) -> String {
    hex(ramp(
        &[
            (255, 255, 255),
            (254, 224, 144),
            (253, 174, 97),
            (244, 109, 67),
            (190, 30, 45),
        ],
        t,
    ))
}

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\t' => o.push_str("    "),
            c if c.is_control() => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// Pieces of the source to draw: `(line, col, text, token index)` per line fragment,
/// tokens and the text between them (comments, whitespace) alike.
fn pieces(view: &View) -> Vec<(usize, usize, String, Option<usize>)> {
    let src = &view.source;
    let mut out = Vec::new();
    let mut bounds: Vec<(usize, usize, Option<usize>)> = Vec::new();
    let mut pos = 0;
    for (i, t) in view.tokens.iter().enumerate() {
        if t.start > pos {
            bounds.push((pos, t.start, None));
        }
        bounds.push((t.start, t.end, Some(i)));
        pos = pos.max(t.end);
    }
    if pos < src.len() {
        bounds.push((pos, src.len(), None));
    }
    let (mut line, mut col) = (0usize, 0usize);
    for (s, e, tok) in bounds {
        let Some(text) = src.get(s..e) else { continue };
        for (k, part) in text.split('\n').enumerate() {
            if k > 0 {
                line += 1;
                col = 0;
            }
            let part = part.trim_end_matches('\r');
            if !part.is_empty() {
                let mut w = col;
                for ch in part.chars() {
                    w = if ch == '\t' { (w / 4 + 1) * 4 } else { w + 1 };
                }
                out.push((line, col, part.to_string(), tok));
                col = w;
            }
        }
    }
    out
}

/// Render `view` as an SVG document.
pub fn render(view: &View) -> String {
    let pieces = pieces(view);
    let lines = view.source.lines().count().max(1);
    let max_col = pieces
        .iter()
        .map(|(_, c, t, _)| c + t.chars().count())
        .max()
        .unwrap_or(1)
        .min(160);
    let code_w = max_col as f64 * CHAR_W + 2.0 * PAD;
    let header_h = 3.0 * LINE_H + PAD;
    let code_h = lines as f64 * LINE_H;
    let n = view.matrix_tokens.len();
    let cell = if n == 0 {
        0.0
    } else {
        (560.0 / n as f64).clamp(1.0, 14.0)
    };
    let label_w = if cell >= 8.0 { 80.0 } else { 0.0 };
    let heat_x = code_w + PAD + label_w;
    let heat_y = header_h + label_w;
    let heat_size = cell * n as f64;
    let width = heat_x + heat_size + PAD;
    let height = (header_h + code_h + 4.0 * LINE_H).max(heat_y + heat_size + 7.0 * LINE_H) + PAD;

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="{FONT}">"#
    );
    let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    let head = match view.head {
        Some(h) => format!("head {h}/{}", view.heads),
        None => format!("mean of {} heads", view.heads),
    };
    let sel = view
        .selected
        .and_then(|i| view.tokens.get(i))
        .map(|t| format!(" · attention {} «{}»", view.direction, esc(&t.text)))
        .unwrap_or_default();
    let _ = writeln!(
        s,
        r##"<text x="{PAD}" y="{:.1}" font-size="14" font-weight="bold" fill="#111">{} ({}) · {} ({})</text>"##,
        PAD + 4.0,
        esc(&view.name),
        esc(&view.language),
        esc(&view.model),
        esc(&view.architecture)
    );
    let _ = writeln!(
        s,
        r##"<text x="{PAD}" y="{:.1}" fill="#333">layer {}/{} · {head} · threshold {:.2} · {} input{sel}</text>"##,
        PAD + 4.0 + LINE_H,
        view.layer,
        view.layers,
        view.threshold,
        esc(&view.mode)
    );
    // Legend.
    let mut lx = PAD;
    let ly = PAD + 4.0 + 2.0 * LINE_H;
    for cat in ["keyword", "operator", "delimiter", "literal", "identifier"] {
        let _ = writeln!(
            s,
            r#"<rect x="{lx:.1}" y="{:.1}" width="10" height="10" fill="{}"/><text x="{:.1}" y="{ly:.1}" fill="{}">{cat}</text>"#,
            ly - 9.0,
            category_color(cat),
            lx + 14.0,
            category_color(cat)
        );
        lx += 14.0 + (cat.len() as f64 + 2.0) * CHAR_W;
    }

    // Code with attention backgrounds.
    let wmax = view
        .tokens
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != view.selected)
        .filter_map(|(_, t)| t.weight)
        .fold(0.0f32, f32::max);
    let _ = writeln!(s, r#"<g id="code">"#);
    for (line, col, text, tok) in &pieces {
        let x = PAD + *col as f64 * CHAR_W;
        let y = header_h + *line as f64 * LINE_H;
        let w = text.chars().count() as f64 * CHAR_W;
        let (fill, weight) = match tok {
            Some(i) => {
                let t = &view.tokens[*i];
                if Some(*i) == view.selected {
                    let _ = writeln!(
                        s,
                        r##"<rect x="{x:.1}" y="{:.1}" width="{w:.1}" height="{LINE_H}" fill="none" stroke="#d01e6e" stroke-width="1.5"/>"##,
                        y - LINE_H + 4.0
                    );
                } else if let Some(sv) = &view.surprisal {
                    if let Some(Some(b)) = t.surprisal {
                        let v = (b / sv.max_bits.max(1e-6)).clamp(0.0, 1.0);
                        let _ = writeln!(
                            s,
                            r#"<rect x="{x:.1}" y="{:.1}" width="{w:.1}" height="{LINE_H}" fill="{}"><title>{b:.2} bits</title></rect>"#,
                            y - LINE_H + 4.0,
                            surprisal_color(v)
                        );
                    }
                } else if let Some(wt) = t.weight.filter(|_| wmax > 0.0) {
                    let v = (wt / wmax).clamp(0.0, 1.0).sqrt() * 0.8;
                    if v > 0.05 {
                        let _ = writeln!(
                            s,
                            r#"<rect x="{x:.1}" y="{:.1}" width="{w:.1}" height="{LINE_H}" fill="{}"><title>{:.3}</title></rect>"#,
                            y - LINE_H + 4.0,
                            heat(v),
                            wt
                        );
                    }
                }
                let bold = t
                    .role
                    .as_deref()
                    .is_some_and(|r| r.starts_with("definition"));
                (category_color(&t.category), bold)
            }
            None => ("#888888", false),
        };
        let fw = if weight { r#" font-weight="bold""# } else { "" };
        let _ = writeln!(
            s,
            r#"<text x="{x:.1}" y="{y:.1}" fill="{fill}"{fw} xml:space="preserve">{}</text>"#,
            esc(text)
        );
    }
    let _ = writeln!(s, "</g>");
    if let Some(sv) = &view.surprisal {
        let ppl = sv.perplexity.map_or("nothing scored".to_string(), |p| {
            format!("perplexity {p:.2}")
        });
        let mut y = header_h + code_h + LINE_H;
        let _ = writeln!(
            s,
            r##"<text x="{PAD}" y="{y:.1}" fill="#333">surprisal view: background = bits / {:.2} (the largest) · {ppl} (per subword)</text>"##,
            sv.max_bits
        );
        if !sv.selected_expected.is_empty() {
            y += LINE_H;
            let list: Vec<String> = sv
                .selected_expected
                .iter()
                .map(|e| format!("{} {:.3}", e.token.as_deref().unwrap_or("?"), e.p))
                .collect();
            let _ = writeln!(
                s,
                r##"<text x="{PAD}" y="{y:.1}" fill="#333" xml:space="preserve">expected at the selected token: {}</text>"##,
                esc(&list.join("  "))
            );
        }
    }

    // Heatmap.
    if n > 0 {
        let vmax = view
            .matrix
            .iter()
            .flatten()
            .copied()
            .fold(0.0f32, f32::max)
            .max(1e-9);
        let _ = writeln!(s, r#"<g id="heatmap">"#);
        let _ = writeln!(
            s,
            r##"<rect x="{heat_x:.1}" y="{heat_y:.1}" width="{heat_size:.1}" height="{heat_size:.1}" fill="#ffffff" stroke="#999"/>"##
        );
        for (i, row) in view.matrix.iter().enumerate() {
            for (j, &a) in row.iter().enumerate() {
                let v = (a / vmax).clamp(0.0, 1.0).sqrt();
                if v < 0.08 {
                    continue; // indistinguishable from the white background
                }
                let _ = writeln!(
                    s,
                    r#"<rect x="{:.2}" y="{:.2}" width="{cell:.2}" height="{cell:.2}" fill="{}"/>"#,
                    heat_x + j as f64 * cell,
                    heat_y + i as f64 * cell,
                    heat(v)
                );
            }
        }
        if view.gold_overlay {
            for &(i, j) in &view.gold_edges {
                let _ = writeln!(
                    s,
                    r##"<rect x="{:.2}" y="{:.2}" width="{cell:.2}" height="{cell:.2}" fill="none" stroke="#e0a000" stroke-width="{:.2}"/>"##,
                    heat_x + j as f64 * cell,
                    heat_y + i as f64 * cell,
                    (cell / 6.0).max(0.5)
                );
            }
        }
        if let Some(sel) = view
            .selected
            .and_then(|t| view.matrix_tokens.iter().position(|&m| m == t))
        {
            let _ = writeln!(
                s,
                r##"<rect x="{heat_x:.1}" y="{:.2}" width="{heat_size:.1}" height="{cell:.2}" fill="none" stroke="#d01e6e" stroke-width="1"/>"##,
                heat_y + sel as f64 * cell
            );
        }
        if label_w > 0.0 {
            let fs = (cell - 1.0).min(11.0);
            for (k, &t) in view.matrix_tokens.iter().enumerate() {
                let tok = &view.tokens[t];
                let label: String = tok.text.chars().take(10).collect();
                let c = category_color(&tok.category);
                let _ = writeln!(
                    s,
                    r#"<text x="{:.1}" y="{:.1}" font-size="{fs:.1}" text-anchor="end" fill="{c}">{}</text>"#,
                    heat_x - 3.0,
                    heat_y + (k as f64 + 0.8) * cell,
                    esc(&label)
                );
                let cx = heat_x + (k as f64 + 0.8) * cell;
                let cy = heat_y - 3.0;
                let _ = writeln!(
                    s,
                    r#"<text x="{cx:.1}" y="{cy:.1}" font-size="{fs:.1}" transform="rotate(-90 {cx:.1} {cy:.1})" fill="{c}">{}</text>"#,
                    esc(&label)
                );
            }
        }
        let _ = writeln!(
            s,
            r##"<text x="{heat_x:.1}" y="{:.1}" fill="#333">rows: queries, columns: keys · max {vmax:.3} · colour = sqrt(a / max)</text>"##,
            heat_y + heat_size + LINE_H
        );
        let mut y = heat_y + heat_size + 2.0 * LINE_H;
        for (g, sc) in &view.scores {
            let _ = writeln!(
                s,
                r##"<text x="{heat_x:.1}" y="{y:.1}" fill="#333">{g}: P {:.2} R {:.2} F1 {:.2} ({} gold edges)</text>"##,
                sc.precision, sc.recall, sc.f1, sc.gold_edges
            );
            y += LINE_H;
        }
        let _ = writeln!(s, "</g>");
    }
    s.push_str("</svg>\n");
    s
}
