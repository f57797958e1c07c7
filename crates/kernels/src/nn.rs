//! The forward pass's host kernels: the parts of a forward pass that candle's CPU backend
//! runs slowly or that must land directly in capture buffers.
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
//! codescope's `model::kernels` tests compare them against f64 references, and its
//! integration tests the whole forward against HF transformers (`tests/it/minilm_reference.rs`).

use rayon::prelude::*;

use crate::isa::{self, Isa};

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

/// Threads for the `gemm` crate's own parallelism: the current rayon pool's size (so a
/// one-thread pool, as `reproduce`'s workers use, runs its products on one thread).
fn gemm_par() -> gemm::Parallelism {
    match rayon::current_num_threads() {
        0 | 1 => gemm::Parallelism::None,
        t => gemm::Parallelism::Rayon(t),
    }
}

/// A dense layer on host buffers: `out[r] = x[r] · wᵀ + bias (+ residual[r])` for the
/// `rows` rows of `x` (`[rows, inp]`), with `w` as checkpoints store it (`[outp, inp]`,
/// row-major). The bias and residual are written first and the product accumulated onto
/// them by `gemm`, so neither costs a pass of its own. Models that run a layer more than
/// once keep its weights as [`linear_kn`] takes them (same values, faster products).
#[allow(clippy::too_many_arguments)]
pub fn linear(
    x: &[f32],
    rows: usize,
    inp: usize,
    w: &[f32],
    outp: usize,
    bias: Option<&[f32]>,
    residual: Option<&[f32]>,
    out: &mut [f32],
) {
    // `w` read as its transpose [inp][outp]: column stride inp, row stride 1.
    linear_strided(
        x,
        rows,
        inp,
        w,
        (inp as isize, 1),
        outp,
        bias,
        residual,
        out,
    )
}

/// [`linear`] with the weights stored transposed, `w_kn` `[inp, outp]` row-major (what
/// [`transpose_to_kn`] makes of a checkpoint's `[outp, inp]`). The same products as
/// [`linear`] on the checkpoint's layout (the same bits from 64 rows on; `gemm`'s paths for
/// a few rows sum in another order, within rounding), without its cost: `gemm` packs the
/// weights into panels of rows of its output for every product, and from the checkpoint's
/// layout that packing is a gather with a stride of `inp` floats per value (measured at 64
/// rows on an AVX-512 Xeon: 40% of a MiniLM forward; from this layout it is contiguous
/// copies, or none).
#[allow(clippy::too_many_arguments)]
pub fn linear_kn(
    x: &[f32],
    rows: usize,
    inp: usize,
    w_kn: &[f32],
    outp: usize,
    bias: Option<&[f32]>,
    residual: Option<&[f32]>,
    out: &mut [f32],
) {
    linear_strided(
        x,
        rows,
        inp,
        w_kn,
        (1, outp as isize),
        outp,
        bias,
        residual,
        out,
    )
}

/// [`linear_kn`] into a buffer it allocates and returns, without zeroing it first: the
/// bias and residual are written into it directly (or, with neither, the product writes
/// every entry). The same bits as [`linear_kn`] into a zeroed buffer, one pass over the
/// output fewer (the zeroing showed as `memset` in profiles of the MiniLM forward).
pub fn linear_kn_new(
    x: &[f32],
    rows: usize,
    inp: usize,
    w_kn: &[f32],
    outp: usize,
    bias: Option<&[f32]>,
    residual: Option<&[f32]>,
) -> Vec<f32> {
    let len = rows * outp;
    let mut out: Vec<f32> = Vec::with_capacity(len);
    match (bias, residual) {
        (Some(b), Some(res)) => {
            assert_eq!(res.len(), len);
            for r in res.chunks_exact(outp.max(1)) {
                out.extend(r.iter().zip(b).map(|(&x, &b)| x + b));
            }
        }
        (Some(b), None) => (0..rows).for_each(|_| out.extend_from_slice(&b[..outp])),
        (None, Some(res)) => out.extend_from_slice(&res[..len]),
        (None, None) => {}
    }
    let read_dst = bias.is_some() || residual.is_some();
    if !read_dst {
        // SAFETY: `gemm` with `read_dst` false writes every entry of the `rows x outp`
        // destination before anything reads it (checked below by length: `rows` and
        // `outp` nonzero; with either zero the buffer stays empty of entries).
        if rows == 0 || outp == 0 {
            out.resize(len, 0.0);
            return out;
        }
        unsafe { out.set_len(len) };
    }
    assert_eq!(out.len(), len);
    product_kn(x, rows, inp, w_kn, outp, read_dst, &mut out);
    out
}

