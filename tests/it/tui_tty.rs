//! The terminal itself, through the real binary in tmux (120x40) with the tiny RoBERTa
//! fixture, each run in a private HOME and cache with the hub off (nothing is fetched):
//! - bracketed paste: 1 MB of code pasted into the editor is exactly the text pasted
//!   (line breaks as sent, no auto-indent), in bounded time and memory; a second one,
//!   over the input limit, is refused and nothing is lost; a short function pasted with
//!   CRLF line ends and a control character stays parseable;
//! - a burst of 6,000 keys is read to its end: one `q` after it quits;
//! - job control: Ctrl-Z (a key in raw mode) and SIGTSTP give the shell its terminal
//!   back (alternate screen and mouse reports off, the job stopped), `fg` brings the
//!   explorer back in raw mode;
//! - SIGQUIT restores the terminal (bracketed paste off too), saves the session and
//!   exits 131;
//! - the knockout, the head grid's ablation scores and the logit lens run in the worker
//!   thread (the last two on the tiny Llama).
//!
//! Every wait polls with a timeout. Needs tmux (and bash for job control).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use codescope::syntax::Language;

use crate::tui_e2e::{start_cmd, wait_file, Tmux};

const AREA: &str = "def area(w, h):\n    return w * h\n";

fn model() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tiny_roberta")
        .display()
        .to_string()
}

/// Environment assignments that keep a run inside `dir`: its own HOME, caches and
/// Hugging Face home, the hub off.
fn sandbox(dir: &Path) -> String {
    let d = dir.display();
    format!(
        "HOME='{d}/home' XDG_CACHE_HOME='{d}/cache' CODESCOPE_CACHE='{d}/cache' \
         HF_HOME='{d}/hf' HF_HUB_CACHE='' HF_HUB_OFFLINE=1"
    )
}

/// The explorer on `area.py` with its analysis on screen.
fn analysed(s: &str) -> bool {
    s.contains("def area(w, h)") && s.contains("(roberta)") && s.contains("rows query")
}

/// Start the explorer on `area.py` (in `sh`, as `tui_e2e` does) and wait for the
/// analysis; the exit status lands in the returned file.
fn start(tmux: &Tmux, dir: &Path) -> PathBuf {
    std::fs::write(dir.join("area.py"), AREA).unwrap();
    let exit = start_cmd(
        tmux,
        dir,
        &sandbox(dir),
        &format!("--model '{}' area.py", model()),
    );
    tmux.wait_for("the analysis", 120, analysed);
    exit
}

/// The explorer's process id: the `codescope` process under the pane's shell.
fn explorer_pid(tmux: &Tmux) -> String {
    let pane = tmux.run(&["display-message", "-p", "-t", "e2e", "#{pane_pid}"]);
    let mut todo = vec![pane.trim().to_string()];
    while let Some(p) = todo.pop() {
        let comm = std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
        if comm.trim() == "codescope" {
            return p;
        }
        let kids =
            std::fs::read_to_string(format!("/proc/{p}/task/{p}/children")).unwrap_or_default();
        todo.extend(kids.split_whitespace().map(String::from));
    }
    panic!("no codescope process in the pane");
}

/// A pane flag (`alternate_on`, `mouse_any_flag`).
fn flag(tmux: &Tmux, name: &str) -> String {
    tmux.run(&[
        "display-message",
        "-p",
        "-t",
        "e2e",
        &format!("#{{{name}}}"),
    ])
    .trim()
    .to_string()
}

fn kill(sig: &str, pid: &str) {
    let st = Command::new("kill").args([sig, pid]).status().unwrap();
    assert!(st.success(), "kill {sig} {pid}");
}

