//! JSON of a [`View`]: the numbers the explorer showed (see the field docs of `View`).

use super::View;

/// Pretty-printed JSON of `view`.
pub fn render(view: &View) -> std::io::Result<String> {
    serde_json::to_string_pretty(view).map_err(std::io::Error::other)
}
