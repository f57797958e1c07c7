//! Snapshot tests of every explorer panel and mode on a `TestBackend`, at 120x40 (all
//! panels) and 80x24 (code + one side panel), with a tiny random-weight model so the
//! numbers are deterministic and no network is needed. Snapshots live in
//! `tests/it/snapshots/`; after an intended change, re-run with `INSTA_UPDATE=always` and
//! review the diff.

use crate::tui_common;

use codescope::tui::theme::ColorMode;
use crossterm::event::KeyCode;
use tui_common::*;

const SIZES: [(u16, u16); 2] = [(120, 40), (80, 24)];

fn snap(name: &str, app: &codescope::tui::app::App) {
    let (w, h) = app.size;
    insta::assert_snapshot!(format!("{name}_{w}x{h}"), screen(app));
}

#[test]
fn loading_before_the_model_answers() {
    for (w, h) in SIZES {
        // The parse (off the UI thread, milliseconds) has arrived; the model has not.
        let (mut app, fx) = fresh(SAMPLE, w, h, theme(ColorMode::TrueColor));
        parsed(&mut app, fx);
        snap("loading", &app);
    }
}

/// The heat map and the code panel's attention backgrounds with their colours, in
/// truecolor and 256 colours (the text snapshots above cannot tell one shade from
/// another).
#[test]
fn heatmap_and_code_colours() {
    use codescope::tui::app::Focus;
    for mode in [ColorMode::TrueColor, ColorMode::Ansi256] {
        let mut app = ready_with(SAMPLE, 120, 40, theme(mode));
        typed(&mut app, "jjlg");
        let g = codescope::tui::layout::geometry(&app);
        let heat = g.panel(Focus::Heatmap).unwrap();
        let code = g.panel(Focus::Code).unwrap();
        let name = match mode {
            ColorMode::TrueColor => "truecolor",
            _ => "256",
        };
        insta::assert_snapshot!(format!("styled_heatmap_{name}"), styled(&app, heat));
        insta::assert_snapshot!(format!("styled_code_{name}"), styled(&app, code));
    }
}

#[test]
fn main_view() {
    for (w, h) in SIZES {
        let app = ready(SAMPLE, w, h);
        snap("main", &app);
    }
}

#[test]
fn compact_side_panels_cycle_with_tab() {
    let mut app = ready(SAMPLE, 80, 24);
    for name in ["heatmap", "heads", "categories", "probes"] {
        press(&mut app, &[KeyCode::Tab]);
        snap(&format!("compact_{name}"), &app);
    }
}

#[test]
fn navigation_modes() {
    for (w, h) in SIZES {
        let mut app = ready(SAMPLE, w, h);
        press(&mut app, &[KeyCode::Right, KeyCode::Down]);
        typed(&mut app, "jjlll");
        snap("layer2_head2_cursor", &app);
        typed(&mut app, "a");
        snap("mean_over_heads", &app);
        typed(&mut app, "af");
        snap("attention_to", &app);
        typed(&mut app, "fg");
        snap("gold_overlay", &app);
        typed(&mut app, "gwwd");
        snap("dataflow_links", &app);
        typed(&mut app, "dTTT");
        snap("threshold_020", &app);
        typed(&mut app, "++");
        snap("heatmap_zoomed_in", &app);
        typed(&mut app, "0");
    }
}

#[test]
fn head_grid_metrics() {
    let mut app = ready(SAMPLE, 120, 40);
    for (k, name) in ["f1_motif", "f1_dfg", "syn_to_id", "id_to_syn", "entropy"]
        .iter()
        .enumerate()
    {
        typed(&mut app, &(k + 1).to_string());
        snap(&format!("metric_{name}"), &app);
    }
    // Grid focus: arrows move the grid cursor, Enter jumps.
    press(&mut app, &[KeyCode::Tab, KeyCode::Tab]);
    press(&mut app, &[KeyCode::Right, KeyCode::Right, KeyCode::Down]);
    snap("grid_cursor", &app);
    press(&mut app, &[KeyCode::Enter]);
    snap("grid_jumped", &app);
}

#[test]
fn paper_mode() {
    for (w, h) in SIZES {
        let mut app = ready(SAMPLE, w, h);
        typed(&mut app, "m");
        snap("paper_mode", &app);
    }
}

#[test]
fn overlays() {
    for (w, h) in SIZES {
        let mut app = ready(SAMPLE, w, h);
        typed(&mut app, "?");
        snap("help", &app);
        typed(&mut app, " ");
        typed(&mut app, "M");
        snap("model_picker", &app);
        press(&mut app, &[KeyCode::Esc]);
        typed(&mut app, "o");
        typed(&mut app, "examples/a.py");
        snap("open_prompt", &app);
        press(&mut app, &[KeyCode::Esc]);
        typed(&mut app, "/count");
        snap("search_prompt", &app);
        press(&mut app, &[KeyCode::Enter]);
        snap("search_found", &app);
    }
}

#[test]
fn editor() {
    for (w, h) in SIZES {
        let mut app = ready(SAMPLE, w, h);
        typed(&mut app, "je");
        press(&mut app, &[KeyCode::End]);
        typed(&mut app, "  # edited");
        snap("editor", &app);
        press(&mut app, &[KeyCode::Esc]);
        snap("after_edit", &app);
    }
}

#[test]
fn one_line_snippet() {
    for (w, h) in SIZES {
        let mut app = ready(ONE_LINE, w, h);
        snap("one_line", &app);
        typed(&mut app, "lll");
        snap("one_line_cursor", &app);
    }
}

