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
use crate::screen::Style;
use crate::screen::decode::Decoder;

/// Bytes read from a log at once.
const READ_BLOCK_BYTES: usize = 64 * 1024;
/// Characters of one line kept by a reader of lines (the rest of a longer line is cut).
pub const MAX_LINE_CHARS: usize = 4096;

/// A piece of output read back from a log: clean text of raw bytes `[from, next_offset)`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OutputSlice {
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
            Piece::End => break,
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
pub fn boundary_at_or_after(
    view: &LogView,
    checkpoint: Checkpoint,
    wanted: u64,
    end: u64,
) -> io::Result<u64> {
    if wanted <= checkpoint.offset {
        return Ok(checkpoint.offset.min(end));
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
                    return Ok(resume.offset);
                }
                decoder = Decoder::new();
                offset = resume.offset;
            }
            Piece::End => break,
        }
    }
    Ok(end)
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
                for &byte in &buffer[..count] {
                    let mut newline = false;
                    decoder.advance(byte, &mut |step| {
                        newline |= step == crate::screen::decode::Step::Execute(b'\n');
                    });
                    offset += 1;
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
            // Lost bytes end a slice: the next one starts after them.
            Piece::Gap { resume, .. } => return Ok(line_end.or(boundary).unwrap_or(resume.offset)),
            Piece::End => break,
        }
    }
    Ok(end)
}

/// Clean output from the boundary `from` up to `end` (a boundary), at most about `max_bytes` raw
/// bytes of it; it ends at a line's end when it is cut short.
pub fn read_slice(
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
    clean_range(view, from, cut, width, None, |cleaned| {
        match cleaned {
            Cleaned::Text(piece) => text.push_str(piece),
            Cleaned::Gap { lost, resume, why } => {
                text.push_str(&gap_notice(lost, why));
                next_offset = next_offset.max(resume.offset);
            }
        }
        true
    })?;
    Ok(OutputSlice {
        text,
        from,
        next_offset,
    })
}

