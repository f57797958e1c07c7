//! CodeT5+ 2B, 6B and 16B (`model_type: codet5p`, `CodeT5pEncoderDecoderModel`):
//! an encoder and a decoder made of CodeGen blocks, as the modelling code released with
//! those checkpoints (`modeling_codet5p.py`, not part of transformers) defines them.
//! Checked against that code by `tools/reference/tiny_codet5p_reference.py`.
//!
//! - Config: the composition of two `CodeT5pModuleConfig`s, `encoder` and `decoder`
//!   (CodeGen's keys: `n_embd`, `n_layer`, `n_head`, `rotary_dim`, `n_inner`, ...); the
//!   two have their own widths, heads and rotary widths (2B: a 20-layer encoder 1024 wide,
//!   a 32-layer decoder 2560 wide).
//! - Every block is CodeGen's (`codegen` module docs): one `ln_1` feeding attention and
//!   MLP in parallel, the fused `qkv_proj` in `mp_num = 4` shards of `[q | v | k]`, GPT-J
//!   rotary on the first `rotary_dim` features of each head, scores in f32 over
//!   `sqrt(head_dim)`, no biases in attention.
//! - The encoder (`is_decoder: false`) attends BIDIRECTIONALLY: the released attention
//!   applies its causal mask only in a decoder. Its `ln_f` output is the encoder's output.
//! - `enc_to_dec_proj` (a Linear with bias) maps that output to the decoder's width when
//!   the widths differ.
//! - The decoder is causal, and only its LAST block has a cross-attention
//!   (`add_cross_attention` and `layer_idx == n_layer - 1`): from the same `ln_1` output,
//!   `q_attn` gives the queries and `qkv_proj` over the (projected) encoder output gives
//!   4 shards of `[v | k]`; rotary on the queries at decoder positions and on the keys at
//!   encoder positions; no mask. It is added in parallel too:
//!   `x = attn + xattn + mlp + x`.
//! - Nothing is shared: the encoder's `wte`, the decoder's `wte` and its LM head (with
//!   bias, `decoder.lm_head`) are separate tensors.
//!
//! codescope's stacks (`encdec` module docs for the teacher-forced decoder and the read
//! order): `encoder` (the encoder's self-attention, its layers and heads), `decoder` (the
//! decoder's causal self-attention, every decoder layer, with the LM head), and `cross`:
//! ONE layer, the last decoder block's cross-attention, whose hidden states are the
//! residual stream entering that block and the decoder's last hidden state (the causal
//! tests' knockout and head ablation apply to that cross-attention, the LM head after it;
//! the logit lens is refused there, [`super::encdec::CODET5P_CROSS_REFUSAL`]). The decoder
//! reads `start, s_0 .. s_{n-2}` with `start` the `decoder_start_token_id` (top level, or
//! else the decoder sub-config's: the 2B's is 50256, `<|endoftext|>`).

use candle_nn::VarBuilder;
use serde::Deserialize;

use super::encdec::{
    forward_stack, from_read_order, fuse_rows, head_blocks, host, probs_to_read_order, shift_right,
    to_decoder_order, to_read_order, Act, LayerNorm, Linear, Seq2Seq, Stack, CODET5P_CROSS_REFUSAL,
};
use super::intervene::Intervention;
use super::kernels;
use super::{Backbone, Capture, ForwardOptions, LogitsSink};
use crate::error::{Error, Result};

/// The released code's fixed number of model-parallel shards in `qkv_proj`.
const MP_NUM: usize = 4;

/// One `CodeT5pModuleConfig` (the `encoder` or `decoder` of a `codet5p` config.json).
#[derive(Debug, Clone, Deserialize)]
pub struct CodeT5pModuleConfig {
    pub vocab_size: usize,
    pub n_embd: usize,
    pub n_layer: usize,
    pub n_head: usize,
    pub n_positions: usize,
    #[serde(default)]
    pub rotary_dim: Option<usize>,
    #[serde(default)]
    pub n_inner: Option<usize>,
    #[serde(default = "default_act")]
    pub activation_function: String,
    #[serde(default = "default_eps")]
    pub layer_norm_epsilon: f64,
    #[serde(default)]
    pub is_decoder: bool,
    #[serde(default)]
    pub add_cross_attention: bool,
    #[serde(default)]
    pub cross_attention_hidden_size: Option<usize>,
    #[serde(default)]
    pub decoder_start_token_id: Option<u32>,
    #[serde(default)]
    pub tie_word_embeddings: bool,
}

