//! The complete raw output of a call: a log file, written as output arrives.
//!
//! When the file cannot be written (a full disk, a quota), nothing is lost silently: the error
//! is kept to be told wherever the call is shown, the file keeps what it got, and from there on
//! the newest output is kept in memory ([`MEMORY_TAIL_BYTES`]), so that its readers still get it.
//! [`LogView`] is what a reader holds: the file's part and the memory's part, and the gap between
//! them once the memory had to let its oldest part go.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use std::os::unix::fs::MetadataExt;

use nix::fcntl::{Flock, FlockArg};

use super::index::{Checkpoint, ChunkStart};
use crate::paths::{Cause, Folder, UnsafePath, checked_dir};

/// Raw output kept in memory per call once its log cannot be written, while it runs…
pub(crate) const MEMORY_TAIL_BYTES: usize = 8 * 1024 * 1024;
/// …once it has ended…
pub(crate) const ENDED_MEMORY_TAIL_BYTES: usize = 1024 * 1024;
/// …and once it is an old one in a long list.
pub(crate) const OLD_MEMORY_TAIL_BYTES: usize = 64 * 1024;
/// Small chunks kept in memory are joined up to this size (or an eighth of the limit), so that a
/// program writing a byte at a time costs bytes, not a chunk each.
const MEMORY_CHUNK_BYTES: usize = 64 * 1024;

/// The cap of one call's log on disk by default.
pub const DEFAULT_LOG_CAP: u64 = 4 << 30;
/// The smallest cap: its parts stay large enough to be worth a file.
pub const MIN_LOG_CAP: u64 = 1 << 20;

/// How long call logs are kept.
pub const LOG_RETENTION: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// The folder for call logs: `$XDG_STATE_HOME/oino/logs`, `~/.local/state/oino/logs`, or
/// `$TMPDIR/oino-UID/logs` when neither can be made (a service user's home that is not there).
/// Each folder of oino's own is private and the user's (see [`crate::paths::checked_dir`]): one
/// that is there but unsafe is refused, never passed over for the next.
pub fn log_dir() -> Result<PathBuf, UnsafePath> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|value| !value.is_empty())
                .map(|home| PathBuf::from(home).join(".local/state"))
        });
    let candidates = base
        .map(|base| base.join("oino"))
        .into_iter()
        .chain(std::iter::once(
            std::env::temp_dir().join(format!("oino-{}", nix::unistd::getuid())),
        ));
    let remedy = "remove it (as its owner, or as root), or set XDG_STATE_HOME to a folder of yours";
    let mut unusable = None;
    for state in candidates {
        let checked = checked_dir(&state, Folder::Own, remedy)
            .and_then(|()| checked_dir(&state.join("logs"), Folder::Own, remedy));
        match checked {
            Ok(()) => return Ok(state.join("logs")),
            Err(err) if err.cause == Cause::Unusable => unusable = Some(err),
            Err(err) => return Err(err),
        }
    }
    Err(unusable.unwrap_or_else(|| UnsafePath {
        path: PathBuf::from("~/.local/state/oino/logs"),
        cause: Cause::Unusable,
        problem: "no folder for logs".to_owned(),
        remedy: remedy.to_owned(),
    }))
}

/// Removes the `.log` files in `dir` last written more than `retention` ago; returns how many.
/// A log whose call still runs, on this server or any other, is left alone: its head is locked
/// while the call writes (see [`RawLog::over`]), and its parts go with it.
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
            // Not through a link: only a file of the folder's own.
            entry.metadata().is_ok_and(|meta| {
                meta.is_file()
                    && meta.modified().is_ok_and(|modified| {
                        now.duration_since(modified)
                            .is_ok_and(|age| age > retention)
                    })
            })
        })
        .filter(|entry| !in_use(dir, &entry.file_name()))
        .filter(|entry| std::fs::remove_file(entry.path()).is_ok())
        .count()
}

