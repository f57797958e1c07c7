//! The explorer's input beyond the keys of `tui_app`: the mouse (click a token, a
//! heatmap cell, a head-grid cell, a probe row; the wheel), the language switch and
//! detection, the open prompt's `~` and Tab completion, and one regression test per
//! defect of issue #15.

use std::sync::Arc;

use crate::tui_common;

use codescope::syntax::Language;
use codescope::tui::app::{App, Focus, Overlay, PromptKind};
use codescope::tui::layout;
use codescope::tui::msg::{Effect, Msg, WorkerMsg};
use codescope::tui::theme::ColorMode;
use crossterm::event::{KeyCode, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use tui_common::*;

fn mouse(app: &mut App, kind: MouseEventKind, x: u16, y: u16) -> Vec<Effect> {
    let fx = app.update(Msg::Mouse(MouseEvent {
        kind,
        column: x,
        row: y,
        modifiers: KeyModifiers::NONE,
    }));
    serve(app, fx)
}

fn click(app: &mut App, x: u16, y: u16) -> Vec<Effect> {
    mouse(app, MouseEventKind::Down(MouseButton::Left), x, y)
}

/// Screen position of the first character of syntax token `i` in the code panel.
fn token_xy(app: &App, i: usize) -> (u16, u16) {
    let g = layout::geometry(app);
    let cg = layout::code_geom(app, g.code.unwrap()).unwrap();
    let (top, left) = app.view.code_scroll;
    let line = app.doc.layout.tok_line[i];
    let col = app.doc.layout.tok_col[i];
    (
        cg.inner.x + (cg.gutter + 1 + col - left) as u16,
        cg.inner.y + (line - top) as u16,
    )
}

fn token_index(app: &App, text: &str, nth: usize) -> usize {
    let syn = app.doc.syntax.as_ref().unwrap();
    syn.tokens
        .iter()
        .enumerate()
        .filter(|(_, t)| t.text == text)
        .nth(nth)
        .map(|(i, _)| i)
        .unwrap()
}

fn status_line(app: &App) -> String {
    let s = screen(app);
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len() - 2..].join("\n")
}

#[test]
fn click_a_token_selects_it() {
    for (w, h) in [(120, 40), (80, 24)] {
        let mut app = ready(SAMPLE, w, h);
        let i = token_index(&app, "path", 0);
        let (x, y) = token_xy(&app, i);
        // The token's second character: anywhere on it selects it.
        click(&mut app, x + 1, y);
        assert_eq!(app.view.cursor, i);
        assert_eq!(app.view.focus, Focus::Code);
        assert!(
            status_line(&app).contains("selected «path»"),
            "{}",
            status_line(&app)
        );
        // Past the end of a line: the nearest token on it.
        let eol = token_index(&app, "re", 0);
        let (_, y) = token_xy(&app, eol);
        let g = layout::geometry(&app);
        click(&mut app, g.code.unwrap().right() - 3, y);
        assert_eq!(app.view.cursor, eol);
    }
}

#[test]
fn click_a_heatmap_cell_selects_its_query_and_names_the_key() {
    let mut app = ready(ONE_LINE, 120, 40);
    let p = app.prepared().unwrap().clone();
    let g = layout::geometry(&app);
    let r = g.panel(Focus::Heatmap).unwrap();
    let hg = layout::heat_geom(&app, r, p.n()).unwrap();
    assert_eq!(hg.zoom, 1, "a one-line snippet shows 1:1");
    assert!(!hg.half, "and one query row per text row");
    // Row 3 (query token 3), column 1 (key token 1).
    click(&mut app, hg.inner.x + hg.gutter as u16 + 1, hg.map_y() + 3);
    let (q, k) = (p.token_attention.tokens[3], p.token_attention.tokens[1]);
    assert_eq!(app.view.cursor, q);
    let w = p.token_attention.head(0, 0)[3 * p.n() + 1];
    let want = format!(
        "attention «{}» → «{}»: {w:.3}",
        p.tokens[q].text, p.tokens[k].text
    );
    assert!(
        status_line(&app).contains(&want),
        "{want}\n{}",
        status_line(&app)
    );
    // The gutter and the labels are not cells.
    let before = app.view.cursor;
    click(&mut app, hg.inner.x + 1, hg.map_y());
    assert_eq!(app.view.cursor, before);
}

