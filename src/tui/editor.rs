//! Text input: a multi-line editor for the snippet (`e`) and a one-line input for
//! prompts (open file, search, model spec). Cursor positions are in chars, never bytes,
//! so any UTF-8 text edits safely.
//!
//! Pasted text (the terminal's bracketed paste) is one insertion, never keystrokes: no
//! auto-indent, line breaks as they were (CRLF and CR made LF), control characters other
//! than tab and newline dropped ([`clean_paste`]), in time linear in its length.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What a key did to an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EditOutcome {
    /// Keep editing.
    Continue,
    /// Leave and apply (editor: Esc; prompt: Enter).
    Submit,
    /// Leave and throw the edit away (editor: Ctrl-D; prompt: Esc).
    Cancel,
}

fn byte_at(s: &str, char_idx: usize) -> usize {
    s.char_indices().nth(char_idx).map_or(s.len(), |(b, _)| b)
}

/// Pasted text made safe to insert: CRLF and lone CR become LF; control characters
/// other than tab and newline (C0, DEL, C1: escape sequences, bells, NULs) are dropped.
/// Returns the text and how many characters were dropped.
pub fn clean_paste(raw: &str) -> (String, usize) {
    let mut out = String::with_capacity(raw.len());
    let mut dropped = 0;
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                out.push('\n');
            }
            '\n' | '\t' => out.push(c),
            c if c.is_control() => dropped += 1,
            c => out.push(c),
        }
    }
    (out, dropped)
}

/// A one-line text input.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineInput {
    pub text: String,
    /// Cursor, in chars.
    pub cursor: usize,
}

impl LineInput {
    pub fn new(text: &str) -> Self {
        LineInput {
            text: text.to_string(),
            cursor: text.chars().count(),
        }
    }

    /// Apply a key: Enter submits, Esc cancels.
    pub fn key(&mut self, k: KeyEvent) -> EditOutcome {
        let n = self.text.chars().count();
        match k.code {
            KeyCode::Enter => return EditOutcome::Submit,
            KeyCode::Esc => return EditOutcome::Cancel,
            KeyCode::Char('u') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                self.text.clear();
                self.cursor = 0;
            }
            KeyCode::Char(c) if !k.modifiers.contains(KeyModifiers::CONTROL) => {
                let b = byte_at(&self.text, self.cursor);
                self.text.insert(b, c);
                self.cursor += 1;
            }
            KeyCode::Backspace if self.cursor > 0 => {
                let b = byte_at(&self.text, self.cursor - 1);
                self.text.remove(b);
                self.cursor -= 1;
            }
            KeyCode::Delete if self.cursor < n => {
                let b = byte_at(&self.text, self.cursor);
                self.text.remove(b);
            }
            KeyCode::Left => self.cursor = self.cursor.saturating_sub(1),
            KeyCode::Right => self.cursor = (self.cursor + 1).min(n),
            KeyCode::Home => self.cursor = 0,
            KeyCode::End => self.cursor = n,
            _ => {}
        }
        EditOutcome::Continue
    }

    /// Insert `text` (one line, already cleaned) at the cursor.
    pub fn insert_str(&mut self, text: &str) {
        let b = byte_at(&self.text, self.cursor);
        self.text.insert_str(b, text);
        self.cursor += text.chars().count();
    }
}

/// The multi-line snippet editor.
#[derive(Debug, Clone)]
pub struct Editor {
    pub lines: Vec<String>,
    /// Cursor line and column (chars).
    pub row: usize,
    pub col: usize,
    /// First line shown (kept by the view so the cursor stays visible).
    pub scroll: usize,
    trailing_newline: bool,
}

impl Editor {
    /// Start editing `text` with the cursor at byte `at` (clamped).
    pub fn new(text: &str, at: usize) -> Self {
        let trailing_newline = text.ends_with('\n');
        let body = text.strip_suffix('\n').unwrap_or(text);
        let mut lines: Vec<String> = body.split('\n').map(|l| l.replace('\r', "")).collect();
        if lines.is_empty() {
            lines.push(String::new());
        }
        let at = at.min(body.len());
        let row = body[..body.floor_char_boundary_compat(at)]
            .matches('\n')
            .count();
        let line_start = body[..body.floor_char_boundary_compat(at)]
            .rfind('\n')
            .map_or(0, |p| p + 1);
        let col = body[line_start..body.floor_char_boundary_compat(at)]
            .chars()
            .count();
        let row = row.min(lines.len() - 1);
        let col = col.min(lines[row].chars().count());
        Editor {
            lines,
            row,
            col,
            scroll: 0,
            trailing_newline,
        }
    }

