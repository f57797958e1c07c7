//! The analysis's hot loops over attention matrices: counting entries above a threshold,
//! the sums behind a row's entropy, subword-to-token aggregation, and the non-finite check
//! every layer's output goes through. What the numbers mean is codescope's
//! (`analysis::relations`, `analysis::entropy`, `analysis::attention`); here they are
//! only loops over slices.

use rayon::prelude::*;

use crate::isa::{self, Isa};

/// Number of entries of `a` above `t` (vectorised: lanes of 0/1 counts, 8 or 16 with
/// AVX-512; an exact count on every path).
pub fn count_above(a: &[f32], t: f32) -> usize {
    count_above_at(isa::active(), a, t)
}

crate::simd_kernel! {
    /// [`count_above`] at level `isa`.
    pub fn count_above_at(a: &[f32], t: f32) -> usize = count_above_body, lanes;
}

#[inline(always)]
fn count_above_body<const L: usize>(a: &[f32], t: f32) -> usize {
    let mut total = 0usize;
    // u32 lanes, flushed every 2^16 chunks so they cannot overflow.
    for block in a.chunks(L << 16) {
        let mut acc = [0u32; L];
        let chunks = block.chunks_exact(L);
        total += chunks.remainder().iter().filter(|&&x| x > t).count();
        for c in chunks {
            for k in 0..L {
                acc[k] += u32::from(c[k] > t);
            }
        }
        total += acc.iter().map(|&x| x as usize).sum::<usize>();
    }
    total
}

/// `(sum x, sum x ln x)` over the positive entries of `row` (negative entries count as
/// 0): the sums a row's entropy is computed from. `ln x` is [`ln_f32`] (relative error
/// ~1e-7) and `x ln x` is rounded to f32; both sums are accumulated in f64, on eight
/// lanes. (Without FMA hardware `mul_add` is a library call: slow but the same values;
/// x86 CPUs with AVX2 + FMA take the vector version.) (It was an f64 logarithm with a division per four values: a fifth of the
/// analysis after the forward pass, for a difference in the seventh digit.)
pub fn x_ln_x_sums(row: &[f32]) -> (f64, f64) {
    x_ln_x_sums_at(isa::active(), row)
}

/// [`x_ln_x_sums`] at level `isa` (capped at the CPU's own): [`x_ln_x_sums_avx512`],
/// [`x_ln_x_sums_avx2`] or [`x_ln_x_sums_portable`].
pub fn x_ln_x_sums_at(isa: Isa, row: &[f32]) -> (f64, f64) {
    #[cfg(target_arch = "x86_64")]
    match isa.min(isa::detected_cached()) {
        // SAFETY: capped at the CPU's own level: it has the features.
        Isa::Amx | Isa::Avx512 => return unsafe { x_ln_x_sums_avx512(row) },
        // SAFETY: as above.
        Isa::Avx2 => return unsafe { x_ln_x_sums_avx2(row) },
        Isa::Portable => {}
    }
    let _ = isa;
    x_ln_x_sums_portable(row)
}