/// Part `number` of the log whose head is `head`: `ID.log`'s parts are `ID.N.log`. What names a
/// part is said here alone.
pub(crate) fn part_path(head: &Path, number: u32) -> PathBuf {
    head.with_extension(format!("{number}.log"))
}

/// The parts beside the log whose head is `head`, by number.
pub(crate) fn parts_of(head: &Path) -> Vec<(u32, PathBuf)> {
    let (Some(dir), Some(stem)) = (
        head.parent(),
        head.file_stem().and_then(|stem| stem.to_str()),
    ) else {
        return Vec::new();
    };
    let mut parts: Vec<(u32, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name();
            let number = name
                .to_str()?
                .strip_prefix(stem)?
                .strip_prefix('.')?
                .strip_suffix(".log")?
                .parse()
                .ok()?;
            Some((number, entry.path()))
        })
        .collect();
    parts.sort();
    parts
}

/// What the log whose head is `head` holds (its parts too, with a line where its cap left some
/// out), cleaned and capped at `max_bytes` as a result is: the output of a call whose server
/// died, read back by its waiter.
#[must_use]
pub fn log_text(head: &Path, max_bytes: usize) -> String {
    /// Wide enough that no line is wrapped by a cursor move the text would not show.
    const WIDTH: u16 = 500;
    let mut capped = super::CappedText::new(max_bytes);
    let mut cleaner = super::TextCleaner::new(WIDTH);
    let mut text = String::new();
    let mut previous = 1;
    for (number, path) in std::iter::once((1, head.to_owned())).chain(parts_of(head)) {
        let Ok(file) = crate::paths::open_for_reading(&path) else {
            continue;
        };
        // Parts the cap removed: what follows starts within a line, maybe a sequence.
        let after_gap = number > previous + 1;
        if after_gap {
            cleaner.finish(&mut text);
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(
                "[... output left out: the log reached its cap (log_cap) and keeps its first part \
                 and its newest ...]\n",
            );
            cleaner = super::TextCleaner::new(WIDTH);
        }
        previous = number;
        clean_file(file, after_gap, &mut cleaner, &mut capped, &mut text);
    }
    cleaner.finish(&mut text);
    capped.push(&text);
    capped.render(Some(head))
}

/// Cleans a file's bytes into `capped` (through `text`); `from_a_line` skips to its first line
/// start.
fn clean_file(
    mut file: File,
    mut from_a_line: bool,
    cleaner: &mut super::TextCleaner,
    capped: &mut super::CappedText,
    text: &mut String,
) {
    use std::io::Read as _;
    let mut buffer = vec![0; 64 * 1024];
    while let Ok(count) = file.read(&mut buffer) {
        if count == 0 {
            break;
        }
        let mut bytes = &buffer[..count];
        if from_a_line {
            let Some(newline) = bytes.iter().position(|byte| *byte == b'\n') else {
                continue;
            };
            bytes = &bytes[newline + 1..];
            from_a_line = false;
        }
        cleaner.push(bytes, text);
        capped.push(text);
        text.clear();
    }
}

/// Whether the log named `name` in `dir` (a head, `ID.log`, or one of its parts, `ID.N.log`)
/// belongs to a call that still writes it: its head is locked.
fn in_use(dir: &Path, name: &std::ffi::OsStr) -> bool {
    let name = name.to_string_lossy();
    let stem = name.split('.').next().unwrap_or(&name);
    let Ok(head) = crate::paths::open_for_reading(&dir.join(format!("{stem}.log"))) else {
        return false;
    };
    Flock::lock(head, FlockArg::LockExclusiveNonblock).is_err()
}

/// A new file at `path`, private (0600); an error when one is there, a link among others.
fn create_private(path: &Path) -> std::io::Result<File> {
    crate::paths::create_new_file(path)
}