/// The session the explorer saved (CODESCOPE_SESSION of `start_cmd`).
fn session(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("session.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Peak resident memory of process `pid`, in KiB.
fn peak_rss_kib(pid: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Python functions, indented with spaces and a tab, of about `bytes` bytes, ending
/// with a marker line.
fn big_code(bytes: usize) -> String {
    let end = "# end of the paste\n";
    let mut s = String::new();
    for i in 0.. {
        let f = format!(
            "def step_{i}(values, scale={i}):\n    total = 0\n    for v in values:\n        if v > {i}:\n\t\ttotal += v * scale\n    return total\n\n"
        );
        if s.len() + f.len() + end.len() > bytes {
            break;
        }
        s.push_str(&f);
    }
    s.push_str(end);
    s
}

#[test]
fn tty_paste_is_one_verbatim_edit() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let tmux = Tmux::new("paste");
    let exit = start(&tmux, dir);
    let pid = explorer_pid(&tmux);

    // A short function with CRLF line ends and a BEL, pasted raw (`-r`): LF line ends,
    // no BEL, and not one space of indentation added.
    tmux.run(&["send-keys", "-t", "e2e", "e"]);
    tmux.wait_for("the editor", 30, |s| s.contains("EDIT"));
    let crlf = "def scale(v, k):\r\n    if k:\r\n        return v * k\r\n    return v\x07\r\n";
    let func = "def scale(v, k):\n    if k:\n        return v * k\n    return v\n";
    let f = dir.join("func.txt");
    std::fs::write(&f, crlf).unwrap();
    tmux.run(&["load-buffer", "-b", "func", &f.display().to_string()]);
    tmux.run(&["paste-buffer", "-p", "-r", "-b", "func", "-t", "e2e"]);
    let s = tmux.wait_for("the pasted function", 30, |s| s.contains("return v * k"));
    assert!(
        s.contains("pasted 61 bytes, 4 lines (1 control character dropped)"),
        "{s}"
    );
    tmux.run(&["send-keys", "-t", "e2e", "Escape"]);
    let text = format!("{func}{AREA}");
    let syn = codescope::syntax::parse(&text, Language::Python).unwrap();
    assert!(syn.errors.is_empty(), "{:?}", syn.errors);
    let tokens = format!("{} tokens", syn.tokens.len());
    let s = tmux.wait_for("the analysis of the applied paste", 60, |s| {
        s.contains("def scale(v, k)") && !s.contains("EDIT") && s.contains(&tokens)
    });
    assert!(!s.contains("parse error"), "{s}");
    assert_eq!(session(dir)["text"], text.as_str(), "the applied text");

    // About 1 MB of code, pasted the way a terminal does (`paste-buffer -p`: bracketed,
    // line breaks sent as CR).
    tmux.run(&["send-keys", "-t", "e2e", "e"]);
    tmux.wait_for("the editor", 30, |s| s.contains("EDIT"));
    let big = big_code(codescope::input::MAX_INPUT_BYTES - text.len() - 1000);
    assert!(big.len() > 990_000);
    let f = dir.join("big.py");
    std::fs::write(&f, &big).unwrap();
    tmux.run(&["load-buffer", "-b", "big", &f.display().to_string()]);
    let before = peak_rss_kib(&pid);
    let t0 = Instant::now();
    tmux.run(&["paste-buffer", "-p", "-b", "big", "-t", "e2e"]);
    let pasted = format!("pasted {} bytes", big.len());
    tmux.wait_for("the end of the paste", 60, |s| {
        s.contains("# end of the paste") && s.contains(&pasted)
    });
    let took = t0.elapsed();
    let grown_mib = peak_rss_kib(&pid).saturating_sub(before) / 1024;
    // Once more would take the snippet over the input limit: refused, nothing lost.
    tmux.run(&["paste-buffer", "-p", "-b", "big", "-t", "e2e"]);
    tmux.wait_for("the refusal", 60, |s| s.contains("paste refused"));
    kill("-TERM", &pid);
    assert_eq!(wait_file(&exit, 30), "143");
    let s = session(dir);
    let editor = s["editor"]["text"]
        .as_str()
        .expect("the open editor's text");
    assert!(
        editor == format!("{big}{text}"),
        "the editor holds the pasted text exactly, then the snippet ({} bytes, expected {})",
        editor.len(),
        big.len() + text.len()
    );
    assert!(took < Duration::from_secs(30), "the paste took {took:?}");
    assert!(
        grown_mib < 100,
        "a 1 MB paste grew the peak memory by {grown_mib} MiB"
    );
}

#[test]
fn tty_a_burst_of_keys_is_read_to_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new("burst");
    let exit = start(&tmux, dir.path());
    // 6,000 token moves at once, then one q: it quits without another key.
    tmux.run(&["send-keys", "-t", "e2e", "-l", &"hl".repeat(3000)]);
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    assert_eq!(
        wait_file(&exit, 30),
        "0",
        "exit status after the burst and q"
    );
}

/// The screen's last non-empty line is the test shell's prompt.
fn at_prompt(s: &str) -> bool {
    s.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.starts_with("shell-prompt$"))
}