    /// The edited text.
    pub fn text(&self) -> String {
        let mut s = self.lines.join("\n");
        if self.trailing_newline {
            s.push('\n');
        }
        s
    }

    fn line_len(&self, r: usize) -> usize {
        self.lines[r].chars().count()
    }

    /// Apply a key. `page` is the number of visible lines (PgUp/PgDn).
    pub fn key(&mut self, k: KeyEvent, page: usize) -> EditOutcome {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        match k.code {
            KeyCode::Esc => return EditOutcome::Submit,
            KeyCode::Char('d') if ctrl => return EditOutcome::Cancel,
            KeyCode::Char('s') if ctrl => return EditOutcome::Submit,
            KeyCode::Char(c) if !ctrl => self.insert(c),
            KeyCode::Tab => {
                let n = super::data::TAB - self.col % super::data::TAB;
                for _ in 0..n {
                    self.insert(' ');
                }
            }
            KeyCode::Enter => {
                let b = byte_at(&self.lines[self.row], self.col);
                let rest = self.lines[self.row].split_off(b);
                let indent: String = self.lines[self.row]
                    .chars()
                    .take_while(|c| *c == ' ' || *c == '\t')
                    .collect();
                self.col = indent.chars().count();
                self.lines.insert(self.row + 1, indent + &rest);
                self.row += 1;
            }
            KeyCode::Backspace => {
                if self.col > 0 {
                    let b = byte_at(&self.lines[self.row], self.col - 1);
                    self.lines[self.row].remove(b);
                    self.col -= 1;
                } else if self.row > 0 {
                    let line = self.lines.remove(self.row);
                    self.row -= 1;
                    self.col = self.line_len(self.row);
                    self.lines[self.row].push_str(&line);
                }
            }
            KeyCode::Delete => {
                if self.col < self.line_len(self.row) {
                    let b = byte_at(&self.lines[self.row], self.col);
                    self.lines[self.row].remove(b);
                } else if self.row + 1 < self.lines.len() {
                    let next = self.lines.remove(self.row + 1);
                    self.lines[self.row].push_str(&next);
                }
            }
            KeyCode::Left => {
                if self.col > 0 {
                    self.col -= 1;
                } else if self.row > 0 {
                    self.row -= 1;
                    self.col = self.line_len(self.row);
                }
            }
            KeyCode::Right => {
                if self.col < self.line_len(self.row) {
                    self.col += 1;
                } else if self.row + 1 < self.lines.len() {
                    self.row += 1;
                    self.col = 0;
                }
            }
            KeyCode::Up => self.move_rows(-1),
            KeyCode::Down => self.move_rows(1),
            KeyCode::PageUp => self.move_rows(-(page.max(1) as isize)),
            KeyCode::PageDown => self.move_rows(page.max(1) as isize),
            KeyCode::Home => self.col = 0,
            KeyCode::End => self.col = self.line_len(self.row),
            _ => {}
        }
        EditOutcome::Continue
    }

    /// Length of [`Editor::text`] in bytes.
    pub fn len(&self) -> usize {
        self.lines.iter().map(String::len).sum::<usize>() + self.lines.len() - 1
            + usize::from(self.trailing_newline)
    }

    /// Whether the text is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Insert `text` (cleaned with [`clean_paste`]: lines end in LF) at the cursor as it
    /// is: no auto-indent, the cursor after it. Linear in the text's length.
    pub fn insert_text(&mut self, text: &str) {
        let b = byte_at(&self.lines[self.row], self.col);
        let rest = self.lines[self.row].split_off(b);
        let mut parts = text.split('\n');
        let first = parts.next().unwrap_or("");
        self.lines[self.row].push_str(first);
        let mut new_lines: Vec<String> = parts.map(str::to_string).collect();
        match new_lines.last_mut() {
            None => {
                self.col += first.chars().count();
                self.lines[self.row].push_str(&rest);
            }
            Some(last) => {
                self.col = last.chars().count();
                last.push_str(&rest);
                let n = new_lines.len();
                let at = self.row + 1;
                self.lines.splice(at..at, new_lines);
                self.row += n;
            }
        }
    }

