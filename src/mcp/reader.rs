//! What a `task_output` read gathers (in order, the newest part when it looks for a line) and
//! how it is told: the output, then a line of notes with the task's state and where to read next.

use std::time::Duration;

use regex::Regex;
use rmcp::model::ContentBlock;

use tokio::time::Instant;

use super::PATTERN_PIECE_BYTES;
use crate::core::EntryInfo;
use crate::link::{LinkError, LinkOutput};
use crate::output::{Followed, Follower, LineMatcher};

/// How a `task_output` wait ended.
pub(super) enum Waited {
    /// `max_bytes` of new output are there.
    Full,
    Matched(String),
    Ended,
    TimedOut,
    /// The task wrote nothing for this long.
    Idle(Duration),
    /// The task waits for someone to type, at this prompt.
    Prompt(String),
}

/// How often a wait looks whether the task waits for input.
const PROMPT_LOOK: Duration = Duration::from_millis(250);
/// How long after output this read got a task's mark of waiting for input is believed: the
/// server clears a mark within a tick (250 ms) of new output, so one seen sooner may predate it.
const PROMPT_AFTER_OUTPUT: Duration = Duration::from_millis(300);

/// Output read from an offset on, keeping at most `max_bytes` of the newest text, and looking
/// for a line that matches a pattern.
pub(super) struct OutputReader {
    pub(super) since: u64,
    pub(super) next_offset: u64,
    pub(super) max_bytes: usize,
    pub(super) lines: Option<LineMatcher>,
    /// Slices kept, oldest first: (raw offset it starts at, text).
    pub(super) kept: std::collections::VecDeque<(u64, String)>,
    pub(super) kept_bytes: usize,
}

impl OutputReader {
    pub(super) fn new(since: u64, max_bytes: usize, pattern: Option<Regex>) -> Self {
        Self {
            since,
            next_offset: since,
            max_bytes,
            lines: pattern.map(LineMatcher::new),
            kept: std::collections::VecDeque::new(),
            kept_bytes: 0,
        }
    }

    pub(super) fn looks_for_a_line(&self) -> bool {
        self.lines.is_some()
    }

    /// How a wait that is over ended: a line not ended yet counts only now, at the end (a
    /// prompt waits on one; earlier, it could be half a line).
    pub(super) fn at_the_end(&self, waited: Waited) -> Waited {
        match self.lines.as_ref().and_then(LineMatcher::open_line_match) {
            Some(line) => Waited::Matched(line),
            None => waited,
        }
    }

    /// Whether any output was read.
    pub(super) fn moved(&self) -> bool {
        !self.kept.is_empty()
    }

    /// Adds a slice; returns the first line that matches the pattern, if one does.
    pub(super) fn push(&mut self, slice: crate::output::OutputSlice) -> Option<String> {
        if slice.next_offset <= slice.from {
            return None;
        }
        self.next_offset = slice.next_offset;
        let matched = self
            .lines
            .as_mut()
            .and_then(|lines| lines.feed(&slice.text));
        self.kept_bytes += slice.text.len();
        self.kept.push_back((slice.from, slice.text));
        // Looking for a pattern, only the newest text is kept: it may be met after a lot of
        // output. Read in order, the text was asked for within max_bytes.
        while self.looks_for_a_line() && self.kept_bytes > self.max_bytes && self.kept.len() > 1 {
            if let Some((_, text)) = self.kept.pop_front() {
                self.kept_bytes -= text.len();
            }
        }
        matched
    }

