use codescope::syntax::{parse_with, Language, Limits};
use std::time::{Duration, Instant};
fn main() {
    for path in std::env::args().skip(1) {
        let src = std::fs::read_to_string(&path).unwrap();
        let lang = if path.ends_with(".java") {
            Language::Java
        } else {
            Language::Python
        };
        let t = Instant::now();
        let r = parse_with(
            &src,
            lang,
            &Limits {
                max_bytes: 2_000_000,
                timeout: Duration::from_secs(600),
            },
        );
        match r {
            Ok(s) => println!(
                "{path}: {:.2}s tokens {} dfg {} refined {}",
                t.elapsed().as_secs_f64(),
                s.tokens.len(),
                s.graphs.dfg.len(),
                s.graphs.dfg_refined.len()
            ),
            Err(e) => println!("{path}: {:.2}s error {e}", t.elapsed().as_secs_f64()),
        }
    }
}
