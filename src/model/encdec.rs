//! What the encoder–decoder families (`t5`, `bart`) share: host copies of weights, a
//! dense layer with an optional bias, the feed-forward activations their configs name,
//! the [`Stack`] a backbone reports, and the decoder stacks' forward pass
//! ([`forward_stack`]) over what each family provides ([`Seq2Seq`]).
//!
//! By default codescope analyses these models' ENCODER self-attention, as the study did
//! (the code as encoder input). `--stack decoder` and `--stack cross` run the whole model
//! with the snippet teacher-forced: the encoder reads the snippet's encoding `s_0 ..
//! s_{n-1}` (special tokens included) and the decoder reads it shifted right, `start, s_0
//! .. s_{n-2}` (the labels are `s_0 .. s_{n-1}`; `start` is the family's decoder start
//! token: T5's and BART's `decoder_start_token_id`, for PLBART the last token, its
//! language code, as PLBART's `shift_tokens_right` wraps it). Decoder position `p` reads
//! `s_{p-1}` and predicts `s_p`.
//!
//! So that a decoder trace lines up with the encoding (one list of subwords, one
//! alignment to code tokens), everything per decoder position is reported at the index
//! of the subword that position READS: index `i` is decoder position `i + 1` (which reads
//! `s_i`), and the last index, `n - 1` (the end-of-sequence special that the decoder
//! never reads), holds decoder position 0 (which reads the start token). This holds for
//! attention rows, for the self-attention's key columns (cross-attention keys are the
//! encoder's positions, already `s_j`), for hidden states and for the LM head's rows: row
//! `i` predicts `s_{i+1}`, as a causal model's does, and the last row, decoder position
//! 0, predicts `s_0` (the trace's surprisal scores it: `Scorer::wrap_first`).

use candle_core::Tensor;
use candle_nn::VarBuilder;

use super::intervene::{Intervention, Knockout};
use super::kernels;
use crate::error::{Error, Result};

/// The stack an encoder–decoder's backbone runs by default: its encoder's self-attention.
pub const ENCODER: &str = "encoder";

/// Which attention of an encoder–decoder a backbone reports (`--stack`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stack {
    /// The encoder's self-attention (the study's; every family's default).
    #[default]
    Encoder,
    /// The decoder's causal self-attention, the snippet teacher-forced; with the LM head
    /// (sequence-to-sequence surprisal).
    Decoder,
    /// The decoder's cross-attention: decoder positions (queries) over the encoder's
    /// (keys).
    Cross,
}

impl Stack {
    /// Every stack's name, as `--stack` takes them.
    pub const NAMES: [&'static str; 3] = ["encoder", "decoder", "cross"];

    pub fn name(self) -> &'static str {
        match self {
            Stack::Encoder => ENCODER,
            Stack::Decoder => "decoder",
            Stack::Cross => "cross",
        }
    }

    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "encoder" => Some(Stack::Encoder),
            "decoder" => Some(Stack::Decoder),
            "cross" => Some(Stack::Cross),
            _ => None,
        }
    }
}

/// The decoder input of the teacher-forced labels `ids`: `start` followed by `ids`
/// shifted right (the last label dropped), as `_shift_right` / `shift_tokens_right` build it.
pub(crate) fn shift_right(ids: &[u32], start: u32) -> Vec<u32> {
    let mut out = Vec::with_capacity(ids.len());
    if !ids.is_empty() {
        out.push(start);
        out.extend_from_slice(&ids[..ids.len() - 1]);
    }
    out
}

/// `[n, Q | K | V]` rows for the fused attention kernels from the decoder's queries `q`
/// (`[n, a]`) and the encoder's keys and values `kv` (`[n, 2a]`): cross-attention over as
/// many encoder positions as decoder positions (both read the snippet).
pub(crate) fn fuse_rows(q: &[f32], kv: &[f32], n: usize) -> Vec<f32> {
    let a = q.len() / n.max(1);
    let b = kv.len() / n.max(1);
    let mut out = Vec::with_capacity(q.len() + kv.len());
    for i in 0..n {
        out.extend_from_slice(&q[i * a..(i + 1) * a]);
        out.extend_from_slice(&kv[i * b..(i + 1) * b]);
    }
    out
}

