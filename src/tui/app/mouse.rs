//! The mouse: a shortcut beside the keyboard (which stays complete on its own).
//!
//! - Click a token in the code panel: it becomes the token cursor.
//! - Click a heatmap cell: its query (row) token becomes the cursor, and the status line
//!   gives the attention from that query to the key (column) token.
//! - Click a head-grid cell: that layer and head are opened (a number in the header
//!   opens that layer, or head when the grid is transposed).
//! - Click a probe row: that layer's output is shown.
//! - Click a panel elsewhere: it gets the focus. A click closes the help.
//! - Wheel: scrolls the code (three lines), the heatmap (its query rows), the head grid
//!   (its rows: heads, or layers when transposed) and the probe panel (layers).
//!
//! Where things are comes from the pure layout (`tui::layout`), the same functions that
//! drawing uses, so a click lands on what is shown.

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};

use super::{App, Focus, Overlay};
use crate::tui::data::advance;
use crate::tui::layout;
use crate::tui::msg::Effect;
use crate::tui::widgets::one_line;

impl App {
    /// Apply a mouse event.
    pub(super) fn mouse(&mut self, m: MouseEvent) -> Vec<Effect> {
        if self.editor.is_some() {
            return Vec::new();
        }
        match self.overlay {
            Overlay::None => {}
            Overlay::Help => {
                if matches!(m.kind, MouseEventKind::Down(_)) {
                    self.overlay = Overlay::None;
                }
                return Vec::new();
            }
            _ => return Vec::new(),
        }
        let g = layout::geometry(self);
        if g.too_small {
            return Vec::new();
        }
        let (x, y) = (m.column, m.row);
        let inside = |r: ratatui::layout::Rect| {
            x >= r.x && x < r.x + r.width && y >= r.y && y < r.y + r.height
        };
        let panel = Focus::ALL
            .into_iter()
            .find(|&f| g.panel(f).is_some_and(inside));
        let Some(panel) = panel else {
            return Vec::new();
        };
        let rect = g.panel(panel).expect("found above");
        match m.kind {
            MouseEventKind::Down(MouseButton::Left) => {
                self.view.set_focus(panel);
                match panel {
                    Focus::Code => self.click_code(rect, x, y),
                    Focus::Heatmap => self.click_heat(rect, x, y),
                    Focus::Heads => self.click_grid(rect, x, y),
                    Focus::Probes => self.click_probes(rect, y),
                    Focus::Categories => {}
                }
            }
            MouseEventKind::ScrollDown | MouseEventKind::ScrollUp => {
                let d: isize = if m.kind == MouseEventKind::ScrollDown {
                    1
                } else {
                    -1
                };
                self.wheel(panel, d);
            }
            _ => {}
        }
        Vec::new()
    }

    fn wheel(&mut self, panel: Focus, d: isize) {
        let (layers, heads) = self.dims();
        // A transposed grid (layers as rows) scrolls along layers.
        let transposed = layout::geometry(self)
            .panel(Focus::Heads)
            .and_then(|r| layout::grid_geom(self, r))
            .is_some_and(|g| g.transposed);
        let v = &mut self.view;
        let step =
            |x: usize, n: usize| (x as isize + d).clamp(0, n.saturating_sub(1) as isize) as usize;
        match panel {
            Focus::Code => v.move_lines(&self.doc, 3 * d),
            Focus::Heatmap => v.move_cursor(&self.doc, 3 * d),
            Focus::Heads if transposed && v.focus == Focus::Heads => {
                v.grid.0 = step(v.grid.0, layers)
            }
            Focus::Heads if transposed => v.layer = step(v.layer, layers),
            Focus::Heads if v.focus == Focus::Heads => v.grid.1 = step(v.grid.1, heads),
            Focus::Heads => {
                v.mean = false;
                v.head = step(v.head, heads);
            }
            Focus::Probes | Focus::Categories => v.layer = step(v.layer, layers),
        }
    }

