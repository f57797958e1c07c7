//! Presenting: the state behind exports, the model overview, the pinned head, tours and
//! sessions (issue #14). Kept apart from the view state so the talk features stay in
//! one place; `App` holds one [`Present`].

use std::path::PathBuf;

/// What the `x` menu exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportWhat {
    /// The figure of one view (the focused panel's, or the overview when it was open)
    /// and the JSON.
    View(crate::export::figure::Kind),
    /// A figure of every panel that has data, and the JSON.
    EveryPanel,
    /// The whole screen as the terminal shows it (SVG, PNG and text).
    Screen,
}

/// The overview's thumbnails for one analysis and size: `[layer * heads + head]`,
/// each `side x side` block maxima divided by the head's maximum.
#[derive(Debug, Clone)]
pub struct Thumbs {
    pub req: u64,
    pub side: usize,
    pub cells: std::sync::Arc<Vec<Vec<f32>>>,
}

/// A tour being presented (`--tour`) or built (`B`).
#[derive(Debug, Clone)]
pub struct TourState {
    /// The tour file (`B` appends to it; it may not exist yet).
    pub path: PathBuf,
    pub tour: crate::present::tour::Tour,
    /// Each step's snippet, read when the tour was loaded (or why it could not be).
    pub snippets: Vec<Result<crate::present::tour::Snippet, String>>,
    /// The step on screen (None: not stepped into yet).
    pub at: Option<usize>,
}

/// A scene waiting for the analysis it applies to (a tour step or a resumed session
/// whose snippet or model is still being parsed, loaded or analysed).
#[derive(Debug, Clone)]
pub struct Pending {
    pub scene: crate::present::Scene,
    /// The model label it expects (None: any).
    pub model: Option<String>,
}

/// The presenting state.
#[derive(Debug, Clone, Default)]
pub struct Present {
    /// A head pinned for side-by-side comparison: (layer, head), 0-based.
    pub pin: Option<(usize, usize)>,
    /// Where `x` writes (shown after each export).
    pub export_dir: PathBuf,
    /// The overview's thumbnails (computed in `settle` while the overview is open).
    pub thumbs: Option<Thumbs>,
    /// The tour (`--tour`; `B` starts one in the export directory otherwise).
    pub tour: Option<TourState>,
    /// A scene to show once its analysis arrives.
    pub pending: Option<Pending>,
}

/// The overview overlay's rectangle for a terminal of `size` (all but the status
/// bar's two lines) and its inside.
pub fn overview_area(size: (u16, u16)) -> (ratatui::layout::Rect, ratatui::layout::Rect) {
    let r = ratatui::layout::Rect::new(0, 0, size.0, size.1.saturating_sub(2));
    (r, crate::tui::layout::inner(r))
}

impl super::App {
    /// A key in the `x` menu (opened on view `kind`): `1`/`v` this view, `2`/`a` every
    /// panel, `3`/`s` the whole screen; anything else closes it.
    pub(super) fn export_menu_key(
        &mut self,
        kind: crate::export::figure::Kind,
        k: crossterm::event::KeyEvent,
    ) -> Vec<crate::tui::msg::Effect> {
        use crossterm::event::KeyCode;
        let what = match k.code {
            KeyCode::Char('1' | 'v') | KeyCode::Enter => ExportWhat::View(kind),
            KeyCode::Char('2' | 'a') => ExportWhat::EveryPanel,
            KeyCode::Char('3' | 's') => ExportWhat::Screen,
            _ => return Vec::new(),
        };
        self.status.busy = Some("exporting…".into());
        vec![crate::tui::msg::Effect::Export(what)]
    }

