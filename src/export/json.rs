//! JSON of a [`FigureData`]: the numbers the explorer showed (see the field docs of `FigureData`).

use super::FigureData;

/// Pretty-printed JSON of `view`.
pub fn render(view: &FigureData) -> std::io::Result<String> {
    serde_json::to_string_pretty(view).map_err(std::io::Error::other)
}
