//! GGUF weights kept block-quantized (`--weights native`, the default for GGUF files, and
//! `--weights kernels`): the projections and MLP matrices of every layer, the token
//! embedding and the LM head stay in the file's llama.cpp types (Q4_0, Q4_1, Q5_0, Q5_1,
//! Q8_0, Q2_K–Q6_K: candle's `QTensor`). Norms, biases and Qwen3's / Gemma 3's per-head
//! norms stay f32; the embedding is looked up row-wise (`QTensor::embedding`: the rows
//! dequantized exactly as a whole-tensor dequantization would).
//!
//! How a product with a quantized matrix is computed:
//! - `native`: the matrix is dequantized for the product into a transient f32 buffer (one
//!   projection's — a fused one's parts side by side —, freed after it; the LM head in
//!   slices of its rows) and multiplied by gemm as the f32 path multiplies it. codescope
//!   runs whole sequences (hundreds of rows per product), where the product costs far
//!   more than the dequantization: the memory of the quantized file at about the f32
//!   path's speed, and its values (docs/performance.md).
//! - `kernels`: candle's quantized matmul (`candle_core::quantized::QMatMul`, CPU kernels,
//!   activations f32 quantized per row to the kernel's dot-product type on the fly) for
//!   the types it has a SIMD dot product for ([`has_kernel`]; the others as in `native`).
//!   The activations' 8-bit rounding changes the results: measured on Gemma 3 270M it
//!   misses codescope's agreement bounds (docs/performance.md), hence not the default.
//!
//! Half-precision safetensors checkpoints (f16 / bf16) of the Llama and Gemma families are
//! held the same way: their projections, MLP, embedding and LM head stay 16-bit
//! ([`super::weights::half_matrices`]: `QTensor`s of candle's F16 / BF16 types) and are
//! converted to f32 for each product exactly as a quantized matrix is (`native`; candle
//! has no SIMD kernel for them, so `kernels` is `native` there). Each value converts to
//! the f32 the load-time conversion gives, so the products are the f32 path's.
//!
//! `--weights f32` keeps the path that converts every tensor to f32 at load
//! ([`super::gguf`], [`super::weights::var_builder`]); PyTorch checkpoints, f32
//! safetensors and the other families are always f32.
//! Everything after a projection (attention probabilities, hidden states, the logit lens,
//! the interventions) runs as before: only the matrix products differ.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{Module, Tensor};

/// How GGUF and half-precision safetensors weights are held in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum WeightsMode {
    /// Block-quantized (or f16 / bf16) as in the file, each matrix dequantized for its
    /// product (the default).
    #[default]
    Native,
    /// Block-quantized, multiplied with candle's quantized kernels where it has them.
    Kernels,
    /// Every tensor dequantized to f32 at load (the reference path).
    F32,
}

impl WeightsMode {
    /// The option's value (`native`, `f32`).
    pub fn name(self) -> &'static str {
        match self {
            WeightsMode::Native => "native",
            WeightsMode::Kernels => "kernels",
            WeightsMode::F32 => "f32",
        }
    }
}

static MODE: AtomicU8 = AtomicU8::new(0);

/// Hold GGUF and half-precision weights as `mode` says for the models loaded from now on (the binary sets
/// it from `--weights`).
pub fn set_mode(mode: WeightsMode) {
    let v = match mode {
        WeightsMode::Native => 0,
        WeightsMode::F32 => 1,
        WeightsMode::Kernels => 2,
    };
    MODE.store(v, Ordering::Relaxed);
}

/// The mode [`set_mode`] set (default [`WeightsMode::Native`]).
pub fn mode() -> WeightsMode {
    match MODE.load(Ordering::Relaxed) {
        1 => WeightsMode::F32,
        2 => WeightsMode::Kernels,
        _ => WeightsMode::Native,
    }
}

static PACKING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The most bytes of layer matrices packed in f32 ([`set_packing`]): 1 GiB, the layers of
/// models of up to about 250M parameters (Gemma 3 270M's: 402 MB).
pub const PACK_LIMIT: u64 = 1 << 30;