#[test]
fn click_a_head_grid_cell_opens_that_head() {
    let mut app = ready(SAMPLE, 120, 40);
    let g = layout::geometry(&app);
    let gg = layout::grid_geom(&app, g.panel(Focus::Heads).unwrap()).unwrap();
    let x = gg.cell_x(2).unwrap() + 1;
    click(&mut app, x, gg.header_y() + 1 + 3);
    assert_eq!((app.view.layer, app.view.head), (2, 3));
    assert_eq!(app.view.grid, (2, 3));
    let s = status_line(&app);
    assert!(s.contains("layer 3/3 │ head 4/4"), "{s}");
    assert!(s.contains("opened layer 3, head 4"), "{s}");
    // A layer number in the header opens the layer.
    click(&mut app, gg.cell_x(1).unwrap() + 2, gg.header_y());
    assert_eq!(app.view.layer, 1);
    // Mean over heads is left for the clicked head.
    typed(&mut app, "a");
    click(&mut app, x, gg.header_y() + 1);
    assert!(!app.view.mean);
}

#[test]
fn click_a_probe_row_shows_that_layer() {
    let mut app = ready(SAMPLE, 120, 40);
    let key = app.probe_key().unwrap();
    app.probe
        .results
        .insert(key, Arc::new(synthetic_report(3, app.probe.task.name())));
    resettle(&mut app);
    let g = layout::geometry(&app);
    let r = g.panel(Focus::Probes).unwrap();
    let rows = codescope::tui::widgets::probe_rows(&app, r).unwrap();
    let &(y, layer) = rows.iter().find(|(_, l)| *l == 3).unwrap();
    click(&mut app, r.x + 5, y);
    assert_eq!(app.view.layer, layer - 1);
    assert_eq!(app.view.focus, Focus::Probes);
}

#[test]
fn wheel_scrolls_the_panel_under_it() {
    let mut app = ready(&long_snippet(), 120, 40);
    let g = layout::geometry(&app);
    let code = g.code.unwrap();
    let line = |a: &App| a.doc.layout.tok_line[a.view.cursor];
    let l0 = line(&app);
    mouse(&mut app, MouseEventKind::ScrollDown, code.x + 5, code.y + 5);
    assert_eq!(line(&app), l0 + 3, "three lines down");
    assert!(app.view.code_scroll.0 <= line(&app));
    mouse(&mut app, MouseEventKind::ScrollUp, code.x + 5, code.y + 5);
    assert_eq!(line(&app), l0);
    let heads = g.panel(Focus::Heads).unwrap();
    mouse(
        &mut app,
        MouseEventKind::ScrollDown,
        heads.x + 6,
        heads.y + 3,
    );
    assert_eq!(app.view.head, 1);
    let probes = g.panel(Focus::Probes).unwrap();
    mouse(
        &mut app,
        MouseEventKind::ScrollDown,
        probes.x + 3,
        probes.y + 3,
    );
    assert_eq!(app.view.layer, 1);
    // Nothing under the pointer (the status bar): nothing happens.
    let before = (app.view.layer, app.view.head, app.view.cursor);
    mouse(&mut app, MouseEventKind::ScrollDown, 3, 39);
    assert_eq!(before, (app.view.layer, app.view.head, app.view.cursor));
}

