//! The one background thread that owns the model and tokenizer.
//!
//! Jobs: load a model, analyse a text (causal models: with the LM head, for surprisal;
//! source mode: with hidden states, for per-token probe labels). Latest wins: a new request replaces a pending one
//! of the same kind, and an analysis that is running when a newer one arrives is stopped
//! between layers (through `ForwardOptions::cancel`) and its result dropped. A pending
//! model load runs before a pending analysis, so "switch model, then re-analyse" is one
//! submission of each. Results and progress go out through the `send` callback (the
//! runtime wraps them into its event channel). Panics in a job are caught and reported
//! as failures; the worker keeps serving. (Shape of gitui's `asyncjob`: one slot per job
//! kind, a generation counter to recognise superseded work.)
//!
//! An analysis sends each layer's code-token attention and head scores as soon as the
//! forward pass has computed it ([`WorkerMsg::AnalysedLayer`], nothing once superseded),
//! then the finished analysis. `S` (surprisal) on the analysis shown runs only the LM head
//! over the final hidden state it kept ([`SnippetAnalysis::with_lm_head`]) when the job
//! carries it and it is of the same snippet, input mode and model; otherwise the whole
//! pass with the head.
//!
//! The explorer's analyses keep their code-token matrices when they fit the attention
//! budget; for longer inputs they keep the hidden state entering each layer instead, and
//! layer jobs recompute the matrices of the layer on screen ([`Effect::Layer`]: one
//! layer of the forward pass), after a pending analysis; latest wins.
//!
//! Comparison jobs (compare mode: make the twin, analyse it, compare) come after a
//! pending analysis and before probes; latest wins, as for analyses. Knockout jobs (the
//! `K` mode) come next, also latest wins, cancelled between layers when superseded; then
//! logit lenses and patches from the twin (the `A` view), latest wins, a superseded
//! result not sent.

//! [`Effect::Layer`]: super::msg::Effect::Layer
//!
//! Probe jobs (train per-layer probes on the bundled corpus) have the lowest priority:
//! they run only when no load or analysis is pending, and a running one is cancelled
//! (between snippets / fits) when one arrives, then queued again unless a newer probe
//! request superseded it. Features are cached on disk, so a repeat is quick. The report
//! carries the fitted probes, which the explorer applies to the snippet's own features.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::msg::{
    AblationJob, AnalyseJob, CompareJob, KnockoutJob, LayerKey, LensJob, PartialFrame,
    PartialLayer, PatchJob, ProbeJob, TwinSource, WorkerMsg,
};
use crate::analysis::{self, Matrices, Mode, RunOptions, SnippetAnalysis};
use crate::model::{source, LoadedModel};

/// The model the explorer falls back to when the default model cannot be loaded.
pub const FALLBACK_MODEL: &str = "minilm";

/// The kinds of work, in the order the worker takes them: a load first, probe training
/// last (it also yields to every kind above it). A new kind of job is a variant here and
/// in [`Job`], and its handler in `run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Load,
    Analyse,
    Layer,
    Compare,
    Knockout,
    Lens,
    Patch,
    Ablate,
    Probe,
}

const KINDS: usize = 9;

/// One job of each kind, at most, waits (gitui's latest-wins `AsyncSingleJob`, for every
/// kind at once): a newer job replaces the pending one of its kind.
#[derive(Default)]
struct Slot {
    pending: [Option<Job>; KINDS],
    stop: bool,
}

impl Slot {
    /// A job of a kind above probe training waits (a running probe yields to it).
    fn urgent(&self) -> bool {
        self.waiting_before(Kind::Probe)
    }

    /// A job of a kind above `kind` waits (or the worker is stopping).
    fn waiting_before(&self, kind: Kind) -> bool {
        self.stop || self.pending[..kind as usize].iter().any(Option::is_some)
    }
}

struct Shared {
    /// Where probe features are cached (codescope's cache directory).
    cache_root: std::path::PathBuf,
    slot: Mutex<Slot>,
    cv: Condvar,
    /// Per kind, the newest request id; a running job of that kind whose id is older is
    /// superseded (it stops between layers and its results are dropped).
    newest: [AtomicU64; KINDS],
}

impl Shared {
    /// Whether `req` is still the newest request of `kind`.
    fn current(&self, kind: Kind, req: u64) -> bool {
        self.newest[kind as usize].load(Ordering::SeqCst) == req
    }