    /// Report an export: the file names and the directory they went to.
    pub(super) fn exported(&mut self, r: Result<Vec<String>, String>) {
        self.status.busy = None;
        match r {
            Ok(paths) if !paths.is_empty() => {
                let p = std::path::Path::new(&paths[0]);
                let dir = p
                    .parent()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default();
                let names: Vec<String> = paths
                    .iter()
                    .map(|p| {
                        std::path::Path::new(p)
                            .file_name()
                            .map(|n| n.to_string_lossy().into_owned())
                            .unwrap_or_else(|| p.clone())
                    })
                    .collect();
                let mut msg = format!("exported {}", names.join(", "));
                if !dir.is_empty() {
                    msg.push_str(&format!(" in {dir}"));
                }
                self.status.info(msg);
            }
            Ok(_) => self.status.warn("nothing was exported"),
            Err(e) => self.status.error(format!("export failed: {e}")),
        }
    }
}

impl super::App {
    /// Show `scene` on the analysis shown: view, layer, head, token, threshold, input
    /// mode, direction, overlays, metric, pinned head, probe task. Changes that need
    /// the model (input mode, the surprisal view, probes) come back as effects; the
    /// rest is applied at once. Errors (a token that is not there, a layer beyond the
    /// model) leave the rest applied and say what was wrong.
    pub fn apply_scene(
        &mut self,
        scene: &crate::present::Scene,
    ) -> (Vec<crate::tui::msg::Effect>, Vec<String>) {
        use super::{Direction, Focus};
        use crate::export::figure::Kind;
        let mut fx = Vec::new();
        let mut errors = Vec::new();
        let (layers, heads) = self.dims();
        match scene.mode.as_deref().map(crate::present::parse_mode) {
            Some(Ok(mode)) if mode != self.view.mode => {
                self.view.mode = mode;
                fx.extend(self.request_analysis());
            }
            Some(Err(e)) => errors.push(e),
            _ => {}
        }
        if let Some(l) = scene.layer {
            if l == 0 || l > layers {
                errors.push(format!("layer {l}: the model has layers 1-{layers}"));
            } else {
                self.view.layer = l - 1;
            }
        }
        if let Some(h) = &scene.head {
            match h.resolve() {
                Ok(Some(h)) if h < heads => {
                    self.view.head = h;
                    self.view.mean = false;
                }
                Ok(Some(h)) => {
                    errors.push(format!("head {}: the model has heads 1-{heads}", h + 1))
                }
                Ok(None) => self.view.mean = true,
                Err(e) => errors.push(e),
            }
        }
        if let Some(t) = &scene.token {
            match &self.doc.syntax {
                Some(syn) => match t.resolve(syn.tokens.iter().map(|t| t.text.as_str())) {
                    Ok(i) => self.view.cursor = i,
                    Err(e) => errors.push(e),
                },
                None => errors.push("the snippet is not parsed".into()),
            }
        }
        if let Some(t) = scene.threshold {
            let steps = (t / crate::analysis::relations::THRESHOLD_STEP).round();
            if !(0.0..=crate::analysis::relations::THRESHOLD_STEPS as f32).contains(&steps)
                || (steps * crate::analysis::relations::THRESHOLD_STEP - t).abs() > 1e-4
            {
                errors.push(format!(
                    "threshold {t}: a multiple of {} in [0, {:.2}]",
                    crate::analysis::relations::THRESHOLD_STEP,
                    crate::analysis::relations::THRESHOLD_STEP
                        * crate::analysis::relations::THRESHOLD_STEPS as f32
                ));
            } else {
                self.set_threshold(steps as u8);
            }
        }
        if let Some(d) = &scene.direction {
            match d.as_str() {
                "from" => self.view.direction = Direction::From,
                "to" => self.view.direction = Direction::To,
                _ => errors.push(format!("direction `{d}`: from or to")),
            }
        }
        if let Some(g) = scene.gold {
            self.view.gold = g;
        }
        if let Some(d) = scene.dataflow {
            self.view.dfg = d;
        }
        if let Some(mk) = &scene.metric {
            match crate::tui::data::Metric::ALL.iter().find(|m| m.key() == mk) {
                Some(m) => self.view.metric = *m,
                None => errors.push(format!("metric `{mk}`")),
            }
        }
        if let Some(p) = &scene.pin {
            match crate::present::parse_pin(p) {
                Ok((l, h)) if l < layers && h < heads => self.present.pin = Some((l, h)),
                Ok(_) => errors.push(format!(
                    "pin {p}: the model has {layers} layers x {heads} heads"
                )),
                Err(e) => errors.push(e),
            }
        }
        if let Some(task) = &scene.task {
            match super::PanelTask::from_name(task) {
                Some(t) => self.probe.task = t,
                None => errors.push(format!("probe task `{task}`")),
            }
        }
        if let Some(set) = &scene.knockout {
            match super::knockout::CYCLE.iter().position(|c| c == set) {
                Some(i) => {
                    self.knockout.set = Some(i);
                    self.knockout.result = None;
                    fx.extend(self.request_knockout());
                }
                None => errors.push(format!(
                    "knockout `{set}`: one of {}",
                    super::knockout::CYCLE.join(", ")
                )),
            }
        }
        if let Some(kind) = scene.view {
            if kind != Kind::Surprisal && self.view.surprisal {
                self.view.surprisal = false;
            }
            // The code panel and the heatmap both show the heatmap view.
            let shown = matches!(self.view.focus, Focus::Code | Focus::Heatmap);
            let focus = match kind {
                Kind::Heatmap | Kind::Overview if shown => None,
                Kind::Heatmap | Kind::Overview => Some(Focus::Heatmap),
                Kind::Screen => None,
                Kind::Surprisal | Kind::Knockout | Kind::Patch => Some(Focus::Code),
                Kind::Heads | Kind::Ablation => Some(Focus::Heads),
                Kind::Lens => None,
                Kind::Categories | Kind::Finding => Some(Focus::Categories),
                Kind::Probes => Some(Focus::Probes),
            };
            if let Some(f) = focus {
                self.view.set_focus(f);
            }
            // A scene of the finding shows it in the Categories panel (and of the
            // categories, the categories).
            match kind {
                Kind::Finding => self.view.finding = true,
                Kind::Categories => self.view.finding = false,
                _ => {}
            }
            if kind == Kind::Overview {
                self.open_overview();
            }
            // The ablation view is the head grid on an ablation score (identifiers
            // unless the scene names one).
            if kind == Kind::Ablation && !self.view.metric.is_ablation() {
                self.view.metric = crate::tui::data::Metric::AblationId;
            }
            if kind == Kind::Patch && !self.patch.on {
                fx.extend(self.toggle_patch());
            }
            if kind == Kind::Lens {
                fx.extend(self.open_lens());
            } else if matches!(self.overlay, super::Overlay::Lens) {
                self.overlay = super::Overlay::None;
            }
            match kind {
                Kind::Surprisal if !self.view.surprisal => fx.extend(self.toggle_surprisal()),
                Kind::Probes => fx.extend(self.request_probe()),
                _ => {}
            }
        }
        (fx, errors)
    }
}

