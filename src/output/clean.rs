//! Clean text: what a person would have seen, without the escape sequences.
//!
//! Raw bytes go through the [`Decoder`]; what it prints lands on a model of the terminal's
//! current row, as wide as the call's terminal: carriage returns, backspaces, cursor moves along
//! the row and erases act on it as a terminal would, so progress bars resolve to their last
//! state. A row that fills up wraps: it is final (nothing but an absolute cursor move can reach
//! it again) and goes to the text, and the logical line goes on. So the memory of a cleaner is one
//! row, and the text never holds more than a terminal of that width would show, however the
//! bytes are crafted (`ESC[65535C` moves to the last column, as it does on a screen).

use crate::screen::decode::{Csi, Decoder, Escape, Step, dec_graphics};
use crate::screen::{CellColor, Style};

/// The narrowest row modelled (a terminal below 2 columns is raised to 2).
const MIN_WIDTH: usize = 2;

/// Turns raw terminal bytes into the text a person would have seen, line by line.
#[derive(Clone, Debug)]
pub struct TextCleaner {
    decoder: Decoder,
    row: Row,
}

/// The row being written, and where the cursor is on it.
#[derive(Clone, Debug)]
struct Row {
    cells: Vec<char>,
    /// 0 to `width`; `width` means the last column was just written and the next character
    /// wraps (the terminal's pending wrap).
    column: usize,
    width: usize,
    /// Whether G0 and G1 hold DEC line drawing, and SO chose G1: the text shows the lines.
    graphics: [bool; 2],
    shifted: bool,
    /// Kept only by a cleaner that keeps colors.
    colors: Option<Colors>,
}

/// What a cleaner that keeps colors knows besides the characters.
#[derive(Clone, Debug)]
struct Colors {
    /// The pen of each cell of the row.
    pens: Vec<Style>,
    /// The pen the next character is drawn with.
    pen: Style,
    /// The pen the text written so far leaves set.
    written: Style,
    /// The background an erase painted from the row's text to its end.
    tail: CellColor,
}

impl TextCleaner {
    /// A cleaner for a terminal `width` columns wide.
    #[must_use]
    pub fn new(width: u16) -> Self {
        let width = usize::from(width).max(MIN_WIDTH);
        Self {
            decoder: Decoder::new(),
            row: Row {
                cells: Vec::with_capacity(width.min(256)),
                column: 0,
                width,
                graphics: [false; 2],
                shifted: false,
                colors: None,
            },
        }
    }

    /// A cleaner that keeps colors and attributes: its text carries SGR sequences (each line
    /// sets what it needs and resets at its end), starting with `pen` set.
    #[must_use]
    pub(crate) fn with_colors(width: u16, pen: Style) -> Self {
        let mut cleaner = Self::new(width);
        cleaner.row.colors = Some(Colors {
            pens: Vec::new(),
            pen,
            written: Style::default(),
            tail: CellColor::Default,
        });
        cleaner
    }

    /// The terminal was resized: rows from now on are this wide.
    pub(crate) fn set_width(&mut self, width: u16) {
        let width = usize::from(width).max(MIN_WIDTH);
        self.row.width = width;
        self.row.column = self.row.column.min(width);
    }

    /// Cleans `bytes`, appending to `out` every row that became final (a line with its `\n`, or
    /// the first rows of a line that wrapped).
    pub fn push(&mut self, bytes: &[u8], out: &mut String) {
        let Self { decoder, row } = self;
        let mut index = 0;
        while index < bytes.len() {
            if decoder.at_boundary() && !row.line_drawing() {
                let run = leading_run(&bytes[index..], |byte| (0x20..0x7f).contains(&byte));
                let plain = &bytes[index..index + run];
                if row.column == 0 && row.cells.is_empty() {
                    // Fastest path: a whole plain line goes straight to the text (however it
                    // wraps, nothing in it is written over).
                    let after = &bytes[index + run..];
                    let ending = if after.starts_with(b"\r\n") {
                        2
                    } else {
                        usize::from(after.first() == Some(&b'\n'))
                    };
                    // Printable ASCII is UTF-8 as it stands.
                    if let (true, Ok(line)) = (ending > 0, std::str::from_utf8(plain)) {
                        row.write_pen(out);
                        out.push_str(line);
                        row.end_line(out);
                        index += run + ending;
                        continue;
                    }
                }
                if run > 0 && row.column == row.cells.len() {
                    row.append(plain, out);
                    index += run;
                    continue;
                }
            }
            decoder.advance(bytes[index], &mut |step| row.apply(step, out));
            index += 1;
        }
    }