    /// Queue `job` (see [`Worker::queue`]).
    fn queue(&self, job: Job) {
        let kind = job.kind();
        if let Some(req) = job.req() {
            self.newest[kind as usize].store(req, Ordering::SeqCst);
        }
        self.lock().pending[kind as usize] = Some(job);
        self.cv.notify_one();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Handle to the worker thread. Dropping it stops the thread after its current job.
pub struct Worker {
    shared: Arc<Shared>,
    handle: Option<JoinHandle<()>>,
}

type Sender = dyn Fn(WorkerMsg) + Send + Sync;

impl Worker {
    /// Start the worker; `send` receives its reports (called from the worker thread).
    /// Probe features are cached under `cache_root` (codescope's cache directory).
    pub fn spawn(
        cache_root: std::path::PathBuf,
        send: impl Fn(WorkerMsg) + Send + Sync + 'static,
    ) -> Self {
        let shared = Arc::new(Shared {
            cache_root,
            slot: Mutex::new(Slot::default()),
            cv: Condvar::new(),
            newest: Default::default(),
        });
        let sh = shared.clone();
        let send: Box<Sender> = Box::new(send);
        let handle = std::thread::Builder::new()
            .name("codescope-model".into())
            .spawn(move || run(&sh, &*send))
            .expect("spawn the model worker thread");
        Worker {
            shared,
            handle: Some(handle),
        }
    }

    /// Queue `job`, replacing a pending one of its kind; a running older one of its kind
    /// is superseded.
    fn queue(&self, job: Job) {
        self.shared.queue(job);
    }

    /// Queue a model load.
    /// `random_weights: Some(seed)`: the model's random-weight baseline; `stack`: the
    /// stack an encoder–decoder runs (another stack is another load: the backbone is
    /// built for one).
    pub fn load(
        &self,
        spec: Option<String>,
        random_weights: Option<u64>,
        stack: crate::model::Stack,
    ) {
        self.queue(Job::Load(spec, random_weights, stack));
    }

    /// Queue an analysis.
    pub fn analyse(&self, job: AnalyseJob) {
        self.queue(Job::Analyse(job));
    }

    /// Queue a layer recomputation.
    pub fn layer(&self, key: LayerKey, a: Arc<SnippetAnalysis>) {
        self.queue(Job::Layer(key, a));
    }

    /// Queue a comparison.
    pub fn compare(&self, job: CompareJob) {
        self.queue(Job::Compare(job));
    }

    /// Queue a knockout.
    pub fn knockout(&self, job: KnockoutJob) {
        self.queue(Job::Knockout(job));
    }

    /// Queue a head ablation.
    pub fn ablate(&self, job: AblationJob) {
        self.queue(Job::Ablate(job));
    }

    /// Queue a logit lens.
    pub fn lens(&self, job: LensJob) {
        self.queue(Job::Lens(job));
    }

    /// Queue a patch from the twin.
    pub fn patch(&self, job: PatchJob) {
        self.queue(Job::Patch(job));
    }

    /// Queue a probe job.
    pub fn probe(&self, job: ProbeJob) {
        self.queue(Job::Probe(job));
    }

    /// Ask the thread to stop and cancel the running job; does not wait.
    pub fn stop(&self) {
        for n in &self.shared.newest {
            n.store(u64::MAX, Ordering::SeqCst);
        }
        self.shared.lock().stop = true;
        self.shared.cv.notify_one();
    }

    /// Stop and wait for the thread (tests).
    pub fn join(mut self) {
        self.stop();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop();
    }
}

enum Job {
    Load(Option<String>, Option<u64>, crate::model::Stack),
    Analyse(AnalyseJob),
    Layer(LayerKey, Arc<SnippetAnalysis>),
    Compare(CompareJob),
    Knockout(KnockoutJob),
    Lens(LensJob),
    Patch(PatchJob),
    Ablate(AblationJob),
    Probe(ProbeJob),
}

impl Job {
    fn kind(&self) -> Kind {
        match self {
            Job::Load(..) => Kind::Load,
            Job::Analyse(_) => Kind::Analyse,
            Job::Layer(..) => Kind::Layer,
            Job::Compare(_) => Kind::Compare,
            Job::Knockout(_) => Kind::Knockout,
            Job::Lens(_) => Kind::Lens,
            Job::Patch(_) => Kind::Patch,
            Job::Ablate(_) => Kind::Ablate,
            Job::Probe(_) => Kind::Probe,
        }
    }

    /// The request id that supersedes older ones of its kind (loads and layer
    /// recomputations have none: a layer belongs to its analysis' request).
    fn req(&self) -> Option<u64> {
        match self {
            Job::Load(..) | Job::Layer(..) => None,
            Job::Analyse(j) => Some(j.req),
            Job::Compare(j) => Some(j.req),
            Job::Knockout(j) => Some(j.req),
            Job::Lens(j) => Some(j.req),
            Job::Patch(j) => Some(j.req),
            Job::Ablate(j) => Some(j.req),
            Job::Probe(j) => Some(j.req),
        }
    }
}

fn next_job(shared: &Shared) -> Option<Job> {
    let mut s = shared.lock();
    loop {
        if s.stop {
            return None;
        }
        if let Some(job) = s.pending.iter_mut().find_map(Option::take) {
            return Some(job);
        }
        s = shared.cv.wait(s).unwrap_or_else(|e| e.into_inner());
    }
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

fn run(shared: &Shared, send: &Sender) {
    let mut model: Option<LoadedModel> = None;
    while let Some(job) = next_job(shared) {
        match job {
            Job::Load(spec, random, stack) => {
                let label = spec.clone().unwrap_or_else(|| "default model".into());
                let lo = crate::model::LoadOptions {
                    random_weights: random,
                    stack,
                };
                let r = catch_unwind(AssertUnwindSafe(|| load(spec, lo, send)));
                match r {
                    Ok(Some(m)) => model = Some(m),
                    Ok(None) => {}
                    Err(p) => send(WorkerMsg::ModelFailed {
                        label,
                        error: format!("internal error: {}", panic_text(p)),
                    }),
                }
            }
            Job::Analyse(job) => {
                let req = job.req;
                let r = catch_unwind(AssertUnwindSafe(|| {
                    analyse(shared, model.as_ref(), job, send)
                }));
                if let Err(p) = r {
                    send(WorkerMsg::AnalyseFailed {
                        req,
                        error: format!("internal error: {}", panic_text(p)),
                    });
                }
            }
            Job::Layer(key, a) => {
                // A layer of an analysis already superseded is not worth a forward step.
                if !shared.current(Kind::Analyse, key.0) {
                    continue;
                }
                let r = catch_unwind(AssertUnwindSafe(|| match model.as_ref() {
                    Some(m) => layer_job(m, key, &a),
                    None => WorkerMsg::Layer {
                        key,
                        result: Err("no model is loaded".into()),
                    },
                }));
                send(r.unwrap_or_else(|p| WorkerMsg::Layer {
                    key,
                    result: Err(format!("internal error: {}", panic_text(p))),
                }));
            }
            Job::Compare(job) => {
                let req = job.req;
                let r = catch_unwind(AssertUnwindSafe(|| {
                    let stale = || !shared.current(Kind::Compare, req);
                    if stale() {
                        return;
                    }
                    let Some(m) = model.as_ref() else {
                        return send(WorkerMsg::CompareFailed {
                            req,
                            error: "no model is loaded".into(),
                        });
                    };
                    let cancel = |_: usize| stale();
                    compare(m, &job, Some(&cancel), &|w| {
                        if !stale() {
                            send(w)
                        }
                    })
                }));
                if let Err(p) = r {
                    send(WorkerMsg::CompareFailed {
                        req,
                        error: format!("internal error: {}", panic_text(p)),
                    });
                }
            }
            Job::Knockout(job) => {
                let req = job.req;
                let stale = || !shared.current(Kind::Knockout, req);
                answer(
                    &stale,
                    send,
                    model.as_ref(),
                    |m| knockout_job(m, &job, Some(&|_| stale())),
                    |e| WorkerMsg::Knocked {
                        req,
                        result: Err(e),
                    },
                );
            }
            Job::Lens(job) => {
                let req = job.req;
                let stale = || !shared.current(Kind::Lens, req);
                answer(
                    &stale,
                    send,
                    model.as_ref(),
                    |m| lens_job(m, &job),
                    |e| WorkerMsg::Lensed {
                        req,
                        result: Err(e),
                    },
                );
            }
            Job::Patch(job) => {
                let req = job.req;
                let stale = || !shared.current(Kind::Patch, req);
                answer(
                    &stale,
                    send,
                    model.as_ref(),
                    |m| patch_job(m, &job),
                    |e| WorkerMsg::Patched {
                        req,
                        result: Err(e),
                    },
                );
            }
            Job::Ablate(job) => {
                let req = job.req;
                let stale = || !shared.current(Kind::Ablate, req);
                if stale() {
                    continue;
                }
                let Some(m) = model.as_ref() else {
                    send(WorkerMsg::AblationFailed {
                        req,
                        error: "no model is loaded".into(),
                    });
                    continue;
                };
                let stop = || stale() || shared.lock().waiting_before(Kind::Ablate);
                let send_current = |w: WorkerMsg| {
                    if !stale() {
                        send(w)
                    }
                };
                let r = catch_unwind(AssertUnwindSafe(|| {
                    ablation_job(m, &job, &stop, &send_current)
                }));
                match r {
                    Ok(next) if next < m.info.layers * m.info.heads => {
                        // Yielded to a more urgent job: go on from the next head
                        // afterwards (unless superseded).
                        let mut guard = shared.lock();
                        let s = &mut *guard;
                        let pending = &mut s.pending[Kind::Ablate as usize];
                        if pending.is_none() && !s.stop && shared.current(Kind::Ablate, req) {
                            *pending = Some(Job::Ablate(AblationJob { from: next, ..job }));
                        }
                    }
                    Ok(_) => {}
                    Err(p) => send_current(WorkerMsg::AblationFailed {
                        req,
                        error: format!("internal error: {}", panic_text(p)),
                    }),
                }
            }
            Job::Probe(job) => {
                let req = job.req;
                let r = catch_unwind(AssertUnwindSafe(|| {
                    probe(shared, model.as_ref(), job, send)
                }));
                if let Err(p) = r {
                    send(WorkerMsg::ProbeFailed {
                        req,
                        error: format!("internal error: {}", panic_text(p)),
                    });
                }
            }
        }
    }
}

/// The explorer's knockout (`K`): the job's edge set in every layer and head, a 20-draw
/// control (seed 0), as `codescope knockout` computes it.
pub fn knockout_job(
    m: &LoadedModel,
    job: &KnockoutJob,
    cancel: Option<&(dyn Fn(usize) -> bool + Sync)>,
) -> WorkerMsg {
    use crate::analysis::causal;
    let opts = causal::KnockoutOptions {
        edges: job.edges.clone(),
        layers: None,
        heads: None,
        control: 20,
        seed: 0,
        mode: job.mode,
        probe: None,
    };
    let result = causal::knockout_with(m, &job.syntax.source, job.syntax.language, &opts, cancel)
        .map(Arc::new)
        .map_err(|e| e.to_string());
    WorkerMsg::Knocked {
        req: job.req,
        result,
    }
}

/// The head grid's ablation scores: each head from the job's `from`-th on zeroed in
/// turn ([`causal::ablate_head`], as `codescope ablate` does), one
/// [`WorkerMsg::AblatedHead`] each, until `stop` says so. Returns the index of the next
/// head to do (every head's count once done or failed).
///
/// [`causal::ablate_head`]: crate::analysis::causal::ablate_head
pub fn ablation_job(
    m: &LoadedModel,
    job: &AblationJob,
    stop: &(dyn Fn() -> bool + Sync),
    send: &dyn Fn(WorkerMsg),
) -> usize {
    use crate::analysis::causal;
    let (heads, total) = (m.info.heads, m.info.layers * m.info.heads);
    let req = job.req;
    let fail = |e: crate::error::Error| {
        send(WorkerMsg::AblationFailed {
            req,
            error: e.to_string(),
        })
    };
    let cancel = |_: usize| stop();
    let syn = &job.syntax;
    let p = match causal::Prepared::new_with(
        m,
        &syn.source,
        syn.language,
        job.mode,
        true,
        Some(&cancel),
    ) {
        Ok(p) => p,
        Err(crate::error::Error::Cancelled) => return job.from,
        Err(e) => {
            fail(e);
            return total;
        }
    };
    for k in job.from..total {
        if stop() {
            return k;
        }
        let (layer, head) = (k / heads, k % heads);
        match causal::ablate_head(m, &p, crate::model::AblationMode::Zero, layer, head) {
            Ok(effect) => send(WorkerMsg::AblatedHead {
                req,
                layer,
                head,
                effect,
                measure: p.measure,
                done: k + 1,
                total,
            }),
            Err(e) => {
                fail(e);
                return total;
            }
        }
    }
    total
}

/// The explorer's logit lens, as `codescope lens` computes it, with the text of every
/// subword it names.
pub fn lens_job(m: &LoadedModel, job: &LensJob) -> WorkerMsg {
    use crate::analysis::causal;
    let result = causal::lens(m, &job.syntax.source, job.syntax.language, job.mode)
        .map(|lens| {
            let mut words = std::collections::BTreeMap::new();
            let ids = lens
                .cells
                .iter()
                .flatten()
                .flatten()
                .map(|c| c.top)
                .chain(lens.ids.iter().copied());
            for id in ids {
                words.entry(id).or_insert_with(|| {
                    m.tokenizer
                        .id_to_token(id)
                        .unwrap_or_else(|| format!("<{id}>"))
                });
            }
            Arc::new(super::msg::LensData { lens, words })
        })
        .map_err(|e| e.to_string());
    WorkerMsg::Lensed {
        req: job.req,
        result,
    }
}

/// The explorer's patch view: the job's twin patched into the snippet at every hidden
/// state, as `codescope patch` computes it. A twin that cannot be patched (it does not
/// align, the renaming fails its check) and a model that cannot be patched give the
/// reason alone.
pub fn patch_job(m: &LoadedModel, job: &PatchJob) -> WorkerMsg {
    use crate::analysis::compare::TwinSpec;
    use crate::error::Error;
    let spec = match &job.twin {
        TwinSource::Rewrite(rw) => Ok(TwinSpec::Rename(*rw)),
        TwinSource::File(path) => crate::input::read(&super::io::expand_tilde(path))
            .map(|inp| TwinSpec::Text {
                label: inp.name,
                text: inp.text,
            })
            .map_err(|e| e.to_string()),
    };
    let result = spec.and_then(|spec| {
        crate::analysis::patch::patch(m, &job.syntax.source, job.syntax.language, &spec)
            .map(Arc::new)
            .map_err(|e| match e {
                Error::Input { reason, .. } => reason,
                e => e.to_string(),
            })
    });
    WorkerMsg::Patched {
        req: job.req,
        result,
    }
}

/// Load `spec` (or the default model, falling back to [`FALLBACK_MODEL`]).
fn load(spec: Option<String>, lo: crate::model::LoadOptions, send: &Sender) -> Option<LoadedModel> {
    let (res, notice) = with_heartbeat(0, send, || false, |progress| load_with(spec, lo, progress));
    match res {
        Ok((m, label)) => {
            send(WorkerMsg::ModelLoaded {
                info: m.info.clone(),
                label,
                notice,
            });
            Some(m)
        }
        Err((label, error)) => {
            send(WorkerMsg::ModelFailed { label, error });
            None
        }
    }
}

/// A loaded model with its label, or (label, error).
type Loaded = std::result::Result<(LoadedModel, String), (String, String)>;

fn load_with(
    spec: Option<String>,
    lo: crate::model::LoadOptions,
    progress: &(dyn Fn(String) + Sync),
) -> (Loaded, Option<String>) {
    if spec.is_none() {
        progress("choosing the default model…".into());
    }
    let choice = source::choose(spec.as_deref());
    let default = choice.default_why.is_some();
    let mut notice = choice
        .default_why
        .as_ref()
        .map(|why| format!("model {}: {why}", choice.spec));
    let label = choice.spec.clone();
    progress(format!("loading model {label}…"));
    let t = Instant::now();
    let res = match source::open(&choice, &lo) {
        Err(e) if default && label != FALLBACK_MODEL => {
            tracing::warn!(%label, error = %e, "default model failed, falling back");
            progress(format!("{label} failed; loading {FALLBACK_MODEL}…"));
            notice = Some(format!(
                "fell back to {FALLBACK_MODEL}: {label} failed: {e}"
            ));
            source::open(&source::choose(Some(FALLBACK_MODEL)), &lo)
                .map(|m| (m, FALLBACK_MODEL.to_string()))
        }
        r => r.map(|m| (m, label.clone())),
    };
    if let Ok((_, label)) = &res {
        tracing::info!(%label, ms = t.elapsed().as_millis() as u64, "explorer model ready");
    }
    (res.map_err(|e| (label, e.to_string())), notice)
}

/// One job whose answer is a single message: skipped when already stale, a missing model
/// or a panic answered by `failed`'s error, and the answer dropped if it went stale
/// meanwhile (the knockout, the lens, the patch).
fn answer(
    stale: &dyn Fn() -> bool,
    send: &Sender,
    model: Option<&LoadedModel>,
    run: impl FnOnce(&LoadedModel) -> WorkerMsg,
    failed: impl Fn(String) -> WorkerMsg,
) {
    if stale() {
        return;
    }
    let r = catch_unwind(AssertUnwindSafe(|| match model {
        Some(m) => run(m),
        None => failed("no model is loaded".into()),
    }));
    let msg = r.unwrap_or_else(|p| failed(format!("internal error: {}", panic_text(p))));
    if !stale() {
        send(msg);
    }
}

fn analyse(shared: &Shared, model: Option<&LoadedModel>, job: AnalyseJob, send: &Sender) {
    let req = job.req;
    let stale = || !shared.current(Kind::Analyse, req);
    if stale() {
        return;
    }
    let Some(m) = model else {
        send(WorkerMsg::AnalyseFailed {
            req,
            error: "no model is loaded (press M to choose one)".into(),
        });
        return;
    };
    let layers = m.info.layers;
    // `S` on an analysis that kept its final hidden state: the LM head alone.
    let base = job
        .base
        .as_ref()
        .filter(|b| job.surprisal && reusable(b, m, &job));
    let t0 = Instant::now();
    tracing::info!(
        req,
        lm_head_only = base.is_some(),
        since_start_ms = crate::logging::started().elapsed().as_millis() as u64,
        "explorer analysis started"
    );
    // The layers as they come: what they share is made once, at the first.
    let frame: Mutex<Option<Arc<PartialFrame>>> = Mutex::new(None);
    let on_layer = |d: analysis::LayerDone<'_>| {
        if stale() {
            return;
        }
        let frame = frame
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(|| Arc::new(PartialFrame::of(&d)))
            .clone();
        tracing::info!(
            req,
            layer = d.layer,
            ms = t0.elapsed().as_millis() as u64,
            since_start_ms = crate::logging::started().elapsed().as_millis() as u64,
            "analysis layer sent"
        );
        send(WorkerMsg::AnalysedLayer {
            req,
            frame,
            layer: Arc::new(PartialLayer::of(&d)),
        });
    };
    let res = with_heartbeat(req, send, stale, |progress| {
        let cancel = |layer: usize| {
            let s = stale();
            if !s {
                progress(if layer < layers {
                    format!("analysing: layer {}/{}", layer + 1, layers)
                } else {
                    format!(
                        "analysing: LM head (next-token probabilities over {} words)",
                        thousands(m.tokenizer.vocab_size())
                    )
                });
            }
            s
        };
        if let Some(b) = base {
            return b.with_lm_head(m, Some(&cancel));
        }
        analysis::run(
            m,
            job.syntax.clone(),
            &job.opts,
            &RunOptions {
                on_layer: Some(&on_layer),
                ..run_options(&job, Some(&cancel))
            },
        )
    });
    tracing::info!(
        req,
        lm_head_only = base.is_some(),
        ms = t0.elapsed().as_millis() as u64,
        "explorer analysis done"
    );
    if stale() {
        return; // superseded: drop whatever came out
    }
    match res {
        Ok(a) => send(WorkerMsg::Analysed {
            req,
            data: Arc::new(a),
        }),
        Err(e) => send(WorkerMsg::AnalyseFailed {
            req,
            error: e.to_string(),
        }),
    }
}

/// How the explorer analyses a snippet (the worker, the headless explorer and the
/// tests' runtime alike): source mode keeps code-token hidden states (what a trained
/// probe labels); matrices are kept, or recomputed per layer on demand for inputs whose
/// matrices exceed the attention budget; causal models analysed without the LM head
/// keep the final hidden state, so that `S` runs the head alone ([`analyse_job`]).
pub fn run_options<'a>(
    job: &AnalyseJob,
    cancel: Option<&'a (dyn Fn(usize) -> bool + Sync)>,
) -> RunOptions<'a> {
    RunOptions {
        lm: job.surprisal,
        hidden: job.opts.mode == Mode::Source,
        cancel,
        matrices: Matrices::OnDemand,
        keep_final: true,
        on_layer: None,
    }
}

