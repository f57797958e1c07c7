//! The per-head analyses, one layer at a time: what [`super::from_trace`] and
//! [`super::run`] compute from attention, fed each layer's subword attention in order
//! (from a finished trace, or from the forward pass as each layer's attention is
//! computed — then no more than one layer's attention exists at a time).
//!
//! Per layer: its code-token attention ([`Aggregator`]), every head's scores against
//! every gold graph at the analysis threshold and the sweep's grid, the fine category
//! matrices of every head and of the head mean, every head's mean entropy, and the
//! running sum over heads and layers (the overall category matrices). The layer's
//! code-token attention is then kept (the explorer, compare and figures read the
//! matrices) or dropped (results only: inputs whose matrices exceed the attention
//! budget).
//!
//! Invariant: the results are bit-identical whichever way the layers arrive and whether
//! they are kept — every number is computed per head or per layer, and the sums over
//! heads and layers add the same values in the same order as [`TokenAttention`]'s
//! `head_mean` and `overall_mean`.

use std::collections::BTreeMap;

use rayon::prelude::*;

use super::attention::{Aggregator, TokenAttention};
use super::categories::{self, CategoryMatrix};
use super::relations::{self, GoldMask, HeadScores, Score};
use super::{entropy, AnalyzeOptions, Graph};
use crate::error::{Error, Result};
use crate::syntax::{Alignment, CodeToken, GoldSource};

/// One input's analyses in progress, fed layer by layer ([`LayerStream::layer`]).
pub(super) struct LayerStream {
    agg: Aggregator,
    layers: usize,
    heads: usize,
    /// Per graph: the gold graph restricted to the analysed tokens.
    golds: BTreeMap<Graph, GoldMask>,
    /// The analysis threshold, then the sweep's grid when asked.
    ts: Vec<f32>,
    /// Fine class of each analysed token.
    fine_cls: Vec<usize>,
    /// Keep every layer's code-token attention (else one layer's buffer is reused).
    keep: bool,
    /// The kept layers' code-token attention, or the current layer's.
    data: Vec<f32>,
    /// Sum over the heads and layers seen so far, `n x n`.
    sum: Vec<f32>,
    /// `[layer][head][gold][threshold]`.
    scores: Vec<Vec<Vec<Vec<Score>>>>,
    fine: Vec<Vec<CategoryMatrix>>,
    fine_layer: Vec<CategoryMatrix>,
    entropy: Vec<Vec<f64>>,
}

/// What [`LayerStream::finish`] hands to the analysis.
pub(super) struct Streamed {
    pub token_attention: TokenAttention,
    pub golds: BTreeMap<Graph, GoldMask>,
    pub relations: BTreeMap<Graph, HeadScores>,
    pub sweep: Option<BTreeMap<Graph, Vec<HeadScores>>>,
    pub fine: Vec<Vec<CategoryMatrix>>,
    pub fine_layer: Vec<CategoryMatrix>,
    pub fine_all: CategoryMatrix,
    pub entropy: Vec<Vec<f64>>,
}

