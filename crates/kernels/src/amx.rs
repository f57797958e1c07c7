//! An LM head's matrix product on Intel AMX tiles (`TDPBF16PS`), to f32 accuracy.
//!
//! AMX multiplies bf16 pairs and accumulates in f32. One bf16 keeps 8 of f32's 24
//! significant bits, so each f32 operand is split into two bf16 parts, `x = hi + lo + r`
//! with `|r| <= 2^-16 |x|` (`hi` is `x` rounded to bf16, `lo` the rest rounded to bf16),
//! and a product is summed from three tile products, `hi·hi + hi·lo + lo·hi`. What is left
//! out (`lo·lo` and the two rests) is at most about `2^-15 |w x|` per term, so a logit
//! `Σ_i w_i x_i` is off by at most about `2^-15 Σ_i |w_i x_i|`: the same order as f32's own
//! rounding of a 640-term sum in the worst case (`640 · 2^-24 Σ |w_i x_i|`), and far below
//! it in practice. codescope's tests bound it against an f64 product.
//!
//! The weights are packed once ([`PackedHead::pack`]) into the tile layout the B operand
//! takes (pairs of adjacent `k` side by side, 16 words by 32 `k` per 1 KiB tile, the `hi`
//! and `lo` tiles of one block next to each other), so a product streams them in order;
//! the input rows are split at each product. [`available`] says whether the CPU has AMX
//! and the kernel let this process use it (Linux: `arch_prctl(ARCH_REQ_XCOMP_PERM)`).

use std::sync::OnceLock;

/// Words per tile (the B operand's columns, the accumulators' columns).
const TW: usize = 16;
/// `k` per tile (32 bf16 = 64 bytes per row).
const TK: usize = 32;
/// Input rows per tile.
const TR: usize = 16;
/// bf16 values per tile.
const TILE: usize = 512;

/// Whether this CPU has AMX (tiles and bf16) and this process may use it; asked once.
pub fn available() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(detect)
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn detect() -> bool {
    use std::arch::x86_64::__cpuid_count;
    let max = __cpuid_count(0, 0).eax;
    if max < 7 {
        return false;
    }
    let edx = __cpuid_count(7, 0).edx;
    let (bf16, tile) = (edx >> 22 & 1 == 1, edx >> 24 & 1 == 1);
    if !(bf16 && tile) {
        return false;
    }
    // Ask the kernel for the tile data state (XTILEDATA, state component 18); refused on
    // kernels without AMX support or where the hypervisor hides it.
    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_long = 18;
    // SAFETY: a plain system call with integer arguments.
    let r = unsafe {
        libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_REQ_XCOMP_PERM,
            XFEATURE_XTILEDATA,
        )
    };
    r == 0
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn detect() -> bool {
    false
}

/// `x` rounded to the nearest bf16 (ties to even), as its 16 bits.
#[inline]
fn bf16(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return (b >> 16) as u16 | 0x40;
    }
    let round = 0x7fff + ((b >> 16) & 1);
    (b.wrapping_add(round) >> 16) as u16
}

