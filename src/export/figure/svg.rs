//! A small SVG writer for the figures: rectangles, text, lines, gradients and embedded
//! rasters, with every number formatted the same way on every run (one decimal), so a
//! figure is byte-identical for the same input.
//!
//! Text is DejaVu Sans Mono (bundled, see `assets/fonts`): every glyph advances
//! [`CHAR_W`] em, so widths are known without shaping and the PNG (rendered with the
//! bundled font) and the SVG (any monospace fallback in a viewer) lay out alike.

use std::fmt::Write as _;

use super::palette::{hex, Rgb};

/// Advance of one DejaVu Sans Mono glyph in em (1233 / 2048 units).
pub const CHAR_W: f64 = 0.602;

/// The font stack written into the SVG (the PNG renderer only knows the bundled font).
pub const FONT_FAMILY: &str = "DejaVu Sans Mono, Menlo, Consolas, monospace";

/// Width in px of `s` at font size `size`.
pub fn text_w(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * CHAR_W * size
}

/// `s` clipped to at most `n` chars (an ellipsis marks the cut).
pub fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    if n == 0 {
        return String::new();
    }
    let mut o: String = s.chars().take(n - 1).collect();
    o.push('…');
    o
}

/// Escape text for SVG (tabs as spaces, control characters dropped to spaces, the code
/// points XML 1.0 forbids, U+FFFE and U+FFFF, and every other non-character as U+FFFD),
/// so any code makes a document that parses.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\t' => o.push_str("    "),
            c if c.is_control() => o.push(' '),
            c if is_noncharacter(c) => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

/// The 66 non-characters: U+FDD0 to U+FDEF and the last two code points of every plane
/// (U+FFFE and U+FFFF among them, which XML 1.0 forbids outright).
fn is_noncharacter(c: char) -> bool {
    matches!(c, '\u{fdd0}'..='\u{fdef}') || (c as u32 & 0xfffe) == 0xfffe
}

/// Horizontal anchor of a text element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

/// One text element's style.
#[derive(Debug, Clone, Copy)]
pub struct Font {
    pub size: f64,
    pub fill: Rgb,
    pub bold: bool,
    pub anchor: Anchor,
}

impl Font {
    pub fn new(size: f64, fill: Rgb) -> Self {
        Font {
            size,
            fill,
            bold: false,
            anchor: Anchor::Start,
        }
    }
    pub fn bold(mut self) -> Self {
        self.bold = true;
        self
    }
    pub fn anchor(mut self, a: Anchor) -> Self {
        self.anchor = a;
        self
    }
}

/// An SVG document being written.
pub struct Svg {
    pub width: f64,
    pub height: f64,
    body: String,
    defs: String,
    ids: usize,
}

impl Svg {
    pub fn new(width: f64, height: f64) -> Self {
        Svg {
            width: width.ceil(),
            height: height.ceil(),
            body: String::new(),
            defs: String::new(),
            ids: 0,
        }
    }