impl LayerStream {
    /// For an input of `len` subwords aligned to `tokens` by `alignment`, through a model
    /// of `layers` layers of `heads` heads; `keep` holds every layer's code-token
    /// attention for the result.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        gold: &dyn GoldSource,
        tokens: &[CodeToken],
        alignment: &Alignment,
        len: usize,
        layers: usize,
        heads: usize,
        opts: &AnalyzeOptions,
        keep: bool,
    ) -> Self {
        let agg = Aggregator::new(len, alignment);
        let n_all = tokens.len();
        let golds: BTreeMap<Graph, GoldMask> = Graph::ALL
            .iter()
            .map(|&g| {
                let edges = gold.edges_within(g, &agg.tokens);
                (g, GoldMask::new(edges, &agg.tokens, n_all))
            })
            .collect();
        // The analysis threshold, then the sweep's grid: every head visited once for all.
        let mut ts = vec![opts.threshold];
        if opts.sweep {
            ts.extend(relations::threshold_grid());
        }
        let fine_cls = agg
            .tokens
            .iter()
            .map(|&i| categories::fine_class(&tokens[i]))
            .collect();
        let n = agg.n();
        LayerStream {
            layers,
            heads,
            golds,
            ts,
            fine_cls,
            keep,
            // Kept layers land in one buffer sized once: growing it layer by layer
            // re-copied the earlier layers and faulted in fresh pages at every doubling.
            data: Vec::with_capacity(if keep { layers * heads * n * n } else { 0 }),
            sum: vec![0.0; n * n],
            scores: Vec::with_capacity(layers),
            fine: Vec::with_capacity(layers),
            fine_layer: Vec::with_capacity(layers),
            entropy: Vec::with_capacity(layers),
            agg,
        }
    }

    /// Number of analysed code tokens.
    pub fn n(&self) -> usize {
        self.agg.n()
    }

    /// Analyse layer `l` from its subword attention `att` (`[head][q][k]`). Layers must
    /// come in order, each once.
    pub fn layer(&mut self, l: usize, att: &[f32]) -> Result<()> {
        let (n, heads) = (self.n(), self.heads);
        let m = self.agg.subwords();
        if l != self.scores.len() || l >= self.layers || att.len() != heads * m * m {
            return Err(Error::Compute(format!(
                "layer {} arrived out of order or with {} attention values (analysis bug)",
                l + 1,
                att.len()
            )));
        }
        let per = heads * n * n;
        let start = if self.keep { self.data.len() } else { 0 };
        // Grown (zeroed in parallel: a serial fill was 5% of the analysis) only when the
        // layer does not fit; a buffer reused layer after layer is overwritten as it is.
        if self.data.len() < start + per {
            let extra = start + per - self.data.len();
            self.data.par_extend(rayon::iter::repeat_n(0.0f32, extra));
        }
        let a = &mut self.data[start..start + per];
        self.agg.layer_into(att, heads, a);
        let a = &*a;
        let golds: Vec<&GoldMask> = self.golds.values().collect();
        let (ts, fine_cls) = (&self.ts, &self.fine_cls);
        let per_head: Vec<(Vec<Vec<Score>>, CategoryMatrix, f64)> = (0..heads)
            .into_par_iter()
            .map(|h| {
                let head = &a[h * n * n..(h + 1) * n * n];
                (
                    relations::head_scores(head, &golds, ts),
                    CategoryMatrix::compute(head, n, fine_cls, 5),
                    entropy::mean_entropy(head, n),
                )
            })
            .collect();
        // The head mean and the running sum, in TokenAttention's order of additions.
        // In parallel chunks of entries; each entry still adds the heads in order.
        let mut mean = vec![0.0f32; n * n];
        let k = 1.0 / heads.max(1) as f32;
        const CHUNK: usize = 4096;
        mean.par_chunks_mut(CHUNK)
            .zip(self.sum.par_chunks_mut(CHUNK))
            .enumerate()
            .for_each(|(c, (mean, sum))| {
                for h in 0..heads {
                    let head = &a[h * n * n + c * CHUNK..][..mean.len()];
                    for ((o, s), &x) in mean.iter_mut().zip(sum.iter_mut()).zip(head) {
                        *o += x;
                        *s += x;
                    }
                }
                mean.iter_mut().for_each(|o| *o *= k);
            });
        self.fine_layer
            .push(CategoryMatrix::compute(&mean, n, fine_cls, 5));
        let mut scores = Vec::with_capacity(heads);
        let mut fine = Vec::with_capacity(heads);
        let mut ent = Vec::with_capacity(heads);
        for (s, f, e) in per_head {
            scores.push(s);
            fine.push(f);
            ent.push(e);
        }
        self.scores.push(scores);
        self.fine.push(fine);
        self.entropy.push(ent);
        Ok(())
    }

    /// What layer `l` (the last one fed) gave, for a viewer that shows layers as they
    /// come ([`super::RunOptions::on_layer`]); `codes` are the input's code tokens.
    pub fn done<'a>(&'a self, l: usize, codes: &'a [CodeToken]) -> super::LayerDone<'a> {
        let n = self.n();
        let per = self.heads * n * n;
        let start = if self.keep { l * per } else { 0 };
        let scores = self
            .golds
            .keys()
            .enumerate()
            .map(|(g, graph)| (*graph, self.scores[l].iter().map(|h| h[g][0]).collect()))
            .collect();
        super::LayerDone {
            layer: l,
            layers: self.layers,
            heads: self.heads,
            tokens: &self.agg.tokens,
            codes,
            attention: &self.data[start..start + per],
            golds: &self.golds,
            threshold: self.ts[0],
            scores,
            coarse: self.fine[l]
                .iter()
                .map(CategoryMatrix::coarse_of_fine)
                .collect(),
            entropy: &self.entropy[l],
            keep: self.keep,
        }
    }

    /// The results once every layer has been fed.
    pub fn finish(self) -> Result<Streamed> {
        if self.scores.len() != self.layers {
            return Err(Error::Compute(format!(
                "the analysis saw {} of {} layers (analysis bug)",
                self.scores.len(),
                self.layers
            )));
        }
        let n = self.n();
        let golds: Vec<&GoldMask> = self.golds.values().collect();
        let mut relations = BTreeMap::new();
        let mut sweep = (self.ts.len() > 1).then(BTreeMap::new);
        let tables = HeadScores::assemble(&self.scores, &golds, &self.ts);
        for (g, mut per_t) in self.golds.keys().zip(tables) {
            let rest = per_t.split_off(1);
            relations.insert(*g, per_t.remove(0));
            if let Some(sw) = sweep.as_mut() {
                sw.insert(*g, rest);
            }
        }
        let k = 1.0 / (self.layers * self.heads).max(1) as f32;
        let overall: Vec<f32> = self.sum.iter().map(|s| s * k).collect();
        let fine_all = CategoryMatrix::compute(&overall, n, &self.fine_cls, 5);
        let data = if self.keep { self.data } else { Vec::new() };
        Ok(Streamed {
            token_attention: TokenAttention {
                layers: self.layers,
                heads: self.heads,
                tokens: self.agg.tokens,
                data,
            },
            golds: self.golds,
            relations,
            sweep,
            fine: self.fine,
            fine_layer: self.fine_layer,
            fine_all,
            entropy: self.entropy,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::testutil::SplitMix;
    use crate::syntax::{self, Language};

    /// Random row-stochastic-ish subword attention, `layers x heads x len x len`.
    fn attention(layers: usize, heads: usize, len: usize) -> Vec<Vec<f32>> {
        let mut rng = SplitMix::new(7);
        (0..layers)
            .map(|_| {
                rng.vec(heads * len * len, 0.5)
                    .into_iter()
                    .map(|x| (x + 0.5).abs() / len as f32)
                    .collect()
            })
            .collect()
    }

    #[test]
    fn dropped_matrices_give_the_results_kept_ones_and_the_whole_tensor_give() {
        let src = "def f(a, b):\n    c = a + b\n    return [c * 2 for _ in range(3)]\n";
        let syn = syntax::parse(src, Language::Python).unwrap();
        let tokens = syn.tokens.clone();
        // One subword per code token, plus a special at each end (like [CLS] / [SEP]).
        let len = tokens.len() + 2;
        let mut subword_to_tokens = vec![vec![]; len];
        let mut token_to_subwords = vec![vec![]; tokens.len()];
        for i in 0..tokens.len() {
            subword_to_tokens[i + 1] = vec![i];
            token_to_subwords[i] = vec![i + 1];
        }
        // Token 2 spans two subwords: exercises the non-run gather.
        token_to_subwords[2] = vec![1, 3];
        let alignment = Alignment {
            subword_to_tokens,
            token_to_subwords,
        };
        let (layers, heads) = (3, 2);
        let att = attention(layers, heads, len);
        let opts = AnalyzeOptions {
            sweep: true,
            ..AnalyzeOptions::default()
        };
        let feed = |keep: bool| {
            let mut st =
                LayerStream::new(&syn, &tokens, &alignment, len, layers, heads, &opts, keep);
            for (l, a) in att.iter().enumerate() {
                st.layer(l, a).unwrap();
            }
            st.finish().unwrap()
        };
        let (kept, dropped) = (feed(true), feed(false));
        assert!(kept.token_attention.resident());
        assert!(!dropped.token_attention.resident() && dropped.token_attention.data.is_empty());
        assert_eq!(kept.token_attention.tokens, dropped.token_attention.tokens);
        for g in Graph::ALL {
            assert_eq!(kept.relations[&g].scores, dropped.relations[&g].scores);
            let (a, b) = (
                &kept.sweep.as_ref().unwrap()[&g],
                &dropped.sweep.as_ref().unwrap()[&g],
            );
            for (x, y) in a.iter().zip(b) {
                assert_eq!(x.scores, y.scores);
            }
        }
        assert_eq!(kept.fine, dropped.fine);
        assert_eq!(kept.fine_layer, dropped.fine_layer);
        assert_eq!(kept.fine_all, dropped.fine_all);
        assert_eq!(kept.entropy, dropped.entropy);
        // The same numbers as the whole-tensor functions of TokenAttention.
        let whole = crate::analysis::attention::aggregate(
            &crate::model::Attention {
                heads,
                len,
                layers: att.clone(),
            },
            &alignment,
        );
        assert!(whole.data == kept.token_attention.data);
        let golds: Vec<&GoldMask> = kept.golds.values().collect();
        let at = HeadScores::at(&whole, &golds, &[opts.threshold]);
        for (g, per_t) in kept.golds.keys().zip(at) {
            assert_eq!(per_t[0].scores, kept.relations[g].scores);
        }
        let n = whole.n();
        let cls =
            &LayerStream::new(&syn, &tokens, &alignment, len, layers, heads, &opts, true).fine_cls;
        for l in 0..layers {
            let m = CategoryMatrix::compute(&whole.head_mean(l), n, cls, 5);
            assert_eq!(m, kept.fine_layer[l]);
        }
        let all = CategoryMatrix::compute(&whole.overall_mean(), n, cls, 5);
        assert_eq!(all, kept.fine_all);
        // Layers out of order are refused, not mis-filed.
        let mut st = LayerStream::new(&syn, &tokens, &alignment, len, layers, heads, &opts, false);
        assert!(st.layer(1, &att[1]).is_err());
        assert!(st.finish().is_err());
    }
}
