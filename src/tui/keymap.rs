//! The explorer's keys, as shown by the help overlay (`?`). `App::update` is the
//! authority on what each key does; this table documents it (short enough for two
//! columns at 80x24) and a test checks that every key listed here does something.

/// `(keys, what they do)` grouped by section; a `""` key starts a section.
pub const HELP: &[(&str, &str)] = &[
    ("", "Layer and head"),
    ("← →", "layer (grid: its cursor)"),
    ("↑ ↓", "head (grid: its cursor)"),
    ("Enter", "grid: jump to that head"),
    ("a", "mean over heads on/off"),
    ("", "Token cursor"),
    ("h l", "previous / next token"),
    ("j k", "next / previous line"),
    ("w b", "next / prev identifier"),
    ("PgDn PgUp", "a page down / up"),
    ("Home End", "first / last token"),
    ("/ n N", "search; next / previous"),
    ("f", "attention from / to it"),
    ("d", "its data-flow links"),
    ("", "Views"),
    ("Tab S-Tab", "next / previous panel"),
    ("g", "gold edges on heatmap"),
    ("+ - 0", "zoom in / out / fit"),
    ("s 1-5", "head grid score"),
    ("t T", "threshold -/+ 0.05"),
    ("m", "input: source / paper"),
    ("S", "surprisal (causal models)"),
    ("p P", "probes: train / next task"),
    ("", "Input and output"),
    ("e", "edit (Esc applies)"),
    ("o", "open another file"),
    ("M", "switch model"),
    ("x", "export figures (menu)"),
    ("?", "this help"),
    ("q Esc C-c", "quit"),
];
