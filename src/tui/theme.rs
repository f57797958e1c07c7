//! Colours and glyphs: dark / light themes, truecolor with a 256-colour fallback, and a
//! NO_COLOR mode that draws with shapes and modifiers only.
//!
//! Every colour the explorer uses comes from here, as an RGB triple converted at the end
//! by [`Theme::color`]: truecolor terminals get it as is, others the nearest entry of the
//! xterm 256-colour palette (6x6x6 cube or grey ramp), and NO_COLOR gets `Reset`.
//! Attention intensities are drawn on a blue ramp, gold (AST motif / data-flow) edges on
//! a gold ramp, so the two never share a hue; surprisal on a purple-to-yellow ramp
//! (dark; "inferno"-like) or yellow-to-red (light), both monotone in lightness so the
//! 256-colour approximation keeps the order.

use ratatui::style::{Color, Modifier, Style};

use crate::syntax::{Binding, Category, CodeToken, Role};

/// How colours reach the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorMode {
    /// 24-bit colour (`COLORTERM=truecolor` or `24bit`).
    TrueColor,
    /// The xterm 256-colour palette (SSH, tmux, most terminals).
    Ansi256,
    /// The 16 ANSI colours (`TERM=linux`, the Linux console, and other 8/16-colour
    /// terminals): tokens keep their category hues, but no colour ramp fits in 16
    /// colours, so intensities are drawn as in NO_COLOR, with `░▒▓█` and modifiers.
    Ansi16,
    /// No colour at all (`NO_COLOR` set): intensities as `░▒▓█`, categories as modifiers.
    None,
}

impl ColorMode {
    /// From the environment: `NO_COLOR` (non-empty) wins, then `COLORTERM`, then `TERM`.
    pub fn detect() -> Self {
        Self::from_env_term(
            std::env::var("NO_COLOR").ok().as_deref(),
            std::env::var("COLORTERM").ok().as_deref(),
            std::env::var("TERM").ok().as_deref(),
        )
    }

    /// [`ColorMode::detect`] on given `NO_COLOR` and `COLORTERM` (any `TERM`).
    pub fn from_env(no_color: Option<&str>, colorterm: Option<&str>) -> Self {
        Self::from_env_term(no_color, colorterm, None)
    }

    /// [`ColorMode::detect`] on given values (testable): a `TERM` of a 8/16-colour
    /// terminal ([`is_16_colour_term`]) gets [`ColorMode::Ansi16`].
    pub fn from_env_term(
        no_color: Option<&str>,
        colorterm: Option<&str>,
        term: Option<&str>,
    ) -> Self {
        if no_color.is_some_and(|v| !v.is_empty()) {
            return ColorMode::None;
        }
        match colorterm.map(|s| s.trim().to_ascii_lowercase()) {
            Some(s) if s == "truecolor" || s == "24bit" => ColorMode::TrueColor,
            _ if term.is_some_and(is_16_colour_term) => ColorMode::Ansi16,
            _ => ColorMode::Ansi256,
        }
    }
}

/// Whether `TERM` names a terminal of 8 or 16 colours: the Linux and BSD consoles, VT
/// terminals, `ansi`, and any `*-8color` / `*-16color` entry.
pub fn is_16_colour_term(term: &str) -> bool {
    let t = term.trim().to_ascii_lowercase();
    matches!(
        t.as_str(),
        "linux" | "ansi" | "vt100" | "vt102" | "vt220" | "cons25" | "wsvt25" | "pcansi"
    ) || t.ends_with("-8color")
        || t.ends_with("-16color")
}

/// Whether `TERM` names a terminal that cannot draw the explorer at all (`dumb`: no
/// cursor addressing).
pub fn is_dumb_term(term: Option<&str>) -> bool {
    term.is_some_and(|t| t.trim() == "dumb")
}