/// Whether `S`'s job can run the LM head alone over the final hidden state its base
/// analysis kept: the same snippet, input mode and model.
fn reusable(b: &SnippetAnalysis, m: &LoadedModel, job: &AnalyseJob) -> bool {
    b.final_hidden.is_some()
        && b.surprisal.is_none()
        && b.mode == job.opts.mode
        && b.trace.model.run_key() == m.info.run_key()
        && (Arc::ptr_eq(&b.syntax, &job.syntax)
            || (b.syntax.source == job.syntax.source && b.syntax.language == job.syntax.language))
}

/// An analysis job served synchronously, as the worker serves it (the headless explorer
/// and the tests' runtime): `S`'s LM head alone over the base analysis' final hidden
/// state when it can, else the pipeline with [`run_options`].
pub fn analyse_job(m: &LoadedModel, job: &AnalyseJob) -> crate::error::Result<SnippetAnalysis> {
    match job
        .base
        .as_ref()
        .filter(|b| job.surprisal && reusable(b, m, job))
    {
        Some(b) => b.with_lm_head(m, None),
        None => analysis::run(m, job.syntax.clone(), &job.opts, &run_options(job, None)),
    }
}

/// A layer job: layer `key.1`'s code-token attention of the analysis `a` (which `m`
/// made), recomputed from the hidden state entering it.
pub fn layer_job(m: &LoadedModel, key: LayerKey, a: &SnippetAnalysis) -> WorkerMsg {
    let t = Instant::now();
    let result = a
        .layer_matrices(m, key.1)
        .map(Arc::new)
        .map_err(|e| e.to_string());
    tracing::info!(
        layer = key.1,
        ms = t.elapsed().as_millis() as u64,
        "layer recomputed"
    );
    WorkerMsg::Layer { key, result }
}

