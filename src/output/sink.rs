//! Where every raw byte of one call goes, whoever consumes the process: the log, the index of
//! boundaries and lines, and the screen. Shared by the call, the task it may become, and the
//! core's readers.
//!
//! Readers are handed only boundaries: `readable` is the index's last boundary, so a follower
//! woken by new output reads whole characters and whole sequences; when the process has ended,
//! everything is readable.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;

use super::index::{Checkpoint, OutputIndex};
use super::log::{LogView, MEMORY_TAIL_BYTES, OLD_MEMORY_TAIL_BYTES, RawLog};
use super::read::{self, OutputSlice};
use super::search::{HitCounter, Matcher, SearchHit};
use crate::pty::TermSize;
use crate::screen::{Screen, ScreenSnapshot};

/// The log and its index, changed together.
struct Recorded {
    log: RawLog,
    index: OutputIndex,
}

/// The output of one call.
pub struct OutputSink {
    recorded: Mutex<Recorded>,
    log_path: PathBuf,
    screen: Mutex<Screen>,
    /// The last boundary: readers read up to here.
    readable: watch::Sender<u64>,
    /// The terminal's width, for cleaning text as it would show.
    width: AtomicU16,
    /// Set by output, cleared by a snapshot: notices of change are sent once per look.
    changed: AtomicBool,
    on_change: Box<dyn Fn() + Send + Sync>,
    /// The last search's matching lines, while nothing new is written: `n` and `N` through a
    /// long log read it once.
    search_cache: Mutex<Option<SearchCache>>,
}

/// Matching lines kept of one search (8 bytes each); a search with more reads the log each time.
const MAX_CACHED_MATCHES: usize = 1 << 20;

/// What the last search found, and of what.
struct SearchCache {
    pattern: String,
    /// The log's readable end when it was read.
    end: u64,
    width: u16,
    /// The matching lines, oldest first.
    lines: Vec<u64>,
}

/// What a reader takes under the lock, to read without it.
struct ReadPlan {
    view: LogView,
    /// Where the read starts.
    checkpoint: Checkpoint,
    lines: u64,
    end: u64,
    width: u16,
}

impl OutputSink {
    /// `on_change` is called when output arrives after the last snapshot (not for every chunk).
    pub fn new(log: RawLog, screen: Screen, on_change: impl Fn() + Send + Sync + 'static) -> Self {
        let log_path = log.path().to_owned();
        let width = screen.size().cols;
        Self {
            recorded: Mutex::new(Recorded {
                log,
                index: OutputIndex::default(),
            }),
            log_path,
            screen: Mutex::new(screen),
            readable: watch::Sender::new(0),
            width: AtomicU16::new(width),
            changed: AtomicBool::new(false),
            on_change: Box::new(on_change),
            search_cache: Mutex::new(None),
        }
    }

    fn recorded(&self) -> MutexGuard<'_, Recorded> {
        self.recorded.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a chunk; returns the answers to the terminal queries in it.
    pub fn record(&self, chunk: &[u8]) -> Vec<u8> {
        {
            let mut recorded = self.recorded();
            let Recorded { log, index } = &mut *recorded;
            let offset = index.recorded();
            let start = index.record(chunk);
            log.append(offset, chunk, start);
            if let Some(dropped) = log.take_dropped() {
                index.forget(dropped);
            }
            self.readable.send_if_modified(|readable| {
                let moved = *readable != index.boundary();
                *readable = index.boundary();
                moved
            });
        }
        let answers = self
            .screen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .feed(chunk);
        if !self.changed.swap(true, Ordering::AcqRel) {
            (self.on_change)();
        }
        answers
    }

    /// The call's log file.
    #[must_use]
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// Raw bytes readable so far (a boundary).
    #[must_use]
    pub(crate) fn readable(&self) -> u64 {
        *self.readable.borrow()
    }

    /// A receiver that wakes when more bytes are readable.
    #[must_use]
    pub(crate) fn readable_watch(&self) -> watch::Receiver<u64> {
        self.readable.subscribe()
    }

    /// Why the log could not be written, and what is kept instead.
    #[must_use]
    pub fn log_error(&self) -> Option<String> {
        let mut recorded = self.recorded();
        recorded.log.check_removed();
        let after_end = recorded.log.failed_after_end();
        recorded.log.failure().map(|failure| {
            if after_end {
                return format!("{failure}: the output it held is gone");
            }
            format!(
                "{failure}: the output from there on is kept in memory only, the newest {} MiB \
                 while it runs",
                MEMORY_TAIL_BYTES / (1024 * 1024)
            )
        })
    }

