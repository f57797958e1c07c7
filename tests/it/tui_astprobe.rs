//! The probe panel's AST-Probe view: `P` reaches it after the seven tasks, `p` asks the
//! worker for an AST-Probe job, the per-layer F1 rows and the snippet's rebuilt tree
//! beside the gold one (styled snapshots, NO_COLOR glyphs, 18 layers at 80x24), the
//! trees of a probe really trained on the tiny model, and the figure export.

use std::sync::Arc;

use crate::tui_common::*;
use crate::tui_deep::{deep_model, ready_deep};
use codescope::probe::astprobe::tree::{Encoding, EMPTY};
use codescope::probe::astprobe::view::{self, RowKind, SnippetTrees};
use codescope::probe::astprobe::{self, AstOptions};
use codescope::tui::app::{App, Focus, PanelTask};
use codescope::tui::msg::{Effect, Msg, WorkerMsg};
use codescope::tui::theme::ColorMode;
use crossterm::event::KeyCode;

/// Move the panel to AST-Probe (seven presses of `P` from category).
fn to_ast(app: &mut App) -> Vec<Effect> {
    let mut fx = Vec::new();
    for _ in 0..7 {
        fx = typed(app, "P");
    }
    assert_eq!(app.probe.task, PanelTask::Ast);
    fx
}

/// A hand-made AST-Probe report of `layers + 1` rows (F1 rising then falling).
fn ast_report(layers: usize) -> codescope::probe::ProbeReport {
    let mut r = synthetic_report(layers, "ast");
    for x in &mut r.results {
        x.probe = "ast".into();
        x.accuracy *= 0.6;
        x.control_accuracy *= 0.4;
        x.selectivity = x.accuracy - x.control_accuracy;
        x.majority = 0.0;
        (x.train_size, x.test_size) = (249, 62);
    }
    r
}

/// Deliver `report` for the app's pending AST job (asking for one with `p`).
fn deliver_ast(app: &mut App, report: codescope::probe::ProbeReport) -> Vec<Effect> {
    let job = probe_job(&app.type_keys("p")).expect("an AST-Probe job");
    assert_eq!(job.task, PanelTask::Ast);
    let fx = app.update(Msg::Worker(WorkerMsg::Probed {
        req: job.req,
        report: Arc::new(report),
    }));
    serve(app, fx)
}

/// The snippet's gold tree and a deterministic stand-in for a probe's prediction: the
/// gold encoding with every third `d` lowered (the tree splits elsewhere) and every
/// fifth `c` relabelled.
fn stand_in_trees(app: &App) -> SnippetTrees {
    let a = app.prepared().unwrap();
    let feat = a.features.as_ref().unwrap();
    let gold = astprobe::gold_encoding(&a.syntax, &feat.tokens, astprobe::MAX_TOKENS).unwrap();
    let mut pred: Encoding = gold.clone();
    for i in (0..pred.d.len()).step_by(3) {
        pred.d[i] = 0.5;
    }
    for i in (0..pred.c.len()).step_by(5) {
        if pred.c[i] != EMPTY {
            pred.c[i] = "call".into();
        }
    }
    view::compare(app.view.layer + 1, &a.syntax, &feat.tokens, &gold, &pred).unwrap()
}

/// Put `trees` in the panel for the current analysis and layer (as the runtime's answer
/// to the tree effect would).
fn show_trees(app: &mut App, trees: SnippetTrees) {
    let req = app.shown.data.as_ref().unwrap().0;
    let key = (req, app.view.layer + 1);
    let fx = app.update(Msg::AstTree {
        key,
        result: Ok(Arc::new(trees)),
    });
    serve(app, fx);
}

#[test]
fn p_reaches_ast_probe_after_the_tasks_and_asks_for_an_ast_job() {
    let mut app = ready(SAMPLE, 120, 40);
    to_ast(&mut app);
    let s = screen(&app);
    assert!(s.contains("Probes ast"), "{s}");
    assert!(s.contains("train AST-Probe"), "{s}");
    deliver_ast(&mut app, ast_report(3));
    // The report has no fitted probe: the tree effect answers why.
    let s = screen(&app);
    assert!(
        s.contains("no tree: no AST-Probe fitted at this layer"),
        "{s}"
    );
    assert!(s.contains("tree F1 vs control") && s.contains("▸ 1"), "{s}");
    // Cycling on wraps to category; the cached AST report comes back at once.
    typed(&mut app, "P");
    assert_eq!(app.probe.task, codescope::probe::Task::Category);
    assert!(app.probe.tree.is_some());
    to_ast(&mut app);
    assert!(app.probe_report().is_some());
    assert!(probe_job(&app.type_keys("p")).is_none());
}

