//! The result text of a call, and its log file.
//!
//! Raw PTY bytes flow through a [`TextCleaner`], which removes escape sequences, resolves
//! carriage-return rewrites (progress bars) and backspaces, turns `\r\n` into `\n` and replaces
//! invalid UTF-8, a chunk at a time (sequences may be split anywhere). Finished lines go to a
//! [`CappedText`], which keeps everything up to the cap and past it only a head and a tail.
//! Every raw byte also goes to the call's [`LogFile`], the complete record.

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Default cap of a result text, in bytes.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 30_000;

/// Where the cleaner is within an escape sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Escape {
    None,
    /// After ESC.
    Start,
    /// After ESC and intermediate bytes (`ESC ( B`).
    Intermediate,
    /// Within `ESC [`; the parameter collected so far.
    Csi,
    /// Within an OSC, DCS, SOS, PM or APC string, up to BEL or ST.
    String,
    /// ESC seen within such a string: `\` ends it.
    StringEnd,
}

/// Turns raw terminal bytes into the text a person would have seen, line by line.
#[derive(Debug)]
pub struct TextCleaner {
    escape: Escape,
    csi_params: Vec<u16>,
    csi_private: bool,
    /// Bytes of an incomplete UTF-8 character.
    utf8: [u8; 4],
    utf8_len: usize,
    utf8_need: usize,
    /// The line being written, as characters, and the column the next character goes to.
    line: Vec<char>,
    column: usize,
}

impl Default for TextCleaner {
    fn default() -> Self {
        Self::new()
    }
}

impl TextCleaner {
    #[must_use]
    pub fn new() -> Self {
        Self {
            escape: Escape::None,
            csi_params: Vec::new(),
            csi_private: false,
            utf8: [0; 4],
            utf8_len: 0,
            utf8_need: 0,
            line: Vec::new(),
            column: 0,
        }
    }

    /// Cleans `bytes`, appending every finished line (with its `\n`) to `out`.
    pub fn push(&mut self, bytes: &[u8], out: &mut String) {
        let mut index = 0;
        while index < bytes.len() {
            let byte = bytes[index];
            // Fastest path: a whole plain line, straight to the text.
            if self.escape == Escape::None
                && self.utf8_need == 0
                && self.line.is_empty()
                && self.column == 0
            {
                let run = bytes[index..]
                    .iter()
                    .take_while(|byte| (0x20..0x7f).contains(*byte))
                    .count();
                let after = &bytes[index + run..];
                let ending = if after.starts_with(b"\r\n") {
                    2
                } else {
                    usize::from(after.first() == Some(&b'\n'))
                };
                // Printable ASCII is always UTF-8.
                if let (true, Ok(text)) =
                    (ending > 0, std::str::from_utf8(&bytes[index..index + run]))
                {
                    out.push_str(text);
                    out.push('\n');
                    index += run + ending;
                    continue;
                }
            }
            // Fast path: plain ASCII appended at the end of the line.
            if self.escape == Escape::None
                && self.utf8_need == 0
                && self.column == self.line.len()
                && (0x20..0x7f).contains(&byte)
            {
                let run = bytes[index..]
                    .iter()
                    .take_while(|byte| (0x20..0x7f).contains(*byte))
                    .count();
                self.line.extend(
                    bytes[index..index + run]
                        .iter()
                        .map(|byte| char::from(*byte)),
                );
                self.column += run;
                index += run;
                continue;
            }
            self.byte(byte, out);
            index += 1;
        }
    }