/// [`x_ln_x_sums_portable`] with the eight lanes in AVX2 registers, the same operations
/// in the same order: bit-identical results. Public so that tests can compare the two
/// (call [`x_ln_x_sums`] otherwise).
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub unsafe fn x_ln_x_sums_avx2(row: &[f32]) -> (f64, f64) {
    use std::arch::x86_64::*;
    let (mut s_lo, mut s_hi) = (_mm256_setzero_pd(), _mm256_setzero_pd());
    let (mut t_lo, mut t_hi) = (_mm256_setzero_pd(), _mm256_setzero_pd());
    let body = &row[..row.len() / 8 * 8];
    let rest = &row[body.len()..];
    // Two chunks per step: their logarithms' operations interleave (the polynomial is a
    // chain of dependent operations; one chunk at a time left the CPU waiting on it).
    // The sums still take the chunks in order.
    macro_rules! accumulate {
        ($x:expr, $l:expr) => {{
            let (x, xl) = ($x, _mm256_mul_ps($x, $l));
            s_lo = _mm256_add_pd(s_lo, _mm256_cvtps_pd(_mm256_castps256_ps128(x)));
            s_hi = _mm256_add_pd(s_hi, _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(x)));
            t_lo = _mm256_add_pd(t_lo, _mm256_cvtps_pd(_mm256_castps256_ps128(xl)));
            t_hi = _mm256_add_pd(t_hi, _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(xl)));
        }};
    }
    let mut pairs = body.chunks_exact(16);
    for c in &mut pairs {
        let x0 = _mm256_max_ps(_mm256_loadu_ps(c.as_ptr()), _mm256_setzero_ps());
        let x1 = _mm256_max_ps(_mm256_loadu_ps(c.as_ptr().add(8)), _mm256_setzero_ps());
        let (l0, l1) = (ln_f32x8(x0), ln_f32x8(x1));
        accumulate!(x0, l0);
        accumulate!(x1, l1);
    }
    for c in pairs.remainder().chunks_exact(8) {
        let x = _mm256_max_ps(_mm256_loadu_ps(c.as_ptr()), _mm256_setzero_ps());
        accumulate!(x, ln_f32x8(x));
    }
    let lanes = |lo: __m256d, hi: __m256d| {
        let mut v = [0.0f64; 8];
        _mm256_storeu_pd(v.as_mut_ptr(), lo);
        _mm256_storeu_pd(v.as_mut_ptr().add(4), hi);
        v
    };
    finish(lanes(s_lo, s_hi), lanes(t_lo, t_hi), rest)
}

/// [`x_ln_x_sums_avx2`] on sixteen lanes with AVX-512: the same per-entry values
/// ([`ln_f32x16`] is bit-identical to [`ln_f32`]), summed in sixteen f64 lanes (lane `k`
/// takes the entries `k mod 16`) folded pairwise into eight at the end, so the sums
/// differ from the eight-lane paths' only by the order of the f64 additions.
///
/// # Safety
/// The CPU must support AVX-512F (and AVX2 + FMA, as every AVX-512 CPU does).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
pub unsafe fn x_ln_x_sums_avx512(row: &[f32]) -> (f64, f64) {
    use std::arch::x86_64::*;
    let (mut s_lo, mut s_hi) = (_mm512_setzero_pd(), _mm512_setzero_pd());
    let (mut t_lo, mut t_hi) = (_mm512_setzero_pd(), _mm512_setzero_pd());
    let body = &row[..row.len() / 16 * 16];
    let rest = &row[body.len()..];
    macro_rules! accumulate {
        ($x:expr, $l:expr) => {{
            let (x, xl) = ($x, _mm512_mul_ps($x, $l));
            s_lo = _mm512_add_pd(s_lo, _mm512_cvtps_pd(_mm512_castps512_ps256(x)));
            s_hi = _mm512_add_pd(s_hi, _mm512_cvtps_pd(_mm512_extractf32x8_ps::<1>(x)));
            t_lo = _mm512_add_pd(t_lo, _mm512_cvtps_pd(_mm512_castps512_ps256(xl)));
            t_hi = _mm512_add_pd(t_hi, _mm512_cvtps_pd(_mm512_extractf32x8_ps::<1>(xl)));
        }};
    }
    let mut pairs = body.chunks_exact(32);
    for c in &mut pairs {
        let x0 = _mm512_max_ps(_mm512_loadu_ps(c.as_ptr()), _mm512_setzero_ps());
        let x1 = _mm512_max_ps(_mm512_loadu_ps(c.as_ptr().add(16)), _mm512_setzero_ps());
        let (l0, l1) = (ln_f32x16(x0), ln_f32x16(x1));
        accumulate!(x0, l0);
        accumulate!(x1, l1);
    }
    for c in pairs.remainder().chunks_exact(16) {
        let x = _mm512_max_ps(_mm512_loadu_ps(c.as_ptr()), _mm512_setzero_ps());
        accumulate!(x, ln_f32x16(x));
    }
    // Sixteen lanes (lo: entries 0-7 of each chunk, hi: 8-15) folded into eight.
    let lanes = |lo: __m512d, hi: __m512d| {
        let mut v = [0.0f64; 8];
        _mm512_storeu_pd(v.as_mut_ptr(), _mm512_add_pd(lo, hi));
        v
    };
    finish(lanes(s_lo, s_hi), lanes(t_lo, t_hi), rest)
}