#[test]
fn mouse_clicks_close_the_help_and_never_panic() {
    let mut app = ready(SAMPLE, 120, 40);
    typed(&mut app, "?");
    assert!(matches!(app.overlay, Overlay::Help));
    click(&mut app, 10, 10);
    assert!(matches!(app.overlay, Overlay::None));
    // Every cell of every size, before and after the analysis.
    for (w, h) in [(120u16, 40u16), (80, 24), (50, 12)] {
        let (mut fresh_app, _) = fresh(SAMPLE, w, h, theme(ColorMode::None));
        let mut done = ready(SAMPLE, w, h);
        for a in [&mut fresh_app, &mut done] {
            for y in (0..h).step_by(3) {
                for x in (0..w).step_by(7) {
                    mouse(a, MouseEventKind::Down(MouseButton::Left), x, y);
                    mouse(a, MouseEventKind::ScrollDown, x, y);
                }
            }
        }
    }
}

#[test]
fn language_switch_and_detection() {
    let mut app = ready(SAMPLE, 120, 40);
    assert_eq!(app.doc.lang, Language::Python);
    let fx = app.update(Msg::Key(crossterm::event::KeyEvent::new(
        KeyCode::Char('L'),
        KeyModifiers::NONE,
    )));
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::Parse(j) if j.lang == Language::Java)),
        "{fx:?}"
    );
    // The parse (off the UI thread) is a step of its own on the status line.
    assert_eq!(app.status.busy.as_deref(), Some("parsing…"));
    serve(&mut app, fx);
    assert_eq!(app.status.busy, None);
    assert_eq!(app.doc.lang, Language::Java);
    assert!(screen(&app).contains("(java)"));
    typed(&mut app, "L");
    assert_eq!(app.doc.lang, Language::Python);
    // A Java file whose name does not say: detected from its text.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("Cart.txt");
    std::fs::write(
        &p,
        "public class Cart {\n    private int n;\n    int total() {\n        return n * 2;\n    }\n}\n",
    )
    .unwrap();
    typed(&mut app, "o");
    let fx = app.type_keys(&p.display().to_string());
    serve(&mut app, fx);
    press(&mut app, &[KeyCode::Enter]);
    assert_eq!(app.doc.lang, Language::Java, "{}", status_line(&app));
    assert!(screen(&app).contains("Cart.txt (java)"));
}

#[test]
fn open_prompt_completes_with_tab_and_expands_tilde() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("pkg")).unwrap();
    std::fs::write(dir.path().join("pkg/alpha_one.py"), "a = 1\n").unwrap();
    std::fs::write(dir.path().join("pkg/alpha_two.py"), "b = 2\n").unwrap();
    std::fs::write(dir.path().join("pkg/.hidden.py"), "c = 3\n").unwrap();
    let mut app = ready(SAMPLE, 120, 40);
    typed(&mut app, "o");
    let base = dir.path().display().to_string();
    typed(&mut app, &format!("{base}/pk"));
    press(&mut app, &[KeyCode::Tab]);
    let text = |a: &App| match &a.overlay {
        Overlay::Prompt(PromptKind::Open, i) => i.text.clone(),
        _ => panic!("the open prompt closed"),
    };
    assert_eq!(
        text(&app),
        format!("{base}/pkg/"),
        "a directory gets its slash"
    );
    typed(&mut app, "a");
    press(&mut app, &[KeyCode::Tab]);
    assert_eq!(
        text(&app),
        format!("{base}/pkg/alpha_"),
        "the common prefix"
    );
    assert!(status_line(&app).contains("2 matches: alpha_one.py, alpha_two.py"));
    typed(&mut app, "t");
    press(&mut app, &[KeyCode::Tab]);
    assert_eq!(text(&app), format!("{base}/pkg/alpha_two.py"));
    typed(&mut app, "x");
    press(&mut app, &[KeyCode::Tab]);
    assert!(status_line(&app).contains("no file or directory matches"));
    press(&mut app, &[KeyCode::Backspace, KeyCode::Enter]);
    assert_eq!(app.doc.text, "b = 2\n");
    // `~` is the home directory, in completion and when reading.
    let home = std::env::var("HOME").unwrap();
    assert_eq!(
        codescope::tui::io::expand_tilde("~/x/y.py"),
        format!("{}/x/y.py", home.trim_end_matches('/'))
    );
    assert_eq!(codescope::tui::io::expand_tilde("~"), home);
    assert_eq!(codescope::tui::io::expand_tilde("a/~/b"), "a/~/b");
    match codescope::tui::io::complete("~/") {
        Msg::Completions { typed, candidates } => {
            assert_eq!(typed, "~/");
            assert!(
                candidates.iter().all(|c| c.starts_with("~/")),
                "{candidates:?}"
            );
        }
        other => panic!("{other:?}"),
    }
}

