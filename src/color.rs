//! Colour ramps shared by the explorer's theme and the exported figures: one piecewise-
//! linear interpolation through RGB stops, so a colour scale looks the same on screen and
//! on paper; and the token-category colours and the diverging ramp that both draw with.

use crate::syntax::{Category, Role};

/// An sRGB colour.
pub type Rgb = (u8, u8, u8);

/// Linear interpolation between `a` and `b` (`t` clamped to `[0, 1]`).
pub fn lerp(a: Rgb, b: Rgb, t: f32) -> Rgb {
    let t = t.clamp(0.0, 1.0);
    let f = |x: u8, y: u8| (x as f32 + (y as f32 - x as f32) * t).round() as u8;
    (f(a.0, b.0), f(a.1, b.1), f(a.2, b.2))
}

/// Piecewise-linear ramp through `stops` (at least two, evenly spaced) for `t` in
/// `[0, 1]`; a non-finite `t` counts as 0.
pub fn ramp(stops: &[Rgb], t: f32) -> Rgb {
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let k = stops.len() - 1;
    let x = t * k as f32;
    let i = (x.floor() as usize).min(k - 1);
    lerp(stops[i], stops[i + 1], x - i as f32)
}

/// `#rrggbb`.
pub fn hex((r, g, b): Rgb) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// RGB of a token category (identifiers by role), for the light or the dark background:
/// the explorer's theme and the figures both take their token colours from here.
pub fn category(light: bool, cat: Category, role: Option<Role>) -> Rgb {
    let dark = !light;
    match cat {
        Category::Keyword => {
            if dark {
                (255, 121, 170)
            } else {
                (170, 20, 110)
            }
        }
        Category::Operator => {
            if dark {
                (255, 175, 95)
            } else {
                (180, 90, 0)
            }
        }
        Category::Delimiter => {
            if dark {
                (150, 155, 170)
            } else {
                (110, 110, 120)
            }
        }
        Category::Literal => {
            if dark {
                (140, 220, 120)
            } else {
                (20, 130, 40)
            }
        }
        Category::Identifier => match role {
            Some(Role::Function | Role::Method) => {
                if dark {
                    (130, 210, 255)
                } else {
                    (0, 100, 190)
                }
            }
            Some(Role::Class | Role::Type) => {
                if dark {
                    (240, 220, 120)
                } else {
                    (150, 110, 0)
                }
            }
            Some(Role::Parameter) => {
                if dark {
                    (200, 170, 255)
                } else {
                    (110, 60, 190)
                }
            }
            Some(Role::Attribute | Role::KeywordArgument) => {
                if dark {
                    (120, 220, 210)
                } else {
                    (0, 130, 130)
                }
            }
            _ => {
                if dark {
                    (100, 170, 255)
                } else {
                    (20, 70, 200)
                }
            }
        },
    }
}

/// Compare mode's diverging ramp for `v` in `[-1, 1]` (B − A): blue below zero, the
/// background at zero, orange above; a non-finite `v` counts as 0.
pub fn diverging(light: bool, v: f32) -> Rgb {
    let (neg, mid, pos) = if light {
        ((33, 102, 172), (250, 250, 247), (200, 90, 20))
    } else {
        ((80, 150, 255), (22, 24, 32), (255, 140, 50))
    };
    let v = if v.is_finite() {
        v.clamp(-1.0, 1.0)
    } else {
        0.0
    };
    if v < 0.0 {
        ramp(&[mid, neg], -v)
    } else {
        ramp(&[mid, pos], v)
    }
}
