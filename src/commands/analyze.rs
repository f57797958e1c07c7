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
    let m = load_model(settings.model.as_deref(), settings.random_weights)?;
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
    if args.json {
        print(&format!("{}\n", analysis::report::to_json(&a)))
    } else if args.csv {
        print(&analysis::report::to_csv(&a))
    } else {
        print(&analysis::report::summary(&inp.name, &a))
    }
}
