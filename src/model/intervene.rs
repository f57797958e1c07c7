//! Interventions inside a forward pass, for causal tests (docs/METHODS.md 8): attention
//! knockout, head ablation, and the logit lens's per-layer read-out.
//!
//! - [`Knockout`]: in the chosen layers and heads, query subword `i` may not attend to
//!   the keys `rows[i]`: their pre-softmax scores are minus infinity, so the softmax
//!   renormalises the rest of the row (`kernels::attention_probs_blocked`). A position's
//!   own key is never blocked. With no key listed the pass is bit-identical to a plain
//!   one (the same kernel on the same numbers).
//! - [`HeadAblation`]: a head's output (its slice of the attention context, before the
//!   output projection) is zeroed, or replaced by its mean over the positions of the
//!   input. Its attention probabilities are left as they were.
//! - The logit lens ([`super::ForwardOptions::lens`]): each layer's residual stream
//!   through the final norm and the LM head (decoders; see `decoder::Pass::finish`).
//! - The residual patch ([`patch_rows`]): a recorded hidden state (the residual stream
//!   entering a layer) with some positions' rows taken from another input's, fed to a
//!   partial pass ([`super::Partial`]) that runs the layers from there, the final norm and
//!   the LM head. Every decoder family runs partial passes through `decoder::Pass`, so the
//!   patch needs no hook of its own in each; with no position patched the pass is the
//!   unmodified one bit for bit (the same kernels on the same input).
//!
//! The positions are the model's subword positions (special tokens included); mapping
//! code tokens and their categories onto them is `analysis::causal`'s work. On an
//! encoder–decoder's decoder and cross stacks they are read-order indices, which
//! `encdec::forward_stack` moves to decoder positions for the decoder's self-attention or
//! its cross-attention (whose keys are the encoder's positions and whose knockout,
//! `after_softmax_cross`, has no own key to spare); the lens goes through the decoder's
//! final norm and LM head there.

use super::kernels::KeyBlock;

/// Attention knockout: which keys each query may not see, in which layers and heads.
#[derive(Debug, Clone)]
pub struct Knockout {
    /// Per layer: knocked out in this layer.
    pub layers: Vec<bool>,
    /// Per head: knocked out in this head (in every chosen layer).
    pub heads: Vec<bool>,
    /// Per query position: the key positions it may not attend to.
    pub rows: Vec<Vec<u32>>,
}

/// How an ablated head's output is replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AblationMode {
    /// Zeros (as transformers' `head_mask` of 0 does).
    Zero,
    /// Its mean over the input's positions.
    Mean,
}

impl AblationMode {
    pub fn name(self) -> &'static str {
        match self {
            AblationMode::Zero => "zero",
            AblationMode::Mean => "mean",
        }
    }
}

/// One head's output replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadAblation {
    pub layer: usize,
    pub head: usize,
    pub mode: AblationMode,
}

/// What a forward pass changes in the model's computation.
#[derive(Debug, Clone, Default)]
pub struct Intervention {
    pub knockout: Option<Knockout>,
    pub ablate: Vec<HeadAblation>,
}

