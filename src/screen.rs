//! The terminal model of one call: a vt100 parser with a bounded scrollback.
//!
//! Output chunks are fed in order by whoever consumes the process; feeding returns the answers
//! to the queries a program waits on (cursor position, device status, device attributes), which
//! the consumer writes back to the process. Front ends never see the parser: they take owned
//! [`ScreenSnapshot`]s.
//!
//! Parsing is the costliest step of all (vt100 runs at about a third of the PTY's speed), so it
//! is lazy: chunks wait in a bounded backlog until someone looks, a query needs an answer, or the
//! backlog is full. A backlog holding more lines than the screen and its history can show is
//! mostly invisible: when the part that scrolls away holds only sequences whose effect does not
//! outlive the rows they touch, only those sequences and the visible tail are parsed. The result
//! is the screen that parsing every byte would give; anything else in the backlog (the alternate
//! screen, a scroll region, a saved cursor, a charset switch) makes it parse every byte.

pub mod decode;
mod extras;
mod style;
mod view;

pub use style::Style;
pub use view::ScreenView;

use std::num::NonZeroU16;
use std::panic::{AssertUnwindSafe, catch_unwind};

use serde::{Deserialize, Serialize};

use crate::pty::TermSize;
use decode::{Csi, Decoder, Step};
use extras::Extras;

/// Rows of history kept in memory per call: none, since the log file keeps everything and
/// front ends scroll through it (a history row costs a cell per column, 200 columns of them).
pub const DEFAULT_SCROLLBACK_ROWS: usize = 0;
/// Raw bytes kept unparsed at most.
const MAX_BACKLOG_BYTES: usize = 256 * 1024;
/// Capacity a backlog keeps after a flush; more is given back.
const KEPT_BACKLOG_CAPACITY: usize = 64 * 1024;

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
    #[serde(default, skip_serializing_if = "is_default")]
    pub blink: bool,
    #[serde(default, skip_serializing_if = "is_default")]
    pub strikethrough: bool,
}

/// One character cell. Serialized compactly (short names, defaults left out): a screen goes
/// over the socket on every change.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    /// The grapheme shown; empty for a blank cell and for the right half of a wide character.
    #[serde(rename = "t", default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    #[serde(default, skip_serializing_if = "is_default")]
    pub fg: CellColor,
    #[serde(default, skip_serializing_if = "is_default")]
    pub bg: CellColor,
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
    pub row: u16,
    pub col: u16,
}

/// An owned picture of a screen, as a front end draws it.
#[derive(Clone, Debug, PartialEq, Eq)]
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
    #[default]
    Default,
    Utf8,
    Sgr,
}

/// A program's mouse reporting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MouseReporting {
    pub events: MouseEvents,
    pub encoding: MouseEncoding,
}