/// The model overview's cursor: the head it is on, (layer, head) 0-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverviewCursor {
    pub sel: (usize, usize),
}

/// Where the overview's thumbnails go in an `area` for `layers x heads`: layers
/// across, heads down, each thumbnail `thumb_w` columns by `thumb_h` rows (two
/// half-block pixels per row, so `thumb_w = 2 * thumb_h` cells are square) over a
/// score line; `rows` heads fit at once, from `top`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverviewGeom {
    pub label_w: u16,
    pub thumb_w: u16,
    pub thumb_h: u16,
    /// Columns per layer (thumbnail and a gap).
    pub col_w: u16,
    /// Heads shown and the first one.
    pub rows: usize,
    pub top: usize,
}

/// The overview's geometry inside `inner` (a panel without its border) with the cursor
/// on head `cur`; `None` when nothing fits.
pub fn overview_geom(
    inner: ratatui::layout::Rect,
    layers: usize,
    heads: usize,
    cur: usize,
) -> Option<OverviewGeom> {
    if layers == 0 || heads == 0 || inner.height < 4 {
        return None;
    }
    let label_w = 4u16;
    let col_w = ((inner.width.saturating_sub(label_w)) as usize / layers).min(13) as u16;
    if col_w < 3 {
        return None;
    }
    let thumb_w = (col_w - 1) & !1; // even, so it splits into square pixels
    let thumb_w = thumb_w.max(2);
    let thumb_h = thumb_w / 2;
    // One header row; each head: its thumbnail and a score line.
    let rows = ((inner.height - 1) / (thumb_h + 1)).max(1) as usize;
    let rows = rows.min(heads);
    let top = if heads <= rows {
        0
    } else {
        cur.saturating_sub(rows / 2).min(heads - rows)
    };
    Some(OverviewGeom {
        label_w,
        thumb_w,
        thumb_h,
        col_w,
        rows,
        top,
    })
}