/// Hold the layers' quantized (or half) matrices of the models loaded from now on packed
/// in f32 after their first product, when they take at most [`PACK_LIMIT`] as f32 and the
/// CPU has the packed product (AVX2 or wider; `--weights native` only). The causal
/// commands set it: they run the same weights dozens of times (an ablation grid 73
/// passes), where dequantizing and re-packing every matrix for every product took a third
/// of the time. Every product of a packed matrix is the same packed product, so the
/// passes of one process stay comparable bit for bit.
pub fn set_packing(on: bool) {
    PACKING.store(on, Ordering::Relaxed);
}

/// Whether layer matrices taking `layers_f32` bytes as f32 are packed ([`set_packing`]).
pub fn packs(layers_f32: u64) -> bool {
    use codescope_kernels::{head::PackedF32Head, isa};
    PACKING.load(Ordering::Relaxed)
        && layers_f32 <= PACK_LIMIT
        && PackedF32Head::runs_at(isa::active())
}

/// Whether the checkpoint tensor `name` is one of the matrices an architecture takes from
/// a [`QuantStore`] when it holds it: the token embedding, the LM head and every layer's
/// attention and MLP weights.
pub(crate) fn held_matrix(name: &str) -> bool {
    name == "model.embed_tokens.weight"
        || name == "lm_head.weight"
        || (name.starts_with("model.layers.")
            && (name.contains(".self_attn.") || name.contains(".mlp."))
            && name.ends_with(".weight"))
}

/// Quantized weights under their HF checkpoint names, beside the f32 `VarBuilder` the
/// architectures load the rest from (empty for f32 models).
#[derive(Default)]
pub struct QuantStore {
    tensors: HashMap<String, Arc<QTensor>>,
    /// Multiply with candle's quantized kernels (`--weights kernels`).
    kernels: bool,
    /// Pack the layer matrices in f32 after their first product ([`set_packing`]).
    pack: bool,
}

impl QuantStore {
    /// A store of these tensors, multiplied with quantized kernels when `kernels`.
    pub fn new(tensors: HashMap<String, Arc<QTensor>>, kernels: bool) -> Self {
        let layers_f32: u64 = tensors
            .iter()
            .filter(|(name, _)| name.starts_with("model.layers."))
            .map(|(_, t)| t.shape().elem_count() as u64 * 4)
            .sum();
        let pack = !kernels && !tensors.is_empty() && packs(layers_f32);
        if pack {
            tracing::info!(bytes = layers_f32, "layer matrices to be packed in f32");
        }
        QuantStore {
            tensors,
            kernels,
            pack,
        }
    }

    /// Whether layer matrices are packed in f32 after their first product.
    pub fn packs(&self) -> bool {
        self.pack
    }

    /// Whether products use candle's quantized kernels ([`WeightsMode::Kernels`]).
    pub fn kernels(&self) -> bool {
        self.kernels
    }

    /// The quantized tensor `name`, if the store holds it.
    pub fn get(&self, name: &str) -> Option<Arc<QTensor>> {
        self.tensors.get(name).cloned()
    }

    /// Whether the store holds nothing (an f32 model).
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// Bytes the quantized tensors take.
    pub fn bytes(&self) -> u64 {
        self.tensors
            .values()
            .map(|t| t.storage_size_in_bytes() as u64)
            .sum()
    }
}

/// Whether candle (0.11) multiplies `dtype` with a SIMD dot product on this CPU: Q4_0,
/// Q8_0 and the k-quants with AVX2 and FMA (x86-64) or NEON (aarch64). Q4_1, Q5_0, Q5_1
/// and Q8_1 only have its scalar loop, several times slower than f32 gemm on the same
/// matrix dequantized (Gemma 3 270M's Q5_0 projections: README, Performance).
pub fn has_kernel(dtype: GgmlDType) -> bool {
    use GgmlDType as T;
    let simd = {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
        }
        #[cfg(target_arch = "aarch64")]
        {
            true
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            false
        }
    };
    simd && matches!(
        dtype,
        T::Q4_0 | T::Q8_0 | T::Q2K | T::Q3K | T::Q4K | T::Q5K | T::Q6K | T::Q8K
    )
}

