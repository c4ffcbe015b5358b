//! What vt100 0.18 leaves out, carried out around it: every byte still goes to its parser, which
//! ignores these sequences, and right where one ends its effect is drawn with sequences vt100
//! knows, from the parser's state at that point (cursor, size, pen). Text printed in a mode
//! vt100 lacks (autowrap off, insert, DEC line drawing) and tabs to stops it cannot set are
//! rewritten the same way, character by character; in the usual modes text passes untouched.
//!
//! Carried out: IND and NEL; HTS, TBC and tabs to the stops set; DECALN; DECCOLM (clears and
//! homes, the width stays); DECAWM off; IRM; the DEC special graphics charset in G0 and G1,
//! with SO and SI; blink and strikethrough; and RIS, DECSC and DECRC for this state.

use std::fmt::Write as _;

use unicode_width::UnicodeWidthChar;

use super::decode::{Csi, Decoder, Escape, Step};
use super::style::Style;

/// Default tab stops: every eighth column.
const TAB_WIDTH: u16 = 8;

/// The state vt100 does not keep.
#[derive(Clone, Debug)]
pub(crate) struct Extras {
    decoder: Decoder,
    /// Whether G0 and G1 hold DEC special graphics.
    graphics: [bool; 2],
    /// SO selected G1.
    shifted: bool,
    /// The charsets DECSC saved.
    saved: ([bool; 2], bool),
    /// Tab stops set by the program (columns, ascending); `None`: every eighth column.
    tab_stops: Option<Vec<u16>>,
    autowrap: bool,
    insert: bool,
    /// Blink and strikethrough in the pen (SGR 5 and 9): vt100 keeps neither, so each
    /// character drawn with them carries a mark in its cell (see [`take_marks`]).
    pen: Style,
    /// The pen DECSC saved.
    saved_pen: Style,
}

/// Attributes vt100 cannot store, carried in a cell as zero-width tag characters after its
/// character: invisible to vt100, which appends them like combining marks, and taken out
/// again when the cell is read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Marks {
    pub blink: bool,
    pub strikethrough: bool,
}

const BLINK_MARK: char = '\u{E0062}';
const STRIKETHROUGH_MARK: char = '\u{E0073}';

/// Takes the marks out of a cell's text.
pub(crate) fn take_marks(text: &mut String) -> Marks {
    // A character and a mark take at least five bytes: most cells are passed over at once.
    if text.len() < 5 {
        return Marks::default();
    }
    let marks = Marks {
        blink: text.contains(BLINK_MARK),
        strikethrough: text.contains(STRIKETHROUGH_MARK),
    };
    if marks != Marks::default() {
        text.retain(|c| c != BLINK_MARK && c != STRIKETHROUGH_MARK);
    }
    marks
}

impl Default for Extras {
    fn default() -> Self {
        Self {
            decoder: Decoder::new(),
            graphics: [false; 2],
            shifted: false,
            saved: ([false; 2], false),
            tab_stops: None,
            autowrap: true,
            insert: false,
            pen: Style::default(),
            saved_pen: Style::default(),
        }
    }
}

impl Extras {
    /// Whether text must be rewritten before vt100 draws it.
    fn rewrites_text(&self) -> bool {
        self.graphics[usize::from(self.shifted)]
            || !self.autowrap
            || self.insert
            || self.pen.attrs.blink
            || self.pen.attrs.strikethrough
    }