impl super::App {
    /// Keep the overview's thumbnails in step with the analysis shown and the
    /// thumbnail size (called from `settle`).
    pub(super) fn settle_present(&mut self, fx: &mut Vec<crate::tui::msg::Effect>) {
        self.apply_pending(fx);
        let super::Overlay::Overview(c) = &self.overlay else {
            return;
        };
        let Some((req, p)) = self.shown.data.clone() else {
            return;
        };
        let (layers, heads) = (p.layers(), p.heads());
        let (_, inner) = overview_area(self.size);
        let Some(g) = overview_geom(inner, layers, heads, c.sel.1) else {
            return;
        };
        let side = g.thumb_w as usize;
        if self
            .present
            .thumbs
            .as_ref()
            .is_some_and(|t| t.req == req && t.side == side)
        {
            return;
        }
        let ta = &p.token_attention;
        if !ta.resident() {
            return; // every head's thumbnail needs every layer's matrices
        }
        let n = ta.n();
        let cells = (0..layers)
            .flat_map(|l| (0..heads).map(move |h| (l, h)))
            .map(|(l, h)| crate::analysis::overview::thumbnail(ta.head(l, h), n, side).0)
            .collect();
        self.present.thumbs = Some(Thumbs {
            req,
            side,
            cells: std::sync::Arc::new(cells),
        });
    }

    /// Open the model overview on the current head.
    pub(super) fn open_overview(&mut self) {
        if self.prepared().is_none() {
            self.status.warn("the overview needs an analysis");
            return;
        }
        self.overlay = super::Overlay::Overview(OverviewCursor {
            sel: (self.view.layer, self.view.head),
        });
    }

    /// Pin head `(l, h)` beside the current one, or unpin it if it is pinned.
    pub(super) fn toggle_pin(&mut self, (l, h): (usize, usize)) {
        if self.present.pin == Some((l, h)) {
            self.present.pin = None;
            self.status.info("unpinned");
        } else {
            self.present.pin = Some((l, h));
            self.status.info(format!(
                "pinned layer {} head {} beside the current head (* again: unpin)",
                l + 1,
                h + 1
            ));
        }
    }

