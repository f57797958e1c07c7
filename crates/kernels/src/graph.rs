//! Listing the edges of a graph stored as bicliques (the study's AST motif graph: every
//! token of a group points at every token of the group's column list). A dense motif
//! graph has O(tokens²) edges, and listing them is the syntax layer's hottest loop.

/// The edges `(i, j)`, `i` ascending then `j` in column order, of the bicliques: token
/// `i` (with `row_group[i] != u32::MAX`) points at every `j != i` of
/// `cols[col_start[g]..col_start[g + 1]]` for `g = row_group[i]`, kept when
/// `keep[2 * is_id[i] + is_id[j]]`.
pub fn biclique_edges(
    row_group: &[u32],
    col_start: &[u32],
    cols: &[u32],
    is_id: &[bool],
    keep: [bool; 4],
) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (i, &g) in row_group.iter().enumerate() {
        if g == u32::MAX {
            continue;
        }
        let g = g as usize;
        let row = 2 * usize::from(is_id[i]);
        for &j in &cols[col_start[g] as usize..col_start[g + 1] as usize] {
            let j = j as usize;
            if j != i && keep[row + usize::from(is_id[j])] {
                out.push((i, j));
            }
        }
    }
    out
}
