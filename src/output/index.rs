//! What is known of one call's raw output as it is recorded: where it may be cut (its last
//! boundary), how many lines it has, and checkpoints a reader may start from.
//!
//! The index runs the same [`Decoder`] as every reader, once over each byte, so the offsets it
//! hands out are boundaries by construction: a follower, a task's first read after a detach, or a
//! page of history starts in the ground state, never in the middle of a character or a sequence.

use crate::screen::Style;
use crate::screen::decode::{Decoder, Step};

/// A checkpoint at least every this many lines…
const LINE_STRIDE: u64 = 1024;
/// …or this many bytes, at a line's start…
const LINE_START_STRIDE_BYTES: u64 = 256 * 1024;
/// …and, within a line longer than this, at any boundary.
const LONG_LINE_STRIDE_BYTES: u64 = 1024 * 1024;

/// A place a reader may start: a boundary, with the number of the line it is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// The raw offset: a boundary, never within a character or a sequence.
    pub offset: u64,
    /// Newlines before `offset`: the number (from 0) of the line `offset` is in.
    pub line: u64,
    /// `offset` is where line `line` starts.
    pub line_start: bool,
    /// The pen (colors, attributes) at `offset`: where a reader of colored history starts.
    pub pen: Style,
}

/// The first boundary of a chunk, and its first line start, for a reader that can only start
/// there (after a gap): it resumes at a line's start when the chunk has one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChunkStart {
    /// The chunk's first boundary; `None` when the chunk has none (it is all inside a sequence).
    pub boundary: Option<Checkpoint>,
    /// The chunk's first line start; `None` when no line starts in it.
    pub line_start: Option<Checkpoint>,
}

impl ChunkStart {
    /// Where a reader coming from a gap starts: the first line start, else the first boundary.
    #[must_use]
    pub(crate) fn resume(&self) -> Option<Checkpoint> {
        self.line_start.or(self.boundary)
    }
}

/// The index of one call's raw output.
#[derive(Clone, Debug)]
pub struct OutputIndex {
    decoder: Decoder,
    recorded: u64,
    boundary: u64,
    newlines: u64,
    /// Newlines before the boundary: the lines readers can read.
    readable_newlines: u64,
    last_line_start: u64,
    /// The pen after the bytes recorded.
    pen: Style,
    checkpoints: Vec<Checkpoint>,
    /// The first line start of the chunk being recorded.
    chunk_line_start: Option<Checkpoint>,
}

impl Default for OutputIndex {
    fn default() -> Self {
        Self {
            decoder: Decoder::new(),
            recorded: 0,
            boundary: 0,
            newlines: 0,
            readable_newlines: 0,
            last_line_start: 0,
            pen: Style::default(),
            checkpoints: vec![Checkpoint {
                offset: 0,
                line: 0,
                line_start: true,
                pen: Style::default(),
            }],
            chunk_line_start: None,
        }
    }
}

impl OutputIndex {
    /// Takes note of the next chunk; says where its first boundary is.
    pub fn record(&mut self, chunk: &[u8]) -> ChunkStart {
        let base = self.recorded;
        let mut first = self.decoder.at_boundary().then(|| self.here(base));
        self.chunk_line_start = first.filter(|checkpoint| checkpoint.line_start);
        let mut index = 0;
        while index < chunk.len() {
            if self.decoder.at_boundary() {
                // Plain bytes below 0x80 other than ESC leave the ground as it is.
                let start = index;
                while index < chunk.len() {
                    // Eight plain bytes at once when none of them needs a look.
                    if let Some(word) = chunk.get(index..index + 8) {
                        if !needs_a_look(word) {
                            index += 8;
                            continue;
                        }
                    }
                    let byte = chunk[index];
                    if byte >= 0x80 || byte == 0x1b {
                        break;
                    }
                    if byte == b'\n' {
                        self.newlines += 1;
                        self.line_started(base + index as u64 + 1);
                    }
                    index += 1;
                }
                if index > start {
                    self.boundary = base + index as u64;
                    self.readable_newlines = self.newlines;
                    first.get_or_insert_with(|| self.here(self.boundary));
                }
                if index == chunk.len() {
                    break;
                }
            }
            let mut newline = false;
            let pen = &mut self.pen;
            self.decoder.advance(chunk[index], &mut |step| {
                newline |= step == Step::Execute(b'\n');
                pen.follow(&step);
            });
            index += 1;
            if newline {
                self.newlines += 1;
            }
            if self.decoder.at_boundary() {
                self.boundary = base + index as u64;
                self.readable_newlines = self.newlines;
                if newline {
                    self.line_started(self.boundary);
                }
                first.get_or_insert_with(|| self.here(self.boundary));
            }
        }
        self.recorded += chunk.len() as u64;
        let last = self.last_checkpoint();
        if self.boundary >= last.offset + LONG_LINE_STRIDE_BYTES {
            let here = self.here(self.boundary);
            self.checkpoints.push(here);
        }
        ChunkStart {
            boundary: first,
            line_start: self.chunk_line_start,
        }
    }

