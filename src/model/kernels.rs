//! Host-side kernels for the parts of a forward pass that candle's CPU backend runs
//! slowly or that must land directly in capture buffers.
//!
//! Profiling the straightforward candle forward (MiniLM, 512 tokens, 1 thread) showed
//! only ~36% of the time in GEMM: scalar `expf` in the softmax (11%), scalar libm `erf`
//! in GELU (8%), and copies / page faults of the `[heads, n, n]` attention tensors made
//! up most of the rest. Here:
//! - attention runs per head with the `gemm` crate (the one candle itself uses) straight
//!   from the fused QKV activations into the capture buffer, which is then softmaxed in
//!   place, so the probabilities are computed once and never copied;
//! - `exp` and `erf` are branch-free polynomial approximations that auto-vectorise:
//!   `exp` is Cephes' `expf` (relative error ~1e-7), `erf` the rational approximation
//!   used by Eigen/TensorFlow for f32 (absolute error < 1e-6 on [-4, 4], ±1 outside).
//!
//! Tests compare both against f64 references, and the whole forward against HF
//! transformers (tests/minilm_reference.rs).

use rayon::prelude::*;

/// Make candle's elementwise thread pool park its workers quickly instead of spinning
/// for ~25,000 iterations after every operation. Those spinning workers compete with the
/// rayon threads that run the matrix products and `attention` below: on a 2-core machine
/// that cost up to a third of a 2-thread forward. Call before any tensor operation (the
/// pool reads the variable once, when first used); a value the user set is kept.
pub fn tame_candle_spin() {
    if std::env::var_os("CANDLE_BARRIER_POOL_SPIN_LIMIT").is_none() {
        // Called at start-up, before the process has other threads.
        std::env::set_var("CANDLE_BARRIER_POOL_SPIN_LIMIT", "1000");
    }
}

const LOG2E: f32 = std::f32::consts::LOG2_E;
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;

/// `e^x`, Cephes-style: `x = n ln2 + r`, polynomial in `r`, scaled by `2^n`.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    // max/min rather than clamp: clamp's NaN handling blocks vectorisation.
    #[allow(clippy::manual_clamp)]
    let x = x.max(-87.0).min(88.0);
    // Round to nearest via the 1.5 * 2^23 trick (vectorises, unlike f32::round); the
    // integer is read from the sum's mantissa bits, since `as i32` (saturating) does not
    // vectorise.
    let t = x * LOG2E + 12_582_912.0;
    let ni = (t.to_bits() as i32).wrapping_sub(0x4B40_0000);
    let n = t - 12_582_912.0;
    let r = x - n * LN2_HI - n * LN2_LO;
    let r2 = r * r;
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 1.666_666_5e-1)
        * r
        + 0.5;
    let y = p * r2 + r + 1.0;
    y * f32::from_bits((ni.wrapping_add(127) as u32) << 23)
}

/// `erf(x)` for f32: Eigen's rational approximation, exact to ~1e-7 absolute.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    #[allow(clippy::manual_clamp)]
    let x = x.max(-4.0).min(4.0);
    let x2 = x * x;
    let mut p = x2 * -2.726_142_3e-10 + 2.770_681_4e-8;
    p = x2 * p + -2.101_024e-6;
    p = x2 * p + -5.692_506_4e-5;
    p = x2 * p + -7.349_906_3e-4;
    p = x2 * p + -2.954_6e-3;
    p = x2 * p + -1.609_603_3e-2;
    p *= x;
    let mut q = x2 * -1.456_607_2e-5 + -2.133_740_6e-4;
    q = x2 * q + -1.682_827e-3;
    q = x2 * q + -7.373_329_3e-3;
    q = x2 * q + -1.426_474e-2;
    p / q
}

