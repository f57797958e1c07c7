//! The separability LP, the last resort of [`decide`](super::decide): `w·x + b ≥ 1` on
//! one side, `≤ -1` on the other (feasible iff the hulls are disjoint), with `microlp`'s
//! simplex, by cutting planes (solve on a working set, check the separator on every
//! point, add the violators, repeat) in the affine span of the working points (an
//! orthonormal basis, not a projection that loses anything: directions below `1e-9` of
//! the points' spread are the only ones dropped). An infeasible working set proves
//! overlap; a separator that holds on every point proves separability; anything else is
//! no answer.

use super::{centroid, dot, separates, Points, Separation};
use crate::error::{Error, Result};

/// Working-set size per side of the first cutting-plane LP (smaller sets go in whole).
const WORKING: usize = 48;
/// Violators added per side and cutting-plane round.
const ADD: usize = 48;
/// Most points in a cutting-plane working set. `microlp`'s dense simplex takes ~1 s at
/// 270 points and 2–60 s (erratically) at 300–350 on real features; the LP is the last
/// resort after the nearest-point run, so a pair that would need more is left without
/// an answer (the caller counts it as overlapping) rather than stalling the run.
const MAX_WORKING: usize = 256;

/// Orthonormal basis (rows, `dim` wide) of the span of `rows[i] - rows[0]`, by modified
/// Gram-Schmidt (twice, for stability); directions shorter than `1e-9` of the longest
/// difference are dropped.
fn span_basis(rows: &[&[f64]], dim: usize) -> Vec<Vec<f64>> {
    let o = rows[0];
    let diffs: Vec<Vec<f64>> = rows[1..]
        .iter()
        .map(|r| r.iter().zip(o).map(|(a, b)| a - b).collect())
        .collect();
    let longest = diffs.iter().map(|v| dot(v, v).sqrt()).fold(0.0, f64::max);
    let mut basis: Vec<Vec<f64>> = Vec::new();
    for v in diffs {
        let mut v = v;
        for _ in 0..2 {
            for q in &basis {
                let c = dot(&v, q);
                v.iter_mut().zip(q).for_each(|(x, y)| *x -= c * y);
            }
        }
        let n = dot(&v, &v).sqrt();
        if n > 1e-9 * longest && n > 0.0 {
            v.iter_mut().for_each(|x| *x /= n);
            basis.push(v);
        }
        if basis.len() == dim {
            break;
        }
    }
    basis
}

/// The LP `w·x + b ≥ 1` (x in `a`), `≤ -1` (x in `b`), free `w`, `b`: a solution, or
/// `None` if infeasible. Solved in the affine span of the points (an orthonormal basis
/// from [`span_basis`]; separability within the span is separability in full space, and
/// the solution is lifted back), so a working set of `k` points costs an LP of at most
/// `k` variables whatever the width.
fn lp(p: Points, a: &[usize], b: &[usize]) -> Result<Option<(Vec<f64>, f64)>> {
    use microlp::{ComparisonOp, OptimizationDirection, Problem};
    let rows: Vec<&[f64]> = a.iter().chain(b).map(|&i| p.row(i)).collect();
    let basis = span_basis(&rows, p.dim);
    let o = rows[0];
    let coords = |r: &[f64]| -> Vec<f64> {
        let v: Vec<f64> = r.iter().zip(o).map(|(x, y)| x - y).collect();
        basis.iter().map(|q| dot(q, &v)).collect()
    };
    let solve = || -> std::result::Result<Option<(Vec<f64>, f64)>, String> {
        let mut prob = Problem::new(OptimizationDirection::Minimize);
        let u: Vec<_> = (0..basis.len())
            .map(|_| prob.add_var(0.0, (f64::NEG_INFINITY, f64::INFINITY)))
            .collect();
        let bias = prob.add_var(0.0, (f64::NEG_INFINITY, f64::INFINITY));
        for (ids, op, rhs) in [(a, ComparisonOp::Ge, 1.0), (b, ComparisonOp::Le, -1.0)] {
            for &i in ids {
                let z = coords(p.row(i));
                let mut terms: Vec<(microlp::Variable, f64)> = u
                    .iter()
                    .zip(&z)
                    .filter(|(_, &v)| v != 0.0)
                    .map(|(&var, &v)| (var, v))
                    .collect();
                terms.push((bias, 1.0));
                prob.add_constraint(terms.as_slice(), op, rhs);
            }
        }
        match prob.solve() {
            Ok(microlp::SolveOutcome::Solution(s)) => Ok(Some((
                u.iter().map(|&v| s.var_value(v)).collect(),
                s.var_value(bias),
            ))),
            Ok(microlp::SolveOutcome::Interrupted(_)) => Err("LP interrupted".into()),
            Err(microlp::Error::Infeasible) => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    };
    // microlp may panic on numerically hard problems: turn that into an error.
    let r = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(solve)) {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return Err(Error::Compute(format!("separability LP: {e}"))),
        Err(_) => return Err(Error::Compute("separability LP: solver panicked".into())),
    };
    Ok(r.map(|(u, c)| {
        // w = Σ u_k q_k; w·(x - o) + c = w·x + (c - w·o).
        let mut w = vec![0.0; p.dim];
        for (uk, q) in u.iter().zip(&basis) {
            w.iter_mut().zip(q).for_each(|(x, y)| *x += uk * y);
        }
        let bias = c - dot(&w, o);
        (w, bias)
    }))
}

