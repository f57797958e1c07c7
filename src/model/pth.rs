//! PyTorch `pytorch_model.bin` weights (zip + pickle) for a `VarBuilder`, quietly and
//! within bounds.
//!
//! The state dict is read with codescope's own bounded pickle reader ([`super::pickle`]:
//! candle's deep-copies memo entries and trusts lengths), and every tensor is checked
//! before anything is allocated: its view must stay inside its storage, and the storage
//! must be in the archive with at least the bytes it claims. Entries whose storage type
//! no architecture uses are skipped with a debug log (CodeGen's hub checkpoint carries one
//! boolean `attn.causal_mask` buffer per layer; candle's `PthTensors` would print a line
//! for each). Tensors are read as candle's `PthTensors::get` reads them (row-major or
//! Fortran-contiguous layouts), converted to the requested dtype.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Layout, Shape, Tensor};

use super::pickle;

/// Largest `data.pkl` read (real state dicts take a few hundred kB).
const MAX_PICKLE_BYTES: u64 = 64 << 20;

/// Where one tensor's data is and how to view it.
struct TensorInfo {
    dtype: DType,
    layout: Layout,
    /// Zip entry of its storage.
    path: String,
}

/// The tensors of one `.bin` file, read lazily by name.
pub struct PthWeights {
    path: PathBuf,
    infos: HashMap<String, TensorInfo>,
}

/// The candle dtype of a torch storage class; `None` for types no architecture reads.
fn storage_dtype(class: &str) -> Option<DType> {
    Some(match class {
        "FloatStorage" => DType::F32,
        "DoubleStorage" => DType::F64,
        "HalfStorage" => DType::F16,
        "BFloat16Storage" => DType::BF16,
        "ByteStorage" => DType::U8,
        "LongStorage" => DType::I64,
        _ => return None,
    })
}

fn zip_err(e: impl std::fmt::Display) -> candle_core::Error {
    candle_core::Error::Msg(format!("reading the zip archive: {e}"))
}

impl PthWeights {
    /// Index the state dict of `path` (a torch.save zip archive).
    pub fn open(path: &Path) -> candle_core::Result<Self> {
        let file = std::io::BufReader::new(std::fs::File::open(path)?);
        let mut zip = zip::ZipArchive::new(file).map_err(zip_err)?;
        let names: Vec<String> = zip
            .file_names()
            .filter_map(|n| n.ok().map(|n| n.to_string()))
            .collect();
        let msg = |e: String| candle_core::Error::Msg(e);
        let mut infos = HashMap::new();
        for name in names.iter().filter(|n| n.ends_with("data.pkl")) {
            let dir = name.trim_end_matches(".pkl");
            let mut bytes = Vec::new();
            zip.by_name(name)
                .map_err(zip_err)?
                .take(MAX_PICKLE_BYTES + 1)
                .read_to_end(&mut bytes)?;
            if bytes.len() as u64 > MAX_PICKLE_BYTES {
                return Err(msg(format!(
                    "{name} is larger than {} MiB",
                    MAX_PICKLE_BYTES >> 20
                )));
            }
            let top = pickle::load(&bytes).map_err(|e| msg(format!("{name}: {e}")))?;
            for t in pickle::state_dict_tensors(&top) {
                let t = t.map_err(msg)?;
                let Some(dtype) = storage_dtype(&t.storage) else {
                    tracing::debug!(file = %path.display(), tensor = %t.name, storage = %t.storage,
                        "skipping a state-dict entry of a storage type no architecture reads");
                    continue;
                };
                let data = format!("{dir}/{}", t.key);
                let have = zip
                    .by_name(&data)
                    .map_err(|_| {
                        msg(format!(
                            "tensor {}: no storage {data} in the archive",
                            t.name
                        ))
                    })?
                    .size();
                let need = t.storage_len.checked_mul(dtype.size_in_bytes() as u64);
                if need.is_none_or(|n| n > have) {
                    return Err(msg(format!(
                        "tensor {}: a {}-element {} needs more than the {have} bytes of {data}",
                        t.name, t.storage_len, t.storage
                    )));
                }
                let layout = Layout::new(
                    Shape::from(t.shape.clone()),
                    t.stride.clone(),
                    t.offset as usize * dtype.size_in_bytes(),
                );
                infos.insert(
                    t.name.clone(),
                    TensorInfo {
                        dtype,
                        layout,
                        path: data,
                    },
                );
            }
        }
        Ok(PthWeights {
            path: path.to_path_buf(),
            infos,
        })
    }

    /// The tensor `name` as stored (dtype and shape of the checkpoint).
    pub fn tensor(&self, name: &str) -> candle_core::Result<Option<Tensor>> {
        let Some(info) = self.infos.get(name) else {
            return Ok(None);
        };
        let layout = &info.layout;
        let fortran = layout.is_fortran_contiguous();
        if !layout.is_contiguous() && !fortran {
            candle_core::bail!("cannot read the non-contiguous tensor {name} ({layout:?})");
        }
        let file = std::io::BufReader::new(std::fs::File::open(&self.path)?);
        let mut zip = zip::ZipArchive::new(file).map_err(zip_err)?;
        let mut reader = zip.by_name(&info.path).map_err(zip_err)?;
        std::io::copy(
            &mut reader.by_ref().take(layout.start_offset() as u64),
            &mut std::io::sink(),
        )?;
        let shape = layout.shape().clone();
        let mut bytes = vec![0u8; shape.elem_count() * info.dtype.size_in_bytes()];
        reader.read_exact(&mut bytes)?;
        let t = Tensor::from_raw_buffer(&bytes, info.dtype, shape.dims(), &Device::Cpu)?;
        let rank = shape.rank();
        if rank > 1 && fortran && !layout.is_contiguous() {
            // Stored column-major: read as the reversed shape, then reverse the axes.
            let rev: Vec<usize> = shape.dims().iter().rev().copied().collect();
            let t = t.reshape(rev)?;
            return Ok(Some(t.permute((0..rank).rev().collect::<Vec<_>>())?));
        }
        Ok(Some(t))
    }
}

impl candle_nn::var_builder::SimpleBackend for PthWeights {
    fn get(
        &self,
        s: Shape,
        name: &str,
        _: candle_nn::Init,
        dtype: DType,
        dev: &Device,
    ) -> candle_core::Result<Tensor> {
        let t = self.get_unchecked(name, dtype, dev)?;
        if t.shape() != &s {
            return Err(candle_core::Error::UnexpectedShape {
                msg: format!("shape mismatch for {name}"),
                expected: s,
                got: t.shape().clone(),
            });
        }
        Ok(t)
    }

    fn get_unchecked(&self, name: &str, dtype: DType, dev: &Device) -> candle_core::Result<Tensor> {
        match self.tensor(name)? {
            Some(t) => t.to_device(dev)?.to_dtype(dtype),
            None => Err(candle_core::Error::CannotFindTensor {
                path: name.to_string(),
            }),
        }
    }

    fn contains_tensor(&self, name: &str) -> bool {
        self.infos.contains_key(name)
    }
}