#[test]
fn tty_ctrl_z_and_sigtstp_give_the_shell_back() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::write(dir.join("area.py"), AREA).unwrap();
    let exit = dir.join("exit");
    let script = dir.join("run.sh");
    std::fs::write(
        &script,
        format!(
            "cd '{d}'\nexport CODESCOPE_SESSION='{d}/session.json'\n{} '{}' --log-file '{d}/log' --model '{}' area.py\necho $? > '{}'\n",
            sandbox(dir),
            env!("CARGO_BIN_EXE_codescope"),
            model(),
            exit.display(),
            d = dir.display(),
        ),
    )
    .unwrap();
    let tmux = Tmux::new("tstp");
    // An interactive shell with job control; the explorer runs under `sh`, a wrapper
    // that must stop with it for the shell to get the terminal back.
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "e2e",
        "-x",
        "120",
        "-y",
        "40",
        "env PS1='shell-prompt$ ' bash --norc --noprofile -i",
    ]);
    tmux.wait_for("the shell", 30, at_prompt);
    tmux.run(&[
        "send-keys",
        "-t",
        "e2e",
        &format!("sh '{}'", script.display()),
        "Enter",
    ]);
    tmux.wait_for("the analysis", 120, analysed);
    assert_eq!(flag(&tmux, "alternate_on"), "1");

    // Ctrl-Z: a key in raw mode.
    tmux.run(&["send-keys", "-t", "e2e", "C-z"]);
    let s = tmux.wait_for("the shell after Ctrl-Z", 30, |s| {
        s.contains("Stopped") && at_prompt(s)
    });
    assert!(!s.contains("(roberta)"), "{s}");
    assert_eq!(flag(&tmux, "alternate_on"), "0", "alternate screen left");
    assert_eq!(flag(&tmux, "mouse_any_flag"), "0", "mouse reports off");
    tmux.run(&["send-keys", "-t", "e2e", "fg", "Enter"]);
    tmux.wait_for("the explorer again", 30, |s| {
        analysed(s) && s.contains("from «def»")
    });
    assert_eq!(flag(&tmux, "alternate_on"), "1");
    assert_eq!(flag(&tmux, "mouse_any_flag"), "1");
    // Raw mode: one key, no Enter, moves the token cursor.
    tmux.run(&["send-keys", "-t", "e2e", "l"]);
    tmux.wait_for("the next token", 30, |s| s.contains("from «area»"));

    // SIGTSTP from outside does the same.
    kill("-TSTP", &explorer_pid(&tmux));
    tmux.wait_for("the shell after SIGTSTP", 30, |s| {
        s.matches("Stopped").count() == 2 && at_prompt(s)
    });
    assert_eq!(flag(&tmux, "alternate_on"), "0", "alternate screen left");
    assert_eq!(flag(&tmux, "mouse_any_flag"), "0", "mouse reports off");
    tmux.run(&["send-keys", "-t", "e2e", "fg", "Enter"]);
    tmux.wait_for("the explorer as it was", 30, |s| {
        analysed(s) && s.contains("from «area»")
    });
    tmux.run(&["send-keys", "-t", "e2e", "h"]);
    tmux.wait_for("the previous token", 30, |s| s.contains("from «def»"));
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    assert_eq!(wait_file(&exit, 30), "0", "exit status after q");
}

