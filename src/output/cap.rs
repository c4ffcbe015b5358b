//! The result text's cap: everything up to it, past it a head and a tail and one line saying
//! what was left out and where all of it is.

use std::fmt::Write as _;
use std::path::Path;

/// Default cap of a result text, in bytes.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 30_000;

/// Text kept whole up to a cap; beyond it, a head and a tail of half the cap each.
#[derive(Debug)]
pub struct CappedText {
    max_bytes: usize,
    head: String,
    /// The text after the head, once the cap was passed; trimmed from the front now and then.
    tail: String,
    cut: bool,
    total_bytes: u64,
    total_lines: u64,
    /// While the head may still end there: the head's length and the raw offset at the end of
    /// the last line pushed whole, within half the cap (where a cut's head ends).
    mark: Option<(usize, u64)>,
    /// Once cut: the raw offset of the first byte the head left out (at a mark: a line's start
    /// when the head ends at one).
    omitted_from: Option<u64>,
}

impl CappedText {
    /// Empty text that keeps `max_bytes` (2 at least) whole.
    #[must_use]
    pub fn new(max_bytes: usize) -> Self {
        Self {
            max_bytes: max_bytes.max(2),
            head: String::new(),
            tail: String::new(),
            cut: false,
            total_bytes: 0,
            total_lines: 0,
            mark: None,
            omitted_from: None,
        }
    }

    /// Appends clean text, the cleaning of whole lines of raw output ending at offset `raw_end`.
    pub(crate) fn push_at(&mut self, text: &str, raw_end: u64) {
        self.push(text);
        if self.wants_marks() {
            self.mark = Some((self.head.len(), raw_end));
        }
    }

    /// Whether where pieces end is still worth knowing: a cut keeps at most half the cap as its
    /// head, so marks past that are never used (however large the cap, they stay few).
    #[must_use]
    pub(crate) fn wants_marks(&self) -> bool {
        !self.cut && self.head.len() <= self.half()
    }

    /// Once cut, the raw offset of the first byte the head left out, as far as `push_at` told
    /// where the text came from.
    #[must_use]
    pub(crate) fn omitted_from(&self) -> Option<u64> {
        self.omitted_from
    }

    /// Appends clean text.
    pub fn push(&mut self, text: &str) {
        self.total_bytes += text.len() as u64;
        self.total_lines += count_lines(text);
        if self.cut {
            self.tail.push_str(text);
            // Trimmed once it doubles, so each byte is moved a bounded number of times.
            if self.tail.len() > 2 * self.half() {
                let start = floor_char_boundary(&self.tail, self.tail.len() - self.half());
                self.tail.drain(..start);
            }
            return;
        }
        self.head.push_str(text);
        if self.head.len() > self.max_bytes {
            self.cut = true;
            let mut split = floor_char_boundary(&self.head, self.half());
            // End the head at a line's end when one is in it.
            if let Some(newline) = self.head[..split].rfind('\n') {
                split = newline + 1;
            }
            self.tail = self.head.split_off(split);
            // The head ends at the last line's end within half the cap, the mark's (unless a
            // line longer than that: then from its start, which repeats some of it).
            self.omitted_from = Some(
                self.mark
                    .filter(|(length, _)| *length <= split)
                    .map_or(0, |(_, raw)| raw),
            );
            self.mark = None;
        }
    }

    fn half(&self) -> usize {
        self.max_bytes / 2
    }

    /// Whether the text had to be cut.
    #[must_use]
    pub(crate) fn is_cut(&self) -> bool {
        self.cut
    }

    /// The text: whole, or head + one notice line naming what was left out and where it is +
    /// tail.
    #[must_use]
    pub(crate) fn render(&self, full_output: Option<&Path>) -> String {
        self.render_saying(full_output, None)
    }

