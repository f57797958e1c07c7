//! What the encoder–decoder families (`t5`, `bart`) share: host copies of weights, a
//! dense layer with an optional bias, the feed-forward activations their configs name,
//! and the name of the stack whose attention codescope reports.
//!
//! codescope analyses these models' ENCODER self-attention, as the study did (the code as
//! encoder input): [`ENCODER`] is what [`super::Backbone::stack`] reports and
//! [`super::ModelInfo::stack`] carries into traces, reports and the explorer. The decoder
//! and cross-attention stacks are not implemented; their weights are present in the
//! checkpoints and ignored.

use candle_core::Tensor;
use candle_nn::VarBuilder;

use super::kernels;
use crate::error::{Error, Result};

/// The stack an encoder–decoder's backbone runs: its encoder's self-attention.
pub const ENCODER: &str = "encoder";

/// A host copy of a tensor's values (row-major).
pub(crate) fn host(t: &Tensor) -> candle_core::Result<Vec<f32>> {
    t.flatten_all()?.to_vec1::<f32>()
}

/// A dense layer on the host: `w` `[out, in]` as in the checkpoint, an optional bias.
pub(crate) struct Linear {
    pub w: Vec<f32>,
    pub b: Option<Vec<f32>>,
    pub inp: usize,
    pub out: usize,
}

impl Linear {
    /// `weight` (and `bias` when `bias`) under `vb`.
    pub fn load(inp: usize, out: usize, bias: bool, vb: VarBuilder) -> candle_core::Result<Self> {
        Ok(Linear {
            w: host(&vb.get((out, inp), "weight")?)?,
            b: if bias {
                Some(host(&vb.get(out, "bias")?)?)
            } else {
                None
            },
            inp,
            out,
        })
    }

    /// Several layers with the same input stacked into one (fused Q|K|V).
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
        Linear {
            w: parts.iter().flat_map(|p| p.w.iter().copied()).collect(),
            b,
            inp,
            out,
        }
    }

    /// `x · wᵀ (+ b) (+ residual)` for the `n` rows of `x`.
    pub fn apply(&self, x: &[f32], n: usize, residual: Option<&[f32]>) -> Vec<f32> {
        let mut y = vec![0.0f32; n * self.out];
        kernels::linear(
            x,
            n,
            self.inp,
            &self.w,
            self.out,
            self.b.as_deref(),
            residual,
            &mut y,
        );
        y
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
