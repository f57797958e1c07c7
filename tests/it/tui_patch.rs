//! The explorer's patch view (`A`), in process with the tiny Llama fixture and the tiny
//! encoder: `codescope patch --json`'s numbers (through the binary) in the panel, the
//! status line and the export; ← → the hidden state and the code coloured by its change;
//! a twin that does not align refused in `patch`'s words and another twin (`C`) run
//! again; an edit dropping the stale result and running it again; compare off closing
//! it; an encoder's one line; small, colourless and ASCII terminals without a panic.

use crossterm::event::KeyCode;
use ratatui::style::Color;
use serde_json::Value;

use codescope::export::figure::Kind;
use codescope::tui::app::ExportWhat;
use codescope::tui::msg::{Effect, Msg, WorkerMsg};
use codescope::tui::theme::ColorMode;

use crate::cli_sources::{fixture as fixture_dir, ok, Env};
use crate::tui_common::{
    key, on_small_screens, parsed, press, ready, ready_decoder, render, screen, serve, theme, typed,
};

/// `patch_cli`'s snippet: `rename:shuffle` aligns on the tiny Llama, `rename:neutral`
/// does not (`area` → `f1` is 4 subwords, then 2).
const CODE: &str = "def area(w, h):\n    total = w * h\n    return total\n";

/// `codescope patch FILE --rewrite R --json` through the binary.
fn patch_json(text: &str, rewrite: &str) -> Value {
    let env = Env::new();
    let f = env.root.join("a.py");
    std::fs::write(&f, text).unwrap();
    let o = env
        .cmd()
        .args(["--model", &fixture_dir("tiny_llama"), "patch"])
        .arg(&f)
        .args(["--rewrite", rewrite, "--json"])
        .output()
        .unwrap();
    serde_json::from_str(&ok(&o)).unwrap()
}

fn class<'a>(entry: &'a Value, c: &str) -> &'a Value {
    entry["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["class"] == c)
        .unwrap()
}

/// The panel's row for one `per_layer` entry of `patch --json`.
fn row_of(entry: &Value) -> String {
    let frac = |v: &Value| v.as_f64().map_or("-".to_string(), |f| format!("{f:.3}"));
    let (i, s) = (class(entry, "identifier"), class(entry, "syntactic"));
    format!(
        "{:<4}{:>9}{:>7}{:>10}{:>7}",
        format!("L{}", entry["layer"]),
        format!("{:+.3}", i["delta_bits"].as_f64().unwrap()),
        frac(&i["fraction"]),
        format!("{:+.3}", s["delta_bits"].as_f64().unwrap()),
        frac(&s["fraction"])
    )
}

/// An app on [`CODE`] with the patch view open on `rename:shuffle`.
fn patched(w: u16, h: u16, mode: ColorMode) -> codescope::tui::app::App {
    let mut app = ready_decoder("tiny_llama", CODE, w, h, theme(mode));
    // C: compare mode on with rename:shuffle; A: the patch view.
    press(&mut app, &[KeyCode::Char('C'), KeyCode::Char('A')]);
    app
}

