//! The study's graph edit distance (networkx 3.0's first candidate, with scipy's
//! `linear_sum_assignment`): the algorithm, optimised in every build profile. What it
//! computes and why: codescope's `analysis::ged` (docs/METHODS.md section 3), which
//! re-exports it and holds its tests.

/// A directed graph as networkx holds the study's: named nodes `0..names.len()` and the
/// edges in their row-major order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digraph<'a> {
    pub names: &'a [String],
    /// `(from, to)`, ascending (row-major), each once; self loops included.
    pub edges: Vec<(u32, u32)>,
}

impl<'a> Digraph<'a> {
    /// The graph of a dense `n x n` mask (`mask[i * n + j]`: an edge `i -> j`), as
    /// `nx.from_numpy_array(mask, create_using=nx.DiGraph)` builds it.
    pub fn from_mask(names: &'a [String], mask: impl IntoIterator<Item = bool>) -> Self {
        let n = names.len();
        let edges = mask
            .into_iter()
            .take(n * n)
            .enumerate()
            .filter(|&(_, b)| b)
            .map(|(k, _)| ((k / n) as u32, (k % n) as u32))
            .collect();
        Digraph { names, edges }
    }
}

/// The study's `make_nodes_unique` (its `utils.py`): the `k`-th later repeat of a token
/// gets `_k` appended, scanning left to right over the names as they are being renamed
/// (so a collision with an existing `x_1` can survive, as it does there).
pub fn make_nodes_unique(tokens: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = tokens.iter().map(|t| (*t).to_owned()).collect();
    for i in 0..out.len() {
        let token = out[i].clone();
        let mut occ = 0usize;
        for later in out.iter_mut().skip(i + 1) {
            if *later == token {
                occ += 1;
                later.push('_');
                later.push_str(&occ.to_string());
            }
        }
    }
    out
}

/// scipy's `linear_sum_assignment(cost)` for a row-major `nr x nc` matrix of finite
/// costs: `(row_ind, col_ind)`, with scipy's tie-breaking (its shortest augmenting path,
/// columns scanned from the last, a free column preferred among equal costs; a tall
/// matrix solved transposed and its pairs sorted by column). `None` for NaN or
/// infinite entries, or when there is no complete assignment.
pub fn linear_sum_assignment(
    cost: &[f64],
    nr: usize,
    nc: usize,
) -> Option<(Vec<usize>, Vec<usize>)> {
    assert_eq!(cost.len(), nr * nc, "the cost matrix is nr x nc");
    if cost.iter().any(|c| !c.is_finite()) {
        return None;
    }
    if nr == 0 || nc == 0 {
        return Some((Vec::new(), Vec::new()));
    }
    if nc < nr {
        let mut t = vec![0.0; nr * nc];
        for i in 0..nr {
            for j in 0..nc {
                t[j * nr + i] = cost[i * nc + j];
            }
        }
        let col4row = solve(&t, nc, nr)?;
        // Pairs of the transposed problem (row j of the original's columns), sorted by
        // the original's row.
        let mut pairs: Vec<(usize, usize)> = col4row
            .into_iter()
            .enumerate()
            .map(|(j, i)| (i, j))
            .collect();
        pairs.sort_unstable();
        return Some(pairs.into_iter().unzip());
    }
    let col4row = solve(cost, nr, nc)?;
    Some(((0..nr).collect(), col4row))
}

