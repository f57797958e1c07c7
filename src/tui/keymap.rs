//! The explorer's keys, as data (helix's `keymap/default.rs`): one table of sections, each
//! row a key label, its help line, the README's rows for it and the (key, [`Command`])
//! bindings. The dispatcher (`App::normal_key` via [`command`]), the help overlay (`?`)
//! and the README's key table ([`readme_table`], checked by a test) all come from
//! [`KEYMAP`], so they cannot drift apart. Modal input (the editor, prompts, the model
//! picker, the export menu, the overview) keeps its own keys, named in its own footer.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What a key does in the explorer's normal mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// ← : the previous layer, or the head grid's cursor.
    Left,
    /// → : the next layer, or the head grid's cursor.
    Right,
    /// ↑ : the previous head, or the head grid's cursor.
    Up,
    /// ↓ : the next head, or the head grid's cursor.
    Down,
    /// Enter in the head grid: open the head under its cursor.
    GridJump,
    MeanHeads,
    TokenPrev,
    TokenNext,
    LineNext,
    LinePrev,
    IdentNext,
    IdentPrev,
    PageDown,
    PageUp,
    FirstToken,
    LastToken,
    Search,
    SearchNext,
    SearchPrev,
    Direction,
    DataFlow,
    NextPanel,
    PrevPanel,
    Gold,
    Finding,
    ZoomIn,
    ZoomOut,
    ZoomFit,
    NextMetric,
    /// A head-grid score by its number (0-based).
    Metric(u8),
    ThresholdDown,
    ThresholdUp,
    InputMode,
    Surprisal,
    Knockout,
    /// Y: the logit lens.
    Lens,
    /// A: the patch view (activation patching from compare mode's twin).
    Patch,
    ProbeTrain,
    ProbeTask,
    Compare,
    CompareTwin,
    CompareHeat,
    Edit,
    Open,
    /// r: analyse only some lines of the file.
    Region,
    Models,
    RandomWeights,
    /// E: an encoder–decoder's next stack (encoder → decoder → cross).
    Stack,
    Language,
    Export,
    Help,
    /// q / Esc: quit, asking once after an edit.
    Quit,
    /// Ctrl-C: quit at once, in every mode.
    QuitNow,
    /// Ctrl-Z: suspend, in every mode.
    Suspend,
    Overview,
    Pin,
    AddStep,
    NextStep,
    PrevStep,
}

/// A key: its code and whether Ctrl is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub ctrl: bool,
}

const fn ch(c: char) -> Key {
    Key {
        code: KeyCode::Char(c),
        ctrl: false,
    }
}

const fn code(code: KeyCode) -> Key {
    Key { code, ctrl: false }
}

const fn ctrl(c: char) -> Key {
    Key {
        code: KeyCode::Char(c),
        ctrl: true,
    }
}

/// One row of the help: its keys as shown, what they do (short enough for two columns at
/// 80x24), the README's rows for them (keys, the longer description) and the bindings.
#[derive(Debug)]
pub struct KeyBinding {
    pub keys: &'static str,
    pub help: &'static str,
    pub manual: &'static [(&'static str, &'static str)],
    pub bind: &'static [(Key, Command)],
}

/// A titled group of rows.
#[derive(Debug)]
pub struct Section {
    pub title: &'static str,
    pub rows: &'static [KeyBinding],
}

use Command as C;

