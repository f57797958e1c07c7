//! Weight containers as a candle `VarBuilder`, validated before use.
//!
//! - safetensors: the header is checked in full before the files are mapped — every
//!   tensor's dtype known, its shape's element count times the dtype size equal to its
//!   byte range, ranges inside the data section and not overlapping — so a truncated or
//!   doctored file fails at load with a message naming the tensor, never deep in the
//!   forward pass or as an allocation;
//! - PyTorch pickles: [`super::pth`] (bounded pickle reader);
//! - GGUF: [`super::gguf`] (bounded header reader).
//!
//! With `--weights native` (the default) the f16 / bf16 matrices of a Llama- or
//! Gemma-family safetensors checkpoint are read as they are stored ([`half_matrices`],
//! held in a [`super::quant::QuantStore`]), not through the `VarBuilder`'s f32.
//!
//! Every tensor an architecture takes goes through [`Finite`], which refuses NaN and
//! infinite values naming the tensor (a NaN weight otherwise gives perfectly uniform
//! attention and exit 0).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use candle_core::quantized::{GgmlDType, QStorage, QTensor};
use candle_core::{DType, Device, Shape, Tensor};
use candle_nn::var_builder::SimpleBackend;
use candle_nn::VarBuilder;

use super::{pth, Weights};
use crate::error::{Error, Result};

/// Largest safetensors JSON header read (real ones are a few hundred kB).
const MAX_HEADER_BYTES: u64 = 100_000_000;

/// The file to name in a weights error.
pub(crate) fn first_path(w: &Weights) -> PathBuf {
    match w {
        Weights::Safetensors(p) => p[0].clone(),
        Weights::Pth(p) | Weights::Gguf(p) => p.clone(),
    }
}

/// A `VarBuilder` over safetensors or pickle weights (f32 on the CPU), every tensor
/// checked for finite values as it is taken.
pub fn var_builder(weights: &Weights) -> Result<VarBuilder<'static>> {
    Ok(VarBuilder::from_backend(
        backend(weights)?,
        DType::F32,
        Device::Cpu,
    ))
}

/// The backend of [`var_builder`].
pub fn backend(weights: &Weights) -> Result<Box<dyn SimpleBackend>> {
    match weights {
        Weights::Safetensors(paths) => {
            for p in paths {
                check_safetensors(p)?;
            }
            // SAFETY: the files are memory-mapped read-only; codescope never writes them,
            // and a concurrent truncation by another process is outside what we can guard.
            let st = unsafe { candle_core::safetensors::MmapedSafetensors::multi(paths) }.map_err(
                |e| Error::CorruptWeights {
                    path: paths[0].clone(),
                    reason: crate::error::candle_message(&e),
                },
            )?;
            Ok(Box::new(Finite(st)))
        }
        Weights::Pth(p) => {
            let w = pth::PthWeights::open(p).map_err(|e| Error::CorruptWeights {
                path: p.clone(),
                reason: crate::error::candle_message(&e),
            })?;
            Ok(Box::new(Finite(w)))
        }
        Weights::Gguf(p) => Err(Error::CorruptWeights {
            path: p.clone(),
            reason: "a GGUF file is loaded through its own metadata, not a config.json".into(),
        }),
    }
}

/// Bytes per element of a safetensors dtype name.
fn dtype_size(d: &str) -> Option<u64> {
    Some(match d {
        "BOOL" | "U8" | "I8" | "F8_E5M2" | "F8_E4M3" => 1,
        "U16" | "I16" | "F16" | "BF16" => 2,
        "U32" | "I32" | "F32" => 4,
        "U64" | "I64" | "F64" => 8,
        _ => return None,
    })
}

/// One tensor of a safetensors header.
pub(crate) struct StEntry {
    pub name: String,
    /// The dtype's name (`F32`, `BF16`, ...).
    pub dtype: String,
    pub shape: Vec<usize>,
    /// The first byte of its data in the file.
    pub start: u64,
}

impl StEntry {
    /// Its element count.
    pub fn elements(&self) -> u64 {
        self.shape.iter().map(|&d| d as u64).product()
    }
}

/// Validate a safetensors file's header against the file before anything is mapped or
/// allocated: the JSON header's size, each tensor's dtype, shape and byte range (element
/// count x dtype size = range length, inside the data section, no two overlapping).
pub fn check_safetensors(p: &Path) -> Result<()> {
    safetensors_entries(p).map(|_| ())
}