/// `262144` as `262,144`.
fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// How long a step may run before its progress line shows the time it has taken.
const HEARTBEAT: Duration = Duration::from_millis(300);

/// Run `f`, giving it a `progress(text)` reporter for request `req`; while a step (the
/// time since the last report) takes longer than [`HEARTBEAT`], a second thread repeats
/// its text with the seconds elapsed, so no step over ~300 ms looks frozen (the LM head
/// of a 262k-word vocabulary takes seconds). Nothing is sent once `stale()` holds, and
/// nothing after `f` returns: the caller's result message is always the last word.
fn with_heartbeat<R>(
    req: u64,
    send: &Sender,
    stale: impl Fn() -> bool + Sync,
    f: impl FnOnce(&(dyn Fn(String) + Sync)) -> R,
) -> R {
    // (text, since) of the step under way; `None` once `f` has returned. Reports are
    // sent while holding the lock.
    let step: Mutex<Option<(String, Instant)>> = Mutex::new(Some((String::new(), Instant::now())));
    let lock = || step.lock().unwrap_or_else(|e| e.into_inner());
    let progress = |text: String| {
        let mut g = lock();
        if g.is_some() {
            *g = Some((text.clone(), Instant::now()));
            send(WorkerMsg::Progress { req, text });
        }
    };
    std::thread::scope(|sc| {
        let beat = sc.spawn(|| loop {
            std::thread::park_timeout(Duration::from_millis(100));
            let g = lock();
            let Some((text, since)) = g.as_ref() else {
                return;
            };
            let el = since.elapsed();
            if el >= HEARTBEAT && !text.is_empty() && !stale() {
                send(WorkerMsg::Progress {
                    req,
                    text: format!("{text} · {:.1} s", el.as_secs_f64()),
                });
            }
        });
        let r = f(&progress);
        *lock() = None;
        beat.thread().unpark();
        r
    })
}