#[test]
fn a_shows_the_patch_commands_numbers_and_arrows_pick_the_hidden_state() {
    let want = patch_json(CODE, "rename:shuffle");
    let mut app = patched(80, 24, ColorMode::TrueColor);
    let r = app.patch_shown().expect("a patch for the snippet").clone();
    let per_layer = want["per_layer"].as_array().unwrap();
    assert_eq!(r.states(), per_layer.len());
    // The same numbers as the command: its per-layer JSON, value for value.
    assert_eq!(
        serde_json::Value::Array(r.per_layer_json()),
        want["per_layer"]
    );
    // The panel at 80x24: a row per hidden state with the command's numbers.
    let s = screen(&app);
    assert!(s.contains("Patch · rename:shuffle"), "{s}");
    for entry in per_layer {
        let row = row_of(entry);
        assert!(s.contains(&row), "{row:?} not on screen\n{s}");
    }
    // The status line: the rename effect and the selected state (L1: the explorer's
    // layer 1's output).
    let rename = want["rename_bits"].as_f64().unwrap();
    let msg = app.status.message.clone().unwrap().1;
    assert!(
        msg.starts_with(&format!(
            "patch rename:shuffle: rename effect {rename:+.3} bits on {} unchanged tokens · L1 carries identifiers ",
            want["unchanged_tokens"]
        )),
        "{msg}"
    );
    assert_eq!(app.patch_layer(), Some(1));
    assert!(s.contains("patch L1 (Δ bits)"), "{s}");
    // → the next hidden state (the output), the heatmap's layer following; ← back to
    // the embeddings.
    press(&mut app, &[KeyCode::Right]);
    assert_eq!(app.patch_layer(), Some(2));
    assert_eq!(app.view.layer, 1);
    let msg = app.status.message.clone().unwrap().1;
    let out = class(&per_layer[2], "identifier");
    assert!(
        msg.contains(&format!(
            "L2 (output) carries identifiers {:.3} ({:+.3} bits)",
            out["fraction"].as_f64().unwrap(),
            out["delta_bits"].as_f64().unwrap()
        )),
        "{msg}"
    );
    // B would record this view as a tour step: the patch view, its state as the layer,
    // the twin as the rewrite (the deck test renders such a step).
    let step = app.step_here().unwrap();
    assert_eq!(step.scene.view, Some(Kind::Patch));
    assert_eq!(step.scene.layer, Some(2));
    assert_eq!(step.rewrite.as_deref(), Some("rename:shuffle"));
    press(&mut app, &[KeyCode::Right]);
    assert_eq!(app.patch_layer(), Some(2), "the last state stays");
    press(&mut app, &[KeyCode::Left, KeyCode::Left]);
    assert_eq!(app.patch_layer(), Some(0));
    assert!(screen(&app).contains("patch L0 (Δ bits)"));

    // The code is coloured by the selected state's change: at L0 every measured token
    // moves by its whole rename effect; the most changed token has a colour it lacks
    // with the view closed.
    let tokens = want["tokens"].as_array().unwrap();
    let top = tokens
        .iter()
        .max_by(|a, b| {
            let d = |t: &Value| {
                (t["patched_bits"][0].as_f64().unwrap() - t["bits_a"].as_f64().unwrap()).abs()
            };
            d(a).total_cmp(&d(b))
        })
        .unwrap();
    let idx = top["index"].as_u64().unwrap() as usize;
    let cell_of = |app: &codescope::tui::app::App, tok: &codescope::syntax::CodeToken| {
        let term = render(app);
        let buf = term.backend().buffer().clone();
        let line = CODE.lines().find(|l| {
            let start = CODE.find(l).unwrap();
            (start..start + l.len()).contains(&tok.start)
        });
        let line = line.unwrap().trim_start();
        let col = {
            let ls = CODE[..tok.start].rfind('\n').map_or(0, |p| p + 1);
            let indent = CODE[ls..].len() - CODE[ls..].trim_start().len();
            tok.start - ls - indent
        };
        let (w, h) = app.size;
        for y in 0..h {
            let row: String = (0..w).map(|x| buf[(x, y)].symbol().to_string()).collect();
            if let Some(x) = row.find(line) {
                let x = row[..x].chars().count() + col;
                return buf[(x as u16, y)].clone();
            }
        }
        panic!("{line:?} not on screen");
    };
    let tok = app.doc.syntax.as_ref().unwrap().tokens[idx].clone();
    let cell = |app: &codescope::tui::app::App| cell_of(app, &tok).bg;
    let coloured = cell(&app);
    assert!(matches!(coloured, Color::Rgb(..)), "{coloured:?}");
    let plain = cell(&ready_decoder(
        "tiny_llama",
        CODE,
        80,
        24,
        theme(ColorMode::TrueColor),
    ));
    assert_ne!(plain, coloured, "{} is coloured by its change", tok.text);
    // A renamed token (patched, not measured) is underlined.
    let renamed = want["patched_tokens"][0].as_u64().unwrap() as usize;
    let rt = app.doc.syntax.as_ref().unwrap().tokens[renamed].clone();
    assert!(
        cell_of(&app, &rt)
            .modifier
            .contains(ratatui::style::Modifier::UNDERLINED),
        "{}",
        rt.text
    );

    // x: the export of this view is the patch figure; its JSON carries the command's
    // per-layer numbers and each token's change at the selected state.
    assert_eq!(codescope::tui::figures::this_view(&app), Kind::Patch);
    let kinds = codescope::tui::figures::kinds(&app, ExportWhat::EveryPanel);
    assert!(kinds.contains(&Kind::Patch), "{kinds:?}");
    let (figs, view) =
        codescope::tui::figures::figures(&app, &[Kind::Patch], &Default::default()).unwrap();
    let svg = &figs[0].1.svg;
    assert!(svg.contains("patching from rename:shuffle"), "{svg}");
    let json = serde_json::to_value(view.unwrap()).unwrap();
    assert_eq!(json["patch"]["per_layer"], want["per_layer"]);
    assert_eq!(json["patch"]["layer"], 0);
    assert_eq!(json["patch"]["seed"], 0);
    let d = json["tokens"][idx]["patch"].as_f64().unwrap();
    let expect = top["patched_bits"][0].as_f64().unwrap() - top["bits_a"].as_f64().unwrap();
    assert!((d - expect).abs() < 2e-6, "{d} vs {expect}");
    for i in want["patched_tokens"].as_array().unwrap() {
        let i = i.as_u64().unwrap() as usize;
        assert!(json["tokens"][i]["patch"].is_null(), "renamed token {i}");
    }
    // A again closes the view.
    press(&mut app, &[KeyCode::Char('A')]);
    assert!(app.patch_shown().is_none());
    assert_eq!(app.status.message.clone().unwrap().1, "patch view off");
    assert!(!screen(&app).contains("Patch · "));
}