/// The 16 ANSI colours as terminal colours with their usual RGB (xterm's defaults).
const ANSI16: [(Color, Rgb); 16] = [
    (Color::Black, (0, 0, 0)),
    (Color::Red, (205, 0, 0)),
    (Color::Green, (0, 205, 0)),
    (Color::Yellow, (205, 205, 0)),
    (Color::Blue, (0, 0, 238)),
    (Color::Magenta, (205, 0, 205)),
    (Color::Cyan, (0, 205, 205)),
    (Color::Gray, (229, 229, 229)),
    (Color::DarkGray, (127, 127, 127)),
    (Color::LightRed, (255, 0, 0)),
    (Color::LightGreen, (0, 255, 0)),
    (Color::LightYellow, (255, 255, 0)),
    (Color::LightBlue, (92, 92, 255)),
    (Color::LightMagenta, (255, 0, 255)),
    (Color::LightCyan, (0, 255, 255)),
    (Color::White, (255, 255, 255)),
];

/// The nearest of the 16 ANSI colours to `c`: by hue for saturated colours (so a blue
/// identifier stays blue), by lightness for greys.
pub fn ansi16(c: Rgb) -> Color {
    let (r, g, b) = (c.0 as i32, c.1 as i32, c.2 as i32);
    let (max, min) = (r.max(g).max(b), r.min(g).min(b));
    if max - min < 40 {
        // a grey: black, dark grey, grey or white, by lightness
        let greys = [ANSI16[0], ANSI16[8], ANSI16[7], ANSI16[15]];
        return greys
            .iter()
            .min_by_key(|(_, x)| (x.0 as i32 - max).abs())
            .map_or(Color::Reset, |(col, _)| *col);
    }
    let candidates = &ANSI16[1..15];
    let d = |x: Rgb| {
        // distance of the colours scaled to the same brightness, then of the brightness
        let n = |v: u8, m: i32| v as f64 * 255.0 / m.max(1) as f64;
        let mx = (x.0 as i32).max(x.1 as i32).max(x.2 as i32);
        let hue = (n(x.0, mx) - n(c.0, max)).powi(2)
            + (n(x.1, mx) - n(c.1, max)).powi(2)
            + (n(x.2, mx) - n(c.2, max)).powi(2);
        hue + 0.25 * ((mx - max) as f64).powi(2)
    };
    candidates
        .iter()
        .min_by(|a, b| d(a.1).total_cmp(&d(b.1)))
        .map_or(Color::Reset, |(col, _)| *col)
}

use crate::color::ramp;
/// An RGB triple.
pub use crate::color::Rgb;

/// The explorer's palette for one theme and colour mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    pub mode: ColorMode,
    pub light: bool,
    /// ASCII only: frames of `+-|`, no block elements or half blocks (`--ascii`).
    pub ascii: bool,
}

/// Whether the locale asks for a character set other than UTF-8: the first set of
/// `LC_ALL`, `LC_CTYPE`, `LANG` names one (`en_US.ISO-8859-1`). `C`, `POSIX` and no locale
/// at all do not count: terminals reached over SSH with no locale set mostly draw UTF-8
/// fine, and `--ascii` is there for those that do not.
pub fn locale_is_not_utf8(
    lc_all: Option<&str>,
    lc_ctype: Option<&str>,
    lang: Option<&str>,
) -> bool {
    let Some(v) = [lc_all, lc_ctype, lang]
        .into_iter()
        .flatten()
        .find(|v| !v.is_empty())
    else {
        return false;
    };
    let Some((_, charset)) = v.split_once('.') else {
        return false;
    };
    let charset = charset.split('@').next().unwrap_or("").to_ascii_lowercase();
    !matches!(charset.as_str(), "utf-8" | "utf8")
}

/// Shade glyphs for NO_COLOR intensities, lowest first.
pub const SHADES: [char; 5] = [' ', '░', '▒', '▓', '█'];