/// Several quantized linears over one input, their outputs side by side: the quantized
/// counterpart of a fused `[in, sum(out)]` matmul (the parts of a fused projection may be
/// of different types, e.g. Q5_0 queries beside Q8_0 values).
///
/// With kernels, a part whose type has a SIMD kernel ([`has_kernel`]) is multiplied by
/// candle's quantized matmul (`QMatMul`: the activations quantized per row to the
/// kernel's dot-product type). The others (every part without kernels) are dequantized
/// for the product into a transient f32 matrix (one projection's, freed after it) and
/// multiplied by gemm; when every part is of that kind they are dequantized side by side
/// into one `[sum(out), in]` matrix, so the product is the f32 path's.
pub(crate) struct QLinears {
    parts: Parts,
    /// Dequantized side by side and packed at the first product ([`set_packing`]).
    packed: Option<std::sync::OnceLock<codescope_kernels::head::PackedF32Head>>,
}

enum Parts {
    /// At least one part with a kernel: each part on its own.
    Each(Vec<Part>),
    /// No part with a kernel: dequantized side by side, one gemm.
    Dequantized(Vec<Arc<QTensor>>),
}

enum Part {
    Kernel(QMatMul),
    Dequantized(Arc<QTensor>),
}

/// The matrices `ws` (`[out_i, in]`, one `in`) dequantized to f32 side by side, `[sum
/// out_i, in]`, in parallel straight from their blocks.
fn dequantize(ws: &[Arc<QTensor>]) -> candle_core::Result<Tensor> {
    let inp = ws[0].shape().dims()[1];
    let rows: usize = ws.iter().map(|w| w.shape().dims()[0]).sum();
    let mut out = crate::model::gguf::cache::buffer(rows * inp);
    let mut at = 0;
    for w in ws {
        let n = w.shape().elem_count();
        let data = w.data()?;
        let dst = &mut out[at..at + n];
        if !crate::model::gguf::dequantize_into(w.dtype(), &data, dst) {
            let t = w.dequantize(&candle_core::Device::Cpu)?;
            dst.copy_from_slice(&t.flatten_all()?.to_vec1::<f32>()?);
        }
        at += n;
    }
    Tensor::from_vec(out, (rows, inp), &candle_core::Device::Cpu)
}

impl QLinears {
    /// From the parts' weights `[out_i, inp]`, checked against the shapes the
    /// architecture expects.
    pub(crate) fn new(
        parts: Vec<(Arc<QTensor>, String)>,
        inp: usize,
        outs: &[usize],
        kernels: bool,
        pack: bool,
    ) -> candle_core::Result<Self> {
        let has_kernel = |d: GgmlDType| kernels && has_kernel(d);
        for ((w, name), &out) in parts.iter().zip(outs) {
            let dims = w.shape().dims().to_vec();
            if dims != [out, inp] {
                candle_core::bail!("{name}: shape {dims:?}, expected [{out}, {inp}]");
            }
        }
        let parts = if parts.iter().all(|(w, _)| !has_kernel(w.dtype())) {
            Parts::Dequantized(parts.into_iter().map(|(w, _)| w).collect())
        } else {
            Parts::Each(
                parts
                    .into_iter()
                    .map(|(w, _)| {
                        Ok(if has_kernel(w.dtype()) {
                            Part::Kernel(QMatMul::from_arc(w)?)
                        } else {
                            Part::Dequantized(w)
                        })
                    })
                    .collect::<candle_core::Result<Vec<_>>>()?,
            )
        };
        let packed =
            (pack && matches!(parts, Parts::Dequantized(_))).then(std::sync::OnceLock::new);
        Ok(QLinears { parts, packed })
    }

