//! Figures as PNG: the SVG rendered in-process by resvg with the bundled DejaVu Sans
//! Mono (regular and bold, `assets/fonts`, embedded in the binary). No system font is
//! loaded, so the same figure gives the same PNG bytes on every machine.

use std::sync::{Arc, OnceLock};

use resvg::{tiny_skia, usvg};

use super::figure::Figure;
use crate::error::{Error, Result};

const REGULAR: &[u8] = include_bytes!("../../assets/fonts/DejaVuSansMono.ttf");
const BOLD: &[u8] = include_bytes!("../../assets/fonts/DejaVuSansMono-Bold.ttf");

/// The bundled fonts, loaded once; every generic family maps to DejaVu Sans Mono.
fn fonts() -> Arc<usvg::fontdb::Database> {
    static DB: OnceLock<Arc<usvg::fontdb::Database>> = OnceLock::new();
    DB.get_or_init(|| {
        let mut db = usvg::fontdb::Database::new();
        db.load_font_data(REGULAR.to_vec());
        db.load_font_data(BOLD.to_vec());
        let family = "DejaVu Sans Mono";
        db.set_monospace_family(family);
        db.set_sans_serif_family(family);
        db.set_serif_family(family);
        db.set_cursive_family(family);
        db.set_fantasy_family(family);
        Arc::new(db)
    })
    .clone()
}

/// Render an SVG document to PNG bytes at its own size.
pub fn render_svg(svg: &str) -> Result<Vec<u8>> {
    let opt = usvg::Options {
        font_family: "DejaVu Sans Mono".into(),
        fontdb: fonts(),
        ..usvg::Options::default()
    };
    let err = |reason: String| Error::Input {
        name: "figure".into(),
        reason,
    };
    let tree = usvg::Tree::from_str(svg, &opt).map_err(|e| err(format!("bad SVG: {e}")))?;
    let size = tree.size().to_int_size();
    let mut pm = tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| err(format!("cannot draw {}x{} px", size.width(), size.height())))?;
    resvg::render(&tree, tiny_skia::Transform::identity(), &mut pm.as_mut());
    pm.encode_png()
        .map_err(|e| err(format!("PNG encoding failed: {e}")))
}

/// Render a figure to PNG bytes.
pub fn render(fig: &Figure) -> Result<Vec<u8>> {
    render_svg(&fig.svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_text_with_the_bundled_font() {
        let svg = r##"<svg xmlns="http://www.w3.org/2000/svg" width="120" height="40"><rect width="120" height="40" fill="#ffffff"/><text x="4" y="28" font-size="24" font-family="monospace" fill="#000000">Ab</text></svg>"##;
        let png = render_svg(svg).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        assert_eq!(png, render_svg(svg).unwrap(), "deterministic");
        // The text left dark pixels.
        let pm = tiny_skia::Pixmap::decode_png(&png).unwrap();
        let dark = pm.pixels().iter().filter(|p| p.red() < 100).count();
        assert!(dark > 50, "{dark} dark pixels");
        assert!(render_svg("<svg").is_err());
    }
}