/// The cutting-plane LP alone (no shortcut): `None` when its solution does not verify
/// (a working-set point on the wrong side: the simplex's tolerance was not met); an
/// error if the working set would outgrow [`MAX_WORKING`] points. Each round adds at
/// least one point not yet in the working set, so the loop ends.
pub(super) fn lp_separable(p: Points, a: &[usize], b: &[usize]) -> Result<Option<Separation>> {
    let (ca, cb) = (centroid(p, a), centroid(p, b));
    let dir: Vec<f64> = ca.iter().zip(&cb).map(|(x, y)| x - y).collect();
    // Working set: the points of each side furthest towards the other along `dir`.
    let pick = |ids: &[usize], sign: f64| -> Vec<usize> {
        if ids.len() <= WORKING {
            return ids.to_vec();
        }
        let mut s: Vec<(f64, usize)> = ids
            .iter()
            .map(|&i| (sign * dot(p.row(i), &dir), i))
            .collect();
        s.sort_by(|x, y| x.0.total_cmp(&y.0));
        s.iter().take(WORKING).map(|&(_, i)| i).collect()
    };
    let (mut wa, mut wb) = if a.len() + b.len() <= 2 * WORKING {
        (a.to_vec(), b.to_vec())
    } else {
        (pick(a, 1.0), pick(b, -1.0))
    };
    loop {
        let Some((w, bias)) = lp(p, &wa, &wb)? else {
            wa.sort_unstable();
            wb.sort_unstable();
            return Ok(Some(Separation::Overlap { a: wa, b: wb }));
        };
        // Violators, worst first.
        let viol = |ids: &[usize], have: &[usize], sign: f64| -> Vec<usize> {
            let mut v: Vec<(f64, usize)> = ids
                .iter()
                .map(|&i| (sign * (dot(p.row(i), &w) + bias), i))
                .filter(|&(m, i)| m <= 0.0 && !have.contains(&i))
                .collect();
            v.sort_by(|x, y| x.0.total_cmp(&y.0));
            v.iter().take(ADD).map(|&(_, i)| i).collect()
        };
        let (va, vb) = (viol(a, &wa, 1.0), viol(b, &wb, -1.0));
        if va.is_empty() && vb.is_empty() {
            if separates(p, a, b, &w, bias) {
                return Ok(Some(Separation::Separable { w, b: bias }));
            }
            return Ok(None);
        }
        if wa.len() + wb.len() + va.len() + vb.len() > MAX_WORKING {
            return Err(Error::Compute(format!(
                "separability LP: working set over {MAX_WORKING} points"
            )));
        }
        wa.extend(va);
        wb.extend(vb);
    }
}