#[test]
fn tty_sigquit_restores_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new("quit");
    let exit = start(&tmux, dir.path());
    kill("-QUIT", &explorer_pid(&tmux));
    assert_eq!(wait_file(&exit, 30), "131", "exit 128 + SIGQUIT");
    assert_eq!(flag(&tmux, "alternate_on"), "0", "alternate screen left");
    assert_eq!(flag(&tmux, "mouse_any_flag"), "0", "mouse reports off");
    assert!(!tmux.screen().contains("(roberta)"));
    assert_eq!(session(dir.path())["text"], AREA, "the session saved");
    // Bracketed paste is off: a paste reaches the (echoing) terminal without markers.
    tmux.run(&["set-buffer", "-b", "after", "pasted-after-exit"]);
    tmux.run(&["paste-buffer", "-p", "-b", "after", "-t", "e2e"]);
    let s = tmux.wait_for("the echoed paste", 10, |s| s.contains("pasted-after-exit"));
    assert!(!s.contains("[200~"), "{s}");
}

/// An unknown model is an error where the user looks: the status line says why (not a
/// bare "no model is loaded"), and when the explorer ends without any model having loaded
/// the same reason is on stderr and the exit status is 1.
#[test]
fn tty_an_unknown_model_is_an_error_on_screen_and_on_exit() {
    let tmux = Tmux::new("nomodel");
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    std::fs::write(dir.join("area.py"), AREA).unwrap();
    let exit = start_cmd(
        &tmux,
        dir,
        &sandbox(dir),
        "--model no-such-model area.py 2> err.txt",
    );
    tmux.wait_for("the load error on the status line", 60, |s| {
        s.contains("model no-such-model:") && s.contains("not found")
    });
    assert!(!tmux.screen().contains("no model is loaded"));
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    std::thread::sleep(Duration::from_millis(300));
    // Quitting may ask first (nothing to lose here, but answer it if it does).
    if tmux.screen().contains("quit?") || tmux.screen().contains("Quit") {
        tmux.run(&["send-keys", "-t", "e2e", "y"]);
    }
    assert_eq!(wait_file(&exit, 30), "1");
    let err = std::fs::read_to_string(dir.join("err.txt")).unwrap();
    assert!(
        err.contains("codescope: error:")
            && err.contains("no-such-model")
            && err.contains("not found"),
        "{err}"
    );
}

/// `K` through the real worker thread: the knockout runs in the background and the
/// explorer shows it (title and status line), then `q` quits normally.
#[test]
fn tty_knockout_runs_in_the_worker() {
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new("knock");
    let exit = start(&tmux, dir.path());
    tmux.run(&["send-keys", "-t", "e2e", "K"]);
    let s = tmux.wait_for("the knockout", 60, |s| {
        s.contains("knockout syn-id (Δ PLL bits)") && s.contains("control")
    });
    assert!(s.contains("identifiers"), "{s}");
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    assert_eq!(wait_file(&exit, 30), "0", "exit status after q");
}