/// `out (+)= x · w_kn` by `gemm`, `out` `[rows][outp]`, `w_kn` `[inp][outp]`.
fn product_kn(
    x: &[f32],
    rows: usize,
    inp: usize,
    w_kn: &[f32],
    outp: usize,
    read_dst: bool,
    out: &mut [f32],
) {
    product(x, rows, inp, w_kn, (1, outp as isize), outp, read_dst, out)
}

/// `w` `[outp, inp]` row-major, transposed to `[inp, outp]` (for [`linear_kn`]), in
/// cache-sized tiles.
pub fn transpose_to_kn(w: &[f32], outp: usize, inp: usize) -> Vec<f32> {
    assert_eq!(w.len(), outp * inp);
    let mut t = vec![0.0f32; w.len()];
    const TILE: usize = 32;
    for j0 in (0..outp).step_by(TILE) {
        for k0 in (0..inp).step_by(TILE) {
            for j in j0..(j0 + TILE).min(outp) {
                for k in k0..(k0 + TILE).min(inp) {
                    t[k * outp + j] = w[j * inp + k];
                }
            }
        }
    }
    t
}

/// [`linear`] and [`linear_kn`]: the weights as the `[inp][outp]` matrix `gemm` reads
/// with the column and row strides `(cs, rs)`.
#[allow(clippy::too_many_arguments)]
fn linear_strided(
    x: &[f32],
    rows: usize,
    inp: usize,
    w: &[f32],
    (w_cs, w_rs): (isize, isize),
    outp: usize,
    bias: Option<&[f32]>,
    residual: Option<&[f32]>,
    out: &mut [f32],
) {
    assert_eq!(x.len(), rows * inp);
    assert_eq!(w.len(), outp * inp);
    assert_eq!(out.len(), rows * outp);
    let mut read_dst = false;
    if bias.is_some() || residual.is_some() {
        for (r, o) in out.chunks_exact_mut(outp.max(1)).enumerate() {
            match (bias, residual) {
                (Some(b), Some(res)) => {
                    for ((o, &b), &x) in o.iter_mut().zip(b).zip(&res[r * outp..]) {
                        *o = x + b;
                    }
                }
                (Some(b), None) => o.copy_from_slice(b),
                (None, Some(res)) => o.copy_from_slice(&res[r * outp..(r + 1) * outp]),
                (None, None) => {}
            }
        }
        read_dst = true;
    }
    product(x, rows, inp, w, (w_cs, w_rs), outp, read_dst, out)
}

/// The product of [`linear_strided`]: `out (+)= x · w` (`read_dst`: accumulate onto what
/// `out` holds).
#[allow(clippy::too_many_arguments)]
fn product(
    x: &[f32],
    rows: usize,
    inp: usize,
    w: &[f32],
    (w_cs, w_rs): (isize, isize),
    outp: usize,
    read_dst: bool,
    out: &mut [f32],
) {
    assert_eq!(x.len(), rows * inp);
    assert_eq!(w.len(), outp * inp);
    assert_eq!(out.len(), rows * outp);
    if rows == 0 || outp == 0 {
        return;
    }
    // SAFETY: `out` is [rows][outp] row-major, `x` [rows][inp], and `w` an [inp][outp]
    // matrix whose strides address exactly its `inp * outp` values (both callers' layouts,
    // length asserted above); `out` does not alias the inputs.
    unsafe {
        gemm::gemm(
            rows,
            outp,
            inp,
            out.as_mut_ptr(),
            1,
            outp as isize,
            read_dst,
            x.as_ptr(),
            1,
            inp as isize,
            w.as_ptr(),
            w_cs,
            w_rs,
            1.0,
            1.0,
            false,
            false,
            false,
            gemm_par(),
        );
    }
}

