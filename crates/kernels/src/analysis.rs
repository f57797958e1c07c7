//! The analysis's hot loops over attention matrices: counting entries above a threshold,
//! the sums behind a row's entropy, subword-to-token aggregation, and the non-finite check
//! every layer's output goes through. What the numbers mean is codescope's
//! (`analysis::relations`, `analysis::entropy`, `analysis::attention`); here they are
//! only loops over slices.

use rayon::prelude::*;

use crate::nn::{ln_f64, ln_f64x4};

/// Number of entries of `a` above `t` (vectorised: eight lanes of 0/1 counts).
pub fn count_above(a: &[f32], t: f32) -> usize {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has the feature the function is compiled for.
        return unsafe { count_above_avx2(a, t) };
    }
    count_above_body(a, t)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn count_above_avx2(a: &[f32], t: f32) -> usize {
    count_above_body(a, t)
}

#[inline(always)]
fn count_above_body(a: &[f32], t: f32) -> usize {
    let mut total = 0usize;
    // u32 lanes, flushed every 2^16 chunks so they cannot overflow.
    for block in a.chunks(8 << 16) {
        let mut acc = [0u32; 8];
        let chunks = block.chunks_exact(8);
        total += chunks.remainder().iter().filter(|&&x| x > t).count();
        for c in chunks {
            for k in 0..8 {
                acc[k] += u32::from(c[k] > t);
            }
        }
        total += acc.iter().map(|&x| x as usize).sum::<usize>();
    }
    total
}

/// `(sum x, sum x ln x)` over the positive entries of `row` (negative entries count as
/// 0), in f64 with four lanes and [`ln_f64`]: the sums a row's entropy is computed from.
pub fn x_ln_x_sums(row: &[f32]) -> (f64, f64) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has the feature the function is compiled for.
        return unsafe { x_ln_x_sums_avx2(row) };
    }
    x_ln_x_sums_portable(row)
}

/// [`x_ln_x_sums_portable`] with the four lanes in one AVX2 register: bit-identical
/// results. Public so that tests can compare the two (call [`x_ln_x_sums`] otherwise).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub unsafe fn x_ln_x_sums_avx2(row: &[f32]) -> (f64, f64) {
    use std::arch::x86_64::*;
    let (mut s, mut t) = (_mm256_setzero_pd(), _mm256_setzero_pd());
    let chunks = row.chunks_exact(4);
    let rest = chunks.remainder();
    for c in chunks {
        let x = _mm256_cvtps_pd(_mm_max_ps(_mm_loadu_ps(c.as_ptr()), _mm_setzero_ps()));
        s = _mm256_add_pd(s, x);
        t = _mm256_add_pd(t, _mm256_mul_pd(x, ln_f64x4(x)));
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
        t64 += x * ln_f64(x);
    }
    (s64, t64)
}

/// [`x_ln_x_sums`] without SIMD intrinsics: four f64 lanes (the vector width at f64), a
/// scalar tail.
pub fn x_ln_x_sums_portable(row: &[f32]) -> (f64, f64) {
    let mut s = [0.0f64; 4];
    let mut t = [0.0f64; 4];
    let chunks = row.chunks_exact(4);
    let rest = chunks.remainder();
    for c in chunks {
        for k in 0..4 {
            let x = f64::from(c[k].max(0.0));
            s[k] += x;
            t[k] += x * ln_f64(x);
        }
    }
    finish(s, t, rest)
}

/// One layer's token attention `[head][i][j]` into `out` (`heads * n * n`, `n =
/// groups.len()`) from its subword attention `att` (`[head][q][k]`, `heads * m * m`): the
/// mean over the subword pairs of token `i`'s group and token `j`'s group. `runs[j]` is
/// `Some((first, end))` when group `j` is the contiguous run `first..end` (its column sum
/// is then a slice sum instead of a gather). Heads run in parallel.
///
/// Row pass then column pass: `R[i][q] = mean_p a[p][q]`; `A[i][j] = mean_q R[i][q]`. The
/// column pass takes eight rows `i` at a time from a transposed block, so each column sum
/// is one 8-lane add per subword; every lane adds in the same order, from the same zero,
/// as [`aggregate_layer_scalar`] (bit-identical results, tested).
pub fn aggregate_layer(
    att: &[f32],
    heads: usize,
    m: usize,
    groups: &[Vec<usize>],
    runs: &[Option<(usize, usize)>],
    out: &mut [f32],
) {
    let n = groups.len();
    assert_eq!(att.len(), heads * m * m);
    assert_eq!(out.len(), heads * n * n);
    assert_eq!(runs.len(), n);
    assert!(groups.iter().flatten().all(|&q| q < m));
    out.par_chunks_mut((n * n).max(1))
        .enumerate()
        .for_each(|(h, out)| {
            let a = &att[h * m * m..(h + 1) * m * m];
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has the feature the function is compiled for.
                return unsafe { aggregate_head_avx2(a, m, groups, runs, out) };
            }
            aggregate_head(a, m, groups, runs, out)
        });
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn aggregate_head_avx2(
    a: &[f32],
    m: usize,
    groups: &[Vec<usize>],
    runs: &[Option<(usize, usize)>],
    out: &mut [f32],
) {
    aggregate_head(a, m, groups, runs, out)
}

