//! From the explorer's state to exports: the numbers shown ([`figure_data`]), the
//! figures of a view, of every panel or of the whole screen ([`figures`]), and writing
//! them to the export directory ([`write`]). `codescope render` calls the same
//! functions on a headless explorer, so both give the same bytes for the same state.

use std::collections::BTreeMap;
use std::path::PathBuf;

use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::Terminal;

use super::app::{App, Direction, ExportWhat, Focus, Overlay, TokenProbe};
use crate::analysis::categories::{COARSE, FINE};
use crate::analysis::{overview, SnippetAnalysis};
use crate::error::{Error, Result};
use crate::export::figure::{self, Figure, Kind};
use crate::export::{self, GraphScore};

/// Thumbnail side of the overview figure (cells).
pub const OVERVIEW_SIDE: usize = 48;

/// The explorer's current view as export data (`None` before the first analysis).
pub fn figure_data(app: &App) -> Option<export::FigureData> {
    figure_data_with(app, false)
}

/// [`figure_data`], with the model overview (every head's thumbnail) when `overview`.
pub fn figure_data_with(app: &App, overview: bool) -> Option<export::FigureData> {
    let a = app.prepared()?;
    let syn = app.doc.syntax.as_ref()?;
    let ta = &a.token_attention;
    let (layers, heads) = (ta.layers, ta.heads);
    let v = &app.view;
    let l = v.layer.min(layers.saturating_sub(1));
    let h = v.head.min(heads.saturating_sub(1));
    let weights = app.token_weights().unwrap_or_default();
    let ko = app.knockout_shown();
    let surp = app.surprisal_shown().filter(|_| ko.is_none());
    let patch_delta = app
        .patch_shown()
        .zip(app.patch_layer())
        .map(|(r, l)| r.token_delta(l));
    if syn.tokens.len() != app.doc.layout.tok_line.len() {
        return None; // the layout is for another parse
    }
    let tokens = syn
        .tokens
        .iter()
        .enumerate()
        .map(|(i, t)| export::Token {
            index: i,
            text: t.text.clone(),
            start: t.start,
            end: t.end,
            line: app.doc.layout.tok_line[i],
            col: app.doc.layout.tok_col[i],
            category: t.category.name().to_string(),
            role: t.role.clone(),
            weight: weights.get(i).copied().flatten(),
            surprisal: surp.map(|s| s.bits.get(i).copied().flatten()),
            knockout: ko.map(|k| k.delta.get(i).copied().flatten()),
            patch: patch_delta.as_ref().map(|d| d.get(i).copied().flatten()),
        })
        .collect();
    let n = ta.n();
    let matrix = app
        .with_matrix(|m, n| m.chunks(n.max(1)).map(|r| r.to_vec()).collect())
        .unwrap_or_default();
    let gold_edges = (0..n * n)
        .filter(|&k| a.gold_any[k])
        .map(|k| (k / n, k % n))
        .collect();
    let scores_of = |l: usize, h: usize| -> BTreeMap<String, GraphScore> {
        app.shown
            .scores
            .iter()
            .filter_map(|(g, s)| {
                let sc = s.scores.get(l)?.get(h)?;
                Some((
                    g.to_string(),
                    GraphScore {
                        precision: sc.precision,
                        recall: sc.recall,
                        f1: sc.f1,
                        gold_edges: s.edges,
                    },
                ))
            })
            .collect()
    };
    let scores = if v.mean {
        BTreeMap::new()
    } else {
        scores_of(l, h)
    };
    let (ch, fh) = if v.mean {
        (&a.coarse_layer[l], &a.fine_layer[l])
    } else {
        (&a.coarse[l][h], &a.fine[l][h])
    };
    let mut categories = BTreeMap::new();
    categories.insert("coarse_head".to_string(), ch.named(&COARSE, false));
    categories.insert(
        "coarse_layer".to_string(),
        a.coarse_layer[l].named(&COARSE, false),
    );
    categories.insert("fine_head".to_string(), fh.named(&FINE, false));
    categories.insert(
        "fine_layer".to_string(),
        a.fine_layer[l].named(&FINE, false),
    );
    let (label, info) = app
        .model
        .loaded
        .clone()
        .unwrap_or_else(|| (a.trace.model.source.clone(), a.trace.model.clone()));
    let dataflow = v.dfg.then(|| {
        let mut d: Vec<usize> = syn
            .graphs
            .dfg
            .iter()
            .filter_map(|&(i, j, _)| {
                if i == v.cursor {
                    Some(j)
                } else if j == v.cursor {
                    Some(i)
                } else {
                    None
                }
            })
            .collect();
        d.sort_unstable();
        d.dedup();
        d
    });
    let pinned = app
        .present
        .pin
        .filter(|&(pl, ph)| pl < layers && ph < heads)
        .map(|(pl, ph)| export::Pinned {
            layer: pl + 1,
            head: ph + 1,
            matrix: app
                .head_matrix(pl, ph)
                .unwrap_or_default()
                .chunks(n.max(1))
                .map(|r| r.to_vec())
                .collect(),
            scores: scores_of(pl, ph),
        });
    let grid = app.grid_values(v.metric).unwrap_or_default();
    // Compare mode: the head grid shows B − A (as the panel does).
    let diff_grid = app.compare_grid(&grid);
    Some(export::FigureData {
        caption: None,
        name: app.doc.name.clone(),
        language: app.doc.lang.name().to_string(),
        model: label,
        model_source: info.source.clone(),
        architecture: info.architecture_note(),
        random_weights: info.random_weights,
        mode: a.mode.name().to_string(),
        layer: l + 1,
        layers,
        head: (!v.mean).then_some(h + 1),
        heads,
        threshold: app.threshold(),
        direction: match v.direction {
            Direction::From => "from",
            Direction::To => "to",
        }
        .to_string(),
        source: app.doc.text.clone(),
        tokens,
        selected: Some(v.cursor).filter(|&c| c < syn.tokens.len()),
        matrix_tokens: ta.tokens.clone(),
        matrix,
        gold_edges,
        gold_overlay: v.gold,
        scores,
        head_grid: export::HeadGrid {
            metric: v.metric.key().to_string(),
            name: match &diff_grid {
                Some(_) => format!(
                    "{}, twin minus original (B − A; B = {})",
                    v.metric.name(),
                    app.compare.choice.label()
                ),
                None => v.metric.name().to_string(),
            },
            signed: diff_grid.is_some(),
            values: diff_grid.unwrap_or_else(|| grid.clone()),
        },
        categories,
        knockout: ko.map(|k| export::KnockoutData {
            edges: k.edges.clone(),
            measure: k.measure.name().into(),
            token_pairs: k.token_pairs,
            subword_pairs: k.subword_pairs,
            control_draws: k.control_draws,
            summary: crate::analysis::causal::CLASSES
                .iter()
                .enumerate()
                .map(|(c, name)| export::KnockoutClass {
                    class: (*name).into(),
                    tokens: k.summary[c].0,
                    mean: k.summary[c].1,
                    control: k.control[c].map(|i| [i.mean, i.lo, i.hi]),
                })
                .collect(),
        }),
        ablation: ablation_data(app, a),
        lens: lens_data(app),
        patch: patch_data(app),
        surprisal: surp.map(|s| export::SurprisalData {
            perplexity: s.perplexity,
            mean_bits: s.mean_bits,
            max_bits: s.max_bits,
            scale_bits: s.scale_bits,
            top_decile_bits: s.top_decile.is_finite().then_some(s.top_decile),
            selected_expected: s
                .expected(v.cursor)
                .unwrap_or(&[])
                .iter()
                .map(|p| export::Expected {
                    token: p.token.clone(),
                    p: p.p,
                })
                .collect(),
        }),
        dataflow,
        pinned,
        probes: probe_chart(app),
        // Every head's thumbnail needs every layer's matrices (kept unless too long).
        // The cross stack's thumbnails carry no scores (`CROSS_NO_SCORES`).
        overview: (overview && ta.resident()).then(|| {
            let scores = if app.cross_stack_shown() {
                &[][..]
            } else {
                &grid[..]
            };
            overview_of(a, v.metric, scores)
        }),
        finding: Some(crate::analysis::finding::Finding::of(a).to_json()),
        compare: app.comparison().map(|_| export::CompareInfo {
            twin: app.compare.choice.label(),
            heatmap: app.compare.heat.label().to_string(),
        }),
    })
}