/// Rows `[n, width]` of decoder positions moved to the index of the subword each reads:
/// index `i` takes position `(i + 1) % n` (module docs).
pub(crate) fn to_read_order(x: &[f32], n: usize, width: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(x.len());
    for i in 0..n {
        let p = (i + 1) % n;
        out.extend_from_slice(&x[p * width..(p + 1) * width]);
    }
    out
}

/// The inverse of [`to_read_order`]: position `p` from index `(p + n - 1) % n`.
pub(crate) fn from_read_order(x: &[f32], n: usize, width: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(x.len());
    for p in 0..n {
        let i = (p + n - 1) % n;
        out.extend_from_slice(&x[i * width..(i + 1) * width]);
    }
    out
}

/// Attention `[heads, n, n]` over decoder positions in read order: rows always, key
/// columns too when they are decoder positions (`keys_decoder`: self-attention).
pub(crate) fn probs_to_read_order(
    p: &[f32],
    heads: usize,
    n: usize,
    keys_decoder: bool,
) -> Vec<f32> {
    let mut out = Vec::with_capacity(p.len());
    for h in 0..heads {
        let block = &p[h * n * n..(h + 1) * n * n];
        for i in 0..n {
            let row = &block[((i + 1) % n) * n..((i + 1) % n + 1) * n];
            if keys_decoder {
                out.extend((0..n).map(|j| row[(j + 1) % n]));
            } else {
                out.extend_from_slice(row);
            }
        }
    }
    out
}

/// What a family provides for the decoder stacks ([`forward_stack`]). Decoder positions
/// are in decoder order here; [`forward_stack`] moves them to read order.
pub(crate) trait Seq2Seq {
    fn decoder_layers(&self) -> usize;
    fn decoder_heads(&self) -> usize;
    fn d_model(&self) -> usize;
    fn vocab(&self) -> usize;
    /// Maximum tokens per input (encoder and decoder alike).
    fn window(&self) -> usize;
    /// The encoder's last hidden state `[n, d_model]` (what cross-attention reads).
    fn encode(&self, ids: &[u32]) -> Result<Vec<f32>>;
    /// The decoder input for the labels `ids`.
    fn decoder_input(&self, ids: &[u32]) -> Vec<u32>;
    /// The decoder's embeddings of `dec` `[n, d_model]` (its hidden state 0).
    fn decoder_embed(&self, dec: &[u32]) -> Vec<f32>;
    /// Decoder layer `layer` on the residual stream `x` (`[n, d_model]`, replaced by the
    /// layer's output) over the encoder output `enc`, with `iv` (in decoder order)
    /// applied to its self-attention, or with `cross` to its cross-attention; returns the
    /// probabilities `[heads, n, n]` of that attention.
    fn decoder_layer(
        &self,
        layer: usize,
        x: &mut Vec<f32>,
        enc: &[f32],
        cross: bool,
        iv: Option<&Intervention>,
    ) -> Vec<f32>;
    /// The decoder's last hidden state from the last layer's output (T5's final norm;
    /// BART's decoder has none).
    fn decoder_final(&self, x: &[f32]) -> Vec<f32>;
    /// LM-head logits `[rows, vocab]` of `rows` last hidden states.
    fn lm_logits(&self, last: &[f32], rows: usize) -> Vec<f32>;
}

/// Rows of logits per block handed to a sink.
const LOGIT_ROWS: usize = 64;

