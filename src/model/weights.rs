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
//! Every tensor an architecture takes goes through [`Finite`], which refuses NaN and
//! infinite values naming the tensor (a NaN weight otherwise gives perfectly uniform
//! attention and exit 0).

use std::path::{Path, PathBuf};

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

/// Validate a safetensors file's header against the file before anything is mapped or
/// allocated: the JSON header's size, each tensor's dtype, shape and byte range (element
/// count x dtype size = range length, inside the data section, no two overlapping).
pub fn check_safetensors(p: &Path) -> Result<()> {
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
    Ok(())
}

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
