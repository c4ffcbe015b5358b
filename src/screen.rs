//! The terminal model of one call: a vt100 parser with a bounded scrollback.
//!
//! Output chunks are fed in order by whoever consumes the process; feeding returns the answers
//! to the queries a program waits on (cursor position, device status, device attributes), which
//! the consumer writes back to the process. Front ends never see the parser: they take owned
//! [`ScreenSnapshot`]s.

use std::num::NonZeroU16;
use std::panic::{AssertUnwindSafe, catch_unwind};

use serde::{Deserialize, Serialize};

use crate::pty::TermSize;

/// Rows of history kept in memory per call; the log file keeps everything.
pub const DEFAULT_SCROLLBACK_ROWS: usize = 1000;

/// A cell's color.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellColor {
    #[default]
    Default,
    Indexed(u8),
    Rgb(u8, u8, u8),
}

impl From<vt100::Color> for CellColor {
    fn from(color: vt100::Color) -> Self {
        match color {
            vt100::Color::Default => Self::Default,
            vt100::Color::Idx(index) => Self::Indexed(index),
            vt100::Color::Rgb(red, green, blue) => Self::Rgb(red, green, blue),
        }
    }
}

/// A cell's text attributes.
#[allow(clippy::struct_excessive_bools)] // They are independent flags of one cell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CellAttrs {
    pub bold: bool,
    pub dim: bool,
    pub italic: bool,
    pub underline: bool,
    pub inverse: bool,
}

/// One character cell.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    /// The grapheme shown; empty for a blank cell and for the right half of a wide character.
    pub text: String,
    pub fg: CellColor,
    pub bg: CellColor,
    pub attrs: CellAttrs,
    /// The left half of a double-width character.
    pub wide: bool,
}

/// A cursor position, zero-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CursorPos {
    pub row: u16,
    pub col: u16,
}

/// An owned picture of a screen, as a front end draws it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenSnapshot {
    pub size: TermSize,
    /// `size.rows` rows of `size.cols` cells.
    pub rows: Vec<Vec<Cell>>,
    /// The cursor, when visible and not scrolled away.
    pub cursor: Option<CursorPos>,
    /// Rows scrolled back from the live screen.
    pub scroll_offset: usize,
    /// Rows of history above the live screen.
    pub scrollback_rows: usize,
    /// Whether the program is on the alternate screen (a full-screen program).
    pub alternate_screen: bool,
}

impl ScreenSnapshot {
    /// The visible text, one line a row, trailing blanks removed.
    #[must_use]
    pub fn text(&self) -> String {
        let mut text = String::new();
        for row in &self.rows {
            let line: String = row
                .iter()
                .map(|cell| {
                    if cell.text.is_empty() && !cell.wide {
                        " "
                    } else {
                        &cell.text
                    }
                })
                .collect();
            text.push_str(line.trim_end());
            text.push('\n');
        }
        text
    }
}

/// Collects the answers to terminal queries met while parsing.
#[derive(Default)]
struct Answers {
    pending: Vec<u8>,
}

impl vt100::Callbacks for Answers {
    fn unhandled_csi(
        &mut self,
        screen: &mut vt100::Screen,
        intermediate: Option<u8>,
        _second_intermediate: Option<u8>,
        params: &[&[u16]],
        action: char,
    ) {
        let first = params.first().and_then(|param| param.first()).copied();
        match (intermediate, action, first) {
            // Cursor position report: programs (readline, some TUIs) block until it arrives.
            (None, 'n', Some(6)) => {
                let (row, col) = screen.cursor_position();
                self.pending
                    .extend_from_slice(format!("\x1b[{};{}R", row + 1, col + 1).as_bytes());
            }
            // Device status: "OK".
            (None, 'n', Some(5)) => self.pending.extend_from_slice(b"\x1b[0n"),
            // Primary device attributes: a VT100 with advanced video.
            (None, 'c', None | Some(0)) => self.pending.extend_from_slice(b"\x1b[?1;2c"),
            _ => {}
        }
    }
}

/// The terminal model of one call.
pub struct Screen {
    parser: vt100::Parser<Answers>,
    size: TermSize,
    scrollback_rows: usize,
}

fn dimension(value: u16) -> NonZeroU16 {
    NonZeroU16::new(value.max(2)).unwrap_or(NonZeroU16::MIN)
}

impl Screen {
    #[must_use]
    pub fn new(size: TermSize, scrollback_rows: usize) -> Self {
        let size = TermSize::new(size.cols, size.rows);
        Self {
            parser: Self::parser(size, scrollback_rows),
            size,
            scrollback_rows,
        }
    }

    fn parser(size: TermSize, scrollback_rows: usize) -> vt100::Parser<Answers> {
        vt100::Parser::new_with_callbacks(
            dimension(size.rows),
            dimension(size.cols),
            scrollback_rows,
            Answers::default(),
        )
    }

