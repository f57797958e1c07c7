//! The steps every decoder family's forward shares (GPT-2, GPTBigCode, CodeGen, Llama /
//! Qwen2, Gemma 3), so each family's `run` keeps only what is its own: embeddings and
//! positions, norms, projections, rotary variants, the MLP and the LM head's form.
//!
//! A forward is a [`Pass`]: [`Pass::start`] with the embedded input (hidden state 0) —
//! or, for a partial pass ([`super::Partial`]: one layer recomputed from its recorded
//! input), that input instead — then per layer of [`Pass::span`] [`Pass::layer`]
//! (cancellation), [`Pass::attend`] (the fused causal kernel on `[n, Q | K | V]`, its
//! probabilities kept as the layer's attention or handed to the caller's per-layer sink),
//! [`Pass::layer_done`] (non-finite check, hidden state), and [`Pass::finish`] with the
//! final norm's output (the last hidden state) and, when logits are wanted, the LM head as
//! a cancellable step of its own (a partial pass stops before both). [`repeat_kv`] lays
//! out grouped-query projections for the kernel.

use candle_core::{Device, Tensor};

use super::{check_layer, Capture, ForwardOptions, LogitsSink};
use crate::error::{Error, Result};

/// One decoder forward in progress (see the module doc for the order of calls).
pub(super) struct Pass<'o, 'c> {
    opts: &'o ForwardOptions<'c>,
    layers: usize,
    n: usize,
    heads: usize,
    /// The layer being run (set by [`Pass::layer`]).
    current: usize,
    capture: Capture,
    device: Device,
    /// With a logit lens: the residual stream entering each layer (0 = embeddings).
    residual: Vec<Tensor>,
}