// ---- Regression tests, one per defect of issue #15. ----

/// `/subtotal⏎ /groupBy⏎` searched `subtotalgroupby`: the prompt was pre-filled.
#[test]
fn search_prompt_starts_empty() {
    let mut app = ready(SAMPLE, 120, 40);
    typed(&mut app, "/counts");
    press(&mut app, &[KeyCode::Enter]);
    typed(&mut app, "/path");
    press(&mut app, &[KeyCode::Enter]);
    assert_eq!(app.view.search.as_deref(), Some("path"));
    let t = &app.doc.syntax.as_ref().unwrap().tokens[app.view.cursor];
    assert_eq!(t.text, "path");
}

/// A failed search's message stayed after a later search succeeded.
#[test]
fn search_error_clears_on_success() {
    let mut app = ready(SAMPLE, 120, 40);
    typed(&mut app, "/zzzz");
    press(&mut app, &[KeyCode::Enter]);
    assert!(status_line(&app).contains("no token matches 'zzzz'"));
    typed(&mut app, "/path");
    press(&mut app, &[KeyCode::Enter]);
    assert!(
        !status_line(&app).contains("no token matches"),
        "{}",
        status_line(&app)
    );
}

/// After switching model the status bar showed the old model's layer and head counts
/// while the new one analysed.
#[test]
fn status_bar_counts_follow_the_new_model() {
    let mut app = ready(SAMPLE, 120, 40);
    press(&mut app, &[KeyCode::Right, KeyCode::Right, KeyCode::Down]);
    assert!(status_line(&app).contains("layer 3/3 │ head 2/4"));
    // The picker asks for another model; it arrives before its analysis.
    let fx = app.update(Msg::Worker(WorkerMsg::ModelLoaded {
        info: fixture("tiny_llama").info.clone(),
        label: "tiny_llama".into(),
        notice: None,
    }));
    let _ = fx;
    let s = status_line(&app);
    assert!(
        s.contains("tiny_llama (llama) │ layer 2/2 │ head 2/4"),
        "{s}"
    );
    assert!(
        app.prepared().is_none(),
        "the other model's analysis is not shown"
    );
}

/// Long code lines, the head detail line, the heatmap header and the picker's
/// descriptions were cut without a marker; `? help` was dropped at 80x24.
#[test]
fn clipped_text_is_marked() {
    let app = ready(SAMPLE, 80, 24);
    let s = screen(&app);
    // Line 6 of the sample (a docstring) is wider than the code panel.
    let line6 = s.lines().find(|l| l.contains("│ 6 ")).unwrap();
    assert!(line6.contains('›'), "{line6}");
    assert!(status_line(&app).contains("? help"));
    // At 80x24 with a long model name, `? help` stays and the name is clipped.
    let mut app = ready(SAMPLE, 80, 24);
    app.model.loaded.as_mut().unwrap().0 = "a-very-long-model-name-from-a-local-directory".into();
    let st = status_line(&app);
    assert!(st.contains("? help") && st.contains('…'), "{st}");
    // The head detail line at 200 columns is whole.
    let app = ready(SAMPLE, 200, 50);
    let s = screen(&app);
    let detail = s
        .lines()
        .find(|l| l.contains("L1 H1: F1 "))
        .unwrap_or_else(|| panic!("{s}"));
    let tail = detail.split("L1 H1: F1 ").nth(1).unwrap();
    // `F1 0.00 P 0.01 R 0.00`: every number there, none cut.
    let words: Vec<&str> = tail.split_whitespace().take(5).collect();
    assert!(
        words.len() == 5 && words[1] == "P" && words[3] == "R" && !detail.contains('…'),
        "{detail}"
    );
    // Zoomed in, the heatmap header says there is more to the right.
    let mut app = ready(SAMPLE, 120, 40);
    typed(&mut app, "++");
    assert!(screen(&app).contains('▸'));
    // The picker: whole descriptions where they fit, else an ellipsis.
    for (w, h, cut) in [(200u16, 50u16, false), (80, 24, true)] {
        let mut app = ready(SAMPLE, w, h);
        typed(&mut app, "M");
        let s = screen(&app);
        let row = s.lines().find(|l| l.contains("gemma3-270m")).unwrap();
        assert_eq!(row.contains('…'), cut, "{row}");
        if !cut {
            let d = codescope::model::source::PRESETS
                .iter()
                .find(|p| p.name == "gemma3-270m")
                .unwrap()
                .description;
            assert!(row.contains(d), "{row}");
        }
    }
}

