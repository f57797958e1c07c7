//! What is looked at: layer, head, threshold, input mode, the token cursor, panel focus,
//! the head grid's cursor and metric, heatmap zoom, and the scroll positions that keep
//! the cursor in view (kept up to date by `App::settle` from the layout, never while
//! drawing).

use crate::analysis::relations::THRESHOLD_STEP;
use crate::analysis::Mode;
use crate::syntax::Coarse;
use crate::tui::data::{Doc, Metric};

/// How the "nothing matches" search message starts.
pub(super) const NO_MATCH: &str = "no token matches";

/// Panels that can have the focus (and, on small terminals, be the one shown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Code,
    Heatmap,
    Heads,
    Categories,
    Probes,
}

impl Focus {
    pub const ALL: [Focus; 5] = [
        Focus::Code,
        Focus::Heatmap,
        Focus::Heads,
        Focus::Categories,
        Focus::Probes,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Focus::Code => "code",
            Focus::Heatmap => "heatmap",
            Focus::Heads => "heads",
            Focus::Categories => "categories",
            Focus::Probes => "probes",
        }
    }
    pub(super) fn step(self, d: isize) -> Focus {
        let i = Focus::ALL.iter().position(|&f| f == self).unwrap_or(0) as isize;
        let n = Focus::ALL.len() as isize;
        Focus::ALL[((i + d).rem_euclid(n)) as usize]
    }
}

/// Attention from the selected token (its row) or to it (its column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    From,
    To,
}

/// The view's state.
#[derive(Debug, Clone)]
pub struct View {
    pub layer: usize,
    pub head: usize,
    /// Mean over heads instead of one head.
    pub mean: bool,
    /// Threshold in steps of [`THRESHOLD_STEP`].
    pub t_steps: u8,
    pub mode: Mode,
    /// Token cursor: index into the doc's syntax tokens.
    pub cursor: usize,
    pub direction: Direction,
    /// Gold edges on the heatmap.
    pub gold: bool,
    /// The Categories panel shows the study's finding (`F`): per layer the F1 of
    /// syn–syn, id–id and syn–id relations with the category shares.
    pub finding: bool,
    /// The cursor identifier's data-flow links in the code.
    pub dfg: bool,
    pub focus: Focus,
    /// Side panel of the compact layout (never `Code`).
    pub side: Focus,
    pub metric: Metric,
    /// Head grid cursor (layer, head).
    pub grid: (usize, usize),
    /// Heatmap zoom: 0 = fit, else code tokens per cell.
    pub zoom: usize,
    /// The last search pattern (`n`/`N` repeat it).
    pub search: Option<String>,
    /// The surprisal view (`S`; causal models): the code coloured by per-token
    /// surprisal and the cursor token's expected next tokens.
    pub surprisal: bool,
    /// Code panel scroll (first line, first column) and visible text rows.
    pub code_scroll: (usize, usize),
    pub code_rows: usize,
    /// Heatmap: tokens per cell that fit the panel, and the first visible (row, column)
    /// cell.
    pub heat_fit: usize,
    pub heat_origin: (usize, usize),
    /// Head grid: the first visible (layer, head).
    pub grid_origin: (usize, usize),
}

impl Default for View {
    fn default() -> Self {
        View {
            layer: 0,
            head: 0,
            mean: false,
            t_steps: 1,
            mode: Mode::Source,
            cursor: 0,
            direction: Direction::From,
            gold: false,
            finding: false,
            dfg: false,
            focus: Focus::Code,
            side: Focus::Heatmap,
            metric: Metric::F1Motif,
            grid: (0, 0),
            zoom: 0,
            search: None,
            surprisal: false,
            code_scroll: (0, 0),
            code_rows: 20,
            heat_fit: 1,
            heat_origin: (0, 0),
            grid_origin: (0, 0),
        }
    }
}

impl View {
    /// The data-flow graph the code's link marks follow: the refined one while the head
    /// grid shows its F1, else the study's.
    pub fn dfg_graph(&self) -> crate::syntax::Graph {
        if self.metric == Metric::F1DfgRefined {
            crate::syntax::Graph::DfgRefined
        } else {
            crate::syntax::Graph::Dfg
        }
    }

    /// The current threshold.
    pub fn threshold(&self) -> f32 {
        self.t_steps as f32 * THRESHOLD_STEP
    }

    /// The heatmap's tokens-per-cell now (fit resolved with the current layout).
    pub fn effective_zoom(&self) -> usize {
        if self.zoom == 0 {
            self.heat_fit.max(1)
        } else {
            self.zoom
        }
    }

    pub(super) fn set_focus(&mut self, f: Focus) {
        self.focus = f;
        if f != Focus::Code {
            self.side = f;
        }
        if f == Focus::Heads {
            self.grid = (self.layer, self.head);
        }
    }

    /// Keep layer, head and the grid cursor inside `(layers, heads)`.
    pub(super) fn clamp(&mut self, (l, h): (usize, usize)) {
        self.layer = self.layer.min(l.saturating_sub(1));
        self.head = self.head.min(h.saturating_sub(1));
        self.grid = (
            self.grid.0.min(l.saturating_sub(1)),
            self.grid.1.min(h.saturating_sub(1)),
        );
    }

    pub(super) fn move_cursor(&mut self, doc: &Doc, d: isize) {
        let n = doc.n_tokens();
        if n == 0 {
            return;
        }
        self.cursor = (self.cursor as isize + d).clamp(0, n as isize - 1) as usize;
    }