    /// The unfinished line, as it stands.
    pub fn pending_line(&self) -> impl Iterator<Item = char> + '_ {
        self.line.iter().copied()
    }

    /// Ends the text: the unfinished line, if any, goes to `out` without a newline.
    pub fn finish(&mut self, out: &mut String) {
        if self.utf8_need > 0 {
            self.utf8_need = 0;
            self.utf8_len = 0;
            self.put(char::REPLACEMENT_CHARACTER);
        }
        out.extend(self.line.drain(..));
        self.column = 0;
        self.escape = Escape::None;
    }

    fn byte(&mut self, byte: u8, out: &mut String) {
        match self.escape {
            Escape::None => self.ground(byte, out),
            Escape::Start => self.after_escape(byte),
            Escape::Intermediate => {
                if !(0x20..0x30).contains(&byte) {
                    self.escape = Escape::None;
                }
            }
            Escape::Csi => self.csi(byte),
            Escape::String => match byte {
                0x07 => self.escape = Escape::None,
                0x1b => self.escape = Escape::StringEnd,
                _ => {}
            },
            Escape::StringEnd => {
                self.escape = if byte == b'\\' {
                    Escape::None
                } else {
                    Escape::String
                };
            }
        }
    }

    fn ground(&mut self, byte: u8, out: &mut String) {
        if self.utf8_need > 0 {
            if byte & 0xc0 == 0x80 {
                self.utf8[self.utf8_len] = byte;
                self.utf8_len += 1;
                if self.utf8_len == self.utf8_need {
                    let decoded = std::str::from_utf8(&self.utf8[..self.utf8_len])
                        .ok()
                        .and_then(|text| text.chars().next())
                        .unwrap_or(char::REPLACEMENT_CHARACTER);
                    self.utf8_need = 0;
                    self.utf8_len = 0;
                    self.put(decoded);
                }
                return;
            }
            // A broken sequence: replace it, then read this byte afresh.
            self.utf8_need = 0;
            self.utf8_len = 0;
            self.put(char::REPLACEMENT_CHARACTER);
        }
        match byte {
            b'\n' => {
                out.extend(self.line.drain(..));
                out.push('\n');
                self.column = 0;
            }
            b'\r' => self.column = 0,
            0x08 => self.column = self.column.saturating_sub(1),
            b'\t' => self.put('\t'),
            0x1b => self.escape = Escape::Start,
            0x00..0x20 | 0x7f => {}
            0x20..0x7f => self.put(char::from(byte)),
            0xc2..=0xdf => self.start_utf8(byte, 2),
            0xe0..=0xef => self.start_utf8(byte, 3),
            0xf0..=0xf4 => self.start_utf8(byte, 4),
            _ => self.put(char::REPLACEMENT_CHARACTER),
        }
    }

    fn start_utf8(&mut self, byte: u8, need: usize) {
        self.utf8[0] = byte;
        self.utf8_len = 1;
        self.utf8_need = need;
    }

    fn after_escape(&mut self, byte: u8) {
        self.escape = match byte {
            b'[' => {
                self.csi_params.clear();
                self.csi_params.push(0);
                self.csi_private = false;
                Escape::Csi
            }
            b']' | b'P' | b'X' | b'^' | b'_' => Escape::String,
            0x20..0x30 => Escape::Intermediate,
            _ => Escape::None,
        };
    }

    fn csi(&mut self, byte: u8) {
        match byte {
            b'0'..=b'9' => {
                if let Some(param) = self.csi_params.last_mut() {
                    *param = param
                        .saturating_mul(10)
                        .saturating_add(u16::from(byte - b'0'));
                }
            }
            b';' | b':' => self.csi_params.push(0),
            b'<'..=b'?' => self.csi_private = true,
            0x20..0x30 => {}
            0x40..=0x7e => {
                self.escape = Escape::None;
                if !self.csi_private {
                    self.csi_final(byte);
                }
            }
            // A control byte within a sequence: drop the sequence.
            _ => self.escape = Escape::None,
        }
    }

    fn csi_final(&mut self, action: u8) {
        let first = self.csi_params.first().copied().unwrap_or(0);
        let count = usize::from(first.max(1));
        match action {
            // Erase in line: what progress bars use after `\r`.
            b'K' => match first {
                0 => self.line.truncate(self.column),
                1 => {
                    let end = (self.column + 1).min(self.line.len());
                    self.line[..end].fill(' ');
                }
                _ => self.line.clear(),
            },
            b'G' => self.column = count - 1,
            b'C' => self.column += count,
            b'D' => self.column = self.column.saturating_sub(count),
            _ => {}
        }
    }

    fn put(&mut self, character: char) {
        if self.column < self.line.len() {
            self.line[self.column] = character;
        } else {
            self.line.resize(self.column, ' ');
            self.line.push(character);
        }
        self.column += 1;
    }
}

