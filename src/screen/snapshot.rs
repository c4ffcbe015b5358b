//! An owned picture of a screen, cell by cell, as front ends draw it.

use serde::{Deserialize, Serialize};

use super::Style;
use super::decode::{Decoder, Escape, Step};
use crate::pty::TermSize;

/// A cell's color.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellColor {
    /// The terminal's own color.
    #[default]
    Default,
    /// A palette color: 0-7 the basic ones, 8-15 their bright forms, up to 255.
    Indexed(u8),
    /// A 24-bit color: red, green, blue.
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
    /// Bold (SGR 1).
    pub bold: bool,
    /// Faint (SGR 2).
    pub dim: bool,
    /// Italic (SGR 3).
    pub italic: bool,
    /// Underlined (SGR 4).
    pub underline: bool,
    /// Foreground and background swapped (SGR 7).
    pub inverse: bool,
    /// Blinking (SGR 5).
    #[serde(default, skip_serializing_if = "is_default")]
    pub blink: bool,
    /// Crossed out (SGR 9).
    #[serde(default, skip_serializing_if = "is_default")]
    pub strikethrough: bool,
    /// Concealed (SGR 8): the cell shows blank.
    #[serde(default, skip_serializing_if = "is_default")]
    pub hidden: bool,
    /// A line above (SGR 53).
    #[serde(default, skip_serializing_if = "is_default")]
    pub overline: bool,
}

/// One character cell. Serialized compactly (short names, defaults left out): a screen goes
/// over the socket on every change.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    /// The grapheme shown; empty for a blank cell and for the right half of a wide character.
    #[serde(rename = "t", default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// The foreground.
    #[serde(default, skip_serializing_if = "is_default")]
    pub fg: CellColor,
    /// The background.
    #[serde(default, skip_serializing_if = "is_default")]
    pub bg: CellColor,
    /// Bold, italic and the other attributes.
    #[serde(rename = "a", default, skip_serializing_if = "is_default")]
    pub attrs: CellAttrs,
    /// The left half of a double-width character.
    #[serde(rename = "w", default, skip_serializing_if = "is_default")]
    pub wide: bool,
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// A cursor position, zero-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CursorPos {
    /// From the top.
    pub row: u16,
    /// From the left.
    pub col: u16,
}

/// An owned picture of a screen, as a front end draws it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScreenSnapshot {
    /// Its size: every row has `size.cols` cells.
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
    /// Whether arrow keys should be sent in application mode (`ESC O A`).
    pub application_cursor: bool,
    /// Whether pasted text should be wrapped in bracketed-paste markers.
    pub bracketed_paste: bool,
    /// The mouse events the program asked for, and how it wants them written.
    pub mouse: MouseReporting,
}

/// Which mouse events a program asked to be told of (DECSET 9, 1000, 1002, 1003).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MouseEvents {
    /// None: the mouse is the terminal's own.
    #[default]
    None,
    /// X10: presses only.
    Press,
    /// Presses and releases.
    PressRelease,
    /// Presses, releases, and moves with a button down.
    ButtonMotion,
    /// Presses, releases, and every move.
    AnyMotion,
}

/// How mouse reports are written (DECSET 1005, 1006).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MouseEncoding {
    /// X10's: the button and the cell as single bytes, so no column past 223.
    #[default]
    Default,
    /// The X10 form with the cell as UTF-8 characters (DECSET 1005).
    Utf8,
    /// `ESC [ < button ; col ; row M` (`m` for a release) (DECSET 1006).
    Sgr,
}

/// A program's mouse reporting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MouseReporting {
    /// Which events it asked for.
    pub events: MouseEvents,
    /// How it wants them written.
    pub encoding: MouseEncoding,
}

impl MouseReporting {
    pub(super) fn of(screen: &vt100::Screen) -> Self {
        let events = match screen.mouse_protocol_mode() {
            vt100::MouseProtocolMode::None => MouseEvents::None,
            vt100::MouseProtocolMode::Press => MouseEvents::Press,
            vt100::MouseProtocolMode::PressRelease => MouseEvents::PressRelease,
            vt100::MouseProtocolMode::ButtonMotion => MouseEvents::ButtonMotion,
            vt100::MouseProtocolMode::AnyMotion => MouseEvents::AnyMotion,
        };
        let encoding = match screen.mouse_protocol_encoding() {
            vt100::MouseProtocolEncoding::Default => MouseEncoding::Default,
            vt100::MouseProtocolEncoding::Utf8 => MouseEncoding::Utf8,
            vt100::MouseProtocolEncoding::Sgr => MouseEncoding::Sgr,
        };
        Self { events, encoding }
    }
}