/// Every key of the explorer's normal mode, by section.
pub const KEYMAP: &[Section] = &[
    Section {
        title: "Layer and head",
        rows: &[
            KeyBinding {
                keys: "← →",
                help: "layer (grid: its cursor)",
                manual: &[("← / →", "previous / next layer (in the head grid: move the grid cursor; in a turned grid, ← → move along heads)")],
                bind: &[(code(KeyCode::Left), C::Left), (code(KeyCode::Right), C::Right)],
            },
            KeyBinding {
                keys: "↑ ↓",
                help: "head (grid: its cursor)",
                manual: &[("↑ / ↓", "previous / next head (in the head grid: move the grid cursor; in a turned grid, ↑ ↓ move along layers)")],
                bind: &[(code(KeyCode::Up), C::Up), (code(KeyCode::Down), C::Down)],
            },
            KeyBinding {
                keys: "Enter",
                help: "grid: jump to that head",
                manual: &[("Enter", "head grid: jump to that head")],
                bind: &[(code(KeyCode::Enter), C::GridJump)],
            },
            KeyBinding {
                keys: "a",
                help: "mean over heads on/off",
                manual: &[("a", "mean over heads on/off")],
                bind: &[(ch('a'), C::MeanHeads)],
            },
        ],
    },
    Section {
        title: "Token cursor",
        rows: &[
            KeyBinding {
                keys: "h l",
                help: "previous / next token",
                manual: &[("h / l", "previous / next token")],
                bind: &[(ch('h'), C::TokenPrev), (ch('l'), C::TokenNext)],
            },
            KeyBinding {
                keys: "j k",
                help: "next / previous line",
                manual: &[("j / k", "next / previous line")],
                bind: &[(ch('j'), C::LineNext), (ch('k'), C::LinePrev)],
            },
            KeyBinding {
                keys: "w b",
                help: "next / prev identifier",
                manual: &[("w / b", "next / previous identifier")],
                bind: &[(ch('w'), C::IdentNext), (ch('b'), C::IdentPrev)],
            },
            KeyBinding {
                keys: "PgDn PgUp",
                help: "a page down / up",
                manual: &[("PgDn / PgUp", "a page down / up")],
                bind: &[(code(KeyCode::PageDown), C::PageDown), (code(KeyCode::PageUp), C::PageUp)],
            },
            KeyBinding {
                keys: "Home End",
                help: "first / last token",
                manual: &[("Home / End", "first / last token")],
                bind: &[(code(KeyCode::Home), C::FirstToken), (code(KeyCode::End), C::LastToken)],
            },
            KeyBinding {
                keys: "/ n N",
                help: "search; next / previous",
                manual: &[("/ n N", "search token text (the prompt starts empty each time), next / previous match of the last pattern")],
                bind: &[(ch('/'), C::Search), (ch('n'), C::SearchNext), (ch('N'), C::SearchPrev)],
            },
            KeyBinding {
                keys: "f",
                help: "attention from / to it",
                manual: &[("f", "attention from / to the selected token")],
                bind: &[(ch('f'), C::Direction)],
            },
            KeyBinding {
                keys: "d",
                help: "its data-flow links",
                manual: &[("d", "the selected identifier's data-flow links, marked on a gold background (NO_COLOR: bold + underlined): the study's data flow, or codescope's refined one while the head-grid score is `dfg_refined` (6)")],
                bind: &[(ch('d'), C::DataFlow)],
            },
        ],
    },
    Section {
        title: "Views",
        rows: &[
            KeyBinding {
                keys: "Tab S-Tab",
                help: "next / previous panel",
                manual: &[("Tab, Shift-Tab", "panel focus (at 80x24 also which side panel is shown)")],
                bind: &[(code(KeyCode::Tab), C::NextPanel), (code(KeyCode::BackTab), C::PrevPanel)],
            },
            KeyBinding {
                keys: "g",
                help: "gold edges on heatmap",
                manual: &[("g", "gold edges (AST motif, data flow) on the heatmap")],
                bind: &[(ch('g'), C::Gold)],
            },
            KeyBinding {
                keys: "F",
                help: "the finding: syn/id F1",
                manual: &[("F", "the Categories panel shows the study's finding (syn–syn, id–id, syn–id F1 per layer; see The finding) and back")],
                bind: &[(ch('F'), C::Finding)],
            },
            KeyBinding {
                keys: "+ - 0",
                help: "zoom in / out / fit",
                manual: &[("+ - 0", "heatmap zoom in / out / fit (`=` zooms in too)")],
                bind: &[(ch('+'), C::ZoomIn), (ch('='), C::ZoomIn), (ch('-'), C::ZoomOut), (ch('0'), C::ZoomFit)],
            },
            KeyBinding {
                keys: "s 1-8",
                help: "head grid score",
                manual: &[("s, 1-8", "head-grid score: F1 vs AST motif, F1 vs data flow (the study's), syn→id share, id→syn share, entropy, F1 vs `dfg_refined`, codescope's refined data flow (`d`'s links follow it), then the head ablation's effect on identifiers (7) and on syntactic tokens (8): each head zeroed in turn, in the background, the cells filling in as the heads are done (the status line counts them), Δ bits on a blue–orange scale (1 − cos for encoders), so the head that matches the AST (1) and the head that matters (7, 8) are a key apart")],
                bind: &[
                    (ch('s'), C::NextMetric),
                    (ch('1'), C::Metric(0)),
                    (ch('2'), C::Metric(1)),
                    (ch('3'), C::Metric(2)),
                    (ch('4'), C::Metric(3)),
                    (ch('5'), C::Metric(4)),
                    (ch('6'), C::Metric(5)),
                    (ch('7'), C::Metric(6)),
                    (ch('8'), C::Metric(7)),
                ],
            },
            KeyBinding {
                keys: "t T",
                help: "threshold -/+ 0.05",
                manual: &[("t / T", "threshold down / up (0.05 steps)")],
                bind: &[(ch('t'), C::ThresholdDown), (ch('T'), C::ThresholdUp)],
            },
            KeyBinding {
                keys: "m",
                help: "input: source / paper",
                manual: &[("m", "input mode: source / paper (the study's input: comments and docstrings removed, space-joined tokens)")],
                bind: &[(ch('m'), C::InputMode)],
            },
            KeyBinding {
                keys: "S",
                help: "surprisal (causal models)",
                manual: &[("S", "surprisal view (causal models): code coloured by per-token surprisal in bits (a code token's bits are the sum of its subwords' bits, i.e. `-log2 p` of all its subwords given the prefix; the colour scale stops at the 95th percentile, so one long token such as a docstring does not wash out the rest, and the legend gives both that cap and the maximum; NO_COLOR: top decile bold + underlined), the snippet's perplexity (per subword), and what the model expected where the selected token starts (top 5 with p); the LM head runs only while the view is on; encoders say why not")],
                bind: &[(ch('S'), C::Surprisal)],
            },
            KeyBinding {
                keys: "K",
                help: "knockout: next edge set (syn-id … dfg, off)",
                manual: &[("K", "knockout mode ([Causal tests](#causal-tests)): each press knocks the next edge set out — `syn-id`, `id-syn`, `syn-syn`, `id-id`, `ast_motif`, `dfg`, then off — in every layer and head, with a 20-draw matched control, in the background; the code is coloured by each token's change (Δ bits for causal models, 1 − cos for encoders) on a blue–orange scale (NO_COLOR: tokens losing at least half the largest change bold + underlined, gaining as much italic + underlined), the title names the set, the status line gives identifiers and syntactic tokens against the control; an edit re-runs it")],
                bind: &[(ch('K'), C::Knockout)],
            },
            KeyBinding {
                keys: "Y",
                help: "logit lens (causal models)",
                manual: &[("Y", "logit lens ([Causal tests](#causal-tests), causal models; encoders say why not): layers (rows, L0 = the embeddings) by code tokens (columns), each cell the top-1 guess for the token's first subword read through the LM head at that layer, shaded by the probability of the actual one (NO_COLOR: a shade glyph; bold where it is the top guess; underlined where an identifier is first the top guess); under it the selected cell's top-1, probability and rank, the layer the token is decided at, and the identifiers' layers; ← → (h l) token, w b identifier, ↑ ↓ (j k) layer, x export, Esc closes")],
                bind: &[(ch('Y'), C::Lens)],
            },
            KeyBinding {
                keys: "A",
                help: "patch from the twin (causal)",
                manual: &[("A", "patch view ([Causal tests](#causal-tests), causal decoder-only models; encoders and encoder–decoders say why not): turns compare mode on and copies the twin's residual stream at the renamed tokens into the snippet, one hidden state at a time, as `codescope patch` does, in the background; the panel under the code (in the twin's place) lists per hidden state (L0 = the embeddings) the Δ bits on the unchanged tokens and the fraction of the rename effect carried, for identifiers and syntactic tokens (scrolling with the selected state); the code is coloured by the selected state's Δ bits per token on a blue–orange scale (renamed tokens underlined); the status line gives the rename effect and the selected state's fractions; ← → pick the hidden state (the heatmap's layer follows); a twin that does not align position by position gets `patch`'s refusal; an edit or another twin (`C`) runs it again; `A` again or compare off closes it; `x` exports it")],
                bind: &[(ch('A'), C::Patch)],
            },
            KeyBinding {
                keys: "p P",
                help: "probes: train / next task",
                manual: &[("p / P", "probe panel: train linear probes for the current model, task and language in the background (bars of accuracy against control per layer, cached for the session; then the probe's label for the selected token at the current layer beside the gold one, token-level tasks in source mode) / next task (after the seven tasks: AST-Probe, its per-layer tree F1 against control and the snippet's tree rebuilt at the current layer beside the gold one, `✗` / `≈` marking unmatched constituents; both trees follow the token cursor)")],
                bind: &[(ch('p'), C::ProbeTrain), (ch('P'), C::ProbeTask)],
            },
            KeyBinding {
                keys: "c C",
                help: "compare: on/off; the twin",
                manual: &[
                    ("c", "compare mode on/off: the snippet (A) against its twin (B), see [Counterfactual twins](#counterfactual-twins): the twin's code under the code panel (renamed tokens bold and underlined; with `S`, each token's surprisal difference B − A on a blue–orange scale, and the rename sensitivity in the title), the head grid shows B − A of its score, the status bar says `compare rename:neutral`; `x` also writes the comparison (`…-compare.json`, as `compare --json`)"),
                    ("C", "the twin: `rename:neutral` → `rename:shuffle` → a twin file (prompt)"),
                ],
                bind: &[(ch('c'), C::Compare), (ch('C'), C::CompareTwin)],
            },
            KeyBinding {
                keys: "v",
                help: "compare heatmap A/B/B−A",
                manual: &[("v", "compare mode's heatmap: A, B (on A's tokens), B − A (diverging scale, legend in the info line)")],
                bind: &[(ch('v'), C::CompareHeat)],
            },
        ],
    },
    Section {
        title: "Input and output",
        rows: &[
            KeyBinding {
                keys: "e",
                help: "edit (Esc applies)",
                manual: &[("e", "edit the snippet (Esc applies and re-analyses, Ctrl-D discards)")],
                bind: &[(ch('e'), C::Edit)],
            },
            KeyBinding {
                keys: "o",
                help: "open another file",
                manual: &[("o", "open a file (Tab completes, `~` is home; after an edit, the first `o` says the edit is not saved, the second opens)")],
                bind: &[(ch('o'), C::Open)],
            },
            KeyBinding {
                keys: "r",
                help: "analyse lines A-B only",
                manual: &[("r", "analyse only lines A-B of the file (typed `A-B`; empty: the whole file again), e.g. one method of a long class that does not fit the model's window; `--lines A-B` starts there")],
                bind: &[(ch('r'), C::Region)],
            },
            KeyBinding {
                keys: "M",
                help: "switch model",
                manual: &[("M", "switch model (the presets, whether each is on disk, or any spec typed in)")],
                bind: &[(ch('M'), C::Models)],
            },
            KeyBinding {
                keys: "R",
                help: "random weights on/off",
                manual: &[("R", "random weights on/off: reload the model with its seeded random initialisation (seed from `--random-weights`, else 0) or back with its trained weights; the status bar says `random weights (seed S)` (see [Random-weight baselines](#random-weight-baselines))")],
                bind: &[(ch('R'), C::RandomWeights)],
            },
            KeyBinding {
                keys: "E",
                help: "stack: encoder/decoder/cross",
                manual: &[("E", "an encoder–decoder's stack: encoder → decoder → cross → encoder, re-analysed with the model reloaded for that stack (see `--stack`); the status bar names the stack on; cross-attention shows the heat map and categories, and the head grid says why it has no gold-graph scores (its ablation scores, 7 and 8, fill it; K and Y run there too, on the cross-attention); a model with one stack says so in one line")],
                bind: &[(ch('E'), C::Stack)],
            },
            KeyBinding {
                keys: "L",
                help: "language: python / java",
                manual: &[("L", "language of the snippet: Python / Java (re-parsed and re-analysed)")],
                bind: &[(ch('L'), C::Language)],
            },
            KeyBinding {
                keys: "x",
                help: "export figures (menu)",
                manual: &[("x", "export menu: this view, every panel, or the whole screen, as slide-grade SVG + PNG (and the numbers as JSON) into the export directory (`--export-dir`, default `~/.local/share/codescope/exports`; the paths are shown)")],
                bind: &[(ch('x'), C::Export)],
            },
            KeyBinding {
                keys: "?",
                help: "this help",
                manual: &[("?", "help (always named on the status bar); when it does not fit, ↑ ↓ PgUp PgDn scroll it (its title says how much is hidden) and any other key closes it")],
                bind: &[(ch('?'), C::Help)],
            },
            KeyBinding {
                keys: "q Esc C-c",
                help: "quit",
                manual: &[("q, Esc, Ctrl-C", "quit (after an edit, the first q or Esc says the edit is not saved; the second quits; Ctrl-C quits at once, in every mode)")],
                bind: &[(ch('q'), C::Quit), (code(KeyCode::Esc), C::Quit), (ctrl('c'), C::QuitNow)],
            },
            KeyBinding {
                keys: "C-z",
                help: "suspend (fg resumes)",
                manual: &[("Ctrl-Z", "suspend: the shell gets the terminal back (the job is stopped, as by Ctrl-Z anywhere); `fg` brings the explorer back as it was")],
                bind: &[(ctrl('z'), C::Suspend)],
            },
        ],
    },
    Section {
        title: "Presenting",
        rows: &[
            KeyBinding {
                keys: "O",
                help: "overview of every head",
                manual: &[("O", "model overview: every head as a thumbnail of its code-token attention with its score; arrows move, Enter opens the head, Esc closes")],
                bind: &[(ch('O'), C::Overview)],
            },
            KeyBinding {
                keys: "*",
                help: "pin head beside current",
                manual: &[("*", "pin the current head: it stays beside the current one in the heatmap panel (`*` again unpins)")],
                bind: &[(ch('*'), C::Pin)],
            },
            KeyBinding {
                keys: "B",
                help: "add view to the tour",
                manual: &[("B", "append the current view as a step to the tour (`--tour FILE`, else `tour.toml` in the export directory): it asks for the step's caption (empty: none; Esc: no step), and the status line says what it recorded (view, layer, head, compare mode)")],
                bind: &[(ch('B'), C::AddStep)],
            },
            KeyBinding {
                keys: "] [",
                help: "tour: next / back step",
                manual: &[("] / [", "tour: next / previous step (its caption on the status line; every step stays explorable)")],
                bind: &[(ch(']'), C::NextStep), (ch('['), C::PrevStep)],
            },
        ],
    },
    Section {
        title: "Mouse",
        rows: &[
            KeyBinding {
                keys: "click",
                help: "token, heatmap cell, head",
                manual: &[("mouse", "click a token to select it; click a heatmap cell to select its query (the status line gives the attention from it to the cell's key); click a head-grid cell to open that head (a header number opens that layer); click a probe row to show that layer; the wheel scrolls the panel under it")],
                bind: &[],
            },
            KeyBinding {
                keys: "wheel",
                help: "scroll the panel under it",
                manual: &[],
                bind: &[],
            },
        ],
    },
];

