//! `codescope render FILE --view V ...`: one figure (SVG, PNG, or the screen as text)
//! of a view, drawn from a headless explorer put in the asked-for state, so it equals
//! what the explorer's `x` exports in that state; `--tour T --out DIR` renders a deck.

use std::io::Write as _;
use std::path::Path;

use super::{HeadSpec, Scene, TokenSpec};
use crate::cli::{RenderArgs, Theme as CliTheme};
use crate::error::{Error, Result};
use crate::export::figure::{self, Kind};
use crate::model::{source, LoadedModel};
use crate::tui::app::App;
use crate::tui::data::Doc;
use crate::tui::headless::{self, Model};
use crate::tui::theme::{ColorMode, Theme};

/// The scene the command line asks for.
pub fn scene_of(args: &RenderArgs) -> Scene {
    Scene {
        view: Some(args.view),
        layer: args.layer,
        head: args.head.as_deref().map(HeadSpec::parse),
        token: args.token.as_deref().map(TokenSpec::parse),
        threshold: args.threshold,
        mode: args.mode.map(|m| m.name().to_string()),
        direction: args.direction.clone(),
        gold: args.gold.then_some(true),
        dataflow: args.dataflow.then_some(true),
        metric: args.metric.clone(),
        pin: args.pin.clone(),
        task: args.task_name(),
        knockout: args
            .edges
            .clone()
            .or_else(|| (args.view == Kind::Knockout).then(|| "syn-id".to_string())),
    }
}

/// Resolve and load a model: the spec as given, or the default one (announced on
/// stderr). Returns the model and the name it goes by in titles.
/// `random_weights`: as `--random-weights`.
pub fn load(spec: Option<&str>, random_weights: Option<u64>) -> Result<(LoadedModel, String)> {
    let label = match spec {
        Some(s) => s.to_string(),
        None => {
            let (name, why) = source::default_model();
            crate::logging::notice(format_args!(
                "using model '{name}' ({why}); choose another with --model"
            ));
            name
        }
    };
    let files = source::resolve(&label)?;
    Ok((LoadedModel::load_with(&files, random_weights)?, label))
}

/// A headless explorer on `doc` showing `scene` (errors in the scene are errors).
/// Compare mode for a headless view: the twin (`rename:neutral`, `rename:shuffle`,
/// `twin:FILE` or FILE, relative to `base`) and the heatmap's side.
#[derive(Debug, Clone)]
pub struct CompareSpec {
    pub rewrite: String,
    pub base: std::path::PathBuf,
    pub side: crate::tui::app::HeatSide,
}

pub fn staged(
    m: Model,
    doc: Doc,
    size: (u16, u16),
    light: bool,
    scene: &Scene,
    compare: Option<&CompareSpec>,
) -> Result<App> {
    let theme = Theme::new(ColorMode::TrueColor, light);
    let mut app = headless::app(m, doc, size, theme)?;
    let (fx, errors) = app.apply_scene(scene);
    if !errors.is_empty() {
        return Err(Error::Input {
            name: app.doc.name.clone(),
            reason: errors.join("; "),
        });
    }
    headless::serve(&mut app, m, fx)?;
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
            headless::serve(&mut app, m, fx)?;
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
    headless::update(&mut app, m, crate::tui::msg::Msg::Resize { width, height })?;
    headless::ready(&app)?;
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

/// The figure options of the command line.
pub fn options_of(args: &RenderArgs) -> figure::Options {
    figure::Options {
        scale: args.scale,
        light: args.theme == CliTheme::Light,
        lines: args.lines,
        tokens: args.tokens,
    }
}

/// Write a figure (or the screen's text) to `out` by its extension, or SVG to stdout.
pub fn write_out(app: &App, kind: Kind, opts: &figure::Options, out: Option<&Path>) -> Result<()> {
    let io = |p: &Path, e: std::io::Error| Error::io(p.display().to_string(), e);
    let ext = out
        .and_then(|p| p.extension())
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    if ext.as_deref() == Some("txt") {
        if kind != Kind::Screen {
            return Err(Error::Input {
                name: "--out".into(),
                reason: "text output is for --view screen; use .svg or .png".into(),
            });
        }
        let p = out.expect("an extension implies a path");
        let text = figure::screen::text(&crate::tui::export::screen_buffer(app));
        return crate::fsio::write_atomic_io(p, text.as_bytes()).map_err(|e| io(p, e));
    }
    let (figs, _) = crate::tui::export::figures(app, &[kind], opts)?;
    let fig = &figs[0].1;
    match (out, ext.as_deref()) {
        (None, _) => {
            let mut o = std::io::stdout().lock();
            o.write_all(fig.svg.as_bytes())
                .and_then(|_| o.flush())
                .map_err(|e| Error::io("<stdout>", e))
        }
        (Some(p), Some("svg")) => {
            crate::fsio::write_atomic_io(p, fig.svg.as_bytes()).map_err(|e| io(p, e))
        }
        (Some(p), Some("png")) => {
            crate::fsio::write_atomic_io(p, &crate::export::png::render(fig)?).map_err(|e| io(p, e))
        }
        (Some(p), _) => Err(Error::Input {
            name: p.display().to_string(),
            reason: "the output must end in .svg, .png (or .txt for the screen)".into(),
        }),
    }
}

/// `codescope render`.
pub fn run(settings: &crate::settings::Settings, args: &RenderArgs) -> Result<()> {
    let spec = settings.model.as_deref();
    if let Some(tour) = &args.tour {
        let out = args.out.as_deref().ok_or_else(|| Error::Input {
            name: "--tour".into(),
            reason: "say where the deck goes with --out DIR".into(),
        })?;
        return super::tour::render_deck(spec, settings.random_weights, tour, out, args);
    }
    let file = args.file.as_deref().unwrap_or("-");
    let inp = crate::input::read(file)?;
    let lang = settings.language_for(&inp.name, &inp.text);
    let (model, label) = load(spec, settings.random_weights)?;
    let m = Model {
        model: &model,
        label: &label,
    };
    let scene = scene_of(args);
    let compare = args.rewrite.as_ref().map(|r| CompareSpec {
        rewrite: r.clone(),
        base: std::env::current_dir().unwrap_or_default(),
        side: args.side.heat_side(),
    });
    let app = staged(
        m,
        Doc::new(inp.name, inp.text, lang),
        args.size,
        args.theme == CliTheme::Light,
        &scene,
        compare.as_ref(),
    )?;
    write_out(&app, args.view, &options_of(args), args.out.as_deref())
}
