//! Where every panel goes, as a pure function of the explorer's state: the panel
//! rectangles for the terminal size ([`geometry`]) and the inner geometry of the panels
//! that scroll or zoom ([`code_geom`], [`heat_geom`]).
//!
//! Both drawing and `App::update` call these (drawing to place and size what it draws,
//! `update` to keep the cursor in view, to page by the visible height and to resolve
//! "fit" zoom), so the two always agree and nothing is written while drawing.
//!
//! Layouts: at least [`FULL_W`]x[`FULL_H`] all panels (code | heatmap over heads |
//! categories | probes); smaller, down to [`MIN_W`]x[`MIN_H`], the code beside one side
//! panel chosen with Tab (below [`SPLIT_W`] columns only the focused panel); smaller
//! still, a "terminal too small" message.

use ratatui::layout::{Constraint, Layout, Rect};

use super::app::{App, Focus};

/// Smallest usable terminal.
pub const MIN_W: u16 = 60;
pub const MIN_H: u16 = 16;
/// Size from which every panel is shown at once.
pub const FULL_W: u16 = 110;
pub const FULL_H: u16 = 32;
/// Below this width (compact layout) only one panel is shown.
pub const SPLIT_W: u16 = 76;

/// The panels' rectangles for one terminal size and state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Geometry {
    /// Below [`MIN_W`]x[`MIN_H`]: only the "too small" message.
    pub too_small: bool,
    /// Whether every panel is shown (the full layout).
    pub full: bool,
    /// The status bar (two lines).
    pub status: Rect,
    /// The code panel, when shown.
    pub code: Option<Rect>,
    /// Compare mode: the twin's code, below the code panel (taken from its height).
    pub twin: Option<Rect>,
    /// The patch view (`A`): its table, in the twin's place.
    pub patch: Option<Rect>,
    /// The side panels shown, with their rectangles.
    pub panels: Vec<(Focus, Rect)>,
    /// The pinned head's heatmap (`*`): the right half of the heatmap panel.
    pub pinned: Option<Rect>,
}

impl Geometry {
    /// The rectangle of panel `f`, if it is shown.
    pub fn panel(&self, f: Focus) -> Option<Rect> {
        if f == Focus::Code {
            return self.code;
        }
        self.panels.iter().find(|(p, _)| *p == f).map(|(_, r)| *r)
    }
}

/// Place the panels for `app`'s terminal size, dimensions, focus and editor.
pub fn geometry(app: &App) -> Geometry {
    geometry_in(app, Rect::new(0, 0, app.size.0, app.size.1))
}

/// [`geometry`] for a given screen area (drawing passes the frame's, which equals
/// `app.size` once the resize message has been applied).
pub fn geometry_in(app: &App, area: Rect) -> Geometry {
    let mut g = panels_in(app, area);
    // Compare mode: the twin under the code, when the code panel is tall enough to share.
    if let Some(r) = g
        .code
        .filter(|r| app.compare.on && app.editor.is_none() && r.height >= 12)
    {
        let [code, twin] =
            Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(r);
        g.code = Some(code);
        if app.patch.on {
            g.patch = Some(twin);
        } else {
            g.twin = Some(twin);
        }
    }
    // A pinned head shares the heatmap panel when both halves stay usable.
    if app.present.pin.is_some() {
        if let Some(k) = g.panels.iter().position(|(f, _)| *f == Focus::Heatmap) {
            let r = g.panels[k].1;
            if r.width >= 48 {
                let [a, b] =
                    Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
                        .areas(r);
                g.panels[k].1 = a;
                g.pinned = Some(b);
            }
        }
    }
    g
}

/// The panels without the pinned head's split.
fn panels_in(app: &App, area: Rect) -> Geometry {
    if area.width < MIN_W || area.height < MIN_H {
        return Geometry {
            too_small: true,
            ..Geometry::default()
        };
    }
    let [main, status] = Layout::vertical([Constraint::Min(1), Constraint::Length(2)]).areas(area);
    let mut g = Geometry {
        status,
        ..Geometry::default()
    };
    if area.width >= FULL_W && area.height >= FULL_H {
        g.full = true;
        let (layers, heads) = app.dims();
        let heads = if heads == 0 { 12 } else { heads };
        let bottom_h = (heads as u16 + 4).clamp(14, main.height / 2);
        let [top, bottom] =
            Layout::vertical([Constraint::Min(8), Constraint::Length(bottom_h)]).areas(main);
        let [code_a, heat_a] =
            Layout::horizontal([Constraint::Percentage(54), Constraint::Percentage(46)]).areas(top);
        let layers = if layers == 0 { 12 } else { layers };
        let (grid_w, cat_w) = bottom_widths(app, area.width, layers);
        let [grid_a, cat_a, probe_a] = Layout::horizontal([
            Constraint::Length(grid_w),
            Constraint::Length(cat_w),
            Constraint::Min(probe_min_w(app)),
        ])
        .areas(bottom);
        g.code = Some(code_a);
        g.panels = vec![
            (Focus::Heatmap, heat_a),
            (Focus::Heads, grid_a),
            (Focus::Categories, cat_a),
            (Focus::Probes, probe_a),
        ];
        return g;
    }
    let side = if app.view.side == Focus::Code {
        Focus::Heatmap
    } else {
        app.view.side
    };
    if main.width < SPLIT_W {
        if app.view.focus == Focus::Code || app.editor.is_some() {
            g.code = Some(main);
        } else {
            g.panels = vec![(side, main)];
        }
        return g;
    }
    let [code_a, side_a] =
        Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(main);
    g.code = Some(code_a);
    g.panels = vec![(side, side_a)];
    g
}

