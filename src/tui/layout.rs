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
    // A pinned head shares the heatmap panel when both halves stay usable.
    if app.present.pin.is_some() {
        if let Some(k) = g.panels.iter().position(|(f, _)| *f == Focus::Heatmap) {
            let r = g.panels[k].1;
            if r.width >= 48 {
                let [a, b] = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
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
        let grid_w = (5 + 3 * layers as u16 + 2).max(32);
        let [grid_a, cat_a, probe_a] = Layout::horizontal([
            Constraint::Length(grid_w),
            Constraint::Length(54),
            Constraint::Min(18),
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
    /// Columns of the row labels.
    pub gutter: usize,
    /// Rows of the column labels above the map.
    pub label_rows: usize,
    /// Cells across and (half-block) pixel rows down.
    pub cols_avail: usize,
    pub px_rows: usize,
    /// Tokens per cell that fit the whole matrix.
    pub fit: usize,
}

/// The heatmap's geometry (`None` when there is nothing to draw or no room).
pub fn heat_geom(app: &App, r: Rect, n: usize) -> Option<HeatGeom> {
    let inner = inner(r);
    if n == 0 || inner.height < 4 || inner.width < 12 {
        return None;
    }
    let half = app.theme.colored();
    let gutter: usize = if inner.width >= 40 { 12 } else { 7 };
    let label_rows: usize = if inner.height >= 14 { 3 } else { 1 };
    let info_rows = 1usize;
    let cols_avail = (inner.width as usize).saturating_sub(gutter).max(1);
    let rows_avail = (inner.height as usize)
        .saturating_sub(label_rows + info_rows)
        .max(1);
    let px_rows = if half { rows_avail * 2 } else { rows_avail };
    let fit = n.div_ceil(cols_avail).max(n.div_ceil(px_rows)).max(1);
    Some(HeatGeom {
        inner,
        gutter,
        label_rows,
        cols_avail,
        px_rows,
        fit,
    })
}

/// The editor's visible rows in panel rectangle `r`.
pub fn editor_rows(r: Rect) -> usize {
    inner(r).height as usize
}