    fn insert(&mut self, c: char) {
        let b = byte_at(&self.lines[self.row], self.col);
        self.lines[self.row].insert(b, c);
        self.col += 1;
    }

    fn move_rows(&mut self, d: isize) {
        let r = (self.row as isize + d).clamp(0, self.lines.len() as isize - 1) as usize;
        self.row = r;
        self.col = self.col.min(self.line_len(r));
    }

    /// Keep the cursor within `height` visible lines.
    pub fn scroll_to_cursor(&mut self, height: usize) {
        let h = height.max(1);
        if self.row < self.scroll {
            self.scroll = self.row;
        } else if self.row >= self.scroll + h {
            self.scroll = self.row + 1 - h;
        }
    }
}

/// `str::floor_char_boundary` for stable Rust.
trait FloorBoundary {
    fn floor_char_boundary_compat(&self, i: usize) -> usize;
}

impl FloorBoundary for str {
    fn floor_char_boundary_compat(&self, i: usize) -> usize {
        let mut i = i.min(self.len());
        while !self.is_char_boundary(i) {
            i -= 1;
        }
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    #[test]
    fn edits_lines_with_indent_and_unicode() {
        let mut e = Editor::new("def f():\n    return 'é'\n", 9);
        assert_eq!((e.row, e.col), (1, 0));
        e.key(key(KeyCode::End), 10);
        e.key(key(KeyCode::Enter), 10);
        assert_eq!((e.row, e.col), (2, 4));
        for c in "x".chars() {
            e.key(key(KeyCode::Char(c)), 10);
        }
        assert_eq!(e.text(), "def f():\n    return 'é'\n    x\n");
        e.key(key(KeyCode::Home), 10);
        e.key(key(KeyCode::Backspace), 10);
        assert_eq!(e.text(), "def f():\n    return 'é'    x\n");
        assert_eq!(e.key(key(KeyCode::Esc), 10), EditOutcome::Submit);
        let d = KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL);
        assert_eq!(e.key(d, 10), EditOutcome::Cancel);
    }

    #[test]
    fn pasted_text_is_cleaned_and_inserted_verbatim() {
        let (t, dropped) = clean_paste("a\r\nb\rc\n\td\u{0}\u{1b}[2J\u{7f}\u{9b}é\n");
        assert_eq!((t.as_str(), dropped), ("a\nb\nc\n\td[2Jé\n", 4));
        // Into the middle of an indented line: nothing added, the rest of the line after
        // the pasted text, the cursor at its end.
        let mut e = Editor::new("    ab\n", 0);
        e.key(key(KeyCode::End), 10);
        e.key(key(KeyCode::Left), 10);
        e.insert_text("1\n2\n  3");
        assert_eq!(e.text(), "    a1\n2\n  3b\n");
        assert_eq!((e.row, e.col), (2, 3));
        assert_eq!(e.len(), e.text().len());
        // One line, and a paste ending in a line break.
        e.insert_text("x");
        assert_eq!((e.row, e.col), (2, 4));
        e.insert_text("y\n");
        assert_eq!(e.text(), "    a1\n2\n  3xy\nb\n");
        assert_eq!((e.row, e.col), (3, 0));
        let mut e = Editor::new("", 0);
        e.insert_text("é\n");
        assert_eq!((e.text().as_str(), e.len()), ("é\n", 3));
    }

    #[test]
    fn line_input_unicode() {
        let mut l = LineInput::new("ab");
        l.key(key(KeyCode::Left));
        l.key(key(KeyCode::Char('é')));
        assert_eq!(l.text, "aéb");
        l.key(key(KeyCode::Backspace));
        assert_eq!(l.text, "ab");
        l.insert_str("éz");
        assert_eq!((l.text.as_str(), l.cursor), ("aézb", 3));
        assert_eq!(l.key(key(KeyCode::Enter)), EditOutcome::Submit);
    }
}