/// The stack a language-model pass runs on, refusing a stack without the LM head: the
/// decoder stack has one; the cross stack runs the decoder's (with the intervention on
/// the cross-attention) only when [`super::ForwardOptions::cross_lm`] asks (the causal
/// tests); the encoder's pass gives attention, no surprisal.
pub(crate) fn lm_stack(stack: Stack, opts: &super::ForwardOptions) -> Result<Stack> {
    match stack {
        Stack::Decoder => Ok(Stack::Decoder),
        Stack::Cross if opts.cross_lm => Ok(Stack::Cross),
        Stack::Encoder => Err(Error::Compute(
            "the encoder stack has no language-model head (surprisal needs a causal \
             model, or --stack decoder for an encoder–decoder)"
                .into(),
        )),
        Stack::Cross => Err(Error::Compute(
            "surprisal comes from the decoder stack's LM head: use --stack decoder, not \
             --stack cross"
                .into(),
        )),
    }
}

/// The decoder or cross stack's forward pass (module docs): the encoder over `ids`, the
/// decoder over their shift, attention of the `stack` captured and, with `sink`, the LM
/// head's logits, every per-position result in read order. An intervention (given in
/// read order) applies to the attention of the stack: on the decoder stack the
/// decoder's self-attention, on the cross stack its cross-attention (knockout rows are
/// decoder positions, their keys encoder positions: [`to_decoder_order`]). The logit
/// lens reads the residual stream entering each decoder layer through the final norm
/// and the LM head, in read order like the logits, on either stack (the same stream).
pub(crate) fn forward_stack<M: Seq2Seq>(
    m: &M,
    stack: Stack,
    ids: &[u32],
    opts: &super::ForwardOptions,
    sink: Option<&mut super::LogitsSink>,
) -> Result<super::Capture> {
    super::check_ids(ids, m.window(), m.vocab())?;
    let cross = stack == Stack::Cross;
    let (n, d, heads) = (ids.len(), m.d_model(), m.decoder_heads());
    let layers = m.decoder_layers();
    if let Some(p) = opts.partial.filter(|p| p.first >= layers) {
        // The recorded state is the decoder's last hidden state (read order): only the LM
        // head runs (a patch of the last hidden state).
        if let Some(sink) = sink.filter(|_| p.logits) {
            if opts.cancelled(layers) {
                return Err(Error::Cancelled);
            }
            head_blocks(m, p.input, n, sink)?;
        }
        return Ok(super::Capture::new(n, heads, d));
    }
    let iv = match opts.intervention {
        Some(iv) => {
            iv.check(layers, heads, n)?;
            Some(to_decoder_order(iv, n, !cross))
        }
        None => None,
    };
    let lens = opts
        .lens
        .filter(|_| sink.is_some() && opts.partial.is_none());
    let mut residual = Vec::new();
    let mut capture = super::Capture::new(n, heads, d);
    let enc = m.encode(ids)?;
    let mut x = match &opts.partial {
        Some(p) => from_read_order(p.input, n, d),
        None => m.decoder_embed(&m.decoder_input(ids)),
    };
    if opts.hidden && opts.partial.is_none() {
        capture.push_hidden_host(&to_read_order(&x, n, d));
    }
    let (first, end) = opts.span(layers);
    let mut last = None;
    for li in first..end {
        if opts.cancelled(li) {
            return Err(Error::Cancelled);
        }
        if lens.is_some() {
            residual.push(x.clone());
        }
        let probs = m.decoder_layer(li, &mut x, &enc, cross, iv.as_ref());
        super::check_layer_host(&x, li)?;
        capture.keep_attention(opts, li, probs_to_read_order(&probs, heads, n, !cross))?;
        if li + 1 == layers {
            let f = m.decoder_final(&x);
            super::check_layer_host(&f, li)?;
            if opts.hidden {
                capture.push_hidden_host(&to_read_order(&f, n, d));
            }
            last = Some(f);
        } else if opts.hidden {
            capture.push_hidden_host(&to_read_order(&x, n, d));
        }
    }
    let Some(sink) = sink else {
        return Ok(capture);
    };
    let Some(last) = last else {
        // A partial pass that stops before the last layer runs no head.
        return Ok(capture);
    };
    if opts.partial.is_some_and(|p| !p.logits) {
        return Ok(capture);
    }
    if opts.cancelled(layers) {
        return Err(Error::Cancelled);
    }
    head_blocks(m, &to_read_order(&last, n, d), n, sink)?;
    if let Some(lens) = lens {
        // The residual stream entering each layer through the final norm and the head.
        for (l, r) in residual.iter().enumerate() {
            if opts.cancelled(layers) {
                return Err(Error::Cancelled);
            }
            let normed = to_read_order(&m.decoder_final(r), n, d);
            head_blocks(m, &normed, n, &mut |start, block| lens(l, start, block))?;
        }
    }
    Ok(capture)
}

