//! Attention entropy: how spread a query's attention is, in bits. The one definition used
//! by the explorer's head grid (code-token attention) and the `trace` summary (subword
//! attention).

use crate::model::kernels;

/// Shannon entropy (bits) of `row` normalised to sum 1; `None` for a row with no mass.
/// Rows of code-token attention need not sum to 1 (special positions were dropped,
/// METHODS.md 1), hence the normalisation.
///
/// Computed as `log2 s - (sum x log2 x) / s` with `s = sum x` (the same quantity as
/// `-sum (x/s) log2 (x/s)`), in f64 throughout with a vectorised logarithm
/// ([`kernels::ln_f64`], below 1 ulp) instead of a per-element division and libm call:
/// this runs over every row of every head and was the largest part of the analysis
/// after the forward pass.
pub fn row_entropy(row: &[f32]) -> Option<f64> {
    let (s, t) = sums(row);
    if s <= 0.0 {
        return None;
    }
    Some(((s.ln() - t / s) / std::f64::consts::LN_2).max(0.0))
}

/// `(sum x, sum x ln x)` over the positive entries of `row`.
fn sums(row: &[f32]) -> (f64, f64) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has the feature the function is compiled for.
        return unsafe { sums_avx2(row) };
    }
    sums_body(row)
}

/// [`sums_body`] with the four lanes in one AVX2 register: bit-identical results.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sums_avx2(row: &[f32]) -> (f64, f64) {
    use std::arch::x86_64::*;
    let (mut s, mut t) = (_mm256_setzero_pd(), _mm256_setzero_pd());
    let chunks = row.chunks_exact(4);
    let rest = chunks.remainder();
    for c in chunks {
        let x = _mm256_cvtps_pd(_mm_max_ps(_mm_loadu_ps(c.as_ptr()), _mm_setzero_ps()));
        s = _mm256_add_pd(s, x);
        t = _mm256_add_pd(t, _mm256_mul_pd(x, kernels::ln_f64x4(x)));
    }
    let (mut sl, mut tl) = ([0.0f64; 4], [0.0f64; 4]);
    _mm256_storeu_pd(sl.as_mut_ptr(), s);
    _mm256_storeu_pd(tl.as_mut_ptr(), t);
    finish(sl, tl, rest)
}

#[inline(always)]
fn finish(s: [f64; 4], t: [f64; 4], rest: &[f32]) -> (f64, f64) {
    let (mut s64, mut t64) = ((s[0] + s[1]) + (s[2] + s[3]), (t[0] + t[1]) + (t[2] + t[3]));
    for &x in rest {
        let x = f64::from(x.max(0.0));
        s64 += x;
        t64 += x * kernels::ln_f64(x);
    }
    (s64, t64)
}

fn sums_body(row: &[f32]) -> (f64, f64) {
    // Four f64 lanes (the vector width at f64), a scalar tail.
    let mut s = [0.0f64; 4];
    let mut t = [0.0f64; 4];
    let chunks = row.chunks_exact(4);
    let rest = chunks.remainder();
    for c in chunks {
        for k in 0..4 {
            let x = f64::from(c[k].max(0.0));
            s[k] += x;
            t[k] += x * kernels::ln_f64(x);
        }
    }
    finish(s, t, rest)
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

    #[test]
    fn vector_and_portable_sums_agree_bit_for_bit() {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            let mut rng = crate::model::testutil::SplitMix::new(3);
            for len in [0usize, 1, 4, 7, 64, 301] {
                let mut row: Vec<f32> = rng.vec(len, 1.0).into_iter().map(f32::abs).collect();
                if len > 2 {
                    row[1] = 0.0;
                    row[2] = 1e-30;
                }
                // SAFETY: AVX2 checked above.
                let v = unsafe { sums_avx2(&row) };
                let p = sums_body(&row);
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
            assert!((got - want).abs() < 1e-12, "len {len}: {got} vs {want}");
        }
    }
}