    /// Move to the token nearest the cursor's column on the line `d` lines away that
    /// has tokens.
    pub(super) fn move_lines(&mut self, doc: &Doc, d: isize) {
        let lay = &doc.layout;
        let n = doc.n_tokens();
        if n == 0 {
            return;
        }
        let cur = self.cursor.min(n - 1);
        let line = lay.tok_line[cur] as isize;
        let col = lay.tok_col[cur];
        let last_line = lay.tok_line[n - 1] as isize;
        let mut target = (line + d).clamp(0, last_line);
        // Skip lines without tokens in the direction of travel.
        loop {
            let first = lay.first_token_from_line(target as usize);
            if first < n && lay.tok_line[first] == target as usize {
                break;
            }
            let next = target + d.signum();
            if next < 0 || next > last_line || d == 0 {
                target = line;
                break;
            }
            target = next;
        }
        let first = lay.first_token_from_line(target as usize);
        let mut best = first;
        let mut i = first;
        while i < n && lay.tok_line[i] == target as usize {
            if lay.tok_col[i] <= col {
                best = i;
            }
            i += 1;
        }
        self.cursor = best;
    }

    pub(super) fn move_ident(&mut self, doc: &Doc, d: isize) {
        let Some(syn) = &doc.syntax else { return };
        let n = syn.tokens.len() as isize;
        let mut i = self.cursor as isize + d;
        while (0..n).contains(&i) {
            if syn.tokens[i as usize].coarse == Coarse::Identifier {
                self.cursor = i as usize;
                return;
            }
            i += d;
        }
    }

    /// Move to the next (`d = 1`) or previous match of the search pattern; `Err` with a
    /// message when nothing matches.
    pub(super) fn search_next(&mut self, doc: &Doc, d: isize) -> Result<(), String> {
        let (Some(pat), Some(syn)) = (&self.search, &doc.syntax) else {
            return Ok(());
        };
        let pat = pat.to_lowercase();
        let n = syn.tokens.len();
        for s in 1..=n {
            let i = (self.cursor as isize + d * s as isize).rem_euclid(n as isize) as usize;
            if syn.tokens[i].text.to_lowercase().contains(&pat) {
                self.cursor = i;
                return Ok(());
            }
        }
        Err(format!("{NO_MATCH} '{pat}'"))
    }

    /// Keep the cursor token visible in a code area of `rows` x `text_w` (a margin of 2
    /// lines when possible).
    pub(super) fn follow_code(&mut self, doc: &Doc, rows: usize, text_w: usize) {
        self.code_rows = rows;
        let lay = &doc.layout;
        let cursor_tok = doc.syntax.as_ref().and_then(|s| s.tokens.get(self.cursor));
        let (mut top, mut left) = self.code_scroll;
        let (cl, cc, cw) = match cursor_tok {
            Some(ct) => (
                lay.tok_line[self.cursor],
                lay.tok_col[self.cursor],
                crate::tui::widgets::one_line(&ct.text)
                    .chars()
                    .count()
                    .min(text_w),
            ),
            None => (0, 0, 0),
        };
        let h = rows;
        let margin = if h > 6 { 2 } else { 0 };
        if cl < top + margin {
            top = cl.saturating_sub(margin);
        } else if cl + margin >= top + h {
            top = cl + margin + 1 - h;
        }
        top = top.min(lay.lines.len().saturating_sub(h.min(lay.lines.len())));
        // The first and last visible columns carry the ‹ › clip markers.
        if cc < left || (left > 0 && cc == left) {
            left = cc.saturating_sub(4);
        } else if cc + cw >= left + text_w {
            left = cc + cw - text_w + 4;
        }
        if cc + cw <= text_w {
            left = 0;
        }
        self.code_scroll = (top, left);
    }

    /// Keep the selected analysed position `sel` in view on a heatmap of `n` tokens with
    /// `cols` x `rows` cells available.
    pub(super) fn follow_heat(&mut self, n: usize, sel: Option<usize>, cols: usize, rows: usize) {
        let z = if self.zoom == 0 {
            self.heat_fit
        } else {
            self.zoom.min(n)
        }
        .max(1);
        let cells = n.div_ceil(z);
        let (r0, c0) = self.heat_origin;
        let sc = sel.map(|s| s / z);
        self.heat_origin = (
            follow_axis(r0, sc, cells, rows.min(cells)),
            follow_axis(c0, sc, cells, cols.min(cells)),
        );
    }

    /// Keep the followed head-grid cell (the grid cursor when the grid has the focus,
    /// else the current layer and head) inside `lvis` x `hvis` visible cells.
    pub(super) fn follow_grid(&mut self, dims: (usize, usize), lvis: usize, hvis: usize) {
        let (l, h) = if self.focus == Focus::Heads {
            self.grid
        } else {
            (self.layer, self.head)
        };
        let (l0, h0) = self.grid_origin;
        self.grid_origin = (
            follow_axis(l0, Some(l), dims.0, lvis.min(dims.0)),
            follow_axis(h0, Some(h), dims.1, hvis.min(dims.1)),
        );
    }
}

/// The first visible index of a scrolled axis of `len` items showing `vis`, moved as
/// little as possible so that `sel` is visible with a margin of a quarter of the view
/// (at most 3) from either edge where the axis allows it: the selection never sits on
/// the edge while more lies beyond it.
pub fn follow_axis(first: usize, sel: Option<usize>, len: usize, vis: usize) -> usize {
    if vis == 0 || len <= vis {
        return 0;
    }
    let max_first = len - vis;
    let mut f = first.min(max_first);
    if let Some(s) = sel {
        let s = s.min(len - 1);
        let m = (vis / 4).min(3);
        if s < f + m {
            f = s.saturating_sub(m);
        } else if s + m >= f + vis {
            f = s + m + 1 - vis;
        }
    }
    f.min(max_first)
}
