//! codescope: a terminal explorer for what code language models learn.
//!
//! # The map of the house
//!
//! (The long form, with both data flows: `docs/ARCHITECTURE.md`; what each analysis
//! computes: `docs/METHODS.md`.)
//!
//! The rows go from the front ends down to the foundations: a module uses only modules in
//! its own row or below it, and no two top-level modules use each other
//! (`tests/it/layers.rs` reads every `crate::` path in `src/` against this table).
//!
//! | module | owns |
//! |---|---|
//! | [`commands`] | the front ends: one file per subcommand (glue from the settings to the library and to stdout), the explorer's start (`commands::explore`: FILE, the sample, a tour's first step, a resumed session), `codescope render` and its decks (`commands::render`); the one model resolution they share (`commands::load_labelled` over [`model::source::choose`]) |
//! | [`cli`] | the clap definitions: raw arguments, help text, and their check into the run's [`settings::Settings`] ([`cli::Cli::settings`]); per-argument checks are clap value parsers shared by the commands and the explorer's worker |
//! | [`tui`] | the explorer: a pure [`tui::app::App`] (`update(Msg) -> Vec<Effect>`; keys and mouse; the keys as data in [`tui::keymap`], which the dispatcher, the help overlay and the README's key table all come from), the pure layout (panels, head-grid and heatmap geometry shared by drawing and clicks), widgets that only draw, the terminal (its modes, job control, the input thread), the I/O thread (parse, file reads, path completion) and the model worker (analyses, twins, knockouts, head ablations streamed head by head, logit lenses, patches from the twin, probes); compare mode, the knockout mode, the head grid's ablation scores, the logit lens view, the patch view, overview, pins, tours and sessions as app parts; its start ([`tui::Start`], [`tui::tour_state`]) and the headless explorer that `render` draws from ([`tui::headless::staged`]) |
//! | [`settings`] | one validated [`settings::Settings`] per run (model spec, random weights, language, theme, cache directory), read by the commands, the explorer and its worker, never the raw arguments again |
//! | [`present`] | presenting, as plain data: a view as a [`present::Scene`], the tour file (TOML steps with snippets, models and captions; `B` appends to it), the session file (saved on quit and signals, `--resume`); no command line, no terminal |
//! | [`export`] | slide-grade figures of every view and of the explorer screen (SVG, PNG rendered in-process with the bundled fonts) and the view's numbers (JSON) |
//! | [`color`] | colour ramps and the token-category and diverging colours that the explorer's theme and the figures share |
//! | [`probe`] | probing hidden states: datasets and tasks (codescope's, the study's DirectProbe datasets: `--protocol study`, `probe::study`, and the AST-Probe paper's pipeline: `--probe ast --protocol paper`), linear/MLP/structural/DirectProbe/AST-Probe probes, control tasks, feature cache, the bundled corpus, a trained probe's label for one token, a snippet's tree rebuilt by AST-Probe beside the gold one; a trained probe's agreement on a snippet and its twin (`probe::agreement`); trained and random weights side by side (`probe::baseline`) |
//! | [`analysis`] | THE pipeline every front end calls ([`analysis::analyze`] / [`analysis::run`]): code-token attention, gold masks and head scores (P/R/F1/GED, sweeps; none on an encoder–decoder's cross stack, `analysis::CROSS_STACK_NO_SCORES`; the study's networkx GED, `analysis::ged`), category attention, entropy, code-token surprisal, code-token hidden states, the study's finding side by side ([`analysis::finding`]: syn–syn, id–id, syn–id F1 per layer with the shares); report forms (JSON/CSV/text), `reproduce`'s corpus tables, shards and merge, a snippet against its twin ([`analysis::compare`]); causal tests ([`analysis::causal`]: knockout by token class or gold graph against a matched random control, head ablation, logit lens; [`analysis::patch`]: the residual stream at the renamed tokens patched from the twin, layer by layer, for one snippet or a corpus; their corpus runs' shards and merge, [`analysis::causal_shard`]) |
//! | [`corpus`] | corpora for `reproduce` and probes: directories, zips, `.jsonl(.gz)`, the standard library; one snippet per function |
//! | [`input`] | reading a snippet (file or stdin) within the input limits |
//! | [`model`] | everything about *models*, no tree-sitter: model sources (presets, local, hub, PyPI, GGUF), GGUF weights held quantized and f16/bf16 safetensors matrices held half (`model::quant`: `--weights native|kernels|f32`) and the memory plan checked before every load (`model::plan`); one file per architecture family (their shared forward steps in `model/decoder.rs`; the encoder–decoders T5, BART/PLBART and CodeT5+ 2B/6B/16B run their encoder stack or, with `--stack decoder|cross`, their decoder's self- or cross-attention teacher-forced, `model/t5.rs`, `model/bart.rs`, `model/codet5p.rs` (CodeGen blocks, the released `modeling_codet5p.py`), `model/encdec.rs`), the host kernels (and the start-up allocator setting, `model::kernels::reuse_freed_memory`), the LM head, [`model::Trace`] (subwords, attention, hidden states, surprisal); GGUF tokenizers (`model::gguf_tokenizer`: the `tokenizers` pipeline as transformers converts the file, and for Gemma-style vocabularies codescope's own encoder `model::spm_bpe`, same output, built in a fraction of the time); PLBART's tokenizer from its `sentencepiece.bpe.model` (`model::sentencepiece`; each input ends with its own language's code); the dequantized-weight cache (`model::gguf::cache`), whose weights later opens use in place from the memory map through the binary's global allocator (`model::mapped`); random-weight baselines (`model::random`: `--random-weights SEED`, each family's transformers init, seeded per tensor); interventions inside the forward pass ([`model::intervene`]: attention knockout, head ablation, the logit lens's read-out; on an encoder–decoder's decoder stack, its self-attention and its LM head; on its cross stack, its cross-attention and the same LM head) |
//! | [`logging`] | file logging (tracing) and the stderr notice path |
//! | [`fsio`] | writes that cannot half-happen (`write_atomic`: an `O_EXCL`/`O_NOFOLLOW` temporary beside the target, fsync, rename) and reads that cannot grow without bound (`read_bounded`); every file codescope replaces goes through it |
//! | [`signals`], [`paths`], [`rng`] | termination signals (SIGTERM, SIGINT, SIGHUP, SIGQUIT): exit 128+n after removing registered temporary paths (the explorer records the signal, restores the terminal and saves the session first); every location codescope keeps files in (its cache, the Hugging Face cache, the log, the session); the one seeded random stream |
//! | [`error`] | the error type and [`error::printable`] (text from files made safe for a terminal; every notice and the final error go through it) |
//! | [`syntax`] | everything about code *structure*, no model: tree-sitter parsing into code tokens (category, role, depth), the gold graphs ([`syntax::Graph`]: the study's AST motif and data flow, syntactic, syntactic-identifier, codescope's refined data flow), the study's comment removal, tree distances, subword alignment, paper mode (the study's cleaned input, its graphs on the original tokens), renamed twins and their checks ([`syntax::rewrite`]) |
//! | `crates/kernels` (`codescope-kernels`) | the hot loops over slices, no codescope types, each at the vector instruction set chosen at run time (`isa`: AMX, AVX-512, AVX2 + FMA or portable, `CODESCOPE_ISA`; LM heads on AMX tiles to f32 accuracy, `amx`, and at AVX2/AVX-512 from f32 weights packed once, `head`; it also caps the `gemm` crate's products, through the patched `gemm-common` in `vendor/`): the forward pass's kernels (T5's relative-bias attention and norm in `t5`) (re-exported as [`model::kernels`]) and the analysis's counts, entropy sums, subword-to-token aggregation and non-finite checks, the study's graph edit distance search (`ged`: networkx's first candidate, scipy's assignment); a separate package so that debug and test builds compile it at opt-level 3 |
//!
//! Boundaries: `syntax` uses nothing else of the crate; `model` no tree-sitter (only the
//! rows below it, none of which parses code); they meet in `analysis` through byte spans. No tensor leaves `model`: `analysis`, `probe` reports
//! and `tui` see plain `Vec<f32>`-backed data. Nothing analytical lives in `tui`.
//!
//! # From `codescope analyze FILE` to its JSON
//! `main` parses the [`cli::Cli`] and starts file logging -> [`commands::run`] builds the
//! [`settings::Settings`] -> `analyze_cmd` reads FILE ([`input::read`]), resolves and
//! loads the model ([`model::source::resolve`], [`model::LoadedModel::load`]) ->
//! [`analysis::analyze`]: [`analysis::parse`] ([`syntax::parse`]: tokens and gold graphs)
//! -> [`analysis::model_input`] (source text or the study's space-joined tokens) ->
//! [`model::LoadedModel::encode`] (tokenizer, fitted to the window) -> subword alignment
//! -> [`model::LoadedModel::trace_encoded`] (the forward pass, handing each layer's
//! attention to the analysis as it is computed: code-token attention, head scores against
//! the gold masks, category matrices, entropy, one layer at a time) -> surprisal and the
//! rest of [`analysis::SnippetAnalysis`] -> [`analysis::report::to_json`] -> stdout.
//! ([`analysis::from_trace`] runs the same per-layer analysis over a finished trace.)
//!
//! # From a key press to a frame
//! The input thread reads a crossterm event -> `Msg::Key` on the one channel -> the UI
//! thread drains the channel -> [`tui::app::App::update`] changes state and returns
//! effects; at its end `settle` keeps the cursor in view using the pure layout
//! ([`tui::layout`]) -> the runtime carries out the effects (an edit: `Effect::Parse` to
//! the I/O thread, whose `Msg::Parsed` leads to `Effect::Analyse` for the model worker,
//! which runs [`analysis::run`], sends each finished layer as `WorkerMsg::AnalysedLayer`
//! (from [`analysis::RunOptions::on_layer`]; the heat map and head grid show them as they
//! come) and answers `WorkerMsg::Analysed`; `S` on an analysis that kept its final hidden
//! state runs only the LM head, [`analysis::SnippetAnalysis::with_lm_head`]) -> once the
//! batch is applied, [`tui::widgets::draw`] renders `&App` into the frame.
//!
//! Untrusted model files, indexes and hubs are handled in [`model`] (`source`, `gguf`,
//! `pickle`, `weights`, `integrity`, `limits`; README "Trust and limits").

pub mod analysis;
pub mod cli;
pub mod color;
pub mod commands;
pub mod corpus;
pub mod error;
pub mod export;
pub mod fsio;
pub mod input;
pub mod logging;
pub mod model;
pub mod paths;
pub mod present;
pub mod probe;
pub mod rng;
pub mod settings;
pub mod signals;
pub mod syntax;
pub mod tui;

pub use error::{Error, Result};