impl<'o, 'c> Pass<'o, 'c> {
    /// Start a forward of `n` positions `hidden` wide through `layers` layers of `heads`
    /// heads: `embed` gives the embedded input (hidden state 0), unless the options ask
    /// for a partial pass, whose recorded input is used instead. Returns the pass and the
    /// residual stream entering its first layer.
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        opts: &'o ForwardOptions<'c>,
        layers: usize,
        heads: usize,
        n: usize,
        hidden: usize,
        device: &Device,
        embed: impl FnOnce() -> Result<Tensor>,
    ) -> Result<(Self, Tensor)> {
        let x = match &opts.partial {
            Some(p) => Tensor::from_slice(p.input, (n, hidden), device)?,
            None => embed()?,
        };
        let mut capture = Capture::new(n, heads, hidden);
        if opts.hidden && opts.partial.is_none() {
            capture.push_hidden(&x)?;
        }
        if let Some(iv) = opts.intervention {
            iv.check(layers, heads, n)?;
        }
        let lens = opts.lens.is_some() && opts.partial.is_none();
        let pass = Pass {
            opts,
            layers,
            n,
            heads,
            current: 0,
            capture,
            device: device.clone(),
            residual: if lens { vec![x.clone()] } else { Vec::new() },
        };
        Ok((pass, x))
    }

    /// The layers this pass runs, with their indices: all of them, or a partial pass's.
    pub fn span<'t, T>(&self, layers: &'t [T]) -> impl Iterator<Item = (usize, &'t T)> {
        let (first, end) = self.opts.span(self.layers);
        layers.iter().enumerate().take(end).skip(first)
    }

    /// Before layer `li`: stop if the caller cancelled.
    pub fn layer(&mut self, li: usize) -> Result<()> {
        if self.opts.cancelled(li) {
            return Err(Error::Cancelled);
        }
        self.current = li;
        Ok(())
    }

    /// Causal attention over `qkv` laid out `[n, Q | K | V]` (every head `d` wide),
    /// limited to the last `window` keys when given; the probabilities are kept as this
    /// layer's attention (or handed to the options' sink) and the context
    /// `[n, heads * d]` is returned.
    pub fn attend(
        &mut self,
        qkv: &[f32],
        d: usize,
        scale: f32,
        window: Option<usize>,
    ) -> Result<Tensor> {
        self.attend_capped(qkv, d, scale, window, None)
    }

    /// [`Pass::attend`] with the scaled scores soft-capped to `(-softcap, softcap)` by
    /// `tanh(s / c) * c` before the mask and the softmax (Gemma 2).
    pub fn attend_capped(
        &mut self,
        qkv: &[f32],
        d: usize,
        scale: f32,
        window: Option<usize>,
        softcap: Option<f32>,
    ) -> Result<Tensor> {
        let (n, heads) = (self.n, self.heads);
        let mut ctx = vec![0.0f32; n * heads * d];
        let iv = self.opts.intervention;
        let probs = super::intervene::attend(
            iv,
            self.current,
            qkv,
            n,
            heads,
            d,
            scale,
            true,
            window,
            softcap,
            &mut ctx,
        );
        self.capture
            .keep_attention(self.opts, self.current, probs)?;
        Ok(Tensor::from_vec(ctx, (n, heads * d), &self.device)?)
    }

    /// After layer `li` left the residual stream `x`: refuse non-finite values and keep
    /// the hidden state (but the last layer's: the final norm's output stands for it).
    pub fn layer_done(&mut self, x: &Tensor, li: usize) -> Result<()> {
        check_layer(x, li)?;
        if self.opts.hidden && li + 1 < self.layers {
            self.capture.push_hidden(x)?;
        }
        if !self.residual.is_empty() && li + 1 < self.layers {
            self.residual.push(x.clone());
        }
        Ok(())
    }

    /// End with `norm(x)`, the final norm of the residual stream `x` (the last hidden
    /// state). With a `sink`, `head` streams the LM head's logits of it into the sink — a
    /// step of its own for cancellation (seconds for big vocabularies); with a logit lens
    /// the residual stream entering every layer goes through `norm` and `head` too, into
    /// the lens sink. A partial pass ends before all of it unless it asks for the logits
    /// ([`super::Partial::logits`]).
    ///
    /// With [`ForwardOptions::logit_rows`] the head runs on those positions of the last
    /// hidden state only (`vocab` wide logits), each run of consecutive positions handed
    /// to the sink under its own positions.
    pub fn finish(
        mut self,
        x: &Tensor,
        norm: impl Fn(&Tensor) -> Result<Tensor>,
        sink: Option<&mut LogitsSink>,
        vocab: usize,
        head: impl Fn(&Tensor, &mut LogitsSink) -> Result<()>,
    ) -> Result<Capture> {
        if self.opts.partial.is_some_and(|p| !p.logits) {
            return Ok(self.capture);
        }
        // A partial pass from the last layer's end was handed the final norm's output.
        let last = match &self.opts.partial {
            Some(p) if p.first >= self.layers => x.clone(),
            _ => norm(x)?,
        };
        if self.opts.partial.is_none() {
            if self.opts.hidden {
                self.capture.push_hidden(&last)?;
            }
            if let Some(keep) = self.opts.on_final {
                keep(last.flatten_all()?.to_vec1::<f32>()?);
            }
        }
        if let Some(sink) = sink {
            if self.opts.cancelled(self.layers) {
                return Err(Error::Cancelled);
            }
            match self.opts.logit_rows {
                Some(rows) => head_at(&last, rows, vocab, sink, &head)?,
                None => head(&last, sink)?,
            }
            if let Some(lens) = self.opts.lens {
                for (l, r) in std::mem::take(&mut self.residual).iter().enumerate() {
                    if self.opts.cancelled(self.layers) {
                        return Err(Error::Cancelled);
                    }
                    head(&norm(r)?, &mut |start, block| lens(l, start, block))?;
                }
            }
        }
        Ok(self.capture)
    }
}

