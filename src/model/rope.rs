//! Rotary position embeddings shared by the decoder families (Llama/Qwen2, Gemma 3,
//! CodeGen): the rope setting read from a config, its inverse frequencies, the
//! `(cos, sin)` tables of one input and the `rotate_half` rotation.
//!
//! Arithmetic follows transformers exactly (f32 powers, products and trig) so the
//! reference tests agree to float rounding: `_compute_default_rope_parameters`, then
//! `/ factor` for linear scaling; `apply_rotary_pos_emb` with `rotate_half`. CodeGen's
//! GPT-J `rotate_every_two` pairs differ and stay in `codegen.rs`; its tables are these.

/// One rope setting: base and linear scaling factor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rope {
    pub theta: f64,
    pub factor: f64,
}

impl Rope {
    /// The scaling named by a `rope_scaling` / `rope_parameters` object (`rope_type` or
    /// the older `type`; absent = default) applied to base `theta`. Only `default` and
    /// `linear` are implemented: any other kind is refused rather than computed wrong.
    pub fn scaled(
        params: Option<&serde_json::Value>,
        theta: f64,
    ) -> std::result::Result<Rope, String> {
        let kind = params
            .and_then(|p| p.get("rope_type").or_else(|| p.get("type")))
            .and_then(|v| v.as_str())
            .unwrap_or("default");
        let rope = match kind {
            "default" => Rope { theta, factor: 1.0 },
            "linear" => Rope {
                theta,
                factor: params
                    .and_then(|p| p.get("factor"))
                    .and_then(|v| v.as_f64())
                    .ok_or("linear rope scaling without factor")?,
            },
            other => {
                return Err(format!(
                    "rope scaling '{other}' is not supported (only default and linear)"
                ))
            }
        };
        // A zero, negative or non-finite base or factor gives NaN or infinite angles.
        if !(rope.theta.is_finite() && rope.theta > 0.0) {
            return Err(format!(
                "rope_theta {} is not a positive number",
                rope.theta
            ));
        }
        if !(rope.factor.is_finite() && rope.factor > 0.0) {
            return Err(format!(
                "rope scaling factor {} is not a positive number",
                rope.factor
            ));
        }
        Ok(rope)
    }

    /// `inv_freq[i] = 1 / theta^(2i / d) / factor` for `i < d / 2` (HF, in f32).
    pub fn inv_freq(&self, d: usize) -> Vec<f32> {
        (0..d / 2)
            .map(|i| {
                1.0f32 / (self.theta as f32).powf((2 * i) as f32 / d as f32) / self.factor as f32
            })
            .collect()
    }
}

/// `(cos, sin)` tables `[n][inv_freq.len()]` as HF builds them (f32 products and trig),
/// for the positions of one input only.
pub fn tables(inv_freq: &[f32], n: usize) -> (Vec<f32>, Vec<f32>) {
    let half = inv_freq.len();
    let mut cos = vec![0.0f32; n * half];
    let mut sin = vec![0.0f32; n * half];
    for p in 0..n {
        for (i, f) in inv_freq.iter().enumerate() {
            let a = f * p as f32;
            cos[p * half + i] = a.cos();
            sin[p * half + i] = a.sin();
        }
    }
    (cos, sin)
}

/// Rotate one head vector at position `p` in place (HF `apply_rotary_pos_emb` with
/// `rotate_half`: pairs `(i, i + d/2)`).
pub fn rotate_half(v: &mut [f32], cos: &[f32], sin: &[f32], p: usize) {
    let half = v.len() / 2;
    let (c, s) = (
        &cos[p * half..(p + 1) * half],
        &sin[p * half..(p + 1) * half],
    );
    for i in 0..half {
        let (a, b) = (v[i], v[i + half]);
        v[i] = a * c[i] - b * s[i];
        v[i + half] = b * c[i] + a * s[i];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_kinds() {
        let lin = serde_json::json!({"rope_type": "linear", "factor": 4.0});
        assert_eq!(
            Rope::scaled(Some(&lin), 1e4).unwrap(),
            Rope {
                theta: 1e4,
                factor: 4.0
            }
        );
        let old = serde_json::json!({"type": "linear", "factor": 2.0});
        assert_eq!(Rope::scaled(Some(&old), 1e4).unwrap().factor, 2.0);
        assert_eq!(Rope::scaled(None, 1e6).unwrap().factor, 1.0);
        let yarn = serde_json::json!({"rope_type": "yarn"});
        assert!(Rope::scaled(Some(&yarn), 1e4).unwrap_err().contains("yarn"));
        let nof = serde_json::json!({"rope_type": "linear"});
        assert!(Rope::scaled(Some(&nof), 1e4)
            .unwrap_err()
            .contains("without factor"));
        assert!(Rope::scaled(None, 0.0).unwrap_err().contains("rope_theta"));
        let zero = serde_json::json!({"rope_type": "linear", "factor": 0.0});
        assert!(Rope::scaled(Some(&zero), 1e4)
            .unwrap_err()
            .contains("factor"));
    }

    #[test]
    fn tables_and_rotation_by_hand() {
        // d = 4, theta = 100: inv_freq = [1, 1/10]; position 1 rotates pair (0, 2) by 1 rad.
        let f = Rope {
            theta: 100.0,
            factor: 1.0,
        }
        .inv_freq(4);
        assert_eq!(f, vec![1.0, 0.1]);
        let (cos, sin) = tables(&f, 2);
        assert_eq!(&cos[..2], &[1.0, 1.0]);
        let mut v = [1.0f32, 0.0, 0.0, 0.0];
        rotate_half(&mut v, &cos, &sin, 1);
        assert!((v[0] - 1f32.cos()).abs() < 1e-7 && (v[2] - 1f32.sin()).abs() < 1e-7);
        assert_eq!(v[1], 0.0);
    }
}