impl Intervention {
    /// The keys blocked in layer `layer`, if any.
    pub(crate) fn block(&self, layer: usize) -> Option<KeyBlock<'_>> {
        let k = self.knockout.as_ref()?;
        k.layers
            .get(layer)
            .copied()
            .unwrap_or(false)
            .then(|| KeyBlock {
                heads: &k.heads,
                rows: &k.rows,
            })
    }

    /// Check the shapes against a model of `layers` x `heads` on `n` positions.
    pub(crate) fn check(&self, layers: usize, heads: usize, n: usize) -> crate::Result<()> {
        let bad = |why: String| Err(crate::Error::Compute(format!("intervention: {why}")));
        if let Some(k) = &self.knockout {
            if k.layers.len() != layers || k.heads.len() != heads || k.rows.len() != n {
                return bad(format!(
                    "a knockout for {} layers, {} heads and {} positions on a model of {layers} \
                     x {heads} with {n}",
                    k.layers.len(),
                    k.heads.len(),
                    k.rows.len()
                ));
            }
        }
        if let Some(a) = self
            .ablate
            .iter()
            .find(|a| a.layer >= layers || a.head >= heads)
        {
            return bad(format!(
                "layer {} head {} does not exist ({layers} x {heads})",
                a.layer + 1,
                a.head + 1
            ));
        }
        Ok(())
    }

    /// Replace the outputs of the heads ablated in `layer` in `ctx` (`[n][heads * d]`).
    pub(crate) fn ablate_ctx(&self, layer: usize, ctx: &mut [f32], heads: usize, d: usize) {
        let hd = heads * d;
        let n = ctx.len() / hd.max(1);
        for a in self.ablate.iter().filter(|a| a.layer == layer) {
            let cols = a.head * d..(a.head + 1) * d;
            let fill: Vec<f32> = match a.mode {
                AblationMode::Zero => vec![0.0; d],
                AblationMode::Mean => {
                    let mut m = vec![0.0f64; d];
                    for row in ctx.chunks_exact(hd) {
                        for (s, &v) in m.iter_mut().zip(&row[cols.clone()]) {
                            *s += f64::from(v);
                        }
                    }
                    m.iter().map(|s| (s / n.max(1) as f64) as f32).collect()
                }
            };
            for row in ctx.chunks_exact_mut(hd) {
                row[cols.clone()].copy_from_slice(&fill);
            }
        }
    }
}

/// The residual patch: `base` (`[n, dim]`, a recorded hidden state) with the rows
/// `positions` copied from `from` (the same hidden state of another input of `n`
/// positions). Positions beyond `n` are ignored.
pub fn patch_rows(base: &[f32], from: &[f32], dim: usize, positions: &[usize]) -> Vec<f32> {
    let mut out = base.to_vec();
    for &p in positions {
        let rows = p * dim..(p + 1) * dim;
        if rows.end <= out.len() && rows.end <= from.len() {
            out[rows.clone()].copy_from_slice(&from[rows]);
        }
    }
    out
}

/// Receives the logit lens: `(layer, first row, rows * vocab floats)` for each residual
/// stream entering layer `layer` (0 = the embeddings) through the final norm and the LM
/// head. The last layer's read-out is the model's own logits (the pass's logits sink).
pub type LensSink<'a> = dyn Fn(usize, usize, &[f32]) -> crate::Result<()> + Sync + 'a;

/// Attention of one layer with the intervention applied: the plain kernel when the layer
/// blocks nothing, then the ablations on the context. `softcap` soft-caps the scores
/// before the mask (Gemma 2's `attn_logit_softcapping`; a knockout still blocks keys
/// after it).
#[allow(clippy::too_many_arguments)]
pub(crate) fn attend(
    iv: Option<&Intervention>,
    layer: usize,
    qkv: &[f32],
    n: usize,
    heads: usize,
    d: usize,
    scale: f32,
    causal: bool,
    window: Option<usize>,
    softcap: Option<f32>,
    ctx: &mut [f32],
) -> Vec<f32> {
    use super::kernels;
    let block = iv.and_then(|iv| iv.block(layer));
    let probs = match (&block, softcap) {
        (Some(b), None) => {
            kernels::attention_probs_blocked(qkv, n, heads, d, scale, causal, window, b, ctx)
        }
        (None, None) => kernels::attention_probs(qkv, n, heads, d, scale, causal, window, ctx),
        (b, cap) => kernels::attention_probs_capped(
            qkv,
            n,
            heads,
            d,
            scale,
            causal,
            window,
            cap,
            b.as_ref(),
            ctx,
        ),
    };
    if let Some(iv) = iv {
        iv.ablate_ctx(layer, ctx, heads, d);
    }
    probs
}

