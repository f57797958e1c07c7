//! Figure times (target: any figure under 300 ms, SVG and PNG together) for a snippet
//! of about 512 code tokens analysed by a random-weight model with MiniLM's shape (6
//! layers x 12 heads), through the same headless explorer `codescope render` uses:
//! - `svg/<view>`: building the SVG of the view;
//! - `svg+png/<view>`: the SVG and its PNG (resvg with the bundled fonts), 1920 px wide.
//!
//! Views: heatmap (a 512-token matrix as an embedded raster), heads, categories,
//! overview (72 thumbnails), screen (the explorer at 120x40).

use std::time::Duration;

use codescope::export::figure::{self, FigureOptions, Kind};
use codescope::export::png;
use codescope::model::source::ModelFiles;
use codescope::model::testutil::{write_tiny_model, Tiny};
use codescope::model::LoadedModel;
use codescope::present::{HeadSpec, Scene, TokenSpec};
use codescope::syntax::Language;
use codescope::tui::data::Doc;
use codescope::tui::headless::Model;
use criterion::{criterion_group, criterion_main, Criterion};

/// About `n` code tokens of Python (16 per function).
fn snippet(n: usize) -> String {
    let mut s = String::new();
    let mut i = 0;
    while i * 16 < n {
        s.push_str(&format!(
            "def f_{i}(a, b):\n    x = a + b * {i}\n    return x\n\n"
        ));
        i += 1;
    }
    s
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    write_tiny_model(
        dir.path(),
        &Tiny {
            layers: 6,
            heads: 12,
            hidden: 48,
            intermediate: 96,
            max_positions: 2048,
            ..Tiny::default()
        },
    )
    .unwrap();
    let model =
        LoadedModel::load(&ModelFiles::from_dir(dir.path(), "tiny".into()).unwrap()).unwrap();
    let m = Model {
        model: &model,
        label: "tiny",
    };
    let scene = Scene {
        layer: Some(3),
        head: Some(HeadSpec::Number(5)),
        token: Some(TokenSpec::Text("x#9".into())),
        gold: Some(true),
        ..Scene::default()
    };
    let doc = Doc::new("bench.py", snippet(512), Language::Python);
    let app = codescope::tui::headless::staged(m, doc, (120, 40), true, &scene, None).unwrap();
    let view = codescope::tui::figures::figure_data_with(&app, true).unwrap();
    eprintln!("{} code tokens analysed", view.matrix_tokens.len());
    let opts = FigureOptions {
        light: true,
        ..FigureOptions::default()
    };
    let buf = codescope::tui::figures::screen_buffer(&app);
    let draw = |k: Kind| match k {
        Kind::Screen => figure::screen::render(&buf, &opts),
        k => figure::render(k, &view, &opts).unwrap(),
    };
    let mut g = c.benchmark_group("figure");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(6))
        .warm_up_time(Duration::from_secs(1));
    for k in [
        Kind::Heatmap,
        Kind::Heads,
        Kind::Categories,
        Kind::Overview,
        Kind::Screen,
    ] {
        let f = draw(k);
        eprintln!(
            "{}: {} x {} px, SVG {} bytes",
            k.name(),
            f.width,
            f.height,
            f.svg.len()
        );
        g.bench_function(format!("svg/{}", k.name()), |b| b.iter(|| draw(k)));
        g.bench_function(format!("svg+png/{}", k.name()), |b| {
            b.iter(|| png::render(&draw(k)).unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
