//! Figures, `render`, tours and sessions (issue #14), in process: every view's figure is
//! slide grade (text >= 20 px at 1920 wide, no two texts overlap, a colour bar on every
//! heat map, PNG renders), deterministic, small for 512 tokens; `render`'s headless
//! explorer gives the same bytes as the explorer's export for the same state; its
//! screen equals the explorer's buffer; scenes, tour steps and sessions round-trip.

use codescope::export::figure::{self, FigureOptions, Kind};
use codescope::export::{self, png};
use codescope::present::{self, HeadSpec, Scene, TokenSpec};
use codescope::syntax::Language;
use codescope::tui::data::Doc;
use codescope::tui::headless::Model;
use codescope::tui::msg::Msg;
use codescope::tui::theme::ColorMode;
use crossterm::event::KeyCode;

use super::tui_common::*;

/// The texts of an SVG that are not rotated: (x0, x1, top, bottom, size, text).
fn text_boxes(svg: &str) -> Vec<(f64, f64, f64, f64, f64, String)> {
    let attr = |el: &str, name: &str| -> Option<String> {
        let k = format!(" {name}=\"");
        let i = el.find(&k)? + k.len();
        let j = el[i..].find('"')? + i;
        Some(el[i..j].to_string())
    };
    let mut out = Vec::new();
    let mut rest = svg;
    let mut family_size = None;
    while let Some(i) = rest.find("<text") {
        // A group may give the size (the screen figure).
        if let Some(g) = rest[..i].rfind("<g id=\"text\" font-size=\"") {
            let s = &rest[g + 24..];
            family_size = s[..s.find('"').unwrap()].parse::<f64>().ok();
        }
        let el_end = rest[i..].find('>').unwrap() + i;
        let el = &rest[i..el_end];
        let body_end = rest[el_end..].find("</text>").unwrap() + el_end;
        let body = rest[el_end + 1..body_end]
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&")
            .replace("&quot;", "\"");
        rest = &rest[body_end..];
        if el.contains("rotate(") {
            continue;
        }
        let size: f64 = attr(el, "font-size")
            .and_then(|s| s.parse().ok())
            .or(family_size)
            .expect("every text has a size");
        let xs = attr(el, "x").unwrap();
        let x: f64 = xs.split(' ').next().unwrap().parse().unwrap();
        let y: f64 = attr(el, "y").unwrap().parse().unwrap();
        let w = body.chars().count() as f64 * 0.602 * size;
        let x0 = match attr(el, "text-anchor").as_deref() {
            Some("middle") => x - w / 2.0,
            Some("end") => x - w,
            _ => x,
        };
        out.push((x0, x0 + w, y - 0.76 * size, y + 0.24 * size, size, body));
    }
    out
}

