//! The forward pass's host kernels (attention straight into the capture buffers,
//! vectorised softmax, GELU, LayerNorm, `exp` / `erf` approximations, the FMA
//! peak probe), each at the vector instruction set [`isa`] chooses (AVX-512, AVX2 + FMA
//! or portable; `CODESCOPE_ISA`). They live in the `codescope-kernels` crate (`crates/kernels`), which
//! every build profile compiles optimised; this module re-exports them and holds their
//! tests (accuracy against f64 references, attention against a naive version).

pub use codescope_kernels::isa;
pub use codescope_kernels::nn::*;
pub use codescope_kernels::t5::{attention_probs_rel_bias, t5_rms_norm};

/// Keep freed buffers of up to 32 MiB in the process for the next allocation instead of
/// returning them to the kernel. A forward pass allocates and frees the same large
/// buffers at every layer (a layer's attention, its projections: 12 MiB and less at 512
/// tokens); glibc serves such sizes with fresh `mmap`s, so every layer paid page faults
/// and the zeroing of new pages — serial work that also kept the second rayon thread
/// waiting. With the pages reused, MiniLM's 2-thread forward at 512 tokens took ~25%
/// less time (README, Performance). Larger buffers (long inputs' attention) are still
/// mapped and unmapped. Freed memory up to 256 MiB stays with the process; peak memory
/// is unchanged. Call at start-up, before other threads; a `GLIBC_TUNABLES` or
/// `MALLOC_*_` setting of the user's is kept. glibc only; elsewhere a no-op.
pub fn reuse_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let user = std::env::var("GLIBC_TUNABLES").is_ok_and(|v| v.contains("malloc"))
            || std::env::vars_os().any(|(k, _)| k.to_string_lossy().starts_with("MALLOC_"));
        if !user {
            // SAFETY: mallopt only sets allocator parameters; called before other threads.
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
                libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// erf by its Taylor series in f64 (converges on [-4, 4]; error < 1e-9 there).
    fn erf_ref(x: f64) -> f64 {
        let mut term = x;
        let mut sum = x;
        for n in 1..200 {
            term *= -x * x / n as f64;
            sum += term / (2 * n + 1) as f64;
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn exp_is_accurate() {
        let mut worst = 0.0f64;
        let mut x = -87.0f32;
        while x < 88.0 {
            let want = (x as f64).exp();
            let rel = ((exp(x) as f64 - want) / want).abs();
            worst = worst.max(rel);
            x += 0.0137;
        }
        assert!(worst < 3e-7, "worst relative error {worst}");
        assert_eq!(exp(0.0), 1.0);
        assert!(exp(-1e30) < 1e-37 && exp(-f32::INFINITY) < 1e-37);
    }

    #[test]
    fn erf_is_accurate() {
        let mut worst = 0.0f64;
        let mut x = -4.5f32;
        while x < 4.5 {
            let want = if x.abs() >= 4.0 {
                x.signum() as f64 * erf_ref(4.0)
            } else {
                erf_ref(x as f64)
            };
            worst = worst.max((erf(x) as f64 - want).abs());
            x += 0.001;
        }
        assert!(worst < 1e-6, "worst absolute error {worst}");
        assert!((erf(10.0) - 1.0).abs() < 1e-6 && (erf(-10.0) + 1.0).abs() < 1e-6);
    }

    #[test]
    fn gelu_tanh_mul_is_accurate() {
        let inter = 1000;
        let gu: Vec<f32> = (0..2 * inter)
            .map(|i| {
                if i < inter {
                    -12.0 + 24.0 * i as f32 / inter as f32
                } else {
                    0.5 + (i % 7) as f32
                }
            })
            .collect();
        let out = gelu_tanh_mul(&gu, inter);
        let mut worst = 0.0f64;
        for i in 0..inter {
            let x = gu[i] as f64;
            let z = (2.0f64 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
            let want = 0.5 * x * (1.0 + z.tanh()) * gu[inter + i] as f64;
            worst = worst.max((out[i] as f64 - want).abs() / want.abs().max(1.0));
        }
        assert!(worst < 2e-6, "worst error {worst}");
    }

    #[test]
    fn gelu_tanh_inplace_is_accurate() {
        let mut xs: Vec<f32> = (0..3001)
            .map(|i| -12.0 + 24.0 * i as f32 / 3000.0)
            .collect();
        let orig = xs.clone();
        gelu_tanh_inplace(&mut xs);
        let mut worst = 0.0f64;
        for (&y, &x) in xs.iter().zip(&orig) {
            let x = x as f64;
            let z = (2.0f64 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
            let want = 0.5 * x * (1.0 + z.tanh());
            worst = worst.max((y as f64 - want).abs() / want.abs().max(1.0));
        }
        assert!(worst < 2e-6, "worst error {worst}");
    }

    #[test]
    fn attention_into_a_fresh_buffer_is_the_same() {
        let (n, heads, d) = (70, 2, 4);
        let mut rng = crate::model::testutil::SplitMix::new(5);
        let qkv = rng.vec(n * 3 * heads * d, 1.0);
        for (causal, window) in [(false, None), (true, None), (true, Some(9))] {
            let mut ctx_a = vec![0.0f32; n * heads * d];
            let probs = attention_probs(&qkv, n, heads, d, 0.5, causal, window, &mut ctx_a);
            let (mut want, mut ctx_b) =
                (vec![f32::NAN; heads * n * n], vec![0.0f32; n * heads * d]);
            attention_windowed(
                &qkv, n, heads, d, 0.5, causal, window, &mut want, &mut ctx_b,
            );
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(&probs),
                bits(&want),
                "causal {causal}, window {window:?}"
            );
            assert_eq!(bits(&ctx_a), bits(&ctx_b));
        }
    }

    #[test]
    fn attention_matches_naive() {
        let (n, heads, d) = (7, 3, 4);
        let hd = heads * d;
        let mut rng = crate::model::testutil::SplitMix::new(3);
        let qkv = rng.vec(n * 3 * hd, 1.0);
        let cases = [
            (false, None),
            (true, None),
            (true, Some(3)),
            (false, Some(2)),
        ];
        // Block sizes: one row, uneven blocks, the default (one block at n = 7).
        for ((causal, window), block) in cases
            .into_iter()
            .flat_map(|c| [1, 3, ROW_BLOCK].map(|b| (c, b)))
        {
            // Garbage first: every entry must be written.
            let mut probs = vec![f32::NAN; heads * n * n];
            let mut ctx = vec![f32::NAN; n * hd];
            attention_blocked(
                &qkv, n, heads, d, 0.5, causal, window, block, &mut probs, &mut ctx,
            );
            for h in 0..heads {
                for i in 0..n {
                    let s: Vec<f64> = (0..n)
                        .map(|j| {
                            if causal && j > i || window.is_some_and(|w| i >= j + w) {
                                return f64::NEG_INFINITY;
                            }
                            (0..d)
                                .map(|k| {
                                    qkv[i * 3 * hd + h * d + k] as f64
                                        * qkv[j * 3 * hd + hd + h * d + k] as f64
                                })
                                .sum::<f64>()
                                * 0.5
                        })
                        .collect();
                    let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let z: f64 = s.iter().map(|v| (v - m).exp()).sum();
                    for j in 0..n {
                        let want = (s[j] - m).exp() / z;
                        let got = probs[(h * n + i) * n + j] as f64;
                        assert!((got - want).abs() < 1e-6, "block {block}: {got} vs {want}");
                        if want == 0.0 {
                            assert_eq!(got, 0.0, "a masked key is exactly zero");
                        }
                    }
                    for k in 0..d {
                        let want: f64 = (0..n)
                            .map(|j| {
                                (s[j] - m).exp() / z * qkv[j * 3 * hd + 2 * hd + h * d + k] as f64
                            })
                            .sum();
                        assert!((ctx[i * hd + h * d + k] as f64 - want).abs() < 1e-5);
                    }
                }
            }
        }
    }

    #[test]
    fn soft_capped_scores_match_naive_and_compose_with_a_knockout() {
        // Large scores (qkv scale 3) so the cap of 1.5 bites; scale 0.5 first, then cap.
        let (n, heads, d) = (8, 2, 4);
        let hd = heads * d;
        let mut rng = crate::model::testutil::SplitMix::new(17);
        let qkv = rng.vec(n * 3 * hd, 3.0);
        let cap = 1.5f32;
        let rows: Vec<Vec<u32>> = (0..n as u32).map(|i| vec![0, i]).collect();
        for (window, knock) in [(None, false), (Some(3), false), (None, true)] {
            let block = KeyBlock {
                heads: &[true, false],
                rows: &rows,
            };
            let mut ctx = vec![f32::NAN; n * hd];
            let kb = knock.then_some(&block);
            let got = attention_probs_capped(
                &qkv,
                n,
                heads,
                d,
                0.5,
                true,
                window,
                Some(cap),
                kb,
                &mut ctx,
            );
            let mut plain_ctx = vec![0.0f32; n * hd];
            let plain = attention_probs(&qkv, n, heads, d, 0.5, true, window, &mut plain_ctx);
            assert_ne!(got, plain, "the cap changes the probabilities");
            for h in 0..heads {
                for i in 0..n {
                    let hidden = |j: usize| {
                        j > i
                            || window.is_some_and(|w| i >= j + w)
                            || knock && h == 0 && j == 0 && i != 0
                    };
                    let s: Vec<f64> = (0..n)
                        .map(|j| {
                            if hidden(j) {
                                return f64::NEG_INFINITY;
                            }
                            let dot: f64 = (0..d)
                                .map(|k| {
                                    qkv[i * 3 * hd + h * d + k] as f64
                                        * qkv[j * 3 * hd + hd + h * d + k] as f64
                                })
                                .sum();
                            (dot * 0.5 / cap as f64).tanh() * cap as f64
                        })
                        .collect();
                    let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let z: f64 = s.iter().map(|v| (v - m).exp()).sum();
                    for j in 0..n {
                        let want = (s[j] - m).exp() / z;
                        let p = got[(h * n + i) * n + j] as f64;
                        assert!((p - want).abs() < 1e-6, "{window:?} {knock}: {p} vs {want}");
                        if want == 0.0 {
                            assert_eq!(p, 0.0);
                        }
                    }
                }
            }
        }
        // Without a cap or a block it is the plain kernel, bit for bit.
        let (mut c0, mut c1) = (vec![0.0f32; n * hd], vec![0.0f32; n * hd]);
        let a = attention_probs(&qkv, n, heads, d, 0.5, true, Some(3), &mut c0);
        let b = attention_probs_capped(&qkv, n, heads, d, 0.5, true, Some(3), None, None, &mut c1);
        assert_eq!(a, b);
        assert_eq!(c0, c1);
    }

    #[test]
    fn knocked_out_keys_match_naive_and_nothing_blocked_is_bit_identical() {
        let (n, heads, d) = (9, 2, 4);
        let hd = heads * d;
        let mut rng = crate::model::testutil::SplitMix::new(11);
        let qkv = rng.vec(n * 3 * hd, 1.0);
        // Row i blocks keys 0 and i-1 (and lists itself, which is never blocked), head 1
        // only; the empty block changes nothing.
        let rows: Vec<Vec<u32>> = (0..n as u32)
            .map(|i| vec![0, i.saturating_sub(1), i])
            .collect();
        let none: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (causal, window) in [(false, None), (true, None), (true, Some(4))] {
            let mut c0 = vec![0.0f32; n * hd];
            let plain = attention_probs(&qkv, n, heads, d, 0.5, causal, window, &mut c0);
            let mut c1 = vec![0.0f32; n * hd];
            let empty = KeyBlock {
                heads: &[true, true],
                rows: &none,
            };
            let same =
                attention_probs_blocked(&qkv, n, heads, d, 0.5, causal, window, &empty, &mut c1);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&plain), bits(&same));
            assert_eq!(bits(&c0), bits(&c1));
            let block = KeyBlock {
                heads: &[false, true],
                rows: &rows,
            };
            let mut ctx = vec![0.0f32; n * hd];
            let got =
                attention_probs_blocked(&qkv, n, heads, d, 0.5, causal, window, &block, &mut ctx);
            for h in 0..heads {
                for i in 0..n {
                    let hidden = |j: usize| {
                        causal && j > i
                            || window.is_some_and(|w| i >= j + w)
                            || h == 1 && j != i && (j == 0 || j + 1 == i)
                    };
                    let s: Vec<f64> = (0..n)
                        .map(|j| {
                            if hidden(j) {
                                return f64::NEG_INFINITY;
                            }
                            (0..d)
                                .map(|k| {
                                    qkv[i * 3 * hd + h * d + k] as f64
                                        * qkv[j * 3 * hd + hd + h * d + k] as f64
                                })
                                .sum::<f64>()
                                * 0.5
                        })
                        .collect();
                    let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let z: f64 = s.iter().map(|v| (v - m).exp()).sum();
                    for j in 0..n {
                        let want = (s[j] - m).exp() / z;
                        let p = got[(h * n + i) * n + j];
                        assert!(
                            (p as f64 - want).abs() < 1e-6,
                            "{causal} {window:?} h{h} {i},{j}"
                        );
                        if hidden(j) {
                            assert_eq!(p, 0.0, "a knocked-out key is exactly zero");
                        }
                    }
                    for k in 0..d {
                        let want: f64 = (0..n)
                            .map(|j| {
                                (s[j] - m).exp() / z * qkv[j * 3 * hd + 2 * hd + h * d + k] as f64
                            })
                            .sum();
                        assert!((ctx[i * hd + h * d + k] as f64 - want).abs() < 1e-5);
                    }
                }
            }
        }
    }

    /// Every kernel with SIMD variants, run at every level this CPU has (AVX-512, AVX2 +
    /// FMA, portable) on the same inputs: elementwise kernels and the analysis's sums in
    /// a fixed lane order give the same bits on every path; reductions whose lanes widen
    /// to sixteen with AVX-512 agree within a few ulps.
    #[test]
    fn every_kernel_agrees_on_every_instruction_set_the_cpu_runs() {
        use codescope_kernels::analysis::*;
        use codescope_kernels::lm::log_sum_exp_at;
        use codescope_kernels::t5::t5_rms_rows;
        use isa::Isa;
        let levels = isa::available();
        assert_eq!(levels[0], Isa::Portable);
        eprintln!("instruction sets tested: {levels:?}");
        let mut rng = crate::model::testutil::SplitMix::new(41);
        let close = |a: &[f32], b: &[f32], tol: f32, what: &str| {
            assert_eq!(a.len(), b.len());
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                assert!(
                    (x - y).abs() <= tol * x.abs().max(1.0),
                    "{what}[{i}]: {x} vs {y}"
                );
            }
        };
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for len in [1usize, 7, 8, 15, 16, 17, 33, 100, 384, 1001] {
            let x: Vec<f32> = rng.vec(len, 6.0);
            let at = |isa: Isa, k: fn(Isa, &mut [f32])| {
                let mut v = x.clone();
                k(isa, &mut v);
                v
            };
            let p = Isa::Portable;
            for &isa in &levels {
                for (name, k) in [
                    ("gelu_erf", gelu_erf_chunk as fn(Isa, &mut [f32])),
                    ("gelu_tanh", gelu_tanh_chunk),
                ] {
                    assert_eq!(bits(&at(isa, k)), bits(&at(p, k)), "{name} {isa} {len}");
                }
                let (mut o, mut o0) = (vec![0.0; len / 2], vec![0.0; len / 2]);
                gelu_tanh_mul_row(isa, &mut o, &x[..len / 2 * 2]);
                gelu_tanh_mul_row(p, &mut o0, &x[..len / 2 * 2]);
                assert_eq!(bits(&o), bits(&o0), "gelu_tanh_mul {isa} {len}");
                let (mut s, mut s0) = (x.clone(), x.clone());
                softmax_rows(isa, &mut s, len);
                softmax_rows(p, &mut s0, len);
                close(&s, &s0, 1e-6, "softmax");
                let w: Vec<f32> = (0..len).map(|i| 1.0 + i as f32 * 0.01).collect();
                let b: Vec<f32> = (0..len).map(|i| i as f32 * -0.02).collect();
                let (mut l, mut l0) = (x.clone(), x.clone());
                layer_norm_rows(isa, &mut l, len, &w, &b, 1e-5);
                layer_norm_rows(p, &mut l0, len, &w, &b, 1e-5);
                close(&l, &l0, 1e-5, "layer_norm");
                let (mut r, mut r0) = (vec![0.0; len], vec![0.0; len]);
                t5_rms_rows(isa, &x, len, &w, 1e-6, &mut r);
                t5_rms_rows(p, &x, len, &w, 1e-6, &mut r0);
                close(&r, &r0, 1e-5, "t5_rms");
                let (z, z0) = (
                    log_sum_exp_at(isa, &x).unwrap(),
                    log_sum_exp_at(p, &x).unwrap(),
                );
                assert!(
                    (z - z0).abs() < 1e-9 * z0.abs().max(1.0),
                    "log_sum_exp {z} {z0}"
                );
                assert_eq!(count_above_at(isa, &x, 0.5), count_above_at(p, &x, 0.5));
                let pos: Vec<f32> = x.iter().map(|v| v.abs() / 6.0).collect();
                let (e, e0) = (x_ln_x_sums_at(isa, &pos), x_ln_x_sums_at(p, &pos));
                assert!(
                    (e.0 - e0.0).abs() < 1e-12 * e0.0.abs().max(1.0),
                    "x ln x sums"
                );
                assert!(
                    (e.1 - e0.1).abs() < 1e-12 * e0.1.abs().max(1.0),
                    "x ln x sums"
                );
            }
        }
        // The aggregation and class sums: bit-identical on every path.
        let (m, heads) = (37usize, 1usize);
        let att: Vec<f32> = rng.vec(heads * m * m, 1.0);
        let groups: Vec<Vec<usize>> = (0..m)
            .step_by(3)
            .map(|q| (q..(q + 3).min(m)).collect())
            .collect();
        let runs: Vec<Option<(usize, usize)>> = groups
            .iter()
            .map(|g| Some((g[0], g[g.len() - 1] + 1)))
            .collect();
        let n = groups.len();
        let members: Vec<Vec<usize>> =
            vec![(0..m).step_by(2).collect(), (1..m).step_by(5).collect()];
        let (mut a0, mut c0) = (vec![0.0; n * n], vec![0.0; m * 2]);
        aggregate_head_at(Isa::Portable, &att, m, &groups, &runs, &mut a0);
        class_row_sums_at(Isa::Portable, &att, m, &members, &mut c0);
        for &isa in &levels {
            let (mut a, mut c) = (vec![0.0; n * n], vec![0.0; m * 2]);
            aggregate_head_at(isa, &att, m, &groups, &runs, &mut a);
            class_row_sums_at(isa, &att, m, &members, &mut c);
            assert_eq!(bits(&a), bits(&a0), "aggregate {isa}");
            assert_eq!(bits(&c), bits(&c0), "class sums {isa}");
            // The peak probe measures the level's own FMA width; none without FMA.
            assert_eq!(fma_peak_gflops_at(isa, 5).is_some(), isa != Isa::Portable);
        }
    }

    /// The AMX LM head (bf16 `hi + lo` parts, three tile products) against an f64 product,
    /// on odd shapes (words, inner dimension and rows not whole tiles): each logit within
    /// `2^-14 Σ|w x|` (the analysis allows `2^-15`), and the f32 gemm product's own error
    /// of the same order. Runs where the CPU has AMX (the only place it is used).
    #[test]
    fn amx_head_is_f32_accurate_on_odd_shapes() {
        use codescope_kernels::amx;
        if !amx::available() {
            eprintln!("no AMX on this CPU: the tile product is not used here");
            return;
        }
        let mut rng = crate::model::testutil::SplitMix::new(13);
        for (words, k, n) in [
            (1000, 72, 33),
            (17, 5, 1),
            (2048 + 48, 640, 70),
            (64, 32, 32),
        ] {
            let w = rng.vec(words * k, 3.0);
            let x = rng.vec(n * k, 8.0);
            let head = amx::PackedHead::pack(&w, words, k);
            assert_eq!((head.words(), head.k()), (words, k));
            assert_eq!(head.bytes(), amx::PackedHead::bytes_for(words, k));
            let mut out = vec![f32::NAN; n * words];
            head.logits(&x, n, &mut out);
            let mut worst = 0.0f64;
            for r in 0..n {
                for j in 0..words {
                    let (mut exact, mut abs) = (0.0f64, 0.0f64);
                    for i in 0..k {
                        let p = w[j * k + i] as f64 * x[r * k + i] as f64;
                        exact += p;
                        abs += p.abs();
                    }
                    let got = out[r * words + j] as f64;
                    let err = (got - exact).abs();
                    assert!(
                        err <= abs * 2f64.powi(-14) + 1e-30,
                        "{words}x{k}, row {r}, word {j}: {got} vs {exact} (sum of |terms| {abs})"
                    );
                    worst = worst.max(err / abs.max(1e-30));
                }
            }
            eprintln!("{words}x{k}x{n}: worst relative error {worst:.2e}");
        }
    }

    /// The packed f32 head (the LM head's product at AVX2 and AVX-512 without AMX) is a
    /// plain f32 dot product: within f32's own worst-case rounding of a `k`-term sum of
    /// the f64 product, on shapes that leave partial groups, partial panels and partial
    /// row blocks, at every level that runs it; filled in slices, it equals one packing.
    #[test]
    fn packed_f32_head_is_a_dot_product_on_odd_shapes() {
        use codescope_kernels::head::PackedF32Head;
        let mut rng = crate::model::testutil::SplitMix::new(17);
        let levels: Vec<isa::Isa> = isa::available()
            .into_iter()
            .filter(|&i| PackedF32Head::runs_at(i))
            .collect();
        if levels.is_empty() {
            eprintln!("no AVX2 on this CPU: the packed head is not used here");
            return;
        }
        for (words, k, n) in [
            (1000, 72, 33),
            (17, 5, 1),
            (2048 + 48, 640, 70),
            (64, 32, 7),
        ] {
            let w = rng.vec(words * k, 3.0);
            let x = rng.vec(n * k, 8.0);
            let head = PackedF32Head::pack(&w, words, k);
            assert_eq!((head.words(), head.k()), (words, k));
            assert_eq!(head.bytes(), PackedF32Head::bytes_for(words, k));
            // Filled in uneven slices (not on group bounds), the same packing.
            let mut sliced = PackedF32Head::zeroed(words, k);
            let mut first = 0;
            for size in [3usize, 61, 200].iter().cycle() {
                if first >= words {
                    break;
                }
                let r = (*size).min(words - first);
                sliced.fill_rows(first, &w[first * k..(first + r) * k]);
                first += r;
            }
            for &level in &levels {
                let mut out = vec![f32::NAN; n * words];
                head.logits(level, &x, n, &mut out);
                let mut again = vec![f32::NAN; n * words];
                sliced.logits(level, &x, n, &mut again);
                assert_eq!(out, again, "{level}: sliced packing");
                let mut worst = 0.0f64;
                for r in 0..n {
                    for j in 0..words {
                        let (mut exact, mut abs) = (0.0f64, 0.0f64);
                        for i in 0..k {
                            let p = w[j * k + i] as f64 * x[r * k + i] as f64;
                            exact += p;
                            abs += p.abs();
                        }
                        let got = out[r * words + j] as f64;
                        let err = (got - exact).abs();
                        assert!(
                            err <= abs * k as f64 * 2f64.powi(-24) + 1e-30,
                            "{level} {words}x{k}, row {r}, word {j}: {got} vs {exact}"
                        );
                        worst = worst.max(err / abs.max(1e-30));
                    }
                }
                eprintln!("{level} {words}x{k}x{n}: worst relative error {worst:.2e}");
            }
        }
    }

    /// `CODESCOPE_ISA` names a level; an unknown name is refused. (The binary's handling,
    /// and the level reaching the matrix products, are tested through the binary.)
    #[test]
    fn instruction_sets_parse_by_name() {
        use isa::Isa;
        for i in Isa::ALL {
            assert_eq!(Isa::parse(i.name()), Some(i));
        }
        assert_eq!(Isa::parse("sse"), None);
        assert!(isa::available().contains(&isa::detected()));
    }

    /// The transposed-weights layer gives the checkpoint-layout layer's values within
    /// rounding (gemm's few-row paths sum in another order), and its bits from 64 rows on
    /// (bias, residual, odd shapes, one row).
    #[test]
    fn linear_on_transposed_weights_is_bit_identical() {
        let mut rng = crate::model::testutil::SplitMix::new(7);
        for (rows, inp, outp) in [(1, 5, 3), (3, 17, 33), (64, 384, 1152), (129, 96, 40)] {
            let x = rng.vec(rows * inp, 1.0);
            let w = rng.vec(outp * inp, 1.0);
            let b = rng.vec(outp, 1.0);
            let res = rng.vec(rows * outp, 1.0);
            let w_kn = transpose_to_kn(&w, outp, inp);
            assert_eq!(w_kn[inp.min(2) * outp], w[inp.min(2)]);
            for (bias, residual) in [
                (None, None),
                (Some(&b[..]), Some(&res[..])),
                (Some(&b[..]), None),
                (None, Some(&res[..])),
            ] {
                let (mut a, mut t) = (vec![0.0; rows * outp], vec![0.0; rows * outp]);
                linear(&x, rows, inp, &w, outp, bias, residual, &mut a);
                linear_kn(&x, rows, inp, &w_kn, outp, bias, residual, &mut t);
                // The allocating form: the same bits as into a zeroed buffer.
                let fresh = linear_kn_new(&x, rows, inp, &w_kn, outp, bias, residual);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&fresh), bits(&t), "{rows}x{inp}x{outp} (allocating)");
                for (x, y) in a.iter().zip(&t) {
                    assert!(
                        (x - y).abs() <= 1e-6 * x.abs().max(1.0),
                        "{rows}x{inp}x{outp}"
                    );
                }
                if rows >= 64 {
                    assert_eq!(bits(&a), bits(&t), "{rows}x{inp}x{outp}");
                }
            }
        }
    }
}
