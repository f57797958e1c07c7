//! The explorer without a terminal: an [`App`] whose effects are carried out on the
//! spot, in order, with one loaded model (parse, analyse with the worker's options,
//! train the probe panel's probes, label a token). `codescope render` and the tour
//! deck draw figures and screens from it, so they show exactly what the explorer would
//! for the same state, and the same bytes on every run (the status bar leaves out the
//! compute time).

use std::sync::Arc;

use super::app::{App, Config};
use super::data::Doc;
use super::msg::{Effect, Msg, WorkerMsg};
use super::theme::{ColorMode, Theme};
use crate::error::{Error, Result};
use crate::export::figure::Kind;
use crate::model::LoadedModel;
use crate::present::Scene;

/// A loaded model and the name it goes by (the spec as typed, shown in titles).
#[derive(Clone, Copy)]
pub struct Model<'a> {
    pub model: &'a LoadedModel,
    pub label: &'a str,
}

/// An analysed explorer on `doc` at terminal size `size`.
pub fn app(m: Model, doc: Doc, size: (u16, u16), theme: Theme) -> Result<App> {
    let mut app = App::new(
        Config {
            theme,
            model_spec: Some(m.label.to_string()),
        },
        doc,
    );
    app.status.hide_timing = true;
    app.model.random_weights = m.model.info.random_weights;
    app.model.stack = m
        .model
        .info
        .stack
        .and_then(crate::model::Stack::from_name)
        .unwrap_or_default();
    app.model.default_stack = app.model.stack;
    app.update(Msg::Resize {
        width: size.0,
        height: size.1,
    });
    let fx = app.start();
    serve(&mut app, m, fx)?;
    ready(&app)?;
    Ok(app)
}

/// An error unless an analysis of the document is shown.
pub fn ready(app: &App) -> Result<()> {
    if app.prepared().is_some() && !app.stale() {
        return Ok(());
    }
    let why = app
        .doc
        .parse_error
        .clone()
        .or_else(|| app.status.message.as_ref().map(|(_, m)| m.clone()))
        .unwrap_or_else(|| "no analysis".into());
    Err(Error::Input {
        name: app.doc.name.clone(),
        reason: why,
    })
}

/// Apply `msg` and carry out what it asks for.
pub fn update(app: &mut App, m: Model, msg: Msg) -> Result<()> {
    let fx = app.update(msg);
    serve(app, m, fx)
}

/// Carry out effects until none is left: parses and file reads at once, model loads
/// answered with `m`, analyses through the pipeline with the worker's options, probes
/// trained like the probe panel's, probe labels and AST-Probe trees computed, knockouts,
/// head ablations and logit lenses run as the worker runs them. Exports, preset checks and
/// quitting are dropped.
pub fn serve(app: &mut App, m: Model, fx: Vec<Effect>) -> Result<()> {
    let mut queue = fx;
    while !queue.is_empty() {
        let mut next = Vec::new();
        for e in queue {
            let msg = match e {
                Effect::LoadModel(..) => Msg::Worker(WorkerMsg::ModelLoaded {
                    info: m.model.info.clone(),
                    label: m.label.to_string(),
                    notice: None,
                }),
                Effect::Parse(job) => super::io::parse(&job),
                Effect::ReadFile(path) => super::io::read_file(&path),
                Effect::Analyse(job) => match super::worker::analyse_job(m.model, &job) {
                    Ok(a) => Msg::Worker(WorkerMsg::Analysed {
                        req: job.req,
                        data: Arc::new(a),
                    }),
                    Err(e) => Msg::Worker(WorkerMsg::AnalyseFailed {
                        req: job.req,
                        error: e.to_string(),
                    }),
                },
                Effect::Probe(job) => {
                    let snippets = crate::probe::bundled::snippets(Some(job.lang));
                    // The probe panel's job, as the worker runs it.
                    let spec = crate::probe::RunSpec {
                        cache_root: Some(crate::paths::cache_dir()),
                        ..super::worker::panel_spec(m.model, &snippets, job.lang, job.task)
                    };
                    match crate::probe::run(&spec, &mut |_| {}) {
                        Ok(report) => Msg::Worker(WorkerMsg::Probed {
                            req: job.req,
                            report: Arc::new(report),
                        }),
                        Err(e) => Msg::Worker(WorkerMsg::ProbeFailed {
                            req: job.req,
                            error: e.to_string(),
                        }),
                    }
                }
                Effect::Layer(key, a) => Msg::Worker(super::worker::layer_job(m.model, key, &a)),
                Effect::Knockout(job) => {
                    Msg::Worker(super::worker::knockout_job(m.model, &job, None))
                }
                Effect::Lens(job) => Msg::Worker(super::worker::lens_job(m.model, &job)),
                Effect::Patch(job) => Msg::Worker(super::worker::patch_job(m.model, &job)),
                // The head ablation, every head as the worker sends it.
                Effect::Ablate(job) => {
                    let sent = std::sync::Mutex::new(Vec::new());
                    super::worker::ablation_job(m.model, &job, &|| false, &|w| {
                        sent.lock().unwrap_or_else(|e| e.into_inner()).push(w)
                    });
                    for w in sent.into_inner().unwrap_or_else(|e| e.into_inner()) {
                        next.extend(app.update(Msg::Worker(w)));
                    }
                    continue;
                }
                Effect::LabelToken(key, job) => Msg::TokenLabel {
                    key,
                    label: crate::probe::label::label_token(&job),
                },
                Effect::AstTree(key, job) => Msg::AstTree {
                    key,
                    result: crate::probe::astprobe::view::tree_job(&job),
                },
                // Compare mode: the twin and the comparison, as the worker makes them.
                Effect::Compare(job) => {
                    let sent = std::sync::Mutex::new(Vec::new());
                    super::worker::compare(m.model, &job, None, &|w| {
                        sent.lock().unwrap_or_else(|e| e.into_inner()).push(w)
                    });
                    for w in sent.into_inner().unwrap_or_else(|e| e.into_inner()) {
                        next.extend(app.update(Msg::Worker(w)));
                    }
                    continue;
                }
                _ => continue,
            };
            next.extend(app.update(msg));
        }
        queue = next;
    }
    Ok(())
}