#[test]
fn ast_panel_styled_and_no_color() {
    for (mode, name) in [
        (ColorMode::TrueColor, "truecolor"),
        (ColorMode::Ansi256, "256"),
        (ColorMode::None, "no_color"),
    ] {
        for (w, h) in [(120u16, 40u16), (80, 24)] {
            let mut app = ready_with(SAMPLE, w, h, theme(mode));
            to_ast(&mut app);
            deliver_ast(&mut app, ast_report(3));
            press(&mut app, &[KeyCode::Right]);
            // The cursor inside the function: both trees scroll to its leaf.
            typed(&mut app, "jjjjjwl");
            let trees = stand_in_trees(&app);
            show_trees(&mut app, trees.clone());
            let area = codescope::tui::layout::geometry(&app)
                .panel(Focus::Probes)
                .unwrap();
            let s = screen(&app);
            // Both trees, their marks and the cursor's leaf are on screen.
            let cursor_text = &app.doc.syntax.as_ref().unwrap().tokens[app.view.cursor].text;
            assert!(s.contains("rebuilt ✗") && s.contains("│gold ✗"), "{s}");
            // The cursor's leaf, marked, in both trees (leaves are written «text»).
            let leaf = format!("«{cursor_text}»");
            let marked = s
                .lines()
                .filter(|l| {
                    l.split('│')
                        .filter(|c| c.contains('▸') && c.contains(&leaf))
                        .count()
                        == 2
                })
                .count();
            assert_eq!(marked, 1, "{s}");
            assert!(s.contains("this snippet F1"), "{s}");
            let (_, relabelled, absent) = view::counts(&trees.predicted);
            assert!(absent > 0 && relabelled > 0);
            insta::assert_snapshot!(format!("ast_panel_{name}_{w}x{h}"), styled(&app, area));
        }
    }
}

#[test]
fn eighteen_layers_fit_80x24_and_120x40() {
    for (w, h) in [(80u16, 24u16), (120, 40), (60, 16)] {
        // Gemma 3 270M's depth and head count (the shape `tui_deep` uses).
        let mut app = ready_deep((18, 4, 32), w, h, ColorMode::TrueColor);
        to_ast(&mut app);
        // Below 76 columns only the focused panel shows.
        app.view.focus = Focus::Probes;
        resettle(&mut app);
        deliver_ast(&mut app, ast_report(18));
        // Walk to the last layer: its row stays visible, the trees keep their rows.
        for _ in 0..20 {
            // A layer change needs no analysis: the served effects are the tree's.
            let fx = app.update(key(KeyCode::Right));
            serve_with(&mut app, fx, deep_model(18, 4, 32), "deep18");
            let trees = stand_in_trees(&app);
            show_trees(&mut app, trees);
            let area = codescope::tui::layout::geometry(&app)
                .panel(Focus::Probes)
                .unwrap();
            let rows = codescope::tui::widgets::probe_rows(&app, area).unwrap();
            assert!(
                rows.iter().any(|&(_, l)| l == app.view.layer + 1),
                "{w}x{h} layer {}",
                app.view.layer
            );
            // Every row lies inside the panel.
            assert!(rows
                .iter()
                .all(|&(y, _)| y > area.y && y < area.bottom() - 1));
        }
        assert_eq!(app.view.layer, 17);
        let s = screen(&app);
        assert!(s.contains("▸18"), "{s}");
        assert!(s.contains("rebuilt") && s.contains("gold"), "{s}");
        insta::assert_snapshot!(format!("ast_panel_18l_{w}x{h}"), screen(&app));
    }
    // The deep model really has 18 layers.
    assert_eq!(deep_model(18, 4, 32).info.layers, 18);
}

/// A click on an AST layer row selects that layer, as for the other tasks.
#[test]
fn clicking_an_ast_layer_row_selects_it() {
    use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
    let mut app = ready(SAMPLE, 80, 24);
    to_ast(&mut app);
    deliver_ast(&mut app, ast_report(6));
    let area = codescope::tui::layout::geometry(&app)
        .panel(Focus::Probes)
        .unwrap();
    let rows = codescope::tui::widgets::probe_rows(&app, area).unwrap();
    let &(y, layer) = rows.iter().find(|&&(_, l)| l == 2).unwrap();
    let fx = app.update(Msg::Mouse(MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column: area.x + 3,
        row: y,
        modifiers: crossterm::event::KeyModifiers::NONE,
    }));
    serve(&mut app, fx);
    assert_eq!(app.view.layer + 1, layer);
}