/// The tensors of a safetensors file's header, validated as [`check_safetensors`] says.
pub(crate) fn safetensors_entries(p: &Path) -> Result<Vec<StEntry>> {
    use std::io::Read;
    let corrupt = |reason: String| Error::CorruptWeights {
        path: p.into(),
        reason,
    };
    let mut f = std::fs::File::open(p).map_err(|e| Error::io(p, e))?;
    let len = f.metadata().map_err(|e| Error::io(p, e))?.len();
    let mut n = [0u8; 8];
    f.read_exact(&mut n)
        .map_err(|_| corrupt("file shorter than a safetensors header".into()))?;
    let hlen = u64::from_le_bytes(n);
    if hlen > MAX_HEADER_BYTES || hlen.saturating_add(8) > len {
        return Err(corrupt(format!(
            "header length {hlen} does not fit a {len}-byte file"
        )));
    }
    let mut header = vec![0u8; hlen as usize];
    f.read_exact(&mut header)
        .map_err(|e| corrupt(e.to_string()))?;
    let v: serde_json::Value =
        serde_json::from_slice(&header).map_err(|e| corrupt(format!("header is not JSON: {e}")))?;
    let obj = v
        .as_object()
        .ok_or_else(|| corrupt("header is not a JSON object".into()))?;
    let data_len = len - 8 - hlen;
    let mut ranges: Vec<(u64, u64, &str)> = Vec::with_capacity(obj.len());
    let mut entries = Vec::with_capacity(obj.len());
    let mut end = 0u64;
    for (name, t) in obj {
        if name == "__metadata__" {
            continue;
        }
        let bad = |what: &str| corrupt(format!("tensor {name}: {what}"));
        let dtype = t["dtype"].as_str().ok_or_else(|| bad("no dtype"))?;
        let size = dtype_size(dtype).ok_or_else(|| bad(&format!("unknown dtype {dtype}")))?;
        let shape = t["shape"]
            .as_array()
            .ok_or_else(|| bad("no shape"))?
            .iter()
            .map(|d| d.as_u64())
            .collect::<Option<Vec<u64>>>()
            .ok_or_else(|| bad("a dimension is not a count"))?;
        let elems = shape
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d))
            .ok_or_else(|| bad("its element count overflows"))?;
        let (b, e) = match t["data_offsets"].as_array().map(|a| a.as_slice()) {
            Some([b, e]) => (b.as_u64(), e.as_u64()),
            _ => (None, None),
        };
        let (b, e) = b
            .zip(e)
            .filter(|(b, e)| b <= e)
            .ok_or_else(|| bad("no valid data_offsets"))?;
        if elems.checked_mul(size) != Some(e - b) {
            return Err(bad(&format!(
                "shape {shape:?} of {dtype} needs {} bytes, its range holds {}",
                elems.saturating_mul(size),
                e - b
            )));
        }
        ranges.push((b, e, name));
        entries.push(StEntry {
            name: name.clone(),
            dtype: dtype.to_string(),
            shape: shape.iter().map(|&d| d as usize).collect(),
            start: 8 + hlen + b,
        });
        end = end.max(e);
    }
    if end > data_len {
        return Err(corrupt(format!(
            "truncated: tensors need {} bytes, file has {len}",
            8 + hlen + end
        )));
    }
    ranges.sort_unstable();
    for w in ranges.windows(2) {
        if w[1].0 < w[0].1 {
            return Err(corrupt(format!(
                "tensors {} and {} overlap",
                w[0].2, w[1].2
            )));
        }
    }
    Ok(entries)
}

/// The half-precision type of a safetensors dtype name.
fn half_dtype(dtype: &str) -> Option<GgmlDType> {
    match dtype {
        "F16" => Some(GgmlDType::F16),
        "BF16" => Some(GgmlDType::BF16),
        _ => None,
    }
}

/// Whether the safetensors tensor `e` is one [`half_matrices`] keeps half.
pub(crate) fn kept_half(e: &StEntry) -> bool {
    half_dtype(&e.dtype).is_some() && e.shape.len() == 2 && super::quant::held_matrix(&e.name)
}