/// The f32 value of bf16 bits.
#[inline]
fn f32_of(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// `x` as `hi + lo` in bf16.
#[inline]
fn split(x: f32) -> (u16, u16) {
    let hi = bf16(x);
    let lo = bf16(x - f32_of(hi));
    (hi, lo)
}

/// An LM head `[words, k]` split into bf16 `hi` and `lo` parts, in AMX tile order.
pub struct PackedHead {
    words: usize,
    k: usize,
    /// `k` rounded up to whole tiles.
    kp: usize,
    /// Per block of [`TW`] words, per block of [`TK`] `k`: the `hi` tile, then the `lo`
    /// tile; zero past `words` and `k`.
    tiles: Vec<u16>,
}

impl PackedHead {
    /// The bytes a head of `words` x `k` takes packed.
    pub fn bytes_for(words: usize, k: usize) -> usize {
        words.div_ceil(TW) * k.div_ceil(TK) * 2 * TILE * 2
    }

    /// Pack the row-major `[words, k]` matrix `w`.
    pub fn pack(w: &[f32], words: usize, k: usize) -> PackedHead {
        assert_eq!(w.len(), words * k, "the head's length");
        use rayon::prelude::*;
        let kp = k.div_ceil(TK) * TK;
        let kb = kp / TK;
        let blocks = words.div_ceil(TW);
        let mut tiles = vec![0u16; blocks * kb * 2 * TILE];
        tiles
            .par_chunks_mut(kb * 2 * TILE)
            .enumerate()
            .for_each(|(b, block)| {
                for c in 0..TW {
                    let word = b * TW + c;
                    if word >= words {
                        break;
                    }
                    let row = &w[word * k..(word + 1) * k];
                    for (i, &x) in row.iter().enumerate() {
                        let (hi, lo) = split(x);
                        // Tile (i / 32), row (i % 32) / 2, column c, element i % 2.
                        let t = (i / TK) * 2 * TILE;
                        let at = (i % TK) / 2 * (2 * TW) + c * 2 + i % 2;
                        block[t + at] = hi;
                        block[t + TILE + at] = lo;
                    }
                }
            });
        PackedHead {
            words,
            k,
            kp,
            tiles,
        }
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
        self.tiles.len() * 2
    }

    /// `out = x · Wᵀ` for the row-major `[n, k]` rows `x`: `out` is row-major `[n, words]`.
    /// Panics unless [`available`].
    pub fn logits(&self, x: &[f32], n: usize, out: &mut [f32]) {
        assert!(available(), "AMX is not available");
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
        // The rows split and padded to whole pairs of tiles (32 rows), row-major with a
        // stride of kp: hi then lo.
        let np = n.div_ceil(2 * TR) * 2 * TR;
        let mut a = vec![0u16; 2 * np * self.kp];
        let (ahi, alo) = a.split_at_mut(np * self.kp);
        ahi.par_chunks_mut(self.kp)
            .zip(alo.par_chunks_mut(self.kp))
            .zip(x.par_chunks(self.k))
            .for_each(|((hi, lo), row)| {
                for (i, &v) in row.iter().enumerate() {
                    (hi[i], lo[i]) = split(v);
                }
            });
        let (ahi, alo) = (&*ahi, &*alo);
        // Words in chunks of 64 tiles pairs (2,048 words) across threads.
        const CHUNK: usize = 64 * 2 * TW;
        let out_ptr = SendPtr(out.as_mut_ptr());
        let chunks = self.words.div_ceil(CHUNK);
        (0..chunks).into_par_iter().for_each(|c| {
            let first = c * CHUNK;
            let last = (first + CHUNK).min(self.words);
            let out_ptr = &out_ptr;
            // SAFETY: AMX is available (asserted); every chunk writes its own columns of
            // `out`, within its bounds (checked by `store`).
            unsafe { self.chunk(ahi, alo, n, np, first, last, out_ptr.0) };
        });
    }

    /// Words `first..last` (a multiple of 32 from `first`) of every row.
    ///
    /// # Safety
    /// AMX must be available, and `out` point to `[n, words]` f32 no other thread writes
    /// in these columns.
    #[cfg(target_arch = "x86_64")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn chunk(
        &self,
        ahi: &[u16],
        alo: &[u16],
        n: usize,
        np: usize,
        first: usize,
        last: usize,
        out: *mut f32,
    ) {
        let cfg = TileConfig::new();
        tile_config(&cfg);
        let kb = self.kp / TK;
        let stride = self.kp * 2;
        let mut scratch = [0f32; 4 * TR * TW];
        let mut w = first;
        while w < last {
            // Two word tiles: w..w+16 and w+16..w+32 (the second may be past the words:
            // its tiles are zero).
            let b0 = w / TW;
            let t0 = self.tiles.as_ptr().add(b0 * kb * 2 * TILE);
            let t1 = if b0 + 1 < self.words.div_ceil(TW) {
                self.tiles.as_ptr().add((b0 + 1) * kb * 2 * TILE)
            } else {
                ZERO_TILES.0.as_ptr()
            };
            let one_block = b0 + 1 >= self.words.div_ceil(TW);
            let mut r = 0;
            while r < np {
                let ah = ahi.as_ptr().add(r * self.kp);
                let al = alo.as_ptr().add(r * self.kp);
                let ah1 = ah.add(TR * self.kp);
                let al1 = al.add(TR * self.kp);
                tile_zero_acc();
                for k in 0..kb {
                    let t0k = t0.add(k * 2 * TILE);
                    let t1k = if one_block { t1 } else { t1.add(k * 2 * TILE) };
                    dp_step(
                        ah.add(k * TK),
                        al.add(k * TK),
                        ah1.add(k * TK),
                        al1.add(k * TK),
                        stride,
                        t0k,
                        t0k.add(TILE),
                        t1k,
                        t1k.add(TILE),
                    );
                }
                tile_store_acc(scratch.as_mut_ptr());
                // Accumulators: 0 = (rows r.., words w..), 1 = (rows r.., words w+16..),
                // 2 = (rows r+16.., words w..), 3 = (rows r+16.., words w+16..).
                for (acc, (dr, dw)) in [(0, 0), (0, TW), (TR, 0), (TR, TW)].into_iter().enumerate()
                {
                    let src = &scratch[acc * TR * TW..(acc + 1) * TR * TW];
                    for i in 0..TR {
                        let row = r + dr + i;
                        if row >= n {
                            break;
                        }
                        let col = w + dw;
                        if col >= last {
                            continue;
                        }
                        let cols = TW.min(last - col);
                        std::ptr::copy_nonoverlapping(
                            src.as_ptr().add(i * TW),
                            out.add(row * self.words + col),
                            cols,
                        );
                    }
                }
                r += 2 * TR;
            }
            w += 2 * TW;
        }
        tile_release();
    }

    #[cfg(not(target_arch = "x86_64"))]
    #[allow(clippy::too_many_arguments)]
    unsafe fn chunk(
        &self,
        _: &[u16],
        _: &[u16],
        _: usize,
        _: usize,
        _: usize,
        _: usize,
        _: *mut f32,
    ) {
        unreachable!("AMX is x86-64 only")
    }
}