/// LayerNorm of each `dim`-wide row in place: `(x - mean) / sqrt(var + eps) * w + b`,
/// mean and (biased) variance in two passes over the level's f32 lanes (8, or 16 with
/// AVX-512).
pub fn layer_norm_inplace(xs: &mut [f32], dim: usize, w: &[f32], b: &[f32], eps: f32) {
    let isa = isa::active();
    xs.par_chunks_mut(dim.max(1) * 16)
        .for_each(|rows| layer_norm_rows(isa, rows, dim, w, b, eps));
}

crate::simd_kernel! {
    /// [`layer_norm_inplace`] of whole rows, on one thread, at level `isa`.
    pub fn layer_norm_rows(rows: &mut [f32], dim: usize, w: &[f32], b: &[f32], eps: f32) = layer_norm_body, lanes;
}

#[inline(always)]
fn layer_norm_body<const L: usize>(rows: &mut [f32], dim: usize, w: &[f32], b: &[f32], eps: f32) {
    for row in rows.chunks_exact_mut(dim.max(1)) {
        let mean = sum_lanes::<L>(row) / dim as f32;
        let mut acc = [0.0f32; L];
        let chunks = row.chunks_exact(L);
        let mut var: f32 = chunks
            .remainder()
            .iter()
            .map(|&v| (v - mean) * (v - mean))
            .sum();
        for c in chunks {
            for k in 0..L {
                let d = c[k] - mean;
                acc[k] += d * d;
            }
        }
        var += acc.iter().sum::<f32>();
        let inv = 1.0 / (var / dim as f32 + eps).sqrt();
        for ((v, &w), &b) in row.iter_mut().zip(w).zip(b) {
            *v = (*v - mean) * inv * w + b;
        }
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
    par_inplace(xs, gelu_erf_chunk);
}

/// Apply an elementwise kernel to `xs` in parallel chunks of 16k values, at the
/// process's level ([`isa::active`]).
fn par_inplace(xs: &mut [f32], kernel: fn(Isa, &mut [f32])) {
    let isa = isa::active();
    xs.par_chunks_mut(1 << 14).for_each(|c| kernel(isa, c));
}

crate::simd_kernel! {
    /// [`gelu_erf_inplace`] on one thread, at level `isa`.
    pub fn gelu_erf_chunk(c: &mut [f32]) = gelu_body;
}

#[inline(always)]
fn gelu_body(c: &mut [f32]) {
    const S: f32 = std::f32::consts::FRAC_1_SQRT_2;
    for x in c.iter_mut() {
        *x = 0.5 * *x * (1.0 + erf(*x * S));
    }
}

/// Tanh-approximated GELU in place (HF's `gelu_new` / `gelu_pytorch_tanh`):
/// `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, with the vectorised [`exp`].
pub fn gelu_tanh_inplace(xs: &mut [f32]) {
    par_inplace(xs, gelu_tanh_chunk);
}

crate::simd_kernel! {
    /// [`gelu_tanh_inplace`] on one thread, at level `isa`.
    pub fn gelu_tanh_chunk(c: &mut [f32]) = gelu_tanh_body;
}

/// `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))` with `tanh(z) = 1 - 2 / (e^(2z) +
/// 1)` and the vectorised [`exp`].
#[inline(always)]
fn gelu_tanh(x: f32) -> f32 {
    const C: f32 = 0.797_884_6; // sqrt(2 / pi)
    let z = C * (x + 0.044_715 * x * x * x);
    let t = 1.0 - 2.0 / (exp(2.0 * z) + 1.0);
    0.5 * x * (1.0 + t)
}

#[inline(always)]
fn gelu_tanh_body(c: &mut [f32]) {
    for x in c.iter_mut() {
        *x = gelu_tanh(*x);
    }
}

/// `gelu_tanh(gate) * up` for a `[n, 2 * inter]` row-major gate|up block (Gemma's
/// MLP), into `[n, inter]`: `gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715
/// x^3)))` (PyTorch's `approximate="tanh"`), `tanh(z) = 1 - 2 / (e^(2z) + 1)` with the
/// vectorised [`exp`]. One pass, no strided copies.
pub fn gelu_tanh_mul(gu: &[f32], inter: usize) -> Vec<f32> {
    let n = gu.len() / (2 * inter).max(1);
    let mut out = vec![0.0f32; n * inter];
    let isa = isa::active();
    out.par_chunks_mut(inter)
        .zip(gu.par_chunks(2 * inter))
        .for_each(|(o, row)| gelu_tanh_mul_row(isa, o, row));
    out
}

crate::simd_kernel! {
    /// One row of [`gelu_tanh_mul`] (`o` the output row, `row` its gate|up row), at
    /// level `isa`.
    pub fn gelu_tanh_mul_row(o: &mut [f32], row: &[f32]) = gelu_tanh_mul_body;
}

#[inline(always)]
fn gelu_tanh_mul_body(o: &mut [f32], row: &[f32]) {
    let (g, u) = row.split_at(o.len());
    for ((o, &x), &u) in o.iter_mut().zip(g).zip(u) {
        *o = gelu_tanh(x) * u;
    }
}

/// Max of a slice with `L` independent lanes (a serial fold is latency-bound: it was a
/// quarter of the forward pass at 512 tokens).
#[inline(always)]
pub(crate) fn max_lanes<const L: usize>(xs: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; L];
    let chunks = xs.chunks_exact(L);
    let rest = chunks.remainder();
    for c in chunks {
        for k in 0..L {
            acc[k] = acc[k].max(c[k]);
        }
    }
    let mut m = rest.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    for a in acc {
        m = m.max(a);
    }
    m
}

