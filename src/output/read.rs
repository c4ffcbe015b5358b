//! Reading a log back as clean text: a slice from an offset, a page of lines, a search.
//!
//! Every read starts at a boundary (a checkpoint of the index, or an offset it handed out) and
//! runs the same cleaner as the call did, so what a reader gets never splits a character or an
//! escape sequence. A read that meets a gap (output lost while the log could not be written) says
//! so in the text and goes on after it.

use std::io;

use super::clean::TextCleaner;
use super::index::Checkpoint;
use super::log::{GapCause, LogView, Piece};
use super::search::{HitCounter, SearchHit};
use crate::screen::Style;
use crate::screen::decode::Decoder;

/// Bytes read from a log at once.
const READ_BLOCK_BYTES: usize = 64 * 1024;
/// Characters of one line kept by a reader of lines (the rest of a longer line is cut).
pub(crate) const MAX_LINE_CHARS: usize = 4096;

/// A piece of output read back from a log: clean text of raw bytes `[from, next_offset)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputSlice {
    /// Clean text: what a person saw, without the escape sequences; a line of its own says where
    /// output was left out or lost.
    pub text: String,
    /// Raw offset where this slice started (a boundary).
    pub from: u64,
    /// Raw offset to ask from next time (a boundary).
    pub next_offset: u64,
}

/// What streaming a range gives, in order.
#[derive(Clone, Copy)]
enum Cleaned<'a> {
    Text(&'a str),
    /// Bytes are missing; reading resumed at this checkpoint.
    Gap {
        lost: u64,
        resume: Checkpoint,
        why: GapCause,
    },
    /// The rest of the range cannot be read yet: the log's cap kept only bytes inside a
    /// sequence whose end is still to come.
    Unreadable {
        lost: u64,
    },
}

/// The line a reader shows for output that is missing.
fn gap_notice(lost: u64, why: GapCause) -> String {
    match why {
        GapCause::Capped => format!(
            "[... {lost} bytes of output left out: the log reached its cap (log_cap) and keeps \
             its first part and its newest ...]\n"
        ),
        GapCause::NotWritten => format!(
            "[... {lost} bytes of output lost: the log could not be written and only the newest \
             part was kept in memory ...]\n"
        ),
        GapCause::Removed => format!(
            "[... {lost} bytes of output lost: the log file was removed while the call ran (by a \
             cleanup, or by hand) ...]\n"
        ),
    }
}

