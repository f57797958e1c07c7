//! The head grid's ablation scores (`7`, `8`), in process with the tiny Llama fixture and
//! the tiny encoder: the worker's job asked for once, the cells filling in head by head
//! with the status line counting, the numbers `codescope ablate` computes, kept across
//! score switches, a new snippet superseding the run under way, an encoder's 1 − cos,
//! small and ASCII terminals, and the ablation figure with its JSON.

use crossterm::event::KeyCode;

use codescope::analysis::causal;
use codescope::export::figure::Kind;
use codescope::tui::app::ExportWhat;
use codescope::tui::data::Metric;
use codescope::tui::msg::{Effect, Msg, WorkerMsg};
use codescope::tui::theme::ColorMode;

use crate::tui_common::{
    ablation_msgs, fixture, key, on_small_screens, parsed, press, ready, ready_decoder, screen,
    serve, theme, typed, SHORT,
};

/// How many heads of `m`'s grid have a value.
fn filled(app: &codescope::tui::app::App, m: Metric) -> usize {
    app.grid_values(m)
        .unwrap_or_default()
        .iter()
        .flatten()
        .filter(|v| v.is_some())
        .count()
}

#[test]
fn seven_streams_each_heads_ablation_into_the_grid() {
    let mut app = ready_decoder("tiny_llama", SHORT, 120, 40, theme(ColorMode::TrueColor));
    let fx = app.update(key(KeyCode::Char('7')));
    assert_eq!(app.view.metric, Metric::AblationId);
    let jobs: Vec<_> = fx
        .into_iter()
        .filter_map(|e| match e {
            Effect::Ablate(j) => Some(j),
            _ => None,
        })
        .collect();
    assert_eq!(jobs.len(), 1, "one ablation job");
    let m = fixture("tiny_llama");
    let total = m.info.layers * m.info.heads;
    assert!(total >= 2);
    let msg = app.status.message.clone().unwrap().1;
    assert_eq!(msg, format!("ablation: zeroing each of {total} heads…"));
    let msgs = ablation_msgs(m, &jobs[0]);
    assert_eq!(msgs.len(), total, "one report per head");
    // The first head in: one cell filled, the status line and the footer count.
    let mut msgs = msgs.into_iter();
    app.update(Msg::Worker(msgs.next().unwrap()));
    assert_eq!(filled(&app, Metric::AblationId), 1);
    let msg = app.status.message.clone().unwrap().1;
    assert_eq!(msg, format!("ablation: 1/{total} heads zeroed…"));
    let s = screen(&app);
    assert!(s.contains(&format!("1/{total} heads")), "{s}");
    assert!(s.contains("Heads · ablation: ids [s]"), "{s}");
    for w in msgs {
        app.update(Msg::Worker(w));
    }
    let msg = app.status.message.clone().unwrap().1;
    assert!(
        msg.starts_with(&format!(
            "ablation: {total} heads zeroed (Δ bits); identifiers suffer most from L"
        )),
        "{msg}"
    );
    // The numbers are `codescope ablate`'s (zero ablation of the same snippet).
    let p = causal::Prepared::new(
        m,
        SHORT,
        codescope::syntax::Language::Python,
        app.view.mode,
        true,
    )
    .unwrap();
    let want = causal::ablate(
        m,
        &p,
        codescope::model::AblationMode::Zero,
        &mut |_, _, _| false,
    )
    .unwrap();
    let id = app.grid_values(Metric::AblationId).unwrap();
    let syn = app.grid_values(Metric::AblationSyn).unwrap();
    for (l, row) in want.grid.iter().enumerate() {
        for (h, e) in row.iter().enumerate() {
            assert_eq!(id[l][h], e.identifier, "L{} H{}", l + 1, h + 1);
            assert_eq!(syn[l][h], e.syntactic, "L{} H{}", l + 1, h + 1);
        }
    }
    // The cell under the cursor in the footer, to three places.
    let e = want.grid[app.view.layer][app.view.head];
    let s = screen(&app);
    assert!(
        s.contains(&format!("identifiers {:+.3}", e.identifier.unwrap()))
            && s.contains(&format!("syntactic {:+.3} Δ bits", e.syntactic.unwrap())),
        "{s}"
    );
    // 8 shows the syntactic tokens' effect, and neither 8 nor 1 then 7 runs it again.
    let fx = app.update(key(KeyCode::Char('8')));
    assert!(!fx.iter().any(|e| matches!(e, Effect::Ablate(_))));
    assert!(screen(&app).contains("ablation: syn"));
    app.update(key(KeyCode::Char('1')));
    let fx = app.update(key(KeyCode::Char('7')));
    assert!(!fx.iter().any(|e| matches!(e, Effect::Ablate(_))));
    assert_eq!(filled(&app, Metric::AblationId), total);
    // `s` cycles through both ablation scores after the six others.
    app.view.metric = Metric::F1DfgRefined;
    press(&mut app, &[KeyCode::Char('s')]);
    assert_eq!(app.view.metric, Metric::AblationId);
    press(&mut app, &[KeyCode::Char('s')]);
    assert_eq!(app.view.metric, Metric::AblationSyn);
    // What `x` exports on the head grid: the ablation figure and, in the JSON, both grids.
    app.view.focus = codescope::tui::app::Focus::Heads;
    assert_eq!(codescope::tui::figures::this_view(&app), Kind::Ablation);
    let kinds = codescope::tui::figures::kinds(&app, ExportWhat::EveryPanel);
    assert!(kinds.contains(&Kind::Ablation), "{kinds:?}");
    let (figs, view) =
        codescope::tui::figures::figures(&app, &[Kind::Ablation], &Default::default()).unwrap();
    let svg = &figs[0].1.svg;
    assert!(
        svg.contains("ablation effect on identifiers")
            && svg.contains("ablation effect on syntactic tokens"),
        "{svg}"
    );
    let json = serde_json::to_value(view.unwrap()).unwrap();
    assert_eq!(json["ablation"]["measure"], "bits");
    assert_eq!(json["ablation"]["heads_done"], total);
    let v = json["ablation"]["identifier"][0][0].as_f64().unwrap();
    assert!((v - want.grid[0][0].identifier.unwrap()).abs() < 1e-12);
    // The help names the keys.
    press(&mut app, &[KeyCode::Char('?')]);
    assert!(screen(&app).contains("s 1-8"));
}

