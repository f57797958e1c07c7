//! `codescope render FILE --view V ...`: one figure (SVG, PNG, or the screen as text)
//! of a view, drawn from a headless explorer put in the asked-for state
//! (`tui::headless::staged`), so it equals what the explorer's `x` exports in that state;
//! `--tour T --out DIR` renders a deck of the tour's steps.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::Path;

use crate::cli::{CompareSide, RenderArgs, ThemeChoice};
use crate::error::{Error, Result};
use crate::export::figure::{self, Kind};
use crate::model::LoadedModel;
use crate::present::tour::Tour;
use crate::present::{HeadSpec, Scene, TokenSpec};
use crate::settings::Settings;
use crate::tui::app::{App, HeatSide};
use crate::tui::data::Doc;
use crate::tui::headless::{staged, CompareSpec, Model};

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

/// The figure options of the command line.
pub fn options_of(args: &RenderArgs) -> figure::FigureOptions {
    figure::FigureOptions {
        scale: args.scale,
        light: args.theme == ThemeChoice::Light,
        lines: args.lines,
        tokens: args.tokens,
        canvas: args.canvas.0,
        title: None,
    }
}

/// Write a figure (or the screen's text) to `out` by its extension, or SVG to stdout.
pub fn write_out(
    app: &App,
    kind: Kind,
    opts: &figure::FigureOptions,
    out: Option<&Path>,
) -> Result<()> {
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
        let text = figure::screen::text(&crate::tui::figures::screen_buffer(app));
        return crate::fsio::write_atomic_io(p, text.as_bytes()).map_err(|e| io(p, e));
    }
    let (figs, _) = crate::tui::figures::figures(app, &[kind], opts)?;
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
pub fn run(settings: &Settings, args: &RenderArgs) -> Result<()> {
    let spec = settings.model.as_deref();
    // The canvas at its scale bounds a PNG's pixels: at most 8K (7680 x 4320).
    if let Some((w, h)) = args.canvas.0 {
        let (pw, ph) = (w * args.scale, h * args.scale);
        if pw > 7680.0 || ph > 4320.0 {
            return Err(Error::Input {
                name: "--canvas".into(),
                reason: format!(
                    "{w}x{h} at scale {} is {pw:.0}x{ph:.0} px, over 7680x4320: a smaller canvas or scale",
                    args.scale
                ),
            });
        }
    }
    if let Some(tour) = &args.tour {
        let out = args.out.as_deref().ok_or_else(|| Error::Input {
            name: "--tour".into(),
            reason: "say where the deck goes with --out DIR".into(),
        })?;
        return render_deck(
            spec,
            settings.load_options(settings.random_weights),
            tour,
            out,
            args,
        );
    }
    let file = args.file.as_deref().unwrap_or("-");
    let inp = crate::input::read(file)?;
    let lang = settings.language_for(&inp.name, &inp.text);
    let (model, label) =
        super::load_labelled(spec, settings.load_options(settings.random_weights))?;
    let m = Model {
        model: &model,
        label: &label,
    };
    let scene = scene_of(args);
    // The patch view patches from compare mode's twin: `rename:neutral` unless named.
    let rewrite = args
        .rewrite
        .clone()
        .or_else(|| (args.view == Kind::Patch).then(|| "rename:neutral".to_string()));
    let compare = rewrite.map(|r| CompareSpec {
        rewrite: r,
        base: std::env::current_dir().unwrap_or_default(),
        side: heat_side(args.side),
    });
    let app = staged(
        m,
        Doc::new(inp.name, inp.text, lang),
        args.size,
        args.theme == ThemeChoice::Light,
        &scene,
        compare.as_ref(),
    )?;
    write_out(&app, args.view, &options_of(args), args.out.as_deref())
}

/// `render --side` as the explorer's heatmap side.
fn heat_side(s: CompareSide) -> HeatSide {
    match s {
        CompareSide::A => HeatSide::A,
        CompareSide::B => HeatSide::B,
        CompareSide::Diff => HeatSide::Diff,
    }
}