/// Width of the category panel with the head and layer 5x5 matrices side by side, and
/// without (the layer's 5x5 left out).
pub const CAT_WIDE_W: u16 = 54;
pub const CAT_NARROW_W: u16 = 31;
/// The probe panel's smallest width in the full layout.
pub const PROBE_MIN_W: u16 = 30;
/// ... when it shows AST-Probe's two trees side by side (the category panel narrows
/// and the head grid scrolls first).
pub const PROBE_AST_MIN_W: u16 = 44;

/// The probe panel's smallest width in the full layout for what it shows.
pub fn probe_min_w(app: &App) -> u16 {
    if app.probe.task == super::app::PanelTask::Ast {
        PROBE_AST_MIN_W
    } else {
        PROBE_MIN_W
    }
}

/// Widths of the head grid and the category panel in the full layout: the grid takes
/// every layer's column if it can (narrowing the category panel first), else what is
/// left beside the categories and the probes, and scrolls.
fn bottom_widths(app: &App, width: u16, layers: usize) -> (u16, u16) {
    let need = GRID_LABEL_W + grid_cell_w(app) * layers as u16 + 2;
    // At least room for the title with its unit ("Heads · F1×100 vs AST motif [s]").
    let need = need.max(36);
    let probe_w = probe_min_w(app);
    if need + CAT_WIDE_W + probe_w <= width {
        return (need, CAT_WIDE_W);
    }
    let rest = width.saturating_sub(probe_w);
    if need + CAT_NARROW_W <= rest {
        return (need, CAT_NARROW_W);
    }
    // Not every layer fits: keep the wide categories when the grid still shows at least
    // 12 layers beside them, else the narrow ones.
    let wide = rest.saturating_sub(CAT_WIDE_W);
    if wide >= GRID_LABEL_W + 3 + 12 * grid_cell_w(app) {
        (wide, CAT_WIDE_W)
    } else {
        (rest.saturating_sub(CAT_NARROW_W).max(20), CAT_NARROW_W)
    }
}

/// Columns of the head grid's row labels (`H64` and a marker column).
pub const GRID_LABEL_W: u16 = 4;

/// Columns of one head-grid cell: a separating space, a shade glyph without colour, then
/// two digits (three for entropy's `4.5` and the ablation's `0.4` bits).
pub fn grid_cell_w(app: &App) -> u16 {
    let m = app.view.metric;
    let digits = if m == crate::tui::data::Metric::Entropy || m.is_ablation() {
        3
    } else {
        2
    };
    1 + u16::from(!app.theme.colored()) + digits
}

/// The head grid's geometry in panel rectangle `r`: its orientation, which layers and
/// heads are visible, and where. Layers are columns and heads rows, unless the panel
/// shows more cells the other way round (few heads, many layers, a narrow panel:
/// Gemma 3's 18 x 4 at 80x24), when it is transposed. The origin comes from
/// `app.view.grid_origin`, which `App::settle` keeps so that the followed cell (the grid
/// cursor when the grid has the focus, else the current head) is visible.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GridGeom {
    pub inner: Rect,
    /// Columns of one cell.
    pub cw: u16,
    /// Layers and heads of the model.
    pub layers: usize,
    pub heads: usize,
    /// First visible layer and how many are visible.
    pub l0: usize,
    pub lvis: usize,
    /// First visible head and how many are visible.
    pub h0: usize,
    pub hvis: usize,
    /// Rows of the footer (the value under the cursor) below the grid.
    pub footer_h: u16,
    /// Layers as rows, heads as columns.
    pub transposed: bool,
}