/// The f16 / bf16 matrices of safetensors `paths` that the Llama- and Gemma-family
/// architectures take from a [`super::quant::QuantStore`] ([`kept_half`]: the projections, the MLP, the
/// embedding and the LM head), read from the file straight into buffers of their own
/// type (no f32 copy, no mapping: 2 bytes a value in memory) and refused, naming the
/// tensor, when a value is NaN or infinite. The rest of the checkpoint (norms, biases,
/// f32 tensors) is read through [`var_builder`] as before.
pub fn half_matrices(paths: &[PathBuf]) -> Result<HashMap<String, Arc<QTensor>>> {
    use rayon::prelude::*;
    let mut out = HashMap::new();
    for p in paths {
        let entries = safetensors_entries(p)?;
        let file = std::fs::File::open(p).map_err(|e| Error::io(p, e))?;
        let corrupt = |reason: String| Error::CorruptWeights {
            path: p.clone(),
            reason,
        };
        let held = entries
            .par_iter()
            .filter(|e| kept_half(e))
            .map(|e| {
                let dtype = half_dtype(&e.dtype).expect("a half dtype");
                let n = e.elements() as usize;
                let mut bits = vec![0u16; n];
                {
                    use std::os::unix::fs::FileExt;
                    // SAFETY: the u16 buffer viewed as its 2n bytes; any bytes are valid.
                    let bytes = unsafe {
                        std::slice::from_raw_parts_mut(bits.as_mut_ptr() as *mut u8, n * 2)
                    };
                    file.read_exact_at(bytes, e.start)
                        .map_err(|err| corrupt(format!("tensor {}: {err}", e.name)))?;
                }
                if cfg!(target_endian = "big") {
                    bits.iter_mut().for_each(|b| *b = u16::from_le(*b));
                }
                // All exponent bits set: an infinity or a NaN.
                let exp = if dtype == GgmlDType::F16 {
                    0x7c00
                } else {
                    0x7f80
                };
                let bad = bits.iter().filter(|&&b| b & exp == exp).count();
                if bad > 0 {
                    return Err(corrupt(format!(
                        "{} holds {bad} non-finite values (NaN or infinity)",
                        e.name
                    )));
                }
                let storage = if dtype == GgmlDType::F16 {
                    QStorage::Cpu(Box::new(reinterpret::<half::f16>(bits)))
                } else {
                    QStorage::Cpu(Box::new(reinterpret::<half::bf16>(bits)))
                };
                let q = QTensor::new(storage, (e.shape[0], e.shape[1]))
                    .map_err(|err| corrupt(crate::error::candle_message(&err)))?;
                Ok((e.name.clone(), Arc::new(q)))
            })
            .collect::<Result<Vec<_>>>()?;
        out.extend(held);
    }
    Ok(out)
}

/// A `Vec<u16>` of bit patterns as the 16-bit float type `T` (`half::f16` / `bf16`),
/// without a copy.
fn reinterpret<T: HalfBits>(bits: Vec<u16>) -> Vec<T> {
    let mut v = std::mem::ManuallyDrop::new(bits);
    // SAFETY: `T` is `repr(transparent)` over `u16` (same size and alignment, every bit
    // pattern valid), so the allocation is one of `T`s of the same length and capacity.
    unsafe { Vec::from_raw_parts(v.as_mut_ptr() as *mut T, v.len(), v.capacity()) }
}

/// The 16-bit float types that are `repr(transparent)` over `u16`.
trait HalfBits {}
impl HalfBits for half::f16 {}
impl HalfBits for half::bf16 {}

/// A backend whose tensors must hold finite values: a NaN or infinity is an error naming
/// the tensor. The scan runs once per tensor at load (measured in the README).
pub struct Finite<B>(pub B);

/// `Ok` when every value of `t` is finite; else an error naming `name`.
pub fn check_finite(t: &Tensor, name: &str) -> candle_core::Result<()> {
    if !t.dtype().is_float() {
        return Ok(());
    }
    let bad = |count: usize| {
        candle_core::Error::Msg(format!(
            "{name} holds {count} non-finite values (NaN or infinity)"
        ))
    };
    let v = t.flatten_all()?.to_dtype(DType::F32)?;
    let n = count_non_finite(&v)?;
    if n > 0 {
        return Err(bad(n));
    }
    Ok(())
}

/// Hand `f` the values of an f32 tensor in row-major order: read in place when the
/// tensor is a contiguous CPU one (no copy of, say, a 134 MB block of logits), copied
/// otherwise.
pub(crate) fn with_f32<R>(t: &Tensor, f: impl FnOnce(&[f32]) -> R) -> candle_core::Result<R> {
    let (storage, layout) = t.storage_and_layout();
    if let (candle_core::Storage::Cpu(candle_core::CpuStorage::F32(data)), Some((a, b))) =
        (&*storage, layout.contiguous_offsets())
    {
        return Ok(f(&data[a..b]));
    }
    drop(storage);
    Ok(f(&t.flatten_all()?.to_vec1::<f32>()?))
}

/// How many values of an f32 tensor are NaN or infinite (no copy when contiguous).
pub fn count_non_finite(v: &Tensor) -> candle_core::Result<usize> {
    with_f32(v, codescope_kernels::analysis::count_non_finite)
}

impl<B: SimpleBackend> SimpleBackend for Finite<B> {
    fn get(
        &self,
        s: Shape,
        name: &str,
        h: candle_nn::Init,
        dtype: DType,
        dev: &Device,
    ) -> candle_core::Result<Tensor> {
        let t = self.0.get(s, name, h, dtype, dev)?;
        check_finite(&t, name)?;
        Ok(t)
    }

    fn get_unchecked(&self, name: &str, dtype: DType, dev: &Device) -> candle_core::Result<Tensor> {
        let t = self.0.get_unchecked(name, dtype, dev)?;
        check_finite(&t, name)?;
        Ok(t)
    }

    fn contains_tensor(&self, name: &str) -> bool {
        self.0.contains_tensor(name)
    }
}
