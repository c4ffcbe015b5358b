//! What vt100 0.18 leaves out, carried out around it: every byte still goes to its parser, and
//! right where a sequence ends its effect is drawn with sequences vt100 knows, from the parser's
//! state at that point (cursor, size, pen). A sequence vt100 reads wrongly is cut off with CAN
//! before its last byte and replaced. Text printed in a mode vt100 lacks (autowrap off, insert,
//! DEC line drawing, attributes vt100 does not keep) and tabs to stops it cannot set are
//! rewritten the same way, character by character; in the usual modes text passes untouched.
//!
//! Carried out: IND, NEL and RI; HTS, TBC, CBT and tabs to the stops set (a tab with a wrap
//! pending keeps it); DECALN; DECCOLM (clears and homes, the width stays); DECAWM off; IRM; the
//! DEC special graphics charset in G0 and G1, with SO and SI; blink, strikethrough, conceal and
//! overline, and SGR's colon forms (`4:3`, `38:2::R:G:B`); blanks in the background colour
//! (see [`paint`]); DECSTBM homing to the first row; `CSI s` and `CSI u`; the alternate screen
//! of modes 47 and 1047 sharing the cursor; the widths programs count (VS16 widens nothing,
//! U+00AD takes a cell); and RIS, DECSC and DECRC for this state.

mod paint;
pub(crate) mod palette;

use std::fmt::Write as _;

use unicode_width::UnicodeWidthChar;

use super::decode::{Csi, Decoder, Escape, Step, dec_graphics};
use super::style::Style;

/// Default tab stops: every eighth column.
const TAB_WIDTH: u16 = 8;

/// A scroll region: its first and last rows, from 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Region {
    pub top: u16,
    pub bottom: u16,
}

/// The state vt100 does not keep.
#[allow(clippy::struct_excessive_bools)] // Modes and flags of a terminal, each its own.
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
    /// The attributes vt100 does not keep (blink, strikethrough, conceal, overline) are in the
    /// pen: each character drawn with them carries a mark in its cell (see [`take_marks`]).
    pen: Style,
    /// The pen DECSC saved.
    saved_pen: Style,
    /// The scroll regions of the main and the alternate screen (`None`: the whole screen):
    /// vt100 keeps them without telling.
    regions: [Option<Region>; 2],
    /// REP repeats the last character printed only right after it: after a control function
    /// (another REP included) ECMA-48 leaves it undefined, and vttest's 11.6.7.2 and tmux
    /// repeat nothing.
    repeatable: bool,
    /// The last character drawn here (REP repeats it the same way).
    last_printed: char,
    /// The colours the program redefined.
    palette: palette::Palette,
}

/// What vt100 cannot store, carried in a cell as zero-width tag characters after its
/// character: invisible to vt100, which appends them like combining marks, and taken out
/// again when the cell is read.
#[allow(clippy::struct_excessive_bools)] // Independent flags of one cell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Marks {
    pub blink: bool,
    pub strikethrough: bool,
    pub hidden: bool,
    pub overline: bool,
}

const BLINK_MARK: char = '\u{E0062}';
const STRIKETHROUGH_MARK: char = '\u{E0073}';
const HIDDEN_MARK: char = '\u{E0068}';
const OVERLINE_MARK: char = '\u{E006F}';
/// Stands for VS16, which vt100 takes as making its cell two wide: programs count it as
/// nothing (wcwidth 0), and so must the screen.
const VS16_MARK: char = '\u{E0076}';
/// After a space, stands for U+00AD, which programs count as one cell and vt100 as none.
const SOFT_HYPHEN_MARK: char = '\u{E002D}';

fn is_mark(character: char) -> bool {
    ('\u{E0020}'..='\u{E007F}').contains(&character)
}

/// Takes the marks out of a cell's text, and puts back what they stand for.
pub(crate) fn take_marks(text: &mut String) -> Marks {
    // A character and a mark take at least five bytes: most cells are passed over at once.
    if text.len() < 5 || !text.contains(is_mark) {
        return Marks::default();
    }
    let mut marks = Marks::default();
    let mut kept = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            BLINK_MARK => marks.blink = true,
            STRIKETHROUGH_MARK => marks.strikethrough = true,
            HIDDEN_MARK => marks.hidden = true,
            OVERLINE_MARK => marks.overline = true,
            VS16_MARK => kept.push('\u{FE0F}'),
            SOFT_HYPHEN_MARK => {
                // The space drawn in its place goes.
                kept.clear();
                kept.push('\u{AD}');
            }
            other => kept.push(other),
        }
    }
    *text = kept;
    marks
}

