//! `codescope render --tour FILE --out DIR`, opened the way a speaker opens it: every
//! `src` and `href` of the deck's `index.html` resolves to a file the command wrote, each
//! image a PNG that decodes, and the captions are on the page.

use std::path::Path;

use crate::cli_sources::fixture;

/// Every value of `attr="..."` in `html`.
fn attr_values(html: &str, attr: &str) -> Vec<String> {
    let key = format!("{attr}=\"");
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find(&key) {
        rest = &rest[i + key.len()..];
        let end = rest.find('"').expect("a closed attribute");
        out.push(rest[..end].to_string());
        rest = &rest[end..];
    }
    out
}

fn png_size(path: &Path) -> (u32, u32) {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{}", path.display());
    // IHDR: width and height, big-endian, after the chunk header.
    let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    (w, h)
}

#[test]
fn deck_links_resolve_to_the_images_it_wrote() {
    let root = tempfile::tempdir().unwrap();
    let tmp = root.path();
    std::fs::write(tmp.join("a.py"), "def f(x):\n    y = x + 1\n    return y\n").unwrap();
    let model = fixture("tiny_roberta");
    let tour = format!(
        "title = \"Deck\"\n\n[[step]]\nfile = \"a.py\"\nmodel = \"{model}\"\nlayer = 1\nhead = 1\ncaption = \"first step\"\n\n[[step]]\ncode = \"def g(a):\\n    return a\\n\"\nview = \"heads\"\ncaption = \"second <step>\\u001b]2;x\\u0007\"\n\n[[step]]\nfile = \"a.py\"\nrewrite = \"rename:neutral\"\ncaption = \"renamed\"\n\n[[step]]\nfile = \"a.py\"\nview = \"categories\"\ncaption = \"categories\"\n"
    );
    let tour_path = tmp.join("talk.toml");
    std::fs::write(&tour_path, tour).unwrap();
    let out = tmp.join("deck");
    let o = crate::cli_sources::sandboxed(tmp)
        .env("HF_HUB_OFFLINE", "1")
        .args(["render", "--tour"])
        .arg(&tour_path)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    crate::cli_sources::ok(&o);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let links: Vec<String> = attr_values(&html, "src")
        .into_iter()
        .chain(attr_values(&html, "href"))
        .collect();
    assert_eq!(links.len(), 4, "{html}");
    for link in &links {
        assert!(!link.contains('/') && !link.contains(".."), "{link}");
        let p = out.join(link);
        assert!(
            p.is_file(),
            "index.html links {link}, which is not in {}",
            out.display()
        );
        // Every slide is 16:9 at 1920 x 1080, whatever its view.
        assert_eq!(png_size(&p), (1920, 1080), "{link}");
    }
    assert!(
        links[0].starts_with("01-") && links[1].starts_with("02-"),
        "{links:?}"
    );
    assert!(html.contains("first step"));
    // The step with a rewrite is a comparison: the heatmap of B − A, the twin named.
    let svg = std::fs::read_to_string(out.join(links[2].replace(".png", ".svg"))).unwrap();
    assert!(
        svg.contains("attention, B − A") && svg.contains("B = rename:neutral"),
        "step 3 is no comparison"
    );
    let svg1 = std::fs::read_to_string(out.join(links[0].replace(".png", ".svg"))).unwrap();
    assert!(!svg1.contains("B − A"));
    // The step's caption is the slide's title; the file and model lead the subtitle.
    assert!(
        svg1.contains("<title>first step · attention</title>")
            && svg1.contains(">first step</text>"),
        "the caption is not the title"
    );
    assert!(
        svg1.contains("a.py (python) · …/tiny_roberta"),
        "no file and model"
    );
    assert!(
        html.contains("second &lt;step&gt;"),
        "captions are escaped: {html}"
    );
    // Control characters in a caption are shown, not kept raw.
    assert!(
        !html.contains('\u{1b}') && !html.contains('\u{7}'),
        "{html}"
    );
    assert!(html.contains("\\u{1b}]2;x"), "{html}");
}