/// A new, private (0600) log file for `call_id` in `dir`.
pub(crate) fn create_log_file(dir: &Path, call_id: &str) -> std::io::Result<(File, PathBuf)> {
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
    let stamp = crate::time::now_ms();
    let mut attempt = 0u32;
    loop {
        let path = dir.join(format!("{safe_id}-{stamp}-{attempt}.log"));
        match create_private(&path) {
            Ok(file) => return Ok((file, path)),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                attempt += 1;
            }
            Err(err) => return Err(err),
        }
    }
}

/// Output kept in memory after the log failed.
#[derive(Clone, Debug)]
struct MemoryChunk {
    offset: u64,
    /// Shared with readers' views; copied on write only while one holds it.
    bytes: Arc<Vec<u8>>,
    start: ChunkStart,
}

/// A file of the newest output, once the head is full.
#[derive(Clone, Debug)]
struct Part {
    path: PathBuf,
    /// Raw offset of its first byte.
    offset: u64,
    len: u64,
    /// Its first line start and its first boundary, once it has them: a part is opened when the
    /// one before is full, wherever that falls (inside a string that never ends, say).
    start: ChunkStart,
}

impl Part {
    /// Where a reader coming from a gap starts in it: its first line start, else its first
    /// boundary; `None` while all of it is inside one sequence.
    fn resume(&self) -> Option<Checkpoint> {
        self.start.resume()
    }
}

/// How much of a capped log was kept and left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogCut {
    /// The cap (`log_cap`).
    pub cap: u64,
    /// Bytes kept from the start.
    pub head: u64,
    /// Bytes left out after the head.
    pub left_out: u64,
    /// The newest bytes kept.
    pub newest: u64,
}

impl std::fmt::Display for LogCut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "log capped at {}: {} left out between the first {} and the newest {}",
            super::byte_size(self.cap),
            super::byte_size(self.left_out),
            super::byte_size(self.head),
            super::byte_size(self.newest)
        )
    }
}

/// The raw output of one call: its log file, and the newest part in memory once the file
/// cannot be written.
#[derive(Debug)]
pub struct RawLog {
    path: PathBuf,
    /// The file written to (the head, or the newest part) while the call writes; closed when it
    /// has ended or the file failed.
    file: Option<File>,
    /// Bytes in the head file (the log's own path).
    file_len: u64,
    cap: u64,
    /// The newest output once the head is full, oldest part first.
    parts: VecDeque<Part>,
    /// Parts made so far (the head counts as the first): more than are kept once the oldest
    /// went.
    parts_made: u32,
    /// Raw offsets left out since the last look, whose checkpoints lead nowhere now.
    dropped: Option<std::ops::Range<u64>>,
    failure: Option<String>,
    /// The head file was removed (by a cleanup, by hand): what it held is gone.
    removed: bool,
    /// The failure came after the call ended: nothing was kept in memory instead.
    failed_after_end: bool,
    /// A shared lock on the head while the call writes: a cleanup of old logs (this server's
    /// or another's) leaves a log alone while someone holds it.
    hold: Option<Flock<File>>,
    /// Appends since the files were last looked at for a removal.
    appends_unchecked: u32,
    memory: VecDeque<MemoryChunk>,
    memory_bytes: usize,
    memory_limit: usize,
    /// Memory had to drop its oldest chunks.
    memory_trimmed: bool,
}

/// A log being written is looked at for a removal once in this many appends (and whenever its
/// state is asked for): an `fstat`, cheap beside the writes.
const APPENDS_PER_REMOVAL_CHECK: u32 = 64;

impl RawLog {
    /// A log for `call_id` in `dir`; when no file can be made there (a full disk), one in
    /// memory that says why, so that the call still runs (to free space, say).
    #[must_use]
    pub fn create(dir: &Path, call_id: &str) -> Self {
        match create_log_file(dir, call_id) {
            Ok((file, path)) => Self::over(file, path, MEMORY_TAIL_BYTES),
            Err(err) => Self::in_memory(
                dir,
                call_id,
                format!(
                    "creating a log in {}: {}",
                    dir.display(),
                    crate::paths::describe(&err)
                ),
            ),
        }
    }