#[test]
fn a_twin_that_does_not_align_is_refused_and_another_twin_runs_again() {
    let mut app = ready_decoder("tiny_llama", CODE, 80, 24, theme(ColorMode::TrueColor));
    // A with compare mode off: compare on with its twin, rename:neutral, which renames
    // `area` into a name of another subword count.
    press(&mut app, &[KeyCode::Char('A')]);
    assert!(app.compare.on);
    assert!(app.patch_shown().is_none());
    let msg = app.status.message.clone().unwrap().1;
    assert!(
        msg.starts_with("patch rename:neutral: `area` → `f1` is 4 subwords in the original and 2 in the twin; patching needs names that tokenize alike"),
        "{msg}"
    );
    assert!(screen(&app).contains("patch rename:neutral: `area`"));
    // C: rename:shuffle, which aligns: patched at once.
    press(&mut app, &[KeyCode::Char('C')]);
    let r = app.patch_shown().expect("the shuffled twin is patched");
    assert_eq!(r.twin.kind.label(), "rename:shuffle");
    // Compare off closes the view with it, and on again does not reopen it.
    press(&mut app, &[KeyCode::Char('c')]);
    assert!(!app.patch.on && app.patch_shown().is_none());
    assert_eq!(
        app.status.message.clone().unwrap().1,
        "compare off; the patch view closes with it"
    );
    let left = press(&mut app, &[KeyCode::Char('c')]);
    assert!(left.iter().all(|e| !matches!(e, Effect::Patch(_))));
    assert!(app.patch_shown().is_none());
}

#[test]
fn an_edit_drops_the_stale_patch_and_runs_it_again() {
    let mut app = patched(120, 40, ColorMode::TrueColor);
    let first = app.patch_shown().unwrap().clone();
    let old_req = app.patch.req;
    // `return total + 1`: the cursor on the last token, then the editor there.
    press(&mut app, &[KeyCode::End]);
    typed(&mut app, "e");
    press(&mut app, &[KeyCode::End]);
    app.type_keys(" + 1");
    let fx = app.update(key(KeyCode::Esc));
    // Until the new analysis and its patch arrive, no stale numbers or colours.
    assert!(app.patch_shown().is_none());
    assert!(!screen(&app).contains("patch L1 (Δ bits)"));
    let fx = parsed(&mut app, fx);
    // The new analysis asks for a new patch; the old request's result, arriving late,
    // is dropped.
    let model = crate::tui_common::fixture("tiny_llama");
    let mut pending = Vec::new();
    let mut queue = fx;
    while let Some(e) = queue.pop() {
        match e {
            Effect::Patch(job) => pending.push(job),
            Effect::Analyse(job) => {
                let data =
                    std::sync::Arc::new(codescope::tui::worker::analyse_job(model, &job).unwrap());
                queue.extend(app.update(Msg::Worker(WorkerMsg::Analysed { req: job.req, data })));
            }
            other => queue.extend(serve(&mut app, vec![other])),
        }
    }
    assert_eq!(pending.len(), 1, "one patch for the edited text");
    assert!(pending[0].req > old_req);
    let late = app.update(Msg::Worker(WorkerMsg::Patched {
        req: old_req,
        result: Ok(first.clone()),
    }));
    serve(&mut app, late);
    assert!(app.patch_shown().is_none(), "the stale result is dropped");
    let job = pending.pop().unwrap();
    let fx = app.update(Msg::Worker(codescope::tui::worker::patch_job(model, &job)));
    serve(&mut app, fx);
    let r = app
        .patch_shown()
        .unwrap_or_else(|| panic!("{:?}", app.status.message));
    assert_eq!(r.tokens.len(), first.tokens.len() + 2);
    let want = patch_json(&app.doc.text, "rename:shuffle");
    assert_eq!(
        serde_json::Value::Array(r.per_layer_json()),
        want["per_layer"]
    );
    // The help lists the key.
    press(&mut app, &[KeyCode::Char('?')]);
    assert!(screen(&app).contains("patch from the twin"));
}