/// `render --rewrite R` draws a comparison: the heatmap on B − A by default (`--side a|b`
/// for the others), the head grid as the twin's score minus the original's.
#[test]
fn render_rewrite_draws_comparisons() {
    let root = tempfile::tempdir().unwrap();
    let tmp = root.path();
    let src = tmp.join("a.py");
    std::fs::write(&src, "def f(x):\n    y = x + 1\n    return y\n").unwrap();
    let model = fixture("tiny_roberta");
    let render = |extra: &[&str], out: &str| -> String {
        let p = tmp.join(out);
        let o = crate::cli_sources::sandboxed(tmp)
            .args(["render", "--model", &model])
            .arg(&src)
            .args(extra)
            .arg("--out")
            .arg(&p)
            .output()
            .unwrap();
        crate::cli_sources::ok(&o);
        std::fs::read_to_string(&p).unwrap()
    };
    let diff = render(&["--rewrite", "rename:neutral"], "d.svg");
    assert!(diff.contains("attention, B − A") && diff.contains("B − A (√)"));
    let a = render(&["--rewrite", "rename:neutral", "--side", "a"], "a.svg");
    assert!(a.contains("the original (A)") && !a.contains("B − A (√)"));
    let b = render(&["--rewrite", "rename:neutral", "--side", "b"], "b.svg");
    assert!(b.contains("the twin's attention"));
    let heads = render(&["--rewrite", "rename:neutral", "--view", "heads"], "h.svg");
    assert!(heads.contains("twin's score minus the original's"));
    let plain = render(&[], "p.svg");
    assert!(!plain.contains("compare mode"));
}

/// The deck of `tour` (written to `talk.toml` in `tmp`) rendered into `tmp/deck`
/// through the binary: its folder and the images its index links, in order.
fn deck_of(tmp: &Path, tour: &str) -> (std::path::PathBuf, Vec<String>) {
    let tour_path = tmp.join("talk.toml");
    std::fs::write(&tour_path, tour).unwrap();
    let out = tmp.join("deck");
    let o = crate::cli_sources::sandboxed(tmp)
        .args(["render", "--tour"])
        .arg(&tour_path)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    crate::cli_sources::ok(&o);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    (out, attr_values(&html, "src"))
}

/// A tour step with `knockout = SET` draws the knockout view (the deck's figure says which
/// set), and `B` records the knockout mode in the step it appends.
#[test]
fn a_tour_step_knocks_an_edge_set_out() {
    let root = tempfile::tempdir().unwrap();
    let tmp = root.path();
    std::fs::write(tmp.join("a.py"), "def f(x):\n    y = x + 1\n    return y\n").unwrap();
    let model = fixture("tiny_llama");
    let tour = format!(
        "title = \"K\"\n\n[[step]]\nfile = \"a.py\"\nmodel = \"{model}\"\nview = \"knockout\"\nknockout = \"dfg\"\ncaption = \"data flow out\"\n"
    );
    let (out, mut links) = deck_of(tmp, &tour);
    let link = links.remove(0);
    let svg = std::fs::read_to_string(out.join(link.replace(".png", ".svg"))).unwrap();
    assert!(svg.contains("knockout dfg: "), "{svg}");

    // B in the explorer records the mode.
    use crossterm::event::KeyCode;
    let mut app = crate::tui_common::ready_decoder(
        "tiny_llama",
        crate::tui_common::SHORT,
        120,
        40,
        crate::tui_common::theme(codescope::tui::theme::ColorMode::TrueColor),
    );
    crate::tui_common::press(&mut app, &[KeyCode::Char('K'), KeyCode::Char('K')]);
    assert_eq!(app.scene_here().knockout.as_deref(), Some("id-syn"));
}

