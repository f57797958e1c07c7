//! The explorer's knockout mode (`K`), in process with the tiny Llama fixture and the
//! tiny encoder: the cycle of edge sets and off, the status line against the control, the
//! code coloured by each token's change (and not once the text changed), an edit
//! re-running it, NO_COLOR's bold + underline, an encoder's 1 − cos.

use crossterm::event::KeyCode;
use ratatui::style::{Color, Modifier};

use codescope::tui::msg::Effect;
use codescope::tui::theme::ColorMode;

use crate::tui_common::{
    key, parsed, press, ready, ready_decoder, render, screen, serve, theme, typed, SHORT,
};

/// The screen cell showing the first character of code token `t` (found through its
/// source line, which appears once on screen).
fn token_cell(
    app: &codescope::tui::app::App,
    t: &codescope::syntax::CodeToken,
) -> ratatui::buffer::Cell {
    let src = &app.doc.text;
    let line_start = src[..t.start].rfind('\n').map_or(0, |p| p + 1);
    let line_end = src[t.start..].find('\n').map_or(src.len(), |p| t.start + p);
    let line = src[line_start..line_end].trim_start();
    let indent = src[line_start..line_end].len() - line.len();
    let col = t.start - line_start - indent;
    let term = render(app);
    let buf = term.backend().buffer().clone();
    let (w, h) = app.size;
    for y in 0..h {
        let row: String = (0..w).map(|x| buf[(x, y)].symbol().to_string()).collect();
        if let Some(x) = row.find(line) {
            let x = row[..x].chars().count() + col;
            return buf[(x as u16, y)].clone();
        }
    }
    panic!("{line:?} not on screen");
}

/// The token with the largest change.
fn most_changed(r: &codescope::analysis::causal::KnockoutResult) -> usize {
    (0..r.delta.len())
        .max_by(|&a, &b| {
            let f = |i: usize| r.delta[i].map_or(0.0, f64::abs);
            f(a).total_cmp(&f(b))
        })
        .unwrap()
}

#[test]
fn k_cycles_the_edge_sets_and_colours_the_code_by_the_change() {
    let mut app = ready_decoder("tiny_llama", SHORT, 120, 40, theme(ColorMode::TrueColor));
    press(&mut app, &[KeyCode::Char('K')]);
    let msg = app.status.message.clone().unwrap().1;
    assert!(
        msg.starts_with("knockout syn-id (")
            && msg.contains("identifiers")
            && msg.contains("control"),
        "{msg}"
    );
    let r = app
        .knockout_shown()
        .expect("a knockout for the text on screen");
    assert_eq!(r.edges, "syn-id");
    assert_eq!(r.control_draws, 20);
    let s = screen(&app);
    assert!(s.contains("knockout syn-id (Δ bits)"), "{s}");
    let r = app.knockout_shown().unwrap().clone();
    let top = &r.tokens[most_changed(&r)];
    let after = token_cell(&app, top).bg;
    // The same token without the knockout (the mode off again after a full cycle).
    let plain = {
        let mut off = ready_decoder("tiny_llama", SHORT, 120, 40, theme(ColorMode::TrueColor));
        off.view.cursor = app.view.cursor;
        token_cell(&off, top).bg
    };
    assert_ne!(plain, after, "{} is coloured by its change", top.text);
    assert!(matches!(after, Color::Rgb(..)));
    for set in ["id-syn", "syn-syn", "id-id", "ast_motif", "dfg"] {
        press(&mut app, &[KeyCode::Char('K')]);
        assert_eq!(
            app.knockout_shown().map(|r| r.edges.clone()).as_deref(),
            Some(set)
        );
    }
    press(&mut app, &[KeyCode::Char('K')]);
    assert!(app.knockout_shown().is_none());
    assert_eq!(app.status.message.clone().unwrap().1, "knockout off");
    assert!(!screen(&app).contains("· knockout"));
    // What `x` exports while the mode is on: the knockout figure and, in the JSON, each
    // token's change and the summary.
    press(&mut app, &[KeyCode::Char('K')]); // syn-id again
    use codescope::export::figure::Kind;
    use codescope::tui::app::ExportWhat;
    let kinds = codescope::tui::figures::kinds(&app, ExportWhat::EveryPanel);
    assert!(kinds.contains(&Kind::Knockout), "{kinds:?}");
    let (figs, view) =
        codescope::tui::figures::figures(&app, &[Kind::Knockout], &Default::default()).unwrap();
    assert!(figs[0].1.svg.contains("knockout syn-id: "));
    let json = serde_json::to_value(view.unwrap()).unwrap();
    assert_eq!(json["knockout"]["edges"], "syn-id");
    assert_eq!(json["knockout"]["summary"][0]["class"], "identifier");
    assert!(
        json["tokens"][1].get("knockout").is_some(),
        "{}",
        json["tokens"][1]
    );
    press(&mut app, &[KeyCode::Char('K'); 6]);
    assert!(app.knockout_shown().is_none());
    // The help lists the key.
    press(&mut app, &[KeyCode::Char('?')]);
    assert!(screen(&app).contains("knockout: next edge set"));
}

#[test]
fn an_edit_runs_the_knockout_again_on_the_new_text() {
    let mut app = ready_decoder("tiny_llama", SHORT, 120, 40, theme(ColorMode::TrueColor));
    press(&mut app, &[KeyCode::Char('K')]);
    let first = app.knockout_shown().unwrap().tokens.len();
    typed(&mut app, "e");
    press(&mut app, &[KeyCode::End]);
    app.type_keys(" + 1");
    let fx = app.update(key(KeyCode::Esc));
    // Until the new analysis and its knockout arrive, no stale colours.
    assert!(app.knockout_shown().is_none());
    let fx = parsed(&mut app, fx);
    let left = serve(&mut app, fx);
    assert!(left.iter().all(|e| !matches!(e, Effect::Knockout(_))));
    let r = app.knockout_shown().expect("re-run on the edited text");
    assert_eq!(r.edges, "syn-id");
    assert_eq!(r.tokens.len(), first + 2);
}

#[test]
fn without_colour_and_on_an_encoder() {
    let mut app = ready_decoder("tiny_llama", SHORT, 120, 40, theme(ColorMode::None));
    press(&mut app, &[KeyCode::Char('K')]);
    let r = app.knockout_shown().unwrap().clone();
    let i = most_changed(&r);
    let cell = token_cell(&app, &r.tokens[i]);
    let want = if r.delta[i].unwrap() > 0.0 {
        Modifier::BOLD | Modifier::UNDERLINED
    } else {
        Modifier::ITALIC | Modifier::UNDERLINED
    };
    assert!(
        cell.modifier.contains(want),
        "{}: {:?}",
        r.tokens[i].text,
        cell.modifier
    );

    // The tiny encoder: 1 − cos.
    let mut app = ready(SHORT, 120, 40);
    press(&mut app, &[KeyCode::Char('K')]);
    let msg = app.status.message.clone().unwrap().1;
    assert!(msg.contains("1-cos"), "{msg}");
    assert!(screen(&app).contains("knockout syn-id (1 − cos)"));
}
