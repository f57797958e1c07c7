//! The logit lens figure: layers (rows, L0 = the embeddings) by code tokens (columns, a
//! window of at most [`MAX_TOKENS`] around the selected one), each cell the top-1 guess
//! for the token's first subword at that layer on the heat of `sqrt(p(actual))`, bold
//! where it is the actual one, framed where an identifier is first the top guess; the
//! colour bar; under it the selected token's line: the actual subword, its decided
//! layer, and its probability and rank at the selected layer.

use super::palette::{readable, Palette};
use super::svg::{clip, Anchor, Font, Svg};
use super::{colorbar_v, colorbar_v_width, header, sqrt_ticks, title_of, Figure, Metrics};
use crate::export::{FigureData, LensData};

/// The most token columns a slide shows.
pub const MAX_TOKENS: usize = 24;

/// A subword as written in a cell: the word-start marks as a space.
fn word(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\u{2581}' | '\u{120}' => ' ',
            '\u{10a}' => '↵',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}

pub fn draw(view: &FigureData, d: &LensData, m: Metrics, pal: Palette) -> Figure {
    let mut svg = Svg::new(m.width(), m.width() * 0.5);
    let n = d.tokens.len();
    let sel = d.selected.unwrap_or(0).min(n.saturating_sub(1));
    let count = n.min(MAX_TOKENS);
    let t0 = sel.saturating_sub(count / 2).min(n - count);
    let mut sub = vec![format!(
        "logit lens: each layer's residual stream through the final norm and the LM head · cell: the top-1 guess for the token's first subword, shaded by the actual one's probability · {} input",
        view.mode
    )];
    sub.push(format!(
        "bold: the guess is right · framed: the layer where an identifier is first the top guess{}",
        if count < n {
            format!(" · tokens {}–{} of {n}", t0 + 1, t0 + count)
        } else {
            String::new()
        }
    ));
    let y0 = header(&mut svg, m, pal, &title_of(view), &sub);
    let ticks = sqrt_ticks(1.0);
    let caption = "p(actual) (√)";
    let bar_w = colorbar_v_width(m, &ticks, caption);
    let small = m.small();
    let label_w = 10.0 * super::svg::CHAR_W * small;
    let avail = m.inner() - label_w - m.gap() - bar_w;
    let cw = (avail / count.max(1) as f64).clamp(60.0 * m.s, 160.0 * m.s);
    let ch = 34.0 * m.s;
    let x0 = m.margin() + label_w;
    let top = y0 + 2.0 * m.line(small);
    let chars = ((cw - 6.0 * m.s) / (super::svg::CHAR_W * small))
        .floor()
        .max(1.0) as usize;
    for (k, tok) in d.tokens.iter().enumerate().skip(t0).take(count) {
        let x = x0 + (k - t0) as f64 * cw + cw * 0.5;
        let mut f = Font::new(
            small,
            if tok.identifier {
                pal.accent()
            } else {
                pal.dim()
            },
        )
        .anchor(Anchor::Middle);
        if k == sel {
            f = f.bold();
        }
        svg.text(x, top - 0.5 * small, f, &clip(&word(&tok.text), chars));
    }
    svg.group("lens");
    for l in 0..d.layers {
        let y = top + l as f64 * ch;
        let name = match l {
            0 => "L0 emb".to_string(),
            _ if l + 1 == d.layers => format!("L{l} out"),
            _ => format!("L{l}"),
        };
        let f = if l == d.layer {
            Font::new(small, pal.accent()).bold()
        } else {
            Font::new(small, pal.dim())
        };
        svg.text(m.margin(), y + ch * 0.5 + 0.36 * small, f, &name);
        for (k, tok) in d.tokens.iter().enumerate().skip(t0).take(count) {
            let x = x0 + (k - t0) as f64 * cw;
            let Some(c) = tok.layers.get(l).and_then(|c| c.as_ref()) else {
                svg.rect(x, y, cw, ch, pal.bg());
                continue;
            };
            let bg = pal.heat(c.p.clamp(0.0, 1.0).sqrt());
            svg.rect_titled(
                x,
                y,
                cw,
                ch,
                bg,
                &format!(
                    "{} at L{l}: top-1 «{}», p(«{}») {:.4}, rank {}",
                    tok.text, c.top, tok.actual, c.p, c.rank
                ),
            );
            let mut f = Font::new(small, readable(pal.fg(), bg)).anchor(Anchor::Middle);
            if c.rank == 1 {
                f = f.bold();
            }
            svg.text(
                x + cw * 0.5,
                y + ch * 0.5 + 0.36 * small,
                f,
                &clip(&word(&c.top), chars),
            );
            if tok.identifier && tok.decided_at == Some(l) {
                let sw = 3.0 * m.s;
                svg.frame(
                    x + sw / 2.0,
                    y + sw / 2.0,
                    cw - sw,
                    ch - sw,
                    pal.accent(),
                    sw,
                );
            }
        }
    }
    let grid_h = ch * d.layers as f64;
    svg.frame(x0, top, cw * count as f64, grid_h, pal.rule(), m.s);
    if sel >= t0 && d.layer < d.layers {
        let sw = 4.0 * m.s;
        svg.frame(
            x0 + (sel - t0) as f64 * cw,
            top + d.layer as f64 * ch,
            cw,
            ch,
            pal.fg(),
            sw,
        );
    }
    svg.end_group();
    colorbar_v(
        &mut svg,
        m,
        pal,
        (
            x0 + cw * count as f64 + m.gap(),
            top,
            grid_h.max(200.0 * m.s),
        ),
        pal.heat_stops(),
        &ticks,
        caption,
    );
    let mut y = top + grid_h.max(200.0 * m.s) + m.line(m.body());
    if let Some(tok) = d.tokens.get(sel) {
        let at = tok.layers.get(d.layer).and_then(|c| c.as_ref());
        let line = format!(
            "«{}» ({}): actual first subword «{}», {}{}",
            tok.text,
            tok.category,
            word(&tok.actual),
            match tok.decided_at {
                Some(l) => format!("decided at L{l}"),
                None => "never the top guess".into(),
            },
            match at {
                Some(c) => format!(
                    "; at L{}: top-1 «{}», p {:.3}, rank {}",
                    d.layer,
                    word(&c.top),
                    c.p,
                    c.rank
                ),
                None => String::new(),
            }
        );
        svg.text(m.margin(), y, Font::new(m.body(), pal.fg()), &line);
        y += m.line(m.body());
    }
    svg.grow_to(m.width(), y + m.margin());
    let (width, height) = (svg.width, svg.height);
    Figure {
        svg: svg.finish(pal.bg(), &format!("{} · logit lens", title_of(view))),
        width,
        height,
    }
}