impl ScreenSnapshot {
    /// A plain screen showing `lines` (history read back from a log), `scroll_offset` rows back.
    #[must_use]
    pub(crate) fn from_lines(size: TermSize, lines: &[String], scroll_offset: usize) -> Self {
        let cols = usize::from(size.cols);
        let rows = (0..usize::from(size.rows))
            .map(|row| {
                let mut cells = lines
                    .get(row)
                    .map_or_else(Vec::new, |line| line_cells(line, cols));
                cells.resize(cols, Cell::default());
                cells
            })
            .collect();
        Self {
            size,
            rows,
            cursor: None,
            scroll_offset,
            scrollback_rows: 0,
            alternate_screen: false,
            application_cursor: false,
            bracketed_paste: false,
            mouse: MouseReporting::default(),
        }
    }

    /// The visible text, one line a row, trailing blanks removed.
    #[must_use]
    pub fn text(&self) -> String {
        let mut text = String::new();
        for row in &self.rows {
            // The cell after a wide character is its right half: nothing of its own.
            let halves = std::iter::once(false).chain(row.iter().map(|cell| cell.wide));
            let line: String = row
                .iter()
                .zip(halves)
                .filter(|(_, right_half)| !right_half)
                .map(|(cell, _)| {
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

/// A line of text (colors set by SGR sequences in it) as at most `cols` cells: a wide
/// character takes two (the second empty), a combining mark joins the cell before it. An erase
/// to the line's end in a background colour paints the rest of the row with it, and DEC line
/// drawing (designated within the line) draws its lines, as on the live screen.
fn line_cells(line: &str, cols: usize) -> Vec<Cell> {
    let mut cells: Vec<Cell> = Vec::with_capacity(cols);
    let mut pen = Style::default();
    let mut decoder = Decoder::new();
    // The background an erase left for the rest of the row.
    let mut rest = CellColor::Default;
    // G0 and G1 hold line drawing; SO chose G1.
    let (mut graphics, mut shifted) = ([false; 2], false);
    let mut full = false;
    for &byte in line.as_bytes() {
        decoder.advance(byte, &mut |step| {
            pen.follow(&step);
            let character = match step {
                Step::Csi(csi) if csi.action == b'K' && !csi.intermediate => {
                    rest = pen.bg;
                    return;
                }
                Step::Escape(Escape {
                    intermediate: Some(designate @ (b'(' | b')')),
                    action,
                }) => {
                    graphics[usize::from(designate == b')')] = action == b'0';
                    return;
                }
                Step::Execute(shift @ (0x0e | 0x0f)) => {
                    shifted = shift == 0x0e;
                    return;
                }
                _ if full => return,
                Step::Print(character) if graphics[usize::from(shifted)] => {
                    super::decode::dec_graphics(character)
                }
                Step::Print(character) => character,
                Step::Execute(b'\t') => ' ',
                _ => return,
            };
            full = !place(&mut cells, character, pen, cols);
        });
    }
    if rest != CellColor::Default {
        cells.resize(
            cols,
            Cell {
                bg: rest,
                ..Cell::default()
            },
        );
    }
    cells
}

/// Puts `character` drawn with `pen` in the row; false when it no longer fits.
fn place(cells: &mut Vec<Cell>, character: char, pen: Style, cols: usize) -> bool {
    use unicode_width::UnicodeWidthChar;
    let cell = |text: String, wide: bool| Cell {
        text,
        fg: pen.fg,
        bg: pen.bg,
        attrs: pen.attrs,
        wide,
    };
    match character.width().unwrap_or(0) {
        0 => {
            // The cell a mark joins: the wide character's, not its empty right half.
            let last = cells.len().checked_sub(1).map(|last| {
                if last > 0 && cells[last - 1].wide {
                    last - 1
                } else {
                    last
                }
            });
            if let Some(cell) = last.and_then(|last| cells.get_mut(last)) {
                cell.text.push(character);
            }
        }
        1 if cells.len() < cols => cells.push(cell(character.to_string(), false)),
        2 if cells.len() + 2 <= cols => {
            cells.push(cell(character.to_string(), true));
            cells.push(cell(String::new(), false));
        }
        _ => return false,
    }
    true
}