/// A probe really trained on the tiny model's features of a few bundled snippets: the
/// tree effect rebuilds the snippet on screen, the gold side is the syntax tree itself,
/// and the marks are the constituent scores.
#[test]
fn trees_of_a_trained_probe_are_consistent() {
    use codescope::probe::bundled;
    let snippets: Vec<_> = bundled::snippets(Some(codescope::syntax::Language::Python))
        .into_iter()
        .take(24)
        .collect();
    let report = {
        let mut spec = codescope::tui::worker::panel_spec(
            model(),
            &snippets,
            codescope::syntax::Language::Python,
            PanelTask::Ast,
        );
        spec.train.ast = AstOptions {
            fit: astprobe::train::FitOptions {
                rank: 8,
                max_epochs: 2,
                min_steps: 4,
                ..Default::default()
            },
            ..Default::default()
        };
        codescope::probe::run(&spec, &mut |_| {}).unwrap()
    };
    assert_eq!(report.ast.len(), 4, "embeddings + 3 layers");
    let mut app = ready(SAMPLE, 120, 40);
    to_ast(&mut app);
    deliver_ast(&mut app, report);
    press(&mut app, &[KeyCode::Right]);
    let trees = match app.ast_trees() {
        Some(Ok(t)) => t.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(trees.layer, 2);
    let a = app.prepared().unwrap();
    let feat = a.features.as_ref().unwrap();
    assert_eq!(trees.tokens, feat.tokens[..trees.tokens.len()]);
    // The gold side is the snippet's syntax tree over its leaves.
    let mut gold: Vec<_> = trees
        .gold
        .iter()
        .filter_map(|r| match &r.kind {
            RowKind::Node { label, lo, hi, .. } => Some((label.clone(), *lo, *hi)),
            RowKind::Leaf(_) => None,
        })
        .collect();
    let mut want = astprobe::tree::syntax_constituents(&a.syntax, &trees.tokens);
    gold.sort();
    want.sort();
    assert_eq!(gold, want);
    // Marks count the matches: precision = unmarked rebuilt nodes / rebuilt nodes.
    let (same, rel, absent) = view::counts(&trees.predicted);
    let p = same as f64 / (same + rel + absent) as f64;
    assert!(
        (p - trees.precision).abs() < 1e-12,
        "{p} {}",
        trees.precision
    );
    let (gsame, grel, gabs) = view::counts(&trees.gold);
    assert!((gsame as f64 / (gsame + grel + gabs) as f64 - trees.recall).abs() < 1e-12);
    // Every leaf appears once in each tree, in order.
    let leaves = |rows: &[view::Row]| -> Vec<usize> {
        rows.iter()
            .filter_map(|r| match r.kind {
                RowKind::Leaf(k) => Some(k),
                _ => None,
            })
            .collect()
    };
    let all: Vec<usize> = (0..trees.tokens.len()).collect();
    assert_eq!(leaves(&trees.predicted), all);
    assert_eq!(leaves(&trees.gold), all);
    // Paper mode has no token features: the panel says so instead of a tree.
    typed(&mut app, "m");
    assert_eq!(
        app.ast_trees().map(|r| r.err()),
        Some(Some("trees need source input (m)"))
    );
}

/// The probes figure of the AST view carries both trees, their marks and the F1 axis.
#[test]
fn ast_view_exports_its_trees() {
    use codescope::export::figure::{self, FigureOptions, Kind};
    let mut app = ready(SAMPLE, 120, 40);
    to_ast(&mut app);
    deliver_ast(&mut app, ast_report(3));
    press(&mut app, &[KeyCode::Right]);
    let trees = stand_in_trees(&app);
    show_trees(&mut app, trees);
    let view = codescope::tui::figures::figure_data_with(&app, false).unwrap();
    let chart = view.probes.as_ref().expect("the probe chart");
    assert_eq!(chart.probe, "ast");
    let t = chart.tree.as_ref().expect("the trees");
    assert!(t.predicted.iter().any(|l| l.mark == "absent"));
    assert!(t.gold.iter().any(|l| l.mark == "relabelled"));
    assert_eq!(
        t.predicted.iter().filter(|l| l.mark == "selected").count(),
        1
    );
    for light in [false, true] {
        let f = figure::render(
            Kind::Probes,
            &view,
            &FigureOptions {
                light,
                ..FigureOptions::default()
            },
        )
        .unwrap();
        for want in [
            "rebuilt",
            "gold",
            "✗",
            "≈",
            "test constituent F1",
            "control trees",
        ] {
            assert!(f.svg.contains(want), "{want}");
        }
        codescope::export::png::render(&f).unwrap();
    }
}