/// An export on a full disk (a file-size limit in the explorer's shell, SIGXFSZ ignored:
/// writes fail with EFBIG as on a full disk): the status line says the export failed and
/// the export directory holds no partial figure.
#[test]
fn tty_an_export_on_a_full_disk_leaves_no_partial_file() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let exports = dir.join("exports");
    std::fs::create_dir(&exports).unwrap();
    std::fs::write(dir.join("area.py"), AREA).unwrap();
    let tmux = Tmux::new("fulldisk");
    // `ulimit -f 1`: 512 or 1024 bytes, whichever the shell counts in; every figure of
    // the view is larger. Logging off: a failed log write is the logging library's
    // complaint on the screen (`hostile_inputs::an_unwritable_log_file_stays_off_the_terminal`).
    let exit = start_cmd(
        &tmux,
        dir,
        &format!(
            "trap '' XFSZ; ulimit -f 1; CODESCOPE_LOG=off {}",
            sandbox(dir)
        ),
        &format!(
            "--model '{}' --export-dir '{}' area.py",
            model(),
            exports.display()
        ),
    );
    tmux.wait_for("the analysis", 120, analysed);
    tmux.run(&["send-keys", "-t", "e2e", "x"]);
    tmux.wait_for("the export menu", 30, |s| s.contains("this view (heatmap)"));
    tmux.run(&["send-keys", "-t", "e2e", "1"]);
    let s = tmux.wait_for("the failed export", 60, |s| s.contains("export failed"));
    assert!(!s.contains("exported codescope-"), "{s}");
    let left: Vec<String> = std::fs::read_dir(&exports)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.is_empty(), "left in the export directory: {left:?}");
    kill("-TERM", &explorer_pid(&tmux));
    assert_eq!(wait_file(&exit, 30), "143");
}

/// A `session.json.tmp` planted as a symbolic link to another file (the name an older
/// codescope used for its temporary) is never written through: the explorer saves its
/// session beside it, the link's target is untouched.
#[test]
fn tty_a_planted_session_temporary_is_not_followed() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let victim = dir.join("precious.txt");
    std::fs::write(&victim, "precious").unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("session.json.tmp")).unwrap();
    let tmux = Tmux::new("plant");
    let exit = start(&tmux, dir);
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    assert_eq!(wait_file(&exit, 30), "0", "exit status after q");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert_eq!(session(dir)["text"], AREA, "the session saved");
    let meta = std::fs::symlink_metadata(dir.join("session.json")).unwrap();
    assert!(meta.is_file(), "session.json is a plain file");
    let tmps: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp") && n != "session.json.tmp")
        .collect();
    assert!(tmps.is_empty(), "temporaries left: {tmps:?}");
}

/// A usage error quoting a hostile file name (`codescope syntax *.py` in a directory
/// holding one) reaches the terminal printable: the pane's title stays, the sequence is
/// shown escaped.
#[test]
fn tty_a_usage_error_quoting_a_file_name_is_printable() {
    let d = tempfile::tempdir().unwrap();
    let tmux = Tmux::new("usage");
    let exit = start_cmd(
        &tmux,
        d.path(),
        "",
        "syntax a.py \"$(printf 'b\\033]2;pwned\\007.py')\"",
    );
    assert_eq!(wait_file(&exit, 60), "2", "a usage error");
    let title = tmux.run(&["display", "-p", "-t", "e2e", "#{pane_title}"]);
    assert!(
        !title.contains("pwned"),
        "the pane's title was set: {title}"
    );
    let s = tmux.screen();
    assert!(s.contains("unexpected argument"), "{s}");
    assert!(s.contains("\\u{1b}]2;pwned\\u{7}"), "{s}");
}

/// `codescope models` prints the cache's path (and the GGUF files dequantized entries
/// come from): to a terminal, printable like every other text output.
#[test]
fn tty_models_prints_a_hostile_cache_path_printable() {
    let d = tempfile::tempdir().unwrap();
    let tmux = Tmux::new("models");
    let exit = start_cmd(
        &tmux,
        d.path(),
        &format!(
            "CODESCOPE_CACHE=\"{}/c$(printf '\\033]2;pwned\\007')\"",
            d.path().display()
        ),
        "models",
    );
    assert_eq!(wait_file(&exit, 60), "0");
    let title = tmux.run(&["display", "-p", "-t", "e2e", "#{pane_title}"]);
    assert!(
        !title.contains("pwned"),
        "the pane's title was set: {title}"
    );
    assert!(
        tmux.screen().contains("\\u{1b}]2;pwned"),
        "{}",
        tmux.screen()
    );
}

