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

pub(crate) mod decode;
mod extras;
mod snapshot;
mod style;
mod view;

pub use snapshot::{
    Cell, CellAttrs, CellColor, CursorPos, MouseEncoding, MouseEvents, MouseReporting,
    ScreenSnapshot,
};
pub(crate) use style::Style;
pub(crate) use view::ScreenView;

use std::num::NonZeroU16;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::pty::TermSize;
use decode::{Csi, Decoder, Step};
use extras::Extras;

/// Rows of history kept in memory per call: none, since the log file keeps everything and
/// front ends scroll through it (a history row costs a cell per column, 200 columns of them).
pub(crate) const DEFAULT_SCROLLBACK_ROWS: usize = 0;
/// Raw bytes kept unparsed at most: twenty calls flooding at once hold this much each.
const MAX_BACKLOG_BYTES: usize = 64 * 1024;
/// Capacity a backlog keeps after a flush; more is given back.
const KEPT_BACKLOG_CAPACITY: usize = 16 * 1024;
/// The parser's size until it has something to read: its grid is allocated on first use.
const STAND_IN: TermSize = TermSize { cols: 2, rows: 2 };

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
            // Secondary device attributes, as tmux answers them.
            (Some(b'>'), 'c', None | Some(0)) => self.pending.extend_from_slice(b"\x1b[>84;0;0c"),
            // XTVERSION: the terminal's name and version.
            (Some(b'>'), 'q', None | Some(0)) => self.pending.extend_from_slice(
                format!("\x1bP>|oino {}\x1b\\", env!("CARGO_PKG_VERSION")).as_bytes(),
            ),
            // The text area's size, in characters.
            (None, 't', Some(18)) => {
                let (rows, cols) = screen.size();
                self.pending
                    .extend_from_slice(format!("\x1b[8;{rows};{cols}t").as_bytes());
            }
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
    /// The payload of the OSC being dropped, read for palette colours (`None`: not an OSC,
    /// or longer than any palette change).
    osc: Option<Vec<u8>>,
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
            osc: None,
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
            self.dropped_string_byte(byte);
            return;
        }
        if self.decoder.in_string() {
            self.drop_string();
            self.osc = (byte == b']').then(Vec::new);
            return;
        }
        if byte == 0x1b {
            self.cut_short_by_escape();
            return;
        }
        self.bytes.push(byte);
        self.sequence.controls |= controls;
        if !self.in_sequence() {
            self.end_sequence(byte, csi);
        }
    }

    /// A byte of a string being dropped, read by the decoder already: kept only when it
    /// starts the sequence after the string.
    fn dropped_string_byte(&mut self, byte: u8) {
        if self.decoder.in_string() {
            if let Some(payload) = &mut self.osc {
                payload.push(byte);
                if payload.len() > extras::palette::MAX_PAYLOAD {
                    self.osc = None;
                }
            }
            return;
        }
        // An OSC that ended (not cancelled) may change the palette: its colours are passed on
        // as sequences the parser ignores and the extras read, with a lasting effect.
        let payload = self.osc.take().filter(|_| matches!(byte, 0x07 | 0x1b));
        if let Some(colours) = payload.as_deref().and_then(extras::palette::sequences) {
            self.bytes.extend_from_slice(colours.as_bytes());
            self.parse_until(self.bytes.len());
        }
        self.sequence = Sequence::default();
        if byte == 0x1b {
            // The string ended with the start of a new sequence.
            self.bytes.push(byte);
            self.sequence = Sequence::at(self.bytes.len() - 1);
        }
    }

    /// A string control starts: what it holds is dropped. What the backlog kept of its start
    /// (its ESC, a DCS's parameters) goes too; when the parser has read some of it already
    /// (before a flush) or controls were carried out after the ESC, a CAN, carried out as
    /// nothing, ends it instead, leaving the parser in the ground state as the string's end
    /// would.
    fn drop_string(&mut self) {
        match self.sequence.start {
            Some(start) if !self.sequence.controls => self.drop_sequence(start),
            _ => self.bytes.push(0x18),
        }
        self.sequence = Sequence {
            dropping: true,
            ..Sequence::default()
        };
    }

    /// A new sequence cuts the one being read short. A CAN ends that one for the parser (as the
    /// ESC would), so that what comes before can be parsed apart from the new one.
    fn cut_short_by_escape(&mut self) {
        self.bytes.push(0x18);
        self.parse_until(self.bytes.len());
        self.bytes.push(0x1b);
        self.sequence = Sequence::at(self.bytes.len() - 1);
    }

    /// The sequence being read is complete, `byte` its last: kept for replay, cut, dropped or
    /// parsed.
    fn end_sequence(&mut self, byte: u8, csi: Option<Csi>) {
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
                // The ST that ended a dropped string: nothing to the parser, but it ends what
                // REP may repeat, as the string would have. It stays among the text, whose rows
                // a skip may drop with it.
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
    /// parser's work bounded. Controls carried out within it still are, within it (after its
    /// `CSI`, as they came: a control before it would end what REP repeats, one within does not).
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
        let sequence = self.bytes.len();
        self.bytes.extend_from_slice(b"\x1b[");
        self.bytes.extend_from_slice(&carried_out);
        self.bytes
            .extend_from_slice(format!("{repeat}b").as_bytes());
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
            b'n' | b'c' | b't' => {
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
            // Palette colours (see `extras::palette`) outlast the rows.
            b'z' if csi.private => self.parse_until(end),
            // XTVERSION asks.
            b'q' if csi.private => {
                self.query = true;
                self.parse_until(end);
            }
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
    /// A 2x2 stand-in until it is `parsing`: a call nobody looks at, whose output compacts
    /// (text that scrolls), costs its backlog and never a grid of cells.
    parser: vt100::Parser<Answers>,
    parsing: bool,
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
    /// A blank screen of `size` (clamped between 2x2 and 1000x500) that keeps `scrollback_rows`
    /// rows of history.
    #[must_use]
    pub fn new(size: TermSize, scrollback_rows: usize) -> Self {
        let size = TermSize::new(size.cols, size.rows);
        Self {
            parser: Self::parser(STAND_IN, 0),
            parsing: false,
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

    /// Its size now.
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

    /// Whether the parser holds a grid at the screen's size (see [`Screen::parser`]).
    #[cfg(test)]
    pub(crate) fn parsing(&self) -> bool {
        self.parsing
    }

    /// Bytes waiting to be parsed.
    #[cfg(test)]
    pub(crate) fn backlog_bytes(&self) -> usize {
        self.backlog.bytes.len()
    }

    /// Bytes handed to the parser so far (fewer than fed, when floods were skipped).
    #[cfg(test)]
    pub(crate) fn parsed_bytes(&self) -> u64 {
        self.parsed_bytes
    }

    /// The parser at the screen's size, from the first byte it reads or the first look.
    fn start_parsing(&mut self) {
        if !self.parsing {
            self.parser = Self::parser(self.size, self.scrollback_rows);
            self.parsing = true;
        }
    }

    fn parse(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.start_parsing();
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
    pub(crate) fn freeze(&mut self) {
        if self.frozen.is_some() {
            return;
        }
        let text = self.snapshot(0).text();
        self.frozen = Some(text.lines().map(str::to_owned).collect());
        self.parser = Self::parser(STAND_IN, 0);
        self.parsing = false;
        self.extras = Extras::default();
        self.backlog = Backlog::new(STAND_IN, 0);
    }

    /// The output has ended: gives back the backlog's spare memory, so that a finished call
    /// kept in a list costs its screen and nothing more. A screen nobody looked at stays
    /// unparsed, as the few rows of output that draw it (after a compaction).
    pub(crate) fn settle(&mut self) {
        if self.parsing {
            self.flush();
        } else {
            self.compact();
        }
        let backlog = &mut self.backlog;
        backlog.bytes.shrink_to_fit();
        backlog.replay.shrink_to_fit();
        backlog.replay_marks.shrink_to_fit();
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
            if self.parsing {
                self.parser
                    .set_size(dimension(size.rows), dimension(size.cols));
            }
            self.extras.resized();
        }
    }

    /// The screen as it is now, scrolled back by `scroll_offset` rows (clamped to the history).
    #[must_use]
    pub fn snapshot(&mut self, scroll_offset: usize) -> ScreenSnapshot {
        if let Some(lines) = &self.frozen {
            return ScreenSnapshot::from_lines(self.size, lines, 0);
        }
        self.flush();
        self.start_parsing();
        let screen = self.parser.screen_mut();
        screen.set_scrollback(scroll_offset);
        let scroll_offset = screen.scrollback();
        // vt100 reports the history length only through a clamped offset.
        screen.set_scrollback(usize::MAX);
        let scrollback_rows = screen.scrollback();
        screen.set_scrollback(scroll_offset);

        let screen = self.parser.screen();
        let (rows, cols) = screen.size();
        let palette = self.extras.palette();
        let rows_cells = (0..rows.get())
            .map(|row| {
                (0..cols.get())
                    .map(|col| {
                        let mut cell = screen.cell(row, col).map(snapshot_cell).unwrap_or_default();
                        if !palette.is_empty() {
                            cell.fg = palette.shown(cell.fg);
                            cell.bg = palette.shown(cell.bg);
                        }
                        cell
                    })
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
            hidden: marks.hidden,
            overline: marks.overline,
        },
        wide: cell.is_wide(),
    }
}

#[cfg(test)]
mod tests;
