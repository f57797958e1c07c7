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

/// The presenting state.
#[derive(Debug, Clone, Default)]
pub struct Present {
    /// A head pinned for side-by-side comparison: (layer, head), 0-based.
    pub pin: Option<(usize, usize)>,
    /// Where `x` writes (shown after each export).
    pub export_dir: PathBuf,
    /// The overview's thumbnails (computed in `settle` while the overview is open).
    pub thumbs: Option<Thumbs>,
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
                let dir = p.parent().map(|d| d.display().to_string()).unwrap_or_default();
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
        if let Some(mode) = scene.mode {
            if mode != self.view.mode {
                self.view.mode = mode;
                fx.extend(self.request_analysis());
            }
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
                Ok(Some(h)) => errors.push(format!("head {}: the model has heads 1-{heads}", h + 1)),
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
                Ok(_) => errors.push(format!("pin {p}: the model has {layers} layers x {heads} heads")),
                Err(e) => errors.push(e),
            }
        }
        if let Some(task) = &scene.task {
            match crate::probe::Task::ALL.iter().find(|t| t.name() == task) {
                Some(t) => self.probe.task = *t,
                None => errors.push(format!("probe task `{task}`")),
            }
        }
        if let Some(kind) = scene.view {
            if kind != Kind::Surprisal && self.view.surprisal {
                self.view.surprisal = false;
            }
            let focus = match kind {
                Kind::Heatmap | Kind::Screen | Kind::Overview => Focus::Heatmap,
                Kind::Surprisal => Focus::Code,
                Kind::Heads => Focus::Heads,
                Kind::Categories => Focus::Categories,
                Kind::Probes => Focus::Probes,
            };
            if kind != Kind::Screen {
                self.view.set_focus(focus);
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
    pub(super) fn settle_present(&mut self) {
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
            self.status
                .info(format!("pinned layer {} head {} beside the current head (* again: unpin)", l + 1, h + 1));
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
    pub(super) fn present_key(
        &mut self,
        k: crossterm::event::KeyEvent,
    ) -> Option<Vec<crate::tui::msg::Effect>> {
        use crossterm::event::KeyCode;
        match k.code {
            KeyCode::Char('O') => self.open_overview(),
            KeyCode::Char('*') => {
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