/// Compare mode for a headless view: the twin (`rename:neutral`, `rename:shuffle`,
/// `twin:FILE` or FILE, relative to `base`) and the heatmap's side.
#[derive(Debug, Clone)]
pub struct CompareSpec {
    pub rewrite: String,
    pub base: std::path::PathBuf,
    pub side: crate::tui::app::HeatSide,
}

/// A headless explorer on `doc` showing `scene` (errors in the scene are errors), in
/// compare mode when `compare` says so: what `codescope render` and a deck's step draw.
pub fn staged(
    m: Model,
    doc: Doc,
    size: (u16, u16),
    light: bool,
    scene: &Scene,
    compare: Option<&CompareSpec>,
) -> Result<App> {
    let theme = Theme::new(ColorMode::TrueColor, light);
    let mut app = app(m, doc, size, theme)?;
    let (fx, errors) = app.apply_scene(scene);
    if !errors.is_empty() {
        return Err(Error::Input {
            name: app.doc.name.clone(),
            reason: errors.join("; "),
        });
    }
    serve(&mut app, m, fx)?;
    // Compare mode (a tour step's `rewrite`, `render --rewrite`): the twin, its analysis
    // and the comparison, with the heatmap on the side asked for.
    if let Some(c) = compare {
        let spec = &c.rewrite;
        app.compare.choice = crate::tui::app::TwinChoice::from_spec(spec, &c.base);
        app.compare.heat = c.side;
        if !app.compare.on {
            let fx = app.update(crate::tui::msg::Msg::Key(crossterm::event::KeyEvent::from(
                crossterm::event::KeyCode::Char('c'),
            )));
            serve(&mut app, m, fx)?;
        } else {
            // On already (the patch view turns it on): ask for this twin's comparison.
            let (width, height) = app.size;
            update(&mut app, m, crate::tui::msg::Msg::Resize { width, height })?;
        }
        if app.comparison().is_none() {
            let why = app
                .status
                .message
                .as_ref()
                .map(|(_, m)| m.clone())
                .unwrap_or_else(|| "the comparison could not be made".into());
            return Err(Error::Input {
                name: format!("--rewrite {spec}"),
                reason: why,
            });
        }
    }
    // Settle scroll positions for the final state (a same-size resize).
    let (width, height) = app.size;
    update(&mut app, m, crate::tui::msg::Msg::Resize { width, height })?;
    ready(&app)?;
    if scene.view == Some(Kind::Surprisal) && app.surprisal_shown().is_none() {
        let why = app
            .status
            .message
            .as_ref()
            .map(|(_, m)| m.clone())
            .unwrap_or_else(|| "the surprisal view needs a causal model".into());
        return Err(Error::Input {
            name: "--view surprisal".into(),
            reason: why,
        });
    }
    if scene.knockout.is_some() && app.knockout_shown().is_none() {
        let why = app
            .status
            .message
            .as_ref()
            .map(|(_, m)| m.clone())
            .unwrap_or_else(|| "the knockout could not be run".into());
        return Err(Error::Input {
            name: "--view knockout".into(),
            reason: why,
        });
    }
    let why = |app: &App, default: &str| {
        app.status
            .message
            .as_ref()
            .map(|(_, m)| m.clone())
            .unwrap_or_else(|| default.into())
    };
    if app.view.metric.is_ablation()
        && app
            .ablation_shown()
            .is_none_or(|a| a.error.is_some() || a.done < a.total)
    {
        return Err(Error::Input {
            name: "--view ablation".into(),
            reason: why(&app, "the head ablation could not be run"),
        });
    }
    if scene.view == Some(Kind::Lens) && app.lens_shown().is_none() {
        return Err(Error::Input {
            name: "--view lens".into(),
            reason: why(&app, "the logit lens needs a causal model"),
        });
    }
    if scene.view == Some(Kind::Patch) && app.patch_shown().is_none() {
        return Err(Error::Input {
            name: "--view patch".into(),
            reason: app
                .patch_problem()
                .unwrap_or_else(|| "the patch view needs compare mode's twin (--rewrite)".into()),
        });
    }
    if scene.view == Some(Kind::Probes) && app.probe_report().is_none() {
        let why = app
            .probe_failure()
            .map(|s| s.to_string())
            .unwrap_or_else(|| "no probe results".into());
        return Err(Error::Input {
            name: "--view probes".into(),
            reason: why,
        });
    }
    Ok(app)
}