/// Why CodeT5+'s cross stack takes no logit lens (the one-line refusal): its one layer
/// is a cross-attention inside the last decoder block, not a decoder layer of its own.
pub const CODET5P_CROSS_REFUSAL: &str = "the logit lens is not implemented on CodeT5+'s \
     cross stack (one cross-attention inside the last decoder block); run it on --stack \
     decoder";

/// The LM head over the last hidden states `last` (`[n, d_model]`, read order) into
/// `sink` in blocks of [`LOGIT_ROWS`], refusing non-finite logits.
pub(crate) fn head_blocks<M: Seq2Seq>(
    m: &M,
    last: &[f32],
    n: usize,
    sink: &mut super::LogitsSink,
) -> Result<()> {
    let d = m.d_model();
    let mut start = 0;
    while start < n {
        let rows = LOGIT_ROWS.min(n - start);
        let block = m.lm_logits(&last[start * d..(start + rows) * d], rows);
        let bad = codescope_kernels::analysis::count_non_finite(&block);
        if bad > 0 {
            return Err(Error::Compute(format!(
                "LM head: {bad} logits are NaN or infinite"
            )));
        }
        sink(start, &block)?;
        start += rows;
    }
    Ok(())
}

/// An intervention given in read order (subword indices, module docs) moved to decoder
/// positions: the knockout's query `p` takes read row `(p + n - 1) % n`; its keys move
/// from index `j` to position `(j + 1) % n` when they are decoder positions
/// (`keys_decoder`: self-attention), and stay where they are when they are the
/// encoder's (cross-attention). Ablations name layers and heads only.
pub(crate) fn to_decoder_order(iv: &Intervention, n: usize, keys_decoder: bool) -> Intervention {
    let knockout = iv.knockout.as_ref().map(|k| Knockout {
        layers: k.layers.clone(),
        heads: k.heads.clone(),
        rows: (0..n)
            .map(|p| {
                k.rows[(p + n - 1) % n]
                    .iter()
                    .filter(|&&j| (j as usize) < n)
                    .map(|&j| {
                        if keys_decoder {
                            ((j as usize + 1) % n) as u32
                        } else {
                            j
                        }
                    })
                    .collect()
            })
            .collect(),
    });
    Intervention {
        knockout,
        ablate: iv.ablate.clone(),
    }
}

/// A host copy of a tensor's values (row-major).
pub(crate) fn host(t: &Tensor) -> candle_core::Result<Vec<f32>> {
    t.flatten_all()?.to_vec1::<f32>()
}

/// A dense layer on the host: `w_kn` the checkpoint's `[out, in]` weight transposed to
/// `[in, out]` (`kernels::linear_kn`'s layout), an optional bias.
pub(crate) struct Linear {
    pub w_kn: Vec<f32>,
    pub b: Option<Vec<f32>>,
    pub inp: usize,
    pub out: usize,
}