/// Cleans a whole byte string at once.
#[must_use]
pub fn clean_text(bytes: &[u8]) -> String {
    let mut cleaner = TextCleaner::new();
    let mut text = String::with_capacity(bytes.len());
    cleaner.push(bytes, &mut text);
    cleaner.finish(&mut text);
    text
}

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
}

impl CappedText {
    #[must_use]
    pub fn new(max_bytes: usize) -> Self {
        Self {
            max_bytes: max_bytes.max(2),
            head: String::new(),
            tail: String::new(),
            cut: false,
            total_bytes: 0,
            total_lines: 0,
        }
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
        }
    }

    fn half(&self) -> usize {
        self.max_bytes / 2
    }

    /// Whether the text had to be cut.
    #[must_use]
    pub fn is_cut(&self) -> bool {
        self.cut
    }

    /// The text: whole, or head + one notice line naming what was left out and where it is +
    /// tail.
    #[must_use]
    pub fn render(&self, full_output: Option<&Path>) -> String {
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
        let place = full_output.map_or_else(
            || "the full output was not saved".to_owned(),
            |path| format!("full output: {}", path.display()),
        );
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

/// The folder for call logs: `$XDG_STATE_HOME/oino/logs`, `~/.local/state/oino/logs`, or the temp
/// dir, created private (0700).
pub fn log_dir() -> std::io::Result<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|value| !value.is_empty())
                .map(|home| PathBuf::from(home).join(".local/state"))
        });
    let candidates = base
        .map(|base| base.join("oino/logs"))
        .into_iter()
        .chain(std::iter::once(
            std::env::temp_dir().join(format!("oino-{}/logs", nix::unistd::getuid())),
        ));
    let mut last_error = None;
    for dir in candidates {
        match std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
        {
            Ok(()) => return Ok(dir),
            Err(err) => last_error = Some(err),
        }
    }
    Err(last_error.unwrap_or_else(|| std::io::Error::other("no folder for logs")))
}

/// How long call logs are kept.
pub const LOG_RETENTION: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// Removes the `.log` files in `dir` last written more than `retention` ago; returns how many.
#[allow(clippy::must_use_candidate)] // Pruning is the point; the count is for tests.
pub fn prune_logs(dir: &Path, retention: std::time::Duration) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let now = std::time::SystemTime::now();
    entries
        .flatten()
        .filter(|entry| entry.path().extension().is_some_and(|ext| ext == "log"))
        .filter(|entry| {
            entry
                .metadata()
                .and_then(|meta| meta.modified())
                .is_ok_and(|modified| {
                    now.duration_since(modified)
                        .is_ok_and(|age| age > retention)
                })
        })
        .filter(|entry| std::fs::remove_file(entry.path()).is_ok())
        .count()
}

/// The complete raw output of one call, appended as it arrives.
#[derive(Debug)]
pub struct LogFile {
    file: File,
    path: PathBuf,
    bytes: u64,
}

impl LogFile {
    /// Creates a new log for `call_id` in `dir` (0600).
    pub fn create(dir: &Path, call_id: &str) -> std::io::Result<Self> {
        let safe_id: String = call_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_millis());
        let mut attempt = 0u32;
        loop {
            let path = dir.join(format!("{safe_id}-{stamp}-{attempt}.log"));
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(file) => {
                    return Ok(Self {
                        file,
                        path,
                        bytes: 0,
                    });
                }
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                    attempt += 1;
                }
                Err(err) => return Err(err),
            }
        }
    }

    /// Appends a chunk. Unbuffered, so readers of the file see it at once.
    pub fn append(&mut self, chunk: &[u8]) -> std::io::Result<()> {
        self.file.write_all(chunk)?;
        self.bytes += chunk.len() as u64;
        Ok(())
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes written so far.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.bytes
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }
}

/// Lines between two entries of a [`LineIndex`].
const LINE_INDEX_STRIDE: u64 = 1024;

/// Where the lines of a log start: every 1024th line's offset, so that any line is found by
/// reading at most 1024 lines, in a few kilobytes per million lines.
#[derive(Clone, Debug, Default)]
pub struct LineIndex {
    /// Newlines seen so far.
    newlines: u64,
    /// `starts[k]`: raw offset where line `(k + 1) * STRIDE` starts.
    starts: Vec<u64>,
}

