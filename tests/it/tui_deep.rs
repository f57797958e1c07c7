//! The explorer on deep and wide models: tiny random-weight models of 6, 18 and 32
//! layers at 80x24, 120x40 and 200x50. Every layer number in the head grid is readable
//! and separated, the current layer (and head) is always in view as it moves to the
//! last one, the probe panel scrolls to the current layer, and styled snapshots pin the
//! colours of the heat map, its colour bar and the grid.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use crate::tui_common;

use codescope::model::source::ModelFiles;
use codescope::model::testutil::{write_tiny_model, Tiny};
use codescope::model::LoadedModel;
use codescope::tui::app::{App, Focus};
use codescope::tui::layout::{self, GRID_LABEL_W};
use codescope::tui::theme::ColorMode;
use crossterm::event::KeyCode;
use tui_common::*;

pub const SIZES: [(u16, u16); 3] = [(80, 24), (120, 40), (200, 50)];

/// (layers, heads, hidden) of the test models: MiniLM's shape, Gemma 3 270M's depth
/// and head count, and a 32-layer model with 16 heads.
pub const SHAPES: [(usize, usize, usize); 3] = [(6, 12, 48), (18, 4, 32), (32, 16, 64)];

/// A tiny random-weight model of `layers` x `heads`, written and loaded once.
pub fn deep_model(layers: usize, heads: usize, hidden: usize) -> &'static LoadedModel {
    static M: OnceLock<Mutex<HashMap<(usize, usize), &'static LoadedModel>>> = OnceLock::new();
    let mut m = M.get_or_init(Default::default).lock().unwrap();
    m.entry((layers, heads)).or_insert_with(|| {
        let dir = Box::leak(Box::new(tempfile::tempdir().unwrap()));
        write_tiny_model(
            dir.path(),
            &Tiny {
                layers,
                heads,
                hidden,
                intermediate: 2 * hidden,
                max_positions: 512,
                seed: 3,
                ..Tiny::default()
            },
        )
        .unwrap();
        let files = ModelFiles::from_dir(dir.path(), "deep".into()).unwrap();
        Box::leak(Box::new(LoadedModel::load(&files).unwrap()))
    })
}

/// An app analysed by the `layers`-layer model at `w x h`.
pub fn ready_deep(shape: (usize, usize, usize), w: u16, h: u16, mode: ColorMode) -> App {
    let (mut app, fx) = fresh(SAMPLE, w, h, theme(mode));
    let m = deep_model(shape.0, shape.1, shape.2);
    serve_with(&mut app, fx, m, &format!("deep{}", shape.0));
    assert_eq!(app.dims(), (shape.0, shape.1));
    app
}

/// Send keys, serving analyses with the app's deep model.
fn press_deep(app: &mut App, shape: (usize, usize, usize), keys: &[KeyCode]) {
    let m = deep_model(shape.0, shape.1, shape.2);
    for &k in keys {
        let fx = app.update(key(k));
        serve_with(app, fx, m, &format!("deep{}", shape.0));
    }
}

/// The head grid's header row (layer numbers; head numbers when transposed) as shown,
/// and the numbers in it.
fn grid_header(app: &App) -> Option<(String, Vec<usize>)> {
    let g = layout::geometry(app);
    let r = g.panel(Focus::Heads)?;
    let gg = layout::grid_geom(app, r)?;
    let t = render(app);
    let buf = t.backend().buffer();
    let y = gg.header_y();
    let x0 = gg.inner.x + GRID_LABEL_W;
    let row: String = (x0..gg.inner.right())
        .map(|x| buf[(x, y)].symbol().to_string())
        .collect();
    let nums = row
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    Some((row, nums))
}

/// Every visible column number is there, in order, each right-aligned over its own
/// column with at least one space before it; the current layer and head are in view
/// (as a column or as a row label).
fn check_header(app: &App, what: &str) {
    let g = layout::geometry(app);
    let r = g.panel(Focus::Heads).expect("the head grid is shown");
    let gg = layout::grid_geom(app, r).expect("grid geometry");
    let (row, nums) = grid_header(app).unwrap();
    let (c0, cvis, total) = gg.cols();
    let want: Vec<usize> = (c0 + 1..=c0 + cvis).collect();
    assert_eq!(nums, want, "{what}: header {row:?}");
    let (l, h) = (app.view.layer, app.view.head);
    assert!(
        l >= gg.l0 && l < gg.l0 + gg.lvis,
        "{what}: layer {l} not in view"
    );
    assert!(
        h >= gg.h0 && h < gg.h0 + gg.hvis,
        "{what}: head {h} not in view"
    );
    let cw = gg.cw as usize;
    let chars: Vec<char> = row.chars().collect();
    for (k, n) in want.iter().enumerate() {
        let cell: String = chars[k * cw..(k + 1) * cw].iter().collect();
        assert_eq!(cell, format!("{n:>cw$}"), "{what}: column {k} of {row:?}");
        assert!(cell.starts_with(' '), "{what}: {n} touches its neighbour");
    }
    assert_eq!(cvis < total, gg.more_right() || gg.more_left());
    // Row labels name the rows shown.
    let s = screen(app);
    let (r0, rvis, _) = gg.rows();
    let tag = if gg.transposed { 'L' } else { 'H' };
    for k in r0..r0 + rvis {
        assert!(
            s.contains(&format!("│{tag}{}", k + 1)),
            "{what}: row {tag}{}",
            k + 1
        );
    }
}