/// What vt100 is given for a character: the character it draws, if any, and a mark.
fn for_vt100(character: char) -> (Option<char>, Option<char>) {
    match character {
        '\u{FE0F}' => (None, Some(VS16_MARK)),
        '\u{AD}' => (Some(' '), Some(SOFT_HYPHEN_MARK)),
        other => (Some(other), None),
    }
}

/// Whether vt100 counts `character` otherwise than programs do.
fn counted_otherwise(character: char) -> bool {
    matches!(character, '\u{FE0F}' | '\u{AD}')
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
            regions: [None; 2],
            repeatable: false,
            last_printed: ' ',
            palette: palette::Palette::default(),
        }
    }
}

impl Extras {
    /// Whether text must be rewritten before vt100 draws it.
    fn rewrites_text(&self) -> bool {
        let attrs = &self.pen.attrs;
        self.graphics[usize::from(self.shifted)]
            || !self.autowrap
            || self.insert
            || attrs.blink
            || attrs.strikethrough
            || attrs.hidden
            || attrs.overline
    }

    /// The colours the program redefined.
    pub fn palette(&self) -> &palette::Palette {
        &self.palette
    }

    /// The size changed: vt100 reset both scroll regions.
    pub fn resized(&mut self) {
        self.regions = [None; 2];
    }

    /// The scroll region in force.
    fn region(&self, screen: &vt100::Screen) -> Region {
        let rows = screen.size().0.get();
        self.regions[usize::from(screen.alternate_screen())]
            .filter(|region| region.bottom < rows)
            .unwrap_or(Region {
                top: 0,
                bottom: rows - 1,
            })
    }

    /// Whether a line feed now scrolls the region.
    fn at_bottom_margin(&self, screen: &vt100::Screen) -> bool {
        let region = self.region(screen);
        let row = screen.cursor_position().0;
        row == region.bottom && row >= region.top
    }

    /// Hands `bytes` to `parser`, carrying out what it ignores where it comes.
    pub fn process<C: vt100::Callbacks>(&mut self, bytes: &[u8], parser: &mut vt100::Parser<C>) {
        // Bytes before `passed` are the parser's.
        let mut passed = 0;
        // Where the character being read began.
        let mut char_start = 0;
        let mut index = 0;
        while index < bytes.len() {
            let plain = self.skip_plain(&bytes[index..], parser);
            if plain > 0 {
                index += plain;
                continue;
            }
            let byte = bytes[index];
            if self.decoder.at_boundary() {
                char_start = index;
            }
            // A control within a sequence is carried out by the parser, as part of it.
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
                // A control ends what REP may repeat; NUL is nothing, and CAN and SUB end a
                // sequence (the backlog cuts with them too).
                if matches!(step, Step::Execute(control) if !matches!(control, 0x00 | 0x18 | 0x1a))
                {
                    self.repeatable = false;
                }
                match step {
                    Step::Print(character)
                        if self.rewrites_text() || counted_otherwise(character) =>
                    {
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
                    Step::Execute(control @ (b'\t' | b'\n' | 0x0b | 0x0c)) if in_ground => {
                        parser.process(&bytes[passed..index]);
                        passed = index + 1;
                        if control == b'\t' {
                            self.tab(parser);
                        } else {
                            self.line_feed(&[control], parser);
                        }
                    }
                    Step::Execute(0x0e) => self.shifted = true,
                    Step::Execute(0x0f) => self.shifted = false,
                    // The parser gets all but the last byte; what that byte does is decided
                    // from the state before it.
                    Step::Escape(escape) => {
                        parser.process(&bytes[passed..index]);
                        passed = index + 1;
                        self.escape(escape, parser);
                    }
                    Step::Csi(csi) => {
                        parser.process(&bytes[passed..index]);
                        passed = index + 1;
                        self.csi(&csi, byte, parser);
                    }
                    Step::Print(_) => self.repeatable = true,
                    Step::Execute(_) => {}
                }
            }
            index += 1;
        }
        parser.process(&bytes[passed..]);
    }