#[test]
fn a_new_snippet_supersedes_the_ablation_under_way() {
    let mut app = ready_decoder("tiny_llama", SHORT, 120, 40, theme(ColorMode::TrueColor));
    let fx = app.update(key(KeyCode::Char('7')));
    let Some(Effect::Ablate(old)) = fx.into_iter().find(|e| matches!(e, Effect::Ablate(_))) else {
        panic!("no ablation asked for");
    };
    let mut old_msgs = ablation_msgs(fixture("tiny_llama"), &old);
    app.update(Msg::Worker(old_msgs.remove(0)));
    // An edit: the old run's cells go, the new text's run is asked for once analysed.
    typed(&mut app, "e");
    press(&mut app, &[KeyCode::End]);
    app.type_keys(" + 1");
    let fx = app.update(key(KeyCode::Esc));
    assert_eq!(filled(&app, Metric::AblationId), 0, "no stale cells");
    let fx = parsed(&mut app, fx);
    let left = serve(&mut app, fx);
    assert!(left.iter().all(|e| !matches!(e, Effect::Ablate(_))));
    let a = app.ablation_shown().expect("re-run on the edited text");
    assert!(a.req > old.req);
    assert_eq!(a.done, a.total);
    // A report of the superseded run changes nothing.
    let before = app.grid_values(Metric::AblationId).unwrap();
    app.update(Msg::Worker(old_msgs.remove(0)));
    assert_eq!(app.grid_values(Metric::AblationId).unwrap(), before);
}

#[test]
fn an_encoder_scores_heads_by_one_minus_cos_and_small_screens_hold() {
    let mut app = ready(SHORT, 120, 40);
    press(&mut app, &[KeyCode::Char('7')]);
    let msg = app.status.message.clone().unwrap().1;
    assert!(msg.contains("(1 − cos)"), "{msg}");
    let s = screen(&app);
    assert!(
        s.contains("1 − cos") && s.contains("ablation: ids ×100 [s]"),
        "{s}"
    );
    assert!(filled(&app, Metric::AblationId) > 0);
    // Compare mode does not ablate the twin: the grid stays the snippet's own.
    let own = app.grid_values(Metric::AblationId).unwrap();
    typed(&mut app, "c");
    assert!(app.comparison().is_some());
    let s = screen(&app);
    assert!(
        s.contains("Heads · ablation: ids") && !s.contains("Heads · B−A"),
        "{s}"
    );
    assert_eq!(app.compare_grid(&own), None);
    let view = codescope::tui::figures::figure_data(&app).unwrap();
    assert!(!view.head_grid.signed);
    // Small, ASCII and colourless terminals: the grid draws (shade glyphs and signs).
    on_small_screens(
        &[KeyCode::Char('8'), KeyCode::Tab, KeyCode::Tab],
        |_, _, _| {},
    );
}

/// The worker's job stops when told (a newer request, or a more urgent job waiting) and,
/// run again from the head it stopped at, gives the rest: together the whole grid.
#[test]
fn the_ablation_job_stops_and_resumes_head_by_head() {
    let m = fixture("tiny_llama");
    let mut app = ready_decoder("tiny_llama", SHORT, 120, 40, theme(ColorMode::TrueColor));
    let fx = app.update(key(KeyCode::Char('7')));
    let Some(Effect::Ablate(job)) = fx.into_iter().find(|e| matches!(e, Effect::Ablate(_))) else {
        panic!("no ablation asked for");
    };
    let whole = ablation_msgs(m, &job);
    let sent = std::sync::Mutex::new(Vec::new());
    let count = std::sync::atomic::AtomicUsize::new(0);
    let stop = || count.load(std::sync::atomic::Ordering::SeqCst) >= 3;
    let next = codescope::tui::worker::ablation_job(m, &job, &stop, &|w| {
        count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        sent.lock().unwrap().push(w)
    });
    assert_eq!(next, 3, "stopped after three heads");
    let rest = ablation_msgs(
        m,
        &codescope::tui::msg::AblationJob {
            from: next,
            ..job.clone()
        },
    );
    let mut parts = sent.into_inner().unwrap();
    parts.extend(rest);
    let fmt = |v: &[WorkerMsg]| format!("{v:?}");
    assert_eq!(fmt(&parts), fmt(&whole));
    for (a, b) in parts.iter().zip(&whole) {
        match (a, b) {
            (
                WorkerMsg::AblatedHead { effect: x, .. },
                WorkerMsg::AblatedHead { effect: y, .. },
            ) => assert_eq!(x, y),
            _ => panic!("not ablation reports"),
        }
    }
}
