//! Tours: a TOML file of steps to present, one view each. A step names its snippet (a
//! file, relative to the tour file, or inline `code`), optionally its language and
//! model (default: the previous step's, the first step's default `--model`), an
//! encoder–decoder's `stack` (`encoder`, `decoder`, `cross`; default: the previous
//! step's, the first step's `--stack`), the
//! [`Scene`] (view, layer, head, token, threshold, ...), a `caption` shown in the
//! status line, and a `rewrite` (the explorer turns compare mode on with that twin; the
//! pre-rendered deck shows the snippet alone).
//!
//! ```toml
//! title = "What MiniLM attends to"
//!
//! [[step]]
//! file = "area.py"
//! model = "minilm"
//! view = "heatmap"
//! layer = 3
//! head = 5
//! token = "w#2"
//! caption = "Head 3.5 links each use of a parameter to its definition"
//! ```
//!
//! `codescope --tour talk.toml` presents it (`]` / `[` step), `B` in the explorer
//! appends the current view as a step ([`append`]), and `codescope render --tour
//! talk.toml --out DIR` pre-renders every step (`commands::render`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Scene;
use crate::error::{Error, Result};
use crate::export::figure::Kind;
use crate::model::Stack;
use crate::syntax::Language;

/// One step of a tour.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// The snippet's file, relative to the tour file (or absolute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The snippet inline (instead of `file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The name an inline snippet is shown under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `python` or `java` (default: from the file name, else python).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lang: Option<String>,
    /// Model spec (default: the previous step's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// An encoder–decoder's stack: `encoder`, `decoder` or `cross` (default: the
    /// previous step's, the first step's `--stack`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
    /// A twin to compare with (`rename:neutral`, `rename:shuffle`, or a twin file,
    /// `twin:FILE`, relative to the tour): the explorer shows the step in compare mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewrite: Option<String>,
    /// Shown in the status line while the step is on screen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
    #[serde(flatten)]
    pub scene: Scene,
}

/// A tour file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tour {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, rename = "step")]
    pub steps: Vec<Step>,
    /// The directory relative paths are read from (the tour file's).
    #[serde(skip)]
    pub base: PathBuf,
}

/// A step's snippet, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snippet {
    pub name: String,
    pub text: String,
    pub lang: Language,
}

impl Step {
    /// The step's snippet (its file read relative to `base`, or its inline code).
    pub fn snippet(&self, base: &Path) -> Result<Snippet> {
        let (name, text) = match (&self.file, &self.code) {
            (Some(f), None) => {
                let p = base.join(f);
                let inp = crate::input::read(&p.display().to_string())?;
                (inp.name, inp.text)
            }
            (None, Some(c)) => (
                self.name.clone().unwrap_or_else(|| "tour snippet".into()),
                c.clone(),
            ),
            _ => {
                return Err(Error::Input {
                    name: "tour step".into(),
                    reason: "give exactly one of `file` and `code`".into(),
                })
            }
        };
        let lang = match &self.lang {
            Some(l) => Language::from_name(l).map_err(|e| Error::Syntax(e.to_string()))?,
            None => Language::from_path(Path::new(&name)).unwrap_or(Language::Python),
        };
        Ok(Snippet { name, text, lang })
    }

    /// The step's view (heatmap when not given).
    pub fn kind(&self) -> Kind {
        self.scene.view.unwrap_or(Kind::Heatmap)
    }
}

impl Tour {
    /// Read and check a tour file.
    pub fn load(path: &Path) -> Result<Tour> {
        let text = crate::fsio::read_to_string_bounded(
            path,
            crate::model::limits::MAX_CONFIG_BYTES,
            "the tour",
        )?;
        let mut t = Tour::parse(&text).map_err(|reason| Error::Input {
            name: path.display().to_string(),
            reason,
        })?;
        t.base = path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        Ok(t)
    }