    /// A key in the overview: arrows move, Enter opens the head, `*` pins it, `x`
    /// exports, `s` changes the score, Esc / `O` / `q` close.
    pub(super) fn overview_key(
        &mut self,
        mut c: OverviewCursor,
        k: crossterm::event::KeyEvent,
    ) -> Vec<crate::tui::msg::Effect> {
        use crossterm::event::KeyCode;
        let (layers, heads) = self.dims();
        let (l, h) = &mut c.sel;
        match k.code {
            KeyCode::Esc | KeyCode::Char('O' | 'q') => return Vec::new(),
            KeyCode::Left => *l = l.saturating_sub(1),
            KeyCode::Right => *l = (*l + 1).min(layers.saturating_sub(1)),
            KeyCode::Up => *h = h.saturating_sub(1),
            KeyCode::Down => *h = (*h + 1).min(heads.saturating_sub(1)),
            KeyCode::PageUp => *h = h.saturating_sub(4),
            KeyCode::PageDown => *h = (*h + 4).min(heads.saturating_sub(1)),
            KeyCode::Enter => {
                (self.view.layer, self.view.head) = c.sel;
                self.view.mean = false;
                self.view.grid = c.sel;
                return Vec::new();
            }
            KeyCode::Char('*') => self.toggle_pin(c.sel),
            KeyCode::Char('s') => self.view.metric = self.view.metric.next(),
            KeyCode::Char('x') => {
                self.overlay = super::Overlay::ExportMenu(crate::export::figure::Kind::Overview);
                return Vec::new();
            }
            _ => {}
        }
        self.overlay = super::Overlay::Overview(c);
        Vec::new()
    }

    /// Keys of the presenting features in the normal view: `O` overview, `*` pin the
    /// current head (again: unpin). `None` for keys that are not theirs.
    /// The presenting commands (overview, pin, tour steps); `None` for any other.
    pub(super) fn present_command(
        &mut self,
        c: crate::tui::keymap::Command,
    ) -> Option<Vec<crate::tui::msg::Effect>> {
        use crate::tui::keymap::Command;
        match c {
            Command::Overview => self.open_overview(),
            Command::AddStep => return Some(self.append_step()),
            Command::NextStep => {
                let next = self
                    .present
                    .tour
                    .as_ref()
                    .map_or(0, |t| t.at.map_or(0, |a| a + 1));
                if self
                    .present
                    .tour
                    .as_ref()
                    .is_some_and(|t| t.at.is_some_and(|a| a + 1 >= t.tour.steps.len()))
                {
                    self.status.info("that was the last step ([ goes back)");
                    return Some(Vec::new());
                }
                return Some(self.goto_step(next));
            }
            Command::PrevStep => {
                let at = self.present.tour.as_ref().and_then(|t| t.at);
                match at {
                    Some(0) => self.status.info("this is the first step (] goes on)"),
                    Some(a) => return Some(self.goto_step(a - 1)),
                    None => return Some(self.goto_step(0)),
                }
            }
            Command::Pin => {
                if self.dims().0 == 0 {
                    self.status.warn("no model is loaded yet");
                } else {
                    self.toggle_pin((self.view.layer, self.view.head));
                }
            }
            _ => return None,
        }
        Some(Vec::new())
    }
}

impl super::App {
    /// Apply the pending scene once the analysis shown is the document's, by the model
    /// it expects.
    fn apply_pending(&mut self, fx: &mut Vec<crate::tui::msg::Effect>) {
        let Some(p) = &self.present.pending else {
            return;
        };
        if self.prepared().is_none() || self.stale() {
            return;
        }
        let label = self.model.loaded.as_ref().map(|(l, _)| l.as_str());
        if p.model.as_deref().is_some_and(|m| Some(m) != label) {
            return;
        }
        let Some(p) = self.present.pending.take() else {
            return;
        };
        let (more, errors) = self.apply_scene(&p.scene);
        fx.extend(more);
        if !errors.is_empty() {
            self.status.warn(errors.join("; "));
        }
    }

    /// The caption of the tour step on screen, with its number.
    pub fn caption(&self) -> Option<String> {
        let t = self.present.tour.as_ref()?;
        let at = t.at?;
        let step = t.tour.steps.get(at)?;
        let n = t.tour.steps.len();
        Some(match &step.caption {
            Some(c) => format!("{}/{n} {c}", at + 1),
            None => format!("{}/{n}", at + 1),
        })
    }

    /// Start on tour step `i` whose snippet and model the explorer was created with
    /// (before [`super::App::start`]): its scene applies once the analysis arrives.
    pub fn start_on_step(&mut self, i: usize) {
        let Some(t) = self.present.tour.as_mut() else {
            return;
        };
        let Some(step) = t.tour.steps.get(i) else {
            return;
        };
        t.at = Some(i);
        self.present.pending = Some(Pending {
            scene: step.scene.clone(),
            model: None,
        });
    }

