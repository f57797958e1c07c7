//! `codescope compare` and `codescope rewrite`: a snippet against its renamed twin, and the
//! twins themselves.

use super::*;

pub(super) fn compare_cmd(settings: &Settings, args: &CompareArgs) -> Result<()> {
    use analysis::compare::{self, TwinSpec};
    if !(0.0..1.0).contains(&args.threshold) {
        return Err(Error::Input {
            name: "--threshold".into(),
            reason: format!("{} is outside [0, 1)", args.threshold),
        });
    }
    let inp = input::read(&args.file)?;
    let lang = settings.language_for(&args.file, &inp.text);
    let a = std::sync::Arc::new(analysis::parse(&inp.text, lang)?);
    let twin_spec = match &args.twin {
        Some(f) => {
            let t = input::read(f)?;
            TwinSpec::Text {
                label: t.name,
                text: t.text,
            }
        }
        None => TwinSpec::Rename(rewrite_of(&args.rewrite, args.seed)?),
    };
    let twin = std::sync::Arc::new(compare::make_twin(&a, &twin_spec)?);
    if twin.b.errors.len() > a.errors.len() {
        crate::logging::notice(format_args!(
            "notice: the twin has {} parse errors, the original {}",
            twin.b.errors.len(),
            a.errors.len()
        ));
    }
    let m = load_model(
        settings.model.as_deref(),
        settings.load_options(settings.random_weights),
    )?;
    let opts = analysis::AnalyzeOptions {
        mode: args.mode,
        threshold: args.threshold,
        sweep: false,
    };
    if let Some(task) = args.probe {
        if task.is_pair() || args.mode != analysis::Mode::Source {
            return Err(Error::Input {
                name: "--probe".into(),
                reason: format!(
                    "`{}`: compare labels single tokens in source mode (category, depth)",
                    task.name()
                ),
            });
        }
    }
    let ro = analysis::RunOptions {
        lm: m.info.causal,
        hidden: args.probe.is_some(),
        ..Default::default()
    };
    let mut c = compare::compare(&m, a, twin, &opts, &ro)?;
    if let Some(task) = args.probe {
        let snippets = crate::probe::bundled::snippets(Some(lang));
        let spec = crate::probe::RunSpec {
            tasks: vec![task],
            cache_root: Some(settings.cache_dir.clone()),
            ..crate::probe::RunSpec::new(&m, &snippets, format!("bundled:{}", lang.name()))
        };
        crate::logging::notice(format_args!(
            "training {} probes on the bundled {} corpus…",
            task.name(),
            lang.name()
        ));
        let report = crate::probe::run(&spec, &mut |_| {})?;
        c.probe = crate::probe::twin_agreement(&report, task, &c).map(|v| (task.name(), v));
    }
    for (side, x) in [("original", &c.a), ("twin", &c.b)] {
        if x.trace.truncated > 0 {
            crate::logging::notice(format_args!(
                "notice: the {side} was truncated to the window of {} tokens ({} dropped)",
                m.info.window, x.trace.truncated
            ));
        }
    }
    if args.json {
        print(&format!("{}\n", compare::to_json(&c)))
    } else if args.csv {
        // CSV has no place for the reason the cross stack has no head scores: stderr.
        if let Some(why) = c.a.head_scores_withheld() {
            crate::logging::notice(format_args!("notice: {why}"));
        }
        print(&compare::to_csv(&c))
    } else {
        print(&compare::summary(&inp.name, &c))
    }
}

pub(super) fn rewrite_cmd(settings: &Settings, args: &RewriteArgs) -> Result<()> {
    let rw = rewrite_of(&args.rewrite, args.seed)?;
    if let Some(data) = &args.data {
        let lang = settings.lang;
        let (name, mut snippets) = if data == "bundled" {
            (
                "the bundled probe corpus".to_string(),
                crate::probe::bundled::snippets(lang),
            )
        } else {
            let path = if data == "stdlib" {
                python_stdlib()?
            } else {
                std::path::PathBuf::from(data)
            };
            let c = crate::corpus::load(&path, lang, args.limit)?;
            (path.display().to_string(), c.snippets)
        };
        if let Some(n) = args.limit {
            snippets.truncate(n);
        }
        let r = analysis::compare::check_corpus(&snippets, rw);
        return print(&analysis::compare::check_table(&r, rw, &name));
    }
    let file = args.file.as_deref().unwrap_or("-");
    let inp = input::read(file)?;
    let lang = settings.language_for(file, &inp.text);
    let a = analysis::parse(&inp.text, lang)?;
    let t = syntax::rewrite::rename(&a, rw)
        .map_err(|e| Error::Syntax(format!("{}: {e}", rw.name())))?;
    if args.json {
        let doc = serde_json::json!({
            "rewrite": rw.name(),
            "text": t.b.source,
            "renamed": t.renamed,
            "alignment": t.pairs,
            "changed": t.pairs.iter().zip(&t.changed).filter(|(_, c)| **c).map(|(p, _)| *p).collect::<Vec<_>>(),
        });
        print(&format!("{doc}\n"))
    } else {
        print(&t.b.source)
    }
}