/// Slide grade: every text at least 20 px (at scale 1), no two texts overlapping, the
/// figure 1920 px wide, a colour bar when `heat`.
fn check_slide_grade(kind: Kind, svg: &str, heat: bool) {
    assert!(
        svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
        "{kind:?}"
    );
    assert!(svg.contains(r#"width="1920""#), "{kind:?}: 1920 wide");
    let boxes = text_boxes(svg);
    assert!(!boxes.is_empty());
    for b in &boxes {
        assert!(b.4 >= 20.0 - 1e-9, "{kind:?}: {:?} is {} px", b.5, b.4);
    }
    for (i, a) in boxes.iter().enumerate() {
        for b in &boxes[i + 1..] {
            let ox = a.1.min(b.1) - a.0.max(b.0);
            let oy = a.3.min(b.3) - a.2.max(b.2);
            assert!(
                ox <= 0.5 || oy <= 0.5,
                "{kind:?}: {:?} overlaps {:?} ({ox:.1} x {oy:.1} px)",
                a.5,
                b.5
            );
        }
    }
    if heat {
        assert!(svg.contains("<linearGradient"), "{kind:?}: colour bar");
    }
}

/// The explorer on the sample with probes, a pinned head and the gold overlay.
fn staged_app() -> codescope::tui::app::App {
    let mut app = ready(SAMPLE, 120, 40);
    typed(&mut app, "lllg");
    press(&mut app, &[KeyCode::Right, KeyCode::Down]);
    typed(&mut app, "*");
    press(&mut app, &[KeyCode::Down]);
    app
}

#[test]
fn every_view_is_slide_grade_and_deterministic() {
    let app = staged_app();
    let mut view = codescope::tui::figures::figure_data_with(&app, true).unwrap();
    // Probe results as the panel shows them (a hand-made report; training is tested
    // elsewhere).
    let report = synthetic_report(3, "category");
    view.probes = Some(export::ProbeChart {
        task: "category".into(),
        probe: "linear".into(),
        corpus: "bundled:python".into(),
        snippets: 311,
        split: "snippet".into(),
        train_size: 4210,
        test_size: 1032,
        majority: 0.31,
        rows: report
            .results
            .iter()
            .map(|r| export::ProbeRow {
                layer: r.layer,
                accuracy: r.accuracy,
                control_accuracy: r.control_accuracy,
                selectivity: r.selectivity,
            })
            .collect(),
        token_label: Some("«re» at layer 2 output: predicted identifier, gold identifier ✓".into()),
        tree: None,
    });
    for light in [false, true] {
        let opts = FigureOptions {
            light,
            ..FigureOptions::default()
        };
        for kind in [
            Kind::Heatmap,
            Kind::Heads,
            Kind::Categories,
            Kind::Probes,
            Kind::Overview,
        ] {
            let f = figure::render(kind, &view, &opts).unwrap();
            assert_eq!(f, figure::render(kind, &view, &opts).unwrap(), "{kind:?}");
            check_slide_grade(kind, &f.svg, kind != Kind::Probes);
            let p = png::render(&f).unwrap();
            let pm = resvg::tiny_skia::Pixmap::decode_png(&p).unwrap();
            assert_eq!(pm.width(), 1920, "{kind:?}");
            assert_eq!(pm.height() as f64, f.height, "{kind:?}");
        }
    }
    // The heatmap figure shows both matrices, the gold edges and the scores.
    let f = figure::render(Kind::Heatmap, &view, &FigureOptions::default()).unwrap();
    assert!(f.svg.contains("(pinned)") && f.svg.contains("(current)"));
    assert!(f.svg.contains("gold edge (AST motif + data flow)"));
    assert!(f.svg.contains("ast_motif P "));
    assert!(f.svg.contains(">word_counts</text>"));
    // The screen figure of the explorer.
    let buf = codescope::tui::figures::screen_buffer(&app);
    let f = figure::screen::render(&buf, &FigureOptions::default());
    check_slide_grade(Kind::Screen, &f.svg, false);
    // On its 16:9 slide; at its own size 32 px per terminal row.
    assert_eq!((f.width, f.height), (1920.0, 1080.0));
    assert!(png::render(&f).is_ok());
    let own = FigureOptions {
        canvas: None,
        ..FigureOptions::default()
    };
    assert_eq!(figure::screen::render(&buf, &own).height, 40.0 * 32.0);
}

#[test]
fn surprisal_figure_needs_the_view() {
    let mut app = ready_decoder("tiny_qwen2", SHORT, 120, 40, theme(ColorMode::TrueColor));
    typed(&mut app, "l");
    let off = codescope::tui::figure_data(&app).unwrap();
    assert!(figure::render(Kind::Surprisal, &off, &FigureOptions::default()).is_err());
    typed(&mut app, "S");
    let on = codescope::tui::figure_data(&app).unwrap();
    let f = figure::render(Kind::Surprisal, &on, &FigureOptions::default()).unwrap();
    check_slide_grade(Kind::Surprisal, &f.svg, true);
    assert!(f.svg.contains("surprisal view") && f.svg.contains(" bits</title>"));
    assert!(f.svg.contains("expected at the selected token"));
}

#[test]
fn crops_to_lines_and_tokens() {
    let app = staged_app();
    let view = codescope::tui::figure_data(&app).unwrap();
    // Heights compared at the figures' own size (on a slide both are 1080 px).
    let own = FigureOptions {
        canvas: None,
        ..FigureOptions::default()
    };
    let all = figure::render(Kind::Heatmap, &view, &own).unwrap();
    let opts = FigureOptions {
        lines: Some((1, 3)),
        canvas: None,
        ..FigureOptions::default()
    };
    let f = figure::render(Kind::Heatmap, &view, &opts).unwrap();
    assert!(f.svg.contains("lines 1-3"));
    assert!(f.height < all.height);
    // The first token after line 3 (`def` on line 5) is drawn nowhere.
    let after = view.tokens.iter().find(|t| t.line >= 3).unwrap();
    assert_eq!(after.text, "def");
    assert!(!f.svg.contains(">def</text>"));
    assert!(all.svg.contains(">def</text>"));
    let f = figure::render(
        Kind::Heatmap,
        &view,
        &FigureOptions {
            tokens: Some((0, 9)),
            ..FigureOptions::default()
        },
    )
    .unwrap();
    assert!(f.svg.contains("tokens 0-9"));
    for bad in [Some((0, 2)), Some((900, 901))] {
        let e = figure::render(
            Kind::Heatmap,
            &view,
            &FigureOptions {
                lines: bad,
                ..FigureOptions::default()
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("lines"), "{e}");
    }
}

/// A synthetic 512-token view (no model): identifiers on lines of 8, a smooth
/// attention pattern with noise.
fn synthetic_view(n: usize) -> export::FigureData {
    let mut source = String::new();
    let mut tokens = Vec::new();
    for i in 0..n {
        let text = format!("v{i}");
        let start = source.len();
        source.push_str(&text);
        tokens.push(export::Token {
            index: i,
            text,
            start,
            end: source.len(),
            line: i / 8,
            col: start - source.rfind('\n').map_or(0, |p| p + 1),
            category: "identifier".into(),
            role: Some("use:variable".into()),
            weight: Some(((i * 37) % 101) as f32 / 1000.0),
            surprisal: None,
            knockout: None,
            patch: None,
        });
        source.push(if i % 8 == 7 { '\n' } else { ' ' });
    }
    let mut x = 12345u64;
    let matrix = (0..n)
        .map(|q| {
            (0..n)
                .map(|k| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let noise = (x >> 40) as f32 / (1u64 << 24) as f32;
                    let near = if q >= k {
                        1.0 / (1.0 + (q - k) as f32)
                    } else {
                        0.0
                    };
                    near * 0.5 + noise * 0.02
                })
                .collect()
        })
        .collect();
    export::FigureData {
        caption: None,
        name: "synthetic.py".into(),
        language: "python".into(),
        model: "none".into(),
        model_source: "none".into(),
        architecture: "synthetic".into(),
        random_weights: None,
        mode: "source".into(),
        layer: 1,
        layers: 1,
        head: Some(1),
        heads: 1,
        threshold: 0.05,
        direction: "from".into(),
        source,
        tokens,
        selected: Some(n / 2),
        matrix_tokens: (0..n).collect(),
        matrix,
        gold_edges: (1..n).map(|i| (i, i - 1)).collect(),
        gold_overlay: true,
        scores: Default::default(),
        head_grid: export::HeadGrid {
            metric: "f1_ast_motif".into(),
            name: "F1 vs AST motif".into(),
            signed: false,
            values: vec![vec![Some(0.3)]],
        },
        categories: Default::default(),
        surprisal: None,
        knockout: None,
        ablation: None,
        lens: None,
        patch: None,
        dataflow: None,
        pinned: None,
        probes: None,
        overview: None,
        finding: None,
        compare: None,
    }
}

#[test]
fn a_512_token_heatmap_stays_under_a_megabyte() {
    let view = synthetic_view(512);
    let f = figure::render(Kind::Heatmap, &view, &FigureOptions::default()).unwrap();
    assert!(f.svg.len() < 1_000_000, "{} bytes", f.svg.len());
    assert!(f.svg.contains("data:image/png;base64,"), "a raster");
    assert!(f.svg.contains("every "), "labels every k-th token");
    check_slide_grade(Kind::Heatmap, &f.svg, true);
    let p = png::render(&f).unwrap();
    assert!(p.len() > 10_000);
}

/// The scene the keys of [`staged_app`] made, as `render` would be given it.
fn staged_scene() -> Scene {
    Scene {
        view: Some(Kind::Heatmap),
        layer: Some(2),
        head: Some(HeadSpec::Number(3)),
        token: Some(TokenSpec::Index(3)),
        gold: Some(true),
        pin: Some("2:2".into()),
        ..Scene::default()
    }
}

#[test]
fn render_equals_the_explorers_export() {
    let mut app = staged_app();
    app.status.hide_timing = true;
    // The pin's notice is the only difference a headless run does not show.
    assert!(app.status.message.as_ref().unwrap().1.starts_with("pinned"));
    app.status.message = None;
    resettle(&mut app);
    let m = Model {
        model: model(),
        label: "tiny",
    };
    let doc = Doc::new("snippet.py", SAMPLE, Language::Python);
    let headless =
        codescope::tui::headless::staged(m, doc, (120, 40), false, &staged_scene(), None).unwrap();
    assert_eq!(
        (
            headless.view.layer,
            headless.view.head,
            headless.view.cursor
        ),
        (app.view.layer, app.view.head, app.view.cursor)
    );
    let opts = FigureOptions::default();
    let kinds = [
        Kind::Heatmap,
        Kind::Heads,
        Kind::Categories,
        Kind::Overview,
        Kind::Screen,
    ];
    let (a, va) = codescope::tui::figures::figures(&app, &kinds, &opts).unwrap();
    let (b, vb) = codescope::tui::figures::figures(&headless, &kinds, &opts).unwrap();
    for ((k, fa), (_, fb)) in a.iter().zip(&b) {
        if fa.svg != fb.svg {
            let (la, lb): (Vec<_>, Vec<_>) = (fa.svg.lines().collect(), fb.svg.lines().collect());
            let i = la.iter().zip(&lb).position(|(x, y)| x != y).unwrap_or(0);
            panic!("{k:?} differs at line {i}:\n{}\n{}", la[i], lb[i]);
        }
    }
    assert_eq!(
        export::json::render(&va.unwrap()).unwrap(),
        export::json::render(&vb.unwrap()).unwrap()
    );
}

#[test]
fn render_screen_equals_the_explorer_buffer() {
    let mut app = ready(SAMPLE, 120, 40);
    app.status.hide_timing = true;
    resettle(&mut app);
    let m = Model {
        model: model(),
        label: "tiny",
    };
    let doc = Doc::new("snippet.py", SAMPLE, Language::Python);
    let headless =
        codescope::tui::headless::staged(m, doc, (120, 40), false, &Scene::default(), None)
            .unwrap();
    let text = figure::screen::text(&codescope::tui::figures::screen_buffer(&headless));
    let tui: String = screen(&app)
        .lines()
        .map(|l| {
            let l = l.strip_prefix('"').unwrap();
            format!("{}\n", l[..l.rfind('"').unwrap()].trim_end())
        })
        .collect();
    assert_eq!(text, tui);
    insta::assert_snapshot!("render_screen_120x40", text);
}

#[test]
fn scenes_apply_and_report_errors() {
    let mut app = ready(SAMPLE, 120, 40);
    let (fx, errors) = app.apply_scene(&Scene {
        layer: Some(9),
        head: Some(HeadSpec::Name("mean".into())),
        token: Some(TokenSpec::Text("nosuchtoken".into())),
        threshold: Some(0.15),
        direction: Some("to".into()),
        ..Scene::default()
    });
    assert!(fx.is_empty());
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors[0].contains("layer 9"));
    assert!(app.view.mean);
    assert!((app.threshold() - 0.15).abs() < 1e-6);
    let (_, errors) = app.apply_scene(&Scene {
        threshold: Some(0.17),
        ..Scene::default()
    });
    assert!(errors[0].contains("multiple of"));
    // The current view as a step, and back.
    typed(&mut app, "jl");
    let step = app.step_here().unwrap();
    let mut again = ready(SAMPLE, 120, 40);
    let (fx, errors) = again.apply_scene(&step.scene);
    serve(&mut again, fx);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(again.view.cursor, app.view.cursor);
    assert_eq!(again.view.direction, app.view.direction);
    assert_eq!(again.step_here().unwrap().scene, step.scene);
}

#[test]
fn tour_steps_change_snippet_view_and_caption() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("area.py"), SHORT).unwrap();
    let path = dir.path().join("talk.toml");
    std::fs::write(
        &path,
        r#"
[[step]]
file = "area.py"
layer = 2
token = "w#2"
caption = "the first step"

[[step]]
code = "total = price * (1 + rate)\n"
view = "heads"
head = "mean"
rewrite = "rename:neutral"
caption = "the second step"
"#,
    )
    .unwrap();
    let mut app = ready(SAMPLE, 120, 40);
    app.present.tour = Some(codescope::tui::tour_state(&path).unwrap());
    let fx = app.update(key(KeyCode::Char(']')));
    serve(&mut app, fx);
    assert_eq!(app.doc.text, SHORT);
    assert_eq!(app.view.layer, 1);
    let syn = app.doc.syntax.clone().unwrap();
    assert_eq!(syn.tokens[app.view.cursor].text, "w");
    assert!(app.view.cursor > 3, "the second w");
    assert!(screen(&app).contains("▶ 1/2 the first step"));
    assert!(!app.compare.on, "no rewrite: the snippet alone");
    let fx = app.update(key(KeyCode::Char(']')));
    serve(&mut app, fx);
    assert_eq!(app.doc.text, ONE_LINE);
    assert!(app.view.mean);
    assert_eq!(app.view.focus, codescope::tui::app::Focus::Heads);
    let s = screen(&app);
    assert!(s.contains("▶ 2/2 the second step"), "{s}");
    // The step's rewrite: compare mode with the neutral twin, compared by the worker.
    assert!(app.compare.on);
    assert_eq!(app.compare.choice, codescope::tui::app::TwinChoice::Neutral);
    assert!(
        app.comparison().is_some(),
        "the twin was analysed and compared"
    );
    assert_eq!(
        app.step_here().unwrap().rewrite.as_deref(),
        Some("rename:neutral")
    );
    let fx = app.update(key(KeyCode::Char(']')));
    assert!(fx.is_empty());
    assert!(screen(&app).contains("last step"));
    let fx = app.update(key(KeyCode::Char('[')));
    serve(&mut app, fx);
    assert_eq!(app.doc.text, SHORT);
    assert!(screen(&app).contains("▶ 1/2"));
    // B asks for the step's caption, then appends the view to the tour (served by the
    // runtime's function); Esc at the prompt adds nothing.
    assert!(app.update(key(KeyCode::Char('B'))).is_empty());
    assert!(screen(&app).contains("caption of the new step"));
    assert!(app.update(key(KeyCode::Esc)).is_empty());
    assert!(app.update(key(KeyCode::Char('B'))).is_empty());
    for c in "area again".chars() {
        app.update(key(KeyCode::Char(c)));
    }
    let fx = app.update(key(KeyCode::Enter));
    let Some(codescope::tui::msg::Effect::AppendStep(p, step)) = fx.into_iter().next() else {
        panic!("B asks to append a step");
    };
    assert_eq!(p, path);
    assert_eq!(step.caption.as_deref(), Some("area again"));
    let r = present::tour::append_here(&p, *step).map(|(s, n)| (p.clone(), s, n));
    app.update(Msg::StepAppended(Box::new(r)));
    let t = present::tour::Tour::load(&path).unwrap();
    assert_eq!(t.steps.len(), 3);
    assert_eq!(t.steps[2].caption.as_deref(), Some("area again"));
    // The status line says what was recorded.
    let s = screen(&app);
    assert!(s.contains("added step 3 (heatmap, layer 2"), "{s}");
    assert_eq!(app.present.tour.as_ref().unwrap().tour.steps.len(), 3);
    // The snippet is the unchanged file, so the step refers to it.
    assert_eq!(t.steps[2].file.as_deref(), Some("area.py"));
    assert_eq!(t.steps[2].code, None);
    assert_eq!(t.steps[2].scene.layer, Some(2));
}

