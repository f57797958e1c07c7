//! Colour ramps shared by the explorer's theme and the exported figures: one piecewise-
//! linear interpolation through RGB stops, so a colour scale looks the same on screen and
//! on paper.

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