/// A figure of a long file is one slide: the code shown is the analysed window, cut to
/// what fits beside the map around the selected token (the caption says which lines), the
/// SVG well under 1 MB and the PNG 1920 x 1080; `--canvas` sets another slide size or
/// `none` the figure's own.
#[test]
fn a_figure_of_a_long_file_is_one_slide() {
    let root = tempfile::tempdir().unwrap();
    let tmp = root.path();
    // ~75 KB of Python: 1,500 small functions.
    let mut code = String::new();
    for i in 0..1500 {
        code.push_str(&format!(
            "def step_{i}(value, factor):\n    total = value * factor + {i}\n    return total\n\n"
        ));
    }
    assert!(code.len() > 75_000);
    let src = tmp.join("long.py");
    std::fs::write(&src, &code).unwrap();
    for model in ["tiny_roberta", "tiny_llama"] {
        let render = |extra: &[&str], out: &str| -> std::process::Output {
            crate::cli_sources::sandboxed(tmp)
                .env("HF_HUB_OFFLINE", "1")
                .args(["--model", &fixture(model), "render"])
                .arg(&src)
                .args(["--view", "heatmap", "--token", "total#3"])
                .args(extra)
                .arg("--out")
                .arg(tmp.join(out))
                .output()
                .unwrap()
        };
        crate::cli_sources::ok(&render(&[], "long.svg"));
        crate::cli_sources::ok(&render(&[], "long.png"));
        let svg = std::fs::read_to_string(tmp.join("long.svg")).unwrap();
        assert!(svg.len() < 1_000_000, "{model}: {} bytes", svg.len());
        assert!(
            svg.starts_with(
                r#"<svg xmlns="http://www.w3.org/2000/svg" width="1920" height="1080""#
            ),
            "{model}: {}",
            &svg[..200]
        );
        assert_eq!(png_size(&tmp.join("long.png")), (1920, 1080), "{model}");
        // Not the whole listing: a window of lines, named in the caption, that holds the
        // selected token (the third `total`, on line 10).
        let shown = svg.matches(">def</text>").count();
        assert!(
            (1..=10).contains(&shown),
            "{model}: {shown} functions drawn"
        );
        assert!(
            svg.contains("lines "),
            "{model}: the caption names no lines"
        );
        // Other canvases.
        crate::cli_sources::ok(&render(&["--canvas", "1280x720"], "small.png"));
        assert_eq!(png_size(&tmp.join("small.png")), (1280, 720), "{model}");
        crate::cli_sources::ok(&render(&["--canvas", "none"], "own.svg"));
        let own = std::fs::read_to_string(tmp.join("own.svg")).unwrap();
        assert!(!own.contains(r#"height="1080""#) || own.contains(r#"width="1920""#));
        assert!(
            own.matches("<svg").count() == 1,
            "{model}: --canvas none is nested"
        );
    }
    // Out of range: refused by the parser (exit 2), or before any work when the canvas
    // at its scale would be a PNG over 8K.
    let bad = crate::cli_sources::sandboxed(tmp)
        .args(["render"])
        .arg(&src)
        .args(["--canvas", "10x10"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert!(err.contains("is not a canvas like 1920x1080"), "{err}");
    let big = crate::cli_sources::sandboxed(tmp)
        .args(["render"])
        .arg(&src)
        .args(["--canvas", "3840x2160", "--scale", "4", "--out"])
        .arg(tmp.join("big.png"))
        .output()
        .unwrap();
    let err = crate::cli_sources::fails(&big);
    assert!(err.contains("over 7680x4320"), "{err}");
    assert!(!tmp.join("big.png").exists());
}

/// Tour steps with `view = "ablation"`, `view = "lens"` and `view = "patch"` (with a
/// `rewrite`) draw those figures in the deck.
#[test]
fn a_tour_step_shows_the_ablation_the_lens_and_the_patch() {
    let root = tempfile::tempdir().unwrap();
    let tmp = root.path();
    std::fs::write(tmp.join("a.py"), "def f(x):\n    y = x + 1\n    return y\n").unwrap();
    // Two parameters and a local: `rename:shuffle` permutes them (one name per role would
    // rename nothing).
    std::fs::write(
        tmp.join("b.py"),
        "def area(w, h):\n    total = w * h\n    return total\n",
    )
    .unwrap();
    let model = fixture("tiny_llama");
    let tour = format!(
        "title = \"AL\"\n\n[[step]]\nfile = \"a.py\"\nmodel = \"{model}\"\nview = \"ablation\"\nmetric = \"ablation_syntactic\"\ncaption = \"the heads that matter\"\n\n[[step]]\nfile = \"a.py\"\nview = \"lens\"\ntoken = \"y\"\ncaption = \"where y is decided\"\n\n[[step]]\nfile = \"b.py\"\nview = \"patch\"\nrewrite = \"rename:shuffle\"\nlayer = 2\n"
    );
    let (out, links) = deck_of(tmp, &tour);
    assert_eq!(links.len(), 3, "{links:?}");
    let svg =
        |i: usize| std::fs::read_to_string(out.join(links[i].replace(".png", ".svg"))).unwrap();
    assert!(svg(0).contains("ablation effect on syntactic tokens"));
    let lens = svg(1);
    assert!(lens.contains("logit lens: each layer"), "{lens}");
    assert!(lens.contains("«y» (identifier)"), "{lens}");
    let patch = svg(2);
    assert!(
        patch.contains("patch from rename:shuffle at L2") && patch.contains("L0 (embeddings)"),
        "{patch}"
    );
    for l in &links {
        assert!(png_size(&out.join(l)).0 > 0);
    }
}
