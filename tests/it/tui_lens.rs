//! The explorer's logit lens (`Y`), in process with the tiny Llama fixture and the tiny
//! encoder: the overlay of layers by tokens with `codescope lens`'s numbers, the
//! selected token's details and decided layers, the keys, an edit running it again, an
//! encoder's one line, small / ASCII / colourless terminals, the figures (lens and
//! screen) and scenes naming the view.

use crossterm::event::KeyCode;

use codescope::analysis::causal;
use codescope::export::figure::Kind;
use codescope::tui::app::{ExportWhat, Overlay};
use codescope::tui::theme::ColorMode;

use crate::tui_common::{
    fixture, key, on_small_screens, parsed, press, ready, ready_decoder, screen, serve, theme,
    typed, SHORT,
};

/// `codescope lens` on the same snippet and model.
fn reference(app: &codescope::tui::app::App) -> causal::LensResult {
    causal::lens(
        fixture("tiny_llama"),
        &app.doc.text,
        codescope::syntax::Language::Python,
        app.view.mode,
    )
    .unwrap()
}

#[test]
fn y_opens_the_lens_with_the_commands_numbers() {
    let mut app = ready_decoder("tiny_llama", SHORT, 120, 40, theme(ColorMode::TrueColor));
    press(&mut app, &[KeyCode::Char('Y')]);
    assert!(matches!(app.overlay, Overlay::Lens));
    let d = app.lens_shown().expect("a lens for the snippet").clone();
    let want = reference(&app);
    assert_eq!(d.lens.cells, want.cells, "the lens is `codescope lens`'s");
    let msg = app.status.message.clone().unwrap().1;
    assert!(msg.starts_with("logit lens: "), "{msg}");
    let layers = want.cells.len();
    let s = screen(&app);
    assert!(s.contains("Logit lens"), "{s}");
    assert!(
        s.contains("L0 ") && s.contains(&format!("L{}", layers - 1)),
        "{s}"
    );
    assert!(s.contains("identifiers decided at: "), "{s}");
    // The selected cell's line is the output layer's numbers for the selected token.
    let t = app.lens.token;
    let c = want.token_cell(layers - 1, t).unwrap();
    let line = format!(
        "L{} (output): top-1 «{}» · p(",
        layers - 1,
        codescope::tui::widgets::lens_word(&d.word(c.top), false)
    );
    assert!(s.contains(&line), "{line}\n{s}");
    assert!(
        s.contains(&format!("{:.3} · rank {}", c.prob, c.rank)),
        "{s}"
    );
    let decided = match want.decided_at(t) {
        Some(l) => format!("is decided at L{l}"),
        None => "is never the top guess".into(),
    };
    assert!(s.contains(&decided), "{s}");
    // The side list: one row per layer with p and rank.
    for l in 0..layers {
        if let Some(c) = want.token_cell(l, t) {
            assert!(
                s.contains(&format!("{:>7.3}{:>7}", c.prob, c.rank)),
                "L{l}\n{s}"
            );
        }
    }
    // → the next token (and the explorer's cursor with it); ↑ a layer up; Esc closes.
    let before = app.lens.token;
    press(&mut app, &[KeyCode::Right]);
    assert!(app.lens.token > before);
    let syn = app.doc.syntax.clone().unwrap();
    assert_eq!(
        syn.tokens[app.view.cursor].start,
        d.lens.tokens[app.lens.token].start
    );
    press(&mut app, &[KeyCode::Up]);
    assert_eq!(app.lens.layer, layers - 2);
    assert!(screen(&app).contains(&format!("L{}: top-1", layers - 2)));
    press(&mut app, &[KeyCode::Char('w')]);
    assert_eq!(
        d.lens.tokens[app.lens.token].coarse,
        codescope::syntax::Coarse::Identifier
    );
    // The figures: the lens, and the screen as it shows it; the JSON's lens.
    assert_eq!(codescope::tui::figures::this_view(&app), Kind::Lens);
    let kinds = codescope::tui::figures::kinds(&app, ExportWhat::EveryPanel);
    assert!(kinds.contains(&Kind::Lens), "{kinds:?}");
    let (figs, view) =
        codescope::tui::figures::figures(&app, &[Kind::Lens, Kind::Screen], &Default::default())
            .unwrap();
    assert!(
        figs[0].1.svg.contains("logit lens: each layer"),
        "{}",
        figs[0].1.svg
    );
    let shot =
        codescope::export::figure::screen::text(&codescope::tui::figures::screen_buffer(&app));
    assert!(shot.contains("Logit lens"), "{shot}");
    assert!(
        figs[1].1.svg.contains(">Logit<") || figs[1].1.svg.contains("Logit lens"),
        "{}",
        &figs[1].1.svg[..3000]
    );
    let json = serde_json::to_value(view.unwrap()).unwrap();
    assert_eq!(json["lens"]["layers"], layers);
    let sel = json["lens"]["selected"].as_u64().unwrap() as usize;
    assert_eq!(
        json["lens"]["tokens"][sel]["text"],
        d.lens.tokens[app.lens.token].text.as_str()
    );
    // x: the export menu on the lens view.
    press(&mut app, &[KeyCode::Char('x')]);
    assert!(matches!(app.overlay, Overlay::ExportMenu(Kind::Lens)));
    press(&mut app, &[KeyCode::Esc, KeyCode::Char('Y')]);
    // h, l and b move as ← → and back to an identifier.
    let at = app.lens.token;
    press(&mut app, &[KeyCode::Char('l'), KeyCode::Char('h')]);
    assert_eq!(app.lens.token, at);
    press(&mut app, &[KeyCode::Char('l'), KeyCode::Char('b')]);
    assert_eq!(
        d.lens.tokens[app.lens.token].coarse,
        codescope::syntax::Coarse::Identifier
    );
    // A scene of the view: what `B` records, and what a tour step opens.
    assert_eq!(app.scene_here().view, Some(Kind::Lens));
    press(&mut app, &[KeyCode::Esc]);
    assert!(matches!(app.overlay, Overlay::None));
    let scene = codescope::present::Scene {
        view: Some(Kind::Lens),
        ..Default::default()
    };
    let (fx, errors) = app.apply_scene(&scene);
    assert!(errors.is_empty(), "{errors:?}");
    serve(&mut app, fx);
    assert!(matches!(app.overlay, Overlay::Lens));
    // The help names the key.
    press(&mut app, &[KeyCode::Esc, KeyCode::Char('?')]);
    assert!(screen(&app).contains("logit lens (causal models)"));
}

