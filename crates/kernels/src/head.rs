//! An LM head's matrix product from f32 weights packed once, for AVX-512 and AVX2.
//!
//! A general matrix product (`gemm`) re-packs its right-hand operand at every call: for
//! Gemma 3's head (262,144 words by 640) that is 671 MB read and written again for every
//! block of logits, and a quantized head is dequantized again before it. An LM head is
//! applied many times with the same weights (a logit lens applies it once per layer, an
//! ablation grid once per head), so here the weights are packed once into the order the
//! product reads them: groups of [`GROUP`] words, each group `[k][GROUP]`, zero past the
//! last word. A product then streams each group (164 KB for Gemma 3, held in L2) against
//! blocks of six input rows, with every accumulator in a register.
//!
//! Each logit is an f32 sum of `k` f32 products in the order `i = 0..k` (one fused
//! multiply-add per term), as a plain dot product computes it; codescope's tests bound it
//! against an f64 product.

use crate::isa::Isa;

/// Words per group: four AVX-512 registers (eight AVX2 ones) of f32.
pub const GROUP: usize = 64;
/// Input rows per block: 6 x 4 accumulators + 4 weights + 1 broadcast of the 32 AVX-512
/// registers (6 x 2 + 2 + 1 of AVX2's 16, one panel of 16 words at a time).
const ROWS: usize = 6;

/// An LM head `[words, k]` packed for [`PackedF32Head::logits`].
pub struct PackedF32Head {
    words: usize,
    k: usize,
    /// `[words.div_ceil(GROUP)][k][GROUP]`, zero past `words`.
    data: Vec<f32>,
}

impl PackedF32Head {
    /// The bytes a head of `words` x `k` takes packed.
    pub fn bytes_for(words: usize, k: usize) -> usize {
        words.div_ceil(GROUP) * GROUP * k * 4
    }

    /// A head of `words` x `k`, all zero, to be filled by [`PackedF32Head::fill_rows`].
    pub fn zeroed(words: usize, k: usize) -> PackedF32Head {
        PackedF32Head {
            words,
            k,
            data: vec![0.0; words.div_ceil(GROUP) * GROUP * k],
        }
    }

    /// Pack the row-major `[words, k]` matrix `w`.
    pub fn pack(w: &[f32], words: usize, k: usize) -> PackedF32Head {
        let mut p = PackedF32Head::zeroed(words, k);
        p.fill_rows(0, w);
        p
    }

    /// Set words `first..` from the row-major rows `rows` (`[r, k]`, `first + r <= words`).
    pub fn fill_rows(&mut self, first: usize, rows: &[f32]) {
        use rayon::prelude::*;
        let k = self.k;
        if k == 0 {
            return;
        }
        assert_eq!(rows.len() % k, 0, "whole rows");
        let r = rows.len() / k;
        assert!(first + r <= self.words, "rows past the head's words");
        let stride = k * GROUP;
        // Whole groups in parallel: a group's words are written by one thread.
        let g0 = first / GROUP;
        let g1 = (first + r).div_ceil(GROUP);
        self.data[g0 * stride..g1 * stride]
            .par_chunks_mut(stride)
            .enumerate()
            .for_each(|(gi, group)| {
                let g = g0 + gi;
                let lo = (g * GROUP).max(first);
                let hi = ((g + 1) * GROUP).min(first + r);
                for word in lo..hi {
                    let row = &rows[(word - first) * k..(word - first + 1) * k];
                    let c = word % GROUP;
                    for (i, &v) in row.iter().enumerate() {
                        group[i * GROUP + c] = v;
                    }
                }
            });
    }

    /// The number of words (the logits' width).
    pub fn words(&self) -> usize {
        self.words
    }

    /// The inner dimension.
    pub fn k(&self) -> usize {
        self.k
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.data.len() * 4
    }

    /// Whether [`PackedF32Head::logits`] runs at level `isa` (AVX2 or wider).
    pub fn runs_at(isa: Isa) -> bool {
        isa.min(crate::isa::detected_cached()) >= Isa::Avx2
    }

    /// `out = x · Wᵀ` for the row-major `[n, k]` rows `x` at level `isa`: `out` is
    /// row-major `[n, words]`. Panics unless [`PackedF32Head::runs_at`] `isa`.
    pub fn logits(&self, isa: Isa, x: &[f32], n: usize, out: &mut [f32]) {
        assert!(Self::runs_at(isa), "the packed head needs AVX2 or wider");
        assert_eq!(x.len(), n * self.k, "the input's length");
        assert_eq!(out.len(), n * self.words, "the output's length");
        if n == 0 || self.words == 0 {
            return;
        }
        if self.k == 0 {
            out.fill(0.0);
            return;
        }
        use rayon::prelude::*;
        let wide = isa.min(crate::isa::detected_cached()) >= Isa::Avx512;
        let groups = self.words.div_ceil(GROUP);
        let out_ptr = SendPtr(out.as_mut_ptr());
        let stride = self.k * GROUP;
        (0..groups).into_par_iter().with_min_len(4).for_each(|g| {
            let out_ptr = &out_ptr;
            let w = &self.data[g * stride..(g + 1) * stride];
            let first = g * GROUP;
            let cols = GROUP.min(self.words - first);
            let mut r = 0;
            while r < n {
                let m = ROWS.min(n - r);
                let xr = &x[r * self.k..(r + m) * self.k];
                // SAFETY: the level is capped at the CPU's (asserted above); this
                // group writes columns first..first + cols of rows r..r + m only,
                // within `out` (its length asserted above), and no other group
                // writes them.
                unsafe {
                    let o = out_ptr.0.add(r * self.words + first);
                    block(wide, m, xr, self.k, w, o, self.words, cols);
                }
                r += m;
            }
        });
    }
}