/// NO_COLOR heatmap labels kept a stray slash (`windo/`).
#[test]
fn no_color_heatmap_labels_have_no_slash() {
    for (w, h) in [(120, 40), (80, 24)] {
        let app = ready_with(SAMPLE, w, h, theme(ColorMode::None));
        let g = layout::geometry(&app);
        let r = g.panel(Focus::Heatmap).unwrap();
        let p = app.prepared().unwrap();
        let hg = layout::heat_geom(&app, r, p.n()).unwrap();
        assert!(!hg.half);
        let t = render(&app);
        let buf = t.backend().buffer();
        for k in 0..hg.map_rows() as u16 {
            let lab: String = (0..hg.gutter as u16)
                .map(|x| buf[(hg.inner.x + x, hg.map_y() + k)].symbol().to_string())
                .collect();
            assert!(!lab.contains('/'), "row {k}: {lab:?}");
        }
    }
}

/// At 1:1 zoom the cursor's cell sat on the bottom-right edge.
#[test]
fn zoomed_cursor_keeps_a_margin() {
    let mut app = ready(&long_snippet(), 120, 40);
    typed(&mut app, "++++++");
    assert_eq!(app.view.effective_zoom(), 1);
    for _ in 0..30 {
        typed(&mut app, "jl");
    }
    let p = app.prepared().unwrap();
    let g = layout::geometry(&app);
    let hg = layout::heat_geom(&app, g.panel(Focus::Heatmap).unwrap(), p.n()).unwrap();
    let sel = p.pos[app.view.cursor].unwrap();
    let (r0, c0) = app.view.heat_origin;
    let vis_r = hg.px_rows.min(p.n());
    let vis_c = hg.cols_avail.min(p.n());
    assert!(
        sel > r0 && sel + 1 < r0 + vis_r,
        "row {sel} in {r0}+{vis_r}"
    );
    assert!(
        sel > c0 && sel + 1 < c0 + vis_c,
        "col {sel} in {c0}+{vis_c}"
    );
}

/// Esc after an edit quit at once and lost the edit.
#[test]
fn quitting_after_an_edit_asks_once() {
    let mut app = ready(SAMPLE, 120, 40);
    typed(&mut app, "e");
    typed(&mut app, "x = 1\n");
    press(&mut app, &[KeyCode::Esc]); // applies the edit
    assert!(app.editor.is_none() && app.doc.edited);
    let fx = press(&mut app, &[KeyCode::Esc]);
    assert!(!app.quit && fx.is_empty());
    assert!(
        status_line(&app).contains("not saved"),
        "{}",
        status_line(&app)
    );
    // Another key disarms it; then two presses quit.
    typed(&mut app, "l");
    press(&mut app, &[KeyCode::Esc]);
    assert!(!app.quit);
    press(&mut app, &[KeyCode::Esc]);
    assert!(app.quit);
    // Without an edit, one q quits.
    let mut app = ready(SAMPLE, 120, 40);
    typed(&mut app, "q");
    assert!(app.quit);
}