/// Exact (erf) GELU in place: `0.5 x (1 + erf(x / sqrt 2))`, as HF's `"gelu"`.
pub fn gelu_erf_inplace(xs: &mut [f32]) {
    xs.par_chunks_mut(1 << 14).for_each(|c| {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has the features the function is compiled for.
            unsafe { gelu_avx2(c) };
            return;
        }
        gelu_body(c);
    });
}

#[inline(always)]
fn gelu_body(c: &mut [f32]) {
    const S: f32 = std::f32::consts::FRAC_1_SQRT_2;
    for x in c.iter_mut() {
        *x = 0.5 * *x * (1.0 + erf(*x * S));
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn gelu_avx2(c: &mut [f32]) {
    gelu_body(c)
}

/// `gelu_tanh(gate) * up` for a `[n, 2 * inter]` row-major gate|up block (Gemma's
/// MLP), into `[n, inter]`: `gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715
/// x^3)))` (PyTorch's `approximate="tanh"`), `tanh(z) = 1 - 2 / (e^(2z) + 1)` with the
/// vectorised [`exp`]. One pass, no strided copies.
pub fn gelu_tanh_mul(gu: &[f32], inter: usize) -> Vec<f32> {
    let n = gu.len() / (2 * inter).max(1);
    let mut out = vec![0.0f32; n * inter];
    out.par_chunks_mut(inter)
        .zip(gu.par_chunks(2 * inter))
        .for_each(|(o, row)| {
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                // SAFETY: the CPU has the features the function is compiled for.
                unsafe { gelu_tanh_mul_avx2(o, row) };
                return;
            }
            gelu_tanh_mul_body(o, row);
        });
    out
}

#[inline(always)]
fn gelu_tanh_mul_body(o: &mut [f32], row: &[f32]) {
    const C: f32 = 0.797_884_6; // sqrt(2 / pi)
    let (g, u) = row.split_at(o.len());
    for ((o, &x), &u) in o.iter_mut().zip(g).zip(u) {
        let z = C * (x + 0.044_715 * x * x * x);
        let t = 1.0 - 2.0 / (exp(2.0 * z) + 1.0);
        *o = 0.5 * x * (1.0 + t) * u;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn gelu_tanh_mul_avx2(o: &mut [f32], row: &[f32]) {
    gelu_tanh_mul_body(o, row)
}

/// Max of a slice with 8 independent lanes (a serial fold is latency-bound: it was a
/// quarter of the forward pass at 512 tokens).
#[inline(always)]
fn max_lanes(xs: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; 8];
    let chunks = xs.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for k in 0..8 {
            acc[k] = acc[k].max(c[k]);
        }
    }
    let mut m = rest.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    for a in acc {
        m = m.max(a);
    }
    m
}

/// Sum of a slice with 8 independent lanes.
#[inline(always)]
fn sum_lanes(xs: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let chunks = xs.chunks_exact(8);
    let rest: f32 = chunks.remainder().iter().sum();
    for c in chunks {
        for k in 0..8 {
            acc[k] += c[k];
        }
    }
    acc.iter().sum::<f32>() + rest
}

/// Softmax of each row of length `n`, in place.
pub fn softmax_rows_inplace(buf: &mut [f32], n: usize) {
    if n == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features the function is compiled for.
        unsafe { softmax_avx2(buf, n) };
        return;
    }
    softmax_body(buf, n);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn softmax_avx2(buf: &mut [f32], n: usize) {
    softmax_body(buf, n)
}

#[inline(always)]
fn softmax_body(buf: &mut [f32], n: usize) {
    for row in buf.chunks_exact_mut(n) {
        let max = max_lanes(row);
        for v in row.iter_mut() {
            *v = exp(*v - max);
        }
        let inv = 1.0 / sum_lanes(row);
        for v in row.iter_mut() {
            *v *= inv;
        }
    }
}

/// Multi-head self-attention from fused activations.
///
/// `qkv` is `[n, 3 * heads * d]` row-major (Q | K | V, each head's `d` columns
/// contiguous inside its block). Writes the probabilities `[heads, n, n]` into `probs`
/// and the context `[n, heads * d]` into `ctx`. `causal` masks keys after the query.
#[allow(clippy::too_many_arguments)]
pub fn attention(
    qkv: &[f32],
    n: usize,
    heads: usize,
    d: usize,
    scale: f32,
    causal: bool,
    probs: &mut [f32],
    ctx: &mut [f32],
) {
    attention_windowed(qkv, n, heads, d, scale, causal, None, probs, ctx)
}

/// [`attention`] with an optional sliding window: query `i` sees only keys `j` with
/// `i - j < window` (HF's sliding-window mask, `kv_idx > q_idx - window`); masked
/// probabilities are exactly zero.
#[allow(clippy::too_many_arguments)]
pub fn attention_windowed(
    qkv: &[f32],
    n: usize,
    heads: usize,
    d: usize,
    scale: f32,
    causal: bool,
    window: Option<usize>,
    probs: &mut [f32],
    ctx: &mut [f32],
) {
    // Keys before `first(i)` are outside query i's window.
    let first = |i: usize| match window {
        Some(w) if w > 0 => (i + 1).saturating_sub(w),
        _ => 0,
    };
    let hd = heads * d;
    let row = 3 * hd;
    assert_eq!(qkv.len(), n * row);
    assert_eq!(probs.len(), heads * n * n);
    assert_eq!(ctx.len(), n * hd);
    let mut ctx_heads = vec![0.0f32; heads * n * d];
    probs
        .par_chunks_mut(n * n)
        .zip(ctx_heads.par_chunks_mut(n * d))
        .enumerate()
        .for_each(|(h, (p, c))| {
            let q = qkv[h * d..].as_ptr();
            let k = qkv[hd + h * d..].as_ptr();
            let v = qkv[2 * hd + h * d..].as_ptr();
            // SAFETY: every (row, col) the strides address lies inside `qkv`, `p` or `c`
            // (checked by the asserts above: n rows of `row` floats, d columns from the
            // head's offset), and the three buffers do not overlap.
            unsafe {
                // scores[i][j] = scale * sum_k Q[i][k] K[j][k]
                gemm::gemm(
                    n,
                    n,
                    d,
                    p.as_mut_ptr(),
                    1,
                    n as isize,
                    false,
                    q,
                    1,
                    row as isize,
                    k,
                    row as isize,
                    1,
                    0.0,
                    scale,
                    false,
                    false,
                    false,
                    gemm::Parallelism::None,
                );
            }
            if causal {
                for i in 0..n {
                    p[i * n + i + 1..(i + 1) * n].fill(f32::NEG_INFINITY);
                }
            }
            for i in 0..n {
                p[i * n..i * n + first(i)].fill(f32::NEG_INFINITY);
            }
            softmax_rows_inplace(p, n);
            if causal {
                // `exp` clamps its argument at -87, so masked keys come out ~1e-38, not 0:
                // make "zero above the diagonal" exact before the context product.
                for i in 0..n {
                    p[i * n + i + 1..(i + 1) * n].fill(0.0);
                }
            }
            for i in 0..n {
                p[i * n..i * n + first(i)].fill(0.0);
            }
            // SAFETY: as above; `c` is [n][d] contiguous.
            unsafe {
                gemm::gemm(
                    n,
                    d,
                    n,
                    c.as_mut_ptr(),
                    1,
                    d as isize,
                    false,
                    p.as_ptr(),
                    1,
                    n as isize,
                    v,
                    1,
                    row as isize,
                    0.0,
                    1.0,
                    false,
                    false,
                    false,
                    gemm::Parallelism::None,
                );
            }
        });
    for h in 0..heads {
        for i in 0..n {
            ctx[i * hd + h * d..i * hd + (h + 1) * d]
                .copy_from_slice(&ctx_heads[(h * n + i) * d..(h * n + i + 1) * d]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// erf by its Taylor series in f64 (converges on [-4, 4]; error < 1e-9 there).
    fn erf_ref(x: f64) -> f64 {
        let mut term = x;
        let mut sum = x;
        for n in 1..200 {
            term *= -x * x / n as f64;
            sum += term / (2 * n + 1) as f64;
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn exp_is_accurate() {
        let mut worst = 0.0f64;
        let mut x = -87.0f32;
        while x < 88.0 {
            let want = (x as f64).exp();
            let rel = ((exp(x) as f64 - want) / want).abs();
            worst = worst.max(rel);
            x += 0.0137;
        }
        assert!(worst < 3e-7, "worst relative error {worst}");
        assert_eq!(exp(0.0), 1.0);
        assert!(exp(-1e30) < 1e-37 && exp(-f32::INFINITY) < 1e-37);
    }

    #[test]
    fn erf_is_accurate() {
        let mut worst = 0.0f64;
        let mut x = -4.5f32;
        while x < 4.5 {
            let want = if x.abs() >= 4.0 {
                x.signum() as f64 * erf_ref(4.0)
            } else {
                erf_ref(x as f64)
            };
            worst = worst.max((erf(x) as f64 - want).abs());
            x += 0.001;
        }
        assert!(worst < 1e-6, "worst absolute error {worst}");
        assert!((erf(10.0) - 1.0).abs() < 1e-6 && (erf(-10.0) + 1.0).abs() < 1e-6);
    }

    #[test]
    fn gelu_tanh_mul_is_accurate() {
        let inter = 1000;
        let gu: Vec<f32> = (0..2 * inter)
            .map(|i| {
                if i < inter {
                    -12.0 + 24.0 * i as f32 / inter as f32
                } else {
                    0.5 + (i % 7) as f32
                }
            })
            .collect();
        let out = gelu_tanh_mul(&gu, inter);
        let mut worst = 0.0f64;
        for i in 0..inter {
            let x = gu[i] as f64;
            let z = (2.0f64 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
            let want = 0.5 * x * (1.0 + z.tanh()) * gu[inter + i] as f64;
            worst = worst.max((out[i] as f64 - want).abs() / want.abs().max(1.0));
        }
        assert!(worst < 2e-6, "worst error {worst}");
    }

    #[test]
    fn attention_matches_naive() {
        let (n, heads, d) = (7, 3, 4);
        let hd = heads * d;
        let mut rng = crate::model::testutil::SplitMix::new(3);
        let qkv = rng.vec(n * 3 * hd, 1.0);
        for (causal, window) in [(false, None), (true, None), (true, Some(3))] {
            let mut probs = vec![0.0; heads * n * n];
            let mut ctx = vec![0.0; n * hd];
            attention_windowed(&qkv, n, heads, d, 0.5, causal, window, &mut probs, &mut ctx);
            for h in 0..heads {
                for i in 0..n {
                    let s: Vec<f64> = (0..n)
                        .map(|j| {
                            if causal && j > i || window.is_some_and(|w| i >= j + w) {
                                return f64::NEG_INFINITY;
                            }
                            (0..d)
                                .map(|k| {
                                    qkv[i * 3 * hd + h * d + k] as f64
                                        * qkv[j * 3 * hd + hd + h * d + k] as f64
                                })
                                .sum::<f64>()
                                * 0.5
                        })
                        .collect();
                    let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let z: f64 = s.iter().map(|v| (v - m).exp()).sum();
                    for j in 0..n {
                        let want = (s[j] - m).exp() / z;
                        assert!((probs[(h * n + i) * n + j] as f64 - want).abs() < 1e-6);
                    }
                    for k in 0..d {
                        let want: f64 = (0..n)
                            .map(|j| {
                                (s[j] - m).exp() / z * qkv[j * 3 * hd + 2 * hd + h * d + k] as f64
                            })
                            .sum();
                        assert!((ctx[i * hd + h * d + k] as f64 - want).abs() < 1e-5);
                    }
                }
            }
        }
    }
}
