//! Invariants every causal model must keep, checked on every decoder fixture (Llama,
//! Qwen2, GPT-2, Gemma 3, CodeGen, GPTBigCode multi-query and per-head, Qwen3, Mistral,
//! StarCoder2, Gemma 1, Gemma 2, Granite, Phi-3): causal rows sum
//! to one, runs are deterministic, the plain trace equals the LM trace's attention, and
//! a prefix does not see what follows (attention and hidden states).

use crate::decoder_common;

use codescope::model::ForwardOptions;
use decoder_common::{causal_invariants, hidden_opts, load, DECODERS};

#[test]
fn causal_rows_sum_to_one_prefix_invariant_and_deterministic() {
    for name in DECODERS {
        let m = load(name);
        let text = "for x in items:\n    total += x.price * 2\n";
        let a = m.trace_lm(text, &hidden_opts()).unwrap();
        causal_invariants(&a);
        let b = m.trace_lm(text, &hidden_opts()).unwrap();
        assert_eq!(a.attention.layers, b.attention.layers, "{name}");
        assert_eq!(
            a.hidden.as_ref().unwrap().layers,
            b.hidden.as_ref().unwrap().layers,
            "{name}"
        );
        assert_eq!(a.surprisal, b.surprisal, "{name}");
        // The plain trace computes the same attention without the LM head.
        let c = m.trace(text, &ForwardOptions::default()).unwrap();
        assert_eq!(a.attention.layers, c.attention.layers, "{name}");
        assert!(c.surprisal.is_none() && c.hidden.is_none());
        // A causal model's prefix does not see what follows (positions are absolute:
        // learned for GPT-2/GPTBigCode, rotary for the others).
        let ids: Vec<u32> = a.tokens.iter().map(|s| s.id).collect();
        let k = ids.len() / 2;
        let p = m.forward_ids(&ids[..k], &hidden_opts()).unwrap();
        let (layers, heads) = (m.info.layers, m.info.heads);
        for l in 0..layers {
            for h in 0..heads {
                for q in 0..k {
                    for j in 0..k {
                        let d = (p.attention.get(l, h, q, j) - a.attention.get(l, h, q, j)).abs();
                        assert!(d < 1e-5, "{name} prefix attention differs");
                    }
                }
            }
        }
        let (ph, ah) = (p.hidden.as_ref().unwrap(), a.hidden.as_ref().unwrap());
        for l in 0..layers {
            for q in 0..k {
                for (x, y) in ph.vector(l, q).iter().zip(ah.vector(l, q)) {
                    assert!((x - y).abs() < 1e-4, "{name} prefix hidden differs");
                }
            }
        }
    }
}
