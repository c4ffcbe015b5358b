//! A screen as it travels: cells, colors, attributes, the cursor, mouse reporting, and the
//! screen as lines of text.

use serde::{Deserialize, Serialize};

use super::{Size, Travel};
use crate::screen::{
    Cell as CoreCell, CellAttrs, CellColor, CursorPos, MouseEncoding as CoreMouseEncoding,
    MouseEvents as CoreMouseEvents, MouseReporting, ScreenSnapshot, ScreenView as CoreScreenView,
};

/// A cell's color.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Color {
    /// The terminal's own color.
    #[default]
    Default,
    /// A palette color: 0-7 the basic ones, 8-15 their bright forms, up to 255.
    Indexed(u8),
    /// A 24-bit color: red, green, blue.
    Rgb(u8, u8, u8),
}

impl Travel for CellColor {
    type Wire = Color;
    fn to_wire(self) -> Color {
        match self {
            Self::Default => Color::Default,
            Self::Indexed(index) => Color::Indexed(index),
            Self::Rgb(red, green, blue) => Color::Rgb(red, green, blue),
        }
    }
    fn from_wire(wire: Color) -> Self {
        match wire {
            Color::Default => Self::Default,
            Color::Indexed(index) => Self::Indexed(index),
            Color::Rgb(red, green, blue) => Self::Rgb(red, green, blue),
        }
    }
}

/// A cell's attributes.
#[allow(clippy::struct_excessive_bools)] // Independent flags of one cell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attrs {
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
    /// Blinking (SGR 5); left out when off.
    #[serde(default, skip_serializing_if = "is_default")]
    pub blink: bool,
    /// Crossed out (SGR 9); left out when off.
    #[serde(default, skip_serializing_if = "is_default")]
    pub strikethrough: bool,
    /// Concealed (SGR 8); left out when off.
    #[serde(default, skip_serializing_if = "is_default")]
    pub hidden: bool,
    /// A line above (SGR 53); left out when off.
    #[serde(default, skip_serializing_if = "is_default")]
    pub overline: bool,
}

/// One character cell, compact (short names, defaults left out): a screen goes over the socket
/// on every change.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    /// `t`: the grapheme shown; left out for a blank cell and for the right half of a wide
    /// character.
    #[serde(rename = "t", default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// The foreground; left out when the terminal's own.
    #[serde(default, skip_serializing_if = "is_default")]
    pub fg: Color,
    /// The background; left out when the terminal's own.
    #[serde(default, skip_serializing_if = "is_default")]
    pub bg: Color,
    /// `a`: left out when none is on.
    #[serde(rename = "a", default, skip_serializing_if = "is_default")]
    pub attrs: Attrs,
    /// `w`: the left half of a double-width character.
    #[serde(rename = "w", default, skip_serializing_if = "is_default")]
    pub wide: bool,
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

impl Travel for CellAttrs {
    type Wire = Attrs;
    fn to_wire(self) -> Attrs {
        Attrs {
            bold: self.bold,
            dim: self.dim,
            italic: self.italic,
            underline: self.underline,
            inverse: self.inverse,
            blink: self.blink,
            strikethrough: self.strikethrough,
            hidden: self.hidden,
            overline: self.overline,
        }
    }
    fn from_wire(wire: Attrs) -> Self {
        Self {
            bold: wire.bold,
            dim: wire.dim,
            italic: wire.italic,
            underline: wire.underline,
            inverse: wire.inverse,
            blink: wire.blink,
            strikethrough: wire.strikethrough,
            hidden: wire.hidden,
            overline: wire.overline,
        }
    }
}

impl Travel for CoreCell {
    type Wire = Cell;
    fn to_wire(self) -> Cell {
        Cell {
            text: self.text,
            fg: self.fg.to_wire(),
            bg: self.bg.to_wire(),
            attrs: self.attrs.to_wire(),
            wide: self.wide,
        }
    }
    fn from_wire(mut wire: Cell) -> Self {
        // A cell is drawn as it is: one from another machine holds no control character (a
        // model of this machine's never does).
        if wire.text.chars().any(crate::inert::is_control) {
            wire.text.retain(|c| !crate::inert::is_control(c));
        }
        Self {
            text: wire.text,
            fg: Travel::from_wire(wire.fg),
            bg: Travel::from_wire(wire.bg),
            attrs: Travel::from_wire(wire.attrs),
            wide: wire.wide,
        }
    }
}

/// A cursor position, zero-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    /// From the top.
    pub row: u16,
    /// From the left.
    pub col: u16,
}

impl Travel for CursorPos {
    type Wire = Cursor;
    fn to_wire(self) -> Cursor {
        Cursor {
            row: self.row,
            col: self.col,
        }
    }
    fn from_wire(wire: Cursor) -> Self {
        Self {
            row: wire.row,
            col: wire.col,
        }
    }
}

/// Which mouse events a program asked for (DECSET 9, 1000, 1002, 1003).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MouseEvents {
    /// None: the mouse is the terminal's own.
    #[default]
    None,
    /// Presses only (X10, DECSET 9).
    Press,
    /// Presses and releases (DECSET 1000).
    PressRelease,
    /// Presses, releases, and moves with a button down (DECSET 1002).
    ButtonMotion,
    /// Presses, releases, and every move (DECSET 1003).
    AnyMotion,
}