/// The model-choice reason was cut in the status line: the picker shows it whole (and
/// the runtime prints it on stderr when the explorer ends: `tui_e2e`).
#[test]
fn model_choice_reason_is_shown_whole() {
    let mut app = ready(SAMPLE, 120, 40);
    let why = "model minilm: CodeBERT is not cached and the hub is unreachable: connection refused (os error 111)";
    app.model.notice = Some(why.into());
    typed(&mut app, "M");
    assert!(screen(&app).contains(why), "{}", screen(&app));
}

/// "analysing: layer 18/18" stayed for seconds while the LM head ran: the LM head is
/// a step of its own in the worker's progress.
#[test]
fn worker_reports_the_lm_head() {
    use codescope::analysis::AnalyzeOptions;
    use codescope::tui::msg::AnalyseJob;
    use codescope::tui::worker::Worker;
    use std::sync::mpsc;
    use std::time::Duration;
    let (tx, rx) = mpsc::channel();
    let cache = tempfile::tempdir().unwrap();
    let w = Worker::spawn(cache.path().into(), move |m| {
        let _ = tx.send(m);
    });
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny_llama");
    w.load(
        Some(dir.display().to_string()),
        None,
        codescope::model::Stack::Encoder,
    );
    w.analyse(AnalyseJob {
        req: 1,
        syntax: Arc::new(codescope::analysis::parse(SHORT, Language::Python).unwrap()),
        opts: AnalyzeOptions::default(),
        surprisal: true,
        base: None,
    });
    let mut progress = Vec::new();
    loop {
        match rx
            .recv_timeout(Duration::from_secs(60))
            .expect("worker answers")
        {
            WorkerMsg::Progress { req: 1, text } => progress.push(text),
            WorkerMsg::Analysed { data, .. } => {
                assert!(data.surprisal.is_some());
                break;
            }
            WorkerMsg::AnalyseFailed { error, .. } | WorkerMsg::ModelFailed { error, .. } => {
                panic!("{error}")
            }
            _ => {}
        }
    }
    assert!(
        progress.iter().any(|t| t == "analysing: layer 2/2"),
        "{progress:?}"
    );
    let last = progress.last().unwrap();
    assert!(last.starts_with("analysing: LM head"), "{progress:?}");
    // Nothing after the result.
    std::thread::sleep(Duration::from_millis(400));
    assert!(rx.try_recv().is_err());
    w.join();
}

/// Hardening: a paste arrived as keystrokes, each pasted newline auto-indented (a
/// function became a parse error, 100 KB became 9 MB). A bracketed paste is one edit:
/// verbatim, CRLF / CR made LF, control characters dropped, no auto-indent.
#[test]
fn a_paste_is_one_verbatim_edit() {
    let mut app = ready(SAMPLE, 120, 40);
    typed(&mut app, "e");
    let ed = app.editor.as_ref().unwrap();
    let before = ed.text();
    let fx = app.update(Msg::Paste(
        "def scale(v, k):\r\n    if k:\r\n\treturn v * k\r    return v\x07\x1b[31m\n".into(),
    ));
    assert!(fx.is_empty(), "a paste only edits");
    let func = "def scale(v, k):\n    if k:\n\treturn v * k\n    return v[31m\n";
    let ed = app.editor.as_ref().unwrap();
    assert_eq!(ed.text(), format!("{func}{before}"));
    assert_eq!((ed.row, ed.col), (4, 0), "the cursor after the pasted text");
    let s = status_line(&app);
    assert!(
        s.contains("pasted 58 bytes, 4 lines (2 control characters dropped)"),
        "{s}"
    );
    // Pasted inside an indented line: still no indentation added.
    let mut app = ready(ONE_LINE, 120, 40);
    typed(&mut app, "e");
    press(&mut app, &[KeyCode::End]);
    app.update(Msg::Paste("\n    x = 1\ny = 2".into()));
    press(&mut app, &[KeyCode::Esc]);
    assert_eq!(
        app.doc.text,
        "total = price * (1 + rate)\n    x = 1\ny = 2\n"
    );
}

