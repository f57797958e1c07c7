//! The explorer, codescope's main job (no subcommand): on FILE, the bundled sample, the
//! first step of `--tour`, or the session of `--resume`.

use crate::cli::Cli;
use crate::error::{Error, Result};
use crate::model::Stack;
use crate::present::session;
use crate::settings::Settings;
use crate::syntax::Language;
use crate::tui::{tour_state, Start};

/// The explorer (no subcommand): on FILE, the bundled sample, the first step of
/// `--tour`, or the session of `--resume`.
pub fn explore(cli: &Cli, s: &Settings) -> Result<()> {
    let mut start = Start {
        export_dir: crate::export::export_dir(cli.export_dir.as_deref()),
        ..Start::default()
    };
    let mut model = s.model.clone();
    let mut stack = s.stack;
    if let Some(p) = &cli.tour {
        start.tour = Some(tour_state(p)?);
    }
    let (name, text, lang) = if cli.resume {
        let sess = session::load_from(&session::path())?;
        let lang = Language::from_name(&sess.lang).map_err(|e| Error::Syntax(e.to_string()))?;
        if model.is_none() {
            model = sess.model.clone();
        }
        // The session's stack unless `--stack` names another than the default.
        if stack == Stack::Encoder {
            if let Some(st) = sess.stack.as_deref().and_then(Stack::from_name) {
                stack = st;
            }
        }
        if start.tour.is_none() {
            if let Some((p, _)) = &sess.tour {
                start.tour = tour_state(p).ok();
            }
        }
        let r = (sess.name.clone(), sess.text.clone(), lang);
        start.session = Some(sess);
        r
    } else if let (None, Some(t)) = (&cli.file, &start.tour) {
        match t.snippets.first() {
            Some(first) => {
                let snip = first.clone().map_err(|reason| Error::Input {
                    name: format!("{} step 1", t.path.display()),
                    reason,
                })?;
                if let Some(m) = t.tour.models(model.as_deref())[0].clone() {
                    model = Some(m);
                }
                stack = t.tour.stacks(stack)[0];
                start.step = Some(0);
                (snip.name, snip.text, snip.lang)
            }
            None => sample(s),
        }
    } else {
        match &cli.file {
            Some(f) => {
                let inp = crate::input::read(f)?;
                let lang = s.language_for(&inp.name, &inp.text);
                (inp.name, inp.text, lang)
            }
            None => sample(s),
        }
    };
    let (name, text) = match cli.lines {
        None => (name, text),
        Some(range) => {
            let (part, (a, b)) =
                crate::tui::data::region(&text, range).map_err(|reason| Error::Input {
                    name: "--lines".into(),
                    reason,
                })?;
            start.region = Some(crate::tui::app::Region {
                name: name.clone(),
                text,
                lines: (a, b),
            });
            (format!("{name} lines {a}-{b}"), part)
        }
    };
    let mut settings = s.clone();
    settings.model = model;
    settings.stack = stack;
    crate::tui::run(crate::tui::ExplorerOptions {
        name,
        text,
        lang,
        settings,
        start,
    })
}

fn sample(s: &Settings) -> (String, String, Language) {
    let (name, text) = super::DEFAULT_SAMPLE;
    (name.into(), text.into(), s.language_for(name, text))
}
