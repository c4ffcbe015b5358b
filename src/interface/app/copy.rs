//! Copying text out of the pane: a selection made from the keyboard (`v`, motion keys, `y`) or
//! with the mouse (a drag), and the OSC 52 sequence that hands it to the host's clipboard (oino
//! writes it itself, only when the person asks; a program's own OSC 52 never gets through).

use crossterm::event::{KeyCode, KeyEvent, MouseButton, MouseEventKind};

use super::{App, Effect};
use crate::screen::ScreenSnapshot;

/// A place in the pane: row and column.
pub(crate) type Spot = (u16, u16);

/// A selection in the pane, from `anchor` to `cursor` in reading order, both included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Selection {
    pub anchor: Spot,
    pub cursor: Spot,
    /// Made by a drag (it ends with the button), not from the keyboard.
    pub by_mouse: bool,
}

/// What a key does in the keyboard's copy mode.
pub enum CopyKey {
    Moved,
    Copy,
    Cancel,
    Nothing,
}

impl Selection {
    /// The first and last spots, in reading order.
    #[must_use]
    pub(crate) fn bounds(&self) -> (Spot, Spot) {
        if self.anchor <= self.cursor {
            (self.anchor, self.cursor)
        } else {
            (self.cursor, self.anchor)
        }
    }

    /// Whether the cell at `spot` is selected.
    #[must_use]
    pub fn contains(&self, spot: Spot) -> bool {
        let (first, last) = self.bounds();
        first <= spot && spot <= last
    }

    /// Moves the cursor by a key, within a pane of `rows` x `cols`.
    pub fn key(&mut self, key: KeyEvent, rows: u16, cols: u16) -> CopyKey {
        let (row, col) = &mut self.cursor;
        let (last_row, last_col) = (rows.saturating_sub(1), cols.saturating_sub(1));
        match key.code {
            KeyCode::Char('h') | KeyCode::Left => *col = col.saturating_sub(1),
            KeyCode::Char('l') | KeyCode::Right => *col = (*col + 1).min(last_col),
            KeyCode::Char('k') | KeyCode::Up => *row = row.saturating_sub(1),
            KeyCode::Char('j') | KeyCode::Down => *row = (*row + 1).min(last_row),
            KeyCode::Char('0') | KeyCode::Home => *col = 0,
            KeyCode::Char('$') | KeyCode::End => *col = last_col,
            KeyCode::Char('g') => *row = 0,
            KeyCode::Char('G') => *row = last_row,
            KeyCode::Char('y') | KeyCode::Enter => return CopyKey::Copy,
            KeyCode::Esc | KeyCode::Char('q') => return CopyKey::Cancel,
            _ => return CopyKey::Nothing,
        }
        CopyKey::Moved
    }

    /// The selected text of `pane`: each row's part, its trailing blanks trimmed, a line each.
    #[must_use]
    pub fn text(&self, pane: &ScreenSnapshot) -> String {
        let ((first_row, first_col), (last_row, last_col)) = self.bounds();
        let mut lines = Vec::new();
        for row in first_row..=last_row {
            let Some(cells) = pane.rows.get(usize::from(row)) else {
                break;
            };
            let from = if row == first_row {
                usize::from(first_col)
            } else {
                0
            };
            let to = if row == last_row {
                usize::from(last_col) + 1
            } else {
                cells.len()
            };
            let line: String = cells
                .iter()
                .enumerate()
                .take(to.min(cells.len()))
                .skip(from)
                // The right half of a wide character is no character of its own.
                .filter(|(at, _)| !(*at > 0 && cells[at - 1].wide))
                .map(|(_, cell)| {
                    if cell.text.is_empty() {
                        " "
                    } else {
                        cell.text.as_str()
                    }
                })
                .collect();
            lines.push(line.trim_end().to_owned());
        }
        lines.join("\n")
    }
}

/// OSC 52: `text` for the host terminal's clipboard.
#[must_use]
pub(crate) fn osc52(text: &str) -> String {
    format!("\x1b]52;c;{}\x07", base64(text.as_bytes()))
}