/// Streams `[from, to)` of `view` through a cleaner `width` columns wide; with `pen` (the one
/// set at `from`), one that keeps colors.
fn clean_range(
    view: &LogView,
    from: u64,
    to: u64,
    width: u16,
    pen: Option<Style>,
    mut on: impl FnMut(Cleaned<'_>) -> bool,
) -> io::Result<()> {
    let cleaner_at = |pen: Option<Style>| match pen {
        Some(pen) => TextCleaner::with_colors(width, pen),
        None => TextCleaner::new(width),
    };
    let mut cleaner = cleaner_at(pen);
    let mut buffer = vec![0; READ_BLOCK_BYTES];
    let mut text = String::new();
    let mut offset = from;
    while offset < to {
        let room = usize::try_from(to - offset)
            .unwrap_or(usize::MAX)
            .min(READ_BLOCK_BYTES);
        match view.read_at(offset, &mut buffer[..room])? {
            Piece::Bytes(count) => {
                cleaner.push(&buffer[..count], &mut text);
                offset += count as u64;
            }
            Piece::Gap { resume, why } => {
                cleaner.finish(&mut text);
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                if !on(Cleaned::Text(&text)) {
                    return Ok(());
                }
                text.clear();
                cleaner = cleaner_at(pen.map(|_| resume.pen));
                if !on(Cleaned::Gap {
                    lost: resume.offset.saturating_sub(offset),
                    resume,
                    why,
                }) {
                    return Ok(());
                }
                offset = resume.offset;
                continue;
            }
            Piece::End => {
                cleaner.finish(&mut text);
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                if on(Cleaned::Text(&text)) {
                    on(Cleaned::Unreadable { lost: to - offset });
                }
                return Ok(());
            }
        }
        if !text.is_empty() {
            if !on(Cleaned::Text(&text)) {
                return Ok(());
            }
            text.clear();
        }
    }
    cleaner.finish(&mut text);
    if !text.is_empty() {
        on(Cleaned::Text(&text));
    }
    Ok(())
}

/// Where a read from `wanted` may start: the first boundary at or after it (`checkpoint` is a
/// boundary at or before it).
pub(crate) fn boundary_at_or_after(
    view: &LogView,
    checkpoint: Checkpoint,
    wanted: u64,
    end: u64,
) -> io::Result<u64> {
    if wanted <= checkpoint.offset {
        return Ok(checkpoint.offset.min(end));
    }
    // The end is a boundary: a read with nothing new scans nothing.
    if wanted >= end {
        return Ok(end);
    }
    let wanted = wanted.min(end);
    let mut decoder = Decoder::new();
    let mut buffer = vec![0; READ_BLOCK_BYTES];
    let mut offset = checkpoint.offset;
    while offset < end {
        let room = usize::try_from(end - offset)
            .unwrap_or(usize::MAX)
            .min(READ_BLOCK_BYTES);
        match view.read_at(offset, &mut buffer[..room])? {
            Piece::Bytes(count) => {
                for &byte in &buffer[..count] {
                    decoder.advance(byte, &mut |_| {});
                    offset += 1;
                    if offset >= wanted && decoder.at_boundary() {
                        return Ok(offset);
                    }
                }
            }
            Piece::Gap { resume, .. } => {
                if resume.offset >= wanted {
                    // From within the gap, the read starts where it was asked to, and says
                    // first what is missing (a follower left behind by the cap learns how
                    // much it missed, instead of jumping silently).
                    return Ok(if offset <= wanted {
                        wanted
                    } else {
                        resume.offset
                    });
                }
                decoder = Decoder::new();
                offset = resume.offset;
            }
            // Nothing can be read from here yet: the read says so.
            Piece::End => return Ok(wanted.max(offset).min(end)),
        }
    }
    Ok(end)
}

/// How many bytes at the start of `bytes` are plain: ASCII but ESC, each of which a decoder at a
/// boundary takes and stays at one.
fn plain_run(bytes: &[u8]) -> usize {
    super::clean::leading_run(bytes, |byte| byte < 0x80 && byte != 0x1b)
}

/// Where a slice from the boundary `from` of at most about `max_bytes` raw bytes ends: at `end`
/// if it is that near, else at the last line's end within `max_bytes`, else at the last boundary
/// within, else at the first boundary after (a long sequence is never cut).
fn slice_end(view: &LogView, from: u64, end: u64, max_bytes: usize) -> io::Result<u64> {
    let window_end = from.saturating_add(max_bytes.max(1) as u64);
    if window_end >= end {
        return Ok(end);
    }
    let mut decoder = Decoder::new();
    let mut buffer = vec![0; READ_BLOCK_BYTES];
    let mut offset = from;
    let (mut line_end, mut boundary) = (None, None);
    while offset < end {
        let room = usize::try_from(end - offset)
            .unwrap_or(usize::MAX)
            .min(READ_BLOCK_BYTES);
        match view.read_at(offset, &mut buffer[..room])? {
            Piece::Bytes(count) => {
                let bytes = &buffer[..count];
                let mut index = 0;
                while index < bytes.len() {
                    // A run of plain bytes (ASCII but ESC) leaves a decoder at a boundary after
                    // each: the run is taken whole, not byte by byte through the decoder.
                    let run = if decoder.at_boundary() {
                        plain_run(&bytes[index..])
                    } else {
                        0
                    };
                    if run > 0 {
                        let plain = &bytes[index..index + run];
                        let start = offset;
                        // The run's boundaries are start+1 ..= start+run: those up to the
                        // window's end count, and the first past it ends the slice.
                        let within = usize::try_from(window_end.saturating_sub(start))
                            .unwrap_or(usize::MAX)
                            .min(run);
                        if within > 0 {
                            boundary = Some(start + within as u64);
                            if let Some(newline) = plain[..within].iter().rposition(|&b| b == b'\n')
                            {
                                line_end = Some(start + newline as u64 + 1);
                            }
                        }
                        if within < run {
                            let past = start + within as u64 + 1;
                            return Ok(line_end.or(boundary).unwrap_or(past));
                        }
                        offset += run as u64;
                        index += run;
                        continue;
                    }
                    let mut newline = false;
                    decoder.advance(bytes[index], &mut |step| {
                        newline |= step == crate::screen::decode::Step::Execute(b'\n');
                    });
                    offset += 1;
                    index += 1;
                    if decoder.at_boundary() {
                        if offset > window_end {
                            return Ok(line_end.or(boundary).unwrap_or(offset));
                        }
                        boundary = Some(offset);
                        if newline {
                            line_end = Some(offset);
                        }
                    }
                }
            }
            // Lost bytes end a slice at the last line's end before them, else the slice runs
            // through them: it never ends with a line cut short by the gap, which would leave
            // the next read's notice on the end of that line.
            Piece::Gap { resume, .. } => return Ok(line_end.unwrap_or(resume.offset)),
            Piece::End => break,
        }
    }
    Ok(end)
}

/// Clean output from the boundary `from` up to `end` (a boundary), at most about `max_bytes` raw
/// bytes of it; it ends at a line's end when it is cut short.
pub(crate) fn read_slice(
    view: &LogView,
    from: u64,
    end: u64,
    max_bytes: usize,
    width: u16,
) -> io::Result<OutputSlice> {
    let from = from.min(end);
    let cut = slice_end(view, from, end, max_bytes)?;
    let mut text = String::new();
    let mut next_offset = cut;
    // A notice is a line of its own, also when the last read ended within a line.
    let mut line_start = from == 0 || starts_a_line(view, from);
    let mut notice = |text: &mut String, lost, why| {
        if text.is_empty() && !line_start {
            text.push('\n');
        }
        line_start = true;
        text.push_str(&gap_notice(lost, why));
    };
    clean_range(view, from, cut, width, None, |cleaned| {
        match cleaned {
            Cleaned::Text(piece) => text.push_str(piece),
            Cleaned::Gap { lost, resume, why } => {
                notice(&mut text, lost, why);
                next_offset = next_offset.max(resume.offset);
            }
            Cleaned::Unreadable { lost } => notice(&mut text, lost, GapCause::Capped),
        }
        true
    })?;
    Ok(OutputSlice {
        text,
        from,
        next_offset,
    })
}

/// Whether the boundary `offset` starts a line: the byte before it is a newline (or is not
/// kept: a gap's notice starts a line).
fn starts_a_line(view: &LogView, offset: u64) -> bool {
    let mut byte = [0; 1];
    match view.read_at(offset - 1, &mut byte) {
        Ok(Piece::Bytes(1)) => byte[0] == b'\n',
        _ => true,
    }
}

/// Lines `[first, first + count)` as a person saw them, their colors and attributes kept as SGR
/// sequences (each cut at [`MAX_LINE_CHARS`]), reading from `checkpoint` (one from which line
/// `first` is read whole) up to `end`.
pub(crate) fn read_lines(
    view: &LogView,
    checkpoint: Checkpoint,
    first: u64,
    count: usize,
    end: u64,
    width: u16,
) -> io::Result<Vec<String>> {
    let mut lines = Vec::with_capacity(count.min(1024));
    let wanted = first..first.saturating_add(count as u64);
    let mut walker = LineWalker::new(checkpoint, wanted.clone());
    clean_range(
        view,
        checkpoint.offset,
        end,
        width,
        Some(checkpoint.pen),
        |cleaned| {
            walker.take(cleaned, &mut |number, line| {
                if wanted.contains(&number) {
                    lines.push(line.to_owned());
                }
                number + 1 < wanted.end
            })
        },
    )?;
    walker.finish(&mut |number, line| {
        if wanted.contains(&number) && lines.len() < count {
            lines.push(line.to_owned());
        }
        true
    });
    Ok(lines)
}

/// The line nearest to `from` (before it, or after it when `newer`) whose clean text `matches`,
/// and how many lines match, reading the whole log up to `end` once.
pub fn find_line(
    view: &LogView,
    end: u64,
    from: u64,
    newer: bool,
    width: u16,
    matches: impl Fn(&str) -> bool,
) -> io::Result<SearchHit> {
    let mut counter = HitCounter::new(from, newer);
    each_matching_line(view, end, width, matches, |number| counter.matched(number))?;
    Ok(counter.hit())
}

/// Gives `each` the number of every line whose clean text `matches`, oldest first, reading the
/// whole log up to `end` once.
pub(crate) fn each_matching_line(
    view: &LogView,
    end: u64,
    width: u16,
    matches: impl Fn(&str) -> bool,
    mut each: impl FnMut(u64),
) -> io::Result<()> {
    let start = Checkpoint {
        offset: 0,
        line: 0,
        line_start: true,
        pen: Style::default(),
    };
    // Lost lines hold nothing to find.
    let mut walker = LineWalker::new(start, 0..0);
    let mut look = |number: u64, line: &str| {
        if matches(line) {
            each(number);
        }
        true
    };
    let mut going = true;
    clean_range(view, 0, end, width, None, |cleaned| {
        going = walker.take(cleaned, &mut look);
        going
    })?;
    if going {
        walker.finish(&mut look);
    }
    Ok(())
}

/// Splits streamed clean text into numbered lines, each kept up to [`MAX_LINE_CHARS`].
struct LineWalker {
    number: u64,
    line: String,
    /// Characters of the line shown (its SGR sequences are not).
    chars: usize,
    /// Within an SGR sequence of a colored line.
    in_sequence: bool,
    /// The first line read is a tail of a line (the checkpoint is within it): not shown.
    partial: bool,
    /// Lines lost in a gap are told one by one only within these (however many were lost).
    told: std::ops::Range<u64>,
}

impl LineWalker {
    fn new(checkpoint: Checkpoint, told: std::ops::Range<u64>) -> Self {
        Self {
            number: checkpoint.line,
            line: String::new(),
            chars: 0,
            in_sequence: false,
            partial: !checkpoint.line_start,
            told,
        }
    }

    /// Takes streamed text; `each(number, line)` gets every line ended, and says whether to go on.
    fn take(&mut self, cleaned: Cleaned<'_>, each: &mut impl FnMut(u64, &str) -> bool) -> bool {
        match cleaned {
            Cleaned::Text(text) => {
                for piece in text.split_inclusive('\n') {
                    let (body, ended) = match piece.strip_suffix('\n') {
                        Some(body) => (body, true),
                        None => (piece, false),
                    };
                    for character in body.chars() {
                        // SGR sequences (colored lines) are not counted, nor cut.
                        if self.in_sequence || character == '\x1b' {
                            self.in_sequence = character != 'm';
                            if self.chars < MAX_LINE_CHARS {
                                self.line.push(character);
                            }
                            continue;
                        }
                        if self.chars < MAX_LINE_CHARS {
                            self.line.push(character);
                        }
                        self.chars += 1;
                    }
                    if ended && !self.end_line(each) {
                        return false;
                    }
                }
                true
            }
            Cleaned::Gap { lost, resume, why } => {
                // The lost lines read as a notice each, so that numbers stay those of the output;
                // only those wanted are told.
                let notice = gap_notice(lost, why);
                let notice = notice.trim_end();
                let told = self.number.max(self.told.start)..resume.line.min(self.told.end);
                for number in told {
                    if !each(number, notice) {
                        return false;
                    }
                }
                self.number = self.number.max(resume.line);
                self.line.clear();
                self.chars = 0;
                self.in_sequence = false;
                self.partial = !resume.line_start;
                true
            }
            // Nothing more can be read: the lines end here.
            Cleaned::Unreadable { .. } => false,
        }
    }

    fn end_line(&mut self, each: &mut impl FnMut(u64, &str) -> bool) -> bool {
        if self.chars > MAX_LINE_CHARS {
            if self.in_sequence {
                // Cut within a sequence: what was kept of it goes.
                if let Some(start) = self.line.rfind('\x1b') {
                    self.line.truncate(start);
                }
            }
            if self.line.contains('\x1b') {
                self.line.push_str("\x1b[m");
            }
            self.line.push('…');
        }
        self.in_sequence = false;
        let going = self.partial || each(self.number, &self.line);
        self.partial = false;
        self.number += 1;
        self.line.clear();
        self.chars = 0;
        going
    }

    /// The last line, unfinished.
    fn finish(&mut self, each: &mut impl FnMut(u64, &str) -> bool) {
        if !self.partial {
            if self.chars > MAX_LINE_CHARS {
                self.line.push('…');
            }
            each(self.number, &self.line);
        }
    }
}

#[cfg(test)]
mod tests;