impl GridGeom {
    /// (first visible, visible, total) along the columns.
    pub fn cols(&self) -> (usize, usize, usize) {
        if self.transposed {
            (self.h0, self.hvis, self.heads)
        } else {
            (self.l0, self.lvis, self.layers)
        }
    }
    /// (first visible, visible, total) along the rows.
    pub fn rows(&self) -> (usize, usize, usize) {
        if self.transposed {
            (self.l0, self.lvis, self.layers)
        } else {
            (self.h0, self.hvis, self.heads)
        }
    }
    /// Screen row of the header (layer numbers; head numbers when transposed).
    pub fn header_y(&self) -> u16 {
        self.inner.y
    }
    /// Screen column where column `c` (a layer; a head when transposed) starts, if it
    /// is visible.
    pub fn cell_x(&self, c: usize) -> Option<u16> {
        let (c0, cvis, _) = self.cols();
        (c >= c0 && c < c0 + cvis).then(|| self.inner.x + GRID_LABEL_W + (c - c0) as u16 * self.cw)
    }
    /// The column (a layer; a head when transposed) at screen column `x`.
    pub fn col_at(&self, x: u16) -> Option<usize> {
        let x0 = self.inner.x + GRID_LABEL_W;
        let (c0, cvis, _) = self.cols();
        let c = c0 + (x.checked_sub(x0)? / self.cw) as usize;
        (c < c0 + cvis).then_some(c)
    }
    /// The (layer, head) of the cell at screen position (x, y), if any.
    pub fn cell_at(&self, x: u16, y: u16) -> Option<(usize, usize)> {
        let c = self.col_at(x)?;
        let (r0, rvis, _) = self.rows();
        let r = r0 + y.checked_sub(self.inner.y + 1)? as usize;
        if r >= r0 + rvis {
            return None;
        }
        Some(if self.transposed { (r, c) } else { (c, r) })
    }
    /// Whether columns or rows lie beyond the visible ones.
    pub fn more_left(&self) -> bool {
        self.cols().0 > 0
    }
    pub fn more_right(&self) -> bool {
        let (c0, cvis, n) = self.cols();
        c0 + cvis < n
    }
    pub fn more_up(&self) -> bool {
        self.rows().0 > 0
    }
    pub fn more_down(&self) -> bool {
        let (r0, rvis, n) = self.rows();
        r0 + rvis < n
    }
}

/// Visible columns and rows of a grid of `cols` x `rows` cells of `cw` columns in
/// `inner` (rows: header, grid rows, footer of `footer_h`).
pub fn grid_fit(inner: Rect, cw: u16, cols: usize, rows: usize) -> (usize, usize, u16) {
    let fit = inner.width.saturating_sub(GRID_LABEL_W) as usize / cw.max(1) as usize;
    // A marker column on the right when not every column fits.
    let cvis = if fit >= cols {
        cols
    } else {
        (inner.width.saturating_sub(GRID_LABEL_W + 1) as usize / cw.max(1) as usize).max(1)
    };
    // A second footer line (the value and the keys on their own lines) in a narrow
    // panel, if it costs no grid row.
    let footer_h: u16 = if inner.width < 44 && inner.height as usize >= rows + 3 {
        2
    } else {
        1
    };
    let rvis = (inner.height.saturating_sub(1 + footer_h) as usize).max(1);
    (cvis.min(cols), rvis.min(rows), footer_h)
}

/// The head grid's geometry (`None` before an analysis or without room).
pub fn grid_geom(app: &App, r: Rect) -> Option<GridGeom> {
    let inner = inner(r);
    let (layers, heads) = app.dims();
    if layers == 0 || heads == 0 || inner.height < 3 || inner.width < GRID_LABEL_W + 3 {
        return None;
    }
    let cw = grid_cell_w(app);
    let (lv, hv, footer_h) = grid_fit(inner, cw, layers, heads);
    let (ht, lt, _) = grid_fit(inner, cw, heads, layers);
    let transposed = lv * hv < layers * heads && ht * lt > lv * hv;
    let (lvis, hvis) = if transposed { (lt, ht) } else { (lv, hv) };
    let (l0, h0) = app.view.grid_origin;
    Some(GridGeom {
        inner,
        cw,
        layers,
        heads,
        l0: l0.min(layers - lvis),
        lvis,
        h0: h0.min(heads - hvis),
        hvis,
        footer_h,
        transposed,
    })
}

/// Inside of a bordered panel.
pub fn inner(r: Rect) -> Rect {
    Rect::new(
        r.x.saturating_add(1),
        r.y.saturating_add(1),
        r.width.saturating_sub(2),
        r.height.saturating_sub(2),
    )
}

/// The code panel's text area (inside the border, above the legend and the surprisal
/// box).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeGeom {
    pub inner: Rect,
    /// Rows of the legend line (0 or 1) and of the surprisal box below the text.
    pub legend_h: u16,
    pub pred_h: u16,
    /// Visible text rows and columns (after the line-number gutter).
    pub text_rows: usize,
    pub text_w: usize,
    /// Width of the line-number gutter (digits + 1).
    pub gutter: usize,
}