    /// A log kept in memory only, for `why` no file could be made.
    #[must_use]
    pub(crate) fn in_memory(dir: &Path, call_id: &str, why: String) -> Self {
        Self {
            failure: Some(why),
            file: None,
            ..Self::over_nothing(dir.join(format!("{call_id}.log")), MEMORY_TAIL_BYTES)
        }
    }

    fn over_nothing(path: PathBuf, memory_limit: usize) -> Self {
        Self {
            path,
            file: None,
            file_len: 0,
            cap: DEFAULT_LOG_CAP,
            parts: VecDeque::new(),
            parts_made: 1,
            dropped: None,
            failure: None,
            removed: false,
            failed_after_end: false,
            hold: None,
            appends_unchecked: 0,
            memory: VecDeque::new(),
            memory_bytes: 0,
            memory_limit,
            memory_trimmed: false,
        }
    }

    /// A log over an open file; `memory_limit` bytes are kept in memory once it fails.
    #[must_use]
    pub fn over(file: File, path: PathBuf, memory_limit: usize) -> Self {
        let hold = file
            .try_clone()
            .ok()
            .and_then(|clone| Flock::lock(clone, FlockArg::LockSharedNonblock).ok());
        Self {
            file: Some(file),
            hold,
            ..Self::over_nothing(path, memory_limit)
        }
    }

    /// Keeps at most about `cap` bytes on disk (at least [`MIN_LOG_CAP`]).
    #[must_use]
    pub fn capped(mut self, cap: u64) -> Self {
        self.cap = cap.max(MIN_LOG_CAP);
        self
    }

    /// What was left out of a capped log, once something was.
    #[must_use]
    pub fn cut(&self) -> Option<LogCut> {
        if !self.is_cut() {
            return None;
        }
        let head = self.file_len;
        let end = self
            .parts
            .back()
            .map_or(head, |part| part.offset + part.len);
        // Nothing kept may be readable yet (all of it inside one endless sequence).
        let resume = self.cut_resume().map_or(end, |resume| resume.offset);
        Some(LogCut {
            cap: self.cap,
            head,
            left_out: resume - head,
            newest: end - resume,
        })
    }

    /// Whether parts were left out.
    fn is_cut(&self) -> bool {
        let kept = u32::try_from(self.parts.len()).unwrap_or(u32::MAX);
        self.parts_made > kept + 1
    }

    /// Where reading resumes after the head, once parts were left out: the first kept part's
    /// resume (a later one's while it has none).
    fn cut_resume(&self) -> Option<Checkpoint> {
        if !self.is_cut() {
            return None;
        }
        self.parts.iter().find_map(Part::resume)
    }

    /// Raw offsets left out since the last call: checkpoints there lead nowhere.
    pub(crate) fn take_dropped(&mut self) -> Option<std::ops::Range<u64>> {
        self.dropped.take()
    }

    /// Before a chunk at `offset` is written: once the file written to is full, a new part is
    /// opened, and the oldest of three goes. The cap is on bytes, whatever they are: the new part
    /// may start inside a sequence (a string that never ends), and readers then resume at its
    /// first line start or boundary.
    fn rotate(&mut self, offset: u64, start: ChunkStart) {
        let (written, limit) = match self.parts.back() {
            None => (self.file_len, self.cap / 4),
            Some(part) => (part.len, self.cap * 3 / 8),
        };
        if written < limit || self.file.is_none() {
            return;
        }
        let number = self.parts_made + 1;
        let path = part_path(&self.path, number);
        match create_private(&path) {
            Ok(file) => {
                self.file = Some(file);
                self.parts_made = number;
            }
            Err(err) => {
                self.failure = Some(format!(
                    "creating {}: {}",
                    path.display(),
                    crate::paths::describe(&err)
                ));
                self.file = None;
                return;
            }
        }
        self.parts.push_back(Part {
            path,
            offset,
            len: 0,
            start,
        });
        if self.parts.len() > 2 {
            if let Some(oldest) = self.parts.pop_front() {
                let _ = std::fs::remove_file(&oldest.path);
                // All from the head's end: what went before is forgotten again, at no cost.
                // Up to where reading resumes, or all of what is kept while nothing there is
                // readable yet.
                let to = self.cut_resume().map_or(offset, |resume| resume.offset);
                self.dropped = Some(self.file_len..to);
            }
        }
    }