#[test]
fn an_encoder_says_why_and_small_screens_hold() {
    let mut app = ready(CODE, 120, 40);
    let left = press(&mut app, &[KeyCode::Char('A')]);
    assert!(left.iter().all(|e| !matches!(e, Effect::Patch(_))));
    assert!(!app.patch.on);
    let msg = app.status.message.clone().unwrap().1;
    assert_eq!(
        msg,
        "patch: patching measures a causal model's surprisal; this model is an encoder"
    );
    assert!(!screen(&app).contains("Patch · "));
    // 80x24, 60x16 and below the minimum, colourless and --ascii: no panic; where the
    // code panel is shown, the table is there.
    on_small_screens(&[KeyCode::Char('C'), KeyCode::Char('A')], |w, h, s| {
        if (w, h) == (80, 24) {
            assert!(s.contains("Patch") && s.contains("L0 "), "{w}x{h}\n{s}");
        }
    });
}

#[test]
fn snapshot_80x24() {
    let app = patched(80, 24, ColorMode::None);
    insta::assert_snapshot!("patch_view_80x24", screen(&app));
}

/// A model of many layers: the table scrolls to keep the selected state in view, saying
/// how many rows are above and below (the tiny Llama's 3 states fit; this is its patch
/// with 16 more states appended, each L3 + k a copy of L1).
#[test]
fn the_table_scrolls_with_the_selected_state() {
    use codescope::analysis::patch::{Measured, PatchResult};
    let mut app = patched(80, 24, ColorMode::None);
    let r = app.patch_shown().unwrap().clone();
    let deep = PatchResult {
        twin: r.twin.clone(),
        tokens: r.tokens.clone(),
        layers: 18,
        positions: r.positions.clone(),
        patched_tokens: r.patched_tokens.clone(),
        measured: r
            .measured
            .iter()
            .map(|m| {
                let mut patched = m.patched.clone();
                patched.extend(std::iter::repeat_n(m.patched[1], 16));
                Measured {
                    patched,
                    ..m.clone()
                }
            })
            .collect(),
    };
    let fx = app.update(Msg::Worker(WorkerMsg::Patched {
        req: app.patch.req,
        result: Ok(std::sync::Arc::new(deep)),
    }));
    serve(&mut app, fx);
    assert_eq!(app.patch_shown().unwrap().states(), 19);
    let s = screen(&app);
    assert!(
        s.contains("▸L1 ") && s.contains(" L7 ") && s.contains("↓11"),
        "{s}"
    );
    press(&mut app, &[KeyCode::Right; 11]);
    assert_eq!(app.patch_layer(), Some(12));
    let s = screen(&app);
    assert!(
        s.contains("▸L12 ") && !s.contains(" L0 ") && s.contains("↑8") && s.contains("↓3"),
        "{s}"
    );
    press(&mut app, &[KeyCode::Right; 10]);
    let s = screen(&app);
    assert!(
        s.contains("▸L18 ") && s.contains("↑11") && !s.contains("↓"),
        "{s}"
    );
}