struct SendPtr(*mut f32);
// SAFETY: the pointer is only written through at disjoint places (`logits`).
unsafe impl Sync for SendPtr {}
// SAFETY: as above.
unsafe impl Send for SendPtr {}

/// One block of `m <= ROWS` rows against one group.
///
/// # Safety
/// The CPU has AVX2 + FMA (and AVX-512 F when `wide`); `out` points to `m` rows of
/// stride `os` with `cols` writable columns each.
#[allow(clippy::too_many_arguments)]
unsafe fn block(
    wide: bool,
    m: usize,
    x: &[f32],
    k: usize,
    w: &[f32],
    out: *mut f32,
    os: usize,
    cols: usize,
) {
    #[cfg(target_arch = "x86_64")]
    {
        macro_rules! rows {
            ($f:ident) => {
                match m {
                    1 => $f::<1>(x, k, w, out, os, cols),
                    2 => $f::<2>(x, k, w, out, os, cols),
                    3 => $f::<3>(x, k, w, out, os, cols),
                    4 => $f::<4>(x, k, w, out, os, cols),
                    5 => $f::<5>(x, k, w, out, os, cols),
                    _ => $f::<6>(x, k, w, out, os, cols),
                }
            };
        }
        if wide {
            rows!(block512)
        } else {
            rows!(block256)
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (wide, m, x, k, w, out, os, cols);
        unreachable!("the packed head runs on x86-64 only")
    }
}

/// [`block`] on AVX-512: `M` rows by the group's 64 words, 4 x `M` accumulators.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn block512<const M: usize>(
    x: &[f32],
    k: usize,
    w: &[f32],
    out: *mut f32,
    os: usize,
    cols: usize,
) {
    use std::arch::x86_64::*;
    debug_assert!(x.len() >= M * k && w.len() >= k * GROUP);
    let mut acc = [[_mm512_setzero_ps(); 4]; M];
    let xp = x.as_ptr();
    let wp = w.as_ptr();
    for i in 0..k {
        let wi = wp.add(i * GROUP);
        let w0 = _mm512_loadu_ps(wi);
        let w1 = _mm512_loadu_ps(wi.add(16));
        let w2 = _mm512_loadu_ps(wi.add(32));
        let w3 = _mm512_loadu_ps(wi.add(48));
        for (r, a) in acc.iter_mut().enumerate() {
            let xv = _mm512_set1_ps(*xp.add(r * k + i));
            a[0] = _mm512_fmadd_ps(xv, w0, a[0]);
            a[1] = _mm512_fmadd_ps(xv, w1, a[1]);
            a[2] = _mm512_fmadd_ps(xv, w2, a[2]);
            a[3] = _mm512_fmadd_ps(xv, w3, a[3]);
        }
    }
    for (r, a) in acc.iter().enumerate() {
        let o = out.add(r * os);
        for (p, v) in a.iter().enumerate() {
            let c = p * 16;
            if c + 16 <= cols {
                _mm512_storeu_ps(o.add(c), *v);
            } else if c < cols {
                let mask: __mmask16 = ((1u32 << (cols - c)) - 1) as u16;
                _mm512_mask_storeu_ps(o.add(c), mask, *v);
            }
        }
    }
}

/// [`block`] on AVX2: `M` rows by the group's 64 words, one panel of 16 words at a time
/// (2 x `M` accumulators).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn block256<const M: usize>(
    x: &[f32],
    k: usize,
    w: &[f32],
    out: *mut f32,
    os: usize,
    cols: usize,
) {
    use std::arch::x86_64::*;
    debug_assert!(x.len() >= M * k && w.len() >= k * GROUP);
    let xp = x.as_ptr();
    let wp = w.as_ptr();
    for p in 0..GROUP / 16 {
        let c = p * 16;
        if c >= cols {
            break;
        }
        let mut acc = [[_mm256_setzero_ps(); 2]; M];
        for i in 0..k {
            let wi = wp.add(i * GROUP + c);
            let w0 = _mm256_loadu_ps(wi);
            let w1 = _mm256_loadu_ps(wi.add(8));
            for (r, a) in acc.iter_mut().enumerate() {
                let xv = _mm256_set1_ps(*xp.add(r * k + i));
                a[0] = _mm256_fmadd_ps(xv, w0, a[0]);
                a[1] = _mm256_fmadd_ps(xv, w1, a[1]);
            }
        }
        for (r, a) in acc.iter().enumerate() {
            let o = out.add(r * os + c);
            if c + 16 <= cols {
                _mm256_storeu_ps(o, a[0]);
                _mm256_storeu_ps(o.add(8), a[1]);
            } else {
                let mut tmp = [0f32; 16];
                _mm256_storeu_ps(tmp.as_mut_ptr(), a[0]);
                _mm256_storeu_ps(tmp.as_mut_ptr().add(8), a[1]);
                std::ptr::copy_nonoverlapping(tmp.as_ptr(), o, cols - c);
            }
        }
    }
}