    /// The output read (exactly as the task wrote it, cleaned), then a block of notes in
    /// brackets ending with the task's state and the offset to read from next.
    /// What the wait found, when it is worth saying.
    fn wait_note(&self, entry: &EntryInfo, outcome: &Waited, wait: Duration) -> Option<String> {
        let ended = !entry.state.is_running();
        if let Some(lines) = &self.lines {
            let pattern = lines.pattern().as_str();
            return Some(match outcome {
                Waited::Matched(line) => format!("[matched /{pattern}/: {:?}]", line.trim_end()),
                _ if ended => format!("[the task ended with no line matching /{pattern}/]"),
                Waited::Prompt(_) => {
                    format!("[no line matched /{pattern}/; the task waits for input]")
                }
                Waited::Idle(idle) => format!(
                    "[no line matched /{pattern}/; quiet for {} ms]",
                    idle.as_millis()
                ),
                _ => format!(
                    "[no line matched /{pattern}/ within {} ms]",
                    wait.as_millis()
                ),
            });
        }
        match outcome {
            Waited::Idle(idle) => Some(format!("[quiet for {} ms]", idle.as_millis())),
            // The state line says the prompt.
            Waited::Prompt(_) => None,
            Waited::TimedOut if !self.moved() && !wait.is_zero() && !ended => {
                Some(format!("[no new output within {} ms]", wait.as_millis()))
            }
            _ if !self.moved() => Some("[no new output]".to_owned()),
            _ => None,
        }
    }

    pub(super) fn render(
        &self,
        entry: &EntryInfo,
        (outcome, wait): (&Waited, Duration),
        now_ms: u64,
    ) -> Vec<ContentBlock> {
        let mut notes = Vec::new();
        let kept_from = self
            .kept
            .front()
            .map_or(self.next_offset, |(from, _)| *from);
        if kept_from > self.since {
            // Only an offset that can still be read is offered: the log's cap may have left
            // some of them out since.
            let readable = readable_from(entry, self.since);
            let again = if readable < kept_from {
                format!("read them with since={readable}")
            } else {
                "the log's cap has left them out since".to_owned()
            };
            notes.push(format!(
                "[{} of output skipped, offsets {} to {kept_from}: {again}]",
                crate::output::byte_size(kept_from - self.since),
                self.since,
            ));
        }
        let mut body: String = self.kept.iter().map(|(_, text)| text.as_str()).collect();
        if self.looks_for_a_line() && body.len() > self.max_bytes {
            // One slice longer than asked (cleaning can grow invalid bytes): keep its end.
            let mut cut = body.len() - self.max_bytes;
            while !body.is_char_boundary(cut) {
                cut += 1;
            }
            body.replace_range(..cut, "");
            notes.push(format!(
                "[the first {} of it were cut]",
                crate::output::byte_size(cut as u64)
            ));
        }
        notes.extend(self.wait_note(entry, outcome, wait));
        if let Some(error) = &entry.log_error {
            notes.push(crate::call::log_error_note(error));
        } else if let Some(cut) = &entry.log_cut {
            notes.push(crate::call::log_cut_note(cut, &entry.log_path));
        }
        let state = match outcome {
            Waited::Prompt(prompt) => waiting_words(prompt),
            _ => state_words(entry),
        };
        let more = entry.bytes.saturating_sub(self.next_offset);
        let more = if more > 0 {
            format!(
                " · {} more to read (call again for the next part, or since={} for the newest)",
                crate::output::byte_size(more),
                readable_from(entry, entry.bytes.saturating_sub(self.max_bytes as u64))
            )
        } else {
            String::new()
        };
        notes.push(format!(
            "[{}: {state} · {}{more} · next since={}]",
            task_label(entry),
            ran_words(entry, now_ms),
            self.next_offset
        ));
        let mut content = Vec::new();
        if !body.is_empty() {
            content.push(ContentBlock::text(body));
        }
        content.push(ContentBlock::text(notes.join("\n") + "\n"));
        content
    }
}

/// The first offset at or after `offset` that the entry's log can still be read from: past what
/// its cap left out.
pub(super) fn readable_from(entry: &EntryInfo, offset: u64) -> u64 {
    match &entry.log_cut {
        Some(cut) if (cut.head..cut.head + cut.left_out).contains(&offset) => {
            cut.head + cut.left_out
        }
        _ => offset,
    }
}