/// The head ablation of the analysis shown, when one was asked for.
fn ablation_data(app: &App, a: &SnippetAnalysis) -> Option<export::AblationData> {
    use super::data::Metric;
    let ab = app.ablation_shown()?;
    Some(export::AblationData {
        measure: ab.measure.map_or("bits", |m| m.name()).to_string(),
        ablation: "zero".into(),
        heads_done: ab.done,
        heads_total: ab.total,
        identifier: app.grid_values(Metric::AblationId)?,
        syntactic: app.grid_values(Metric::AblationSyn)?,
        f1_ast_motif: Metric::F1Motif.values(a, &app.shown.scores),
    })
}

/// The patch view's numbers, when it shows a patch.
fn patch_data(app: &App) -> Option<export::PatchData> {
    let r = app.patch_shown()?;
    Some(export::PatchData {
        twin: r.twin.kind.label(),
        seed: r.seed(),
        layers: r.states(),
        layer: app.patch_layer()?,
        rename_bits: r.class(0, "all").rename_bits,
        unchanged_tokens: r.measured.len(),
        patched_tokens: r.patched_tokens.clone(),
        per_layer: r.per_layer_json(),
    })
}

/// The logit lens of the analysis shown, when it was computed.
fn lens_data(app: &App) -> Option<export::LensData> {
    let d = app.lens_shown()?;
    let l = &d.lens;
    let cols = super::app::lens::columns(d);
    let tokens = cols
        .iter()
        .map(|&t| {
            let ct = &l.tokens[t];
            let actual = l.first_subword[t]
                .and_then(|f| l.ids.get(f))
                .map_or(String::new(), |&id| d.word(id));
            export::LensToken {
                text: ct.text.clone(),
                category: ct.category.name().to_string(),
                identifier: ct.coarse == crate::syntax::Coarse::Identifier,
                actual,
                decided_at: l.decided_at(t),
                layers: (0..l.cells.len())
                    .map(|layer| {
                        l.token_cell(layer, t).map(|c| export::LensCell {
                            top: d.word(c.top),
                            p: c.prob,
                            rank: c.rank,
                        })
                    })
                    .collect(),
            }
        })
        .collect();
    Some(export::LensData {
        layers: l.cells.len(),
        layer: app.lens.layer.min(l.cells.len().saturating_sub(1)),
        selected: cols.iter().position(|&t| t == app.lens.token),
        tokens,
    })
}