fn default_act() -> String {
    "gelu_new".into()
}
fn default_eps() -> f64 {
    1e-5
}

/// A `codet5p` config.json (`CodeT5pConfig`).
#[derive(Debug, Clone, Deserialize)]
pub struct CodeT5pConfig {
    pub encoder: CodeT5pModuleConfig,
    pub decoder: CodeT5pModuleConfig,
    #[serde(default)]
    pub decoder_start_token_id: Option<u32>,
    #[serde(default)]
    pub tie_encoder_decoder: bool,
}

impl CodeT5pModuleConfig {
    fn head_dim(&self) -> usize {
        self.n_embd / self.n_head.max(1)
    }

    fn validate(&self, which: &str) -> std::result::Result<(), String> {
        super::check_eps("layer_norm_epsilon", self.layer_norm_epsilon)
            .map_err(|e| format!("{which}: {e}"))?;
        Act::parse(&self.activation_function).map_err(|e| format!("{which}: {e}"))?;
        if self.n_head == 0 || !self.n_embd.is_multiple_of(self.n_head) {
            return Err(format!(
                "{which}: n_embd {} is not a multiple of n_head {}",
                self.n_embd, self.n_head
            ));
        }
        if !self.n_head.is_multiple_of(MP_NUM) {
            return Err(format!(
                "{which}: n_head {} is not a multiple of the {MP_NUM} qkv shards",
                self.n_head
            ));
        }
        let d = self.head_dim();
        match self.rotary_dim {
            Some(r) if r % 2 == 0 && r <= d => Ok(()),
            // The released `CodeT5pModel` takes `min(rotary_dim, ...)`: it needs one.
            None => Err(format!("{which}: rotary_dim is not set")),
            Some(r) => Err(format!(
                "{which}: rotary_dim {r} must be even and at most head_dim {d}"
            )),
        }
    }
}

impl CodeT5pConfig {
    /// Refuse what codescope does not implement (as a one-line reason).
    pub fn validate(&self) -> std::result::Result<(), String> {
        self.encoder.validate("encoder")?;
        self.decoder.validate("decoder")?;
        if self.tie_encoder_decoder {
            return Err("tie_encoder_decoder is not implemented".into());
        }
        if self.decoder.cross_attention_hidden_size.is_some() {
            return Err(
                "decoder.cross_attention_hidden_size is not implemented (the released \
                 checkpoints leave it null and project with enc_to_dec_proj)"
                    .into(),
            );
        }
        Ok(())
    }

    /// What the decoder stacks need besides the encoder's.
    pub fn validate_decoder(&self) -> std::result::Result<(), String> {
        if !self.decoder.add_cross_attention {
            return Err(
                "decoder.add_cross_attention is false: this decoder does not read the encoder"
                    .into(),
            );
        }
        if self.start().is_none() {
            return Err("no decoder_start_token_id (top level or in decoder)".into());
        }
        Ok(())
    }

    fn start(&self) -> Option<u32> {
        self.decoder_start_token_id
            .or(self.decoder.decoder_start_token_id)
    }

    /// Maximum tokens per input: both stacks read the snippet.
    pub fn window(&self) -> usize {
        self.encoder.n_positions.min(self.decoder.n_positions)
    }
}

/// `weight` `[out, in]` under `vb` with its rows taken in the order `rows`.
fn load_rows(inp: usize, rows: &[usize], vb: VarBuilder) -> candle_core::Result<Linear> {
    let full = rows.len();
    let w = host(&vb.get((full, inp), "weight")?)?;
    let mut permuted = Vec::with_capacity(w.len());
    for &r in rows {
        permuted.extend_from_slice(&w[r * inp..(r + 1) * inp]);
    }
    Ok(Linear {
        w_kn: kernels::transpose_to_kn(&permuted, full, inp),
        b: None,
        inp,
        out: full,
    })
}