impl LineIndex {
    /// Takes note of a chunk that starts at raw offset `base`.
    pub fn record(&mut self, base: u64, chunk: &[u8]) {
        for (position, _) in chunk.iter().enumerate().filter(|(_, byte)| **byte == b'\n') {
            self.newlines += 1;
            if self.newlines % LINE_INDEX_STRIDE == 0 {
                self.starts.push(base + position as u64 + 1);
            }
        }
    }

    /// Lines so far, the unfinished last one included.
    #[must_use]
    pub fn lines(&self) -> u64 {
        self.newlines + 1
    }

    /// A line at or before `line` whose start is known, and that start.
    fn known_start(&self, line: u64) -> (u64, u64) {
        let entry = line / LINE_INDEX_STRIDE;
        match entry
            .checked_sub(1)
            .and_then(|k| self.starts.get(usize::try_from(k).ok()?))
        {
            Some(offset) => (entry * LINE_INDEX_STRIDE, *offset),
            None => (0, 0),
        }
    }
}

/// Reads clean lines `[first, first + count)` of a log whose first `end` bytes are written.
pub fn read_lines(
    path: &Path,
    index: &LineIndex,
    first: u64,
    count: usize,
    end: u64,
) -> std::io::Result<Vec<String>> {
    use std::io::BufRead;
    let (mut line, offset) = index.known_start(first);
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(offset))?;
    let mut reader = std::io::BufReader::new(file.take(end.saturating_sub(offset)));
    let mut raw = Vec::new();
    let mut lines = Vec::with_capacity(count);
    while lines.len() < count {
        raw.clear();
        if reader.read_until(b'\n', &mut raw)? == 0 {
            break;
        }
        if line >= first {
            let text = clean_text(&raw);
            lines.push(text.trim_end_matches('\n').to_owned());
        }
        line += 1;
    }
    Ok(lines)
}

/// The line of a log nearest to `from` (before it, or after it when `newer`) whose clean text
/// contains `query` (as [`crate::app::matches_query`] decides).
pub fn find_line(
    path: &Path,
    end: u64,
    from: u64,
    newer: bool,
    matches: impl Fn(&str) -> bool,
) -> std::io::Result<Option<u64>> {
    use std::io::BufRead;
    let file = File::open(path)?;
    let mut reader = std::io::BufReader::new(file.take(end));
    let mut raw = Vec::new();
    let mut line = 0;
    let mut found = None;
    loop {
        raw.clear();
        if reader.read_until(b'\n', &mut raw)? == 0 {
            return Ok(found);
        }
        let wanted = if newer { line > from } else { line < from };
        if wanted && matches(&clean_text(&raw)) {
            found = Some(line);
            if newer {
                return Ok(found);
            }
        }
        if !newer && line >= from {
            return Ok(found);
        }
        line += 1;
    }
}

/// A piece of output read back from a log: clean text of raw bytes `[from, next_offset)`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OutputSlice {
    pub text: String,
    /// Raw offset where this slice started.
    pub from: u64,
    /// Raw offset to ask from next time.
    pub next_offset: u64,
}