    /// The row being written, as it stands (the unfinished end of the last line).
    pub(crate) fn pending_line(&self) -> impl Iterator<Item = char> + '_ {
        self.row.cells.iter().copied()
    }

    /// Ends the text: a half-read character becomes U+FFFD, and the unfinished row goes to `out`
    /// without a newline.
    pub(crate) fn finish(&mut self, out: &mut String) {
        let Self { decoder, row } = self;
        decoder.finish(&mut |step| row.apply(step, out));
        row.flush(out);
        row.reset_pen(out);
        row.column = 0;
    }
}

/// How many of the first bytes of `bytes` `is_plain` accepts. Whole blocks are tested without
/// a branch per byte (the compiler makes vector instructions of it): output is mostly long runs
/// of plain text, read back at hundreds of megabytes a second.
pub(crate) fn leading_run(bytes: &[u8], is_plain: impl Fn(u8) -> bool) -> usize {
    const BLOCK: usize = 32;
    let mut run = 0;
    for block in bytes.chunks_exact(BLOCK) {
        if !block.iter().fold(true, |all, &byte| all & is_plain(byte)) {
            break;
        }
        run += BLOCK;
    }
    run + bytes[run..]
        .iter()
        .position(|&byte| !is_plain(byte))
        .unwrap_or(bytes.len() - run)
}

impl Row {
    fn apply(&mut self, step: Step, out: &mut String) {
        if let Some(colors) = &mut self.colors {
            colors.pen.follow(&step);
        }
        match step {
            // C1 controls in their UTF-8 form are dropped, as their 8-bit bytes are: some
            // terminals carry U+009B out as CSI.
            Step::Print('\u{80}'..='\u{9f}') => {}
            Step::Print(character) if self.line_drawing() => {
                self.put(dec_graphics(character), out);
            }
            Step::Print(character) => self.put(character, out),
            Step::Execute(shift @ (0x0e | 0x0f)) => self.shifted = shift == 0x0e,
            Step::Escape(Escape {
                intermediate: Some(designate @ (b'(' | b')')),
                action,
            }) => self.graphics[usize::from(designate == b')')] = action == b'0',
            Step::Escape(Escape {
                intermediate: None,
                action: b'c',
            }) => (self.graphics, self.shifted) = ([false; 2], false),
            Step::Execute(b'\n') => {
                self.flush(out);
                self.end_line(out);
            }
            Step::Execute(b'\r') => self.column = 0,
            Step::Execute(0x08) => self.column = self.cursor().saturating_sub(1),
            // A tab stays a tab in the text; it takes one column here.
            Step::Execute(b'\t') => self.put('\t', out),
            Step::Csi(csi) if !csi.private && !csi.intermediate => self.csi(&csi),
            Step::Execute(_) | Step::Csi(_) | Step::Escape(_) => {}
        }
    }

    /// Whether characters are drawn from DEC line drawing.
    fn line_drawing(&self) -> bool {
        self.graphics[usize::from(self.shifted)]
    }

    /// The column the cursor shows at (a pending wrap shows on the last column).
    fn cursor(&self) -> usize {
        self.column.min(self.width - 1)
    }

    /// Writes the row's cells to `out` (with the SGR sequences their pens need) and empties it.
    fn flush(&mut self, out: &mut String) {
        let Some(colors) = &mut self.colors else {
            out.extend(self.cells.drain(..));
            return;
        };
        for (&character, &pen) in self.cells.iter().zip(&colors.pens) {
            if pen != colors.written {
                pen.write_sgr(out);
                colors.written = pen;
            }
            out.push(character);
        }
        self.cells.clear();
        colors.pens.clear();
    }

    /// Sets the pen for text written straight to `out`.
    fn write_pen(&mut self, out: &mut String) {
        if let Some(colors) = &mut self.colors {
            if colors.pen != colors.written {
                colors.pen.write_sgr(out);
                colors.written = colors.pen;
            }
        }
    }

    /// Leaves the text with the plain pen set, so that each line stands alone.
    fn reset_pen(&mut self, out: &mut String) {
        if let Some(colors) = &mut self.colors {
            if !colors.written.is_plain() {
                out.push_str("\x1b[m");
                colors.written = Style::default();
            }
        }
    }