/// Nearest xterm-256 index of an RGB colour (cube 16..231 or grey ramp 232..255).
pub fn ansi256(c: Rgb) -> u8 {
    const LEVELS: [u8; 6] = [0, 95, 135, 175, 215, 255];
    let near = |v: u8| -> usize {
        LEVELS
            .iter()
            .enumerate()
            .min_by_key(|(_, &l)| (l as i32 - v as i32).abs())
            .map(|(i, _)| i)
            .unwrap_or(0)
    };
    let (r, g, b) = (near(c.0), near(c.1), near(c.2));
    let cube = (LEVELS[r], LEVELS[g], LEVELS[b]);
    let avg = (c.0 as u32 + c.1 as u32 + c.2 as u32) / 3;
    let gi = ((avg.saturating_sub(8)) / 10).min(23) as u8;
    let grey_v = 8 + 10 * gi;
    let d = |x: Rgb| {
        let dr = x.0 as i32 - c.0 as i32;
        let dg = x.1 as i32 - c.1 as i32;
        let db = x.2 as i32 - c.2 as i32;
        dr * dr + dg * dg + db * db
    };
    if d((grey_v, grey_v, grey_v)) < d(cube) {
        232 + gi
    } else {
        16 + 36 * r as u8 + 6 * g as u8 + b as u8
    }
}

impl Theme {
    pub fn new(mode: ColorMode, light: bool) -> Self {
        Theme {
            mode,
            light,
            ascii: false,
        }
    }

    /// The same theme, drawing with ASCII only (or not).
    pub fn with_ascii(self, ascii: bool) -> Self {
        Theme { ascii, ..self }
    }

    /// Whether heat maps may pack two rows into a cell with `▀` (colour scales on, and
    /// not ASCII).
    pub fn half_blocks(&self) -> bool {
        self.colored() && !self.ascii
    }

    /// Whether colour scales are drawn (heat maps, backgrounds): not in NO_COLOR, and
    /// not in 16 colours, where intensities are glyphs and modifiers instead.
    pub fn colored(&self) -> bool {
        matches!(self.mode, ColorMode::TrueColor | ColorMode::Ansi256)
    }

    /// Whether hues are drawn at all (token categories, accents): every mode but NO_COLOR.
    pub fn hues(&self) -> bool {
        self.mode != ColorMode::None
    }

    /// An RGB triple as a terminal colour in this mode.
    pub fn color(&self, c: Rgb) -> Color {
        match self.mode {
            ColorMode::TrueColor => Color::Rgb(c.0, c.1, c.2),
            ColorMode::Ansi256 => Color::Indexed(ansi256(c)),
            ColorMode::Ansi16 => ansi16(c),
            ColorMode::None => Color::Reset,
        }
    }

    /// Panel background as RGB (what heat ramps start from).
    pub fn background(&self) -> Rgb {
        if self.light {
            (250, 250, 247)
        } else {
            (22, 24, 32)
        }
    }

    /// Plain text.
    pub fn text(&self) -> Style {
        if !self.colored() {
            return Style::default();
        }
        let fg = if self.light {
            (30, 30, 40)
        } else {
            (215, 218, 226)
        };
        Style::default()
            .fg(self.color(fg))
            .bg(self.color(self.background()))
    }

    /// Secondary text (hints, labels).
    pub fn dim(&self) -> Style {
        if !self.colored() {
            return Style::default().add_modifier(Modifier::DIM);
        }
        let fg = if self.light {
            (110, 110, 120)
        } else {
            (125, 130, 145)
        };
        Style::default().fg(self.color(fg))
    }

    /// Emphasis (titles, values that matter).
    pub fn accent(&self) -> Style {
        let fg = if self.light {
            (0, 90, 170)
        } else {
            (120, 200, 255)
        };
        Style::default()
            .fg(self.color(fg))
            .add_modifier(Modifier::BOLD)
    }

    /// Warnings and notices.
    pub fn warn(&self) -> Style {
        let fg = if self.light {
            (170, 80, 0)
        } else {
            (255, 190, 90)
        };
        Style::default().fg(self.color(fg))
    }

    /// Errors.
    pub fn error(&self) -> Style {
        let fg = if self.light {
            (190, 20, 30)
        } else {
            (255, 110, 110)
        };
        Style::default()
            .fg(self.color(fg))
            .add_modifier(Modifier::BOLD)
    }