/// The probe panel's data for the current task, when a report is cached.
fn probe_chart(app: &App) -> Option<export::ProbeChart> {
    let r = app.probe_report()?;
    let task = app.probe.task.name();
    let rows: Vec<export::ProbeRow> = r
        .results
        .iter()
        .filter(|x| x.task == task)
        .map(|x| export::ProbeRow {
            layer: x.layer,
            accuracy: x.accuracy,
            control_accuracy: x.control_accuracy,
            selectivity: x.selectivity,
        })
        .collect();
    let first = r.results.iter().find(|x| x.task == task)?;
    let token_label = match app.token_probe() {
        Some(TokenProbe::Label {
            token,
            layer,
            predicted,
            gold,
        }) => {
            let at = if layer == 0 {
                "embeddings".to_string()
            } else {
                format!("layer {layer} output")
            };
            let ok = if predicted == gold { "✓" } else { "✗" };
            Some(format!(
                "«{}» at {at}: predicted {predicted}, gold {gold} {ok}",
                token.replace('\n', " ")
            ))
        }
        _ => None,
    };
    Some(export::ProbeChart {
        task: task.to_string(),
        probe: first.probe.clone(),
        corpus: r.corpus.source.clone(),
        snippets: r.corpus.snippets,
        split: format!("{:?}", r.split).to_lowercase(),
        train_size: first.train_size,
        test_size: first.test_size,
        majority: first.majority,
        rows,
        token_label,
        tree: match app.ast_trees() {
            Some(Ok(t)) => Some(probe_trees(t, app.view.cursor)),
            _ => None,
        },
    })
}