/// Sum of a slice with `L` independent lanes.
#[inline(always)]
fn sum_lanes<const L: usize>(xs: &[f32]) -> f32 {
    let mut acc = [0.0f32; L];
    let chunks = xs.chunks_exact(L);
    let rest: f32 = chunks.remainder().iter().sum();
    for c in chunks {
        for k in 0..L {
            acc[k] += c[k];
        }
    }
    acc.iter().sum::<f32>() + rest
}

/// Softmax of each row of length `n`, in place, at the process's level.
pub fn softmax_rows_inplace(buf: &mut [f32], n: usize) {
    softmax_rows(isa::active(), buf, n)
}

crate::simd_kernel! {
    /// [`softmax_rows_inplace`] at level `isa`.
    pub fn softmax_rows(buf: &mut [f32], n: usize) = softmax_body, lanes;
}

#[inline(always)]
fn softmax_body<const L: usize>(buf: &mut [f32], n: usize) {
    if n == 0 {
        return;
    }
    for row in buf.chunks_exact_mut(n) {
        let max = max_lanes::<L>(row);
        for v in row.iter_mut() {
            *v = exp(*v - max);
        }
        let inv = 1.0 / sum_lanes::<L>(row);
        for v in row.iter_mut() {
            *v *= inv;
        }
    }
}

/// Multi-head self-attention from fused activations, with an optional sliding window.
///
/// `qkv` is `[n, 3 * heads * d]` row-major (Q | K | V, each head's `d` columns
/// contiguous inside its block). Writes the probabilities `[heads, n, n]` into `probs`
/// and the context `[n, heads * d]` into `ctx`. `causal` masks keys after the query;
/// with a window, query `i` sees only keys `j` with
/// `i - j < window` (HF's sliding-window mask, `kv_idx > q_idx - window`); masked
/// probabilities are exactly zero.
///
/// Causal and windowed attention run in blocks of query rows, each computing scores only
/// for the keys some row of the block can see: a causal layer does about half of the full
/// `n x n` work, a sliding-window layer `n x (window + block)` (Gemma 3 at 8k tokens: 15 of
/// its 18 layers shrink from 8,117 to at most 575 keys per row). Every entry of `probs` is
/// written, masked ones as 0.
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
    let rows = block_rows(n, causal, window);
    attention_blocked(qkv, n, heads, d, scale, causal, window, rows, probs, ctx)
}