    #[must_use]
    pub fn size(&self) -> TermSize {
        self.size
    }

    /// Parses a chunk of output; returns the bytes to write back to the process (answers to its
    /// queries), usually none.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<u8> {
        let parsed = catch_unwind(AssertUnwindSafe(|| self.parser.process(bytes)));
        if parsed.is_err() {
            // A parser bug must not take oino down: start over on a blank screen.
            self.parser = Self::parser(self.size, self.scrollback_rows);
        }
        std::mem::take(&mut self.parser.callbacks_mut().pending)
    }

    /// Resizes the model (the PTY is resized by its owner).
    pub fn resize(&mut self, size: TermSize) {
        let size = TermSize::new(size.cols, size.rows);
        if size != self.size {
            self.size = size;
            self.parser
                .set_size(dimension(size.rows), dimension(size.cols));
        }
    }

    /// The screen as it is now, scrolled back by `scroll_offset` rows (clamped to the history).
    #[must_use]
    pub fn snapshot(&mut self, scroll_offset: usize) -> ScreenSnapshot {
        let screen = self.parser.screen_mut();
        screen.set_scrollback(scroll_offset);
        let scroll_offset = screen.scrollback();
        // vt100 reports the history length only through a clamped offset.
        screen.set_scrollback(usize::MAX);
        let scrollback_rows = screen.scrollback();
        screen.set_scrollback(scroll_offset);

        let screen = self.parser.screen();
        let (rows, cols) = screen.size();
        let rows_cells = (0..rows.get())
            .map(|row| {
                (0..cols.get())
                    .map(|col| screen.cell(row, col).map(snapshot_cell).unwrap_or_default())
                    .collect()
            })
            .collect();
        let (cursor_row, cursor_col) = screen.cursor_position();
        let cursor = (!screen.hide_cursor() && scroll_offset == 0).then_some(CursorPos {
            row: cursor_row,
            col: cursor_col,
        });
        let alternate_screen = screen.alternate_screen();
        self.parser.screen_mut().set_scrollback(0);
        ScreenSnapshot {
            size: self.size,
            rows: rows_cells,
            cursor,
            scroll_offset,
            scrollback_rows,
            alternate_screen,
        }
    }
}

fn snapshot_cell(cell: &vt100::Cell) -> Cell {
    Cell {
        text: cell.contents().to_owned(),
        fg: cell.fgcolor().into(),
        bg: cell.bgcolor().into(),
        attrs: CellAttrs {
            bold: cell.bold(),
            dim: cell.dim(),
            italic: cell.italic(),
            underline: cell.underline(),
            inverse: cell.inverse(),
        },
        wide: cell.is_wide(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colors_and_attributes_reach_the_snapshot() {
        let mut screen = Screen::new(TermSize::new(20, 3), 10);
        screen.feed(b"\x1b[1;31mred\x1b[0m plain");
        let snapshot = screen.snapshot(0);
        assert_eq!(snapshot.text(), "red plain\n\n\n");
        let red = &snapshot.rows[0][0];
        assert_eq!(red.text, "r");
        assert_eq!(red.fg, CellColor::Indexed(1));
        assert!(red.attrs.bold);
        assert_eq!(snapshot.rows[0][4].fg, CellColor::Default);
        assert_eq!(snapshot.cursor, Some(CursorPos { row: 0, col: 9 }));
    }

    #[test]
    fn cursor_position_queries_are_answered() {
        let mut screen = Screen::new(TermSize::new(20, 5), 10);
        assert_eq!(screen.feed(b"ab\r\ncd\x1b[6n"), b"\x1b[2;3R");
        assert!(screen.feed(b"no query here").is_empty());
    }

    #[test]
    fn history_is_bounded_and_scrollable() {
        let mut screen = Screen::new(TermSize::new(10, 3), 5);
        for line in 0..20 {
            screen.feed(format!("{line}\r\n").as_bytes());
        }
        let live = screen.snapshot(0);
        assert_eq!(live.scrollback_rows, 5);
        assert_eq!(live.text(), "18\n19\n\n");
        let back = screen.snapshot(100);
        assert_eq!(back.scroll_offset, 5);
        assert_eq!(back.cursor, None);
        assert_eq!(back.text(), "13\n14\n15\n");
    }

    #[test]
    fn tiny_sizes_are_raised_to_two_by_two() {
        let mut screen = Screen::new(TermSize { cols: 0, rows: 0 }, 0);
        screen.feed(b"hello");
        assert_eq!(screen.size(), TermSize::new(2, 2));
        screen.resize(TermSize { cols: 1, rows: 1 });
        assert_eq!(screen.snapshot(0).rows.len(), 2);
    }
}