/// On a 16-colour terminal (`TERM=linux`, the Linux console) the explorer draws with the
/// 16 ANSI colours only: category hues, intensities as `░▒▓█` glyphs; no 256-colour or
/// 24-bit code reaches the terminal. `TERM=dumb` is refused in one line.
#[test]
fn tty_a_16_colour_terminal_gets_16_colours_and_dumb_is_refused() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("area.py"), AREA).unwrap();
    let tmux = Tmux::new("ansi16");
    let exit = start_cmd(
        &tmux,
        d.path(),
        &format!("{} TERM=linux COLORTERM=", sandbox(d.path())),
        &format!("--model '{}' area.py", model()),
    );
    tmux.wait_for("the analysis", 120, analysed);
    let esc = tmux.run(&["capture-pane", "-p", "-e", "-t", "e2e"]);
    // crossterm writes every palette colour as `38;5;N`: on a 16-colour terminal only the
    // first 16 entries may appear, and never a 24-bit colour.
    let mut palette = Vec::new();
    for key in ["38;5;", "48;5;"] {
        for part in esc.split(key).skip(1) {
            let n: String = part.chars().take_while(char::is_ascii_digit).collect();
            palette.push(n.parse::<u32>().unwrap());
        }
    }
    assert!(
        !esc.contains("38;2;") && !esc.contains("48;2;"),
        "24-bit colour"
    );
    assert!(
        palette.iter().all(|&n| n < 16),
        "colours past the 16: {palette:?}"
    );
    // Some 16-colour foreground is used (tokens keep their category hues) ...
    assert!(palette.len() > 3, "no 16-colour foreground: {palette:?}");
    // ... and the heat map's intensities are glyphs.
    let s = tmux.screen();
    assert!(s.chars().any(|c| "░▒▓█".contains(c)), "{s}");
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    assert_eq!(wait_file(&exit, 30), "0");

    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("area.py"), AREA).unwrap();
    let tmux = Tmux::new("dumb");
    let exit = start_cmd(
        &tmux,
        d.path(),
        &format!("{} TERM=dumb", sandbox(d.path())),
        &format!("--model '{}' area.py", model()),
    );
    assert_eq!(wait_file(&exit, 30), "1");
    let s = tmux.screen();
    assert!(
        s.contains("codescope: error: input TERM=dumb: this terminal cannot place the cursor"),
        "{s}"
    );
}

/// `--help` says which colours each kind of terminal gets.
#[test]
fn help_names_the_colour_modes() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_codescope"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    for want in ["COLORTERM=truecolor", "TERM=linux", "NO_COLOR", "TERM=dumb"] {
        assert!(help.contains(want), "--help does not name {want}: {help}");
    }
}

/// `--ascii` (and a locale that names another character set than UTF-8): the explorer
/// draws no box drawing, block or geometric glyph, frames as `+-|`, and the heat map is
/// still there as coloured cells.
#[test]
fn tty_ascii_draws_with_ascii_only() {
    let drawing = |c: char| ('\u{2500}'..='\u{25ff}').contains(&c);
    for (tag, env, flag) in [
        ("ascii", "", "--ascii "),
        ("latin1", " LANG=en_US.ISO-8859-1 LC_ALL= LC_CTYPE=", ""),
    ] {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("area.py"), AREA).unwrap();
        let tmux = Tmux::new(tag);
        let exit = start_cmd(
            &tmux,
            d.path(),
            &format!("{}{env} COLORTERM=truecolor", sandbox(d.path())),
            &format!("{flag}--model '{}' area.py", model()),
        );
        tmux.wait_for("the analysis", 120, analysed);
        let s = tmux.screen();
        let bad: String = s.chars().filter(|&c| drawing(c)).collect();
        assert!(bad.is_empty(), "{tag}: drawing glyphs {bad:?}\n{s}");
        assert!(s.contains("+-"), "{tag}: no ASCII frame\n{s}");
        // The heat map's cells are spaces on a 24-bit background colour.
        let esc = tmux.run(&["capture-pane", "-p", "-e", "-t", "e2e"]);
        assert!(
            esc.matches("48;2;").count() > 10,
            "{tag}: no heat-map colours"
        );
        tmux.run(&["send-keys", "-t", "e2e", "q"]);
        assert_eq!(wait_file(&exit, 30), "0");
    }
}