/// How it wants them written (DECSET 1005, 1006).
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
pub struct Mouse {
    /// Which events it asked for.
    pub events: MouseEvents,
    /// How it wants them written.
    pub encoding: MouseEncoding,
}

impl Travel for MouseReporting {
    type Wire = Mouse;
    fn to_wire(self) -> Mouse {
        Mouse {
            events: match self.events {
                CoreMouseEvents::None => MouseEvents::None,
                CoreMouseEvents::Press => MouseEvents::Press,
                CoreMouseEvents::PressRelease => MouseEvents::PressRelease,
                CoreMouseEvents::ButtonMotion => MouseEvents::ButtonMotion,
                CoreMouseEvents::AnyMotion => MouseEvents::AnyMotion,
            },
            encoding: match self.encoding {
                CoreMouseEncoding::Default => MouseEncoding::Default,
                CoreMouseEncoding::Utf8 => MouseEncoding::Utf8,
                CoreMouseEncoding::Sgr => MouseEncoding::Sgr,
            },
        }
    }
    fn from_wire(wire: Mouse) -> Self {
        Self {
            events: match wire.events {
                MouseEvents::None => CoreMouseEvents::None,
                MouseEvents::Press => CoreMouseEvents::Press,
                MouseEvents::PressRelease => CoreMouseEvents::PressRelease,
                MouseEvents::ButtonMotion => CoreMouseEvents::ButtonMotion,
                MouseEvents::AnyMotion => CoreMouseEvents::AnyMotion,
            },
            encoding: match wire.encoding {
                MouseEncoding::Default => CoreMouseEncoding::Default,
                MouseEncoding::Utf8 => CoreMouseEncoding::Utf8,
                MouseEncoding::Sgr => CoreMouseEncoding::Sgr,
            },
        }
    }
}

/// An entry's screen, as a front end draws it: the answer to `snapshot`.
#[allow(clippy::struct_excessive_bools)] // Independent modes of one screen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// The screen's size: the one asked for, if any (its PTY was resized to it).
    pub size: Size,
    /// `size.rows` rows of `size.cols` cells.
    pub rows: Vec<Vec<Cell>>,
    /// The cursor, when it is shown and not scrolled away.
    pub cursor: Option<Cursor>,
    /// Rows scrolled back from the live screen.
    pub scroll_offset: usize,
    /// Rows of history above the live screen.
    pub scrollback_rows: usize,
    /// A full-screen program has the alternate screen on.
    pub alternate_screen: bool,
    /// Arrow keys are to be sent in application mode (`ESC O A`).
    pub application_cursor: bool,
    /// Pasted text is to be wrapped in bracketed-paste markers.
    pub bracketed_paste: bool,
    /// The mouse reports it asked for; left out when none.
    #[serde(default, skip_serializing_if = "is_default")]
    pub mouse: Mouse,
}

impl Travel for ScreenSnapshot {
    type Wire = Snapshot;
    fn to_wire(self) -> Snapshot {
        Snapshot {
            size: self.size.to_wire(),
            rows: self.rows.to_wire(),
            cursor: self.cursor.to_wire(),
            scroll_offset: self.scroll_offset,
            scrollback_rows: self.scrollback_rows,
            alternate_screen: self.alternate_screen,
            application_cursor: self.application_cursor,
            bracketed_paste: self.bracketed_paste,
            mouse: self.mouse.to_wire(),
        }
    }
    fn from_wire(wire: Snapshot) -> Self {
        Self {
            size: Travel::from_wire(wire.size),
            rows: Travel::from_wire(wire.rows),
            cursor: Travel::from_wire(wire.cursor),
            scroll_offset: wire.scroll_offset,
            scrollback_rows: wire.scrollback_rows,
            alternate_screen: wire.alternate_screen,
            application_cursor: wire.application_cursor,
            bracketed_paste: wire.bracketed_paste,
            mouse: Travel::from_wire(wire.mouse),
        }
    }
}

/// A screen as lines of text: what `oino screen --json` prints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenView {
    /// Width, in columns.
    pub cols: u16,
    /// Height, in rows.
    pub rows: u16,
    /// One line a row, trailing blanks trimmed.
    pub lines: Vec<String>,
    /// The cursor, zero-based, when it is shown.
    pub cursor: Option<Cursor>,
    /// A full-screen program has the alternate screen on.
    pub alternate_screen: bool,
}

impl Travel for CoreScreenView {
    type Wire = ScreenView;
    fn to_wire(self) -> ScreenView {
        ScreenView {
            cols: self.cols,
            rows: self.rows,
            lines: self.lines,
            cursor: self.cursor.to_wire(),
            alternate_screen: self.alternate_screen,
        }
    }
    fn from_wire(wire: ScreenView) -> Self {
        Self {
            cols: wire.cols,
            rows: wire.rows,
            lines: wire.lines,
            cursor: Travel::from_wire(wire.cursor),
            alternate_screen: wire.alternate_screen,
        }
    }
}