    /// How many bytes at the start of `bytes` go to vt100 as they are (plain text, when no
    /// character is half read and no mode rewrites text).
    fn skip_plain<C: vt100::Callbacks>(
        &mut self,
        bytes: &[u8],
        parser: &vt100::Parser<C>,
    ) -> usize {
        if !self.decoder.at_boundary() || self.rewrites_text() {
            return 0;
        }
        let plain = Self::plain_run(bytes, parser);
        if plain > 0 {
            // A control (a line's end) ends what REP may repeat.
            let last = bytes[plain - 1];
            self.repeatable = last >= 0x20 && last != 0x7f;
        }
        plain
    }

    /// How many bytes at the start of `bytes` vt100 draws right by itself: text up to a
    /// sequence, a shift, a tab, a character it counts otherwise, and with coloured blanks a
    /// line feed.
    fn plain_run<C: vt100::Callbacks>(bytes: &[u8], parser: &vt100::Parser<C>) -> usize {
        let blanks = paint::coloured_blanks(parser.screen());
        let stops = |byte: &u8| match byte {
            0x1b | 0x0e | 0x0f | b'\t' | 0xef | 0xc2 => true,
            b'\n' | 0x0b | 0x0c => blanks,
            _ => false,
        };
        let mut from = 0;
        loop {
            let Some(at) = bytes[from..].iter().position(stops).map(|at| from + at) else {
                // A character cut short at the end is read by the decoder, whole.
                return bytes.len() - super::unfinished_character(bytes);
            };
            // VS16 is EF B8 8F, U+00AD C2 AD: a character cut short is looked at whole.
            let watched = match bytes[at] {
                0xef => bytes
                    .get(at + 1..at + 3)
                    .is_none_or(|rest| rest == [0xb8, 0x8f]),
                0xc2 => bytes.get(at + 1).is_none_or(|&next| next == 0xad),
                _ => true,
            };
            if watched {
                return at;
            }
            from = at + 1;
        }
    }

    /// A character in a mode vt100 lacks, or counted otherwise by it. A wrap that scrolls
    /// leaves its blanks in the default colours, as tmux does.
    fn print<C: vt100::Callbacks>(&mut self, character: char, parser: &mut vt100::Parser<C>) {
        let character = if self.graphics[usize::from(self.shifted)] {
            dec_graphics(character)
        } else {
            character
        };
        let (drawn, mark) = for_vt100(character);
        let width = drawn.map_or(0, |drawn| {
            u16::try_from(drawn.width().unwrap_or(0)).unwrap_or(1)
        });
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
        out.extend(drawn);
        out.extend(mark);
        let attrs = &self.pen.attrs;
        for (on, mark) in [
            (attrs.blink, BLINK_MARK),
            (attrs.strikethrough, STRIKETHROUGH_MARK),
            (attrs.hidden, HIDDEN_MARK),
            (attrs.overline, OVERLINE_MARK),
        ] {
            if on {
                out.push(mark);
            }
        }
        parser.process(out.as_bytes());
        self.repeatable = true;
        self.last_printed = character;
    }

    /// A line feed (or `bytes` that end in one), blanks painted when it scrolls.
    fn line_feed<C: vt100::Callbacks>(&self, bytes: &[u8], parser: &mut vt100::Parser<C>) {
        let scrolls =
            paint::coloured_blanks(parser.screen()) && self.at_bottom_margin(parser.screen());
        parser.process(bytes);
        if scrolls {
            let bottom = self.region(parser.screen()).bottom;
            paint::rows(parser, bottom, bottom);
        }
    }