/// [`x_ln_x_sums`] without SIMD intrinsics: eight lanes, a scalar tail.
pub fn x_ln_x_sums_portable(row: &[f32]) -> (f64, f64) {
    let mut s = [0.0f64; 8];
    let mut t = [0.0f64; 8];
    let chunks = row.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for k in 0..8 {
            let x = c[k].max(0.0);
            s[k] += f64::from(x);
            t[k] += f64::from(x * ln_f32(x));
        }
    }
    finish(s, t, rest)
}

#[inline(always)]
fn finish(s: [f64; 8], t: [f64; 8], rest: &[f32]) -> (f64, f64) {
    let fold = |v: [f64; 8]| ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
    let (mut s64, mut t64) = (fold(s), fold(t));
    for &x in rest {
        let x = x.max(0.0);
        s64 += f64::from(x);
        t64 += f64::from(x * ln_f32(x));
    }
    (s64, t64)
}

const SQRT_HALF: f32 = std::f32::consts::FRAC_1_SQRT_2;
// Cephes' `logf` polynomial, lowest degree first.
const P0: f32 = 0.333_333_3;
const P1: f32 = -0.249_999_94;
const P2: f32 = 0.200_007_14;
const P3: f32 = -0.166_680_57;
const P4: f32 = 0.142_493_23;
const P5: f32 = -0.124_201_41;
const P6: f32 = 0.116_769_984;
const P7: f32 = -0.115_146_1;
const P8: f32 = 0.070_376_836;

/// Natural logarithm of a positive normal f32: Cephes' `logf` (the mantissa in
/// [sqrt(1/2), sqrt(2)), its polynomial by Estrin's scheme, ln 2 split in two; relative error
/// ~1e-7), branch-free so that it vectorises. `ln(0)` gives a finite value near -88
/// instead of -inf, harmless where the result is multiplied by `x` (entropy);
/// subnormal inputs are not handled.
#[inline(always)]
pub fn ln_f32(x: f32) -> f32 {
    let bits = x.to_bits();
    // x = m 2^e with m in [0.5, 1).
    let m = f32::from_bits((bits & 0x007f_ffff) | 0x3f00_0000);
    let e = ((bits >> 23) & 0xff) as i32 - 126;
    let small = m < SQRT_HALF;
    let e = (if small { e - 1 } else { e }) as f32;
    let f = if small { m + m - 1.0 } else { m - 1.0 };
    let z = f * f;
    // Cephes' degree-8 polynomial in f, evaluated by Estrin's scheme (four levels deep
    // instead of Horner's nine, so that the CPU overlaps more rows' worth of it), with
    // fused multiply-adds.
    let z2 = z * z;
    let lin = |a: f32, b: f32| b.mul_add(f, a);
    let q0 = lin(P2, P3).mul_add(z, lin(P0, P1));
    let q1 = lin(P6, P7).mul_add(z, lin(P4, P5));
    let p = P8.mul_add(z2 * z2, q1.mul_add(z2, q0));
    let mut y = p * f * z;
    y = e.mul_add(-2.121_944_4e-4, y);
    y = (-0.5f32).mul_add(z, y);
    e.mul_add(0.693_359_4, f + y)
}