/// Rows of a sharded projection of `parts` blocks per shard (`[q | v | k]`: 3, `[v | k]`:
/// 2) taking the blocks in the order `take`: output feature `i` of block `part` is row
/// `(i / L) * parts * L + part * L + i % L` with `L = hidden / 4`.
fn shard_rows(hidden: usize, parts: usize, take: &[usize]) -> Vec<usize> {
    let l = hidden / MP_NUM;
    take.iter()
        .flat_map(|&part| (0..hidden).map(move |i| (i / l) * parts * l + part * l + i % l))
        .collect()
}

/// The last decoder block's cross-attention.
struct Cross {
    q: Linear,
    /// Rows permuted to `K | V`.
    kv: Linear,
    out: Linear,
}

struct Block {
    ln_1: LayerNorm,
    /// Rows permuted to `Q | K | V`.
    qkv: Linear,
    out_proj: Linear,
    fc_in: Linear,
    fc_out: Linear,
    cross: Option<Cross>,
}

/// The encoder's or the decoder's blocks (a `CodeT5pModel`).
struct Side {
    cfg: CodeT5pModuleConfig,
    act: Act,
    /// `wte` `[vocab, n_embd]`.
    wte: Vec<f32>,
    blocks: Vec<Block>,
    ln_f: LayerNorm,
    inv_freq: Vec<f32>,
    causal: bool,
}