    /// The document: root element, background, definitions, body.
    pub fn finish(self, bg: Rgb, title: &str) -> String {
        let (w, h) = (self.width, self.height);
        let mut s = String::with_capacity(self.body.len() + self.defs.len() + 512);
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" font-family="{FONT_FAMILY}">"#
        );
        let _ = writeln!(s, "<title>{}</title>", esc(title));
        if !self.defs.is_empty() {
            let _ = writeln!(s, "<defs>\n{}</defs>", self.defs);
        }
        let _ = writeln!(
            s,
            r#"<rect width="{w:.0}" height="{h:.0}" fill="{}"/>"#,
            hex(bg)
        );
        s.push_str(&self.body);
        s.push_str("</svg>\n");
        s
    }

    /// Grow the canvas (content is laid out top to bottom, the height known last).
    pub fn grow_to(&mut self, w: f64, h: f64) {
        self.width = self.width.max(w.ceil());
        self.height = self.height.max(h.ceil());
    }

    pub fn raw(&mut self, s: &str) {
        self.body.push_str(s);
    }

    pub fn group(&mut self, id: &str) {
        let _ = writeln!(self.body, r#"<g id="{id}">"#);
    }

    pub fn end_group(&mut self) {
        self.body.push_str("</g>\n");
    }

    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: Rgb) {
        let _ = writeln!(
            self.body,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="{}"/>"#,
            hex(fill)
        );
    }

    /// A filled rectangle with a tooltip (the exact value, for readers of the SVG).
    pub fn rect_titled(&mut self, x: f64, y: f64, w: f64, h: f64, fill: Rgb, title: &str) {
        let _ = writeln!(
            self.body,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="{}"><title>{}</title></rect>"#,
            hex(fill),
            esc(title)
        );
    }

    /// An outline (no fill).
    pub fn frame(&mut self, x: f64, y: f64, w: f64, h: f64, stroke: Rgb, sw: f64) {
        let _ = writeln!(
            self.body,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="none" stroke="{}" stroke-width="{sw:.1}"/>"#,
            hex(stroke)
        );
    }

    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, stroke: Rgb, sw: f64) {
        let _ = writeln!(
            self.body,
            r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{}" stroke-width="{sw:.1}"/>"#,
            hex(stroke)
        );
    }

    fn text_attrs(f: &Font) -> String {
        let mut a = format!(r#" font-size="{:.1}" fill="{}""#, f.size, hex(f.fill));
        if f.bold {
            a.push_str(r#" font-weight="bold""#);
        }
        match f.anchor {
            Anchor::Start => {}
            Anchor::Middle => a.push_str(r#" text-anchor="middle""#),
            Anchor::End => a.push_str(r#" text-anchor="end""#),
        }
        a
    }

    /// Text with its baseline at `y`.
    pub fn text(&mut self, x: f64, y: f64, f: Font, s: &str) {
        let _ = writeln!(
            self.body,
            r#"<text x="{x:.1}" y="{y:.1}"{} xml:space="preserve">{}</text>"#,
            Self::text_attrs(&f),
            esc(s)
        );
    }

    /// Text rotated by `deg` degrees about its anchor point.
    pub fn text_rotated(&mut self, x: f64, y: f64, deg: f64, f: Font, s: &str) {
        let _ = writeln!(
            self.body,
            r#"<text x="{x:.1}" y="{y:.1}"{} transform="rotate({deg:.0} {x:.1} {y:.1})" xml:space="preserve">{}</text>"#,
            Self::text_attrs(&f),
            esc(s)
        );
    }

    /// A linear gradient through `stops` filling a rectangle: bottom to top when
    /// `vertical`, else left to right (first stop at the bottom / left).
    pub fn gradient_rect(&mut self, x: f64, y: f64, w: f64, h: f64, stops: &[Rgb], vertical: bool) {
        self.ids += 1;
        let id = format!("g{}", self.ids);
        let dir = if vertical {
            r#"x1="0" y1="1" x2="0" y2="0""#
        } else {
            r#"x1="0" y1="0" x2="1" y2="0""#
        };
        let _ = writeln!(self.defs, r#"<linearGradient id="{id}" {dir}>"#);
        let k = stops.len().saturating_sub(1).max(1);
        for (i, c) in stops.iter().enumerate() {
            let _ = writeln!(
                self.defs,
                r#"<stop offset="{:.3}" stop-color="{}"/>"#,
                i as f64 / k as f64,
                hex(*c)
            );
        }
        self.defs.push_str("</linearGradient>\n");
        let _ = writeln!(
            self.body,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="url(#{id})"/>"#
        );
    }

    /// An embedded PNG drawn with nearest-neighbour scaling (crisp cells).
    pub fn image_png(&mut self, x: f64, y: f64, w: f64, h: f64, png: &[u8]) {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD.encode(png);
        let _ = writeln!(
            self.body,
            r#"<image x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" preserveAspectRatio="none" image-rendering="optimizeSpeed" style="image-rendering:pixelated" href="data:image/png;base64,{b64}"/>"#
        );
    }
}

/// Encode an RGBA image (`w * h * 4` bytes, straight alpha) as PNG.
pub fn png_rgba(w: u32, h: u32, rgba: &[u8]) -> Vec<u8> {
    let Some(mut pm) = resvg::tiny_skia::Pixmap::new(w.max(1), h.max(1)) else {
        return Vec::new();
    };
    for (px, c) in pm.pixels_mut().iter_mut().zip(rgba.chunks_exact(4)) {
        let c = resvg::tiny_skia::ColorU8::from_rgba(c[0], c[1], c[2], c[3]);
        *px = c.premultiply();
    }
    pm.encode_png().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_and_escaping() {
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("abc", 4), "abc");
        assert_eq!(esc("a<b>&\"\t"), "a&lt;b&gt;&amp;&quot;    ");
        assert_eq!(esc("x\u{fffe}\u{ffff}\u{1b}y"), "x\u{fffd}\u{fffd} y");
        assert_eq!(
            esc("\u{fdd0}\u{fdef}\u{1fffe}\u{10ffff}\u{fffd}"),
            "\u{fffd}".repeat(5)
        );
        assert_eq!(esc("\u{fdcf}\u{fdf0}"), "\u{fdcf}\u{fdf0}");
        assert!((text_w("abcd", 20.0) - 48.16).abs() < 1e-9);
    }

    #[test]
    fn documents_are_deterministic() {
        let draw = || {
            let mut s = Svg::new(100.4, 50.0);
            s.rect(1.0, 2.0, 3.0, 4.0, (1, 2, 3));
            s.gradient_rect(0.0, 0.0, 10.0, 10.0, &[(0, 0, 0), (255, 255, 255)], true);
            s.text(1.0, 2.0, Font::new(20.0, (0, 0, 0)).bold(), "x<y");
            s.finish((255, 255, 255), "t")
        };
        let a = draw();
        assert_eq!(a, draw());
        assert!(a.starts_with("<svg") && a.contains(r#"width="101""#));
        assert!(a.contains("x&lt;y") && a.contains("url(#g1)"));
    }
}