    /// Show tour step `i`: its snippet and model (loaded, parsed and analysed if they
    /// differ from what is shown), then its scene once the analysis is there.
    pub fn goto_step(&mut self, i: usize) -> Vec<crate::tui::msg::Effect> {
        use crate::tui::msg::Effect;
        let Some(t) = self.present.tour.as_mut() else {
            self.status
                .warn("no tour: start one with --tour FILE, or add steps with B");
            return Vec::new();
        };
        let n = t.tour.steps.len();
        if n == 0 {
            self.status.warn(format!(
                "the tour {} has no steps yet (B adds one)",
                t.path.display()
            ));
            return Vec::new();
        }
        let i = i.min(n - 1);
        let snip = match &t.snippets[i] {
            Ok(s) => s.clone(),
            Err(e) => {
                let e = format!("step {}: {e}", i + 1);
                self.status.error(e);
                return Vec::new();
            }
        };
        t.at = Some(i);
        let step = t.tour.steps[i].clone();
        let base = t.tour.base.clone();
        let model = t.tour.models(self.model.spec.as_deref())[i].clone();
        let stack = t.tour.stacks(self.model.default_stack)[i];
        let mut fx = Vec::new();
        let loaded = self.model.loaded.as_ref().map(|(l, _)| l.clone());
        let model_changes = model.is_some() && model != loaded;
        // Another stack of the model shown is another load (its backbone is built for one).
        let stack_changes = stack != self.model.stack;
        if model_changes || stack_changes {
            if model_changes {
                self.model.spec = model.clone();
            }
            self.model.stack = stack;
            let spec = if model_changes {
                model.clone()
            } else {
                loaded.or(self.model.spec.clone())
            };
            self.status.busy = Some(format!(
                "loading model {} ({} stack)…",
                spec.as_deref().unwrap_or("(default)"),
                stack.name()
            ));
            fx.push(Effect::LoadModel(spec, self.model.random_weights, stack));
        }
        let model_changes = model_changes || stack_changes;
        let doc_changes = snip.text != self.doc.text || snip.lang != self.doc.lang;
        if doc_changes {
            self.view.cursor = 0;
            fx.extend(self.set_doc(crate::tui::data::Doc::new(snip.name, snip.text, snip.lang)));
        } else if model_changes {
            fx.extend(self.request_parse_or_analysis());
        }
        // Views of the last step do not carry over: the overview, pins and the focused
        // panel are per step (a step without a view starts on the code, where the arrows
        // change layer and head).
        self.overlay = super::Overlay::None;
        self.present.pin = None;
        if step.scene.view.is_none() {
            self.view.set_focus(super::Focus::Code);
        }
        self.present.pending = Some(Pending {
            scene: step.scene.clone(),
            model: if model_changes { model } else { None },
        });
        // A step's rewrite turns compare mode on with that twin; other steps show the
        // snippet alone.
        match &step.rewrite {
            Some(r) => {
                self.compare.choice = super::TwinChoice::from_spec(r, &base);
                self.compare.on = true;
            }
            None => self.compare.on = false,
        }
        self.status.message = None;
        let mut more = Vec::new();
        self.apply_pending(&mut more);
        fx.extend(more);
        fx
    }