#[test]
fn sessions_round_trip() {
    let mut app = ready(SAMPLE, 120, 40);
    typed(&mut app, "jjlla");
    press(&mut app, &[KeyCode::Right]);
    typed(&mut app, "ex = 1");
    let s = app.session();
    assert!(s.editor.is_some());
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.json");
    present::session::save_to(&s, &p).unwrap();
    let back = present::session::load_from(&p).unwrap();
    assert_eq!(back, s);
    let lang = Language::from_name(&back.lang).unwrap();
    let mut again = codescope::tui::app::App::new(
        codescope::tui::app::Config {
            theme: theme(ColorMode::TrueColor),
            model_spec: back.model.clone(),
        },
        Doc::new(back.name.clone(), back.text.clone(), lang),
    );
    again.update(Msg::Resize {
        width: 120,
        height: 40,
    });
    again.restore(&back);
    let fx = again.start();
    serve(&mut again, fx);
    assert_eq!(again.view.layer, app.view.layer);
    assert!(again.view.mean);
    assert_eq!(again.view.cursor, app.view.cursor);
    assert_eq!(
        again.editor.as_ref().unwrap().text(),
        app.editor.as_ref().unwrap().text()
    );
    assert!(present::session::load_from(&dir.path().join("none.json"))
        .unwrap_err()
        .to_string()
        .contains("no saved session"));
}

