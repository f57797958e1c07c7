//! T5's kernels: its RMS-style norm, and bidirectional self-attention with an additive
//! bias that depends only on the key's offset from the query (T5's relative position
//! buckets), straight into the capture buffer like [`crate::nn::attention_probs`].
//!
//! The bias of one head is a Toeplitz matrix: entry `(i, j)` is `rel[n - 1 + j - i]`, so
//! a head's `2n - 1` values describe all of its `n x n` entries and row `i` is the
//! contiguous slice `rel[n - 1 - i..2n - 1 - i]`. Each head copies its rows into its
//! block of the probabilities and the score product is accumulated onto them by `gemm`
//! (`read_dst`), so adding the bias costs one row copy per query, not a pass of its own.

use rayon::prelude::*;

use crate::isa;
use crate::nn::softmax_rows;

/// `T5LayerNorm` of each `dim`-wide row of `x` into `out`: `w * x / sqrt(mean(x²) + eps)`
/// (no mean subtraction, no bias), the mean of squares over eight f32 lanes.
pub fn t5_rms_norm(x: &[f32], dim: usize, w: &[f32], eps: f32, out: &mut [f32]) {
    assert_eq!(x.len(), out.len());
    assert_eq!(w.len(), dim);
    let dim = dim.max(1);
    let isa = isa::active();
    out.par_chunks_mut(dim * 16)
        .zip(x.par_chunks(dim * 16))
        .for_each(|(o, x)| t5_rms_rows(isa, x, dim, w, eps, o));
}

crate::simd_kernel! {
    /// [`t5_rms_norm`] of whole rows on one thread, at level `isa` (8 lanes, or 16 with
    /// AVX-512).
    pub fn t5_rms_rows(x: &[f32], dim: usize, w: &[f32], eps: f32, out: &mut [f32]) = rms_body, lanes;
}

#[inline(always)]
fn rms_body<const L: usize>(x: &[f32], dim: usize, w: &[f32], eps: f32, out: &mut [f32]) {
    for (row, o) in x.chunks_exact(dim).zip(out.chunks_exact_mut(dim)) {
        let mut acc = [0.0f32; L];
        let chunks = row.chunks_exact(L);
        let mut ss: f32 = chunks.remainder().iter().map(|v| v * v).sum();
        for c in chunks {
            for k in 0..L {
                acc[k] += c[k] * c[k];
            }
        }
        ss += acc.iter().sum::<f32>();
        let inv = 1.0 / (ss / dim as f32 + eps).sqrt();
        for ((o, &v), &w) in o.iter_mut().zip(row).zip(w) {
            *o = w * (v * inv);
        }
    }
}

/// A pointer parallel tasks write through, each to its own disjoint part.
struct SharedMut(*mut f32);
// SAFETY: only used where every task writes a disjoint region (see the call site).
unsafe impl Send for SharedMut {}
unsafe impl Sync for SharedMut {}
impl SharedMut {
    fn get(&self) -> *mut f32 {
        self.0
    }
}

/// Multi-head bidirectional attention `softmax(scale * Q Kᵀ + B)` from fused activations.
///
/// `qkv` is `[n, 3 * heads * d]` row-major (Q | K | V, each head's `d` columns contiguous
/// inside its block, as for [`crate::nn::attention_probs`]); `rel` is `[heads, 2n - 1]`,
/// the bias of head `h` for key `j` and query `i` being `rel[h * (2n - 1) + n - 1 + j - i]`.
/// Returns the probabilities `[heads, n, n]` and writes the context `[n, heads * d]` into
/// `ctx`. Every entry of the returned buffer is written (it is not zeroed first).
#[allow(clippy::too_many_arguments)]
pub fn attention_probs_rel_bias(
    qkv: &[f32],
    n: usize,
    heads: usize,
    d: usize,
    scale: f32,
    rel: &[f32],
    ctx: &mut [f32],
) -> Vec<f32> {
    let hd = heads * d;
    let row = 3 * hd;
    let span = (2 * n).saturating_sub(1);
    assert_eq!(qkv.len(), n * row);
    assert_eq!(rel.len(), heads * span);
    assert_eq!(ctx.len(), n * hd);
    let len = heads * n * n;
    let mut probs: Vec<f32> = Vec::with_capacity(len);
    if n == 0 {
        return probs;
    }
    let ctx_out = SharedMut(ctx.as_mut_ptr());
    let isa = isa::active();
    probs.spare_capacity_mut()[..len]
        .par_chunks_mut(n * n)
        .enumerate()
        .for_each(|(h, p)| {
            let p = p.as_mut_ptr() as *mut f32;
            let bias = &rel[h * span..(h + 1) * span];
            let q = qkv[h * d..].as_ptr();
            let k = qkv[hd + h * d..].as_ptr();
            let v = qkv[2 * hd + h * d..].as_ptr();
            for i in 0..n {
                let src = &bias[n - 1 - i..2 * n - 1 - i];
                // SAFETY: row i of head h's n x n block lies inside `p` (n * n entries);
                // `src` has n values and does not overlap it.
                unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), p.add(i * n), n) };
            }
            // SAFETY: every (row, col) the strides address lies inside `qkv` or `p`: query
            // and key rows < n of `row` floats, d columns from the head's offset; the
            // n x n destination was fully written above and is read (`read_dst`) and
            // written only here; the buffers do not overlap.
            unsafe {
                // scores[i][j] = bias[i][j] + scale * sum_k Q[i][k] K[j][k]
                gemm::gemm(
                    n,
                    n,
                    d,
                    p,
                    1,
                    n as isize,
                    true,
                    q,
                    1,
                    row as isize,
                    k,
                    row as isize,
                    1,
                    1.0,
                    scale,
                    false,
                    false,
                    false,
                    gemm::Parallelism::None,
                );
            }
            // SAFETY: the block's n * n entries are initialised (copy, then product).
            let block = unsafe { std::slice::from_raw_parts_mut(p, n * n) };
            softmax_rows(isa, block, n);
            // SAFETY: head h's part of `ctx` is columns h*d..(h+1)*d of the [n][hd]
            // buffer (asserted size), written by this head only; V rows < n of `row`
            // floats from the head's offset.
            unsafe {
                gemm::gemm(
                    n,
                    d,
                    n,
                    ctx_out.get().add(h * d),
                    1,
                    hd as isize,
                    false,
                    p,
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
    // SAFETY: every one of the `len` entries was written above.
    unsafe { probs.set_len(len) };
    probs
}