    /// Hands `bytes` to `parser`, carrying out what it ignores where it comes.
    pub fn process<C: vt100::Callbacks>(&mut self, bytes: &[u8], parser: &mut vt100::Parser<C>) {
        // Bytes before `passed` are the parser's.
        let mut passed = 0;
        // Where the character being read began.
        let mut char_start = 0;
        let mut index = 0;
        while index < bytes.len() {
            if self.decoder.in_ground() && !self.rewrites_text() {
                // Plain text needs nothing: go to the next byte that may.
                let tabs = self.tab_stops.is_some();
                let skip = bytes[index..]
                    .iter()
                    .position(|&byte| matches!(byte, 0x1b | 0x0e | 0x0f) || (tabs && byte == b'\t'))
                    .unwrap_or(bytes.len() - index);
                if skip > 0 {
                    self.decoder.forget_character();
                    index += skip;
                    continue;
                }
            }
            let byte = bytes[index];
            if self.decoder.at_boundary() {
                char_start = index;
            }
            // A tab within a sequence is carried out by the parser, as part of it.
            let in_ground = self.decoder.in_ground();
            let mut steps = [None; 2];
            let mut count = 0;
            self.decoder.advance(byte, &mut |step| {
                if count < steps.len() {
                    steps[count] = Some(step);
                    count += 1;
                }
            });
            for step in steps.into_iter().flatten() {
                match step {
                    Step::Print(character) if self.rewrites_text() => {
                        // The bytes before the character go first; its own are rewritten. A
                        // broken character (U+FFFD) is dropped, as the parser drops it.
                        parser.process(&bytes[passed..char_start.max(passed)]);
                        if character != char::REPLACEMENT_CHARACTER {
                            self.print(character, parser);
                        }
                        // A byte that was not the character's (a control after a broken one,
                        // the start of the next) is still the parser's to read.
                        let consumed = self.decoder.at_boundary() && byte >= 0x20 && byte != 0x7f;
                        passed = if consumed { index + 1 } else { index };
                        char_start = index;
                    }
                    Step::Execute(b'\t') if in_ground && self.tab_stops.is_some() => {
                        parser.process(&bytes[passed..index]);
                        self.tab(parser);
                        passed = index + 1;
                    }
                    Step::Execute(0x0e) => self.shifted = true,
                    Step::Execute(0x0f) => self.shifted = false,
                    Step::Escape(escape) => {
                        parser.process(&bytes[passed..=index]);
                        passed = index + 1;
                        self.escape(escape, parser);
                    }
                    Step::Csi(csi) => {
                        parser.process(&bytes[passed..=index]);
                        passed = index + 1;
                        self.csi(&csi, parser);
                    }
                    Step::Print(_) | Step::Execute(_) => {}
                }
            }
            index += 1;
        }
        parser.process(&bytes[passed..]);
    }

    /// A character in a mode vt100 lacks.
    fn print<C: vt100::Callbacks>(&self, character: char, parser: &mut vt100::Parser<C>) {
        let character = if self.graphics[usize::from(self.shifted)] {
            dec_graphics(character)
        } else {
            character
        };
        let width = u16::try_from(character.width().unwrap_or(0)).unwrap_or(1);
        let mut out = String::new();
        if width > 0 {
            let (cols, col) = cols_and_col(parser);
            if self.insert && col < cols {
                let _ = write!(out, "\x1b[{width}@");
            }
            if !self.autowrap && col + width > cols {
                // Autowrap off: what does not fit overwrites the row's end.
                let _ = write!(out, "\x1b[{}G", cols.saturating_sub(width) + 1);
            }
        }
        out.push(character);
        if self.pen.attrs.blink {
            out.push(BLINK_MARK);
        }
        if self.pen.attrs.strikethrough {
            out.push(STRIKETHROUGH_MARK);
        }
        parser.process(out.as_bytes());
    }

    fn tab<C: vt100::Callbacks>(&self, parser: &mut vt100::Parser<C>) {
        let (cols, col) = cols_and_col(parser);
        let last = cols.saturating_sub(1);
        let next = self
            .tab_stops
            .iter()
            .flatten()
            .copied()
            .find(|&stop| stop > col)
            .unwrap_or(last)
            .min(last);
        parser.process(format!("\x1b[{}G", next + 1).as_bytes());
    }

    /// The stops, made explicit to be changed (the default ones at any width the screen may
    /// take later).
    fn stops_mut(&mut self) -> &mut Vec<u16> {
        self.tab_stops.get_or_insert_with(|| {
            (TAB_WIDTH..=u16::MAX)
                .step_by(usize::from(TAB_WIDTH))
                .collect()
        })
    }

