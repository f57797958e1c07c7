//! Next-token scoring from a causal model's LM head: per-token surprisal and top-k
//! predictions (docs/METHODS.md §5, memorisation signals), accumulated into the
//! [`Surprisal`] a [`Trace`](super::Trace) carries (both types live beside `Trace`, in
//! `trace.rs`).
//!
//! Surprisal of token `i` is `-log2 p(token_i | tokens_<i)`, from the logits at position
//! `i - 1` (log-softmax in f64); the first token has none (`None`). `top_next[i]` are the
//! `k` most probable tokens to follow position `i`. Logits arrive in row blocks
//! ([`Scorer::feed`]) so `[n, vocab]` is never held at once.

use super::trace::{Prediction, Surprisal};

/// Accumulates [`Surprisal`] from logits row blocks.
pub struct Scorer {
    ids: Vec<u32>,
    vocab: usize,
    k: usize,
    bits: Vec<Option<f32>>,
    top: Vec<Vec<(u32, f32)>>,
    wrap: bool,
}

impl Scorer {
    /// For the input `ids` and logits rows of width `vocab`, keeping the top `k`.
    pub fn new(ids: &[u32], vocab: usize, k: usize) -> Self {
        Scorer {
            ids: ids.to_vec(),
            vocab,
            k,
            bits: vec![None; ids.len()],
            top: vec![Vec::new(); ids.len()],
            wrap: false,
        }
    }

    /// The last row predicts the FIRST token (an encoder–decoder's decoder stack, whose
    /// first position, reported last, reads the start token and predicts `ids[0]`): it
    /// scores `ids[0]` and keeps no top-k (nothing follows the last token).
    pub fn wrap_first(mut self) -> Self {
        self.wrap = true;
        self
    }

    /// Logits rows `start..start + block.len() / vocab`, row-major. Rows are scored in
    /// parallel (log-sum-exp and top-k in `codescope-kernels`).
    pub fn feed(&mut self, start: usize, block: &[f32]) {
        use codescope_kernels::lm::{log_sum_exp, top_k};
        use rayon::prelude::*;
        let (ids, k, wrap) = (&self.ids, self.k, self.wrap);
        // Per row: the next token's surprisal, the top-k (id, probability).
        type Row = (Option<f32>, Vec<(u32, f32)>);
        let scored: Vec<Row> = block
            .par_chunks_exact(self.vocab.max(1))
            .enumerate()
            .map(|(r, row)| {
                let Some(lse) = log_sum_exp(row) else {
                    return (None, Vec::new());
                };
                let p = start + r;
                let next = if wrap && p + 1 == ids.len() {
                    ids.first()
                } else {
                    ids.get(p + 1)
                };
                let bits = next.map(|&next| {
                    let lp = row[next as usize] as f64 - lse;
                    (-lp / std::f64::consts::LN_2) as f32
                });
                let top = top_k(row, k)
                    .into_iter()
                    .map(|(id, v)| (id, (v as f64 - lse).exp() as f32))
                    .collect();
                (bits, top)
            })
            .collect();
        let n = self.bits.len();
        for (r, (bits, top)) in scored.into_iter().enumerate() {
            let p = start + r;
            if p + 1 < n {
                self.bits[p + 1] = bits;
                self.top[p] = top;
            } else if p + 1 == n {
                if self.wrap {
                    self.bits[0] = bits;
                } else {
                    self.top[p] = top;
                }
            }
        }
    }

    /// Finish, naming predicted ids with `token_of`.
    pub fn finish(self, token_of: impl Fn(u32) -> Option<String>) -> Surprisal {
        Surprisal {
            bits: self.bits,
            top_next: self
                .top
                .into_iter()
                .map(|row| {
                    row.into_iter()
                        .map(|(id, p)| Prediction {
                            id,
                            token: token_of(id),
                            p,
                        })
                        .collect()
                })
                .collect(),
        }
    }
}

/// Run the LM head `w_t` (`[hidden, vocab]`) over the final hidden states `last`
/// (`[n, hidden]`) in row blocks, handing each block's logits to `sink`, so a long input
/// never holds `[n, vocab]` at once.
pub(crate) fn stream_logits(
    last: &candle_core::Tensor,
    w_t: &candle_core::Tensor,
    sink: &mut super::LogitsSink,
) -> crate::error::Result<()> {
    stream_logits_biased(last, w_t, None, sink)
}

