//! Explorer frame times on a `TestBackend`, for a snippet of 544 code tokens analysed by
//! a random-weight model 32 layers deep (8 heads; the head grid scrolls at 120x40 and
//! shows every layer at 200x50):
//! - `frame_544_32l`: one full redraw at 120x40 (target <= 2 ms);
//! - `frame_544_32l_200x50`: the same at 200x50;
//! - `frame_544_32l_mean`: the same with the mean over heads (cached per layer);
//! - `key_to_frame_544_32l`: a navigation key (next layer) through `App::update` plus
//!   the redraw it causes (target <= 16 ms, one frame at 60 Hz).
//!
//! Beside criterion's wall times it prints the UI thread's CPU time per frame and per key
//! (`/proc/thread-self/schedstat`), the figure to trust on a machine shared with builds.

use std::sync::Arc;
use std::time::Duration;

use codescope::analysis;
use codescope::model::source::ModelFiles;
use codescope::model::testutil::{write_tiny_model, Tiny};
use codescope::model::LoadedModel;
use codescope::syntax::Language;
use codescope::tui::app::{App, Config};
use codescope::tui::data::Doc;
use codescope::tui::msg::{Effect, Msg, WorkerMsg};
use codescope::tui::theme::{ColorMode, Theme};
use codescope::tui::widgets::draw;
use criterion::{criterion_group, criterion_main, Criterion};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

/// About `n` code tokens of Python.
fn snippet(n: usize) -> String {
    let mut s = String::new();
    let mut i = 0;
    // Each function is 16 code tokens.
    while i * 16 < n {
        s.push_str(&format!(
            "def f_{i}(a, b):\n    x = a + b * {i}\n    return x\n\n"
        ));
        i += 1;
    }
    s
}

const LAYERS: usize = 32;

fn setup() -> (tempfile::TempDir, App) {
    let dir = tempfile::tempdir().unwrap();
    write_tiny_model(
        dir.path(),
        &Tiny {
            layers: LAYERS,
            heads: 8,
            hidden: 64,
            intermediate: 128,
            max_positions: 2048,
            ..Tiny::default()
        },
    )
    .unwrap();
    let model =
        LoadedModel::load(&ModelFiles::from_dir(dir.path(), "tiny".into()).unwrap()).unwrap();
    let doc = Doc::parsed("bench.py", snippet(512), Language::Python);
    let mut app = App::new(
        Config {
            theme: Theme::new(ColorMode::TrueColor, false),
            model_spec: Some("tiny".into()),
        },
        doc,
    );
    app.update(Msg::Resize {
        width: 120,
        height: 40,
    });
    app.update(Msg::Worker(WorkerMsg::ModelLoaded {
        info: model.info.clone(),
        label: "tiny".into(),
        notice: None,
    }));
    for fx in app.start() {
        if let Effect::Analyse(job) = fx {
            let mut a =
                analysis::run(&model, job.syntax.clone(), &job.opts, &Default::default()).unwrap();
            a.elapsed = Duration::from_millis(1);
            let data = Arc::new(a);
            app.update(Msg::Worker(WorkerMsg::Analysed { req: job.req, data }));
        }
    }
    let n = app.prepared().expect("analysed").n();
    eprintln!("bench snippet: {n} analysed code tokens");
    (dir, app)
}

/// This thread's CPU time (Linux: `/proc/thread-self/schedstat`), which a loaded
/// machine (other builds on the same cores) inflates far less than wall time.
fn thread_cpu() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// Mean CPU time of `f` over `n` runs, printed beside criterion's wall times.
fn cpu_per_run(name: &str, n: u32, mut f: impl FnMut()) {
    let Some(t0) = thread_cpu() else { return };
    let w0 = std::time::Instant::now();
    for _ in 0..n {
        f();
    }
    if let Some(t1) = thread_cpu() {
        eprintln!(
            "{name}: {:.3} ms CPU per run ({:.3} ms wall), mean of {n}",
            (t1 - t0).as_secs_f64() * 1e3 / n as f64,
            w0.elapsed().as_secs_f64() * 1e3 / n as f64
        );
    }
}

fn bench(c: &mut Criterion) {
    let (_dir, mut app) = setup();
    let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap();
    // Put the cursor mid-snippet with the gold overlay on, on a layer the grid has to
    // scroll to: the busiest frame.
    app.type_keys("jjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjlg");
    for _ in 0..24 {
        app.update(Msg::Key(KeyEvent::new(KeyCode::Right, KeyModifiers::NONE)));
    }
    cpu_per_run("frame_544_32l", 200, || {
        term.draw(|f| draw(&app, f)).unwrap();
    });
    c.bench_function("frame_544_32l", |b| {
        b.iter(|| {
            term.draw(|f| draw(&app, f)).unwrap();
        })
    });
    let mut wide = Terminal::new(TestBackend::new(200, 50)).unwrap();
    app.update(Msg::Resize {
        width: 200,
        height: 50,
    });
    c.bench_function("frame_544_32l_200x50", |b| {
        b.iter(|| {
            wide.draw(|f| draw(&app, f)).unwrap();
        })
    });
    app.update(Msg::Resize {
        width: 120,
        height: 40,
    });
    app.type_keys("a");
    term.draw(|f| draw(&app, f)).unwrap();
    c.bench_function("frame_544_32l_mean", |b| {
        b.iter(|| {
            term.draw(|f| draw(&app, f)).unwrap();
        })
    });
    app.type_keys("a");
    let mut right = true;
    cpu_per_run("key_to_frame_544_32l", 200, || {
        let k = if right { KeyCode::Right } else { KeyCode::Left };
        if app.view.layer == 0 || app.view.layer == LAYERS - 1 {
            right = !right;
        }
        app.update(Msg::Key(KeyEvent::new(k, KeyModifiers::NONE)));
        term.draw(|f| draw(&app, f)).unwrap();
    });
    c.bench_function("key_to_frame_544_32l", |b| {
        b.iter(|| {
            let k = if right { KeyCode::Right } else { KeyCode::Left };
            if app.view.layer == 0 || app.view.layer == LAYERS - 1 {
                right = !right;
            }
            app.update(Msg::Key(KeyEvent::new(k, KeyModifiers::NONE)));
            term.draw(|f| draw(&app, f)).unwrap();
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(50).measurement_time(Duration::from_secs(4));
    targets = bench
}
criterion_main!(benches);