    /// The current view as a scene (the token by its text, `TEXT#K` when it repeats,
    /// or its index; settings left at their defaults are omitted).
    pub fn scene_here(&self) -> crate::present::Scene {
        use crate::present::{HeadSpec, Scene, TokenSpec};
        let v = &self.view;
        let token = self.doc.syntax.as_ref().and_then(|syn| {
            let t = syn.tokens.get(v.cursor)?;
            let k = syn.tokens[..=v.cursor]
                .iter()
                .filter(|x| x.text == t.text)
                .count();
            let plain =
                !t.text.contains('#') && !t.text.trim().is_empty() && !t.text.contains('\n');
            Some(if plain && k == 1 {
                TokenSpec::Text(t.text.clone())
            } else if plain {
                TokenSpec::Text(format!("{}#{k}", t.text))
            } else {
                TokenSpec::Index(v.cursor)
            })
        });
        let kind = crate::tui::figures::this_view(self);
        let default = super::View::default();
        Scene {
            view: Some(kind),
            layer: Some(v.layer + 1),
            head: Some(if v.mean {
                HeadSpec::Name("mean".into())
            } else {
                HeadSpec::Number(v.head + 1)
            }),
            token,
            threshold: (v.t_steps != default.t_steps).then(|| self.threshold()),
            mode: (v.mode != default.mode).then(|| v.mode.name().to_string()),
            direction: (v.direction != default.direction).then(|| "to".to_string()),
            gold: v.gold.then_some(true),
            dataflow: v.dfg.then_some(true),
            metric: (v.metric != default.metric).then(|| v.metric.key().to_string()),
            pin: self
                .present
                .pin
                .map(|(l, h)| format!("{}:{}", l + 1, h + 1)),
            task: (kind == crate::export::figure::Kind::Probes)
                .then(|| self.probe.task.name().to_string()),
            knockout: self
                .knockout
                .set
                .map(|i| super::knockout::CYCLE[i].to_string()),
        }
    }

    /// The model as the user named it (or the one loaded).
    fn model_label(&self) -> Option<String> {
        self.model
            .spec
            .clone()
            .or_else(|| self.model.loaded.as_ref().map(|(l, _)| l.clone()))
    }

    /// The stack of the encoder–decoder shown (`None` for one-stack models): what a
    /// session and a tour step keep.
    fn stack_here(&self) -> Option<crate::model::Stack> {
        self.model.info()?.stack.map(|_| self.model.stack)
    }

    /// The current view as a tour step: the snippet inline (the runtime refers to its
    /// file instead when the file still holds this text), the model, the scene.
    pub fn step_here(&self) -> Option<crate::present::tour::Step> {
        self.doc.syntax.as_ref()?;
        Some(crate::present::tour::Step {
            code: Some(self.doc.text.clone()),
            name: Some(self.doc.name.clone()),
            lang: Some(self.doc.lang.name().to_string()),
            model: self.model_label(),
            stack: self.stack_here().map(|s| s.name().to_string()),
            scene: self.scene_here(),
            rewrite: self.compare.on.then(|| self.compare.choice.label()),
            ..Default::default()
        })
    }

    /// What a session keeps of this state.
    pub fn session(&self) -> crate::present::session::Session {
        use crate::present::session::{EditorState, Session, VERSION};
        let mut scene = self.scene_here();
        // Panel focus and the overview are kept apart from the view kind.
        scene.view = None;
        Session {
            version: VERSION,
            name: self.doc.name.clone(),
            text: self.doc.text.clone(),
            lang: self.doc.lang.name().to_string(),
            edited: self.doc.name.ends_with(" (edited)"),
            model: self.model_label(),
            stack: self.stack_here().map(|s| s.name().to_string()),
            editor: self.editor.as_ref().map(|e| EditorState {
                text: e.text(),
                row: e.row,
                col: e.col,
            }),
            scene,
            focus: self.view.focus.name().to_string(),
            zoom: self.view.zoom,
            surprisal: self.view.surprisal,
            tour: self
                .present
                .tour
                .as_ref()
                .map(|t| (t.path.clone(), t.at.unwrap_or(0))),
        }
    }