/// [`stream_logits`] for an LM head with a bias (`[vocab]`; CodeGen's).
pub(crate) fn stream_logits_biased(
    last: &candle_core::Tensor,
    w_t: &candle_core::Tensor,
    bias: Option<&candle_core::Tensor>,
    sink: &mut super::LogitsSink,
) -> crate::error::Result<()> {
    let vocab = w_t.dims2()?.1;
    let w = w_t.t()?;
    let bias_values = match bias {
        Some(b) => Some(b.to_dtype(candle_core::DType::F32)?.to_vec1::<f32>()?),
        None => None,
    };
    stream_logits_with(last, vocab, sink, |x| {
        if let Some(mut buf) = packed_logits(&w, x)? {
            if let Some(b) = &bias_values {
                for row in buf.chunks_exact_mut(vocab) {
                    for (v, b) in row.iter_mut().zip(b) {
                        *v += b;
                    }
                }
            }
            return Ok(Block::Buf(buf));
        }
        let logits = x.matmul(w_t)?;
        Ok(Block::Tensor(match bias {
            Some(b) => logits.broadcast_add(b)?,
            None => logits,
        }))
    })
}

/// [`stream_logits`] through a [`Head`](super::quant::Head) (f32 or quantized).
pub(crate) fn stream_head(
    last: &candle_core::Tensor,
    head: &super::quant::Head,
    sink: &mut super::LogitsSink,
) -> crate::error::Result<()> {
    stream_logits_with(last, head.vocab()?, sink, |x| head.logits(x))
}

/// One block of logits, `[rows, vocab]` row-major: a tensor (a general matrix product's),
/// or a buffer from a packed head's product, which goes back to [`LOGITS_POOL`] once read.
pub(crate) enum Block {
    Tensor(candle_core::Tensor),
    Buf(Vec<f32>),
}

/// The buffer the last block of packed logits was written to, kept for the next: a block
/// of Gemma 3's logits is up to 256 MiB, which the allocator would otherwise map and the
/// kernel zero again at every product (a fifth of an ablation grid's time).
static LOGITS_POOL: std::sync::Mutex<Vec<f32>> = std::sync::Mutex::new(Vec::new());

/// A buffer of `len` values, the pool's if it holds one. Its old values are kept when its
/// length is already `len` (no second write of 256 MiB per block): the packed products
/// write every entry.
fn pooled(len: usize) -> Vec<f32> {
    let mut v = std::mem::take(&mut *LOGITS_POOL.lock().unwrap_or_else(|p| p.into_inner()));
    if v.len() != len {
        v.clear();
        v.resize(len, 0.0);
    }
    v
}

/// The row blocks of [`stream_logits`], each block's logits computed by `logits`.
fn stream_logits_with(
    last: &candle_core::Tensor,
    vocab: usize,
    sink: &mut super::LogitsSink,
    logits: impl Fn(&candle_core::Tensor) -> candle_core::Result<Block>,
) -> crate::error::Result<()> {
    let vocab = vocab.max(1);
    let block = logit_block_rows(vocab);
    let n = last.dims2()?.0;
    let mut start = 0;
    // Non-finite logits would turn into NaN surprisal silently.
    let read = |start: usize, block: &[f32], sink: &mut super::LogitsSink| {
        let bad = codescope_kernels::analysis::count_non_finite(block);
        if bad > 0 {
            return Err(crate::error::Error::Compute(format!(
                "LM head: {bad} logits are NaN or infinite"
            )));
        }
        sink(start, block)
    };
    while start < n {
        let rows = block.min(n - start);
        match logits(&last.narrow(0, start, rows)?)? {
            // The block is read where the product left it (a copy of Gemma 3's 128 x
            // 262,144 logits was 134 MB per block).
            Block::Tensor(t) => super::weights::with_f32(&t, |b| read(start, b, sink))??,
            Block::Buf(buf) => {
                let r = read(start, &buf, sink);
                *LOGITS_POOL.lock().unwrap_or_else(|p| p.into_inner()) = buf;
                r?
            }
        }
        start += rows;
    }
    Ok(())
}

/// The LM head `w` (`[vocab, hidden]`) applied to `x` (`[n, hidden]`) from weights packed
/// once, when the instruction set in use has a packed product and `w` is a contiguous
/// f32 tensor (every product of the process, so that an unmodified pass and an
/// intervened one that changes nothing give the same bits); `None` otherwise (the
/// caller's gemm product). At level `amx`, on AMX tiles
/// (`codescope_kernels::amx`: bf16 parts summed to f32 accuracy); at `avx512` and `avx2`,
/// f32 products from weights packed in the order the product reads them
/// (`codescope_kernels::head`), for heads of at most [`F32_PACK_LIMIT`] bytes. The head
/// is packed at its first use and kept for the next ones: one head at a time (the model
/// in use), keyed by its storage, which the cache holds on to so that the key cannot be
/// reused by another tensor.
pub(crate) fn packed_logits(
    w: &candle_core::Tensor,
    x: &candle_core::Tensor,
) -> candle_core::Result<Option<Vec<f32>>> {
    if w.dtype() != candle_core::DType::F32 || !w.is_contiguous() {
        return Ok(None);
    }
    let (vocab, hidden) = w.dims2()?;
    let key = super::weights::with_f32(w, |d| d.as_ptr() as usize)?;
    let keep = std::sync::Arc::new(w.clone());
    packed_logits_keyed(key, keep, vocab, hidden, x, |amx| {
        super::weights::with_f32(w, |d| {
            if amx {
                Packed::Amx(codescope_kernels::amx::PackedHead::pack(d, vocab, hidden))
            } else {
                Packed::F32(codescope_kernels::head::PackedF32Head::pack(
                    d, vocab, hidden,
                ))
            }
        })
    })
}