    /// What was left out of the log once it reached its cap.
    #[must_use]
    pub(crate) fn log_cut(&self) -> Option<super::LogCut> {
        self.recorded().log.cut()
    }

    /// The terminal's width now.
    #[must_use]
    pub fn width(&self) -> u16 {
        self.width.load(Ordering::Relaxed)
    }

    /// The terminal's size now.
    #[must_use]
    pub fn size(&self) -> TermSize {
        self.screen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .size()
    }

    /// The screen at `size`, scrolled back `scroll_offset` rows.
    pub fn snapshot(&self, size: Option<TermSize>, scroll_offset: usize) -> ScreenSnapshot {
        self.changed.store(false, Ordering::Release);
        let mut screen = self.screen.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(size) = size {
            screen.resize(size);
            self.width.store(screen.size().cols, Ordering::Relaxed);
        }
        screen.snapshot(scroll_offset)
    }

    /// While a full-screen program has the alternate screen on, its rows as text: its output
    /// is a drawing, and the screen is what it shows.
    #[must_use]
    pub(crate) fn full_screen_text(&self) -> Option<String> {
        let view = self.snapshot(None, 0).view();
        view.alternate_screen.then(|| view.shown_text())
    }

    /// A read's plan, starting at the checkpoint `start` picks.
    fn plan(&self, start: impl FnOnce(&OutputIndex) -> Checkpoint) -> ReadPlan {
        let recorded = self.recorded();
        ReadPlan {
            view: recorded.log.view(),
            checkpoint: start(&recorded.index),
            lines: recorded.index.lines(),
            end: recorded.index.boundary(),
            width: self.width(),
        }
    }

    /// Clean output from raw offset `from` (moved to the first boundary at or after it), at
    /// most about `max_bytes` raw bytes of it.
    pub fn read(&self, from: u64, max_bytes: usize) -> std::io::Result<OutputSlice> {
        let plan = self.plan(|index| index.checkpoint_before(from));
        let from = read::boundary_at_or_after(&plan.view, plan.checkpoint, from, plan.end)?;
        read::read_slice(&plan.view, from, plan.end, max_bytes, plan.width)
    }

    /// [`OutputSink::read`] from `from`, a boundary an earlier read gave (its `next_offset`):
    /// nothing before it is scanned again, so following output that has no newline costs what is
    /// new only. A log that was capped or lost bytes is read the careful way.
    pub(crate) fn read_from_boundary(
        &self,
        from: u64,
        max_bytes: usize,
    ) -> std::io::Result<OutputSlice> {
        if self.log_cut().is_some() || self.log_error().is_some() {
            return self.read(from, max_bytes);
        }
        let plan = self.plan(|index| index.checkpoint_before(from));
        read::read_slice(
            &plan.view,
            from.min(plan.end),
            plan.end,
            max_bytes,
            plan.width,
        )
    }

    /// Lines `[first, first + count)` of the whole output, colors kept as SGR sequences, and how
    /// many lines there are.
    pub(crate) fn read_lines(
        &self,
        first: u64,
        count: usize,
    ) -> std::io::Result<(Vec<String>, u64)> {
        let plan = self.plan(|index| index.checkpoint_for_line(first));
        let total = plan.lines;
        if count == 0 || first >= total {
            return Ok((Vec::new(), total));
        }
        let lines = read::read_lines(
            &plan.view,
            plan.checkpoint,
            first,
            count,
            plan.end,
            plan.width,
        )?;
        Ok((lines, total))
    }

    /// Lines so far, the unfinished last one included.
    #[must_use]
    pub fn lines(&self) -> u64 {
        self.recorded().index.lines()
    }

    fn search_cache(&self) -> std::sync::MutexGuard<'_, Option<SearchCache>> {
        self.search_cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The line nearest to `from` (before it, or after it when `newer`) that `pattern` matches,
    /// and how many lines it matches. The whole log is read, unless the last search was of the
    /// same pattern and nothing was written since: then its lines are counted again.
    pub fn find_line(
        &self,
        from: u64,
        newer: bool,
        pattern: &Matcher,
    ) -> std::io::Result<SearchHit> {
        let plan = self.plan(|index| index.checkpoint_before(0));
        let mut counter = HitCounter::new(from, newer);
        if let Some(cached) = self.search_cache().as_ref().filter(|cached| {
            cached.pattern == pattern.pattern()
                && cached.end == plan.end
                && cached.width == plan.width
        }) {
            cached.lines.iter().for_each(|&line| counter.matched(line));
            return Ok(counter.hit());
        }
        // The log is read without the cache's lock: a read of gigabytes must not hold up
        // whoever retires this entry meanwhile (with the core's lock held).
        let mut lines = Some(Vec::new());
        read::each_matching_line(
            &plan.view,
            plan.end,
            plan.width,
            |line| pattern.is_match(line),
            |line| {
                counter.matched(line);
                // Too many to keep: the next search reads the log again.
                lines = lines
                    .take()
                    .filter(|kept: &Vec<u64>| kept.len() < MAX_CACHED_MATCHES)
                    .map(|mut kept| {
                        kept.push(line);
                        kept
                    });
            },
        )?;
        *self.search_cache() = lines.map(|lines| SearchCache {
            pattern: pattern.pattern().to_owned(),
            end: plan.end,
            width: plan.width,
            lines,
        });
        Ok(counter.hit())
    }

