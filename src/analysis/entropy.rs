//! Attention entropy: how spread a query's attention is, in bits. The one definition used
//! by the explorer's head grid (code-token attention) and the `trace` summary (subword
//! attention).

/// Shannon entropy (bits) of `row` normalised to sum 1; `None` for a row with no mass.
/// Rows of code-token attention need not sum to 1 (special positions were dropped,
/// METHODS.md 1), hence the normalisation.
pub fn row_entropy(row: &[f32]) -> Option<f64> {
    let s: f64 = row.iter().map(|&x| x as f64).sum();
    if s <= 0.0 {
        return None;
    }
    let mut h = 0.0f64;
    for &x in row {
        if x > 0.0 {
            let p = x as f64 / s;
            h -= p * p.log2();
        }
    }
    Some(h)
}

/// Mean over rows of [`row_entropy`] for an `n x n` row-major matrix (rows without mass
/// are skipped; 0 when none has any).
pub fn mean_entropy(a: &[f32], n: usize) -> f64 {
    let (total, rows) = a
        .chunks_exact(n.max(1))
        .take(n)
        .filter_map(row_entropy)
        .fold((0.0f64, 0usize), |(t, r), h| (t + h, r + 1));
    if rows == 0 {
        0.0
    } else {
        total / rows as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropy_of_uniform_and_one_hot_rows() {
        let a = vec![0.25f32; 16];
        assert!((mean_entropy(&a, 4) - 2.0).abs() < 1e-9);
        let one_hot = [1.0f32, 0.0, 0.0, 1.0];
        assert!(mean_entropy(&one_hot, 2).abs() < 1e-9);
    }

    #[test]
    fn rows_are_normalised_and_empty_rows_skipped() {
        // Row 0 holds half its mass (specials dropped): still 1 bit over two keys.
        let a = [0.25f32, 0.25, 0.0, 0.0];
        assert!((mean_entropy(&a, 2) - 1.0).abs() < 1e-9);
        assert_eq!(row_entropy(&[0.0, 0.0]), None);
    }
}
