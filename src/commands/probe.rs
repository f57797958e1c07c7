//! `codescope probe`: probes and their control tasks on a corpus (or in shards).

use super::*;

pub(super) fn probe_cmd(settings: &Settings, args: &ProbeArgs) -> Result<()> {
    use crate::probe;
    if let Some(reason) = args.protocol.mismatch(args.probe) {
        return Err(Error::Input {
            name: "--protocol".into(),
            reason: reason.into(),
        });
    }
    if args.gold.is_some() && args.probe != probe::ProbeKind::Ast {
        return Err(Error::Input {
            name: "--gold".into(),
            reason: "the gold trees are AST-Probe's: it needs --probe ast".into(),
        });
    }
    let (name, snippets) = probe_corpus(settings, args.corpus.as_deref(), args.limit)?;
    crate::logging::notice(format_args!(
        "probing on {} snippets from {name}",
        snippets.len()
    ));
    if args.random_baseline.is_some() && settings.random_weights.is_some() {
        return Err(Error::Input {
            name: "--random-baseline".into(),
            reason: "compares the trained weights with random ones: drop --random-weights".into(),
        });
    }
    let Some(report) = probe_once(settings, args, &snippets, &name, settings.random_weights)?
    else {
        return Ok(());
    };
    if let Some(path) = &args.gold {
        let doc = serde_json::json!({
            "protocol": args.protocol,
            "snippets": report.ast_gold,
        });
        let text =
            serde_json::to_string(&doc).map_err(|e| Error::io(path, std::io::Error::other(e)))?;
        crate::fsio::write_atomic(path, format!("{text}\n").as_bytes())?;
        crate::logging::notice(format_args!(
            "gold trees of {} snippets written to {}",
            report.ast_gold.len(),
            path.display()
        ));
    }
    let random = match args.random_baseline {
        Some(seed) => {
            crate::logging::notice(format_args!("the random-weight baseline (seed {seed})"));
            probe_once(settings, args, &snippets, &name, Some(seed))?
        }
        None => None,
    };
    let to_json = |r: &probe::ProbeReport| -> Result<serde_json::Value> {
        let mut v =
            serde_json::to_value(r).map_err(|e| Error::io("<stdout>", std::io::Error::other(e)))?;
        // Timings only when asked: two identical runs give identical JSON.
        if !args.timings {
            strip_key(&mut v, "seconds");
        }
        Ok(v)
    };
    let Some(random) = random else {
        return if args.json {
            print(&format!("{}\n", to_json(&report)?))
        } else if args.csv {
            print(&probe::csv(&report))
        } else {
            print(&probe::table(&report))
        };
    };
    let seed = args.random_baseline.unwrap_or(0);
    let rows = probe::baseline::rows(&report, &random).ok_or_else(|| {
        Error::Compute(
            "the trained and the random-weight probe runs measured different things".into(),
        )
    })?;
    if args.json {
        let v = probe::baseline::json(to_json(&report)?, to_json(&random)?, &rows);
        print(&format!("{v}\n"))
    } else if args.csv {
        print(&probe::baseline::csv(&rows))
    } else {
        print(&probe::table(&report))?;
        print(&probe::baseline::table(seed, &rows))
    }
}

/// The probe's corpus as `--corpus` and `--limit` give it (default: the bundled probe
/// corpus): its name and snippets, never empty (`probe`, `knockout --probe`).
pub(super) fn probe_corpus(
    settings: &Settings,
    corpus: Option<&str>,
    limit: Option<usize>,
) -> Result<(String, Vec<crate::corpus::Snippet>)> {
    let lang = settings.lang;
    let (name, mut snippets) = match corpus {
        None => (
            "bundled probe corpus".to_string(),
            crate::probe::bundled::snippets(lang),
        ),
        Some(c) => {
            let path = if c == "stdlib" {
                python_stdlib()?
            } else {
                std::path::PathBuf::from(c)
            };
            let corpus = crate::corpus::load(&path, lang, limit)?;
            (path.display().to_string(), corpus.snippets)
        }
    };
    if let Some(n) = limit {
        snippets.truncate(n);
    }
    if snippets.is_empty() {
        return Err(Error::Input {
            name,
            reason: "holds no usable snippet".into(),
        });
    }
    Ok((name, snippets))
}

/// One probe run (or, with --shard / --dump, the features written: `None`), on the
/// trained weights or on a seeded random initialisation.
fn probe_once(
    settings: &Settings,
    args: &ProbeArgs,
    snippets: &[crate::corpus::Snippet],
    name: &str,
    random_weights: Option<u64>,
) -> Result<Option<crate::probe::ProbeReport>> {
    use crate::probe;
    let m = load_model(
        settings.model.as_deref(),
        settings.load_options(random_weights),
    )?;
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
        ..probe::RunSpec::new(&m, snippets, name.to_string())
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
        return Ok(None);
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
        return Ok(None);
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
    Ok(Some(report))
}