    /// The output has ended: what is left after the last boundary (a half character, an
    /// unfinished sequence) becomes readable too; readers end it as the cleaner does.
    pub(crate) fn finish(&mut self) {
        self.boundary = self.recorded;
        self.readable_newlines = self.newlines;
    }

    /// Raw bytes recorded.
    #[must_use]
    pub(crate) fn recorded(&self) -> u64 {
        self.recorded
    }

    /// The last boundary: readers read up to here.
    #[must_use]
    pub fn boundary(&self) -> u64 {
        self.boundary
    }

    /// Lines readers can read so far (up to the boundary), the unfinished last one included.
    #[must_use]
    pub fn lines(&self) -> u64 {
        self.readable_newlines + 1
    }

    /// The last checkpoint at or before `offset`.
    #[must_use]
    pub(crate) fn checkpoint_before(&self, offset: u64) -> Checkpoint {
        let after = self
            .checkpoints
            .partition_point(|checkpoint| checkpoint.offset <= offset);
        self.checkpoints[after.saturating_sub(1)]
    }

    /// The last checkpoint from which line `line` is read whole.
    #[must_use]
    pub(crate) fn checkpoint_for_line(&self, line: u64) -> Checkpoint {
        let after = self.checkpoints.partition_point(|checkpoint| {
            checkpoint.line < line || (checkpoint.line == line && checkpoint.line_start)
        });
        self.checkpoints[after.saturating_sub(1)]
    }

    /// The log no longer keeps `range` (it was capped): its checkpoints go, so that the index
    /// of endless output stays the size of what is kept.
    pub fn forget(&mut self, range: std::ops::Range<u64>) {
        let start = self
            .checkpoints
            .partition_point(|checkpoint| checkpoint.offset < range.start);
        let end = self
            .checkpoints
            .partition_point(|checkpoint| checkpoint.offset < range.end);
        self.checkpoints.drain(start..end);
    }

    /// Checkpoints held.
    #[cfg(test)]
    pub(crate) fn checkpoints(&self) -> usize {
        self.checkpoints.len()
    }

    fn last_checkpoint(&self) -> Checkpoint {
        // Never empty: it starts with offset 0.
        self.checkpoints.last().copied().unwrap_or(Checkpoint {
            offset: 0,
            line: 0,
            line_start: true,
            pen: Style::default(),
        })
    }

    fn here(&self, offset: u64) -> Checkpoint {
        Checkpoint {
            offset,
            line: self.newlines,
            line_start: offset == self.last_line_start,
            pen: self.pen,
        }
    }

    fn line_started(&mut self, offset: u64) {
        self.last_line_start = offset;
        if self.chunk_line_start.is_none() {
            self.chunk_line_start = Some(self.here(offset));
        }
        let last = self.last_checkpoint();
        if self.newlines >= last.line + LINE_STRIDE
            || offset >= last.offset + LINE_START_STRIDE_BYTES
        {
            self.checkpoints.push(Checkpoint {
                offset,
                line: self.newlines,
                line_start: true,
                pen: self.pen,
            });
        }
    }
}