    /// The token under (x, y) in the code panel: the one covering the column, else the
    /// nearest on that line.
    fn click_code(&mut self, r: ratatui::layout::Rect, x: u16, y: u16) {
        let Some(cg) = layout::code_geom(self, r) else {
            return;
        };
        let Some(syn) = self.doc.syntax.clone() else {
            return;
        };
        let row = y.saturating_sub(cg.inner.y) as usize;
        let body_x = cg.inner.x as usize + cg.gutter + 1;
        if y < cg.inner.y || row >= cg.text_rows || (x as usize) < body_x {
            return;
        }
        let (top, left) = self.view.code_scroll;
        let line = top + row;
        let col = left + x as usize - body_x;
        let lay = &self.doc.layout;
        let first = lay.first_token_from_line(line);
        let mut best: Option<(usize, usize)> = None;
        for i in first..syn.tokens.len() {
            if lay.tok_line[i] != line {
                break;
            }
            let start = lay.tok_col[i];
            let text = one_line(syn.tokens[i].text.lines().next().unwrap_or(""));
            let end = advance(&text, start).max(start + 1);
            let dist = if col < start {
                start - col
            } else if col >= end {
                col + 1 - end
            } else {
                0
            };
            if best.is_none_or(|(_, d)| dist < d) {
                best = Some((i, dist));
            }
        }
        if let Some((i, _)) = best {
            self.view.cursor = i;
            let t = &syn.tokens[i];
            self.status.info(format!(
                "selected «{}» ({}, line {})",
                crate::tui::widgets::clip(&one_line(&t.text), 24),
                t.role.as_deref().unwrap_or(t.category.name()),
                line + 1
            ));
        }
    }

    fn click_heat(&mut self, r: ratatui::layout::Rect, x: u16, y: u16) {
        if self.partial().is_some() {
            self.status
                .info("the heat map is still filling in, layer by layer");
            return;
        }
        let Some(p) = self.prepared().cloned() else {
            return;
        };
        let n = p.n();
        let Some(hg) = layout::heat_geom(self, r, n) else {
            return;
        };
        let z = hg.zoom;
        let cells = n.div_ceil(z);
        let vis_c = cells.min(hg.cols_avail);
        let vis_r = cells.min(hg.px_rows);
        let (r0, c0) = self.view.heat_origin;
        let origin = (r0.min(cells - vis_r), c0.min(cells - vis_c));
        let Some((rc, cc)) = hg.cell_at(x, y, origin, cells) else {
            return;
        };
        let (q, k) = (rc * z, cc * z);
        let ta = &p.token_attention;
        let (Some(&qt), Some(&kt)) = (ta.tokens.get(q), ta.tokens.get(k)) else {
            return;
        };
        self.view.cursor = qt;
        let w = self.with_matrix(|a, n| {
            // The cell's value: the largest weight of its block, as drawn.
            let mut m = 0.0f32;
            for i in q..(q + z).min(n) {
                for j in k..(k + z).min(n) {
                    m = m.max(a[i * n + j]);
                }
            }
            m
        });
        let name = |i: usize| crate::tui::widgets::clip(&one_line(&p.tokens[i].text), 16);
        let what = if z > 1 {
            format!(" (largest of {z}x{z} tokens)")
        } else {
            String::new()
        };
        if let Some(w) = w {
            self.status.info(format!(
                "attention «{}» → «{}»: {w:.3}{what}",
                name(qt),
                name(kt)
            ));
        }
    }

    fn click_grid(&mut self, r: ratatui::layout::Rect, x: u16, y: u16) {
        let Some(gg) = layout::grid_geom(self, r) else {
            return;
        };
        if y == gg.header_y() {
            // A layer number (a head number when transposed): open that layer (head).
            if let Some(c) = gg.col_at(x) {
                let v = &mut self.view;
                if gg.transposed {
                    (v.head, v.grid.1, v.mean) = (c, c, false);
                    self.status.info(format!("head {}", c + 1));
                } else {
                    (v.layer, v.grid.0) = (c, c);
                    self.status.info(format!("layer {}", c + 1));
                }
            }
            return;
        }
        if let Some((l, h)) = gg.cell_at(x, y) {
            let v = &mut self.view;
            (v.layer, v.head) = (l, h);
            v.grid = (l, h);
            v.mean = false;
            self.status
                .info(format!("opened layer {}, head {}", l + 1, h + 1));
        }
    }

    fn click_probes(&mut self, r: ratatui::layout::Rect, y: u16) {
        let Some(rows) = crate::tui::widgets::probe_rows(self, r) else {
            return;
        };
        if let Some(&(_, layer)) = rows.iter().find(|(ry, _)| *ry == y) {
            // Row `layer` is that layer's output; 0 (embeddings) shows layer 1.
            let (layers, _) = self.dims();
            self.view.layer = layer.saturating_sub(1).min(layers.saturating_sub(1));
        }
    }
}
