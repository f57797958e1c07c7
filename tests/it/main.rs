//! The integration tests, one binary (one link of candle, tokenizers and ratatui instead
//! of one per file). Each module is one former test file; `*_common` are shared helpers.

/// The binary's allocator, so mapped tensors are exercised in-process too (`mapped`).
#[global_allocator]
static ALLOC: codescope::model::mapped::Alloc = codescope::model::mapped::Alloc;

mod analysis_reference;
mod causal_cli;
mod causal_probe;
mod causal_probe_pairs;
mod causal_reference;
mod causal_shards;
mod cli_sources;
mod codegen_bigcode_reference;
mod codet5p_reference;
mod deck;
mod decoder_cli;
#[allow(dead_code)]
mod decoder_common;
mod decoder_invariants;
mod decoder_reference;
mod families_reference;
mod finding;
mod fuzz;
mod ged_study;
mod gemma3_reference;
mod gguf_cache;
mod gguf_models;
mod gguf_tokenizer;
mod half;
mod hostile_downloads;
mod hostile_inputs;
mod hostile_models;
mod isa;
mod json_convention;
mod layers;
mod mapped;
mod minilm_reference;
mod mlm_reference;
mod model_tiny;
mod paper_mode;
mod patch_cli;
mod plbart_spm;
mod present;
mod probe_astprobe;
mod probe_cli;
mod probe_dataset;
mod probe_directprobe;
mod probe_e2e;
mod probe_sklearn_agreement;
mod probe_study;
mod probe_train;
mod quant;
mod random_weights;
mod reproduce_hostile;
mod reproduce_shards;
mod stream;
mod study_graphs;
mod syntax_worst_case;
mod t5_bart_reference;
mod tiny_roberta_reference;
mod tui_ablation;
mod tui_app;
mod tui_astprobe;
#[allow(dead_code)]
mod tui_common;
mod tui_compare;
mod tui_deep;
mod tui_e2e;
mod tui_input;
mod tui_knockout;
mod tui_lens;
mod tui_patch;
mod tui_snapshots;
mod tui_stack;
mod tui_stream;
mod tui_tty;
mod twins;
