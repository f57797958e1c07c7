//! The model's state in the explorer (what is loaded, what was asked for, why) and the
//! model picker (`M`).

use crate::model::{source, ModelInfo};
use crate::tui::editor::LineInput;

/// The loaded model and how it was chosen.
#[derive(Debug, Clone, Default)]
pub struct ModelState {
    /// Loaded model: label as the user named it, and its description.
    pub loaded: Option<(String, ModelInfo)>,
    /// `--model` or the picker's last choice (`None`: the default model).
    pub spec: Option<String>,
    /// Why this model (default choice / fallback).
    pub notice: Option<String>,
    /// Load with random weights of this seed (`--random-weights`; `R` toggles it).
    pub random_weights: Option<u64>,
    /// The seed `R` turns random weights on with: `--random-weights`'s, else 0.
    pub random_seed: u64,
    /// The stack an encoder–decoder loads with (`--stack`; the stack key `E` cycles it).
    pub stack: crate::model::Stack,
    /// The stack the explorer started with (`--stack`): a tour's steps default to it.
    pub default_stack: crate::model::Stack,
    /// The last load that failed (`model LABEL: why`), until a model loads: kept on the
    /// status line instead of a bare "no model is loaded", and on stderr (with a non-zero
    /// exit) when the explorer ends without any model having loaded.
    pub failed: Option<String>,
}

impl ModelState {
    /// The loaded model's description.
    pub fn info(&self) -> Option<&ModelInfo> {
        self.loaded.as_ref().map(|(_, i)| i)
    }
}

/// One entry of the model picker.
#[derive(Debug, Clone)]
pub struct PickerItem {
    pub name: String,
    pub spec: String,
    pub description: String,
    /// On local disk (`None`: not checked yet).
    pub local: Option<bool>,
}

/// The model picker: presets plus a typed spec.
#[derive(Debug, Clone)]
pub struct Picker {
    pub items: Vec<PickerItem>,
    /// Selected row; `items.len()` is the typed-spec row.
    pub sel: usize,
    pub input: LineInput,
}

impl Picker {
    /// The presets, the loaded one (`label`) selected; availability unknown until the
    /// runtime has checked the disk.
    pub fn new(label: Option<&str>) -> Self {
        let items: Vec<PickerItem> = source::PRESETS
            .iter()
            .map(|p| PickerItem {
                name: p.name.to_string(),
                spec: p.spec.to_string(),
                description: p.description.to_string(),
                local: None,
            })
            .collect();
        let sel = label
            .and_then(|l| items.iter().position(|i| i.name == l))
            .unwrap_or(0);
        Picker {
            items,
            sel,
            input: LineInput::default(),
        }
    }
}