/// How long the entry has run (until it ended, else until `now_ms`), as a state line says it.
pub(super) fn ran_words(entry: &EntryInfo, now_ms: u64) -> String {
    let end = entry.ended_ms.unwrap_or(now_ms);
    super::notices::run_time(Duration::from_millis(end.saturating_sub(entry.started_ms)))
}

/// A task's state as a state line says it: `running, waiting for input: "PROMPT"` while it
/// waits at a prompt.
pub(super) fn state_words(entry: &EntryInfo) -> String {
    match &entry.waiting_for_input {
        Some(prompt) if entry.state.is_running() => waiting_words(prompt),
        _ => entry.state.to_string(),
    }
}

fn waiting_words(prompt: &str) -> String {
    format!("running, waiting for input: {prompt:?}")
}

pub(super) fn task_label(entry: &EntryInfo) -> String {
    let id = entry.task_id.as_deref().unwrap_or(&entry.id);
    match &entry.name {
        Some(name) => format!("task {id} ({name:?})"),
        None => format!("task {id}"),
    }
}

/// Reads a task's output into `reader` until the wait ends: `max_bytes` are there, a line
/// matched, the task ended, it went quiet for `idle`, or `deadline` passed. Output there already
/// is read at once, whatever the time.
pub(super) async fn read_until(
    follower: &mut Follower<LinkOutput<'_>>,
    reader: &mut OutputReader,
    deadline: Instant,
    idle: Option<Duration>,
) -> Result<Waited, LinkError> {
    let max_bytes = reader.max_bytes;
    let mut last_output = Instant::now();
    let mut next_look = Instant::now();
    loop {
        // In order, max_bytes at most; looking for a pattern, all of it in large pieces, keeping
        // the newest max_bytes.
        let room = if reader.looks_for_a_line() {
            PATTERN_PIECE_BYTES.max(max_bytes)
        } else {
            max_bytes - reader.kept_bytes.min(max_bytes)
        };
        let until = idle.map_or(deadline, |idle| deadline.min(last_output + idle));
        match follower.next(room, Some(until.min(next_look))).await? {
            Followed::Output(slice) => {
                // A page ends at a line's end: a piece that would fill it with part of a line
                // is left for the next page (unless the page has nothing else).
                let fills = reader.kept_bytes + slice.text.len() + 4 > max_bytes;
                if !reader.looks_for_a_line()
                    && reader.moved()
                    && fills
                    && !slice.text.ends_with('\n')
                {
                    return Ok(Waited::Full);
                }
                if let Some(line) = reader.push(slice) {
                    return Ok(Waited::Matched(line));
                }
                last_output = Instant::now();
                // Full: a request for less than a character's bytes could only return one
                // whole, past the limit.
                if !reader.looks_for_a_line() && reader.kept_bytes + 4 > max_bytes {
                    return Ok(Waited::Full);
                }
                // Looking for a pattern in a flood: until the time is up.
                if reader.looks_for_a_line() && last_output >= deadline {
                    return Ok(reader.at_the_end(Waited::TimedOut));
                }
            }
            Followed::TimedOut => {
                let now = Instant::now();
                if now >= deadline {
                    return Ok(reader.at_the_end(Waited::TimedOut));
                }
                if let Some(idle) = idle.filter(|idle| now >= last_output + *idle) {
                    return Ok(reader.at_the_end(Waited::Idle(idle)));
                }
                // All of it read: a wait ends when the task waits for someone to type, since
                // nothing more comes by waiting.
                if now >= next_look {
                    next_look = now + PROMPT_LOOK;
                    let quiet = !reader.moved() || now >= last_output + PROMPT_AFTER_OUTPUT;
                    if let Some(prompt) = follower.source().prompt().await? {
                        if quiet {
                            return Ok(reader.at_the_end(Waited::Prompt(prompt)));
                        }
                    }
                }
            }
            // Whatever it wrote last was read before.
            Followed::Ended => return Ok(reader.at_the_end(Waited::Ended)),
        }
    }
}