#[test]
fn head_grid_numbers_are_separated_for_6_18_32_layers() {
    for shape in SHAPES {
        for (w, h) in SIZES {
            let mut app = ready_deep(shape, w, h, ColorMode::TrueColor);
            if w < layout::FULL_W {
                press_deep(&mut app, shape, &[KeyCode::Tab, KeyCode::Tab]);
                assert_eq!(app.view.focus, Focus::Heads);
            }
            let name = format!("grid_{}l_{w}x{h}", shape.0);
            check_header(&app, &name);
            insta::assert_snapshot!(name.clone(), screen(&app));
            // Walk to the last layer and the last head: both stay in view.
            // (Both axes saturate, whichever way the grid is turned.)
            let most = shape.0.max(shape.1);
            let right = vec![KeyCode::Right; most];
            let down = vec![KeyCode::Down; most];
            press_deep(&mut app, shape, &right);
            press_deep(&mut app, shape, &down);
            if app.view.focus == Focus::Heads {
                press_deep(&mut app, shape, &[KeyCode::Enter]);
            }
            assert_eq!((app.view.layer, app.view.head), (shape.0 - 1, shape.1 - 1));
            check_header(&app, &format!("{name} at the last layer"));
            let s = screen(&app);
            assert!(s.contains("? help"), "{name}: ? help\n{s}");
            if shape.0 > 12 && w < 200 {
                insta::assert_snapshot!(format!("{name}_last"), s);
            }
        }
    }
}

#[test]
fn every_layer_fits_at_200_columns() {
    for shape in SHAPES {
        let app = ready_deep(shape, 200, 50, ColorMode::TrueColor);
        let (_, nums) = grid_header(&app).unwrap();
        assert_eq!(
            nums,
            (1..=shape.0).collect::<Vec<_>>(),
            "{} layers",
            shape.0
        );
    }
}

#[test]
fn grid_scroll_keeps_every_cell_reachable_up_to_48_layers_64_heads() {
    use codescope::tui::app::follow_axis;
    use ratatui::layout::Rect;
    // Pure layout: every size of panel the layouts produce, every model shape.
    for (w, h) in [(30u16, 12u16), (36, 20), (42, 14), (60, 24), (102, 30)] {
        let inner = Rect::new(0, 0, w, h);
        for layers in [1usize, 2, 6, 12, 18, 24, 32, 48] {
            for heads in [1usize, 4, 12, 16, 32, 64] {
                for cw in [3u16, 4] {
                    let (lvis, hvis, footer) = layout::grid_fit(inner, cw, layers, heads);
                    assert!(lvis >= 1 && hvis >= 1, "{w}x{h} {layers}x{heads}");
                    let used_w =
                        GRID_LABEL_W as usize + lvis * cw as usize + usize::from(lvis < layers);
                    assert!(used_w <= w as usize, "{w}x{h} {layers}x{heads}: {used_w}");
                    assert!(1 + hvis + footer as usize <= h as usize);
                    let mut l0 = 0;
                    for l in (0..layers).chain((0..layers).rev()) {
                        l0 = follow_axis(l0, Some(l), layers, lvis);
                        assert!(l >= l0 && l < l0 + lvis, "layer {l} from {l0}+{lvis}");
                        // Not on an edge while more lies beyond it.
                        if lvis >= 4 && l + 1 < layers && l > 0 {
                            assert!(l > l0 && l + 1 < l0 + lvis, "layer {l} at the edge");
                        }
                    }
                    let mut h0 = 0;
                    for hh in 0..heads {
                        h0 = follow_axis(h0, Some(hh), heads, hvis);
                        assert!(hh >= h0 && hh < h0 + hvis);
                    }
                }
            }
        }
    }
}