    /// Ends the line (its row written already). A background an erase painted to the row's
    /// end is written as that erase.
    fn end_line(&mut self, out: &mut String) {
        if let Some(colors) = &mut self.colors {
            let tail = std::mem::take(&mut colors.tail);
            if tail != CellColor::Default {
                let blank = Style {
                    bg: tail,
                    ..Style::default()
                };
                blank.write_sgr(out);
                colors.written = blank;
                out.push_str("\x1b[K");
            }
        }
        self.reset_pen(out);
        out.push('\n');
        self.column = 0;
    }

    /// Starts the next row of the same line when the cursor is past the last column.
    fn wrap(&mut self, out: &mut String) {
        if self.column >= self.width {
            self.resize(self.width.max(self.cells.len()));
            self.flush(out);
            self.column = 0;
            if let Some(colors) = &mut self.colors {
                colors.tail = CellColor::Default;
            }
        }
    }

    /// The row made `len` cells long: blanks added, or the end cut off.
    fn resize(&mut self, len: usize) {
        self.cells.resize(len, ' ');
        if let Some(colors) = &mut self.colors {
            colors.pens.resize(len, Style::default());
        }
    }

    /// Cells `range` made blank.
    fn blank(&mut self, range: std::ops::Range<usize>) {
        self.cells[range.clone()].fill(' ');
        if let Some(colors) = &mut self.colors {
            colors.pens[range].fill(Style::default());
        }
    }

    fn put(&mut self, character: char, out: &mut String) {
        self.wrap(out);
        if self.column >= self.cells.len() {
            self.resize(self.column + 1);
        }
        self.cells[self.column] = character;
        if let Some(colors) = &mut self.colors {
            colors.pens[self.column] = colors.pen;
        }
        self.column += 1;
    }

    /// Printable ASCII written at the row's end.
    fn append(&mut self, mut plain: &[u8], out: &mut String) {
        while !plain.is_empty() {
            self.wrap(out);
            let fits = plain.len().min(self.width - self.column);
            self.cells
                .extend(plain[..fits].iter().map(|byte| char::from(*byte)));
            if let Some(colors) = &mut self.colors {
                colors.pens.resize(self.cells.len(), colors.pen);
            }
            self.column += fits;
            plain = &plain[fits..];
        }
    }

    fn csi(&mut self, csi: &Csi) {
        let count = usize::from(csi.count(1));
        let cursor = self.cursor();
        let len = self.cells.len();
        match csi.action {
            // Erase in line: what progress bars use after `\r`.
            b'K' => {
                let mode = csi.params().first().copied().unwrap_or(0);
                match mode {
                    0 => self.resize(cursor.min(len)),
                    1 => self.blank(0..(cursor + 1).min(len)),
                    2 => self.resize(0),
                    _ => return,
                }
                if let (Some(colors), 0 | 2) = (&mut self.colors, mode) {
                    colors.tail = colors.pen.bg;
                }
                self.column = cursor;
            }
            // Cursor to a column, forward, back: along this row only.
            b'G' | b'`' => self.column = count.min(self.width) - 1,
            b'C' | b'a' => self.column = (cursor + count).min(self.width - 1),
            b'D' => self.column = cursor.saturating_sub(count),
            // Erase, delete and insert characters.
            b'X' => {
                self.blank(cursor.min(len)..(cursor + count).min(len));
                self.column = cursor;
            }
            b'P' => {
                let range = cursor.min(len)..(cursor + count).min(len);
                self.cells.drain(range.clone());
                if let Some(colors) = &mut self.colors {
                    colors.pens.drain(range);
                }
                self.column = cursor;
            }
            b'@' => {
                if cursor < len {
                    let blanks = count.min(self.width - cursor);
                    self.cells
                        .splice(cursor..cursor, std::iter::repeat_n(' ', blanks));
                    self.cells.truncate(self.width);
                    if let Some(colors) = &mut self.colors {
                        let plain = std::iter::repeat_n(Style::default(), blanks);
                        colors.pens.splice(cursor..cursor, plain);
                        colors.pens.truncate(self.width);
                    }
                }
                self.column = cursor;
            }
            _ => {}
        }
    }
}

/// Cleans a whole byte string at once, for a terminal `width` columns wide.
#[must_use]
pub fn clean_text(bytes: &[u8], width: u16) -> String {
    let mut cleaner = TextCleaner::new(width);
    let mut text = String::with_capacity(bytes.len());
    cleaner.push(bytes, &mut text);
    cleaner.finish(&mut text);
    text
}