/// The LM head `head` at positions `rows` of `last` (`[n, hidden]`) only: the rows are
/// gathered, and each block of their logits goes to `sink` in runs of consecutive
/// positions, under the positions' own indices.
fn head_at(
    last: &Tensor,
    rows: &[usize],
    vocab: usize,
    sink: &mut LogitsSink,
    head: &impl Fn(&Tensor, &mut LogitsSink) -> Result<()>,
) -> Result<()> {
    let n = last.dims2()?.0;
    if rows.windows(2).any(|w| w[0] >= w[1]) || rows.last().is_some_and(|&r| r >= n) {
        return Err(Error::Compute(format!(
            "the LM head's rows must be increasing positions below {n}"
        )));
    }
    if rows.is_empty() {
        return Ok(());
    }
    let idx: Vec<u32> = rows.iter().map(|&r| r as u32).collect();
    let idx = Tensor::from_vec(idx, rows.len(), last.device())?;
    let picked = last.index_select(&idx, 0)?;
    let vocab = vocab.max(1);
    head(&picked, &mut |start, block| {
        let m = block.len() / vocab;
        let mut i = 0;
        while i < m {
            let mut j = i + 1;
            while j < m && rows[start + j] == rows[start + j - 1] + 1 {
                j += 1;
            }
            sink(rows[start + i], &block[i * vocab..j * vocab])?;
            i = j;
        }
        Ok(())
    })
}

/// Lay out projections whose rows are `[Q (heads·d) | K (kv·d) | V (kv·d)]` as the
/// attention kernel's `[n, Q | K | V]` in `fused` (`n · 3 · heads · d`), each K/V head
/// repeated for its `heads / kv` query heads. `q` and `k` transform each Q head and each
/// K head in place before that (per-head norms, rotary), given the position.
#[allow(clippy::too_many_arguments)]
pub(super) fn repeat_kv(
    qkv: &[f32],
    n: usize,
    heads: usize,
    kv: usize,
    d: usize,
    fused: &mut [f32],
    q: impl Fn(&mut [f32], usize),
    k: impl Fn(&mut [f32], usize),
) {
    let hd = heads * d;
    let rep = heads / kv;
    let src_row = (heads + 2 * kv) * d;
    let mut k_head = vec![0.0f32; kv * d];
    for p in 0..n {
        let src = &qkv[p * src_row..(p + 1) * src_row];
        let dst = &mut fused[p * 3 * hd..(p + 1) * 3 * hd];
        dst[..hd].copy_from_slice(&src[..hd]);
        for head in dst[..hd].chunks_exact_mut(d) {
            q(head, p);
        }
        k_head.copy_from_slice(&src[hd..hd + kv * d]);
        for head in k_head.chunks_exact_mut(d) {
            k(head, p);
        }
        let v = &src[hd + kv * d..];
        for hq in 0..heads {
            let g = hq / rep;
            dst[hd + hq * d..hd + (hq + 1) * d].copy_from_slice(&k_head[g * d..(g + 1) * d]);
            dst[2 * hd + hq * d..2 * hd + (hq + 1) * d].copy_from_slice(&v[g * d..(g + 1) * d]);
        }
    }
}

/// A per-head RMS norm in place: `v * rsqrt(mean(v^2) + eps) * m` (Qwen3's `q_norm` /
/// `k_norm` with `m = w`; Gemma 3's with `m = 1 + w`).
pub(super) fn head_rms(v: &mut [f32], m: &[f32], eps: f32) {
    let ms = v.iter().map(|a| a * a).sum::<f32>() / v.len() as f32;
    let r = 1.0 / (ms + eps).sqrt();
    for (a, w) in v.iter_mut().zip(m) {
        *a = *a * r * w;
    }
}

/// The LM head `[vocab, hidden]`: `lm_head.weight` unless the config ties it to the token
/// embedding `tied` (or the checkpoint has none: then tied, with a warning).
pub(super) fn lm_head(
    vb: &candle_nn::VarBuilder,
    tie_word_embeddings: bool,
    vocab: usize,
    hidden: usize,
    tied: &candle_nn::Embedding,
) -> candle_core::Result<Tensor> {
    if !tie_word_embeddings && vb.contains_tensor("lm_head.weight") {
        vb.pp("lm_head").get((vocab, hidden), "weight")
    } else {
        if !tie_word_embeddings {
            tracing::warn!("no lm_head.weight: using the tied embedding as LM head");
        }
        Ok(tied.embeddings().clone())
    }
}