/// The command a key press asks for in normal mode. A binding with Ctrl matches only with
/// Ctrl held; one without matches whatever the modifiers (as the explorer always did: a
/// terminal sends Shift as the character itself).
pub fn command(k: &KeyEvent) -> Option<Command> {
    let held = k.modifiers.contains(KeyModifiers::CONTROL);
    let mut plain = None;
    for b in KEYMAP.iter().flat_map(|s| s.rows) {
        for (key, c) in b.bind {
            if key.code == k.code {
                if key.ctrl && held {
                    return Some(*c);
                }
                if !key.ctrl && plain.is_none() {
                    plain = Some(*c);
                }
            }
        }
    }
    plain
}

/// The commands that work in every mode (editor and prompts included): Ctrl-C, Ctrl-Z.
pub fn global(k: &KeyEvent) -> Option<Command> {
    if !k.modifiers.contains(KeyModifiers::CONTROL) {
        return None;
    }
    command(k).filter(|c| matches!(c, Command::QuitNow | Command::Suspend))
}

/// The README's key table (its header and one row per manual entry), in the keymap's
/// order.
pub fn readme_table() -> String {
    let mut s = String::from("| key | action |\n|---|---|\n");
    for b in KEYMAP.iter().flat_map(|s| s.rows) {
        for (keys, text) in b.manual {
            s.push_str(&format!("| {keys} | {text} |\n"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_has_one_command() {
        let mut seen: Vec<Key> = Vec::new();
        for b in KEYMAP.iter().flat_map(|s| s.rows) {
            for (k, _) in b.bind {
                assert!(!seen.contains(k), "{k:?} is bound twice");
                seen.push(*k);
            }
        }
        let ev = |c: KeyCode, m: KeyModifiers| KeyEvent::new(c, m);
        assert_eq!(
            command(&ev(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Command::QuitNow)
        );
        assert_eq!(
            command(&ev(KeyCode::Char('c'), KeyModifiers::NONE)),
            Some(Command::Compare)
        );
        assert_eq!(global(&ev(KeyCode::Char('c'), KeyModifiers::NONE)), None);
        assert_eq!(
            global(&ev(KeyCode::Char('z'), KeyModifiers::CONTROL)),
            Some(Command::Suspend)
        );
        assert_eq!(
            command(&ev(KeyCode::Char('4'), KeyModifiers::NONE)),
            Some(Command::Metric(3))
        );
        assert_eq!(command(&ev(KeyCode::Char('u'), KeyModifiers::NONE)), None);
    }
}