/// Rows taken together by the column pass.
const BLOCK: usize = 8;

#[inline(always)]
fn aggregate_head(
    a: &[f32],
    m: usize,
    groups: &[Vec<usize>],
    runs: &[Option<(usize, usize)>],
    out: &mut [f32],
) {
    let n = groups.len();
    let mut buf = vec![0.0f32; m];
    // t[q * BLOCK + k] = R[i0 + k][q].
    let mut t = vec![0.0f32; m * BLOCK];
    for i0 in (0..n).step_by(BLOCK) {
        let rows = (n - i0).min(BLOCK);
        for k in 0..BLOCK {
            let Some(g) = groups.get(i0 + k).filter(|_| k < rows) else {
                t.iter_mut().skip(k).step_by(BLOCK).for_each(|x| *x = 0.0);
                continue;
            };
            let r = row_mean(a, m, g, &mut buf);
            for (q, &x) in r.iter().enumerate() {
                t[q * BLOCK + k] = x;
            }
        }
        for (j, g) in groups.iter().enumerate() {
            let mut acc = [0.0f32; BLOCK];
            let mut add = |q: usize| {
                let c = &t[q * BLOCK..(q + 1) * BLOCK];
                for l in 0..BLOCK {
                    acc[l] += c[l];
                }
            };
            match runs[j] {
                Some((first, end)) => (first..end).for_each(&mut add),
                None => g.iter().for_each(|&q| add(q)),
            }
            let d = g.len() as f32;
            for (k, &s) in acc.iter().enumerate().take(rows) {
                out[(i0 + k) * n + j] = s / d;
            }
        }
    }
}

/// `R[i]`: row `g[0]` of `a` in place for a one-subword group, else the mean of the
/// group's rows in `buf`.
#[inline(always)]
fn row_mean<'a>(a: &'a [f32], m: usize, g: &[usize], buf: &'a mut [f32]) -> &'a [f32] {
    if g.len() == 1 {
        return &a[g[0] * m..(g[0] + 1) * m];
    }
    buf.iter_mut().for_each(|x| *x = 0.0);
    for &p in g {
        for (x, &v) in buf.iter_mut().zip(&a[p * m..(p + 1) * m]) {
            *x += v;
        }
    }
    let k = 1.0 / g.len() as f32;
    buf.iter_mut().for_each(|x| *x *= k);
    buf
}

/// [`aggregate_layer`] one row and one column at a time: the reference its blocked column
/// pass is tested against.
pub fn aggregate_layer_scalar(
    att: &[f32],
    heads: usize,
    m: usize,
    groups: &[Vec<usize>],
    runs: &[Option<(usize, usize)>],
    out: &mut [f32],
) {
    let n = groups.len();
    let mut buf = vec![0.0f32; m];
    for (h, out) in out.chunks_mut((n * n).max(1)).enumerate().take(heads) {
        let a = &att[h * m * m..(h + 1) * m * m];
        for (i, g) in groups.iter().enumerate() {
            let r = row_mean(a, m, g, &mut buf);
            for (j, g) in groups.iter().enumerate() {
                let s: f32 = match runs[j] {
                    Some((a, b)) => r[a..b].iter().sum(),
                    None => g.iter().map(|&q| r[q]).sum(),
                };
                out[i * n + j] = s / g.len() as f32;
            }
        }
    }
}

/// How many values of `xs` are NaN or infinite (in parallel chunks).
pub fn count_non_finite(xs: &[f32]) -> usize {
    xs.par_chunks(1 << 16)
        .map(|c| c.iter().filter(|x| !x.is_finite()).count())
        .sum()
}