/// An intervention on attention a kernel without knockout support computed (T5's biased
/// attention): the blocked keys' probabilities are set to 0 and each changed row is
/// renormalised — exactly what a score of minus infinity before the softmax gives — and
/// the context rows of the changed heads are recomputed from the values of `qkv`
/// (`[n, Q | K | V]`, every head `d` wide); then the ablations.
#[allow(clippy::too_many_arguments)]
pub(crate) fn after_softmax(
    iv: Option<&Intervention>,
    layer: usize,
    probs: &mut [f32],
    qkv: &[f32],
    n: usize,
    heads: usize,
    d: usize,
    ctx: &mut [f32],
) {
    blocked_after_softmax(iv, layer, probs, qkv, n, heads, d, ctx, true);
}

/// [`after_softmax`] on a cross-attention (an encoder–decoder's cross stack): `qkv` the
/// decoder's queries fused with the encoder's keys and values (`encdec::fuse_rows`),
/// row `i` of the knockout the decoder position `i`, its keys encoder positions. The
/// two sides are different sequences, so no key is a query's own: every listed key is
/// blocked, the same index included.
#[allow(clippy::too_many_arguments)]
pub(crate) fn after_softmax_cross(
    iv: Option<&Intervention>,
    layer: usize,
    probs: &mut [f32],
    qkv: &[f32],
    n: usize,
    heads: usize,
    d: usize,
    ctx: &mut [f32],
) {
    blocked_after_softmax(iv, layer, probs, qkv, n, heads, d, ctx, false);
}