/// [`packed_logits`] for a quantized head `w` (`[vocab, hidden]`), packed from its
/// dequantized rows (the values the sliced f32 product multiplies).
pub(crate) fn packed_logits_quant(
    w: &std::sync::Arc<candle_core::quantized::QTensor>,
    x: &candle_core::Tensor,
) -> candle_core::Result<Option<Vec<f32>>> {
    let (vocab, hidden) = w.shape().dims2()?;
    let key = std::sync::Arc::as_ptr(w) as usize;
    packed_logits_keyed(key, w.clone(), vocab, hidden, x, |amx| {
        if amx {
            let d = w.dequantize(&candle_core::Device::Cpu)?;
            return super::weights::with_f32(&d, |d| {
                Packed::Amx(codescope_kernels::amx::PackedHead::pack(d, vocab, hidden))
            });
        }
        // A slice of rows dequantized at a time, as the sliced product does.
        let mut p = codescope_kernels::head::PackedF32Head::zeroed(vocab, hidden);
        super::quant::for_each_head_slice(w, |start, rows| {
            p.fill_rows(start, &rows);
            Ok(())
        })?;
        Ok(Packed::F32(p))
    })
}

/// The largest head packed in f32 (`avx512`, `avx2`): 1 GiB, Gemma 3 270M's 671 MB and
/// the heads of models of up to about 1B parameters; larger heads keep the general
/// product (and a quantized one its slices), which holds no second copy.
pub const F32_PACK_LIMIT: usize = 1 << 30;

/// The bytes of the packed copy [`packed_logits`] keeps of a `vocab` x `hidden` head at
/// the instruction set in use (0: it keeps none, the head's product is gemm's).
pub(crate) fn packed_head_bytes(vocab: usize, hidden: usize) -> u64 {
    use codescope_kernels::{amx::PackedHead, head::PackedF32Head, isa};
    let level = isa::active();
    let bytes = if level == isa::Isa::Amx {
        PackedHead::bytes_for(vocab, hidden)
    } else if PackedF32Head::runs_at(level)
        && PackedF32Head::bytes_for(vocab, hidden) <= F32_PACK_LIMIT
    {
        PackedF32Head::bytes_for(vocab, hidden)
    } else {
        0
    };
    bytes as u64
}

/// A head packed for one of the two packed products.
enum Packed {
    Amx(codescope_kernels::amx::PackedHead),
    F32(codescope_kernels::head::PackedF32Head),
}

impl Packed {
    fn dims(&self) -> (usize, usize) {
        match self {
            Packed::Amx(p) => (p.words(), p.k()),
            Packed::F32(p) => (p.words(), p.k()),
        }
    }

    fn bytes(&self) -> usize {
        match self {
            Packed::Amx(p) => p.bytes(),
            Packed::F32(p) => p.bytes(),
        }
    }
}

