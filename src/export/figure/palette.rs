//! Colours of the figures, light (white slides, print) and dark (the explorer's dark
//! theme), and the contrast rule that keeps text readable on shaded cells.
//!
//! Token colours are the explorer's (both take them from `color`), so a figure looks like the screen it
//! came from. Heat ramps start at the background colour (zero attention is invisible)
//! and rise monotonically in contrast against it. Text drawn on a shaded cell keeps its
//! own colour only while the WCAG contrast ratio against the cell stays at least
//! [`MIN_CONTRAST`]; otherwise it turns black or white, whichever reads better.

use crate::syntax::{Category, IdentRole};

pub use crate::color::{hex, ramp, Rgb};

/// Smallest contrast ratio text keeps on a background (WCAG AA for normal text).
pub const MIN_CONTRAST: f64 = 4.5;

/// WCAG relative luminance of an sRGB colour.
pub fn luminance(c: Rgb) -> f64 {
    let lin = |v: u8| {
        let v = v as f64 / 255.0;
        if v <= 0.040_45 {
            v / 12.92
        } else {
            ((v + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * lin(c.0) + 0.7152 * lin(c.1) + 0.0722 * lin(c.2)
}

/// WCAG contrast ratio of two colours (1 to 21).
pub fn contrast(a: Rgb, b: Rgb) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    let (hi, lo) = if la > lb { (la, lb) } else { (lb, la) };
    (hi + 0.05) / (lo + 0.05)
}

/// `fg` if it reads on `bg`, else black or white (the one with more contrast).
pub fn readable(fg: Rgb, bg: Rgb) -> Rgb {
    if contrast(fg, bg) >= MIN_CONTRAST {
        return fg;
    }
    let (black, white) = ((12, 12, 16), (255, 255, 255));
    if contrast(black, bg) >= contrast(white, bg) {
        black
    } else {
        white
    }
}

const HEAT_LIGHT: [Rgb; 5] = [
    (255, 255, 255),
    (198, 219, 239),
    (107, 174, 214),
    (33, 113, 181),
    (8, 48, 107),
];
const HEAT_DARK: [Rgb; 5] = [
    (22, 24, 32),
    (28, 52, 110),
    (40, 110, 200),
    (110, 190, 255),
    (225, 245, 255),
];
const SURPRISAL_LIGHT: [Rgb; 5] = [
    (255, 255, 255),
    (254, 224, 144),
    (253, 174, 97),
    (244, 109, 67),
    (190, 30, 45),
];
const SURPRISAL_DARK: [Rgb; 5] = [
    (22, 24, 32),
    (66, 30, 100),
    (150, 40, 100),
    (225, 95, 45),
    (252, 225, 90),
];

/// The colours of one figure variant.
#[derive(Debug, Clone, Copy)]
pub struct Palette {
    pub light: bool,
}

impl Palette {
    pub fn new(light: bool) -> Self {
        Palette { light }
    }

    pub fn bg(&self) -> Rgb {
        if self.light {
            (255, 255, 255)
        } else {
            (22, 24, 32)
        }
    }

    /// Body text.
    pub fn fg(&self) -> Rgb {
        if self.light {
            (25, 25, 35)
        } else {
            (225, 228, 236)
        }
    }

    /// Secondary text (axis labels, captions): still above [`MIN_CONTRAST`].
    pub fn dim(&self) -> Rgb {
        if self.light {
            (85, 85, 100)
        } else {
            (165, 170, 185)
        }
    }

    /// Compare mode's diverging ramp for `v` in `[-1, 1]` (B − A): the terminal theme's,
    /// blue below zero, the background at zero, orange above.
    pub fn diverging(&self, v: f32) -> Rgb {
        crate::color::diverging(self.light, v)
    }

    /// The diverging ramp's stops, from -1 to 1, for colour bars.
    pub fn diverging_stops(&self) -> Vec<Rgb> {
        (0..=8)
            .map(|i| self.diverging(i as f32 / 4.0 - 1.0))
            .collect()
    }

    /// Frames and grid lines.
    pub fn rule(&self) -> Rgb {
        if self.light {
            (175, 175, 188)
        } else {
            (85, 90, 110)
        }
    }

    /// The selected token, row or head.
    pub fn accent(&self) -> Rgb {
        if self.light {
            (208, 30, 110)
        } else {
            (255, 120, 200)
        }
    }

    /// Gold edges and data-flow links.
    pub fn gold(&self) -> Rgb {
        if self.light {
            (225, 150, 0)
        } else {
            (255, 205, 60)
        }
    }

    /// Wrong or missing (AST-Probe's unmatched constituents).
    pub fn wrong(&self) -> Rgb {
        if self.light {
            (200, 30, 30)
        } else {
            (255, 110, 100)
        }
    }

    /// Half right (AST-Probe's constituents over the right leaves, wrongly labelled):
    /// the gold edges' amber, darker on white so text stays readable.
    pub fn caution(&self) -> Rgb {
        if self.light {
            (160, 95, 0)
        } else {
            (255, 205, 60)
        }
    }

    /// A second accent (the pinned head).
    pub fn pin(&self) -> Rgb {
        if self.light {
            (0, 140, 120)
        } else {
            (90, 230, 200)
        }
    }

    /// The attention ramp's stops (bottom first).
    pub fn heat_stops(&self) -> &'static [Rgb] {
        if self.light {
            &HEAT_LIGHT
        } else {
            &HEAT_DARK
        }
    }

    /// Attention ramp for `t` in `[0, 1]` (the figures use `t = sqrt(a / max)`).
    pub fn heat(&self, t: f32) -> Rgb {
        ramp(self.heat_stops(), t)
    }

    pub fn surprisal_stops(&self) -> &'static [Rgb] {
        if self.light {
            &SURPRISAL_LIGHT
        } else {
            &SURPRISAL_DARK
        }
    }

    /// Surprisal ramp for `t` = bits / the snippet's largest.
    pub fn surprisal(&self, t: f32) -> Rgb {
        ramp(self.surprisal_stops(), t)
    }

    /// A token's colour from its exported category and role names, made readable on
    /// the figure's background.
    pub fn token(&self, category: &str, role: Option<&str>) -> Rgb {
        let cat = Category::ALL
            .iter()
            .copied()
            .find(|c| c.name() == category)
            .unwrap_or(Category::Delimiter);
        let role = role
            .and_then(|r| r.parse::<IdentRole>().ok())
            .map(|r| r.role);
        readable(crate::color::category(self.light, cat, role), self.bg())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contrast_matches_wcag_examples() {
        assert!((contrast((0, 0, 0), (255, 255, 255)) - 21.0).abs() < 1e-9);
        assert!((contrast((119, 119, 119), (255, 255, 255)) - 4.48).abs() < 0.01);
        assert_eq!(readable((20, 70, 200), (255, 255, 255)), (20, 70, 200));
        // Blue identifiers on the darkest heat cell turn white.
        assert_eq!(readable((20, 70, 200), (8, 48, 107)), (255, 255, 255));
        assert_eq!(readable((100, 170, 255), (225, 245, 255)), (12, 12, 16));
    }

    #[test]
    fn every_text_colour_reads_on_its_background() {
        for light in [false, true] {
            let p = Palette::new(light);
            for c in [p.fg(), p.dim(), p.accent()] {
                assert!(contrast(c, p.bg()) >= 3.0, "{light} {c:?}");
            }
            for c in [p.wrong(), p.caution()] {
                assert!(contrast(c, p.bg()) >= MIN_CONTRAST, "{light} {c:?}");
            }
            for cat in Category::ALL {
                for role in [None, Some("definition:function"), Some("use:parameter")] {
                    let c = p.token(cat.name(), role);
                    assert!(contrast(c, p.bg()) >= MIN_CONTRAST, "{cat:?} {role:?}");
                }
            }
            assert_eq!(p.heat(0.0), p.bg());
            assert_eq!(p.surprisal(0.0), p.bg());
        }
    }
}