/// [`ln_f32`] on eight lanes with AVX2 + FMA, the same operations in the same order, so
/// each lane's result is bit-identical to [`ln_f32`]'s.
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub unsafe fn ln_f32x8(x: std::arch::x86_64::__m256) -> std::arch::x86_64::__m256 {
    use std::arch::x86_64::*;
    let c = _mm256_set1_ps;
    let (mul, add, sub) = (_mm256_mul_ps, _mm256_add_ps, _mm256_sub_ps);
    let bits = _mm256_castps_si256(x);
    let m = _mm256_castsi256_ps(_mm256_or_si256(
        _mm256_and_si256(bits, _mm256_set1_epi32(0x007f_ffff)),
        _mm256_set1_epi32(0x3f00_0000),
    ));
    let e = _mm256_sub_epi32(
        _mm256_and_si256(_mm256_srli_epi32::<23>(bits), _mm256_set1_epi32(0xff)),
        _mm256_set1_epi32(126),
    );
    let small = _mm256_cmp_ps::<_CMP_LT_OQ>(m, c(SQRT_HALF));
    // e - 1 where small: the mask is all ones (-1) there.
    let e = _mm256_cvtepi32_ps(_mm256_add_epi32(e, _mm256_castps_si256(small)));
    let f = sub(_mm256_blendv_ps(m, add(m, m), small), c(1.0));
    let z = mul(f, f);
    let z2 = mul(z, z);
    let fma = _mm256_fmadd_ps;
    let lin = |a: f32, b: f32| fma(c(b), f, c(a));
    let q0 = fma(lin(P2, P3), z, lin(P0, P1));
    let q1 = fma(lin(P6, P7), z, lin(P4, P5));
    let p = fma(c(P8), mul(z2, z2), fma(q1, z2, q0));
    let mut y = mul(mul(p, f), z);
    y = fma(e, c(-2.121_944_4e-4), y);
    y = fma(c(-0.5), z, y);
    fma(e, c(0.693_359_4), add(f, y))
}

/// [`ln_f32`] on sixteen lanes with AVX-512, the same operations in the same order as
/// [`ln_f32x8`], so each lane's result is bit-identical to [`ln_f32`]'s.
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub unsafe fn ln_f32x16(x: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    let c = _mm512_set1_ps;
    let (mul, add, sub) = (_mm512_mul_ps, _mm512_add_ps, _mm512_sub_ps);
    let bits = _mm512_castps_si512(x);
    let m = _mm512_castsi512_ps(_mm512_or_si512(
        _mm512_and_si512(bits, _mm512_set1_epi32(0x007f_ffff)),
        _mm512_set1_epi32(0x3f00_0000),
    ));
    let e = _mm512_sub_epi32(
        _mm512_and_si512(_mm512_srli_epi32::<23>(bits), _mm512_set1_epi32(0xff)),
        _mm512_set1_epi32(126),
    );
    let small = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(m, c(SQRT_HALF));
    // e - 1 where small.
    let e = _mm512_cvtepi32_ps(_mm512_mask_sub_epi32(e, small, e, _mm512_set1_epi32(1)));
    let f = sub(_mm512_mask_blend_ps(small, m, add(m, m)), c(1.0));
    let z = mul(f, f);
    let z2 = mul(z, z);
    let fma = _mm512_fmadd_ps;
    let lin = |a: f32, b: f32| fma(c(b), f, c(a));
    let q0 = fma(lin(P2, P3), z, lin(P0, P1));
    let q1 = fma(lin(P6, P7), z, lin(P4, P5));
    let p = fma(c(P8), mul(z2, z2), fma(q1, z2, q0));
    let mut y = mul(mul(p, f), z);
    y = fma(e, c(-2.121_944_4e-4), y);
    y = fma(c(-0.5), z, y);
    fma(e, c(0.693_359_4), add(f, y))
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
/// as [`aggregate_layer_scalar`] (bit-identical results, tested). The transpositions (in
/// and back out) are 8 x 8 register shuffles, and the next block's subword rows are
/// prefetched during the column pass: the row pass reads every layer from memory (75 MB
/// for MiniLM's six layers at 512 subwords) and mostly waited on it.
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
    let isa = isa::active();
    out.par_chunks_mut((n * n).max(1))
        .enumerate()
        .for_each(|(h, out)| {
            let a = &att[h * m * m..(h + 1) * m * m];
            aggregate_head_at(isa, a, m, groups, runs, out)
        });
}