impl Side {
    fn load(cfg: &CodeT5pModuleConfig, vb: VarBuilder, with_cross: bool) -> Result<Self> {
        let (h, eps) = (cfg.n_embd, cfg.layer_norm_epsilon);
        let inner = cfg.n_inner.unwrap_or(4 * h);
        let qkv_rows = shard_rows(h, 3, &[0, 2, 1]);
        let kv_rows = shard_rows(h, 2, &[1, 0]);
        let wte = host(&vb.pp("wte").get((cfg.vocab_size, h), "weight")?)?;
        let last = cfg.n_layer.saturating_sub(1);
        let blocks = (0..cfg.n_layer)
            .map(|i| {
                let b = vb.pp("h").pp(i);
                let cross = if with_cross && i == last {
                    let c = b.pp("crossattention");
                    Some(Cross {
                        q: Linear::load(h, h, false, c.pp("q_attn"))?,
                        kv: load_rows(h, &kv_rows, c.pp("qkv_proj"))?,
                        out: Linear::load(h, h, false, c.pp("out_proj"))?,
                    })
                } else {
                    None
                };
                Ok(Block {
                    ln_1: LayerNorm::load(h, eps, b.pp("ln_1"))?,
                    qkv: load_rows(h, &qkv_rows, b.pp("attn").pp("qkv_proj"))?,
                    out_proj: Linear::load(h, h, false, b.pp("attn").pp("out_proj"))?,
                    fc_in: Linear::load(h, inner, true, b.pp("mlp").pp("fc_in"))?,
                    fc_out: Linear::load(inner, h, true, b.pp("mlp").pp("fc_out"))?,
                    cross,
                })
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        // `fixed_pos_embedding`: `1 / 10000 ** (arange(0, dim, 2) / dim)` in f32.
        let inv_freq = super::rope::Rope {
            theta: 10_000.0,
            factor: 1.0,
        }
        .inv_freq(cfg.rotary_dim.unwrap_or(0));
        Ok(Side {
            act: Act::parse(&cfg.activation_function)?,
            wte,
            blocks,
            ln_f: LayerNorm::load(h, eps, vb.pp("ln_f"))?,
            inv_freq,
            causal: cfg.is_decoder,
            cfg: cfg.clone(),
        })
    }

    fn embed(&self, ids: &[u32]) -> Vec<f32> {
        let d = self.cfg.n_embd;
        let mut x = Vec::with_capacity(ids.len() * d);
        for &id in ids {
            x.extend_from_slice(&self.wte[id as usize * d..(id as usize + 1) * d]);
        }
        x
    }

    /// GPT-J rotary on the first `rotary_dim` features of every head of `width` features
    /// starting at `from` in each of the rows `[n, stride]` (row `p` at position `p`).
    fn rotate(&self, x: &mut [f32], stride: usize, from: usize, width: usize) {
        let d = self.cfg.head_dim();
        let half = self.inv_freq.len();
        let n = x.len() / stride.max(1);
        let (cos, sin) = super::rope::tables(&self.inv_freq, n);
        for (p, row) in x.chunks_exact_mut(stride).enumerate() {
            let (c, s) = (
                &cos[p * half..(p + 1) * half],
                &sin[p * half..(p + 1) * half],
            );
            for head in row[from..from + width].chunks_exact_mut(d) {
                for i in 0..half {
                    let (a, z) = (head[2 * i], head[2 * i + 1]);
                    head[2 * i] = a * c[i] - z * s[i];
                    head[2 * i + 1] = z * c[i] + a * s[i];
                }
            }
        }
    }

    /// Block `li` on the residual stream `x` (`[n, n_embd]`, replaced by its output), with
    /// `iv` on its self-attention and, when the block has one, its cross-attention over
    /// `enc` (`[n, n_embd]`). Returns the self-attention's probabilities `[heads, n, n]`
    /// and the cross-attention's.
    fn block(
        &self,
        li: usize,
        x: &mut [f32],
        enc: Option<&[f32]>,
        iv: Option<&Intervention>,
    ) -> (Vec<f32>, Option<Vec<f32>>) {
        self.block_with(li, x, enc, iv, None)
    }

    /// [`Side::block`] with `cross_iv` (in decoder order, its layer 0) applied to the
    /// block's cross-attention: the cross stack's one layer.
    fn block_with(
        &self,
        li: usize,
        x: &mut [f32],
        enc: Option<&[f32]>,
        iv: Option<&Intervention>,
        cross_iv: Option<&Intervention>,
    ) -> (Vec<f32>, Option<Vec<f32>>) {
        let b = &self.blocks[li];
        let (h, heads, d) = (self.cfg.n_embd, self.cfg.n_head, self.cfg.head_dim());
        let n = x.len() / h;
        let scale = 1.0 / (d as f32).sqrt();
        let mut hs = x.to_vec();
        b.ln_1.apply(&mut hs);
        let mut qkv = b.qkv.apply(&hs, n, None);
        self.rotate(&mut qkv, 3 * h, 0, 2 * h);
        let mut ctx = vec![0.0f32; n * h];
        let mut probs =
            kernels::attention_probs(&qkv, n, heads, d, scale, self.causal, None, &mut ctx);
        super::intervene::after_softmax(iv, li, &mut probs, &qkv, n, heads, d, &mut ctx);
        let mut out = b.out_proj.apply(&ctx, n, None);
        let mut cross_probs = None;
        if let (Some(c), Some(enc)) = (&b.cross, enc) {
            let mut q = c.q.apply(&hs, n, None);
            self.rotate(&mut q, h, 0, h);
            let mut kv = c.kv.apply(enc, n, None);
            self.rotate(&mut kv, 2 * h, 0, h);
            let fused = fuse_rows(&q, &kv, n);
            let mut ctx = vec![0.0f32; n * h];
            let mut p = kernels::attention_probs(&fused, n, heads, d, scale, false, None, &mut ctx);
            super::intervene::after_softmax_cross(
                cross_iv, 0, &mut p, &fused, n, heads, d, &mut ctx,
            );
            let xattn = c.out.apply(&ctx, n, None);
            out.iter_mut().zip(&xattn).for_each(|(a, b)| *a += b);
            cross_probs = Some(p);
        }
        let mut ff = b.fc_in.apply(&hs, n, None);
        self.act.apply(&mut ff);
        let ff = b.fc_out.apply(&ff, n, None);
        for ((xi, a), f) in x.iter_mut().zip(&out).zip(&ff) {
            *xi += a + f;
        }
        (probs, cross_probs)
    }

    fn finish(&self, x: &[f32]) -> Vec<f32> {
        let mut f = x.to_vec();
        self.ln_f.apply(&mut f);
        f
    }
}

struct Decoder {
    side: Side,
    /// `enc_to_dec_proj` when the widths differ.
    proj: Option<Linear>,
    /// `decoder.lm_head.weight` `[vocab, n_embd]` and its bias.
    lm_head: Vec<f32>,
    lm_bias: Option<Vec<f32>>,
    start: u32,
}

/// A loaded CodeT5+ encoder–decoder: its encoder, and with the decoder stacks its decoder.
pub struct CodeT5p {
    cfg: CodeT5pConfig,
    encoder: Side,
    decoder: Option<Decoder>,
    stack: Stack,
}

impl CodeT5p {
    /// Build from a `VarBuilder` with the released checkpoint's names (`encoder.wte`,
    /// `encoder.h.N.*`, `encoder.ln_f`; `decoder.transformer.*`, `decoder.lm_head.*`,
    /// `enc_to_dec_proj.*`). The `causal_mask` buffers old checkpoints carry are not read.
    pub fn load(cfg: CodeT5pConfig, stack: Stack, vb: VarBuilder) -> Result<Self> {
        if !vb.contains_tensor("encoder.h.0.attn.qkv_proj.weight") {
            return Err(Error::Compute(
                "no tensor 'encoder.h.0.attn.qkv_proj.weight': not a CodeT5+ (codet5p) \
                 checkpoint"
                    .into(),
            ));
        }
        let encoder = Side::load(&cfg.encoder, vb.pp("encoder"), false)?;
        let decoder = if stack == Stack::Encoder {
            None
        } else {
            let t = vb.pp("decoder").pp("transformer");
            if !t.contains_tensor("h.0.attn.qkv_proj.weight") {
                return Err(Error::Compute(
                    "no tensor 'decoder.transformer.h.0.attn.qkv_proj.weight': the checkpoint \
                     has no decoder; use --stack encoder"
                        .into(),
                ));
            }
            let dc = &cfg.decoder;
            let side = Side::load(dc, t, true)?;
            let (eh, dh) = (cfg.encoder.n_embd, dc.n_embd);
            let proj = if eh != dh {
                Some(Linear::load(eh, dh, true, vb.pp("enc_to_dec_proj"))?)
            } else {
                None
            };
            let head = vb.pp("decoder").pp("lm_head");
            let lm_head = if dc.tie_word_embeddings && !head.contains_tensor("weight") {
                side.wte.clone()
            } else {
                host(&head.get((dc.vocab_size, dh), "weight")?)?
            };
            let lm_bias = if head.contains_tensor("bias") {
                Some(host(&head.get(dc.vocab_size, "bias")?)?)
            } else {
                None
            };
            Some(Decoder {
                side,
                proj,
                lm_head,
                lm_bias,
                start: cfg.start().unwrap_or(0),
            })
        };
        Ok(CodeT5p {
            cfg,
            encoder,
            decoder,
            stack,
        })
    }

    fn dec(&self) -> &Decoder {
        self.decoder
            .as_ref()
            .expect("the decoder stacks load the decoder")
    }

    /// The encoder stack's forward pass with capture.
    fn encoder_forward(&self, ids: &[u32], opts: &ForwardOptions) -> Result<Capture> {
        let e = &self.encoder;
        super::check_ids(ids, self.cfg.window(), e.cfg.vocab_size)?;
        let (n, heads, h) = (ids.len(), e.cfg.n_head, e.cfg.n_embd);
        let layers = e.blocks.len();
        let (mut capture, mut x, (first, end)) =
            opts.begin(n, layers, heads, h, || e.embed(ids))?;
        for li in first..end {
            if opts.cancelled(li) {
                return Err(Error::Cancelled);
            }
            let (probs, _) = e.block(li, &mut x, None, opts.intervention);
            super::check_layer_host(&x, li)?;
            capture.keep_attention(opts, li, probs)?;
            if opts.hidden {
                if li + 1 == layers {
                    let last = e.finish(&x);
                    super::check_layer_host(&last, li)?;
                    capture.push_hidden_host(&last);
                } else {
                    capture.push_hidden_host(&x);
                }
            }
        }
        Ok(capture)
    }

    /// The cross stack (module docs): one layer, the last decoder block's
    /// cross-attention, in read order. An intervention applies to that cross-attention
    /// (its layer 0; knockout rows in read order, keys the encoder's positions); with
    /// `sink` the decoder's LM head runs after it (the causal tests' passes,
    /// [`ForwardOptions::cross_lm`]). A partial pass starts from the residual stream
    /// entering the last block (hidden state 0), or from the last hidden state (1: the
    /// head alone).
    fn cross_forward(
        &self,
        ids: &[u32],
        opts: &ForwardOptions,
        sink: Option<&mut LogitsSink>,
    ) -> Result<Capture> {
        super::check_ids(ids, self.cfg.window(), self.cfg.decoder.vocab_size)?;
        if opts.lens.is_some() {
            return Err(Error::Compute(CODET5P_CROSS_REFUSAL.into()));
        }
        let dec = self.dec();
        let (n, h, heads) = (ids.len(), dec.side.cfg.n_embd, dec.side.cfg.n_head);
        let last = dec.side.blocks.len() - 1;
        let iv = match opts.intervention {
            Some(iv) => {
                iv.check(1, heads, n)?;
                Some(to_decoder_order(iv, n, false))
            }
            None => None,
        };
        let mut capture = Capture::new(n, heads, h);
        if let Some(p) = opts.partial.filter(|p| p.first >= 1) {
            if let Some(sink) = sink.filter(|_| p.logits) {
                head_blocks(self, p.input, n, sink)?;
            }
            return Ok(capture);
        }
        let enc = self.encode(ids)?;
        let mut x = match &opts.partial {
            Some(p) => from_read_order(p.input, n, h),
            None => {
                let mut x = dec.side.embed(&self.decoder_input(ids));
                for li in 0..last {
                    if opts.cancelled(0) {
                        return Err(Error::Cancelled);
                    }
                    dec.side.block(li, &mut x, Some(&enc), None);
                    super::check_layer_host(&x, li)?;
                }
                x
            }
        };
        if opts.hidden && opts.partial.is_none() {
            capture.push_hidden_host(&to_read_order(&x, n, h));
        }
        let (first, end) = opts.span(1);
        if first >= end {
            return Ok(capture);
        }
        if opts.cancelled(0) {
            return Err(Error::Cancelled);
        }
        let (_, cross) = dec
            .side
            .block_with(last, &mut x, Some(&enc), None, iv.as_ref());
        let cross = cross.ok_or_else(|| {
            Error::Compute("the last decoder block has no cross-attention".into())
        })?;
        super::check_layer_host(&x, 0)?;
        capture.keep_attention(opts, 0, probs_to_read_order(&cross, heads, n, false))?;
        let f = dec.side.finish(&x);
        super::check_layer_host(&f, 0)?;
        let f = to_read_order(&f, n, h);
        if opts.hidden {
            capture.push_hidden_host(&f);
        }
        if let Some(sink) = sink {
            if opts.partial.is_none_or(|p| p.logits) {
                if opts.cancelled(1) {
                    return Err(Error::Cancelled);
                }
                head_blocks(self, &f, n, sink)?;
            }
        }
        Ok(capture)
    }
}

impl Backbone for CodeT5p {
    fn layers(&self) -> usize {
        match self.stack {
            Stack::Encoder => self.cfg.encoder.n_layer,
            Stack::Decoder => self.cfg.decoder.n_layer,
            Stack::Cross => 1,
        }
    }
    fn heads(&self) -> usize {
        match self.stack {
            Stack::Encoder => self.cfg.encoder.n_head,
            _ => self.cfg.decoder.n_head,
        }
    }
    fn hidden_size(&self) -> usize {
        match self.stack {
            Stack::Encoder => self.cfg.encoder.n_embd,
            _ => self.cfg.decoder.n_embd,
        }
    }
    fn window(&self) -> usize {
        self.cfg.window()
    }
    fn vocab_size(&self) -> usize {
        match self.stack {
            Stack::Encoder => self.cfg.encoder.vocab_size,
            _ => self.cfg.decoder.vocab_size,
        }
    }
    fn stack(&self) -> Option<&'static str> {
        Some(self.stack.name())
    }
    fn causal(&self) -> bool {
        match self.stack {
            Stack::Encoder => self.encoder.causal,
            Stack::Decoder => true,
            Stack::Cross => false,
        }
    }

    fn forward(&self, ids: &[u32], opts: &ForwardOptions) -> Result<Capture> {
        match self.stack {
            Stack::Encoder => self.encoder_forward(ids, opts),
            Stack::Decoder => forward_stack(self, Stack::Decoder, ids, opts, None),
            Stack::Cross => self.cross_forward(ids, opts, None),
        }
    }

    fn forward_lm(
        &self,
        ids: &[u32],
        opts: &ForwardOptions,
        sink: &mut LogitsSink,
    ) -> Result<Capture> {
        if super::encdec::lm_stack(self.stack, opts)? == Stack::Cross {
            return self.cross_forward(ids, opts, Some(sink));
        }
        forward_stack(self, Stack::Decoder, ids, opts, Some(sink))
    }
}

impl Seq2Seq for CodeT5p {
    fn decoder_layers(&self) -> usize {
        self.cfg.decoder.n_layer
    }
    fn decoder_heads(&self) -> usize {
        self.cfg.decoder.n_head
    }
    fn d_model(&self) -> usize {
        self.cfg.decoder.n_embd
    }
    fn vocab(&self) -> usize {
        self.cfg.decoder.vocab_size
    }
    fn window(&self) -> usize {
        self.cfg.window()
    }

