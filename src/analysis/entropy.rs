//! Attention entropy: how spread a query's attention is, in bits. The one definition used
//! by the explorer's head grid (code-token attention) and the `trace` summary (subword
//! attention).

use codescope_kernels::analysis::x_ln_x_sums;

/// Shannon entropy (bits) of `row` normalised to sum 1; `None` for a row with no mass.
/// Rows of code-token attention need not sum to 1 (special positions were dropped,
/// docs/METHODS.md 1), hence the normalisation.
///
/// Computed as `log2 s - (sum x log2 x) / s` with `s = sum x` (the same quantity as
/// `-sum (x/s) log2 (x/s)`), the sums in f64, `x ln x` in f32 with a vectorised logarithm
/// (`ln_f32` in `codescope-kernels`, relative error ~1e-7; the result agrees with the
/// f64 formula to ~1e-7 relative, at most ~1e-6 bits): this runs over every row of every head and was the
/// largest part of the analysis after the forward pass.
pub fn row_entropy(row: &[f32]) -> Option<f64> {
    let (s, t) = x_ln_x_sums(row);
    if s <= 0.0 {
        return None;
    }
    Some(((s.ln() - t / s) / std::f64::consts::LN_2).max(0.0))
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

    // The logarithms are f32: entropies agree to ~1e-7 relative (~1e-8 bits here).
    #[test]
    fn entropy_of_uniform_and_one_hot_rows() {
        let a = vec![0.25f32; 16];
        assert!((mean_entropy(&a, 4) - 2.0).abs() < 1e-7);
        let one_hot = [1.0f32, 0.0, 0.0, 1.0];
        assert!(mean_entropy(&one_hot, 2).abs() < 1e-9);
    }

    #[test]
    fn rows_are_normalised_and_empty_rows_skipped() {
        // Row 0 holds half its mass (specials dropped): still 1 bit over two keys.
        let a = [0.25f32, 0.25, 0.0, 0.0];
        assert!((mean_entropy(&a, 2) - 1.0).abs() < 1e-7);
        assert_eq!(row_entropy(&[0.0, 0.0]), None);
    }

    #[test]
    fn vector_and_portable_sums_agree_bit_for_bit() {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            let mut rng = crate::model::testutil::SplitMix::new(3);
            for len in [0usize, 1, 4, 7, 8, 15, 16, 24, 64, 218, 301] {
                let mut row: Vec<f32> = rng.vec(len, 1.0).into_iter().map(f32::abs).collect();
                if len > 2 {
                    row[1] = 0.0;
                    row[2] = 1e-30;
                }
                // Negative entries, -0 and NaN count as 0 on both paths.
                if len > 6 {
                    row[3] = -0.5;
                    row[4] = -0.0;
                    row[5] = f32::NAN;
                    row[6] = f32::MIN_POSITIVE / 4.0;
                }
                // SAFETY: AVX2 and FMA checked above.
                let v = unsafe { codescope_kernels::analysis::x_ln_x_sums_avx2(&row) };
                let p = codescope_kernels::analysis::x_ln_x_sums_portable(&row);
                assert_eq!(
                    (v.0.to_bits(), v.1.to_bits()),
                    (p.0.to_bits(), p.1.to_bits())
                );
            }
        }
    }

    #[test]
    fn matches_the_direct_formula() {
        let mut rng = crate::model::testutil::SplitMix::new(7);
        for len in [1usize, 3, 8, 17, 300] {
            let row: Vec<f32> = rng
                .vec(len, 0.5)
                .into_iter()
                .enumerate()
                .map(|(i, x)| {
                    if i % 5 == 1 {
                        0.0
                    } else {
                        (x + 0.5).abs() * 1e-3
                    }
                })
                .collect();
            let s: f64 = row.iter().map(|&x| x as f64).sum();
            let want: f64 = row
                .iter()
                .filter(|&&x| x > 0.0)
                .map(|&x| -(x as f64 / s) * (x as f64 / s).log2())
                .sum();
            let got = row_entropy(&row).unwrap();
            // f32 logarithms: ~1e-7 relative per term.
            assert!((got - want).abs() < 1e-6, "len {len}: {got} vs {want}");
        }
    }

    #[test]
    fn ln_f32_is_accurate() {
        use codescope_kernels::analysis::ln_f32;
        let mut worst = 0.0f64;
        let mut x = f32::MIN_POSITIVE;
        while x < f32::MAX / 2.0 {
            let want = (x as f64).ln();
            let err = (ln_f32(x) as f64 - want).abs() / want.abs().max(1.0);
            worst = worst.max(err);
            x *= 1.000_37;
        }
        assert!(worst < 2e-7, "worst error {worst}");
        assert_eq!(ln_f32(1.0), 0.0);
        assert!(ln_f32(0.0).is_finite() && ln_f32(0.0) < -80.0);
        // Around 1, where the error would be relative to a tiny result.
        for i in 1..2000 {
            let x = 1.0 + (i as f32 - 1000.0) * 1e-4;
            let want = (x as f64).ln();
            assert!(
                (ln_f32(x) as f64 - want).abs() < 1e-7 * want.abs().max(1e-3),
                "ln {x}"
            );
        }
    }

    #[test]
    fn vector_and_portable_logarithms_agree_bit_for_bit() {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            use codescope_kernels::analysis::{ln_f32, ln_f32x8};
            let special = [
                0.0,
                f32::MIN_POSITIVE / 8.0,
                f32::MIN_POSITIVE,
                f32::INFINITY,
                std::f32::consts::FRAC_1_SQRT_2,
                f32::from_bits(std::f32::consts::FRAC_1_SQRT_2.to_bits() - 1),
                f32::from_bits(std::f32::consts::FRAC_1_SQRT_2.to_bits() + 1),
                1.0,
            ];
            let mut x = 1e-30f32;
            let mut first = true;
            while x < 1e30 {
                let xs: [f32; 8] = if std::mem::take(&mut first) {
                    special
                } else {
                    std::array::from_fn(|k| x * (1.0 + k as f32 * 0.093))
                };
                let mut got = [0.0f32; 8];
                // SAFETY: AVX2 and FMA checked above; 8 floats in and out.
                unsafe {
                    use std::arch::x86_64::*;
                    _mm256_storeu_ps(got.as_mut_ptr(), ln_f32x8(_mm256_loadu_ps(xs.as_ptr())));
                }
                for (g, &x) in got.iter().zip(&xs) {
                    assert_eq!(g.to_bits(), ln_f32(x).to_bits(), "ln {x}");
                }
                x *= 1.37;
            }
        }
    }
}