/// The shortest augmenting path solve of a wide (`nr <= nc`) matrix: the column of each
/// row.
fn solve(input: &[f64], nr: usize, nc: usize) -> Option<Vec<usize>> {
    const NONE: usize = usize::MAX;
    let minval = input.iter().copied().fold(f64::INFINITY, f64::min);
    let cost: Vec<f64> = input.iter().map(|c| c - minval).collect();
    let mut u = vec![0.0f64; nr];
    let mut v = vec![0.0f64; nc];
    let mut shortest = vec![f64::INFINITY; nc];
    let mut path = vec![NONE; nc];
    let mut col4row = vec![NONE; nr];
    let mut row4col = vec![NONE; nc];
    let mut sr = vec![false; nr];
    let mut sc = vec![false; nc];
    let mut remaining: Vec<usize> = Vec::with_capacity(nc);
    for cur in 0..nr {
        // One augmenting path from row `cur` (Dijkstra over reduced costs).
        remaining.clear();
        remaining.extend((0..nc).rev());
        sr.iter_mut().for_each(|x| *x = false);
        sc.iter_mut().for_each(|x| *x = false);
        shortest.iter_mut().for_each(|x| *x = f64::INFINITY);
        let mut min_val = 0.0f64;
        let mut i = cur;
        let sink = loop {
            let mut index = NONE;
            let mut lowest = f64::INFINITY;
            sr[i] = true;
            for (it, &j) in remaining.iter().enumerate() {
                let r = min_val + cost[i * nc + j] - u[i] - v[j];
                if r < shortest[j] {
                    path[j] = i;
                    shortest[j] = r;
                }
                if shortest[j] < lowest || (shortest[j] == lowest && row4col[j] == NONE) {
                    lowest = shortest[j];
                    index = it;
                }
            }
            min_val = lowest;
            if index == NONE || min_val == f64::INFINITY {
                return None;
            }
            let j = remaining[index];
            sc[j] = true;
            remaining.swap_remove(index);
            if row4col[j] == NONE {
                break j;
            }
            i = row4col[j];
        };
        // Dual update.
        u[cur] += min_val;
        for r in 0..nr {
            if sr[r] && r != cur {
                u[r] += min_val - shortest[col4row[r]];
            }
        }
        for (j, vj) in v.iter_mut().enumerate() {
            if sc[j] {
                *vj -= min_val - shortest[j];
            }
        }
        // Augment along the path back to `cur`.
        let mut j = sink;
        loop {
            let r = path[j];
            row4col[j] = r;
            std::mem::swap(&mut col4row[r], &mut j);
            if r == cur {
                break;
            }
        }
    }
    Some(col4row)
}

/// networkx's `make_CostMatrix` fix-up of an assignment of an `(m + n)²` matrix: the
/// dummy-to-dummy pairs, in order, become `m + j -> n + i` for the substitutions
/// `i -> j`, in order.
fn fix_dummies(rows: &mut [usize], cols: &mut [usize], m: usize, n: usize) {
    let subst: Vec<usize> = (0..rows.len())
        .filter(|&k| rows[k] < m && cols[k] < n)
        .collect();
    let dummy: Vec<usize> = (0..rows.len())
        .filter(|&k| rows[k] >= m && cols[k] >= n)
        .collect();
    let (r0, c0) = (rows.to_vec(), cols.to_vec());
    for (&s, &d) in subst.iter().zip(&dummy) {
        rows[d] = c0[s] + m;
        cols[d] = r0[s] + n;
    }
}

/// One node step of the first edit path: `G1`'s node (or none, an insertion) mapped to
/// `G2`'s (or none, a deletion), and the step's node cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeStep {
    pub u: Option<u32>,
    pub v: Option<u32>,
    pub cost: u32,
}

/// The node steps of networkx's first edit path between nodes named `names1` and
/// `names2` (steps 1 and 2 of the module's description): they depend on the names only,
/// so one computation serves every head and graph of a snippet.
pub fn node_steps(names1: &[String], names2: &[String]) -> Vec<NodeStep> {
    let (m, n) = (names1.len(), names2.len());
    let dim = m + n;
    let mut c = vec![0.0f64; dim * dim];
    let mut subst_sum = 0.0;
    for (i, a) in names1.iter().enumerate() {
        for (j, b) in names2.iter().enumerate() {
            let x = if a == b { 0.0 } else { 1.0 };
            c[i * dim + j] = x;
            subst_sum += x;
        }
    }
    let inf = subst_sum + m as f64 + n as f64 + 1.0;
    for i in 0..m {
        for k in 0..m {
            c[i * dim + n + k] = if i == k { 1.0 } else { inf };
        }
    }
    for j in 0..n {
        for k in 0..n {
            c[(m + j) * dim + k] = if j == k { 1.0 } else { inf };
        }
    }
    let (mut rows, mut cols) =
        linear_sum_assignment(&c, dim, dim).expect("a node cost matrix always has an assignment");
    fix_dummies(&mut rows, &mut cols, m, n);
    let mut alive = vec![true; dim];
    let mut steps = Vec::with_capacity(dim);
    // The smallest live pair that is not dummy-to-dummy (the reduced indices keep the
    // original order, so comparing original indices is the same).
    while let Some(k) = (0..dim)
        .filter(|&k| alive[k] && (rows[k] < m || cols[k] < n))
        .min_by_key(|&k| (rows[k], cols[k]))
    {
        let (r, col) = (rows[k], cols[k]);
        // Remove it and its dummy partner (row m + col, for a substitution or insertion
        // of G2's node col).
        for q in 0..dim {
            if alive[q] && (rows[q] == r || (col < n && rows[q] == m + col)) {
                alive[q] = false;
            }
        }
        steps.push(NodeStep {
            u: (r < m).then_some(r as u32),
            v: (col < n).then_some(col as u32),
            cost: c[r * dim + col] as u32,
        });
    }
    steps
}