#[allow(clippy::too_many_arguments)]
fn blocked_after_softmax(
    iv: Option<&Intervention>,
    layer: usize,
    probs: &mut [f32],
    qkv: &[f32],
    n: usize,
    heads: usize,
    d: usize,
    ctx: &mut [f32],
    keep_own: bool,
) {
    let Some(iv) = iv else { return };
    if let Some(b) = iv.block(layer) {
        let hd = heads * d;
        for h in (0..heads).filter(|&h| b.heads[h]) {
            for (i, keys) in b.rows.iter().enumerate() {
                let row = &mut probs[(h * n + i) * n..(h * n + i + 1) * n];
                let mut hit = false;
                for j in keys
                    .iter()
                    .map(|&j| j as usize)
                    .filter(|&j| (!keep_own || j != i) && j < n)
                {
                    hit |= row[j] != 0.0;
                    row[j] = 0.0;
                }
                if !hit {
                    continue;
                }
                let sum: f64 = row.iter().map(|&p| f64::from(p)).sum();
                row.iter_mut()
                    .for_each(|p| *p = (f64::from(*p) / sum) as f32);
                let out = &mut ctx[i * hd + h * d..i * hd + (h + 1) * d];
                out.fill(0.0);
                for (j, &p) in row.iter().enumerate().filter(|(_, &p)| p != 0.0) {
                    let v = &qkv[j * 3 * hd + 2 * hd + h * d..j * 3 * hd + 2 * hd + (h + 1) * d];
                    out.iter_mut().zip(v).for_each(|(o, &x)| *o += p * x);
                }
            }
        }
    }
    iv.ablate_ctx(layer, ctx, heads, d);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knocking_out_after_the_softmax_is_the_minus_infinity_score() {
        let (n, heads, d) = (7, 2, 3);
        let mut rng = crate::model::testutil::SplitMix::new(2);
        let qkv = rng.vec(n * 3 * heads * d, 1.0);
        let rows: Vec<Vec<u32>> = (0..n as u32).map(|i| vec![0, i / 2, i]).collect();
        let iv = Intervention {
            knockout: Some(Knockout {
                layers: vec![true],
                heads: vec![true, false],
                rows,
            }),
            ablate: Vec::new(),
        };
        let mut want_ctx = vec![0.0f32; n * heads * d];
        let want = attend(
            Some(&iv),
            0,
            &qkv,
            n,
            heads,
            d,
            0.5,
            false,
            None,
            None,
            &mut want_ctx,
        );
        let mut ctx = vec![0.0f32; n * heads * d];
        let mut probs =
            super::super::kernels::attention_probs(&qkv, n, heads, d, 0.5, false, None, &mut ctx);
        after_softmax(Some(&iv), 0, &mut probs, &qkv, n, heads, d, &mut ctx);
        for (a, b) in probs.iter().zip(&want) {
            assert!((a - b).abs() < 1e-6, "{a} vs {b}");
        }
        for (a, b) in ctx.iter().zip(&want_ctx) {
            assert!((a - b).abs() < 1e-5, "{a} vs {b}");
        }
    }

    #[test]
    fn the_cross_knockout_blocks_the_same_index_too() {
        // Row i lists key i: the self-attention version keeps it (a position's own key),
        // the cross-attention's blocks it (decoder position i, encoder position i).
        let (n, heads, d) = (4, 1, 2);
        let mut rng = crate::model::testutil::SplitMix::new(5);
        let qkv = rng.vec(n * 3 * heads * d, 1.0);
        let iv = Intervention {
            knockout: Some(Knockout {
                layers: vec![true],
                heads: vec![true],
                rows: (0..n as u32).map(|i| vec![i]).collect(),
            }),
            ablate: Vec::new(),
        };
        let run = |cross: bool| {
            let mut ctx = vec![0.0f32; n * heads * d];
            let mut p = super::super::kernels::attention_probs(
                &qkv, n, heads, d, 0.5, false, None, &mut ctx,
            );
            if cross {
                after_softmax_cross(Some(&iv), 0, &mut p, &qkv, n, heads, d, &mut ctx);
            } else {
                after_softmax(Some(&iv), 0, &mut p, &qkv, n, heads, d, &mut ctx);
            }
            p
        };
        let (own, cross) = (run(false), run(true));
        let mut plain_ctx = vec![0.0f32; n * heads * d];
        let plain = super::super::kernels::attention_probs(
            &qkv,
            n,
            heads,
            d,
            0.5,
            false,
            None,
            &mut plain_ctx,
        );
        assert_eq!(own, plain, "the own key is never blocked in self-attention");
        for i in 0..n {
            let row = &cross[i * n..(i + 1) * n];
            assert_eq!(row[i], 0.0, "row {i}");
            let sum: f32 = row.iter().sum();
            assert!((sum - 1.0).abs() < 1e-6, "row {i} renormalised: {sum}");
            // The rest in the plain row's proportions.
            let rest = 1.0 - plain[i * n + i];
            for j in (0..n).filter(|&j| j != i) {
                assert!((row[j] - plain[i * n + j] / rest).abs() < 1e-6);
            }
        }
    }

    #[test]
    fn the_residual_patch_copies_only_its_rows() {
        // n = 3, dim = 2.
        let base = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let from = [-1.0, -2.0, -3.0, -4.0, -5.0, -6.0];
        assert_eq!(patch_rows(&base, &from, 2, &[]), base.to_vec());
        assert_eq!(
            patch_rows(&base, &from, 2, &[0, 2, 7]),
            vec![-1.0, -2.0, 3.0, 4.0, -5.0, -6.0]
        );
    }

    #[test]
    fn zero_and_mean_ablation_replace_only_their_head() {
        // n = 2, heads = 2, d = 2.
        let mut ctx = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
        let iv = Intervention {
            knockout: None,
            ablate: vec![
                HeadAblation {
                    layer: 1,
                    head: 0,
                    mode: AblationMode::Zero,
                },
                HeadAblation {
                    layer: 1,
                    head: 1,
                    mode: AblationMode::Mean,
                },
                HeadAblation {
                    layer: 0,
                    head: 1,
                    mode: AblationMode::Zero,
                },
            ],
        };
        iv.ablate_ctx(1, &mut ctx, 2, 2);
        assert_eq!(ctx, vec![0.0, 0.0, 5.0, 6.0, 0.0, 0.0, 5.0, 6.0]);
        assert!(iv.check(2, 2, 2).is_ok());
        assert!(
            iv.check(1, 2, 2).is_err(),
            "layer 2 does not exist in a 1-layer model"
        );
    }
}
