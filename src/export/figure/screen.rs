//! The explorer screen as a figure, drawn from the ratatui buffer the terminal shows:
//! one cell per character, terminal cells twice as tall as wide (so the heatmap's
//! half-block pixels stay square), 1920 px wide at scale 1.
//!
//! Backgrounds are merged into runs per row. Block elements are drawn as rectangles
//! (`▀` `▄` `█`, the eighths `▏`..`▉`, the shades `░▒▓` as the foreground blended over
//! the background), box-drawing lines as strokes through the cell centres, so panels
//! and heatmaps join without the seams glyphs leave; all other text is DejaVu Sans Mono
//! with each glyph placed on its cell. `Reset` colours take the explorer theme's text
//! and background colours; indexed colours the xterm-256 palette.
//!
//! [`text`] gives the same buffer as plain text (what `render --view screen --out
//! x.txt` writes, and what tests compare with the explorer's own buffer).

use std::fmt::Write as _;

use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};

use super::palette::{hex, Rgb};
use super::svg::{esc, Svg, CHAR_W};
use super::{Figure, FigureOptions, Metrics};

/// The buffer as text: one line per row, cells hidden by wide symbols skipped,
/// trailing spaces trimmed.
pub fn text(buf: &Buffer) -> String {
    let w = buf.area.width as usize;
    let mut out = String::new();
    for cells in buf.content.chunks(w.max(1)) {
        let mut line = String::new();
        let mut skip = 0usize;
        for c in cells {
            if skip == 0 {
                line.push_str(c.symbol());
            }
            skip = skip.max(unicode_width(c.symbol())).saturating_sub(1);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn unicode_width(s: &str) -> usize {
    use ratatui::text::Span;
    Span::raw(s).width()
}

/// xterm-256 palette entry as RGB.
pub fn xterm(i: u8) -> Rgb {
    const BASE: [Rgb; 16] = [
        (0, 0, 0),
        (205, 0, 0),
        (0, 205, 0),
        (205, 205, 0),
        (0, 0, 238),
        (205, 0, 205),
        (0, 205, 205),
        (229, 229, 229),
        (127, 127, 127),
        (255, 0, 0),
        (0, 255, 0),
        (255, 255, 0),
        (92, 92, 255),
        (255, 0, 255),
        (0, 255, 255),
        (255, 255, 255),
    ];
    match i {
        0..=15 => BASE[i as usize],
        16..=231 => {
            let k = i - 16;
            let lv = |v: u8| if v == 0 { 0 } else { 55 + 40 * v };
            (lv(k / 36), lv(k / 6 % 6), lv(k % 6))
        }
        _ => {
            let g = 8 + 10 * (i - 232);
            (g, g, g)
        }
    }
}

/// A terminal colour as RGB (`default` for `Reset`).
fn rgb(c: Color, default: Rgb) -> Rgb {
    match c {
        Color::Reset => default,
        Color::Rgb(r, g, b) => (r, g, b),
        Color::Indexed(i) => xterm(i),
        Color::Black => xterm(0),
        Color::Red => xterm(1),
        Color::Green => xterm(2),
        Color::Yellow => xterm(3),
        Color::Blue => xterm(4),
        Color::Magenta => xterm(5),
        Color::Cyan => xterm(6),
        Color::Gray => xterm(7),
        Color::DarkGray => xterm(8),
        Color::LightRed => xterm(9),
        Color::LightGreen => xterm(10),
        Color::LightYellow => xterm(11),
        Color::LightBlue => xterm(12),
        Color::LightMagenta => xterm(13),
        Color::LightCyan => xterm(14),
        Color::White => xterm(15),
    }
}

fn blend(a: Rgb, b: Rgb, t: f32) -> Rgb {
    let f = |x: u8, y: u8| (x as f32 + (y as f32 - x as f32) * t).round() as u8;
    (f(a.0, b.0), f(a.1, b.1), f(a.2, b.2))
}

/// How a block element fills its cell: (top half, bottom half) colours, or a left
/// part of `eighths`.
enum Fill {
    Halves(Rgb, Rgb),
    Left(u8),
}

fn block(sym: &str, fg: Rgb, bg: Rgb) -> Option<Fill> {
    Some(match sym {
        "▀" => Fill::Halves(fg, bg),
        "▄" => Fill::Halves(bg, fg),
        "█" => Fill::Halves(fg, fg),
        "░" => Fill::Halves(blend(bg, fg, 0.25), blend(bg, fg, 0.25)),
        "▒" => Fill::Halves(blend(bg, fg, 0.5), blend(bg, fg, 0.5)),
        "▓" => Fill::Halves(blend(bg, fg, 0.75), blend(bg, fg, 0.75)),
        "▏" => Fill::Left(1),
        "▎" => Fill::Left(2),
        "▍" => Fill::Left(3),
        "▌" => Fill::Left(4),
        "▋" => Fill::Left(5),
        "▊" => Fill::Left(6),
        "▉" => Fill::Left(7),
        _ => return None,
    })
}

/// Which arms a box-drawing character has: (up, down, left, right, heavy).
type BoxSides = (bool, bool, bool, bool, bool);

/// Box-drawing characters as (up, down, left, right, heavy).
fn box_lines(sym: &str) -> Option<BoxSides> {
    let (u, d, l, r, h) = match sym {
        "─" => (false, false, true, true, false),
        "│" => (true, true, false, false, false),
        "┌" | "╭" => (false, true, false, true, false),
        "┐" | "╮" => (false, true, true, false, false),
        "└" | "╰" => (true, false, false, true, false),
        "┘" | "╯" => (true, false, true, false, false),
        "├" => (true, true, false, true, false),
        "┤" => (true, true, true, false, false),
        "┬" => (false, true, true, true, false),
        "┴" => (true, false, true, true, false),
        "┼" => (true, true, true, true, false),
        "━" => (false, false, true, true, true),
        "┃" => (true, true, false, false, true),
        "┏" => (false, true, false, true, true),
        "┓" => (false, true, true, false, true),
        "┗" => (true, false, false, true, true),
        "┛" => (true, false, true, false, true),
        _ => return None,
    };
    Some((u, d, l, r, h))
}

/// Glyphs the bundled font lacks, drawn as the nearest it has.
fn substitute(sym: &str) -> &str {
    match sym {
        "⟳" => "↻",
        s => s,
    }
}

/// Text style of a cell: fg, bold, underline, crossed out.
#[derive(Clone, Copy, PartialEq, Eq)]
struct TextStyle {
    fg: Rgb,
    bold: bool,
    italic: bool,
    underline: bool,
    strike: bool,
}

/// Draw `buf` as a figure. `light` picks the default colours for `Reset` cells (the
/// explorer theme's text and background).
pub fn render(buf: &Buffer, opts: &FigureOptions) -> Figure {
    let m = Metrics::new(opts.scale);
    let cols = buf.area.width.max(1) as usize;
    let rows = buf.area.height as usize;
    let cw = m.width() / cols as f64;
    let ch = cw * 2.0;
    let fs = cw / CHAR_W;
    let (def_fg, def_bg): (Rgb, Rgb) = if opts.light {
        ((30, 30, 40), (250, 250, 247))
    } else {
        ((215, 218, 226), (22, 24, 32))
    };
    let mut svg = Svg::new(m.width(), ch * rows as f64);
    let mut rects = String::new();
    let mut lines = String::new();
    let mut texts = String::new();
    let f1 = |v: f64| format!("{v:.1}");
    for y in 0..rows {
        let top = y as f64 * ch;
        // Resolved colours and fills of the row.
        let mut halves: Vec<(Rgb, Rgb)> = Vec::with_capacity(cols);
        let mut partial: Vec<(usize, u8, Rgb)> = Vec::new();
        let mut glyphs: Vec<(usize, String, TextStyle)> = Vec::new();
        let mut boxes: Vec<(usize, BoxSides, Rgb)> = Vec::new();
        let mut skip = 0usize;
        for x in 0..cols {
            let c = &buf.content[y * cols + x];
            let mut fg = rgb(c.fg, def_fg);
            let mut bg = rgb(c.bg, def_bg);
            let md = c.modifier;
            if md.contains(Modifier::REVERSED) {
                std::mem::swap(&mut fg, &mut bg);
            }
            if md.contains(Modifier::DIM) {
                fg = blend(bg, fg, 0.6);
            }
            let sym = c.symbol();
            let hidden = skip > 0;
            skip = skip.max(unicode_width(sym)).saturating_sub(1);
            match block(sym, fg, bg) {
                Some(Fill::Halves(t, b)) => halves.push((t, b)),
                Some(Fill::Left(k)) => {
                    halves.push((bg, bg));
                    partial.push((x, k, fg));
                }
                None => {
                    halves.push((bg, bg));
                    if hidden || md.contains(Modifier::HIDDEN) {
                        continue;
                    }
                    if let Some(b) = box_lines(sym) {
                        boxes.push((x, b, fg));
                    } else if !sym.trim().is_empty() {
                        let st = TextStyle {
                            fg,
                            bold: md.contains(Modifier::BOLD),
                            italic: md.contains(Modifier::ITALIC),
                            underline: md.contains(Modifier::UNDERLINED),
                            strike: md.contains(Modifier::CROSSED_OUT),
                        };
                        glyphs.push((x, substitute(sym).to_string(), st));
                    } else if md.contains(Modifier::UNDERLINED) {
                        // An underlined space still shows its line.
                        let uy = top + ch * 0.86;
                        let _ = writeln!(
                            lines,
                            r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="{}"/>"#,
                            f1(x as f64 * cw),
                            f1(uy),
                            f1((x + 1) as f64 * cw),
                            f1(uy),
                            hex(fg),
                            f1((cw / 10.0).max(1.0))
                        );
                    }
                }
            }
        }
        // Background runs (skipping the default background drawn under everything).
        let mut x = 0;
        while x < cols {
            let (t, b) = halves[x];
            let mut e = x + 1;
            while e < cols && halves[e] == (t, b) {
                e += 1;
            }
            let (x0, w) = (x as f64 * cw, (e - x) as f64 * cw);
            if t == b {
                if t != def_bg {
                    let _ = writeln!(
                        rects,
                        r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{}"/>"#,
                        f1(x0),
                        f1(top),
                        f1(w),
                        f1(ch),
                        hex(t)
                    );
                }
            } else {
                for (c, yy) in [(t, top), (b, top + ch / 2.0)] {
                    if c != def_bg {
                        let _ = writeln!(
                            rects,
                            r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{}"/>"#,
                            f1(x0),
                            f1(yy),
                            f1(w),
                            f1(ch / 2.0),
                            hex(c)
                        );
                    }
                }
            }
            x = e;
        }
        for (x, k, fg) in partial {
            let _ = writeln!(
                rects,
                r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{}"/>"#,
                f1(x as f64 * cw),
                f1(top),
                f1(cw * k as f64 / 8.0),
                f1(ch),
                hex(fg)
            );
        }
        // Box-drawing strokes, one path per colour run.
        let mut i = 0;
        while i < boxes.len() {
            let colour = boxes[i].2;
            let mut d = String::new();
            let mut heavy = false;
            while i < boxes.len() && boxes[i].2 == colour {
                let (x, (u, dn, l, r, h), _) = boxes[i];
                heavy |= h;
                let cx = x as f64 * cw + cw / 2.0;
                let cy = top + ch / 2.0;
                let (xl, xr) = (x as f64 * cw, (x + 1) as f64 * cw);
                if l || r {
                    let a = if l { xl } else { cx };
                    let b = if r { xr } else { cx };
                    let _ = write!(d, "M{} {}H{}", f1(a), f1(cy), f1(b));
                }
                if u || dn {
                    let a = if u { top } else { cy };
                    let b = if dn { top + ch } else { cy };
                    let _ = write!(d, "M{} {}V{}", f1(cx), f1(a), f1(b));
                }
                i += 1;
            }
            let sw = if heavy { cw / 4.0 } else { (cw / 9.0).max(1.0) };
            let _ = writeln!(
                lines,
                r#"<path d="{d}" stroke="{}" stroke-width="{}" fill="none"/>"#,
                hex(colour),
                f1(sw)
            );
        }
        // Text runs of one style on consecutive cells.
        let base = top + ch * 0.5 + fs * 0.36;
        let mut i = 0;
        while i < glyphs.len() {
            let st = glyphs[i].2;
            let start = i;
            while i + 1 < glyphs.len()
                && glyphs[i + 1].2 == st
                && glyphs[i + 1].0 == glyphs[i].0 + 1
            {
                i += 1;
            }
            let run = &glyphs[start..=i];
            i += 1;
            let s: String = run.iter().map(|g| g.1.as_str()).collect();
            let ascii = s.is_ascii();
            let xs = if ascii {
                f1(run[0].0 as f64 * cw)
            } else {
                // Non-ASCII glyphs may fall back to another font in a viewer: pin each
                // to its cell.
                run.iter()
                    .map(|g| f1(g.0 as f64 * cw))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let mut attrs = format!(r#" fill="{}""#, hex(st.fg));
            if st.bold {
                attrs.push_str(r#" font-weight="bold""#);
            }
            if st.italic {
                attrs.push_str(r#" font-style="italic""#);
            }
            let _ = writeln!(
                texts,
                r#"<text x="{xs}" y="{}"{attrs} xml:space="preserve">{}</text>"#,
                f1(base),
                esc(&s)
            );
            let x0 = run[0].0 as f64 * cw;
            let x1 = (run[run.len() - 1].0 + 1) as f64 * cw;
            for (on, yy) in [(st.underline, top + ch * 0.86), (st.strike, top + ch * 0.5)] {
                if on {
                    let _ = writeln!(
                        lines,
                        r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="{}"/>"#,
                        f1(x0),
                        f1(yy),
                        f1(x1),
                        f1(yy),
                        hex(st.fg),
                        f1((cw / 10.0).max(1.0))
                    );
                }
            }
        }
    }
    svg.raw("<g id=\"cells\">\n");
    svg.raw(&rects);
    svg.raw("</g>\n<g id=\"lines\" stroke-linecap=\"square\">\n");
    svg.raw(&lines);
    svg.raw(&format!("</g>\n<g id=\"text\" font-size=\"{}\">\n", f1(fs)));
    svg.raw(&texts);
    svg.raw("</g>\n");
    let (width, height) = (svg.width, svg.height);
    let fig = Figure {
        svg: svg.finish(def_bg, &format!("codescope {cols}x{rows}")),
        width,
        height,
    };
    // On its slide like every other figure.
    super::on_canvas(fig, opts, def_bg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::layout::Rect;
    use ratatui::style::Style;

    #[test]
    fn palette_and_text() {
        assert_eq!(xterm(16), (0, 0, 0));
        assert_eq!(xterm(231), (255, 255, 255));
        assert_eq!(xterm(196), (255, 0, 0));
        assert_eq!(xterm(244), (128, 128, 128));
        let mut b = Buffer::empty(Rect::new(0, 0, 6, 2));
        b.set_string(0, 0, "ab ", Style::default());
        b.set_string(0, 1, "│▀x", Style::default().fg(Color::Rgb(1, 2, 3)));
        assert_eq!(text(&b), "ab\n│▀x\n");
        let f = render(&b, &FigureOptions::default());
        assert!(
            f.svg.contains(r##"fill="#010203""##),
            "the ▀ top half is a rect"
        );
        assert!(f.svg.contains("<path d=\"M"), "the │ is a stroke");
        assert!(f.svg.contains(">x</text>") && f.svg.contains(">ab</text>"));
        assert_eq!(f.width, 1920.0);
        assert_eq!(f, render(&b, &FigureOptions::default()));
    }
}