    /// Parse tour text (no file access; snippet files are read when shown).
    pub fn parse(text: &str) -> std::result::Result<Tour, String> {
        let t: Tour = toml::from_str(text).map_err(|e| e.message().to_string())?;
        for (i, s) in t.steps.iter().enumerate() {
            if s.file.is_some() == s.code.is_some() {
                return Err(format!(
                    "step {}: give exactly one of `file` and `code`",
                    i + 1
                ));
            }
            if let Some(l) = &s.lang {
                Language::from_name(l).map_err(|e| format!("step {}: {e}", i + 1))?;
            }
            if let Some(st) = s.stack.as_deref() {
                if Stack::from_name(st).is_none() {
                    return Err(format!(
                        "step {}: stack '{st}' is not one of {}",
                        i + 1,
                        Stack::NAMES.join(", ")
                    ));
                }
            }
        }
        Ok(t)
    }

    /// The stack each step runs with: its own, else the previous step's, else `default`
    /// (names checked by [`Tour::parse`]).
    pub fn stacks(&self, default: Stack) -> Vec<Stack> {
        let mut cur = default;
        self.steps
            .iter()
            .map(|s| {
                if let Some(st) = s.stack.as_deref().and_then(Stack::from_name) {
                    cur = st;
                }
                cur
            })
            .collect()
    }

    /// The model each step runs with: its own, else the previous step's, else
    /// `default`.
    pub fn models(&self, default: Option<&str>) -> Vec<Option<String>> {
        let mut cur = default.map(str::to_string);
        self.steps
            .iter()
            .map(|s| {
                if let Some(m) = &s.model {
                    cur = Some(m.clone());
                }
                cur.clone()
            })
            .collect()
    }
}

/// TOML text of one step as an `[[step]]` table (appended to a tour file).
pub fn step_toml(step: &Step) -> String {
    #[derive(Serialize)]
    struct One<'a> {
        step: [&'a Step; 1],
    }
    toml::to_string(&One { step: [step] }).unwrap_or_default()
}

/// Append `step` to the tour file at `path` (created, with a comment, if missing).
pub fn append(path: &Path, step: &Step) -> std::io::Result<()> {
    use std::io::Write as _;
    let exists = path.exists();
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    if !exists {
        writeln!(
            f,
            "# A codescope tour: `codescope --tour {}` presents it (] next, [ back).",
            path.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        )?;
    }
    write!(f, "\n{}", step_toml(step))
}

/// Append the explorer's current view (`step`, with its snippet inline) to the tour
/// at `path`: when the snippet's name is a file that still holds exactly this text,
/// the step refers to the file (relative to the tour's directory when it is inside
/// it) instead of repeating the code. Returns the step as written and its snippet.
pub fn append_here(path: &Path, mut step: Step) -> std::result::Result<(Step, Snippet), String> {
    let text = step.code.clone().unwrap_or_default();
    let name = step.name.clone().unwrap_or_else(|| "tour snippet".into());
    let lang = step
        .lang
        .as_deref()
        .and_then(|l| Language::from_name(l).ok())
        .unwrap_or(Language::Python);
    let file = Path::new(&name);
    if file.is_file()
        && crate::fsio::read_to_string_bounded(
            file,
            crate::syntax::MAX_SOURCE_BYTES as u64,
            "a snippet",
        )
        .is_ok_and(|t| t == text)
    {
        let abs = std::fs::canonicalize(file).map_err(|e| e.to_string())?;
        let base = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map_or_else(
                || std::env::current_dir().ok(),
                |d| std::fs::canonicalize(d).ok(),
            );
        // Relative to the tour's directory, with `..` where the file is outside it (the
        // README's rule: a tour moves with its files); absolute only without a base.
        let rel = base.map_or(abs.clone(), |b| relative_to(&abs, &b));
        step.file = Some(rel.display().to_string());
        step.code = None;
        step.name = None;
        if Language::from_path(file) == Some(lang) {
            step.lang = None;
        }
    }
    append(path, &step).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((step, Snippet { name, text, lang }))
}