impl Linear {
    /// `weight` (and `bias` when `bias`) under `vb`.
    pub fn load(inp: usize, out: usize, bias: bool, vb: VarBuilder) -> candle_core::Result<Self> {
        let w = host(&vb.get((out, inp), "weight")?)?;
        Ok(Linear {
            w_kn: kernels::transpose_to_kn(&w, out, inp),
            b: if bias {
                Some(host(&vb.get(out, "bias")?)?)
            } else {
                None
            },
            inp,
            out,
        })
    }

    /// Several layers with the same input stacked into one (fused Q|K|V): their outputs
    /// side by side, in order.
    pub fn fuse(parts: Vec<Linear>) -> Linear {
        let inp = parts.first().map_or(0, |p| p.inp);
        let out = parts.iter().map(|p| p.out).sum();
        let b = if parts.iter().all(|p| p.b.is_some()) {
            Some(
                parts
                    .iter()
                    .flat_map(|p| p.b.clone().unwrap_or_default())
                    .collect(),
            )
        } else {
            None
        };
        let mut w_kn = Vec::with_capacity(inp * out);
        for k in 0..inp {
            for p in &parts {
                w_kn.extend_from_slice(&p.w_kn[k * p.out..(k + 1) * p.out]);
            }
        }
        Linear { w_kn, b, inp, out }
    }

    /// `x · wᵀ (+ b) (+ residual)` for the `n` rows of `x`.
    pub fn apply(&self, x: &[f32], n: usize, residual: Option<&[f32]>) -> Vec<f32> {
        kernels::linear_kn_new(
            x,
            n,
            self.inp,
            &self.w_kn,
            self.out,
            self.b.as_deref(),
            residual,
        )
    }
}

/// A feed-forward activation as transformers' `ACT2FN` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Act {
    /// `gelu`: the exact (erf) GELU.
    GeluErf,
    /// `gelu_new` / `gelu_pytorch_tanh` / `gelu_fast`: the tanh approximation.
    GeluTanh,
    Relu,
    /// `silu` / `swish`.
    Silu,
}

impl Act {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "gelu" => Ok(Act::GeluErf),
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Ok(Act::GeluTanh),
            "relu" => Ok(Act::Relu),
            "silu" | "swish" => Ok(Act::Silu),
            other => Err(Error::Compute(format!(
                "unsupported activation '{other}' (supported: gelu, gelu_new, gelu_pytorch_tanh, relu, silu)"
            ))),
        }
    }

    pub fn apply(self, xs: &mut [f32]) {
        match self {
            Act::GeluErf => kernels::gelu_erf_inplace(xs),
            Act::GeluTanh => kernels::gelu_tanh_inplace(xs),
            Act::Relu => xs.iter_mut().for_each(|x| *x = x.max(0.0)),
            Act::Silu => xs.iter_mut().for_each(|x| *x /= 1.0 + kernels::exp(-*x)),
        }
    }
}

/// LayerNorm (`weight`, `bias`) on the host.
pub(crate) struct LayerNorm {
    w: Vec<f32>,
    b: Vec<f32>,
    eps: f32,
}

impl LayerNorm {
    pub fn load(size: usize, eps: f64, vb: VarBuilder) -> candle_core::Result<Self> {
        Ok(LayerNorm {
            w: host(&vb.get(size, "weight")?)?,
            b: host(&vb.get(size, "bias")?)?,
            eps: eps as f32,
        })
    }

    pub fn apply(&self, xs: &mut [f32]) {
        kernels::layer_norm_inplace(xs, self.w.len(), &self.w, &self.b, self.eps);
    }
}

/// The first of `prefixes` under which `vb` holds tensor `probe` (`""` is `vb` itself).
pub(crate) fn find_prefix<'a>(
    vb: &VarBuilder<'a>,
    prefixes: &[&str],
    probe: &str,
) -> Option<VarBuilder<'a>> {
    prefixes
        .iter()
        .map(|p| if p.is_empty() { vb.clone() } else { vb.pp(p) })
        .find(|v| v.contains_tensor(probe))
}