#[test]
fn long_snippet_truncated_and_scrolled() {
    let text = long_snippet();
    for (w, h) in SIZES {
        let mut app = ready(&text, w, h);
        snap("long", &app);
        press(&mut app, &[KeyCode::PageDown, KeyCode::PageDown]);
        typed(&mut app, "jjl");
        snap("long_scrolled", &app);
        press(&mut app, &[KeyCode::End]);
        snap("long_end_not_analysed", &app);
    }
}

#[test]
fn no_color_uses_shapes() {
    for (w, h) in SIZES {
        let mut app = ready_with(SAMPLE, w, h, theme(ColorMode::None));
        typed(&mut app, "g");
        snap("no_color", &app);
    }
}

#[test]
fn too_small() {
    let app = ready(SAMPLE, 50, 12);
    snap("too_small", &app);
}

#[test]
fn probe_panel() {
    use codescope::tui::msg::{Msg, WorkerMsg};
    use std::sync::Arc;
    for (w, h) in SIZES {
        let mut app = ready(SAMPLE, w, h);
        let job = probe_job(&app.type_keys("p")).expect("a probe job");
        app.update(Msg::Worker(WorkerMsg::ProbeProgress {
            req: job.req,
            text: "tracing 120/311".into(),
            result: None,
        }));
        snap("probe_progress", &app);
        let fx = app.update(Msg::Worker(WorkerMsg::Probed {
            req: job.req,
            report: Arc::new(synthetic_report(6, "category")),
        }));
        serve(&mut app, fx);
        press(&mut app, &[KeyCode::Right]);
        snap("probe_panel", &app);
        // Deeper models scroll to keep the current layer in view.
        let job = probe_job(&app.type_keys("P")).expect("next task");
        let fx = app.update(Msg::Worker(WorkerMsg::Probed {
            req: job.req,
            report: Arc::new(synthetic_report(12, "depth")),
        }));
        serve(&mut app, fx);
        snap("probe_panel_12_layers", &app);
    }
}

#[test]
fn surprisal_view_on_a_tiny_decoder() {
    use ratatui::style::Modifier;
    for (w, h) in SIZES {
        let mut app = ready_decoder("tiny_llama", SHORT, w, h, theme(ColorMode::TrueColor));
        typed(&mut app, "Sjl");
        snap("surprisal", &app);
        let mut app = ready_decoder("tiny_llama", SHORT, w, h, theme(ColorMode::None));
        typed(&mut app, "Sjl");
        snap("surprisal_no_color", &app);
        // NO_COLOR: the top decile is bold and underlined, the rest is not.
        let sp = app.prepared().unwrap().surprisal.clone().unwrap();
        let t = render(&app);
        let buf = t.backend().buffer();
        let lay = &app.doc.layout;
        let gutter = lay.lines.len().to_string().len() + 1;
        for (i, b) in sp.bits.iter().enumerate() {
            if i == app.view.cursor {
                continue;
            }
            let (x, y) = (1 + gutter + 1 + lay.tok_col[i], 1 + lay.tok_line[i]);
            let m = buf[(x as u16, y as u16)].modifier;
            let top = b.is_some_and(|b| b >= sp.top_decile);
            assert_eq!(
                m.contains(Modifier::BOLD | Modifier::UNDERLINED),
                top,
                "token {i} {b:?} (top decile from {})",
                sp.top_decile
            );
        }
    }
    // The smallest terminal: the expected tokens fold into two lines.
    let mut app = ready_decoder("tiny_gpt2", SHORT, 64, 16, theme(ColorMode::TrueColor));
    typed(&mut app, "Sl");
    snap("surprisal_small", &app);
}

#[test]
fn probe_token_label() {
    use codescope::probe::Task;
    use codescope::tui::msg::{Msg, WorkerMsg};
    use std::sync::Arc;
    for (w, h) in SIZES {
        let mut app = ready(SAMPLE, w, h);
        let job = probe_job(&app.type_keys("p")).expect("a probe job");
        let mut report = synthetic_report(3, "category");
        report.probes = own_probes(&app, Task::Category);
        let fx = app.update(Msg::Worker(WorkerMsg::Probed {
            req: job.req,
            report: Arc::new(report),
        }));
        serve(&mut app, fx);
        press(&mut app, &[KeyCode::Right]);
        typed(&mut app, "jl");
        snap("probe_token_label", &app);
    }
}

/// At 80x24 the help does not fit: its title says how much is hidden, the arrows scroll
/// it to the last keys (which were cut off before), and any other key closes it.
#[test]
fn help_scrolls_when_it_does_not_fit() {
    let mut app = ready(SAMPLE, 80, 24);
    typed(&mut app, "?");
    let s = screen(&app);
    assert!(s.contains("↓") && s.contains("more"), "{s}");
    // The last keys (the mouse, at the end of the table) are cut off at first ...
    assert!(!s.contains("scroll the panel under it"), "{s}");
    for _ in 0..40 {
        press(&mut app, &[KeyCode::Down]);
    }
    // ... and the arrows bring them on screen.
    let s = screen(&app);
    assert!(
        s.contains("scroll the panel under it") && s.contains("↑"),
        "{s}"
    );
    assert!(matches!(app.overlay, codescope::tui::app::Overlay::Help));
    typed(&mut app, "x");
    assert!(matches!(app.overlay, codescope::tui::app::Overlay::None));
    // Opened again, it starts at the top.
    typed(&mut app, "?");
    assert!(!screen(&app).contains("compare heatmap A/B/B−A"));
}