    /// A tab: none with a wrap pending (the next character still wraps, as vttest's 11.5.4
    /// says), vt100's own to the default stops.
    fn tab<C: vt100::Callbacks>(&self, parser: &mut vt100::Parser<C>) {
        let (cols, col) = cols_and_col(parser);
        if col >= cols {
            return;
        }
        if self.tab_stops.is_none() {
            parser.process(b"\t");
            return;
        }
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

    /// CBT: back `count` tab stops, to the first column at most.
    fn back_tab<C: vt100::Callbacks>(&self, count: u16, parser: &mut vt100::Parser<C>) {
        let (cols, col) = cols_and_col(parser);
        let mut col = col.min(cols.saturating_sub(1));
        for _ in 0..count.min(cols) {
            col = match &self.tab_stops {
                Some(stops) => stops
                    .iter()
                    .rev()
                    .copied()
                    .find(|&stop| stop < col)
                    .unwrap_or(0),
                None => col.saturating_sub(1) / TAB_WIDTH * TAB_WIDTH,
            };
        }
        parser.process(format!("\x1b[{}G", col + 1).as_bytes());
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

    /// DECSC's part of this state (vt100 saves the cursor and its pen).
    fn save(&mut self) {
        self.saved = (self.graphics, self.shifted);
        self.saved_pen = self.pen;
    }

    /// DECRC's part of this state.
    fn restore(&mut self) {
        (self.graphics, self.shifted) = self.saved;
        self.pen = self.saved_pen;
    }

    /// An escape sequence, its last byte not yet given to the parser.
    fn escape<C: vt100::Callbacks>(&mut self, escape: Escape, parser: &mut vt100::Parser<C>) {
        self.repeatable = false;
        if (escape.intermediate, escape.action) == (None, b'M') {
            // RI at the region's top scrolls a blank row in (vt100 also scrolls from row 0).
            let screen = parser.screen();
            let region = self.region(screen);
            let row = screen.cursor_position().0;
            let scrolls = paint::coloured_blanks(screen)
                && (row == 0 || (row == region.top && row <= region.bottom));
            parser.process(b"M");
            if scrolls {
                paint::rows(parser, region.top, region.top);
            }
            return;
        }
        parser.process(&[escape.action]);
        match (escape.intermediate, escape.action) {
            // IND: down a row, scrolling at the bottom; NEL: the same at the row's start.
            (None, b'D') => self.line_feed(b"\n", parser),
            (None, b'E') => self.line_feed(b"\r\n", parser),
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
            (None, b'7') => self.save(),
            (None, b'8') => self.restore(),
            (Some(b'#'), b'8') => self.alignment_test(parser),
            (Some(designate @ (b'(' | b')')), charset) => {
                self.graphics[usize::from(designate == b')')] = charset == b'0';
            }
            _ => {}
        }
    }

    /// A CSI sequence, its last byte (`last`) not yet given to the parser.
    fn csi<C: vt100::Callbacks>(&mut self, csi: &Csi, last: u8, parser: &mut vt100::Parser<C>) {
        if csi.intermediate {
            parser.process(&[last]);
            return;
        }
        let before = parser.screen().cursor_position();
        let repeatable = std::mem::take(&mut self.repeatable);
        if (csi.private, csi.action) == (false, b'b') {
            self.repeat(repeatable, csi.count(1), last, parser);
            return;
        }
        if (csi.private, csi.action) == (false, b'm') {
            self.pen.apply_sgr(csi);
            if Style::misread_by_vt100(csi) {
                // Cut off, and the pen it leaves set as vt100 reads it.
                let mut sgr = String::from("\x18");
                self.pen.write_sgr(&mut sgr);
                parser.process(sgr.as_bytes());
            } else {
                parser.process(&[last]);
            }
            return;
        }
        parser.process(&[last]);
        let params = csi.params();
        let first = params.first().copied().unwrap_or(0);
        match (csi.private, csi.action) {
            // TBC: the stop at the cursor, or every stop.
            (false, b'g') => {
                let (cols, col) = cols_and_col(parser);
                let col = col.min(cols.saturating_sub(1));
                match first {
                    0 => self.stops_mut().retain(|&stop| stop != col),
                    3 => self.tab_stops = Some(Vec::new()),
                    _ => {}
                }
                self.forget_default_stops(cols);
            }
            (false, set @ (b'h' | b'l')) if params.contains(&4) => {
                self.insert = set == b'h';
            }
            (true, set @ (b'h' | b'l')) => self.private_modes(params, set == b'h', before, parser),
            (false, b'r') => {
                self.set_region(csi, parser.screen());
                // vt100 homes to the region's top; the first row it is (the region's top in
                // origin mode, where CUP counts from there).
                parser.process(b"\x1b[H");
            }
            // SCOSC and SCORC: DECSC and DECRC by another name.
            (false, b's') => {
                parser.process(b"\x1b7");
                self.save();
            }
            (false, b'u') => {
                parser.process(b"\x1b8");
                self.restore();
            }
            (false, b'Z') => self.back_tab(csi.count(1), parser),
            (true, b'z') if csi.marker == b'<' => self.palette.apply(params),
            (false, action @ (b'@' | b'P' | b'L' | b'M' | b'S' | b'T')) => {
                let region = self.region(parser.screen());
                paint::after_edit(parser, region, action, csi.count(1));
            }
            // ED, EL (DECSED and DECSEL with `?`; vt100 ignores other markers) and ECH.
            (_, action @ (b'J' | b'K')) if matches!(csi.marker, 0 | b'?') && first != 3 => {
                paint::erase_again(parser, action, first);
            }
            (false, b'X') => paint::erase_again(parser, b'X', csi.count(1)),
            _ => {}
        }
    }

    /// REP (`last` its final byte): cut off with nothing to repeat; with a mode vt100 lacks,
    /// repeated as the character was drawn (with its marks, inserted, not wrapped).
    fn repeat<C: vt100::Callbacks>(
        &mut self,
        repeatable: bool,
        count: u16,
        last: u8,
        parser: &mut vt100::Parser<C>,
    ) {
        if !repeatable {
            parser.process(b"\x18");
        } else if self.rewrites_text() {
            parser.process(b"\x18");
            let (rows, cols) = parser.screen().size();
            let most = u32::from(rows.get()) * u32::from(cols.get());
            for _ in 0..u32::from(count).min(most) {
                self.print(self.last_printed, parser);
            }
            self.repeatable = false;
        } else {
            parser.process(&[last]);
        }
    }

    /// DEC private modes, once vt100 has carried out those it knows; `before`: where the
    /// cursor was.
    fn private_modes<C: vt100::Callbacks>(
        &mut self,
        params: &[u16],
        set: bool,
        before: (u16, u16),
        parser: &mut vt100::Parser<C>,
    ) {
        for &mode in params {
            match mode {
                // DECCOLM: no terminal here changes width; it clears and homes.
                3 => parser.process(b"\x1b[H\x1b[2J"),
                7 => self.autowrap = set,
                // The alternate screen without a saved cursor: one cursor for both screens.
                47 => move_cursor(parser, before),
                1047 if set == parser.screen().alternate_screen() => {}
                1047 => {
                    if set {
                        parser.process(b"\x1b[?47h");
                    } else {
                        // Left, the alternate screen is cleared.
                        let pen = parser.screen().attributes_formatted();
                        parser.process(format!("\x1b[m\x1b[2J\x1b[?47l{pen}").as_bytes());
                    }
                    move_cursor(parser, before);
                }
                // vt100 saves the cursor, clears the alternate screen and homes; the cursor
                // stays where it was, as in xterm and tmux.
                1049 if set => {
                    self.save();
                    self.regions[1] = None;
                    move_cursor(parser, before);
                }
                1049 => self.restore(),
                _ => {}
            }
        }
    }

    /// DECSTBM, as vt100 reads it: a region of two rows at least, else the whole screen.
    fn set_region(&mut self, csi: &Csi, screen: &vt100::Screen) {
        let rows = screen.size().0.get();
        // vt100 reads the first part of each parameter (`2:9` is 2).
        let params: Vec<u16> = (0..csi.params().len())
            .filter(|&index| !csi.is_subparam(index))
            .map(|index| csi.params()[index])
            .collect();
        let top = params.first().copied().filter(|&top| top > 0).unwrap_or(1) - 1;
        let bottom = params
            .get(1)
            .copied()
            .filter(|&bottom| bottom > 0)
            .unwrap_or(rows);
        let bottom = (bottom - 1).min(rows - 1);
        self.regions[usize::from(screen.alternate_screen())] =
            (top < bottom).then_some(Region { top, bottom });
    }

    /// DECALN: the screen filled with `E`, the scroll region reset, the cursor home; the pen
    /// stays as it was.
    fn alignment_test<C: vt100::Callbacks>(&mut self, parser: &mut vt100::Parser<C>) {
        let screen = parser.screen();
        self.regions[usize::from(screen.alternate_screen())] = None;
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

/// Puts the cursor at `(row, col)` whatever the origin mode. A wrap pending there (`col` past
/// the last column) stays pending when the cursor has not moved; else it is lost.
fn move_cursor<C: vt100::Callbacks>(parser: &mut vt100::Parser<C>, (row, col): (u16, u16)) {
    if parser.screen().cursor_position() != (row, col) {
        parser.process(format!("\x1b[{}d\x1b[{}G", row + 1, col + 1).as_bytes());
    }
}

/// The screen's columns and the cursor's column (`cols` when a wrap is pending).
fn cols_and_col<C: vt100::Callbacks>(parser: &vt100::Parser<C>) -> (u16, u16) {
    let screen = parser.screen();
    (screen.size().1.get(), screen.cursor_position().1)
}

#[cfg(test)]
mod tests;
