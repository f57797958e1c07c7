//! `codescope render --tour FILE --out DIR`, opened the way a speaker opens it: every
//! `src` and `href` of the deck's `index.html` resolves to a file the command wrote, each
//! image a PNG that decodes, and the captions are on the page.

use std::path::{Path, PathBuf};

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

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
        "title = \"Deck\"\n\n[[step]]\nfile = \"a.py\"\nmodel = \"{model}\"\nlayer = 1\nhead = 1\ncaption = \"first step\"\n\n[[step]]\ncode = \"def g(a):\\n    return a\\n\"\nview = \"heads\"\ncaption = \"second <step>\"\n"
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
    assert_eq!(links.len(), 2, "{html}");
    for link in &links {
        assert!(!link.contains('/') && !link.contains(".."), "{link}");
        let p = out.join(link);
        assert!(
            p.is_file(),
            "index.html links {link}, which is not in {}",
            out.display()
        );
        let (w, h) = png_size(&p);
        assert!(w > 0 && h > 0, "{link}");
    }
    assert!(
        links[0].starts_with("01-") && links[1].starts_with("02-"),
        "{links:?}"
    );
    assert!(html.contains("first step"));
    assert!(
        html.contains("second &lt;step&gt;"),
        "captions are escaped: {html}"
    );
}