    /// Notes where a chunk of the newest part starts, while the part has no line start yet.
    fn note_start(&mut self, start: ChunkStart) {
        if let Some(part) = self.parts.back_mut() {
            if part.start.line_start.is_none() {
                part.start.line_start = start.line_start;
            }
            if part.start.boundary.is_none() {
                part.start.boundary = start.boundary;
            }
        }
    }

    /// Whether a file written to was removed meanwhile (by a cleanup, by hand): then the log
    /// fails as on a full disk, saying so, and the newest output is kept in memory. An ended
    /// call's log is looked for by its path.
    pub(crate) fn check_removed(&mut self) {
        if self.failure.is_some() {
            return;
        }
        self.appends_unchecked = 0;
        let gone = |file: &File| file.metadata().is_ok_and(|meta| meta.nlink() == 0);
        let head_gone = match (&self.hold, &self.file) {
            (Some(hold), _) => gone(hold),
            (None, Some(_)) => false,
            (None, None) => std::fs::symlink_metadata(&self.path)
                .is_err_and(|err| err.kind() == std::io::ErrorKind::NotFound),
        };
        let part_gone = self.parts.back().is_some() && self.file.as_ref().is_some_and(gone);
        if !head_gone && !part_gone {
            return;
        }
        let path = if head_gone {
            &self.path
        } else {
            self.parts.back().map_or(&self.path, |part| &part.path)
        };
        self.failure = Some(format!(
            "{} was removed{} (by a cleanup of old logs, or by hand)",
            path.display(),
            if self.file.is_some() {
                " while the call ran"
            } else {
                ""
            }
        ));
        self.removed = head_gone;
        self.failed_after_end = self.file.is_none();
        self.file = None;
    }

    /// Whether the log failed (was removed) only after its call had ended.
    #[must_use]
    pub(crate) fn failed_after_end(&self) -> bool {
        self.failed_after_end
    }

    /// The log file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Why the file could not be written, once it could not.
    #[must_use]
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    /// Appends the chunk that starts at raw offset `offset`, to the file while it can be
    /// written, else to memory. Unbuffered, so readers of the file see it at once.
    pub(crate) fn append(&mut self, offset: u64, chunk: &[u8], start: ChunkStart) {
        self.appends_unchecked += 1;
        if self.appends_unchecked >= APPENDS_PER_REMOVAL_CHECK {
            self.check_removed();
        }
        if self.failure.is_none() {
            self.rotate(offset, start);
            self.note_start(start);
        }
        if self.failure.is_none() {
            if let Some(file) = &mut self.file {
                let mut written = 0;
                let outcome = loop {
                    if written == chunk.len() {
                        break Ok(());
                    }
                    match file.write(&chunk[written..]) {
                        Ok(0) => break Err(std::io::Error::from(std::io::ErrorKind::WriteZero)),
                        Ok(count) => written += count,
                        Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(err) => break Err(err),
                    }
                };
                let path = if let Some(part) = self.parts.back_mut() {
                    part.len += written as u64;
                    &part.path
                } else {
                    self.file_len += written as u64;
                    &self.path
                };
                match outcome {
                    Ok(()) => return,
                    Err(err) => {
                        self.failure = Some(format!(
                            "writing {}: {}",
                            path.display(),
                            crate::paths::describe(&err)
                        ));
                        self.file = None;
                        // What the file did not get starts exactly where it stops.
                        self.keep(MemoryChunk {
                            offset: offset + written as u64,
                            bytes: Arc::new(chunk[written..].to_vec()),
                            start: ChunkStart::default(),
                        });
                        return;
                    }
                }
            }
        }
        debug_assert!(
            self.failure.is_some(),
            "output written to a closed log would be lost"
        );
        if self.failure.is_some() {
            self.keep(MemoryChunk {
                offset,
                bytes: Arc::new(chunk.to_vec()),
                start,
            });
        }
    }