/// Query rows per block: bidirectional attention sees every key from every row (one
/// block, one product); masked attention runs in [`ROW_BLOCK`]s.
fn block_rows(n: usize, causal: bool, window: Option<usize>) -> usize {
    if causal || window.is_some() {
        ROW_BLOCK
    } else {
        n
    }
}

/// Query rows per block in masked attention: large enough for `gemm` to run at speed,
/// small enough that the keys a block needs stay close to what its rows see.
pub const ROW_BLOCK: usize = 64;

/// [`attention_windowed`] into a `[heads, n, n]` buffer it allocates and returns. Every
/// entry is written by the kernel, so the buffer is not zeroed first: at 512 tokens that
/// zeroing was a serial 12 MiB pass per layer while the rest of the layer ran on every
/// thread.
#[allow(clippy::too_many_arguments)]
pub fn attention_probs(
    qkv: &[f32],
    n: usize,
    heads: usize,
    d: usize,
    scale: f32,
    causal: bool,
    window: Option<usize>,
    ctx: &mut [f32],
) -> Vec<f32> {
    probs_into_new(qkv, n, heads, d, scale, causal, window, None, None, ctx)
}

/// [`attention_probs`] with the scores soft-capped (`softcap`: Gemma 2's
/// `attn_logit_softcapping`, each score `s` becoming `tanh(s / c) * c` after the scaling
/// and before the mask and the softmax) and the keys of `knock` knocked out (see
/// [`KeyBlock`]). With neither it computes exactly what [`attention_probs`] does.
#[allow(clippy::too_many_arguments)]
pub fn attention_probs_capped(
    qkv: &[f32],
    n: usize,
    heads: usize,
    d: usize,
    scale: f32,
    causal: bool,
    window: Option<usize>,
    softcap: Option<f32>,
    knock: Option<&KeyBlock>,
    ctx: &mut [f32],
) -> Vec<f32> {
    if let Some(b) = knock {
        assert_eq!(b.heads.len(), heads);
        assert_eq!(b.rows.len(), n);
    }
    probs_into_new(qkv, n, heads, d, scale, causal, window, softcap, knock, ctx)
}

/// The buffer of [`attention_probs`], [`attention_probs_blocked`] and
/// [`attention_probs_capped`], every entry written by [`attention_core`].
#[allow(clippy::too_many_arguments)]
fn probs_into_new(
    qkv: &[f32],
    n: usize,
    heads: usize,
    d: usize,
    scale: f32,
    causal: bool,
    window: Option<usize>,
    softcap: Option<f32>,
    knock: Option<&KeyBlock>,
    ctx: &mut [f32],
) -> Vec<f32> {
    let len = heads * n * n;
    let mut probs: Vec<f32> = Vec::with_capacity(len);
    let rows = block_rows(n, causal, window);
    attention_core(
        qkv,
        n,
        heads,
        d,
        scale,
        causal,
        window,
        rows,
        softcap,
        knock,
        &mut probs.spare_capacity_mut()[..len],
        ctx,
    );
    // SAFETY: `attention_core` wrote every one of the `len` entries.
    unsafe { probs.set_len(len) };
    probs
}

/// Keys a query may not see, for an attention knockout: in the heads `heads[h]` marks,
/// query row `i` gets a score of minus infinity for every key of `rows[i]` (sorted or
/// not, duplicates allowed) before the softmax, so the softmax renormalises the rest of
/// the row by itself, and those probabilities are exactly 0 afterwards. A row's own
/// position is never blocked (a row with no key left would have no softmax), nor are
/// keys the causal mask or the window already hide.
#[derive(Debug, Clone, Copy)]
pub struct KeyBlock<'a> {
    pub heads: &'a [bool],
    pub rows: &'a [Vec<u32>],
}