/// The code panel's geometry in panel rectangle `r` (`None` when too small to draw
/// text in).
pub fn code_geom(app: &App, r: Rect) -> Option<CodeGeom> {
    let inner = inner(r);
    if inner.height < 2 || inner.width < 8 {
        return None;
    }
    let legend_h = if inner.height >= 8 { 1 } else { 0 };
    let pred_h = match app.surprisal_shown() {
        Some(_) if inner.height >= 18 => 7,
        Some(_) if inner.height >= 10 => 2,
        _ => 0,
    };
    let text_h = inner.height - legend_h - pred_h;
    let gutter = app.doc.layout.lines.len().to_string().len() + 1;
    let text_w = (inner.width as usize).saturating_sub(gutter + 1).max(1);
    Some(CodeGeom {
        inner,
        legend_h,
        pred_h,
        text_rows: text_h as usize,
        text_w,
        gutter,
    })
}

/// The heatmap's geometry in panel rectangle `r` for `n` analysed tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeatGeom {
    pub inner: Rect,
    /// Columns of the row labels (the last one is the `▶` marker).
    pub gutter: usize,
    /// Rows of the column labels above the map.
    pub label_rows: usize,
    /// Rows of the legend below the map (the colour bar; 0 or 1).
    pub legend_rows: usize,
    /// Cells across and query rows down (two per text row when `half`).
    pub cols_avail: usize,
    pub px_rows: usize,
    /// Two query rows per text row (`▀`, colour only): used when one row per text row
    /// would need a coarser zoom than the one shown.
    pub half: bool,
    /// Tokens per cell that fit the whole matrix.
    pub fit: usize,
    /// Tokens per cell shown (the zoom, or `fit`).
    pub zoom: usize,
}

impl HeatGeom {
    /// Screen row of the first map row.
    pub fn map_y(&self) -> u16 {
        self.inner.y + 1 + self.label_rows as u16
    }
    /// Text rows of the map.
    pub fn map_rows(&self) -> usize {
        if self.half {
            self.px_rows / 2
        } else {
            self.px_rows
        }
    }
    /// The (query cell, key cell) under screen position (x, y) given the origin
    /// `(r0, c0)` and `cells` per side; with half blocks the upper row of the character.
    pub fn cell_at(
        &self,
        x: u16,
        y: u16,
        origin: (usize, usize),
        cells: usize,
    ) -> Option<(usize, usize)> {
        let x0 = self.inner.x + self.gutter as u16;
        let y0 = self.map_y();
        if x < x0 || y < y0 || y >= y0 + self.map_rows() as u16 {
            return None;
        }
        let c = origin.1 + (x - x0) as usize;
        let r = origin.0 + (y - y0) as usize * if self.half { 2 } else { 1 };
        (c < (origin.1 + self.cols_avail).min(cells) && r < cells).then_some((r, c))
    }
}

/// The heatmap's geometry (`None` when there is nothing to draw or no room).
pub fn heat_geom(app: &App, r: Rect, n: usize) -> Option<HeatGeom> {
    let inner = inner(r);
    if n == 0 || inner.height < 4 || inner.width < 12 {
        return None;
    }
    let gutter: usize = if inner.width >= 40 { 12 } else { 7 };
    let label_rows: usize = if inner.height >= 14 { 3 } else { 1 };
    let legend_rows: usize = usize::from(inner.height >= 8);
    let info_rows = 1usize;
    // One column kept for the "more to the right" marker.
    let cols_avail = (inner.width as usize).saturating_sub(gutter + 1).max(1);
    let rows_avail = (inner.height as usize)
        .saturating_sub(label_rows + info_rows + legend_rows)
        .max(1);
    let colored = app.theme.half_blocks();
    let fit_of = |px: usize| n.div_ceil(cols_avail).max(n.div_ceil(px)).max(1);
    let fit_one = fit_of(rows_avail);
    let fit_half = fit_of(rows_avail * 2);
    let fit = if colored { fit_half } else { fit_one };
    let zoom = if app.view.zoom == 0 {
        fit
    } else {
        app.view.zoom.min(n)
    };
    // One query row per text row (labels for every row) whenever that shows every
    // row at this zoom; half blocks only when they are needed.
    let half = colored && n.div_ceil(zoom) > rows_avail;
    let px_rows = if half { rows_avail * 2 } else { rows_avail };
    Some(HeatGeom {
        inner,
        gutter,
        label_rows,
        legend_rows,
        cols_avail,
        px_rows,
        half,
        fit,
        zoom,
    })
}

/// The editor's visible rows in panel rectangle `r`.
pub fn editor_rows(r: Rect) -> usize {
    inner(r).height as usize
}