impl MouseReporting {
    fn of(screen: &vt100::Screen) -> Self {
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
    pub fn from_lines(size: TermSize, lines: &[String], scroll_offset: usize) -> Self {
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
/// character takes two (the second empty), a combining mark joins the cell before it.
fn line_cells(line: &str, cols: usize) -> Vec<Cell> {
    use unicode_width::UnicodeWidthChar;
    let mut cells: Vec<Cell> = Vec::with_capacity(cols);
    let mut pen = Style::default();
    let mut decoder = Decoder::new();
    let cell = |text: char, pen: Style, wide: bool| Cell {
        text: text.to_string(),
        fg: pen.fg,
        bg: pen.bg,
        attrs: pen.attrs,
        wide,
    };
    let mut full = false;
    for &byte in line.as_bytes() {
        decoder.advance(byte, &mut |step| {
            pen.follow(&step);
            let character = match step {
                _ if full => return,
                Step::Print(character) => character,
                Step::Execute(b'\t') => ' ',
                _ => return,
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
                1 if cells.len() < cols => cells.push(cell(character, pen, false)),
                2 if cells.len() + 2 <= cols => {
                    cells.push(cell(character, pen, true));
                    cells.push(Cell {
                        text: String::new(),
                        wide: false,
                        ..cell(' ', pen, false)
                    });
                }
                _ => full = true,
            }
        });
    }
    cells
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

/// Unparsed output, with what a skip over it needs to know, kept up to date as bytes arrive.
///
/// The bytes pass the shared [`Decoder`] on their way in, which keeps the parser's work and
/// memory bounded by the screen however they are crafted: string controls (titles, hyperlinks,
/// clipboard writes, images) change nothing oino draws and are dropped whole, and a repeat count
/// is clamped to what fills the screen.
#[derive(Debug)]
struct Backlog {
    bytes: Vec<u8>,
    decoder: Decoder,
    sequence: Sequence,
    /// Everything before this offset must be parsed (it holds a sequence with lasting effect).
    parse_before: usize,
    /// The sequences after `parse_before` whose effect outlasts their rows (colors, modes), in
    /// order, and where each ends: `(offset after it in bytes, length of replay after it)`.
    replay: Vec<u8>,
    replay_marks: Vec<(usize, usize)>,
    /// A query wants an answer: parse now.
    query: bool,
    /// A scroll region is set: newlines no longer push every row away.
    scroll_region: bool,
    /// How repeat counts are cut down (see [`Repeats`]).
    repeats: Repeats,
}

/// Repeating a character more than fills the screen and its history (`fill`) changes only
/// where the cursor ends, which comes round every `period` repeats: a row's worth of narrow
/// characters (`cols`) and of wide ones (`cols / 2`) both divide it.
#[derive(Clone, Copy, Debug)]
struct Repeats {
    fill: u32,
    period: u32,
}

impl Repeats {
    fn new(size: TermSize, scrollback_rows: usize) -> Self {
        let cols = u32::from(size.cols.max(1));
        let rows = u32::from(size.rows) + u32::try_from(scrollback_rows).unwrap_or(u32::MAX) + 2;
        Self {
            fill: rows.saturating_mul(cols),
            period: cols * (cols / 2).max(1),
        }
    }

    /// The count that draws what `count` draws, when it is smaller.
    fn cut(self, count: u16) -> Option<u16> {
        let count = u32::from(count);
        let cut = self.fill + (count.checked_sub(self.fill)? % self.period);
        (cut < count).then(|| u16::try_from(cut).ok()).flatten()
    }
}

/// The sequence being read, as the backlog keeps it.
#[derive(Clone, Copy, Debug, Default)]
struct Sequence {
    /// Where it starts in `bytes` (`None` in the ground state, or when its start went with the
    /// last flush).
    start: Option<usize>,
    /// A control was carried out within it (a newline within a CSI).
    controls: bool,
    /// It is a string control: its bytes are not kept.
    dropping: bool,
}

impl Sequence {
    fn at(start: usize) -> Self {
        Self {
            start: Some(start),
            ..Self::default()
        }
    }
}

impl Backlog {
    fn new(size: TermSize, scrollback_rows: usize) -> Self {
        let mut backlog = Self {
            bytes: Vec::new(),
            decoder: Decoder::new(),
            sequence: Sequence::default(),
            parse_before: 0,
            replay: Vec::new(),
            replay_marks: Vec::new(),
            query: false,
            scroll_region: false,
            repeats: Repeats::new(size, scrollback_rows),
        };
        backlog.set_size(size, scrollback_rows);
        backlog
    }

    fn set_size(&mut self, size: TermSize, scrollback_rows: usize) {
        self.repeats = Repeats::new(size, scrollback_rows);
    }

    /// Whether a sequence is being read (its bytes so far are at the end).
    fn in_sequence(&self) -> bool {
        !self.decoder.in_ground()
    }

    fn push(&mut self, chunk: &[u8]) {
        let mut index = 0;
        while index < chunk.len() {
            if !self.in_sequence() {
                // Plain text and line controls have no effect beyond their rows.
                let text = chunk[index..]
                    .iter()
                    .position(|byte| matches!(byte, 0x1b | 0x0e | 0x0f))
                    .unwrap_or(chunk.len() - index);
                self.bytes.extend_from_slice(&chunk[index..index + text]);
                index += text;
                let Some(&byte) = chunk.get(index) else {
                    break;
                };
                index += 1;
                self.bytes.push(byte);
                if byte == 0x1b {
                    self.sequence = Sequence::at(self.bytes.len() - 1);
                    self.decoder.advance(byte, &mut |_| {});
                } else {
                    // Shift Out / Shift In switch the charset.
                    self.parse_until(self.bytes.len());
                }
                continue;
            }
            let byte = chunk[index];
            index += 1;
            self.sequence_byte(byte);
        }
    }

    /// One byte within a sequence.
    fn sequence_byte(&mut self, byte: u8) {
        let mut csi = None;
        let mut controls = false;
        self.decoder.advance(byte, &mut |step| match step {
            Step::Csi(found) => csi = Some(found),
            Step::Execute(_) => controls = true,
            Step::Print(_) | Step::Escape(_) => {}
        });
        if self.sequence.dropping {
            if self.decoder.in_string() {
                return;
            }
            self.sequence = Sequence::default();
            if byte == 0x1b {
                // The string ended with the start of a new sequence.
                self.bytes.push(byte);
                self.sequence = Sequence::at(self.bytes.len() - 1);
            }
            return;
        }
        if self.decoder.in_string() {
            // A string control starts: what it holds is dropped. What the backlog kept of its
            // start (its ESC, a DCS's parameters) goes too; when the parser has read some of it
            // already (before a flush) or controls were carried out after the ESC, a CAN, carried
            // out as nothing, ends it instead, leaving the parser in the ground state as the
            // string's end would.
            match self.sequence.start {
                Some(start) if !self.sequence.controls => self.drop_sequence(start),
                _ => self.bytes.push(0x18),
            }
            self.sequence = Sequence {
                dropping: true,
                ..Sequence::default()
            };
            return;
        }
        if byte == 0x1b {
            // A new sequence cuts the one being read short. A CAN ends that one for the parser
            // (as the ESC would), so that what comes before can be parsed apart from the new one.
            self.bytes.push(0x18);
            self.parse_until(self.bytes.len());
            self.bytes.push(byte);
            self.sequence = Sequence::at(self.bytes.len() - 1);
            return;
        }
        self.bytes.push(byte);
        self.sequence.controls |= controls;
        if self.in_sequence() {
            return;
        }
        // The sequence is complete.
        let end = self.bytes.len();
        let Sequence {
            start, controls, ..
        } = std::mem::take(&mut self.sequence);
        if let Some(csi) = csi.filter(|csi| csi.action == b'b' && !csi.private && !csi.intermediate)
        {
            if let Some(repeat) = self.repeats.cut(csi.count(1)) {
                self.cut_repeat(start, controls, repeat);
                return;
            }
        }
        if let Some(csi) = csi.filter(|csi| csi.action == b'r' && !csi.private && !csi.intermediate)
        {
            // A scroll region set by a sequence with controls within is set all the same. A
            // private `CSI ? r` (XTRESTORE elsewhere) sets no region, and resets none.
            self.scroll_region = csi.params().iter().any(|&n| n > 1);
        }
        match (start, csi) {
            (Some(start), Some(csi)) if !controls => self.csi(start, end, &csi),
            (Some(start), None) if !controls && end == start + 2 && matches!(byte, b'=' | b'>') => {
                // Keypad modes have no effect on rows: replay them.
                self.keep(start, end);
            }
            (Some(start), None) if !controls && end == start + 2 && byte == b'\\' => {
                // The ST that ended a dropped string: nothing to the parser.
                self.drop_sequence(start);
            }
            // Save/restore cursor, reset, index moves, charsets, a sequence cancelled or with
            // controls within, one whose start was flushed: parse.
            _ => self.parse_until(end),
        }
    }

    /// Drops the sequence that starts at `start`. A character cut short by its ESC goes too:
    /// the parser drops it at the ESC, and it must not join the bytes after the sequence.
    fn drop_sequence(&mut self, start: usize) {
        self.bytes.truncate(start);
        // A character broken before it (a lead byte the cut one followed) was dropped by the
        // parser too: it must not take the bytes after the sequence as its rest.
        loop {
            let unfinished = unfinished_character(&self.bytes);
            if unfinished == 0 {
                break;
            }
            self.bytes.truncate(self.bytes.len() - unfinished);
        }
    }

    /// Replaces the repeat just read (from `start`, or from the backlog's start when its start
    /// went with a flush) by one of `repeat`, which draws the same: a smaller count keeps the
    /// parser's work bounded. Controls carried out within it still are, before it.
    fn cut_repeat(&mut self, start: Option<usize>, controls: bool, repeat: u16) {
        let begin = start.unwrap_or(0);
        let carried_out: Vec<u8> = self.bytes[begin..]
            .iter()
            .copied()
            .filter(|byte| *byte < 0x20 && !matches!(byte, 0x18 | 0x1a | 0x1b))
            .collect();
        self.bytes.truncate(begin);
        if start.is_none() {
            // The parser has read the start: end it.
            self.bytes.push(0x18);
        }
        self.bytes.extend_from_slice(&carried_out);
        let sequence = self.bytes.len();
        self.bytes
            .extend_from_slice(format!("\x1b[{repeat}b").as_bytes());
        let end = self.bytes.len();
        if start.is_some() && !controls {
            self.keep(sequence, end);
        } else {
            self.parse_until(end);
        }
    }

    /// Everything up to `end` must be parsed; what was kept for replay before it is in there.
    fn parse_until(&mut self, end: usize) {
        self.parse_before = end;
        self.replay.clear();
        self.replay_marks.clear();
    }

    /// Keeps the sequence `bytes[start..end]` for replay over a skip.
    fn keep(&mut self, start: usize, end: usize) {
        let Self {
            bytes,
            replay,
            replay_marks,
            ..
        } = self;
        replay.extend_from_slice(&bytes[start..end]);
        replay_marks.push((end, replay.len()));
    }

    /// Classifies the CSI sequence `bytes[start..end]`.
    fn csi(&mut self, start: usize, end: usize, csi: &Csi) {
        let params = csi.params();
        match csi.action {
            b'n' | b'c' => {
                self.query = true;
                self.parse_until(end);
            }
            b'r' => {
                // DECSTBM; a private `CSI ? r` sets no region and resets none.
                if !csi.private && !csi.intermediate {
                    self.scroll_region = params.iter().any(|&n| n > 1);
                }
                self.parse_until(end);
            }
            // Tab stops outlast the rows they were set on.
            b's' | b'u' | b'g' => self.parse_until(end),
            // The alternate screen, and DECCOLM (a clear that must not be replayed later).
            b'h' | b'l'
                if csi.private && params.iter().any(|n| matches!(n, 3 | 47 | 1047 | 1049)) =>
            {
                self.parse_until(end);
            }
            // Colors, modes, and edits or moves of rows that will scroll away.
            _ => self.keep(start, end),
        }
    }

    /// Empties the backlog to scan it anew from the ground state (where compaction cuts).
    fn restart(&mut self) {
        self.bytes.clear();
        self.replay.clear();
        self.replay_marks.clear();
        self.parse_before = 0;
        self.query = false;
        self.decoder = Decoder::new();
        self.sequence = Sequence::default();
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.bytes.shrink_to(KEPT_BACKLOG_CAPACITY);
        self.replay.clear();
        self.replay.shrink_to(KEPT_BACKLOG_CAPACITY);
        self.replay_marks.clear();
        self.replay_marks.shrink_to(KEPT_BACKLOG_CAPACITY / 16);
        self.parse_before = 0;
        self.query = false;
        // An unfinished sequence continues in the next chunk, without its start.
        self.sequence.start = None;
    }

    /// Where a skip may end at the latest: before the sequence being read.
    fn skip_limit(&self) -> usize {
        if self.in_sequence() && !self.sequence.dropping {
            self.sequence.start.unwrap_or(0)
        } else {
            self.bytes.len()
        }
    }
}

/// Colors set since the last reset beyond which a skip is not worth it.
const MAX_LASTING_COLORS: usize = 256;

/// The sequences kept for replay that end by `cut`, reduced to those whose effect lasts: the
/// colors since the last reset and the last setting of each mode. Moves and edits go: the rows
/// they touched scroll away. `None` when too many colors pile up.
fn lasting_sequences(replay: &[u8], marks: &[(usize, usize)], cut: usize) -> Option<Vec<u8>> {
    let mut colors: Vec<&[u8]> = Vec::new();
    let mut modes: Vec<(&[u8], &[u8])> = Vec::new();
    let mut start = 0;
    for &(end, replay_end) in marks {
        if end > cut {
            break;
        }
        let sequence = &replay[start..replay_end];
        start = replay_end;
        let Some((&action, body)) = sequence.split_last() else {
            continue;
        };
        let csi_params = body.strip_prefix(b"\x1b[");
        match (csi_params, action) {
            (Some(params), b'm') => {
                if params.is_empty() || params == b"0" || params.starts_with(b"0;") {
                    colors.clear();
                }
                colors.push(sequence);
                if colors.len() > MAX_LASTING_COLORS {
                    return None;
                }
            }
            (params @ Some(_), b'h' | b'l') | (params @ None, b'=' | b'>') => {
                let key = params.unwrap_or(b"keypad");
                modes.retain(|(existing, _)| *existing != key);
                modes.push((key, sequence));
            }
            _ => {}
        }
    }
    let mut lasting: Vec<u8> = modes
        .iter()
        .flat_map(|(_, sequence)| *sequence)
        .copied()
        .collect();
    lasting.extend(colors.iter().flat_map(|sequence| *sequence));
    Some(lasting)
}

/// The terminal model of one call.
pub struct Screen {
    parser: vt100::Parser<Answers>,
    /// What the parser lacks, carried out around it.
    extras: Extras,
    size: TermSize,
    scrollback_rows: usize,
    backlog: Backlog,
    /// Bytes handed to the parser, replays included.
    parsed_bytes: u64,
    /// Times the parser panicked and was started over (a bug of the parser's, never expected).
    parser_resets: u64,
    /// The screen's last text, once frozen (see [`Screen::freeze`]).
    frozen: Option<Vec<String>>,
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
            extras: Extras::default(),
            size,
            scrollback_rows,
            backlog: Backlog::new(size, scrollback_rows),
            parsed_bytes: 0,
            parser_resets: 0,
            frozen: None,
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

    /// Takes a chunk of output; returns the bytes to write back to the process (answers to its
    /// queries), usually none.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<u8> {
        if self.frozen.is_some() {
            return Vec::new();
        }
        self.backlog.push(bytes);
        // A full backlog is compacted; one that cannot be is parsed.
        let full = self.backlog.bytes.len() >= MAX_BACKLOG_BYTES;
        if self.backlog.query || (full && !self.compact()) {
            self.flush();
        }
        std::mem::take(&mut self.parser.callbacks_mut().pending)
    }

    /// Bytes handed to the parser so far (fewer than fed, when floods were skipped).
    #[must_use]
    pub fn parsed_bytes(&self) -> u64 {
        self.parsed_bytes
    }

    fn parse(&mut self, bytes: &[u8]) {
        self.parsed_bytes += bytes.len() as u64;
        let parsed = catch_unwind(AssertUnwindSafe(|| {
            self.extras.process(bytes, &mut self.parser);
        }));
        if parsed.is_err() {
            // A parser bug must not take oino down: start over on a blank screen.
            self.parser = Self::parser(self.size, self.scrollback_rows);
            self.extras = Extras::default();
            self.parser_resets += 1;
        }
    }

    /// Keeps only the screen's text (no colors, no history) and lets the model go: an old
    /// finished call kept in a list then costs a few rows of text, not a grid of cells.
    pub fn freeze(&mut self) {
        if self.frozen.is_some() {
            return;
        }
        let text = self.snapshot(0).text();
        self.frozen = Some(text.lines().map(str::to_owned).collect());
        self.parser = Self::parser(TermSize::new(2, 2), 0);
        self.extras = Extras::default();
        self.backlog = Backlog::new(TermSize::new(2, 2), 0);
    }

    /// The output has ended: parses what waits and gives back the backlog's memory, so that a
    /// finished call kept in a list costs its screen and nothing more.
    pub fn settle(&mut self) {
        self.flush();
        let backlog = &mut self.backlog;
        backlog.bytes.shrink_to_fit();
        backlog.replay = Vec::new();
        backlog.replay_marks = Vec::new();
    }

    /// Parses the backlog, skipping what can only scroll out of sight. A character cut short at
    /// its end waits for the rest: the parser drops the text after a character it gets in two
    /// reads when another character starts within three bytes (vte 0.15).
    pub fn flush(&mut self) {
        if self.backlog.bytes.is_empty() {
            return;
        }
        self.compact();
        let backlog = std::mem::take(&mut self.backlog.bytes);
        let whole = if self.backlog.in_sequence() {
            backlog.len()
        } else {
            backlog.len() - unfinished_character(&backlog)
        };
        self.parse(&backlog[..whole]);
        let mut unfinished = [0; 3];
        let unfinished = &mut unfinished[..backlog.len() - whole];
        unfinished.copy_from_slice(&backlog[whole..]);
        self.backlog.bytes = backlog;
        self.backlog.clear();
        self.backlog.bytes.extend_from_slice(unfinished);
    }

    /// Drops from the backlog what can only scroll out of sight, keeping the sequences whose
    /// effect lasts; parses what must be parsed first. False when nothing could be dropped.
    fn compact(&mut self) -> bool {
        // A sequence still being read stays as it is, after whatever is compacted.
        let limit = self.backlog.skip_limit();
        let backlog = std::mem::take(&mut self.backlog.bytes);
        let parse_before = self.backlog.parse_before.min(limit);
        // Whether the rest may be skipped depends on the state this part leaves.
        self.parse(&backlog[..parse_before]);
        let rest = &backlog[parse_before..limit];
        let skippable = !self.backlog.scroll_region && !self.parser.screen().alternate_screen();
        let cut = skippable.then(|| self.skip_point(rest)).flatten();
        let lasting = cut.and_then(|cut| {
            lasting_sequences(
                &self.backlog.replay,
                &self.backlog.replay_marks,
                parse_before + cut,
            )
        });
        let compacted = match (cut, lasting) {
            (Some(cut), Some(mut kept)) => {
                // The skipped text left the cursor at a line's start.
                kept.push(b'\r');
                kept.extend_from_slice(&rest[cut..]);
                kept
            }
            _ => rest.to_vec(),
        };
        let dropped = compacted.len() < rest.len();
        let (decoder, sequence) = (self.backlog.decoder.clone(), self.backlog.sequence);
        self.backlog.restart();
        // Everything compacted ends in the ground state: scanning it again rebuilds the marks.
        self.backlog.push(&compacted);
        if !decoder.in_ground() {
            let start = self.backlog.bytes.len();
            self.backlog.bytes.extend_from_slice(&backlog[limit..]);
            self.backlog.decoder = decoder;
            self.backlog.sequence = Sequence {
                start: sequence.start.map(|_| start),
                ..sequence
            };
        }
        dropped
    }

    /// Where the text of `rest` stops mattering: after enough newlines to push every earlier
    /// row off the screen and out of the history, wherever the cursor was, and after a `\r\n`,
    /// where the column is known (0).
    fn skip_point(&self, rest: &[u8]) -> Option<usize> {
        let needed = 2 * usize::from(self.size.rows) + self.scrollback_rows + 1;
        rest.iter()
            .enumerate()
            .rev()
            .filter(|(_, byte)| **byte == b'\n')
            .skip(needed - 1)
            .find(|(index, _)| *index > 0 && rest[index - 1] == b'\r')
            .map(|(index, _)| index + 1)
    }

    /// Parses at once, skipping nothing: the reference the lazy path is tested against.
    #[cfg(test)]
    fn feed_eager(&mut self, bytes: &[u8]) {
        self.parse(bytes);
    }

    /// Resizes the model (the PTY is resized by its owner).
    pub fn resize(&mut self, size: TermSize) {
        let size = TermSize::new(size.cols, size.rows);
        if self.frozen.is_some() {
            self.size = size;
            return;
        }
        if size != self.size {
            // What was written before the resize was laid out at the old size.
            self.flush();
            self.size = size;
            self.backlog.set_size(size, self.scrollback_rows);
            self.parser
                .set_size(dimension(size.rows), dimension(size.cols));
        }
    }

    /// The screen as it is now, scrolled back by `scroll_offset` rows (clamped to the history).
    #[must_use]
    pub fn snapshot(&mut self, scroll_offset: usize) -> ScreenSnapshot {
        if let Some(lines) = &self.frozen {
            return ScreenSnapshot::from_lines(self.size, lines, 0);
        }
        self.flush();
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
        let application_cursor = screen.application_cursor();
        let bracketed_paste = screen.bracketed_paste();
        let mouse = MouseReporting::of(screen);
        self.parser.screen_mut().set_scrollback(0);
        ScreenSnapshot {
            size: self.size,
            rows: rows_cells,
            cursor,
            scroll_offset,
            scrollback_rows,
            alternate_screen,
            application_cursor,
            bracketed_paste,
            mouse,
        }
    }
}

/// How many bytes at the end of `bytes` are a UTF-8 character not yet complete (0 to 3).
fn unfinished_character(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let byte = bytes[bytes.len() - back];
        let needed = match byte {
            0x80..=0xbf => continue,
            0xc2..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xf4 => 4,
            _ => return 0,
        };
        return if back < needed { back } else { 0 };
    }
    0
}

fn snapshot_cell(cell: &vt100::Cell) -> Cell {
    let mut text = cell.contents().to_owned();
    let marks = extras::take_marks(&mut text);
    Cell {
        text,
        fg: cell.fgcolor().into(),
        bg: cell.bgcolor().into(),
        attrs: CellAttrs {
            bold: cell.bold(),
            dim: cell.dim(),
            italic: cell.italic(),
            underline: cell.underline(),
            inverse: cell.inverse(),
            blink: marks.blink,
            strikethrough: marks.strikethrough,
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
    fn text_laid_out_again_keeps_wide_characters_two_cells_wide() {
        let mut screen = Screen::new(TermSize::new(10, 2), 0);
        screen.feed("中文ab\r\ne\u{301}x".as_bytes());
        let live = screen.snapshot(0);
        screen.freeze();
        let frozen = screen.snapshot(0);
        assert_eq!(frozen.text(), live.text());
        assert_eq!(frozen.rows, live.rows);
        // What does not fit is left out whole.
        let narrow = ScreenSnapshot::from_lines(TermSize::new(5, 2), &["ab中文".into()], 0);
        assert_eq!(narrow.text(), "ab中\n\n");
    }

    #[test]
    fn lines_read_back_from_a_log_show_their_colors() {
        let lines = ["\x1b[0;1;31mred\x1b[0m \x1b[0;48;5;200m中\x1b[m plain".to_owned()];
        let page = ScreenSnapshot::from_lines(TermSize::new(12, 1), &lines, 3);
        assert_eq!(page.text(), "red 中 plain\n\n");
        let cells = &page.rows[0];
        assert_eq!(cells[0].fg, CellColor::Indexed(1));
        assert!(cells[2].attrs.bold);
        assert_eq!(
            cells[3],
            Cell {
                text: " ".into(),
                ..Cell::default()
            }
        );
        assert_eq!(cells[4].bg, CellColor::Indexed(200));
        assert!(cells[4].wide);
        assert_eq!(cells[6].bg, CellColor::Default);
        assert_eq!(page.scroll_offset, 3);
    }

    /// `stream` fed a byte a read draws what parsing it all at once draws.
    fn assert_bytewise_as_eager(stream: &[u8], size: TermSize) {
        let mut lazy = Screen::new(size, 30);
        for byte in stream {
            lazy.feed(&[*byte]);
        }
        let mut eager = Screen::new(size, 30);
        eager.feed_eager(stream);
        assert_eq!(lazy.snapshot(0), eager.snapshot(0), "{stream:?}");
    }

    /// Found by a long property run: a broken character before a dropped string control must not
    /// join the bytes after it.
    #[test]
    fn a_character_broken_before_a_dropped_string_stays_dropped() {
        assert_bytewise_as_eager(
            &[27, 93, 7, 206, 194, 27, 93, 26, 128, 7],
            TermSize::new(2, 2),
        );
    }

    /// Found by a long property run: in insert mode, a broken character is dropped as the
    /// parser drops it, however the reads fall.
    #[test]
    fn a_broken_character_in_insert_mode_is_dropped_as_the_parser_drops_it() {
        assert_bytewise_as_eager(
            &[27, 91, 52, 104, 27, 93, 7, 32, 13, 194, 27, 92],
            TermSize::new(2, 2),
        );
        // vt100 draws no U+FFFD, even one written as such: nor do the modes it lacks.
        for input in ["\u{fffd}x", "\x1b[4h\u{fffd}x", "\x1b[5m\u{fffd}x"] {
            let mut screen = Screen::new(TermSize::new(4, 2), 0);
            screen.feed(input.as_bytes());
            assert_eq!(screen.snapshot(0).text(), "x\n\n", "{input:?}");
        }
    }

    /// Found by a long property run: a scroll region set by a sequence with a control within
    /// still keeps a flood from being skipped.
    #[test]
    fn a_scroll_region_with_a_control_within_is_known() {
        let mut stream = b"\x1b[2\x00r\x1b[d".to_vec();
        for n in 0..1000 {
            stream.extend(format!("f{n}\r\n").bytes());
        }
        let mut lazy = Screen::new(TermSize::new(2, 3), 0);
        lazy.feed(&stream);
        let mut eager = Screen::new(TermSize::new(2, 3), 0);
        eager.feed_eager(&stream);
        assert_eq!(lazy.snapshot(0), eager.snapshot(0));
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

    /// Streams of many kinds, to compare the lazy screen with one that parses every byte.
    fn streams() -> Vec<(&'static str, Vec<u8>)> {
        let mut plain = Vec::new();
        let mut colored = Vec::new();
        let mut bare_newlines = Vec::new();
        let mut wrapped = Vec::new();
        let mut cumulative = b"\x1b[?25l\x1b[4h".to_vec();
        for n in 0..3000 {
            if n % 100 == 0 {
                cumulative.extend(b"\x1b[0;1m");
            }
            cumulative.extend(format!("\x1b[3{}m{n}\x1b[5C\x1b[K\r\n", n % 8).bytes());
        }
        for n in 0..3000 {
            plain.extend(format!("line {n}\r\n").bytes());
            colored.extend(
                format!(
                    "\x1b[3{}m{n}\x1b[0m \x1b[1mbold\x1b[22m progress {n}%\r\x1b[Kdone {n} ✓\r\n",
                    n % 8
                )
                .bytes(),
            );
            bare_newlines.extend(format!("bare {n}\n").bytes());
            wrapped.extend(format!("{}{n}\r\n", "w".repeat(n % 170)).bytes());
        }
        colored.extend(b"\x1b[44mstill blue at the end\x1b[?25l");
        // Enough to pass the backlog's bound with no one looking.
        let colored = colored.repeat(12);
        let mut alternate = plain.clone();
        alternate.extend(b"\x1b[?1049h\x1b[H\x1b[2Jfull screen");
        alternate.extend(plain.iter().take(50_000));
        alternate.extend(b"\x1b[?1049l");
        alternate.extend(plain.iter().take(20_000));
        let mut region = b"\x1b[1;10r".to_vec();
        region.extend(&plain);
        region.extend(b"\x1b[24;1Hstatus line");
        let mut saved = b"top\x1b7".to_vec();
        saved.extend(&plain);
        saved.extend(b"\x1b8restored");
        let mut strings = Vec::new();
        let mut repeats = Vec::new();
        for n in 0..3000 {
            strings.extend(
                format!(
                    "\x1b]0;title {n}\x07\x1b]8;;http://x/{n}\x1b\\link {n}\x1b]8;;\x1b\\ \
                     \x1bPq#0;2;0;0;0#0!9~\x1b\\sixel\x1b_apc\x18 \x1b]2;cut\x1b[3{}mcolor\r\n",
                    n % 8
                )
                .bytes(),
            );
            repeats.extend(format!("r{n}\x1b[3b\x1b[3\n1m\r\n").bytes());
            if n % 700 == 0 {
                repeats.extend(b"x\x1b[65535by\x1b[1000bz\r\n");
            }
        }
        strings.extend(b"\x1b]0;unterminated at the end");
        // What vt100 lacks: tab stops, line drawing, index moves, autowrap off, insert mode.
        let mut extras = b"\x1b[3g\x1b[1;5H\x1bH\x1b[1;13H\x1bH\x1b)0\r".to_vec();
        for n in 0..3000 {
            extras.extend(format!("\t{n}\x0elqk\x0f\x1bD\x1bE\tx\r\n").bytes());
            match n {
                500 => extras.extend(b"\x1b#8\x1b[9;1H"),
                1000 => extras.extend(b"\x1b[5;9m"),
                2500 => extras.extend(b"\x1b[25m"),
                1500 => extras.extend(format!("\x1b[?7l{}\r\n", "z".repeat(300)).bytes()),
                2000 => extras.extend(b"\x1b[4hab\rc\r\n\x1b[4l\x1b[?7h"),
                _ => {}
            }
        }
        vec![
            ("plain", plain),
            ("colored", colored),
            ("bare newlines", bare_newlines),
            ("wrapped", wrapped),
            ("cumulative colors and modes", cumulative),
            ("alternate screen", alternate),
            ("scroll region", region),
            ("saved cursor", saved),
            ("string controls", strings),
            ("repeats and controls within sequences", repeats),
            ("what vt100 lacks", extras),
        ]
    }

    fn assert_same(lazy: &mut Screen, eager: &mut Screen, offset: usize, context: &str) {
        let (lazy, eager) = (lazy.snapshot(offset), eager.snapshot(offset));
        assert!(
            lazy == eager,
            "{context}, {offset} rows back:\nlazy (cursor {:?}, {} back):\n{}\neager (cursor {:?}, {} back):\n{}",
            lazy.cursor,
            lazy.scrollback_rows,
            lazy.text(),
            eager.cursor,
            eager.scrollback_rows,
            eager.text()
        );
    }

    #[test]
    fn the_lazy_screen_equals_parsing_every_byte() {
        for (name, stream) in streams() {
            for (piece, look_every) in [
                (65_536, 1),
                (4096, 7),
                (997, 50),
                (13, 5000),
                (8192, usize::MAX),
            ] {
                let size = TermSize::new(40, 8);
                let mut lazy = Screen::new(size, 30);
                let mut eager = Screen::new(size, 30);
                for (index, chunk) in stream.chunks(piece).enumerate() {
                    lazy.feed(chunk);
                    eager.feed_eager(chunk);
                    if index % look_every == look_every - 1 {
                        assert_same(
                            &mut lazy,
                            &mut eager,
                            0,
                            &format!("{name}, {piece}-byte chunks"),
                        );
                    }
                }
                for offset in [0, 5, 30] {
                    assert_same(
                        &mut lazy,
                        &mut eager,
                        offset,
                        &format!("{name}, {piece}-byte chunks"),
                    );
                }
            }
        }
    }

    #[test]
    fn a_flood_is_mostly_skipped_and_a_full_screen_program_is_not() {
        let streams = streams();
        let parsed = |name: &str| {
            let (_, stream) = streams.iter().find(|(n, _)| *n == name).expect("stream");
            let mut screen = Screen::new(TermSize::new(40, 8), 30);
            for chunk in stream.chunks(65_536) {
                screen.feed(chunk);
            }
            screen.flush();
            (screen.parsed_bytes(), stream.len() as u64)
        };
        let (plain, plain_total) = parsed("plain");
        assert!(plain < plain_total / 10, "{plain} of {plain_total}");
        let (colored, colored_total) = parsed("colored");
        assert!(colored < colored_total / 2, "{colored} of {colored_total}");
        let (region, region_total) = parsed("scroll region");
        assert_eq!(region, region_total);
    }

    #[test]
    fn a_query_is_answered_even_deep_in_a_backlog() {
        let mut screen = Screen::new(TermSize::new(20, 5), 10);
        assert!(screen.feed(b"some output\r\n").is_empty());
        assert_eq!(screen.feed(b"x\x1b[6n"), b"\x1b[2;2R");
    }

    #[test]
    fn string_controls_are_dropped_and_bound_nothing() {
        let mut screen = Screen::new(TermSize::new(20, 3), 0);
        screen.feed(b"before\r\n\x1b]0;");
        let title = vec![b't'; 4 << 20];
        for chunk in title.chunks(65_536) {
            screen.feed(chunk);
        }
        assert!(
            screen.backlog.bytes.len() < 64,
            "{}",
            screen.backlog.bytes.len()
        );
        // A new sequence ends it, as on a terminal; the text after shows.
        screen.feed(b"\n\x1b[32mPASS\x1b[0m test_a\r\ndone");
        assert_eq!(screen.snapshot(0).text(), "before\nPASS test_a\ndone\n");
        assert!(screen.parsed_bytes() < 200, "{}", screen.parsed_bytes());
    }

    #[test]
    fn a_huge_repeat_costs_a_screenful_and_ends_in_the_same_column() {
        let size = TermSize::new(10, 3);
        let mut screen = Screen::new(size, 0);
        screen.feed(b"ab\x1b[65535b");
        // 5 rows of 10 (the screen, its history and two more), plus what keeps the column
        // (65535 - 50 = 1297 periods of 50, and 35).
        assert_eq!(screen.backlog.bytes, b"ab\x1b[85b");
        let mut eager = Screen::new(size, 0);
        eager.feed_eager(b"ab\x1b[65535b");
        assert_eq!(screen.snapshot(0), eager.snapshot(0));
        assert_eq!(
            screen.snapshot(0).cursor,
            Some(CursorPos { row: 2, col: 7 })
        );
    }

    #[test]
    fn a_repeat_with_a_control_within_or_an_intermediate_is_no_way_around_the_cut() {
        let size = TermSize::new(10, 3);
        let mut screen = Screen::new(size, 0);
        screen.feed(&b"x\x1b[65535\x00b".repeat(3));
        assert!(
            !screen
                .backlog
                .bytes
                .windows(5)
                .any(|window| window == b"65535")
        );
        // Its start flushed away, a repeat is still cut.
        let mut screen = Screen::new(size, 0);
        screen.feed(b"x\x1b[655");
        screen.flush();
        screen.feed(b"35b");
        assert!(
            !screen
                .backlog
                .bytes
                .windows(2)
                .any(|window| window == b"35")
        );
        let mut eager = Screen::new(size, 0);
        eager.feed_eager(b"x\x1b[65535b");
        assert_eq!(screen.snapshot(0), eager.snapshot(0));
        // With an intermediate, `b` is not a repeat: nothing is drawn.
        let mut screen = Screen::new(size, 0);
        screen.feed(b"x\x1b[65535 b");
        assert_eq!(screen.snapshot(0).text(), "x\n\n\n");
    }

    #[test]
    fn a_character_split_between_reads_loses_nothing_after_it() {
        // vte 0.15 drops the space after `®` when `®` comes in two reads and `é` follows.
        let mut screen = Screen::new(TermSize::new(20, 3), 0);
        screen.feed(b"a\xc2");
        assert_eq!(screen.snapshot(0).text(), "a\n\n\n");
        screen.feed("\u{ae} é".as_bytes().get(1..).expect("bytes"));
        assert_eq!(screen.snapshot(0).text(), "a® é\n\n\n");
    }

    #[test]
    fn a_character_cut_by_a_dropped_string_does_not_join_what_follows() {
        // The parser drops `\xc2` at the ESC; dropping the string must not make `\xc2\xa0`.
        for stream in [&b"a\xc2\x1b]0;t\x1a\xa0b"[..], b"a\xc2\x1b\\\xa0b"] {
            let size = TermSize::new(20, 3);
            let mut eager = Screen::new(size, 0);
            eager.feed_eager(stream);
            for chunk in [1, stream.len()] {
                let mut screen = Screen::new(size, 0);
                for part in stream.chunks(chunk) {
                    screen.feed(part);
                }
                assert_eq!(
                    screen.snapshot(0),
                    eager.snapshot(0),
                    "{stream:?} by {chunk}"
                );
            }
        }
    }

    #[test]
    fn a_frozen_screen_keeps_its_text() {
        let mut screen = Screen::new(TermSize::new(20, 3), 10);
        screen.feed(b"\x1b[31mred\x1b[0m\r\nsecond");
        screen.freeze();
        assert_eq!(screen.snapshot(0).text(), "red\nsecond\n\n");
        screen.resize(TermSize::new(4, 2));
        assert_eq!(screen.snapshot(0).text(), "red\nseco\n");
    }

    #[test]
    fn tiny_sizes_are_raised_to_two_by_two() {
        let mut screen = Screen::new(TermSize { cols: 0, rows: 0 }, 0);
        screen.feed(b"hello");
        assert_eq!(screen.size(), TermSize::new(2, 2));
        screen.resize(TermSize { cols: 1, rows: 1 });
        assert_eq!(screen.snapshot(0).rows.len(), 2);
    }

    /// Found by the property below at length: a private `CSI ? r` after a scroll region was
    /// taken for the region's reset, and a flood within the region was skipped.
    #[test]
    fn a_private_csi_r_keeps_the_scroll_region_for_a_skip() {
        let flood: Vec<u8> = (0..1000)
            .flat_map(|n| format!("flood line {n}\r\n").into_bytes())
            .collect();
        let stream = [&b"\x1b[3r\x1b[?r"[..], &flood, b"\x1b8", &flood].concat();
        let size = TermSize::new(6, 4);
        let mut lazy = Screen::new(size, 30);
        for chunk in stream.chunks(65_536) {
            lazy.feed(chunk);
        }
        let mut eager = Screen::new(size, 30);
        eager.feed_eager(&stream);
        assert_eq!(lazy.snapshot(0), eager.snapshot(0));
    }

    mod properties {
        use proptest::prelude::*;

        use super::super::*;
        use crate::screen::decode::hostile;

        /// Where two screens differ, in a few words.
        fn difference(lazy: &ScreenSnapshot, eager: &ScreenSnapshot) -> String {
            let cell =
                lazy.rows
                    .iter()
                    .zip(&eager.rows)
                    .enumerate()
                    .find_map(|(row, (lazy, eager))| {
                        let col = lazy.iter().zip(eager).position(|(a, b)| a != b)?;
                        Some(format!(
                            "cell {row},{col}: {:?} vs {:?}",
                            lazy[col], eager[col]
                        ))
                    });
            format!(
                "{}; cursor {:?} vs {:?}; modes {:?} vs {:?}; text\n{}vs\n{}",
                cell.unwrap_or_default(),
                lazy.cursor,
                eager.cursor,
                (
                    lazy.alternate_screen,
                    lazy.application_cursor,
                    lazy.bracketed_paste,
                    lazy.scrollback_rows
                ),
                (
                    eager.alternate_screen,
                    eager.application_cursor,
                    eager.bracketed_paste,
                    eager.scrollback_rows
                ),
                lazy.text(),
                eager.text()
            )
        }

        proptest! {
            #![proptest_config(hostile::config())]

            #[test]
            fn any_stream_is_drawn_as_parsing_every_byte_would_in_bounded_memory(
                stream in hostile::stream_of_characters(),
                sizes in hostile::chunk_sizes(),
                (cols, rows) in (2u16..120, 2u16..40),
                resized in proptest::option::of((2u16..120, 2u16..40)),
            ) {
                let size = TermSize::new(cols, rows);
                let mut lazy = Screen::new(size, 30);
                let chunks = hostile::chunked(&stream, &sizes);
                let half = chunks.len() / 2;
                for (index, chunk) in chunks.iter().enumerate() {
                    if index == half {
                        if let Some((cols, rows)) = resized {
                            lazy.resize(TermSize::new(cols, rows));
                        }
                    }
                    lazy.feed(chunk);
                    prop_assert!(lazy.backlog.bytes.len() <= MAX_BACKLOG_BYTES + chunk.len());
                }
                if let (true, Some((cols, rows))) = (chunks.is_empty(), resized) {
                    lazy.resize(TermSize::new(cols, rows));
                }
                // The reference parses every byte, in one read (two around a resize), never
                // splitting a character.
                let mut eager = Screen::new(size, 30);
                let (before, after) = stream.split_at(chunks[..half].iter().map(|chunk| chunk.len()).sum());
                let before_whole = before.len() - unfinished_character(before);
                eager.feed_eager(&before[..before_whole]);
                if let Some((cols, rows)) = resized {
                    eager.resize(TermSize::new(cols, rows));
                }
                eager.feed_eager(&[&before[before_whole..], after].concat());
                for offset in [0, 7] {
                    let (lazy, eager) = (lazy.snapshot(offset), eager.snapshot(offset));
                    prop_assert!(lazy == eager, "{offset} back: {}", difference(&lazy, &eager));
                }
                prop_assert_eq!((lazy.parser_resets, eager.parser_resets), (0, 0));
            }

            /// With raw invalid bytes in the text too (where the parser itself draws differently
            /// depending on how the bytes are split into reads), nothing panics and memory stays
            /// bounded.
            #[test]
            fn any_bytes_at_all_are_taken_in_bounded_memory(
                stream in hostile::stream(),
                sizes in hostile::chunk_sizes(),
                (cols, rows) in (2u16..120, 2u16..40),
            ) {
                let mut screen = Screen::new(TermSize::new(cols, rows), 30);
                for chunk in hostile::chunked(&stream, &sizes) {
                    screen.feed(chunk);
                    prop_assert!(screen.backlog.bytes.len() <= MAX_BACKLOG_BYTES + chunk.len());
                }
                let snapshot = screen.snapshot(0);
                prop_assert_eq!(snapshot.rows.len(), usize::from(rows));
                prop_assert_eq!(screen.parser_resets, 0);
            }
        }

        proptest! {
            // Each case parses a flood of up to 20,000 lines twice: fewer of them.
            #![proptest_config(ProptestConfig {
                cases: hostile::config().cases.div_ceil(4),
                ..hostile::config()
            })]

            /// Floods long enough to be skipped, between hostile sequences: what the lazy
            /// screen keeps over a skip still draws what parsing every byte draws.
            #[test]
            fn floods_between_hostile_sequences_are_skipped_without_a_trace(
                pieces in proptest::collection::vec(hostile::stream_of_characters(), 1..4),
                flood_lines in 1000usize..20_000,
                (cols, rows) in (2u16..120, 2u16..40),
            ) {
                let flood: Vec<u8> = (0..flood_lines)
                    .flat_map(|n| format!("flood line {n}\r\n").into_bytes())
                    .collect();
                let stream: Vec<u8> = pieces
                    .iter()
                    .flat_map(|piece| [piece.as_slice(), &flood].concat())
                    .collect();
                let size = TermSize::new(cols, rows);
                let mut lazy = Screen::new(size, 30);
                for chunk in stream.chunks(65_536) {
                    lazy.feed(chunk);
                }
                let mut eager = Screen::new(size, 30);
                eager.feed_eager(&stream);
                for offset in [0, 7] {
                    let (lazy, eager) = (lazy.snapshot(offset), eager.snapshot(offset));
                    prop_assert!(lazy == eager, "{offset} back: {}", difference(&lazy, &eager));
                }
            }
        }
    }
}
