//! `codescope syntax` and `codescope analyze`: a snippet's code tokens and gold graphs, and
//! the analysis of one snippet (head scores, category attention, surprisal).

use super::*;

pub(super) fn syntax_cmd(settings: &Settings, args: &SyntaxArgs) -> Result<()> {
    let inp = input::read(&args.file)?;
    let lang = settings.language_for(&args.file, &inp.text);
    let syn = syntax::parse(&inp.text, lang).map_err(|e| Error::Syntax(e.to_string()))?;
    if args.json {
        let doc = syn.to_json().map_err(|e| Error::Syntax(e.to_string()))?;
        print(&format!("{doc}\n"))
    } else {
        print(&syn.render_table(color_stdout()))
    }
}

pub(super) fn analyze_cmd(settings: &Settings, args: &AnalyzeArgs) -> Result<()> {
    let threshold = args.threshold;
    let inp = input::read(&args.file)?;
    let lang = settings.language_for(&args.file, &inp.text);
    let m = load_model(
        settings.model.as_deref(),
        settings.load_options(settings.random_weights),
    )?;
    let a = analysis::analyze(
        &m,
        &inp.text,
        lang,
        &analysis::AnalyzeOptions {
            mode: args.mode,
            threshold,
            sweep: args.sweep,
        },
    )?;
    if a.trace.truncated > 0 {
        crate::logging::notice(format_args!(
            "notice: input truncated to the window of {} tokens ({} dropped)",
            m.info.stream_window, a.trace.truncated
        ));
    }
    // The cross stack: no head scores (the summary and the JSON say why; CSV, which has
    // no place for it, on stderr) and so no study GED either.
    let withheld = a.head_scores_withheld();
    if let (Some(why), true) = (withheld, args.csv) {
        crate::logging::notice(format_args!("notice: {why}"));
    }
    let ged_max = match args.ged.filter(|_| withheld.is_none()) {
        Some(_) => analysis::ged::max_tokens()?,
        None => 0,
    };
    let ged = args
        .ged
        .filter(|_| withheld.is_none())
        .map(|analysis::ged::GedVariant::Study| {
            let g = analysis::ged::compute(&a, threshold, ged_max);
            if let Err(why) = &g {
                crate::logging::notice(format_args!("notice: study GED skipped: {why}"));
            }
            g
        });
    if args.json {
        let mut doc = analysis::report::to_json(&a);
        if let Some(g) = &ged {
            doc["ged_study"] = analysis::report::ged_study_json(&a, g, ged_max);
        }
        print(&format!("{doc}\n"))
    } else if args.csv {
        let mut out = analysis::report::to_csv(&a);
        if let Some(Ok(g)) = &ged {
            out.push_str(&analysis::report::ged_study_csv(&a, g));
        }
        print(&out)
    } else {
        let mut out = analysis::report::summary(&inp.name, &a);
        if let Some(g) = &ged {
            out.push_str(&analysis::report::ged_study_text(&a, g));
        }
        print(&out)
    }
}