    /// Panel border; focused panels are highlighted.
    pub fn border(&self, focused: bool) -> Style {
        if !self.colored() {
            return if focused {
                Style::default().add_modifier(Modifier::BOLD)
            } else {
                Style::default().add_modifier(Modifier::DIM)
            };
        }
        let c = match (self.light, focused) {
            (false, true) => (120, 200, 255),
            (false, false) => (70, 76, 92),
            (true, true) => (0, 90, 170),
            (true, false) => (180, 180, 190),
        };
        let s = Style::default().fg(self.color(c));
        if focused {
            s.add_modifier(Modifier::BOLD)
        } else {
            s
        }
    }

    /// The status bar.
    pub fn status(&self) -> Style {
        if !self.colored() {
            return Style::default().add_modifier(Modifier::REVERSED);
        }
        let (fg, bg) = if self.light {
            ((250, 250, 250), (40, 70, 120))
        } else {
            ((230, 232, 240), (45, 52, 75))
        };
        Style::default().fg(self.color(fg)).bg(self.color(bg))
    }

    /// The token under the cursor.
    pub fn cursor(&self) -> Style {
        if !self.colored() {
            return Style::default().add_modifier(Modifier::REVERSED | Modifier::BOLD);
        }
        let (fg, bg) = if self.light {
            ((255, 255, 255), (200, 30, 110))
        } else {
            ((10, 10, 10), (255, 120, 200))
        };
        Style::default()
            .fg(self.color(fg))
            .bg(self.color(bg))
            .add_modifier(Modifier::BOLD)
    }

    /// Selection in lists and grids.
    pub fn selected(&self) -> Style {
        if !self.colored() {
            return Style::default().add_modifier(Modifier::REVERSED);
        }
        let (fg, bg) = if self.light {
            ((255, 255, 255), (0, 90, 170))
        } else {
            ((10, 10, 10), (120, 200, 255))
        };
        Style::default().fg(self.color(fg)).bg(self.color(bg))
    }

    /// RGB of a token category (identifiers by role): [`crate::color::category`].
    pub fn category_rgb(&self, cat: Category, role: Option<Role>) -> Rgb {
        crate::color::category(self.light, cat, role)
    }

    /// Style of a code token by category and identifier role. Definitions are bold.
    /// In NO_COLOR: keywords bold, literals italic, identifiers plain (definitions
    /// underlined), operators and delimiters dim.
    pub fn token(&self, t: &CodeToken) -> Style {
        let ir = t.ident_role();
        let def = ir.is_some_and(|r| r.binding == Binding::Definition);
        if !self.hues() {
            let m = match t.category {
                Category::Keyword => Modifier::BOLD,
                Category::Literal => Modifier::ITALIC,
                Category::Operator | Category::Delimiter => Modifier::DIM,
                Category::Identifier if def => Modifier::UNDERLINED,
                Category::Identifier => Modifier::empty(),
            };
            return Style::default().add_modifier(m);
        }
        let s = Style::default().fg(self.color(self.category_rgb(t.category, ir.map(|r| r.role))));
        if def {
            s.add_modifier(Modifier::BOLD)
        } else {
            s
        }
    }

    /// Legend swatch style for a category.
    pub fn legend(&self, cat: Category) -> Style {
        if !self.hues() {
            let fake = CodeToken {
                text: String::new(),
                start: 0,
                end: 0,
                kind: String::new(),
                category: cat,
                coarse: cat.coarse(),
                role: None,
                depth: 0,
            };
            return self.token(&fake);
        }
        Style::default().fg(self.color(self.category_rgb(cat, None)))
    }

    /// Heat ramp RGB for an intensity in `[0, 1]` (blue; light theme: white to navy).
    pub fn heat_rgb(&self, v: f32) -> Rgb {
        if self.light {
            ramp(
                &[
                    (250, 250, 247),
                    (198, 219, 239),
                    (107, 174, 214),
                    (33, 113, 181),
                    (8, 48, 107),
                ],
                v,
            )
        } else {
            ramp(
                &[
                    (22, 24, 32),
                    (28, 52, 110),
                    (40, 110, 200),
                    (110, 190, 255),
                    (225, 245, 255),
                ],
                v,
            )
        }
    }