/// `path` relative to the directory `base` (both absolute): the common part dropped, a
/// `..` for each of `base`'s remaining components.
fn relative_to(path: &Path, base: &Path) -> std::path::PathBuf {
    let (p, b): (Vec<_>, Vec<_>) = (path.components().collect(), base.components().collect());
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if common == 0 {
        return path.to_path_buf();
    }
    let mut out = std::path::PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &p[common..] {
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::present::{HeadSpec, TokenSpec};

    const TOUR: &str = r#"
title = "Demo"

[[step]]
file = "a.py"
model = "minilm"
layer = 2
head = 3
token = "x"
caption = "first"

[[step]]
code = "def f(x):\n    return x\n"
lang = "python"
view = "heads"
head = "mean"
rewrite = "rename:neutral"
"#;

    #[test]
    fn reads_steps_and_models() {
        let t = Tour::parse(TOUR).unwrap();
        assert_eq!(t.title.as_deref(), Some("Demo"));
        assert_eq!(t.steps.len(), 2);
        assert_eq!(t.steps[0].scene.layer, Some(2));
        assert_eq!(t.steps[0].scene.head, Some(HeadSpec::Number(3)));
        assert_eq!(t.steps[0].scene.token, Some(TokenSpec::Text("x".into())));
        assert_eq!(t.steps[1].kind(), Kind::Heads);
        assert_eq!(t.steps[1].rewrite.as_deref(), Some("rename:neutral"));
        assert_eq!(
            t.models(Some("tiny")),
            vec![Some("minilm".to_string()), Some("minilm".to_string())]
        );
        let s = t.steps[1].snippet(Path::new(".")).unwrap();
        assert_eq!(
            (s.name.as_str(), s.lang),
            ("tour snippet", Language::Python)
        );
    }

    #[test]
    fn rejects_bad_steps() {
        assert!(Tour::parse("[[step]]\nlayer = 1")
            .unwrap_err()
            .contains("exactly one"));
        assert!(Tour::parse("[[step]]\nfile = \"a\"\ncode = \"b\"").is_err());
        assert!(Tour::parse("[[step]]\nfile = \"a\"\nlayr = 1").is_err());
        assert!(Tour::parse("[[step]]\nfile = \"a\"\nlang = \"cobol\"").is_err());
        assert!(Tour::parse("title = 3").is_err());
    }

    #[test]
    fn appended_steps_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.toml");
        let mut s = Step {
            code: Some("x = 1\n".into()),
            caption: Some("one \"quoted\"".into()),
            ..Step::default()
        };
        s.scene.layer = Some(2);
        s.scene.head = Some(HeadSpec::Name("mean".into()));
        append(&p, &s).unwrap();
        s.scene.token = Some(TokenSpec::Index(0));
        append(&p, &s).unwrap();
        let t = Tour::load(&p).unwrap();
        assert_eq!(t.steps.len(), 2);
        assert_eq!(t.steps[1], s);
        assert_eq!(t.base, dir.path());
    }

    #[test]
    fn recorded_files_are_relative_to_the_tour_even_outside_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("talks")).unwrap();
        std::fs::create_dir_all(root.join("code/pkg")).unwrap();
        let file = root.join("code/pkg/a.py");
        std::fs::write(&file, "x = 1\n").unwrap();
        let tour = root.join("talks/t.toml");
        let step = Step {
            code: Some("x = 1\n".into()),
            name: Some(file.display().to_string()),
            ..Step::default()
        };
        let (written, _) = append_here(&tour, step).unwrap();
        assert_eq!(written.file.as_deref(), Some("../code/pkg/a.py"));
        // And it reads back to the same file.
        let t = Tour::load(&tour).unwrap();
        let snip = t.steps[0].snippet(&t.base).unwrap();
        assert_eq!(snip.text, "x = 1\n");
        assert_eq!(
            relative_to(Path::new("/a/b/c"), Path::new("/a/b")),
            Path::new("c")
        );
        assert_eq!(
            relative_to(Path::new("/a/x"), Path::new("/a/b/c")),
            Path::new("../../x")
        );
    }
}