/// `--lines A-B` starts the explorer on those lines of the file (the code panel names
/// them); a range past the end is a one-line error (exit 1), a reversed one a usage error,
/// and `--lines` before a command is refused rather than ignored.
#[test]
fn tty_lines_starts_on_a_region() {
    let d = tempfile::tempdir().unwrap();
    let text = format!("import os\n\n\n{AREA}");
    std::fs::write(d.path().join("area.py"), &text).unwrap();
    let tmux = Tmux::new("lines");
    let exit = start_cmd(
        &tmux,
        d.path(),
        &sandbox(d.path()),
        &format!("--lines 4-99 --model '{}' area.py", model()),
    );
    tmux.wait_for("the analysis", 120, analysed);
    let s = tmux.screen();
    let last = text.lines().count();
    assert!(s.contains(&format!("area.py lines 4-{last}")), "{s}");
    assert!(!s.contains("import os"), "{s}");
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    assert_eq!(wait_file(&exit, 30), "0");
    let cmd = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_codescope"))
            .env("CODESCOPE_LOG_FILE", d.path().join("log"))
            .current_dir(d.path())
            .args(args)
            .output()
            .unwrap()
    };
    let o = cmd(&["--lines", "90-99", "area.py"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("the snippet has {last} lines")),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(cmd(&["--lines", "9-2", "area.py"]).status.code(), Some(2));
    let o = cmd(&["--lines", "1-2", "syntax", "area.py"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is the explorer's"));
}

/// The head grid's ablation scores and the logit lens through the real binary and its
/// worker thread, on the tiny Llama: `7` fills the grid head by head (the status line
/// ends with the head identifiers suffer most from), `Y` opens the lens (the selected
/// cell's line under the grid), Esc closes it, `q` quits.
#[test]
fn tty_ablation_scores_and_the_logit_lens_run_in_the_worker() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("area.py"), AREA).unwrap();
    let llama = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny_llama");
    let tmux = Tmux::new("ablens");
    let exit = start_cmd(
        &tmux,
        d.path(),
        &sandbox(d.path()),
        &format!("--model '{}' area.py", llama.display()),
    );
    tmux.wait_for("the analysis", 120, |s| {
        s.contains("def area(w, h)") && s.contains("(llama)") && s.contains("rows query")
    });
    tmux.run(&["send-keys", "-t", "e2e", "7"]);
    let s = tmux.wait_for("the ablation", 60, |s| {
        s.contains("ablation: 8 heads zeroed (Δ bits); identifiers suffer most from L")
    });
    assert!(s.contains("Heads · ablation: ids [s]"), "{s}");
    tmux.run(&["send-keys", "-t", "e2e", "Y"]);
    let s = tmux.wait_for("the lens", 60, |s| {
        s.contains("Logit lens") && s.contains("L2 (output): top-1")
    });
    assert!(s.contains("identifiers decided at:"), "{s}");
    tmux.run(&["send-keys", "-t", "e2e", "Escape"]);
    tmux.wait_for("the lens closed", 30, |s| !s.contains("Logit lens"));
    tmux.run(&["send-keys", "-t", "e2e", "q"]);
    assert_eq!(wait_file(&exit, 30), "0", "exit status after q");
}