/// Make the twin of a comparison job, analyse it with the job's options and compare it
/// with the job's analysis; reports go to `send` in order (the twin first, so it shows
/// while its forward runs). `cancel` stops the twin's forward between layers. Public so
/// tests can serve the job synchronously.
pub fn compare(
    m: &LoadedModel,
    job: &CompareJob,
    cancel: Option<&(dyn Fn(usize) -> bool + Sync)>,
    send: &dyn Fn(WorkerMsg),
) {
    use crate::analysis::compare::{self as cmp, TwinSpec};
    let req = job.req;
    let ta = &job.a.token_attention;
    if !ta.resident() {
        return send(WorkerMsg::CompareFailed {
            req,
            error: format!(
                "compare needs every layer's attention matrices; this input's ({} code \
                 tokens) exceed the attention budget (CODESCOPE_ATTENTION_BUDGET_MB)",
                ta.n()
            ),
        });
    }
    let spec = match &job.twin {
        TwinSource::Rewrite(rw) => Ok(TwinSpec::Rename(*rw)),
        TwinSource::File(path) => crate::input::read(&super::io::expand_tilde(path))
            .map(|inp| TwinSpec::Text {
                label: inp.name,
                text: inp.text,
            })
            .map_err(|e| e.to_string()),
    };
    let twin = spec.and_then(|spec| {
        cmp::make_twin(&job.a.syntax, &spec)
            .map(Arc::new)
            .map_err(|e| e.to_string())
    });
    send(WorkerMsg::TwinMade {
        req,
        result: twin.clone(),
    });
    let Ok(twin) = twin else {
        return;
    };
    let ro = RunOptions {
        lm: job.surprisal,
        hidden: job.opts.mode == Mode::Source,
        cancel,
        matrices: Matrices::All,
        ..Default::default()
    };
    send(WorkerMsg::Progress {
        req: 0,
        text: "analysing the twin…".into(),
    });
    match analysis::run(m, Arc::new(twin.b.clone()), &job.opts, &ro) {
        Ok(b) => {
            let mut c = cmp::from_analyses(job.a.clone(), Arc::new(b), twin);
            if let Some((report, task)) = &job.probe {
                c.probe = crate::probe::twin_agreement(report, *task, &c).map(|v| (task.name(), v));
            }
            send(WorkerMsg::Compared {
                req,
                data: Arc::new(c),
            })
        }
        Err(crate::error::Error::Cancelled) => {}
        Err(e) => send(WorkerMsg::CompareFailed {
            req,
            error: format!("the twin: {e}"),
        }),
    }
}

