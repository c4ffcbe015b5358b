//! Copying text out of the pane: a selection made from the keyboard (`v`, motion keys, `y`) or
//! with the mouse (a drag), and the OSC 52 sequence that hands it to the host's clipboard (oino
//! writes it itself, only when the person asks; a program's own OSC 52 never gets through).

use crossterm::event::{KeyCode, KeyEvent};

use crate::screen::ScreenSnapshot;

/// A place in the pane: row and column.
pub type Spot = (u16, u16);

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
    pub fn bounds(&self) -> (Spot, Spot) {
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
pub fn osc52(text: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pty::TermSize;

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
