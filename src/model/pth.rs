//! PyTorch `pytorch_model.bin` weights (zip + pickle) for a `VarBuilder`, quietly.
//!
//! candle's own `PthTensors` prints a line to stderr for every entry whose storage type it
//! cannot represent (and a backtrace with each when `RUST_BACKTRACE` is set): CodeGen's
//! hub checkpoint carries one boolean `attn.causal_mask` buffer per layer, which no
//! architecture reads. Here the index is built with candle's pickle reader and such
//! entries are skipped with a debug log; tensors are read as candle's `PthTensors::get`
//! reads them (row-major or Fortran-contiguous layouts), converted to the requested dtype.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use candle_core::pickle::{Object, Stack, TensorInfo};
use candle_core::{DType, Device, Shape, Tensor};

/// The tensors of one `.bin` file, read lazily by name.
pub struct PthWeights {
    path: PathBuf,
    infos: HashMap<String, TensorInfo>,
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
        let mut infos = HashMap::new();
        for name in names.iter().filter(|n| n.ends_with("data.pkl")) {
            let dir = PathBuf::from(name.trim_end_matches(".pkl"));
            let mut reader = std::io::BufReader::new(zip.by_name(name).map_err(zip_err)?);
            let mut stack = Stack::empty();
            stack.read_loop(&mut reader)?;
            let obj = match stack.finalize()? {
                // A TorchScript module wraps its state dict.
                Object::Build { callable, args } => match *callable {
                    Object::Reduce { callable, .. } => match *callable {
                        Object::Class {
                            module_name,
                            class_name,
                        } if module_name == "__torch__" && class_name == "Module" => *args,
                        _ => continue,
                    },
                    _ => continue,
                },
                obj => obj,
            };
            let Object::Dict(entries) = obj else {
                continue;
            };
            for (key, value) in entries {
                match value.into_tensor_info(key, &dir) {
                    Ok(Some(info)) => {
                        infos.insert(info.name.clone(), info);
                    }
                    Ok(None) => {}
                    Err(e) => {
                        tracing::debug!(file = %path.display(), "skipping a state-dict entry: {e}")
                    }
                }
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