    /// The encoder's output through `enc_to_dec_proj`: what the cross-attention reads.
    fn encode(&self, ids: &[u32]) -> Result<Vec<f32>> {
        let e = &self.encoder;
        let mut x = e.embed(ids);
        for li in 0..e.blocks.len() {
            e.block(li, &mut x, None, None);
            super::check_layer_host(&x, li)?;
        }
        let out = e.finish(&x);
        Ok(match &self.dec().proj {
            Some(p) => p.apply(&out, ids.len(), None),
            None => out,
        })
    }

    fn decoder_input(&self, ids: &[u32]) -> Vec<u32> {
        shift_right(ids, self.dec().start)
    }

    fn decoder_embed(&self, dec: &[u32]) -> Vec<f32> {
        self.dec().side.embed(dec)
    }

    fn decoder_layer(
        &self,
        layer: usize,
        x: &mut Vec<f32>,
        enc: &[f32],
        cross: bool,
        iv: Option<&Intervention>,
    ) -> Vec<f32> {
        let (probs, cross_probs) = self.dec().side.block(layer, x, Some(enc), iv);
        match cross_probs {
            Some(c) if cross => c,
            _ => probs,
        }
    }

    fn decoder_final(&self, x: &[f32]) -> Vec<f32> {
        self.dec().side.finish(x)
    }