    fn keep(&mut self, chunk: MemoryChunk) {
        self.memory_bytes += chunk.bytes.len();
        match self.memory.back_mut() {
            Some(last)
                if last.bytes.len() < MEMORY_CHUNK_BYTES.min(self.memory_limit / 8)
                    && last.offset + last.bytes.len() as u64 == chunk.offset =>
            {
                Arc::make_mut(&mut last.bytes).extend_from_slice(&chunk.bytes);
            }
            _ => self.memory.push_back(chunk),
        }
        self.trim();
    }

    /// Keeps memory to its limit, dropping the oldest chunks.
    fn trim(&mut self) {
        while self.memory_bytes > self.memory_limit && self.memory.len() > 1 {
            if let Some(oldest) = self.memory.pop_front() {
                self.memory_bytes -= oldest.bytes.len();
                self.memory_trimmed = true;
            }
        }
        // After a gap, reading can only resume at a boundary: chunks with none go too.
        while self.memory_trimmed
            && self.memory.len() > 1
            && self
                .memory
                .front()
                .is_some_and(|chunk| chunk.start.boundary.is_none())
        {
            if let Some(oldest) = self.memory.pop_front() {
                self.memory_bytes -= oldest.bytes.len();
            }
        }
    }

    /// The call has ended: the file is closed (readers open it by its path), and what memory
    /// holds is cut to [`ENDED_MEMORY_TAIL_BYTES`].
    pub fn close(&mut self) {
        self.check_removed();
        self.file = None;
        self.hold = None;
        self.limit_memory(ENDED_MEMORY_TAIL_BYTES);
    }

    /// Keeps at most `limit` bytes in memory from now on (the newest).
    pub(crate) fn limit_memory(&mut self, limit: usize) {
        self.memory_limit = self.memory_limit.min(limit);
        self.trim();
    }

    /// What a reader needs, taken quickly under the owner's lock and read without it.
    #[must_use]
    pub fn view(&self) -> LogView {
        LogView {
            path: self.path.clone(),
            file_len: self.file_len,
            removed: self.removed,
            parts: self.parts.iter().cloned().collect(),
            cut: self.is_cut(),
            cut_resume: self.cut_resume(),
            memory: self.memory.iter().cloned().collect(),
            resume: self.memory_resume(),
        }
    }

    /// Where reading resumes in memory after a gap: its first line start, else the first
    /// boundary of its oldest chunk.
    fn memory_resume(&self) -> Option<Checkpoint> {
        if !self.memory_trimmed && !self.removed {
            return None;
        }
        self.memory
            .iter()
            .find_map(|chunk| chunk.start.line_start)
            .or_else(|| self.memory.front().and_then(|chunk| chunk.start.boundary))
    }
}

/// Why output is missing from a log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GapCause {
    /// The log reached its cap: the head and the newest part are kept.
    Capped,
    /// The log could not be written and memory kept only the newest part.
    NotWritten,
    /// The log's file was removed (by a cleanup, by hand) while the call ran.
    Removed,
}

/// A reader's view of a log: the file's bytes, then the memory's (maybe after a gap).
#[derive(Clone, Debug)]
pub struct LogView {
    path: PathBuf,
    file_len: u64,
    /// The head file was removed: its bytes are gone.
    removed: bool,
    parts: Vec<Part>,
    /// The log was capped: bytes after the head were left out…
    cut: bool,
    /// …and reading resumes here (nowhere yet while all that is kept is inside a sequence).
    cut_resume: Option<Checkpoint>,
    memory: Vec<MemoryChunk>,
    /// Where reading resumes after the gap, when memory dropped its oldest part or the head
    /// was removed.
    resume: Option<Checkpoint>,
}