/// AST-Probe's trees as the figure and JSON carry them (`cursor`: the selected token).
fn probe_trees(
    t: &crate::probe::astprobe::view::SnippetTrees,
    cursor: usize,
) -> export::ProbeTrees {
    use crate::probe::astprobe::view::{Mark, RowKind};
    let leaf = t.leaf_near(cursor);
    let lines = |rows: &[crate::probe::astprobe::view::Row]| -> Vec<export::TreeLine> {
        rows.iter()
            .map(|r| {
                let (text, mark) = match &r.kind {
                    RowKind::Node { label, mark, .. } => (
                        label.clone(),
                        match mark {
                            Mark::Same => "same",
                            Mark::Relabelled => "relabelled",
                            Mark::Absent => "absent",
                        },
                    ),
                    RowKind::Leaf(k) => (
                        t.leaves[*k].replace('\n', " "),
                        if *k == leaf { "selected" } else { "leaf" },
                    ),
                };
                export::TreeLine {
                    depth: r.depth,
                    text,
                    mark: mark.into(),
                }
            })
            .collect()
    };
    export::ProbeTrees {
        layer: t.layer,
        precision: t.precision,
        recall: t.recall,
        f1: t.f1,
        predicted: lines(&t.predicted),
        gold: lines(&t.gold),
    }
}

/// Every head's thumbnail and score.
fn overview_of(
    a: &SnippetAnalysis,
    metric: super::data::Metric,
    grid: &[Vec<Option<f64>>],
) -> export::Overview {
    let ta = &a.token_attention;
    let n = ta.n();
    let heads = (0..ta.layers)
        .map(|l| {
            (0..ta.heads)
                .map(|h| {
                    let (cells, max) = overview::thumbnail(ta.head(l, h), n, OVERVIEW_SIDE);
                    export::Thumb {
                        cells,
                        max,
                        score: grid.get(l).and_then(|r| r.get(h)).copied().flatten(),
                    }
                })
                .collect()
        })
        .collect();
    export::Overview {
        metric: metric.key().to_string(),
        metric_name: metric.name().to_string(),
        side: OVERVIEW_SIDE.min(n.max(1)),
        heads,
    }
}

/// The figure kind of the focused panel (the overview when it is open).
pub fn this_view(app: &App) -> Kind {
    match app.overlay {
        Overlay::Overview(_) => return Kind::Overview,
        Overlay::Lens => return Kind::Lens,
        _ => {}
    }
    match app.view.focus {
        Focus::Code if app.patch_shown().is_some() => Kind::Patch,
        Focus::Code if app.knockout_shown().is_some() => Kind::Knockout,
        Focus::Code if app.surprisal_shown().is_some() => Kind::Surprisal,
        Focus::Code | Focus::Heatmap => Kind::Heatmap,
        Focus::Heads if app.view.metric.is_ablation() => Kind::Ablation,
        Focus::Heads => Kind::Heads,
        Focus::Categories if app.view.finding => Kind::Finding,
        Focus::Categories => Kind::Categories,
        Focus::Probes => Kind::Probes,
    }
}

/// The figure kinds `what` asks for in this state.
pub fn kinds(app: &App, what: ExportWhat) -> Vec<Kind> {
    match what {
        ExportWhat::View(k) => vec![k],
        ExportWhat::Screen => vec![Kind::Screen],
        ExportWhat::EveryPanel => {
            let mut k = vec![Kind::Heatmap];
            if app.patch_shown().is_some() {
                k.push(Kind::Patch);
            }
            if app.knockout_shown().is_some() {
                k.push(Kind::Knockout);
            } else if app.surprisal_shown().is_some() {
                k.push(Kind::Surprisal);
            }
            // The cross stack has no head scores (`CROSS_NO_SCORES`).
            if app.cross_stack_shown() {
                k.push(Kind::Categories);
            } else {
                k.push(Kind::Heads);
                if app.ablation_shown().is_some() {
                    k.push(Kind::Ablation);
                }
                if app.lens_shown().is_some() {
                    k.push(Kind::Lens);
                }
                k.extend([Kind::Categories, Kind::Finding]);
            }
            if app.probe_report().is_some() {
                k.push(Kind::Probes);
            }
            k.push(Kind::Overview);
            k
        }
    }
}