/// One head of [`aggregate_layer`] at level `isa` (capped at the CPU's own). Its 8 x 8
/// transposes are AVX2 shuffles at both SIMD levels (the AVX-512 variant compiles the
/// rest of the loops with AVX-512); the results are bit-identical on every path.
pub fn aggregate_head_at(
    isa: Isa,
    a: &[f32],
    m: usize,
    groups: &[Vec<usize>],
    runs: &[Option<(usize, usize)>],
    out: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    match isa.min(isa::detected_cached()) {
        // SAFETY: capped at the CPU's own level: it has the features.
        Isa::Amx | Isa::Avx512 => return unsafe { aggregate_head_avx512(a, m, groups, runs, out) },
        // SAFETY: as above.
        Isa::Avx2 => return unsafe { aggregate_head_avx2(a, m, groups, runs, out) },
        Isa::Portable => {}
    }
    let _ = isa;
    aggregate_head::<false>(a, m, groups, runs, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]
unsafe fn aggregate_head_avx512(
    a: &[f32],
    m: usize,
    groups: &[Vec<usize>],
    runs: &[Option<(usize, usize)>],
    out: &mut [f32],
) {
    aggregate_head::<true>(a, m, groups, runs, out)
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
    aggregate_head::<true>(a, m, groups, runs, out)
}

/// Rows taken together by the column pass.
const BLOCK: usize = 8;

#[inline(always)]
fn aggregate_head<const AVX2: bool>(
    a: &[f32],
    m: usize,
    groups: &[Vec<usize>],
    runs: &[Option<(usize, usize)>],
    out: &mut [f32],
) {
    let n = groups.len();
    let mut bufs = vec![0.0f32; BLOCK * m];
    let zero = vec![0.0f32; m.max(BLOCK)];
    // t[q * BLOCK + k] = R[i0 + k][q].
    let mut t = vec![0.0f32; m * BLOCK];
    let mut u = vec![0.0f32; n * BLOCK];
    let mut back = [0.0f32; BLOCK * BLOCK];
    for i0 in (0..n).step_by(BLOCK) {
        let rows = (n - i0).min(BLOCK);
        let mut r: [&[f32]; BLOCK] = [&zero; BLOCK];
        for (k, slot) in bufs.chunks_exact_mut(m.max(1)).enumerate().take(rows) {
            r[k] = row_mean(a, m, &groups[i0 + k], slot);
        }
        transpose::<AVX2>(&r, m, &mut t);
        // The next block's subword rows are read from memory while this block's columns
        // are summed: a few cache lines ahead per column group (the row pass was waiting
        // on memory most of its time).
        let next = groups
            .get(i0 + BLOCK..(i0 + 2 * BLOCK).min(n))
            .unwrap_or(&[]);
        let mut ahead = AVX2.then(|| Ahead::new(a, m, next, n));
        // u[j * BLOCK + k] = A[i0 + k][j].
        for (j, g) in groups.iter().enumerate() {
            if let Some(ahead) = ahead.as_mut() {
                ahead.step();
            }
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
            let u = &mut u[j * BLOCK..(j + 1) * BLOCK];
            for l in 0..BLOCK {
                u[l] = acc[l] / d;
            }
        }
        // Back to rows i0..i0 + rows of `out`.
        let mut r: [&[f32]; BLOCK] = [&zero; BLOCK];
        let mut j0 = 0;
        while j0 + BLOCK <= n {
            for (k, row) in r.iter_mut().enumerate() {
                *row = &u[(j0 + k) * BLOCK..(j0 + k + 1) * BLOCK];
            }
            transpose::<AVX2>(&r, BLOCK, &mut back);
            for k in 0..rows {
                out[(i0 + k) * n + j0..(i0 + k) * n + j0 + BLOCK]
                    .copy_from_slice(&back[k * BLOCK..(k + 1) * BLOCK]);
            }
            j0 += BLOCK;
        }
        for j in j0..n {
            for k in 0..rows {
                out[(i0 + k) * n + j] = u[j * BLOCK + k];
            }
        }
    }
}

/// For each row `i` of the `n x n` row-major `a` and each class `c`, the sum of the
/// row's entries in the columns `members[c]`, in the order listed: `out[i * k + c]`
/// (`k = members.len()`). Eight rows at a time from a transposed block, each lane adding
/// in the same order as a one-row loop (the same f32 sums, bit for bit; a one-row loop is
/// a chain of dependent additions).
pub fn class_row_sums(a: &[f32], n: usize, members: &[Vec<usize>], out: &mut [f32]) {
    let k = members.len();
    assert_eq!(a.len(), n * n);
    assert_eq!(out.len(), n * k);
    assert!(members.iter().flatten().all(|&j| j < n));
    class_row_sums_at(isa::active(), a, n, members, out)
}

/// [`class_row_sums`] at level `isa` (capped at the CPU's own; AVX2 transposes at both
/// SIMD levels, as [`aggregate_head_at`]); bit-identical on every path.
pub fn class_row_sums_at(isa: Isa, a: &[f32], n: usize, members: &[Vec<usize>], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    match isa.min(isa::detected_cached()) {
        // SAFETY: capped at the CPU's own level: it has the features.
        Isa::Amx | Isa::Avx512 => return unsafe { class_row_sums_avx512(a, n, members, out) },
        // SAFETY: as above.
        Isa::Avx2 => return unsafe { class_row_sums_avx2(a, n, members, out) },
        Isa::Portable => {}
    }
    let _ = isa;
    class_row_sums_body::<false>(a, n, members, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]
unsafe fn class_row_sums_avx512(a: &[f32], n: usize, members: &[Vec<usize>], out: &mut [f32]) {
    class_row_sums_body::<true>(a, n, members, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn class_row_sums_avx2(a: &[f32], n: usize, members: &[Vec<usize>], out: &mut [f32]) {
    class_row_sums_body::<true>(a, n, members, out)
}

#[inline(always)]
fn class_row_sums_body<const AVX2: bool>(
    a: &[f32],
    n: usize,
    members: &[Vec<usize>],
    out: &mut [f32],
) {
    let k = members.len();
    let zero = vec![0.0f32; n];
    let mut t = vec![0.0f32; n * BLOCK];
    for i0 in (0..n).step_by(BLOCK) {
        let rows = (n - i0).min(BLOCK);
        let mut r: [&[f32]; BLOCK] = [&zero; BLOCK];
        for (l, row) in r.iter_mut().enumerate().take(rows) {
            *row = &a[(i0 + l) * n..(i0 + l + 1) * n];
        }
        transpose::<AVX2>(&r, n, &mut t);
        for (c, cols) in members.iter().enumerate() {
            let mut acc = [0.0f32; BLOCK];
            for &j in cols {
                let v = &t[j * BLOCK..(j + 1) * BLOCK];
                for l in 0..BLOCK {
                    acc[l] += v[l];
                }
            }
            for (l, &s) in acc.iter().enumerate().take(rows) {
                out[(i0 + l) * k + c] = s;
            }
        }
    }
}

/// [`class_row_sums`] one row and one class at a time: the reference it is tested against.
pub fn class_row_sums_scalar(a: &[f32], n: usize, members: &[Vec<usize>], out: &mut [f32]) {
    let k = members.len();
    for i in 0..n {
        let row = &a[i * n..(i + 1) * n];
        for (c, cols) in members.iter().enumerate() {
            let mut s = 0.0f32;
            for &j in cols {
                s += row[j];
            }
            out[i * k + c] = s;
        }
    }
}

/// Prefetches of the subword rows of the next block of groups, spread over `steps` calls
/// of [`Ahead::step`].
struct Ahead<'a> {
    a: &'a [f32],
    m: usize,
    /// The rows still to fetch, after `row`.
    rows: std::iter::Flatten<std::slice::Iter<'a, Vec<usize>>>,
    /// The row being fetched, and its next line.
    row: Option<usize>,
    line: usize,
    /// Cache lines per step.
    per_step: usize,
}

/// f32 values per 64-byte cache line.
const LINE: usize = 16;

impl<'a> Ahead<'a> {
    fn new(a: &'a [f32], m: usize, groups: &'a [Vec<usize>], steps: usize) -> Self {
        let lines = groups.iter().map(Vec::len).sum::<usize>() * m.div_ceil(LINE);
        let mut rows = groups.iter().flatten();
        Ahead {
            a,
            m,
            row: rows.next().copied(),
            rows,
            line: 0,
            per_step: lines.div_ceil(steps.max(1)),
        }
    }

    #[inline(always)]
    fn step(&mut self) {
        for _ in 0..self.per_step {
            let Some(p) = self.row else { return };
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a prefetch is only a hint; the address is inside `a` (row p < m,
            // column line * LINE < m).
            unsafe {
                use std::arch::x86_64::*;
                let at = self.a.as_ptr().add(p * self.m + self.line * LINE);
                _mm_prefetch::<_MM_HINT_T0>(at as *const i8);
            }
            self.line += 1;
            if self.line * LINE >= self.m {
                self.line = 0;
                self.row = self.rows.next().copied();
            }
        }
    }
}

/// `t[q * BLOCK + k] = r[k][q]` for the `m` columns of the eight rows `r`.
#[inline(always)]
fn transpose<const AVX2: bool>(r: &[&[f32]; BLOCK], m: usize, t: &mut [f32]) {
    let mut q0 = 0;
    #[cfg(target_arch = "x86_64")]
    if AVX2 {
        while q0 + BLOCK <= m {
            // SAFETY: only instantiated with AVX2 = true from the `_avx2` and `_avx512`
            // variants of `aggregate_head` and `class_row_sums`, whose CPU has AVX2; columns q0..q0+8 lie inside every
            // row (at least m long) and rows q0..q0+8 of `t` (length m * BLOCK).
            unsafe { transpose8_avx2(r, q0, t) };
            q0 += BLOCK;
        }
    }
    for q in q0..m {
        for (k, row) in r.iter().enumerate() {
            t[q * BLOCK + k] = row[q];
        }
    }
}

/// One 8 x 8 block of [`transpose`]: columns `q0..q0 + 8`, with AVX2 shuffles.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn transpose8_avx2(r: &[&[f32]; BLOCK], q0: usize, t: &mut [f32]) {
    use std::arch::x86_64::*;
    let l = |k: usize| _mm256_loadu_ps(r[k][q0..q0 + 8].as_ptr());
    let (a0, a1, a2, a3) = (l(0), l(1), l(2), l(3));
    let (a4, a5, a6, a7) = (l(4), l(5), l(6), l(7));
    let (b0, b1) = (_mm256_unpacklo_ps(a0, a1), _mm256_unpackhi_ps(a0, a1));
    let (b2, b3) = (_mm256_unpacklo_ps(a2, a3), _mm256_unpackhi_ps(a2, a3));
    let (b4, b5) = (_mm256_unpacklo_ps(a4, a5), _mm256_unpackhi_ps(a4, a5));
    let (b6, b7) = (_mm256_unpacklo_ps(a6, a7), _mm256_unpackhi_ps(a6, a7));
    let (c0, c1) = (
        _mm256_shuffle_ps::<0x44>(b0, b2),
        _mm256_shuffle_ps::<0xEE>(b0, b2),
    );
    let (c2, c3) = (
        _mm256_shuffle_ps::<0x44>(b1, b3),
        _mm256_shuffle_ps::<0xEE>(b1, b3),
    );
    let (c4, c5) = (
        _mm256_shuffle_ps::<0x44>(b4, b6),
        _mm256_shuffle_ps::<0xEE>(b4, b6),
    );
    let (c6, c7) = (
        _mm256_shuffle_ps::<0x44>(b5, b7),
        _mm256_shuffle_ps::<0xEE>(b5, b7),
    );
    let out = &mut t[q0 * BLOCK..(q0 + 8) * BLOCK];
    let s = |i: usize, v: __m256, out: &mut [f32]| {
        _mm256_storeu_ps(out[i * BLOCK..(i + 1) * BLOCK].as_mut_ptr(), v)
    };
    s(0, _mm256_permute2f128_ps::<0x20>(c0, c4), out);
    s(1, _mm256_permute2f128_ps::<0x20>(c1, c5), out);
    s(2, _mm256_permute2f128_ps::<0x20>(c2, c6), out);
    s(3, _mm256_permute2f128_ps::<0x20>(c3, c7), out);
    s(4, _mm256_permute2f128_ps::<0x31>(c0, c4), out);
    s(5, _mm256_permute2f128_ps::<0x31>(c1, c5), out);
    s(6, _mm256_permute2f128_ps::<0x31>(c2, c6), out);
    s(7, _mm256_permute2f128_ps::<0x31>(c3, c7), out);
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