    /// Gold ramp RGB for cells on a gold edge (visible even at zero attention).
    pub fn gold_rgb(&self, v: f32) -> Rgb {
        if self.light {
            ramp(&[(250, 215, 120), (225, 150, 20), (150, 80, 0)], v)
        } else {
            ramp(&[(110, 85, 10), (210, 160, 20), (255, 235, 120)], v)
        }
    }

    /// Heat colour (or gold when `gold`).
    pub fn heat(&self, v: f32, gold: bool) -> Color {
        self.color(if gold {
            self.gold_rgb(v)
        } else {
            self.heat_rgb(v)
        })
    }

    /// Surprisal ramp RGB for `v` in `[0, 1]` (0 = not surprising).
    pub fn surprisal_rgb(&self, v: f32) -> Rgb {
        if self.light {
            ramp(
                &[
                    (250, 250, 247),
                    (254, 224, 144),
                    (253, 174, 97),
                    (244, 109, 67),
                    (190, 30, 45),
                ],
                v,
            )
        } else {
            ramp(
                &[
                    (22, 24, 32),
                    (66, 30, 100),
                    (150, 40, 100),
                    (225, 95, 45),
                    (252, 225, 90),
                ],
                v,
            )
        }
    }

    /// Diverging ramp RGB for `v` in `[-1, 1]`: [`crate::color::diverging`].
    pub fn diverging_rgb(&self, v: f32) -> Rgb {
        crate::color::diverging(self.light, v)
    }

    /// [`Theme::diverging_rgb`] as a terminal colour.
    pub fn diverging(&self, v: f32) -> Color {
        self.color(self.diverging_rgb(v))
    }

    /// Foreground readable on a surprisal background of intensity `v`.
    pub fn on_surprisal(&self, v: f32) -> Color {
        let dark_text = if self.light { v < 0.7 } else { v > 0.72 };
        self.color(if dark_text {
            (15, 15, 20)
        } else if self.light {
            (255, 255, 255)
        } else {
            (235, 235, 240)
        })
    }

    /// Foreground that stays readable on a heat background of intensity `v`.
    pub fn on_heat(&self, v: f32) -> Option<Color> {
        if !self.colored() {
            return None;
        }
        let bright = if self.light { v > 0.55 } else { v > 0.6 };
        bright.then(|| {
            self.color(if self.light {
                (255, 255, 255)
            } else {
                (10, 10, 14)
            })
        })
    }