    /// The packed product of `x` (`[n, inp]` f32), packing the parts `ws` at the first
    /// call; `None` where it does not apply (then the product is gemm's).
    fn packed_forward(
        &self,
        ws: &[Arc<QTensor>],
        x: &Tensor,
    ) -> candle_core::Result<Option<Tensor>> {
        use codescope_kernels::{head::PackedF32Head, isa};
        let (Some(cell), Ok((n, _))) = (&self.packed, x.dims2()) else {
            return Ok(None);
        };
        let level = isa::active();
        if x.dtype() != candle_core::DType::F32 || !PackedF32Head::runs_at(level) {
            return Ok(None);
        }
        let p = match cell.get() {
            Some(p) => p,
            None => {
                let w = dequantize(ws)?;
                let (rows, inp) = w.dims2()?;
                let p = crate::model::weights::with_f32(&w, |d| PackedF32Head::pack(d, rows, inp))?;
                // A second thread packing at once packs the same values.
                let _ = cell.set(p);
                cell.get().expect("set above")
            }
        };
        let x = x.contiguous()?;
        let mut out = vec![0.0f32; n * p.words()];
        crate::model::weights::with_f32(&x, |xs| p.logits(level, xs, n, &mut out))?;
        Ok(Some(Tensor::from_vec(out, (n, p.words()), x.device())?))
    }

    /// `x` `[n, inp]` through every part, `[n, sum(out)]`.
    pub(crate) fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        match &self.parts {
            Parts::Dequantized(ws) => match self.packed_forward(ws, x)? {
                Some(y) => Ok(y),
                None => x.matmul(&dequantize(ws)?.t()?),
            },
            Parts::Each(parts) => {
                let x = x.contiguous()?;
                let ys = parts
                    .iter()
                    .map(|p| match p {
                        Part::Kernel(m) => m.forward(&x),
                        Part::Dequantized(w) => {
                            x.matmul(&dequantize(std::slice::from_ref(w))?.t()?)
                        }
                    })
                    .collect::<candle_core::Result<Vec<_>>>()?;
                match ys.len() {
                    1 => Ok(ys.into_iter().next().expect("one part")),
                    _ => Tensor::cat(&ys, 1),
                }
            }
        }
    }
}

/// A token embedding, f32 or quantized (rows dequantized on lookup).
pub(crate) enum Embed {
    F32(candle_nn::Embedding),
    Quant(Arc<QTensor>),
}

impl Embed {
    /// The embedding `{vb prefix}.weight` (`[vocab, hidden]`): quantized when the store
    /// holds it and its rows are whole blocks, else f32 from `vb`.
    pub(crate) fn load(
        q: &QuantStore,
        vocab: usize,
        hidden: usize,
        vb: candle_nn::VarBuilder,
    ) -> candle_core::Result<Self> {
        let name = format!("{}.weight", vb.prefix());
        if let Some(w) = q.get(&name) {
            let dims = w.shape().dims().to_vec();
            if dims != [vocab, hidden] {
                candle_core::bail!("{name}: shape {dims:?}, expected [{vocab}, {hidden}]");
            }
            return Ok(Embed::Quant(w));
        }
        Ok(Embed::F32(candle_nn::embedding(vocab, hidden, vb)?))
    }

    /// The rows of `ids` (`[n]` u32) as `[n, hidden]` f32.
    pub(crate) fn forward(&self, ids: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Embed::F32(e) => e.forward(ids),
            Embed::Quant(w) => w.embedding(ids),
        }
    }
}

/// An LM head `[vocab, hidden]`: f32 (multiplied as `x · Wᵀ` by gemm, as always),
/// quantized and dequantized for each block of logits a slice of rows at a time, or
/// quantized and multiplied with candle's kernel.
pub(crate) enum Head {
    F32(Tensor),
    Sliced(Arc<QTensor>),
    Kernel(QMatMul, usize),
}

/// Rows of a quantized LM head dequantized at once (`--weights native`): 32 Mi values,
/// 128 MiB of f32.
const HEAD_SLICE_VALUES: usize = 32 << 20;

/// The bytes of one slice of the LM head dequantized ([`HEAD_SLICE_VALUES`] f32).
pub const HEAD_SLICE_BYTES: u64 = (HEAD_SLICE_VALUES * 4) as u64;

impl Head {
    /// The vocabulary size (the logits' width).
    pub(crate) fn vocab(&self) -> candle_core::Result<usize> {
        match self {
            Head::F32(w) => Ok(w.dims2()?.0),
            Head::Sliced(w) => Ok(w.shape().dims()[0]),
            Head::Kernel(_, v) => Ok(*v),
        }
    }

