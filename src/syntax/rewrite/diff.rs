//! Code-token diff for user twins: a longest common subsequence over `(kind, text)`
//! after trimming the common prefix and suffix; between two matches, a stretch of the
//! same length on both sides whose kinds agree token by token is aligned too (a hand
//! rename), anything else stays unaligned.
//!
//! Cost: the LCS table covers only the changed middle and is refused beyond
//! [`MAX_CELLS`] cells (a clear error rather than gigabytes).

use super::RewriteError;
use crate::syntax::CodeToken;

/// Largest LCS table (u16 cells, 32 MB).
const MAX_CELLS: usize = 16 << 20;

fn same(x: &CodeToken, y: &CodeToken) -> bool {
    x.kind == y.kind && x.text == y.text
}

/// Aligned `(i, j)` pairs, increasing in both.
pub(super) fn align(a: &[CodeToken], b: &[CodeToken]) -> Result<Vec<(usize, usize)>, RewriteError> {
    let mut pre = 0;
    while pre < a.len() && pre < b.len() && same(&a[pre], &b[pre]) {
        pre += 1;
    }
    let mut suf = 0;
    while suf < a.len() - pre
        && suf < b.len() - pre
        && same(&a[a.len() - 1 - suf], &b[b.len() - 1 - suf])
    {
        suf += 1;
    }
    let (am, bm) = (&a[pre..a.len() - suf], &b[pre..b.len() - suf]);
    let (n, m) = (am.len(), bm.len());
    if n.saturating_mul(m) > MAX_CELLS {
        return Err(RewriteError::TooDifferent(n, m));
    }
    // lcs[i][j] = LCS of am[i..], bm[j..].
    let w = m + 1;
    let mut lcs = vec![0u16; (n + 1) * w];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i * w + j] = if same(&am[i], &bm[j]) {
                lcs[(i + 1) * w + j + 1] + 1
            } else {
                lcs[(i + 1) * w + j].max(lcs[i * w + j + 1])
            };
        }
    }
    let mut matches = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        if same(&am[i], &bm[j]) {
            matches.push((i, j));
            i += 1;
            j += 1;
        } else if lcs[(i + 1) * w + j] >= lcs[i * w + j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    let mut pairs: Vec<(usize, usize)> = (0..pre).map(|k| (k, k)).collect();
    let (mut pi, mut pj) = (0, 0);
    let gap =
        |pairs: &mut Vec<(usize, usize)>, (i0, i1): (usize, usize), (j0, j1): (usize, usize)| {
            if i1 - i0 == j1 - j0 && (0..i1 - i0).all(|k| am[i0 + k].kind == bm[j0 + k].kind) {
                pairs.extend((0..i1 - i0).map(|k| (pre + i0 + k, pre + j0 + k)));
            }
        };
    for &(mi, mj) in &matches {
        gap(&mut pairs, (pi, mi), (pj, mj));
        pairs.push((pre + mi, pre + mj));
        pi = mi + 1;
        pj = mj + 1;
    }
    gap(&mut pairs, (pi, n), (pj, m));
    pairs.extend((0..suf).map(|k| (a.len() - suf + k, b.len() - suf + k)));
    Ok(pairs)
}