#[test]
fn overview_pin_and_export_menu_on_screen() {
    let mut app = ready(SAMPLE, 120, 40);
    app.status.hide_timing = true;
    typed(&mut app, "x");
    insta::assert_snapshot!("export_menu_120x40", screen(&app));
    app.update(key(KeyCode::Esc));
    typed(&mut app, "O");
    assert!(matches!(
        app.overlay,
        codescope::tui::app::Overlay::Overview(_)
    ));
    insta::assert_snapshot!("overview_120x40", screen(&app));
    // Move to layer 2 head 3, pin it, open head 4 of layer 3.
    press(&mut app, &[KeyCode::Right, KeyCode::Down, KeyCode::Down]);
    typed(&mut app, "*");
    assert_eq!(app.present.pin, Some((1, 2)));
    press(&mut app, &[KeyCode::Right, KeyCode::Down, KeyCode::Enter]);
    assert!(matches!(app.overlay, codescope::tui::app::Overlay::None));
    assert_eq!((app.view.layer, app.view.head), (2, 3));
    let s = screen(&app);
    assert!(
        s.contains("Pinned · L2 H3 [*]") && s.contains("Heatmap · L3 H4"),
        "{s}"
    );
    insta::assert_snapshot!("pinned_120x40", s);
    // The same at 80x24: the pinned half only where the panel is wide enough.
    app.update(Msg::Resize {
        width: 80,
        height: 24,
    });
    let _ = screen(&app);
    // Esc in the overview closes it without changing the head; * again unpins.
    typed(&mut app, "O");
    app.update(key(KeyCode::Esc));
    assert_eq!((app.view.layer, app.view.head), (2, 3));
    app.update(Msg::Resize {
        width: 120,
        height: 40,
    });
    // Head 4 of layer 2 is not the pinned one: * pins it instead.
    press(&mut app, &[KeyCode::Left]);
    assert_eq!((app.view.layer, app.view.head), (1, 3));
    typed(&mut app, "*");
    assert_eq!(
        app.present.pin,
        Some((1, 3)),
        "another head: pinned instead"
    );
    typed(&mut app, "*");
    assert_eq!(app.present.pin, None);
}