    /// A quantized head from `w` `[vocab, hidden]`, checked.
    pub(crate) fn quant(
        w: Arc<QTensor>,
        vocab: usize,
        hidden: usize,
        kernels: bool,
    ) -> candle_core::Result<Self> {
        let dims = w.shape().dims().to_vec();
        if dims != [vocab, hidden] {
            candle_core::bail!("LM head: shape {dims:?}, expected [{vocab}, {hidden}]");
        }
        if kernels && has_kernel(w.dtype()) {
            return Ok(Head::Kernel(QMatMul::from_arc(w)?, vocab));
        }
        Ok(Head::Sliced(w))
    }

    /// The head tied to `embed`: the same tensor (quantized or f32).
    pub(crate) fn tied(
        embed: &Embed,
        vocab: usize,
        hidden: usize,
        kernels: bool,
    ) -> candle_core::Result<Self> {
        match embed {
            Embed::F32(e) => Ok(Head::F32(e.embeddings().clone())),
            Embed::Quant(w) => Head::quant(w.clone(), vocab, hidden, kernels),
        }
    }

    /// Logits `[n, vocab]` of `x` `[n, hidden]`.
    pub(crate) fn logits(&self, x: &Tensor) -> candle_core::Result<super::lm::Block> {
        use super::lm::Block;
        match self {
            Head::F32(w) => match super::lm::packed_logits(w, x)? {
                Some(l) => Ok(Block::Buf(l)),
                None => Ok(Block::Tensor(x.matmul(&w.t()?)?)),
            },
            Head::Kernel(m, _) => Ok(Block::Tensor(m.forward(&x.contiguous()?)?)),
            Head::Sliced(w) => {
                if let Some(l) = super::lm::packed_logits_quant(w, x)? {
                    return Ok(Block::Buf(l));
                }
                let vocab = w.shape().dims2()?.0;
                let n = x.dims2()?.0;
                let mut out = vec![0f32; n * vocab];
                let hidden = x.dims2()?.1;
                for_each_head_slice(w, |start, part| {
                    let rows = part.len() / hidden.max(1);
                    let part = Tensor::from_vec(part, (rows, hidden), &candle_core::Device::Cpu)?;
                    let y = x.matmul(&part.t()?)?;
                    crate::model::weights::with_f32(&y, |y| {
                        for (r, row) in y.chunks_exact(rows).enumerate() {
                            out[r * vocab + start..r * vocab + start + rows].copy_from_slice(row);
                        }
                    })?;
                    Ok(())
                })?;
                Ok(Block::Tensor(Tensor::from_vec(
                    out,
                    (n, vocab),
                    &candle_core::Device::Cpu,
                )?))
            }
        }
    }
}

/// Run `each(first_row, rows)` over the rows of a quantized head `w` (`[vocab, hidden]`)
/// dequantized a slice of [`HEAD_SLICE_VALUES`] at a time (`rows` row-major f32, handed
/// over: a product can take the buffer without a copy).
pub(crate) fn for_each_head_slice(
    w: &QTensor,
    mut each: impl FnMut(usize, Vec<f32>) -> candle_core::Result<()>,
) -> candle_core::Result<()> {
    let (vocab, hidden) = w.shape().dims2()?;
    let block = w.dtype().block_size();
    let data = w.data()?;
    let row_bytes = hidden / block * w.dtype().type_size();
    let slice = (HEAD_SLICE_VALUES / hidden.max(1)).max(1);
    let mut start = 0;
    while start < vocab {
        let rows = slice.min(vocab - start);
        let bytes = &data[start * row_bytes..(start + rows) * row_bytes];
        let mut buf = crate::model::gguf::cache::buffer(rows * hidden);
        if !crate::model::gguf::dequantize_into(w.dtype(), bytes, &mut buf) {
            candle_core::bail!("LM head: cannot dequantize {:?}", w.dtype());
        }
        buf.truncate(rows * hidden);
        each(start, buf)?;
        start += rows;
    }
    Ok(())
}