    /// The process has ended and all its output is recorded: everything becomes readable, the
    /// log file is closed, and what waits to be parsed is, so that its memory goes.
    pub(crate) fn settle(&self) {
        {
            let mut recorded = self.recorded();
            recorded.index.finish();
            recorded.log.close();
            self.readable.send_replace(recorded.index.boundary());
        }
        self.screen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .settle();
    }

    /// An old finished call in a long list: its screen keeps only its text (see
    /// [`Screen::freeze`]) and memory only the newest [`OLD_MEMORY_TAIL_BYTES`] of a log that
    /// could not be written.
    pub(crate) fn retire(&self) {
        self.recorded().log.limit_memory(OLD_MEMORY_TAIL_BYTES);
        *self.search_cache() = None;
        self.screen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .freeze();
    }

    /// Resizes the screen model (the PTY is resized by the caller).
    pub fn resize(&self, size: TermSize) {
        let mut screen = self.screen.lock().unwrap_or_else(PoisonError::into_inner);
        screen.resize(size);
        self.width.store(screen.size().cols, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_on_from_each_next_offset_give_what_one_whole_read_gives() {
        let dir = std::env::temp_dir().join(format!("oino-sink-read-on-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let size = TermSize::new(/*cols*/ 80, /*rows*/ 24);
        let sink = OutputSink::new(
            RawLog::create(&dir, "read-on"),
            Screen::new(size, 100),
            || {},
        );
        // Characters and sequences that small reads cut through, past several checkpoints.
        let line = "héllo \x1b[1;31mwörld\x1b[0m ✓ progress 50%\r progress 100%\r\n";
        for _ in 0..20_000 {
            sink.record(line.as_bytes());
        }
        let whole = sink.read(0, usize::MAX).unwrap();
        assert_eq!(whole.text.lines().count(), 20_000);
        let mut read = String::new();
        let mut from = 0;
        loop {
            let slice = sink.read(from, 1000).unwrap();
            read.push_str(&slice.text);
            if slice.next_offset == from {
                break;
            }
            from = slice.next_offset;
        }
        assert_eq!(read, whole.text);
        // An offset within a character moves on to the next boundary.
        let inside = u64::try_from(line.find('é').unwrap() + 1).unwrap();
        let moved = sink.read(inside, 1000).unwrap();
        assert!(moved.from > inside, "{}", moved.from);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_search_again_is_counted_from_what_it_kept_until_more_is_written() {
        let dir = std::env::temp_dir().join(format!("oino-sink-search-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let size = TermSize::new(/*cols*/ 80, /*rows*/ 24);
        let sink = OutputSink::new(
            RawLog::create(&dir, "search"),
            Screen::new(size, 100),
            || {},
        );
        let lines = (0..100)
            .map(|n| format!("line {n}\r\n"))
            .collect::<Vec<_>>()
            .concat();
        sink.record(lines.as_bytes());
        let pattern = Matcher::new(r"line \d*7$");
        let hit = |line, rank, matches| SearchHit {
            line: Some(line),
            rank,
            matches,
        };
        let first = sink.find_line(1000, false, &pattern).unwrap();
        assert_eq!(first, hit(97, 1, 10));
        // Nothing new: the same answers, from the lines kept.
        assert_eq!(sink.find_line(1000, false, &pattern).unwrap(), first);
        assert_eq!(sink.find_line(97, false, &pattern).unwrap(), hit(87, 2, 10));
        assert_eq!(sink.find_line(7, true, &pattern).unwrap(), hit(17, 9, 10));
        // Another pattern, and output written since, are read anew.
        let other = Matcher::new(r"^line 1\d$");
        assert_eq!(sink.find_line(1000, false, &other).unwrap(), hit(19, 1, 10));
        sink.record(b"line 107\r\n");
        assert_eq!(
            sink.find_line(1000, false, &pattern).unwrap(),
            hit(100, 1, 11)
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
