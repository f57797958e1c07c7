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
        let m = load_model(
            settings.model.as_deref(),
            settings.load_options(settings.random_weights),
        )?;
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
    let m = load_model(
        settings.model.as_deref(),
        settings.load_options(settings.random_weights),
    )?;
    let r = causal::knockout(&m, &inp.text, lang, &opts)?;
    print_out(
        &args.out,
        || r.to_json(&m.info),
        || r.to_csv(),
        || r.summary_text(&crate::error::printable(&inp.name, false)),
    )
}

pub(super) fn ablate_cmd(settings: &Settings, args: &crate::cli::AblateArgs) -> Result<()> {
    use crate::analysis::causal;
    let mode = match args.ablation.as_str() {
        "mean" => crate::model::AblationMode::Mean,
        _ => crate::model::AblationMode::Zero,
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
        let m = load_model(
            settings.model.as_deref(),
            settings.load_options(settings.random_weights),
        )?;
        let mut progress = |done: usize, total: usize| {
            tracing::info!(done, total, "ablation corpus progress");
        };
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
    let inp = input::read(&args.file)?;
    let lang = settings.language_for(&args.file, &inp.text);
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
