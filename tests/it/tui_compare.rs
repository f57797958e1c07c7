//! Compare mode in the explorer (`c`, `C`, `v`), driven through `App::update` with the
//! effects served synchronously (the worker's own compare function): the twin panel,
//! the status bar, the head grid and heatmap showing differences, a twin file, failures,
//! the surprisal differences with a decoder, and the comparison in the export.

use std::sync::Arc;

use codescope::analysis::compare;
use codescope::analysis::Graph;
use codescope::tui::app::{HeatSide, TwinChoice};
use codescope::tui::data::Metric;
use codescope::tui::msg::Effect;
use crossterm::event::KeyCode;

use crate::tui_common::*;

#[test]
fn c_shows_the_twin_and_the_head_grid_turns_to_differences() {
    let mut app = ready(SAMPLE, 120, 40);
    let before = screen(&app);
    assert!(!before.contains("Twin"), "{before}");
    assert!(app.comparison().is_none());
    typed(&mut app, "c");
    let c = app.comparison().expect("a comparison after c").clone();
    let s = screen(&app);
    assert!(s.contains("Twin · rename:neutral"), "{s}");
    assert!(s.contains("compare rename:neutral"), "{s}");
    assert!(s.contains("Heads · B−A"), "{s}");
    // The twin panel shows the renamed text of the bundled sample.
    let twin = &c.twin;
    assert!(
        twin.renamed.values().any(|v| v == "f1"),
        "{:?}",
        twin.renamed
    );
    assert!(s.contains("def f1("), "{s}");
    // The grid's values are B − A of the current metric.
    app.view.metric = Metric::F1Motif;
    resettle(&mut app);
    let a_vals = app
        .view
        .metric
        .values(app.prepared().unwrap(), &app.shown.scores);
    let grid = app.compare_grid(&a_vals).unwrap();
    let (fa, fb) = compare::f1_pair(&c, Graph::AstMotif);
    for l in 0..fa.len() {
        for h in 0..fa[l].len() {
            let d = grid[l][h].unwrap();
            assert!((d - (fb[l][h] - fa[l][h])).abs() < 1e-12);
        }
    }
    // `c` again: back to the plain view.
    typed(&mut app, "c");
    let s = screen(&app);
    assert!(
        !s.contains("Twin ·") && !s.contains("compare rename"),
        "{s}"
    );
    assert!(app.comparison().is_none());
}

#[test]
fn v_cycles_the_heatmap_between_a_b_and_the_difference() {
    let mut app = ready(SAMPLE, 120, 40);
    typed(&mut app, "c");
    let c = app.comparison().unwrap().clone();
    let n = c.a.n();
    let a_head = c.a.token_attention.head(0, 0).to_vec();
    assert!(app.compare_matrix().is_none(), "A: the plain matrix");
    typed(&mut app, "v");
    assert_eq!(app.compare.heat, HeatSide::B);
    let (mb, _) = app.compare_matrix().unwrap();
    let s = screen(&app);
    assert!(s.contains("Heatmap · L1 H1 · attention weight · B "), "{s}");
    typed(&mut app, "v");
    assert_eq!(app.compare.heat, HeatSide::Diff);
    let (md, _) = app.compare_matrix().unwrap();
    assert!(screen(&app).contains("blue: B lower"), "{}", screen(&app));
    // A rename keeps every token: B is the twin's head on the same positions, and the
    // difference is B − A cell by cell.
    let b_head = c.b.token_attention.head(0, 0);
    let nb = c.b.n();
    for &(qa, qb, _) in &c.positions {
        for &(ka, kb, _) in &c.positions {
            assert_eq!(mb[qa * n + ka], b_head[qb * nb + kb]);
            assert_eq!(md[qa * n + ka], b_head[qb * nb + kb] - a_head[qa * n + ka]);
        }
    }
    assert!(
        md.iter().any(|x| *x != 0.0),
        "a rename moves some attention"
    );
    // The heatmap's weights for the code panel follow the side shown.
    let w = app.with_matrix(|m, _| m.to_vec()).unwrap();
    assert_eq!(w, *md);
    typed(&mut app, "v");
    assert_eq!(app.compare.heat, HeatSide::A);
    // Outside compare mode `v` only says what it is for.
    typed(&mut app, "c");
    typed(&mut app, "v");
    assert!(screen(&app).contains("v switches the heatmap in compare mode"));
}

#[test]
fn capital_c_cycles_the_twin_and_reads_a_twin_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("twin.py");
    // A hand edit of the one-liner: one name changed.
    std::fs::write(&path, ONE_LINE.replace("rate", "tax")).unwrap();
    let mut app = ready(ONE_LINE, 120, 40);
    typed(&mut app, "C");
    assert_eq!(app.compare.choice, TwinChoice::Shuffle);
    assert!(app.compare.on);
    let c = app.comparison().unwrap();
    assert!(c.twin.kind.label().starts_with("rename:shuffle"));
    // Next: a prompt for a file.
    typed(&mut app, "C");
    assert!(screen(&app).contains("twin file:"));
    typed(&mut app, &path.display().to_string());
    press(&mut app, &[KeyCode::Enter]);
    assert_eq!(
        app.compare.choice,
        TwinChoice::File(path.display().to_string())
    );
    let c = app
        .comparison()
        .expect("a comparison with the file")
        .clone();
    assert_eq!(c.twin.pairs.len(), c.a.syntax.tokens.len());
    assert_eq!(c.twin.changed.iter().filter(|x| **x).count(), 1);
    let s = screen(&app);
    assert!(s.contains("tax") && s.contains("1 changed"), "{s}");
    // A missing file: the twin panel and the status say why; nothing is compared.
    typed(&mut app, "C");
    assert_eq!(app.compare.choice, TwinChoice::Neutral);
    typed(&mut app, "C");
    typed(&mut app, "C");
    assert!(screen(&app).contains("twin file:"));
    let missing = dir.path().join("nope.py");
    app.overlay = codescope::tui::app::Overlay::Prompt(
        codescope::tui::app::PromptKind::Twin,
        codescope::tui::editor::LineInput::new(&missing.display().to_string()),
    );
    press(&mut app, &[KeyCode::Enter]);
    assert!(app.comparison().is_none());
    let s = screen(&app);
    assert!(s.contains("no twin:"), "{s}");
}