    /// Shade glyph for an intensity in `[0, 1]` (NO_COLOR heat).
    pub fn shade(v: f32) -> char {
        if v.is_nan() || v <= 0.0 {
            return SHADES[0];
        }
        let i = 1 + ((v.clamp(0.0, 1.0) * 3.999) as usize);
        SHADES[i.min(4)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_color_mode() {
        assert_eq!(
            ColorMode::from_env(Some("1"), Some("truecolor")),
            ColorMode::None
        );
        assert_eq!(
            ColorMode::from_env(Some(""), Some("truecolor")),
            ColorMode::TrueColor
        );
        assert_eq!(
            ColorMode::from_env(None, Some("24bit")),
            ColorMode::TrueColor
        );
        assert_eq!(ColorMode::from_env(None, None), ColorMode::Ansi256);
    }

    #[test]
    fn sixteen_colour_terminals() {
        let m = |term| ColorMode::from_env_term(None, None, Some(term));
        assert_eq!(m("linux"), ColorMode::Ansi16);
        assert_eq!(m("xterm-16color"), ColorMode::Ansi16);
        assert_eq!(m("vt100"), ColorMode::Ansi16);
        assert_eq!(m("xterm-256color"), ColorMode::Ansi256);
        assert_eq!(m("screen"), ColorMode::Ansi256);
        // COLORTERM and NO_COLOR still win.
        assert_eq!(
            ColorMode::from_env_term(None, Some("truecolor"), Some("linux")),
            ColorMode::TrueColor
        );
        assert_eq!(
            ColorMode::from_env_term(Some("1"), None, Some("linux")),
            ColorMode::None
        );
        assert!(is_dumb_term(Some("dumb")) && !is_dumb_term(Some("linux")) && !is_dumb_term(None));
        // Hues kept: the category colours land on their nearest ANSI hue.
        for light in [false, true] {
            let t = Theme::new(ColorMode::Ansi16, light);
            assert!(t.hues() && !t.colored());
            let named = |c: Color| ANSI16.iter().any(|(n, _)| *n == c);
            for cat in [
                Category::Keyword,
                Category::Operator,
                Category::Delimiter,
                Category::Literal,
                Category::Identifier,
            ] {
                let c = t.color(t.category_rgb(cat, None));
                assert!(named(c), "{cat:?}: {c:?}");
            }
        }
        // the hue survives: blues stay blue, greens green, greys grey
        let is =
            |c: Rgb, want: &[Color]| assert!(want.contains(&ansi16(c)), "{c:?}: {:?}", ansi16(c));
        is((20, 70, 200), &[Color::Blue, Color::LightBlue]);
        is((100, 170, 255), &[Color::LightBlue, Color::LightCyan]);
        is((20, 130, 40), &[Color::Green, Color::LightGreen]);
        is((170, 20, 110), &[Color::Magenta, Color::LightMagenta]);
        is((110, 110, 120), &[Color::DarkGray]);
        is((22, 24, 32), &[Color::Black]);
        is((250, 250, 247), &[Color::White]);
    }

    #[test]
    fn ansi256_nearest() {
        assert_eq!(ansi256((0, 0, 0)), 16);
        assert_eq!(ansi256((255, 255, 255)), 231);
        assert_eq!(ansi256((255, 0, 0)), 196);
        assert_eq!(ansi256((128, 128, 128)), 244);
    }

    #[test]
    fn shades_and_ramps() {
        assert_eq!(Theme::shade(0.0), ' ');
        assert_eq!(Theme::shade(0.1), '░');
        assert_eq!(Theme::shade(1.0), '█');
        let t = Theme::new(ColorMode::TrueColor, false);
        assert_eq!(t.heat_rgb(0.0), t.background());
        assert_eq!(t.heat_rgb(1.0), (225, 245, 255));
        assert_ne!(t.gold_rgb(0.0), t.heat_rgb(0.0));
        assert_eq!(t.surprisal_rgb(0.0), t.background());
        // The surprisal ramp gets lighter as it rises, in the 256-colour palette too.
        let lum = |c: Rgb| 0.2126 * c.0 as f32 + 0.7152 * c.1 as f32 + 0.0722 * c.2 as f32;
        for k in 0..10 {
            let (a, b) = (
                t.surprisal_rgb(k as f32 / 10.0),
                t.surprisal_rgb((k + 1) as f32 / 10.0),
            );
            assert!(lum(b) > lum(a), "step {k}");
        }
        assert_eq!(
            Theme::new(ColorMode::None, false).heat(0.5, false),
            Color::Reset
        );
    }

    #[test]
    fn only_a_locale_naming_another_charset_asks_for_ascii() {
        assert!(locale_is_not_utf8(None, None, Some("en_US.ISO-8859-1")));
        assert!(locale_is_not_utf8(
            Some("de_DE.iso88591@euro"),
            None,
            Some("en_US.UTF-8")
        ));
        // The first set variable decides.
        assert!(!locale_is_not_utf8(
            Some("en_US.UTF-8"),
            Some("C.ISO-8859-1"),
            None
        ));
        assert!(!locale_is_not_utf8(Some(""), None, Some("en_US.utf8")));
        assert!(locale_is_not_utf8(
            None,
            Some("ja_JP.eucJP"),
            Some("en_US.UTF-8")
        ));
        for none in [None, Some("C"), Some("POSIX"), Some("C.UTF-8"), Some("")] {
            assert!(!locale_is_not_utf8(none, None, None), "{none:?}");
        }
    }
}