/// [`attention_probs`] with the keys of `block` knocked out (see [`KeyBlock`]). With a
/// block that marks no head or lists no key it computes exactly what
/// [`attention_probs`] does.
#[allow(clippy::too_many_arguments)]
pub fn attention_probs_blocked(
    qkv: &[f32],
    n: usize,
    heads: usize,
    d: usize,
    scale: f32,
    causal: bool,
    window: Option<usize>,
    block: &KeyBlock,
    ctx: &mut [f32],
) -> Vec<f32> {
    attention_probs_capped(
        qkv,
        n,
        heads,
        d,
        scale,
        causal,
        window,
        None,
        Some(block),
        ctx,
    )
}

/// [`attention_windowed`] with the block size as a parameter (tests use tiny blocks).
#[allow(clippy::too_many_arguments)]
pub fn attention_blocked(
    qkv: &[f32],
    n: usize,
    heads: usize,
    d: usize,
    scale: f32,
    causal: bool,
    window: Option<usize>,
    rows_per_block: usize,
    probs: &mut [f32],
    ctx: &mut [f32],
) {
    // SAFETY: same layout; `attention_core` only writes valid f32 values through it.
    let probs = unsafe { &mut *(probs as *mut [f32] as *mut [std::mem::MaybeUninit<f32>]) };
    attention_core(
        qkv,
        n,
        heads,
        d,
        scale,
        causal,
        window,
        rows_per_block,
        None,
        None,
        probs,
        ctx,
    )
}