#[test]
fn an_edit_runs_the_lens_again() {
    let mut app = ready_decoder("tiny_llama", SHORT, 120, 40, theme(ColorMode::TrueColor));
    press(&mut app, &[KeyCode::Char('Y'), KeyCode::Esc]);
    let first = app.lens_shown().unwrap().lens.tokens.len();
    typed(&mut app, "e");
    press(&mut app, &[KeyCode::End]);
    app.type_keys(" + 1");
    let fx = app.update(key(KeyCode::Esc));
    assert!(app.lens_shown().is_none(), "no stale lens");
    let fx = parsed(&mut app, fx);
    serve(&mut app, fx);
    press(&mut app, &[KeyCode::Char('Y')]);
    let d = app.lens_shown().expect("the edited text's lens");
    assert_eq!(d.lens.tokens.len(), first + 2);
    assert_eq!(d.lens.cells, reference(&app).cells);
}

#[test]
fn an_encoder_says_why_and_small_screens_hold() {
    let mut app = ready(SHORT, 120, 40);
    press(&mut app, &[KeyCode::Char('Y')]);
    assert!(matches!(app.overlay, Overlay::None));
    let msg = app.status.message.clone().unwrap().1;
    assert!(
        msg.contains("is an encoder; the lens reads a causal model's LM head"),
        "{msg}"
    );
    on_small_screens(
        &[
            KeyCode::Char('Y'),
            KeyCode::Right,
            KeyCode::Down,
            KeyCode::End,
        ],
        |w, h, s| {
            if w >= 60 {
                assert!(s.contains("Logit lens"), "{w}x{h}:\n{s}");
            }
        },
    );
}

/// A right guess is bold, an identifier's decided cell underlined (a lens whose cells
/// say so: the tiny model guesses nothing right).
#[test]
fn right_guesses_are_bold_and_decided_cells_underlined() {
    use codescope::tui::msg::{LensData, Msg, WorkerMsg};
    use ratatui::style::Modifier;
    let mut app = ready_decoder("tiny_llama", SHORT, 120, 40, theme(ColorMode::TrueColor));
    press(&mut app, &[KeyCode::Char('Y')]);
    let mut lens = reference(&app);
    let cols = codescope::tui::app::lens::columns(app.lens_shown().unwrap());
    // The second column, an identifier (`area`): its first subword the top guess from
    // layer 1 on.
    let t = cols[1];
    assert_eq!(lens.tokens[t].text, "area");
    let pos = lens.first_subword[t].unwrap() - 1;
    for l in 1..lens.cells.len() {
        let c = lens.cells[l][pos].as_mut().unwrap();
        c.rank = 1;
        c.top = lens.ids[pos + 1];
    }
    let words = app.lens_shown().unwrap().words.clone();
    let req = app.lens.req;
    app.update(Msg::Worker(WorkerMsg::Lensed {
        req,
        result: Ok(std::sync::Arc::new(LensData { lens, words })),
    }));
    assert_eq!(app.lens_shown().unwrap().lens.decided_at(t), Some(1));
    let buf = crate::tui_common::render(&app).backend().buffer().clone();
    // Inside the overlay's frame: the header row, then L0, L1, …; 4 label columns, then
    // 7 per token.
    let cell = |layer: u16, k: u16| buf[(1 + 4 + 7 * k, 2 + layer)].clone();
    assert!(!cell(0, 1).modifier.contains(Modifier::BOLD));
    assert!(cell(1, 1)
        .modifier
        .contains(Modifier::BOLD | Modifier::UNDERLINED));
    assert!(cell(2, 1).modifier.contains(Modifier::BOLD));
    assert!(!cell(2, 1).modifier.contains(Modifier::UNDERLINED));
    assert!(screen(&app).contains("area L1"), "{}", screen(&app));
}

/// NO_COLOR: each cell starts with the shade glyph of `sqrt p(actual)`.
#[test]
fn without_colour_cells_start_with_a_shade_glyph() {
    let mut app = ready_decoder("tiny_llama", SHORT, 120, 40, theme(ColorMode::None));
    press(&mut app, &[KeyCode::Char('Y')]);
    let d = app.lens_shown().unwrap().clone();
    let cols = codescope::tui::app::lens::columns(&d);
    let buf = crate::tui_common::render(&app).backend().buffer().clone();
    for (k, &t) in cols.iter().enumerate().take(5) {
        let c = d.lens.token_cell(0, t).unwrap();
        let want = codescope::tui::theme::Theme::shade(c.prob.sqrt()).to_string();
        assert_eq!(buf[(5 + 7 * k as u16, 2)].symbol(), want, "token {k}");
    }
}