/// Text that should be clean already (a reply's, which may come from a server on another machine)
/// made sure of: one control character in it (anything but a line feed) means it was not, and it
/// goes through the cleaner as raw bytes would, so that it is inert on a terminal. Clean text
/// passes as it is, after one look at its bytes.
#[must_use]
pub fn made_clean(text: String) -> String {
    // C0 and DEL are one byte each in UTF-8; a C1 control (U+0080-U+009F) is 0xC2 0x80-0x9F.
    let mut after_c2 = false;
    let clean = text.bytes().all(|byte| {
        let control = (byte < 0x20 && byte != b'\n') || byte == 0x7f || (after_c2 && byte < 0xa0);
        after_c2 = byte == 0xc2;
        !control
    });
    if clean {
        return text;
    }
    clean_text(text.as_bytes(), u16::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::Style;
    use pretty_assertions::assert_eq;

    fn clean_in_pieces(bytes: &[u8], piece: usize, width: u16) -> String {
        let mut cleaner = TextCleaner::new(width);
        let mut text = String::new();
        for chunk in bytes.chunks(piece) {
            cleaner.push(chunk, &mut text);
        }
        cleaner.finish(&mut text);
        text
    }

    #[test]
    fn colors_and_titles_are_removed() {
        let raw = b"\x1b[1;32mok\x1b[0m \x1b]0;title\x07done\x1b]52;c;aGk=\x1b\\!\r\n";
        assert_eq!(clean_text(raw, 80), "ok done!\n");
    }

    #[test]
    fn c1_controls_are_dropped_in_their_utf8_form_as_in_their_8_bit_one() {
        let raw = "a\u{9b}31mb\u{85}c\u{9d}0;t\u{9c}d \u{a0}é\r\n".as_bytes();
        assert_eq!(clean_text(raw, 80), "a31mbc0;td \u{a0}é\n");
        assert_eq!(clean_in_pieces(raw, 1, 80), "a31mbc0;td \u{a0}é\n");
        assert_eq!(clean_text(b"a\x9b31mb\r\n", 80), "a\u{fffd}31mb\n");
    }

    #[test]
    fn carriage_return_progress_resolves_to_its_last_state() {
        let raw = b"progress 10%\rprogress 50%\rprogress 100%\r\ndone\r\n";
        assert_eq!(clean_text(raw, 80), "progress 100%\ndone\n");
        let erased = b"downloading a long name\r\x1b[Kdone\r\n";
        assert_eq!(clean_text(erased, 80), "done\n");
        let spinner = b"working |\x08/\x08-\x08\\\x08 ok\r\n";
        assert_eq!(clean_text(spinner, 80), "working  ok\n");
    }

    #[test]
    fn invalid_utf8_is_replaced_and_valid_utf8_survives_any_split() {
        let raw = "héllo wörld ✓ 🦀\r\n".as_bytes();
        for piece in 1..8 {
            assert_eq!(clean_in_pieces(raw, piece, 80), "héllo wörld ✓ 🦀\n");
        }
        assert_eq!(clean_text(b"a\xffb\xe2\x9c\n", 80), "a\u{fffd}b\u{fffd}\n");
    }

    #[test]
    fn escape_sequences_split_across_chunks_are_removed() {
        let raw = b"\x1b[38;2;10;20;30mrgb\x1b[0m\r\n\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\r\n";
        for piece in 1..6 {
            assert_eq!(clean_in_pieces(raw, piece, 80), "rgb\nlink\n");
        }
    }

    #[test]
    fn an_unterminated_string_control_ends_at_the_next_escape() {
        let raw = b"\x1b]0;t\n\x1b[32mPASS\x1b[0m test_a\ndone\n";
        assert_eq!(clean_text(raw, 80), "PASS test_a\ndone\n");
        let dcs = b"\x1bPq\n\x1b[32mPASS\x1b[0m\ndone\n";
        assert_eq!(clean_text(dcs, 80), "PASS\ndone\n");
        let apc = b"\x1b_x\n\x1b[0mok\n";
        assert_eq!(clean_text(apc, 80), "ok\n");
    }

    #[test]
    fn cursor_motion_stays_within_the_row() {
        // A terminal stops the cursor at the last column: 1500 jumps write one row.
        let crafted = "\x1b[65535Cx".repeat(1500) + "\n";
        let text = clean_text(crafted.as_bytes(), 80);
        assert_eq!(text, format!("{}x\n", " ".repeat(79)));
        let moved = clean_text(b"abcdef\x1b[3Gx\x1b[2Dy\x1b[1Cz\n", 80);
        assert_eq!(moved, "ayxzef\n");
    }

    #[test]
    fn a_long_line_wraps_and_only_its_last_row_is_rewritten() {
        // As on a 10-column terminal: `\r` goes back to the start of the row it is on.
        let text = clean_text(b"0123456789abcdef\rXY\n", 10);
        assert_eq!(text, "0123456789XYcdef\n");
        // Exactly full: the wrap is pending, and `\r` stays on that row.
        assert_eq!(clean_text(b"0123456789\rXY\r\n", 10), "XY23456789\n");
        let long = "x".repeat(1000) + "\r\n";
        assert_eq!(clean_text(long.as_bytes(), 10), "x".repeat(1000) + "\n");
    }

    #[test]
    fn erases_and_edits_act_on_the_row() {
        assert_eq!(clean_text(b"abcdef\x1b[3G\x1b[1K\n", 80), "   def\n");
        assert_eq!(clean_text(b"abcdef\x1b[3G\x1b[2X\n", 80), "ab  ef\n");
        assert_eq!(clean_text(b"abcdef\x1b[3G\x1b[2P\n", 80), "abef\n");
        assert_eq!(clean_text(b"abcdef\x1b[3G\x1b[2@\n", 80), "ab  cdef\n");
        let inserted = clean_text(b"abcdef\x1b[3G\x1b[65535@\n", 10);
        assert_eq!(inserted, format!("ab{}\n", " ".repeat(8)));
    }

    fn colored(bytes: &[u8], width: u16) -> String {
        let mut cleaner = TextCleaner::with_colors(width, Style::default());
        let mut text = String::new();
        cleaner.push(bytes, &mut text);
        cleaner.finish(&mut text);
        text
    }

    #[test]
    fn a_cleaner_that_keeps_colors_gives_each_line_the_sgr_it_needs() {
        let raw = b"\x1b[1;32mok\x1b[0m plain \x1b[41mred\r\nstill red\x1b[m\r\nplain\r\n";
        assert_eq!(
            colored(raw, 80),
            "\x1b[0;1;32mok\x1b[0m plain \x1b[0;41mred\x1b[m\n\
             \x1b[0;41mstill red\x1b[m\nplain\n"
        );
        // Written over, each cell keeps the pen it was drawn with; erased cells have none.
        let over = b"\x1b[34mabcdef\r\x1b[0mXY\x1b[3G\x1b[1X\n";
        assert_eq!(colored(over, 80), "XY \x1b[0;34mdef\x1b[m\n");
        // A wrapped line keeps its pen across the wrap, and titles leave no trace.
        let wrapped = b"\x1b]0;t\x07\x1b[33m0123456789ab\x1b[m\n";
        assert_eq!(colored(wrapped, 10), "\x1b[0;33m0123456789ab\x1b[m\n");
        // RIS resets the pen; the start pen is where the reader began.
        let start = Style {
            fg: crate::screen::CellColor::Indexed(5),
            ..Style::default()
        };
        let mut cleaner = TextCleaner::with_colors(80, start);
        let mut text = String::new();
        cleaner.push(b"a\n\x1bcb\n", &mut text);
        assert_eq!(text, "\x1b[0;35ma\x1b[m\nb\n");
    }

    mod properties {
        use proptest::prelude::*;

        use super::super::*;
        use crate::screen::Style;
        use crate::screen::decode::hostile;

        proptest! {
            #![proptest_config(hostile::config())]

            #[test]
            fn a_leading_run_is_counted_as_byte_by_byte(
                plain in proptest::collection::vec(0x20u8..0x7f, 0..200),
                stop in any::<u8>(),
                rest in proptest::collection::vec(any::<u8>(), 0..40),
            ) {
                let bytes = [plain.as_slice(), &[stop], &rest].concat();
                for accepts in [
                    |byte: u8| (0x20..0x7f).contains(&byte),
                    |byte: u8| byte < 0x80 && byte != 0x1b,
                ] {
                    let expected = bytes.iter().take_while(|&&byte| accepts(byte)).count();
                    prop_assert_eq!(leading_run(&bytes, accepts), expected);
                }
            }

            #[test]
            fn cleaning_is_bounded_and_the_same_in_any_chunks(
                stream in hostile::stream(),
                sizes in hostile::chunk_sizes(),
                width in 2u16..300,
            ) {
                let whole = clean_text(&stream, width);
                let mut cleaner = TextCleaner::new(width);
                let mut text = String::new();
                for chunk in hostile::chunked(&stream, &sizes) {
                    cleaner.push(chunk, &mut text);
                    // The memory of a cleaner is one row.
                    prop_assert!(cleaner.pending_line().count() <= usize::from(width));
                }
                cleaner.finish(&mut text);
                prop_assert_eq!(&text, &whole);
                // Each byte shows at most a row (a jump to the last column, then a character).
                let row = usize::from(width) + 4;
                prop_assert!(whole.len() <= row * (stream.len() + 1), "{} from {}", whole.len(), stream.len());
            }

            #[test]
            fn colors_kept_or_not_the_text_is_the_same_in_any_chunks(
                stream in hostile::stream(),
                sizes in hostile::chunk_sizes(),
                width in 2u16..300,
            ) {
                let mut cleaner = TextCleaner::with_colors(width, Style::default());
                let mut text = String::new();
                for chunk in hostile::chunked(&stream, &sizes) {
                    cleaner.push(chunk, &mut text);
                }
                cleaner.finish(&mut text);
                // Only SGR sequences were added, and each line ends with the plain pen.
                let mut plain = String::new();
                let mut rest = text.as_str();
                while let Some(start) = rest.find('\x1b') {
                    plain.push_str(&rest[..start]);
                    let end = rest[start..].find('m').expect("an SGR sequence ends with m");
                    let sequence = &rest[start..=start + end];
                    prop_assert!(sequence.starts_with("\x1b[") && sequence[2..sequence.len() - 1]
                        .bytes().all(|byte| byte.is_ascii_digit() || byte == b';'), "{sequence:?}");
                    rest = &rest[start + end + 1..];
                }
                plain.push_str(rest);
                prop_assert_eq!(plain, clean_text(&stream, width));
                let mut whole = TextCleaner::with_colors(width, Style::default());
                let mut at_once = String::new();
                whole.push(&stream, &mut at_once);
                whole.finish(&mut at_once);
                prop_assert_eq!(&text, &at_once);
                for line in text.split('\n') {
                    let pen = line.rfind('\x1b').map(|at| &line[at..=at + line[at..].find('m').unwrap_or(0)]);
                    prop_assert!(pen.is_none_or(|pen| pen == "\x1b[m" || pen == "\x1b[0m"), "a line ends with a pen set: {line:?}");
                }
            }

            #[test]
            fn plain_text_after_any_garbage_survives(
                garbage in hostile::stream(),
                width in 2u16..300,
            ) {
                let mut stream = garbage;
                // CAN ends whatever sequence the garbage left open, as on a terminal; SI and
                // `ESC ( B` end line drawing it may have left on (`ESC ) 0` then SO), which a
                // terminal would draw the words in too.
                stream.extend_from_slice(b"\x18\x0f\x1b(B\r\nplain words after\r\n");
                let text = clean_text(&stream, width);
                prop_assert!(text.ends_with("\nplain words after\n"), "{text:?}");
            }
        }
    }

    #[test]
    fn line_drawing_left_on_draws_what_follows_until_shifted_back() {
        // G1 made line drawing and shifted to: words are drawn as lines, as a terminal does.
        let drawn = clean_text(b"\x1b)0\x0e\x18\r\nlqk\r\n", 80);
        assert_eq!(drawn, "\n\u{250c}\u{2500}\u{2510}\n");
        let shifted_back = clean_text(b"\x1b)0\x0e\x18\x0f\x1b(B\r\nlqk\r\n", 80);
        assert_eq!(shifted_back, "\nlqk\n");
    }

    #[test]
    fn history_keeps_a_background_erased_to_the_row_end_and_line_drawing() {
        let text = colored(
            b"\x1b[44mtext\x1b[K\x1b[0m\n\x1b(0lqk\x1b(B lqk\n\x1b)0a\x0eqq\x0fq\n",
            20,
        );
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        let page =
            crate::screen::ScreenSnapshot::from_lines(crate::pty::TermSize::new(20, 3), &lines, 0);
        let blue = crate::screen::CellColor::Indexed(4);
        assert!(page.rows[0].iter().all(|cell| cell.bg == blue), "{text:?}");
        assert_eq!(page.text(), "text\n┌─┐ lqk\na──q\n");
        // The plain text shows the lines too.
        assert_eq!(clean_text(b"\x1b(0lqk\x1b(B\n", 20), "┌─┐\n");
    }
}
