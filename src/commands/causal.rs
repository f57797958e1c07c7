//! `codescope knockout`, `ablate`, `lens` and `patch`: the causal tests (attention knockout
//! against a matched control, head ablation, the logit lens, patching from the twin).

use super::*;

pub(super) fn knockout_cmd(settings: &Settings, args: &crate::cli::KnockoutArgs) -> Result<()> {
    use crate::analysis::causal;
    let opts = causal::KnockoutOptions {
        edges: args.edges[0].clone(),
        layers: args.layers.clone().map(|l| l.0),
        heads: args.heads.clone().map(|h| h.0),
        control: args.control,
        seed: args.seed,
        mode: args.mode,
        probe: None,
    };
    if let Some(data) = &args.data {
        let (corpus, m) = corpus_and_model(settings, data, args.limit)?;
        let name = crate::error::printable(data, false).into_owned();
        let mut probe_key = None;
        let opts = match &args.probe {
            Some(task) => {
                let (pu, digest) = train_probe(settings, args, &m, task, Some(&corpus.snippets))?;
                probe_key = Some(crate::analysis::causal_shard::ProbeKey::new(
                    &pu.info(),
                    digest,
                    args.probe_limit,
                ));
                causal::KnockoutOptions {
                    probe: Some(std::sync::Arc::new(pu)),
                    ..opts
                }
            }
            None => opts,
        };
        let mut progress = |done: usize, total: usize| {
            tracing::info!(done, total, "knockout corpus progress");
        };
        if let (Some(shard), Some(dir)) = (args.shard, &args.shard_out) {
            let per = causal::knockout_snippets(
                &m,
                &corpus.snippets,
                &|i| shard.owns(i),
                &args.edges,
                &opts,
                &mut progress,
            )?;
            let key = run_key(settings, &m, &corpus.snippets, &name, args.limit, args.mode)?;
            let key = crate::analysis::causal_shard::RunKey {
                command: "knockout".into(),
                seed: args.seed,
                edges: args.edges.iter().map(causal::EdgeSet::name).collect(),
                knock_layers: opts.layers.clone(),
                knock_heads: opts.heads.clone(),
                control: args.control,
                probe: probe_key,
                ..key
            };
            let info = serde_json::to_value(&m.info)
                .map_err(|e| Error::Compute(format!("cannot record the model: {e}")))?;
            let path = crate::analysis::causal_shard::write_knockout(dir, key, info, shard, &per)?;
            return shard_written(shard, per.len(), &path);
        }
        let r = causal::knockout_corpus(&m, &corpus.snippets, &args.edges, &opts, &mut progress)?;
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
    let m = load_model(
        settings.model.as_deref(),
        settings.load_options(settings.random_weights),
    )?;
    let opts = match &args.probe {
        Some(task) => causal::KnockoutOptions {
            probe: Some(std::sync::Arc::new(
                train_probe(settings, args, &m, task, None)?.0,
            )),
            ..opts
        },
        None => opts,
    };
    let r = causal::knockout(&m, &inp.text, lang, &opts)?;
    print_out(
        &args.out,
        || r.to_json(&m.info),
        || r.to_csv(),
        || r.summary_text(&crate::error::printable(&inp.name, false)),
    )
}

/// The task `knockout --probe` names: a token or a pair task of `codescope probe`.
fn probe_task(name: &str) -> Result<crate::probe::Task> {
    use clap::ValueEnum;
    const TASKS: &str =
        "token tasks: category, depth; pair tasks: distance, distance_id, siblings, siblings_id, dfg";
    crate::probe::Task::from_str(name.trim(), false).map_err(|_| Error::Input {
        name: "--probe".into(),
        reason: match name.trim() {
            "ast" | "structural" => format!(
                "{name} is a tree probe, neither a token nor a pair task; the knockout reads {TASKS}"
            ),
            _ => format!(
                "unknown task {:?} ({TASKS})",
                crate::error::printable(name, false)
            ),
        },
    })
}

/// `knockout --probe TASK`: a linear probe of `task` at `--probe-layer` trained as
/// `codescope probe --task TASK --layer L [--pair-features HOW]` trains it (its corpus,
/// pairs, split, seed and feature cache), once per run; with the digest of its training
/// corpus. It labels a snippet as `probe` labels each of its snippets, pair tasks without
/// the `--max-pairs` cap (every pair the task labels, the non-edges drawn from the task's
/// stream of its first snippet). With `--data`, `read` are the corpus's snippets it is
/// read on: a one-line warning says how many of them it was trained on (the same code).
fn train_probe(
    settings: &Settings,
    args: &crate::cli::KnockoutArgs,
    m: &crate::model::LoadedModel,
    task: &str,
    read: Option<&[crate::corpus::Snippet]>,
) -> Result<(crate::analysis::causal::ProbeUse, String)> {
    use crate::probe;
    let task = probe_task(task)?;
    // Before the probe is trained (a corpus run would otherwise fail on every snippet).
    crate::analysis::causal::refuse_cross(m)?;
    let pair = match (task.is_pair(), args.probe_pair_features) {
        (true, pf) => Some(pf.unwrap_or_default()),
        (false, None) => None,
        (false, Some(_)) => {
            return Err(Error::Input {
                name: "--probe-pair-features".into(),
                reason: format!(
                    "{} is a token task; pair features go with a pair task (distance, distance_id, siblings, siblings_id, dfg)",
                    task.name()
                ),
            })
        }
    };
    if args.mode != crate::analysis::Mode::Source {
        return Err(Error::Input {
            name: "--probe".into(),
            reason: "probes are trained on the source as written: drop --mode paper".into(),
        });
    }
    if crate::analysis::causal::Measure::of(m) != crate::analysis::causal::Measure::Cosine {
        return Err(Error::Input {
            name: "--probe".into(),
            reason: format!(
                "reads encoders measured by 1 - cos (this model's effects are {})",
                crate::analysis::causal::Measure::of(m).name()
            ),
        });
    }
    let layer = args.probe_layer.unwrap_or(m.info.layers);
    if layer > m.info.layers {
        return Err(Error::Input {
            name: "--probe-layer".into(),
            reason: format!(
                "layer {layer} does not exist: {} has hidden layers 0 (embeddings) to {}",
                m.info.source, m.info.layers
            ),
        });
    }
    let (name, snippets) =
        super::probe::probe_corpus(settings, args.probe_corpus.as_deref(), args.probe_limit)?;
    if let Some(read) = read {
        let trained: std::collections::HashSet<&str> =
            snippets.iter().map(|s| s.code.as_str()).collect();
        let seen = read
            .iter()
            .filter(|s| trained.contains(s.code.as_str()))
            .count();
        if seen > 0 {
            crate::logging::notice(format_args!(
                "warning: the probe was trained on {seen} of the {} snippets it is read on ({}); --probe-corpus names another corpus",
                read.len(),
                crate::error::printable(&name, false)
            ));
        }
    }
    let digest = crate::corpus::digest(&snippets);
    let spec = probe::RunSpec {
        tasks: vec![task],
        layers: Some(vec![layer]),
        cache_root: Some(settings.cache_dir.clone()),
        pair_features: pair.unwrap_or_default(),
        ..probe::RunSpec::new(m, &snippets, name.clone())
    };
    let (seed, dfg_graph) = (spec.seed, spec.dfg_graph);
    let report = probe::run(&spec, &mut |_| {})?;
    let fitted = report
        .probes
        .iter()
        .find(|p| p.task == task && p.layer == layer)
        .ok_or_else(|| Error::Compute(format!("no {} probe was fitted", task.name())))?;
    let test_accuracy = report
        .results
        .iter()
        .find(|r| r.task == task.name() && r.layer == layer)
        .map_or(f64::NAN, |r| r.accuracy);
    tracing::info!(
        task = task.name(),
        layer,
        test_accuracy,
        "knockout probe trained"
    );
    let classifier = fitted.classifier.clone();
    let pu = crate::analysis::causal::ProbeUse {
        task: task.name().into(),
        classes: task.classes(),
        layer,
        pair_features: pair.map(|p| p.name().to_string()),
        label: Box::new(move |syn, covered| {
            let mut rng = probe::dataset::task_rng(task, seed, 0);
            probe::dataset::label_snippet_with(
                task,
                syn,
                covered,
                0,
                usize::MAX,
                dfg_graph,
                &mut rng,
            )
            .into_iter()
            .map(|e| (e.a, e.b, e.label))
            .collect()
        }),
        predict: Box::new(move |a, b| match (b, pair) {
            (Some(b), Some(pf)) => {
                let mut x = Vec::with_capacity(2 * a.len());
                probe::dataset::push_pair(&mut x, a, b, pf);
                classifier.predict(&x)
            }
            (None, None) => classifier.predict(a),
            _ => None,
        }),
        corpus: crate::error::printable(&name, false).into_owned(),
        snippets: snippets.len(),
        test_accuracy,
    };
    Ok((pu, digest))
}

pub(super) fn ablate_cmd(settings: &Settings, args: &crate::cli::AblateArgs) -> Result<()> {
    use crate::analysis::causal;
    let mode = match args.ablation.as_str() {
        "mean" => crate::model::AblationMode::Mean,
        _ => crate::model::AblationMode::Zero,
    };
    if let Some(data) = &args.data {
        let (corpus, m) = corpus_and_model(settings, data, args.limit)?;
        let mut progress = |done: usize, total: usize| {
            tracing::info!(done, total, "ablation corpus progress");
        };
        if let (Some(shard), Some(dir)) = (args.shard, &args.shard_out) {
            let per = causal::ablate_snippets(
                &m,
                &corpus.snippets,
                &|i| shard.owns(i),
                mode,
                args.mode,
                &mut progress,
            )?;
            let name = crate::error::printable(data, false).into_owned();
            let key = run_key(settings, &m, &corpus.snippets, &name, args.limit, args.mode)?;
            let key = crate::analysis::causal_shard::RunKey {
                command: "ablate".into(),
                seed: args.seed,
                ablation: Some(mode.name().into()),
                ..key
            };
            let info = serde_json::to_value(&m.info)
                .map_err(|e| Error::Compute(format!("cannot record the model: {e}")))?;
            let path = crate::analysis::causal_shard::write_ablation(dir, key, info, shard, &per)?;
            return shard_written(shard, per.len(), &path);
        }
        let r = causal::ablate_corpus(
            &m,
            &corpus.snippets,
            mode,
            args.mode,
            args.seed,
            &mut progress,
        )?;
        let name = crate::error::printable(data, false).into_owned();
        return print_out(
            &args.out,
            || r.to_json(&m.info, &name),
            || r.to_csv(),
            || r.summary_text(&name),
        );
    }
    let file = args.file.as_deref().unwrap_or("-");
    let inp = input::read(file)?;
    let lang = settings.language_for(file, &inp.text);
    let m = load_model(
        settings.model.as_deref(),
        settings.load_options(settings.random_weights),
    )?;
    let p = causal::Prepared::new(&m, &inp.text, lang, args.mode, true)?;
    let r = causal::ablate(&m, &p, mode, &mut |_, _, _| false)?;
    print_out(
        &args.out,
        || r.to_json(&m.info),
        || r.to_csv(),
        || r.summary_text(&crate::error::printable(&inp.name, false)),
    )
}

/// What a knockout, ablation or patch shard shares with the other shards of its run (the
/// command's own fields left at their defaults).
fn run_key(
    settings: &Settings,
    m: &crate::model::LoadedModel,
    snippets: &[crate::corpus::Snippet],
    corpus: &str,
    limit: Option<usize>,
    mode: crate::analysis::Mode,
) -> Result<crate::analysis::causal_shard::RunKey> {
    Ok(crate::analysis::causal_shard::RunKey {
        command: String::new(),
        model: m.info.source.clone(),
        model_digest: m.digest()?,
        random_weights: settings.random_weights,
        corpus: corpus.into(),
        corpus_digest: crate::corpus::digest(snippets),
        corpus_size: snippets.len(),
        limit,
        mode: mode.name().into(),
        measure: crate::analysis::causal::Measure::of(m).name().into(),
        seed: 0,
        layers: m.info.layers,
        heads: m.info.heads,
        edges: Vec::new(),
        knock_layers: None,
        knock_heads: None,
        control: 0,
        ablation: None,
        probe: None,
        rewrite: None,
    })
}

fn shard_written(
    shard: crate::analysis::reproduce::Shard,
    snippets: usize,
    path: &std::path::Path,
) -> Result<()> {
    crate::logging::notice(format_args!(
        "shard {shard}: {snippets} snippets written to {}; `codescope merge` joins the shards",
        path.display()
    ));
    Ok(())
}

pub(super) fn lens_cmd(settings: &Settings, args: &crate::cli::LensArgs) -> Result<()> {
    use crate::analysis::causal;
    let inp = input::read(&args.file)?;
    let lang = settings.language_for(&args.file, &inp.text);
    let m = load_model(
        settings.model.as_deref(),
        settings.load_options(settings.random_weights),
    )?;
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

pub(super) fn patch_cmd(settings: &Settings, args: &crate::cli::PatchArgs) -> Result<()> {
    use analysis::compare::TwinSpec;
    if let Some(data) = &args.data {
        return patch_corpus_cmd(settings, args, data);
    }
    let file = args.file.as_deref().unwrap_or("-");
    let inp = input::read(file)?;
    let lang = settings.language_for(file, &inp.text);
    let spec = match &args.twin {
        Some(f) => {
            let t = input::read(f)?;
            TwinSpec::Text {
                label: t.name,
                text: t.text,
            }
        }
        None => TwinSpec::Rename(rewrite_of(&args.rewrite, args.seed)?),
    };
    let m = load_model(
        settings.model.as_deref(),
        settings.load_options(settings.random_weights),
    )?;
    let r = analysis::patch::patch(&m, &inp.text, lang, &spec)?;
    print_out(
        &args.out,
        || r.to_json(&m.info),
        || r.to_csv(),
        || r.summary_text(&crate::error::printable(&inp.name, false)),
    )
}

/// `patch --data CORPUS`: every snippet against its twin by `--rewrite`, in one process
/// or as shard K/N.
fn patch_corpus_cmd(settings: &Settings, args: &crate::cli::PatchArgs, data: &str) -> Result<()> {
    use analysis::patch;
    let rewrite = rewrite_of(&args.rewrite, args.seed)?;
    let (corpus, m) = corpus_and_model(settings, data, args.limit)?;
    let mut progress = |done: usize, total: usize| {
        tracing::info!(done, total, "patch corpus progress");
    };
    let name = crate::error::printable(data, false).into_owned();
    if let (Some(shard), Some(dir)) = (args.shard, &args.shard_out) {
        let spec = analysis::compare::TwinSpec::Rename(rewrite);
        let per = patch::patch_snippets(
            &m,
            &corpus.snippets,
            &|i| shard.owns(i),
            &spec,
            &mut progress,
        )?;
        let key = run_key(
            settings,
            &m,
            &corpus.snippets,
            &name,
            args.limit,
            analysis::Mode::Source,
        )?;
        let key = crate::analysis::causal_shard::RunKey {
            command: "patch".into(),
            seed: args.seed,
            rewrite: Some(spec.label()),
            ..key
        };
        let info = serde_json::to_value(&m.info)
            .map_err(|e| Error::Compute(format!("cannot record the model: {e}")))?;
        let path = crate::analysis::causal_shard::write_patch(dir, key, info, shard, &per)?;
        return shard_written(shard, per.len(), &path);
    }
    let r = patch::patch_corpus(&m, &corpus.snippets, rewrite, args.seed, &mut progress)?;
    if r.skipped() > 0 {
        crate::logging::notice(format_args!(
            "{} of {} snippets skipped: their twin cannot be patched (the log has each one's \
             reason)",
            r.skipped(),
            r.per.len()
        ));
    }
    print_out(
        &args.out,
        || r.to_json(&m.info, &name),
        || r.to_csv(),
        || r.summary_text(&name),
    )
}

/// The corpus `data` (a directory, a .jsonl(.gz) or .zip file, or `stdlib`) of a causal
/// corpus run, refused when it holds no usable snippet, and the model it runs on.
fn corpus_and_model(
    settings: &Settings,
    data: &str,
    limit: Option<usize>,
) -> Result<(crate::corpus::Corpus, crate::model::LoadedModel)> {
    let path = if data == "stdlib" {
        python_stdlib()?
    } else {
        std::path::PathBuf::from(data)
    };
    let corpus = crate::corpus::load(&path, settings.lang, limit)?;
    if corpus.snippets.is_empty() {
        return Err(Error::Input {
            name: path.display().to_string(),
            reason: "holds no usable snippet".into(),
        });
    }
    let m = load_model(
        settings.model.as_deref(),
        settings.load_options(settings.random_weights),
    )?;
    Ok((corpus, m))
}