/// Token embeddings plus learned absolute positions (GPT-2, GPTBigCode).
pub(super) fn embed_with_positions(
    wte: &candle_nn::Embedding,
    wpe: &candle_nn::Embedding,
    ids: &[u32],
    device: &Device,
) -> Result<Tensor> {
    use candle_core::Module;
    let pos: Vec<u32> = (0..ids.len() as u32).collect();
    let tokens = wte.forward(&Tensor::new(ids, device)?)?;
    Ok(tokens.add(&wpe.forward(&Tensor::new(pos.as_slice(), device)?)?)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A head whose logits of a row are the row's value and its double, streamed two rows
    /// per block.
    fn fake_head(x: &Tensor, sink: &mut LogitsSink) -> Result<()> {
        let v = x.flatten_all()?.to_vec1::<f32>()?;
        let logits: Vec<f32> = v.iter().flat_map(|&a| [a, 2.0 * a]).collect();
        for (b, block) in logits.chunks(4).enumerate() {
            sink(2 * b, block)?;
        }
        Ok(())
    }

    #[test]
    fn the_head_at_some_rows_hands_their_logits_under_their_positions() {
        let last =
            Tensor::from_vec((0..7).map(|i| i as f32).collect(), (7, 1), &Device::Cpu).unwrap();
        let mut got: Vec<(usize, Vec<f32>)> = Vec::new();
        head_at(
            &last,
            &[0, 2, 3, 4, 6],
            2,
            &mut |start, block| {
                got.push((start, block.to_vec()));
                Ok(())
            },
            &fake_head,
        )
        .unwrap();
        // Blocks [0, 2], [3, 4], [6]: runs of consecutive positions inside each block.
        let want = vec![
            (0, vec![0.0, 0.0]),
            (2, vec![2.0, 4.0]),
            (3, vec![3.0, 6.0, 4.0, 8.0]),
            (6, vec![6.0, 12.0]),
        ];
        assert_eq!(got, want);
        let mut none = |_: usize, _: &[f32]| -> Result<()> { panic!("no row asked") };
        head_at(&last, &[], 2, &mut none, &fake_head).unwrap();
        for bad in [&[3usize, 2][..], &[1, 1], &[7]] {
            let e = head_at(&last, bad, 2, &mut none, &fake_head).unwrap_err();
            assert!(
                e.to_string().contains("increasing positions below 7"),
                "{e}"
            );
        }
    }

    #[test]
    fn repeat_kv_repeats_groups_after_transforming_each_head_once() {
        // n = 1, heads = 4, kv = 2, d = 2: Q q0..q3, K k0 k1, V v0 v1.
        let qkv: Vec<f32> = (0..(4 + 2 + 2) * 2).map(|i| i as f32).collect();
        let mut fused = vec![0.0; 3 * 4 * 2];
        // q: +100; k: negate (applied once per K head, not once per query head).
        repeat_kv(
            &qkv,
            1,
            4,
            2,
            2,
            &mut fused,
            |h, _| h.iter_mut().for_each(|x| *x += 100.0),
            |h, _| h.iter_mut().for_each(|x| *x = -*x),
        );
        let q = [100., 101., 102., 103., 104., 105., 106., 107.];
        let k = [-8., -9., -8., -9., -10., -11., -10., -11.];
        let v = [12., 13., 12., 13., 14., 15., 14., 15.];
        assert_eq!(&fused[..8], &q);
        assert_eq!(&fused[8..16], &k);
        assert_eq!(&fused[16..], &v);
    }

    #[test]
    fn repeat_kv_passes_the_position() {
        // n = 2, heads = kv = 1, d = 1: q gets its position added, k ten times it.
        let qkv = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        let mut fused = vec![0.0; 6];
        repeat_kv(
            &qkv,
            2,
            1,
            1,
            1,
            &mut fused,
            |h, p| h[0] += p as f32,
            |h, p| h[0] += 10.0 * p as f32,
        );
        assert_eq!(fused, vec![1.0, 2.0, 3.0, 5.0, 15.0, 6.0]);
    }
}
