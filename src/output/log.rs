//! The complete raw output of a call: a log file, written as output arrives.
//!
//! When the file cannot be written (a full disk, a quota), nothing is lost silently: the error
//! is kept to be told wherever the call is shown, the file keeps what it got, and from there on
//! the newest output is kept in memory ([`MEMORY_TAIL_BYTES`]), so that its readers still get it.
//! [`LogView`] is what a reader holds: the file's part and the memory's part, and the gap between
//! them once the memory had to let its oldest part go.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::index::{Checkpoint, ChunkStart};

/// Raw output kept in memory per call once its log cannot be written, while it runs…
pub const MEMORY_TAIL_BYTES: usize = 8 * 1024 * 1024;
/// …once it has ended…
pub const ENDED_MEMORY_TAIL_BYTES: usize = 1024 * 1024;
/// …and once it is an old one in a long list.
pub const OLD_MEMORY_TAIL_BYTES: usize = 64 * 1024;
/// Small chunks kept in memory are joined up to this size (or an eighth of the limit), so that a
/// program writing a byte at a time costs bytes, not a chunk each.
const MEMORY_CHUNK_BYTES: usize = 64 * 1024;

/// How long call logs are kept.
pub const LOG_RETENTION: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

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

/// A new, private (0600) log file for `call_id` in `dir`.
pub fn create_log_file(dir: &Path, call_id: &str) -> std::io::Result<(File, PathBuf)> {
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
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
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

/// The raw output of one call: its log file, and the newest part in memory once the file
/// cannot be written.
#[derive(Debug)]
pub struct RawLog {
    path: PathBuf,
    /// Open while the call writes; closed when it has ended or the file failed.
    file: Option<File>,
    file_len: u64,
    failure: Option<String>,
    memory: VecDeque<MemoryChunk>,
    memory_bytes: usize,
    memory_limit: usize,
    /// Memory had to drop its oldest chunks.
    memory_trimmed: bool,
}

impl RawLog {
    /// A log for `call_id` in `dir`; when no file can be made there (a full disk), one in
    /// memory that says why, so that the call still runs (to free space, say).
    #[must_use]
    pub fn create(dir: &Path, call_id: &str) -> Self {
        let created = create_log_file(dir, call_id).or_else(|err| {
            // The folder was removed while oino ran: make it again.
            if err.kind() != std::io::ErrorKind::NotFound {
                return Err(err);
            }
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
            create_log_file(dir, call_id)
        });
        match created {
            Ok((file, path)) => Self::over(file, path, MEMORY_TAIL_BYTES),
            Err(err) => Self {
                failure: Some(format!("creating a log in {}: {err}", dir.display())),
                file: None,
                ..Self::over_nothing(dir.join(format!("{call_id}.log")), MEMORY_TAIL_BYTES)
            },
        }
    }

    fn over_nothing(path: PathBuf, memory_limit: usize) -> Self {
        Self {
            path,
            file: None,
            file_len: 0,
            failure: None,
            memory: VecDeque::new(),
            memory_bytes: 0,
            memory_limit,
            memory_trimmed: false,
        }
    }

    /// A log over an open file; `memory_limit` bytes are kept in memory once it fails.
    #[must_use]
    pub fn over(file: File, path: PathBuf, memory_limit: usize) -> Self {
        Self {
            file: Some(file),
            ..Self::over_nothing(path, memory_limit)
        }
    }

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
    pub fn append(&mut self, offset: u64, chunk: &[u8], start: ChunkStart) {
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
                self.file_len += written as u64;
                match outcome {
                    Ok(()) => return,
                    Err(err) => {
                        self.failure = Some(format!("writing {}: {err}", self.path.display()));
                        self.file = None;
                        // What the file did not get starts exactly where it stops.
                        self.keep(MemoryChunk {
                            offset: offset + written as u64,
                            bytes: Arc::new(chunk[written..].to_vec()),
                            start: ChunkStart { boundary: None },
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
        self.file = None;
        self.limit_memory(ENDED_MEMORY_TAIL_BYTES);
    }

    /// Keeps at most `limit` bytes in memory from now on (the newest).
    pub fn limit_memory(&mut self, limit: usize) {
        self.memory_limit = self.memory_limit.min(limit);
        self.trim();
    }

    /// What a reader needs, taken quickly under the owner's lock and read without it.
    #[must_use]
    pub fn view(&self) -> LogView {
        LogView {
            path: self.path.clone(),
            file_len: self.file_len,
            memory: self.memory.iter().cloned().collect(),
            resume: self
                .memory_trimmed
                .then(|| self.memory.front().and_then(|chunk| chunk.start.boundary))
                .flatten(),
        }
    }
}

/// A reader's view of a log: the file's bytes, then the memory's (maybe after a gap).
#[derive(Clone, Debug)]
pub struct LogView {
    path: PathBuf,
    file_len: u64,
    memory: Vec<MemoryChunk>,
    /// Where reading resumes after the gap, when memory dropped its oldest part.
    resume: Option<Checkpoint>,
}

/// What a read at an offset finds.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece {
    /// Bytes were read into the buffer.
    Bytes(usize),
    /// The bytes from the offset up to `resume` were lost (the log could not be written and
    /// memory kept only the newest part); reading goes on from there.
    Gap { resume: Checkpoint },
    /// Nothing is stored at that offset.
    End,
}

impl LogView {
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads what is stored at `offset` into `buffer` (at most its length).
    pub fn read_at(&self, offset: u64, buffer: &mut [u8]) -> std::io::Result<Piece> {
        if offset < self.file_len {
            let wanted = usize::try_from(self.file_len - offset)
                .unwrap_or(usize::MAX)
                .min(buffer.len());
            let mut file = File::open(&self.path)?;
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
                    format!("{} is shorter than oino wrote it", self.path.display()),
                ));
            }
            return Ok(Piece::Bytes(read));
        }
        if let Some(resume) = self.resume {
            if offset < resume.offset {
                return Ok(Piece::Gap { resume });
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::Style;

    fn read_all(view: &LogView, from: u64) -> (Vec<u8>, Vec<u64>) {
        let mut offset = from;
        let mut bytes = Vec::new();
        let mut gaps = Vec::new();
        let mut buffer = [0; 7];
        loop {
            match view.read_at(offset, &mut buffer).expect("read") {
                Piece::Bytes(count) => {
                    bytes.extend_from_slice(&buffer[..count]);
                    offset += count as u64;
                }
                Piece::Gap { resume } => {
                    gaps.push(offset);
                    offset = resume.offset;
                }
                Piece::End => return (bytes, gaps),
            }
        }
    }

    #[test]
    fn old_logs_are_pruned_and_new_ones_kept() {
        let dir = std::env::temp_dir().join(format!("oino-prune-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = RawLog::create(&dir, "fresh");
        assert!(log.failure().is_none());
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
    fn a_log_folder_removed_meanwhile_is_made_again() {
        let dir = std::env::temp_dir().join(format!("oino-removed-{}", std::process::id()));
        let log = RawLog::create(&dir.join("logs"), "again");
        assert!(log.failure().is_none(), "{:?}", log.failure());
        assert!(log.path().exists());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_byte_at_a_time_is_kept_in_few_chunks_and_an_ended_call_keeps_less() {
        let full = OpenOptions::new().write(true).open("/dev/full").unwrap();
        let mut log = RawLog::over(full, PathBuf::from("/dev/full"), MEMORY_TAIL_BYTES);
        for (offset, n) in (0..200_000u32).enumerate() {
            let offset = offset as u64;
            let byte = [b'a' + u8::try_from(n % 26).unwrap()];
            let start = ChunkStart {
                boundary: Some(Checkpoint {
                    offset,
                    line: 0,
                    line_start: false,
                    pen: Style::default(),
                }),
            };
            log.append(offset, &byte, start);
        }
        assert!(log.memory.len() <= 4, "{} chunks", log.memory.len());
        assert_eq!(read_all(&log.view(), 0).0.len(), 200_000);
        log.close();
        assert!(log.memory_bytes <= ENDED_MEMORY_TAIL_BYTES);
    }

    #[test]
    fn a_full_file_keeps_the_newest_output_in_memory() {
        // /dev/full fails every write, as a full disk does.
        let full = OpenOptions::new().write(true).open("/dev/full").unwrap();
        let mut log = RawLog::over(full, PathBuf::from("/dev/full"), 10);
        let at = |offset| ChunkStart {
            boundary: Some(Checkpoint {
                offset,
                line: 0,
                line_start: false,
                pen: Style::default(),
            }),
        };
        log.append(0, b"abcd", at(0));
        assert!(log.failure().is_some_and(|why| why.contains("/dev/full")));
        log.append(4, b"efgh", at(4));
        assert_eq!(read_all(&log.view(), 0), (b"abcdefgh".to_vec(), vec![]));
        // Past the limit, the oldest part goes and readers are told where the gap is.
        log.append(8, b"ijkl", at(8));
        let (bytes, gaps) = read_all(&log.view(), 0);
        assert_eq!(
            (bytes.as_slice(), gaps.as_slice()),
            (&b"efghijkl"[..], &[0][..])
        );
        assert_eq!(read_all(&log.view(), 5).0, b"fghijkl");
    }
}