/// The first value networkx's `optimize_graph_edit_distance(g1, g2, ...)` yields with
/// the study's costs (an integer: the number of node and edge edits), given the node
/// steps of [`node_steps`] for the two graphs' names.
pub fn first_distance_with(steps: &[NodeStep], g1: &Digraph, g2: &Digraph) -> u64 {
    let (m, n) = (g1.names.len(), g2.names.len());
    let inf = (g1.edges.len() + g2.edges.len() + 1) as f64;
    // Which nodes the steps so far mapped (or deleted / inserted), and to what.
    let mut done1: Vec<Option<Option<u32>>> = vec![None; m];
    let mut done2 = vec![false; n];
    let mut any_done = false;
    let mut pending_g: Vec<(u32, u32)> = g1.edges.clone();
    let mut pending_h: Vec<(u32, u32)> = g2.edges.clone();
    let mut total = 0u64;
    let mut local = Vec::new();
    for s in steps {
        total += u64::from(s.cost);
        if any_done {
            let settles = |e: (u32, u32), x: Option<u32>, done: &dyn Fn(u32) -> bool| {
                let (a, b) = e;
                let is_x = |y: u32| x == Some(y);
                (is_x(a) && is_x(b))
                    || (is_x(b) && done(a))
                    || (is_x(a) && done(b))
                    || (a == b && done(a))
            };
            let d1 = |p: u32| done1[p as usize].is_some();
            let d2 = |q: u32| done2[q as usize];
            let gi: Vec<usize> = (0..pending_g.len())
                .filter(|&k| settles(pending_g[k], s.u, &d1))
                .collect();
            let hi: Vec<usize> = (0..pending_h.len())
                .filter(|&k| settles(pending_h[k], s.v, &d2))
                .collect();
            let (a, b) = (gi.len(), hi.len());
            if a + b > 0 {
                let dim = a + b;
                local.clear();
                local.resize(dim * dim, 0.0f64);
                for k in 0..a {
                    for l in 0..a {
                        local[k * dim + b + l] = if k == l { 1.0 } else { inf };
                    }
                }
                for k in 0..b {
                    for l in 0..b {
                        local[(a + k) * dim + l] = if k == l { 1.0 } else { inf };
                    }
                }
                // The partner of G1's mapped node p in G2 (None: deleted, or not mapped).
                let partner = |p: u32| done1[p as usize].flatten();
                for (k, &x) in gi.iter().enumerate() {
                    let g = pending_g[x];
                    for (l, &y) in hi.iter().enumerate() {
                        let h = pending_h[y];
                        let same_ends = match (s.u, s.v) {
                            (Some(u), Some(v)) => {
                                (g.1 == u && h.1 == v && partner(g.0) == Some(h.0))
                                    || (g.0 == u
                                        && h.0 == v
                                        && g.1 != u
                                        && partner(g.1) == Some(h.1))
                            }
                            _ => false,
                        };
                        if !(same_ends || g.0 == g.1 || h.0 == h.1) {
                            local[k * dim + l] = inf;
                        }
                    }
                }
                let (rows, cols) = linear_sum_assignment(&local, dim, dim)
                    .expect("a local edge cost matrix always has an assignment");
                let cost: f64 = rows
                    .iter()
                    .zip(&cols)
                    .map(|(&r, &c)| local[r * dim + c])
                    .sum();
                total += cost as u64;
                // Every edge of the step is settled (substituted, deleted or inserted).
                remove_indices(&mut pending_g, &gi);
                remove_indices(&mut pending_h, &hi);
            }
        }
        if let Some(u) = s.u {
            done1[u as usize] = Some(s.v);
        }
        if let Some(v) = s.v {
            done2[v as usize] = true;
        }
        any_done = true;
    }
    total
}

/// Remove the entries at the ascending indices `idx`, keeping the others' order.
fn remove_indices<T>(v: &mut Vec<T>, idx: &[usize]) {
    let mut k = 0;
    let mut pos = 0;
    v.retain(|_| {
        let drop = idx.get(k) == Some(&pos);
        if drop {
            k += 1;
        }
        pos += 1;
        !drop
    });
}

/// The first value networkx's `optimize_graph_edit_distance(g1, g2, ...)` yields with the
/// study's costs (node and edge edits).
pub fn first_distance(g1: &Digraph, g2: &Digraph) -> u64 {
    first_distance_with(&node_steps(g1.names, g2.names), g1, g2)
}