    /// The text as [`CappedText::render`] makes it, the line on what was left out also saying
    /// `where_read` (where they can be read besides the file).
    #[must_use]
    pub(crate) fn render_saying(
        &self,
        full_output: Option<&Path>,
        where_read: Option<&str>,
    ) -> String {
        if !self.cut {
            return self.head.clone();
        }
        let mut start =
            floor_char_boundary(&self.tail, self.tail.len().saturating_sub(self.half()));
        // Start the tail at a line's start when one is in it.
        if let Some(newline) = self.tail[start..].find('\n') {
            if start + newline + 1 < self.tail.len() {
                start += newline + 1;
            }
        }
        let tail = &self.tail[start..];
        let omitted_bytes = self.total_bytes - (self.head.len() + tail.len()) as u64;
        let omitted_lines = self.total_lines - count_lines(&self.head) - count_lines(tail);
        let mut place = full_output.map_or_else(
            || "the full output was not saved".to_owned(),
            |path| format!("full output: {}", path.display()),
        );
        if let Some(where_read) = where_read {
            place = format!("{where_read}; {place}");
        }
        let mut text = String::with_capacity(self.head.len() + tail.len() + 160);
        text.push_str(&self.head);
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        let _ = writeln!(
            text,
            "[... {omitted_bytes} bytes ({omitted_lines} lines) omitted; {place} ...]"
        );
        text.push_str(tail);
        text
    }
}

fn count_lines(text: &str) -> u64 {
    text.bytes().filter(|byte| *byte == b'\n').count() as u64
}

fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    if index >= text.len() {
        return text.len();
    }
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_cut_knows_the_raw_offset_of_the_first_line_left_out() {
        let mut text = CappedText::new(100);
        let mut raw = 0;
        for n in 0..100 {
            // Raw lines end in \r\n: one byte more than their clean text.
            let line = format!("line {n:04}\n");
            raw += line.len() as u64 + 1;
            text.push_at(&line, raw);
        }
        let rendered = text.render_saying(None, Some("read on from them"));
        let kept = rendered
            .lines()
            .take_while(|line| line.starts_with("line "))
            .count() as u64;
        assert_eq!(kept, 5, "{rendered}");
        assert_eq!(text.omitted_from(), Some(kept * 11));
        assert!(
            rendered.contains("omitted; read on from them; the full output was not saved ...]"),
            "{rendered}"
        );
    }

    #[test]
    fn only_the_last_line_end_within_half_the_cap_is_kept() {
        let mut text = CappedText::new(100_000);
        for n in 0..10_000_u64 {
            text.push_at("line 0000\n", (n + 1) * 11);
        }
        assert!(!text.is_cut());
        // Half the cap is 50,000 bytes: 5,000 lines of 10.
        assert_eq!(text.mark, Some((50_000, 55_000)));
    }

    #[test]
    fn short_text_is_kept_whole() {
        let mut text = CappedText::new(100);
        text.push("one\ntwo\n");
        assert!(!text.is_cut());
        assert_eq!(text.render(None), "one\ntwo\n");
    }

    #[test]
    fn long_text_keeps_head_and_tail_and_counts_what_was_left_out() {
        let mut text = CappedText::new(100);
        let lines: Vec<String> = (0..1000).map(|n| format!("line {n:04}\n")).collect();
        for line in &lines {
            text.push(line);
        }
        assert!(text.is_cut());
        let rendered = text.render(Some(Path::new("/tmp/x.log")));
        assert!(rendered.starts_with("line 0000\n"), "{rendered}");
        assert!(rendered.ends_with("line 0999\n"), "{rendered}");
        let notice = rendered
            .lines()
            .find(|line| line.starts_with("[..."))
            .expect("a notice line");
        let kept_lines = rendered
            .lines()
            .filter(|line| line.starts_with("line "))
            .count();
        let omitted_lines = 1000 - kept_lines;
        let omitted_bytes = omitted_lines * 10;
        assert_eq!(
            notice,
            format!(
                "[... {omitted_bytes} bytes ({omitted_lines} lines) omitted; full output: /tmp/x.log ...]"
            )
        );
        assert!(rendered.len() < 100 + notice.len() + 2);
    }
}