/// Lines `[first, first + count)` as a person saw them, their colors and attributes kept as SGR
/// sequences (each cut at [`MAX_LINE_CHARS`]), reading from `checkpoint` (one from which line
/// `first` is read whole) up to `end`.
pub fn read_lines(
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
/// reading the whole log up to `end`.
pub fn find_line(
    view: &LogView,
    end: u64,
    from: u64,
    newer: bool,
    width: u16,
    matches: impl Fn(&str) -> bool,
) -> io::Result<Option<u64>> {
    let start = Checkpoint {
        offset: 0,
        line: 0,
        line_start: true,
        pen: Style::default(),
    };
    // Lost lines hold nothing to find.
    let mut walker = LineWalker::new(start, 0..0);
    let mut found = None;
    let mut look = |number: u64, line: &str| {
        let wanted = if newer { number > from } else { number < from };
        if wanted && matches(line) {
            found = Some(number);
            if newer {
                return false;
            }
        }
        newer || number < from
    };
    let mut going = true;
    clean_range(view, 0, end, width, None, |cleaned| {
        going = walker.take(cleaned, &mut look);
        going
    })?;
    if going {
        walker.finish(&mut look);
    }
    Ok(found)
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
#[allow(clippy::format_collect)] // Expected outputs read best as one format per line.
mod tests {
    use super::super::index::OutputIndex;
    use super::super::log::RawLog;
    use super::*;

    /// A log of `raw` in a temp folder, with its index.
    fn logged(label: &str, raw: &[u8]) -> (RawLog, OutputIndex, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("oino-read-{label}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut log = RawLog::create(&dir, label);
        let mut index = OutputIndex::default();
        for chunk in raw.chunks(997) {
            let offset = index.recorded();
            let start = index.record(chunk);
            log.append(offset, chunk, start);
        }
        index.finish();
        (log, index, dir)
    }

    /// The first two lines of a whole log, 80 columns wide.
    fn first_two_lines(log: &RawLog, index: &OutputIndex) -> Vec<String> {
        read_lines(
            &log.view(),
            index.checkpoint_for_line(0),
            0,
            2,
            index.boundary(),
            80,
        )
        .unwrap()
    }

    #[test]
    fn a_capped_log_reads_by_line_number_and_its_index_stays_small() {
        let dir = std::env::temp_dir().join(format!("oino-read-capped-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut log = RawLog::create(&dir, "capped").capped(super::super::log::MIN_LOG_CAP);
        let mut index = OutputIndex::default();
        let lines = 400_000;
        let raw: String = (0..lines)
            .map(|n| format!("\x1b[32mline {n}\x1b[0m\r\n"))
            .collect();
        for chunk in raw.as_bytes().chunks(4093) {
            let offset = index.recorded();
            let start = index.record(chunk);
            log.append(offset, chunk, start);
            if let Some(dropped) = log.take_dropped() {
                index.forget(dropped);
            }
        }
        index.finish();
        let cut = log.cut().expect("capped");
        assert!(cut.left_out > 5 * cut.head, "{cut:?}");
        // Without forgetting the cut's checkpoints the index would hold over 400.
        assert!(index.checkpoints() < 60, "{}", index.checkpoints());
        let view = log.view();
        let end = index.boundary();
        assert_eq!(index.lines(), lines + 1);
        let at = |first| read_lines(&view, index.checkpoint_for_line(first), first, 2, end, 80);
        let green = |n| format!("\x1b[0;32mline {n}\x1b[m");
        assert_eq!(at(lines - 2).unwrap(), [green(lines - 2), green(lines - 1)]);
        assert_eq!(at(3).unwrap(), [green(3), green(4)]);
        let middle = at(lines / 2).unwrap();
        assert!(
            middle.len() == 2 && middle.iter().all(|line| line.contains("reached its cap")),
            "{middle:?}"
        );
        let is = |wanted: String| move |text: &str| text.trim_end() == wanted;
        let kept = lines - 10;
        assert_eq!(
            find_line(&view, end, 0, true, 80, is(format!("line {kept}"))).unwrap(),
            Some(kept)
        );
        let lost = lines / 2;
        assert_eq!(
            find_line(&view, end, 0, true, 80, is(format!("line {lost}"))).unwrap(),
            None
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn lines_are_found_through_the_index_and_searched() {
        let raw: String = (0..5000)
            .map(|n| format!("\x1b[32mline {n}\x1b[0m\r\n"))
            .collect();
        let (log, index, dir) = logged("lines", raw.as_bytes());
        let view = log.view();
        let end = index.boundary();
        assert_eq!(index.lines(), 5001);
        let at = |first| read_lines(&view, index.checkpoint_for_line(first), first, 3, end, 80);
        // Lines keep their colors, each standing alone.
        let green = |n| format!("\x1b[0;32mline {n}\x1b[m");
        assert_eq!(at(2047).unwrap(), [green(2047), green(2048), green(2049)]);
        assert_eq!(at(4999).unwrap(), [green(4999), String::new()]);
        let is = |wanted: &'static str| move |text: &str| text.trim_end() == wanted;
        assert_eq!(
            find_line(&view, end, 4000, false, 80, is("line 123")).unwrap(),
            Some(123)
        );
        assert_eq!(
            find_line(&view, end, 100, true, 80, is("line 4321")).unwrap(),
            Some(4321)
        );
        assert_eq!(
            find_line(&view, end, 100, false, 80, is("line 4321")).unwrap(),
            None
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn slices_end_on_a_line_and_resume_exactly_without_splitting_anything() {
        let raw: String = (0..300)
            .map(|n| format!("\x1b[31m{n} ж€😀\x1b[0m\r\n"))
            .collect();
        let (log, index, dir) = logged("slices", raw.as_bytes());
        let view = log.view();
        for max in [1, 7, 37, 100, 4096] {
            let mut offset = 0;
            let mut text = String::new();
            while offset < index.boundary() {
                let slice = read_slice(&view, offset, index.boundary(), max, 80).unwrap();
                assert!(slice.next_offset > offset);
                assert!(!slice.text.contains('\u{fffd}') && !slice.text.contains("[3"));
                text.push_str(&slice.text);
                offset = slice.next_offset;
            }
            assert_eq!(text, super::super::clean::clean_text(raw.as_bytes(), 80));
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn any_offset_is_moved_to_the_next_boundary() {
        let raw = "ab\x1b[31mжcd\x1b]0;title\x07ef".as_bytes();
        let (log, index, dir) = logged("snap", raw);
        let view = log.view();
        let start = index.checkpoint_before(0);
        let snapped: Vec<u64> = (0..=raw.len() as u64)
            .map(|wanted| boundary_at_or_after(&view, start, wanted, raw.len() as u64).unwrap())
            .collect();
        assert_eq!(
            snapped,
            [
                0, 1, 2, 7, 7, 7, 7, 7, 9, 9, 10, 11, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 22,
                23
            ]
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn lines_lost_to_a_full_disk_read_as_notices_and_the_rest_keeps_its_numbers() {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let mut log = RawLog::over(full, "/dev/full".into(), 64);
        let mut index = OutputIndex::default();
        for n in 0..100 {
            let line = format!("line {n}\n");
            let offset = index.recorded();
            let start = index.record(line.as_bytes());
            log.append(offset, line.as_bytes(), start);
        }
        let view = log.view();
        let end = index.boundary();
        let lost = read_lines(&view, index.checkpoint_for_line(0), 0, 2, end, 80).unwrap();
        assert_eq!(lost.len(), 2);
        assert!(
            lost.iter()
                .all(|line| line.contains("bytes of output lost")),
            "{lost:?}"
        );
        let kept = read_lines(&view, index.checkpoint_for_line(98), 98, 5, end, 80).unwrap();
        assert_eq!(kept, ["line 98", "line 99", ""]);
        let found = find_line(&view, end, 0, true, 80, |line| line == "line 97").unwrap();
        assert_eq!(found, Some(97));
    }

    #[test]
    fn a_page_far_from_where_its_color_was_set_keeps_it() {
        // Set once, thousands of lines (several checkpoints) before the page.
        let mut raw = String::from("\x1b[1;38;5;208m");
        raw.extend((0..5000).map(|n| format!("line {n}\n")));
        raw.push_str("\x1b[mplain\n");
        let (log, index, dir) = logged("pen", raw.as_bytes());
        assert!(
            index.checkpoint_for_line(4998).offset > 0,
            "no checkpoint after the start"
        );
        let lines = read_lines(
            &log.view(),
            index.checkpoint_for_line(4998),
            4998,
            3,
            index.boundary(),
            80,
        )
        .unwrap();
        let orange = |n| format!("\x1b[0;1;38;5;208mline {n}\x1b[m");
        assert_eq!(lines, [orange(4998), orange(4999), "plain".to_owned()]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_long_colored_line_is_cut_by_what_it_shows_and_ends_reset() {
        let cell = "\x1b[38;2;1;2;3mx\x1b[48;5;9my";
        let raw = format!("{}\nnext\n", cell.repeat(MAX_LINE_CHARS));
        let (log, index, dir) = logged("colored-long", raw.as_bytes());
        let lines = first_two_lines(&log, &index);
        let shown: String = crate::output::clean_text(lines[0].as_bytes(), 80);
        assert_eq!(shown.chars().count(), MAX_LINE_CHARS + 1, "{shown:?}");
        assert!(
            lines[0].ends_with("\x1b[m…"),
            "{:?}",
            &lines[0][lines[0].len() - 40..]
        );
        // The next line has the pen that was left set, and ends reset.
        assert_eq!(lines[1], "\x1b[0;38;2;1;2;3;101mnext\x1b[m");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_long_line_is_cut_for_readers_of_lines() {
        let raw = format!("{}\nnext\n", "x".repeat(100_000));
        let (log, index, dir) = logged("long", raw.as_bytes());
        let lines = first_two_lines(&log, &index);
        assert_eq!(lines[0].chars().count(), MAX_LINE_CHARS + 1);
        assert_eq!(lines[1], "next");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
