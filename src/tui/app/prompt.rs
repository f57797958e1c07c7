//! The one-line prompts' extras and the language switch:
//! - the open prompt's Tab completion (the I/O thread lists the directory:
//!   [`Effect::Complete`] -> `Msg::Completions`): one match is taken whole, several
//!   complete their common prefix and are listed on the status line; `~` is the home
//!   directory (expanded where the file is read);
//! - `L`: the next language for the document (re-parsed and re-analysed).

use super::{App, Overlay, PromptKind};
use crate::syntax::Language;
use crate::tui::data::Doc;
use crate::tui::msg::Effect;

impl App {
    /// Tab in the open prompt: ask for the completions of what is typed.
    pub(super) fn request_completion(&mut self, typed: &str) -> Vec<Effect> {
        vec![Effect::Complete(typed.to_string())]
    }

    /// Completions arrived: apply them if the prompt still holds what they complete.
    pub(super) fn completions(&mut self, typed: String, candidates: Vec<String>) {
        let Overlay::Prompt(PromptKind::Open | PromptKind::Twin, input) = &mut self.overlay else {
            return;
        };
        if input.text != typed {
            return; // typed on since
        }
        match candidates.len() {
            0 => self
                .status
                .warn(format!("no file or directory matches '{typed}'")),
            1 => {
                *input = crate::tui::editor::LineInput::new(&candidates[0]);
                self.status.message = None;
            }
            k => {
                let common = common_prefix(&candidates);
                if common.chars().count() > typed.chars().count() {
                    *input = crate::tui::editor::LineInput::new(&common);
                }
                let names: Vec<&str> = candidates
                    .iter()
                    .map(|c| {
                        let c = c.trim_end_matches('/');
                        c.rsplit('/').next().unwrap_or(c)
                    })
                    .take(8)
                    .collect();
                let more = if k > names.len() { ", …" } else { "" };
                self.status
                    .info(format!("{k} matches: {}{more}", names.join(", ")));
            }
        }
    }

    /// `L`: switch the document to the next language.
    pub(super) fn next_language(&mut self) -> Vec<Effect> {
        let all = Language::ALL;
        let i = all.iter().position(|&l| l == self.doc.lang).unwrap_or(0);
        let lang = all[(i + 1) % all.len()];
        let mut doc = Doc::new(self.doc.name.clone(), self.doc.text.clone(), lang);
        doc.edited = self.doc.edited;
        self.status.info(format!(
            "language: {} (L switches; --lang sets it at start)",
            lang.name()
        ));
        self.set_doc(doc)
    }
}

/// The longest common prefix of `xs` (on char boundaries).
fn common_prefix(xs: &[String]) -> String {
    let Some(first) = xs.first() else {
        return String::new();
    };
    let mut end = first.len();
    for x in &xs[1..] {
        end = first
            .char_indices()
            .zip(x.chars())
            .take_while(|((_, a), b)| a == b)
            .last()
            .map_or(0, |((i, a), _)| i + a.len_utf8())
            .min(end);
    }
    first[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::common_prefix;

    #[test]
    fn common_prefixes() {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(common_prefix(&v(&["src/a.py", "src/ab.py"])), "src/a");
        assert_eq!(common_prefix(&v(&["é1", "é2"])), "é");
        assert_eq!(common_prefix(&v(&["x", "y"])), "");
        assert_eq!(common_prefix(&v(&["same"])), "same");
    }
}