/// Reads raw bytes `[from, end)` of a log, at most `max_bytes` of them, and cleans them. The slice
/// ends at a line's end when it is cut short, so that the next read starts on a fresh line.
pub fn read_log_slice(
    path: &Path,
    from: u64,
    end: u64,
    max_bytes: usize,
) -> std::io::Result<OutputSlice> {
    let from = from.min(end);
    let available = usize::try_from(end - from).unwrap_or(usize::MAX);
    let wanted = available.min(max_bytes.max(1));
    let mut raw = vec![0; wanted];
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(from))?;
    file.read_exact(&mut raw)?;
    if wanted < available {
        if let Some(newline) = raw.iter().rposition(|byte| *byte == b'\n') {
            raw.truncate(newline + 1);
        }
    }
    Ok(OutputSlice {
        text: clean_text(&raw),
        from,
        next_offset: from + raw.len() as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn clean_in_pieces(bytes: &[u8], piece: usize) -> String {
        let mut cleaner = TextCleaner::new();
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
        assert_eq!(clean_text(raw), "ok done!\n");
    }

    #[test]
    fn carriage_return_progress_resolves_to_its_last_state() {
        let raw = b"progress 10%\rprogress 50%\rprogress 100%\r\ndone\r\n";
        assert_eq!(clean_text(raw), "progress 100%\ndone\n");
        let erased = b"downloading a long name\r\x1b[Kdone\r\n";
        assert_eq!(clean_text(erased), "done\n");
        let spinner = b"working |\x08/\x08-\x08\\\x08 ok\r\n";
        assert_eq!(clean_text(spinner), "working  ok\n");
    }

    #[test]
    fn invalid_utf8_is_replaced_and_valid_utf8_survives_any_split() {
        let raw = "héllo wörld ✓ 🦀\r\n".as_bytes();
        for piece in 1..8 {
            assert_eq!(clean_in_pieces(raw, piece), "héllo wörld ✓ 🦀\n");
        }
        assert_eq!(clean_text(b"a\xffb\xe2\x9c\n"), "a\u{fffd}b\u{fffd}\n");
    }

    #[test]
    fn escape_sequences_split_across_chunks_are_removed() {
        let raw = b"\x1b[38;2;10;20;30mrgb\x1b[0m\r\n\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\r\n";
        for piece in 1..6 {
            assert_eq!(clean_in_pieces(raw, piece), "rgb\nlink\n");
        }
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

    #[test]
    fn old_logs_are_pruned_and_new_ones_kept() {
        let dir = std::env::temp_dir().join(format!("oino-prune-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = LogFile::create(&dir, "fresh").unwrap();
        let other = dir.join("notes.txt");
        std::fs::write(&other, "not a log").unwrap();
        assert_eq!(prune_logs(&dir, std::time::Duration::from_secs(3600)), 0);
        assert!(log.path().exists());
        assert_eq!(prune_logs(&dir, std::time::Duration::ZERO), 1);
        assert!(!log.path().exists());
        assert!(other.exists());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn lines_are_found_through_the_index_and_searched() {
        let dir = std::env::temp_dir().join(format!("oino-lines-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut log = LogFile::create(&dir, "lines").unwrap();
        let mut index = LineIndex::default();
        for chunk in 0..10 {
            let raw: String = (chunk * 500..(chunk + 1) * 500)
                .map(|n| ["\x1b[32mline ", &n.to_string(), "\x1b[0m\r\n"].concat())
                .collect();
            index.record(log.len(), raw.as_bytes());
            log.append(raw.as_bytes()).unwrap();
        }
        assert_eq!(index.lines(), 5001);
        let lines = read_lines(log.path(), &index, 2047, 3, log.len()).unwrap();
        assert_eq!(lines, ["line 2047", "line 2048", "line 2049"]);
        let last = read_lines(log.path(), &index, 4999, 5, log.len()).unwrap();
        assert_eq!(last, ["line 4999"]);
        let is = |wanted: &'static str| move |text: &str| text.trim_end() == wanted;
        assert_eq!(
            find_line(log.path(), log.len(), 4000, false, is("line 123")).unwrap(),
            Some(123)
        );
        assert_eq!(
            find_line(log.path(), log.len(), 100, true, is("line 4321")).unwrap(),
            Some(4321)
        );
        assert_eq!(
            find_line(log.path(), log.len(), 100, false, is("line 4321")).unwrap(),
            None
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn log_slices_end_on_a_line_and_resume_exactly() {
        let dir = std::env::temp_dir().join(format!("oino-slice-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut log = LogFile::create(&dir, "slice test").unwrap();
        let raw: String = (0..100).map(|n| n.to_string() + "\r\n").collect();
        log.append(raw.as_bytes()).unwrap();
        let mut offset = 0;
        let mut text = String::new();
        while offset < log.len() {
            let slice = read_log_slice(log.path(), offset, log.len(), 37).unwrap();
            assert!(slice.next_offset > offset);
            text.push_str(&slice.text);
            offset = slice.next_offset;
        }
        assert_eq!(text, clean_text(raw.as_bytes()));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