/// Standard base64, with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let word = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for (index, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if index <= chunk.len() {
                out.push(char::from(ALPHABET[((word >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

impl App {
    /// Copy mode: a selection from the pane's cursor (or the start of its last row with text).
    pub(super) fn start_copy(&mut self) {
        let Some(pane) = &self.pane else {
            self.say("nothing to copy from", true);
            return;
        };
        let start = pane.cursor.map_or_else(
            || {
                let last = pane
                    .rows
                    .iter()
                    .rposition(|row| row.iter().any(|cell| !cell.text.trim().is_empty()))
                    .unwrap_or(0);
                (u16::try_from(last).unwrap_or(0), 0)
            },
            |cursor| (cursor.row, cursor.col),
        );
        self.selection = Some(Selection {
            anchor: start,
            cursor: start,
            by_mouse: false,
        });
    }

    /// A key in copy mode: motion keys move the selection's end, `y` copies, `Esc` cancels.
    pub(super) fn handle_copy_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let (Some(mut selection), Some(pane)) = (self.selection, self.pane.as_ref()) else {
            self.selection = None;
            return Vec::new();
        };
        let (rows, cols) = (pane.size.rows, pane.size.cols);
        match selection.key(key, rows, cols) {
            CopyKey::Moved | CopyKey::Nothing => {
                self.selection = Some(selection);
                Vec::new()
            }
            CopyKey::Cancel => {
                self.selection = None;
                Vec::new()
            }
            CopyKey::Copy => self.copy_selection(),
        }
    }

    /// Copies the selection to the clipboard, and ends it.
    fn copy_selection(&mut self) -> Vec<Effect> {
        let text = match (self.selection.take(), &self.pane) {
            (Some(selection), Some(pane)) => selection.text(pane),
            _ => return Vec::new(),
        };
        self.say(
            format!(
                "copied {} to the clipboard",
                characters(text.chars().count())
            ),
            false,
        );
        vec![Effect::Clipboard { text }]
    }

    /// A drag in the pane selects text; letting go copies it. `None` when the event is not
    /// for the selection.
    pub(super) fn select_by_mouse(
        &mut self,
        kind: MouseEventKind,
        in_pane: bool,
        spot: (u16, u16),
    ) -> Option<Vec<Effect>> {
        match kind {
            MouseEventKind::Down(MouseButton::Left) if in_pane && self.pane.is_some() => {
                self.selection = Some(Selection {
                    anchor: spot,
                    cursor: spot,
                    by_mouse: true,
                });
                return Some(Vec::new());
            }
            MouseEventKind::Drag(MouseButton::Left)
                if self.selection.is_some_and(|selection| selection.by_mouse) =>
            {
                if let Some(selection) = &mut self.selection {
                    selection.cursor = spot;
                }
                return Some(Vec::new());
            }
            MouseEventKind::Up(MouseButton::Left)
                if self.selection.is_some_and(|selection| selection.by_mouse) =>
            {
                // A click alone copies nothing.
                if self
                    .selection
                    .is_some_and(|selection| selection.anchor != selection.cursor)
                {
                    return Some(self.copy_selection());
                }
                self.selection = None;
                return Some(Vec::new());
            }
            _ => {}
        }
        None
    }
}

/// A count of characters in words: `1 character`, `78 characters`.
#[must_use]
pub(crate) fn characters(count: usize) -> String {
    if count == 1 {
        "1 character".to_owned()
    } else {
        format!("{count} characters")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pty::TermSize;

    #[test]
    fn one_character_is_one_character() {
        assert_eq!(characters(1), "1 character");
        assert_eq!(characters(0), "0 characters");
        assert_eq!(characters(78), "78 characters");
    }

    #[test]
    fn base64_is_the_standard_one() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64("héllo wörld".as_bytes()), "aMOpbGxvIHfDtnJsZA==");
        assert_eq!(osc52("hi"), "\x1b]52;c;aGk=\x07");
    }

    #[test]
    fn a_selection_reads_in_order_whichever_way_it_was_made() {
        let pane = ScreenSnapshot::from_lines(
            TermSize::new(20, 3),
            &["alpha beta".into(), "gamma".into(), "delta 中文".into()],
            0,
        );
        let forward = Selection {
            anchor: (0, 6),
            cursor: (2, 4),
            by_mouse: false,
        };
        assert_eq!(forward.text(&pane), "beta\ngamma\ndelta");
        let backward = Selection {
            anchor: (2, 4),
            cursor: (0, 6),
            by_mouse: true,
        };
        assert_eq!(backward.text(&pane), forward.text(&pane));
        let wide = Selection {
            anchor: (2, 6),
            cursor: (2, 9),
            by_mouse: false,
        };
        assert_eq!(wide.text(&pane), "中文");
        assert!(forward.contains((1, 0)) && !forward.contains((0, 5)));
    }
}
