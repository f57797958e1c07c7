//! Syntax layer throughput: tokens + every gold graph for a ~1,000-line Python file and
//! a ~1,000-line Java file (built by repeating the bundled samples with renamed
//! definitions), plus alignment and paper mode on the Python one. Target: `parse` under
//! 50 ms per file.
//!
//! Needs `[[bench]] name = "syntax" harness = false` in Cargo.toml.

use criterion::{black_box, criterion_group, criterion_main, Criterion};

use codescope::syntax::{align, paper_text, parse, Language, SubwordSpan};

const PY_SAMPLES: [&str; 3] = [
    include_str!("../assets/samples/python/binary_search.py"),
    include_str!("../assets/samples/python/inventory.py"),
    include_str!("../assets/samples/python/async_fetch.py"),
];
const PY_NAMES: [&str; 7] = [
    "binary_search",
    "insertion_point",
    "Inventory",
    "Item",
    "fetch_json",
    "summarize",
    "__main__",
];

const JAVA_SAMPLES: [&str; 3] = [
    include_str!("../assets/samples/java/BinarySearch.java"),
    include_str!("../assets/samples/java/Inventory.java"),
    include_str!("../assets/samples/java/Shapes.java"),
];
const JAVA_NAMES: [&str; 6] = [
    "BinarySearch",
    "Inventory",
    "Shapes",
    "Shape",
    "Circle",
    "Rect",
];

/// Concatenate renamed copies of `samples` until the text has `lines` lines.
fn synthetic(samples: &[&str], names: &[&str], lines: usize) -> String {
    let mut out = String::new();
    let mut copy = 0;
    while out.lines().count() < lines {
        for s in samples {
            let mut s = s.to_string();
            for n in names {
                s = s.replace(n, &format!("{n}{copy}"));
            }
            out.push_str(&s);
            out.push('\n');
        }
        copy += 1;
    }
    out
}

fn bench_syntax(c: &mut Criterion) {
    let py = synthetic(&PY_SAMPLES, &PY_NAMES, 1000);
    let java = synthetic(&JAVA_SAMPLES, &JAVA_NAMES, 1000);
    for (lang, src) in [(Language::Python, &py), (Language::Java, &java)] {
        let s = parse(src, lang).expect("synthetic file parses");
        assert!(s.errors.is_empty(), "{lang}: {:?}", &s.errors[..1]);
        println!(
            "{lang}: {} lines, {} tokens, {} motif / {} dfg edges",
            src.lines().count(),
            s.tokens.len(),
            s.graphs.edge_count(codescope::syntax::Graph::AstMotif),
            s.graphs.dfg.len()
        );
        c.bench_function(&format!("parse_{lang}_1000_lines"), |b| {
            b.iter(|| parse(black_box(src), lang).unwrap())
        });
    }

    let s = parse(&py, Language::Python).unwrap();
    // A tokenizer-like split: 3-byte pieces, plus CLS/SEP.
    let mut subwords = vec![SubwordSpan::special()];
    subwords.extend(
        (0..py.len())
            .step_by(3)
            .map(|i| SubwordSpan::new(i, (i + 3).min(py.len()))),
    );
    subwords.push(SubwordSpan::special());
    c.bench_function("align_python_1000_lines", |b| {
        b.iter(|| align(black_box(&subwords), &s.tokens))
    });
    c.bench_function("paper_text_python_1000_lines", |b| {
        b.iter(|| paper_text(black_box(&s)))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench_syntax
}
criterion_main!(benches);