/// The probe panel's run: every layer of `m` on `snippets` (the bundled corpus of
/// `lang`), a linear probe of one task or AST-Probe (the explorer's worker and the
/// headless explorer run the same spec).
pub fn panel_spec<'a>(
    m: &'a LoadedModel,
    snippets: &'a [crate::corpus::Snippet],
    lang: crate::syntax::Language,
    task: super::app::PanelTask,
) -> crate::probe::RunSpec<'a> {
    let base = crate::probe::RunSpec::new(m, snippets, format!("bundled:{}", lang.name()));
    match task.task() {
        Some(t) => crate::probe::RunSpec {
            tasks: vec![t],
            ..base
        },
        None => crate::probe::RunSpec {
            tasks: Vec::new(),
            kind: crate::probe::ProbeKind::Ast,
            train: crate::probe::TrainOptions {
                kind: crate::probe::ProbeKind::Ast,
                ..base.train
            },
            ..base
        },
    }
}

/// Train the probes of `job` (linear or AST-Probe, all layers, the bundled corpus of its
/// language; features cached under the worker's cache root). Yields to loads and
/// analyses: the job is cancelled and queued again.
fn probe(shared: &Shared, model: Option<&LoadedModel>, job: ProbeJob, send: &Sender) {
    let req = job.req;
    let stale = || !shared.current(Kind::Probe, req);
    if stale() {
        return;
    }
    let fail = |error: String| send(WorkerMsg::ProbeFailed { req, error });
    let Some(m) = model else {
        return fail("no model is loaded".into());
    };
    if m.info.run_key() != job.model {
        return fail("the model changed; press p again".into());
    }
    let snippets = crate::probe::bundled::snippets(Some(job.lang));
    if snippets.is_empty() {
        return fail(format!("no bundled probe corpus for {}", job.lang.name()));
    }
    let urgent = || shared.lock().urgent();
    let cancel = || stale() || urgent();
    let spec = crate::probe::RunSpec {
        cache_root: Some(shared.cache_root.clone()),
        cancel: Some(&cancel),
        ..panel_spec(m, &snippets, job.lang, job.task)
    };
    let layers = m.info.layers + 1;
    let progress = |text: String, result| {
        if !stale() {
            send(WorkerMsg::ProbeProgress { req, text, result });
        }
    };
    progress("preparing the corpus…".into(), None);
    let res = crate::probe::run(&spec, &mut |p| match p {
        crate::probe::Progress::Cached => {
            progress(format!("fitting layer 1/{layers} (features cached)"), None)
        }
        crate::probe::Progress::Traced { done, total } => {
            let text = if done < total {
                format!("tracing {done}/{total}")
            } else {
                format!("fitting layer 1/{layers}")
            };
            progress(text, None)
        }
        crate::probe::Progress::Fitted {
            done,
            total,
            result,
        } => {
            let text = format!("fitting layer {}/{total}", (done + 1).min(total));
            progress(text, Some(result))
        }
        crate::probe::Progress::Structural(_) => {}
    });
    if stale() {
        return;
    }
    match res {
        Ok(report) => send(WorkerMsg::Probed {
            req,
            report: Arc::new(report),
        }),
        Err(_) if urgent() => {
            // Yielded to a load or analysis: run again afterwards (unless superseded).
            let mut guard = shared.lock();
            let s = &mut *guard;
            let pending = &mut s.pending[Kind::Probe as usize];
            if pending.is_none() && !s.stop {
                *pending = Some(Job::Probe(job));
            }
        }
        Err(e) => fail(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe_job(req: u64) -> Job {
        Job::Probe(ProbeJob {
            req,
            model: "m".into(),
            lang: crate::syntax::Language::Python,
            task: crate::tui::app::PanelTask::Ast,
        })
    }

    /// One slot per kind, latest wins, taken in priority order; `current` tells a running
    /// job it was superseded; `stop` supersedes everything.
    /// A running ablation yields to every kind above it (a new analysis, a load, a
    /// lens), not to probe training.
    #[test]
    fn an_ablation_yields_to_every_kind_above_it() {
        let mut s = Slot::default();
        s.pending[Kind::Probe as usize] = Some(probe_job(1));
        assert!(!s.waiting_before(Kind::Ablate));
        s.pending[Kind::Load as usize] = Some(Job::Load(None, None, Default::default()));
        assert!(s.waiting_before(Kind::Ablate));
        s.pending[Kind::Load as usize] = None;
        s.stop = true;
        assert!(s.waiting_before(Kind::Ablate));
    }

    #[test]
    fn the_job_slot_is_latest_wins_per_kind_in_priority_order() {
        let shared = Shared {
            cache_root: std::path::PathBuf::new(),
            slot: Mutex::new(Slot::default()),
            cv: Condvar::new(),
            newest: Default::default(),
        };
        shared.queue(probe_job(1));
        assert!(!shared.lock().urgent(), "a probe alone is not urgent");
        shared.queue(probe_job(2));
        assert!(!shared.current(Kind::Probe, 1) && shared.current(Kind::Probe, 2));
        shared.queue(Job::Load(
            Some("minilm".into()),
            None,
            crate::model::Stack::Encoder,
        ));
        assert!(shared.lock().urgent());
        // The load first, then the one probe left (the newer).
        assert!(matches!(next_job(&shared), Some(Job::Load(Some(s), None, _)) if s == "minilm"));
        assert!(matches!(next_job(&shared), Some(Job::Probe(p)) if p.req == 2));
        shared.queue(probe_job(3));
        shared.lock().stop = true;
        for n in &shared.newest {
            n.store(u64::MAX, Ordering::SeqCst);
        }
        assert!(next_job(&shared).is_none());
        assert!(!shared.current(Kind::Probe, 3));
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(super::thousands(262_144), "262,144");
        assert_eq!(super::thousands(300), "300");
        assert_eq!(super::thousands(1_000), "1,000");
        assert_eq!(super::thousands(0), "0");
    }
}