/// `render --task` takes the probes view's choices as tours name them: the seven tasks
/// and `ast` (AST-Probe); the kebab-case spellings it took before still work; anything
/// else is refused by the parser with the choices listed.
#[test]
fn render_task_takes_ast_like_tours() {
    use clap::Parser as _;
    use codescope::cli::{Cli, Command};
    use codescope::tui::app::PanelTask;
    let scene = |task: &str| -> Result<Scene, String> {
        let cli = Cli::try_parse_from([
            "codescope",
            "render",
            "f.py",
            "--view",
            "probes",
            "--task",
            task,
        ])
        .map_err(|e| e.to_string())?;
        match cli.command {
            Some(Command::Render(args)) => Ok(codescope::commands::render::scene_of(&args)),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(scene("ast").unwrap().task.as_deref(), Some("ast"));
    assert_eq!(
        scene("siblings_id").unwrap().task.as_deref(),
        Some("siblings_id")
    );
    assert_eq!(
        scene("siblings-id").unwrap().task.as_deref(),
        Some("siblings_id")
    );
    assert_eq!(scene("dfg").unwrap().task.as_deref(), Some("dfg"));
    let e = scene("asts").unwrap_err();
    assert!(
        e.contains("asts") && e.contains("category") && e.contains("ast"),
        "{e}"
    );
    // The scene puts the panel on AST-Probe and asks for an AST-Probe job, as a tour
    // step with `task = "ast"` does.
    let mut app = ready(SAMPLE, 120, 40);
    let (fx, errors) = app.apply_scene(&scene("ast").unwrap());
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(app.probe.task, PanelTask::Ast);
    assert_eq!(probe_job(&fx).map(|j| j.task), Some(PanelTask::Ast));
}

/// The ablation and lens figures are slide grade too (a causal model: the tiny Llama),
/// in both themes, and their PNGs decode at 1920 px.
#[test]
fn the_ablation_and_lens_figures_are_slide_grade() {
    let mut app = ready_decoder("tiny_llama", SAMPLE, 120, 40, theme(ColorMode::TrueColor));
    press(&mut app, &[KeyCode::Char('7'), KeyCode::Char('Y')]);
    let view = codescope::tui::figures::figure_data(&app).unwrap();
    for light in [false, true] {
        let opts = FigureOptions {
            light,
            ..FigureOptions::default()
        };
        for kind in [Kind::Ablation, Kind::Lens] {
            let f = figure::render(kind, &view, &opts).unwrap();
            assert_eq!(f, figure::render(kind, &view, &opts).unwrap(), "{kind:?}");
            check_slide_grade(kind, &f.svg, true);
            let pm = resvg::tiny_skia::Pixmap::decode_png(&png::render(&f).unwrap()).unwrap();
            assert_eq!(pm.width(), 1920, "{kind:?}");
        }
    }
    // Without them: a one-line reason.
    let plain = ready(SAMPLE, 120, 40);
    let v = codescope::tui::figures::figure_data(&plain).unwrap();
    for kind in [Kind::Ablation, Kind::Lens] {
        let e = figure::render(kind, &v, &FigureOptions::default()).unwrap_err();
        assert!(e.to_string().contains("was not"), "{e}");
    }
}
