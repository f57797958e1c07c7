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
    stream_logits_with(last, vocab, sink, |x| {
        let logits = match amx_logits(&w, x)? {
            Some(l) => l,
            None => x.matmul(w_t)?,
        };
        match bias {
            Some(b) => logits.broadcast_add(b),
            None => Ok(logits),
        }
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

/// The row blocks of [`stream_logits`], each block's logits computed by `logits`.
fn stream_logits_with(
    last: &candle_core::Tensor,
    vocab: usize,
    sink: &mut super::LogitsSink,
    logits: impl Fn(&candle_core::Tensor) -> candle_core::Result<candle_core::Tensor>,
) -> crate::error::Result<()> {
    let vocab = vocab.max(1);
    let block = logit_block_rows(vocab);
    let n = last.dims2()?.0;
    let mut start = 0;
    while start < n {
        let rows = block.min(n - start);
        let logits = logits(&last.narrow(0, start, rows)?)?;
        // The block is read where the product left it (a copy of Gemma 3's 128 x
        // 262,144 logits was 134 MB per block).
        super::weights::with_f32(&logits, |block| {
            // Non-finite logits would turn into NaN surprisal silently.
            let bad = codescope_kernels::analysis::count_non_finite(block);
            if bad > 0 {
                return Err(crate::error::Error::Compute(format!(
                    "LM head: {bad} logits are NaN or infinite"
                )));
            }
            sink(start, block)
        })??;
        start += rows;
    }
    Ok(())
}

/// The LM head `w` (`[vocab, hidden]`) applied to `x` (`[n, hidden]`) on AMX tiles
/// (`codescope_kernels::amx`: bf16 parts summed to f32 accuracy), when the instruction set
/// in use is AMX and `w` is a contiguous f32 tensor; `None` otherwise (the caller's gemm
/// product). The head is packed into tiles at its first use and kept for the next ones:
/// one head at a time (the model in use), keyed by its storage, which the cache holds on
/// to so that the key cannot be reused by another tensor.
pub(crate) fn amx_logits(
    w: &candle_core::Tensor,
    x: &candle_core::Tensor,
) -> candle_core::Result<Option<candle_core::Tensor>> {
    if w.dtype() != candle_core::DType::F32 || !w.is_contiguous() {
        return Ok(None);
    }
    let (vocab, hidden) = w.dims2()?;
    let key = super::weights::with_f32(w, |d| d.as_ptr() as usize)?;
    let keep = std::sync::Arc::new(w.clone());
    amx_logits_keyed(key, keep, vocab, hidden, x, || {
        super::weights::with_f32(w, |d| {
            codescope_kernels::amx::PackedHead::pack(d, vocab, hidden)
        })
    })
}

/// [`amx_logits`] for a quantized head `w` (`[vocab, hidden]`), packed from its
/// dequantized rows (the values the sliced f32 product multiplies).
pub(crate) fn amx_logits_quant(
    w: &std::sync::Arc<candle_core::quantized::QTensor>,
    x: &candle_core::Tensor,
) -> candle_core::Result<Option<candle_core::Tensor>> {
    let (vocab, hidden) = w.shape().dims2()?;
    let key = std::sync::Arc::as_ptr(w) as usize;
    amx_logits_keyed(key, w.clone(), vocab, hidden, x, || {
        let d = w.dequantize(&candle_core::Device::Cpu)?;
        super::weights::with_f32(&d, |d| {
            codescope_kernels::amx::PackedHead::pack(d, vocab, hidden)
        })
    })
}

/// The cache of [`amx_logits`]: `key` names the head's storage, `keep` holds it alive.
fn amx_logits_keyed(
    key: usize,
    keep: std::sync::Arc<dyn std::any::Any + Send + Sync>,
    vocab: usize,
    hidden: usize,
    x: &candle_core::Tensor,
    pack: impl FnOnce() -> candle_core::Result<codescope_kernels::amx::PackedHead>,
) -> candle_core::Result<Option<candle_core::Tensor>> {
    use codescope_kernels::{amx::PackedHead, isa};
    use std::sync::{Arc, Mutex};
    type Keep = Arc<dyn std::any::Any + Send + Sync>;
    type Entry = (Keep, usize, Arc<PackedHead>);
    static PACKED: Mutex<Option<Entry>> = Mutex::new(None);
    if isa::active() != isa::Isa::Amx || x.dtype() != candle_core::DType::F32 {
        return Ok(None);
    }
    let (n, xh) = x.dims2()?;
    if xh != hidden {
        candle_core::bail!("LM head: input width {xh}, the head's {hidden}");
    }
    let packed = {
        let mut slot = PACKED.lock().unwrap_or_else(|p| p.into_inner());
        match &*slot {
            Some((_, k, p)) if *k == key && p.words() == vocab && p.k() == hidden => p.clone(),
            _ => {
                // Drop the previous head first: two packed heads need not fit at once.
                *slot = None;
                let p = Arc::new(pack()?);
                tracing::info!(vocab, hidden, bytes = p.bytes(), "LM head packed for AMX");
                *slot = Some((keep, key, p.clone()));
                p
            }
        }
    };
    let mut out = vec![0f32; n * vocab];
    super::weights::with_f32(x, |x| packed.logits(x, n, &mut out))?;
    Ok(Some(candle_core::Tensor::from_vec(
        out,
        (n, vocab),
        &candle_core::Device::Cpu,
    )?))
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