/// The attention kernel, writing every entry of `probs` (which may start uninitialised).
#[allow(clippy::too_many_arguments)]
fn attention_core(
    qkv: &[f32],
    n: usize,
    heads: usize,
    d: usize,
    scale: f32,
    causal: bool,
    window: Option<usize>,
    rows_per_block: usize,
    softcap: Option<f32>,
    knock: Option<&KeyBlock>,
    probs: &mut [std::mem::MaybeUninit<f32>],
    ctx: &mut [f32],
) {
    // Query i sees keys first(i)..end(i); both are non-decreasing in i.
    let first = |i: usize| match window {
        Some(w) if w > 0 => (i + 1).saturating_sub(w),
        _ => 0,
    };
    let end = |i: usize| if causal { i + 1 } else { n };
    let hd = heads * d;
    let row = 3 * hd;
    assert_eq!(qkv.len(), n * row);
    assert_eq!(probs.len(), heads * n * n);
    assert_eq!(ctx.len(), n * hd);
    let block = rows_per_block.max(1);
    // Each head writes its own `d` columns of `ctx` (row stride `hd`) straight from the
    // product: disjoint addresses, so the heads can run in parallel without a copy.
    let ctx_out = SharedMut(ctx.as_mut_ptr());
    let isa = isa::active();
    probs.par_chunks_mut(n * n).enumerate().for_each(|(h, p)| {
        // Head h's n x n block, written through this pointer only.
        let p = p.as_mut_ptr() as *mut f32;
        let q = qkv[h * d..].as_ptr();
        let k = qkv[hd + h * d..].as_ptr();
        let v = qkv[2 * hd + h * d..].as_ptr();
        for r0 in (0..n).step_by(block) {
            let r1 = (r0 + block).min(n);
            // The keys any row of the block sees.
            let (lo, hi) = (first(r0), end(r1 - 1));
            // SAFETY: every (row, col) the strides address lies inside `qkv` or `p`:
            // query rows r0..r1 and key rows lo..hi < n of `row` floats, d columns from
            // the head's offset; score rows r0..r1, columns lo..hi of the n x n block
            // (sizes asserted above); the buffers do not overlap.
            unsafe {
                // scores[i][j] = scale * sum_k Q[i][k] K[j][k]
                gemm::gemm(
                    r1 - r0,
                    hi - lo,
                    d,
                    p.add(r0 * n + lo),
                    1,
                    n as isize,
                    false,
                    q.add(r0 * row),
                    1,
                    row as isize,
                    k.add(lo * row),
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
            for i in r0..r1 {
                let (a, b) = (first(i), end(i));
                // SAFETY: the product wrote columns lo..hi of row i (`gemm` does not read
                // its destination when told not to); the columns outside are zeroed here
                // (0.0 is all-zero bits) before the row is used as a slice, and nothing
                // else accesses the row meanwhile.
                let line = unsafe {
                    std::ptr::write_bytes(p.add(i * n), 0, lo);
                    std::ptr::write_bytes(p.add(i * n + hi), 0, n - hi);
                    std::slice::from_raw_parts_mut(p.add(i * n), n)
                };
                if let Some(c) = softcap {
                    for v in &mut line[a..b] {
                        *v = (*v / c).tanh() * c;
                    }
                }
                let knocked = knock.filter(|k| k.heads[h]).map(|k| k.rows[i].as_slice());
                let seen = |j: usize| j != i && (a..b).contains(&j);
                if let Some(keys) = knocked {
                    for j in keys.iter().map(|&j| j as usize).filter(|&j| seen(j)) {
                        line[j] = f32::NEG_INFINITY;
                    }
                }
                softmax_rows(isa, &mut line[a..b], b - a);
                // exp(-inf) is clamped to a tiny positive number (and the row's own key
                // gives a sum >= 1, which it cannot change): blocked keys end exactly 0.
                if let Some(keys) = knocked {
                    for j in keys.iter().map(|&j| j as usize).filter(|&j| seen(j)) {
                        line[j] = 0.0;
                    }
                }
                // Masked keys are exactly zero (also those the block's product wrote).
                line[lo..a].fill(0.0);
                line[b..hi].fill(0.0);
            }
            // SAFETY: as above; head h's block of `ctx` is rows r0..r1, columns
            // h*d..(h+1)*d of the [n][hd] buffer (asserted size), written by this head
            // and this block only.
            unsafe {
                gemm::gemm(
                    r1 - r0,
                    d,
                    hi - lo,
                    ctx_out.get().add(r0 * hd + h * d),
                    1,
                    hd as isize,
                    false,
                    p.add(r0 * n + lo),
                    1,
                    n as isize,
                    v.add(lo * row),
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
        }
    });
}

/// A pointer parallel tasks write through, each to its own disjoint part.
struct SharedMut(*mut f32);
// SAFETY: only used where every task writes a disjoint region (see the call sites).
unsafe impl Send for SharedMut {}
unsafe impl Sync for SharedMut {}
impl SharedMut {
    fn get(&self) -> *mut f32 {
        self.0
    }
}

/// The measured single-core FP32 FMA throughput of this machine at the process's level
/// ([`isa::active`]), GFLOP/s (an FMA counts as 2 FLOPs): the ceiling the forward pass's
/// achieved GFLOP/s is compared with in the benchmarks. See [`fma_peak_gflops_at`].
pub fn fma_peak_gflops(millis: u64) -> Option<f64> {
    fma_peak_gflops_at(isa::active(), millis)
}

/// The single-core FP32 FMA throughput at level `isa` (capped at the CPU's own), GFLOP/s:
/// twelve independent FMA chains of one vector register each (8 lanes with AVX2, 16 with
/// AVX-512; more chains than the FMA latency times the number of FMA pipes, so they never
/// wait on each other) for about `millis` ms, best of five tries (a busy machine can only
/// make a try slower). `None` at the portable level (no FMA instructions).
pub fn fma_peak_gflops_at(isa: Isa, millis: u64) -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        let isa = isa.min(isa::detected_cached());
        let chains: unsafe fn(u64) -> f32 = match isa {
            Isa::Amx | Isa::Avx512 => fma_chains_avx512,
            Isa::Avx2 => fma_chains_avx2,
            Isa::Portable => return None,
        };
        let per_try = std::time::Duration::from_millis(millis.max(5) / 5);
        let mut best = 0.0f64;
        for _ in 0..5 {
            let start = std::time::Instant::now();
            let mut flops = 0u64;
            let mut sink = 0.0f32;
            while start.elapsed() < per_try {
                const ITERS: u64 = 100_000;
                // SAFETY: capped at the CPU's own level: it has the features.
                sink += unsafe { chains(ITERS) };
                flops += ITERS * 12 * isa.lanes() as u64 * 2;
            }
            std::hint::black_box(sink);
            best = best.max(flops as f64 / start.elapsed().as_secs_f64() / 1e9);
        }
        Some(best)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (isa, millis);
        None
    }
}

/// `iters` rounds of 12 independent 8-lane FMAs; returns a value that depends on all of
/// them (so none is optimised away).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fma_chains_avx2(iters: u64) -> f32 {
    use std::arch::x86_64::*;
    let a = _mm256_set1_ps(0.999_999);
    let b = _mm256_set1_ps(1e-7);
    let mut acc = [_mm256_set1_ps(1.0); 12];
    for _ in 0..iters {
        // Unrolled by hand: 12 chains keep both FMA pipes busy (latency 4 x 2 pipes = 8).
        acc[0] = _mm256_fmadd_ps(acc[0], a, b);
        acc[1] = _mm256_fmadd_ps(acc[1], a, b);
        acc[2] = _mm256_fmadd_ps(acc[2], a, b);
        acc[3] = _mm256_fmadd_ps(acc[3], a, b);
        acc[4] = _mm256_fmadd_ps(acc[4], a, b);
        acc[5] = _mm256_fmadd_ps(acc[5], a, b);
        acc[6] = _mm256_fmadd_ps(acc[6], a, b);
        acc[7] = _mm256_fmadd_ps(acc[7], a, b);
        acc[8] = _mm256_fmadd_ps(acc[8], a, b);
        acc[9] = _mm256_fmadd_ps(acc[9], a, b);
        acc[10] = _mm256_fmadd_ps(acc[10], a, b);
        acc[11] = _mm256_fmadd_ps(acc[11], a, b);
    }
    let mut s = _mm256_setzero_ps();
    for v in acc {
        s = _mm256_add_ps(s, v);
    }
    let mut out = [0.0f32; 8];
    _mm256_storeu_ps(out.as_mut_ptr(), s);
    out.iter().sum()
}

/// [`fma_chains_avx2`] on 16-lane AVX-512 registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn fma_chains_avx512(iters: u64) -> f32 {
    use std::arch::x86_64::*;
    let a = _mm512_set1_ps(0.999_999);
    let b = _mm512_set1_ps(1e-7);
    let mut acc = [_mm512_set1_ps(1.0); 12];
    for _ in 0..iters {
        acc[0] = _mm512_fmadd_ps(acc[0], a, b);
        acc[1] = _mm512_fmadd_ps(acc[1], a, b);
        acc[2] = _mm512_fmadd_ps(acc[2], a, b);
        acc[3] = _mm512_fmadd_ps(acc[3], a, b);
        acc[4] = _mm512_fmadd_ps(acc[4], a, b);
        acc[5] = _mm512_fmadd_ps(acc[5], a, b);
        acc[6] = _mm512_fmadd_ps(acc[6], a, b);
        acc[7] = _mm512_fmadd_ps(acc[7], a, b);
        acc[8] = _mm512_fmadd_ps(acc[8], a, b);
        acc[9] = _mm512_fmadd_ps(acc[9], a, b);
        acc[10] = _mm512_fmadd_ps(acc[10], a, b);
        acc[11] = _mm512_fmadd_ps(acc[11], a, b);
    }
    let mut s = _mm512_setzero_ps();
    for v in acc {
        s = _mm512_add_ps(s, v);
    }
    _mm512_reduce_add_ps(s)
}