/// A paste that would take the snippet over the input limit is refused whole, with a
/// message; the editor keeps its text. Outside the editor and prompts a paste is not a
/// string of commands.
#[test]
fn a_paste_over_the_limit_or_outside_an_input_changes_nothing() {
    let mut app = ready(SAMPLE, 120, 40);
    let view = screen(&app);
    let fx = app.update(Msg::Paste("qqq Mxo e".into()));
    assert!(fx.is_empty() && !app.quit && app.editor.is_none());
    assert!(matches!(app.overlay, Overlay::None));
    assert!(status_line(&app).contains("paste ignored: press e"));
    assert_eq!(screen(&app).lines().next(), view.lines().next());

    typed(&mut app, "e");
    let before = app.editor.as_ref().unwrap().text();
    let big = "x = 1\n".repeat(codescope::input::MAX_INPUT_BYTES / 6);
    app.update(Msg::Paste(big));
    let ed = app.editor.as_ref().unwrap();
    assert_eq!(ed.text(), before, "nothing lost, nothing added");
    let s = status_line(&app);
    assert!(s.contains("paste refused"), "{s}");
    // Under the limit it goes in.
    app.update(Msg::Paste("y = 2\n".into()));
    assert_eq!(
        app.editor.as_ref().unwrap().text(),
        format!("y = 2\n{before}")
    );
}

/// A paste into a one-line prompt is one line: a trailing line break ends the copied
/// line, other breaks and tabs are spaces.
#[test]
fn a_paste_into_a_prompt_is_one_line() {
    let mut app = ready(SAMPLE, 120, 40);
    typed(&mut app, "/");
    app.update(Msg::Paste("word\tcounts\n".into()));
    match &app.overlay {
        Overlay::Prompt(PromptKind::Search, input) => assert_eq!(input.text, "word counts"),
        other => panic!("{other:?}"),
    }
}

/// Job control: Ctrl-Z is a key in raw mode; it and SIGTSTP ask the runtime to
/// suspend (from the editor too, which stays open); SIGCONT to set the terminal up
/// again.
#[test]
fn ctrl_z_and_sigtstp_suspend() {
    let mut app = ready(SAMPLE, 120, 40);
    assert!(matches!(app.update(ctrl('z'))[..], [Effect::Suspend]));
    assert!(matches!(app.update(Msg::Suspend)[..], [Effect::Suspend]));
    assert!(matches!(app.update(Msg::Continued)[..], [Effect::Resume]));
    typed(&mut app, "e");
    assert!(matches!(app.update(ctrl('z'))[..], [Effect::Suspend]));
    assert!(app.editor.is_some() && !app.quit);
}

/// `o` after an applied edit opened the prompt at once, and the new file replaced the
/// edit without a word (q asked): now the first `o` says so, the second opens.
#[test]
fn opening_another_file_after_an_edit_asks_once() {
    use codescope::tui::app::{Overlay, PromptKind};
    let mut app = ready(SAMPLE, 120, 40);
    typed(&mut app, "e");
    typed(&mut app, "x = 1\n");
    press(&mut app, &[KeyCode::Esc]); // applies the edit
    assert!(app.doc.edited);
    typed(&mut app, "o");
    assert!(matches!(app.overlay, Overlay::None));
    assert!(
        status_line(&app).contains("press o again"),
        "{}",
        status_line(&app)
    );
    typed(&mut app, "o");
    assert!(matches!(app.overlay, Overlay::Prompt(PromptKind::Open, _)));
    // Without an edit, one o opens the prompt.
    let mut app = ready(SAMPLE, 120, 40);
    typed(&mut app, "o");
    assert!(matches!(app.overlay, Overlay::Prompt(PromptKind::Open, _)));
}