#[test]
fn surprisal_differences_with_a_decoder() {
    let mut app = ready_decoder(
        "tiny_llama",
        SHORT,
        120,
        40,
        theme(codescope::tui::theme::ColorMode::TrueColor),
    );
    typed(&mut app, "S");
    assert!(app.surprisal_shown().is_some());
    typed(&mut app, "c");
    let c = app.comparison().unwrap().clone();
    let sd = c
        .surprisal
        .as_ref()
        .expect("both twins traced with the LM head");
    assert!(sd.rename_sensitivity.is_some());
    let s = screen(&app);
    assert!(s.contains("surprisal B−A"), "{s}");
    assert!(s.contains("sensitivity "), "{s}");
    // The export carries the comparison as `compare --json` has it.
    let doc = compare::to_json(&c);
    assert_eq!(doc["rewrite"], "rename:neutral");
    assert!(doc["surprisal"]["rename_sensitivity"].is_number());
}

#[test]
fn a_new_analysis_asks_for_a_new_comparison() {
    let mut app = ready(ONE_LINE, 120, 40);
    typed(&mut app, "c");
    let first = app.compare.req;
    // Paper mode re-analyses A; compare follows with the same options.
    let fx = app.type_keys("m");
    let left = serve(&mut app, fx);
    assert!(left.iter().all(|e| !matches!(e, Effect::Compare(_))));
    assert!(app.compare.req > first);
    let c = app.comparison().unwrap();
    assert_eq!(c.b.mode, codescope::analysis::Mode::Paper);
    assert!(Arc::ptr_eq(&c.a, app.prepared().unwrap()));
}

/// Figures of compare mode say what they show: the heatmap exported on B − A is titled
/// as the difference with the twin named, drawn on a diverging scale with signed ticks,
/// and its JSON says the matrix is B − A; the head grid exported in compare mode carries
/// the B − A values the panel shows, signed, not the original's scores.
#[test]
fn comparison_figures_are_labelled_and_signed() {
    use codescope::export::figure::{self, Kind};
    let mut app = ready(SAMPLE, 120, 40);
    typed(&mut app, "c");
    assert!(app.comparison().is_some());
    typed(&mut app, "v");
    typed(&mut app, "v");
    assert_eq!(app.compare.heat, HeatSide::Diff);
    let v = codescope::tui::figures::figure_data(&app).unwrap();
    let ci = v.compare.as_ref().expect("the export names the comparison");
    assert_eq!(
        (ci.heatmap.as_str(), ci.twin.as_str()),
        ("B−A", "rename:neutral")
    );
    let (md, _) = app.compare_matrix().unwrap();
    let n = app.prepared().unwrap().n();
    assert_eq!(
        v.matrix[0][..],
        md[..n],
        "the JSON matrix is the B − A shown"
    );
    let json = codescope::export::json::render(&v).unwrap();
    let j: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(j["compare"]["heatmap"], "B−A");
    assert_eq!(j["head_grid"]["signed"], true);
    // The head grid: B − A of the panel's metric, signed.
    assert!(v.head_grid.signed);
    let a_vals = app
        .view
        .metric
        .values(app.prepared().unwrap(), &app.shown.scores);
    assert_eq!(v.head_grid.values, app.compare_grid(&a_vals).unwrap());
    assert!(v.head_grid.name.contains("B − A"));
    let opts = figure::FigureOptions::default();
    let heat = figure::render(Kind::Heatmap, &v, &opts).unwrap();
    assert!(heat.svg.contains("attention, B − A"), "figure title");
    assert!(heat.svg.contains("B = rename:neutral"), "the twin is named");
    assert!(
        heat.svg.contains("B − A (√)"),
        "the colour bar says what it is"
    );
    assert!(heat.svg.contains(">−"), "signed ticks below zero");
    assert!(
        heat.svg.contains("B − A of the attention"),
        "the code's shading is B − A too"
    );
    assert!(
        heat.svg.contains("the original's (A) scores"),
        "scores say whose they are"
    );
    let heads = figure::render(Kind::Heads, &v, &opts).unwrap();
    assert!(heads.svg.contains("twin's score minus the original's"));
    assert!(
        heads.svg.contains(">+") || heads.svg.contains(">−"),
        "signed cells"
    );
    // Back on A: plain attention, no sign.
    typed(&mut app, "v");
    let v = codescope::tui::figures::figure_data(&app).unwrap();
    assert_eq!(v.compare.as_ref().unwrap().heatmap, "A");
    let heat = figure::render(Kind::Heatmap, &v, &opts).unwrap();
    assert!(!heat.svg.contains("B − A (√)"));
}