/// What a read at an offset finds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Piece {
    /// Bytes were read into the buffer.
    Bytes(usize),
    /// The bytes from the offset up to `resume` are not kept; reading goes on from there.
    Gap { resume: Checkpoint, why: GapCause },
    /// Nothing is stored at that offset.
    End,
}

impl LogView {
    /// The log file read.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads what is stored at `offset` into `buffer` (at most its length). `End` before the
    /// end of what was recorded means that nothing after `offset` can be read yet: the rest is
    /// inside a sequence whose end is still to come.
    pub(crate) fn read_at(&self, offset: u64, buffer: &mut [u8]) -> std::io::Result<Piece> {
        if offset < self.file_len {
            if self.removed {
                let after_head = self.parts.iter().find_map(Part::resume).or(self.resume);
                return after_head
                    .filter(|resume| resume.offset > offset)
                    .map_or_else(
                        || Err(removed_error(&self.path)),
                        |resume| {
                            Ok(Piece::Gap {
                                resume,
                                why: GapCause::Removed,
                            })
                        },
                    );
            }
            return read_file_at(&self.path, offset, self.file_len - offset, buffer).map_err(
                |err| match err.kind() {
                    std::io::ErrorKind::NotFound => removed_error(&self.path),
                    _ => err,
                },
            );
        }
        if self.cut {
            match self.cut_resume {
                Some(resume) if offset < resume.offset => {
                    return Ok(Piece::Gap {
                        resume,
                        why: GapCause::Capped,
                    });
                }
                Some(_) => {}
                None => return Ok(Piece::End),
            }
        }
        for (index, part) in self.parts.iter().enumerate() {
            if offset >= part.offset && offset < part.offset + part.len {
                let within = offset - part.offset;
                return match read_file_at(&part.path, within, part.len - within, buffer) {
                    // Capped away since the view was taken: on to the next part.
                    Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                        match self.parts[index + 1..].iter().find_map(Part::resume) {
                            Some(resume) => Ok(Piece::Gap {
                                resume,
                                why: GapCause::Capped,
                            }),
                            None => Ok(Piece::End),
                        }
                    }
                    read => read,
                };
            }
        }
        if let Some(resume) = self.resume {
            if offset < resume.offset {
                return Ok(Piece::Gap {
                    resume,
                    why: if self.removed {
                        GapCause::Removed
                    } else {
                        GapCause::NotWritten
                    },
                });
            }
        }
        for chunk in &self.memory {
            let end = chunk.offset + chunk.bytes.len() as u64;
            if offset >= chunk.offset && offset < end {
                let start = usize::try_from(offset - chunk.offset).unwrap_or(usize::MAX);
                let count = (chunk.bytes.len() - start).min(buffer.len());
                buffer[..count].copy_from_slice(&chunk.bytes[start..start + count]);
                return Ok(Piece::Bytes(count));
            }
        }
        Ok(Piece::End)
    }
}

/// A log's file that is not there any more, in words.
fn removed_error(path: &Path) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::NotFound,
        format!(
            "its log {} was removed (by a cleanup of old logs, or by hand): the output it held is \
             gone",
            path.display()
        ),
    )
}

/// Reads up to `len` bytes (at least one) of `path` at `offset` into `buffer`.
fn read_file_at(path: &Path, offset: u64, len: u64, buffer: &mut [u8]) -> std::io::Result<Piece> {
    let wanted = usize::try_from(len).unwrap_or(usize::MAX).min(buffer.len());
    let mut file = crate::paths::open_for_reading(path)?;
    file.seek(SeekFrom::Start(offset))?;
    let mut read = 0;
    while read < wanted {
        match file.read(&mut buffer[read..wanted]) {
            Ok(0) => break,
            Ok(count) => read += count,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    if read == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("{} is shorter than oino wrote it", path.display()),
        ));
    }
    Ok(Piece::Bytes(read))
}

#[cfg(test)]
mod tests;