#[test]
fn probe_panel_scrolls_to_the_current_layer() {
    for layers in [18usize, 32] {
        let shape = SHAPES.iter().copied().find(|s| s.0 == layers).unwrap();
        for (w, h) in [(80u16, 24u16), (120, 40)] {
            let mut app = ready_deep(shape, w, h, ColorMode::TrueColor);
            let key = app.probe_key().unwrap();
            app.probe.results.insert(
                key,
                std::sync::Arc::new(synthetic_report(layers, app.probe.task.name())),
            );
            if w < layout::FULL_W {
                app.view.side = Focus::Probes;
            }
            for l in [0, layers / 2, layers - 1] {
                app.view.layer = l;
                resettle(&mut app);
                let s = screen(&app);
                assert!(
                    s.contains(&format!("▸{:>2}", l + 1)),
                    "{layers} layers {w}x{h}: row of layer {} shown\n{s}",
                    l + 1
                );
                assert!(
                    s.contains("█acc ▒control") || s.contains("█▒ctl"),
                    "legend\n{s}"
                );
                if layers == 32 {
                    assert!(s.contains(" of 33"), "the range line\n{s}");
                }
            }
            insta::assert_snapshot!(format!("probes_{layers}l_{w}x{h}"), screen(&app));
        }
    }
}

/// Colours: the heat map with its colour bar and the head grid of the 18-layer model.
#[test]
fn styled_heatmap_colour_bar_and_grid() {
    let shape = SHAPES[1];
    for mode in [ColorMode::TrueColor, ColorMode::Ansi256] {
        let app = ready_deep(shape, 200, 50, mode);
        let g = layout::geometry(&app);
        let name = match mode {
            ColorMode::TrueColor => "truecolor",
            _ => "256",
        };
        let heat = g.panel(Focus::Heatmap).unwrap();
        let s = styled(&app, heat);
        let bar = s.lines().rev().nth(1).unwrap();
        assert!(bar.contains("█") && bar.contains("√"), "{bar}");
        insta::assert_snapshot!(format!("styled_deep_heatmap_{name}"), s);
        let grid = g.panel(Focus::Heads).unwrap();
        insta::assert_snapshot!(format!("styled_deep_grid_{name}"), styled(&app, grid));
    }
}

/// Gemma 3's shape (18 layers x 4 heads) at 80x24: the grid turns (layers as rows) and
/// shows every cell; inside it ↑ ↓ move along layers, ← → along heads.
#[test]
fn transposed_grid_shows_every_cell_and_moves_spatially() {
    let shape = SHAPES[1];
    let mut app = ready_deep(shape, 80, 24, ColorMode::TrueColor);
    press_deep(&mut app, shape, &[KeyCode::Tab, KeyCode::Tab]);
    let g = layout::geometry(&app);
    let gg = layout::grid_geom(&app, g.panel(Focus::Heads).unwrap()).unwrap();
    assert!(gg.transposed);
    assert_eq!((gg.lvis, gg.hvis), (18, 4), "every cell");
    press_deep(
        &mut app,
        shape,
        &[KeyCode::Down, KeyCode::Down, KeyCode::Right],
    );
    assert_eq!(app.view.grid, (2, 1));
    press_deep(&mut app, shape, &[KeyCode::Enter]);
    assert_eq!((app.view.layer, app.view.head), (2, 1));
    // A click on a cell: row = layer, column = head.
    let (x, y) = (gg.cell_x(3).unwrap() + 1, gg.header_y() + 1 + 9);
    let fx = app.update(codescope::tui::msg::Msg::Mouse(
        crossterm::event::MouseEvent {
            kind: crossterm::event::MouseEventKind::Down(crossterm::event::MouseButton::Left),
            column: x,
            row: y,
            modifiers: crossterm::event::KeyModifiers::NONE,
        },
    ));
    assert!(fx.is_empty());
    assert_eq!((app.view.layer, app.view.head), (9, 3));
}

/// The finding panel (`F`) with more layers than rows: a window that keeps the current
/// layer in view and says which layers it shows, the reading still below; in the compact
/// layout `F` brings the panel on screen.
#[test]
fn finding_panel_windows_deep_models_and_shows_in_the_compact_layout() {
    for layers in [18usize, 32] {
        let shape = SHAPES.iter().copied().find(|s| s.0 == layers).unwrap();
        for (w, h) in [(80u16, 24u16), (120, 40)] {
            let mut app = ready_deep(shape, w, h, ColorMode::TrueColor);
            press_deep(&mut app, shape, &[KeyCode::Char('F')]);
            for l in [0, layers / 2, layers - 1] {
                app.view.layer = l;
                resettle(&mut app);
                let s = screen(&app);
                assert!(
                    s.contains("Finding"),
                    "{layers} layers {w}x{h}: panel shown\n{s}"
                );
                assert!(
                    s.contains(&format!("│{:>2}  0.", l + 1)),
                    "{layers} layers {w}x{h}: row of layer {} shown\n{s}",
                    l + 1
                );
                assert!(
                    s.contains(&format!(" of {layers} (← → move)")),
                    "the range line\n{s}"
                );
                assert!(
                    s.contains("the study's"),
                    "the reading or legend stays\n{s}"
                );
            }
        }
    }
}