/// Figures by kind, and the view they show.
pub type FiguresAndData = (Vec<(Kind, Figure)>, Option<export::FigureData>);

/// The figures of `kinds` for the explorer's state, and the view they show (`None` for
/// the screen alone).
pub fn figures(app: &App, kinds: &[Kind], opts: &figure::FigureOptions) -> Result<FiguresAndData> {
    let needs_view = kinds.iter().any(|&k| k != Kind::Screen);
    let view = if needs_view {
        let v =
            figure_data_with(app, kinds.contains(&Kind::Overview)).ok_or_else(|| Error::Input {
                name: "export".into(),
                reason: "nothing to export yet: no analysis".into(),
            })?;
        Some(v)
    } else {
        None
    };
    let mut out = Vec::new();
    for &k in kinds {
        if matches!(k, Kind::Heads | Kind::Finding) && app.cross_stack_shown() {
            return Err(Error::Input {
                name: format!("figure {}", k.name()),
                reason: crate::tui::app::CROSS_NO_SCORES.into(),
            });
        }
        let fig = match (k, &view) {
            (Kind::Screen, _) => figure::screen::render(&screen_buffer(app), opts),
            (_, Some(v)) => figure::render(k, v, opts)?,
            (_, None) => unreachable!("a view is built for every kind but the screen"),
        };
        out.push((k, fig));
    }
    Ok((out, view))
}

/// The explorer drawn into a buffer of its size (what the terminal shows).
pub fn screen_buffer(app: &App) -> Buffer {
    let (w, h) = app.size;
    let mut t =
        Terminal::new(TestBackend::new(w.max(1), h.max(1))).expect("a test backend never fails");
    let _ = t.draw(|f| super::widgets::draw(app, f));
    t.backend().buffer().clone()
}

/// Write the figures `what` asks for (SVG + PNG each; the JSON of the view; for the
/// screen its text too) to the export directory; returns the paths written.
pub fn write(app: &App, what: ExportWhat) -> Result<Vec<PathBuf>> {
    let kinds = kinds(app, what);
    let opts = figure::FigureOptions {
        light: app.theme.light,
        ..figure::FigureOptions::default()
    };
    let (figs, view) = figures(app, &kinds, &opts)?;
    let dir = &app.present.export_dir;
    let mut suffixes = export::suffixes(&kinds, view.is_some());
    if kinds.contains(&Kind::Screen) {
        suffixes.push("-screen.txt".into());
    }
    if app.comparison().is_some() {
        suffixes.push("-compare.json".into());
    }
    let stem = export::free_stem(dir, &export::stem_now(), &suffixes);
    let mut paths = export::write_figures(dir, &stem, &figs, view.as_ref())?;
    if kinds.contains(&Kind::Screen) {
        let p = dir.join(format!("{stem}-screen.txt"));
        crate::fsio::write_atomic_io(&p, figure::screen::text(&screen_buffer(app)).as_bytes())
            .map_err(|e| Error::io(p.clone(), e))?;
        paths.push(p);
    }
    // Compare mode: the comparison's numbers too, as `codescope compare --json` writes them.
    if let (Some(c), true) = (app.comparison(), view.is_some()) {
        let p = dir.join(format!("{stem}-compare.json"));
        crate::fsio::write_atomic_io(
            &p,
            crate::analysis::compare::to_json(c).to_string().as_bytes(),
        )
        .map_err(|e| Error::io(p.clone(), e))?;
        paths.push(p);
    }
    tracing::info!(files = paths.len(), dir = %dir.display(), "exported");
    Ok(paths)
}