/// The cache of [`packed_logits`]: `key` names the head's storage, `keep` holds it alive;
/// `pack(amx)` packs it for AMX or for the f32 product.
fn packed_logits_keyed(
    key: usize,
    keep: std::sync::Arc<dyn std::any::Any + Send + Sync>,
    vocab: usize,
    hidden: usize,
    x: &candle_core::Tensor,
    pack: impl FnOnce(bool) -> candle_core::Result<Packed>,
) -> candle_core::Result<Option<Vec<f32>>> {
    use codescope_kernels::{head::PackedF32Head, isa};
    use std::sync::{Arc, Mutex};
    type Keep = Arc<dyn std::any::Any + Send + Sync>;
    type Entry = (Keep, usize, bool, Arc<Packed>);
    static PACKED: Mutex<Option<Entry>> = Mutex::new(None);
    let level = isa::active();
    let amx = level == isa::Isa::Amx;
    let f32_packed = !amx
        && PackedF32Head::runs_at(level)
        && PackedF32Head::bytes_for(vocab, hidden) <= F32_PACK_LIMIT;
    if !(amx || f32_packed) || x.dtype() != candle_core::DType::F32 {
        return Ok(None);
    }
    let (n, xh) = x.dims2()?;
    if xh != hidden {
        candle_core::bail!("LM head: input width {xh}, the head's {hidden}");
    }
    let packed = {
        let mut slot = PACKED.lock().unwrap_or_else(|p| p.into_inner());
        match &*slot {
            Some((_, k, a, p)) if *k == key && *a == amx && p.dims() == (vocab, hidden) => {
                p.clone()
            }
            _ => {
                // Drop the previous head first: two packed heads need not fit at once.
                *slot = None;
                let p = Arc::new(pack(amx)?);
                tracing::info!(vocab, hidden, bytes = p.bytes(), amx, "LM head packed");
                *slot = Some((keep, key, amx, p.clone()));
                p
            }
        }
    };
    let mut out = pooled(n * vocab);
    let x = x.contiguous()?;
    super::weights::with_f32(&x, |x| match &*packed {
        Packed::Amx(p) => p.logits(x, n, &mut out),
        Packed::F32(p) => p.logits(level, x, n, &mut out),
    })?;
    Ok(Some(out))
}

/// Rows per block of logits: as many as fit 256 MiB of logits (at least 64). Every block
/// re-reads (and gemm re-packs) the whole `[hidden, vocab]` head, so few large blocks are
/// much faster than many small ones for big vocabularies (Gemma 3: 262,144).
pub(crate) fn logit_block_rows(vocab: usize) -> usize {
    const BLOCK_BYTES: usize = 256 << 20;
    (BLOCK_BYTES / (vocab.max(1) * 4)).max(64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scorer_matches_direct_softmax() {
        let ids = [2u32, 0, 3];
        let logits = [
            1.0f32, 2.0, 3.0, 4.0, //
            0.0, 0.0, 0.0, 0.0, //
            -1.0, 5.0, 2.0, 2.0,
        ];
        let mut s = Scorer::new(&ids, 4, 2);
        s.feed(0, &logits[..4]);
        s.feed(1, &logits[4..]);
        let out = s.finish(|id| Some(format!("t{id}")));
        assert_eq!(out.bits[0], None);
        let z: f64 = [1.0f64, 2.0, 3.0, 4.0].iter().map(|v| v.exp()).sum();
        let want = -(1.0f64.exp() / z).log2();
        assert!((out.bits[1].unwrap() as f64 - want).abs() < 1e-6);
        assert!((out.bits[2].unwrap() - 2.0).abs() < 1e-6); // uniform over 4
        assert_eq!(out.top_next[0][0].id, 3);
        assert_eq!(out.top_next[0][1].id, 2);
        assert_eq!(out.top_next[2][0].token.as_deref(), Some("t1"));
        assert_eq!(out.top_next[2].len(), 2);
    }

    #[test]
    fn long_rows_match_f64_softmax_and_ties_pick_the_first() {
        // Rows longer than the kernels' 8 lanes, with a tail, fed in two blocks.
        let (n, vocab) = (3usize, 1003usize);
        let mut rng = crate::model::testutil::SplitMix::new(5);
        let mut logits = rng.vec(n * vocab, 8.0);
        logits[vocab + 17] = 40.0;
        logits[vocab + 900] = 40.0; // a tie: the lower id wins
        let ids = [1u32, 2, 999];
        let mut s = Scorer::new(&ids, vocab, 3);
        s.feed(0, &logits[..vocab]);
        s.feed(1, &logits[vocab..]);
        let out = s.finish(|_| None);
        for p in 0..n - 1 {
            let row = &logits[p * vocab..(p + 1) * vocab];
            let m = row.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
            let lse = m + row.iter().map(|&v| (v as f64 - m).exp()).sum::<f64>().ln();
            let want = (lse - row[ids[p + 1] as usize] as f64) / std::f64::consts::LN_2;
            let got = out.bits[p + 1].unwrap() as f64;
            assert!(
                (got - want).abs() < 1e-5 * want.abs().max(1.0),
                "{got} vs {want}"
            );
            let mut order: Vec<usize> = (0..vocab).collect();
            order.sort_by(|&a, &b| row[b].total_cmp(&row[a]).then(a.cmp(&b)));
            let top: Vec<u32> = out.top_next[p].iter().map(|t| t.id).collect();
            assert_eq!(
                top,
                order[..3].iter().map(|&i| i as u32).collect::<Vec<_>>()
            );
        }
        assert_eq!(out.top_next[1][0].id, 17);
        assert_eq!(out.top_next[1][1].id, 900);
    }
}