/// Whether any of eight bytes is a newline, an ESC or above 0x7f (a false alarm now and then is
/// harmless: the bytes are then looked at one by one).
fn needs_a_look(word: &[u8]) -> bool {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const ONES: u64 = 0x0101_0101_0101_0101;
    let word = u64::from_le_bytes(word.try_into().unwrap_or([0x80; 8]));
    let has_zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH != 0;
    word & HIGH != 0 || has_zero(word ^ (ONES * 0x1b)) || has_zero(word ^ (ONES * u64::from(b'\n')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_boundary_never_splits_a_character_or_a_sequence() {
        let mut index = OutputIndex::default();
        index.record(b"ab\x1b[3");
        assert_eq!(index.boundary(), 2);
        index.record(b"1mc\xd0");
        assert_eq!(index.boundary(), 8);
        index.record(b"\xb6\x1b]0;title\nstill");
        assert_eq!(index.boundary(), 10);
        assert_eq!(index.lines(), 1, "a newline within a title is no line");
        index.record(b"\x07done\n");
        assert_eq!(index.boundary(), index.recorded());
        assert_eq!(index.lines(), 2);
        index.record(b"\xe2\x82");
        assert_eq!(index.boundary(), index.recorded() - 2);
        index.finish();
        assert_eq!(index.boundary(), index.recorded());
    }

    #[test]
    fn checkpoints_come_every_so_many_lines_and_find_any_line() {
        let mut index = OutputIndex::default();
        let line = b"\x1b[32mline\x1b[0m\r\n";
        for _ in 0..5000 {
            index.record(line);
        }
        assert_eq!(index.lines(), 5001);
        let step = line.len() as u64;
        let checkpoint = index.checkpoint_for_line(3000);
        assert!(checkpoint.line_start && checkpoint.line <= 3000);
        assert!(3000 - checkpoint.line <= LINE_STRIDE);
        assert_eq!(checkpoint.offset, checkpoint.line * step);
        let before = index.checkpoint_before(2500 * step + 3);
        assert!(before.offset <= 2500 * step + 3);
        assert_eq!(before.offset % step, 0);
    }

    #[test]
    fn a_chunk_says_where_its_first_boundary_is() {
        let mut index = OutputIndex::default();
        assert_eq!(index.record(b"a\n").boundary.map(|c| c.offset), Some(0));
        let split = index.record(b"\x1b[3");
        assert_eq!(split.boundary.map(|c| c.offset), Some(2));
        let rest = index.record(b"1mx\ny");
        assert_eq!(
            rest.boundary,
            Some(Checkpoint {
                offset: 7,
                line: 1,
                line_start: false,
                pen: Style {
                    fg: crate::screen::CellColor::Indexed(1),
                    ..Style::default()
                },
            })
        );
    }

    mod properties {
        use proptest::prelude::*;

        use super::super::*;
        use crate::output::clean_text;
        use crate::screen::decode::hostile;

        proptest! {
            #![proptest_config(hostile::config())]

            #[test]
            fn the_index_hands_out_boundaries_and_counts_the_cleaners_lines(
                stream in hostile::stream(),
                sizes in hostile::chunk_sizes(),
            ) {
                let mut index = OutputIndex::default();
                for chunk in hostile::chunked(&stream, &sizes) {
                    index.record(chunk);
                    let boundary = usize::try_from(index.boundary()).unwrap_or(usize::MAX);
                    let mut decoder = Decoder::new();
                    for &byte in &stream[..boundary] {
                        decoder.advance(byte, &mut |_| {});
                    }
                    prop_assert!(decoder.at_boundary(), "{boundary} is no boundary");
                }
                index.finish();
                let newlines = clean_text(&stream, 80).matches('\n').count() as u64;
                prop_assert_eq!(index.lines(), newlines + 1);
                let checkpoint = index.checkpoint_before(u64::MAX);
                prop_assert!(checkpoint.offset <= index.boundary());
            }
        }
    }
}