/// A zero `hi` and `lo` tile pair (the missing second word block of an odd count).
#[repr(C, align(64))]
struct ZeroTiles([u16; 2 * TILE]);
static ZERO_TILES: ZeroTiles = ZeroTiles([0; 2 * TILE]);

struct SendPtr(*mut f32);
// SAFETY: the chunks write disjoint columns (PackedHead::logits).
unsafe impl Sync for SendPtr {}
unsafe impl Send for SendPtr {}

/// The 64-byte tile configuration: palette 1, eight tiles of 16 rows by 64 bytes.
#[repr(C, align(64))]
struct TileConfig([u8; 64]);

impl TileConfig {
    fn new() -> Self {
        let mut c = [0u8; 64];
        c[0] = 1;
        for t in 0..8 {
            c[16 + 2 * t] = 64; // bytes per row (little-endian u16)
            c[48 + t] = TR as u8;
        }
        TileConfig(c)
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn tile_config(c: &TileConfig) {
    std::arch::asm!("ldtilecfg [{0}]", in(reg) c.0.as_ptr(), options(nostack, readonly));
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn tile_release() {
    std::arch::asm!("tilerelease", options(nostack, nomem));
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn tile_zero_acc() {
    std::arch::asm!(
        "tilezero tmm0",
        "tilezero tmm1",
        "tilezero tmm2",
        "tilezero tmm3",
        options(nostack, nomem)
    );
}

/// Store the four accumulators, 16 x 16 f32 each, one after the other at `out`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn tile_store_acc(out: *mut f32) {
    std::arch::asm!(
        "tilestored [{o} + {s}*1], tmm0",
        "tilestored [{o1} + {s}*1], tmm1",
        "tilestored [{o2} + {s}*1], tmm2",
        "tilestored [{o3} + {s}*1], tmm3",
        o = in(reg) out,
        o1 = in(reg) out.add(TR * TW),
        o2 = in(reg) out.add(2 * TR * TW),
        o3 = in(reg) out.add(3 * TR * TW),
        s = in(reg) TW * 4,
        options(nostack)
    );
}

/// One 32-wide `k` step of the 2 x 2 block: rows `a0` (`hi`, `lo`) and `a1`, word tiles
/// `b0` (`hi`, `lo`) and `b1`; each accumulator gains `hi·hi + lo·hi + hi·lo`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn dp_step(
    a0h: *const u16,
    a0l: *const u16,
    a1h: *const u16,
    a1l: *const u16,
    stride: usize,
    b0h: *const u16,
    b0l: *const u16,
    b1h: *const u16,
    b1l: *const u16,
) {
    std::arch::asm!(
        // hi · hi
        "tileloadd tmm4, [{a0h} + {s}*1]",
        "tileloadd tmm5, [{a1h} + {s}*1]",
        "tileloadd tmm6, [{b0h} + {bs}*1]",
        "tileloadd tmm7, [{b1h} + {bs}*1]",
        "tdpbf16ps tmm0, tmm4, tmm6",
        "tdpbf16ps tmm1, tmm4, tmm7",
        "tdpbf16ps tmm2, tmm5, tmm6",
        "tdpbf16ps tmm3, tmm5, tmm7",
        // lo · hi
        "tileloadd tmm4, [{a0l} + {s}*1]",
        "tileloadd tmm5, [{a1l} + {s}*1]",
        "tdpbf16ps tmm0, tmm4, tmm6",
        "tdpbf16ps tmm1, tmm4, tmm7",
        "tdpbf16ps tmm2, tmm5, tmm6",
        "tdpbf16ps tmm3, tmm5, tmm7",
        // hi · lo
        "tileloadd tmm4, [{a0h} + {s}*1]",
        "tileloadd tmm5, [{a1h} + {s}*1]",
        "tileloadd tmm6, [{b0l} + {bs}*1]",
        "tileloadd tmm7, [{b1l} + {bs}*1]",
        "tdpbf16ps tmm0, tmm4, tmm6",
        "tdpbf16ps tmm1, tmm4, tmm7",
        "tdpbf16ps tmm2, tmm5, tmm6",
        "tdpbf16ps tmm3, tmm5, tmm7",
        a0h = in(reg) a0h,
        a0l = in(reg) a0l,
        a1h = in(reg) a1h,
        a1l = in(reg) a1l,
        b0h = in(reg) b0h,
        b0l = in(reg) b0l,
        b1h = in(reg) b1h,
        b1l = in(reg) b1l,
        s = in(reg) stride,
        bs = in(reg) 2 * TW * 2,
        options(nostack, readonly)
    );
}