    fn lm_logits(&self, last: &[f32], rows: usize) -> Vec<f32> {
        let dec = self.dec();
        let (d, vocab) = (dec.side.cfg.n_embd, dec.side.cfg.vocab_size);
        let mut out = vec![0.0f32; rows * vocab];
        kernels::linear(
            last,
            rows,
            d,
            &dec.lm_head,
            vocab,
            dec.lm_bias.as_deref(),
            None,
            &mut out,
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_rows_undo_the_mp_shards() {
        // hidden 8: 4 shards of L = 2. Self-attention `[q q v v k k]` per shard to Q|K|V.
        let rows = shard_rows(8, 3, &[0, 2, 1]);
        assert_eq!(&rows[..8], &[0, 1, 6, 7, 12, 13, 18, 19]);
        assert_eq!(&rows[8..16], &[4, 5, 10, 11, 16, 17, 22, 23]);
        assert_eq!(&rows[16..], &[2, 3, 8, 9, 14, 15, 20, 21]);
        // Cross-attention `[v v k k]` per shard to K|V.
        let rows = shard_rows(8, 2, &[1, 0]);
        assert_eq!(&rows[..8], &[2, 3, 6, 7, 10, 11, 14, 15]);
        assert_eq!(&rows[8..], &[0, 1, 4, 5, 8, 9, 12, 13]);
    }
}