    /// Stops that are the default ones across the screen's width are dropped: tabs are then
    /// vt100's own again, with no work per tab (`tput init` sets them so).
    fn forget_default_stops(&mut self, cols: u16) {
        let on_screen = |stop: &u16| *stop < cols;
        let default = (TAB_WIDTH..cols).step_by(usize::from(TAB_WIDTH));
        if self
            .tab_stops
            .as_ref()
            .is_some_and(|stops| stops.iter().copied().filter(on_screen).eq(default))
        {
            self.tab_stops = None;
        }
    }

    fn escape<C: vt100::Callbacks>(&mut self, escape: Escape, parser: &mut vt100::Parser<C>) {
        match (escape.intermediate, escape.action) {
            // IND: down a row, scrolling at the bottom; NEL: the same at the row's start.
            (None, b'D') => parser.process(b"\n"),
            (None, b'E') => parser.process(b"\r\n"),
            // HTS: a tab stop at the cursor.
            (None, b'H') => {
                let (cols, col) = cols_and_col(parser);
                let col = col.min(cols.saturating_sub(1));
                let stops = self.stops_mut();
                if let Err(at) = stops.binary_search(&col) {
                    stops.insert(at, col);
                }
                self.forget_default_stops(cols);
            }
            (None, b'c') => *self = Self::default(),
            (None, b'7') => {
                self.saved = (self.graphics, self.shifted);
                self.saved_pen = self.pen;
            }
            (None, b'8') => {
                (self.graphics, self.shifted) = self.saved;
                self.pen = self.saved_pen;
            }
            (Some(b'#'), b'8') => Self::alignment_test(parser),
            (Some(designate @ (b'(' | b')')), charset) => {
                self.graphics[usize::from(designate == b')')] = charset == b'0';
            }
            _ => {}
        }
    }

