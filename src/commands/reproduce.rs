//! `codescope reproduce` and `codescope merge`: the study's corpus tables, in shards, and
//! their merge (reproduce and probe shards alike).

use super::*;

pub(super) fn merge_cmd(settings: &Settings, args: &MergeArgs) -> Result<()> {
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
    if args
        .dirs
        .iter()
        .any(|d| crate::analysis::causal_shard::is_shard(d))
    {
        let m = crate::analysis::causal_shard::merge(&args.dirs)?;
        crate::logging::notice(format_args!(
            "{} knockout, ablation or patch shards merged",
            m.shards
        ));
        return print_out(
            &args.output,
            || m.to_json(),
            || m.to_csv(),
            || m.summary_text(),
        );
    }
    if args.output.json || args.output.csv {
        return Err(Error::Input {
            name: "merge".into(),
            reason: "--json and --csv are for knockout, ablation and patch shards".into(),
        });
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
        "{} shards merged; tables written to {} (scores.csv, best_heads.csv, summary.json{})",
        shards.len(),
        args.out.display(),
        if agg.ged_study.is_some() {
            ", ged_study.csv, ged_study_layers.csv"
        } else {
            ""
        }
    ));
    Ok(())
}

pub(super) fn reproduce_cmd(settings: &Settings, args: &ReproduceArgs) -> Result<()> {
    let threshold = args.threshold;
    // The corpus tables are head scores against the gold graphs: none on the cross stack.
    if settings.stack == crate::model::Stack::Cross {
        return Err(Error::Setting {
            name: "--stack cross".into(),
            reason: format!(
                "{}; reproduce runs on the encoder or decoder stack",
                analysis::CROSS_STACK_NO_SCORES
            ),
        });
    }
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
    if args.random_baseline.is_some() && settings.random_weights.is_some() {
        return Err(Error::Input {
            name: "--random-baseline".into(),
            reason: "compares the trained weights with random ones: drop --random-weights".into(),
        });
    }
    let run = |random_weights: Option<u64>, out: std::path::PathBuf| -> Result<_> {
        let m = load_model(
            settings.model.as_deref(),
            settings.load_options(random_weights),
        )?;
        analysis::reproduce::run(&analysis::reproduce::Run {
            model: &m,
            snippets: &corpus.snippets,
            corpus_name: match args.limit {
                Some(n) => format!("{} (first {n})", path.display()),
                None => path.display().to_string(),
            },
            out,
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
            ged_study: match args.ged {
                Some(analysis::ged::GedVariant::Study) => Some(analysis::ged::max_tokens()?),
                None => None,
            },
        })
    };
    let agg = run(settings.random_weights, args.out.clone())?;
    print(&analysis::reproduce::table(&agg, threshold))?;
    if let Some(t) = &agg.twins_table {
        print(t)?;
    }
    crate::logging::notice(format_args!(
        "tables written to {} (scores.csv, best_heads.csv, summary.json{}{})",
        args.out.display(),
        if agg.ged_study.is_some() {
            ", ged_study.csv, ged_study_layers.csv"
        } else {
            ""
        },
        if agg.twins_table.is_some() {
            "; twins.jsonl, twins.csv, twins_layers.csv, twins_summary.json"
        } else {
            ""
        }
    ));
    if let Some(seed) = args.random_baseline {
        let dir = args.out.join(format!("random-{seed}"));
        crate::logging::notice(format_args!(
            "the random-weight baseline (seed {seed}) into {}",
            dir.display()
        ));
        let random = run(Some(seed), dir)?;
        print(&analysis::reproduce::baseline(
            &agg, &random, threshold, &args.out,
        )?)?;
        crate::logging::notice(format_args!(
            "trained and random side by side in {}",
            args.out.join("baseline.csv").display()
        ));
    }
    Ok(())
}
