//! The ablation figure: the head ablation's effect per head, on identifiers above and on
//! syntactic tokens below (each head zeroed in turn; Δ bits, or 1 − cos for an
//! encoder), on a diverging scale with the value in each cell, the current head framed
//! and, in both grids, the head of each layer that best matches the AST motif (F1)
//! underlined: the head that matches the AST beside the head that matters.

use super::heads::{best_per_layer, draw_grid, Grid};
use super::palette::Palette;
use super::svg::{Font, Svg};
use super::{header, title_of, Figure, Metrics};
use crate::export::{AblationData, FigureData};

pub fn draw(view: &FigureData, a: &AblationData, m: Metrics, pal: Palette) -> Figure {
    let mut svg = Svg::new(m.width(), m.width() * 0.5);
    let (unit, caption) = if a.measure == "one_minus_cos" {
        ("1 − cos of the last hidden state", "1 − cos (√)")
    } else if a.measure == "pll_bits" {
        (
            "masked-LM pseudo-log-likelihood change in bits",
            "Δ PLL bits (√)",
        )
    } else {
        ("surprisal change in bits", "Δ bits (√)")
    };
    let mut sub = vec![format!(
        "head ablation: each head zeroed in turn, mean {unit} · {} input · {}",
        view.mode,
        match view.head {
            Some(h) => format!("current: layer {} head {h} (framed)", view.layer),
            None => format!("current: mean of layer {} (framed)", view.layer),
        }
    )];
    sub.push(
        "orange: the tokens get harder to predict without the head · underlined: the head of each layer that best matches the AST motif (F1)".into(),
    );
    if a.heads_done < a.heads_total {
        sub.push(format!(
            "{} of {} heads done (the rest ·)",
            a.heads_done, a.heads_total
        ));
    }
    let mut y = header(&mut svg, m, pal, &title_of(view), &sub);
    let best = best_per_layer(&a.f1_ast_motif);
    for (name, values) in [
        ("on identifiers", &a.identifier),
        ("on syntactic tokens", &a.syntactic),
    ] {
        y += m.line(m.body());
        svg.text(
            m.margin(),
            y,
            Font::new(m.body(), pal.fg()).bold(),
            &format!("ablation effect {name}"),
        );
        let g = Grid {
            metric: "ablation",
            values,
            signed: true,
            best: &best,
            caption: Some(caption),
        };
        // The colour bar's caption sits above the grid: a line below the grid's name.
        y = draw_grid(&mut svg, m, pal, view, &g, y + m.line(m.small()));
    }
    svg.grow_to(m.width(), y);
    let (width, height) = (svg.width, svg.height);
    Figure {
        svg: svg.finish(pal.bg(), &format!("{} · ablation", title_of(view))),
        width,
        height,
    }
}