    fn csi<C: vt100::Callbacks>(&mut self, csi: &Csi, parser: &mut vt100::Parser<C>) {
        if csi.intermediate {
            return;
        }
        match (csi.private, csi.action) {
            (false, b'm') => self.pen.apply_sgr(csi),
            // TBC: the stop at the cursor, or every stop.
            (false, b'g') => {
                let (cols, col) = cols_and_col(parser);
                let col = col.min(cols.saturating_sub(1));
                match csi.params().first().copied().unwrap_or(0) {
                    0 => self.stops_mut().retain(|&stop| stop != col),
                    3 => self.tab_stops = Some(Vec::new()),
                    _ => {}
                }
                self.forget_default_stops(cols);
            }
            (false, set @ (b'h' | b'l')) if csi.params().contains(&4) => {
                self.insert = set == b'h';
            }
            (true, set @ (b'h' | b'l')) => {
                for &mode in csi.params() {
                    match mode {
                        // DECCOLM: no terminal here changes width; it clears and homes.
                        3 => parser.process(b"\x1b[H\x1b[2J"),
                        7 => self.autowrap = set == b'h',
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }

    /// DECALN: the screen filled with `E`, the scroll region reset, the cursor home; the pen
    /// stays as it was.
    fn alignment_test<C: vt100::Callbacks>(parser: &mut vt100::Parser<C>) {
        let screen = parser.screen();
        let pen = screen.attributes_formatted();
        let (rows, cols) = (screen.size().0.get(), screen.size().1.get());
        let mut out = String::from("\x1b[r\x1b[m");
        let line = "E".repeat(usize::from(cols));
        for row in 1..=rows {
            let _ = write!(out, "\x1b[{row};1H{line}");
        }
        out.push_str(&pen);
        out.push_str("\x1b[H");
        parser.process(out.as_bytes());
    }
}

/// The screen's columns and the cursor's column (`cols` when a wrap is pending).
fn cols_and_col<C: vt100::Callbacks>(parser: &vt100::Parser<C>) -> (u16, u16) {
    let screen = parser.screen();
    (screen.size().1.get(), screen.cursor_position().1)
}

/// The DEC special graphics charset: line drawing and a few symbols in place of `_` to `~`.
fn dec_graphics(character: char) -> char {
    const TABLE: [char; 32] = [
        ' ', '◆', '▒', '␉', '␌', '␍', '␊', '°', '±', '␤', '␋', '┘', '┐', '┌', '└', '┼', '⎺', '⎻',
        '─', '⎼', '⎽', '├', '┤', '┴', '┬', '│', '≤', '≥', 'π', '≠', '£', '·',
    ];
    match u32::from(character) {
        code @ 0x5f..=0x7e => TABLE[usize::try_from(code - 0x5f).unwrap_or(0)],
        _ => character,
    }
}

#[cfg(test)]
mod tests {
    use crate::pty::TermSize;
    use crate::screen::{CursorPos, Screen, ScreenSnapshot};

    fn shown(cols: u16, rows: u16, bytes: &[u8]) -> ScreenSnapshot {
        let mut screen = Screen::new(TermSize::new(cols, rows), 0);
        screen.feed(bytes);
        screen.snapshot(0)
    }

    fn lines(snapshot: &ScreenSnapshot) -> Vec<String> {
        let text = snapshot.text();
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        while lines.last().is_some_and(String::is_empty) {
            lines.pop();
        }
        lines
    }

    #[test]
    fn index_and_next_line_move_down_a_row() {
        let screen = shown(80, 24, b"\x1b[2J\x1b[HA\x1bDB\x1bEC");
        assert_eq!(lines(&screen), ["A", " B", "C"]);
        // At the bottom, IND scrolls.
        let screen = shown(10, 3, b"1\r\n2\r\n3\x1bDx");
        assert_eq!(lines(&screen), ["2", "3", " x"]);
    }

    #[test]
    fn the_alignment_test_fills_the_screen_with_e_and_keeps_the_pen() {
        let screen = shown(80, 24, b"\x1b[31m\x1b[2J\x1b#8");
        assert!(screen.rows.iter().flatten().all(|cell| cell.text == "E"));
        assert!(
            screen
                .rows
                .iter()
                .flatten()
                .all(|cell| cell.fg == crate::screen::CellColor::Default)
        );
        assert_eq!(screen.cursor, Some(CursorPos { row: 0, col: 0 }));
        let after = shown(80, 24, b"\x1b[31m\x1b#8x");
        assert_eq!(after.rows[0][0].fg, crate::screen::CellColor::Indexed(1));
    }

    #[test]
    fn tabs_go_to_the_stops_set() {
        let screen = shown(80, 24, b"\x1b[2J\x1b[H\x1b[3g\x1b[1;5H\x1bH\x1b[1;1H\tX");
        assert_eq!(lines(&screen), ["    X"]);
        // No stop left: a tab goes to the last column.
        let screen = shown(20, 2, b"\x1b[3g\tX");
        assert_eq!(lines(&screen), [format!("{}X", " ".repeat(19))]);
        // The stop at the cursor is cleared; the others stay.
        let screen = shown(40, 2, b"\x1b[1;9H\x1b[g\r\tX");
        assert_eq!(lines(&screen), [format!("{}X", " ".repeat(16))]);
        // A reset brings back every eighth column.
        let screen = shown(40, 2, b"\x1b[3g\x1bc\tX");
        assert_eq!(lines(&screen), [format!("{}X", " ".repeat(8))]);
        // A tab within a sequence belongs to it.
        let screen = shown(40, 3, b"\x1b[3g\x1b[1;5H\x1bH\x1b[2\t;1HX");
        assert_eq!(lines(&screen), ["", "X"]);
    }

    #[test]
    fn the_column_mode_clears_and_homes() {
        let screen = shown(80, 24, b"\x1b[2J\x1b[5;5Hhello\x1b[?3lZ");
        assert_eq!(lines(&screen), ["Z"]);
        assert_eq!(screen.size, TermSize::new(80, 24));
    }

    #[test]
    fn with_autowrap_off_the_row_end_is_overwritten() {
        let mut bytes = b"\x1b[2J\x1b[H\x1b[?7l".to_vec();
        bytes.extend("*".repeat(100).bytes());
        bytes.extend(b"X\x1b[?7h");
        let screen = shown(80, 24, &bytes);
        assert_eq!(lines(&screen), [format!("{}X", "*".repeat(79))]);
        // Back on, text wraps again.
        bytes.extend("y".repeat(81).bytes());
        assert_eq!(
            lines(&shown(80, 24, &bytes)),
            [format!("{}X", "*".repeat(79)), "y".repeat(80), "y".into()]
        );
    }

    #[test]
    fn insert_mode_pushes_the_rest_of_the_row_right() {
        let screen = shown(80, 24, b"\x1b[2J\x1b[Habcdef\x1b[1;3H\x1b[4hXY\x1b[4l");
        assert_eq!(lines(&screen), ["abXYcdef"]);
        let screen = shown(80, 24, b"abcdef\x1b[1;3H\x1b[4h\xe4\xb8\xadZ\x1b[4lQ");
        assert_eq!(lines(&screen), ["ab中ZQdef"]);
    }

    #[test]
    fn dec_line_drawing_draws_lines_in_g0_and_through_shift_out() {
        let screen = shown(80, 24, b"\x1b(0lqqk\x1b(B lqqk");
        assert_eq!(lines(&screen), ["┌──┐ lqqk"]);
        let screen = shown(80, 24, b"\x1b)0a\x0emqj\x0fb\x1b7\x0e\x1b8x");
        // DECRC brings back the charsets saved with the cursor (SI then).
        assert_eq!(lines(&screen), ["a└─┘bx"]);
    }

    #[test]
    fn blink_and_strikethrough_are_kept_per_cell_and_reset() {
        let screen = shown(
            20,
            2,
            "\x1b[5ma\x1b[9mb\x1b[25mc\x1b[29md\x1b[5;9m中\x1b[0me\x1b[38;5;9mf\x1b[9;25mg\x1b[mh\
             \x1b[38:2::1:5:9mi\x1b[4:5mj\x1b[0m"
                .as_bytes(),
        );
        let marks: Vec<(String, bool, bool)> = screen.rows[0]
            .iter()
            .filter(|cell| !cell.text.is_empty())
            .map(|cell| {
                (
                    cell.text.clone(),
                    cell.attrs.blink,
                    cell.attrs.strikethrough,
                )
            })
            .collect();
        let expected = [
            ("a", true, false),
            ("b", true, true),
            ("c", false, true),
            ("d", false, false),
            ("中", true, true),
            ("e", false, false),
            ("f", false, false),
            ("g", false, true),
            ("h", false, false),
            ("i", false, false),
            ("j", false, false),
        ]
        .map(|(text, blink, strike)| (text.to_owned(), blink, strike));
        assert_eq!(marks, expected);
        assert_eq!(lines(&screen), ["abcd中efghij"]);
        // The cursor moves as without the marks.
        assert_eq!(screen.cursor, Some(CursorPos { row: 0, col: 12 }));
    }

    #[test]
    fn wide_and_combining_characters_at_the_right_margin() {
        // A wide character that does not fit wraps whole.
        let screen = shown(10, 3, "123456789中".as_bytes());
        assert_eq!(lines(&screen), ["123456789", "中"]);
        // A combining mark joins the last cell without a wrap.
        let screen = shown(10, 3, "123456789e\u{301}".as_bytes());
        assert_eq!(lines(&screen), ["123456789e\u{301}"]);
        // Autowrap off: a wide character overwrites the last two cells.
        let screen = shown(10, 3, "\x1b[?7l12345678中文".as_bytes());
        assert_eq!(lines(&screen), ["12345678文"]);
        let screen = shown(10, 3, "\x1b[?7l123456789e\u{301}f".as_bytes());
        assert_eq!(lines(&screen), ["123456789f"]);
    }
}