/// Pre-render every step of a tour into `out`: `NN-view.svg` and `.png` per step and an
/// `index.html` that shows them in order with their captions.
fn render_deck(
    spec: Option<&str>,
    lo: crate::model::LoadOptions,
    path: &Path,
    out: &Path,
    args: &RenderArgs,
) -> Result<()> {
    let tour = Tour::load(path)?;
    if tour.steps.is_empty() {
        return Err(Error::Input {
            name: path.display().to_string(),
            reason: "the tour has no [[step]]".into(),
        });
    }
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let specs = tour.models(spec);
    let stacks = tour.stacks(lo.stack);
    let mut models: HashMap<(String, &str), (LoadedModel, String)> = HashMap::new();
    let opts = options_of(args);
    let mut html = String::new();
    let title = tour
        .title
        .clone()
        .unwrap_or_else(|| "codescope tour".into());
    html.push_str(&format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{}</title>\n<style>body{{font-family:sans-serif;max-width:1920px;margin:auto}}img{{width:100%}}section{{margin:2em 0}}</style></head><body>\n<h1>{}</h1>\n",
        esc(&title),
        esc(&title)
    ));
    for (i, step) in tour.steps.iter().enumerate() {
        let n = i + 1;
        let at = |e: Error| Error::Input {
            name: format!("{} step {n}", path.display()),
            reason: e.to_string(),
        };
        let key = (specs[i].clone().unwrap_or_default(), stacks[i].name());
        if !models.contains_key(&key) {
            let lo = crate::model::LoadOptions {
                stack: stacks[i],
                ..lo
            };
            let loaded = super::load_labelled(specs[i].as_deref(), lo).map_err(at)?;
            models.insert(key.clone(), loaded);
        }
        let (model, label) = &models[&key];
        let snip = step.snippet(&tour.base).map_err(at)?;
        let kind = step.kind();
        // A step with a rewrite is a comparison: the twin made and compared, the heatmap
        // on B − A, the head grid on the twin's score minus the original's.
        let compare = step.rewrite.as_ref().map(|r| CompareSpec {
            rewrite: r.clone(),
            base: tour.base.clone(),
            side: HeatSide::Diff,
        });
        let app = staged(
            Model { model, label },
            Doc::new(snip.name, snip.text, snip.lang),
            args.size,
            opts.light,
            &step.scene,
            compare.as_ref(),
        )
        .map_err(at)?;
        // The slide's title is the step's caption (the file and model lead its subtitle).
        let opts = figure::FigureOptions {
            title: step.caption.clone().filter(|c| !c.trim().is_empty()),
            ..opts.clone()
        };
        let (figs, _) = crate::tui::figures::figures(&app, &[kind], &opts).map_err(at)?;
        // `write_figures` names each file `<stem>-<kind>`: `01-heatmap.svg`, `.png`.
        let stem = format!("{n:02}");
        let paths = crate::export::write_figures(out, &stem, &figs, None)?;
        let png = paths
            .iter()
            .find(|p| p.extension().is_some_and(|e| e == "png"))
            .and_then(|p| p.file_name())
            .map(|f| f.to_string_lossy().into_owned())
            .ok_or_else(|| Error::Compute(format!("step {n}: no PNG was written")))?;
        crate::logging::notice(format_args!("step {n}: {}", paths[0].display()));
        html.push_str(&format!(
            "<section><h2>{n}. {}</h2><img src=\"{}\" alt=\"step {n}\"></section>\n",
            esc(step.caption.as_deref().unwrap_or("")),
            esc(&png)
        ));
    }
    html.push_str("</body></html>\n");
    let index = out.join("index.html");
    crate::fsio::write_atomic(&index, html.as_bytes())?;
    crate::logging::notice(format_args!("deck written to {}", index.display()));
    Ok(())
}

/// Text for the deck's HTML: control characters shown escaped (as on a terminal), then
/// the HTML specials.
fn esc(s: &str) -> String {
    crate::error::printable(s, false)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