    /// Bring back a session on an explorer just created on its snippet (before
    /// [`super::App::start`]): view settings now, the rest of the scene once the
    /// analysis arrives, the editor with its unapplied text.
    pub fn restore(&mut self, s: &crate::present::session::Session) {
        if let Some(f) = super::Focus::ALL.iter().find(|f| f.name() == s.focus) {
            self.view.set_focus(*f);
        }
        self.view.zoom = s.zoom;
        self.view.surprisal = s.surprisal;
        if let Some(Ok(m)) = s.scene.mode.as_deref().map(crate::present::parse_mode) {
            self.view.mode = m;
        }
        let mut scene = s.scene.clone();
        scene.mode = None;
        self.present.pending = Some(Pending { scene, model: None });
        if let Some(e) = &s.editor {
            let mut ed = crate::tui::editor::Editor::new(&e.text, 0);
            ed.row = e.row.min(ed.lines.len().saturating_sub(1));
            ed.col = e.col.min(ed.lines[ed.row].chars().count());
            self.editor = Some(ed);
            self.view.focus = super::Focus::Code;
        }
        if let Some((_, at)) = &s.tour {
            if let Some(t) = self.present.tour.as_mut() {
                t.at = Some((*at).min(t.tour.steps.len().saturating_sub(1)));
            }
        }
        self.status.info(format!("resumed {}", s.name));
    }

    /// `B`: append the current view to the tour file (an effect: the runtime writes).
    /// `B`: ask for the new step's caption (the step is this view when it is answered).
    fn append_step(&mut self) -> Vec<crate::tui::msg::Effect> {
        if self.step_here().is_none() {
            self.status
                .warn("nothing to add yet: the snippet is not parsed");
            return Vec::new();
        }
        self.overlay = super::Overlay::Prompt(
            super::PromptKind::Caption,
            crate::tui::editor::LineInput::default(),
        );
        Vec::new()
    }

    /// The caption prompt was answered: append this view as a step with `caption` (none
    /// when empty).
    pub(super) fn add_step(&mut self, caption: String) -> Vec<crate::tui::msg::Effect> {
        let Some(mut step) = self.step_here() else {
            return Vec::new();
        };
        step.caption = Some(caption).filter(|c| !c.is_empty());
        let path = match &self.present.tour {
            Some(t) => t.path.clone(),
            None => self.present.export_dir.join("tour.toml"),
        };
        vec![crate::tui::msg::Effect::AppendStep(path, Box::new(step))]
    }

    /// A step was appended (by the runtime): keep it in the tour being built.
    pub(super) fn step_appended(
        &mut self,
        r: Result<
            (
                PathBuf,
                crate::present::tour::Step,
                crate::present::tour::Snippet,
            ),
            String,
        >,
    ) {
        match r {
            Ok((path, step, snip)) => {
                let t = self.present.tour.get_or_insert_with(|| TourState {
                    path: path.clone(),
                    tour: crate::present::tour::Tour {
                        base: path.parent().map(|p| p.to_path_buf()).unwrap_or_default(),
                        ..Default::default()
                    },
                    snippets: Vec::new(),
                    at: None,
                });
                t.tour.steps.push(step);
                t.snippets.push(Ok(snip));
                let n = t.tour.steps.len();
                t.at = Some(n - 1);
                // Say what was recorded: the view (and where), and whether it has a caption.
                let last = &t.tour.steps[n - 1];
                let mut what = vec![last.kind().name().to_string()];
                if let Some(l) = last.scene.layer {
                    what.push(format!("layer {l}"));
                }
                match &last.scene.head {
                    Some(crate::present::HeadSpec::Number(h)) => what.push(format!("head {h}")),
                    Some(crate::present::HeadSpec::Name(h)) => what.push(format!("head {h}")),
                    None => {}
                }
                if let Some(r) = &last.rewrite {
                    what.push(format!("compare {r}"));
                }
                if last.caption.is_none() {
                    what.push("no caption".into());
                }
                self.status.info(format!(
                    "added step {n} ({}) to {}",
                    what.join(", "),
                    path.display()
                ));
            }
            Err(e) => self.status.error(format!("could not add the step: {e}")),
        }
    }
}
